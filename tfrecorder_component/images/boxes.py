"""Detection boxes: one documented rule for invalid boxes, applied before records are built.

For each annotated box, in the frame of the stored pixels:

1. A coordinate that is not a finite number: the box is dropped (`not_finite`).
2. Pixel boxes (COCO, Pascal VOC) are divided by the image's stored width and height.
3. Zero or negative width or height (including swapped corners): dropped (`empty`).
4. The box is clipped to the image, [0, 1]. Nothing left inside: dropped
   (`outside_image`); otherwise, if clipping moved an edge by more than 1e-6, the box is
   kept and counted as `clipped`.

Dropped and clipped boxes are listed in the report (box_issues.jsonl) and counted in
summary.json; a record whose boxes were all dropped is an image with no objects.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Dict, List, Optional, Tuple

from tfrecorder_component.manifest import ObjectBox

Box = Tuple[float, float, float, float]  # xmin, ymin, xmax, ymax; normalised unless said
LabelledBox = Tuple[str, Box]  # (class name, normalised box)
Point = Tuple[float, float]  # x, y; normalised unless said
_TOLERANCE = 1e-6


@dataclasses.dataclass(frozen=True)
class BoxIssue:
  """A box the rule dropped or clipped.

  Attributes:
    index: Position of the object in the row's annotations.
    label: The object's class name.
    box: The box as annotated, (xmin, ymin, xmax, ymax): in pixels for COCO and Pascal
      VOC, normalised otherwise.
    action: What was done: 'dropped', 'clipped' or, for a keypoint, 'hidden' (made
      unlabelled).
    reason: Why, one of the reasons listed beside the field: 'not_finite', 'empty',
      'outside_image', 'clipped', 'keypoint_outside', 'dropped_class' and the others.
    keypoint: The keypoint's name, for a keypoint issue; None for any other, and then
      left out of `as_dict()`.
  """
  index: int      # position of the object in the row's annotations
  label: str
  box: Box       # as annotated (pixels for COCO and Pascal VOC)
  action: str     # 'dropped', 'clipped' or (a keypoint) 'hidden'
  # boxes: 'not_finite', 'empty', 'outside_image', 'clipped', 'outside_after_transform',
  # 'bad_area', 'bad_iscrowd' (COCO);
  # masks: 'empty_mask', 'mask_outside_image', 'mask_size_mismatch', 'mask_not_finite',
  # 'bad_mask';
  # keypoints: 'keypoint_outside', 'keypoint_outside_after_transform';
  # oriented-box corners: 'corner_outside_image', 'corner_outside_after_transform';
  # shapes without an area (LabelMe, CVAT): 'point_shape', 'points_shape', 'line_shape',
  # 'linestrip_shape', 'polyline_shape', 'points_without_object';
  # a class the class map drops: 'dropped_class'
  reason: str
  keypoint: Optional[str] = None  # the keypoint's name, for a keypoint issue

  def as_dict(self) -> Dict:
    fields = dict(dataclasses.asdict(self), box=list(self.box))
    if self.keypoint is None:
      del fields['keypoint']
    return fields


def normalize_boxes(objects: Tuple[ObjectBox, ...], width: int, height: int
                    ) -> Tuple[List[Tuple[int, ObjectBox, Box]], List[BoxIssue]]:
  """Applies the rule above: ((index, object, normalised box) of kept ones, issues).

  Args:
    objects: The row's annotated objects, in its order (an issue's `index` is the position
      here); pixel or normalised as each one's `normalized` says.
    width: The stored image's width in pixels, which divides pixel x coordinates.
    height: The stored image's height in pixels, which divides pixel y coordinates.
  """
  kept: List[Tuple[int, ObjectBox, Box]] = []
  issues: List[BoxIssue] = []
  for index, obj in enumerate(objects):
    raw = (obj.xmin, obj.ymin, obj.xmax, obj.ymax)
    if obj.invalid:  # a COCO area or iscrowd that is not a valid one
      issues.append(BoxIssue(index, obj.label, raw, 'dropped', obj.invalid))
      continue
    box, reason = _normalize(raw, obj.normalized, width, height)
    if box is None:
      issues.append(BoxIssue(index, obj.label, raw, 'dropped', reason))
      continue
    if reason == 'clipped':
      issues.append(BoxIssue(index, obj.label, raw, 'clipped', reason))
    kept.append((index, obj, box))
  return kept, issues


def _normalize(raw: Box, normalized: bool, width: int, height: int
               ) -> Tuple[Optional[Box], str]:
  if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in raw):
    return None, 'not_finite'
  xmin, ymin, xmax, ymax = raw
  if not normalized:
    xmin, xmax, ymin, ymax = xmin / width, xmax / width, ymin / height, ymax / height
  if xmax <= xmin or ymax <= ymin:
    return None, 'empty'
  clipped = clip_box((xmin, ymin, xmax, ymax))
  if clipped is None:
    return None, 'outside_image'
  moved = max(abs(a - b) for a, b in zip(clipped, (xmin, ymin, xmax, ymax)))
  return clipped, ('clipped' if moved > _TOLERANCE else 'ok')


def clip_box(box: Box) -> Optional[Box]:
  """`box` clipped to the image, [0, 1]; None when nothing of it is left inside.

  Args:
    box: A normalised (xmin, ymin, xmax, ymax) box.
  """
  x0, y0, x1, y1 = (min(1.0, max(0.0, float(v))) for v in box)
  if x1 <= x0 or y1 <= y0:
    return None
  return x0, y0, x1, y1


def inside(point: Point) -> bool:
  """Whether a normalised point lies in the image, [0, 1] x [0, 1].

  Args:
    point: A normalised (x, y); a coordinate that is not finite is outside.
  """
  return all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in point)


def pixel_area(box: Box, width: int, height: int) -> float:
  """The area of a normalised box in square pixels of a `width` x `height` image (a
  record's `area` when the manifest gives none).

  Args:
    box: A normalised (xmin, ymin, xmax, ymax) box.
    width: The image's width in pixels.
    height: The image's height in pixels.
  """
  return (box[2] - box[0]) * width * (box[3] - box[1]) * height
