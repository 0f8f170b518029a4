"""Geometry of the shapes annotation tools draw (CVAT, LabelMe): enclosing boxes, turned
boxes and ellipses, convex hulls, and bitmaps as COCO run-length masks. Coordinates in
pixels, y pointing down."""
from __future__ import annotations

import math
from typing import List, Sequence, Tuple

from tfrecorder_component.manifest.rows import InstanceMask


def bounds(flat: Sequence[float]) -> Tuple[float, float, float, float]:
  """The box (xmin, ymin, xmax, ymax) enclosing points x1, y1, x2, y2, ...

  Args:
    flat: the points' coordinates, flat: x1, y1, x2, y2, ...; at least one point.
  """
  xs, ys = flat[0::2], flat[1::2]
  return min(xs), min(ys), max(xs), max(ys)


def rotated_corners(x0: float, y0: float, x1: float, y1: float, degrees: float
                    ) -> Tuple[float, ...]:
  """The corners, top left first, of the box (x0, y0, x1, y1) turned by `degrees` about
  its centre: clockwise on the image (whose y axis points down), as CVAT turns it.

  Returns x1, y1, ... x4, y4: the corners that were at (x0, y0), (x1, y0), (x1, y1)
  and (x0, y1).

  Args:
    x0: the unturned box's left edge.
    y0: its top edge.
    x1: its right edge.
    y1: its bottom edge.
    degrees: the turn, in degrees, clockwise on the image; 0 leaves the box as it is.
  """
  angle = math.radians(degrees)
  cos, sin = math.cos(angle), math.sin(angle)
  cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
  corners = []
  for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1)):
    corners += [cx + cos * (x - cx) - sin * (y - cy), cy + sin * (x - cx) + cos * (y - cy)]
  return tuple(corners)


def ellipse_bounds(cx: float, cy: float, rx: float, ry: float, degrees: float = 0.0
                   ) -> Tuple[float, float, float, float]:
  """The box enclosing an ellipse of radii (rx, ry) turned by `degrees` (as above).

  Args:
    cx: the ellipse's centre, x.
    cy: the ellipse's centre, y.
    rx: the radius along its own x axis (before it is turned).
    ry: the radius along its own y axis.
    degrees: the turn about its centre, in degrees, clockwise on the image.
  """
  angle = math.radians(degrees)
  cos, sin = math.cos(angle), math.sin(angle)
  half_x = math.hypot(rx * cos, ry * sin)
  half_y = math.hypot(rx * sin, ry * cos)
  return cx - half_x, cy - half_y, cx + half_x, cy + half_y


def ellipse_polygon(cx: float, cy: float, rx: float, ry: float, degrees: float = 0.0,
                    sides: int = 64) -> Tuple[float, ...]:
  """An ellipse as a polygon of `sides` vertices (on the ellipse), x1, y1, x2, y2, ...

  Args:
    cx: the ellipse's centre, x.
    cy: the ellipse's centre, y.
    rx: the radius along its own x axis (before it is turned).
    ry: the radius along its own y axis.
    degrees: the turn about its centre, in degrees, clockwise on the image.
    sides: the number of vertices, the first at the end of the turned x radius.
  """
  angle = math.radians(degrees)
  cos, sin = math.cos(angle), math.sin(angle)
  flat = []
  for i in range(sides):
    t = 2 * math.pi * i / sides
    x, y = rx * math.cos(t), ry * math.sin(t)
    flat += [cx + cos * x - sin * y, cy + sin * x + cos * y]
  return tuple(flat)


def convex_hull(points: Sequence[Tuple[float, float]]) -> List[Tuple[float, float]]:
  """The convex hull of `points` (Andrew's monotone chain), counter-clockwise.

  Args:
    points: (x, y) points, in any order; repeats are dropped. Two distinct points or
      fewer are returned as they are, sorted.
  """
  points = sorted(set(points))
  if len(points) <= 2:
    return list(points)
  cross = lambda o, a, b: (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
  lower: List[Tuple[float, float]] = []
  upper: List[Tuple[float, float]] = []
  for p in points:
    while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
      lower.pop()
    lower.append(p)
  for p in reversed(points):
    while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
      upper.pop()
    upper.append(p)
  return lower[:-1] + upper[:-1]


def bitmap_mask(bitmap, left: int, top: int, height: int, width: int) -> InstanceMask:
  """A 0/1 array (rows, columns) placed with its top left pixel at (left, top) in an
  image of `height` x `width` pixels (what falls outside it is cut), as COCO's
  uncompressed run-length encoding: column-major runs, zeros first. Computed from the
  bitmap's own pixels, never an image-sized array.

  Args:
    bitmap: a 2-D array (or nested lists) of the object's pixels, rows by columns; any
      non-zero value is the object.
    left: the image column of the bitmap's first column, in pixels (may be negative).
    top: the image row of the bitmap's first row, in pixels (may be negative).
    height: the image's height in pixels.
    width: the image's width in pixels.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  bitmap = np.asarray(bitmap) != 0
  first_row, first_column = max(0, -top), max(0, -left)
  inside = bitmap[first_row:max(first_row, height - top),
                  first_column:max(first_column, width - left)]
  columns, rows = np.nonzero(inside.T)  # in column-major order
  flat = ((columns.astype(np.int64) + left + first_column) * height
          + rows.astype(np.int64) + top + first_row)
  total = height * width
  if not flat.size:
    return InstanceMask(rle_size=(height, width), rle_counts=(total,))
  breaks = np.flatnonzero(np.diff(flat) != 1) + 1
  starts = flat[np.concatenate([[0], breaks])]
  ends = flat[np.concatenate([breaks - 1, [flat.size - 1]])] + 1
  zeros = starts - np.concatenate([[0], ends[:-1]])
  runs = np.column_stack([zeros, ends - starts]).ravel().tolist()
  if total > ends[-1]:
    runs.append(total - int(ends[-1]))
  return InstanceMask(rle_size=(height, width), rle_counts=tuple(int(r) for r in runs))
