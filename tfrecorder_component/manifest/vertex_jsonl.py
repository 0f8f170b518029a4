"""Vertex AI JSONL import format for image classification, object detection and
segmentation.

Each line: `{"imageGcsUri": ..., "classificationAnnotation": {"displayName": ...}}`
(single-label), `"classificationAnnotations": [...]` (multi-label),
`"boundingBoxAnnotations": [{"displayName", "xMin", "yMin", "xMax", "yMax"}, ...]`
(detection, normalised coordinates) or `"segmentationAnnotation": {"maskGcsUri": ...,
"annotationSpecColors": [{"color": {"red", "green", "blue"}, "displayName"}, ...]}`
(a colour mask of the image's size; channels from 0 to 1), with the split in
`dataItemResourceLabels["aiplatform.googleapis.com/ml_use"]`. Other top-level fields
become typed features of the record.
"""
from __future__ import annotations

from typing import Iterator, Mapping, Optional, Tuple, Union

from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.json_lines import lf_lines, load_line
from tfrecorder_component.manifest.features import as_number, check_feature_name, typed_items
from tfrecorder_component.manifest.rows import (FeatureValue, ManifestRow, MaskColor, ObjectBox,
                                                ParsedItem, resolve_uri, split_for_ml_use)

ML_USE_KEY = 'aiplatform.googleapis.com/ml_use'
KNOWN_KEYS = ('imageGcsUri', 'classificationAnnotation', 'classificationAnnotations',
              'boundingBoxAnnotations', 'segmentationAnnotation', 'dataItemResourceLabels')
BOX_KEYS = ('xMin', 'yMin', 'xMax', 'yMax')


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None) -> Iterator[ParsedItem]:
  """The lines of a Vertex AI JSONL file (see the module), one ManifestRow or RowError a
  non-blank line, in file order; a row's number is its line.

  Args:
    path: the manifest's path: named in errors, and the folder relative image and mask
      URIs resolve against when `image_root` is None.
    text: the file's whole text, or its lines as a text file opened with newline=''
      gives them (`json_lines.lf_lines`).
    image_root: the folder (local path or URI) relative image and mask URIs resolve
      against; None: the manifest's folder.
    feature_types: declared types of the other top-level fields ({name: 'int' |
      'float' | 'string'}); a field not declared gets a type inferred from its values.
  """

  def untyped() -> Iterator[ParsedItem]:
    for number, line in enumerate(lf_lines(text), start=1):
      if line.strip():
        yield _parse_line(path, number, line, image_root)

  return typed_items(path, untyped, feature_types or {}, from_text=False, what='field')


# Top-level keys that mean a label, which Vertex AI JSONL keeps in annotations instead.
_LABEL_KEYS = ('label', 'labels', 'class', 'category', 'displayname')


def _parse_line(path: str, row: int, line: str, image_root: Optional[str] = None) -> ParsedItem:
  obj = load_line(path, row, line)
  if isinstance(obj, RowError):
    return obj
  if not isinstance(obj, dict):
    return RowError('bad_row', 'each line must be a JSON object', source=path, row=row)
  uri = obj.get('imageGcsUri')
  if not isinstance(uri, str) or not uri.strip():
    keys = ', '.join(f'"{k}"' for k in list(obj)[:8]) or 'none'
    return RowError('bad_row', f'missing or empty "imageGcsUri", the key Vertex AI JSONL '
                    f'names the image with (the line has {keys})', source=path, row=row)
  uri = uri.strip()
  annotations = obj.get('classificationAnnotations')
  if annotations is None:
    single = obj.get('classificationAnnotation')
    annotations = [single] if single is not None else []
  misplaced = [k for k in obj if k.lower() in _LABEL_KEYS]
  if misplaced and not annotations and 'boundingBoxAnnotations' not in obj and (
      'segmentationAnnotation' not in obj):
    return RowError('bad_row', f'"{misplaced[0]}" is not where Vertex AI JSONL puts labels: '
                    'use "classificationAnnotation": {"displayName": ...} (or a list in '
                    '"classificationAnnotations")', source=path, row=row, uri=uri)
  if not isinstance(annotations, list) or not all(
      isinstance(a, dict) and isinstance(a.get('displayName'), str) for a in annotations):
    return RowError('bad_row', 'classification annotations must be objects with a string '
                    '"displayName"', source=path, row=row, uri=uri)
  names = [a['displayName'].strip() for a in annotations]
  objects = None
  if obj.get('boundingBoxAnnotations') is not None:
    objects = _boxes(obj['boundingBoxAnnotations'])
    if isinstance(objects, str):
      return RowError('bad_row', objects, source=path, row=row, uri=uri)
    names += [o.label for o in objects]
  mask = None
  if obj.get('segmentationAnnotation') is not None:
    if objects is not None or names:
      return RowError('bad_row', 'a line is one task: "segmentationAnnotation" with '
                      'classification or box annotations', source=path, row=row, uri=uri)
    mask = _segmentation(obj['segmentationAnnotation'])
    if isinstance(mask, str):
      return RowError('bad_row', mask, source=path, row=row, uri=uri)
    names = [name for _, name in mask[1]]
  labels = tuple(dict.fromkeys(n for n in names if n))
  resource_labels = obj.get('dataItemResourceLabels') or {}
  value = resource_labels.get(ML_USE_KEY, '') if isinstance(resource_labels, dict) else ''
  try:
    split = split_for_ml_use(str(value))
  except KeyError:
    return RowError('unknown_split', f'unknown {ML_USE_KEY} value {value!r} (use training, '
                    f'validation or test)', source=path, row=row, uri=uri)
  features = _features(path, obj)
  if isinstance(features, str):
    return RowError('bad_row', features, source=path, row=row, uri=uri)
  segmentation = {} if mask is None else {
      'mask_uri': mask[0], 'resolved_mask_uri': resolve_uri(mask[0], path, image_root),
      'mask_colors': mask[1]}
  return ManifestRow(source=path, row=row, image_uri=uri,
                     resolved_uri=resolve_uri(uri, path, image_root), labels=labels,
                     split=split, objects=objects, features=features, **segmentation)


def _segmentation(annotation: object) -> Union[Tuple[str, Tuple[MaskColor, ...]], str]:
  """(mask URI, (colour, class name) pairs) of a `segmentationAnnotation`, or what is
  wrong with it."""
  uri = annotation.get('maskGcsUri') if isinstance(annotation, dict) else None
  if not isinstance(uri, str) or not uri.strip():
    return '"segmentationAnnotation" needs a "maskGcsUri", the mask image\'s URI'
  specs = annotation.get('annotationSpecColors')
  if not isinstance(specs, list) or not specs:
    return ('"segmentationAnnotation" needs "annotationSpecColors": the class of each '
            'colour the mask paints, [{"color": {"red": 1, "green": 0, "blue": 0}, '
            '"displayName": "cat"}, ...]')
  colors, seen = [], {}
  for index, spec in enumerate(specs):
    where = f'annotationSpecColors[{index}]'
    name = spec.get('displayName') if isinstance(spec, dict) else None
    color = spec.get('color') if isinstance(spec, dict) else None
    if not isinstance(name, str) or not name.strip() or not isinstance(color, dict):
      return f'{where} needs a "color" object and a non-empty string "displayName"'
    channels = [as_number(color.get(c, 0)) for c in ('red', 'green', 'blue')]
    if any(c is None or not 0 <= c <= 1 for c in channels):
      return (f'{where} "color" channels "red", "green" and "blue" must be numbers from 0 '
              f'to 1, got {color!r}')
    rgb = tuple(int(round(c * 255)) for c in channels)
    if seen.get(rgb, name.strip()) != name.strip():
      return f'{where}: colour {rgb} is given to both {seen[rgb]!r} and {name.strip()!r}'
    seen[rgb] = name.strip()
    colors.append((rgb, name.strip()))
  return uri.strip(), tuple(colors)


def _boxes(annotations: object) -> Union[Tuple[ObjectBox, ...], str]:
  """The objects of `boundingBoxAnnotations`, or what is wrong with them."""
  if not isinstance(annotations, list):
    return '"boundingBoxAnnotations" must be a list of objects'
  boxes = []
  for index, a in enumerate(annotations):
    where = f'boundingBoxAnnotations[{index}]'
    if not isinstance(a, dict):
      return f'{where} must be an object'
    name = a.get('displayName')
    if not isinstance(name, str) or not name.strip():
      return f'{where} needs a non-empty string "displayName"'
    values = []
    for key in BOX_KEYS:
      value = a.get(key)
      number = as_number(value)
      if number is None:
        return (f'{where} ({name.strip()!r}): "{key}" must be a number normalised to [0, 1], '
                f'got {value!r}')
      values.append(number)
    boxes.append(ObjectBox(name.strip(), *values))
  return tuple(boxes)


def _features(path: str, obj: dict) -> Union[Tuple[Tuple[str, FeatureValue], ...], str]:
  """The line's other top-level fields as (name, JSON value), or what is wrong with them."""
  features = []
  for name, value in obj.items():
    if not name or name in KNOWN_KEYS or value is None or value == '':
      continue
    check_feature_name(path, name)
    if isinstance(value, (dict, list)):
      return (f'field {name!r} holds a nested {type(value).__name__}; extra fields become '
              'features and must be a number, a string or a boolean')
    features.append((name, value))
  return tuple(sorted(features))


FORMAT = ManifestFormat(
    'vertex_jsonl', ('.jsonl',), sniff=lambda head: head.startswith('{'), parse=parse,
    streamed=True,
    title='Vertex AI JSONL',
    sample=FormatSample(
        'm.jsonl',
        '{"imageGcsUri": "a.jpg"}\n'),
    # After Labelbox: the .jsonl file it does not take.
    sniff_rank=20)
