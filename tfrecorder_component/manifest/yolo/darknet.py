"""Darknet's `obj.data` layout, which predates data.yaml (`parse_darknet`)."""
from __future__ import annotations

from typing import Dict, Iterator, List, Mapping, Optional, Tuple, Union

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.rows import ParsedItem, short
from tfrecorder_component.manifest.yolo.data_yaml import image_row
from tfrecorder_component.manifest.yolo.lines import LineRules, whole_number
from tfrecorder_component.manifest.yolo.paths import (IMG_FORMATS, absolute_path, folder_path,
                                                      img2label_path, join_path, list_entry,
                                                      parent_path, path_kind, read_text,
                                                      relative_path)


def parse_darknet(path: str, text: str, *, image_root: Optional[str] = None,
                  feature_types: Optional[Mapping[str, str]] = None) -> Iterator[ParsedItem]:
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

  Args:
    path: The obj.data's path or URI.
    text: The obj.data's text.
    image_root: The folder that stands in for obj.data's own, both for resolving
      relative paths and for showing rows' `image_uri`. None: obj.data's folder.
    feature_types: Not used: Darknet has no extra columns.
  """
  del feature_types  # Darknet has no extra columns
  data = darknet_keys(path, text)
  base = folder_path(image_root) if image_root else parent_path(absolute_path(path))
  names = _darknet_names(path, data, base)
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
    found = darknet_path(base, data[key])
    if found is None:
      raise ManifestError(f'{path}: `{key} = {data[key]}` names no file: tried '
                          f'{" or ".join(_darknet_candidates(base, data[key]))}')
    images = []
    if found.lower().endswith(IMG_FORMATS):
      images.append((found, found))
    else:
      images.extend(darknet_list(found, base))
    for image, item in images:
      row += 1
      if isinstance(item, RowError):
        yield RowError(item.reason, item.message, source=path, row=row,
                       uri=relative_path(image, base))
        continue
      yield image_row(path, row, image, darknet_labels(image), relative_path(image, base), split,
                       lines)


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


def _darknet_names(path: str, data: Dict[str, str], base: str) -> Dict[int, str]:
  """{class id: name}: the `names` file's lines (else obj.names beside obj.data), which
  must agree with `classes`."""
  given = data.get('names')
  names_path = (darknet_path(base, given) if given else
                darknet_path(base, 'obj.names'))
  if names_path is None:
    tried = _darknet_candidates(base, given) if given else [join_path(base, 'obj.names')]
    raise ManifestError(f'{path}: no class names file: tried {" or ".join(tried)}; give '
                        '`names = <file of one class name a line>`')
  text = read_text(names_path)
  if text is None:
    raise ManifestError(f'{names_path}: the class names file is not UTF-8 text')
  listed = [line.strip() for line in text.split('\n')]
  while listed and not listed[-1]:
    listed.pop()
  if '' in listed:
    raise ManifestError(f'{names_path} line {listed.index("") + 1}: an empty class name; '
                        'give each class a name, one a line')
  count = data.get('classes')
  if count is not None and (whole_number(count) is None or whole_number(count) != len(listed)):
    raise ManifestError(f'{path}: `classes = {count}` but {names_path} names {len(listed)} '
                        'classes; make them agree')
  return dict(enumerate(listed))


def _darknet_candidates(base: str, entry: str) -> List[str]:
  entry = entry.strip()
  if entry.startswith('/') or '://' in entry:
    return [join_path(base, entry)]
  tried = [join_path(base, entry), join_path(parent_path(base), entry)]
  if entry.startswith('data/'):
    tried.append(join_path(base, entry[len('data/'):]))
  return list(dict.fromkeys(tried))


def darknet_path(base: str, entry: str) -> Optional[str]:
  """The first file an obj.data entry names, tried as parse_darknet says (`base`, its
  parent, `data/x` as `x` in `base`), or None when none is a file.

  Args:
    base: obj.data's folder, or `image_root` when given.
    entry: The key's value as written: a path (relative or absolute) or a URI.
  """
  return next((p for p in _darknet_candidates(base, entry) if path_kind(p, {}) == 'file'), None)


def darknet_list(list_path: str, base: str) -> List[Tuple[str, Union[str, RowError]]]:
  """The images of a Darknet list, each line resolved as the first relative line
  resolves (see parse_darknet).

  Returns (image path, image path or RowError) pairs, as `paths.list_entry` makes them.

  Args:
    list_path: The image list's full path (a `train`, `valid` or `test` file).
    base: obj.data's folder, or `image_root` when given.
  """
  text = read_text(list_path)
  if text is None:
    raise ManifestError(f'{list_path}: the image list is not UTF-8 text')
  entries = [(n, line.strip()) for n, line in enumerate(text.split('\n'), start=1)
             if line.strip()]
  folder = parent_path(list_path)
  style = 0
  first = next((e for _, e in entries if not (e.startswith('/') or '://' in e)), None)
  if first is not None:
    styles = _darknet_styles(base, folder, first)
    style = next((i for i, p in enumerate(styles) if p and path_kind(p, {}) == 'file'), 0)
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
