"""Ultralytics YOLO datasets: a `data.yaml` naming split folders (or image lists) and
the class names; each image's objects in a `.txt` beside it under `labels/`.

The rules are Ultralytics' own (`check_det_dataset`, `img2label_paths`,
`verify_image_label` in ultralytics/data/utils.py):

- `path` is the dataset root: relative to the yaml's folder (`image_root` when given),
  the yaml's folder when absent; a local `path` that does not exist (a yaml written on
  another machine) falls back to the yaml's folder, with a warning.
- `train`, `val` (else `validation`, else `valid`) and `test`, in the order the yaml
  lists them, become the splits 'train', 'eval' and 'test'; one absent or empty is
  skipped. Each is a folder (its images found at any depth by extension, hidden files
  skipped), a `.txt` list of image paths (relative ones relative to the list's folder),
  an image, or a list of those; its images are sorted by path. A missing `../x` is
  retried as `x` under the root (Roboflow's `train: ../train/images`). A split naming
  nothing that exists is a ManifestError.
- `names` is a list or a {class id: name} dict; `nc` alone names the classes class_0,
  class_1, ...
- An image's label file is its path with the last `/images/` made `/labels/` and its
  extension `.txt` (beside the image when the path has no `/images/`). No label file,
  or an empty one: the image has no objects. A label file without an image is not read
  (a warning counts them).
- A line is `class cx cy w h` (a box) or `class x1 y1 x2 y2 x3 y3 ...` (a polygon: its
  bounding box, and with 'masks' its mask); with `kpt_shape: [K, 2 | 3]` in the yaml,
  `class cx cy w h` and K points `x y [v]` (with 'keypoints' the points, named by
  `kpt_names` or '0', '1', ...; 2-d points are labelled and visible, 2, as Ultralytics
  counts every point of non-negative coordinates). `yolo_obb` lines are
  `class x1 y1 x2 y2 x3 y3 x4 y4`: the axis-aligned box enclosing the corners, which are
  kept. Everything is normalised to [0, 1]; Ultralytics' tolerance of 0.01 either side
  holds (the record step clips boxes that reach past the image).
- A line that does not parse, a class id `names` lacks, or coordinates outside [-0.01,
  1.01] fail the image (`bad_row`, naming the label file and line). Images are not
  opened here: a listed image that does not exist fails when its record is built.

Local datasets are listed with os.walk; gs:// and s3:// ones with one object listing a
folder, their label files read through `files`. Darknet's `obj.data` layout, which
predates data.yaml, is `parse_darknet`'s.
"""
from __future__ import annotations

import logging
import os
import posixpath
import re
from typing import (AbstractSet, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple,
                    Union)

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.features import parse_number
from tfrecorder_component.manifest.format_spec import ManifestFormat
from tfrecorder_component.manifest.rows import (InstanceMask, ManifestRow, ObjectBox,
                                                ParsedItem)

_LOG = logging.getLogger(__name__)

# Ultralytics' IMG_FORMATS: the extensions a split folder's images are found by.
IMG_FORMATS = ('.bmp', '.dng', '.jpeg', '.jpg', '.mpo', '.png', '.tif', '.tiff', '.webp',
               '.pfm', '.heic')
# Ultralytics accepts coordinates up to 0.01 outside [0, 1] (verify_image_label).
TOLERANCE = 0.01
# data.yaml keys of each split, the first present one read (Ultralytics renames
# `validation` to `val`; Roboflow's folder is `valid`).
_SPLIT_KEYS = {'train': ('train',), 'eval': ('val', 'validation', 'valid'),
               'test': ('test',)}

_Objects = Tuple[ObjectBox, ...]


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None,
          annotations: AbstractSet[str] = frozenset()) -> Iterator[ParsedItem]:
  """A detection, segmentation or pose dataset's data.yaml: its images, split by split."""
  del feature_types  # YOLO has no extra columns
  yield from _parse(path, text, image_root, annotations, 'yolo')


def parse_obb(path: str, text: str, *, image_root: Optional[str] = None,
              feature_types: Optional[Mapping[str, str]] = None,
              annotations: AbstractSet[str] = frozenset()) -> Iterator[ParsedItem]:
  """An oriented-box dataset's data.yaml: lines `class x1 y1 x2 y2 x3 y3 x4 y4`."""
  del feature_types
  yield from _parse(path, text, image_root, annotations, 'obb')


# --- data.yaml ------------------------------------------------------------------------


def _parse(path: str, text: str, image_root: Optional[str], annotations: AbstractSet[str],
           kind: str) -> Iterator[ParsedItem]:
  data = _load(path, text)
  names = _names(path, data)
  base = _folder_of(image_root) if image_root else _parent(_absolute(path))
  root = _root(path, data, base)
  lines = _LineRules(path, data, names, annotations, kind)
  listed: _Listings = {}
  row = 0
  for split, key in _splits(data):
    images, folders = _split_images(path, key, data[key], root, listed)
    _refuse_dota_labels(path, key, images)
    labels_seen = set()
    for image in images:
      row += 1
      if isinstance(image, RowError):
        yield RowError(image.reason, image.message, source=path, row=row,
                       uri=_relative(image.uri, base))
        continue
      label_path = img2label_path(image)
      labels_seen.add(label_path)
      yield _image_row(path, row, image, (label_path,), _relative(image, base), split, lines)
    _warn_unread_labels(path, key, folders, labels_seen, listed)


def _refuse_dota_labels(path: str, key: str, images: Sequence[Union[str, RowError]]) -> None:
  """Raises ManifestError when a split's images have no labels/ folder but a labelTxt/
  beside their images/ folder: DOTA's layout (as Roboflow's YOLO OBB export writes it),
  whose lines are pixel corners and class names, which no image would read here (each
  would be an image without objects)."""
  image = next((i for i in images if isinstance(i, str)), None)
  if image is None or '/images/' not in image or not _files().is_local(image):
    return
  labels = _parent(img2label_path(image))
  if os.path.isdir(labels):
    return
  parts = labels.split('/')  # the last labels/ of the path made labelTxt/
  at = len(parts) - 1 - parts[::-1].index('labels')
  dota = '/'.join(parts[:at] + ['labelTxt'] + parts[at + 1:])
  if os.path.isdir(dota):
    raise ManifestError(f'{path}: the {key} images\' labels are in {dota} (DOTA\'s layout: '
                        'pixel corners and class names), not in the labels/ folder '
                        'Ultralytics reads; DOTA labels are not read: convert them to YOLO '
                        'OBB lines in labels/')


def _load(path: str, text: str) -> dict:
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
                        f'{{class id: name}} mapping, got {_short(names)}')
  out = {}
  for key, name in names.items():
    index = _whole(key) if isinstance(key, (int, str)) and not isinstance(key, bool) else None
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


def _root(path: str, data: dict, base: str) -> str:
  """The dataset root: `path` (relative to `base`), or `base`."""
  given = data.get('path')
  if given is None or (isinstance(given, str) and not given.strip()):
    return base
  if not isinstance(given, str):
    raise ManifestError(f'{path}: `path` must be the dataset folder, got {given!r}')
  root = _join(base, given.strip())
  if _files().is_local(root) and not os.path.isdir(root):
    _LOG.warning('%s: path: %s names %s, which is not a folder; reading the dataset from '
                 'the yaml\'s folder %s instead', path, given, root, base)
    return base
  return root


def _splits(data: dict) -> List[Tuple[str, str]]:
  """(split, key) of each split the yaml gives, in the yaml's order."""
  found = {}
  for split, keys in _SPLIT_KEYS.items():
    key = next((k for k in keys if k in data), None)
    value = data.get(key) if key else None
    if key and value not in (None, '', []):
      found[key] = split
  return [(split, key) for key, split in ((k, found[k]) for k in data if k in found)]


# --- images ---------------------------------------------------------------------------


def _split_images(path: str, key: str, value: object, root: str, listed: '_Listings'
                  ) -> Tuple[List[Union[str, RowError]], List[str]]:
  """A split's images (full paths, sorted; a RowError for a listed name that is no
  image) and the folders they were found in."""
  entries = value if isinstance(value, list) else [value]
  images: List[Tuple[str, Union[str, RowError]]] = []
  folders = []
  for entry in entries:
    if not isinstance(entry, str) or not entry.strip():
      raise ManifestError(f'{path}: `{key}` must be a folder, a .txt list of images, or a '
                          f'list of them; got {_short(value)}')
    target, kind = _locate(path, key, entry.strip(), root, listed)
    if kind == 'folder':
      folders.append(target)
      images.extend((p, p) for p in _walk(target, IMG_FORMATS, listed))
    elif target.lower().endswith(IMG_FORMATS):
      images.append((target, target))
    else:
      images.extend(_listed_images(target))
  images.sort(key=lambda pair: pair[0])
  return [image for _, image in images], folders


def _locate(path: str, key: str, entry: str, root: str, listed: '_Listings'
            ) -> Tuple[str, str]:
  """(full path, 'folder' or 'file') of a split entry; a missing `../x` is retried as
  `x` under the root, as Ultralytics does."""
  tried = [_join(root, entry)]
  if entry.startswith('../'):
    tried.append(_join(root, entry[3:]))
  for target in tried:
    kind = _kind(target, listed)
    if kind:
      return target, kind
  raise ManifestError(f'{path}: `{key}: {entry}` names {" or ".join(tried)}, which does '
                      'not exist; fix the path (relative paths are relative to the dataset '
                      f'root {root})')


# The objects under each gs:// or s3:// folder listed while one file is parsed, relative
# to it: each folder is listed once.
_Listings = Dict[str, List[str]]


def _list_objects(folder: str, listed: _Listings) -> List[str]:
  prefix = folder.rstrip('/')
  if prefix not in listed:
    listed[prefix] = _files().list_objects(prefix)
  return listed[prefix]


def _kind(target: str, listed: _Listings) -> Optional[str]:
  """'folder', 'file' or None (nothing there)."""
  if _files().is_local(target):
    return 'folder' if os.path.isdir(target) else 'file' if os.path.isfile(target) else None
  if _files().exists(target):
    return 'file'
  return 'folder' if _list_objects(target, listed) else None


def _walk(folder: str, extensions: Tuple[str, ...], listed: _Listings) -> Iterator[str]:
  """The files under `folder`, at any depth, whose names end with `extensions`: full
  paths; hidden files and folders skipped (as Ultralytics' glob skips them)."""
  if _files().is_local(folder):
    for top, dirs, names in os.walk(folder, followlinks=True):
      dirs[:] = [d for d in dirs if not d.startswith('.')]
      for name in names:
        if not name.startswith('.') and name.lower().endswith(extensions):
          yield os.path.join(top, name)
    return
  prefix = folder.rstrip('/')
  for relative in _list_objects(prefix, listed):
    if relative.lower().endswith(extensions) and not any(
        part.startswith('.') for part in relative.split('/')):
      yield f'{prefix}/{relative}'


def _listed_images(list_path: str) -> List[Tuple[str, Union[str, RowError]]]:
  """The images a .txt list names, one a line, relative ones relative to its folder; a
  line naming no image is a RowError."""
  text = _read_text(list_path)
  if text is None:
    raise ManifestError(f'{list_path}: the image list is not UTF-8 text')
  folder = _parent(list_path)
  out: List[Tuple[str, Union[str, RowError]]] = []
  for number, line in enumerate(text.split('\n'), start=1):
    name = line.strip()
    if not name:
      continue
    out.append(_list_entry(list_path, number, name, _join(folder, name)))
  return out


def _list_entry(list_path: str, number: int, entry: str, image: str
                ) -> Tuple[str, Union[str, RowError]]:
  """(image, image) for an image list's line naming an image, else (image, its
  RowError)."""
  if image.lower().endswith(IMG_FORMATS):
    return image, image
  return image, RowError(
      'bad_row', f'{list_path} line {number}: {entry!r} is not an image file name (one '
      f'of {", ".join(IMG_FORMATS)}); list only images', uri=image)


def img2label_path(image: str) -> str:
  """Ultralytics' img2label_paths: the last `/images/` made `/labels/`, the extension
  `.txt`."""
  labelled = '/labels/'.join(image.rsplit('/images/', 1))
  return labelled.rsplit('.', 1)[0] + '.txt'


def _warn_unread_labels(path: str, key: str, folders: Sequence[str],
                        labels_seen: AbstractSet[str], listed: _Listings) -> None:
  """Logs the label files under the split's label folders that no image of it has."""
  unread = []
  for folder in dict.fromkeys(folders):
    label_folder = '/labels/'.join((folder.rstrip('/') + '/').rsplit('/images/', 1))
    for label in _walk(label_folder, ('.txt',), listed):
      if label not in labels_seen:
        unread.append(label)
  if unread:
    _LOG.warning('%s: %d label file(s) of `%s` have no image and are not read (Ultralytics '
                 'ignores them too), e.g. %s', path, len(unread), key, sorted(unread)[0])


# --- label files ----------------------------------------------------------------------


def _image_row(path: str, row: int, image: str, label_paths: Sequence[str], uri: str,
               split: str, lines: '_LineRules') -> ParsedItem:
  """The image's row, its objects read from the first of `label_paths` that exists
  (none: no objects)."""
  where = dict(source=path, row=row, uri=uri)
  raw, label_path = b'', label_paths[0]
  for label_path in label_paths:
    try:
      with _files().open_file(label_path) as f:
        raw = f.read()
      break
    except Exception as e:  # pylint: disable=broad-except
      reason = _files().classify(e)
      if reason != 'missing':
        return RowError('unreadable' if reason == 'not_a_file' else reason,
                        f'cannot read the label file {label_path}: {e}', **where)
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


class _LineRules:
  """How a dataset's label lines read: its classes, its kind of lines (boxes and
  polygons, pose, oriented boxes) and what is asked for beyond boxes."""

  def __init__(self, path: str, data: dict, names: Dict[int, str],
               annotations: AbstractSet[str], kind: str):
    self.names = names
    self.obb = kind == 'obb'
    self.boxes_only = kind == 'darknet'
    self.masks = 'masks' in annotations
    self.read_keypoints = 'keypoints' in annotations
    self.points, self.dims = (0, 0) if kind != 'yolo' else _kpt_shape(path, data)
    if self.read_keypoints and not self.points:
      raise ManifestError(f'{path}: include_keypoints asked for, but the data.yaml has no '
                          '`kpt_shape: [keypoints, 2 or 3]`: it is not a pose dataset')
    if self.masks and self.points:
      raise ManifestError(f'{path}: include_masks asked for, but this is a pose dataset '
                          '(`kpt_shape`): its lines have no polygons')
    self.keypoint_names = (_keypoint_names(path, data, names, self.points)
                           if self.read_keypoints else {})

  def objects(self, label_path: str, text: str) -> Union[_Objects, str]:
    """The objects of a label file's text, or what is wrong with its first bad line."""
    objects = []
    for number, line in enumerate(text.split('\n'), start=1):
      values = line.split()
      if not values:
        continue
      parsed = self._line(values)
      if isinstance(parsed, str):
        return f'{label_path} line {number}: {parsed}'
      objects.append(parsed)
    return tuple(objects)

  def _line(self, values: List[str]) -> Union[ObjectBox, str]:
    class_id = _whole(values[0])
    if class_id is None:
      return f'the class {values[0]!r} is not a class id (0, 1, ...)'
    label = self.names.get(class_id)
    if label is None:
      return (f'class {class_id} is not in the data.yaml\'s `names` '
              f'({_id_range(self.names)}); fix the class id or add the class')
    numbers = [parse_number(v) for v in values[1:]]
    bad = next((v for v, n in zip(values[1:], numbers) if n is None), None)
    if bad is not None:
      return f'{bad!r} is not a number'
    count = len(numbers)
    expected = self._expected(count)
    if expected:
      return f'{expected}, got {count} number{"s" * (count != 1)} after the class'
    coordinates = (numbers if not self.points or self.dims == 2 else
                   numbers[:4] + [v for i, v in enumerate(numbers[4:]) if i % 3 != 2])
    outside = [v for v in coordinates if not -TOLERANCE <= v <= 1 + TOLERANCE]
    if outside:
      return (f'coordinates must be normalised to [0, 1] (fractions of the image\'s width '
              f'and height), got {_number(outside[0])}; convert pixel coordinates by '
              'dividing them by the image\'s size')
    if self.obb:
      return self._corners(label, class_id, numbers)
    if self.points:
      return self._pose(label, class_id, numbers)
    if count == 4:
      if self.masks:
        return ('a box line (class cx cy w h) has no polygon; include_masks writes a mask '
                'for every object, so label every object with a polygon, or convert '
                'without include_masks')
      return _box(label, class_id, numbers)
    xs, ys = numbers[0::2], numbers[1::2]
    mask = InstanceMask(polygons=(tuple(numbers),), normalized=True) if self.masks else None
    return ObjectBox(label, min(xs), min(ys), max(xs), max(ys), normalized=True, mask=mask,
                     source_id=class_id)

  def _expected(self, count: int) -> str:
    """What is wrong with a line of `count` numbers after its class ('' if nothing)."""
    if self.obb:
      return '' if count == 8 else 'an oriented box line is `class x1 y1 x2 y2 x3 y3 x4 y4`'
    if self.boxes_only:
      return '' if count == 4 else 'a Darknet line is `class cx cy w h`'
    if self.points:
      wanted = 4 + self.points * self.dims
      return '' if count == wanted else (
          f'a pose line (kpt_shape [{self.points}, {self.dims}]) is `class cx cy w h` and '
          f'{self.points} points of {" ".join("xyv"[:self.dims])}: {wanted} numbers')
    if count == 4 or (count >= 6 and count % 2 == 0):
      return ''
    return ('a line is `class cx cy w h` (a box) or `class x1 y1 x2 y2 x3 y3 ...` (a '
            'polygon of 3 or more points)')

  def _pose(self, label: str, class_id: int, numbers: List[float]) -> Union[ObjectBox, str]:
    box = _box(label, class_id, numbers[:4])
    if not self.read_keypoints:
      return box
    values = numbers[4:]
    points = []
    for i in range(self.points):
      x, y = values[i * self.dims], values[i * self.dims + 1]
      if self.dims == 3:
        v = values[i * 3 + 2]
        if v not in (0, 1, 2):
          return f'keypoint {i} has visibility {_number(v)}: it must be 0, 1 or 2'
        v = int(v)
      else:  # Ultralytics counts every 2-d point of non-negative coordinates present
        v = 0 if x < 0 or y < 0 else 2
      points.append((x, y, v) if v else (0.0, 0.0, 0))
    return ObjectBox(label, box.xmin, box.ymin, box.xmax, box.ymax, normalized=True,
                     keypoints=tuple(points), keypoint_names=self.keypoint_names[class_id],
                     source_id=class_id)

  def _corners(self, label: str, class_id: int, numbers: List[float]) -> ObjectBox:
    xs, ys = numbers[0::2], numbers[1::2]
    return ObjectBox(label, min(xs), min(ys), max(xs), max(ys), normalized=True,
                     corners=tuple(numbers), source_id=class_id)


def _box(label: str, class_id: int, numbers: Sequence[float]) -> ObjectBox:
  cx, cy, w, h = numbers
  return ObjectBox(label, cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, normalized=True,
                   source_id=class_id)


def _kpt_shape(path: str, data: dict) -> Tuple[int, int]:
  """(keypoints, 2 or 3) of a pose dataset's `kpt_shape`; (0, 0) without one."""
  shape = data.get('kpt_shape')
  if shape is None:
    return 0, 0
  if (not isinstance(shape, list) or len(shape) != 2 or
      not all(isinstance(v, int) and not isinstance(v, bool) for v in shape) or
      shape[0] <= 0 or shape[1] not in (2, 3)):
    raise ManifestError(f'{path}: `kpt_shape` must be [number of keypoints, 2 (x, y) or 3 '
                        f'(x, y, visible)], e.g. [17, 3]; got {shape!r}')
  return shape[0], shape[1]


def _keypoint_names(path: str, data: dict, names: Dict[int, str], count: int
                    ) -> Dict[int, Tuple[str, ...]]:
  """{class id: its keypoint names}: `kpt_names` ({class id: [names]}, a list of such
  lists, or one list for every class), else '0', '1', ..."""
  given = data.get('kpt_names')
  default = tuple(str(i) for i in range(count))
  out = {i: default for i in names}
  if given is None:
    return out
  if isinstance(given, list) and all(isinstance(n, str) for n in given):
    given = {i: given for i in names}
  elif isinstance(given, list):
    given = dict(enumerate(given))
  if not isinstance(given, dict):
    raise ManifestError(f'{path}: `kpt_names` must map class ids to lists of keypoint '
                        f'names, got {_short(given)}')
  for key, listed in given.items():
    index = _whole(key) if isinstance(key, (int, str)) and not isinstance(key, bool) else None
    if (index is None or not isinstance(listed, list) or len(listed) != count or
        not all(isinstance(n, (str, int)) and str(n).strip() for n in listed)):
      raise ManifestError(f'{path}: `kpt_names` {key!r} must be a class id with a list of '
                          f'{count} keypoint names (kpt_shape), got {_short(listed)}')
    if index in out:
      out[index] = tuple(str(n).strip() for n in listed)
  return out


# --- Darknet (obj.data) ---------------------------------------------------------------


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
  """
  del feature_types  # Darknet has no extra columns
  data = _darknet_keys(path, text)
  base = _folder_of(image_root) if image_root else _parent(_absolute(path))
  names = _darknet_names(path, data, base)
  lines = _LineRules(path, {}, names, frozenset(), 'darknet')
  unknown = sorted(set(data) - _DARKNET_KEYS)
  if unknown:  # a split under a name not read would be left out without a word
    raise ManifestError(f'{path}: unknown key{"s" if len(unknown) > 1 else ""} '
                        f'{", ".join(unknown)}; a Darknet .data file has '
                        f'{", ".join(sorted(_DARKNET_KEYS))}')
  row = 0
  for split, keys in _DARKNET_SPLITS:
    key = next((k for k in keys if data.get(k)), None)
    if key is None:
      continue
    found = _darknet_path(base, data[key])
    if found is None:
      raise ManifestError(f'{path}: `{key} = {data[key]}` names no file: tried '
                          f'{" or ".join(_darknet_candidates(base, data[key]))}')
    images = []
    if found.lower().endswith(IMG_FORMATS):
      images.append((found, found))
    else:
      images.extend(_darknet_list(found, base))
    for image, item in images:
      row += 1
      if isinstance(item, RowError):
        yield RowError(item.reason, item.message, source=path, row=row,
                       uri=_relative(image, base))
        continue
      yield _image_row(path, row, image, _darknet_labels(image), _relative(image, base), split,
                       lines)


# obj.data's keys of each split, the first present one read: darknet's `valid`, also
# `val` and `validation` (Datumaro's Darknet export writes `val`).
_DARKNET_SPLITS = (('train', ('train',)), ('eval', ('valid', 'val', 'validation')),
                   ('test', ('test',)))
_DARKNET_KEYS = {'classes', 'names', 'backup', 'eval', 'results', 'map', 'top', 'difficult',
                 *(k for _, keys in _DARKNET_SPLITS for k in keys)}


def _darknet_keys(path: str, text: str) -> Dict[str, str]:
  """obj.data's `key = value` lines (# comments, blank lines skipped)."""
  keys = {}
  for number, line in enumerate(text.lstrip('\ufeff').split('\n'), start=1):
    line = line.split('#', 1)[0].strip()
    if not line:
      continue
    if '=' not in line:
      raise ManifestError(f'{path} line {number}: a Darknet .data line is `key = value`, got '
                          f'{_short(line)}')
    key, value = (part.strip() for part in line.split('=', 1))
    keys[key.lower()] = value
  return keys


def _darknet_names(path: str, data: Dict[str, str], base: str) -> Dict[int, str]:
  """{class id: name}: the `names` file's lines (else obj.names beside obj.data), which
  must agree with `classes`."""
  given = data.get('names')
  names_path = (_darknet_path(base, given) if given else
                _darknet_path(base, 'obj.names'))
  if names_path is None:
    tried = _darknet_candidates(base, given) if given else [_join(base, 'obj.names')]
    raise ManifestError(f'{path}: no class names file: tried {" or ".join(tried)}; give '
                        '`names = <file of one class name a line>`')
  text = _read_text(names_path)
  if text is None:
    raise ManifestError(f'{names_path}: the class names file is not UTF-8 text')
  listed = [line.strip() for line in text.split('\n')]
  while listed and not listed[-1]:
    listed.pop()
  if '' in listed:
    raise ManifestError(f'{names_path} line {listed.index("") + 1}: an empty class name; '
                        'give each class a name, one a line')
  count = data.get('classes')
  if count is not None and (_whole(count) is None or _whole(count) != len(listed)):
    raise ManifestError(f'{path}: `classes = {count}` but {names_path} names {len(listed)} '
                        'classes; make them agree')
  return dict(enumerate(listed))


def _darknet_candidates(base: str, entry: str) -> List[str]:
  entry = entry.strip()
  if entry.startswith('/') or '://' in entry:
    return [_join(base, entry)]
  tried = [_join(base, entry), _join(_parent(base), entry)]
  if entry.startswith('data/'):
    tried.append(_join(base, entry[len('data/'):]))
  return list(dict.fromkeys(tried))


def _darknet_path(base: str, entry: str) -> Optional[str]:
  return next((p for p in _darknet_candidates(base, entry) if _kind(p, {}) == 'file'), None)


def _darknet_list(list_path: str, base: str) -> List[Tuple[str, Union[str, RowError]]]:
  """The images of a Darknet list, each line resolved as the first relative line
  resolves (see parse_darknet)."""
  text = _read_text(list_path)
  if text is None:
    raise ManifestError(f'{list_path}: the image list is not UTF-8 text')
  entries = [(n, line.strip()) for n, line in enumerate(text.split('\n'), start=1)
             if line.strip()]
  folder = _parent(list_path)
  style = 0
  first = next((e for _, e in entries if not (e.startswith('/') or '://' in e)), None)
  if first is not None:
    styles = _darknet_styles(base, folder, first)
    style = next((i for i, p in enumerate(styles) if p and _kind(p, {}) == 'file'), 0)
  out: List[Tuple[str, Union[str, RowError]]] = []
  for number, entry in entries:
    image = _darknet_styles(base, folder, entry)[style] or _join(base, entry)
    out.append(_list_entry(list_path, number, entry, image))
  return out


def _darknet_styles(base: str, list_folder: str, entry: str) -> List[Optional[str]]:
  """A list line resolved each way Darknet lists are written (None: not that way)."""
  if entry.startswith('/') or '://' in entry:
    return [_join(base, entry)] * 4
  return [_join(base, entry), _join(_parent(base), entry),
          _join(base, entry[len('data/'):]) if entry.startswith('data/') else None,
          _join(list_folder, entry)]


def _darknet_labels(image: str) -> Tuple[str, ...]:
  """Where Darknet looks for an image's labels: beside it, else `/images/` or
  `/JPEGImages/` made `/labels/`."""
  beside = image.rsplit('.', 1)[0] + '.txt'
  jpeg_images = '/labels/'.join(beside.rsplit('/JPEGImages/', 1))
  return tuple(dict.fromkeys((beside, img2label_path(image), jpeg_images)))


# --- paths and small helpers ----------------------------------------------------------


def _absolute(path: str) -> str:
  if path.startswith('file://'):
    path = path[len('file://'):]
  return os.path.abspath(path) if _files().is_local(path) else path


def _folder_of(folder: str) -> str:
  return _absolute(folder).rstrip('/') or '/'


def _parent(path: str) -> str:
  return path.rsplit('/', 1)[0] if '/' in path.rstrip('/') else '.'


def _join(base: str, relative: str) -> str:
  """`relative` under `base`, `..` resolved; an absolute path or URI as it is."""
  if relative.startswith('file://'):
    return _absolute(relative)
  if '://' in relative:
    scheme, rest = relative.split('://', 1)
    return f'{scheme}://{posixpath.normpath(rest)}'
  if relative.startswith('/'):
    return posixpath.normpath(relative)
  if '://' in base:
    scheme, rest = base.split('://', 1)
    return f'{scheme}://{posixpath.normpath(posixpath.join(rest, relative))}'
  return posixpath.normpath(posixpath.join(base, relative))


def _relative(image: str, base: str) -> str:
  """The image's path relative to `base` when it is under it, else its full path."""
  prefix = base.rstrip('/') + '/'
  return image[len(prefix):] if image.startswith(prefix) else image


def _read_text(path: str) -> Optional[str]:
  with _files().open_file(path) as f:
    raw = f.read()
  try:
    return raw.decode('utf-8-sig')
  except UnicodeDecodeError:
    return None


_WHOLE = re.compile(r'[+-]?\d+(\.0*)?\Z', re.ASCII)


def _whole(value: Union[int, str]) -> Optional[int]:
  """A class id written as a whole number ('3', '3.0', 3), else None."""
  if isinstance(value, int):
    return value
  text = value.strip()
  if not _WHOLE.match(text) or len(text) > 18:  # a longer id is no class of any dataset
    return None
  return int(text.split('.', 1)[0])


def _id_range(names: Dict[int, str]) -> str:
  if not names:
    return 'it names no class'
  ids = sorted(names)
  if ids == list(range(len(ids))):
    return f'ids 0 to {len(ids) - 1}'
  return 'ids ' + ', '.join(map(str, ids[:20])) + (', ...' if len(ids) > 20 else '')


def _number(value: float) -> str:
  return f'{value:g}'


def _short(value: object) -> str:
  text = repr(value)
  return text if len(text) <= 80 else text[:77] + '...'


def _files():
  """`tfrecorder_component.files`, imported when first used: it imports the registry,
  which imports this module."""
  from tfrecorder_component import files  # pylint: disable=g-import-not-at-top
  return files


def count_images(path: str, darknet: bool = False) -> int:
  """About how many images a data.yaml's (or Darknet obj.data's) splits hold, found as
  parse finds them, to size the run before it is parsed; 0 for a file that parse will
  refuse (it says why)."""
  try:
    with _files().open_file(path) as f:
      text = f.read().decode('utf-8-sig', 'replace')
    base = _parent(_absolute(path))
    if darknet:
      data = _darknet_keys(path, text)
      total = 0
      for _, keys in _DARKNET_SPLITS:
        key = next((k for k in keys if data.get(k)), None)
        found = _darknet_path(base, data[key]) if key else None
        if found and not found.lower().endswith(IMG_FORMATS):
          with _files().open_file(found) as f:
            total += sum(1 for line in f if line.strip())
      return total
    data = _load(path, text)
    root = _root(path, data, base)
    listed: _Listings = {}
    return sum(len(_split_images(path, key, data[key], root, listed)[0])
               for _, key in _splits(data))
  except (ManifestError, OSError, ValueError):
    return 0


def label_folders(path: str, image_root: Optional[str] = None, kind: str = 'yolo'
                  ) -> List[str]:
  """The folders parse looks in for the label files of the images of `path` (a
  data.yaml; with kind 'darknet', an obj.data), in the order first met: each image's
  path with the last `/images/` made `/labels/` (Darknet: beside the image too), as
  parse finds them; no label file is read. [] for a file parse refuses (it says why)."""
  try:
    with _files().open_file(path) as f:
      text = f.read().decode('utf-8-sig', 'replace')
    base = _folder_of(image_root) if image_root else _parent(_absolute(path))
    images: List[str] = []
    if kind == 'darknet':
      data = _darknet_keys(path, text)
      for _, keys in _DARKNET_SPLITS:
        key = next((k for k in keys if data.get(k)), None)
        found = _darknet_path(base, data[key]) if key else None
        if found is None:
          continue
        listed = ([(found, found)] if found.lower().endswith(IMG_FORMATS)
                  else _darknet_list(found, base))
        images.extend(image for image, _ in listed)
      candidates = _darknet_labels
    else:
      data = _load(path, text)
      root = _root(path, data, base)
      listed_objects: _Listings = {}
      for _, key in _splits(data):
        found, _ = _split_images(path, key, data[key], root, listed_objects)
        images.extend(i for i in found if isinstance(i, str))
      candidates = lambda image: (img2label_path(image),)
    return list(dict.fromkeys(_parent(label) for image in images
                              for label in candidates(image)))
  except (ManifestError, OSError, ValueError):
    return []


def _holds_txt(folder: str) -> bool:
  if not os.path.isdir(folder):
    return False
  with os.scandir(folder) as entries:
    return any(e.name.lower().endswith('.txt') and e.is_file() for e in entries)


def _folder_state(folder: str) -> str:
  """What is wrong with a local label folder, in words ('' when nothing is, or it is
  not local): without a .txt file, or missing, and then which folder in its place holds
  .txt files (DOTA's `labelTxt/` beside `images/`, a misnamed `labels/`)."""
  if not _files().is_local(folder):
    return ''
  if os.path.isdir(folder):
    return '' if _holds_txt(folder) else ' (no .txt file in it)'
  missing, ancestor = [], folder
  while ancestor not in ('', '.', '/') and not os.path.isdir(ancestor):
    missing.insert(0, posixpath.basename(ancestor))
    ancestor = _parent(ancestor)
  elsewhere = ''
  if missing and os.path.isdir(ancestor):
    for name in sorted(os.listdir(ancestor)):
      candidate = posixpath.join(ancestor, name, *missing[1:])
      if not name.startswith('.') and name != missing[0] and _holds_txt(candidate):
        elsewhere = f'; .txt files are in {candidate}'
        break
  return f' (no such folder{elsewhere})'


# Label folders the warning of a run that found no object names; the rest are counted.
FOLDERS_NAMED = 3


def objects_from(path: str, image_root: Optional[str] = None, kind: str = 'yolo') -> str:
  """Where parse looked for the objects of `path`'s images, and what to check, in words:
  the warning of a detection run that found no object names it (`ManifestFormat.
  objects_from`), as Ultralytics warns 'No labels found in <labels folder>'."""
  folders = label_folders(path, image_root, kind)
  named = ', '.join(f + _folder_state(f) for f in folders[:FOLDERS_NAMED])
  if len(folders) > FOLDERS_NAMED:
    named += f' and {len(folders) - FOLDERS_NAMED:,} more folders'
  rule = ('beside each image, or in the labels/ folder that mirrors its images/ or '
          'JPEGImages/ folder, as Darknet reads them' if kind == 'darknet' else
          'in the labels/ folder that mirrors its images/ folder (the last /images/ of '
          'its path made /labels/), as Ultralytics reads them')
  where = f'in {named}' if named else f'for the images of {path}'
  return (f'the label files of {path} were looked for {where}: an image\'s objects are the '
          f'lines of the .txt of its name {rule}; check that those .txt files are there, a '
          'line an object')


def _sniff(head: str) -> bool:
  return re.search(r'^names\s*:', head, re.M) is not None


FORMAT = ManifestFormat('yolo', ('.yaml', '.yml'), sniff=_sniff, parse=parse,
                        one_row_an_image=True, annotations=('masks', 'keypoints'), rows=count_images,
                        objects_from=objects_from)
OBB_FORMAT = ManifestFormat('yolo_obb', (), sniff=lambda head: False, parse=parse_obb,
                            one_row_an_image=True, objects_from=objects_from)
# Darknet's obj.data (`parse_darknet`).
DARKNET_FORMAT = ManifestFormat(
    'yolo_darknet', ('.data',),
    sniff=lambda head: re.search(r'^\s*classes\s*=', head, re.M) is not None,
    parse=parse_darknet, one_row_an_image=True,
    rows=lambda path: count_images(path, darknet=True),
    objects_from=lambda path, image_root=None: objects_from(path, image_root, 'darknet'))
