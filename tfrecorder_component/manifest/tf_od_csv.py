"""The TensorFlow Object Detection CSV: `filename,width,height,class,xmin,ymin,xmax,ymax`,
one row a box, in pixels.

The CSV that the TF Object Detection API tutorials' `xml_to_csv.py` writes (and
`generate_tfrecord.py` reads), and Roboflow's "Tensorflow Object Detection CSV" export
(`train/_annotations.csv`, `valid/_annotations.csv`, `test/_annotations.csv`); and
VoTT's CSV export (`image,xmin,ymin,xmax,ymax,label`, every field quoted), whose `image`
and `label` columns are `filename` and `class` by other names. Rules:

- The header is required; columns are found by name, in any order (`filename` or
  `image`, `class` or `label`, `xmin`, `ymin`, `xmax`, `ymax`; `width` and `height`
  optional); any other named column becomes a typed feature of the record, as in the
  AutoML CSV. A file is detected as this format when its header starts with the eight
  columns above, or holds only columns of this format, each once, with the four corners,
  an image column and a class column.
- One row a box, corners in pixels of the stored image; the rows of one image are merged
  later (`one_row_an_image=False`), so an image may appear on any rows.
- A row with a file name and nothing in `class` and the four coordinates is an image
  without objects (the format has no other way to say so); a class without its four
  coordinates, or coordinates without a class, is a `bad_row`.
- `width` and `height` are the size the annotator saw. They must be empty or positive
  numbers, and are not written: the record step normalises boxes by the real image's
  size, and a box outside it is clipped or dropped and listed in box_issues.
- File names resolve against `image_root`, by default the CSV's folder.
- Splits: a CSV in a folder named train, valid, val, validation, eval or test (any case;
  Roboflow's export layout) gives its rows that split; elsewhere rows are hash-split.
"""
from __future__ import annotations

import csv
import posixpath
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.automl_csv import csv_rows, feature_columns, raw_features
from tfrecorder_component.manifest.features import parse_number, typed_items
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.rows import (ML_USE_TO_SPLIT, ManifestRow, ObjectBox, ParsedItem,
                                                resolve_uri, split_of_folder)

HEADER = ('filename', 'width', 'height', 'class', 'xmin', 'ymin', 'xmax', 'ymax')
# Other names of columns (VoTT's CSV export), taken where the header lacks the usual one.
_ALIASES = {'image': 'filename', 'label': 'class'}
_REQUIRED = ('filename', 'class', 'xmin', 'ymin', 'xmax', 'ymax')
_CORNERS = ('xmin', 'ymin', 'xmax', 'ymax')


def _split_of_export(path: str) -> Optional[str]:
  """The split VoTT's export names: `<name>-export.csv`, where `<name>` (VoTT's project
  name) is a split name (`train-export.csv`: 'train'), as Datumaro's `vott_csv` reader
  takes it for the subset; None otherwise."""
  name = posixpath.basename(path)
  if not name.lower().endswith('-export.csv'):
    return None
  return ML_USE_TO_SPLIT.get(name[:-len('-export.csv')].upper())


def parse(path: str, text: Union[str, Iterable[str]], *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None) -> Iterator[ParsedItem]:
  """The rows of a TF Object Detection CSV (a str, or the lines of a text file), one a
  box, in file order; RowErrors for rows that cannot be read.

  Args:
    path: the manifest's path: named in errors; its folder (train/, valid/, ...) or a
      VoTT `<split>-export.csv` name gives the split, and its folder is where file
      names resolve when `image_root` is None.
    text: the CSV as a str, or the lines of a text file opened with newline=''.
    image_root: the folder (local path or URI) file names resolve against; None: the
      CSV's folder.
    feature_types: declared types of extra columns ({name: 'int' | 'float' |
      'string'}); a column not declared gets a type inferred from its values.
  """
  split = split_of_folder(path) or _split_of_export(path)

  def untyped() -> Iterator[ParsedItem]:
    columns: Optional[Dict[str, int]] = None
    width = 0
    features: List[Tuple[int, str]] = []
    for entry in csv_rows(path, text):
      if isinstance(entry, RowError):
        if columns is None:
          raise ManifestError(f'{path}: the header of a TF Object Detection CSV cannot be '
                              f'read: {entry.message}')
        yield entry
        continue
      line, fields = entry
      if columns is None:
        columns, features = _header(path, fields)
        width = len(fields)
        continue
      yield _row(path, line, fields, width, columns, features, split, image_root)
    if columns is None:
      raise ManifestError(f'{path}: the file is empty; a TF Object Detection CSV starts with '
                          f'the header {",".join(HEADER)}')

  return typed_items(path, untyped, feature_types or {}, from_text=True)


def _header(path: str, fields: List[str]) -> Tuple[Dict[str, int], List[Tuple[int, str]]]:
  """{column name: index} of the header's known columns, and its other (feature) columns."""
  names = [f.strip().lower() for f in fields]
  names = [_ALIASES[n] if n in _ALIASES and _ALIASES[n] not in names else n for n in names]
  columns: Dict[str, int] = {}
  for index, name in enumerate(names):
    if name in HEADER:
      if name in columns:
        raise ManifestError(f'{path}: the header names column {name!r} twice')
      columns[name] = index
  missing = [n for n in _REQUIRED if n not in columns]
  if missing:
    raise ManifestError(f'{path}: the header of a TF Object Detection CSV needs the columns '
                        f'{",".join(HEADER)} (width and height may be left out); '
                        f'{", ".join(missing)} missing in {",".join(fields)!r}')
  return columns, feature_columns(path, fields, list(columns.values()))


def _row(path: str, line: int, fields: List[str], width: int, columns: Dict[str, int],
         features: List[Tuple[int, str]], split: Optional[str],
         image_root: Optional[str]) -> ParsedItem:
  uri = fields[columns['filename']].strip() if columns['filename'] < len(fields) else ''
  if len(fields) != width:
    return RowError('bad_row', f'the row has {len(fields)} column(s), the header has {width}',
                    source=path, row=line, uri=uri or None)
  if not uri:
    return RowError('bad_row', 'the filename column is empty; name the image file the box '
                    'is on', source=path, row=line)
  for name in ('width', 'height'):
    if name in columns:
      value = fields[columns[name]].strip()
      number = parse_number(value) if value else 1.0
      if number is None or not number > 0:
        return RowError('bad_row', f'{name} must be the image\'s {name} in pixels (or '
                        f'empty), got {value!r}', source=path, row=line, uri=uri)
  label = fields[columns['class']].strip(' \t')
  corners = [fields[columns[name]].strip() for name in _CORNERS]
  row = ManifestRow(source=path, row=line, image_uri=uri,
                    resolved_uri=resolve_uri(uri, path, image_root), split=split,
                    objects=(), features=raw_features(fields, features))
  if not label.strip() and not any(corners):
    return row  # an image without objects
  if not label.strip():
    return RowError('bad_row', 'the box has no class; write its class, or leave class, '
                    'xmin, ymin, xmax and ymax all empty for an image without objects',
                    source=path, row=line, uri=uri)
  values = [parse_number(c) for c in corners]
  bad = [f'{name}={c!r}' for name, c, v in zip(_CORNERS, corners, values) if v is None]
  if bad:
    return RowError('bad_row', f'class {label!r}: xmin, ymin, xmax and ymax must be numbers '
                    f'of pixels; got {", ".join(bad)}', source=path, row=line, uri=uri)
  box = ObjectBox(label, *values, normalized=False)
  return ManifestRow(source=path, row=line, image_uri=uri, resolved_uri=row.resolved_uri,
                     labels=(label,), split=split, objects=(box,), features=row.features)


def _sniff(head: str) -> bool:
  first = head.split('\n', 1)[0].strip()
  try:
    names = [f.strip().lower() for f in next(csv.reader([first]))]
  except (csv.Error, StopIteration):
    return False
  if tuple(n.replace(' ', '') for n in names[:8]) == HEADER:
    return True
  # Other names (VoTT's): only this format's columns, each once, so that a header of
  # another layout (AutoML's detection CSV: 8 coordinate columns, normalised) is not taken.
  known = set(HEADER) | set(_ALIASES)
  return (len(set(names)) == len(names) and set(names) <= known and set(_CORNERS) <= set(names)
          and bool({'filename', 'image'} & set(names)) and bool({'class', 'label'} & set(names)))


FORMAT = ManifestFormat(
    'tf_od_csv', ('.csv',), sniff=_sniff, parse=parse, streamed=True, one_row_a_box=True,
    title='TensorFlow Object Detection CSV',
    sample=FormatSample(
        'm.csv',
        'filename,width,height,class,xmin,ymin,xmax,ymax\na.jpg,10,10,cat,1,1,5,5\n'),
    # Before the CSVs that take other headers: its header names its columns.
    sniff_rank=100)
