"""Image manifests: every supported format yields the same `ManifestRow`.

A manifest file is parsed sequentially (so each row keeps its position for error
reports); rows are then fanned out across Beam workers for image loading.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import posixpath
import re
from typing import (Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple,
                    Union)

from tfrecorder_component.errors import ManifestError, RowError

# ML_USE / split values of the AutoML Vision and Vertex AI import formats, mapped to
# TFX split names. None means "unassigned": the row goes through hash splitting.
ML_USE_TO_SPLIT = {
    'TRAIN': 'train', 'TRAINING': 'train',
    'VALIDATION': 'eval', 'VALIDATE': 'eval', 'EVAL': 'eval',
    'TEST': 'test',
    'UNASSIGNED': None, '': None,
}

MANIFEST_FORMATS = ('automl_csv', 'automl_detection_csv', 'vertex_jsonl', 'coco_json', 'pascal_voc')
_SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*://')


@dataclasses.dataclass(frozen=True)
class ObjectBox:
  """One annotated object of a detection manifest, in the frame of the stored pixels.

  Coordinates are as the manifest gives them: normalised to [0, 1] (AutoML, Vertex AI)
  or in pixels (COCO, Pascal VOC; `normalized=False`). They are checked, clipped and
  normalised against the image's real size when the record is built.
  """
  label: str
  xmin: float
  ymin: float
  xmax: float
  ymax: float
  normalized: bool = True
  is_crowd: bool = False
  difficult: bool = False
  truncated: bool = False
  area: Optional[float] = None  # in pixels, as annotated (COCO); None: the box's own area


FeatureValue = Union[int, float, str]


@dataclasses.dataclass(frozen=True)
class ManifestRow:
  """One image of a manifest, with where it came from."""
  source: str                 # the manifest file
  row: int                    # 1-based position of the row in that file
  image_uri: str              # as written in the manifest; also the record's source id
  resolved_uri: str           # where the bytes are read from
  labels: Tuple[str, ...] = ()
  split: Optional[str] = None  # TFX split name, or None when unassigned
  label_ids: Tuple[int, ...] = ()  # ids of `labels` in the run's vocabulary, set in the pipeline
  # Detection: the image's objects (() for an image without any); None for classification.
  objects: Optional[Tuple[ObjectBox, ...]] = None
  # Extra manifest columns / JSON fields, carried as typed features: (name, value) pairs.
  features: Tuple[Tuple[str, FeatureValue], ...] = ()


def split_for_ml_use(value: str) -> Optional[str]:
  """Maps an ML_USE value (any case) to a TFX split name; raises KeyError if unknown."""
  return ML_USE_TO_SPLIT[value.strip().upper()]


def resolve_uri(image_uri: str, manifest_path: str, image_root: Optional[str] = None) -> str:
  """Resolves an image URI against `image_root`, by default the manifest's own folder.

  Absolute paths and URIs with a scheme are kept; relative ones never depend on the
  working directory unless `image_root` itself is relative.
  """
  uri = image_uri
  if uri.startswith('file://'):
    return uri[len('file://'):]
  if _SCHEME.match(uri) or uri.startswith('/'):
    return uri
  if image_root:
    root = image_root[len('file://'):] if image_root.startswith('file://') else image_root
    base = root.rstrip('/') or '/'
  else:
    base = manifest_path.rsplit('/', 1)[0] if '/' in manifest_path else '.'
  if _SCHEME.match(base):
    return posixpath.join(base, uri)
  return posixpath.normpath(posixpath.join(base, uri))


ParsedItem = Union[ManifestRow, RowError]

FEATURE_TYPES = ('int', 'float', 'string')
RESERVED_FEATURE_PREFIX = 'image/'
_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1
_INT = re.compile(r'[+-]?\d+\Z', re.ASCII)
_DECIMAL = re.compile(r'[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z', re.ASCII)
_NUMBER = re.compile(r'[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|nan|inf|infinity)\Z',
                     re.ASCII | re.IGNORECASE)


def parse_number(text: str) -> Optional[float]:
  """The number written in `text` ('0.5', '-1e-3', 'nan'), or None when it is not one."""
  text = text.strip()
  return float(text) if _NUMBER.match(text) else None


def as_number(value: object) -> Optional[float]:
  """A JSON coordinate (a number or a numeric string) as a float, or None."""
  if isinstance(value, str):
    return parse_number(value)
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    return None
  try:
    return float(value)
  except OverflowError:
    return None


def check_feature_name(path: str, name: str) -> None:
  """Raises ManifestError for a column name that would clash with the record's own features."""
  if name.startswith(RESERVED_FEATURE_PREFIX):
    raise ManifestError(f'{path}: column {name!r} would become a feature named '
                        f'{name!r}; names starting with {RESERVED_FEATURE_PREFIX!r} are '
                        'reserved for the image features, rename the column')


def check_feature_types(feature_types: Optional[Mapping[str, str]]) -> Dict[str, str]:
  """Validates declared feature types ({name: 'int' | 'float' | 'string'})."""
  declared = dict(feature_types or {})
  for name, type_ in declared.items():
    if type_ not in FEATURE_TYPES:
      raise ManifestError(f'feature_types[{name!r}] is {type_!r}; use one of {FEATURE_TYPES}')
    check_feature_name('feature_types', name)
  return declared


def _format_value(value: Union[FeatureValue, bool]) -> str:
  if isinstance(value, str):
    return value
  return json.dumps(value)  # true/false, 3, 0.5


def convert_feature(value: Union[FeatureValue, bool], type_: str) -> FeatureValue:
  """Converts a CSV text or JSON value to `type_`; raises ValueError when it does not fit."""
  if type_ == 'string':
    return _format_value(value)
  if isinstance(value, str):
    text = value.strip()
    if type_ == 'int' and _INT.match(text):
      value = int(text)
    elif _NUMBER.match(text):
      value = float(text)
    else:
      raise ValueError(value)
  if type_ == 'float':
    return float(value)
  if isinstance(value, float):
    if not math.isfinite(value) or value != int(value):
      raise ValueError(value)
    value = int(value)
  if not _INT64_MIN <= value <= _INT64_MAX:
    raise ValueError(value)
  return int(value)


class _TypeInference:
  """One file's extra-column types, inferred from its values one row at a time.

  From CSV text: int if every value is an integer (in int64 range), else float if every
  value is a number, else string. From JSON values, which keep their type: int if every
  value is an integer, else float if every value is a number, else string.
  """

  def __init__(self, from_text: bool):
    self._from_text = from_text
    self._seen: Dict[str, List[bool]] = {}  # name -> [all int, any int out of range, all number]

  def observe(self, features: Tuple[Tuple[str, Union[FeatureValue, bool]], ...]) -> None:
    for name, value in features:
      state = self._seen.setdefault(name, [True, False, True])
      if self._from_text:
        text = value.strip() if isinstance(value, str) else None
        as_int = int(text) if text is not None and _INT.match(text) else None
        number = text is not None and bool(_DECIMAL.match(text))
      else:
        as_int = int(value) if isinstance(value, int) else None
        number = isinstance(value, (int, float))
      state[0] = state[0] and as_int is not None
      state[1] = state[1] or (as_int is not None and not _INT64_MIN <= as_int <= _INT64_MAX)
      state[2] = state[2] and number

  def types(self, declared: Mapping[str, str]) -> Dict[str, str]:
    return {name: declared.get(name) or (
        'string' if out_of_range else 'int' if all_int else 'float' if number else 'string')
            for name, (all_int, out_of_range, number) in self._seen.items()}


def typed_items(path: str, parse: Callable[[], Iterable[ParsedItem]],
                feature_types: Mapping[str, str], *, from_text: bool,
                what: str = 'column') -> Iterator[ParsedItem]:
  """Gives one file's extra columns their types: declared, else one inferred per file.

  `parse()` returns a fresh iterator of the file's items with raw feature values. Items
  stream through until the first row with features; from there the file's values are
  only observed, and a second `parse()` yields the rest typed. So no file is ever held
  whole, and a file without extra columns is parsed once. `from_text`: values are CSV
  text (see `_TypeInference`). A value that does not convert to a declared type makes
  the row a `bad_feature` error.
  """
  inference = _TypeInference(from_text)
  passed = 0
  deferred = False
  for item in parse():
    if isinstance(item, ManifestRow) and item.features:
      deferred = True
      inference.observe(item.features)
    elif not deferred:
      passed += 1
      yield item
  if not deferred:
    return
  types = inference.types(feature_types)
  for item in itertools.islice(parse(), passed, None):
    yield _typed(path, item, types, what) if isinstance(item, ManifestRow) else item


def _typed(path: str, item: ManifestRow, types: Mapping[str, str], what: str) -> ParsedItem:
  features, bad = [], []
  for name, value in item.features:
    try:
      features.append((name, convert_feature(value, types[name])))
    except (ValueError, OverflowError):
      bad.append(f'{what} {name!r}: {_format_value(value)!r} is not a valid {types[name]}')
  if bad:
    return RowError(
        'bad_feature', '; '.join(bad) + ' (declared in feature_types); fix the value or '
        f"declare the {what} as 'string'", source=path, row=item.row, uri=item.image_uri)
  return dataclasses.replace(item, features=tuple(sorted(features)))


def detect_format(path: str, head: str) -> str:
  """Names the manifest format of a file from its extension, else from its content.

  `.jsonl`: vertex_jsonl; `.json`: coco_json; `.xml`: pascal_voc. Without one of these
  extensions, text starting with `{` is vertex_jsonl and with `<` pascal_voc. Any other
  file (`.csv`, `.txt`, ...) is `automl_detection_csv` when its first data row has,
  after the URI and the label, exactly 8 fields that are numbers or empty (10 fields,
  or 11 with an ML_USE column first; with a header, the 8 columns after the label
  column); otherwise `automl_csv`.
  """
  # pylint: disable-next=g-import-not-at-top
  from tfrecorder_component.manifest import automl_detection_csv
  lower = path.lower()
  if lower.endswith('.jsonl'):
    return 'vertex_jsonl'
  if lower.endswith('.json'):
    return 'coco_json'
  if lower.endswith('.xml'):
    return 'pascal_voc'
  if not (lower.endswith('.csv') or lower.endswith('.txt')):
    start = head.lstrip('\ufeff \t\r\n')
    if start.startswith('{'):
      return 'vertex_jsonl'
    if start.startswith('<'):
      return 'pascal_voc'
  return 'automl_detection_csv' if automl_detection_csv.sniff(head) else 'automl_csv'


_SNIFF_CHARS = 65536


def parse_manifest_text(path: str, text: str, fmt: Optional[str] = None,
                        split_override: Optional[str] = None, *,
                        image_root: Optional[str] = None,
                        feature_types: Optional[Mapping[str, str]] = None
                        ) -> Iterator[ParsedItem]:
  """Parses one manifest file's text into rows, or RowErrors for rows that fail.

  `split_override` (from an `input_config` split pattern) assigns every row of the
  file to that split, whatever its ML_USE column says. Relative image URIs and COCO /
  Pascal VOC file names resolve against `image_root`, by default the manifest's (or
  annotation file's) folder. `feature_types` declares the types of
  extra columns ({name: 'int' | 'float' | 'string'}).
  """
  # pylint: disable-next=g-import-not-at-top
  from tfrecorder_component.manifest import (automl_csv, automl_detection_csv, coco, pascal_voc,
                                             vertex_jsonl)
  declared = check_feature_types(feature_types)
  fmt = fmt or detect_format(path, text[:_SNIFF_CHARS])
  parsers = {'automl_csv': automl_csv.parse,
             'automl_detection_csv': automl_detection_csv.parse,
             'vertex_jsonl': vertex_jsonl.parse,
             'coco_json': coco.parse,
             'pascal_voc': pascal_voc.parse}
  if fmt not in parsers:
    raise ManifestError(f'{path}: unknown manifest format {fmt!r}; one of {sorted(parsers)}')
  for item in parsers[fmt](path, text, image_root=image_root, feature_types=declared):
    if isinstance(item, ManifestRow):
      if _has_undecodable_bytes(item):
        item = RowError('bad_row', 'the row is not valid UTF-8; save the manifest as UTF-8',
                        source=path, row=item.row,
                        uri=item.image_uri.encode('utf-8', 'surrogateescape').decode(
                            'utf-8', 'backslashreplace'))
      elif split_override is not None:
        item = dataclasses.replace(item, split=split_override)
    yield item


def _has_undecodable_bytes(row: ManifestRow) -> bool:
  # read_manifest_file decodes with 'surrogateescape': invalid bytes become lone
  # surrogates, so one bad row fails alone instead of the whole manifest.
  texts = [row.image_uri, *row.labels, *(o.label for o in row.objects or ())]
  for name, value in row.features:
    texts.append(name)
    if isinstance(value, str):
      texts.append(value)
  return any(_SURROGATE.search(text) for text in texts)


_SURROGATE = re.compile('[\udc80-\udcff]')


def iter_manifest_file(path: str, fmt: Optional[str] = None,
                       split_override: Optional[str] = None, *,
                       image_root: Optional[str] = None,
                       feature_types: Optional[Mapping[str, str]] = None
                       ) -> Tuple[int, Iterator[ParsedItem]]:
  """Reads one manifest file from any Beam file system; returns its line count (at least
  the number of rows of a CSV or JSONL manifest) and its items, parsed as they are
  consumed."""
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  try:
    with FileSystems.open(path, compression_type='uncompressed') as f:
      raw = f.read()
  except Exception as e:
    raise ManifestError(f'cannot read manifest {path}: {e}') from e
  text = raw.decode('utf-8-sig', errors='surrogateescape')
  del raw
  return text.count('\n') + 1, parse_manifest_text(
      path, text, fmt, split_override, image_root=image_root, feature_types=feature_types)


def read_manifest_file(path: str, fmt: Optional[str] = None,
                       split_override: Optional[str] = None, *,
                       image_root: Optional[str] = None,
                       feature_types: Optional[Mapping[str, str]] = None
                       ) -> List[ParsedItem]:
  """Reads one manifest file from any Beam file system and parses it, in file order."""
  return list(iter_manifest_file(path, fmt, split_override, image_root=image_root,
                                 feature_types=feature_types)[1])
