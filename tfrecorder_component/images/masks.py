"""Masks as records hold them: COCO instance masks rasterised with pycocotools (the
reference rasteriser; a polygon reaching far outside the image with its arithmetic, step
for step), semantic-segmentation class masks read from their PNGs, both as single-channel
PNGs of the stored image's size.

Instance masks are 0 or 1 (as the Object Detection API writes them and Model Garden's
`TfExampleDecoder(include_mask=True)` reads them); a class mask's pixel is its class
index (0 where a colour mask paints no listed colour).
"""
from __future__ import annotations

import io
import math
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

import numpy as np
from PIL import Image

from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest.rows import InstanceMask, MaskColor


# pycocotools draws a polygon with rleFrPoly (cocoapi common/maskApi.c): it scales the
# vertices by 5 and rounds them ((int)(5 * x + .5), truncating toward zero), walks every
# edge in steps of one of those fifths, and where two consecutive steps cross the middle of
# a pixel column (x = c + 1/2) keeps the first pixel below the crossing (its row clamped to
# [0, height]); the crossings, sorted, toggle the mask column by column. The part of a
# polygon outside the image draws nothing, but it moves the rounded walk of the edges that
# enter the image: clipping the polygon first gives a mask a few pixels off pycocotools'.
# So the polygon is drawn unclipped. The walk holds about 20 bytes a step, though: a vertex
# 1e7 pixels away takes gigabytes (and pycocotools crashes when it cannot have them).
_UPSAMPLE = 5
# A polygon reaching at most this many image sizes (its larger side) past the image is
# handed to pycocotools: its walk then costs at most 3 times an edge across the image.
# One reaching further is walked by _walk, which computes pycocotools' crossings only.
_NEAR_SIZES = 1
# pycocotools' 32-bit ints overflow where 5 times a coordinate, or 5 times an edge's
# width or height, passes 2**31 (a vertex 4.3e8 pixels away, an edge from -2.2e8 to 2.2e8):
# its result is undefined there (a crash, as is anything past about 1e7 for want of
# memory), so there is no raster to match. A polygon reaching further than 2**27 pixels
# from the origin is first cut to the square [-2**27, 2**27]^2 (Sutherland-Hodgman, exact)
# and the cut polygon drawn as pycocotools would draw it: in the square no int overflows.
_FAR = float(2 ** 27)
_C_INT_NAN = -2 ** 31  # x86-64's (int)NaN, which rleFrPoly computes for a repeated vertex


class Raster(NamedTuple):
  """An instance mask at the stored image's size as a pycocotools RLE (`decode` draws
  it), or None when it cannot be drawn; `reason` names what the report lists about it
  ('' when nothing). Kept run-length encoded until written, so an image's masks never
  all sit in memory as pixels.

  Attributes:
    rle: The pycocotools RLE ({'size': [height, width], 'counts': ...}), or None when
      the mask cannot be drawn.
    reason: The box_issues reason for the mask ('mask_size_mismatch', 'mask_not_finite',
      'mask_outside_image', 'empty_mask'), or '' when there is nothing to report.
  """
  rle: Optional[Dict[str, Any]]
  reason: str


def rasterize(mask: InstanceMask, width: int, height: int) -> Raster:
  """An object's segmentation at the stored image's size, with pycocotools: polygon
  parts merged into one mask, run-length encodings as given.

  Reasons: 'mask_size_mismatch' (an RLE of another size: no mask), 'mask_not_finite'
  (a polygon coordinate is NaN or infinite: no mask), 'mask_outside_image' (a polygon
  reaching outside the image: drawn unclipped, as pycocotools draws it, so the mask holds
  the part inside), 'empty_mask' (no pixel, as for a polygon wholly outside the image).

  Args:
    mask: The object's segmentation as annotated: polygons in pixels, or normalised
      (YOLO, `normalized`), or an RLE.
    width: The stored image's width in pixels: the mask's width, and what normalised x
      coordinates are multiplied by.
    height: The stored image's height in pixels, likewise for y.
  """
  from pycocotools import mask as coco_mask  # pylint: disable=g-import-not-at-top
  reason = ''
  if mask.polygons and mask.normalized:  # YOLO: fractions of the image's width and height
    mask = InstanceMask(polygons=tuple(
        tuple(v * limit for v, limit in zip(part, (width, height) * (len(part) // 2)))
        for part in mask.polygons))
  if mask.polygons:
    if not all(math.isfinite(v) for part in mask.polygons for v in part):
      return Raster(None, 'mask_not_finite')
    if any(not (0 <= v <= limit) for part in mask.polygons
           for v, limit in zip(part, (width, height) * (len(part) // 2))):
      reason = 'mask_outside_image'
    parts = [p for p in mask.polygons if len(p) >= 6]  # (pycocotools takes 4 for a box)
    if not parts:
      return Raster(None, 'empty_mask')
    rle = coco_mask.merge([polygon_rle(p, width, height) for p in parts])
  else:
    if tuple(mask.rle_size) != (height, width):
      return Raster(None, 'mask_size_mismatch')
    if isinstance(mask.rle_counts, str):
      rle = {'size': [height, width], 'counts': mask.rle_counts.encode('ascii', 'replace')}
    else:
      rle = coco_mask.frPyObjects({'size': [height, width], 'counts': list(mask.rle_counts)},
                                  height, width)
  if not coco_mask.area(rle):  # nothing drawn, also when a polygon lay wholly outside
    reason = 'empty_mask'
  return Raster(rle, reason)


def polygon_rle(flat: Sequence[float], width: int, height: int) -> Dict[str, Any]:
  """One polygon part (x0, y0, x1, y1, ..., in pixels, finite) as pycocotools'
  `frPyObjects` draws it, also past the image's edges; the rule above for one reaching
  further than 2**27 pixels.

  Args:
    flat: The polygon's vertices, x0, y0, x1, y1, ..., in pixels, all finite.
    width: The image's width in pixels (the RLE's).
    height: The image's height in pixels (the RLE's).
  """
  from pycocotools import mask as coco_mask  # pylint: disable=g-import-not-at-top
  near = _NEAR_SIZES * max(width, height)
  if all(-near <= v <= limit + near
         for v, limit in zip(flat, (width, height) * (len(flat) // 2))):
    return coco_mask.frPyObjects([list(flat)], height, width)[0]
  if any(abs(v) > _FAR for v in flat):
    flat = clip_polygon(flat, -_FAR, -_FAR, _FAR, _FAR)
    if not flat:  # wholly beyond the square: nothing of it in the image
      return coco_mask.frPyObjects({'size': [height, width], 'counts': [height * width]},
                                   height, width)
  return coco_mask.frPyObjects({'size': [height, width],
                                'counts': _walk(flat, width, height)}, height, width)


def _walk(flat: Sequence[float], width: int, height: int) -> List[int]:
  """The uncompressed RLE counts pycocotools' rleFrPoly computes for a polygon part, with
  its arithmetic (doubles, and C's truncating int conversions), but visiting only the
  steps of each edge's walk that cross a pixel column's middle inside the image (each
  found by bisection): at most the image's width of them an edge, however long the edge.
  Coordinates within 2**27 pixels of the origin (where its ints do not overflow)."""
  k = len(flat) // 2
  xs = [int(_UPSAMPLE * float(v) + .5) for v in flat[0:2 * k:2]]  # int(): toward zero
  ys = [int(_UPSAMPLE * float(v) + .5) for v in flat[1:2 * k:2]]
  steps_u: List[np.ndarray] = []  # of each pair of consecutive walk points whose u differ:
  steps_v: List[np.ndarray] = []  # rleFrPoly's xd and yd before they are scaled down
  last = None
  for j in range(k):
    first, end, u, v = _walk_edge(xs[j], ys[j], xs[(j + 1) % k], ys[(j + 1) % k], width)
    if last is not None and first[0] != last[0]:  # where one edge's walk meets the next
      steps_u.append(np.array([first[0] if first[0] < last[0] else first[0] - 1]))
      steps_v.append(np.array([min(first[1], last[1])]))
    steps_u.append(u)
    steps_v.append(v)
    last = end
  xd = (np.concatenate(steps_u).astype(np.float64) + .5) / _UPSAMPLE - .5
  yd = (np.concatenate(steps_v).astype(np.float64) + .5) / _UPSAMPLE - .5
  keep = (np.floor(xd) == xd) & (xd >= 0) & (xd <= width - 1)
  rows = np.ceil(np.clip(yd[keep], 0, height)).astype(np.int64)
  starts = np.sort(np.append(xd[keep].astype(np.int64) * height + rows, height * width))
  runs = np.diff(starts, prepend=0).tolist()
  # rleFrPoly's last loop, as it is: a run of 0 (a repeated start) folds the next run
  # into the one before it.
  counts, j = [runs[0]], 1
  while j < len(runs):
    if runs[j] > 0:
      counts.append(runs[j])
      j += 1
    else:
      j += 1
      if j < len(runs):
        counts[-1] += runs[j]
        j += 1
  return counts


def _walk_edge(xs: int, ys: int, xe: int, ye: int, width: int):
  """rleFrPoly's walk of one edge between upsampled vertices: (its first stored point,
  its last, then u and v of the pairs of consecutive points that cross a column's middle
  inside the image), u being the pair's xd before it is scaled down, v its lower y."""
  dx, dy = abs(xe - xs), abs(ys - ye)
  flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
  if flip:  # walked from the other end, the points stored in the edge's order
    xs, xe, ys, ye = xe, xs, ye, ys
  n = max(dx, dy)
  if dx >= dy:  # a step of x at a time
    s = float(ye - ys) / dx if dx else math.nan  # 0 / 0 at a repeated vertex

    def point(t):  # t: steps from (xs, ys), float64
      return t + xs, np.trunc(ys + s * t + .5) if dx else np.full_like(t, _C_INT_NAN)
  else:  # a step of y at a time
    s = float(xe - xs) / dy

    def point(t):
      return np.trunc(xs + s * t + .5), t + ys

  def stored(e):  # the edge's e-th stored point
    return point(np.asarray(n - e if flip else e, dtype=np.float64))

  first, end = tuple(int(v) for v in stored(0)), tuple(int(v) for v in stored(n))
  lo, hi = sorted((first[0], end[0]))  # u runs monotonically from one to the other
  columns = np.arange(max(0, -(-(lo - 2) // _UPSAMPLE)),
                      min(width - 1, (hi - 3) // _UPSAMPLE) + 1, dtype=np.int64)
  q = _UPSAMPLE * columns + 2  # the xd that scales down to column c: 5c + 2
  if dx >= dy:  # u steps by exactly 1: the pair at u = q and q + 1, in either order
    t = (q - xs).astype(np.float64)
    return first, end, q, np.minimum(point(t)[1], point(t + 1)[1]).astype(np.int64)
  # u = trunc(xs + s t + .5) is monotonic, by steps of 1 but for rounding: xd is the
  # second point's u (less 1 where u rises), so the pair giving xd = q ends at the first
  # point at or above q + 1 where u rises, at or below q where it falls. Found by
  # bisection over the stored points.
  rising = end[0] > first[0]
  target = q + 1 if rising else q
  low, high = np.zeros(len(q), np.int64), np.full(len(q), n, np.int64)
  while (low < high).any():
    mid = (low + high) // 2
    u = stored(mid)[0]
    found = u >= target if rising else u <= target
    high, low = np.where(found, mid, high), np.where(found, low, mid + 1)
  hit = (low >= 1) & (stored(low)[0] == target)
  v = np.minimum(stored(low)[1], stored(np.maximum(low - 1, 0))[1]).astype(np.int64)
  return first, end, q[hit], v[hit]


def clip_polygon(flat: Sequence[float], left: float, top: float, right: float,
                 bottom: float) -> List[float]:
  """A polygon (x0, y0, x1, y1, ...) cut to the rectangle [left, right] x [top, bottom]
  (Sutherland-Hodgman: exact, as the rectangle is convex); flat, possibly empty.

  Args:
    flat: The polygon's vertices, x0, y0, x1, y1, ...
    left: The rectangle's smallest x, in the polygon's units.
    top: Its smallest y.
    right: Its largest x.
    bottom: Its largest y.
  """
  points = list(zip(flat[0::2], flat[1::2]))
  for axis, limit, keep_below in ((0, float(left), False), (0, float(right), True),
                                  (1, float(top), False), (1, float(bottom), True)):
    inside = (lambda p, a=axis, l=limit, b=keep_below: p[a] <= l if b else p[a] >= l)
    cut, previous = [], points[-1] if points else None
    for point in points:
      if inside(point) != inside(previous):
        t = (limit - previous[axis]) / (point[axis] - previous[axis])
        cut.append(tuple(previous[i] + t * (point[i] - previous[i]) if i != axis else limit
                         for i in (0, 1)))
      if inside(point):
        cut.append(point)
      previous = point
    points = cut
  return [v for point in points for v in point]


def decode(rle: Dict[str, Any]) -> Optional[np.ndarray]:
  """The mask of a Raster's RLE (uint8, 0 or 1, height x width), or None when
  pycocotools cannot decode it (a malformed compressed RLE).

  Args:
    rle: A pycocotools RLE, {'size': [height, width], 'counts': ...}: `Raster.rle`.
  """
  from pycocotools import mask as coco_mask  # pylint: disable=g-import-not-at-top
  try:
    return np.ascontiguousarray(coco_mask.decode(rle), dtype=np.uint8)
  except ValueError:
    return None


def encode_png(mask: np.ndarray) -> bytes:
  """A 2-D uint8 mask as a single-channel PNG (what `tf.io.decode_png(channels=1)` reads
  back exactly).

  Args:
    mask: A 2-D uint8 array, height x width: an instance mask of 0 and 1 or a class
      mask of class indices.
  """
  out = io.BytesIO()
  Image.fromarray(mask, 'L').save(out, 'PNG', optimize=False)
  return out.getvalue()


def class_mask(data: bytes, colors: Sequence[MaskColor], ids: Dict[str, int],
               width: int, height: int) -> np.ndarray:
  """A semantic-segmentation mask's class indices (uint8, height x width).

  Without `colors` the mask's pixel values are the class indices: a greyscale or
  palette PNG (a palette image's indices, as Pascal VOC's masks store them). With
  `colors`, each listed colour becomes the id of its class in `ids`, black that is not
  listed becomes 0 and any other colour is an error. Raises RowError `bad_mask` naming
  what is wrong, including a size other than the image's.

  Args:
    data: The mask file's bytes (a PNG, or any image Pillow reads).
    colors: The annotation colours, ((r, g, b), class name) pairs (Vertex AI's
      annotationSpecColors); empty when the pixel values are the class indices.
    ids: The {label: id} map that gives each colour's class its pixel value; ids over
      255 are an error.
    width: The stored image's width in pixels, which the mask must match.
    height: The stored image's height in pixels, which the mask must match.
  """
  try:
    with Image.open(io.BytesIO(data)) as im:
      im.load()
      mode, size = im.mode, im.size
      if not colors:
        if mode not in ('L', 'P'):
          raise RowError('bad_mask', f'the mask is a {mode} image; a mask without '
                         'annotation colours must hold class indices, as a greyscale or '
                         'palette PNG (or give the colours, as Vertex AI\'s '
                         'annotationSpecColors do)')
        pixels = np.asarray(im, dtype=np.uint8)
      else:
        pixels = np.asarray(im.convert('RGB'), dtype=np.uint8)
  except RowError:
    raise
  except Exception as e:  # Pillow raises OSError, SyntaxError, ValueError and others.
    raise RowError('bad_mask', f'the mask cannot be decoded ({type(e).__name__}: {e})'
                   ) from None
  if size != (width, height):
    hint = (' (the image\'s width and height swapped: masks are read in the stored '
            'pixels\' frame, before EXIF orientation)' if size == (height, width) else '')
    raise RowError('bad_mask', f'the mask is {size[0]}x{size[1]}, the image '
                   f'{width}x{height}{hint}')
  if not colors:
    return np.ascontiguousarray(pixels)
  return _colors_to_ids(pixels, colors, ids)


def _colors_to_ids(pixels: np.ndarray, colors: Sequence[MaskColor],
                   ids: Dict[str, int]) -> np.ndarray:
  packed = (pixels[..., 0].astype(np.uint32) << 16) | (pixels[..., 1].astype(np.uint32) << 8
                                                       ) | pixels[..., 2]
  lookup: Dict[int, int] = {0: 0}
  for (r, g, b), name in colors:
    lookup[(r << 16) | (g << 8) | b] = ids[name]
  if max(lookup.values()) > 255:
    raise RowError('bad_mask', f'{max(lookup.values())} classes do not fit an 8-bit mask')
  values, inverse = np.unique(packed, return_inverse=True)
  unknown = [int(v) for v in values if int(v) not in lookup]
  if unknown:
    listed = ', '.join(f'#{v:06x}' for v in unknown[:5])
    counts = int(np.isin(packed, unknown).sum())
    raise RowError('bad_mask', f'{counts} mask pixel(s) have colours no annotation colour '
                   f'names ({listed}{", ..." if len(unknown) > 5 else ""}); list every '
                   'colour the mask paints')
  table = np.array([lookup[int(v)] for v in values], dtype=np.uint8)
  return table[inverse].reshape(packed.shape)
