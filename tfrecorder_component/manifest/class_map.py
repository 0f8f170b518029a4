"""Keeping, dropping, renaming and merging classes as manifests are read (`class_map`).

A class map is given once for a run, as {class as annotated: class to write}:

    {"car": "vehicle", "truck": "vehicle"}   renames car and truck, merging them
    {"blurry": null}                         drops the class blurry
    {"person": "person", "*": null}          keeps person, drops every other class
    {"*": "other"}                           merges every class not listed into other

A class not listed keeps its name, unless `"*"` says what becomes of the classes not
listed. It applies to every format, before ids are given, so labels.txt,
label_map.pbtxt, the counts and the report know only the classes written.

What is dropped is never lost silently:
- a detection object of a dropped class is left out of its record and listed in
  report/box_issues.jsonl (action 'dropped', reason 'dropped_class', its class as
  annotated), counted in summary.json's `box_issues`; the image is kept, with its other
  objects (or none);
- a classification row whose every label is dropped is left out: it is listed in
  report/errors.jsonl with reason 'dropped_class' and counted in summary.json's
  `rows_left_out`, not as a failed row (it does not count against max_error_ratio).

An object renamed keeps the class id its source gives (COCO's category_id, a YOLO class
index) only where its name does not change; merged and renamed classes take new ids.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Mapping, Optional, Tuple, Union

from tfrecorder_component.errors import ManifestError, RowError, UsageError
from tfrecorder_component.manifest.rows import DROPPED_CLASS, ManifestRow, ParsedItem

OTHERS = '*'  # the key that says what becomes of the classes not listed
DROPPED = DROPPED_CLASS  # the reason of what a class map drops

ClassMap = Tuple[Tuple[str, Optional[str]], ...]  # sorted (class, new class or None) pairs


def parse_class_map(value: Union[None, str, os.PathLike, Mapping[str, Any]]) -> ClassMap:
  """A class map from a dict, JSON text, or the path of a .json / .yaml file holding
  one; () for None. Raises UsageError naming what is wrong.

  Args:
    value: {class as annotated: class to write, or None to drop it}, `"*"` for the
      classes not listed (see the module); or that object as JSON text (a str starting
      with `{` or `[`); or the path of a .json, .yaml or .yml file holding it (any other
      str or os.PathLike). None, '' or {}: no class map. Names are stripped of spaces.
  """
  if value is None or (isinstance(value, (str, dict)) and not value):
    return ()
  where = 'class_map'
  if isinstance(value, (str, os.PathLike)) and not str(value).lstrip().startswith(('{', '[')):
    where = os.fspath(value)
    try:
      with open(where, encoding='utf-8') as f:
        text = f.read()
    except OSError as e:
      raise UsageError(f'class_map: cannot read {where}: {e}') from None
    if where.lower().endswith(('.yaml', '.yml')):
      import yaml  # pylint: disable=g-import-not-at-top
      try:
        value = yaml.safe_load(text)
      except yaml.YAMLError as e:
        raise UsageError(f'class_map: {where} is not valid YAML: {e}') from None
    else:
      value = text
  if isinstance(value, str):
    try:
      value = json.loads(value)
    except ValueError as e:
      raise UsageError(f'{where}: not valid JSON ({e}); give an object such as '
                       '{"car": "vehicle", "blurry": null}') from None
  if not isinstance(value, Mapping):
    raise UsageError(f'{where}: a class map is an object of class: new class (or null to '
                     f'drop it), got {value!r}')
  pairs = []
  for old, new in value.items():
    if not isinstance(old, str) or not old.strip():
      raise UsageError(f'{where}: a class must be a non-empty string, got {old!r}')
    if new is not None and (not isinstance(new, str) or not new.strip()):
      raise UsageError(f'{where}: {old!r} must map to a class name (a non-empty string) or '
                       f'null to drop it, got {new!r}')
    pairs.append((old.strip(), None if new is None else new.strip()))
  if len({old for old, _ in pairs}) != len(pairs):
    raise UsageError(f'{where}: a class is listed twice (after trimming spaces)')
  return tuple(sorted(pairs, key=lambda p: p[0]))


def describe(class_map: ClassMap) -> Optional[dict]:
  """The class map as summary.json shows it; None for none.

  Args:
    class_map: the run's class map as `parse_class_map` gives it: sorted (class, new
      class or None) pairs; () for none.
  """
  return {old: new for old, new in class_map} if class_map else None


class _Mapping:
  def __init__(self, class_map: ClassMap):
    self.named = {old: new for old, new in class_map if old != OTHERS}
    self.others = dict(class_map).get(OTHERS, OTHERS) if any(
        old == OTHERS for old, _ in class_map) else OTHERS

  def __call__(self, label: str) -> Optional[str]:
    if label in self.named:
      return self.named[label]
    return label if self.others == OTHERS else self.others


def apply_class_map(row: ManifestRow, class_map: ClassMap) -> ParsedItem:
  """`row` with its classes mapped (see the module).

  A detection row keeps its objects, those of a dropped class marked `dropped_class`; a
  classification row whose every label is dropped becomes a `dropped_class` RowError.
  Its declared classes (`ManifestRow.declared_classes`) keep only those the map leaves
  as they are: a dropped class takes no id, a renamed or merged one its annotations'.

  Args:
    row: a parsed manifest row; a segmentation row (one with a mask) raises
      ManifestError, since a mask's pixel values are its class ids.
    class_map: sorted (class, new class or None) pairs (`parse_class_map`); (): the
      row is returned as it is.
  """
  if not class_map:
    return row
  if row.mask_uri is not None:
    raise ManifestError(f'{row.source}: a class map applies to detection and classification '
                        'labels, not to segmentation masks (their pixel values are the '
                        'class ids); convert without class_map')
  mapped = _Mapping(class_map)
  if row.declared_classes:  # a class renamed or merged keeps no declared id
    row = dataclasses.replace(row, declared_classes=tuple(
        (name, i) for name, i in row.declared_classes if mapped(name) == name))
  if row.objects is not None:
    objects = []
    for obj in row.objects:
      new = mapped(obj.label)
      if new is None:
        obj = dataclasses.replace(obj, invalid=DROPPED)
      elif new != obj.label:
        obj = dataclasses.replace(obj, label=new, source_id=None)
      objects.append(obj)
    labels = tuple(dict.fromkeys(o.label for o in objects if o.invalid != DROPPED))
    return dataclasses.replace(row, objects=tuple(objects), labels=labels)
  if not row.labels:
    return row
  labels = tuple(dict.fromkeys(n for n in map(mapped, row.labels) if n is not None))
  if not labels:
    return RowError(DROPPED, f'every label of the row ({", ".join(map(repr, row.labels))}) '
                    'is dropped by the class map: the row is left out', source=row.source,
                    row=row.row, uri=row.image_uri)
  return dataclasses.replace(row, labels=labels)


def is_dropped(obj) -> bool:
  """Whether a class map dropped this object (its label is not in the vocabulary).

  Args:
    obj: an ObjectBox of a row the class map was applied to (`apply_class_map`).
  """
  return obj.invalid == DROPPED
