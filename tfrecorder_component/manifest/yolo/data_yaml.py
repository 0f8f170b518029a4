"""Ultralytics' data.yaml: its classes, its splits' images, and each image's row with the
objects of its label file (`parse`, `parse_obb`)."""
from __future__ import annotations

import logging
import os
import re
from typing import (AbstractSet, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple,
                    Union)

from tfrecorder_component.io import files
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.confine import Confinement, outside_error
from tfrecorder_component.manifest.rows import ManifestRow, ParsedItem, short
from tfrecorder_component.manifest.yolo.lines import LineRules, whole_number
from tfrecorder_component.manifest.yolo.paths import (IMG_FORMATS, TEXT_MAX_BYTES, Listings,
                                                      absolute_path, folder_path,
                                                      img2label_path, join_path,
                                                      listed_images, parent_path, path_kind,
                                                      relative_path, walk_files)

_LOG = logging.getLogger(__name__)


# data.yaml keys of each split, the first present one read (Ultralytics renames
# `validation` to `val`; Roboflow's folder is `valid`).
_SPLIT_KEYS = {'train': ('train',), 'eval': ('val', 'validation', 'valid'),
               'test': ('test',)}


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None,
          annotations: AbstractSet[str] = frozenset(),
          confine: Optional[Confinement] = None) -> Iterator[ParsedItem]:
  """A detection, segmentation or pose dataset's data.yaml: its images, split by split.

  Args:
    path: The data.yaml's path or URI.
    text: The data.yaml's text.
    image_root: The folder that stands in for the yaml's own: `path:` in the yaml is
      relative to it, and rows' `image_uri` are shown relative to it. None: the yaml's
      folder.
    feature_types: Not used: YOLO has no extra columns.
    annotations: What to read beyond boxes: 'masks' (polygon lines become instance
      masks), 'keypoints' (a pose dataset's points).
    confine: The run's roots: a split entry (or the `path:` it is under) leading out of
      them fails as one `outside_root` row, unlisted and unopened, as does an image
      outside them or whose label file leads out; None: none.
  """
  del feature_types  # YOLO has no extra columns
  yield from _parse(path, text, image_root, annotations, 'yolo', confine)


def parse_obb(path: str, text: str, *, image_root: Optional[str] = None,
              feature_types: Optional[Mapping[str, str]] = None,
              annotations: AbstractSet[str] = frozenset(),
              confine: Optional[Confinement] = None) -> Iterator[ParsedItem]:
  """An oriented-box dataset's data.yaml: lines `class x1 y1 x2 y2 x3 y3 x4 y4`.

  Args:
    path: The data.yaml's path or URI.
    text: The data.yaml's text.
    image_root: The folder that stands in for the yaml's own: `path:` in the yaml is
      relative to it, and rows' `image_uri` are shown relative to it. None: the yaml's
      folder.
    feature_types: Not used: YOLO has no extra columns.
    annotations: What to read beyond boxes; the format declares nothing, so nothing is
      asked (oriented-box lines have neither polygons nor keypoints).
    confine: The run's roots, as `parse` takes them; None: none.
  """
  del feature_types
  yield from _parse(path, text, image_root, annotations, 'obb', confine)


def _parse(path: str, text: str, image_root: Optional[str], annotations: AbstractSet[str],
           kind: str, confine: Optional[Confinement] = None) -> Iterator[ParsedItem]:
  data = load_yaml(path, text)
  names = _names(path, data)
  base = folder_path(image_root) if image_root else parent_path(absolute_path(path))
  root = dataset_root(path, data, base, confine)
  lines = LineRules(path, data, names, annotations, kind)
  listed: Listings = {}
  row = 0
  for split, key in yaml_splits(data):
    images, folders = split_images(path, key, data[key], root, listed, confine)
    _refuse_dota_labels(path, key, images, confine)
    labels_seen = set()
    for image in images:
      row += 1
      if isinstance(image, RowError):
        yield RowError(image.reason, image.message, source=path, row=row,
                       uri=relative_path(image.uri, base) if image.uri else None)
        continue
      label_path = img2label_path(image)
      labels_seen.add(label_path)
      yield image_row(path, row, image, (label_path,), relative_path(image, base), split, lines,
                      confine)
    _warn_unread_labels(path, key, folders, labels_seen, listed, confine)


def _refuse_dota_labels(path: str, key: str, images: Sequence[Union[str, RowError]],
                        confine: Optional[Confinement] = None) -> None:
  """Raises ManifestError when a split's images have no labels/ folder but a labelTxt/
  beside their images/ folder: DOTA's layout (as Roboflow's YOLO OBB export writes it),
  whose lines are pixel corners and class names, which no image would read here (each
  would be an image without objects). Under `confine`, only folders inside the roots
  are looked at."""
  image = next((i for i in images if isinstance(i, str) and not (
      confine is not None and confine.outside(i))), None)
  if image is None or '/images/' not in image or not files.is_local(image):
    return
  labels = parent_path(img2label_path(image))
  if confine is not None and confine.resolve(labels) is None:
    return
  if os.path.isdir(labels):
    return
  parts = labels.split('/')  # the last labels/ of the path made labelTxt/
  at = len(parts) - 1 - parts[::-1].index('labels')
  dota = '/'.join(parts[:at] + ['labelTxt'] + parts[at + 1:])
  if (confine is None or confine.resolve(dota) is not None) and os.path.isdir(dota):
    raise ManifestError(f'{path}: the {key} images\' labels are in {dota} (DOTA\'s layout: '
                        'pixel corners and class names), not in the labels/ folder '
                        'Ultralytics reads; DOTA labels are not read: convert them to YOLO '
                        'OBB lines in labels/')


def load_yaml(path: str, text: str) -> dict:
  """The data.yaml's mapping, read with YAML's safe loader; ManifestError for text that
  is not YAML or not a mapping.

  Args:
    path: The yaml's path, named in errors.
    text: The yaml's text; a leading byte-order mark is dropped.
  """
  import yaml  # pylint: disable=g-import-not-at-top
  try:
    data = yaml.load(text.lstrip('\ufeff'), Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))
  except (yaml.YAMLError, ValueError, RecursionError) as e:
    raise ManifestError(f'{path}: not a valid YAML file: {e}') from e
  if not isinstance(data, dict):
    raise ManifestError(f'{path}: a YOLO data.yaml is a mapping with `names` (or `nc`) and '
                        f'`train`, `val`, `test` image folders; got {type(data).__name__}')
  return data


def _names(path: str, data: dict) -> Dict[int, str]:
  """{class id: name} from `names` (a list or a dict) or `nc` (class_0, class_1, ...)."""
  names, count = data.get('names'), data.get('nc')
  if count is not None and (isinstance(count, bool) or not isinstance(count, int) or
                            count < 0):
    raise ManifestError(f'{path}: `nc` must be the number of classes, got {count!r}')
  if names is None:
    if count is None:
      raise ManifestError(f'{path}: no `names` (the class names, a list or a '
                          '{id: name} mapping) and no `nc`; add `names`')
    return {i: f'class_{i}' for i in range(count)}
  if isinstance(names, list):
    names = dict(enumerate(names))
  if not isinstance(names, dict):
    raise ManifestError(f'{path}: `names` must be a list of class names or a '
                        f'{{class id: name}} mapping, got {short(names)}')
  out = {}
  for key, name in names.items():
    index = whole_number(key) if isinstance(key, (int, str)) and not isinstance(key, bool) else None
    if index is None or index < 0:
      raise ManifestError(f'{path}: `names` key {key!r} is not a class id (0, 1, ...)')
    if isinstance(name, (dict, list)) or name is None or not str(name).strip():
      raise ManifestError(f'{path}: `names` gives class {index} the name {name!r}; give it '
                          'a non-empty name')
    out[index] = str(name).strip()
  if count is not None and count != len(out):
    raise ManifestError(f'{path}: `names` has {len(out)} classes but `nc` is {count}; '
                        'make them agree')
  return out


def dataset_root(path: str, data: dict, base: str,
                 confine: Optional[Confinement] = None) -> str:
  """The dataset root: `path` (relative to `base`), or `base`.

  A local `path` that is not a folder falls back to `base`, with a warning.

  Args:
    path: The data.yaml's path, named in errors and the warning.
    data: The data.yaml's mapping; its `path` key is read.
    base: The yaml's folder, or `image_root` when given: what a relative `path` is
      relative to.
    confine: The run's roots: a `path` leading out of them is returned as it is, never
      looked at (its splits then fail as `outside_root`); None: none.
  """
  given = data.get('path')
  if given is None or (isinstance(given, str) and not given.strip()):
    return base
  if not isinstance(given, str):
    raise ManifestError(f'{path}: `path` must be the dataset folder, got {given!r}')
  root = join_path(base, given.strip())
  if confine is not None and confine.resolve(root) is None:
    return root  # not looked at: each split under it fails as outside_root
  if files.is_local(root) and not os.path.isdir(root):
    _LOG.warning('%s: path: %s names %s, which is not a folder; reading the dataset from '
                 'the yaml\'s folder %s instead', path, given, root, base)
    return base
  return root


def yaml_splits(data: dict) -> List[Tuple[str, str]]:
  """(split, key) of each split the yaml gives, in the yaml's order.

  Args:
    data: The data.yaml's mapping; of each split's keys (`val`, else `validation`, else
      `valid` for 'eval') the first present is read, and skipped when empty.
  """
  found = {}
  for split, keys in _SPLIT_KEYS.items():
    key = next((k for k in keys if k in data), None)
    value = data.get(key) if key else None
    if key and value not in (None, '', []):
      found[key] = split
  return [(split, key) for key, split in ((k, found[k]) for k in data if k in found)]


def split_images(path: str, key: str, value: object, root: str, listed: 'Listings',
                 confine: Optional[Confinement] = None
                 ) -> Tuple[List[Union[str, RowError]], List[str]]:
  """A split's images (full paths, sorted; a RowError for a listed name that is no
  image, and for an entry leading out of `confine`'s roots) and the folders they were
  found in.

  Args:
    path: The data.yaml's path, named in errors.
    key: The split's key in the yaml (`train`, `val`, ...), named in errors.
    value: The key's value: a folder, a .txt image list, an image, or a list of those.
    root: The dataset root that relative entries are relative to.
    listed: The folder listings made while this file is parsed (remote folders).
    confine: The run's roots: an entry whose every place leads out of them is one
      `outside_root` RowError (its `uri` the entry as the yaml writes it), neither
      listed nor opened; None: none.
  """
  entries = value if isinstance(value, list) else [value]
  images: List[Tuple[str, Union[str, RowError]]] = []
  folders = []
  for entry in entries:
    if not isinstance(entry, str) or not entry.strip():
      raise ManifestError(f'{path}: `{key}` must be a folder, a .txt list of images, or a '
                          f'list of them; got {short(value)}')
    target, kind = _locate(path, key, entry.strip(), root, listed, confine)
    if kind == 'outside':
      images.append((target, outside_error(f'`{key}` entry', uri=entry.strip())))
    elif kind == 'folder':
      folders.append(target)
      images.extend((p, p) for p in walk_files(target, IMG_FORMATS, listed, confine))
    elif target.lower().endswith(IMG_FORMATS):
      images.append((target, target))
    else:
      images.extend(listed_images(target))
  images.sort(key=lambda pair: pair[0])
  return [image for _, image in images], folders


def _locate(path: str, key: str, entry: str, root: str, listed: 'Listings',
            confine: Optional[Confinement] = None) -> Tuple[str, str]:
  """(full path, 'folder' or 'file') of a split entry; a missing `../x` is retried as
  `x` under the root, as Ultralytics does. Under `confine`, a place outside the roots
  is not tried; (the first place, 'outside') where none is inside."""
  tried = [join_path(root, entry)]
  if entry.startswith('../'):
    tried.append(join_path(root, entry[3:]))
  if confine is not None:
    inside = [t for t in tried if confine.resolve(t) is not None]
    if not inside:
      return tried[0], 'outside'
    tried = inside
  for target in tried:
    kind = path_kind(target, listed)
    if kind:
      return target, kind
  raise ManifestError(f'{path}: `{key}: {entry}` names {" or ".join(tried)}, which does '
                      'not exist; fix the path (relative paths are relative to the dataset '
                      f'root {root})')


def _warn_unread_labels(path: str, key: str, folders: Sequence[str],
                        labels_seen: AbstractSet[str], listed: Listings,
                        confine: Optional[Confinement] = None) -> None:
  """Logs the label files under the split's label folders that no image of it has
  (under `confine`, only label folders inside the roots are walked)."""
  unread = []
  for folder in dict.fromkeys(folders):
    label_folder = '/labels/'.join((folder.rstrip('/') + '/').rsplit('/images/', 1))
    if confine is not None and confine.resolve(label_folder.rstrip('/')) is None:
      continue
    for label in walk_files(label_folder, ('.txt',), listed, confine):
      if label not in labels_seen:
        unread.append(label)
  if unread:
    _LOG.warning('%s: %d label file(s) of `%s` have no image and are not read (Ultralytics '
                 'ignores them too), e.g. %s', path, len(unread), key, sorted(unread)[0])


def image_row(path: str, row: int, image: str, label_paths: Sequence[str], uri: str,
              split: str, lines: 'LineRules', confine: Optional[Confinement] = None
              ) -> ParsedItem:
  """The image's row, its objects read from the first of `label_paths` that exists
  (none: no objects), as a regular file of at most TEXT_MAX_BYTES.

  Returns a RowError (`bad_row`, or why the label file cannot be read) in its place;
  under `confine`, `outside_root` for an image outside the roots (its label file is not
  looked for) or a label file leading out of them (not read).

  Args:
    path: The data.yaml's (or obj.data's) path: the row's source.
    row: The row's number in the file, from 1.
    image: The image's full path or URI: the row's `resolved_uri`.
    label_paths: Where its label file may be, in the order tried.
    uri: The image as shown: the row's `image_uri` (relative to the yaml's folder or
      `image_root`).
    split: The row's split: 'train', 'eval' or 'test'.
    lines: How the dataset's label lines read.
    confine: The run's roots; None: none.
  """
  where = dict(source=path, row=row, uri=uri)
  if confine is not None and confine.outside(image):
    return outside_error('image', **where)
  raw, label_path = b'', label_paths[0]
  for label_path in label_paths:
    read = label_path
    if confine is not None:
      read = confine.resolve(label_path)
      if read is None:
        return outside_error('label file', **where)
    try:
      raw = files.read_bytes(read, TEXT_MAX_BYTES)
      break
    except RowError as e:
      if e.reason != 'missing':
        return RowError('unreadable' if e.reason == 'not_a_file' else e.reason,
                        f'cannot read the label file {label_path}: {e.message}', **where)
  try:
    text = raw.decode('utf-8-sig')
  except UnicodeDecodeError as e:
    return RowError('bad_row', f'{label_path}: the label file is not UTF-8 text ({e})',
                    **where)
  objects = lines.objects(label_path, text)
  if isinstance(objects, str):
    return RowError('bad_row', objects, **where)
  return ManifestRow(source=path, row=row, image_uri=uri, resolved_uri=image,
                     labels=tuple(dict.fromkeys(o.label for o in objects)), objects=objects,
                     split=split)


def sniff(head: str) -> bool:
  """Whether a file's first characters look like a data.yaml: a line beginning `names:`.

  Args:
    head: The file's first characters, leading whitespace and byte-order mark dropped.
  """
  return re.search(r'^names\s*:', head, re.M) is not None
