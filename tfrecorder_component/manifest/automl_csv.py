"""AutoML Vision / Vertex AI classification CSV: `[ML_USE,]IMAGE_URI[,LABEL,...]`.

A header row is optional. With a header, columns are found by name, and every other
named column becomes a typed feature of the record; without one, the first column is
ML_USE when the first data row's first field is not a file path. The `columns` option
(`manifest.columns`) names the image, label and split columns where the names below
are missing, wrong or ambiguous; it needs a header.

Header names are compared without case, spaces, underscores, dashes and dots
(`column_key`: `Data Set`, `data_set` and `data-set` are one name; so are `ClassId` and
`class id`). What each role reads, and where the spellings come from:

- Image (`URI_COLUMNS`, the first in the header's order): `image_uri`, `uri`,
  `gcs_file_path`, `image`, `image_path`, `path`, `filename`, `file` (AutoML, Vertex
  AI and TFRecorder's DataFrames); `file_name` (COCO-style CSVs), `filepath` and
  `filepaths` (Kaggle's "100 Sports": `class id,filepaths,labels,data set`), `Path`
  (GTSRB's Kaggle CSVs: `...,ClassId,Path`; Imagenette's `noisy_imagenette.csv`:
  `path,...`), `image_name`, `image_file`, `img`, `img_path` (Kaggle sets). Then, where
  none of those is there, `image_id` (`ID_URI_COLUMNS`), only when its values are paths:
  a first data row whose `image_id` is no path (HAM10000's `ISIC_0027419`) is refused,
  naming the column, as ids would fail every row.
- Labels: first group (`LABEL_COLUMNS`, `is_label_column`): `label`, `labels`, `class`,
  `category` and any name starting with `label` (`label_1`, `label_2`, ...: Vertex AI's
  multi-label export), every one of them read, a row's labels their union, as before.
  Only where the header has none of those, the first present of
  `LABEL_FALLBACK_COLUMNS`, in its order: `class_name`, `category_name` (text), then
  `class_id`, `category_id`, `label_id` (integer ids: GTSRB's `ClassId`), `target`
  (Kaggle), `y` (not beside an `x` column, a coordinate). So a text label column wins
  over an integer id of the same meaning (100 Sports' `labels` over `class id`), and
  of two fallbacks the first listed (GTSRB's Meta.csv: `ClassId`; its `SignId` is no
  label name). The columns left over, ids included, stay features. `noisy_labels_0`,
  `noisy_labels_5`, ... (Imagenette's alternative noisy labels) are no label columns:
  such a header has an image column and no label column, and its rows are unlabelled
  unless `columns` names one (`label=noisy_labels_0`).
- Split (`SPLIT_COLUMNS`, the first present in its order): `split`, `ml_use`
  (AutoML), `subset` (CVAT, Kaggle), `set`, `data set` / `dataset` (100 Sports: `train`,
  `valid`, `test`), then the flags `is_valid` (fastai's
  `ImageDataLoaders.from_df` / `from_csv` with `valid_col='is_valid'`, the column its
  `ColSplitter` reads by default; Imagenette's CSV: True is eval, False train) and `is_train` (True train, False eval). A split column's
  values are ML_USE values (`rows.ML_USE_TO_SPLIT`, any case: `train`, `valid`, `val`,
  `validation`, `eval`, `test`; empty or UNASSIGNED: hash split), or for a flag True /
  False (also 1 / 0, yes / no); any other value fails its row (`unknown_split`),
  naming the column (`columns` `split=` reads none, and the column is a feature). A
  k-fold CSV's `fold` (numbers) is no split column, but a feature; `columns`
  `split=fold` reads one whose values are splits.

Every other named column is a feature under its header name as written (`Roi.X1`,
`class id`: any name but those `features.check_feature_name` reserves, `image/...`).

Length: one format whose header and column order carry many layouts (AutoML, Vertex AI,
TFRecorder, one-hot and multi-label exports, Kaggle's and fastai's names), each told
apart here.
"""
from __future__ import annotations

import csv
import io
import posixpath
import re
from typing import (Any, Callable, Iterable, Iterator, List, Mapping, NamedTuple, Optional,
                    Tuple, Union)

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.columns import Columns, named, parse_columns
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.features import check_feature_name, parse_number, typed_items
from tfrecorder_component.manifest.rows import (ML_USE_TO_SPLIT, ManifestRow, ParsedItem,
                                                resolve_uri, split_for_ml_use)

# The spellings of each role (see the module), as written; compared by `column_key`.
URI_COLUMNS = ('image_uri', 'uri', 'gcs_file_path', 'image', 'image_path', 'path', 'filename',
               'file', 'file_name', 'filepath', 'filepaths', 'image_name', 'image_file', 'img',
               'img_path')
ID_URI_COLUMNS = ('image_id',)  # an image column only where no other is, and holds paths
SPLIT_COLUMNS = ('split', 'ml_use', 'mluse', 'subset', 'set', 'data set', 'dataset',
                 'is_valid', 'is_train')  # the first present is read
LABEL_COLUMNS = ('label', 'labels', 'class', 'category')  # and label*: all read
# Where the header has no LABEL_COLUMNS: the first present of these (text, then ids).
LABEL_FALLBACK_COLUMNS = ('class_name', 'category_name', 'class_id', 'category_id', 'label_id',
                          'target', 'y')

_SEPARATORS = re.compile(r'[\s_.\-]+')


def column_key(name: str) -> str:
  """A header name as the reader compares it: lower case, without spaces, underscores,
  dashes and dots (`Data Set`, `data_set`, `data-set`: `dataset`).

  Args:
    name: the column's name as the header writes it.
  """
  return _SEPARATORS.sub('', name.strip().lower())


_URI_KEYS = tuple(dict.fromkeys(map(column_key, URI_COLUMNS)))
_ID_URI_KEYS = tuple(map(column_key, ID_URI_COLUMNS))
_SPLIT_KEYS = tuple(dict.fromkeys(map(column_key, SPLIT_COLUMNS)))
_LABEL_KEYS = tuple(map(column_key, LABEL_COLUMNS))
_FALLBACK_KEYS = tuple(map(column_key, LABEL_FALLBACK_COLUMNS))
# Split flags by name: (the split of True, the split of False).
_FLAG_SPLITS = {'isvalid': ('eval', 'train'), 'isval': ('eval', 'train'),
                'isvalidation': ('eval', 'train'), 'istrain': ('train', 'eval'),
                'istraining': ('train', 'eval'), 'istest': ('test', 'train')}
_TRUE, _FALSE = ('true', '1', 'yes', 't', 'y'), ('false', '0', 'no', 'f', 'n')  # any case


def is_label_column(name: str) -> bool:
  """Whether a header column is one of the first group of label columns, all of which
  are read: `label`, `labels`, `class`, `category`, or a name starting with `label`
  (`label_1`, `label_2`, ...) but `label_id` (`LABEL_FALLBACK_COLUMNS`).

  Args:
    name: the column's name from the header, in any case and spelling (`column_key`).
  """
  key = column_key(name)
  return key in _LABEL_KEYS or (key.startswith('label') and key not in _FALLBACK_KEYS)


def _is_role_name(key: str) -> bool:
  return (key in _URI_KEYS or key in _ID_URI_KEYS or key in _SPLIT_KEYS or
          key in _FALLBACK_KEYS or is_label_column(key))


def is_header(fields: List[str]) -> bool:
  """Whether a CSV row names columns: it names an image column (`URI_COLUMNS`,
  `ID_URI_COLUMNS`, any spelling) and holds no data value: every field is a role's
  name, or none reads as an image location (`looks_like_data`) or an ML_USE value.

  Args:
    fields: the row's fields as the csv reader gives them (not stripped).
  """
  keys = [column_key(f) for f in fields]
  if not any(k in _URI_KEYS or k in _ID_URI_KEYS for k in keys):
    return False
  if all(_is_role_name(k) or not k for k in keys):
    return True
  return not any(looks_like_data(f) or (f.strip() and f.strip().upper() in ML_USE_TO_SPLIT)
                 for f in fields)


def looks_like_data(field: str) -> bool:
  """Whether a field of a row that may be a header reads as an image location: it starts
  with a scheme, `/`, `\\`, `./` or `../`, or ends in an image file's extension. A dotted
  column name (`Roi.X1`, GTSRB's) or one with a slash (`image/height`, refused later as
  reserved) is no location.

  Args:
    field: a CSV field; spaces around it are ignored.
  """
  f = field.strip()
  return bool(_URI_START.match(f) or _DATA_EXTENSION.search(f))


def _is_path_value(field: str) -> bool:
  """Whether an `image_id` value is a path: a location (`looks_like_data`), or holds a
  slash or backslash."""
  return looks_like_data(field) or '/' in field or '\\' in field


_DATA_EXTENSION = re.compile(
    r'\.(jpe?g|jpe|jfif|png|gif|bmp|dib|webp|tiff?|ico|p[bgpn]m|heic|heif|avif|jp2|j2k|jxl|'
    r'dcm|dicom|svg|exr|hdr|tga|raw|dng|nef|cr2)\Z', re.IGNORECASE)


class HeaderRoles(NamedTuple):
  """The columns a header gives each role (`header_roles`, `roles_of`), 0-based.

  Attributes:
    image: the image column.
    labels: the label columns ([]: none, the rows are unlabelled).
    split: the split column; None: none.
    mask: the mask column the `columns` option names; None: not named.
    image_is_id: whether the image column is an id column (`ID_URI_COLUMNS`), an image
      column only where its values are paths.
    split_flag: for a split flag (`is_valid`, `is_train`, ...): (the split of True,
      the split of False); None for a column of ML_USE values.
  """
  image: int
  labels: List[int]
  split: Optional[int]
  mask: Optional[int] = None
  image_is_id: bool = False
  split_flag: Optional[Tuple[str, str]] = None


def _named_column(path: str, fields: List[str], role: str, name: str) -> int:
  """The header column `name` (as written, else by `column_key` where one column alone
  matches), or a ManifestError naming the file, the column and the header's columns."""
  stripped = [f.strip() for f in fields]
  if name in stripped:
    return stripped.index(name)
  loose = [i for i, f in enumerate(stripped) if column_key(f) == column_key(name)]
  if len(loose) == 1:
    return loose[0]
  shown = ', '.join(repr(f) for f in stripped)
  why = (f'; {len(loose)} columns match it without case and separators' if loose else '')
  data = any(looks_like_data(f) or (f.strip() and f.strip().upper() in ML_USE_TO_SPLIT)
             for f in fields)
  hint = (' (this first row reads as data: columns names the columns of a header row, and '
          'the file needs one)' if data and not loose else '')
  raise ManifestError(f'{path}: columns names {role}={name!r}, but the header has no column '
                      f'{name!r}{why}; the header\'s columns are {shown}{hint}')


def roles_of(path: str, fields: List[str], columns: Columns = (),
             first_row: Optional[List[str]] = None) -> Optional[HeaderRoles]:
  """The columns of each role in a header row (see the module's rules), the `columns`
  option's first; None where the row names no image column (or names only an
  `image_id` whose value in `first_row`, when given, is no path).

  Args:
    path: the manifest's path, named in the ManifestError of a column `columns` names
      that the header lacks.
    fields: the header row's fields.
    columns: the `columns` option (`columns.parse_columns`): roles it names are read
      from those columns; (): every role found by name.
    first_row: the first data row, which tells whether an `image_id` column holds paths;
      None: such a column counts (`image_is_id` says so).
  """
  keys = [column_key(f) for f in fields]
  given = {role: [_named_column(path, fields, role, n) for n in names]
           for role in ('image', 'label', 'split', 'mask')
           for names in [named(columns, role)] if names is not None}
  taken = {i for cols in given.values() for i in cols}
  free = [(i, k) for i, k in enumerate(keys) if i not in taken]
  image_is_id = False
  if given.get('image'):
    image = given['image'][0]
  else:
    image = next((i for i, k in free if k in _URI_KEYS), None)
    if image is None:
      image = next((i for i, k in free if k in _ID_URI_KEYS), None)
      image_is_id = image is not None
      if image_is_id and first_row is not None and not (
          image < len(first_row) and _is_path_value(first_row[image])):
        return None
    if image is None:
      return None
  free = [(i, k) for i, k in free if i != image]
  labels = given['label'] if 'label' in given else _guessed_labels(free)
  free = [(i, k) for i, k in free if i not in labels]
  if 'split' in given:
    split = given['split'][0] if given['split'] else None
  else:
    split = next((i for key in _SPLIT_KEYS for i, k in free if k == key), None)
  mask = given['mask'][0] if given.get('mask') else None
  flag = _FLAG_SPLITS.get(keys[split]) if split is not None else None
  return HeaderRoles(image, list(labels), split, mask, image_is_id, flag)


def header_roles_of(path: str, fields: List[str], columns: Columns = ()) -> HeaderRoles:
  """`roles_of` a CSV's header, or a ManifestError naming the file and the header where it
  names no image column (the `columns` option naming none either).

  Args:
    path: the manifest's path, named in the ManifestErrors.
    fields: the header row's fields.
    columns: the `columns` option (`columns.parse_columns`).
  """
  roles = roles_of(path, fields, columns)
  if roles is None:
    raise ManifestError(
        f'{path}: the header names no image column ({", ".join(URI_COLUMNS)}, in any case '
        f'and spelling); its columns are {", ".join(repr(f.strip()) for f in fields)}: name '
        'the image column with columns "image=COLUMN"')
  return roles


def _guessed_labels(free: List[Tuple[int, str]]) -> List[int]:
  """The label columns among `free` (index, key): every one of the first group, else the
  first present fallback (`y` not beside an `x`)."""
  first = [i for i, k in free if is_label_column(k)]
  if first:
    return first
  keys = {k for _, k in free}
  for key in _FALLBACK_KEYS:
    if key == 'y' and 'x' in keys:
      continue
    found = [i for i, k in free if k == key]
    if found:
      return found[:1]
  return []


def header_roles(fields: List[str], columns: Any = (),
                 first_row: Optional[List[str]] = None) -> Optional[dict]:
  """What a CSV's first line names, read by the rules of the module without parsing any
  row: {'image': column, 'label': [columns], 'split': column or None} (0-based), or
  None where the line is no header naming an image column. So a folder's reading can
  ask whether a CSV names images, and whether it has a label column.

  An `image_id` column (`ID_URI_COLUMNS`) counts only where `first_row` is given and
  holds a path there.

  Args:
    fields: the first line's fields, as the csv reader gives them.
    columns: the `columns` option, in any form `columns.parse_columns` takes; a column
      it names that the line lacks is a ManifestError (a UsageError for a bad value).
    first_row: the CSV's second line (its first data row), to judge an `image_id`
      column; None: such a column does not count.
  """
  given = parse_columns(columns)
  if not given and not is_header(fields):
    return None
  roles = roles_of('the header', fields, given, first_row if first_row is not None else [])
  if roles is None:
    return None
  return {'image': roles.image, 'label': list(roles.labels), 'split': roles.split}


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
             uri: str, column: Optional[str] = None,
             flag: Optional[Tuple[str, str]] = None) -> Union[Optional[str], RowError]:
  """The TFX split of a row's split field, or an `unknown_split` RowError naming the
  column.

  None for a file without a split column, and for an empty or UNASSIGNED value (the
  row is hash-split).

  Args:
    path: the manifest's path, named in the RowError.
    row: the row's 1-based line number, named in the RowError.
    fields: the row's fields; a column past the row's end reads as empty.
    split_col: the 0-based index of the split column; None when the file has none.
    uri: the row's image URI as written, named in the RowError.
    column: the split column's header name, named in the RowError; None: a headerless
      file's ML_USE column.
    flag: for a split flag (`is_valid`, ...): (the split of True, the split of False);
      None: the column holds ML_USE values (`rows.ML_USE_TO_SPLIT`).
  """
  if split_col is None:
    return None
  value = fields[split_col] if split_col < len(fields) else ''
  if flag is not None:
    word = value.strip().lower()
    if not word:
      return None
    if word in _TRUE or word in _FALSE:
      return flag[0] if word in _TRUE else flag[1]
    return RowError('unknown_split', f'column {column!r} holds {value!r}, which is no split: '
                    f'True ({flag[0]}), False ({flag[1]}) or empty (hash split); if the column '
                    'is no split, convert with columns "split=" to read none',
                    source=path, row=row, uri=uri)
  try:
    return split_for_ml_use(value)
  except KeyError:
    where = f' in column {column!r}' if column else ''
    hint = (f'; if column {column!r} holds no split, convert with columns "split=" to read '
            'none' if column else '')
    return RowError('unknown_split',
                    f'unknown ML_USE value {value!r}{where} (use TRAIN, VALIDATION, TEST, '
                    f'UNASSIGNED or leave it empty; VALID, VAL and EVAL are VALIDATION){hint}',
                    source=path, row=row, uri=uri)


def header_columns(fields: List[str]) -> Tuple[List[str], Optional[int], int]:
  """A header's lower-cased names, its split column (or None) and its image column, as
  `roles_of` finds them by name.

  Args:
    fields: the header row's fields; it must name an image column (`is_header`), else
      StopIteration escapes.
  """
  names = [f.strip().lower() for f in fields]
  roles = roles_of('', fields)
  if roles is None:
    raise StopIteration
  return names, roles.split, roles.image


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
    roles: the header's roles (`roles_of`), where the layout comes from a header: the
      split column's kind, and whether the image column is an `image_id` whose first
      value must be a path.
    header: the header row's fields, which name the split and image columns in
      errors; None without a header.
  """

  ORDER = 'ML_USE,IMAGE_URI,LABEL'  # the columns of a headerless file, as AutoML orders them

  def label_columns(self, width: int) -> List[int]:
    """The columns that hold labels in rows `width` wide.

    Args:
      width: the number of fields of the rows (the widest row of a sample).
    """
    raise NotImplementedError

  def __init__(self, split_col: Optional[int], uri_col: int, width: Optional[int] = None,
               feature_cols: Optional[List[Tuple[int, str]]] = None,
               roles: Optional[HeaderRoles] = None, header: Optional[List[str]] = None):
    self.split_col = split_col
    self.uri_col = uri_col
    self.width = width  # the header's column count; None without a header
    self.feature_cols = feature_cols or []
    self.image_root: Optional[str] = None  # relative URIs resolve here; None: the manifest's folder
    # The split column's header name (None without a header) and, for a flag, the
    # splits of True and False.
    self.split_name = (header[split_col].strip() if header is not None and
                       split_col is not None else None)
    self.split_flag = roles.split_flag if roles else None
    # The image column's header name where it is an `image_id`: its first value is checked.
    self.id_column = header[uri_col].strip() if roles and roles.image_is_id and header else None

  def split(self, path: str, row: int, fields: List[str], uri: str):
    """The row's split, or an `unknown_split` RowError (`split_of`).

    Args:
      path: the manifest's path, named in the RowError.
      row: the row's line number, named in the RowError.
      fields: the row's fields.
      uri: the row's image URI as written, named in the RowError.
    """
    return split_of(path, row, fields, self.split_col, uri, self.split_name, self.split_flag)


def check_id_column(path: str, layout: CsvLayout, row: int, fields: List[str]) -> None:
  """Refuses a CSV whose image column is an `image_id` (`ID_URI_COLUMNS`) holding no path
  in its first data row: ids would fail every row as missing files.

  Args:
    path: the manifest's path, named in the ManifestError.
    layout: the file's layout; nothing is checked unless its `id_column` is set.
    row: the first data row's line number.
    fields: the first data row's fields.
  """
  if layout.id_column is None:
    return
  value = fields[layout.uri_col].strip() if layout.uri_col < len(fields) else ''
  layout.id_column, column = None, layout.id_column
  if value and _is_path_value(value):
    return
  raise ManifestError(
      f'{path}: column {column!r} holds ids, not image paths (row {row}: {value!r}), and the '
      f'header names no other image column ({", ".join(URI_COLUMNS)}); add a column of '
      'image paths and name it with columns "image=COLUMN"')


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
               feature_cols: Optional[List[Tuple[int, str]]] = None,
               roles: Optional[HeaderRoles] = None, header: Optional[List[str]] = None):
    super().__init__(split_col, uri_col, width, feature_cols, roles, header)
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
  def from_header(cls, path: str, fields: List[str], columns: Columns = ()) -> '_Layout':
    roles = header_roles_of(path, fields, columns)
    names = [f.strip().lower() for f in fields]
    _refuse_box_columns(path, names)
    labels = list(roles.labels)
    if (posixpath.basename(path) == ROBOFLOW_ONE_HOT and len(names) >= 3 and
        named(columns, 'label') is None):
      # Roboflow's own name for its one-hot CSV: every other column is a class, whatever
      # its name (Roboflow names unnamed classes label_0, label_1, ...).
      labels = []
    used = [roles.image, *labels] + ([roles.split] if roles.split is not None else [])
    layout = cls(roles.split, roles.image, labels, width=len(fields),
                 feature_cols=feature_columns(path, fields, used), roles=roles, header=fields)
    # One 0/1 column is a feature; `label=` names no label column on purpose.
    if not labels and len(layout.feature_cols) >= 2 and named(columns, 'label') is None:
      layout.one_hot_candidates = list(layout.feature_cols)
    return layout

  @classmethod
  def from_first_row(cls, fields: List[str]) -> '_Layout':
    return cls(0, 1, None) if has_ml_use_column(fields) else cls(None, 0, None)


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None,
          columns: Columns = ()) -> Iterator[ParsedItem]:
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
    columns: the `columns` option (`columns.parse_columns`): the header's image, label
      and split columns, where named; the file's first row must be a header holding
      them.
  """
  return parse_rows(path, text, feature_types, _Layout, _parse_row, image_root, columns)


def parse_rows(path: str, text: str, feature_types: Optional[Mapping[str, str]], layout_class,
               parse_row: Callable, image_root: Optional[str] = None,
               columns: Columns = ()) -> Iterator[ParsedItem]:
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
      `from_header(path, fields, columns)` and `from_first_row(fields)`.
    parse_row: the format's row parser, called as above for each data row, in file
      order.
    image_root: the folder (local path or URI) relative image URIs resolve against;
      None: the manifest's folder.
    columns: the `columns` option (`columns.parse_columns`); given, the first row is
      the header, and a column it names that the header lacks is a ManifestError.
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
        if columns or is_header(fields):
          layout = layout_class.from_header(path, fields, columns)
          layout.image_root = image_root
          continue
        layout = layout_class.from_first_row(fields)
        layout.image_root = image_root
        sample = []
      check_id_column(path, layout, row_number, fields)
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
  split = layout.split(path, row, fields, uri)
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


def part_context(path: str, lines: Iterable[str], columns: Columns = ()) -> Optional[int]:
  """How many of a file's first lines `parse` must read before it reads any later line
  as the whole file's parse does (`ManifestFormat.part_context`): through the row after
  ORDER_SAMPLE_ROWS non-blank rows, which covers the header and the first data row it
  decides on (`check_id_column`, `_one_hot`) and a headerless file's column check
  (`check_column_order`); nothing else of a row depends on another row, except the
  types of extra columns, inferred from the whole file: None for a header that names
  any (`typed_items`), for a syntax error or a refused header among those lines (the
  whole parse reports it), and for a file of fewer rows.

  Args:
    path: the manifest's path, named in the errors the header's check raises.
    lines: the file's first lines, as a text file opened with newline='' gives them.
    columns: the `columns` option (`columns.parse_columns`).
  """
  rows = 0
  for entry in csv_rows(path, lines):
    if isinstance(entry, RowError):
      return None
    line, fields = entry
    if rows == 0 and (columns or is_header(fields)):
      try:
        if _Layout.from_header(path, fields, columns).feature_cols:
          return None
      except ManifestError:
        return None
    rows += 1
    if rows > ORDER_SAMPLE_ROWS:
      return line
  return None


FORMAT = ManifestFormat(
    'automl_csv', ('.csv', '.txt'), sniff=lambda head: True, parse=parse, streamed=True,
    column_roles=('image', 'label', 'split'), part_context=part_context,
    title='AutoML classification CSV',
    sample=FormatSample(
        'm.csv',
        'TRAIN,a.jpg,cat\n'),
    # Last: the .csv or .txt file no other format takes, and a file of no known extension.
    sniff_rank=140)
