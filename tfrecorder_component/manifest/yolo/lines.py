"""YOLO label lines: `class cx cy w h` boxes, polygons, pose keypoints and oriented boxes,
read as Ultralytics' `verify_image_label` reads them (`LineRules`).

A bad line is named by its file and number and what is wrong with it, by the place of
the value in the line, never by the value: a label file is found by its image's path,
so it may be any `.txt` file the path leads to, whose text is not the user's to see.
"""
from __future__ import annotations

import re
from typing import AbstractSet, Dict, List, Optional, Sequence, Tuple, Union

from tfrecorder_component.errors import ManifestError
from tfrecorder_component.manifest.features import parse_number
from tfrecorder_component.manifest.rows import InstanceMask, ObjectBox, short


# Ultralytics accepts coordinates up to 0.01 outside [0, 1] (verify_image_label).
TOLERANCE = 0.01


_Objects = Tuple[ObjectBox, ...]


class LineRules:
  """How a dataset's label lines read: its classes, its kind of lines (boxes and
  polygons, pose, oriented boxes) and what is asked for beyond boxes.

  Raises ManifestError for a bad `kpt_shape` or `kpt_names`, keypoints asked of a
  dataset without `kpt_shape`, or masks asked of a pose dataset.

  Args:
    path: The data.yaml's (or obj.data's) path, named in errors.
    data: The data.yaml's mapping, for `kpt_shape` and `kpt_names`; {} for Darknet.
    names: {class id: class name}; a line's class id must be one of them.
    annotations: What is asked for beyond boxes: 'masks' (polygons become instance
      masks), 'keypoints' (a pose dataset's points are kept).
    kind: 'yolo' (boxes and polygons, or pose with `kpt_shape`), 'obb' (oriented
      boxes) or 'darknet' (boxes only).
  """

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
    """The objects of a label file's text, or what is wrong with its first bad line.

    Args:
      label_path: The label file's path, which the message of a bad line begins with.
      text: The label file's text, one object a line; blank lines skipped.
    """
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
    class_id = whole_number(values[0])
    if class_id is None:
      return 'the class (the line\'s first value) is not a class id (0, 1, ...)'
    label = self.names.get(class_id)
    if label is None:
      return (f'the class id is not in the data.yaml\'s `names` '
              f'({_id_range(self.names)}); fix the class id or add the class')
    numbers = [parse_number(v) for v in values[1:]]
    bad = next((i for i, n in enumerate(numbers, start=1) if n is None), None)
    if bad is not None:
      return f'value {bad} after the class is not a number'
    count = len(numbers)
    expected = self._expected(count)
    if expected:
      return f'{expected}, got {count} number{"s" * (count != 1)} after the class'
    coordinates = (numbers if not self.points or self.dims == 2 else
                   numbers[:4] + [v for i, v in enumerate(numbers[4:]) if i % 3 != 2])
    outside = [v for v in coordinates if not -TOLERANCE <= v <= 1 + TOLERANCE]
    if outside:
      what = ('a value that is not a number (nan)' if outside[0] != outside[0] else
              'a value above 1' if outside[0] > 1 else 'a value below 0')
      return (f'coordinates must be normalised to [0, 1] (fractions of the image\'s width '
              f'and height), got {what}; convert pixel coordinates by dividing them by '
              'the image\'s size')
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
          return f'keypoint {i}\'s visibility is none of 0, 1 and 2'
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
                        f'names, got {short(given)}')
  for key, listed in given.items():
    index = whole_number(key) if isinstance(key, (int, str)) and not isinstance(key, bool) else None
    if (index is None or not isinstance(listed, list) or len(listed) != count or
        not all(isinstance(n, (str, int)) and str(n).strip() for n in listed)):
      raise ManifestError(f'{path}: `kpt_names` {key!r} must be a class id with a list of '
                          f'{count} keypoint names (kpt_shape), got {short(listed)}')
    if index in out:
      out[index] = tuple(str(n).strip() for n in listed)
  return out


_WHOLE = re.compile(r'[+-]?\d+(\.0*)?\Z', re.ASCII)


def whole_number(value: Union[int, str]) -> Optional[int]:
  """A class id written as a whole number ('3', '3.0', 3), else None.

  Args:
    value: An int (returned as it is), or text as a label file or YAML key gives it;
      text of more than 18 characters is None.
  """
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

