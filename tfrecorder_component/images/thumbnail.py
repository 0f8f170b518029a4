"""Contact-sheet thumbnails with detection boxes drawn on them and masks tinted over
them, for report.html and `tfrecorder-component inspect`."""
from __future__ import annotations

import io
import zlib
from typing import Optional, Sequence, Tuple

from tfrecorder_component.images.boxes import LabelledBox

THUMBNAIL = 96  # px, longest side of a contact-sheet image

# Box outline colours on contact sheets; a class has the same colour on every image.
BOX_COLOURS = ((255, 221, 0), (0, 230, 255), (255, 64, 160), (64, 255, 64), (255, 140, 0))


def box_colour(name: str) -> Tuple[int, int, int]:
  """The (r, g, b) outline colour of a class: one of BOX_COLOURS, by a CRC-32 of its name,
  so that a class has the same colour on every image and every run.

  Args:
    name: The class name.
  """
  return BOX_COLOURS[zlib.crc32(name.encode('utf-8')) % len(BOX_COLOURS)]


def draw_boxes(image, boxes: Sequence[LabelledBox]) -> None:
  """Draws each box, outlined, with its class name, on a Pillow image (in place).

  Args:
    image: The Pillow image to draw on, e.g. a thumbnail.
    boxes: (class name, normalised (xmin, ymin, xmax, ymax)) pairs; the name is cut to
      16 characters.
  """
  from PIL import ImageDraw  # pylint: disable=g-import-not-at-top
  draw = ImageDraw.Draw(image)
  width, height = image.size
  for name, (xmin, ymin, xmax, ymax) in boxes:
    colour = box_colour(name)
    box = (round(xmin * (width - 1)), round(ymin * (height - 1)),
           round(xmax * (width - 1)), round(ymax * (height - 1)))
    draw.rectangle(box, outline=colour, width=2)
    draw.text((box[0] + 3, box[1] + 2), name[:16], fill=colour)


_TINT = 0.45  # opacity of a mask's colour over the picture


def _tint(image, mask_png: bytes, colour_of) -> None:
  """Tints `image` (RGB, in place) where the mask PNG is not 0, with `colour_of(value)`
  of each mask value (an instance mask's is its class colour, a class mask's its class
  index's)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from PIL import Image  # pylint: disable=g-import-not-at-top
  with Image.open(io.BytesIO(mask_png)) as mask:
    values = np.asarray(mask.convert('L').resize(image.size, Image.Resampling.NEAREST))
  pixels = np.asarray(image, dtype=np.float32)
  for value in np.unique(values):
    if value:
      where = values == value
      pixels[where] = pixels[where] * (1 - _TINT) + np.asarray(colour_of(int(value))) * _TINT
  image.paste(Image.fromarray(pixels.round().astype(np.uint8), 'RGB'))


def tint_masks(image, masks: Sequence[Tuple[str, bytes]] = (),
               class_mask: Optional[bytes] = None) -> None:
  """Tints instance masks ((class name, PNG) pairs, in the class's box colour) or a
  segmentation class mask (PNG of class indices, a colour an index) over `image` (RGB,
  in place).

  Args:
    image: An RGB Pillow image, tinted in place.
    masks: (class name, instance mask PNG) pairs; each mask is resized to the image
      (nearest-neighbour) and tinted where it is not 0.
    class_mask: A segmentation mask PNG of class indices, or None for none; index 0 is
      left untinted.
  """
  for name, mask in masks:
    _tint(image, mask, lambda _, name=name: box_colour(name))
  if class_mask is not None:
    _tint(image, class_mask, lambda value: BOX_COLOURS[value % len(BOX_COLOURS)])


def thumbnail(data: bytes, boxes: Sequence[LabelledBox] = (),
              masks: Sequence[Tuple[str, bytes]] = (),
              class_mask: Optional[bytes] = None) -> Optional[bytes]:
  """A JPEG thumbnail (at most THUMBNAIL px a side) of encoded image bytes, with `boxes`
  drawn on it and `masks` ((class name, instance mask PNG) pairs) or a segmentation
  `class_mask` (PNG of class indices) tinted over it, or None when Pillow cannot decode
  them (the record is still written).

  Args:
    data: The encoded image bytes, as the record stores them.
    boxes: (class name, normalised (xmin, ymin, xmax, ymax)) pairs to draw.
    masks: (class name, instance mask PNG) pairs to tint in the class's box colour.
    class_mask: A segmentation mask PNG of class indices to tint, or None.
  """
  from PIL import Image  # pylint: disable=g-import-not-at-top
  try:
    with Image.open(io.BytesIO(data)) as im:
      im.draft('RGB', (THUMBNAIL, THUMBNAIL))  # JPEG: decode at a reduced scale
      small = im.convert('RGB')
    small.thumbnail((THUMBNAIL, THUMBNAIL))
    tint_masks(small, masks, class_mask)
    if boxes:
      draw_boxes(small, boxes)
    out = io.BytesIO()
    small.save(out, 'JPEG', quality=80)
    return out.getvalue()
  except Exception:  # pylint: disable=broad-except
    return None
