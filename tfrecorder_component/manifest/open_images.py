"""Open Images (V4 to V7) CSVs, joined to their images by `ImageID`.

Two kinds of file, told apart by their header (columns are found by name; others, such
as the train boxes file's `XClick1X` ... `XClick4Y`, are not read):

- boxes (`*-annotations-bbox.csv`): `ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,
  YMax,IsOccluded,IsTruncated,IsGroupOf,IsDepiction,IsInside`, one box a line, normalised
  to [0, 1] (note the order: XMin, XMax, YMin, YMax). Each image is a detection row.
  `IsGroupOf` 1 is `is_crowd` (as the TF Object Detection API's Open Images tools have
  it) and `IsTruncated` 1 is `truncated`; `IsGroupOf`, `IsOccluded`, `IsDepiction` and
  `IsInside` are also kept as the ints they are (-1: unknown) in the attributes
  `group_of`, `occluded`, `depiction` and `inside` (`image/object/<name>`).
  `Confidence` (always 1 for boxes) must be a number from 0 to 1 and is not kept.
- image-level labels (`*-annotations-human-imagelabels.csv`, and the machine-made ones):
  `ImageID,Source,LabelName,Confidence`. Each image is a classification row whose labels
  are those with a Confidence above 0; Confidence 0 is a verified negative (the class is
  NOT in the image), which is no label of it: an image with negatives alone is an
  unlabelled record.

Classes: `LabelName` is a MID (`/m/01g317`), named by the first class description file
found beside the CSV, of `CLASS_DESCRIPTION_FILES` (`LabelName,DisplayName` rows, with or
without that header). Two MIDs of one display name are each named `Name (/m/...)`, so
that they stay two classes; a MID the file does not name fails its image. Without such a
file the labels are the MIDs, and a warning says so.

Images: `<ImageID>.jpg` under `image_root`, by default the CSV's folder: directly, or in
the folder of the file's split (`train/`, `validation/`, `test/`: the layout of Open
Images' buckets and of Datumaro's `images/<subset>/`). Without `image_root`, also
Datumaro's layout (`annotations/` beside `images/<subset>/`) and FiftyOne's
(`<split>/labels/` beside `<split>/data/`). One place is chosen for the whole file: the
first of those (`_image_folders`) that holds one of the file's first images; else the
first, with a warning.

Split: from the file name (`train-...`, `oidv6-train-...`: train; `validation-...`:
eval; `test-...`: test), or FiftyOne's `<split>/labels/` folder; else unassigned.

Rows are grouped per ImageID in bounded memory whatever the file's size: a file whose
ImageIDs come in order (as Open Images' do) is read twice, once to see that they do,
then yielding each image as its last line is read; any other file's lines are sorted
by ImageID on local temporary disk (`io.sort.ExternalSort`). Either way images come in
ImageID order (of IDs of one length, as Open Images' are, text order). A line that
cannot be read fails its image, naming the line and why.

Length: one format's three files (boxes, image-level labels, class descriptions) and
their external join by image id.
"""
from __future__ import annotations

import io
import logging
import posixpath
import re
import shutil
import struct
import tempfile
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.automl_csv import csv_rows
from tfrecorder_component.manifest.confine import Confinement
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.io import sort
from tfrecorder_component.manifest.features import parse_number
from tfrecorder_component.manifest.rows import (ManifestRow, ObjectBox, ParsedItem, resolve_uri,
                                                split_for_ml_use)
from tfrecorder_component.io import files
from tfrecorder_component.manifest import coco

_LOG = logging.getLogger(__name__)

# Looked for beside the CSV, in this order: the full list before the boxable classes
# (image-level labels use classes beyond the boxable 600); V6 / V7 names, then V4 / V5
# names, then TensorFlow Datasets' name (its `open_images_v4` builder and fake data),
# then FiftyOne's copy (`<split>/metadata/classes.csv`, for a CSV in `<split>/labels/`).
CLASS_DESCRIPTION_FILES = (
    'oidv7-class-descriptions.csv', 'oidv7-class-descriptions-boxable.csv',
    'oidv6-class-descriptions.csv', 'oidv6-class-descriptions-boxable.csv',
    'class-descriptions.csv', 'class-descriptions-boxable.csv', 'class_descriptions.csv',
    '../metadata/classes.csv')
IMAGE_EXTENSION = '.jpg'
PROBED_IMAGES = 3  # of the file's first images, looked for to choose the image folder

_BOX_COLUMNS = ('XMin', 'XMax', 'YMin', 'YMax')
# Open Images' flag columns: (column, attribute it is kept as, or '' for none).
_FLAGS = (('IsOccluded', 'occluded'), ('IsTruncated', ''), ('IsGroupOf', 'group_of'),
          ('IsDepiction', 'depiction'), ('IsInside', 'inside'))
_KNOWN = ('ImageID', 'Source', 'LabelName', 'Confidence', *_BOX_COLUMNS,
          *(column for column, _ in _FLAGS))
_SPLIT = re.compile(r'^(?:oidv\d+-|challenge-\d{4}-)?(train|validation|test|challenge2018)[-_.]',
                    re.I)


def parse(path: str, text: Any, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None,
          confine: Optional[Confinement] = None, **unused) -> Iterator[ParsedItem]:
  """The images of an Open Images CSV, each with its boxes or labels (see the module).

  Args:
    path: the CSV's path: named in errors; its name (or FiftyOne's `<split>/labels/`
      folder) gives the split, and its folder is where class description files and,
      when `image_root` is None, the images are looked for.
    text: the file's text, or its lines (a text file, which is read more than once).
    image_root: the folder (local path or URI) that holds `<ImageID>.jpg`, directly or
      in the split's folder; None: the CSV's folder, or Datumaro's or FiftyOne's image
      folder beside it (see the module).
    feature_types: ignored: no extra columns are read.
    confine: the run's roots: a class description file or image folder leading out of
      them is not looked at (as if it were not there); None: none.
    unused: any other keyword a format's parser may be passed; ignored.
  """
  del feature_types, unused  # no extra columns are read
  split_word = _split_word(path)
  split = split_for_ml_use(split_word) if split_word in _SPLITS else None
  layout = _Layout.from_text(path, text)
  names = _class_names(path, confine)
  ordered, first_ids = _scan(text, layout)
  folder = _image_folder(path, image_root, split_word, first_ids, confine)
  image = _Image(path, image_root, folder, split, layout, names)
  if ordered:
    yield from _grouped(image, _rows(path, text, layout))
    return
  scratch = tempfile.mkdtemp(prefix='tfrecorder-open-images-')
  try:
    yield from _grouped(image, _sorted_rows(path, text, layout, scratch))
  finally:
    shutil.rmtree(scratch, ignore_errors=True)


_SPLITS = ('train', 'validation', 'test')


def _split_word(path: str) -> Optional[str]:
  """The split the file's name gives (`train`, `validation`, `test`, `challenge2018`),
  or FiftyOne's `<split>/labels/<file>.csv` folder, else None."""
  parts = path.replace('\\', '/').split('/')
  found = _SPLIT.match(parts[-1])
  if found:
    return found.group(1).lower()
  if len(parts) >= 3 and parts[-2] == 'labels' and parts[-3].lower() in _SPLITS:
    return parts[-3].lower()
  return None


class _Layout:
  """Where the header puts each column read, and whether the file holds boxes."""

  def __init__(self, path: str, header: List[str]):
    names = [name.strip() for name in header]
    self.width = len(names)
    self.columns = {name: i for i, name in reversed(list(enumerate(names)))}
    missing = [n for n in ('ImageID', 'LabelName') if n not in self.columns]
    self.boxes = any(n in self.columns for n in _BOX_COLUMNS)
    if self.boxes:
      missing += [n for n in _BOX_COLUMNS if n not in self.columns]
    if missing:
      raise ManifestError(
          f'{path}: an Open Images CSV needs the columns {", ".join(missing)} in its header '
          f'(it has {", ".join(names)}); a boxes file\'s header is ImageID,Source,LabelName,'
          'Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,IsDepiction,'
          'IsInside, an image-level labels file\'s ImageID,Source,LabelName,Confidence')
    self.image_id = self.columns['ImageID']
    unread = [n for n in names if n and n not in _KNOWN]
    if unread:
      _LOG.info('%s: columns not read: %s', path, ', '.join(unread))

  @classmethod
  def from_text(cls, path: str, text: Any) -> '_Layout':
    for entry in csv_rows(path, _lines(text)):
      if isinstance(entry, RowError) or 'ImageID' not in [f.strip() for f in entry[1]]:
        raise ManifestError(f'{path}: an Open Images CSV starts with a header naming its '
                            'columns (ImageID,Source,LabelName,...); the first row is '
                            f'{_shown_row(entry)}')
      return cls(path, entry[1])
    raise ManifestError(f'{path}: the file is empty; an Open Images CSV starts with a '
                        'header (ImageID,Source,LabelName,...)')


def _shown_row(entry: Any) -> str:
  if isinstance(entry, RowError):
    return f'not CSV ({entry.message})'
  text = ','.join(entry[1])
  return repr(text if len(text) <= 80 else text[:77] + '...')


def _lines(text: Any) -> Iterable[str]:
  """The CSV's lines, from its text or from a text file of them."""
  return io.StringIO(text, newline='') if isinstance(text, str) else text


def _data_rows(path: str, text: Any) -> Iterator[Any]:
  """(line number, fields) of each row after the header, or a RowError."""
  rows = csv_rows(path, _lines(text))
  for entry in rows:
    if not isinstance(entry, RowError):
      break  # the header
  yield from rows


def _scan(text: Any, layout: _Layout) -> Tuple[bool, List[str]]:
  """Whether the file's ImageIDs come in order (`_order`), and its first distinct
  ImageIDs. Read line by line while no line holds a quote (none of Open Images' files
  does), else as CSV."""
  if layout.image_id == 0:
    try:
      return _in_order(_line_ids(text))
    except _Quoted:
      pass
  return _in_order(_image_id(fields, layout) for fields in (
      e[1] for e in _data_rows('', text) if not isinstance(e, RowError)))


class _Quoted(Exception):
  """A line holds a quote: its fields are read as CSV."""


def _line_ids(text: Any) -> Iterator[str]:
  """The first field of each line after the header (raises _Quoted at a quote)."""
  header = True
  for line in _lines(text):
    if '"' in line:
      raise _Quoted()
    if line.strip():
      if not header:
        yield line.split(',', 1)[0].strip()
      header = False


def _in_order(ids: Iterable[str]) -> Tuple[bool, List[str]]:
  first: List[str] = []
  previous = None
  for image_id in ids:
    if image_id != previous:
      if previous is not None and _order(image_id) < _order(previous):
        return False, first
      if len(first) < PROBED_IMAGES and image_id:
        first.append(image_id)
      previous = image_id
  return True, first


def _order(image_id: str) -> Tuple[int, str]:
  """How ImageIDs are ordered: by length, then text (the sorted runs' order)."""
  return len(image_id), image_id


def _rows(path: str, text: Any, layout: _Layout) -> Iterator[Any]:
  """(ImageID, line number, fields) of each data row in file order, or a RowError."""
  for entry in _data_rows(path, text):
    if isinstance(entry, RowError):
      yield entry
    else:
      line, fields = entry
      yield _image_id(fields, layout), line, fields


def _image_id(fields: List[str], layout: _Layout) -> str:
  return fields[layout.image_id].strip() if layout.image_id < len(fields) else ''


def _sorted_rows(path: str, text: Any, layout: _Layout, scratch: str) -> Iterator[Any]:
  """As `_rows`, sorted by ImageID, then line (RowErrors first, as they are read)."""
  budget = sort.SortBudget(coco.MEMORY_BYTES)
  lines = sort.ExternalSort(scratch, budget)
  for entry in _rows(path, text, layout):
    if isinstance(entry, RowError):
      yield entry
      continue
    image_id, line, fields = entry
    data = image_id.encode('utf-8', 'surrogatepass')
    lines.add(_LENGTH.pack(len(data)) + data + line.to_bytes(8, 'big'), (line, fields))
  for key, value in lines.entries():
    line, fields = sort.unpacked_value(value)
    yield key[_LENGTH.size:-8].decode('utf-8', 'surrogatepass'), line, fields


_LENGTH = struct.Struct('>I')


def _grouped(image: '_Image', rows: Iterator[Any]) -> Iterator[ParsedItem]:
  """The rows of each ImageID (which come together) as the image's row or error."""
  group: List[Tuple[int, List[str]]] = []
  current = None
  for entry in rows:
    if isinstance(entry, RowError):
      yield entry
      continue
    image_id, line, fields = entry
    if group and image_id != current:
      yield image.item(current, group)
      group = []
    current = image_id
    group.append((line, fields))
  if group:
    yield image.item(current, group)


class _Image:
  """Makes an image's row (or RowError) from its lines."""

  def __init__(self, path: str, image_root: Optional[str], folder: str,
               split: Optional[str], layout: _Layout, names: Optional['_ClassNames']):
    self.path = path
    self.image_root = image_root
    self.folder = folder
    self.split = split
    self.layout = layout
    self.names = names

  def item(self, image_id: str, lines: Sequence[Tuple[int, List[str]]]) -> ParsedItem:
    first = lines[0][0]
    if not image_id:
      return RowError('bad_row', 'the row has no ImageID', source=self.path, row=first)
    uri = posixpath.join(self.folder, image_id + IMAGE_EXTENSION) if self.folder else (
        image_id + IMAGE_EXTENSION)
    read = [(line, self._read(fields)) for line, fields in lines]
    bad = [(line, what) for line, what in read if isinstance(what, _Problem)]
    if bad:
      line, what = bad[0]
      more = f' (and {len(bad) - 1} more of its lines)' if len(bad) > 1 else ''
      return RowError('bad_row', f'line {line}: {what}{more}', source=self.path, row=line,
                      uri=uri)
    resolved = resolve_uri(uri, self.path, self.image_root)
    if self.layout.boxes:
      boxes = tuple(what for _, what in read)
      return ManifestRow(source=self.path, row=first, image_uri=uri, resolved_uri=resolved,
                         labels=tuple(dict.fromkeys(b.label for b in boxes)), objects=boxes,
                         split=self.split)
    labels = tuple(dict.fromkeys(label for _, label in read if label))
    return ManifestRow(source=self.path, row=first, image_uri=uri, resolved_uri=resolved,
                       labels=labels, split=self.split)

  def _read(self, fields: List[str]) -> Any:
    """A line's box, or its label ('' for a negative one), or the _Problem with it."""
    layout = self.layout
    if len(fields) != layout.width:
      return _Problem(f'the row has {len(fields)} column(s), the header has {layout.width}')
    def value(name: str) -> str:
      return fields[layout.columns[name]].strip()
    mid = value('LabelName')
    if not mid:
      return _Problem('LabelName is empty')
    label = self.names.name(mid) if self.names else mid
    if label is None:
      return _Problem(f'LabelName {mid!r} is not in {self.names.source}; give the class '
                      'descriptions file that names every class '
                      '(oidv7-class-descriptions.csv)')
    confidence = 1.0
    if 'Confidence' in layout.columns:
      confidence = parse_number(value('Confidence'))
      if confidence is None or not 0 <= confidence <= 1:
        return _Problem('Confidence must be a number from 0 to 1, got '
                        f'{value("Confidence")!r}')
    if not layout.boxes:
      return label if confidence > 0 else ''
    x_min, x_max, y_min, y_max = (parse_number(value(n)) for n in _BOX_COLUMNS)
    if any(v is None or v != v or abs(v) == float('inf') for v in (x_min, x_max, y_min, y_max)):
      given = ', '.join(f'{n} {value(n)!r}' for n in _BOX_COLUMNS)
      return _Problem('XMin, XMax, YMin and YMax must be numbers (normalised to [0, 1]), '
                      f'got {given}')
    if x_min > x_max or y_min > y_max:
      return _Problem(f'the box is reversed: XMin {value("XMin")}, XMax {value("XMax")}, '
                      f'YMin {value("YMin")}, YMax {value("YMax")} (Open Images\' column '
                      'order is XMin, XMax, YMin, YMax)')
    flags = {}
    for column, _ in _FLAGS:
      text = value(column) if column in layout.columns else ''
      flag = parse_number(text) if text else -1.0
      if flag not in (-1, 0, 1):
        return _Problem(f'{column} must be 1, 0 or -1 (unknown), got {text!r}')
      flags[column] = int(flag)
    return ObjectBox(label, x_min, y_min, x_max, y_max, normalized=True,
                     is_crowd=flags['IsGroupOf'] == 1, truncated=flags['IsTruncated'] == 1,
                     attributes=tuple((name, flags[column]) for column, name in _FLAGS
                                      if name and column in layout.columns))


class _Problem(str):
  """What is wrong with a line."""


class _ClassNames:
  """The display name of each MID, from a class descriptions file."""

  def __init__(self, source: str, names: Dict[str, str]):
    self.source = source
    self._names = names

  def name(self, mid: str) -> Optional[str]:
    return self._names.get(mid)


def _class_names(path: str, confine: Optional[Confinement] = None
                 ) -> Optional[_ClassNames]:
  """The class names of the first of CLASS_DESCRIPTION_FILES beside `path`; None (and a
  warning) where there is none. Under `confine`, a file leading out of the run's roots
  is not looked at."""
  folder = posixpath.dirname(path)
  tried = []
  for name in CLASS_DESCRIPTION_FILES:
    if name.startswith('../') and posixpath.basename(folder) != 'labels':
      continue  # FiftyOne's <split>/metadata/, beside <split>/labels/
    candidate = _joined(folder, name)
    if confine is not None and confine.resolve(candidate) is None:
      continue
    tried.append(candidate)
    if not files.exists(candidate):
      continue
    try:
      with files.open_file(candidate) as f:
        text = f.read().decode('utf-8-sig', errors='surrogateescape')
    except Exception as e:
      raise ManifestError(f'{path}: cannot read the class descriptions {candidate}: {e}'
                          ) from e
    return _ClassNames(candidate, _descriptions(candidate, text))
  _LOG.warning('%s: no class descriptions file beside it (looked for %s): its labels are '
               'the MIDs (/m/...) as written. Put oidv7-class-descriptions.csv beside it '
               'for class names.', path, ', '.join(tried))
  return None


def _joined(folder: str, name: str) -> str:
  if not folder:
    return posixpath.normpath(name)
  joined = posixpath.join(folder, name)
  if '://' in folder:
    scheme, rest = joined.split('://', 1)
    return f'{scheme}://{posixpath.normpath(rest)}'
  return posixpath.normpath(joined)


def _descriptions(source: str, text: str) -> Dict[str, str]:
  """{MID: name} of a `LabelName,DisplayName` CSV (its header, if any, skipped); MIDs
  that share a display name are each named `Name (MID)`."""
  names: Dict[str, str] = {}
  for entry in csv_rows(source, text):
    if isinstance(entry, RowError):
      raise ManifestError(f'{source}: {entry.message} (line {entry.row})')
    line, fields = entry
    fields = [f.strip() for f in fields]
    if line == 1 and fields[:2] == ['LabelName', 'DisplayName']:
      continue
    if len(fields) < 2 or not fields[0] or not fields[1]:  # not quoted: not the user's file
      raise ManifestError(f'{source}: line {line} is not LabelName,DisplayName (a MID and '
                          'its name); give Open Images\' class descriptions file')
    names[fields[0]] = fields[1]
  shared: Dict[str, List[str]] = {}
  for mid, name in names.items():
    shared.setdefault(name, []).append(mid)
  for name, mids in shared.items():
    if len(mids) > 1:
      for mid in mids:
        names[mid] = f'{name} ({mid})'
  return names


def _image_folders(path: str, split_word: Optional[str],
                   image_root: Optional[str]) -> List[str]:
  """Where the images may be, relative to `image_root` (by default the CSV's folder),
  in the order they are tried: the folder itself, its `<split>/` folder, and without
  `image_root`, beside an `annotations/` folder `../images/<split>/` (Datumaro), beside
  a `labels/` folder `../data/` (FiftyOne)."""
  folders = ['']
  if split_word:
    folders.append(split_word)
  if not image_root:
    parent = posixpath.basename(posixpath.dirname(path))
    if parent == 'annotations' and split_word:
      folders.append(f'../images/{split_word}')
    if parent == 'labels':
      folders.append('../data')
  return folders


def _image_folder(path: str, image_root: Optional[str], split_word: Optional[str],
                  first_ids: List[str], confine: Optional[Confinement] = None) -> str:
  """The folder (relative, '' for the base itself) the file's images are read from;
  under `confine`, places outside the run's roots are not looked at."""
  folders = _image_folders(path, split_word, image_root)
  if not first_ids or len(folders) == 1:
    return folders[0]
  tried = []
  for folder in folders:
    for image_id in first_ids:
      uri = posixpath.join(folder, image_id + IMAGE_EXTENSION) if folder else (
          image_id + IMAGE_EXTENSION)
      resolved = resolve_uri(uri, path, image_root)
      if confine is not None and confine.resolve(resolved) is None:
        continue
      tried.append(resolved)
      try:
        if files.exists(resolved):
          return folder
      except Exception:  # pylint: disable=broad-except
        continue  # an unreadable place is not the one
  _LOG.warning('%s: none of its first images is where Open Images keeps them (looked for '
               '%s); reading <ImageID>.jpg from %s. Give image_root, the folder that '
               'holds them.', path, ', '.join(tried[:6]),
               image_root or posixpath.dirname(path) or '.')
  return folders[0]


def _sniff(head: str) -> bool:
  first = head.split('\n', 1)[0]
  return first.startswith('ImageID,') and 'LabelName' in first


FORMAT = ManifestFormat(
    'open_images', ('.csv',), sniff=_sniff, parse=parse, one_row_an_image=True, streamed=True,
    reads_files=True,
    title='Open Images CSVs',
    sample=FormatSample(
        'm.csv',
        'ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,'
        'IsGroupOf,IsDepiction,IsInside\na,xclick,/m/01,1,0.1,0.5,0.1,0.5,0,0,0,0,0\n'),
    sniff_rank=110)
