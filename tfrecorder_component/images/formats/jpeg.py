"""JPEG as TensorFlow decodes it (`jpeg_mem.cc`, `jpeg_handle.cc`, libjpeg-turbo 2.1.4).

With `decode`, TensorFlow's decision comes from a walk of the markers and segment
headers (`jpeg_walk`: every fatal error of libjpeg-turbo is a header or set-up check,
and which bytes it reads follows from the markers), which reads no pixel. Where the
walk cannot decide (a single scan ending in FF with no marker after it; a progressive
DC predictor that might overflow) the bytes are decoded by libjpeg-turbo through Pillow,
under TensorFlow's rules:
- Errors are fatal (`CatchError` longjmps); libjpeg's warnings (corrupt data, premature
  end of a data segment, extraneous bytes) are not. Pillow sets libjpeg up the same way.
- The data may not run out (`decode_image` does not try to recover truncated files):
  TensorFlow's memory source (`MemFillInputBuffer`, `MemSkipInputData`) fails when
  libjpeg asks for a byte past the end with none left since its last sync. For a
  possible DC overflow the bytes are decoded followed by `_END_GUARD`, a run of a
  marker libjpeg does not know, longer than any marker length can skip: libjpeg reads
  into the guard exactly where TensorFlow's source would have run out, and fails on it.
  A single scan ending in FF is decoded as it is: Pillow's source, like TensorFlow's
  after FF fill, suspends at the end, which both accept once every scanline is decoded.
- The output is RGB (3 channels) for 3 and 4 components (CMYK and YCCK converted),
  grey (1) for 1; other component counts fail (`UncompressLow`'s components switch).
- width x height x components must stay below 2^29 ("Image too large").

A decode is at 1/8 scale (libjpeg's DCT scaling): every entropy-coded bit and marker is
still read, for a fraction of a full decode's cost. Without `decode`, size and channels
come from Pillow's reading of the header.
"""
from __future__ import annotations

import io
import threading

from PIL import ImageFile, JpegImagePlugin

from tfrecorder_component.errors import RowError
from tfrecorder_component.images.formats import (ImageInfo, check_pixels, jpeg_walk, pillow_message,
                                                 refuse_size)

# 0xFF 0x02 is a marker libjpeg does not know (JERR_UNKNOWN_MARKER); 32,784 of them
# (65,568 bytes) outlast the longest skip a marker length can ask for (65,533 bytes).
_END_GUARD = b'\xff\x02' * 32_784
_EOI = b'\xff\xd9'
_CHANNELS_BY_COMPONENTS = {1: 1, 3: 3, 4: 3}
_STRICT = threading.Lock()


def probe(data: bytes, decode: bool, max_pixels: int) -> ImageInfo:
  """Size and channels from the frame header; with `decode`, TensorFlow's decision.

  Args:
    data: The JPEG file's bytes.
    decode: Decide as TensorFlow does: walk the markers (`jpeg_walk`) and, where that
      cannot decide, decode with libjpeg-turbo; False reads the frame header only.
    max_pixels: The most width x height allowed (the `max_pixels` option).
  """
  if decode:
    return _decide(data, max_pixels)
  refused = _refused_process(data)
  if refused is not None:
    raise refused
  try:
    im = _open(data)
  except Exception as e:  # Pillow raises SyntaxError, OSError, struct.error and others.
    raise RowError('corrupt', f'the JPEG header cannot be read ({_message(e)})') from None
  with im:
    width, height = im.size
    components = getattr(im, 'layers', 0)
  if components not in _CHANNELS_BY_COMPONENTS:
    raise RowError('unsupported_format',
                   f'a JPEG of {components} components cannot be decoded by TensorFlow')
  if width <= 0 or height <= 0:
    raise RowError('corrupt', f'the JPEG header claims size {width}x{height}')
  if width * height * components >= 2**29:
    raise refuse_size('jpeg', width, height, 'width x height x components below 2^29')
  check_pixels(width, height, max_pixels)
  return ImageInfo('jpeg', height, width, _CHANNELS_BY_COMPONENTS[components])


def _decide(data: bytes, max_pixels: int) -> ImageInfo:
  """TensorFlow's decision from a walk of the markers (`jpeg_walk`), and from a decode
  by libjpeg-turbo where the walk cannot decide."""
  try:
    header = jpeg_walk.walk(data, max_pixels, check_pixels)
  except jpeg_walk.Refused as refused:
    raise RowError(refused.reason,
                   f'TensorFlow cannot decode this JPEG: {refused.message}') from None
  except jpeg_walk.Undecided as undecided:
    # A single scan ending in FF with no marker after it: the bytes as they are, as
    # TensorFlow's source gives them (Pillow's source suspends at their end, like
    # TensorFlow's after FF fill). A possible DC overflow: decoded as TensorFlow reads.
    # Either without the header segments libjpeg skips (Undecided.stream).
    stream = undecided.stream
    _decode(stream if undecided.kind == 'ends_in_ff' else stream + _END_GUARD, data)
    header = undecided.header
  return ImageInfo('jpeg', header.height, header.width,
                   _CHANNELS_BY_COMPONENTS[header.components])


def _decode(stream: bytes, data: bytes) -> None:
  """Decodes `stream` (the data, or the data and `_END_GUARD`) with libjpeg-turbo at
  1/8 scale: every entropy-coded bit and marker is still read."""
  try:
    im = _open(stream)
  except Exception as e:  # Pillow raises SyntaxError, OSError, struct.error and others.
    raise RowError('corrupt', f'the JPEG header cannot be read ({_message(e)})') from None
  im.decodermaxblock = len(stream)  # one buffer: libjpeg never waits for more input
  with im:
    try:
      im.draft(im.mode, (max(1, im.size[0] // 8), max(1, im.size[1] // 8)))
      _load(im)
    except Exception as e:  # Pillow raises OSError, SyntaxError, ValueError.
      sos = data.find(b'\xff\xda')
      ended = sos >= 0 and data.find(_EOI, sos) >= 0
      raise RowError('corrupt' if ended else 'truncated',
                     f'the JPEG data cannot be decoded ({_message(e)})'
                     + ('' if ended else ': it ends before its end-of-image marker')
                     ) from None


def _load(im: JpegImagePlugin.JpegImageFile) -> None:
  """Decodes, failing as libjpeg fails, even where a script has set Pillow's
  process-wide `ImageFile.LOAD_TRUNCATED_IMAGES` (which turns decoding errors into
  partial images): it is turned off for the decode, under a lock."""
  if not ImageFile.LOAD_TRUNCATED_IMAGES:
    im.load()
    return
  with _STRICT:
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
      im.load()
    finally:
      ImageFile.LOAD_TRUNCATED_IMAGES = True


def _open(stream: bytes) -> JpegImagePlugin.JpegImageFile:
  """Pillow's reading of the header, which refuses one marker libjpeg skips: TEM
  (0xFF01, parameterless). A header with TEM markers is read again without them."""
  try:
    return JpegImagePlugin.JpegImageFile(io.BytesIO(stream))
  except SyntaxError:
    stripped = _without_tem_markers(stream)
    if stripped is None:
      raise
    return JpegImagePlugin.JpegImageFile(io.BytesIO(stripped))


def _markers_before_scan(stream: bytes):
  """(offset, marker code) of each marker after SOI up to and including the first SOS,
  found as libjpeg's `next_marker` finds them (bytes that are not FF skipped, FF fill
  bytes skipped) and skipping each segment by its length; ends early where the data
  does."""
  at = 2
  while True:
    while at < len(stream) and stream[at] != 0xFF:  # bytes that are not a marker
      at += 1
    while at + 1 < len(stream) and stream[at + 1] == 0xFF:  # fill bytes
      at += 1
    if at + 1 >= len(stream):
      return
    marker = stream[at + 1]
    yield at, marker
    if marker in (0x00, 0x01) or 0xD0 <= marker <= 0xD7:  # stuffed zero, TEM, RSTn: no length
      at += 2
    elif marker == 0xDA or at + 3 >= len(stream):
      return
    else:
      at += 2 + (stream[at + 2] << 8 | stream[at + 3])


# libjpeg-turbo 2.1.4, which TensorFlow embeds, decodes these coding processes
# (`jdmarker.c` `read_markers`): SOF0 baseline, SOF1 extended sequential, SOF2
# progressive (Huffman), SOF9 and SOF10 (arithmetic). Every other SOFn (3, 5-7, 11,
# 13-15: lossless, hierarchical) and JPG (0xC8) is JERR_SOF_UNSUPPORTED.
_DECODED_PROCESSES = frozenset((0xC0, 0xC1, 0xC2, 0xC9, 0xCA))
_UNSUPPORTED_PROCESSES = frozenset((0xC3, 0xC5, 0xC6, 0xC7, 0xC8, 0xCB, 0xCD, 0xCE, 0xCF))


def _refused_process(data: bytes):
  """The RowError of a JPEG whose coding process or sample precision TensorFlow's
  libjpeg refuses while reading its header, else None. Checked before Pillow sees the
  data: Pillow's libjpeg-turbo 3.x decodes lossless (SOF3) data but ignores the 1/8
  scale Pillow sized its rows for, and corrupts its heap."""
  for at, marker in _markers_before_scan(data):
    if marker in _UNSUPPORTED_PROCESSES:  # jdmarker.c read_markers: JERR_SOF_UNSUPPORTED
      return RowError('unsupported_format', f'TensorFlow cannot decode this JPEG: '
                      f'unsupported JPEG process: SOF type 0x{marker:02x}')
    if marker in _DECODED_PROCESSES and at + 4 < len(data) and data[at + 4] != 8:
      # jdinput.c initial_setup: data_precision != BITS_IN_JSAMPLE is JERR_BAD_PRECISION
      return RowError('unsupported_format', f'TensorFlow cannot decode this JPEG: '
                      f'unsupported JPEG data precision {data[at + 4]}')
  return None


def _without_tem_markers(stream: bytes):
  """The bytes without the TEM markers before the first SOS, found as libjpeg's
  `next_marker` and segment lengths find markers; None if there are none."""
  cuts = [at for at, marker in _markers_before_scan(stream) if marker == 0x01]
  if not cuts:
    return None
  return b''.join(stream[start + 2 * (i > 0):end] for i, (start, end) in enumerate(
      zip([0] + cuts, cuts + [len(stream)])))


def _message(error: Exception) -> str:
  return f'{type(error).__name__}: {pillow_message(error)}'
