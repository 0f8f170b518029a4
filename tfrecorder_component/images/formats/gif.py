"""GIF as TensorFlow decodes it (`gif_io.cc`): giflib 5.2's `DGifOpen` and `DGifSlurp`,
with TensorFlow's patch to giflib (`third_party/gif_fix_image_counter.patch`), then
TensorFlow's own checks of what giflib read.

TensorFlow's decision, rule by rule (TensorFlow 2.16 and 2.21 agree on each, tried):
- `DGifOpen` must read the signature, the screen descriptor and any global colour table.
- `DGifSlurp` reads records until the trailer (';'). If it fails, TensorFlow goes on with
  the images read whole before the failure, and refuses the GIF only if there are none:
  TensorFlow's patch drops an image whose pixels failed to decode, so a GIF cut or
  broken inside its second image decodes to its first, and one whose trailer is missing
  or garbled decodes whole. (TensorFlow's source after 2.21 also refuses a GIF whose
  failed image ended with an early end-of-information code, or could not start.)
- An image needs its LZW code size (below 12), every pixel from its LZW data, and the
  sub-block terminator after it. Where Pillow's LZW decoder reads the data without
  error, it is well formed and giflib reads the same pixels; otherwise giflib's decoder
  (`DGifDecompressLine`, `DGifDecompressInput`, `DGifBufferedInput`,
  `DGifGetPrefixChar`) runs, ported line for line, because giflib reads some malformed
  code streams that other decoders refuse, to pixel values of its own, and those values
  decide the next rule.
- Every decoded image needs a colour table (its own or the global one), and every pixel
  inside the output must index into it, except the transparent index of the image's
  graphic control extension (`color_index >= color_map->ColorCount` is refused after
  the transparency test). The output is (largest image height) x (largest image width)
  x 3; an image placed beyond that is clipped, and only its pixels inside are checked.

Every image is checked, so the decision holds whichever `expand_animations` a reader
uses; the frames are the images TensorFlow decodes.
"""
from __future__ import annotations

import struct
from typing import List, NamedTuple, Optional, Tuple

from PIL import Image

from tfrecorder_component.errors import RowError
from tfrecorder_component.images.formats import ImageInfo, check_pixels

_LZ_MAX_CODE = 4095
_LZ_BITS = 12
_NO_SUCH_CODE = 4098
_CODE_MASKS = [(1 << bits) - 1 for bits in range(13)]
_EMPTY_TABLE = [_NO_SUCH_CODE] * (_LZ_MAX_CODE + 1)
_INTERLACED_ROWS = ((0, 8), (4, 8), (2, 4), (1, 2))  # (first row, step) of each pass

# giflib's errors, as messages.
_READ_FAILED = 'the data ends early'
_IMAGE_DEFECT = 'the image data is defective'
_EOF_TOO_SOON = 'an end-of-information code comes before the last pixel'
_WRONG_RECORD = 'a block of unknown type'
_GRAPHIC_CONTROL = 0xF9


class _GifError(Exception):
  """A giflib failure (GifFile->Error)."""


class _Image(NamedTuple):
  left: int
  top: int
  width: int
  height: int
  colors: Optional[int]   # entries of its local colour table, None without one
  transparent: Optional[int]  # its graphic control extension's transparent index
  pixels: bytearray       # empty without `decode`


class _Reader:
  """TensorFlow's `input_callback`: reads stop at the end of the data."""

  def __init__(self, data: bytes):
    self.data = data
    self.at = 0

  def read(self, count: int) -> bytes:
    piece = self.data[self.at:self.at + count]
    self.at += len(piece)
    if len(piece) != count:
      raise _GifError(_READ_FAILED)
    return piece

  def byte(self) -> int:
    return self.read(1)[0]

  def word(self) -> int:
    return struct.unpack('<H', self.read(2))[0]


def probe(data: bytes, decode: bool, max_pixels: int) -> ImageInfo:
  """Frames and size; with `decode`, TensorFlow's decision (every image's LZW data).

  Args:
    data: The GIF file's bytes.
    decode: Also decode every image's LZW data and check its colour indices, as
      TensorFlow's decoder does; False reads the structure only.
    max_pixels: The most pixels allowed (the `max_pixels` option): for the size (the
      largest frame's width x height) and for all images' pixels together.
  """
  reader = _Reader(data)
  try:
    global_colors = _open(reader)
  except _GifError:
    raise RowError('truncated', 'the GIF ends inside its header or global colour table'
                   ) from None
  images: List[_Image] = []
  failure = _slurp(reader, images, decode, max_pixels)
  if not images:
    reason = 'truncated' if failure == _READ_FAILED else 'corrupt'
    raise RowError(reason, f'the GIF cannot be decoded: {failure} before its first whole '
                   f'image')
  width = max(image.width for image in images)
  height = max(image.height for image in images)
  check_pixels(width, height, max_pixels)
  if decode:
    _check_colors(images, global_colors, width, height)
  return ImageInfo('gif', height, width, 3, len(images))


def _open(reader: _Reader) -> Optional[int]:
  """`DGifOpen` and `DGifGetScreenDesc`: the global colour table's size, or None."""
  reader.read(6)
  reader.word(), reader.word()
  flags = reader.read(3)[0]
  if not flags & 0x80:
    return None
  colors = 1 << ((flags & 7) + 1)
  reader.read(3 * colors)
  return colors


def _slurp(reader: _Reader, images: List[_Image], decode: bool,
           max_pixels: int) -> Optional[str]:
  """`DGifSlurp` with TensorFlow's patch: appends each image read whole; returns
  giflib's error, or None."""
  total = 0
  extensions: List[Tuple[int, bytes]] = []  # (function, first sub-block) before an image
  try:
    while True:
      kind = reader.byte()
      if kind == 0x2C:  # ',': image descriptor
        left, top, width, height = (reader.word() for _ in range(4))
        flags = reader.byte()
        colors = None
        if flags & 0x80:
          colors = 1 << ((flags & 7) + 1)
          reader.read(3 * colors)
        code_size = reader.byte()
        if code_size >= _LZ_BITS:  # DGifSetupDecompress fails
          raise _GifError(f'an image\'s LZW code size is {code_size} (at most 11)')
        if width <= 0 or height <= 0 or width > (2**31 - 1) // height:
          raise _GifError(f'an image of {width}x{height}')  # the patch drops the image
        end = _terminator(reader)
        # A code is at least 1 bit (LZW code size 0) and gives at most 4,095 pixels
        # (giflib's stack): an image larger than that runs out of data in giflib.
        if decode and width * height > (end - reader.at) * 8 * _LZ_MAX_CODE:
          raise _GifError(_READ_FAILED)
        total += width * height
        if total > max_pixels:
          raise RowError('too_large', f'the GIF\'s images hold over {total} pixels, beyond '
                         f'the limit of {max_pixels} (raise max_pixels if it is genuine)')
        if end >= len(reader.data):  # giflib runs out of data, whatever it decodes first
          raise _GifError(_READ_FAILED)
        pixels = (_decode(reader, end, code_size, width, height, flags & 0x40) if decode
                  else bytearray())
        reader.at = end + 1
        images.append(_Image(left, top, width, height, colors,
                             _transparent(extensions), pixels))
        extensions = []
      elif kind == 0x21:  # '!': extension (DGifGetExtension, DGifGetExtensionNext)
        function = reader.byte()
        size = reader.byte()
        if size:
          extensions.append((function, reader.read(size)))
        while True:  # giflib reads on after the first sub-block, even an empty one
          size = reader.byte()
          if not size:
            break
          reader.read(size)
      elif kind == 0x3B:  # ';': trailer
        break
      else:
        raise _GifError(_WRONG_RECORD)
  except _GifError as e:
    return str(e)
  if not images:
    return 'it holds no image'
  return None


def _terminator(reader: _Reader) -> int:
  """Where the image's sub-blocks end: the position of their terminator (a 0 size), or
  a position at or past the data's end if the data ends first."""
  end = reader.at
  while end < len(reader.data) and reader.data[end]:
    end += reader.data[end] + 1
  return end


def _transparent(extensions: List[Tuple[int, bytes]]) -> Optional[int]:
  """`DGifSavedExtensionToGCB`: the first graphic control extension decides, if its
  block is 4 bytes long and its transparency flag set."""
  for function, block in extensions:
    if function == _GRAPHIC_CONTROL:
      return block[3] if len(block) == 4 and block[0] & 1 else None
  return None


# For each colour count, the indices it has: deleted from the pixels, what remains is
# out of range.
_INDICES = [bytes(range(colors)) for colors in range(257)]


def _check_colors(images: List[_Image], global_colors: Optional[int], width: int,
                  height: int) -> None:
  """TensorFlow's checks of each decoded image (`gif::Decode`)."""
  for number, image in enumerate(images, 1):
    colors = image.colors if image.colors is not None else global_colors
    if colors is None:
      raise RowError('corrupt', f'the GIF\'s image {number} has no colour table (local or '
                     f'global), which TensorFlow refuses')
    right = min(image.left + image.width, width)
    bottom = min(image.top + image.height, height)
    if colors == 256 or right <= image.left or bottom <= image.top:
      continue
    inside = image.pixels[:(bottom - image.top) * image.width]
    if right - image.left < image.width:
      inside = b''.join(inside[row:row + right - image.left]
                        for row in range(0, len(inside), image.width))
    if image.transparent is not None and image.transparent >= colors:
      inside = inside.replace(bytes([image.transparent]), b'\0')  # skipped, not checked
    # The indices beyond the table, found at C speed (a max() over the pixels in
    # Python cost 2.6 ms for a 366x366 image, 40 times the file's read).
    beyond = inside.translate(None, _INDICES[colors])
    if beyond:
      raise RowError('corrupt', f'the GIF\'s image {number} has colour index '
                     f'{max(beyond)}, beyond its {colors}-colour table, which TensorFlow '
                     f'refuses')


def _decode(reader: _Reader, end: int, code_size: int, width: int, height: int,
            interlaced: int) -> bytearray:
  """`DGifGetLine` over the image, as `DGifSlurp` calls it: every pixel from the
  sub-blocks before `end`, their terminator (the caller skips to it, as
  `DGifGetCodeNext` does).

  Pillow's LZW decoder goes first, given the image's sub-blocks up to their terminator
  (past it, Pillow would read the next records as more data): where it decodes every
  pixel without error, the code stream is a well-formed one, which giflib decodes to the
  same pixels (Pillow refuses every code giflib decodes in its own way, and data that
  ends early). Only where it fails does giflib's decoder below run, to tell how giflib
  fails, or what it decodes.
  """
  if 2 <= code_size <= 8:  # Pillow's 8-bit pixels hold every index
    try:
      frame = Image.frombytes('L', (width, height), memoryview(reader.data)[reader.at:end],
                              'gif', code_size, bool(interlaced))
    except (ValueError, OSError):
      pass
    else:
      return bytearray(frame.tobytes())
  pixels = bytearray(width * height)
  lzw = _Lzw(reader, code_size)
  if interlaced:
    for first, step in _INTERLACED_ROWS:
      for row in range(first, height, step):
        lzw.line(pixels, row * width, width)
  else:
    lzw.line(pixels, 0, width * height)
  return pixels


class _Lzw:
  """giflib's LZW decoder state for one image (`GifFilePrivateType`), and its
  `DGifDecompressLine`. Kept as giflib writes it, quirks included: a code not yet in
  the table is decoded from the last code, or to 2 (NO_SUCH_CODE as a byte), as
  giflib does."""

  def __init__(self, reader: _Reader, code_size: int):
    self.reader = reader
    self.block = b''         # the current sub-block
    self.block_at = 0        # the next byte of it to use
    self.bits_per_pixel = code_size
    self.clear = 1 << code_size
    self.eof = self.clear + 1
    self.running_code = self.eof + 1
    self.running_bits = code_size + 1
    self.max_code = 1 << self.running_bits
    self.last_code = _NO_SUCH_CODE
    self.shift_state = 0
    self.shift_word = 0
    self.prefix = list(_EMPTY_TABLE)
    self.suffix = [0] * (_LZ_MAX_CODE + 1)
    self.stack: List[int] = []

  def _next_byte(self) -> int:
    """`DGifBufferedInput`."""
    if self.block_at == len(self.block):
      size = self.reader.byte()
      if not size:
        raise _GifError(_IMAGE_DEFECT)
      self.block = self.reader.read(size)
      self.block_at = 0
    self.block_at += 1
    return self.block[self.block_at - 1]

  def _code(self) -> int:
    """`DGifDecompressInput`."""
    if self.running_bits > _LZ_BITS:
      raise _GifError(_IMAGE_DEFECT)
    while self.shift_state < self.running_bits:
      self.shift_word |= self._next_byte() << self.shift_state
      self.shift_state += 8
    code = self.shift_word & _CODE_MASKS[self.running_bits]
    self.shift_word >>= self.running_bits
    self.shift_state -= self.running_bits
    if self.running_code < _LZ_MAX_CODE + 2:
      self.running_code += 1
      if self.running_code > self.max_code and self.running_bits < _LZ_BITS:
        self.max_code <<= 1
        self.running_bits += 1
    return code

  def _prefix_char(self, code: int) -> int:
    """`DGifGetPrefixChar`."""
    steps = 0
    while code > self.clear and steps <= _LZ_MAX_CODE:
      steps += 1
      if code > _LZ_MAX_CODE:
        return _NO_SUCH_CODE
      code = self.prefix[code]
    return code

  def line(self, out: bytearray, at: int, length: int) -> None:
    """`DGifDecompressLine`: `length` pixels into out[at:]."""
    stack, prefix, suffix = self.stack, self.prefix, self.suffix
    clear, eof = self.clear, self.eof
    last = self.last_code
    i = 0
    while stack and i < length:
      out[at + i] = stack.pop()
      i += 1
    while i < length:
      code = self._code()
      if code == eof:
        raise _GifError(_EOF_TOO_SOON)
      if code == clear:
        prefix[:] = _EMPTY_TABLE
        self.running_code = eof + 1
        self.running_bits = self.bits_per_pixel + 1
        self.max_code = 1 << self.running_bits
        last = _NO_SUCH_CODE
        continue
      running = self.running_code - 2
      if code < clear:
        out[at + i] = code & 0xFF  # GifPixelType is a byte
        i += 1
      else:
        if prefix[code] == _NO_SUCH_CODE:
          current_prefix = last
          value = self._prefix_char(last if code == running else code) & 0xFF
          suffix[running] = value
          stack.append(value)
        else:
          current_prefix = code
        while len(stack) < _LZ_MAX_CODE and clear < current_prefix <= _LZ_MAX_CODE:
          stack.append(suffix[current_prefix])
          current_prefix = prefix[current_prefix]
        if len(stack) >= _LZ_MAX_CODE or current_prefix > _LZ_MAX_CODE:
          raise _GifError(_IMAGE_DEFECT)
        stack.append(current_prefix & 0xFF)
        while stack and i < length:
          out[at + i] = stack.pop()
          i += 1
      if last != _NO_SUCH_CODE and running < _LZ_MAX_CODE + 1 and prefix[running] == _NO_SUCH_CODE:
        prefix[running] = last
        suffix[running] = self._prefix_char(last if code == running else code) & 0xFF
      last = code
    self.last_code = last
