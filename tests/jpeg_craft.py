"""JPEG files built segment by segment, for one test case per rule of TensorFlow's JPEG
decoder (libjpeg-turbo 2.1.4): every SOF process, restart markers in and out of order,
non-interleaved and custom progressive scans, sampling factors, each segment kind cut
after the scan, a DC predictor that overflows.

Entropy-coded data is written with one-symbol Huffman tables: a DC table whose only code
`0` means a difference of category 0, an AC table whose only code `0` is EOB. So a run of
zero bytes decodes as flat grey blocks in any scan, whatever its geometry, and the
bytes a scan needs are easy to count.
"""
from __future__ import annotations

import struct
from typing import List, Sequence, Tuple

from images import lossless_jpeg

SOI, EOI = b'\xff\xd8', b'\xff\xd9'
ONE_CODE = bytes([1] + [0] * 15)  # one code of length 1


def segment(marker: int, body: bytes) -> bytes:
  return bytes([0xFF, marker]) + struct.pack('>H', len(body) + 2) + body


def dqt(index: int = 0, sixteen_bit: bool = False) -> bytes:
  values = struct.pack('>64H', *[1] * 64) if sixteen_bit else bytes([1] * 64)
  return segment(0xDB, bytes([(16 if sixteen_bit else 0) | index]) + values)


def dht(table_class: int, index: int, bits: bytes = ONE_CODE,
        values: bytes = b'\x00') -> bytes:
  """table_class 0: DC, 1: AC."""
  return segment(0xC4, bytes([table_class << 4 | index]) + bits + values)


def sof(width: int, height: int, components: Sequence[Tuple[int, int, int, int]],
        marker: int = 0xC0, precision: int = 8) -> bytes:
  """components: (id, h, v, quant table)."""
  body = struct.pack('>BHHB', precision, height, width, len(components))
  return segment(marker, body + b''.join(bytes([i, h << 4 | v, q])
                                         for i, h, v, q in components))


def sos(components: Sequence[Tuple[int, int, int]], ss: int = 0, se: int = 63,
        ah: int = 0, al: int = 0) -> bytes:
  """components: (id, DC table, AC table)."""
  body = bytes([len(components)]) + b''.join(bytes([c, dc << 4 | ac])
                                             for c, dc, ac in components)
  return segment(0xDA, body + bytes([ss, se, ah << 4 | al]))


def dri(interval: int) -> bytes:
  return segment(0xDD, struct.pack('>H', interval))


GREY = [(1, 1, 1, 0)]
YCC_420 = [(1, 2, 2, 0), (2, 1, 1, 0), (3, 1, 1, 0)]
YCC_444 = [(1, 1, 1, 0), (2, 1, 1, 0), (3, 1, 1, 0)]


def tables() -> bytes:
  """Quantization table 0 and the one-symbol DC and AC tables in slots 0."""
  return dqt(0) + dht(0, 0) + dht(1, 0)


def blocks(width: int, height: int, components, scan_ids=None) -> int:
  """How many blocks a scan of `scan_ids` (all components: interleaved) codes."""
  max_h = max(c[1] for c in components)
  max_v = max(c[2] for c in components)
  chosen = [c for c in components if scan_ids is None or c[0] in scan_ids]
  if len(chosen) == 1:
    _, h, v, _ = chosen[0]
    return -(-width * h // (max_h * 8)) * -(-height * v // (max_v * 8))
  mcus = -(-width // (max_h * 8)) * -(-height // (max_v * 8))
  return mcus * sum(h * v for _, h, v, _ in chosen)


def zeros(bits_needed: int, spare: int = 16) -> bytes:
  """Entropy-coded data of `bits_needed` zero bits (rounded up to bytes) and `spare`
  more zero bytes, which the decoder ignores with a warning at most."""
  return bytes(-(-bits_needed // 8) + spare)


def baseline(width: int = 16, height: int = 16, components=GREY, marker: int = 0xC0,
             extra_header: bytes = b'', data: bytes = None, tail: bytes = EOI) -> bytes:
  """A sequential image in one interleaved scan of flat blocks (2 bits a block)."""
  if data is None:
    data = zeros(2 * blocks(width, height, components))
  return (SOI + tables() + extra_header + sof(width, height, components, marker)
          + sos([(c[0], 0, 0) for c in components]) + data + tail)


def with_restarts(width: int, height: int, interval: int, markers: Sequence[int],
                  components=GREY, tail: bytes = EOI) -> bytes:
  """A sequential image with restart interval `interval` (in MCUs) whose data is cut
  into intervals and joined by `markers` (each a marker byte, or None for no marker;
  bytes for any other bytes)."""
  mcus = blocks(width, height, components) // sum(h * v for _, h, v, _ in components)
  bits_per_mcu = 2 * sum(h * v for _, h, v, _ in components)
  piece = zeros(bits_per_mcu * interval, spare=1)
  data = piece
  for i in range(-(-mcus // interval) - 1):
    marker = markers[i] if i < len(markers) else 0xD0 + (i & 7)
    if isinstance(marker, bytes):
      data += marker
    elif marker is not None:
      data += bytes([0xFF, marker])
    data += piece
  return (SOI + tables() + dri(interval) + sof(width, height, components)
          + sos([(c[0], 0, 0) for c in components]) + data + tail)


def progressive(width: int = 16, height: int = 16, components=YCC_444,
                scans: List[Tuple[Sequence[int], int, int, int, int]] = None,
                marker: int = 0xC2, between: bytes = b'', tail: bytes = EOI) -> bytes:
  """A progressive image; scans: (component ids, Ss, Se, Ah, Al). The default script is
  an interleaved DC scan, then one AC scan a component."""
  if scans is None:
    scans = [([c[0] for c in components], 0, 0, 0, 0)]
    scans += [([c[0]], 1, 63, 0, 0) for c in components]
  out = SOI + tables() + sof(width, height, components, marker)
  for ids, ss, se, ah, al in scans:
    bits = blocks(width, height, components, set(ids))
    out += sos([(i, 0, 0) for i in ids], ss, se, ah, al) + zeros(bits) + between
  return out + tail


def dc_overflow(side: int, alternate: bool, interval: int = 0, header: bytes = b'') -> bytes:
  """A progressive greyscale image of side x side pixels whose DC scan codes each
  block's difference as +32767 (category 15, all ones), or alternately +32767 and
  -32767: libjpeg's DC predictor leaves the int range after 65,538 blocks of +32767
  (jdphuff.c decode_mcu_DC_first: JERR_BAD_DCT_COEF)."""
  n = blocks(side, side, GREY)
  plus, minus = b'\x7f\xff\x00', b'\x00\x00'  # '0' + fifteen 1s (FF stuffed); '0' + 0s
  if interval:
    pieces, data = -(-n // interval), b''
    for i in range(pieces):
      count = min(interval, n - i * interval)
      data += (plus * count) + (bytes([0xFF, 0xD0 + (i & 7)]) if i < pieces - 1 else b'')
  else:
    data = b''.join(minus if alternate and i % 2 else plus for i in range(n))
  return (SOI + header + dqt(0) + dht(0, 0, ONE_CODE, b'\x0f')
          + (dri(interval) if interval else b'')
          + sof(side, side, GREY, 0xC2) + sos([(1, 0, 0)], 0, 0, 0, 0) + data + EOI)



def grey_image(header: bytes = b'', scan: bytes = None, marker: int = 0xC0,
               width: int = 16, height: int = 16, table_segments: bytes = None) -> bytes:
  """A 16x16 greyscale image in one scan, with `header` before its SOF."""
  return (SOI + (tables() if table_segments is None else table_segments) + header
          + sof(width, height, GREY, marker)
          + (sos([(1, 0, 0)]) if scan is None else scan) + zeros(8) + EOI)


def cases() -> List[Tuple[str, bytes]]:
  """One case a rule of TensorFlow's JPEG decoder, named for what it exercises."""
  out: List[Tuple[str, bytes]] = []
  add = lambda name, data: out.append((name, data))  # noqa: E731
  B, P, R = baseline(), progressive(), with_restarts(32, 16, 1, [])
  CMYK = [(i, 1, 1, 0) for i in range(1, 5)]
  # Coding processes (jdmarker.c read_markers) and sample precision (jdinput.c).
  for m in (0xC0, 0xC1, 0xC9):
    add(f'SOF {m:02x}, one scan', baseline(marker=m))
  add('SOF c2, progressive', P)
  add('SOF ca, progressive arithmetic', progressive(marker=0xCA))
  for m in (0xC3, 0xC5, 0xC6, 0xC7, 0xC8, 0xCB, 0xCD, 0xCE, 0xCF):
    add(f'SOF {m:02x}, unsupported', baseline(marker=m))
  add('lossless SOF3 with real data', lossless_jpeg())
  for p in (12, 16, 0, 7):
    add(f'precision {p}', SOI + tables() + sof(16, 16, GREY, 0xC1, precision=p)
        + sos([(1, 0, 0)]) + zeros(8) + EOI)
  # Components (jpeg_mem.cc: min(components, 3) channels; jdcolor.c).
  add('2 components', baseline(components=[(1, 1, 1, 0), (2, 1, 1, 0)]))
  add('4 components, CMYK', baseline(components=CMYK))
  add('5 components', baseline(components=[(i, 1, 1, 0) for i in range(1, 6)]))
  add('3 components, 4:2:0', baseline(components=YCC_420))
  # Sampling factors (jdinput.c initial_setup, per_scan_setup; jdsample.c).
  for name, (y, cb, cr) in [('4:1:1', ((4, 1), (1, 1), (1, 1))),
                            ('4:4:0', ((1, 2), (1, 1), (1, 1))),
                            ('3x2 with 2x1, fractional', ((3, 2), (2, 1), (1, 1))),
                            ('3x1', ((3, 1), (1, 1), (1, 1))),
                            ('2x2, 2x1, 1x2', ((2, 2), (2, 1), (1, 2))),
                            ('4x4: 18 blocks an MCU', ((4, 4), (1, 1), (1, 1))),
                            ('0x1', ((0, 1), (1, 1), (1, 1))),
                            ('5x1', ((5, 1), (1, 1), (1, 1)))]:
    comps = [(i + 1, h, v, 0) for i, (h, v) in enumerate((y, cb, cr))]
    add(f'sampling {name}', baseline(37, 21, comps))
  # Restart markers (jdhuff.c process_restart, jdmarker.c read_restart_marker and
  # jpeg_resync_to_restart): in order, missing, extra, each distance from the one
  # wanted, with FF fill, and other markers where a restart marker should be.
  for name, marks in [('in order', []), ('one missing', [0xD0, None]),
                      ('one extra', [b'\xff\xd0\xff\xd1']),
                      ('the next but one', [0xD1]), ('two ahead', [0xD2]),
                      ('three ahead', [0xD3]), ('four ahead', [0xD4]),
                      ('one behind', [0xD7]), ('two behind', [0xD6]),
                      ('with FF fill', [b'\xff\xff\xff\xd0']),
                      ('EOI instead', [0xD9]), ('APP1 instead', [b'\xff\xe1\x00\x04ab']),
                      ('unknown marker instead', [0x02]), ('SOF instead', [0xC0]),
                      ('after a stuffed zero', [b'\xff\x00\xff\xd0'])]:
    add(f'restart every MCU, {name}', with_restarts(32, 16, 1, marks))
    add(f'restart every 3 MCUs of 4:2:0, {name}',
        with_restarts(48, 40, 3, marks, components=YCC_420))
  add('restart interval longer than the image', with_restarts(16, 16, 100, []))
  add('restart interval 0', baseline(extra_header=dri(0)))
  add('restart image cut in its last interval', R[:-3])
  # Progressive scan scripts (jdphuff.c, jdarith.c start_pass).
  add('progressive, a DC scan a component',
      progressive(scans=[([1], 0, 0, 0, 0), ([2], 0, 0, 0, 0), ([3], 0, 0, 0, 0),
                         ([1], 1, 63, 0, 0)]))
  add('progressive, successive approximation',
      progressive(components=GREY, scans=[
          ([1], 0, 0, 0, 1), ([1], 1, 5, 0, 2), ([1], 6, 63, 0, 2), ([1], 1, 63, 2, 1),
          ([1], 0, 0, 1, 0), ([1], 1, 63, 1, 0)]))
  for name, scans in [('Ss > Se', [([1], 0, 0, 0, 0), ([1], 5, 3, 0, 0)]),
                      ('Al 14', [([1], 0, 0, 0, 14)]),
                      ('Ah not Al + 1', [([1], 0, 0, 0, 2), ([1], 0, 0, 2, 0)]),
                      ('DC scan with Se 1', [([1], 0, 1, 0, 0)]),
                      ('Se 64', [([1], 0, 0, 0, 0), ([1], 1, 64, 0, 0)]),
                      ('AC scan before the DC scan', [([1], 1, 63, 0, 0), ([1], 0, 0, 0, 0)])]:
    add(f'progressive, {name}', progressive(components=GREY, scans=scans))
  add('progressive, an AC scan of 2 components',
      progressive(scans=[([1, 2, 3], 0, 0, 0, 0), ([1, 2], 1, 63, 0, 0)]))
  add('progressive arithmetic, Ss > Se',
      progressive(components=GREY, marker=0xCA, scans=[([1], 5, 3, 0, 0)]))
  # Sequential images in several scans (jdinput.c: has_multiple_scans).
  scans = b''.join(sos([(i, 0, 0)]) + zeros(12) for i in (1, 2, 3))
  add('sequential, a scan a component', SOI + tables() + sof(24, 16, YCC_444) + scans + EOI)
  add('sequential, a scan a component, cut',
      (SOI + tables() + sof(24, 16, YCC_444) + scans)[:-3])
  add('sequential, a component twice', SOI + tables() + sof(24, 16, YCC_444)
      + sos([(1, 0, 0)]) + zeros(12) + sos([(1, 0, 0), (2, 0, 0), (3, 0, 0)]) + zeros(36)
      + EOI)
  add('one scan, then a second SOS', B[:-2] + sos([(1, 0, 0)]) + zeros(4) + EOI)
  add('one scan, then a second SOS cut', B[:-2] + sos([(1, 0, 0)])[:5])
  add('one scan, then a second SOS of an unknown component, cut',
      B[:-2] + sos([(7, 0, 0)])[:7])
  add('one scan, then a second SOS of 2 components, cut after the first',
      B[:-2] + sos([(1, 0, 0), (2, 0, 0)])[:7])
  # Each segment kind after the data, whole or cut at each point: after a single scan
  # a suspension in jpeg_finish_decompress is accepted, after progressive scans not.
  segments = {
      'DHT': dht(0, 1), 'DQT': dqt(1), 'DRI': dri(4), 'DAC': segment(0xCC, b'\x00\x10'),
      'APP0': segment(0xE0, b'JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00'),
      'APP14': segment(0xEE, b'Adobe\x00\x64\x00\x00\x00\x00\x01'),
      'APP1': segment(0xE1, b'Exif\x00\x00' + bytes(20)), 'COM': segment(0xFE, b'a comment'),
      'APP15': segment(0xEF, b'fifteen'), 'APP2': segment(0xE2, b'ICC_PROFILE\x00'),
      'SOF': sof(16, 16, GREY), 'SOS': sos([(1, 0, 0)]), 'DNL': segment(0xDC, b'\x00\x10')}
  for name, seg in segments.items():
    for k in (2, 3, 4, 5, len(seg) - 1, len(seg)):
      add(f'one scan, then {name} cut to {k} bytes', B[:-2] + seg[:k])
      add(f'progressive, then {name} cut to {k} bytes', P[:-2] + seg[:k])
    add(f'one scan, then a whole {name} and EOI', B[:-2] + seg + EOI)
  for name, tail in [('FF D0 FF', b'\xff\xd0\xff'), ('COM, FF FF', segments['COM'] + b'\xff\xff'),
                     ('TEM, FF', b'\xff\x01\xff'), ('FF', b'\xff'), ('FF FF', b'\xff\xff'),
                     ('nothing', b''), ('00', b'\x00'), ('FF 00', b'\xff\x00'),
                     ('FF 00 FF', b'\xff\x00\xff'), ('bytes', b'abc'),
                     ('bytes, FF', b'abc\xff'), ('RST3', b'\xff\xd3'), ('TEM', b'\xff\x01'),
                     ('an unknown marker', b'\xff\x02\x00')]:
    add(f'one scan, then {name}', B[:-2] + tail)
    add(f'progressive, then {name}', P[:-2] + tail)
    add(f'restart every MCU, then {name}', R[:-2] + tail)
  # No marker after the only scan: decided by a decode when the data ends in FF.
  for k in (0, 1, 2, 4, 8, 12, 16):
    add(f'one scan of {k} data bytes, FF', baseline(data=bytes(k), tail=b'\xff'))
    add(f'one scan of {k} data bytes', baseline(data=bytes(k), tail=b''))
    add(f'64x64 in one scan of {8 * k} data bytes, FF FF',
        baseline(64, 64, data=bytes(k * 8), tail=b'\xff\xff'))
  # The same, after header segments libjpeg skips or reads only in part and Pillow's
  # header reader would refuse: the decode that decides leaves them out.
  for name, header in [('a 5-byte Adobe APP14', segment(0xEE, b'Adobe')),
                       ('an ICC APP2 without its chunk numbers',
                        segment(0xE2, b'ICC_PROFILE\x00')),
                       ('a cut Photoshop APP13',
                        segment(0xED, b'Photoshop 3.0\x00' + b'8BIM\x03\xed')),
                       ('stray bytes', b'xyz')]:
    for k in (4, 16):
      add(f'one scan of {k} data bytes, FF, after {name}',
          baseline(extra_header=header, data=bytes(k), tail=b'\xff'))
  # Tables (jdhuff.c jpeg_make_d_derived_tbl, jstdhuff.c, jdinput.c latch_quant_tables).
  no_dht = dqt(0)
  add('no DHT, sequential: the standard tables',
      SOI + no_dht + sof(16, 16, GREY) + sos([(1, 0, 0)]) + zeros(64) + EOI)
  add('no DHT, progressive', grey_image(marker=0xC2, table_segments=no_dht,
                                        scan=sos([(1, 0, 0)], 0, 0)))
  add('Huffman table 2 not defined', grey_image(scan=sos([(1, 2, 0)])))
  add('Huffman table 4 in SOS', grey_image(scan=sos([(1, 4, 0)])))
  add('arithmetic table 4 in SOS', grey_image(marker=0xC9, scan=sos([(1, 4, 0)])))
  for name, dc, ac in [
      ('three codes of length 1', (bytes([3] + [0] * 15), b'\x00\x01\x02'), None),
      ('a code of all ones', (bytes([1, 1] + [0] * 14), b'\x00\x01'), None),
      ('no codes', (bytes(16), b''), None), ('DC symbol 16', (ONE_CODE, b'\x10'), None),
      ('AC symbol 255', None, (ONE_CODE, b'\xff'))]:
    one = (ONE_CODE, b'\x00')
    segs = dqt(0) + dht(0, 0, *(dc or one)) + dht(1, 0, *(ac or one))
    add(f'Huffman table with {name}', grey_image(table_segments=segs))
  add('a bad Huffman table no scan uses',
      grey_image(header=dht(0, 3, bytes([3] + [0] * 15), b'\x00\x01\x02')))
  add('DHT counts longer than the segment',
      grey_image(header=segment(0xC4, b'\x00' + bytes([5] + [0] * 15) + b'\x00')))
  add('DHT index 4', grey_image(header=dht(0, 4)))
  add('no DQT', grey_image(table_segments=dht(0, 0) + dht(1, 0)))
  add('16-bit DQT', grey_image(table_segments=dqt(0, True) + dht(0, 0) + dht(1, 0)))
  add('DQT index 4', grey_image(header=dqt(4)))
  add('quantization table 5 in SOF', SOI + tables() + sof(16, 16, [(1, 1, 1, 5)])
      + sos([(1, 0, 0)]) + zeros(8) + EOI)
  add('DRI of length 5', baseline(extra_header=segment(0xDD, b'\x00\x01\x00')))
  add('DAC index 32', baseline(marker=0xC9, extra_header=segment(0xCC, b'\x20\x10')))
  add('DAC with L > U', baseline(marker=0xC9, extra_header=segment(0xCC, b'\x00\x12')))
  add('DAC of odd length', baseline(marker=0xC9, extra_header=segment(0xCC, b'\x00\x10\x00')))
  # Frame and scan headers (jdmarker.c get_sof, get_sos; jdinput.c; jpeg_mem.cc).
  add('SOS before SOF', SOI + tables() + sos([(1, 0, 0)]) + sof(16, 16, GREY) + zeros(8) + EOI)
  add('two SOF', baseline(extra_header=sof(16, 16, GREY)))
  add('SOF length one too long', SOI + tables() + segment(
      0xC0, struct.pack('>BHHB', 8, 16, 16, 1) + b'\x01\x11\x00\x00')
      + sos([(1, 0, 0)]) + zeros(8) + EOI)
  add('height 0 (a DNL image)', baseline(16, 0))
  for width in (65500, 65501):
    add(f'width {width}', SOI + tables() + sof(width, 1, GREY) + sos([(1, 0, 0)])
        + zeros(2 * 8188) + EOI)
  add('2^29 samples', SOI + tables() + sof(16384, 16384, YCC_444)
      + sos([(1, 0, 0), (2, 0, 0), (3, 0, 0)]) + zeros(64) + EOI)
  add('SOS of an unknown component', grey_image(scan=sos([(9, 0, 0)])))
  for name, scan in [('one component twice', [(1, 0, 0), (1, 0, 0)]),
                     ('components out of order', [(2, 0, 0), (1, 0, 0), (3, 0, 0)])]:
    add(f'SOS of {name}',
        SOI + tables() + sof(16, 16, YCC_444) + sos(scan) + zeros(32) + EOI)
  add('SOS of no components', grey_image(scan=segment(0xDA, b'\x00\x00\x3f\x00')))
  add('SOS of 5 components', SOI + tables() + sof(16, 16, [(i, 1, 1, 0) for i in range(1, 6)])
      + sos([(i, 0, 0) for i in range(1, 6)]) + zeros(8) + EOI)
  add('three components of one id', baseline(components=[(1, 1, 1, 0)] * 3))
  add('EOI before SOF', SOI + tables() + EOI)
  add('EOI after SOF', SOI + tables() + sof(16, 16, GREY) + EOI)
  add('a second SOI', baseline(extra_header=SOI))
  for m in (0x02, 0xBF, 0xDE, 0xDF, 0xF0, 0xFD):
    add(f'marker {m:02x} in the header', baseline(extra_header=bytes([0xFF, m]) + b'\x00\x02'))
  add('TEM and RST3 in the header', baseline(extra_header=b'\xff\x01\xff\xd3'))
  add('bytes, fill and stuffed zeros in the header',
      baseline(extra_header=b'xyz\xff\xff\xff\x00\xff\x00'))
  add('APP segment longer than the file', baseline(extra_header=b'\xff\xe5\xff\xf0'))
  add('APP0 of 2 bytes', baseline(extra_header=segment(0xE0, b'JF')))
  add('APP14 of length 1', baseline(extra_header=b'\xff\xee\x00\x01'))
  add('COM of length 0', baseline(extra_header=b'\xff\xfe\x00\x00'))
  add('CMYK with an Adobe marker', baseline(components=CMYK, extra_header=segments['APP14']))
  # The progressive DC predictor (jdphuff.c decode_mcu_DC_first).
  add('DC predictor overflow, 2064x2064', dc_overflow(2064, False))
  add('DC differences alternating, 2064x2064', dc_overflow(2064, True))
  add('DC predictor just short of overflow, 2048x2048', dc_overflow(2048, False))
  add('DC predictor with restarts, 2064x2064', dc_overflow(2064, False, interval=4096))
  add('DC differences alternating, after a 5-byte Adobe APP14',
      dc_overflow(2064, True, header=segment(0xEE, b'Adobe')))
  add('DC predictor overflow, after a 5-byte Adobe APP14',
      dc_overflow(2064, False, header=segment(0xEE, b'Adobe')))
  return out
