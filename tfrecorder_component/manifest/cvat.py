"""CVAT for images 1.1 XML: `<annotations>` with one `<image>` element per image.

The file CVAT exports (`annotations.xml`): `<meta>` declares the task's or project's
labels (`<labels><label><name>`), in the order that gives their class ids; then each
`<image id name width height [subset]>` holds its shapes, in pixels. The file is read
as it is parsed (`ET.iterparse`, each image cleared once read), so a file of 100,000
images takes little memory. One row an `<image>`, its row number the image's position
in the file (1-based).

Images: `name` resolves against `image_root` when given. Otherwise, as Datumaro's CVAT
importer finds them: `<xml folder>/images/<name>` (CVAT's task export) or else
`<xml folder>/images/<subset>/<name>` (its project export), whichever file exists,
when an `images` folder lies beside the XML file; else `<xml folder>/<name>` (also
when neither exists: a missing image is reported there). On gs:// or s3:// the
`images` folder is listed once, not probed image by image.

Splits: the image's `subset` (Train, Validation, Test, any case; `default` or none:
hash splitting); any other subset fails the image (`bad_row`).

What each element of an image becomes (labels must be declared in `<meta>`, unless it
declares none):

- `<box xtl ytl xbr ybr [rotation]>`: its box; rotated (degrees, clockwise about its
  centre, as CVAT draws it): the axis-aligned box enclosing it, the four rotated
  corners kept (`image/object/corner/*`).
- `<polygon points="x,y;x,y;...">` (3 points or more): the box enclosing the points.
- `<ellipse cx cy rx ry [rotation]>`: the box enclosing the (rotated) ellipse.
- `<cuboid xtl1 ... ybr2>`: the box enclosing its eight corners.
- `<mask rle left top width height>`: the box of its `width` x `height` pixels.
- `<polyline>`, and `<points>` not read as keypoints: no area, so no box; the object is
  kept for the record step to drop and list in box_issues ('polyline_shape',
  'points_shape'), so nothing is lost silently and the image keeps its other objects.
- `<tag label>` (a label of the whole image): the feature `tag/<label>` = 1, its
  attributes `tag/<label>/<name>` (strings).
- `<skeleton>` and any other element: not read; the image fails, naming it.

Every shape's `occluded` becomes the attribute `image/object/occluded` (0 or 1), its
`group_id` `image/object/group_id`, and its `<attribute name="n">value</attribute>`s
`image/object/attribute/<n>` (strings, as CVAT writes them).

With 'masks': a polygon is its mask, a box or cuboid the polygon of its (rotated)
corners or of their convex hull, an ellipse a 64-sided polygon, a `<mask>` its bitmap
(CVAT's run-length encoding: row-major runs over its box, zeros first) placed in an
image of the `<image>`'s `width` x `height`.
With 'keypoints': the `<points>` of a `group_id` that holds exactly one other object
become that object's keypoints (visibility 2, or 1 when occluded), each named by its
`<points>` label (`label/1`, `label/2`, ... for a shape of several points), in the
order of the declared labels; every object is padded with unlabelled (0, 0, 0) points,
named '', to the most points a group has in the file. Other `<points>` are dropped
('points_without_object').

A shape that does not parse (a coordinate that is not a number, too few points), an
undeclared label, an image without a `name` or an element that is not read fail their
image (`bad_row`, naming the image element, the shape and the reason). A file that is
not XML or whose root is not `<annotations>`, and CVAT for video (`<track>`
elements), are a ManifestError.

Length: one format's two XML layouts (images and video tracks) and their shapes (boxes,
polygons, masks, points).
"""
from __future__ import annotations

import io
import math
import posixpath
import re
import xml.etree.ElementTree as ET
from typing import (AbstractSet, Dict, Iterator, List, Mapping, Optional, Sequence, Set,
                    Tuple, Union)

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.features import parse_number
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.pascal_voc import XML_ERRORS, xml_bytes
from tfrecorder_component.manifest.shapes import (bitmap_mask, bounds, convex_hull, ellipse_bounds,
                                                  ellipse_polygon, rotated_corners)
from tfrecorder_component.manifest.confine import Confinement
from tfrecorder_component.manifest.rows import (InstanceMask, ManifestRow, ObjectBox, ParsedItem,
                                                resolve_uri, short, split_for_ml_use)
from tfrecorder_component.io import files

_SHAPES = ('box', 'polygon', 'polyline', 'points', 'ellipse', 'cuboid', 'mask')
_CUBOID = tuple(f'{c}{k}{i}' for i in (1, 2) for k in ('tl', 'bl', 'tr', 'br')
                for c in ('x', 'y'))
# Pillow's decompression-bomb limit, as images.probe.DEFAULT_MAX_PIXELS: the largest mask
# bitmap decoded.
_MAX_MASK_PIXELS = 178_956_970
_SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*://')
Attributes = Tuple[Tuple[str, Union[int, float, str]], ...]


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None,
          annotations: AbstractSet[str] = frozenset(),
          confine: Optional[Confinement] = None) -> Iterator[ParsedItem]:
  """The `<image>` elements of a CVAT for images XML file (see the module), one
  ManifestRow an image or a RowError, in file order.

  Args:
    path: the XML file's path: named in errors, and the folder images are looked for
      in (itself, or its `images` folder) when `image_root` is None.
    text: the file's whole text (its bytes, `xml_bytes`, are parsed incrementally).
    image_root: the folder (local path or URI) every image `name` resolves against;
      None: found beside the XML file, as Datumaro does (see the module).
    feature_types: ignored: CVAT has no extra columns.
    annotations: what to read beyond boxes: 'masks' (each shape's outline or bitmap),
      'keypoints' (the `<points>` of a group_id, as its object's keypoints; the file is
      then read twice); empty: neither.
    confine: the run's roots: a place an image may be that leads out of them is not
      looked at; None: none.
  """
  del feature_types  # CVAT has no extra columns
  width = _keypoint_width(path, text) if 'keypoints' in annotations else 0
  reader = _Reader(path, _Images(path, image_root, confine), 'masks' in annotations,
                   'keypoints' in annotations, width)
  root = None
  depth = 0
  for event, element in _events(path, text):
    if event == 'start':
      depth += 1
      if root is None:
        root = element
        if element.tag != 'annotations':
          raise ManifestError(f'{path}: a CVAT XML file\'s root element is <annotations>, '
                              f'not <{element.tag}>')
      elif depth == 2 and element.tag == 'track':
        raise ManifestError(f'{path}: <track> elements are CVAT for video 1.1, which is '
                            'not read; export the task as "CVAT for images 1.1"')
      continue
    depth -= 1
    if depth != 1:
      continue
    if element.tag == 'meta':
      reader.read_meta(element)
    elif element.tag == 'image':
      yield reader.image(element)
    root.clear()  # what is read is let go: memory stays bounded


def _events(path: str, text: str) -> Iterator[Tuple[str, ET.Element]]:
  """ET.iterparse's events, a syntax error as a ManifestError."""
  events = iter(ET.iterparse(io.BytesIO(xml_bytes(text)), events=('start', 'end')))
  while True:
    try:
      yield next(events)
    except StopIteration:
      return
    except XML_ERRORS as e:
      raise ManifestError(f'{path}: not a valid CVAT XML file: {e}') from None


def _keypoint_width(path: str, text: str) -> int:
  """The most points the `<points>` of one group_id of one image hold, in the file: the
  number of keypoints every object is padded to."""
  width = 0
  groups: Dict[int, int] = {}
  root = None
  for event, element in _events(path, text):
    if event == 'start':
      root = element if root is None else root
      continue
    group = _group(element) if element.tag == 'points' else None
    if isinstance(group, int):
      count = len((element.get('points') or '').split(';'))
      groups[group] = groups.get(group, 0) + count
    elif element.tag == 'image':
      width = max([width, *groups.values()])
      groups.clear()
      root.clear()
  return width


class _Images:
  """Where an `<image>`'s file is read from (see the module docstring)."""

  def __init__(self, path: str, image_root: Optional[str],
               confine: Optional[Confinement] = None):
    self._path = path
    self._root = image_root
    self._confine = confine  # places outside its roots are not looked at
    self._folder: Optional[str] = None  # <xml folder>/images
    self._found = False                 # whether that folder exists
    self._listing: Optional[Set[str]] = None  # its files, on remote storage

  def resolve(self, name: str, subset: str) -> str:
    if self._root or _SCHEME.match(name) or name.startswith('/'):
      return resolve_uri(name, self._path, self._root)
    if self._folder is None:
      self._folder = resolve_uri('images', self._path)
      if self._confine is not None and self._confine.resolve(self._folder) is None:
        self._found = False
      elif files.is_local(self._folder):
        self._found = files.exists(self._folder)
      else:  # an object store has no folders: one listing says what is there
        self._listing = set(files.list_objects(self._folder))
        self._found = bool(self._listing)
    if self._found:
      for candidate in [name] + ([posixpath.join(subset, name)] if subset else []):
        resolved = resolve_uri(candidate, self._path, self._folder)
        if self._confine is not None and self._confine.resolve(resolved) is None:
          continue
        if (posixpath.normpath(candidate) in self._listing if self._listing is not None
            else files.exists(resolved)):
          return resolved
    return resolve_uri(name, self._path)


class _Shape:
  """A shape of an image, read: its object (a box, or one with no area that the
  record step drops), or a `<points>` waiting to become another object's keypoints."""

  def __init__(self, tag: str, number: int, obj: ObjectBox, group: Optional[int],
               points: Tuple[Tuple[float, float], ...] = (), occluded: bool = False):
    self.tag = tag
    self.number = number
    self.obj = obj
    self.group = group
    self.points = points
    self.occluded = occluded


class _Reader:
  """Reads `<meta>` (the labels) and each `<image>` into a row."""

  def __init__(self, path: str, images: _Images, masks: bool, keypoints: bool, width: int):
    self.path = path
    self.images = images
    self.masks = masks
    self.keypoints = keypoints
    self.width = width
    self.labels: Optional[Dict[str, int]] = None  # None: <meta> declares none
    self.count = 0

  def read_meta(self, meta: ET.Element) -> None:
    if self.count:
      raise ManifestError(f'{self.path}: <meta> comes after {self.count} <image> elements; '
                          'it must come first, as CVAT writes it')
    names: Dict[str, int] = {}
    for labels in meta.iter('labels'):
      for label in labels.findall('label'):
        name = (label.findtext('name') or '').strip()
        if name and label.find('parent') is None:  # a skeleton's points are not classes
          names.setdefault(name, len(names))
    self.labels = names or None

  def image(self, element: ET.Element) -> ParsedItem:
    self.count += 1
    name = (element.get('name') or '').strip()
    where = _image_element(element)
    if not name:
      return RowError('bad_row', f'{where} has no "name"; give the image file\'s name',
                      source=self.path, row=self.count)

    def error(message: str) -> RowError:
      return RowError('bad_row', f'{where}, {message}', source=self.path, row=self.count,
                      uri=name)

    subset = element.get('subset')
    try:
      split = None if (subset or '').strip().lower() == 'default' else split_for_ml_use(
          subset or '')
    except KeyError:
      return RowError('bad_row', f'{where}: unknown subset {subset!r}; use Train, '
                      'Validation, Test or default, or give the split another way (split '
                      'patterns)', source=self.path, row=self.count, uri=name)
    shapes: List[_Shape] = []
    features: Dict[str, Union[int, str]] = {}
    counts: Dict[str, int] = {}
    for child in element:
      counts[child.tag] = counts.get(child.tag, 0) + 1
      what = f'<{child.tag}> {counts[child.tag]}'
      if child.tag == 'tag':
        label = self._label(child)
        if not isinstance(label, tuple):
          return error(f'{what}: {label}')
        features[f'tag/{label[0]}'] = 1
        for key, value in _attributes(child):
          features[f'tag/{label[0]}/{key}'] = value
        continue
      shape = self._shape(child, counts[child.tag], element)
      if isinstance(shape, str):
        return error(f'{what}: {shape}')
      shapes.append(shape)
    objects = self._objects(shapes)
    if isinstance(objects, str):
      return error(objects)
    return ManifestRow(source=self.path, row=self.count, image_uri=name,
                       resolved_uri=self.images.resolve(name, (subset or '').strip()),
                       labels=tuple(dict.fromkeys(o.label for o in objects)),
                       objects=objects, split=split, features=tuple(sorted(features.items())))

  def _label(self, element: ET.Element) -> Union[Tuple[str, Optional[int]], str]:
    """(the element's label, its class index) or what is wrong with it."""
    label = (element.get('label') or '').strip()
    if not label:
      return 'it has no "label"'
    if self.labels is None:
      return label, None
    if label not in self.labels:
      return (f'label {label!r} is not declared in <meta> <labels> (declared: '
              f'{_listed(self.labels)}); declare it or fix the label')
    return label, self.labels[label]

  def _shape(self, element: ET.Element, number: int, image: ET.Element) -> Union[_Shape, str]:
    tag = element.tag
    if tag not in _SHAPES:
      if tag == 'skeleton':
        return ('skeletons are not read; export their points grouped with a box (or '
                'remove them)')
      return f'unknown shape <{tag}>; CVAT for images 1.1 has {", ".join(_SHAPES)} and tag'
    label = self._label(element)
    if not isinstance(label, tuple):
      return label
    occluded = element.get('occluded', '0').strip()
    if occluded not in ('0', '1'):
      return f'"occluded" must be 0 or 1, got {occluded!r}'
    group = _group(element)
    if isinstance(group, str):
      return group
    attributes: Attributes = (('occluded', int(occluded)),
                              *((('group_id', group),) if group is not None else ()),
                              *((f'attribute/{k}', v) for k, v in _attributes(element)))
    read = _READERS[tag](self, element, image)
    if isinstance(read, str):
      return read
    box, corners, mask, invalid, points = read
    obj = ObjectBox(label[0], *box, normalized=False, mask=mask if self.masks else None,
                    corners=corners, invalid=invalid, source_id=label[1],
                    attributes=attributes)
    return _Shape(tag, number, obj, group, points, occluded == '1')

  def _objects(self, shapes: List[_Shape]) -> Union[Tuple[ObjectBox, ...], str]:
    """The image's objects: with 'keypoints', its `<points>` given to the object of their
    group, and every object padded to the file's keypoint width."""
    if not self.keypoints:
      return tuple(s.obj for s in shapes)
    members: Dict[int, List[_Shape]] = {}
    for s in shapes:
      if s.tag != 'points' and s.group is not None and not s.obj.invalid:
        members.setdefault(s.group, []).append(s)
    given: Dict[int, List[_Shape]] = {}
    kept: List[_Shape] = []
    for s in shapes:
      if s.tag == 'points':
        owners = members.get(s.group, []) if s.group is not None else []
        if len(owners) == 1:
          given.setdefault(id(owners[0]), []).append(s)
          continue
        s.obj = _replace(s.obj, invalid='points_without_object')
      kept.append(s)
    objects = []
    for s in kept:
      points: List[Tuple[float, float, int]] = []
      names: List[str] = []
      order = sorted(given.get(id(s), ()), key=lambda p: (p.obj.source_id or 0, p.number))
      for p in order:
        for i, (x, y) in enumerate(p.points, start=1):
          points.append((x, y, 1 if p.occluded else 2))
          names.append(p.obj.label if len(p.points) == 1 else f'{p.obj.label}/{i}')
      pad = self.width - len(points)
      objects.append(_replace(s.obj, keypoints=tuple(points) + ((0.0, 0.0, 0),) * pad,
                              keypoint_names=tuple(names) + ('',) * pad))
    return tuple(objects)


Read = Union[Tuple[Tuple[float, float, float, float], Tuple[float, ...],
                   Optional[InstanceMask], str, Tuple[Tuple[float, float], ...]], str]


def _box(reader: _Reader, element: ET.Element, image: ET.Element) -> Read:
  del reader, image
  numbers = _numbers(element, ('xtl', 'ytl', 'xbr', 'ybr'))
  if isinstance(numbers, str):
    return numbers
  rotation = _rotation(element)
  if isinstance(rotation, str):
    return rotation
  x0, y0, x1, y1 = numbers
  if rotation % 360 == 0:
    corners = (x0, y0, x1, y0, x1, y1, x0, y1)
    return (x0, y0, x1, y1), (), InstanceMask(polygons=(corners,)), '', ()
  corners = rotated_corners(x0, y0, x1, y1, rotation)
  return bounds(corners), corners, InstanceMask(polygons=(corners,)), '', ()


def _polygon(reader: _Reader, element: ET.Element, image: ET.Element) -> Read:
  del reader, image
  points = _points(element, 3)
  if isinstance(points, str):
    return points
  flat = tuple(v for p in points for v in p)
  return bounds(flat), (), InstanceMask(polygons=(flat,)), '', ()


def _polyline(reader: _Reader, element: ET.Element, image: ET.Element) -> Read:
  del reader, image
  points = _points(element, 2)
  if isinstance(points, str):
    return points
  return bounds(tuple(v for p in points for v in p)), (), None, 'polyline_shape', ()


def _points_shape(reader: _Reader, element: ET.Element, image: ET.Element) -> Read:
  del image
  points = _points(element, 1)
  if isinstance(points, str):
    return points
  box = bounds(tuple(v for p in points for v in p))
  return box, (), None, '' if reader.keypoints else 'points_shape', points


def _ellipse(reader: _Reader, element: ET.Element, image: ET.Element) -> Read:
  del reader, image
  numbers = _numbers(element, ('cx', 'cy', 'rx', 'ry'))
  if isinstance(numbers, str):
    return numbers
  rotation = _rotation(element)
  if isinstance(rotation, str):
    return rotation
  cx, cy, rx, ry = numbers
  box = ellipse_bounds(cx, cy, abs(rx), abs(ry), rotation)
  polygon = ellipse_polygon(cx, cy, abs(rx), abs(ry), rotation)
  return box, (), InstanceMask(polygons=(polygon,)), '', ()


def _cuboid(reader: _Reader, element: ET.Element, image: ET.Element) -> Read:
  del reader, image
  numbers = _numbers(element, _CUBOID)
  if isinstance(numbers, str):
    return numbers
  hull = convex_hull(tuple(zip(numbers[0::2], numbers[1::2])))
  return bounds(numbers), (), InstanceMask(polygons=(tuple(v for p in hull for v in p),)), '', ()


def _mask(reader: _Reader, element: ET.Element, image: ET.Element) -> Read:
  sizes = []
  for name in ('left', 'top', 'width', 'height'):
    text = (element.get(name) or '').strip()
    if not re.fullmatch(r'\d{1,9}', text) or (name in ('width', 'height') and int(text) < 1):
      return f'"{name}" must be a whole number of pixels, got {element.get(name)!r}'
    sizes.append(int(text))
  left, top, width, height = sizes
  box = (float(left), float(top), float(left + width), float(top + height))
  if not reader.masks:
    return box, (), None, '', ()
  runs = (element.get('rle') or '').split(',')
  if not all(re.fullmatch(r'\d{1,12}', r.strip()) for r in runs):
    return ('"rle" must be run lengths (whole numbers, zeros first) separated by commas, '
            f'got {short(element.get("rle"))}')
  runs = [int(r) for r in runs]
  if width * height > _MAX_MASK_PIXELS:
    return (f'a {width} x {height} <mask> is larger than the {_MAX_MASK_PIXELS:,} pixels an '
            'image may have')
  if sum(runs) != width * height:
    return (f'the run lengths of "rle" add up to {sum(runs)}, not width x height = '
            f'{width * height}')
  size = [(image.get(n) or '').strip() for n in ('height', 'width')]
  if not all(re.fullmatch(r'\d{1,9}', s) and int(s) > 0 for s in size):
    return ('a <mask> is placed in an image of the <image>\'s "width" and "height", which '
            'must be whole numbers of pixels')
  import numpy as np  # pylint: disable=g-import-not-at-top
  values = np.arange(len(runs), dtype=np.uint8) % 2
  bitmap = np.repeat(values, runs).reshape(height, width)
  return box, (), bitmap_mask(bitmap, left, top, int(size[0]), int(size[1])), '', ()


_READERS = {'box': _box, 'polygon': _polygon, 'polyline': _polyline,
            'points': _points_shape, 'ellipse': _ellipse, 'cuboid': _cuboid, 'mask': _mask}


def _replace(obj: ObjectBox, **changes) -> ObjectBox:
  import dataclasses  # pylint: disable=g-import-not-at-top
  return dataclasses.replace(obj, **changes)


def _group(element: ET.Element) -> Union[int, None, str]:
  """A shape's `group_id` (None for none, or 0, as CVAT means it), or what is wrong."""
  text = element.get('group_id')
  if text is None:
    return None
  if not re.fullmatch(r'[+-]?\d{1,18}', text.strip()):
    return f'"group_id" must be a whole number, got {text!r}'
  return int(text) or None


def _image_element(element: ET.Element) -> str:
  shown = ' '.join(f'{k}="{element.get(k)}"' for k in ('id', 'name') if k in element.attrib)
  return f'<image {shown}>' if shown else '<image>'


def _attributes(element: ET.Element) -> Tuple[Tuple[str, str], ...]:
  return tuple(((a.get('name') or '').strip(), (a.text or '').strip())
               for a in element.findall('attribute') if (a.get('name') or '').strip())


def _number(element: ET.Element, name: str, default: Optional[float] = None
            ) -> Union[float, str]:
  text = element.get(name)
  if text is None and default is not None:
    return default
  number = parse_number(text) if text is not None else None
  if number is None:
    return f'"{name}" must be a number of pixels, got {text!r}'
  return number


def _rotation(element: ET.Element) -> Union[float, str]:
  """The `rotation` attribute, in degrees (0 when absent)."""
  text = element.get('rotation')
  number = parse_number(text) if text is not None else 0.0
  if number is None or not math.isfinite(number):
    return f'"rotation" must be a number of degrees, got {text!r}'
  return number


def _numbers(element: ET.Element, names: Sequence[str]) -> Union[Tuple[float, ...], str]:
  numbers = []
  for name in names:
    number = _number(element, name)
    if isinstance(number, str):
      return number
    numbers.append(number)
  return tuple(numbers)


def _points(element: ET.Element, least: int
            ) -> Union[Tuple[Tuple[float, float], ...], str]:
  """The `points` attribute ("x1,y1;x2,y2;...") as pairs, or what is wrong with it."""
  text = element.get('points')
  pairs = []
  for part in (text or '').split(';'):
    xy = [parse_number(v) for v in part.split(',')]
    if len(xy) != 2 or None in xy:
      return f'"points" must be "x1,y1;x2,y2;..." in pixels, got {short(text)}'
    pairs.append((xy[0], xy[1]))
  if len(pairs) < least:
    return (f'a <{element.tag}> needs at least {least} point{"s" * (least > 1)}, got '
            f'{len(pairs)}')
  return tuple(pairs)


def _listed(labels: Mapping[str, int]) -> str:
  names = list(labels)
  return ', '.join(names[:20]) + (f' and {len(names) - 20} more' if len(names) > 20 else '')


_ROOT = re.compile(r'(<\?xml[^>]*\?>\s*)?(<!--.*?-->\s*)*<annotations[\s>]', re.S)


def _sniff(head: str) -> bool:
  return _ROOT.match(head) is not None


FORMAT = ManifestFormat(
    'cvat', ('.xml',), sniff=_sniff, parse=parse, one_row_an_image=True,
    annotations=('masks', 'keypoints'), rows=b'<image ', reads_files=True,
    title='CVAT for images 1.1 XML',
    sample=FormatSample(
        'm.xml',
        '<?xml version="1.0"?>\n<annotations><version>1.1</version><image id="0" '
        'name="a.jpg" width="10" height="10"><box label="cat" xtl="1" ytl="1" xbr="5" '
        'ybr="5" occluded="0"/></image></annotations>'),
    sniff_rank=70)
