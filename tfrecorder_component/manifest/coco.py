"""COCO object detection JSON: `images`, `annotations` and `categories` of one data set.

Yields one row per image with the boxes of its annotations, in pixels (`bbox` is [x, y,
width, height]), and an error row for each image or annotation that cannot be read.
Image file names resolve against `image_root`, by default the JSON file's folder. Each
row carries its image's `id` (`ManifestRow.image_id`: the record's `image/source_id`, as
Model Garden's and the Object Detection API's COCO converters write it); the first row
also carries the file's categories (`ManifestRow.declared_classes`), so that a category
no annotation has keeps its id in the label files.

Asked for (`annotations`), each object also carries its `segmentation` ('masks':
polygons, or run-length encoded for crowds, rasterised when the record is built) and
its `keypoints` ('keypoints': named by its category's `keypoints` list); otherwise both
are dropped as the file is parsed, since they are most of a COCO file's size.

A file of any size is read in bounded memory: as a stream, a value of "images" and
"annotations" at a time (with `json`'s own decoder, so that every value is what
`json.loads` makes of it), its members in any order ("annotations" before "images",
"categories" last). Images and annotations are keyed by image id and sorted, on local
temporary disk past MEMORY_BYTES, then merged to join each image to its annotations;
what is yielded is sorted back into file order the same way (`ExternalSort`).

Length: one format, its streaming join of images to annotations and the checks of every
annotation field (masks, keypoints, areas) that COCO defines.
"""
from __future__ import annotations

import dataclasses
import json
import math
import shutil
import struct
import tempfile
from array import array
from typing import (AbstractSet, Any, Dict, Iterator, List, Mapping, Optional, Tuple,
                    Union)

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest import json_stream
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.features import FLOAT32_MAX, as_number
from tfrecorder_component.manifest.rows import (InstanceMask, ManifestRow, merge_image_rows,
                                                ObjectBox, ParsedItem, resolve_uri, short)
from tfrecorder_component.io.sort import ExternalSort, SortBudget, unpacked_value

# What one file's parse holds in memory, whatever the file's size: the images, the
# annotations and the rows it has yet to yield are kept as packed entries until they
# take MEMORY_BYTES, then written as sorted runs to a temporary folder on local disk and
# merged back a block of each at a time (`io.sort`).
MEMORY_BYTES = 16 * 2**20


def parse(path: str, text: Any, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None,
          annotations: AbstractSet[str] = frozenset()) -> Iterator[ParsedItem]:
  """The rows of a COCO JSON file, in file order: first the images that fail (in
  "images" order), then the annotations of no image (in "annotations" order), then each
  image with its annotations' boxes (in "images" order), preceded by its annotations
  that fail.

  Args:
    path: the COCO JSON file's path: named in errors, read from when `text` is not a
      str, and the folder image file names resolve against when `image_root` is None.
    text: the file's text, or (a streamed file) anything else: the file at `path` is
      then read as it is parsed, never held whole.
    image_root: the folder (local path or URI) image file names resolve against; None:
      the JSON file's folder.
    feature_types: ignored: COCO has no extra columns.
    annotations: what to read beyond boxes: 'masks' (each object's `segmentation`),
      'keypoints' (its `keypoints`, named by its category); empty: both are dropped as
      the file is read.
  """
  del feature_types  # COCO has no extra columns
  folder = tempfile.mkdtemp(prefix='tfrecorder-coco-')
  try:
    budget = SortBudget(MEMORY_BYTES)
    failed = ExternalSort(folder, budget)  # failed images and annotations of no image
    sections = _read(path, text, annotations, image_root, folder, budget, failed)
    categories = sections.get('categories') or []
    read = _Read(_categories(path, categories), 'masks' in annotations,
                 _keypoint_names(path, categories, annotations))
    joined = ExternalSort(folder, budget)  # images and their annotations, in "images" order
    _join(path, sections['images'], sections.get('annotations'), read, joined, failed)
    for key in ('images', 'annotations'):  # joined: their runs are no longer needed
      if sections.get(key):
        sections[key].discard()
    budget.spill()
    for _, data in failed.entries():
      yield _unpacked(unpacked_value(data))
    yield from _image_rows(path, joined, read, _declared(read.categories))
  finally:
    shutil.rmtree(folder, ignore_errors=True)


def _read(path: str, text: Any, annotations: AbstractSet[str], image_root: Optional[str],
          folder: str, budget: 'SortBudget', failed: 'ExternalSort') -> Dict[str, Any]:
  """Reads the file through once: its "images" and "annotations" lists into sorters of
  entries keyed by image id (so that a merge joins them; failed images into `failed`),
  its "categories" as a list. Raises ManifestError where the file is not JSON or not of
  a COCO file's shape, as `json.loads` and the checks after it did."""
  unread = tuple(key for key, kind in _UNREAD.items() if kind not in annotations)
  read = tuple(key for key, kind in _UNREAD.items() if kind in annotations)
  decoder = json.JSONDecoder(object_hook=lambda obj: _drop(obj, unread, read))
  sections: Dict[str, Any] = {}
  try:
    with json_stream.Text.open(path, text) as stream:
      for key in json_stream.members(stream, decoder):
        if key not in _SECTIONS:
          json_stream.skip(stream, decoder)
          continue
        if isinstance(sections.get(key), ExternalSort):  # a key given twice: the last counts
          sections[key].discard()
          if key == 'images':
            failed.discard()
        if stream.next() != '[':
          sections[key] = stream.value(decoder)
        elif key == 'categories':
          sections[key] = list(json_stream.items(stream, decoder))
        elif key == 'images':
          sections[key] = sorter = ExternalSort(folder, budget)
          for number, image in enumerate(json_stream.items(stream, decoder)):
            row = _image_row(path, number + 1, image, image_root)
            if isinstance(row, RowError):
              failed.add(_failed_key(0, number), _packed(row))
            else:
              sorter.add(_join_key(_id_key(image.get('id')), _IMAGE, number),
                         (_packed(row), repr(image.get('id'))))
        else:
          sections[key] = sorter = ExternalSort(folder, budget)
          for index, annotation in enumerate(json_stream.items(stream, decoder)):
            found = (annotation.members if isinstance(annotation, json_stream.TooDeep)
                     else annotation)
            image_id = (_id_key(found.get('image_id')) if isinstance(found, dict)
                        else _NO_IMAGE)
            sorter.add(_join_key(image_id, _ANNOTATION, index), annotation)
  except json_stream.NotAnObject:
    raise ManifestError(f'{path}: a COCO JSON file is an object with an "images" list'
                        ) from None
  except (ValueError, RecursionError) as e:
    raise ManifestError(f'{path}: not a valid COCO JSON file: {e}') from e
  if not isinstance(sections.get('images'), ExternalSort):
    raise ManifestError(f'{path}: a COCO JSON file is an object with an "images" list')
  for key in ('annotations', 'categories'):
    value = sections.get(key)
    if not isinstance(value or [], (list, ExternalSort)):
      raise ManifestError(f'{path}: "{key}" must be a list')
    if not isinstance(value, (list, ExternalSort)):
      sections[key] = None  # null, false, 0, "" or {}: none
  budget.spill()  # on disk, all of it: the memory is the join's
  return sections


_SECTIONS = ('images', 'annotations', 'categories')


def _join(path: str, images: 'ExternalSort', annotations: Optional['ExternalSort'], read: '_Read',
          joined: 'ExternalSort', failed: 'ExternalSort') -> None:
  """Merges the images and the annotations, both sorted by image id: each image (the
  first of its id) and its annotations go to `joined`, keyed by the image's place in
  "images"; the other images of an id, and annotations of no image, fail."""
  group, image = None, None
  for key, data in ExternalSort.merged(images, *([annotations] if annotations else [])):
    this, kind, number = key[:-9], key[-9], int.from_bytes(key[-8:], 'big')
    if this != group:
      group, image = this, None
    if kind == _IMAGE:
      if image is None:
        image = number
        joined.add_packed(_image_key(number), data)
        continue
      (packed, shown_id), first = unpacked_value(data), image
      failed.add(_failed_key(0, number), _packed(RowError(
          'bad_row', f'image id {shown_id} appears twice in "images" (first at '
          f'images[{first}]); give each image its own id', source=path, row=number + 1,
          uri=_unpacked(packed).image_uri)))
    elif image is None:  # an annotation of no image, or not an object
      failed.add(_failed_key(1, number), _packed(
          _annotation_row(path, number, unpacked_value(data), None, read)))
    else:
      joined.add_packed(_image_key(image, number), data)


def _image_rows(path: str, joined: 'ExternalSort', read: '_Read',
                declared: Tuple[Tuple[str, int], ...]) -> Iterator[ParsedItem]:
  """Each image with the boxes of its annotations, in "images" order, each preceded by
  its annotations that fail; the first carries the file's `declared` classes."""
  parts: List[ManifestRow] = []
  for key, data in joined.entries():
    if key[8] == _IMAGE:
      if parts:
        yield merge_image_rows(parts)
      parts = [_unpacked(unpacked_value(data)[0])]
      if declared:
        parts[0] = dataclasses.replace(parts[0], declared_classes=declared)
        declared = ()
      continue
    item = _annotation_row(path, int.from_bytes(key[9:], 'big'), unpacked_value(data),
                           parts[0], read)
    if isinstance(item, RowError):
      yield item
    else:
      parts.append(item)
  if parts:
    yield merge_image_rows(parts)


# Sort keys, compared as bytes. Joining: an image id (`_id_key`), then _IMAGE or
# _ANNOTATION, then the place in "images" or "annotations" (a failed image, or an
# annotation that is not an object, has the id _NO_IMAGE). Joined: the image's place in
# "images", then _IMAGE, or _ANNOTATION and the annotation's place. Failed: 0 and the
# image's place, or 1 and the annotation's.
_IMAGE, _ANNOTATION = 0, 1
_LENGTH = struct.Struct('>I')
_NO_IMAGE = _LENGTH.pack(0)


def _id_key(value: object) -> bytes:
  """An image id as bytes equal exactly where the ids are one (`_key`), led by their
  length so that the entries of one id sort together."""
  key = _key(value)
  kind = type(key)
  if kind is int:
    data = b'i%d' % key
  elif kind is str:
    data = b's' + key.encode('utf-8', 'surrogatepass')
  elif kind is float:
    data = b'f' + repr(key).encode()
  else:
    data = b'o' + repr(key).encode('utf-8', 'surrogatepass')
  return _LENGTH.pack(len(data)) + data


def _join_key(image_id: bytes, kind: int, number: int) -> bytes:
  return image_id + bytes((kind,)) + number.to_bytes(8, 'big')


def _image_key(image: int, annotation: Optional[int] = None) -> bytes:
  if annotation is None:
    return image.to_bytes(8, 'big') + bytes((_IMAGE,)) + bytes(8)
  return image.to_bytes(8, 'big') + bytes((_ANNOTATION,)) + annotation.to_bytes(8, 'big')


def _failed_key(part: int, number: int) -> bytes:
  return bytes((part,)) + number.to_bytes(8, 'big')


def _packed(item: ParsedItem) -> Tuple[str, Any]:
  """A row or a RowError as plain values (a RowError does not pickle)."""
  if isinstance(item, RowError):
    return 'error', (item.reason, item.message, item.source, item.row, item.uri,
                     item.annotation)
  return 'row', item


def _unpacked(packed: Tuple[str, Any]) -> ParsedItem:
  kind, value = packed
  if kind == 'error':
    reason, message, source, row, uri, annotation = value
    return RowError(reason, message, source=source, row=row, uri=uri, annotation=annotation)
  return value


def _drop(obj: dict, unread: Tuple[str, ...], read: Tuple[str, ...]) -> dict:
  """Drops what no record takes, as each object is parsed: polygons and keypoints are
  most of a parsed COCO file (with the per-image join, the worker reading a 941 MB file
  peaked at 2.5 GB instead of 8.2 GB; `python -m benchmarks.memory`). Those that are
  read are packed as they are parsed: numbers in arrays of doubles (8 bytes a number,
  where a list of floats takes 32)."""
  for key in unread:
    obj.pop(key, None)
  for key in read:
    value = obj.get(key)
    if key == 'segmentation' and isinstance(value, list) and value and all(
        _all_numbers(part) for part in value):
      obj[key] = tuple(array('d', part) for part in value)
    elif key == 'keypoints' and _all_numbers(value):
      obj[key] = array('d', value)
  return obj


def _all_numbers(values: object) -> bool:
  return isinstance(values, list) and bool(values) and all(
      type(v) in (int, float) for v in values)  # pylint: disable=unidiomatic-typecheck


_UNREAD = {'segmentation': 'masks', 'keypoints': 'keypoints'}  # field: what reads it


class _Read:
  """What annotations become: the category names, whether masks are read, and the
  keypoint names of each category that has them (None: keypoints are not read)."""

  def __init__(self, categories: Dict[object, str], masks: bool,
               keypoints: Optional[Dict[object, Tuple[str, ...]]]):
    self.categories = categories
    self.masks = masks
    self.keypoints = keypoints
    self.width = max((len(n) for n in (keypoints or {}).values()), default=0)


def _key(value: object) -> object:
  """Ids compare by value: 3 and 3.0 are one id, True is not 1."""
  if isinstance(value, bool):
    return ('bool', value)
  if isinstance(value, float) and value.is_integer():
    return int(value)
  return value if isinstance(value, (int, float, str)) else ('other', repr(value))


def _class_id(category_id: object) -> Optional[int]:
  """A category id the records can keep as their class id: a whole number, 0 or more."""
  key = _key(category_id)
  return key if isinstance(key, int) and not isinstance(key, bool) and key >= 0 else None


def _categories(path: str, categories: List[object]) -> Dict[object, str]:
  names: Dict[object, str] = {}
  for index, category in enumerate(categories):
    name = category.get('name') if isinstance(category, dict) else None
    if not isinstance(name, str) or not name.strip() or 'id' not in category:
      raise ManifestError(f'{path}: categories[{index}] needs an "id" and a non-empty string '
                          f'"name", got {category!r}')
    key = _key(category['id'])
    if names.get(key, name.strip()) != name.strip():
      raise ManifestError(f'{path}: category id {category["id"]!r} is named both '
                          f'{names[key]!r} and {name.strip()!r}')
    names[key] = name.strip()
  return names


def _declared(categories: Dict[object, str]) -> Tuple[Tuple[str, int], ...]:
  """(name, id) of each category whose id a record can keep (`_class_id`), sorted by id:
  the classes of the file, annotated or not. A name given several ids is left out (its
  annotations' ids decide, as before)."""
  named: Dict[str, List[int]] = {}
  for key, name in categories.items():
    class_id = _class_id(key)
    if class_id is not None:
      named.setdefault(name, []).append(class_id)
  return tuple(sorted(((name, ids[0]) for name, ids in named.items() if len(ids) == 1),
                      key=lambda pair: (pair[1], pair[0])))


_INT64_MAX = 2**63 - 1


def _image_id(value: object) -> Optional[int]:
  """An image id the record can write as `image/source_id` (a whole number int64 holds,
  as Model Garden's `str(image['id'])` reads back); None for any other."""
  key = _key(value)
  if isinstance(key, int) and not isinstance(key, bool) and -_INT64_MAX - 1 <= key <= _INT64_MAX:
    return key
  return None


def _keypoint_names(path: str, categories: List[object], annotations: AbstractSet[str]
                    ) -> Optional[Dict[object, Tuple[str, ...]]]:
  """{category id: its keypoint names} when keypoints are read, else None."""
  if 'keypoints' not in annotations:
    return None
  names: Dict[object, Tuple[str, ...]] = {}
  for index, category in enumerate(categories):
    listed = category.get('keypoints') or []
    if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
      raise ManifestError(f'{path}: categories[{index}] "keypoints" must be a list of '
                          f'keypoint names, got {listed!r}')
    if listed:
      names[_key(category['id'])] = tuple(listed)
  if not names:
    raise ManifestError(f'{path}: include_keypoints asked for, but no category lists '
                        '"keypoints" (the names of its keypoints, as COCO\'s person '
                        'category does)')
  return names


def _image_row(path: str, number: int, image: object,
               image_root: Optional[str]) -> ParsedItem:
  file_name = image.get('file_name') if isinstance(image, dict) else None
  if not isinstance(file_name, str) or not file_name.strip():
    return RowError('bad_row', f'images[{number - 1}] needs a non-empty string "file_name"',
                    source=path, row=number)
  if image.get('id') is None:
    return RowError('bad_row', f'images[{number - 1}] has no "id"', source=path, row=number,
                    uri=file_name.strip())
  uri = file_name.strip()
  return ManifestRow(source=path, row=number, image_uri=uri,
                     resolved_uri=resolve_uri(uri, path, image_root), objects=(),
                     image_id=_image_id(image.get('id')))


def _annotation_row(path: str, index: int, annotation: object,
                    image: Optional[ManifestRow], read: _Read) -> ParsedItem:
  if isinstance(annotation, json_stream.TooDeep) and image is not None:
    name = f'annotation id {annotation.members.get("id", "?")!r} (annotations[{index}])'
    return RowError('bad_row', f'{name} nests arrays or objects {annotation.depth:,} levels '
                    'deep, more than a JSON reader decodes; COCO nests them at most 3 levels '
                    '(a polygon list); fix or drop the annotation', source=path, row=image.row,
                    uri=image.image_uri)
  if not isinstance(annotation, dict):
    return RowError('bad_row', f'annotations[{index}] must be an object', source=path,
                    annotation=index)
  name = f'annotation id {annotation.get("id", "?")!r} (annotations[{index}])'
  if image is None:
    return RowError('bad_row', f'{name}: unknown image_id {annotation.get("image_id")!r}; '
                    'it must be the id of an entry of "images"', source=path,
                    annotation=index)
  where = {'source': path, 'row': image.row, 'uri': image.image_uri}
  label = read.categories.get(_key(annotation.get('category_id')))
  if label is None:
    return RowError('bad_row', f'{name}: unknown category_id '
                    f'{annotation.get("category_id")!r}; it must be the id of an entry of '
                    '"categories"', **where)
  bbox = _numbers(annotation.get('bbox'))
  if bbox is None or len(bbox) != 4:
    return RowError('bad_row', f'{name}: "bbox" must be 4 numbers [x, y, width, height] in '
                    f'pixels, got {annotation.get("bbox")!r}', **where)
  area, crowd, invalid = _area_and_crowd(annotation)
  x, y, width, height = bbox
  mask = keypoints = names = None
  if read.masks:
    mask = _instance_mask(annotation.get('segmentation'))
    if isinstance(mask, str):
      return RowError('bad_row', f'{name}: {mask}', **where)
  if read.keypoints is not None:
    names = read.keypoints.get(_key(annotation.get('category_id')), ())
    keypoints = _keypoints(annotation.get('keypoints'), len(names))
    if isinstance(keypoints, str):
      return RowError('bad_row', f'{name}: {keypoints}', **where)
    pad = read.width - len(names)
    keypoints, names = keypoints + ((0.0, 0.0, 0),) * pad, names + ('',) * pad
  box = ObjectBox(label, x, y, x + width, y + height, normalized=False, is_crowd=crowd,
                  area=area, mask=mask, keypoints=keypoints or (), keypoint_names=names or (),
                  invalid=invalid, source_id=_class_id(annotation.get('category_id')))
  return ManifestRow(source=path, row=image.row, image_uri=image.image_uri,
                     resolved_uri=image.resolved_uri, labels=(label,), objects=(box,))


def _area_and_crowd(annotation: dict) -> Tuple[Optional[float], bool, str]:
  """(area, is_crowd, what is invalid: '' or 'bad_area' / 'bad_iscrowd') of an
  annotation. An area is a finite number of pixels, 0 or more, that float32 holds
  (absent: the box's own); iscrowd is 0 or 1 (or false / true; absent: 0). Nothing
  else is guessed at: the object is dropped, with the reason in box_issues."""
  area = annotation.get('area')
  if area is not None:
    area = as_number(area) if not isinstance(area, str) else None
    if area is None or not math.isfinite(area) or not 0 <= area <= FLOAT32_MAX:
      return None, False, 'bad_area'
  crowd = annotation.get('iscrowd', 0)
  if crowd is None:
    crowd = 0
  if crowd not in (0, 1) or isinstance(crowd, str):  # True == 1, False == 0
    return area, False, 'bad_iscrowd'
  return area, bool(crowd), ''


def _instance_mask(segmentation: object) -> Union[InstanceMask, str]:
  """An annotation's `segmentation` as an InstanceMask, or what is wrong with it."""
  if isinstance(segmentation, (list, tuple)) and segmentation:
    parts = [_numbers(part) for part in segmentation]
    if all(p is not None and len(p) >= 6 and len(p) % 2 == 0 for p in parts):
      return InstanceMask(polygons=tuple(parts))
    return ('"segmentation" polygons must each be a list of at least 3 points, x1, y1, '
            f'x2, y2, ... in pixels; got {short(_as_json(segmentation))}')
  if isinstance(segmentation, dict):
    size, counts = _numbers(segmentation.get('size')), segmentation.get('counts')
    if size is None or len(size) != 2 or not all(v.is_integer() and v > 0 for v in size):
      return ('a run-length "segmentation" needs "size": [height, width], got '
              f'{short(segmentation.get("size"))}')
    height, width = int(size[0]), int(size[1])
    if isinstance(counts, str) and counts:
      return InstanceMask(rle_size=(height, width), rle_counts=counts)
    runs = _numbers(counts)
    if runs is not None and all(v.is_integer() and v >= 0 for v in runs):
      if sum(runs) != height * width:
        return (f'the run lengths of "segmentation" add up to {int(sum(runs))}, not '
                f'height x width = {height * width}')
      return InstanceMask(rle_size=(height, width), rle_counts=tuple(int(v) for v in runs))
    return ('a run-length "segmentation" needs "counts": a list of run lengths or '
            f'COCO\'s compressed string, got {short(counts)}')
  if segmentation is None:
    return ('no "segmentation"; include_masks writes a mask for every object, so every '
            'annotation needs one')
  return f'"segmentation" must be polygons or a run-length encoding, got {short(segmentation)}'


def _keypoints(values: object, count: int
               ) -> Union[Tuple[Tuple[float, float, int], ...], str]:
  """An annotation's `keypoints` ([x, y, visibility] for each of the category's `count`
  names, in pixels) as triples; an object without keypoints has them all unlabelled."""
  if values is None or (values == [] and count == 0):
    return ((0.0, 0.0, 0),) * count
  numbers = _numbers(values)
  if numbers is None or len(numbers) != 3 * count:
    return (f'"keypoints" must be {3 * count} numbers (x, y, visibility for each of the '
            f'category\'s {count} keypoints), got {short(_as_json(values))}')
  triples = tuple(zip(numbers[0::3], numbers[1::3], numbers[2::3]))
  if not all(v in (0, 1, 2) for _, _, v in triples):
    return f'keypoint visibility must be 0, 1 or 2, got {short(_as_json(values))}'
  return tuple((x, y, int(v)) for x, y, v in triples)


def _as_json(value: object) -> object:
  """A packed value (`_drop`) as the file wrote it, for messages."""
  if isinstance(value, array):
    return [int(v) if v.is_integer() else v for v in value]
  if isinstance(value, tuple):
    return [_as_json(v) for v in value]
  return value


def _numbers(values: object) -> Optional[Tuple[float, ...]]:
  """`values` as floats (numbers or numeric strings), or None if any is not a number."""
  if isinstance(values, array):  # packed as parsed: numbers already
    return tuple(values)
  if not isinstance(values, list):
    return None
  numbers = []
  for value in values:
    number = as_number(value)
    if number is None:
      return None
    numbers.append(number)
  return tuple(numbers)


# A COCO file is known by its .json extension alone: JSON text without one is Vertex JSONL.
FORMAT = ManifestFormat(
    'coco_json', ('.json',), sniff=lambda head: False, parse=parse, one_row_an_image=True,
    annotations=('masks', 'keypoints'), streamed=True, rows=b'"file_name"',
    title='COCO JSON',
    sample=FormatSample(
        'm.json',
        '{"images": [{"id": 1, "file_name": "a.jpg"}], "categories": []}'),
    # After the other JSON formats: the .json file none of them takes.
    sniff_rank=60)
