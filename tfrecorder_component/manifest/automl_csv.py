"""AutoML Vision / Vertex AI classification CSV: `[ML_USE,]IMAGE_URI[,LABEL,...]`.

A header row is optional. With a header, columns are found by name (`split` or
`ml_use`; `image_uri`, `uri`, `gcs_file_path`, `image`, `path` or `filename`; `label`,
`labels` or `label_*`); without one, the first column is ML_USE when the first data
row's first field is not a file path.
"""
from __future__ import annotations

import csv
import io
from typing import Iterator, List, Optional

from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest import ManifestRow, ParsedItem, resolve_uri, split_for_ml_use

SPLIT_COLUMNS = ('split', 'ml_use', 'mluse', 'set')
URI_COLUMNS = ('image_uri', 'uri', 'gcs_file_path', 'image', 'image_path', 'path', 'filename', 'file')
LABEL_COLUMNS = ('label', 'labels', 'class', 'category')


def _is_header(fields: List[str]) -> bool:
  names = [f.strip().lower() for f in fields]
  return any(n in URI_COLUMNS for n in names) and all(
      n in SPLIT_COLUMNS or n in URI_COLUMNS or n in LABEL_COLUMNS or n.startswith('label') or not n
      for n in names)


def _looks_like_path(field: str) -> bool:
  f = field.strip()
  return '/' in f or '\\' in f or '.' in f or ':' in f


class _Layout:
  """Which column holds ML_USE, which the URI, which the labels."""

  def __init__(self, split_col: Optional[int], uri_col: int, label_cols: Optional[List[int]],
               width: Optional[int] = None):
    self.split_col = split_col
    self.uri_col = uri_col
    self.label_cols = label_cols  # None: every column after the URI
    self.width = width  # the header's column count; None without a header

  @classmethod
  def from_header(cls, fields: List[str]) -> '_Layout':
    names = [f.strip().lower() for f in fields]
    split_col = next((i for i, n in enumerate(names) if n in SPLIT_COLUMNS), None)
    uri_col = next(i for i, n in enumerate(names) if n in URI_COLUMNS)
    labels = [i for i, n in enumerate(names) if n in LABEL_COLUMNS or n.startswith('label')]
    return cls(split_col, uri_col, labels, width=len(fields))

  @classmethod
  def from_first_row(cls, fields: List[str]) -> '_Layout':
    first = fields[0]
    has_ml_use = first.strip().upper() in ('TRAIN', 'TRAINING', 'VALIDATION', 'VALIDATE',
                                           'EVAL', 'TEST', 'UNASSIGNED', '') \
        or not _looks_like_path(first)
    return cls(0, 1, None) if has_ml_use else cls(None, 0, None)


def parse(path: str, text: str) -> Iterator[ParsedItem]:
  layout: Optional[_Layout] = None
  reader = csv.reader(io.StringIO(text, newline=''), skipinitialspace=False)
  row_number = 0
  while True:
    try:
      fields = next(reader)
    except StopIteration:
      return
    except csv.Error as e:
      row_number = reader.line_num
      yield RowError('bad_row', f'CSV syntax error: {e}', source=path, row=row_number)
      continue
    row_number = reader.line_num
    if not any(f.strip() for f in fields):
      continue  # blank line
    if layout is None:
      if _is_header(fields):
        layout = _Layout.from_header(fields)
        continue
      layout = _Layout.from_first_row(fields)
    yield _parse_row(path, row_number, fields, layout)


def _parse_row(path: str, row: int, fields: List[str], layout: _Layout) -> ParsedItem:
  if layout.width is not None and len(fields) != layout.width:
    return RowError('bad_row', f'the row has {len(fields)} column(s), the header has '
                    f'{layout.width}', source=path, row=row,
                    uri=fields[layout.uri_col].strip() if layout.uri_col < len(fields) else None)
  if layout.uri_col >= len(fields):
    return RowError('bad_row', f'expected an image URI in column {layout.uri_col + 1}, '
                    f'the row has {len(fields)} column(s)', source=path, row=row)
  uri = fields[layout.uri_col].strip()
  if not uri:
    return RowError('bad_row', 'the image URI is empty', source=path, row=row)
  split = None
  if layout.split_col is not None:
    value = fields[layout.split_col] if layout.split_col < len(fields) else ''
    try:
      split = split_for_ml_use(value)
    except KeyError:
      return RowError('unknown_split',
                      f'unknown ML_USE value {value!r} (use TRAIN, VALIDATION, TEST, '
                      f'UNASSIGNED or leave it empty)', source=path, row=row, uri=uri)
  if layout.label_cols is None:
    label_fields = fields[layout.uri_col + 1:]
  else:
    label_fields = [fields[i] for i in layout.label_cols if i < len(fields)]
  labels = tuple(dict.fromkeys(l.strip() for l in label_fields if l.strip()))
  return ManifestRow(source=path, row=row, image_uri=uri, resolved_uri=resolve_uri(uri, path),
                     labels=labels, split=split)
