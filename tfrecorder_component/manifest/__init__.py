"""Image manifests: every supported format yields the same `ManifestRow`.

A manifest file is parsed sequentially (so each row keeps its position for error
reports); rows are then fanned out across Beam workers for image loading.
"""
from __future__ import annotations

import dataclasses
import posixpath
import re
from typing import Iterator, List, Optional, Tuple, Union

from tfrecorder_component.errors import ManifestError, RowError

# ML_USE / split values of the AutoML Vision and Vertex AI import formats, mapped to
# TFX split names. None means "unassigned": the row goes through hash splitting.
ML_USE_TO_SPLIT = {
    'TRAIN': 'train', 'TRAINING': 'train',
    'VALIDATION': 'eval', 'VALIDATE': 'eval', 'EVAL': 'eval',
    'TEST': 'test',
    'UNASSIGNED': None, '': None,
}

MANIFEST_FORMATS = ('automl_csv', 'vertex_jsonl')
_SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*://')


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


def split_for_ml_use(value: str) -> Optional[str]:
  """Maps an ML_USE value (any case) to a TFX split name; raises KeyError if unknown."""
  return ML_USE_TO_SPLIT[value.strip().upper()]


def resolve_uri(image_uri: str, manifest_path: str) -> str:
  """Resolves an image URI against the manifest's own folder (not the working dir)."""
  uri = image_uri
  if uri.startswith('file://'):
    return uri[len('file://'):]
  if _SCHEME.match(uri) or uri.startswith('/'):
    return uri
  base = manifest_path.rsplit('/', 1)[0] if '/' in manifest_path else '.'
  if _SCHEME.match(base):
    return posixpath.join(base, uri)
  return posixpath.normpath(posixpath.join(base, uri))


ParsedItem = Union[ManifestRow, RowError]


def detect_format(path: str, head: str) -> str:
  """Names the manifest format of a file from its extension, else its first character."""
  lower = path.lower()
  if lower.endswith('.jsonl'):
    return 'vertex_jsonl'
  if lower.endswith('.csv') or lower.endswith('.txt'):
    return 'automl_csv'
  return 'vertex_jsonl' if head.lstrip('\ufeff \t\r\n').startswith('{') else 'automl_csv'


def parse_manifest_text(path: str, text: str, fmt: Optional[str] = None,
                        split_override: Optional[str] = None) -> Iterator[ParsedItem]:
  """Parses one manifest file's text into rows, or RowErrors for rows that fail.

  `split_override` (from an `input_config` split pattern) assigns every row of the
  file to that split, whatever its ML_USE column says.
  """
  from tfrecorder_component.manifest import automl_csv, vertex_jsonl  # pylint: disable=g-import-not-at-top
  fmt = fmt or detect_format(path, text[:64])
  parsers = {'automl_csv': automl_csv.parse, 'vertex_jsonl': vertex_jsonl.parse}
  if fmt not in parsers:
    raise ManifestError(f'{path}: unknown manifest format {fmt!r}; one of {sorted(parsers)}')
  for item in parsers[fmt](path, text):
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
  return any(_SURROGATE.search(text) for text in (row.image_uri, *row.labels))


_SURROGATE = re.compile('[\udc80-\udcff]')


def read_manifest_file(path: str, fmt: Optional[str] = None,
                       split_override: Optional[str] = None) -> List[ParsedItem]:
  """Reads one manifest file from any Beam file system and parses it."""
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  try:
    with FileSystems.open(path, compression_type='uncompressed') as f:
      raw = f.read()
  except Exception as e:
    raise ManifestError(f'cannot read manifest {path}: {e}') from e
  text = raw.decode('utf-8-sig', errors='surrogateescape')
  return list(parse_manifest_text(path, text, fmt, split_override))
