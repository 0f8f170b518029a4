"""Label Studio JSON export: a list of tasks, each with `data` and `annotations`.

The full "JSON" export (not JSON_MIN): `[{"id": 1, "data": {"image": URI}, "annotations":
[{"result": [{"type": "rectanglelabels", "id": ..., "from_name": ..., "original_width":
..., "original_height": ..., "value": {"x", "y", "width", "height", "rotation",
"rectanglelabels": [...]}}, ...]}], "predictions": [...]}, ...]`, read the way Label
Studio's converter (label-studio-converter, `convert_to_coco` / `convert_to_yolo`)
reads it. One row a task, its row number its 1-based position in the list. Rules:

- The image: `data.image` (else the data key a result's `source` names, else `data`'s
  only string). `/data/upload/N/f.jpg` (an uploaded file) is read from
  `<image_root>/upload/N/f.jpg` and `/data/local-files/?d=dir/f.jpg` (local storage)
  from `<image_root>/dir/f.jpg`, `image_root` being Label Studio's media folder or local
  files document root, by default the JSON file's folder; the same paths behind an
  http(s) host (Label Studio's own URLs) are read likewise. gs://, s3:// and other URIs
  are read as they are; relative paths resolve against `image_root`. The record's
  source id is the URI as written.
- Which annotation: cancelled (skipped) ones are left out; of the others the one marked
  `ground_truth`, else the most recently created, else the first. `predictions` (a
  model's) are never read. A task with `"annotations": []` is an image without objects
  (as the converter writes it); a task whose every annotation was cancelled, or that
  has no "annotations" at all, fails as `not_annotated`.
- Results that share an `id` describe one region. `rectanglelabels` (or `rectangle` with
  `labels`): a box, x, y, width and height percent of the image / 100; a rotated one
  (rotation degrees clockwise about its top-left corner, in pixels of
  `original_width` x `original_height`) is its enclosing box plus its four corners.
  `polygonlabels`: the polygon's bounding box. A region with several labels is one
  object each. With include_masks each object's mask is its polygon (a rectangle's
  four corners), normalised.
- `choices`, `taxonomy`, `textarea`, `rating`, `number`, `datetime`: on a region, an
  attribute of its objects (`image/object/<from_name>`); on the image, a feature named
  by `from_name` (choices joined by ','). `relation` results are ignored.
- Any other result (`keypointlabels`, `brushlabels`, `ellipselabels`, ...) fails the
  task as `unsupported_annotation`: no record field holds it, and dropping it would
  leave its objects unlabelled in the record.
- Splits: a file in a folder named train, valid, val, validation, eval or test (any
  case) gives its rows that split; else hash split.

Length: one format, whose rules (tasks, the annotation chosen, regions, rotations) follow
Label Studio's converter one by one.
"""
from __future__ import annotations

import json
import math
import urllib.parse
from typing import (AbstractSet, Dict, Iterator, List, Mapping, Optional, Tuple, Union)

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.features import as_number, check_feature_name, typed_items
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.json_lines import short_json
from tfrecorder_component.manifest.rows import (FeatureValue, InstanceMask, ManifestRow, ObjectBox,
                                                ParsedItem, resolve_uri, split_of_folder)

_BOX_TYPES = ('rectanglelabels', 'rectangle')
_POLYGON_TYPES = ('polygonlabels', 'polygon')
_LABEL_TYPES = ('rectanglelabels', 'polygonlabels', 'labels')  # value[type]: the labels
# Per-image or per-region values, by result type: the key of `value` holding them.
_VALUE_TYPES = {'choices': 'choices', 'taxonomy': 'taxonomy', 'textarea': 'text',
                'rating': 'rating', 'number': 'number', 'datetime': 'datetime'}
_IGNORED_TYPES = ('relation',)  # links between regions: nothing in a record holds them
# Object features a region attribute may not be named after (image/object/<name>).
_RESERVED_ATTRIBUTES = ('bbox', 'class', 'is_crowd', 'area', 'difficult', 'truncated', 'mask',
                        'keypoint', 'corner')

Box = Tuple[float, float, float, float]


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None,
          annotations: AbstractSet[str] = frozenset()) -> Iterator[ParsedItem]:
  """The tasks of a Label Studio JSON export (see the module), one ManifestRow a task or
  a RowError, in list order.

  Args:
    path: the JSON file's path: named in errors, the folder whose name gives the split,
      and the folder images resolve against when `image_root` is None.
    text: the file's whole text (parsed at once with `json.loads`); a single task
      object is read as a list of one.
    image_root: Label Studio's media folder or local files document root (a local path
      or URI): where `/data/upload/...` and `/data/local-files/?d=...` images, and
      relative paths, are read from; None: the JSON file's folder.
    feature_types: declared types of the image-level values read as features
      ({from_name: 'int' | 'float' | 'string'}); one not declared is inferred.
    annotations: what to read beyond boxes: 'masks' (each object's polygon, or a
      rectangle's four corners, as its mask); empty: none.
  """
  tasks = _load(path, text)
  split = split_of_folder(path)
  masks = 'masks' in annotations

  def untyped() -> Iterator[ParsedItem]:
    for number, task in enumerate(tasks, start=1):
      yield _task_row(path, number, task, split, image_root, masks)

  return typed_items(path, untyped, feature_types or {}, from_text=False, what='field')


def _load(path: str, text: str) -> List[object]:
  try:
    tasks = json.loads(text)
  except (ValueError, RecursionError) as e:
    raise ManifestError(f'{path}: not a valid Label Studio JSON export: {e}') from e
  if isinstance(tasks, dict) and 'data' in tasks:
    return [tasks]  # one task, as the converter accepts
  if not isinstance(tasks, list):
    raise ManifestError(f'{path}: a Label Studio JSON export is a list of tasks, '
                        '[{"data": {"image": ...}, "annotations": [...]}, ...]')
  return tasks


def _task_row(path: str, number: int, task: object, split: Optional[str],
              image_root: Optional[str], masks: bool) -> ParsedItem:
  where = {'source': path, 'row': number}
  name = f'task [{number - 1}]'
  if not isinstance(task, dict) or not isinstance(task.get('data'), dict):
    return RowError('bad_row', f'{name} must be an object with a "data" object holding the '
                    f'image; got {short_json(task)}', **where)
  if 'id' in task:
    name = f'task id {short_json(task["id"])} ({name})'
  annotations = task.get('annotations', task.get('completions'))
  if annotations is not None and not isinstance(annotations, list):
    return RowError('bad_row', f'{name}: "annotations" must be a list, got '
                    f'{short_json(annotations)}', **where)
  chosen = _chosen(annotations or [])
  results = chosen.get('result') if isinstance(chosen, dict) else None
  image = _image_of(task['data'], results if isinstance(results, list) else [])
  if not isinstance(image, str) or not image.strip():
    return RowError('bad_row', f'{name}: "data" names no image: give it an "image" field '
                    f'(its URL or path); got {short_json(task["data"])}', **where)
  uri = image.strip()
  where['uri'] = uri
  if uri.startswith('data:'):
    return RowError('bad_row', f'{name}: the image is embedded in the task (a data: URI); '
                    'store it as a file and give its path or URL', **where)
  row = ManifestRow(source=path, row=number, image_uri=uri,
                    resolved_uri=resolve_image(uri, path, image_root), split=split,
                    objects=())
  if annotations is None:
    return RowError('not_annotated', f'{name} has no "annotations" (predictions, a model\'s, '
                    'are not read); annotate it in Label Studio or leave it out of the '
                    'export', **where)
  if not annotations:
    return row  # not annotated yet: an image without objects, as the converter writes it
  if isinstance(chosen, tuple):
    return RowError(chosen[0], f'{name}: {chosen[1]}', **where)
  if not isinstance(results, list):
    return RowError('bad_row', f'{name}{_annotation_id(chosen)}: "result" must be a list of '
                    f'regions, got {short_json(results)}', **where)
  read = _results(path, results, masks)
  if isinstance(read, tuple) and isinstance(read[0], str):
    return RowError(read[0], f'{name}{_annotation_id(chosen)}: {read[1]}', **where)
  objects, features = read
  return ManifestRow(source=path, row=number, image_uri=uri, resolved_uri=row.resolved_uri,
                     labels=tuple(dict.fromkeys(o.label for o in objects)), split=split,
                     objects=objects, features=features)


# Why a task or an annotation cannot be read: (RowError reason, message).
_Problem = Tuple[str, str]


def _chosen(annotations: List[object]) -> Union[dict, _Problem, None]:
  """The annotation a task's row is made of (see the module), or why there is none."""
  for index, annotation in enumerate(annotations):
    if not isinstance(annotation, dict):
      return 'bad_row', f'annotations[{index}] must be an object, got {short_json(annotation)}'
  kept = [a for a in annotations if not (a.get('was_cancelled') or a.get('skipped'))]
  if not kept:
    if not annotations:
      return None
    return ('not_annotated', f'every one of its {len(annotations)} annotation(s) was '
            'cancelled (skipped); annotate it in Label Studio or leave it out of the export')
  pool = [a for a in kept if a.get('ground_truth') is True] or kept
  best = pool[0]
  for annotation in pool[1:]:
    if _created(annotation) > _created(best):
      best = annotation
  return best


def _annotation_id(annotation: dict) -> str:
  return f', annotation id {annotation["id"]!r}' if 'id' in annotation else ''


def _created(annotation: dict) -> str:
  created = annotation.get('created_at')
  return created if isinstance(created, str) else ''


def _image_of(data: dict, results: List[object]) -> object:
  """The task's image: `data.image`, else the data key a result's `source` ("$img")
  names, else the only string in `data`."""
  if 'image' in data:
    return data['image']
  for result in results:
    source = result.get('source') if isinstance(result, dict) else None
    if isinstance(source, str) and source.startswith('$') and source[1:] in data:
      return data[source[1:]]
  strings = [v for v in data.values() if isinstance(v, str)]
  return strings[0] if len(strings) == 1 else None


def resolve_image(uri: str, path: str, image_root: Optional[str] = None) -> str:
  """Where a task's image is read from: Label Studio's server paths (see the module)
  as files under `image_root` (by default the JSON file's folder), others as
  `resolve_uri` gives them.

  Args:
    uri: the task's image as written: a Label Studio server path (`/data/upload/...`,
      `/data/local-files/?d=...`, also behind an http(s) host), a URI or a path.
    path: the JSON file's path, whose folder is the default root.
    image_root: Label Studio's media folder or local files document root; None: the
      JSON file's folder.
  """
  server = uri
  parts = urllib.parse.urlsplit(uri)
  if parts.scheme in ('http', 'https') and parts.path.startswith('/data/'):
    server = parts.path + (f'?{parts.query}' if parts.query else '')
  if server.startswith('/data/upload/'):
    relative = urllib.parse.unquote(server[len('/data/'):])
  elif server.startswith('/data/') and '?d=' in server:
    relative = urllib.parse.unquote(server.split('?d=', 1)[1])
  else:
    return resolve_uri(uri, path, image_root)
  return resolve_uri(relative, path, image_root)


def _results(path: str, results: List[object], masks: bool
             ) -> Union[Tuple[Tuple[ObjectBox, ...], Tuple[Tuple[str, FeatureValue], ...]],
                        _Problem]:
  """An annotation's objects and image-level features, or the problem of the first
  result that cannot be read."""
  regions: Dict[object, List[Tuple[int, dict]]] = {}
  for index, result in enumerate(results):
    kind = result.get('type') if isinstance(result, dict) else None
    if kind in _IGNORED_TYPES:
      continue
    if not isinstance(result, dict) or not isinstance(result.get('value'), dict):
      return ('bad_row', f'result[{index}] must be an object with a "value" object, got '
              f'{short_json(result)}')
    if not (kind in _BOX_TYPES or kind in _POLYGON_TYPES or kind in _LABEL_TYPES or
            kind in _VALUE_TYPES):
      return ('unsupported_annotation', f'result[{index}] ({_named(result)}) is a {kind!r} '
              'result; only rectangles and polygons are read as objects (and '
              f'{", ".join(_VALUE_TYPES)} as values): export without that control, or let '
              'these images fail with max_error_ratio')
    key = result.get('id')
    key = key if isinstance(key, (str, int)) and not isinstance(key, bool) else ('#', index)
    regions.setdefault(key, []).append((index, result))
  objects: List[ObjectBox] = []
  features: Dict[str, FeatureValue] = {}
  for members in regions.values():
    read = _region(members, masks)
    if isinstance(read, str):
      index, result = members[0]
      return ('bad_row', f'result[{index}] ({_named(result)}): {read}')
    region_objects, values = read
    objects.extend(region_objects)
    if not region_objects:  # values of the image as a whole
      for name, value in values:
        if name in features:
          return ('bad_row', f'two results of {name!r} give the image a value; give each '
                  'control one')
        check_feature_name(path, name)
        features[name] = value
  return tuple(objects), tuple(sorted(features.items()))


def _region(members: List[Tuple[int, dict]], masks: bool
            ) -> Union[Tuple[List[ObjectBox], List[Tuple[str, FeatureValue]]], str]:
  """The objects of one region (results sharing an id) and its values (attributes of
  the objects, or of the image if it has no shape), or what is wrong with it."""
  shape: Optional[Tuple[str, dict, dict]] = None  # ('box' | 'polygon', value, result)
  labels: List[str] = []
  values: List[Tuple[str, FeatureValue]] = []
  for index, result in members:
    kind, value = result['type'], result['value']
    where = f'result[{index}] ' if len(members) > 1 else ''
    if kind in _LABEL_TYPES:
      given = value.get(kind)
      if (not isinstance(given, list) or not given or
          not all(isinstance(l, str) and l.strip() for l in given)):
        return f'{where}"value.{kind}" must be a non-empty list of labels, got {short_json(given)}'
      labels.extend(l.strip(' \t') for l in given)
    if shape is None:
      if kind in _BOX_TYPES or (kind == 'labels' and 'x' in value and 'points' not in value):
        shape = ('box', value, result)
      elif kind in _POLYGON_TYPES or (kind == 'labels' and 'points' in value):
        shape = ('polygon', value, result)
    if kind in _VALUE_TYPES:
      name = result.get('from_name')
      if not isinstance(name, str) or not name.strip():
        return f'{where}a {kind!r} result needs "from_name", the name its value is kept under'
      try:
        read = _value(kind, value.get(_VALUE_TYPES[kind]))
      except ValueError as e:
        return f'{where}{e}'
      if any(n == name.strip() for n, _ in values):
        return f'two results of {name.strip()!r} give this region a value; give it one'
      values.append((name.strip(), read))
  if shape is None:
    if labels:
      return ('labels with no rectangle or polygon: only rectangles and polygons are read as '
              'objects')
    return [], values
  if not labels:
    return ('the region has no label; label it (rectanglelabels / polygonlabels, or a Labels '
            'control on it)')
  for name, _ in values:
    if name.split('/', 1)[0] in _RESERVED_ATTRIBUTES:
      return (f'the region value {name!r} would be written as image/object/{name}, a feature '
              'of every detection record; rename that control')
  form, value, result = shape
  read = _box(value, result) if form == 'box' else _polygon(value)
  if isinstance(read, str):
    return read
  box, corners = read
  mask = None
  if masks:
    outline = corners or (box[0], box[1], box[2], box[1], box[2], box[3], box[0], box[3])
    mask = InstanceMask(polygons=(outline,), normalized=True)
  if form == 'polygon':
    corners = ()  # the polygon's outline: its mask, not an oriented box
  objects = [ObjectBox(label, *box, normalized=True, mask=mask, corners=corners,
                       attributes=tuple(values)) for label in dict.fromkeys(labels)]
  return objects, []


def _box(value: dict, result: dict) -> Union[Tuple[Box, Tuple[float, ...]], str]:
  """A rectangle's normalised box and, when rotated, its four corners; or what is wrong."""
  numbers = [as_number(value.get(k)) for k in ('x', 'y', 'width', 'height')]
  if any(v is None for v in numbers):
    return ('"value" x, y, width and height must be numbers (percent of the image); got '
            f'{short_json({k: value.get(k) for k in ("x", "y", "width", "height")})}')
  x, y, width, height = (v / 100 for v in numbers)
  rotation = as_number(value.get('rotation') or 0)
  if rotation is None or not math.isfinite(rotation):
    return f'"value.rotation" must be a number of degrees, got {short_json(value.get("rotation"))}'
  if rotation % 360 == 0:
    return (x, y, x + width, y + height), ()
  size = [as_number(result.get(k)) for k in ('original_width', 'original_height')]
  if any(s is None or not s > 0 for s in size):
    return ('a rotated rectangle needs "original_width" and "original_height" (the image\'s '
            'size in pixels, which Label Studio exports with each result) to place its '
            f'corners; got '
            f'{short_json([result.get("original_width"), result.get("original_height")])}')
  w, h = size
  # Label Studio rotates about the top-left corner, clockwise, in pixels (as the
  # converter's YOLO OBB export): corners in order top-left, top-right, bottom-right,
  # bottom-left of the unrotated box.
  px, py, pw, ph = x * w, y * h, width * w, height * h
  cos, sin = math.cos(math.radians(rotation)), math.sin(math.radians(rotation))
  points = ((px, py), (px + pw * cos, py + pw * sin),
            (px + pw * cos - ph * sin, py + pw * sin + ph * cos), (px - ph * sin, py + ph * cos))
  xs = [px_ / w for px_, _ in points]
  ys = [py_ / h for _, py_ in points]
  corners = tuple(v for point in zip(xs, ys) for v in point)
  return (min(xs), min(ys), max(xs), max(ys)), corners


def _polygon(value: dict) -> Union[Tuple[Box, Tuple[float, ...]], str]:
  """A polygon's normalised bounding box and outline (x1, y1, ...), or what is wrong."""
  points = value.get('points')
  pairs = []
  for point in points if isinstance(points, list) else ():
    pair = [as_number(v) for v in point] if isinstance(point, list) else []
    if len(pair) != 2 or None in pair:
      pairs = []
      break
    pairs.append(pair)
  if len(pairs) < 3:
    return ('"value.points" must be at least 3 [x, y] points, percent of the image; got '
            f'{short_json(points)}')
  xs = [x / 100 for x, _ in pairs]
  ys = [y / 100 for _, y in pairs]
  return (min(xs), min(ys), max(xs), max(ys)), tuple(v for p in zip(xs, ys) for v in p)


def _value(kind: str, given: object) -> FeatureValue:
  """A choices / taxonomy / textarea / rating / number / datetime result's value as one
  feature value; raises ValueError saying what is wrong with it."""
  key = _VALUE_TYPES[kind]
  if kind == 'choices' and _strings(given):
    return ','.join(given)
  if kind == 'taxonomy' and isinstance(given, list) and given and all(
      _strings(path) for path in given):
    return ','.join('/'.join(path) for path in given)
  if kind == 'textarea' and (_strings(given) or isinstance(given, str)):
    return given if isinstance(given, str) else '\n'.join(given)
  if kind in ('rating', 'number') and as_number(given) is not None and not isinstance(
      given, str):
    return int(given) if float(given).is_integer() else float(given)
  if kind == 'datetime' and isinstance(given, str):
    return given
  raise ValueError(f'"value.{key}" of a {kind!r} result is not one Label Studio writes: '
                   f'{short_json(given)}')


def _strings(values: object) -> bool:
  return isinstance(values, list) and bool(values) and all(isinstance(v, str) for v in values)


def _named(result: dict) -> str:
  return (f'type {result.get("type")!r}, id {result.get("id")!r}, '
          f'from_name {result.get("from_name")!r}')




def _sniff(head: str) -> bool:
  return head.startswith('[') and '"data"' in head and (
      '"annotations"' in head or '"predictions"' in head)


FORMAT = ManifestFormat(
    'label_studio', ('.json',), sniff=_sniff, parse=parse, one_row_an_image=True,
    annotations=('masks',), rows=b'"data"',
    title='Label Studio JSON export',
    sample=FormatSample(
        'm.json',
        '[{"id": 1, "data": {"image": "a.jpg"}, "annotations": []}]'),
    sniff_rank=50)
