"""AutoML Vision / Vertex AI object detection CSV, one box per line.

`[ML_USE,]IMAGE_URI,LABEL,X_MIN,Y_MIN,,,X_MAX,Y_MAX,,` (two vertices) or
`[ML_USE,]IMAGE_URI,LABEL,X1,Y1,X2,Y2,X3,Y3,X4,Y4` (four vertices), coordinates
normalised to [0, 1]; `[ML_USE,]IMAGE_URI,,,,,,,,,` is an image without objects.
Lines of the same image are not merged here. With an (optional) header, columns are
found by name as in the classification CSV (`automl_csv`'s spellings: the first label
column it reads), the 8 columns after the label column hold the coordinates and every
other named column becomes a typed feature. The `columns` option names the image, the
label and the split columns of a header (one label column: the 8 coordinate columns
follow it).
"""
from __future__ import annotations

import csv
import io
from typing import Iterator, List, Mapping, Optional, Tuple

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.features import parse_number
from tfrecorder_component.manifest.rows import (ML_USE_TO_SPLIT, ManifestRow, ObjectBox, ParsedItem,
                                                resolve_uri)
from tfrecorder_component.manifest.automl_csv import (CsvLayout, feature_columns, has_ml_use_column,
                                                      header_roles_of, is_header, parse_rows,
                                                      raw_features, roles_of)
from tfrecorder_component.manifest.columns import Columns, named

COORDINATES = 8
TWO_VERTEX_FIELDS = (0, 1, 4, 5)  # X_MIN, Y_MIN, X_MAX, Y_MAX among the 8 coordinate fields
_SNIFF_ROWS = 1000


def _is_number_or_empty(field: str) -> bool:
  return not field.strip() or parse_number(field) is not None


def sniff(head: str) -> bool:
  """Whether the first data row of a CSV text is a detection row: after the URI and the
  label, exactly 8 fields that are numbers or empty (10 fields, or 11 with an ML_USE
  column first; with a header, the 8 columns after the label column).

  Rows with nothing after the URI (an image without objects, or unlabelled) say
  nothing either way; the first row with more decides.

  Args:
    head: the file's first characters (up to 64 KiB, as the registry sniffs them); only
      its first 1,000 lines are looked at, and a CSV syntax error in them is a no.
  """
  reader = csv.reader(io.StringIO(head.lstrip('\ufeff'), newline=''))
  label_col: Optional[int] = None
  width: Optional[int] = None
  first = True
  try:
    for number, fields in enumerate(reader):
      if number >= _SNIFF_ROWS:
        return False
      if not any(f.strip() for f in fields):
        continue
      header, first = first and is_header(fields), False
      if header:
        roles = roles_of('', fields)
        label_col = roles.labels[0] if roles is not None and roles.labels else None
        if label_col is None:
          return False
        width = len(fields)
        continue
      if label_col is not None:
        coordinates = fields[label_col + 1:label_col + 1 + COORDINATES]
        return (len(fields) == width and len(coordinates) == COORDINATES and
                all(_is_number_or_empty(f) for f in coordinates))
      if len(fields) == 11 and fields[0].strip().upper() not in ML_USE_TO_SPLIT:
        return False
      if len(fields) in (10, 11):
        return all(_is_number_or_empty(f) for f in fields[-COORDINATES:])
      if any(f.strip() for f in fields[2:]):
        return False
  except csv.Error:
    return False
  return False


class _Layout(CsvLayout):
  """Which column holds ML_USE, the URI, the label, the coordinates and the features."""

  def __init__(self, split_col: Optional[int], uri_col: int, label_col: int,
               width: Optional[int] = None,
               feature_cols: Optional[List[Tuple[int, str]]] = None, roles=None, header=None):
    super().__init__(split_col, uri_col, width, feature_cols, roles, header)
    self.label_col = label_col  # the 8 coordinate columns follow it

  ORDER = 'ML_USE,IMAGE_URI,LABEL,X_MIN,Y_MIN,,,X_MAX,Y_MAX,,'

  def label_columns(self, width: int) -> List[int]:
    return [self.label_col]

  @classmethod
  def from_header(cls, path: str, fields: List[str], columns: Columns = ()) -> '_Layout':
    if len(named(columns, 'label') or ()) > 1:
      raise ManifestError(f'{path}: columns names {len(named(columns, "label"))} label '
                          'columns; a detection CSV has one, the 8 coordinate columns after it')
    roles = header_roles_of(path, fields, columns)
    split_col, uri_col = roles.split, roles.image
    label_col = roles.labels[0] if roles.labels else None
    if label_col is None or label_col + COORDINATES >= len(fields):
      raise ManifestError(f'{path}: a detection CSV header needs a label column followed by '
                          f'{COORDINATES} coordinate columns (X_MIN,Y_MIN,,,X_MAX,Y_MAX,, or '
                          f'four X,Y vertices); got {fields!r}')
    used = [uri_col, *range(label_col, label_col + 1 + COORDINATES)]
    if split_col is not None:
      used.append(split_col)
    return cls(split_col, uri_col, label_col, width=len(fields),
               feature_cols=feature_columns(path, fields, used), roles=roles, header=fields)

  @classmethod
  def from_first_row(cls, fields: List[str]) -> '_Layout':
    if len(fields) == 11 or (len(fields) != 10 and has_ml_use_column(fields)):
      return cls(0, 1, 2)
    return cls(None, 0, 1)


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None,
          columns: Columns = ()) -> Iterator[ParsedItem]:
  """The lines of an AutoML detection CSV (see the module), each a ManifestRow of one
  box (or of an image without objects) or a RowError, in file order; the rows of one
  image are merged later (`merge_image_rows`).

  Args:
    path: the manifest's path: named in errors, and the folder relative image URIs
      resolve against when `image_root` is None.
    text: the CSV's whole text, or its lines as a text file opened with newline=''
      gives them.
    image_root: the folder (local path or URI) relative image URIs resolve against;
      None: the manifest's folder.
    feature_types: declared types of extra columns ({name: 'int' | 'float' |
      'string'}); a column not declared gets a type inferred from its values.
    columns: the `columns` option (`columns.parse_columns`): the header's image, label
      and split columns, where named.
  """
  return parse_rows(path, text, feature_types, _Layout, _parse_row, image_root, columns)


def _parse_row(path: str, row: int, fields: List[str], layout: _Layout) -> ParsedItem:
  uri = fields[layout.uri_col].strip() if layout.uri_col < len(fields) else ''
  if layout.width is not None and len(fields) != layout.width:
    return RowError('bad_row', f'the row has {len(fields)} column(s), the header has '
                    f'{layout.width}', source=path, row=row, uri=uri or None)
  if not uri:
    return RowError('bad_row', f'the image URI (column {layout.uri_col + 1}) is empty',
                    source=path, row=row)
  end = layout.label_col + 1 + COORDINATES
  if layout.width is None and any(f.strip() for f in fields[end:]):
    return RowError('bad_row', f'the row has {len(fields)} columns; a detection row is '
                    '[ML_USE,]URI,LABEL and 8 coordinates (X_MIN,Y_MIN,,,X_MAX,Y_MAX,,)',
                    source=path, row=row, uri=uri)
  split = layout.split(path, row, fields, uri)
  if isinstance(split, RowError):
    return split
  box_fields = [f.strip() for f in fields[layout.label_col:end]]
  box_fields += [''] * (1 + COORDINATES - len(box_fields))
  label, coordinates = box_fields[0], box_fields[1:]
  if label:  # around a label only spaces and tabs go: a line break in it is a bad_label
    label = fields[layout.label_col].strip(' \t')
  resolved = resolve_uri(uri, path, layout.image_root)
  features = raw_features(fields, layout.feature_cols)
  if not label and not any(coordinates):
    return ManifestRow(source=path, row=row, image_uri=uri, resolved_uri=resolved, split=split,
                       objects=(), features=features)
  box = _box(label, coordinates)
  if isinstance(box, str):
    return RowError('bad_row', box, source=path, row=row, uri=uri)
  return ManifestRow(source=path, row=row, image_uri=uri, resolved_uri=resolved,
                     labels=(label,), split=split, objects=(box,), features=features)


def _box(label: str, coordinates: List[str]) -> ObjectBox | str:
  """The box of one line, or what is wrong with it."""
  if not label:
    return ('the box has no label; write the label before the coordinates, or leave the '
            'coordinates empty for an image without objects')
  filled = tuple(i for i, f in enumerate(coordinates) if f)
  if filled not in (TWO_VERTEX_FIELDS, tuple(range(COORDINATES))):
    return (f'label {label!r} needs a box: X_MIN,Y_MIN,,,X_MAX,Y_MAX,, (two vertices) or '
            f'X1,Y1,X2,Y2,X3,Y3,X4,Y4 (four vertices); got {",".join(coordinates)!r}')
  values = [parse_number(coordinates[i]) for i in filled]
  bad = [coordinates[i] for i, v in zip(filled, values) if v is None]
  if bad:
    return (f'box coordinates must be numbers normalised to [0, 1]; got '
            f'{", ".join(repr(b) for b in bad)}')
  if len(values) == len(TWO_VERTEX_FIELDS):
    return ObjectBox(label, *values)
  xs, ys = values[0::2], values[1::2]
  return ObjectBox(label, min(xs), min(ys), max(xs), max(ys))


FORMAT = ManifestFormat(
    'automl_detection_csv', ('.csv', '.txt'), sniff=sniff, parse=parse, streamed=True,
    one_row_a_box=True, column_roles=('image', 'label', 'split'),
    title='AutoML detection CSV',
    sample=FormatSample(
        'm.csv',
        'TRAIN,a.jpg,cat,0.1,0.2,,,0.5,0.6,,\n'),
    # After the CSVs of named headers, before the classification CSV.
    sniff_rank=130)
