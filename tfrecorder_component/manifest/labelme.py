"""LabelMe JSON: one file annotates one image (`imagePath`, `shapes`).

The file labelme (https://github.com/wkentaro/labelme) saves beside each image: an
object whose `imagePath` names the image, relative to the JSON file's folder (or to
`image_root`; Windows backslashes are read as `/`), whose `shapes` are its objects
(an empty list: an image without objects) and whose `flags` ({name: true|false}) become
the features `flags/<name>` (0 or 1). `imageHeight` and `imageWidth` are not needed
(boxes are normalised by the stored image's size) and `imageData`, the image embedded
in base64, is not read: the image file is (a file with only `imageData` fails).

Each shape has a `label` (its class), `points` ([x, y] pairs in pixels), a
`shape_type` (labelme's default: polygon), and optionally a `group_id`, `flags`
({name: true|false}) and `difficult` (true|false, as X-AnyLabeling writes it):

- rectangle: 2 opposite corners, in any order (or 4 corners): the box they span.
- polygon (3 points or more): the box enclosing it.
- circle (its centre, then a point on it): the box enclosing the circle.
- rotation (X-AnyLabeling's oriented box, 4 corners): the box enclosing them, the
  corners kept (`image/object/corner/*`).
- mask (labelme's AI mask: 2 corners and the bitmap, a base64 PNG, of the pixels
  between them): the box of those pixels.
- point, points, line, linestrip: no area, so no box: the object is kept for the record
  step to drop and list in box_issues ('point_shape', 'line_shape', ...), so nothing is
  lost silently and the image keeps its other objects.

Shapes of one label that share a `group_id` are one object, as labelme's own tools
(`shapes_to_label`, labelme2coco) make them: the box enclosing them all, the mask made
of all their polygons (a mask shape cannot join: the image fails), the first shape's
flags. A shape's `group_id` becomes the attribute `image/object/group_id`, its flags
`image/object/flags/<name>` (0 or 1); its `description` is not read.

With 'masks': a polygon is its mask, a rectangle the rectangle, a circle a 64-sided
polygon, a rotation its 4 corners, a mask shape its bitmap (placed in an image of
`imageHeight` x `imageWidth`).

A shape that does not parse (a coordinate that is not a number, too few points), an
unknown `shape_type`, a missing `imagePath` or a file that is not JSON fail the image
(`bad_row`, naming the shape and the reason); a JSON file that is not an object with
`shapes` is not a LabelMe file (ManifestError).
"""
from __future__ import annotations

import base64
import io
import json
import math
from typing import AbstractSet, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.features import as_number
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.shapes import bitmap_mask, bounds, ellipse_polygon
from tfrecorder_component.manifest.rows import (InstanceMask, ManifestRow, ObjectBox, ParsedItem,
                                                resolve_uri, short)

# Shapes with no area: the object is dropped by the record step, with this reason.
_NO_AREA = {'point': ('point_shape', 1), 'points': ('points_shape', 1),
            'line': ('line_shape', 2), 'linestrip': ('linestrip_shape', 2)}
_SHAPE_TYPES = ('rectangle', 'polygon', 'circle', 'rotation', 'mask', *_NO_AREA)
Points = Tuple[Tuple[float, float], ...]


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None,
          annotations: AbstractSet[str] = frozenset()) -> Iterator[ParsedItem]:
  """The one row of a LabelMe JSON file (see the module): its image as a ManifestRow,
  or a `bad_row` RowError.

  Args:
    path: the JSON file's path: named in errors, and the folder `imagePath` resolves
      against when `image_root` is None.
    text: the file's whole text.
    image_root: the folder (local path or URI) `imagePath` resolves against; None: the
      JSON file's folder.
    feature_types: ignored: the `flags/<name>` features are always ints (0 or 1).
    annotations: what to read beyond boxes: 'masks' (each object's polygon or bitmap);
      empty: none.
  """
  del feature_types  # LabelMe has no extra columns
  yield _parse(path, text, image_root, 'masks' in annotations)


def _parse(path: str, text: str, image_root: Optional[str], masks: bool) -> ParsedItem:
  try:
    data = json.loads(text)
  except (ValueError, RecursionError) as e:
    return RowError('bad_row', f'not a valid LabelMe JSON file: {e}', source=path, row=1)
  if not isinstance(data, dict) or 'shapes' not in data:
    raise ManifestError(f'{path}: a LabelMe JSON file is an object with "shapes" (and '
                        '"imagePath"); this is not one')
  uri = data.get('imagePath')
  uri = uri.strip().replace('\\', '/') if isinstance(uri, str) else ''
  if not uri:
    embedded = ('; it has only "imageData" (the image embedded), which is not read: save '
                'the image as a file beside the JSON and name it in "imagePath"'
                if data.get('imageData') else '')
    return RowError('bad_row', f'no "imagePath" (the image file this annotates){embedded}',
                    source=path, row=1)

  def error(message: str) -> RowError:
    return RowError('bad_row', message, source=path, row=1, uri=uri)

  shapes = data['shapes'] or []
  if not isinstance(shapes, list):
    return error(f'"shapes" must be a list of shapes, got {short(shapes)}')
  features = _flags(data.get('flags'))
  if isinstance(features, str):
    return error(f'"flags": {features}')
  size = (data.get('imageHeight'), data.get('imageWidth'))
  parts: List[_Part] = []
  for index, shape in enumerate(shapes):
    part = _shape(shape, masks, size)
    if isinstance(part, str):
      kind = shape.get('shape_type') if isinstance(shape, dict) else None
      label = shape.get('label') if isinstance(shape, dict) else None
      named = f' ({kind or "polygon"} {label!r})' if isinstance(label, str) else ''
      return error(f'shapes[{index}]{named}: {part}')
    parts.append(part)
  objects = _objects(parts)
  if isinstance(objects, str):
    return error(objects)
  return ManifestRow(source=path, row=1, image_uri=uri,
                     resolved_uri=resolve_uri(uri, path, image_root),
                     labels=tuple(dict.fromkeys(o.label for o in objects)),
                     objects=objects,
                     features=tuple((f'flags/{name}', value) for name, value in features))


class _Part:
  """One shape, read: its object, and the group it joins (label and group_id)."""

  def __init__(self, obj: ObjectBox, group: Optional[int]):
    self.obj = obj
    self.group = group


def _shape(shape: object, masks: bool, size: Tuple[object, object]) -> Union[_Part, str]:
  if not isinstance(shape, dict):
    return f'a shape is an object, got {short(shape)}'
  label = shape.get('label')
  if not isinstance(label, str) or not label.strip():
    return f'"label" must be a non-empty string, got {short(label)}'
  kind = shape.get('shape_type') or 'polygon'
  if kind not in _SHAPE_TYPES:
    return f'unknown "shape_type" {short(kind)}; LabelMe has {", ".join(_SHAPE_TYPES)}'
  points = _points(shape.get('points'))
  if isinstance(points, str):
    return points
  group = shape.get('group_id')
  if group is not None and (isinstance(group, bool) or as_number(group) is None
                            or not as_number(group).is_integer()
                            or abs(as_number(group)) >= 2**63):
    return f'"group_id" must be a whole number or null, got {short(group)}'
  group = int(as_number(group)) if group is not None else None
  flags = _flags(shape.get('flags'))
  if isinstance(flags, str):
    return f'"flags": {flags}'
  difficult = shape.get('difficult', False)
  if difficult not in (True, False, 0, 1, None):
    return f'"difficult" must be true or false, got {short(difficult)}'
  read = _geometry(kind, points, shape, masks, size)
  if isinstance(read, str):
    return read
  box, corners, mask, invalid = read
  attributes = (*((('group_id', group),) if group is not None else ()),
                *((f'flags/{name}', value) for name, value in flags))
  obj = ObjectBox(label.strip(), *box, normalized=False, difficult=bool(difficult),
                  mask=mask if masks else None, corners=corners, invalid=invalid,
                  attributes=attributes)
  return _Part(obj, group)


Geometry = Union[Tuple[Tuple[float, float, float, float], Tuple[float, ...],
                       Optional[InstanceMask], str], str]


def _geometry(kind: str, points: Points, shape: dict, masks: bool,
              size: Tuple[object, object]) -> Geometry:
  """(box, corners, mask, why it has no area or '') of a shape, or what is wrong."""
  flat = tuple(v for p in points for v in p)
  if kind in _NO_AREA:
    reason, least = _NO_AREA[kind]
    if len(points) < least:
      return f'a {kind} needs at least {least} point{"s" * (least > 1)}, got {len(points)}'
    return bounds(flat), (), None, reason
  if kind == 'polygon':
    if len(points) < 3:
      return f'a polygon needs at least 3 points, got {len(points)}'
    return bounds(flat), (), InstanceMask(polygons=(flat,)), ''
  if kind in ('rectangle', 'mask'):
    if len(points) not in (2, 4) if kind == 'rectangle' else len(points) != 2:
      wanted = '2 corners (or 4)' if kind == 'rectangle' else '2 corners'
      return f'a {kind} needs {wanted}, got {len(points)} points'
    x0, y0, x1, y1 = bounds(flat)
    if kind == 'mask':
      return _mask_shape(shape, (x0, y0, x1, y1), masks, size)
    return (x0, y0, x1, y1), (), InstanceMask(polygons=((x0, y0, x1, y0, x1, y1, x0, y1),)), ''
  if kind == 'circle':
    if len(points) != 2:
      return f'a circle needs 2 points (its centre, a point on it), got {len(points)}'
    (cx, cy), (x, y) = points
    radius = math.hypot(x - cx, y - cy)
    return ((cx - radius, cy - radius, cx + radius, cy + radius), (),
            InstanceMask(polygons=(ellipse_polygon(cx, cy, radius, radius),)), '')
  if len(points) != 4:  # rotation
    return f'a rotation (an oriented box) needs its 4 corners, got {len(points)} points'
  return bounds(flat), flat, InstanceMask(polygons=(flat,)), ''


def _mask_shape(shape: dict, corners: Tuple[float, float, float, float], masks: bool,
                size: Tuple[object, object]) -> Geometry:
  """A mask shape: its 2 points are the first and the last pixel of its bitmap (whole
  pixels, as labelme places it)."""
  if not all(math.isfinite(v) for v in corners):  # dropped by the record step: not_finite
    return corners, (), None, ''
  left, top, right, bottom = (int(v) for v in corners)
  box = (float(left), float(top), float(right + 1), float(bottom + 1))
  if not masks:
    return box, (), None, ''
  height, width = size
  if not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2**31 for v in size):
    return ('a mask shape is placed in an image of "imageHeight" x "imageWidth", which must '
            f'be whole numbers of pixels, got {short(height)} x {short(width)}')
  from PIL import Image  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  try:
    data = base64.b64decode(shape.get('mask') or '', validate=True)
    with Image.open(io.BytesIO(data)) as image:
      bitmap = np.asarray(image.convert('L')) > 0
  except Exception as e:  # pylint: disable=broad-except
    # base64 or PNG that does not decode: Pillow raises many kinds (OSError, SyntaxError,
    # EOFError, DecompressionBombError, ...)
    return f'"mask" must be a base64 PNG of the shape\'s pixels: {e}'
  return box, (), bitmap_mask(bitmap, left, top, height, width), ''


def _objects(parts: List[_Part]) -> Union[Tuple[ObjectBox, ...], str]:
  """The image's objects: shapes of one label and group_id joined into one."""
  objects: List[ObjectBox] = []
  joined: Dict[Tuple[str, int], int] = {}
  for part in parts:
    obj = part.obj
    key = (obj.label, part.group)
    if part.group is None or obj.invalid or key not in joined:
      if part.group is not None and not obj.invalid:
        joined[key] = len(objects)
      objects.append(obj)
      continue
    first = objects[joined[key]]
    joined_obj = _join(first, obj)
    if isinstance(joined_obj, str):
      return f'group_id {part.group} of {obj.label!r}: {joined_obj}'
    objects[joined[key]] = joined_obj
  return tuple(objects)


def _join(first: ObjectBox, other: ObjectBox) -> Union[ObjectBox, str]:
  import dataclasses  # pylint: disable=g-import-not-at-top
  mask = first.mask
  if first.mask is not None and other.mask is not None:
    if not (first.mask.polygons and other.mask.polygons):
      return ('a mask shape cannot be joined with other shapes into one object; give it '
              'its own group_id')
    mask = InstanceMask(polygons=first.mask.polygons + other.mask.polygons)
  return dataclasses.replace(
      first, xmin=min(first.xmin, other.xmin), ymin=min(first.ymin, other.ymin),
      xmax=max(first.xmax, other.xmax), ymax=max(first.ymax, other.ymax), mask=mask,
      corners=(), difficult=first.difficult or other.difficult)


def _points(value: object) -> Union[Points, str]:
  """`points` ([[x, y], ...] in pixels) as pairs of floats, or what is wrong with them."""
  if not isinstance(value, list):
    return f'"points" must be a list of [x, y] pairs in pixels, got {short(value)}'
  pairs = []
  for point in value:
    xy = [as_number(v) for v in point] if isinstance(point, list) else []
    if len(xy) != 2 or None in xy:
      return f'"points" must be [x, y] pairs of numbers, got {short(point)}'
    pairs.append((xy[0], xy[1]))
  return tuple(pairs)


def _flags(value: object) -> Union[Tuple[Tuple[str, int], ...], str]:
  """{name: true|false} as (name, 0|1) pairs, sorted by name, or what is wrong."""
  if value is None:
    return ()
  if not isinstance(value, dict) or not all(
      isinstance(v, bool) and k.strip() for k, v in value.items()):
    return f'flags are {{name: true or false}}, got {short(value)}'
  return tuple(sorted((k.strip(), int(v)) for k, v in value.items()))


def _sniff(head: str) -> bool:
  return head.startswith('{') and '"shapes"' in head


FORMAT = ManifestFormat(
    'labelme', ('.json',), sniff=_sniff, parse=parse, one_row_an_image=True,
    annotations=('masks',), rows=1,
    title='LabelMe JSON',
    sample=FormatSample(
        'm.json',
        '{"version": "5.2.1", "shapes": [], "imagePath": "a.jpg", "imageHeight": 10, '
        '"imageWidth": 10}'),
    sniff_rank=30)
