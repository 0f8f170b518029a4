"""Apple Create ML (Turi Create) object detection JSON: a list of images with their
annotations.

`[{"image": "a.jpg", "annotations": [{"label": "cat", "coordinates": {"x": 120, "y": 80,
"width": 60, "height": 40}}]}, ...]`: `x` and `y` are the box's CENTRE, `width` and
`height` its size, in pixels of the stored image from its top-left corner (Create ML's
default `MLBoundingBoxUnits.pixel`, `.topLeft` origin, `.center` anchor; what Roboflow's
`_annotations.createml.json`, labelImg and Turi Create write). Apple's own examples
spell the keys `imagefilename` and `annotation`: both spellings are read. Rules:

- One row an entry, its row number its 1-based position in the list; an entry with
  `"annotations": []` is an image without objects.
- A file whose every coordinate lies in [0, 1] is in Create ML's `.normalized` units
  and is read as fractions of the image's size (no pixel box is that small).
- Image file names resolve against `image_root`, by default the JSON file's folder.
- Splits: a file in a folder named train, valid, val, validation, eval or test (any
  case; Roboflow's `train/_annotations.createml.json` ...) gives its rows that split;
  else hash split.
- An entry without a file name or an annotations list, an annotation without a label or
  with coordinates that are not 4 numbers, fails its row (`bad_row`). A box outside the
  image is no parse error: the record step clips or drops it (box_issues).
"""
from __future__ import annotations

import json
from typing import Iterator, List, Mapping, Optional, Tuple, Union

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.features import as_number
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.rows import (ManifestRow, ObjectBox, ParsedItem, resolve_uri,
                                                short, split_of_folder)

_IMAGE_KEYS = ('image', 'imagefilename')
_ANNOTATION_KEYS = ('annotations', 'annotation')
_COORDINATES = ('x', 'y', 'width', 'height')
# An annotation as read: its label and centre x, y, width, height.
_Box = Tuple[str, float, float, float, float]


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None, **unused) -> Iterator[ParsedItem]:
  """The entries of a Create ML JSON file (see the module), one ManifestRow an image or
  a RowError, in list order.

  Args:
    path: the JSON file's path: named in errors, the folder whose name gives the split,
      and the folder image file names resolve against when `image_root` is None.
    text: the file's whole text (parsed at once with `json.loads`).
    image_root: the folder (local path or URI) image file names resolve against; None:
      the JSON file's folder.
    feature_types: ignored: Create ML has no extra fields.
    unused: any other keyword a format's parser may be passed; ignored.
  """
  del feature_types, unused  # Create ML has no extra fields
  try:
    entries = json.loads(text)
  except (ValueError, RecursionError) as e:
    raise ManifestError(f'{path}: not a valid Create ML JSON file: {e}') from e
  if not isinstance(entries, list):
    raise ManifestError(f'{path}: a Create ML JSON file is a list of images, '
                        '[{"image": ..., "annotations": [...]}, ...]')
  split = split_of_folder(path)
  read = [_entry(path, number, entry) for number, entry in enumerate(entries, start=1)]
  boxes = [b for item in read if not isinstance(item, RowError) for b in item[1]]
  normalized = bool(boxes) and all(0 <= v <= 1 for b in boxes for v in b[1:])
  for number, item in enumerate(read, start=1):
    if isinstance(item, RowError):
      yield item
      continue
    uri, annotations = item
    objects = tuple(_object(box, normalized) for box in annotations)
    yield ManifestRow(source=path, row=number, image_uri=uri,
                      resolved_uri=resolve_uri(uri, path, image_root),
                      labels=tuple(dict.fromkeys(o.label for o in objects)), split=split,
                      objects=objects)


def _object(box: _Box, normalized: bool) -> ObjectBox:
  label, x, y, width, height = box
  return ObjectBox(label, x - width / 2, y - height / 2, x + width / 2, y + height / 2,
                   normalized=normalized)


def _entry(path: str, number: int, entry: object
           ) -> Union[Tuple[str, List[_Box]], RowError]:
  """An entry's image and boxes, or its RowError."""
  where = f'[{number - 1}]'
  if not isinstance(entry, dict):
    return RowError('bad_row', f'{where} must be an object {{"image": ..., "annotations": '
                    f'[...]}}, got {_short(entry)}', source=path, row=number)
  image = next((entry[k] for k in _IMAGE_KEYS if k in entry), None)
  if not isinstance(image, str) or not image.strip():
    return RowError('bad_row', f'{where} needs "image": the image\'s file name, a non-empty '
                    f'string; got {_short(image)}', source=path, row=number)
  uri = image.strip()
  annotations = next((entry[k] for k in _ANNOTATION_KEYS if k in entry), None)
  if not isinstance(annotations, list):
    return RowError('bad_row', f'{where} needs "annotations": a list of its objects ([] for '
                    f'an image without objects); got {_short(annotations)}', source=path,
                    row=number, uri=uri)
  boxes = []
  for index, annotation in enumerate(annotations):
    box = _box(annotation)
    if isinstance(box, str):
      return RowError('bad_row', f'{where}: annotations[{index}] {box}', source=path,
                      row=number, uri=uri)
    boxes.append(box)
  return uri, boxes


def _box(annotation: object) -> Union[_Box, str]:
  """An annotation's label and centre box, or what is wrong with it."""
  if not isinstance(annotation, dict):
    return f'must be an object {{"label": ..., "coordinates": {{...}}}}, got {_short(annotation)}'
  label = annotation.get('label')
  if not isinstance(label, str) or not label.strip():
    return f'needs "label": a non-empty string; got {_short(label)}'
  label = label.strip(' \t')
  coordinates = annotation.get('coordinates')
  if not isinstance(coordinates, dict):
    return (f'({label!r}) needs "coordinates": {{"x", "y", "width", "height"}} in pixels; '
            f'got {_short(coordinates)}')
  values = [as_number(coordinates.get(k)) for k in _COORDINATES]
  bad = [f'{k}={_short(coordinates.get(k))}' for k, v in zip(_COORDINATES, values) if v is None]
  if bad:
    return (f'({label!r}): "coordinates" x, y (the box\'s centre), width and height must be '
            f'numbers of pixels; got {", ".join(bad)}')
  return (label, *values)


def _short(value: object) -> str:
  return short(value, text=json.dumps(value) if not isinstance(value, str) else None)


def _sniff(head: str) -> bool:
  return head.startswith('[') and '"coordinates"' in head


FORMAT = ManifestFormat(
    'createml', ('.json',), sniff=_sniff, parse=parse, one_row_an_image=True,
    rows=b'"annotations"',
    title='Apple Create ML JSON',
    sample=FormatSample(
        'm.json',
        '[{"image": "a.jpg", "annotations": [{"label": "cat", "coordinates": {"x": 5, "y": '
        '5, "width": 4, "height": 4}}]}]'),
    sniff_rank=40)
