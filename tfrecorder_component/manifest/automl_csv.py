"""AutoML Vision / Vertex AI classification CSV: `[ML_USE,]IMAGE_URI[,LABEL,...]`.

A header row is optional. With a header, columns are found by name (`split` or
`ml_use`; `image_uri`, `uri`, `gcs_file_path`, `image`, `path` or `filename`; `label`,
`labels` or `label_*`), and every other named column becomes a typed feature of the
record; without one, the first column is ML_USE when the first data row's first field
is not a file path.

Length: one format whose header and column order carry many layouts (AutoML, Vertex AI,
TFRecorder, one-hot and multi-label exports), each told apart here.
"""
from __future__ import annotations

import csv
import io
import posixpath
import re
from typing import (Callable, Iterable, Iterator, List, Mapping, NamedTuple, Optional,
                    Tuple, Union)

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.format_spec import ManifestFormat
from tfrecorder_component.manifest.features import check_feature_name, parse_number, typed_items
from tfrecorder_component.manifest.rows import (ML_USE_TO_SPLIT, ManifestRow, ParsedItem,
                                                resolve_uri, split_for_ml_use)

SPLIT_COLUMNS = ('split', 'ml_use', 'mluse', 'set')
URI_COLUMNS = ('image_uri', 'uri', 'gcs_file_path', 'image', 'image_path', 'path', 'filename', 'file')
LABEL_COLUMNS = ('label', 'labels', 'class', 'category')


def is_label_column(name: str) -> bool:
  """Whether a header column holds labels: `label`, `labels`, `class`, `category`, or a
  name starting with `label` (`label_1`, `label_2`, ...).

  Args:
    name: the column's name from the header, stripped and lower-cased.
  """
  return name in LABEL_COLUMNS or name.startswith('label')


def is_header(fields: List[str]) -> bool:
  """Whether a CSV row names columns: it names a URI column and holds no data value.

  Args:
    fields: the row's fields as the csv reader gives them (not stripped).
  """
  names = [f.strip().lower() for f in fields]
  if not any(n in URI_COLUMNS for n in names):
    return False
  if all(n in SPLIT_COLUMNS or n in URI_COLUMNS or is_label_column(n) or not n for n in names):
    return True
  return not any(looks_like_uri(f) or (f.strip() and f.strip().upper() in ML_USE_TO_SPLIT)
                 for f in fields)


def looks_like_path(field: str) -> bool:
  """Whether a field could be a file path: it holds a slash, a backslash, a dot or a
  colon. A looser test than `looks_like_uri`.

  Args:
    field: a CSV field; spaces around it are ignored.
  """
  f = field.strip()
  return '/' in f or '\\' in f or '.' in f or ':' in f


_URI_START = re.compile(r'([a-zA-Z][a-zA-Z0-9+.-]*:|/|\\|\.{1,2}/)')
_EXTENSION = re.compile(r'\.[A-Za-z0-9]{2,5}\Z')


def looks_like_uri(field: str) -> bool:
  """Whether a field reads as an image location rather than a column name: it starts
  with a scheme (`gs:`), `/`, `\\`, `./` or `../`, or ends in an extension of 2 to 5
  letters or digits.

  Args:
    field: a CSV field; spaces around it are ignored.
  """
  f = field.strip()
  return bool(_URI_START.match(f) or _EXTENSION.search(f))


def has_ml_use_column(first_row: List[str]) -> bool:
  """Without a header: whether the first data row starts with an ML_USE field.

  Args:
    first_row: the fields of the file's first row. Its first field counts as ML_USE
      when it is an ML_USE word (any case), empty, or no file path (`looks_like_path`).
  """
  first = first_row[0]
  return first.strip().upper() in ('TRAIN', 'TRAINING', 'VALIDATION', 'VALIDATE', 'EVAL',
                                   'TEST', 'UNASSIGNED', '') or not looks_like_path(first)


class _Lines:
  """The physical lines a csv reader takes, kept while it reads one row, so that a row
  with bad syntax fails alone and reading resumes on the line after its first."""

  def __init__(self, lines: Iterable[str]):
    self._source = iter(lines)
    self._replay: List[str] = []
    self.taken: List[str] = []  # the lines of the row being read
    self.count = 0  # lines taken so far

  def __iter__(self):
    return self

  def __next__(self) -> str:
    line = self._replay.pop() if self._replay else next(self._source)
    self.taken.append(line)
    self.count += 1
    return line

  def resume_after_first(self) -> None:
    """Reads again every line of the failed row but its first."""
    rest = self.taken[1:]
    self._replay.extend(reversed(rest))
    self.count -= len(rest)
    self.taken = []


def csv_rows(path: str, text: Union[str, Iterable[str]]
             ) -> Iterator[Union[Tuple[int, List[str]], RowError]]:
  """The non-blank rows of a CSV text (or of its lines as a text file opened with
  newline='' gives them) with their (last) line numbers, or RowErrors for bad syntax.

  Read strictly: a quote that is never closed, text after a closing quote, or a field
  over csv's size limit (what an unbalanced quote runs into) fails the row it starts on,
  naming that line, and reading resumes on the next line, so no row after it is lost
  or swallowed into a field. A quoted field may still span lines (a DataFrame's cell
  may hold a line break); the row is then named by its last line, and a label that
  holds the break fails as `bad_label` (labels lose only spaces and tabs around them).

  Args:
    path: the manifest's path, named in the RowErrors.
    text: the CSV's whole text, or its lines as a text file opened with newline=''
      gives them (read one row at a time, never held whole).
  """
  lines = _Lines(io.StringIO(text, newline='') if isinstance(text, str) else text)
  reader = csv.reader(lines, skipinitialspace=False, strict=True)
  while True:
    lines.taken = []
    start = lines.count + 1
    try:
      fields = next(reader)
    except StopIteration:
      return
    except csv.Error as e:
      quoted = len(lines.taken) > 1 or 'end of data' in str(e) or 'field limit' in str(e)
      yield RowError('bad_row', f'CSV syntax error: {e}' + (
          '; a quote opened on this line is not closed where the field ends (a quote '
          'inside a field is written "")' if quoted else ''), source=path, row=start)
      lines.resume_after_first()
      reader = csv.reader(lines, skipinitialspace=False, strict=True)
      continue
    if any(f.strip() for f in fields):
      yield lines.count, fields


def feature_columns(path: str, fields: List[str], used: List[int]) -> List[Tuple[int, str]]:
  """The header's named columns outside `used`, as (index, name): the extra features.

  Args:
    path: the manifest's path, named in the ManifestError raised for a column name
      that is reserved (`check_feature_name`) or given twice.
    fields: the header row's fields; names are stripped, empty ones skipped.
    used: the 0-based indexes of the columns the format reads itself (image URI,
      ML_USE, labels, mask, box coordinates).
  """
  columns = [(i, f.strip()) for i, f in enumerate(fields) if i not in used and f.strip()]
  seen = set()
  for _, name in columns:
    check_feature_name(path, name)
    if name in seen:
      raise ManifestError(f'{path}: the header names column {name!r} twice; give each '
                          'column its own name')
    seen.add(name)
  return columns


def raw_features(fields: List[str], columns: List[Tuple[int, str]]) -> Tuple[Tuple[str, str], ...]:
  """The non-empty values of the feature columns of a row, as (name, text), sorted by name.

  Args:
    fields: the data row's fields; a column past the row's end counts as empty.
    columns: the feature columns, as `feature_columns` gives them: (index, name).
  """
  return tuple(sorted((name, fields[i].strip()) for i, name in columns
                      if i < len(fields) and fields[i].strip()))


def split_of(path: str, row: int, fields: List[str], split_col: Optional[int],
             uri: str) -> Union[Optional[str], RowError]:
  """The TFX split of a row's ML_USE field, or an `unknown_split` RowError.

  None for a file without an ML_USE column, and for an empty or UNASSIGNED value (the
  row is hash-split).

  Args:
    path: the manifest's path, named in the RowError.
    row: the row's 1-based line number, named in the RowError.
    fields: the row's fields; a column past the row's end reads as empty.
    split_col: the 0-based index of the ML_USE column; None when the file has none.
    uri: the row's image URI as written, named in the RowError.
  """
  if split_col is None:
    return None
  value = fields[split_col] if split_col < len(fields) else ''
  try:
    return split_for_ml_use(value)
  except KeyError:
    return RowError('unknown_split',
                    f'unknown ML_USE value {value!r} (use TRAIN, VALIDATION, TEST, '
                    f'UNASSIGNED or leave it empty)', source=path, row=row, uri=uri)


def header_columns(fields: List[str]) -> Tuple[List[str], Optional[int], int]:
  """A header's lower-cased names, its ML_USE column (or None) and its URI column.

  Args:
    fields: the header row's fields; it must name a URI column (`is_header`), else
      StopIteration escapes.
  """
  names = [f.strip().lower() for f in fields]
  split_col = next((i for i, n in enumerate(names) if n in SPLIT_COLUMNS), None)
  uri_col = next(i for i, n in enumerate(names) if n in URI_COLUMNS)
  return names, split_col, uri_col


ORDER_SAMPLE_ROWS = 100  # headerless rows whose columns are checked before any is read
_IMAGE_EXTENSION = re.compile(r'\.(jpe?g|png|gif|bmp|webp|tiff?)\Z', re.IGNORECASE)


def _is_ml_use_column(values: List[str]) -> bool:
  """ML_USE words in every row, uppercase as AutoML writes them or more than one of them
  (a class named `train` alone is a label)."""
  words = [v.strip() for v in values if v.strip()]
  return bool(words) and all(w.upper() in ML_USE_TO_SPLIT for w in words) and (
      len({w.upper() for w in words}) > 1 or all(w.isupper() for w in words))


def _is_path_column(values: List[str]) -> bool:
  words = [v.strip() for v in values if v.strip()]
  return bool(words) and all('/' in w or '\\' in w or _IMAGE_EXTENSION.search(w)
                             for w in words)


def _examples(values: List[str], shown: int = 3) -> str:
  return ', '.join(list(dict.fromkeys(v.strip() for v in values if v.strip()))[:shown])


def _order_with_optional_ml_use(order: str) -> str:
  """'ML_USE,IMAGE_URI,LABEL' as '[ML_USE,]IMAGE_URI,LABEL': ML_USE may be left out."""
  first, _, rest = order.partition(',')
  return f'[{first},]{rest}' if first.upper() == 'ML_USE' and rest else order


def _check_labels_first(path: str, layout: 'CsvLayout',
                        sample: List[Tuple[int, List[str]]]) -> None:
  """Refuses a headerless CSV read as `ML_USE,IMAGE_URI,...` (its first field is no
  path) whose first column holds no ML_USE value in any row while its second holds
  image paths: a `label,image_uri` file, whose every row would fail as an unknown
  ML_USE value, the label."""
  if layout.split_col != 0 or layout.uri_col != 1:
    return
  firsts = [fields[0] for _, fields in sample]
  seconds = [fields[1] for _, fields in sample if len(fields) > 1]
  if not all(v.strip() for v in firsts) or any(
      v.strip().upper() in ML_USE_TO_SPLIT for v in firsts) or _is_path_column(firsts):
    return
  if not _is_path_column(seconds):
    return
  row, fields = sample[0]
  raise ManifestError(
      f'{path}: the file has no header, and its first column holds labels '
      f'({_examples(firsts)}) and the second image paths ({_examples(seconds)}): AutoML\'s '
      f'order is {_order_with_optional_ml_use(layout.ORDER)} (row {row}: '
      f'{",".join(f.strip() for f in fields)}). Add a header row that names the columns, '
      f'e.g. "{suggest_header(sample, layout.uri_col)}", or put them in that order.')


def check_column_order(path: str, layout: 'CsvLayout',
                       sample: List[Tuple[int, List[str]]]) -> None:
  """Refuses a headerless CSV whose columns are not in AutoML's order, where reading it
  would write wrong labels or fail every row: its label columns hold ML_USE words or
  image paths, or its first column holds labels and the second image paths
  (`label,image_uri`).

  Args:
    path: the manifest's path, named in the ManifestError.
    layout: the layout read from the first row (`from_first_row`): where it expects the
      ML_USE, URI and label columns.
    sample: the file's first rows (at most ORDER_SAMPLE_ROWS), as (line number,
      fields), checked before any row is read.
  """
  _check_labels_first(path, layout, sample)
  for col in layout.label_columns(max(len(fields) for _, fields in sample)):
    values = [fields[col] for _, fields in sample if col < len(fields)]
    if _is_ml_use_column(values):
      what = 'ML_USE values'
    elif _is_path_column(values):
      what = 'image paths'
    else:
      continue
    row, fields = sample[0]
    examples = _examples(values)
    raise ManifestError(
        f'{path}: the file has no header, so its columns are read in AutoML\'s order '
        f'{layout.ORDER}, but column {col + 1} holds {what} ({examples}) where a label '
        f'belongs (row {row}: {",".join(f.strip() for f in fields)}). Add a header row '
        f'that names the columns, e.g. "{suggest_header(sample, layout.uri_col)}", or put '
        f'them in that order.')


_BOX_COLUMNS = ('x_min', 'y_min', 'x2', 'y2', 'x_max', 'y_max', 'x4', 'y4')


def suggest_header(sample: List[Tuple[int, List[str]]], uri_col: int = 0) -> str:
  """A header for headerless rows: `split` for ML_USE columns, `image_uri` for paths (or
  column `uri_col` if no column holds paths), `label` for the first other column, then
  box coordinates where the 8 columns after it hold numbers (a detection CSV), else
  `label_<n>`.

  Args:
    sample: headerless rows as (line number, fields); each column is judged by its
      values in all of them.
    uri_col: the 0-based column to name `image_uri` when no column holds paths: the
      one the layout reads the URI from.
  """
  width = max(len(fields) for _, fields in sample)
  columns = [[fields[col] for _, fields in sample if col < len(fields)] for col in range(width)]
  names: List[str] = []
  for col, values in enumerate(columns):
    if _is_ml_use_column(values) and 'split' not in names:
      names.append('split')
    elif 'image_uri' not in names and (_is_path_column(values) or (
        col == uri_col and not any(_is_path_column(c) for c in columns))):
      names.append('image_uri')
    elif 'label' not in names:
      names.append('label')
      rest = columns[col + 1:]
      if len(rest) == len(_BOX_COLUMNS) and all(
          all(not v.strip() or parse_number(v) is not None for v in c) for c in rest):
        return ','.join(names + list(_BOX_COLUMNS))
    else:
      names.append(f'label_{sum(n.startswith("label") for n in names) + 1}')
  return ','.join(names)


class CsvLayout:
  """The columns every AutoML CSV layout has: ML_USE, URI and extra features, and where
  relative URIs resolve (set by `parse_rows`). Subclasses add their label columns.

  Args:
    split_col: the 0-based index of the ML_USE column; None when the file has none.
    uri_col: the 0-based index of the image URI column.
    width: the header's column count, which every row must have; None without a
      header.
    feature_cols: the extra feature columns as (index, name) (`feature_columns`);
      None: none.
  """

  ORDER = 'ML_USE,IMAGE_URI,LABEL'  # the columns of a headerless file, as AutoML orders them

  def label_columns(self, width: int) -> List[int]:
    """The columns that hold labels in rows `width` wide.

    Args:
      width: the number of fields of the rows (the widest row of a sample).
    """
    raise NotImplementedError

  def __init__(self, split_col: Optional[int], uri_col: int, width: Optional[int] = None,
               feature_cols: Optional[List[Tuple[int, str]]] = None):
    self.split_col = split_col
    self.uri_col = uri_col
    self.width = width  # the header's column count; None without a header
    self.feature_cols = feature_cols or []
    self.image_root: Optional[str] = None  # relative URIs resolve here; None: the manifest's folder


# Column names that together hold a box (compared in lower case): a classification CSV
# whose header has one of these sets is a box list this reader would misread (one
# record a box, its corners as features).
BOX_COLUMNS = (
    ('xmin', 'ymin', 'xmax', 'ymax'), ('x_min', 'y_min', 'x_max', 'y_max'),
    ('x1', 'y1', 'x2', 'y2'), ('left', 'top', 'right', 'bottom'),
    ('x', 'y', 'width', 'height'), ('x', 'y', 'w', 'h'),
    ('bbox_x', 'bbox_y', 'bbox_w', 'bbox_h'), ('bbox_x', 'bbox_y', 'bbox_width', 'bbox_height'),
    ('bbox',))


def _refuse_box_columns(path: str, names: List[str]) -> None:
  """Raises ManifestError, naming the columns, when a classification header names a box:
  which corner or centre, pixels or fractions, cannot be told from it."""
  found = next((group for group in BOX_COLUMNS if set(group) <= set(names)), None)
  if found:
    raise ManifestError(
        f'{path}: the header names box columns ({", ".join(found)}), which a classification '
        'CSV does not read; write the boxes as a TF Object Detection CSV (filename,width,'
        'height,class,xmin,ymin,xmax,ymax in pixels) or an AutoML detection CSV '
        '(fractions), see the formats guide; or rename those columns to keep them as a '
        'classification\'s features')


# The name Roboflow gives its multi-label classification export (`<split>/_classes.csv`).
ROBOFLOW_ONE_HOT = '_classes.csv'


class _Layout(CsvLayout):
  """Which column holds ML_USE, which the URI, which the labels and which features."""

  def __init__(self, split_col: Optional[int], uri_col: int, label_cols: Optional[List[int]],
               width: Optional[int] = None,
               feature_cols: Optional[List[Tuple[int, str]]] = None):
    super().__init__(split_col, uri_col, width, feature_cols)
    self.label_cols = label_cols  # None: every column after the URI
    # A header with no label column: its other columns, which the first row tells to be
    # one-hot classes (`_one_hot`) or features. None: decided, or not a question.
    self.one_hot_candidates: Optional[List[Tuple[int, str]]] = None
    self.one_hot: List[Tuple[int, str]] = []  # (column, class) of one-hot class columns

  def label_columns(self, width: int) -> List[int]:
    if self.label_cols is None:
      return list(range(self.uri_col + 1, width))
    return list(self.label_cols)

  @classmethod
  def from_header(cls, path: str, fields: List[str]) -> '_Layout':
    names, split_col, uri_col = header_columns(fields)
    _refuse_box_columns(path, names)
    labels = [i for i, n in enumerate(names) if is_label_column(n)]
    if posixpath.basename(path) == ROBOFLOW_ONE_HOT and len(names) >= 3:
      # Roboflow's own name for its one-hot CSV: every other column is a class, whatever
      # its name (Roboflow names unnamed classes label_0, label_1, ...).
      labels = []
    used = [uri_col, *labels] + ([split_col] if split_col is not None else [])
    layout = cls(split_col, uri_col, labels, width=len(fields),
                 feature_cols=feature_columns(path, fields, used))
    if not labels and len(layout.feature_cols) >= 2:  # one 0/1 column is a feature
      layout.one_hot_candidates = list(layout.feature_cols)
    return layout

  @classmethod
  def from_first_row(cls, fields: List[str]) -> '_Layout':
    return cls(0, 1, None) if has_ml_use_column(fields) else cls(None, 0, None)


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None) -> Iterator[ParsedItem]:
  """The rows of an AutoML classification CSV (see the module), each a ManifestRow or
  a RowError, in file order.

  Args:
    path: the manifest's path: named in errors, and the folder relative image URIs
      resolve against when `image_root` is None.
    text: the CSV's whole text, or its lines as a text file opened with newline=''
      gives them.
    image_root: the folder (local path or URI) relative image URIs resolve against;
      None: the manifest's folder.
    feature_types: declared types of extra columns ({name: 'int' | 'float' |
      'string'}); a column not declared gets a type inferred from its values.
  """
  return parse_rows(path, text, feature_types, _Layout, _parse_row, image_root)


def parse_rows(path: str, text: str, feature_types: Optional[Mapping[str, str]], layout_class,
               parse_row: Callable, image_root: Optional[str] = None) -> Iterator[ParsedItem]:
  """The rows of an AutoML CSV: the layout comes from the header, else the first row
  (`layout_class.from_header` / `from_first_row`); `parse_row(path, row, fields, layout)`
  turns each row into a ManifestRow or RowError; extra columns are then typed. Relative
  image URIs resolve against `image_root` (`layout.image_root`), by default the
  manifest's folder.

  Args:
    path: the manifest's path, named in errors.
    text: the CSV's whole text, or its lines as a text file opened with newline=''
      gives them; read twice when the file has extra columns (`typed_items`).
    feature_types: declared types of extra columns ({name: 'int' | 'float' |
      'string'}); None or {}: every type is inferred from the file's values.
    layout_class: the format's CsvLayout subclass, with the class methods
      `from_header(path, fields)` and `from_first_row(fields)`.
    parse_row: the format's row parser, called as above for each data row, in file
      order.
    image_root: the folder (local path or URI) relative image URIs resolve against;
      None: the manifest's folder.
  """

  def untyped() -> Iterator[ParsedItem]:
    layout = None
    sample: Optional[List[Tuple[int, List[str]]]] = None  # headerless rows not yet read
    for entry in csv_rows(path, text):
      if isinstance(entry, RowError):
        yield entry
        continue
      row_number, fields = entry
      if layout is None:
        if is_header(fields):
          layout = layout_class.from_header(path, fields)
          layout.image_root = image_root
          continue
        layout = layout_class.from_first_row(fields)
        layout.image_root = image_root
        sample = []
      if sample is not None:
        sample.append((row_number, fields))
        if len(sample) < ORDER_SAMPLE_ROWS:
          continue
        check_column_order(path, layout, sample)
        yield from (parse_row(path, r, f, layout) for r, f in sample)
        sample = None
        continue
      yield parse_row(path, row_number, fields, layout)
    if sample:
      check_column_order(path, layout, sample)
      yield from (parse_row(path, r, f, layout) for r, f in sample)

  return typed_items(path, untyped, feature_types or {}, from_text=True)


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
  split = split_of(path, row, fields, layout.split_col, uri)
  if isinstance(split, RowError):
    return split
  if layout.one_hot_candidates is not None:
    _one_hot(layout, fields)
  if layout.one_hot:
    return _one_hot_row(path, row, fields, uri, split, layout)
  if layout.label_cols is None:
    label_fields = fields[layout.uri_col + 1:]
  else:
    label_fields = [fields[i] for i in layout.label_cols if i < len(fields)]
  labels = tuple(dict.fromkeys(l.strip(' \t') for l in label_fields if l.strip()))
  return ManifestRow(source=path, row=row, image_uri=uri,
                     resolved_uri=resolve_uri(uri, path, layout.image_root), labels=labels,
                     split=split, features=raw_features(fields, layout.feature_cols))


def _one_hot(layout: _Layout, fields: List[str]) -> None:
  """Decides, at a header's first row, whether its columns other than the image's (and
  ML_USE's), in a header that names no label column, are one class a column: they are
  when that row holds only 0 and 1 in each (Roboflow's multi-label classification CSV,
  `_classes.csv`: `filename, cat, dog` then `a.jpg, 1, 0`). Else they stay features."""
  candidates, layout.one_hot_candidates = layout.one_hot_candidates or [], None
  if all(fields[i].strip() in ('0', '1') for i, _ in candidates):
    layout.one_hot = [(i, name.strip()) for i, name in candidates]
    taken = {i for i, _ in candidates}
    layout.feature_cols = [c for c in layout.feature_cols if c[0] not in taken]


def _one_hot_row(path: str, row: int, fields: List[str], uri: str, split: Optional[str],
                 layout: _Layout) -> ParsedItem:
  """A row of a one-hot CSV: its labels are the classes whose column holds 1."""
  bad = [f'{name}={fields[i].strip()!r}' for i, name in layout.one_hot
         if fields[i].strip() not in ('0', '1')]
  if bad:
    return RowError('bad_row', f'one-hot class columns hold 0 or 1; got {", ".join(bad)}',
                    source=path, row=row, uri=uri)
  labels = tuple(name for i, name in layout.one_hot if fields[i].strip() == '1')
  return ManifestRow(source=path, row=row, image_uri=uri,
                     resolved_uri=resolve_uri(uri, path, layout.image_root), labels=labels,
                     split=split, features=raw_features(fields, layout.feature_cols))


class LabelCounts(NamedTuple):
  """Rows of a headerless AutoML CSV by their number of labels (`label_counts`).

  Attributes:
    single: the number of rows with one label.
    multi: the number of rows with more than one label.
    first_multi: the first of those rows, as (line number, fields, non-empty label
      fields); None when there is none.
    spaced: whether a label field after the first of such a row begins with a space
      (a sign of an unquoted comma inside a label).
  """
  single: int  # rows with one label
  multi: int  # rows with more than one
  # (row, fields, label fields) of the first of those
  first_multi: Optional[Tuple[int, List[str], List[str]]]
  spaced: bool  # a label field after the first of such a row begins with a space


def label_counts(path: str, lines: Iterable[str]) -> Optional[LabelCounts]:
  """How many rows of a headerless AutoML classification CSV (its lines, as a text file
  opened with newline='' gives them) have one label and how many more than one, which
  is the first of those, and whether a later label field of one begins with a space
  (`Bird, blue`: an unquoted comma inside a label, as CSV writers put no space after
  the comma between fields). None for a file with a header, whose label columns are
  named (several on purpose, `label_1,label_2`, or one-hot).

  Args:
    path: the manifest's path (named in the RowErrors of bad rows, which are skipped).
    lines: the CSV's lines, as a text file opened with newline='' gives them (or its
      whole text as one str).
  """
  single = multi = 0
  first_multi, spaced, layout = None, False, None
  for entry in csv_rows(path, lines):
    if isinstance(entry, RowError):
      continue
    row, fields = entry
    if layout is None:
      if is_header(fields):
        return None
      layout = _Layout.from_first_row(fields)
    label_fields = [f for f in fields[layout.uri_col + 1:] if f.strip()]
    labels = dict.fromkeys(f.strip(' \t') for f in label_fields)
    if len(labels) == 1:
      single += 1
    elif len(labels) > 1:
      multi += 1
      first_multi = first_multi or (row, fields, label_fields)
      spaced = spaced or any(f[:1].isspace() for f in label_fields[1:])
  return LabelCounts(single, multi, first_multi, spaced)


FORMAT = ManifestFormat('automl_csv', ('.csv', '.txt'), sniff=lambda head: True, parse=parse,
                        streamed=True)
