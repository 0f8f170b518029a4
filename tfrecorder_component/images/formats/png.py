"""PNG as TensorFlow decodes it (`png_io.cc`): libpng 1.6 reads the chunks before the
image data (`png_read_info`), every row of every interlace pass (`png_read_row`), then
every chunk after them up to IEND (`png_read_end`). libpng's errors are fatal
(TensorFlow's `ErrorHandler` longjmps); its warnings, and its "benign" errors, which a
release build of libpng turns into warnings, are only logged.

The rules below are libpng's (`pngrutil.c`, `pngread.c`, `png.c`, with the limits of its
default `pnglibconf.h`), each where it applies; the compressed image data is inflated by
zlib, as libpng does, and each row's filter byte checked. Fatal, so refused:
- a chunk cut short, a length over 2^31 - 1, a chunk name that is not four letters, a
  chunk over 8,000,000 bytes (PNG_USER_CHUNK_MALLOC_MAX; an IDAT may be as large as its
  image needs), a critical chunk (IHDR, PLTE, IDAT, IEND, or an unknown one with an
  upper-case first letter) whose CRC is wrong, an unknown critical chunk;
- an IHDR that is missing, repeated, not 13 bytes, or out of range: width or height 0 or
  over 1,000,000 (PNG_USER_WIDTH_MAX / PNG_USER_HEIGHT_MAX), a bit depth the colour type
  does not allow, interlace, compression or filter methods PNG does not define;
- a known ancillary chunk before IHDR; a second PLTE; a palette image without PLTE before
  its image data; a PLTE of no entries, or (in a palette image) of over 256 entries or a
  length not a multiple of 3; IEND before any image data;
- image data that ends (the zlib stream or the run of IDAT chunks) before every row is
  read, a zlib error before then, a row filter type over 4, and a zlib stream that never
  ends before the IDAT chunks do.
Not fatal, so accepted: an ancillary chunk's wrong CRC or bad content (the chunk is
dropped), chunks out of place after the image data, extra compressed data, a zlib error
met only after the last row's input (a wrong Adler-32 in a later IDAT chunk; met in the
same input, it is fatal), palette indices beyond the palette.

TensorFlow then refuses width or height of 2^27 or more, or width x height of 2^29 or
more. Channels: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA; a palette image 4 when a valid
tRNS chunk comes before its image data, else 3.
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterator, NamedTuple, Optional

from tfrecorder_component.errors import RowError
from tfrecorder_component.images.formats import ImageInfo, check_pixels, refuse_size

_UINT31_MAX = 2**31 - 1
_USER_SIZE_MAX = 1_000_000          # PNG_USER_WIDTH_MAX, PNG_USER_HEIGHT_MAX
_USER_CHUNK_MALLOC_MAX = 8_000_000  # PNG_USER_CHUNK_MALLOC_MAX
_SAMPLES = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # samples a pixel by colour type
_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # what TensorFlow decodes to; palette: 3 or 4
# The ancillary chunks libpng has handlers for; each refuses to come before IHDR.
_KNOWN_ANCILLARY = frozenset(
    b'bKGD cHRM eXIf gAMA hIST iCCP iTXt oFFs pCAL pHYs sBIT sCAL sPLT sRGB tEXt tIME '
    b'tRNS zTXt'.split())
# Adam7 passes: x start, x step, y start, y step.
_ADAM7 = ((0, 8, 0, 8), (4, 8, 0, 8), (0, 4, 4, 8), (2, 4, 0, 4), (0, 2, 2, 4),
          (1, 2, 0, 2), (0, 1, 1, 2))
_IDAT_READ_SIZE = 8192    # PNG_IDAT_READ_SIZE: the input libpng gives zlib at a time
_INFLATE_BUF_SIZE = 1024  # PNG_INFLATE_BUF_SIZE: its output buffer after the last row


class _Chunk(NamedTuple):
  kind: bytes
  start: int   # of its data
  length: int


class _Header(NamedTuple):
  width: int
  height: int
  depth: int
  color: int
  interlaced: bool


def probe(data: bytes, decode: bool, max_pixels: int) -> ImageInfo:
  """IHDR and the chunks before the image data; with `decode`, every rule above.

  Args:
    data: The PNG file's bytes.
    decode: Also inflate and check the image data (IDAT) and the chunks after it;
      False stops at the first IDAT.
    max_pixels: The most width x height allowed (the `max_pixels` option).
  """
  chunks = _chunks(data)
  header: Optional[_Header] = None
  palette: Optional[int] = None  # entries of the PLTE read (None: no PLTE yet)
  transparency = False  # a tRNS libpng keeps
  for chunk in chunks:
    _check_length(chunk, header)
    kind = chunk.kind
    if kind == b'IDAT':
      if header is None:
        raise _corrupt('its image data (IDAT) comes before its header (IHDR)')
      if header.color == 3 and not palette:  # None, or a grey image's ignored PLTE
        raise _corrupt('it is a palette image without a palette (PLTE) before its image data')
      break
    _complete(data, chunk)
    if kind == b'IHDR':
      if header is not None:
        raise _corrupt('it has a second IHDR chunk')
      _check_crc(data, chunk)
      header = _read_header(data, chunk)
    elif kind == b'IEND':
      raise _corrupt('it ends (IEND) before any image data')
    elif kind == b'PLTE':
      palette = _read_palette(data, chunk, header, palette)
    elif kind in _KNOWN_ANCILLARY:
      if header is None:
        raise _corrupt(f'its {_name(kind)} chunk comes before its header (IHDR)')
      if kind == b'tRNS' and not transparency:
        transparency = _keeps_transparency(data, chunk, header, palette)
    elif _critical(kind):
      raise _corrupt(f'it has a critical chunk libpng does not know ({_name(kind)})')
  else:  # _chunks raises at the end of the data: never reached
    raise AssertionError('unreachable')
  width, height = header.width, header.height
  if width >= 2**27 or height >= 2**27 or width * height >= 2**29:
    raise refuse_size('png', width, height, 'width and height below 2^27, their product '
                      'below 2^29')
  check_pixels(width, height, max_pixels)
  channels = (4 if transparency else 3) if header.color == 3 else _CHANNELS[header.color]
  if decode:
    after = _check_image_data(data, chunk, chunks, header)
    _check_chunks_after(data, after, chunks, header, palette is not None)
  return ImageInfo('png', height, width, channels)


def _chunks(data: bytes) -> Iterator[_Chunk]:
  """The chunks after the signature, as `png_read_chunk_header` reads them; raises at
  the end of the data (libpng always reads on, up to IEND)."""
  at = 8
  while True:
    if at + 8 > len(data):
      raise RowError('truncated', 'the PNG ends before its IEND chunk'
                     if at > 8 else 'the PNG ends inside its signature or first chunk')
    length, kind = struct.unpack_from('>I4s', data, at)
    if length > _UINT31_MAX:
      raise _corrupt(f'a chunk length of {length} is over 2^31 - 1')
    if not all(65 <= c <= 90 or 97 <= c <= 122 for c in kind):
      raise _corrupt(f'a chunk type {_name(kind)} is not four letters')
    yield _Chunk(kind, at + 8, length)
    at += 12 + length


def _check_length(chunk: _Chunk, header: Optional[_Header]) -> None:
  """`png_check_chunk_length`: PNG_USER_CHUNK_MALLOC_MAX, or an IDAT's own limit."""
  limit = _USER_CHUNK_MALLOC_MAX
  if chunk.kind == b'IDAT' and header is not None:
    samples = _SAMPLES[header.color]
    row_factor = (header.width * samples * (2 if header.depth > 8 else 1) + 1
                  + (6 if header.interlaced else 0))
    idat_limit = (_UINT31_MAX if header.height > 0xFFFFFFFF // row_factor
                  else header.height * row_factor)
    idat_limit += 6 + 5 * (idat_limit // min(row_factor, 32566) + 1)
    limit = max(limit, min(idat_limit, _UINT31_MAX))
  if chunk.length > limit:
    raise _corrupt(f'its {_name(chunk.kind)} chunk of {chunk.length} bytes is larger than '
                   f'libpng reads ({limit})')


def _complete(data: bytes, chunk: _Chunk) -> None:
  if chunk.start + chunk.length + 4 > len(data):
    raise RowError('truncated', f'the PNG ends inside its {_name(chunk.kind)} chunk')


def _crc_ok(data: bytes, chunk: _Chunk) -> bool:
  end = chunk.start + chunk.length
  return zlib.crc32(data[chunk.start - 4:end]) == struct.unpack_from('>I', data, end)[0]


def _check_crc(data: bytes, chunk: _Chunk) -> None:
  """A critical chunk's CRC error is fatal (an ancillary chunk's only drops it)."""
  if not _crc_ok(data, chunk):
    raise _corrupt(f'its {_name(chunk.kind)} chunk fails its CRC')


def _read_header(data: bytes, chunk: _Chunk) -> _Header:
  """`png_handle_IHDR` and `png_check_IHDR`."""
  if chunk.length != 13:
    raise _corrupt(f'its IHDR chunk is {chunk.length} bytes, not 13')
  width, height, depth, color, compression, filtering, interlace = struct.unpack_from(
      '>IIBBBBB', data, chunk.start)
  for name, value in (('width', width), ('height', height)):
    if value == 0:
      raise _corrupt(f'its header claims a {name} of 0')
    if value > _USER_SIZE_MAX:
      raise RowError('too_large', f'the PNG\'s {name} of {value} is over libpng\'s limit '
                     f'of {_USER_SIZE_MAX:,} (PNG_USER_WIDTH_MAX / PNG_USER_HEIGHT_MAX)')
  if color not in _DEPTHS:
    raise _corrupt(f'its header names colour type {color}, which PNG does not define')
  if depth not in _DEPTHS[color]:
    raise _corrupt(f'its header names bit depth {depth} for colour type {color}')
  if compression or filtering or interlace > 1:
    raise _corrupt(f'its header names compression method {compression}, filter method '
                   f'{filtering} and interlace method {interlace} (PNG defines 0, 0 and '
                   f'0 or 1)')
  return _Header(width, height, depth, color, interlace == 1)


def _read_palette(data: bytes, chunk: _Chunk, header: Optional[_Header],
                  palette: Optional[int]) -> int:
  """`png_handle_PLTE` before the image data: the number of entries it keeps (0 for
  one libpng ignores, which still counts as the image's one PLTE)."""
  if header is None:
    raise _corrupt('its palette (PLTE) comes before its header (IHDR)')
  if palette is not None:
    raise _corrupt('it has a second palette (PLTE)')
  _check_crc(data, chunk)
  if not header.color & 2:  # grey: "ignored in grayscale PNG" (benign)
    return 0
  if chunk.length > 3 * 256 or chunk.length % 3:
    if header.color == 3:
      raise _corrupt(f'its palette (PLTE) is {chunk.length} bytes, not 3 per entry up to 256')
    return 0  # benign for a true-colour image, whose PLTE is only a suggestion
  entries = chunk.length // 3
  if header.color == 3:
    entries = min(entries, 1 << header.depth)
  if not entries:
    raise _corrupt('its palette (PLTE) has no entries')
  return entries


def _keeps_transparency(data: bytes, chunk: _Chunk, header: _Header,
                        palette: Optional[int]) -> bool:
  """`png_handle_tRNS` before the image data: whether libpng keeps it."""
  if header.color == 3:
    valid = bool(palette) and 0 < chunk.length <= palette
  else:
    valid = chunk.length == {0: 2, 2: 6}.get(header.color, -1)
  return valid and _crc_ok(data, chunk)


def _rows(header: _Header) -> Iterator[int]:
  """The byte length (filter byte included) of each row libpng reads, pass by pass."""
  bits = header.depth * _SAMPLES[header.color]
  passes = _ADAM7 if header.interlaced else ((0, 1, 0, 1),)
  for x0, dx, y0, dy in passes:
    columns = (header.width - x0 + dx - 1) // dx
    rows = (header.height - y0 + dy - 1) // dy
    if columns > 0 and rows > 0:
      yield from [(columns * bits + 7) // 8 + 1] * rows


def _check_image_data(data: bytes, first: _Chunk, chunks: Iterator[_Chunk],
                      header: _Header) -> _Chunk:
  """`png_read_row` for every row, then `png_read_finish_IDAT` (`png_read_IDAT_data`):
  the zlib stream of the IDAT chunks from the first on must give every row, each with a
  filter type of 0 to 4. Returns the chunk after those IDAT chunks.

  zlib is fed as libpng feeds it, 8,192 bytes of a chunk at a time (PNG_IDAT_READ_SIZE),
  because what happens after the last row depends on it: zlib reads on past the last
  pixel as far as its input goes, so a bad checksum, or the stream's end, met in the
  same piece of input is met while reading the last row (an error is fatal there, as
  anywhere before). After the last row, libpng inflates on while that gives bytes: an
  error then is benign, but the IDAT chunks may not run out before the stream ends.
  """
  run = []
  chunk = first
  while chunk.kind == b'IDAT':
    _check_length(chunk, header)
    _complete(data, chunk)
    _check_crc(data, chunk)
    run.append(chunk)
    chunk = next(chunks)
  pieces = (data[at:min(at + _IDAT_READ_SIZE, c.start + c.length)]
            for c in run for at in range(c.start, c.start + c.length, _IDAT_READ_SIZE))
  inflater = zlib.decompressobj(wbits=0)  # the window size from the zlib header
  lengths = list(_rows(header))
  rows, needed = iter(lengths), sum(lengths)
  produced, row_at, piece = 0, 0, b''
  try:
    while produced < needed:
      if not piece:
        piece = next(pieces, None)
        if piece is None:
          raise RowError('truncated', f'the PNG cannot be decoded: its image data ends '
                         f'after {produced} of the {needed} bytes its rows need')
      out = inflater.decompress(piece, needed - produced)
      piece = inflater.unconsumed_tail
      while row_at < produced + len(out):  # each row's filter type, as rows arrive
        kind = out[row_at - produced]
        if kind > 4:
          raise _corrupt(f'a row has filter type {kind} (0 to 4 are defined)')
        row_at += next(rows)
      produced += len(out)
      if inflater.eof and produced < needed:
        raise _corrupt(f'its compressed image data ends after {produced} of the {needed} '
                       f'bytes its rows need')
  except zlib.error as e:
    raise _corrupt(f'its image data cannot be decompressed ({e})') from None
  extra = 0
  while not inflater.eof:
    if not piece:
      piece = next(pieces, None)
      if piece is None:
        raise _corrupt('its compressed image data does not end before its IDAT chunks do')
    try:
      extra += len(inflater.decompress(piece, _INFLATE_BUF_SIZE))
    except zlib.error:
      break  # benign after the last row
    piece = inflater.unconsumed_tail
    if not extra:
      break  # nothing more came out: libpng stops looking
  return chunk


def _check_chunks_after(data: bytes, chunk: _Chunk, chunks: Iterator[_Chunk],
                        header: _Header, has_palette: bool) -> None:
  """`png_read_end`: every chunk from `chunk` on, up to IEND."""
  while True:
    _check_length(chunk, header)
    _complete(data, chunk)
    kind = chunk.kind
    if kind == b'IHDR':
      raise _corrupt('it has a second IHDR chunk')
    if kind == b'PLTE' and has_palette:
      raise _corrupt('it has a second palette (PLTE)')
    if _critical(kind):
      _check_crc(data, chunk)
      if kind == b'IEND':
        return
      if kind not in (b'IDAT', b'PLTE'):
        raise _corrupt(f'it has a critical chunk libpng does not know ({_name(kind)})')
    chunk = next(chunks)


def _critical(kind: bytes) -> bool:
  return 65 <= kind[0] <= 90


def _name(kind: bytes) -> str:
  return repr(kind.decode('latin-1'))


def _corrupt(what: str) -> RowError:
  return RowError('corrupt', f'the PNG cannot be decoded: {what}')
