"""The JPEG walk's straight path (`jpeg_walk._straight_walk`, the fast way for JPEGs with
nothing out of the ordinary) returns a Header only where the step-by-step walk
(`jpeg_walk._full_walk`, which tests/test_decode_check.py holds against TensorFlow)
returns that Header, and gives up (None) everywhere else: on every crafted and damaged
JPEG of the tests, and on JPEGs of random frames, tables, restart intervals and scan
scripts, good and bad. No TensorFlow is needed: the two walks are compared."""
import collections
import random

import pytest

import damaged_images
import jpeg_craft
from jpeg_craft import EOI, ONE_CODE, SOI, dht, dqt, dri, segment, sof, sos
from tfrecorder_component.errors import RowError
from tfrecorder_component.images.formats import check_pixels, jpeg_walk

SMALL = 1000  # a max_pixels that most images pass over: check_pixels raises


def _full(data: bytes, max_pixels: int):
  """The full walk's outcome: ('header', Header), or what it raised."""
  try:
    return 'header', jpeg_walk._full_walk(data, max_pixels, check_pixels)
  except jpeg_walk.Refused as e:
    return 'refused', e.reason, e.message
  except jpeg_walk.Undecided as e:
    return 'undecided', e.kind, e.header, e.stream
  except RowError as e:
    return 'row error', e.reason, e.message


def _straight(data: bytes, max_pixels: int):
  """The straight walk's outcome: None (it gives up), ('header', Header), or the
  RowError check_pixels raised."""
  try:
    header = jpeg_walk._straight_walk(data, max_pixels, check_pixels)
  except RowError as e:
    return 'row error', e.reason, e.message
  return None if header is None else ('header', header)


def _compare(cases):
  """Counts of (straight walk decided?, full walk's outcome) over (name, bytes) cases,
  each at two max_pixels; fails on any case the two decide otherwise."""
  counts, wrong = collections.Counter(), []
  for name, data in cases:
    if not data.startswith(b'\xff\xd8\xff'):  # not taken for JPEG by TensorFlow
      continue
    for max_pixels in (10**9, SMALL):
      straight, full = _straight(data, max_pixels), _full(data, max_pixels)
      counts[straight is not None, full[0]] += 1
      if straight is not None and straight != full:
        wrong.append((name, max_pixels, straight, full[:3]))
  assert not wrong, wrong[:10]
  return counts


def test_straight_walk_decides_as_the_full_walk_on_crafted_and_damaged_jpegs():
  """jpeg_craft's case of each rule, the damaged JPEGs of test_decode_check (and as
  many again from another seed), the healthy ones they are made from."""
  cases = list(jpeg_craft.cases())
  cases += [(f'{n} {k}', d) for n, k, d in damaged_images.jpeg_corpus(damaged_images.SEED, 4000)]
  cases += [(f'{n} {k}', d) for n, k, d in damaged_images.jpeg_corpus(1, 4000)]
  cases += list(damaged_images.jpeg_originals().items())
  counts = _compare(cases)
  # It decides most healthy Huffman JPEGs and what it takes to be one.
  assert counts[True, 'header'] > 3000 and counts[True, 'row error'] > 3000, counts


def test_every_healthy_huffman_jpeg_of_the_tests_takes_the_straight_path():
  """Pillow's baseline, progressive, optimized, restart, grey, CMYK and subsampled files
  and cjpeg's Huffman ones: the straight walk decides each (arithmetic coding and
  restart intervals of one block in progressive scans are the full walk's)."""
  originals = damaged_images.jpeg_originals()
  straight = {name for name, data in originals.items()
              if _straight(data, 10**9) is not None}
  for name in ('jpeg-baseline', 'jpeg-progressive', 'jpeg-optimized', 'jpeg-restart',
               'jpeg-restart-rows', 'jpeg-grey', 'jpeg-cmyk', 'jpeg-422', 'jpeg-1x1',
               'jpeg-asset-baseline-420', 'jpeg-asset-huffman-restart-1row',
               'jpeg-asset-sampling-mixed', 'jpeg-asset-sequential-noninterleaved'):
    assert name in straight, name


def _random_jpeg(rng: random.Random) -> bytes:
  """A JPEG of random frame, tables, restart interval and scans, mostly well formed:
  the values each check of the walk tests drawn on both sides of it."""
  pick = lambda *weighted: rng.choices(weighted[::2], weighted[1::2])[0]  # noqa: E731
  count = pick(1, 4, 3, 5, 4, 1, 2, 0.3, 5, 0.2)
  ids = list(range(1, count + 1)) if rng.random() < 0.9 else [rng.randrange(4) for _ in range(count)]
  factors = lambda: pick(1, 6, 2, 3, 3, 0.5, 4, 0.5, 0, 0.1, 5, 0.1)  # noqa: E731
  components = [(i, factors(), factors(), pick(0, 5, 1, 3, 4, 0.1)) for i in ids]
  large = rng.random() < 0.15
  width = rng.randint(1000, 3000) if large else rng.randint(1, 80)
  height = rng.randint(1000, 3000) if large else rng.randint(1, 80)
  process = pick(0xC0, 4, 0xC1, 1, 0xC2, 4, 0xC9, 0.2, 0xC3, 0.1)
  progressive = process in (0xC2, 0xCA)
  interval = 0 if large or rng.random() < 0.5 else pick(1, 3, 2, 2, 3, 1, 7, 1, 100, 0.5, 0, 0.3)

  def table(dc: bool) -> bytes:
    kind = pick('one', 6, 'largest 15', 2 if dc else 0, 'over 15', 0.5, 'bad code', 0.5)
    bits, values = ONE_CODE, b'\x00'
    if kind == 'largest 15':
      values = b'\x0f'
    elif kind == 'over 15':
      values = b'\x10'
    elif kind == 'bad code':
      bits, values = bytes([3] + [0] * 15), b'\x00\x01\x02'
    return bits, values

  header = b''
  if rng.random() < 0.3:
    header += segment(0xE0, b'JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00')
  if rng.random() < 0.2:
    header += segment(rng.choice((0xE1, 0xEE, 0xFE)), bytes(rng.randrange(20)))
  for index in (0, 1):
    if rng.random() < 0.9:
      header += dqt(index, sixteen_bit=rng.random() < 0.1)
  for index in (0, 1):
    for table_class in (0, 1):
      if rng.random() < 0.85:
        header += dht(table_class, index, *table(table_class == 0))
  if rng.random() < 0.05:  # tables of every slot in one segment, or a bad index
    header += segment(0xC4, b''.join(bytes([c << 4 | i]) + ONE_CODE + b'\x00'
                                     for c in (0, 1) for i in range(rng.choice((4, 5)))))
  frame = sof(width, height, components, process,
              precision=8 if rng.random() < 0.95 else 12)
  if interval and rng.random() < 0.5:
    header += dri(interval)
  else:
    frame += dri(interval) if interval else b''
  out = SOI + header + frame

  if progressive:
    scans = [([c[0] for c in components], 0, 0, 0, pick(0, 3, 1, 1))]
    if rng.random() < 0.3:
      scans = [([c[0]], 0, 0, 0, 0) for c in components]
    for c in components:
      for _ in range(rng.randrange(3)):
        ss = rng.randint(1, 63)
        scans.append(([c[0]], ss, rng.choice((ss, 63, rng.randint(0, 64))),
                      pick(0, 3, 1, 1), pick(0, 3, 1, 1, 14, 0.1)))
    if rng.random() < 0.1:
      scans.append(([c[0] for c in components[:2]], 1, 63, 0, 0))  # an AC scan of two
  else:
    scans = [([c[0] for c in components], 0, 63, 0, 0)]
    if rng.random() < 0.25:
      scans = [([c[0]], 0, 63, 0, 0) for c in components]
  if rng.random() < 0.05:
    rng.shuffle(scans)
  max_h = max([c[1] for c in components] + [1])
  max_v = max([c[2] for c in components] + [1])
  for number, (scan_ids, ss, se, ah, al) in enumerate(scans):
    if number and rng.random() < 0.2:
      out += dht(rng.randrange(2), rng.randrange(2), *table(True))
    usual = lambda i: 0 if i == scan_ids[0] else 1  # noqa: E731
    selectors = [(i, rng.choice((0, 1, 4)) if rng.random() < 0.1 else usual(i),
                  rng.choice((0, 1, 4)) if rng.random() < 0.1 else usual(i))
                 for i in scan_ids]
    out += sos(selectors, ss, se, ah, al)
    chosen = [c for c in components if c[0] in scan_ids]
    if chosen and all(c[1] and c[2] for c in chosen) and max_h and max_v:
      if len(chosen) == 1:
        _, h, v, _ = chosen[0]
        mcus = -(-width * h // (max_h * 8)) * -(-height * v // (max_v * 8))
      else:
        mcus = -(-width // (max_h * 8)) * -(-height // (max_v * 8))
    else:
      mcus = 1
    data = [bytes(rng.randrange(1, 6)) + (b'\xff\x00' if rng.random() < 0.3 else b'')]
    restarts = (mcus - 1) // interval if interval and mcus > interval else 0
    markers = [0xD0 + (i & 7) for i in range(min(restarts, 2000))]
    if markers and rng.random() < 0.2:  # one missing, extra, out of order or filled
      i = rng.randrange(len(markers))
      how = rng.randrange(4)
      if how == 0:
        del markers[i]
      elif how == 1:
        markers.insert(i, markers[i])
      elif how == 2:
        markers[i] = 0xD0 + rng.randrange(8)
      else:
        markers[i] = -markers[i]  # with FF fill
    for marker in markers:
      data.append(b'\xff\xff' + bytes([-marker]) if marker < 0 else bytes([0xFF, marker]))
      data.append(bytes(rng.randrange(1, 3)))
    out += b''.join(data)
  tail = pick(EOI, 10, EOI + b'more', 1, b'', 1, b'\xff', 0.5, segment(0xFE, b'x') + EOI, 1,
              b'\xff\xd0' + EOI, 0.5)
  out += tail
  if rng.random() < 0.05:
    out = out[:rng.randrange(3, len(out))]
  return out


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_straight_walk_decides_as_the_full_walk_on_random_frames_and_scans(seed):
  """JPEGs of random components, sampling factors, sizes (some large enough for a
  progressive DC predictor to overflow), tables, restart intervals (restart markers in
  order, missing, extra, out of order, filled), scan scripts and ends."""
  rng = random.Random(seed)
  counts = _compare((f'random {seed} {k}', _random_jpeg(rng)) for k in range(3000))
  # Both ways are taken, and every outcome is reached.
  assert counts[True, 'header'] > 500 and counts[False, 'header'] > 100, counts
  for outcome in ('refused', 'undecided', 'row error'):
    assert counts[False, outcome] > 20, counts


def _made_tables_verdict(dc: bool, bits: bytes, values: bytes) -> int:
  """jdhuff.c jpeg_make_d_derived_tbl as it is written: each length's codes in turn,
  refused where they do not fit that many bits; DC symbols 0-15."""
  code = 0
  for length, count in enumerate(bits, 1):
    code += count
    if count and code >= 1 << length:
      return -1
    code <<= 1
  if dc and any(v > 15 for v in values):
    return -1
  return max(values, default=0) if dc else 0  # an AC table's symbols: read by no rule


def test_table_verdict_is_jpeg_make_d_derived_tbls():
  """`_table_verdict` sums the code lengths (Kraft's inequality) where libjpeg gives the
  codes length by length: the same verdict on every table, at the edge and past it."""
  rng = random.Random(0)
  tables = [bytes(16), bytes([2] + [0] * 15), bytes([1, 2] + [0] * 14), bytes([0] * 15 + [255]),
            bytes([1] * 16), bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255])]
  for _ in range(20000):
    bits = [0] * 16
    for _ in range(rng.randrange(1, 30)):  # codes drawn up to and past a full tree
      bits[rng.randrange(16)] += 1
    tables.append(bytes(min(b, 255) for b in bits))
  for bits in tables:
    values = bytes(rng.randrange(0, 20) for _ in range(rng.randrange(0, 5)))
    for dc in (True, False):
      assert jpeg_walk._table_verdict(dc, bits, values) == _made_tables_verdict(dc, bits, values), (bits, values)
  assert sum(jpeg_walk._table_verdict(False, b, b'') < 0 for b in tables) > 2000
  assert sum(jpeg_walk._table_verdict(False, b, b'') >= 0 for b in tables) > 2000
