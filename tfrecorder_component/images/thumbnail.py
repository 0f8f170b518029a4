"""Contact-sheet thumbnails with detection boxes drawn on them and masks tinted over
them, for report.html and `tfrecorder-component inspect`.

A thumbnail costs a bounded decode, whatever the image (`small_image`): every record
that starts a label's sheet gets one, so a hostile image would otherwise cost its row
more than the decode check did (a 606 KB progressive JPEG of 50,000 empty scans: ~40 s
of libjpeg; a 657 KB 13000x13000 RGBA PNG: 1.3 GB). Before Pillow decodes any pixel:

- A JPEG's scans are counted from its markers (`jpeg_walk.scan_count`); past
  MAX_SCANS the thumbnail is skipped. The rule is libjpeg-turbo's: `djpeg -maxscans N`
  and `jpegtran -maxscans N` ("Refuse to decompress progressive JPEG images that have
  more than N scans", cdjpeg.c `progress_monitor`, after D. R. Commander's "Two Issues
  with the JPEG Standard", libjpeg-turbo.org), TurboJPEG's scan limit likewise; libtiff
  (tif_jpeg.c, `LIBTIFF_JPEG_MAX_ALLOWED_SCAN_NUMBER`) and GDAL's MRF driver refuse
  past 100. Each scan decodes every block of its components again (libjpeg's
  progressive decoder keeps the whole image's coefficients), so the cost is scans x
  pixels; encoders write 1 (baseline) to ~10 (libjpeg's `jpeg_simple_progression`) or a
  few dozen (mozjpeg's scan search), so 100 never skips a real photo.
- A PNG, GIF or BMP has no reduced decode: Pillow inflates all of it, up to 4 bytes a
  pixel, then a 3-byte RGB copy. Past PIXEL_BUDGET pixels the thumbnail is skipped:
  25 M pixels is 100 MB decoded as RGBA, ~180 MB with its RGB copy (measured: a
  6300x6300 RGBA PNG, 40 M pixels, took a process from 90 to 395 MB), and is above
  the photos datasets hold (a 24 MP camera's 6000x4000 frame). Pillow itself only
  warns at 89 M pixels, and refuses at twice that.
- A JPEG of one scan (baseline) is decoded at 1/8 scale (Pillow's `draft`, libjpeg's
  DCT scaling): cheap at any size `max_pixels` allows. One of several scans keeps
  every coefficient of the full image whatever the scale (2 bytes each, 64 a block),
  so the pixel budget applies to it as to a PNG.

A skipped thumbnail is drawn as a note ("thumbnail skipped: 50,000 scans (more than
100)") where the image would be, on report.html and on `inspect --contact-sheet`.
"""
from __future__ import annotations

import io
import warnings
import zlib
from typing import Optional, Sequence, Tuple

from tfrecorder_component.images.boxes import LabelledBox

THUMBNAIL = 96  # px, longest side of a contact-sheet image
# Scans a JPEG may have for its thumbnail to be decoded (libjpeg-turbo's djpeg
# -maxscans; libtiff's and GDAL's 100: see the module).
MAX_SCANS = 100
# Pixels a PNG, GIF, BMP or multi-scan JPEG may have for its thumbnail to be decoded:
# 100 MB as RGBA (see the module).
PIXEL_BUDGET = 25_000_000
_SCANS_COUNTED = 1_000_000  # counted at most: the count of 64 MiB of empty scans stays < 1 s

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


def skip_note(image, data: bytes) -> Optional[str]:
  """Why a thumbnail of `image` (opened by Pillow, no pixel decoded yet) would cost too
  much to decode, as the contact sheet shows it ('thumbnail skipped: 50,000 scans (more
  than 100)'), or None when it is cheap (see the module).

  Args:
    image: The Pillow image opened on `data`, its pixels not loaded.
    data: The encoded bytes (a JPEG's scans are counted from them).
  """
  from tfrecorder_component.images.formats import jpeg_walk  # pylint: disable=g-import-not-at-top
  width, height = image.size
  pixels = width * height
  scans = 1
  if image.format == 'JPEG':
    scans = jpeg_walk.scan_count(data, _SCANS_COUNTED)
    if scans > MAX_SCANS:
      more = 'more than ' if scans > _SCANS_COUNTED else ''
      return (f'thumbnail skipped: {more}{min(scans, _SCANS_COUNTED):,} scans '
              f'(more than {MAX_SCANS})')
    if scans <= 1:
      return None  # decoded at 1/8 scale
  if pixels > PIXEL_BUDGET:
    kind = f'a {scans}-scan JPEG, ' if image.format == 'JPEG' else ''
    return (f'thumbnail skipped: {width}x{height}, {kind}{pixels:,} pixels (more than '
            f'{PIXEL_BUDGET:,})')
  return None


def small_image(data: bytes, side: int = THUMBNAIL):
  """(An RGB Pillow image of at most `side` px a side, '') of encoded image bytes,
  decoded at a bounded cost; (None, note) where decoding it would cost too much
  (`skip_note`); (None, '') where Pillow cannot decode the bytes.

  Args:
    data: The encoded image bytes, as the record stores them.
    side: The longest side of the image returned, in pixels.
  """
  from PIL import Image  # pylint: disable=g-import-not-at-top
  try:
    with warnings.catch_warnings():  # the budget decides, not Pillow's bomb warning
      warnings.simplefilter('ignore', Image.DecompressionBombWarning)
      with Image.open(io.BytesIO(data)) as im:
        note = skip_note(im, data)
        if note:
          return None, note
        im.draft('RGB', (side, side))  # JPEG: decode at a reduced scale
        small = im.convert('RGB')
    small.thumbnail((side, side))
    return small, ''
  except Image.DecompressionBombError as e:  # over Pillow's own limit (2 x 89 M pixels)
    return None, f'thumbnail skipped: {e}'.split(', could be')[0]
  except Exception:  # pylint: disable=broad-except
    return None, ''


def make(data: bytes, boxes: Sequence[LabelledBox] = (),
         masks: Sequence[Tuple[str, bytes]] = (),
         class_mask: Optional[bytes] = None) -> Tuple[Optional[bytes], str]:
  """(A JPEG thumbnail, '') of encoded image bytes (at most THUMBNAIL px a side), with
  `boxes` drawn on it and `masks` ((class name, instance mask PNG) pairs) or a
  segmentation `class_mask` (PNG of class indices) tinted over it; (None, note) where
  decoding the image would cost too much (`skip_note`: the note is shown instead);
  (None, '') when Pillow cannot decode it. The record is written either way.

  Args:
    data: The encoded image bytes, as the record stores them.
    boxes: (class name, normalised (xmin, ymin, xmax, ymax)) pairs to draw.
    masks: (class name, instance mask PNG) pairs to tint in the class's box colour.
    class_mask: A segmentation mask PNG of class indices to tint, or None.
  """
  small, note = small_image(data)
  if small is None:
    return None, note
  try:
    tint_masks(small, masks, class_mask)
    if boxes:
      draw_boxes(small, boxes)
    out = io.BytesIO()
    small.save(out, 'JPEG', quality=80)
    return out.getvalue(), ''
  except Exception:  # pylint: disable=broad-except
    return None, ''


def thumbnail(data: bytes, boxes: Sequence[LabelledBox] = (),
              masks: Sequence[Tuple[str, bytes]] = (),
              class_mask: Optional[bytes] = None) -> Optional[bytes]:
  """`make`'s thumbnail alone: JPEG bytes, or None where none is made (skipped, or
  Pillow cannot decode the bytes).

  Args:
    data: The encoded image bytes, as the record stores them.
    boxes: (class name, normalised (xmin, ymin, xmax, ymax)) pairs to draw.
    masks: (class name, instance mask PNG) pairs to tint in the class's box colour.
    class_mask: A segmentation mask PNG of class indices to tint, or None.
  """
  return make(data, boxes, masks, class_mask)[0]


def placeholder(note: str, side: int = THUMBNAIL):
  """A light grey RGB tile of `side` px with `note` written on it, word-wrapped: what
  `inspect --contact-sheet` shows for a skipped thumbnail.

  Args:
    note: The text ('thumbnail skipped: 50,000 scans (more than 100)').
    side: The tile's side in pixels.
  """
  from PIL import Image, ImageDraw  # pylint: disable=g-import-not-at-top
  tile = Image.new('RGB', (side, side), (230, 230, 230))
  draw = ImageDraw.Draw(tile)
  lines, line = [], ''
  for word in note.split():
    if line and draw.textlength(f'{line} {word}') > side - 6:
      lines.append(line)
      line = word
    else:
      line = f'{line} {word}'.strip()
  lines.append(line)
  for i, text in enumerate(lines[:side // 12]):
    draw.text((3, 3 + 12 * i), text, fill=(160, 0, 0))
  return tile
