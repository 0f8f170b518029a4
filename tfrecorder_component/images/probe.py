"""Header-only image probing: format, height, width and channels without a full decode.

The channel count is the one `tf.io.decode_image(data)` returns for the bytes (for
example 3 for a palette PNG without transparency, 4 with it; 3 for every GIF, whose
frames TensorFlow decodes to RGB). Height and width are those of the stored pixels,
before any EXIF orientation is applied.
"""
from __future__ import annotations

import dataclasses
import io
import re
import struct
import warnings
import zlib

from PIL import Image

from tfrecorder_component.errors import RowError

# Formats that `tf.io.decode_image` decodes, keyed by Pillow's format name.
SUPPORTED_FORMATS = {'JPEG': 'jpeg', 'PNG': 'png', 'GIF': 'gif', 'BMP': 'bmp'}
DEFAULT_MAX_PIXELS = 178_956_970  # Pillow's own decompression-bomb limit (2**31 / 4 / 3).

_PNG_CHANNELS = {'1': 1, 'L': 1, 'I': 1, 'I;16': 1, 'I;16B': 1, 'I;16L': 1,
                 'LA': 2, 'RGB': 3, 'RGBA': 4}
_JPEG_CHANNELS = {'L': 1, 'RGB': 3, 'YCbCr': 3, 'CMYK': 3}
_BMP_CHANNELS_BY_BITS = {8: 1, 24: 3, 32: 4}


@dataclasses.dataclass(frozen=True)
class ImageInfo:
  """What a record says about its image bytes."""
  format: str   # 'jpeg', 'png', 'gif' or 'bmp'
  height: int
  width: int
  channels: int
  frames: int = 1



_OBJECT_REPR = re.compile(r' ?<[\w.]+ object at 0x[0-9a-f]+>')


def pillow_message(error: Exception) -> str:
  """Pillow's message without the repr of the in-memory file it read (`<_io.BytesIO
  object at 0x...>`), which says nothing about the image."""
  return _OBJECT_REPR.sub('', str(error)).strip() or type(error).__name__

def _channels(fmt: str, im: Image.Image, data: bytes) -> int:
  if fmt == 'JPEG':
    table = _JPEG_CHANNELS
  elif fmt == 'PNG':
    if im.mode == 'P':
      return 4 if 'transparency' in im.info else 3
    table = _PNG_CHANNELS
  elif fmt == 'GIF':
    return 3
  else:
    return _bmp_channels(data)
  if im.mode not in table:
    raise RowError('unsupported_format', f'{fmt} with colour mode {im.mode} is not supported')
  return table[im.mode]


def _bmp_channels(data: bytes) -> int:
  """TensorFlow's BMP decoder goes by bits per pixel, not by Pillow's mode, and needs the
  file to be exactly pixel-data offset + padded rows long."""
  if len(data) < 30:
    raise RowError('truncated', 'the BMP header is incomplete')
  offset, = struct.unpack_from('<i', data, 10)
  width, height = struct.unpack_from('<ii', data, 18)
  bits, = struct.unpack_from('<H', data, 28)
  if bits not in _BMP_CHANNELS_BY_BITS:
    raise RowError('unsupported_format',
                   f'{bits}-bit BMP cannot be decoded by TensorFlow (8, 24 and 32-bit can)')
  channels = _BMP_CHANNELS_BY_BITS[bits]
  expected = offset + (8 * channels * abs(width) + 31) // 32 * 4 * abs(height)
  if len(data) < expected:
    raise RowError('truncated', f'the BMP has {len(data)} bytes, its header needs {expected}')
  if len(data) > expected:
    raise RowError('unsupported_format',
                   f'the BMP has {len(data) - expected} byte(s) after its pixel data, which '
                   f'TensorFlow\'s BMP decoder refuses (convert_unsupported re-encodes it)')
  return channels


def probe_image(data: bytes, max_pixels: int = DEFAULT_MAX_PIXELS,
                decode: bool = False) -> ImageInfo:
  """Reads format, size and channels from the image header of `data`.

  With `decode`, also decodes every frame so that no truncated or corrupt file becomes
  a record (see `_decode`). Raises RowError (reason `empty`, `not_an_image`,
  `unsupported_format`, `too_large`, and with `decode` also `truncated` or `corrupt`)
  for bytes that cannot become a decodable record.
  """
  if not data:
    raise RowError('empty', 'the file is empty (0 bytes)')
  try:
    with warnings.catch_warnings():
      warnings.simplefilter('ignore', Image.DecompressionBombWarning)
      im = Image.open(io.BytesIO(data))
  except Image.DecompressionBombError as e:
    raise RowError('too_large', str(e)) from None
  except Exception as e:  # Pillow raises UnidentifiedImageError and others.
    raise RowError('not_an_image',
                   f'not a recognised image ({type(e).__name__}: {pillow_message(e)})') from None
  with im:
    fmt = im.format
    if fmt not in SUPPORTED_FORMATS:
      raise RowError('unsupported_format',
                     f'{fmt} images are not decodable by tf.io.decode_image '
                     f'(supported: JPEG, PNG, GIF, BMP)')
    width, height = im.size
    if width <= 0 or height <= 0:
      raise RowError('not_an_image', f'image header claims size {width}x{height}')
    if width * height > max_pixels:
      raise RowError('too_large',
                     f'{width}x{height} = {width * height} pixels exceeds the limit of '
                     f'{max_pixels} (raise max_pixels if this image is genuine)')
    channels = _channels(fmt, im, data)
    frames = getattr(im, 'n_frames', 1) if fmt == 'GIF' else 1
    if decode:
      _decode(im, data)
  return ImageInfo(SUPPORTED_FORMATS[fmt], height, width, channels, frames)


def _decode(im: Image.Image, data: bytes) -> None:
  """Decodes every frame of an opened image; raises RowError `truncated` or `corrupt`.

  JPEG is decoded at 1/8 scale (libjpeg's DCT scaling): the whole entropy-coded stream
  is still read, so truncation and broken data are caught, for about 3/4 of the cost of
  a full decode. Pillow fails on the same truncated and broken files TensorFlow fails
  on (the property-based tests check that whatever passes decodes in TensorFlow).
  """
  if im.format == 'GIF':
    _check_gif_blocks(data)
  elif im.format == 'PNG':
    _check_png_chunks(data)
  try:
    if im.format == 'JPEG':
      im.draft(im.mode, (max(1, im.size[0] // 8), max(1, im.size[1] // 8)))
    for frame in range(getattr(im, 'n_frames', 1)):
      im.seek(frame)
      im.load()
  except Exception as e:  # Pillow raises OSError, SyntaxError, ValueError, struct.error.
    text = str(e)
    reason = 'truncated' if 'truncated' in text or 'end of' in text.lower() else 'corrupt'
    raise RowError(reason, f'the image data cannot be decoded ({type(e).__name__}: {text})'
                   ) from None


def _check_png_chunks(data: bytes) -> None:
  """Walks a PNG's chunks as libpng (TensorFlow's decoder) reads them: every chunk whole,
  each critical chunk's CRC right, and the file ending with IEND. Pillow decodes PNGs
  that break these (it stops once the pixels are in) and TensorFlow refuses them."""
  at = 8  # the signature
  while True:
    if at + 8 > len(data):
      raise RowError('truncated', 'the PNG ends before its IEND chunk')
    length, kind = struct.unpack('>I4s', data[at:at + 8])
    end = at + 8 + length + 4
    if end > len(data):
      raise RowError('truncated', f'the PNG ends inside its {kind.decode("latin-1")!r} chunk')
    critical = kind[:1].isupper()
    if critical and zlib.crc32(data[at + 4:end - 4]) != struct.unpack('>I', data[end - 4:end])[0]:
      raise RowError('corrupt', f'the PNG\'s {kind.decode("latin-1")!r} chunk fails its CRC')
    if kind == b'IEND':
      return
    at = end


def _check_gif_blocks(data: bytes) -> None:
  """Refuses a GIF whose image data stops short, as TensorFlow's decoder (giflib's
  DGifSlurp) does and Pillow does not.

  TensorFlow keeps what it read once an image is complete: a missing trailer or a broken
  block after a complete image is accepted, an image without its block terminator is not.
  """
  pos = 13
  flags = data[10] if len(data) > 10 else 0
  screen = struct.unpack('<HH', data[6:10]) if len(data) >= 10 else (0, 0)
  if flags & 0x80:  # global colour table
    pos += 3 << ((flags & 7) + 1)
  images = 0
  while pos < len(data):
    kind = data[pos]
    if kind == 0x2C:  # image descriptor, local colour table, LZW code size, sub-blocks
      if pos + 9 <= len(data):
        left, top, width, height = struct.unpack('<HHHH', data[pos + 1:pos + 9])
        if left + width > screen[0] or top + height > screen[1]:
          # TensorFlow then returns frames of another size than the header's.
          raise RowError('corrupt', f'the GIF\'s image {images + 1} ({width}x{height} at '
                         f'{left},{top}) extends beyond its {screen[0]}x{screen[1]} screen')
      local = data[pos + 9] if pos + 9 < len(data) else 0
      pos += 10 + ((3 << ((local & 7) + 1)) if local & 0x80 else 0) + 1
    elif kind == 0x21:  # extension: label, sub-blocks
      pos += 2
    else:  # the trailer, or a block giflib stops at
      break
    while pos < len(data) and data[pos]:
      pos += data[pos] + 1
    if pos >= len(data):  # no block terminator
      if kind == 0x2C:
        raise RowError('truncated', f'the GIF\'s image {images + 1} stops before its end')
      break
    pos += 1
    images += kind == 0x2C
  if not images:
    raise RowError('truncated', 'the GIF holds no complete image')


def convert_to_png(data: bytes) -> bytes:
  """Re-encodes an image TensorFlow cannot decode (WebP, TIFF, ...) as lossless PNG.

  The first frame is kept; colour modes TensorFlow's PNG decoder lacks become RGB(A).
  """
  try:
    with Image.open(io.BytesIO(data)) as im:
      im.load()
      if im.mode not in ('L', 'LA', 'RGB', 'RGBA'):
        im = im.convert('RGBA' if 'A' in im.getbands() or 'transparency' in im.info else 'RGB')
      out = io.BytesIO()
      im.save(out, 'PNG')
      return out.getvalue()
  except Exception as e:  # Pillow raises OSError, SyntaxError, ValueError.
    raise RowError('unsupported_format', f'could not convert the image to PNG '
                   f'({type(e).__name__}: {pillow_message(e)})') from None
