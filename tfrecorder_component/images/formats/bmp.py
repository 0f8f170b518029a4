"""BMP as TensorFlow decodes it: its own reader (`decode_image_op.cc`, `DecodeBmpV2`),
which looks at four header fields and the file's length and nothing else.

It reads the pixel-data offset (bytes 10-13), width (18-21), height (22-25) and bits per
pixel (28-29) as little-endian signed integers; channels are bits per pixel / 8
(truncated, as C divides) and must be 1, 3 or 4; the width must be positive, the height
non-zero (negative: rows top-down), width x |height| below 2^31 / 8; and the file must be
exactly offset + |height| rows of (channels x width) bytes padded to 4. Compression,
palettes and bit fields are not read: an 8-bit BMP decodes to its palette indices, one
channel. So an 8-bit BMP is written only when its palette is the grey ramp (entry i is
grey level i, as Pillow and Windows write a greyscale BMP), where the indices are the
pixels; one of other colours would decode to wrong pixels, and fails as
`unsupported_format` (convert_unsupported re-encodes it through its palette as PNG).
The colour table is read as Microsoft's BITMAPINFOHEADER lays it out: after the 14-byte
file header and the DIB header (its size at byte 14), 4 bytes an entry (blue, green, red,
reserved), up to the pixel data.
"""
from __future__ import annotations

import struct

from tfrecorder_component.errors import RowError
from tfrecorder_component.images.formats import ImageInfo, check_pixels, refuse_size


def probe(data: bytes, decode: bool, max_pixels: int) -> ImageInfo:
  """Header and length are all TensorFlow checks, so `decode` adds nothing.

  Args:
    data: The BMP file's bytes.
    decode: Ignored: the header check is already TensorFlow's decision.
    max_pixels: The most width x |height| allowed (the `max_pixels` option).
  """
  del decode
  if len(data) < 32:  # "Incomplete bmp content, requires at least 32 bytes"
    raise RowError('truncated', f'the BMP header is incomplete ({len(data)} bytes of 32)')
  offset, = struct.unpack_from('<i', data, 10)
  width, height = struct.unpack_from('<ii', data, 18)
  bits, = struct.unpack_from('<h', data, 28)
  channels = int(bits / 8)  # C's division truncates toward zero
  if channels not in (1, 3, 4):
    raise RowError('unsupported_format',
                   f'{bits}-bit BMP cannot be decoded by TensorFlow (8, 24 and 32-bit can)')
  if width <= 0 or height == 0:
    raise RowError('corrupt', f'the BMP header claims size {width}x{height}')
  if offset < 0:
    raise RowError('corrupt', f'the BMP header puts its pixels at offset {offset}')
  rows = abs(height)
  if width * rows >= (2**31 - 1) // 8:
    raise refuse_size('bmp', width, rows, 'width x height below 2^31 / 8')
  check_pixels(width, rows, max_pixels)
  expected = offset + (channels * width + 3) // 4 * 4 * rows
  if len(data) < expected:
    raise RowError('truncated', f'the BMP has {len(data)} bytes, its header needs {expected}')
  if len(data) > expected:
    raise RowError('unsupported_format',
                   f'the BMP has {len(data) - expected} byte(s) after its pixel data, which '
                   f'TensorFlow\'s BMP decoder refuses (convert_unsupported re-encodes it)')
  if channels == 1 and not _grey_palette(data, offset):
    raise RowError('unsupported_format',
                   'an 8-bit BMP whose palette is not grey: TensorFlow\'s BMP decoder reads '
                   'no palette and would give its colour indices as grey levels '
                   '(convert_unsupported re-encodes it as PNG in its colours)')
  return ImageInfo('bmp', rows, width, channels)


def _grey_palette(data: bytes, offset: int) -> bool:
  """Whether an 8-bit BMP's colour table is the grey ramp (entry i: blue = green = red
  = i), or absent, where its indices are its grey levels."""
  if len(data) < 18:
    return True
  header, = struct.unpack_from('<I', data, 14)
  start = 14 + header
  table = data[start:max(start, min(offset, len(data)))]
  for i in range(len(table) // 4):
    blue, green, red = table[4 * i:4 * i + 3]
    if not blue == green == red == i:
      return False
  return True
