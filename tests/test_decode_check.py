"""The decode check decides as TensorFlow does: `probe_image(data, decode=True)` accepts
exactly the bytes `tf.io.decode_image` decodes, with the height, width and channels it
decodes them to. Differential tests against TensorFlow itself: a seeded corpus of
damaged images of every format and mode (tests/damaged_images.py), and one case for each
rule of TensorFlow's decoders the check follows (images/formats/)."""
import collections
import json
import os
import pathlib
import struct
import zlib

import numpy as np
import pytest
import tensorflow as tf
from PIL import ImageFile

import damaged_images
import jpeg_craft
from damaged_images import JPEG_716, build_gif, build_png, originals, png_chunk, png_chunks
from tfrecorder_component.errors import RowError
from tfrecorder_component.images.probe import probe_image

# DECODE_CHECK_CASES and DECODE_CHECK_SEED draw other corpora, for a longer run;
# DECODE_CHECK_JPEG_CASES sizes the corpus of damaged JPEGs of every kind.
CASES = int(os.environ.get('DECODE_CHECK_CASES', damaged_images.CASES))
SEED = int(os.environ.get('DECODE_CHECK_SEED', damaged_images.SEED))
JPEG_CASES = int(os.environ.get('DECODE_CHECK_JPEG_CASES', 4000))
ASSETS = pathlib.Path(damaged_images.ASSETS)
REASONS = {'empty', 'not_an_image', 'unsupported_format', 'too_large', 'truncated', 'corrupt'}

def tensorflow_decodes(data: bytes):
  """(height, width, channels) if `tf.io.decode_image` decodes the bytes both with and
  without `expand_animations`, else None."""
  try:
    tf.io.decode_image(data)
    return tuple(tf.io.decode_image(data, expand_animations=False).shape)
  except (tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError):
    return None


def check_decides(data: bytes):
  """(height, width, channels), or the RowError's reason."""
  try:
    info = probe_image(data, max_pixels=10**9, decode=True)
  except RowError as e:
    assert e.reason in REASONS, e
    if 'palette is not grey' in e.message:
      return PALETTE
    return e.reason
  return info.height, info.width, info.channels


# The one refusal of bytes TensorFlow decodes, on purpose: an 8-bit BMP of a colour
# palette, which TensorFlow's decoder reads as grey indices (images/formats/bmp.py).
PALETTE = 'palette'


def _verdicts(cases, group=lambda name: None):
  """(verdict counts, disagreements) of the check against TensorFlow on (name, bytes)
  cases; counts by (group(name), verdict)."""
  counts, disagree = collections.Counter(), []
  for name, data in cases:
    expected, got = tensorflow_decodes(data), check_decides(data)
    if expected is None:
      verdict = 'both refuse' if isinstance(got, str) else 'ACCEPTED, TensorFlow refuses'
    elif got == PALETTE:
      assert expected[-1] == 1, (name, expected)  # decoded to indices, one channel
      verdict = 'refused: a colour palette decoded as grey indices'
    elif isinstance(got, str):
      verdict = 'refused, TensorFlow decodes'
    else:
      verdict = 'both decode' if got == expected else 'ANOTHER SIZE'
    counts[group(name), verdict] += 1
    if verdict not in ('both refuse', 'both decode',
                       'refused: a colour palette decoded as grey indices'):
      disagree.append((verdict, name, len(data), expected, got))
  return counts, disagree


def test_decode_check_agrees_with_tensorflow_on_a_damaged_corpus():
  """No damaged image accepted that TensorFlow refuses, none at another size, and at
  most 1% refused that TensorFlow decodes (none of 70,000 from other seeds, on
  TensorFlow 2.16 and 2.21)."""
  counts, disagree = _verdicts(
      ((f'{name} {kind}', data) for name, kind, data in damaged_images.corpus(SEED, CASES)),
      group=lambda name: name.split('-')[0])
  assert sum(counts.values()) == CASES
  wrong = [d for d in disagree if d[0] in ('ACCEPTED, TensorFlow refuses', 'ANOTHER SIZE')]
  assert not wrong, wrong
  assert len(disagree) <= CASES // 100, disagree
  for fmt in ('jpeg', 'png', 'gif', 'bmp'):  # the corpus reaches both outcomes everywhere
    assert counts[fmt, 'both decode'] > CASES // 40 and counts[fmt, 'both refuse'] > CASES // 40


def test_jpeg_rule_agrees_with_tensorflow_on_every_crafted_case():
  """One case a rule (tests/jpeg_craft.py): every coding process, precision and
  component count, sampling factors, restart markers in and out of order, progressive
  scripts good and bad, non-interleaved scans, each segment kind cut after the data
  (accepted after a single scan, refused after progressive scans), data that ends
  without a marker, Huffman, quantization and arithmetic tables, frame and scan
  headers, a progressive DC predictor that overflows."""
  counts, disagree = _verdicts(jpeg_craft.cases())
  assert not disagree, disagree
  # The cases as TensorFlow 2.16 and 2.21 decide them: a change in either is a change
  # in the decoder the rules follow.
  assert counts == {(None, 'both decode'): 135, (None, 'both refuse'): 242}, counts


def test_jpeg_rule_decodes_healthy_files_of_every_kind():
  """cjpeg's and jpegtran's files (arithmetic coding, restart intervals, scan scripts,
  sampling factors) and libjpeg-turbo's own test images (tests/assets/jpeg), decoded to
  the sizes TensorFlow gives them (expected.json, made by TensorFlow 2.16 and 2.21)."""
  expected = json.loads((ASSETS / 'expected.json').read_text())
  assert len(expected) == len(list(ASSETS.glob('*.jpg'))) >= 40
  for name, shape in expected.items():
    data = (ASSETS / name).read_bytes()
    assert tensorflow_decodes(data) == (tuple(shape) if shape else None), name
    got = check_decides(data)
    assert got == tuple(shape) if shape else got == 'unsupported_format', (name, got)


def test_jpeg_rule_agrees_with_tensorflow_on_damaged_jpegs_of_every_kind():
  """Damaged JPEGs of every kind (damaged_images.jpeg_corpus): half damaged where the
  markers and segment headers are. None decided otherwise than TensorFlow decides
  (nor of 300,000 from other seeds, on TensorFlow 2.16 and 2.21)."""
  cases = [(f'{name} {kind}', data) for name, kind, data
           in damaged_images.jpeg_corpus(SEED, JPEG_CASES)]
  counts, disagree = _verdicts(cases)
  assert not disagree, disagree
  assert (counts[None, 'both decode'] > JPEG_CASES // 4
          and counts[None, 'both refuse'] > JPEG_CASES // 4), counts


def _png(chunks, bad_crc=()) -> bytes:
  """A PNG of (type, data) chunks; those of the types in `bad_crc` with a wrong CRC."""
  out = b'\x89PNG\r\n\x1a\n'
  for kind, body in chunks:
    chunk = png_chunk(kind, body)
    out += chunk[:-4] + bytes(b ^ 0xFF for b in chunk[-4:]) if kind in bad_crc else chunk
  return out


GREY = np.arange(48, dtype=np.uint8).reshape(6, 8) * 5
RGB = np.stack([GREY, GREY[::-1], GREY.T.reshape(6, 8)], -1)
PALETTE = build_png(GREY >> 4, 3, depth=4, palette=bytes(range(48)))
PALETTE_CHUNKS = png_chunks(PALETTE)
IHDR, PLTE, IDAT, IEND = (PALETTE_CHUNKS[0], PALETTE_CHUNKS[1], PALETTE_CHUNKS[2],
                          PALETTE_CHUNKS[-1])
TEXT = (b'tEXt', b'key\x00value')
TRNS = (b'tRNS', b'\x00\x80')
RAW_GREY = b''.join(b'\x00' + bytes(row) for row in GREY)


def _grey_png(compressed: bytes) -> bytes:
  ihdr = (b'IHDR', struct.pack('>IIBBBBB', 8, 6, 8, 0, 0, 0, 0))
  return _png([ihdr, (b'IDAT', compressed), (b'IEND', b'')])


JPEG = originals()['jpeg-baseline']
GIF_OK = ([0, 1, 2, 3] * 2, 0, 0, 4, 2, b'', 0)
GCE_TRANSPARENT_7 = b'\x21\xf9\x04\x01\x00\x00\x07\x00'

# (case, bytes, what TensorFlow 2.16 and 2.21 decode them to, or None)
RULES = [
    # JPEG: TensorFlow's memory source fails wherever libjpeg reads past the end.
    ('jpeg whole', JPEG, (48, 64, 3)),
    ('jpeg 716 bytes, no EOI', JPEG_716, None),
    ('jpeg without its EOI', JPEG[:-2], None),
    ('jpeg with bytes after its EOI', JPEG + b'trailing bytes', (48, 64, 3)),
    ('jpeg cut in its scan', JPEG[:len(JPEG) * 2 // 3], None),
    ('jpeg progressive cut', originals()['jpeg-progressive'][:-40], None),
    ('jpeg APP segment longer than the file',
     JPEG[:2] + b'\xff\xe5\xff\xf0' + JPEG[2:], None),
    ('jpeg cmyk', originals()['jpeg-cmyk'], (24, 24, 3)),
    ('jpeg with a TEM marker in its header', JPEG[:2] + b'\xff\x01' + JPEG[2:], (48, 64, 3)),
    # PNG: libpng's rules.
    ('png palette', PALETTE, (6, 8, 3)),
    ('png ancillary chunk with a wrong CRC', _png(
        [IHDR, TEXT, PLTE, IDAT, IEND], bad_crc=(b'tEXt',)), (6, 8, 3)),
    ('png critical chunk with a wrong CRC', _png(
        [IHDR, PLTE, IDAT, IEND], bad_crc=(b'PLTE',)), None),
    ('png IEND with a wrong CRC', _png([IHDR, PLTE, IDAT, IEND], bad_crc=(b'IEND',)), None),
    ('png tRNS kept', _png([IHDR, PLTE, TRNS, IDAT, IEND]), (6, 8, 4)),
    ('png tRNS with a wrong CRC is dropped', _png(
        [IHDR, PLTE, TRNS, IDAT, IEND], bad_crc=(b'tRNS',)), (6, 8, 3)),
    ('png tRNS before PLTE is dropped', _png([IHDR, TRNS, PLTE, IDAT, IEND]), (6, 8, 3)),
    ('png tRNS after the image data is dropped', _png([IHDR, PLTE, IDAT, TRNS, IEND]),
     (6, 8, 3)),
    ('png tRNS longer than the palette is dropped', _png(
        [IHDR, (b'PLTE', bytes(6)), (b'tRNS', b'\0\0\0'), IDAT, IEND]), (6, 8, 3)),
    ('png unknown critical chunk', _png([IHDR, (b'CRIT', b'x'), PLTE, IDAT, IEND]), None),
    ('png unknown ancillary chunk before IHDR', _png(
        [(b'abCd', b'x'), IHDR, PLTE, IDAT, IEND]), (6, 8, 3)),
    ('png tEXt before IHDR', _png([TEXT, IHDR, PLTE, IDAT, IEND]), None),
    ('png second PLTE', _png([IHDR, PLTE, PLTE, IDAT, IEND]), None),
    ('png PLTE of no entries', _png([IHDR, (b'PLTE', b''), IDAT, IEND]), None),
    ('png palette image without PLTE', _png([IHDR, IDAT, IEND]), None),
    ('png without IEND', _png([IHDR, PLTE, IDAT]), None),
    ('png IEND with data', _png([IHDR, PLTE, IDAT, (b'IEND', b'x')]), (6, 8, 3)),
    ('png chunk after IEND ignored', PALETTE + b'garbage', (6, 8, 3)),
    ('png filter type 5', _grey_png(zlib.compress(b'\x05' + RAW_GREY[1:])), None),
    ('png zlib stream cut after the pixels', _grey_png(zlib.compress(RAW_GREY)[:-4]), None),
    ('png zlib stream with a wrong Adler-32',  # met while reading the last row
     _grey_png(zlib.compress(RAW_GREY)[:-1] + b'\0'), None),
    ('png wrong Adler-32 in an IDAT of its own',  # met after it: benign
     _png([(b'IHDR', struct.pack('>IIBBBBB', 8, 6, 8, 0, 0, 0, 0)),
           (b'IDAT', zlib.compress(RAW_GREY)[:-4]), (b'IDAT', b'\0\0\0\0'),
           (b'IEND', b'')]), (6, 8, 1)),
    ('png stream end in an IDAT of its own, cut',
     _png([(b'IHDR', struct.pack('>IIBBBBB', 8, 6, 8, 0, 0, 0, 0)),
           (b'IDAT', zlib.compress(RAW_GREY)[:-4]), (b'IEND', b'')]), None),
    ('png zlib stream with extra data', _grey_png(zlib.compress(RAW_GREY + b'\0' * 9)),
     (6, 8, 1)),
    ('png zlib stream short of the last row', _grey_png(zlib.compress(RAW_GREY[:-3])), None),
    ('png width over 1,000,000', build_png(np.zeros((1, 1_000_001), np.uint8), 0, depth=1),
     None),
    ('png interlaced, 4-bit grey', originals()['png-grey-4bit'], (17, 13, 1)),
    ('png 16-bit RGB', originals()['png-rgb16'], (21, 19, 3)),
    # GIF: giflib with TensorFlow's patch, then TensorFlow's colour checks.
    ('gif whole', build_gif([GIF_OK], 4, 2), (2, 4, 3)),
    ('gif without its trailer', build_gif([GIF_OK], 4, 2)[:-1], (2, 4, 3)),
    ('gif with a garbled trailer', build_gif([GIF_OK], 4, 2)[:-1] + b'\x99', (2, 4, 3)),
    ('gif cut in its second image', build_gif([GIF_OK, GIF_OK], 4, 2)[:-8], (2, 4, 3)),
    ('gif cut in its only image', build_gif([GIF_OK], 4, 2)[:-8], None),
    ('gif index beyond its colour table', build_gif(
        [([0, 7, 1, 2], 0, 0, 4, 1, b'', 0)], 4, 1), None),
    ('gif transparent index beyond its colour table', build_gif(
        [([0, 7, 1, 2], 0, 0, 4, 1, GCE_TRANSPARENT_7, 0)], 4, 1), (1, 4, 3)),
    ('gif without a colour table', build_gif([GIF_OK], 4, 2, global_colors=0), None),
    ('gif with a local colour table', build_gif(
        [([0, 7, 1, 2], 0, 0, 4, 1, b'', 8)], 4, 1, global_colors=0), (1, 4, 3)),
    ('gif with an empty extension', build_gif([([0, 1], 0, 0, 2, 1, b'\x21\xfe\x00', 0)],
                                              2, 1), None),
    ('gif later image larger than its data can fill', build_gif(
        [GIF_OK, ([0, 1, 2], 0, 0, 5000, 5000, b'', 0)], 4, 2), (2, 4, 3)),
    ('gif image larger than its screen', build_gif(
        [([1] * 12, 0, 0, 6, 2, b'', 0)], 2, 1), (2, 6, 3)),
    ('gif image placed beyond the largest image', build_gif(
        [(list(range(4)) * 2, 0, 0, 4, 2, b'', 0), ([0, 7], 3, 1, 2, 1, b'', 0)], 4, 2),
     (2, 4, 3)),
    # BMP: TensorFlow's own reader, header fields and length only.
    ('bmp 24-bit', originals()['bmp-24'], (11, 13, 3)),
    ('bmp top-down', originals()['bmp-top-down'], (11, 13, 3)),
    ('bmp with a byte after its pixels', originals()['bmp-24'] + b'\0', None),
    ('bmp of 16 bits a pixel', originals()['bmp-24'][:28] + b'\x10\x00'
     + originals()['bmp-24'][30:], None),
]


@pytest.mark.parametrize('data,expected', [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_each_rule_of_tensorflows_decoders(data, expected):
  assert tensorflow_decodes(data) == expected
  got = check_decides(data)
  assert got == expected if expected else isinstance(got, str), got


def test_pillows_load_truncated_images_setting_changes_nothing(monkeypatch):
  """Scripts often set Pillow's process-wide LOAD_TRUNCATED_IMAGES; the decode check still
  refuses what TensorFlow refuses, and leaves the setting as it found it."""
  monkeypatch.setattr(ImageFile, 'LOAD_TRUNCATED_IMAGES', True)
  for data in (JPEG[:-2], JPEG_716, JPEG[:len(JPEG) * 2 // 3]):
    assert tensorflow_decodes(data) is None
    assert check_decides(data) == 'truncated'
  assert ImageFile.LOAD_TRUNCATED_IMAGES is True
  assert check_decides(JPEG) == (48, 64, 3)
