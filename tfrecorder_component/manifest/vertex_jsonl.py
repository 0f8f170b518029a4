"""Vertex AI JSONL import format for image classification and object detection.

Each line: `{"imageGcsUri": ..., "classificationAnnotation": {"displayName": ...}}`
(single-label), `"classificationAnnotations": [...]` (multi-label) or
`"boundingBoxAnnotations": [{"displayName", "xMin", "yMin", "xMax", "yMax"}, ...]`
(detection, normalised coordinates), with the split in
`dataItemResourceLabels["aiplatform.googleapis.com/ml_use"]`. Other top-level fields
become typed features of the record.
"""
from __future__ import annotations

import io
import json
from typing import Iterator, Mapping, Optional, Tuple, Union

from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest.format_spec import ManifestFormat
from tfrecorder_component.manifest.features import as_number, check_feature_name, typed_items
from tfrecorder_component.manifest.rows import FeatureValue, ManifestRow, ObjectBox, ParsedItem, resolve_uri, split_for_ml_use

ML_USE_KEY = 'aiplatform.googleapis.com/ml_use'
KNOWN_KEYS = ('imageGcsUri', 'classificationAnnotation', 'classificationAnnotations',
              'boundingBoxAnnotations', 'dataItemResourceLabels')
BOX_KEYS = ('xMin', 'yMin', 'xMax', 'yMax')


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None) -> Iterator[ParsedItem]:

  def untyped() -> Iterator[ParsedItem]:
    for number, line in enumerate(io.StringIO(text), start=1):
      if line.strip():
        yield _parse_line(path, number, line, image_root)

  return typed_items(path, untyped, feature_types or {}, from_text=False, what='field')


# Top-level keys that mean a label, which Vertex AI JSONL keeps in annotations instead.
_LABEL_KEYS = ('label', 'labels', 'class', 'category', 'displayname')


def _parse_line(path: str, row: int, line: str, image_root: Optional[str] = None) -> ParsedItem:
  try:
    obj = json.loads(line)
  except json.JSONDecodeError as e:
    return RowError('bad_row', f'invalid JSON: {e}', source=path, row=row)
  except RecursionError:
    return RowError('bad_row', 'invalid JSON: nested too deeply', source=path, row=row)
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
  if misplaced and not annotations and 'boundingBoxAnnotations' not in obj:
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
  return ManifestRow(source=path, row=row, image_uri=uri,
                     resolved_uri=resolve_uri(uri, path, image_root), labels=labels,
                     split=split, objects=objects, features=features)


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


FORMAT = ManifestFormat('vertex_jsonl', ('.jsonl',), sniff=lambda head: head.startswith('{'),
                        parse=parse)
