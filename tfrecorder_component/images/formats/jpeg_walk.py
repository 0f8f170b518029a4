"""TensorFlow's decision on a JPEG from a walk of its markers and segment headers.

`tf.io.decode_image` decodes JPEG with libjpeg-turbo 2.1.4 (TensorFlow 2.16 and 2.21
embed "libjpeg-turbo version 2.1.4 (build 20221022)"; tests/test_jpeg_library.py fails if
that changes) reading from TensorFlow's memory source (`jpeg_handle.cc`) in
`UncompressLow` (`jpeg_mem.cc`). Every rule below is a line of those sources, named
beside it (libjpeg-turbo files at tag 2.1.4). What decides:

- Every libjpeg ERREXIT is a refusal (`CatchError` longjmps); warnings (corrupt entropy
  data, premature end of a data segment, extraneous bytes, bogus progression) are not.
- Every fatal error of libjpeg-turbo 2.1.4 comes from marker, header or set-up parsing
  (`jdmarker.c`, `jdinput.c`, `jdmaster.c`, `jdcolor.c`, `jdsample.c`, the entropy
  decoders' `start_pass`, `jpeg_make_d_derived_tbl`) except one: a progressive DC
  predictor that overflows an int (`jdphuff.c` `decode_mcu_DC_first`).
- The entropy decoders never read past a marker (`jpeg_fill_bit_buffer` reads only
  while `unread_marker == 0`; `decode_mcu_fast` backs out at one; `arith_decode` feeds
  zeros once one was seen), and `next_marker`, `read_restart_marker` and
  `jpeg_resync_to_restart` move from one marker token (a run of FF and a byte that is
  neither 00 nor FF) to the next. So which bytes libjpeg reads follows from the marker
  tokens and the scan geometry (how many restarts each scan has), not from the
  entropy-coded bits.
- Reading past the end: TensorFlow's `MemFillInputBuffer` fails (JERR_FILE_READ) when
  the source's byte count is 0, and returns FALSE (libjpeg suspends) when it is not:
  libjpeg's readers keep a local copy of the count and write it back only at
  INPUT_SYNC, so a reader that took a byte since its last sync and then runs out
  suspends. `MemSkipInputData` past the end fails. A suspension while reading the
  header fails later (`jpeg_calc_output_dimensions`: JERR_BAD_STATE), one in
  `jpeg_start_decompress` too (`jpeg_read_scanlines`: JERR_BAD_STATE), one while
  decoding scanlines returns 0 lines (`UncompressLow`: refused); only one in
  `jpeg_finish_decompress` (the markers after a single-scan image's data, up to EOI)
  is accepted, since its return value is ignored.

Two cases the walk cannot decide, left to a real decode (`Undecided`): a single-scan
image with no marker after its data, whose data ends in FF (whether the decoder's
look-ahead reaches the end depends on the Huffman data), and a progressive image whose
DC predictors could overflow (only with more than 65,535 blocks of a component
between restarts).

Two walks follow these rules: `_straight_walk` decides a JPEG with nothing out of the
ordinary in one loop (on photos, in a quarter of the step-by-step walk's Python time)
and gives up on any other, which `_full_walk` decides step by step (`_Walk`).

Length: one walk over a JPEG's markers and entropy-coded data, following libjpeg-turbo's
decoder step by step, its steps sharing the decoder's state; and the same rules bundled
into one loop for the common JPEG, kept beside them so that each follows the other.
"""
from __future__ import annotations

import operator
import re
from typing import Dict, List, NamedTuple, Optional, Tuple

# A marker token as `next_marker` (jdmarker.c) and the entropy decoders find it: FF,
# any FF fill, then a byte that is neither 00 (a stuffed zero) nor FF. Written with a
# literal FF first so that `re` searches for it at C speed.
_TOKEN = re.compile(rb'\xff[\xff]*[^\x00\xff]')

_SOF_HUFFMAN = {0xC0: False, 0xC1: False, 0xC2: True}   # progressive?
_SOF_ARITHMETIC = {0xC9: False, 0xCA: True}
# jdmarker.c read_markers: lossless, hierarchical and JPG are JERR_SOF_UNSUPPORTED.
_SOF_UNSUPPORTED = frozenset((0xC3, 0xC5, 0xC6, 0xC7, 0xC8, 0xCB, 0xCD, 0xCE, 0xCF))
_SOS, _EOI, _SOI, _DHT, _DQT, _DRI, _DAC, _DNL, _COM = (
    0xDA, 0xD9, 0xD8, 0xC4, 0xDB, 0xDD, 0xCC, 0xDC, 0xFE)
_APP0, _APP14 = 0xE0, 0xEE
_TABLES_AND_FRAME = frozenset((_DHT, _DQT, _DAC, _DRI, *_SOF_HUFFMAN, *_SOF_ARITHMETIC))
_JPEG_MAX_DIMENSION = 65500      # jmorecfg.h
_MAX_COMPONENTS = 10             # jmorecfg.h
_MAX_COMPS_IN_SCAN = 4           # jpeglib.h
_D_MAX_BLOCKS_IN_MCU = 10        # jpeglib.h
_INT_MAX = 2**31 - 1

# jstdhuff.c std_huff_tables: the DC tables jinit_huff_decoder puts in slots 0 and 1
# when a sequential Huffman image defines none there (the AC ones are valid tables).
_STD_DC = ((bytes((0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0)), bytes(range(12))),
           (bytes((0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0)), bytes(range(12))))
_STD_AC = (b'std', b'')


class Refused(Exception):
  """TensorFlow refuses the bytes: `reason` is the RowError reason, `message` libjpeg's.

  Args:
    reason: The RowError reason: 'corrupt', 'truncated', 'unsupported_format' or
      'too_large'.
    message: Why, in words (libjpeg's error where it gives one); `jpeg.probe` puts it
      after "TensorFlow cannot decode this JPEG: ".
  """

  def __init__(self, reason: str, message: str):
    super().__init__(message)
    self.reason = reason
    self.message = message


class Undecided(Exception):
  """The walk cannot decide: `kind` is 'ends_in_ff' or 'dc_overflow'; `header` is what
  the image decodes to if it decodes. `stream` is the
  data to decode instead: SOI, the header's table and frame segments (DQT, DHT, DAC,
  DRI, SOF) as they are, and everything from the first SOS on. What it leaves out
  (APPn, COM, DNL, TEM and RSTn, stray bytes) libjpeg skips or, for APP0 and APP14,
  only reads for the colour space, which decides no outcome; Pillow's own reading of
  the header would refuse some of it that libjpeg skips (a short Adobe APP14, an ICC
  APP2 without its chunk numbers, a truncated Photoshop APP13).

  Args:
    kind: 'ends_in_ff' (a single scan ending in FF with no marker after it) or
      'dc_overflow' (a progressive image whose DC predictors could overflow an int).
    header: The frame header's facts, the image's size and components if it decodes.
    stream: The bytes to decode instead of the data, as above.
  """

  def __init__(self, kind: str, header: 'Header', stream: bytes):
    super().__init__(kind)
    self.kind = kind
    self.header = header
    self.stream = stream


class _Ended(Exception):
  """libjpeg asked for a byte past the end: `suspended` if TensorFlow's source
  returned FALSE (libjpeg suspends), else it failed (JERR_FILE_READ)."""

  def __init__(self, suspended: bool):
    super().__init__()
    self.suspended = suspended


class Header(NamedTuple):
  """The frame header's facts: what `tf.io.decode_image` decodes the image to. (A
  NamedTuple: made in 0.4 us where a frozen dataclass took 1.9 us, a tenth of the
  straight walk's Python.)

  Attributes:
    height: Image height in pixels, from the SOF segment.
    width: Image width in pixels, from the SOF segment.
    components: Number of colour components; a returned Header has 1, 3 or 4, the
      counts TensorFlow decodes.
    progressive: Whether the SOF marker is a progressive one (several scans).
    arithmetic: Whether the SOF marker is an arithmetic-coding one rather than Huffman.
  """
  height: int
  width: int
  components: int
  progressive: bool
  arithmetic: bool


def _corrupt(message: str) -> Refused:
  return Refused('corrupt', message)


class _Walk:
  """libjpeg's decompressor state that decides TensorFlow's outcome."""

  def __init__(self, data: bytes):
    self.data = data
    self.end = len(data)
    self.pos = 2           # past SOI: TensorFlow took the file for JPEG by FF D8 FF
    self.sync = 2          # where the source's count was last written back (INPUT_SYNC)
    self.sof: Optional[int] = None
    self.components: List[Tuple[int, int, int, int]] = []  # (id, h, v, quant table)
    self.ids: List[int] = []  # of the first 4 components: only they can be in a scan
    # Until the first SOS: (start, end) of each table or frame segment (Undecided.stream)
    self.header: Optional[List[Tuple[int, int]]] = []
    self.first_sos = 0
    self.height = self.width = self.precision = 0
    self.progressive = self.arithmetic = False
    self.dc: List[Optional[Tuple[bytes, bytes]]] = [None] * 4
    self.ac: List[Optional[Tuple[bytes, bytes]]] = [None] * 4
    self.quant = [False] * 4
    self.latched: List[bool] = []
    self.restart_interval = 0
    self.scan: Tuple[int, ...] = ()          # component indexes of the current scan
    self.scan_tables: Tuple[Tuple[int, int], ...] = ()
    self.ss = self.se = self.ah = self.al = 0
    self.max_h = self.max_v = 1
    self.overflow_possible = False

  # -- the memory source and libjpeg's input macros (jdmarker.c, jpeg_handle.cc) --

  def take(self, count: int) -> bytes:
    """INPUT_BYTE / INPUT_2BYTES of `count` bytes with no check between them."""
    if self.pos + count > self.end:
      raise _Ended(self.sync < self.end)
    self.pos += count
    return self.data[self.pos - count:self.pos]

  def length(self) -> int:
    high, low = self.take(2)
    return high << 8 | low

  def input_sync(self) -> None:
    self.sync = self.pos

  def skip(self, count: int) -> None:
    """`skip_input_data` after an INPUT_SYNC: `MemSkipInputData` fails past the end."""
    self.input_sync()
    if count > 0:
      if count > self.end - self.pos:
        raise _Ended(False)
      self.pos += count
      self.sync = self.pos

  def next_marker(self) -> int:
    """jdmarker.c next_marker: skips to the next marker token. Non-FF bytes and FF 00
    pairs are synced as they are discarded, FF fill is not: data that ends in FF
    suspends, any other end fails."""
    data, pos = self.data, self.pos
    if pos + 1 < self.end and data[pos] == 0xFF and 0 < data[pos + 1] < 0xFF:
      self.pos = self.sync = pos + 2  # the common case: a marker right here
      return data[pos + 1]
    found = _TOKEN.search(data, pos)
    if found is None:
      suspended = self.end > self.pos and self.data[-1] == 0xFF
      self.pos = self.end
      raise _Ended(suspended)
    self.pos = self.sync = found.end()
    return self.data[self.pos - 1]

  # -- jdmarker.c read_markers and the segment readers --

  def read_markers(self, marker: int) -> int:
    """Handles markers from `marker` (0: find the next) until SOS or EOI, which it
    returns (SOS with its header read)."""
    handlers, next_marker = _HANDLERS, self.next_marker
    while True:
      if not marker:
        marker = next_marker()
      if marker == _SOS:
        if self.header is not None and not self.first_sos:
          self.first_sos = self.pos - 2
        self.get_sos()
        return _SOS
      if marker == _EOI:
        return _EOI
      start = self.pos - 2
      handler = handlers.get(marker)
      if handler is None:
        self.other_segment(marker)
      else:
        handler(self)
      if marker in _TABLES_AND_FRAME and self.header is not None:
        self.header.append((start, self.pos))
      marker = 0

  def other_segment(self, marker: int) -> None:
    if marker in _SOF_HUFFMAN:
      self.get_sof(marker, _SOF_HUFFMAN[marker], False)
    elif marker in _SOF_ARITHMETIC:
      self.get_sof(marker, _SOF_ARITHMETIC[marker], True)
    elif marker in _SOF_UNSUPPORTED:
      raise Refused('unsupported_format',
                    f'unsupported JPEG process: SOF type 0x{marker:02x}')
    elif marker == _SOI:
      raise _corrupt('invalid JPEG file structure: two SOI markers')
    elif 0xD0 <= marker <= 0xD7 or marker == 0x01:
      pass                                        # RSTn, TEM: parameterless
    else:  # DHP, EXP, JPGn, reserved: read_markers' default
      raise _corrupt(f'unsupported marker type 0x{marker:02x}')

  def get_interesting_appn(self) -> None:
    """APP0 and APP14: up to 14 bytes read, the rest skipped."""
    length = self.length() - 2
    self.take(min(14, max(length, 0)))
    self.skip(length - min(14, max(length, 0)))

  def skip_variable(self) -> None:
    """Every other APPn, COM and DNL."""
    self.skip(self.length() - 2)

  def get_dri(self) -> None:
    if self.length() != 4:
      raise _corrupt('bogus marker length (DRI)')
    high, low = self.take(2)
    self.restart_interval = high << 8 | low
    self.input_sync()

  def get_sof(self, marker: int, progressive: bool, arithmetic: bool) -> None:
    length = self.length()
    precision, h1, h0, w1, w0, count = self.take(6)
    if self.sof is not None:
      raise _corrupt('invalid JPEG file structure: two SOF markers')
    if not (h1 or h0) or not (w1 or w0) or not count:
      raise _corrupt('empty JPEG image (DNL not supported)')
    if length - 8 != count * 3:
      raise _corrupt('bogus marker length (SOF)')
    body = self.take(count * 3)
    self.components = [(body[i], body[i + 1] >> 4, body[i + 1] & 15, body[i + 2])
                       for i in range(0, count * 3, 3)]
    self.ids = [c[0] for c in self.components[:_MAX_COMPS_IN_SCAN]]
    self.sof, self.progressive, self.arithmetic = marker, progressive, arithmetic
    self.precision, self.height, self.width = precision, h1 << 8 | h0, w1 << 8 | w0
    self.input_sync()

  def get_sos(self) -> None:
    if self.sof is None:
      raise _corrupt('invalid JPEG file structure: SOS before SOF')
    data, end, pos = self.data, self.end, self.pos
    if pos + 3 > end:
      return self.take(3)
    length, count = data[pos] << 8 | data[pos + 1], data[pos + 2]
    pos += 3
    if length != count * 2 + 6 or count < 1 or count > _MAX_COMPS_IN_SCAN:
      raise _corrupt('bogus marker length (SOS)')
    # A component matches if its id is the one wanted and the scan slot of its own
    # index is free (jdmarker.c get_sos tests cur_comp_info[ci], indexed by the
    # component); a component named twice is JERR_BAD_COMPONENT_ID too.
    ids = self.ids
    slots: List[Optional[int]] = [None] * _MAX_COMPS_IN_SCAN
    tables = []
    for i in range(count):
      if pos + 2 > end:  # each component's checks come before the next bytes' reading
        self.pos = pos
        self.take(2)
      wanted, selectors = data[pos], data[pos + 1]
      pos += 2
      for ci, component_id in enumerate(ids):
        if component_id == wanted and slots[ci] is None:
          break
      else:
        raise _corrupt(f'invalid component ID {wanted} in SOS')
      if ci in slots[:i]:
        raise _corrupt(f'invalid component ID {wanted} in SOS')
      slots[i] = ci
      tables.append((selectors >> 4, selectors & 15))
    if pos + 3 > end:
      self.pos = pos
      self.take(3)
    self.ss, self.se, approximation = data[pos], data[pos + 1], data[pos + 2]
    self.ah, self.al = approximation >> 4, approximation & 15
    self.scan = tuple(slots[:count])
    self.scan_tables = tables
    self.pos = self.sync = pos + 3
    return None

  def get_dht(self) -> None:
    data, end, pos = self.data, self.end, self.pos
    if pos + 2 > end:
      return self.take(2)
    length = (data[pos] << 8 | data[pos + 1]) - 2
    pos += 2
    while length > 16:
      if pos + 17 > end:
        self.pos = pos
        return self.take(17)
      index, bits = data[pos], data[pos + 1:pos + 17]
      count = sum(bits)
      pos += 17
      length -= 17
      if count > 256 or count > length:
        raise _corrupt('bogus Huffman table definition')
      if pos + count > end:
        self.pos = pos
        return self.take(count)
      values = data[pos:pos + count]
      pos += count
      length -= count
      if index & 0x10:
        index -= 0x10
        if not 0 <= index < 4:
          raise _corrupt(f'bogus DHT index {index}')
        self.ac[index] = (bits, values)
      else:
        if not 0 <= index < 4:
          raise _corrupt(f'bogus DHT index {index}')
        self.dc[index] = (bits, values)
    if length != 0:
      raise _corrupt('bogus marker length (DHT)')
    self.pos = self.sync = pos
    return None

  def get_dqt(self) -> None:
    length = self.length() - 2
    while length > 0:
      n, = self.take(1)
      if n & 15 >= 4:
        raise _corrupt(f'bogus DQT index {n & 15}')
      self.quant[n & 15] = True
      self.take(128 if n >> 4 else 64)
      length -= 129 if n >> 4 else 65
    if length != 0:
      raise _corrupt('bogus marker length (DQT)')
    self.input_sync()

  def get_dac(self) -> None:
    length = self.length() - 2
    while length > 0:
      index, value = self.take(2)
      length -= 2
      if index >= 32:
        raise _corrupt(f'bogus DAC index {index}')
      if index < 16 and value & 15 > value >> 4:
        raise _corrupt(f'bogus DAC value 0x{value:x}')
    if length != 0:
      raise _corrupt('bogus marker length (DAC)')
    self.input_sync()

  # -- set-up: jdinput.c, jdmaster.c, jdsample.c, the entropy decoders' start_pass --

  def initial_setup(self) -> None:
    """jdinput.c initial_setup, at the first SOS."""
    if self.height > _JPEG_MAX_DIMENSION or self.width > _JPEG_MAX_DIMENSION:
      raise Refused('too_large', f'a {self.width}x{self.height} JPEG is larger than '
                    f'TensorFlow decodes (at most {_JPEG_MAX_DIMENSION} pixels a side)')
    if self.precision != 8:
      raise Refused('unsupported_format',
                    f'unsupported JPEG data precision {self.precision}')
    if len(self.components) > _MAX_COMPONENTS:
      raise Refused('unsupported_format',
                    f'a JPEG of {len(self.components)} components cannot be decoded '
                    f'by TensorFlow')
    for _, h, v, _ in self.components:
      if not (1 <= h <= 4 and 1 <= v <= 4):
        raise _corrupt('bogus sampling factors')
    self.max_h = max(h for _, h, _, _ in self.components)
    self.max_v = max(v for _, _, v, _ in self.components)
    self.latched = [False] * len(self.components)

  def start_decompress(self) -> None:
    """jdmaster.c master_selection: the upsampler's factors (jdsample.c
    jinit_upsampler: integral ratios only, at TensorFlow's full scale) and the
    standard Huffman tables of sequential Huffman images (jdhuff.c
    jinit_huff_decoder)."""
    for _, h, v, _ in self.components:
      if self.max_h % h or self.max_v % v:
        raise Refused('unsupported_format', 'the JPEG\'s sampling factors need '
                      'fractional upsampling, which libjpeg does not implement')
    if not self.arithmetic and not self.progressive:
      for slot in (0, 1):
        self.dc[slot] = self.dc[slot] or _STD_DC[slot]
        self.ac[slot] = self.ac[slot] or _STD_AC

  def start_scan(self) -> int:
    """jdinput.c start_input_pass (per_scan_setup, latch_quant_tables) and the
    entropy decoder's start_pass, for the scan just read; returns its MCU count."""
    if len(self.scan) == 1:
      _, h, v, _ = self.components[self.scan[0]]
      # width_in_blocks x height_in_blocks (jdinput.c initial_setup)
      mcus = (-(-self.width * h // (self.max_h * 8))
              * -(-self.height * v // (self.max_v * 8)))
    else:
      blocks = sum(self.components[ci][1] * self.components[ci][2] for ci in self.scan)
      if blocks > _D_MAX_BLOCKS_IN_MCU:
        raise _corrupt('sampling factors too large for interleaved scan')
      mcus = -(-self.width // (self.max_h * 8)) * -(-self.height // (self.max_v * 8))
    for ci in self.scan:
      if not self.latched[ci]:
        table = self.components[ci][3]
        if table >= 4 or not self.quant[table]:
          raise _corrupt(f'quantization table 0x{table:02x} was not defined')
        self.latched[ci] = True
    if self.progressive:
      dc_band = self.ss == 0
      bad = self.se != 0 if dc_band else (self.ss > self.se or self.se >= 64
                                          or len(self.scan) != 1)
      if (self.ah != 0 and self.al != self.ah - 1) or self.al > 13 or bad:
        raise _corrupt(f'invalid progressive parameters Ss={self.ss} Se={self.se} '
                       f'Ah={self.ah} Al={self.al}')
    if self.arithmetic:
      # jdarith.c start_pass: table numbers are 4 bits and NUM_ARITH_TBLS is 16, so
      # JERR_NO_ARITH_TABLE cannot happen; the conditioning values always exist.
      return mcus
    dc_slots, ac_slots = self.dc, self.ac
    for ci, (dc, ac) in zip(self.scan, self.scan_tables):
      if not self.progressive:  # jdhuff.c start_pass_huff_decoder
        _huffman_table(dc_slots, dc, True)
        _huffman_table(ac_slots, ac, False)
      elif self.ss == 0:  # jdphuff.c start_pass_phuff_decoder
        if self.ah == 0:
          self._bound_dc(ci, _huffman_table(dc_slots, dc, True), mcus)
      else:
        _huffman_table(ac_slots, ac, False)
    return mcus

  def _bound_dc(self, ci: int, largest: int, mcus: int) -> None:
    """jdphuff.c decode_mcu_DC_first: JERR_BAD_DCT_COEF when a component's DC
    predictor leaves the int range. Each difference is at most 2^largest - 1 (DC
    symbols are 0-15) and the predictor restarts at 0 at each restart marker, so it
    cannot overflow unless a component has more blocks than that between restarts."""
    per_mcu = 1 if len(self.scan) == 1 else (self.components[ci][1]
                                             * self.components[ci][2])
    run = min(mcus, self.restart_interval) if self.restart_interval else mcus
    if run * per_mcu * ((1 << largest) - 1) > _INT_MAX:
      self.overflow_possible = True

  # -- a scan's data: which marker it ends at --

  def restarts(self, mcus: int) -> int:
    """Moves through a scan's entropy-coded data as libjpeg does, to each restart
    marker its MCU count calls for (jdhuff.c decode_mcu and process_restart before
    MCUs RI, 2 RI, ...; jdmarker.c read_restart_marker, jpeg_resync_to_restart).
    Returns the marker left unread at the end, or 0: then the data's end is the next
    marker token (where the decoder stops, or `next_marker` finds it)."""
    unread = 0
    if self.restart_interval and mcus > self.restart_interval:
      wanted = 0
      restarts = (mcus - 1) // self.restart_interval
      tokens = _TOKEN.finditer(self.data, self.pos)
      for done in range(restarts):  # the common case: each next token the RST wanted
        token = next(tokens, None)
        if token is None or token.end() - token.start() != 2 or (
            self.data[token.end() - 1] != 0xD0 + wanted):
          break
        wanted = (wanted + 1) & 7
        self.pos = self.sync = token.end()
      else:
        done = restarts
      for _ in range(done, restarts):
        if not unread:
          unread = self.next_marker()
        if unread == 0xD0 + wanted:
          unread = 0
        else:
          unread = self.resync(unread, wanted)
          if unread and not 0xD0 <= unread <= 0xD7:
            break  # stays unread through every later restart (action 3)
        wanted = (wanted + 1) & 7
    return unread

  def resync(self, marker: int, desired: int) -> int:
    """jdmarker.c jpeg_resync_to_restart; returns the marker left unread, or 0."""
    while True:
      if marker < 0xC0:
        action = 2
      elif not 0xD0 <= marker <= 0xD7:
        action = 3
      elif marker - 0xD0 in ((desired + 1) & 7, (desired + 2) & 7):
        action = 3
      elif marker - 0xD0 in ((desired - 1) & 7, (desired - 2) & 7):
        action = 2
      else:
        action = 1
      if action == 1:
        return 0
      if action == 3:
        return marker
      marker = self.next_marker()


# read_markers' segment readers (jdmarker.c jinit_marker_reader: APP0 and APP14 are
# examined, every other APPn, COM and DNL skipped).
_HANDLERS = {_DHT: _Walk.get_dht, _DQT: _Walk.get_dqt, _DRI: _Walk.get_dri,
             _DAC: _Walk.get_dac, _COM: _Walk.skip_variable, _DNL: _Walk.skip_variable,
             **{app: (_Walk.get_interesting_appn if app in (_APP0, _APP14)
                      else _Walk.skip_variable) for app in range(0xE0, 0xF0)}}


def _huffman_table(slots, index: int, dc: bool) -> int:
  """jdhuff.c jpeg_make_d_derived_tbl: the table must be defined and its code lengths
  a valid code; DC symbols must be 0-15. Returns the largest symbol."""
  table = slots[index] if index < 4 else None
  if table is None:
    raise _corrupt(f'Huffman table 0x{index:02x} was not defined')
  if table is _STD_AC:
    return 0
  verdict = _TABLES.get((dc, table))
  if verdict is None:
    if len(_TABLES) >= _TABLES_KEPT:  # optimized tables differ image by image
      _TABLES.clear()
    verdict = _TABLES[dc, table] = _table_verdict(dc, *table)
  if verdict < 0:
    raise _corrupt('bogus Huffman table definition')
  return verdict


# The verdicts of the tables seen last: most images share their encoder's standard
# tables, so a few thousand cover them; a worker's memory stays bounded.
_TABLES: Dict[Tuple[bool, Tuple[bytes, bytes]], int] = {}
_TABLES_KEPT = 4096


# jpeg_make_d_derived_tbl gives each length's codes in turn (Figure C.2) and refuses a
# table whose codes of a length do not fit in that many bits ("no code is allowed to be
# all ones": code >= 1 << length after the group). The code after length L's group is
# sum(count[k] * 2^(L - k), k <= L), so it fails first where sum(count[k] * 2^(16 - k))
# reaches 2^16, at a length that has codes: the table is refused exactly when that sum
# over all 16 lengths reaches 2^16 (Kraft's inequality). Summed in C (`map`): a table
# of a progressive image, its own optimized one, costs 1 us rather than 4.
_CODE_WEIGHTS = tuple(1 << (16 - length) for length in range(1, 17))


def _table_verdict(dc: bool, bits: bytes, values: bytes) -> int:
  """-1 for a table jpeg_make_d_derived_tbl refuses (codes that do not fit their
  lengths; a DC symbol above 15), else a DC table's largest symbol (`_bound_dc`), 0 for
  an AC table (whose symbols no rule reads: max() of 162 of them cost 2 us)."""
  if sum(map(operator.mul, bits, _CODE_WEIGHTS)) >= 1 << 16:
    return -1
  if not dc:
    return 0
  largest = max(values, default=0)
  return -1 if largest > 15 else largest


def walk(data: bytes, max_pixels: int, check_pixels) -> Header:
  """TensorFlow's outcome for JPEG bytes: the Header when `tf.io.decode_image` decodes
  them, Refused when it does not, Undecided when only a decode can tell.

  Args:
    data: The JPEG file's bytes, from its SOI marker.
    max_pixels: The most width x height allowed (the `max_pixels` option).
    check_pixels: Called as `check_pixels(width, height, max_pixels)` once the frame
      header is read, to raise RowError `too_large` (`formats.check_pixels`).
  """
  header = _straight_walk(data, max_pixels, check_pixels)
  return header if header is not None else _full_walk(data, max_pixels, check_pixels)


def _full_walk(data: bytes, max_pixels: int, check_pixels) -> Header:
  """`walk` step by step with libjpeg's state (`_Walk`): decides every JPEG."""
  w = _Walk(data)
  phase = 'header'
  try:
    if w.read_markers(0) == _EOI:  # jdinput.c consume_markers, jdapimin.c read_header
      raise _corrupt('invalid JPEG file structure: missing SOS marker' if w.sof
                     else 'JPEG datastream contains no image')
    w.initial_setup()
    segments, w.header = w.header, None
    header = Header(w.height, w.width, len(w.components), w.progressive, w.arithmetic)
    # jpeg_mem.cc UncompressLow: channels min(components, 3), so 2 components fail;
    # 5 to 10 fail in jdcolor.c (no conversion of an unknown colour space to RGB).
    if header.components not in (1, 3, 4):
      raise Refused('unsupported_format', f'a JPEG of {header.components} components '
                    f'cannot be decoded by TensorFlow')
    if header.width * header.height * header.components >= 2**29:
      raise Refused('too_large', f'a {header.width}x{header.height} JPEG is larger than '
                    f'TensorFlow decodes (width x height x components below 2^29)')
    check_pixels(header.width, header.height, max_pixels)
    w.start_decompress()
    if len(w.scan) < len(w.components) or w.progressive:  # jdinput.c: several scans
      # jpeg_start_decompress reads every scan up to EOI; a suspension fails later.
      phase = 'scans'
      while True:
        marker = w.restarts(w.start_scan()) or w.next_marker()
        if w.read_markers(marker) == _EOI:
          break
      if w.overflow_possible:
        raise Undecided('dc_overflow', header, _stream(data, segments, w.first_sos))
      return header
    # One scan, decoded by jpeg_read_scanlines: a suspension returns 0 lines.
    phase = 'scan'
    marker = w.restarts(w.start_scan())
    phase = 'tail'
    marker = marker or w.next_marker()
    # jpeg_finish_decompress reads the markers up to EOI; its suspension is accepted
    # (TensorFlow ignores its return value); a second scan is JERR_EOI_EXPECTED.
    phase = 'finish'
    if w.read_markers(marker) == _SOS:
      raise _corrupt("didn't expect more than one scan")
    return header
  except _Ended as ended:
    if phase == 'finish' and ended.suspended:
      return header
    if phase == 'tail' and ended.suspended:
      # No marker after the data, which ends in FF: if the decoder's look-ahead stops
      # short of the end, `next_marker` suspends in the FF fill (accepted); if it
      # reaches the end, decoding fails.
      raise Undecided('ends_in_ff', header, _stream(data, segments, w.first_sos)) from None
    sos = data.find(b'\xff\xda')
    ended_at_eoi = sos >= 0 and data.find(b'\xff\xd9', sos) >= 0
    raise Refused('corrupt' if ended_at_eoi else 'truncated',
                  'libjpeg reads past its end' if ended_at_eoi
                  else 'it ends before its end-of-image marker') from None


def _stream(data: bytes, segments: List[Tuple[int, int]], first_sos: int) -> bytes:
  """Undecided.stream: SOI, the table and frame segments, the data from the first SOS."""
  return b''.join([data[:2], *(data[a:b] for a, b in segments), data[first_sos:]])


# -- the straight walk: the same rules, bundled, for a JPEG with nothing out of the way --
#
# Measured on photos (benchmarks/photos.py, the first 2,000: 1,687 baseline, 313
# progressive; thread_time, each image seen once): the step-by-step walk cost about
# 70 us an image. About 20 us of it is the token search over the entropy-coded data at
# `re`'s C speed, which stays: a `bytes.find(b'\xff')` loop stops at every FF 00 pair
# (one in about 240 bytes) and took 33 us, numpy's `flatnonzero(a == 255)` 25 us,
# `rb'\xff+[^\x00\xff]'` 420 us (no literal prefix: `re` tests a charset at each
# byte). The rest was Python: with each scan's data cut to 8 bytes, the walk took 32 us
# for a baseline photo and 100-170 us for a progressive one (its own optimized Huffman
# tables, 8 of them, each checked length by length). `_straight_walk` decides such
# JPEGs in one loop over the segments with local state, the facts of the DHT, SOF and
# SOS segments kept by their bytes (encoders write the same tables and components image
# after image), table verdicts summed in C (`_table_verdict`): 8 us and 44 us. It gives
# up (None) at the first thing out of the ordinary, leaving it to `_full_walk`, and
# returns a Header only where `_full_walk` returns that Header (tests/test_jpeg_walk.py
# checks this on every crafted and damaged JPEG of the tests and on random ones).

# What the DHT, SOF and SOS segments seen last hold, by their bytes: `_dht_definitions`,
# `_frame` and `_scan` of them. Segments of at most 512 bytes are kept (a DHT of the 4
# standard tables has 418), at most `_TABLES_KEPT` of each kind: a worker's memory stays
# bounded (under 5 MiB).
_DEFINED: Dict[bytes, object] = {}
_FRAMES: Dict[bytes, object] = {}
_SCANS: Dict[Tuple[bytes, bool, bytes], object] = {}
_KEPT_BYTES = 512
_MISSING = object()
# The standard DC tables' verdicts (jdhuff.c jinit_huff_decoder); a standard AC table's
# verdict is 0, as `_huffman_table` gives for `_STD_AC`.
_STD_DC_VERDICT = tuple(_table_verdict(True, *table) for table in _STD_DC)
# The checks `_Walk.start_scan` makes of a scan's tables (jdhuff.c, jdphuff.c).
_CHECK_DC, _CHECK_AC, _CHECK_DC_BOUND = 0, 1, 2


def _keep(kept: dict, key, size: int, value):
  """`value`, kept in `kept` by `key` if its segment's `size` is at most `_KEPT_BYTES`."""
  if size <= _KEPT_BYTES:
    if len(kept) >= _TABLES_KEPT:
      kept.clear()
    kept[key] = value
  return value


def _kept(kept: dict, make, *args):
  """`make(*args)`, kept in `kept` as `_keep` keeps it: by `args` (its one argument
  where it has one), the segment's bytes `args[-1]` giving the size. Called on a miss
  only: a hit is the caller's own `get`, a function call less an image."""
  return _keep(kept, args[0] if len(args) == 1 else args, len(args[-1]), make(*args))


def _dht_definitions(payload: bytes) -> Optional[Tuple[Tuple[bool, int, int], ...]]:
  """`_Walk.get_dht` on a whole DHT segment's bytes after its length: the tables it
  defines as (AC?, slot, verdict), or None where get_dht refuses the segment."""
  length, pos, defined = len(payload), 0, []
  while length > 16:
    index, bits = payload[pos], payload[pos + 1:pos + 17]
    count = sum(bits)
    pos += 17
    length -= 17
    if count > 256 or count > length:
      return None
    values = payload[pos:pos + count]
    pos += count
    length -= count
    if index & 0x10:
      index -= 0x10
      if not 0 <= index < 4:
        return None
      defined.append((True, index, _table_verdict(False, bits, values)))
    else:
      if not 0 <= index < 4:
        return None
      defined.append((False, index, _table_verdict(True, bits, values)))
  return tuple(defined) if length == 0 else None


def _frame(components: bytes):
  """A SOF segment's component count and specifications (its bytes from the count on):
  (components as (id, h, v, quant table), the ids a scan can name, max h, max v), or
  None where `_full_walk` refuses the frame or decodes no image of it: a count other
  than 1, 3 or 4 or unlike the length (get_sof, walk()), sampling factors outside 1-4
  (initial_setup) or in no integral ratio (jinit_upsampler)."""
  count = components[0]
  if count not in (1, 3, 4) or len(components) != 1 + count * 3:
    return None
  specs = tuple((components[i], components[i + 1] >> 4, components[i + 1] & 15,
                 components[i + 2]) for i in range(1, len(components), 3))
  if not all(1 <= h <= 4 and 1 <= v <= 4 for _, h, v, _ in specs):
    return None
  max_h, max_v = max(c[1] for c in specs), max(c[2] for c in specs)
  if any(max_h % h or max_v % v for _, h, v, _ in specs):
    return None
  return specs, tuple(c[0] for c in specs[:_MAX_COMPS_IN_SCAN]), max_h, max_v


def _scan(components: bytes, progressive: bool, payload: bytes):
  """A SOS segment's facts, from its bytes after the length, in a frame of `components`
  (`_frame`'s bytes; `progressive`: of a progressive SOF):
  (its components as (index, quant table), (check, slot, blocks an MCU) for each table
  check of start_scan, the MCU's width and height in blocks of the component sampled
  largest, whether it codes DC), or None where get_sos or start_scan refuse it."""
  specs, ids, max_h, max_v = _frame(components)
  count = payload[0] if payload else 0
  if len(payload) != count * 2 + 4 or count < 1 or count > _MAX_COMPS_IN_SCAN:
    return None
  slots: List[Optional[int]] = [None] * _MAX_COMPS_IN_SCAN
  selectors = []
  for i in range(count):  # get_sos's matching of the components, as it is
    wanted = payload[1 + 2 * i]
    for ci, component_id in enumerate(ids):
      if component_id == wanted and slots[ci] is None:
        break
    else:
      return None
    if ci in slots[:i]:
      return None
    slots[i] = ci
    selectors.append(payload[2 + 2 * i])
  ss, se, ah, al = payload[-3], payload[-2], payload[-1] >> 4, payload[-1] & 15
  scan = slots[:count]
  if count == 1:  # an MCU is a block: width_in_blocks x height_in_blocks
    per_mcu = (1,)
    _, across, down, _ = specs[scan[0]]
  else:
    per_mcu = tuple(specs[ci][1] * specs[ci][2] for ci in scan)
    if sum(per_mcu) > _D_MAX_BLOCKS_IN_MCU:
      return None
    across = down = 1
  checks = []
  if progressive:
    bad = se != 0 if ss == 0 else (ss > se or se >= 64 or count != 1)
    if (ah != 0 and al != ah - 1) or al > 13 or bad:
      return None
    for i, selector in enumerate(selectors):
      if ss != 0:
        checks.append((_CHECK_AC, selector & 15, 0))
      elif ah == 0:
        checks.append((_CHECK_DC_BOUND, selector >> 4, per_mcu[i if count > 1 else 0]))
  else:
    for selector in selectors:
      checks += ((_CHECK_DC, selector >> 4, 0), (_CHECK_AC, selector & 15, 0))
  return (tuple((ci, specs[ci][3]) for ci in scan), tuple(checks),
          (across, max_h * 8, down, max_v * 8), count < len(specs) or progressive)


def _first_scan(precision: int, height: int, width: int, components: int,
                progressive: bool, dc: List[Optional[int]], ac: List[Optional[int]],
                check_pixels, max_pixels: int) -> Optional[Header]:
  """For `_straight_walk`, at the first scan: jdinput.c initial_setup, walk()'s checks,
  `check_pixels` and master_selection (a sequential frame's missing tables 0 and 1 the
  standard ones, set in `dc` and `ac`); the image's Header, or None where `_full_walk`
  refuses the frame or this walk leaves it to `_full_walk` (a precision other than 8)."""
  if precision != 8 or width * height * components >= 2**29:
    return None
  header = Header(height, width, components, progressive, False)
  check_pixels(width, height, max_pixels)
  if not progressive:
    for slot in (0, 1):
      if dc[slot] is None:
        dc[slot] = _STD_DC_VERDICT[slot]
      if ac[slot] is None:
        ac[slot] = 0
  return header


def _quant_tables_set(data: bytes, at: int, segment_end: int, quant: List[bool]) -> bool:
  """get_dqt on a DQT segment whose tables start at `at`, for `_straight_walk`: each
  table's slot marked in `quant`; False where a slot is out of range or the tables do
  not end where the segment ends."""
  while at < segment_end:
    n = data[at]
    if n & 15 >= 4:
      return False
    quant[n & 15] = True
    at += 129 if n >> 4 else 65
  return at == segment_end


def _scan_tables_set(components, checks, latched: List[bool], quant: List[bool],
                     dc: List[Optional[int]], ac: List[Optional[int]], mcus: int,
                     restart_interval: int) -> bool:
  """`_Walk.start_scan`'s table checks for `_straight_walk`, on a scan `_scan` describes
  (`components`, `checks`) of `mcus` MCUs: each component's quantization table latched
  (marked in `latched`), each Huffman table it names defined and accepted, a DC
  table's bound (`_bound_dc`) kept; False where start_scan refuses the scan."""
  for ci, table in components:
    if not latched[ci]:
      if table >= 4 or not quant[table]:
        return False
      latched[ci] = True
  for check, index, per_mcu in checks:
    verdict = (ac if check == _CHECK_AC else dc)[index] if index < 4 else None
    if verdict is None or verdict < 0:
      return False
    if check == _CHECK_DC_BOUND:  # _bound_dc
      run = min(mcus, restart_interval) if restart_interval else mcus
      if run * per_mcu * ((1 << verdict) - 1) > _INT_MAX:
        return False
  return True


def _scan_data_end(data: bytes, pos: int, mcus: int, restart_interval: int) -> Optional[int]:
  """Where the entropy-coded data from `pos` of a scan of `mcus` MCUs ends: the marker
  token after it, each restart marker before it the next token and the one expected
  (`_Walk.restarts`' common case); None for anything else (`_full_walk` decides)."""
  search = _TOKEN.search
  if restart_interval and mcus > restart_interval:
    wanted = 0xD0
    for _ in range((mcus - 1) // restart_interval):
      token = search(data, pos)
      if token is None:
        return None
      start, pos = token.span()
      if pos - start != 2 or data[pos - 1] != wanted:
        return None
      wanted = 0xD0 | ((wanted + 1) & 7)
  token = search(data, pos)  # the marker that ends the scan's data
  return None if token is None else token.start()


def _straight_walk(data: bytes, max_pixels: int, check_pixels) -> Optional[Header]:
  """The Header `_full_walk` returns for a JPEG whose every marker is where the segment
  before it ends (or, after a scan, the next marker token of the data, each restart
  marker the one expected), whose every segment is whole, of a Huffman process, with
  only APPn, COM, DQT, DHT, DRI, SOFn and SOS segments, and which `_full_walk` accepts
  without a decode; None for every other JPEG (then `_full_walk` decides). Each check
  is `_Walk`'s, with `return None` where `_Walk` raises or takes another way;
  `check_pixels` is called where `_full_walk` calls it, with the same values."""
  end = len(data)
  dc: List[Optional[int]] = [None] * 4   # the verdicts of the tables in each slot
  ac: List[Optional[int]] = [None] * 4
  quant = [False] * 4
  restart_interval = 0
  frame = None
  progressive = several = False
  header: Optional[Header] = None   # once the first scan is set up
  latched: List[bool] = []
  width = height = 0
  pos = 2
  while True:
    # jdmarker.c next_marker's common case: the marker right here (no fill, no skip).
    if pos + 4 > end:
      # room for no segment length: only an EOI (and what follows it) can be here
      return header if data[pos:pos + 2] == b'\xff\xd9' else None
    if data[pos] != 0xFF:
      return None
    marker = data[pos + 1]
    if marker == _EOI:  # the end of the image: accepted once a scan was read
      return header
    segment_end = pos + 2 + (data[pos + 2] << 8 | data[pos + 3])
    if segment_end > end or segment_end < pos + 4:
      return None
    if marker == _DHT:
      payload = data[pos + 4:segment_end]
      defined = _DEFINED.get(payload, _MISSING)
      defined = _kept(_DEFINED, _dht_definitions, payload) if defined is _MISSING else defined
      if defined is None:
        return None
      for is_ac, index, verdict in defined:
        (ac if is_ac else dc)[index] = verdict
    elif marker == _SOS:
      if frame is None:
        return None
      key = (frame_bytes, progressive, data[pos + 4:segment_end])
      scan = _SCANS.get(key, _MISSING)
      scan = _kept(_SCANS, _scan, *key) if scan is _MISSING else scan
      if scan is None:
        return None
      components, checks, (across, per_width, down, per_height), scans = scan
      if header is None:
        header = _first_scan(precision, height, width, len(frame[0]), progressive, dc, ac,
                             check_pixels, max_pixels)
        if header is None:
          return None
        latched = [False] * len(frame[0])
        several = scans
      elif not several:
        return None  # a second scan after a single-scan image's: JERR_EOI_EXPECTED
      # _Walk.start_scan: the MCU count, quantization tables latched, Huffman tables
      mcus = -(-width * across // per_width) * -(-height * down // per_height)
      if not _scan_tables_set(components, checks, latched, quant, dc, ac, mcus,
                              restart_interval):
        return None
      pos = _scan_data_end(data, segment_end, mcus, restart_interval)
      if pos is None:
        return None
      continue
    elif marker == _DQT:
      if not _quant_tables_set(data, pos + 4, segment_end, quant):
        return None
    elif 0xE0 <= marker <= 0xEF or marker == _COM:  # skipped (APP0, APP14: 14 read)
      pass
    elif marker in _SOF_HUFFMAN:
      if frame is not None or segment_end < pos + 10:
        return None
      height, width = data[pos + 5] << 8 | data[pos + 6], data[pos + 7] << 8 | data[pos + 8]
      frame_bytes = data[pos + 9:segment_end]
      frame = _FRAMES.get(frame_bytes, _MISSING)
      frame = _kept(_FRAMES, _frame, frame_bytes) if frame is _MISSING else frame
      if (frame is None or not height or not width or height > _JPEG_MAX_DIMENSION
          or width > _JPEG_MAX_DIMENSION):
        return None
      precision, progressive = data[pos + 4], _SOF_HUFFMAN[marker]
    elif marker == _DRI:
      if segment_end != pos + 6:
        return None
      restart_interval = data[pos + 4] << 8 | data[pos + 5]
    else:  # DAC, DNL, RSTn, TEM, SOI, other SOFn and markers: the full walk's
      return None
    pos = segment_end


def scan_count(data: bytes, stop: Optional[int] = None) -> int:
  """How many scans (SOS markers) a JPEG holds, as libjpeg numbers them
  (`input_scan_number`, which libjpeg-turbo's `djpeg -maxscans N` and TurboJPEG's scan
  limit check, cdjpeg.c `progress_monitor`), from its markers alone: segments skipped by
  their length, entropy-coded data searched for the next marker token as `next_marker`
  finds it (RSTn and TEM have no length), to EOI or the end of the data. No pixel is
  decoded; a baseline JPEG has 1, a progressive one from libjpeg ~10.

  Args:
    data: The JPEG file's bytes, from its SOI marker.
    stop: Stop counting past this many (the count returned is then `stop + 1`); None:
      count them all.
  """
  count, pos, end = 0, 2, len(data)
  search = _TOKEN.search
  while True:
    if pos + 1 < end and data[pos] == 0xFF and 0 < data[pos + 1] < 0xFF:
      marker, pos = data[pos + 1], pos + 2  # the common case: a marker right here
    else:
      found = search(data, pos)
      if found is None:
        return count
      marker, pos = data[found.end() - 1], found.end()
    if marker == _EOI:
      return count
    if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # RSTn, TEM: no length
      continue
    if marker == _SOS:
      count += 1
      if stop is not None and count > stop:
        return count
    if pos + 2 > end:
      return count
    pos += data[pos] << 8 | data[pos + 1]  # the segment (SOS: its header) skipped
