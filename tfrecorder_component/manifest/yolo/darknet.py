"""Darknet's `obj.data` layout, which predates data.yaml (`parse_darknet`)."""
from __future__ import annotations

import re
from typing import Dict, Iterator, List, Mapping, Optional, Tuple, Union

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.confine import Confinement, message, outside_error
from tfrecorder_component.manifest.rows import ParsedItem, short
from tfrecorder_component.manifest.yolo.data_yaml import image_row
from tfrecorder_component.manifest.yolo.lines import LineRules, whole_number
from tfrecorder_component.manifest.yolo.paths import (IMG_FORMATS, absolute_path, folder_path,
                                                      img2label_path, join_path, list_entry,
                                                      parent_path, path_kind, read_text,
                                                      relative_path)


def parse_darknet(path: str, text: str, *, image_root: Optional[str] = None,
                  feature_types: Optional[Mapping[str, str]] = None,
                  confine: Optional[Confinement] = None) -> Iterator[ParsedItem]:
  """A Darknet dataset's `obj.data`: `classes`, `train`, `valid` (or `val`; and `test`)
  image lists and the `names` file (a key darknet does not know is a ManifestError), as
  AlexeyAB's darknet and CVAT's "YOLO 1.1" export write them.

  Darknet resolves relative paths against its working folder, usually the parent of the
  `data/` folder holding obj.data: a relative path is tried against obj.data's folder
  (`image_root` when given), then its parent, then, for `data/x`, as `x` in obj.data's
  folder (an export unzipped elsewhere); a list's images against those and the list's own
  folder, the first that holds the list's first image deciding for all its lines. An
  image's labels are the .txt beside it, else by the images -> labels rule
  (`/images/` or `/JPEGImages/` made `/labels/`). Lines are `class cx cy w h`,
  normalised; the rest is as in `data.yaml` datasets.

  The names file must be a .names or .txt file of one class name a line
  (`_darknet_names`: at most MAX_CLASSES lines of printable text); a list line that names no image fails by its number, never
  quoted. With `confine`, a place outside the run's roots is never tried: a split list
  found only there fails as one `outside_root` row, a names file so is a ManifestError.

  Args:
    path: The obj.data's path or URI.
    text: The obj.data's text.
    image_root: The folder that stands in for obj.data's own, both for resolving
      relative paths and for showing rows' `image_uri`. None: obj.data's folder.
    feature_types: Not used: Darknet has no extra columns.
    confine: The run's roots; None: none.
  """
  del feature_types  # Darknet has no extra columns
  data = darknet_keys(path, text)
  base = folder_path(image_root) if image_root else parent_path(absolute_path(path))
  names = _darknet_names(path, data, base, confine)
  lines = LineRules(path, {}, names, frozenset(), 'darknet')
  unknown = sorted(set(data) - _DARKNET_KEYS)
  if unknown:  # a split under a name not read would be left out without a word
    raise ManifestError(f'{path}: unknown key{"s" if len(unknown) > 1 else ""} '
                        f'{", ".join(unknown)}; a Darknet .data file has '
                        f'{", ".join(sorted(_DARKNET_KEYS))}')
  row = 0
  for split, keys in DARKNET_SPLITS:
    key = next((k for k in keys if data.get(k)), None)
    if key is None:
      continue
    tried = _darknet_candidates(base, data[key], confine)
    if not tried:
      row += 1
      yield outside_error(f'`{key}` list', source=path, row=row, uri=data[key])
      continue
    found = darknet_path(base, data[key], confine)
    if found is None:
      raise ManifestError(f'{path}: `{key} = {data[key]}` names no file: tried '
                          f'{" or ".join(tried)}')
    images = []
    if found.lower().endswith(IMG_FORMATS):
      images.append((found, found))
    else:
      images.extend(darknet_list(found, base, confine))
    for image, item in images:
      row += 1
      if isinstance(item, RowError):  # a line naming no image: named by its number only
        yield RowError(item.reason, item.message, source=path, row=row)
        continue
      yield image_row(path, row, image, darknet_labels(image), relative_path(image, base), split,
                      lines, confine)


# obj.data's keys of each split, the first present one read: darknet's `valid`, also
# `val` and `validation` (Datumaro's Darknet export writes `val`).
DARKNET_SPLITS = (('train', ('train',)), ('eval', ('valid', 'val', 'validation')),
                   ('test', ('test',)))


_DARKNET_KEYS = {'classes', 'names', 'backup', 'eval', 'results', 'map', 'top', 'difficult',
                 *(k for _, keys in DARKNET_SPLITS for k in keys)}


def darknet_keys(path: str, text: str) -> Dict[str, str]:
  """obj.data's `key = value` lines (# comments, blank lines skipped).

  Returns {key in lower case: value}, a later line winning; a line without `=` is a
  ManifestError.

  Args:
    path: The obj.data's path, named in errors.
    text: The obj.data's text; a leading byte-order mark is dropped.
  """
  keys = {}
  for number, line in enumerate(text.lstrip('\ufeff').split('\n'), start=1):
    line = line.split('#', 1)[0].strip()
    if not line:
      continue
    if '=' not in line:
      raise ManifestError(f'{path} line {number}: a Darknet .data line is `key = value`, got '
                          f'{short(line)}')
    key, value = (part.strip() for part in line.split('=', 1))
    keys[key.lower()] = value
  return keys


# The names a names file's name ends with (darknet's obj.names, coco.names; CVAT's and
# Datumaro's exports): another file (a system file named by mistake or on purpose, whose
# lines would become class names) is not read.
NAMES_EXTENSIONS = ('.names', '.txt')
# The most classes a names file may name: a file of more lines is no class list (the
# largest label sets, ImageNet-21k's and Open Images', have about 21,000).
MAX_CLASSES = 100_000
# The longest class name a names file may give, in characters.
MAX_CLASS_NAME = 1_000
# Characters no class name holds (control characters; tabs are allowed).
_NOT_A_NAME = re.compile('[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]')


def _darknet_names(path: str, data: Dict[str, str], base: str,
                   confine: Optional[Confinement] = None) -> Dict[int, str]:
  """{class id: name}: the `names` file's lines (else obj.names beside obj.data), which
  must agree with `classes`. A names file is a .names or .txt file; one that is no list
  of class names (more than
  MAX_CLASSES lines, a line longer than MAX_CLASS_NAME, a control character: a
  system file named by mistake or on purpose) is a ManifestError naming the line by its
  number, never quoting it."""
  given = data.get('names')
  entry = given if given else 'obj.names'
  if not entry.strip().lower().endswith(NAMES_EXTENSIONS):
    raise ManifestError(f'{path}: `names = {given}` is no class names file: one is a '
                        f'{" or ".join(NAMES_EXTENSIONS)} file of one class name a line; '
                        'it was not read')
  tried = _darknet_candidates(base, entry, confine)
  if not tried:
    raise ManifestError(f'{path}: `names = {given}`: {message("class names file")}')
  names_path = darknet_path(base, entry, confine)
  if names_path is None:
    raise ManifestError(f'{path}: no class names file: tried {" or ".join(tried)}; give '
                        '`names = <file of one class name a line>`')
  text = read_text(names_path, 'class names file')
  if text is None:
    raise ManifestError(f'{names_path}: the class names file is not UTF-8 text')
  listed = [line.strip() for line in text.replace('\r\n', '\n').split('\n')]
  while listed and not listed[-1]:
    listed.pop()
  _check_names(names_path, listed)
  if '' in listed:
    raise ManifestError(f'{names_path} line {listed.index("") + 1}: an empty class name; '
                        'give each class a name, one a line')
  count = data.get('classes')
  if count is not None and (whole_number(count) is None or whole_number(count) != len(listed)):
    raise ManifestError(f'{path}: `classes = {count}` but {names_path} names {len(listed)} '
                        'classes; make them agree')
  return dict(enumerate(listed))


def _check_names(names_path: str, listed: List[str]) -> None:
  """Raises ManifestError where a names file's lines are no class names (see
  `_darknet_names`), never quoting them."""
  if len(listed) > MAX_CLASSES:
    raise ManifestError(f'{names_path}: {len(listed):,} lines, more than any class list '
                        f'({MAX_CLASSES:,} at most): give the file of the dataset\'s class '
                        'names, one a line')
  for number, name in enumerate(listed, start=1):
    if len(name) > MAX_CLASS_NAME or _NOT_A_NAME.search(name):
      why = (f'is longer than {MAX_CLASS_NAME:,} characters' if len(name) > MAX_CLASS_NAME
             else 'holds a control character')
      raise ManifestError(f'{names_path} line {number} {why}: no class name does; give the '
                          'file of the dataset\'s class names, one a line')


def _darknet_candidates(base: str, entry: str,
                        confine: Optional[Confinement] = None) -> List[str]:
  """The places an obj.data entry may name, in the order tried; under `confine`, only
  those inside the run's roots ([]: none is)."""
  entry = entry.strip()
  if entry.startswith('/') or '://' in entry:
    tried = [join_path(base, entry)]
  else:
    tried = [join_path(base, entry), join_path(parent_path(base), entry)]
    if entry.startswith('data/'):
      tried.append(join_path(base, entry[len('data/'):]))
  tried = list(dict.fromkeys(tried))
  if confine is not None:
    tried = [p for p in tried if confine.resolve(p) is not None]
  return tried


def darknet_path(base: str, entry: str, confine: Optional[Confinement] = None
                 ) -> Optional[str]:
  """The first file an obj.data entry names, tried as parse_darknet says (`base`, its
  parent, `data/x` as `x` in `base`), or None when none is a file.

  Args:
    base: obj.data's folder, or `image_root` when given.
    entry: The key's value as written: a path (relative or absolute) or a URI.
    confine: The run's roots: a place outside them is not tried; None: none.
  """
  return next((p for p in _darknet_candidates(base, entry, confine)
               if path_kind(p, {}) == 'file'), None)


def darknet_list(list_path: str, base: str, confine: Optional[Confinement] = None
                 ) -> List[Tuple[str, Union[str, RowError]]]:
  """The images of a Darknet list, each line resolved as the first relative line
  resolves (see parse_darknet).

  Returns (image path, image path or RowError) pairs, as `paths.list_entry` makes them.

  Args:
    list_path: The image list's full path (a `train`, `valid` or `test` file).
    base: obj.data's folder, or `image_root` when given.
    confine: The run's roots: a way of resolving the lines that leads out of them is
      not tried; None: none.
  """
  text = read_text(list_path, 'image list')
  if text is None:
    raise ManifestError(f'{list_path}: the image list is not UTF-8 text')
  entries = [(n, line.strip()) for n, line in enumerate(text.split('\n'), start=1)
             if line.strip()]
  folder = parent_path(list_path)
  style = 0
  first = next((e for _, e in entries if not (e.startswith('/') or '://' in e)), None)
  if first is not None:
    styles = _darknet_styles(base, folder, first)
    style = next((i for i, p in enumerate(styles) if p and (
        confine is None or confine.resolve(p) is not None) and path_kind(p, {}) == 'file'), 0)
  out: List[Tuple[str, Union[str, RowError]]] = []
  for number, entry in entries:
    image = _darknet_styles(base, folder, entry)[style] or join_path(base, entry)
    out.append(list_entry(list_path, number, entry, image))
  return out


def _darknet_styles(base: str, list_folder: str, entry: str) -> List[Optional[str]]:
  """A list line resolved each way Darknet lists are written (None: not that way)."""
  if entry.startswith('/') or '://' in entry:
    return [join_path(base, entry)] * 4
  return [join_path(base, entry), join_path(parent_path(base), entry),
          join_path(base, entry[len('data/'):]) if entry.startswith('data/') else None,
          join_path(list_folder, entry)]


def darknet_labels(image: str) -> Tuple[str, ...]:
  """Where Darknet looks for an image's labels: beside it, else `/images/` or
  `/JPEGImages/` made `/labels/`.

  Args:
    image: The image's full path or URI.
  """
  beside = image.rsplit('.', 1)[0] + '.txt'
  jpeg_images = '/labels/'.join(beside.rsplit('/JPEGImages/', 1))
  return tuple(dict.fromkeys((beside, img2label_path(image), jpeg_images)))
