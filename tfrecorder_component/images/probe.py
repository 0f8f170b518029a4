"""Probing image bytes: format, height, width and channels as `tf.io.decode_image`
returns them, from the header alone, or (`decode=True`) with TensorFlow's own decision
whether the bytes decode at all.

The rules live in `images/formats/`, one module a format, each beside the TensorFlow
source it follows; TensorFlow itself is never imported. The channel count is the one
TensorFlow returns (3 for a palette PNG without transparency, 4 with it; 3 for every
GIF; 1 for an 8-bit BMP); height and width are those of the stored pixels, before any
EXIF orientation. An image re-encoded (`convert_to_png`, or a transform) is named by its
stored format (`stored_filename`).
"""
from __future__ import annotations

import io
import posixpath
import struct
import warnings
from typing import Optional

from PIL import Image

from tfrecorder_component.errors import RowError
from tfrecorder_component.option_table import DEFAULT_MAX_PIXELS
from tfrecorder_component.images.formats import ImageInfo, pillow_message, tensorflow_format
from tfrecorder_component.images.formats import bmp, gif, jpeg, png

__all__ = ['DEFAULT_MAX_PIXELS', 'ImageInfo', 'convert_to_png', 'pillow_message',
           'probe_image', 'stored_filename']


# The formats `tf.io.decode_image` decodes on every supported TensorFlow. (TensorFlow
# 2.21 also decodes WebP, 2.16 does not: WebP is `unsupported_format`, and converted.)
_PROBES = {'jpeg': jpeg.probe, 'png': png.probe, 'gif': gif.probe, 'bmp': bmp.probe}


def probe_image(data: bytes, max_pixels: int = DEFAULT_MAX_PIXELS,
                decode: bool = False) -> ImageInfo:
  """What `tf.io.decode_image(data)` yields: format, height, width, channels, frames.

  From the header by default; with `decode`, the answer is TensorFlow's: RowError
  unless `tf.io.decode_image(data)` succeeds (see `images.formats`). Raises RowError
  with reason `empty`, `not_an_image`, `unsupported_format`, `too_large`, `truncated`
  or `corrupt`.

  Args:
    data: The image file's bytes.
    max_pixels: The most width x height allowed (the `max_pixels` option), checked
      before any pixel is decoded; the default is Pillow's own decompression-bomb limit.
    decode: Ask TensorFlow's decision (the `verify_decode` option); False reads the
      header only.
  """
  if not data:
    raise RowError('empty', 'the file is empty (0 bytes)')
  fmt = tensorflow_format(data)
  if fmt is None:
    raise _not_decodable(data)
  return _PROBES[fmt](data, decode, max_pixels)


def _not_decodable(data: bytes) -> RowError:
  """Bytes TensorFlow does not take for an image: another format Pillow knows (which
  `convert_unsupported` re-encodes), or not an image at all."""
  try:
    with warnings.catch_warnings():
      warnings.simplefilter('ignore', Image.DecompressionBombWarning)
      with Image.open(io.BytesIO(data)) as im:
        fmt = im.format
  except Exception as e:  # Pillow raises UnidentifiedImageError and others.
    brand = data[8:12] if data[4:8] == b'ftyp' else b''
    if brand in _HEIF_BRANDS:  # ISO/IEC 23008-12's brands (HEIF, HEIC; AVIF's are avif, avis)
      kind = 'AVIF' if brand in (b'avif', b'avis') else 'HEIF (HEIC)'
      return RowError('unsupported_format', f'a {kind} image, which tf.io.decode_image does '
                      'not decode nor this Pillow open; export it as JPEG or PNG')
    samples = tiff_samples_per_pixel(data)
    if samples is not None:
      bands = (f' of {samples} bands per pixel (a multispectral image)' if samples > 4
               else '')
      return RowError('unsupported_format', f'a TIFF{bands}, which Pillow cannot open '
                      f'({type(e).__name__}: {pillow_message(e)}) and tf.io.decode_image '
                      'does not decode (supported: JPEG, PNG, GIF, BMP); write its bands '
                      'as an RGB PNG or JPEG, or give them in a manifest as features')
    return RowError('not_an_image',
                    f'not a recognised image ({type(e).__name__}: {pillow_message(e)})')
  return RowError('unsupported_format', f'{fmt} images are not decodable by '
                  f'tf.io.decode_image (supported: JPEG, PNG, GIF, BMP)')


# The major brands of an ISO base media file's `ftyp` box that name a HEIF image
# (ISO/IEC 23008-12 Annex B: heic, heix, hevc, hevx, heim, heis, mif1, msf1) or an AVIF
# one (AV1 Image File Format: avif, avis).
_HEIF_BRANDS = (b'heic', b'heix', b'hevc', b'hevx', b'heim', b'heis', b'mif1', b'msf1',
                b'avif', b'avis')


def tiff_samples_per_pixel(data: bytes) -> Optional[int]:
  """The SamplesPerPixel (tag 277) of a TIFF's first image, 1 where the tag is absent
  (its default), or None for bytes that are no TIFF. Read as the TIFF 6.0 specification
  lays a file out (section 2: an 8-byte header `II*\\0` or `MM\\0*` giving the first
  IFD's offset; an IFD of 12-byte entries: tag, type, count, value), so that a TIFF
  Pillow cannot open (13-band Sentinel-2 images) is named for what it is.

  Args:
    data: the file's bytes.
  """
  if data[:4] not in (b'II*\x00', b'MM\x00*') or len(data) < 8:
    return None
  order = '<' if data[:2] == b'II' else '>'
  (offset,) = struct.unpack(order + 'I', data[4:8])
  if offset + 2 > len(data):
    return None
  (entries,) = struct.unpack(order + 'H', data[offset:offset + 2])
  for i in range(min(entries, 4096)):
    start = offset + 2 + 12 * i
    if start + 12 > len(data):
      break
    tag, kind, _ = struct.unpack(order + 'HHI', data[start:start + 8])
    if tag == 277:
      fmt = {3: 'H', 4: 'I'}.get(kind)
      if fmt is None:
        return None
      return struct.unpack(order + fmt, data[start + 8:start + 8 + struct.calcsize(fmt)])[0]
  return 1


def convert_to_png(data: bytes) -> bytes:
  """Re-encodes an image TensorFlow cannot decode (WebP, TIFF, ...) as lossless PNG.

  The first frame is kept; colour modes TensorFlow's PNG decoder lacks become RGB(A).
  Raises RowError `unsupported_format` when Pillow cannot read or convert it.

  Args:
    data: The image file's bytes, in any format Pillow reads.
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


# The extensions that name an image format, by the format TensorFlow takes (jpeg, png) or
# another Pillow reads (which `convert_unsupported` re-encodes as PNG).
_FORMAT_EXTENSIONS = {'jpeg': ('.jpg', '.jpeg', '.jpe', '.jfif'), 'png': ('.png',)}
_OTHER_IMAGE_EXTENSIONS = ('.gif', '.bmp', '.dib', '.webp', '.tif', '.tiff', '.apng', '.avif',
                           '.heic', '.heif', '.ico', '.jp2', '.mpo', '.dng', '.pbm', '.pgm',
                           '.ppm', '.pnm', '.tga')


def stored_filename(name: str, image_format: str) -> str:
  """The file name of a re-encoded image: `name` with its extension naming the stored
  format, so that a reader going by the extension decodes it right. An image extension
  of another format is replaced (`a.png` stored as JPEG: `a.jpg`; `b.webp` or `c.gif`
  stored as PNG: `b.png`, `c.png`); one of the stored format (`.jpeg`, `.JPG`) is kept,
  and a name without an image extension is kept whole.

  Args:
    name: The image's base name, as its URI has it.
    image_format: The format of the bytes stored, 'jpeg' or 'png' (`ImageInfo.format`);
      any other keeps `name`.
  """
  stem, extension = posixpath.splitext(name)
  ours = _FORMAT_EXTENSIONS.get(image_format)
  if not ours or extension.lower() in ours:
    return name
  known = _OTHER_IMAGE_EXTENSIONS + tuple(e for es in _FORMAT_EXTENSIONS.values() for e in es)
  return stem + ours[0] if extension.lower() in known else name
