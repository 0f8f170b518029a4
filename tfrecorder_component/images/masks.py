"""Masks as records hold them: COCO instance masks rasterised with pycocotools (the
reference rasteriser), semantic-segmentation class masks read from their PNGs, both as
single-channel PNGs of the stored image's size.

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


class Raster(NamedTuple):
  """An instance mask at the stored image's size as a pycocotools RLE (`decode` draws
  it), or None when it cannot be drawn; `reason` names what the report lists about it
  ('' when nothing). Kept run-length encoded until written, so an image's masks never
  all sit in memory as pixels."""
  rle: Optional[Dict[str, Any]]
  reason: str


def rasterize(mask: InstanceMask, width: int, height: int) -> Raster:
  """An object's segmentation at the stored image's size, with pycocotools: polygon
  parts merged into one mask, run-length encodings as given.

  Reasons: 'mask_size_mismatch' (an RLE of another size: no mask), 'mask_not_finite'
  (a polygon coordinate is NaN or infinite: no mask), 'mask_outside_image' (a polygon
  reaching outside the image, clipped to it before it is drawn), 'empty_mask' (no
  pixel).
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
    # Clipped before pycocotools draws them: it walks every edge at 5 times its length,
    # so one far-away vertex (1e7, 1e10) would take gigabytes.
    parts = [clipped for clipped in (clip_polygon(p, width, height) for p in mask.polygons)
             if len(clipped) >= 6]
    if not parts:
      return Raster(None, 'empty_mask')
    rle = coco_mask.merge(coco_mask.frPyObjects(parts, height, width))
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


def clip_polygon(flat: Sequence[float], width: float, height: float) -> List[float]:
  """A polygon (x0, y0, x1, y1, ...) cut to the rectangle [0, width] x [0, height]
  (Sutherland-Hodgman: exact, as the rectangle is convex); flat, possibly empty."""
  points = list(zip(flat[0::2], flat[1::2]))
  for axis, limit, keep_below in ((0, 0.0, False), (0, float(width), True),
                                  (1, 0.0, False), (1, float(height), True)):
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
  pycocotools cannot decode it (a malformed compressed RLE)."""
  from pycocotools import mask as coco_mask  # pylint: disable=g-import-not-at-top
  try:
    return np.ascontiguousarray(coco_mask.decode(rle), dtype=np.uint8)
  except ValueError:
    return None


def encode_png(mask: np.ndarray) -> bytes:
  """A 2-D uint8 mask as a single-channel PNG (what `tf.io.decode_png(channels=1)` reads
  back exactly)."""
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
