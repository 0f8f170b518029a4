"""Semantic-segmentation CSV: an image and its class mask a row, `[split,]image_uri,mask_uri`.

The header names the columns (it is required: without one a mask column cannot be told
from a label): the split (`split` or `ml_use`, optional), the image (as in the
classification CSV: `image_uri`, `uri`, `image`, `path`, ...) and the mask (`mask_uri`,
`mask`, `mask_path`, `mask_gcs_uri`, `segmentation_mask` or `mask_file`); every other
named column becomes a typed feature. Header names are compared as `automl_csv` compares
them (`column_key`), with its spellings of the image and split columns. The `columns`
option names the image, split and mask columns (`image=photo,mask=annotation`).

The mask is a greyscale or palette PNG of the image's size whose pixel values are the
class indices (as Pascal VOC's `SegmentationClass` and Cityscapes' `labelIds` store them);
they are written unchanged. Relative mask URIs resolve as image URIs do.
"""
from __future__ import annotations

import csv
import io
from typing import Iterator, List, Mapping, Optional

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.automl_csv import (CsvLayout, column_key, feature_columns,
                                                      header_roles_of, is_header, parse_rows,
                                                      raw_features)
from tfrecorder_component.manifest.columns import Columns
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.rows import ManifestRow, ParsedItem, resolve_uri

MASK_COLUMNS = ('mask_uri', 'mask', 'mask_path', 'mask_gcs_uri', 'segmentation_mask',
                'mask_file')
_MASK_KEYS = tuple(map(column_key, MASK_COLUMNS))


def _mask_column(names: List[str]) -> Optional[int]:
  return next((i for i, n in enumerate(names) if column_key(n) in _MASK_KEYS), None)


def sniff(head: str) -> bool:
  """Whether the first row is a header naming an image column and a mask column.

  Args:
    head: the file's first characters; only its first CSV row is read, and a syntax
      error in it is a no.
  """
  try:
    fields = next(csv.reader(io.StringIO(head.lstrip('\ufeff'), newline='')), [])
  except csv.Error:
    return False
  return bool(fields) and is_header(fields) and _mask_column(
      [f.strip().lower() for f in fields]) is not None


class _Layout(CsvLayout):
  """The split, image, mask and feature columns, from the header."""

  ORDER = 'split,image_uri,mask_uri'

  def __init__(self, split_col, uri_col, mask_col, width, feature_cols, roles=None,
               header=None):
    super().__init__(split_col, uri_col, width, feature_cols, roles, header)
    self.mask_col = mask_col

  def label_columns(self, width: int) -> List[int]:
    return []

  @classmethod
  def from_header(cls, path: str, fields: List[str], columns: Columns = ()) -> '_Layout':
    roles = header_roles_of(path, fields, columns)
    split_col, uri_col = roles.split, roles.image
    mask_col = roles.mask if roles.mask is not None else _mask_column(
        ['' if i in (uri_col, split_col) else f for i, f in enumerate(fields)])
    if mask_col is None:
      raise _NoLayout(f'a segmentation CSV\'s header names a mask column '
                          f'({", ".join(MASK_COLUMNS)}); the header is {",".join(fields)}')
    used = [uri_col, mask_col] + ([split_col] if split_col is not None else [])
    return cls(split_col, uri_col, mask_col, len(fields), feature_columns(path, fields, used),
               roles, fields)

  @classmethod
  def from_first_row(cls, fields: List[str]) -> '_Layout':
    raise _NoLayout(f'a segmentation CSV needs a header naming its columns, e.g. '
                        f'"{cls.ORDER}"; the first row is {",".join(fields)}')


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None,
          columns: Columns = ()) -> Iterator[ParsedItem]:
  """The rows of a segmentation CSV (see the module), each a ManifestRow with its mask
  or a RowError, in file order. A file without a header naming a mask column is a
  ManifestError.

  Args:
    path: the manifest's path: named in errors, and the folder relative image and mask
      URIs resolve against when `image_root` is None.
    text: the CSV's whole text, or its lines as a text file opened with newline=''
      gives them.
    image_root: the folder (local path or URI) relative image and mask URIs resolve
      against; None: the manifest's folder.
    feature_types: declared types of extra columns ({name: 'int' | 'float' |
      'string'}); a column not declared gets a type inferred from its values.
    columns: the `columns` option (`columns.parse_columns`): the header's image, split
      and mask columns, where named.
  """
  try:
    yield from parse_rows(path, text, feature_types, _Layout, _parse_row, image_root, columns)
  except _NoLayout as e:  # the layout's errors name no file
    raise ManifestError(f'{path}: {e}') from None


class _NoLayout(ManifestError):
  """The header (or its absence) gives no segmentation layout."""


def _parse_row(path: str, row: int, fields: List[str], layout: _Layout) -> ParsedItem:
  uri = fields[layout.uri_col].strip() if layout.uri_col < len(fields) else ''
  if len(fields) != layout.width:
    return RowError('bad_row', f'the row has {len(fields)} column(s), the header has '
                    f'{layout.width}', source=path, row=row, uri=uri or None)
  mask = fields[layout.mask_col].strip()
  if not uri or not mask:
    return RowError('bad_row', f'the {"image" if not uri else "mask"} URI is empty; a '
                    'segmentation row names both', source=path, row=row, uri=uri or None)
  split = layout.split(path, row, fields, uri)
  if isinstance(split, RowError):
    return split
  return ManifestRow(source=path, row=row, image_uri=uri,
                     resolved_uri=resolve_uri(uri, path, layout.image_root), split=split,
                     features=raw_features(fields, layout.feature_cols), mask_uri=mask,
                     resolved_mask_uri=resolve_uri(mask, path, layout.image_root))


FORMAT = ManifestFormat(
    'segmentation_csv', ('.csv', '.txt'), sniff=sniff, parse=parse, streamed=True,
    column_roles=('image', 'split', 'mask'),
    title='segmentation CSV',
    sample=FormatSample(
        'm.csv',
        'split,image_uri,mask_uri\nTRAIN,a.jpg,a.png\n'),
    sniff_rank=120)
