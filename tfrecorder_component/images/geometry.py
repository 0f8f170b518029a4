"""The geometry of the image transforms, shared by pixels and boxes: the EXIF
orientations and the resize plan (stretch, fit, crop, longest side), with the box that a
normalised box becomes under each; the size buckets of the report's histogram."""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence, Tuple

from tfrecorder_component.images.boxes import Box, Point


# Longest-side buckets of the image size histogram: (upper bound, name).
SIZE_BUCKETS: Tuple[Tuple[float, str], ...] = (
    (64, '< 64 px'), (128, '64-127 px'), (256, '128-255 px'), (512, '256-511 px'),
    (1024, '512-1023 px'), (2048, '1024-2047 px'), (float('inf'), '>= 2048 px'))


def size_bucket(width: int, height: int) -> str:
  """The name of the SIZE_BUCKETS bucket an image falls in, by its longest side
  ('256-511 px').

  Args:
    width: The image's width in pixels.
    height: The image's height in pixels.
  """
  longest = max(width, height)
  return next(name for bound, name in SIZE_BUCKETS if longest < bound)


def orient_box(box: Box, orientation: int) -> Box:
  """Maps a box in the stored pixels to the upright image for an EXIF orientation.

  Args:
    box: A normalised (xmin, ymin, xmax, ymax) box in the stored pixels.
    orientation: The EXIF orientation tag, 1 to 8; any other value leaves the box as it is.
  """
  x0, y0, x1, y1 = box
  if orientation == 2:   # mirrored horizontally
    return 1 - x1, y0, 1 - x0, y1
  if orientation == 3:   # rotated 180
    return 1 - x1, 1 - y1, 1 - x0, 1 - y0
  if orientation == 4:   # mirrored vertically
    return x0, 1 - y1, x1, 1 - y0
  if orientation == 5:   # transposed: (x, y) -> (y, x)
    return y0, x0, y1, x1
  if orientation == 6:   # turned 90 clockwise to upright: (x, y) -> (1 - y, x)
    return 1 - y1, x0, 1 - y0, x1
  if orientation == 7:   # transversed: (x, y) -> (1 - y, 1 - x)
    return 1 - y1, 1 - x1, 1 - y0, 1 - x0
  if orientation == 8:   # turned 90 anticlockwise to upright: (x, y) -> (y, 1 - x)
    return y0, 1 - x1, y1, 1 - x0
  return box


def orient_point(point: Point, orientation: int) -> Point:
  """Maps a point in the stored pixels to the upright image, as `orient_box` a box.

  Args:
    point: A normalised (x, y) in the stored pixels.
    orientation: The EXIF orientation tag, 1 to 8; any other value leaves it as it is.
  """
  x, y = point
  return orient_box((x, y, x, y), orientation)[:2]


@dataclasses.dataclass(frozen=True)
class ResizePlan:
  """The resize worked out on the upright image's size.

  Attributes:
    size: The output's (width, height) in pixels.
    content: The (width, height) in pixels the kept region is resampled to: `size`,
      except for 'fit', where it is smaller and padded to `size`.
    region: The normalised (x0, y0, x1, y1) part of the upright image that is kept: all
      of it, except for 'crop', which keeps the centre.
    offset: Where the content's top-left corner lands in the output, (x, y) in pixels:
      the 'fit' padding, else (0, 0).
    scale: Output pixels per upright input pixel in x and y, for scaling annotated
      areas.
  """
  size: Tuple[int, int]                        # output (width, height)
  content: Tuple[int, int]                     # what the (cropped) image is resampled to
  region: Tuple[float, float, float, float]    # normalised source region that is kept
  offset: Tuple[int, int]                      # where the content lands (fit padding)
  scale: Tuple[float, float]


def plan_resize(transform, width: int, height: int) -> Optional[ResizePlan]:
  """The resize an ImageTransform asks of an upright image of this size; None when the
  size stays.

  Args:
    transform: The ImageTransform; its `longest_side`, `size` and `resize_mode` are read.
    width: The upright image's width in pixels (after EXIF orientation).
    height: The upright image's height in pixels.
  """
  full = (0.0, 0.0, 1.0, 1.0)
  if transform.longest_side is not None:
    side = transform.longest_side
    if width >= height:
      size = (side, max(1, round(height * side / width)))
    else:
      size = (max(1, round(width * side / height)), side)
    plan = ResizePlan(size, size, full, (0, 0), (size[0] / width, size[1] / height))
  elif transform.size is not None:
    tw, th = transform.size
    if transform.resize_mode == 'stretch':
      plan = ResizePlan((tw, th), (tw, th), full, (0, 0), (tw / width, th / height))
    elif transform.resize_mode == 'fit':
      s = min(tw / width, th / height)
      cw = min(tw, max(1, round(width * s)))
      ch = min(th, max(1, round(height * s)))
      plan = ResizePlan((tw, th), (cw, ch), full, ((tw - cw) // 2, (th - ch) // 2),
                   (cw / width, ch / height))
    else:
      s = max(tw / width, th / height)
      rw = min(1.0, tw / s / width)
      rh = min(1.0, th / s / height)
      region = ((1 - rw) / 2, (1 - rh) / 2, (1 + rw) / 2, (1 + rh) / 2)
      plan = ResizePlan((tw, th), (tw, th), region, (0, 0), (s, s))
  else:
    return None
  if plan.size == (width, height):
    return None
  return plan


def resize_box(box: Box, plan: ResizePlan) -> Box:
  """Maps a box in the upright image to the output of `plan`, normalised; not clipped.

  Args:
    box: A normalised (xmin, ymin, xmax, ymax) box in the upright image.
    plan: The resize, from `plan_resize`.
  """
  rx0, ry0, rx1, ry1 = plan.region
  cw, ch = plan.content
  ox, oy = plan.offset
  tw, th = plan.size

  def fx(x: float) -> float:
    return (ox + (x - rx0) / (rx1 - rx0) * cw) / tw

  def fy(y: float) -> float:
    return (oy + (y - ry0) / (ry1 - ry0) * ch) / th

  x0, y0, x1, y1 = box
  return fx(x0), fy(y0), fx(x1), fy(y1)


def resize_point(point: Point, plan: ResizePlan) -> Point:
  """Maps a point in the upright image to the output of `plan`, as `resize_box` a box.

  Args:
    point: A normalised (x, y) in the upright image.
    plan: The resize, from `plan_resize`.
  """
  x, y = point
  return resize_box((x, y, x, y), plan)[:2]


def as_box(box: Sequence[float]) -> Box:
  """A box as a tuple of four floats; ValueError unless it has exactly four values.

  Args:
    box: Any sequence of four numbers (xmin, ymin, xmax, ymax), e.g. a list from JSON.
  """
  values = tuple(float(v) for v in box)
  if len(values) != 4:
    raise ValueError(f'a box is 4 numbers (xmin, ymin, xmax, ymax), got {box!r}')
  return values
