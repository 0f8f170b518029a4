"""Image manifests: every supported format yields the same `ManifestRow`.

A manifest file is parsed sequentially (so each row keeps its position for error
reports); rows are then fanned out across Beam workers for image loading.
"""
from __future__ import annotations

import dataclasses
import json
import math
import posixpath
import re
from typing import Dict, Iterator, List, Mapping, Optional, Tuple, Union

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


def _as_int(value: Union[FeatureValue, bool], from_text: bool) -> Optional[int]:
  if from_text:
    return int(value) if isinstance(value, str) and _INT.match(value.strip()) else None
  return int(value) if isinstance(value, int) else None


def _infer_type(values: List[Union[FeatureValue, bool]], from_text: bool) -> str:
  ints = [_as_int(v, from_text) for v in values]
  if any(i is not None and not _INT64_MIN <= i <= _INT64_MAX for i in ints):
    return 'string'  # identifiers too long for an int64 feature
  if all(i is not None for i in ints):
    return 'int'
  if from_text:
    numeric = all(isinstance(v, str) and _DECIMAL.match(v.strip()) for v in values)
  else:
    numeric = all(isinstance(v, (int, float)) for v in values)
  return 'float' if numeric else 'string'


def type_features(path: str, items: List[ParsedItem], feature_types: Mapping[str, str], *,
                  from_text: bool, what: str = 'column') -> List[ParsedItem]:
  """Gives one file's extra columns their types: declared, else one inferred per file.

  `from_text`: values are CSV text (inferred int if every value is an integer, else float
  if every value is a number, else string); otherwise they are JSON values that keep
  their type, ints widened to float when the column also holds floats and everything
  to string when it also holds strings. A declared value that does not convert makes
  the row a `bad_feature` error.
  """
  values: Dict[str, List[Union[FeatureValue, bool]]] = {}
  for item in items:
    if isinstance(item, ManifestRow):
      for name, value in item.features:
        values.setdefault(name, []).append(value)
  types = {name: feature_types.get(name) or _infer_type(vals, from_text)
           for name, vals in values.items()}
  typed: List[ParsedItem] = []
  for item in items:
    if not isinstance(item, ManifestRow) or not item.features:
      typed.append(item)
      continue
    features, bad = [], []
    for name, value in item.features:
      try:
        features.append((name, convert_feature(value, types[name])))
      except (ValueError, OverflowError):
        bad.append(f'{what} {name!r}: {_format_value(value)!r} is not a valid '
                   f'{types[name]}')
    if bad:
      typed.append(RowError(
          'bad_feature', '; '.join(bad) + ' (declared in feature_types); fix the value or '
          f"declare the {what} as 'string'", source=path, row=item.row, uri=item.image_uri))
    else:
      typed.append(dataclasses.replace(item, features=tuple(sorted(features))))
  return typed


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
  file to that split, whatever its ML_USE column says. COCO and Pascal VOC file names
  resolve against `image_root` (default: the annotation file's folder); the URIs of the
  other formats against the manifest's folder. `feature_types` declares the types of
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


def read_manifest_file(path: str, fmt: Optional[str] = None,
                       split_override: Optional[str] = None, *,
                       image_root: Optional[str] = None,
                       feature_types: Optional[Mapping[str, str]] = None
                       ) -> List[ParsedItem]:
  """Reads one manifest file from any Beam file system and parses it."""
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  try:
    with FileSystems.open(path, compression_type='uncompressed') as f:
      raw = f.read()
  except Exception as e:
    raise ManifestError(f'cannot read manifest {path}: {e}') from e
  text = raw.decode('utf-8-sig', errors='surrogateescape')
  return list(parse_manifest_text(path, text, fmt, split_override, image_root=image_root,
                                  feature_types=feature_types))
