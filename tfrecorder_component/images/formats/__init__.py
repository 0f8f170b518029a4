"""What `tf.io.decode_image` accepts, one module a format, each rule beside the
TensorFlow (or libjpeg, libpng, giflib) source it follows.

Each module's `probe(data, decode, max_pixels)` returns the `ImageInfo` TensorFlow's
decoder yields for the bytes (height, width, channels, frames) or raises `RowError`.
Without `decode` it reads the header only; with it, the answer is TensorFlow's: the
bytes are accepted exactly when `tf.io.decode_image(data)` and
`tf.io.decode_image(data, expand_animations=False)` both succeed. TensorFlow itself is
never imported: JPEG is decoded by libjpeg-turbo through Pillow, PNG's compressed data
by zlib, and the rules around them (how the data may end, which errors are fatal) are
TensorFlow's, written out here.

The format is chosen as TensorFlow chooses it (`decode_image_op.cc`,
`ClassifyFileFormat`): by the first bytes alone.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Optional

from tfrecorder_component.errors import RowError

JPEG_MAGIC = b'\xff\xd8\xff'
PNG_MAGIC = b'\x89PNG\r\n\x1a\n'
GIF_MAGIC = b'GIF8'
BMP_MAGIC = b'BM'
_OBJECT_REPR = re.compile(r' ?<[\w.]+ object at 0x[0-9a-f]+>')


@dataclasses.dataclass(frozen=True)
class ImageInfo:
  """What a record says about its image bytes: what TensorFlow decodes them to.

  Attributes:
    format: The format TensorFlow takes the bytes for: 'jpeg', 'png', 'gif' or 'bmp'.
    height: Height in pixels of the stored image, before any EXIF orientation (a GIF's
      largest frame's).
    width: Width in pixels, likewise.
    channels: The channel count `tf.io.decode_image` returns (3 for every GIF, 3 or 4 for
      a palette PNG, 1 for an 8-bit BMP).
    frames: Number of frames: a GIF's images, 1 for every other format.
  """
  format: str   # 'jpeg', 'png', 'gif' or 'bmp'
  height: int
  width: int
  channels: int
  frames: int = 1


def tensorflow_format(data: bytes) -> Optional[str]:
  """The format `tf.io.decode_image` takes the bytes for, from their first bytes
  (JPEG, then PNG, GIF, BMP; decode_image_op.cc), or None.

  Args:
    data: The image file's bytes (only its magic number is read).
  """
  for name, magic in (('jpeg', JPEG_MAGIC), ('png', PNG_MAGIC), ('gif', GIF_MAGIC),
                      ('bmp', BMP_MAGIC)):
    if data.startswith(magic):
      return name
  return None


def check_pixels(width: int, height: int, max_pixels: int) -> None:
  """The project's own limit (a decompression bomb guard), before any pixel is decoded.

  Args:
    width: Width in pixels, from the header.
    height: Height in pixels, from the header.
    max_pixels: The `max_pixels` option: the most width x height allowed.

  Raises:
    RowError: `too_large`, when width x height exceeds `max_pixels`.
  """
  if width * height > max_pixels:
    raise RowError('too_large',
                   f'{width}x{height} = {width * height} pixels exceeds the limit of '
                   f'{max_pixels} (raise max_pixels if this image is genuine)')


def refuse_size(fmt: str, width: int, height: int, limit: str) -> RowError:
  """TensorFlow's own size limit for a format, which no max_pixels lifts.

  Returns the `too_large` RowError for the caller to raise.

  Args:
    fmt: The format's name ('jpeg', 'png', 'bmp'), upper-cased in the message.
    width: Width in pixels, from the header.
    height: Height in pixels, from the header.
    limit: TensorFlow's limit in words, e.g. 'width x height below 2^31 / 8'.
  """
  return RowError('too_large', f'a {width}x{height} {fmt.upper()} is larger than '
                  f'TensorFlow decodes ({limit})')


def pillow_message(error: Exception) -> str:
  """Pillow's message without the repr of the in-memory file it read (`<_io.BytesIO
  object at 0x...>`), which says nothing about the image.

  Args:
    error: The exception Pillow raised; its class name stands in for an empty message.
  """
  return _OBJECT_REPR.sub('', str(error)).strip() or type(error).__name__
