"""COCO object detection JSON: `images`, `annotations` and `categories` of one data set.

Yields one row per image with the boxes of its annotations, in pixels (`bbox` is [x, y,
width, height]), and an error row for each image or annotation that cannot be read.
Image file names resolve against `image_root`, by default the JSON file's folder.
"""
from __future__ import annotations

import json
from typing import Dict, Iterator, List, Mapping, Optional, Tuple

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.format_spec import ManifestFormat
from tfrecorder_component.manifest.features import as_number
from tfrecorder_component.manifest.rows import (ManifestRow, ObjectBox, ParsedItem,
                                                merge_image_rows, resolve_uri)


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None) -> Iterator[ParsedItem]:
  del feature_types  # COCO has no extra columns
  data = _load(path, text)
  categories = _categories(path, data.get('categories') or [])
  images: Dict[object, ManifestRow] = {}
  for number, image in enumerate(data['images'], start=1):
    row = _image_row(path, number, image, image_root)
    if isinstance(row, ManifestRow):
      key = _key(image.get('id'))
      if key not in images:
        images[key] = row
        continue
      row = RowError('bad_row', f'image id {image.get("id")!r} appears twice in "images" '
                     f'(first at images[{images[key].row - 1}]); give each image its own id',
                     source=path, row=number, uri=row.image_uri)
    yield row
  # Each image's annotations are merged here, so one row an image leaves the parser
  # (not one per annotation, which the runner would hold until it grouped them).
  annotations = data.get('annotations') or []
  by_image: Dict[object, List[int]] = {}
  for index, annotation in enumerate(annotations):
    key = _key(annotation.get('image_id')) if isinstance(annotation, dict) else None
    if key in images:
      by_image.setdefault(key, []).append(index)
    else:  # not an object, or an unknown image: its error
      yield _annotation_row(path, index, annotation, images, categories)
  for key, image in images.items():
    parts = [image]
    for index in by_image.pop(key, ()):
      item = _annotation_row(path, index, annotations[index], images, categories)
      if isinstance(item, RowError):
        yield item
      else:
        parts.append(item)
    yield merge_image_rows(parts)


def _load(path: str, text: str) -> dict:
  try:
    data = json.loads(text, object_hook=_drop_unread)
  except (ValueError, RecursionError) as e:
    raise ManifestError(f'{path}: not a valid COCO JSON file: {e}') from e
  if not isinstance(data, dict) or not isinstance(data.get('images'), list):
    raise ManifestError(f'{path}: a COCO JSON file is an object with an "images" list')
  for key in ('annotations', 'categories'):
    if not isinstance(data.get(key) or [], list):
      raise ManifestError(f'{path}: "{key}" must be a list')
  return data


def _drop_unread(obj: dict) -> dict:
  """Drops what no record takes, as each object is parsed: polygons and keypoints are
  most of a parsed COCO file (with the per-image join, the worker reading a 941 MB file
  peaked at 2.5 GB instead of 8.2 GB; `python -m benchmarks.memory`)."""
  for key in _UNREAD:
    obj.pop(key, None)
  return obj


_UNREAD = ('segmentation', 'keypoints')


def _key(value: object) -> object:
  """Ids compare by value: 3 and 3.0 are one id, True is not 1."""
  if isinstance(value, bool):
    return ('bool', value)
  if isinstance(value, float) and value.is_integer():
    return int(value)
  return value if isinstance(value, (int, float, str)) else ('other', repr(value))


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
                     resolved_uri=resolve_uri(uri, path, image_root), objects=())


def _annotation_row(path: str, index: int, annotation: object,
                    images: Dict[object, ManifestRow],
                    categories: Dict[object, str]) -> ParsedItem:
  if not isinstance(annotation, dict):
    return RowError('bad_row', f'annotations[{index}] must be an object', source=path)
  name = f'annotation id {annotation.get("id", "?")!r} (annotations[{index}])'
  image = images.get(_key(annotation.get('image_id')))
  if image is None:
    return RowError('bad_row', f'{name}: unknown image_id {annotation.get("image_id")!r}; '
                    'it must be the id of an entry of "images"', source=path)
  where = {'source': path, 'row': image.row, 'uri': image.image_uri}
  label = categories.get(_key(annotation.get('category_id')))
  if label is None:
    return RowError('bad_row', f'{name}: unknown category_id '
                    f'{annotation.get("category_id")!r}; it must be the id of an entry of '
                    '"categories"', **where)
  bbox = _numbers(annotation.get('bbox'))
  if bbox is None or len(bbox) != 4:
    return RowError('bad_row', f'{name}: "bbox" must be 4 numbers [x, y, width, height] in '
                    f'pixels, got {annotation.get("bbox")!r}', **where)
  area = _numbers([annotation.get('area')])
  crowd = _numbers([annotation.get('iscrowd')])
  x, y, width, height = bbox
  box = ObjectBox(label, x, y, x + width, y + height, normalized=False,
                  is_crowd=bool(crowd and crowd[0]), area=area[0] if area else None)
  return ManifestRow(source=path, row=image.row, image_uri=image.image_uri,
                     resolved_uri=image.resolved_uri, labels=(label,), objects=(box,))


def _numbers(values: object) -> Optional[Tuple[float, ...]]:
  """`values` as floats (numbers or numeric strings), or None if any is not a number."""
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
FORMAT = ManifestFormat('coco_json', ('.json',), sniff=lambda head: False, parse=parse,
                        one_row_an_image=True)
