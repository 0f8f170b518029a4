"""Vertex AI JSONL import format for image classification.

Each line: `{"imageGcsUri": ..., "classificationAnnotation": {"displayName": ...}}`
(single-label) or `"classificationAnnotations": [...]` (multi-label), with the split
in `dataItemResourceLabels["aiplatform.googleapis.com/ml_use"]`.
"""
from __future__ import annotations

import json
from typing import Iterator

from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest import ManifestRow, ParsedItem, resolve_uri, split_for_ml_use

ML_USE_KEY = 'aiplatform.googleapis.com/ml_use'


def parse(path: str, text: str) -> Iterator[ParsedItem]:
  for number, line in enumerate(text.splitlines(), start=1):
    if not line.strip():
      continue
    yield _parse_line(path, number, line)


def _parse_line(path: str, row: int, line: str) -> ParsedItem:
  try:
    obj = json.loads(line)
  except json.JSONDecodeError as e:
    return RowError('bad_row', f'invalid JSON: {e}', source=path, row=row)
  if not isinstance(obj, dict):
    return RowError('bad_row', 'each line must be a JSON object', source=path, row=row)
  uri = obj.get('imageGcsUri')
  if not isinstance(uri, str) or not uri.strip():
    return RowError('bad_row', 'missing or empty "imageGcsUri"', source=path, row=row)
  uri = uri.strip()
  annotations = obj.get('classificationAnnotations')
  if annotations is None:
    single = obj.get('classificationAnnotation')
    annotations = [single] if single is not None else []
  if not isinstance(annotations, list) or not all(
      isinstance(a, dict) and isinstance(a.get('displayName'), str) for a in annotations):
    return RowError('bad_row', 'classification annotations must be objects with a string '
                    '"displayName"', source=path, row=row, uri=uri)
  labels = tuple(dict.fromkeys(a['displayName'].strip() for a in annotations
                               if a['displayName'].strip()))
  resource_labels = obj.get('dataItemResourceLabels') or {}
  value = resource_labels.get(ML_USE_KEY, '') if isinstance(resource_labels, dict) else ''
  try:
    split = split_for_ml_use(str(value))
  except KeyError:
    return RowError('unknown_split', f'unknown {ML_USE_KEY} value {value!r} (use training, '
                    f'validation or test)', source=path, row=row, uri=uri)
  return ManifestRow(source=path, row=row, image_uri=uri, resolved_uri=resolve_uri(uri, path),
                     labels=labels, split=split)
