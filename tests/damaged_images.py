"""A seeded corpus of damaged images of every format and mode TensorFlow decodes, for the
differential tests of the decode check against `tf.io.decode_image`.

Originals are written with Pillow and, where Pillow cannot write a variant (interlaced
PNG, several IDAT chunks, ancillary chunks, top-down BMP), built here byte by byte.
Damage: bit flips, overwritten bytes and spans, truncation, inserted, deleted and
repeated bytes; for PNG also damage inside a chunk with its CRC made right again, so
that libpng's rules past the CRC (header values, zlib data, filter types, chunk order)
are exercised.
"""
from __future__ import annotations

import binascii
import io
import os
import random
import re
import struct
import zlib
from typing import Dict, Iterator, List, Tuple

import numpy as np
from PIL import Image, PngImagePlugin


# A damaged JPEG (10x12, 716 bytes, its EOI cut off) that the earlier check, Pillow
# alone, accepted and TensorFlow refuses; found by the property test.
JPEG_716 = binascii.unhexlify(
    'ffd8ffe000104a46494600010100000100010000ffdb004300080606070605080707070909080a0c140d'
    '0c0b0b0c1912130f141d1a1f1e1d1a1c1c20242e2720222c231c1c2837292c30313434341f27393d3832'
    '3c2e333432ffdb0043010909090c0b0c180d0d1832211c21323232323232323232323232323232323232'
    '3232323232323232323232323232323232323232323232323232323232323232ffc0001108000c000a03'
    '012200021101031101ffc4001f0000010501010101010100000000000000000102030405060708090a0b'
    'ffc400b5100002010303020403050504040000017d010203000411051221314106135161072271143281'
    '91a1082342b1c11552d1f02433627282090a161718191a25262728292a3435363738393a434445464748'
    '494a535455565758595a636465666768696a737475767778797a838485868788898a9293949596979899'
    '9aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5'
    'e6e7e8e9eaf1f2f3f4f5f6f7f8f9faffc4001f0100030101010101010101010000000000000102030405'
    '060708090a0bffc400b51100020102040403040705040400010277000102031104052131061241510761'
    '711322328108144291a1b1c109233352f0156272d10a162434e125f11718191a262728292a3536373839'
    '3a434445464748494a535455565758595a636465666768696a737475767778797a82838485868788898a'
    '92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7'
    'd8d9dae2e3e4e5e6e7e8e9eaf2f3f4f5f6f7f8f9faffda000c03010002110311003f0026b8964b16b5b7'
    '8a756fb3852d2dc2c8a76a9100ac325f68e8718318270030a636b9e5bb249e1825d4e1899dce4f7e7cba'
    '886fbbb6d1753796449af1dd2448db6a008d9181df927209239c631c5665ef88a4d36fee2c2deca0105b'
    '4ad0')


def _picture(mode: str, height: int, width: int, seed: int) -> Image.Image:
  """Smooth gradients with some noise: JPEG has structure to compress, palettes fill.
  The noise comes from `random.random()`, the one stream Python keeps the same across
  versions, so every stack builds the same corpus."""
  rng = random.Random(seed)
  y, x = np.mgrid[0:height, 0:width]
  base = np.stack([(x * 7 + y * 3) % 256, (x * 2 + y * 9) % 256, (x * y) % 256], -1)
  noise = np.array([int(rng.random() * 48) for _ in range(base.size)]).reshape(base.shape)
  rgb = (base + noise).astype(np.uint8)
  if mode == 'I;16':
    return Image.fromarray(rgb[..., 0].astype(np.uint16) * 257)
  return Image.fromarray(rgb).convert(mode)


def _save(im: Image.Image, fmt: str, **kwargs) -> bytes:
  out = io.BytesIO()
  im.save(out, fmt, **kwargs)
  return out.getvalue()


def png_chunk(kind: bytes, body: bytes) -> bytes:
  """A PNG chunk: length, type, data and its CRC."""
  return struct.pack('>I', len(body)) + kind + body + struct.pack(
      '>I', zlib.crc32(kind + body))


_ADAM7 = ((0, 8, 0, 8), (4, 8, 0, 8), (0, 4, 4, 8), (2, 4, 0, 4), (0, 2, 2, 4),
          (1, 2, 0, 2), (0, 1, 1, 2))


def build_png(pixels: np.ndarray, color: int, depth: int = 8, interlaced: bool = False,
              palette: bytes = b'', transparency: bytes = b'', idat_pieces: int = 1,
              extra: Tuple[Tuple[bytes, bytes], ...] = ()) -> bytes:
  """A PNG from pixels (H x W x samples, or H x W), filter type 0 or 1 on alternate
  rows, as libpng reads it; extra (name, body) chunks go before the image data."""
  samples = pixels.reshape(pixels.shape[0], pixels.shape[1], -1)
  height, width = samples.shape[:2]
  passes = _ADAM7 if interlaced else ((0, 1, 0, 1),)
  raw = bytearray()
  for x0, dx, y0, dy in passes:
    sub = samples[y0::dy, x0::dx]
    if not sub.size:
      continue
    for number, row in enumerate(sub):
      if depth == 16:
        line = row.astype('>u2').tobytes()
      elif depth < 8:
        line = np.packbits(np.unpackbits(row.astype(np.uint8).reshape(-1, 1), axis=1)[
            :, 8 - depth:].reshape(-1)).tobytes()
      else:
        line = row.astype(np.uint8).tobytes()
      if number % 2:  # Sub filter
        step = max(1, samples.shape[2] * depth // 8)
        filtered = bytes((line[i] - (line[i - step] if i >= step else 0)) & 0xFF
                         for i in range(len(line)))
        raw += b'\x01' + filtered
      else:
        raw += b'\x00' + line
  packed = zlib.compress(bytes(raw), 9)
  size = -(-len(packed) // idat_pieces)
  out = b'\x89PNG\r\n\x1a\n' + png_chunk(b'IHDR', struct.pack(
      '>IIBBBBB', width, height, depth, color, 0, 0, int(interlaced)))
  for kind, body in extra:
    out += png_chunk(kind, body)
  if palette:
    out += png_chunk(b'PLTE', palette)
  if transparency:
    out += png_chunk(b'tRNS', transparency)
  for i in range(0, len(packed), size):
    out += png_chunk(b'IDAT', packed[i:i + size])
  return out + png_chunk(b'IEND', b'')


def lzw_literals(indices, code_size: int = 3, end: bool = True) -> bytes:
  """GIF image data (code size byte, sub-blocks, terminator) that sends each index as a
  literal after a clear code, so the code width never grows; with `end`, the
  end-of-information code last."""
  clear, eoi, width = 1 << code_size, (1 << code_size) + 1, code_size + 1
  codes = [c for v in indices for c in (clear, v)] + [eoi] * end
  acc = bits = 0
  out = bytearray()
  for code in codes:
    acc |= code << bits
    bits += width
    while bits >= 8:
      out.append(acc & 0xFF)
      acc >>= 8
      bits -= 8
  if bits:
    out.append(acc)
  blocks = b''.join(bytes([len(out[i:i + 255])]) + out[i:i + 255]
                    for i in range(0, len(out), 255))
  return bytes([code_size]) + blocks + b'\0'


def build_gif(frames, width: int, height: int, global_colors: int = 4) -> bytes:
  """A GIF of `frames`: (indices, left, top, width, height, extension bytes, local colour
  count or 0), each image's data sent as literals."""
  bits = global_colors.bit_length() - 1
  out = b'GIF89a' + struct.pack('<HH', width, height)
  if global_colors:
    out += bytes([0x80 | (bits - 1), 0, 0]) + bytes(range(3 * global_colors))
  else:
    out += b'\0\0\0'
  for indices, left, top, w, h, extension, local in frames:
    out += extension + b'\x2c' + struct.pack('<HHHH', left, top, w, h)
    if local:
      out += bytes([0x80 | (local.bit_length() - 2)]) + bytes(3 * local)
    else:
      out += b'\0'
    out += lzw_literals(indices)
  return out + b';'


def _top_down_bmp(data: bytes) -> bytes:
  """A bottom-up 24-bit BMP turned top-down (negative height), as some writers store it."""
  offset, = struct.unpack_from('<i', data, 10)
  width, height = struct.unpack_from('<ii', data, 18)
  row = (3 * width + 3) // 4 * 4
  rows = [data[offset + i * row:offset + (i + 1) * row] for i in range(height)]
  return (data[:22] + struct.pack('<i', -height) + data[26:offset]
          + b''.join(reversed(rows)))


def originals() -> Dict[str, bytes]:
  """Undamaged images, one of each format and mode, named '<format>-<variant>'."""
  o: Dict[str, bytes] = {}
  p = _picture
  o['jpeg-baseline'] = _save(p('RGB', 48, 64, 1), 'JPEG', quality=85)
  o['jpeg-444'] = _save(p('RGB', 33, 47, 2), 'JPEG', quality=95, subsampling=0)
  o['jpeg-progressive'] = _save(p('RGB', 40, 40, 3), 'JPEG', progressive=True)
  o['jpeg-grey'] = _save(p('L', 30, 50, 4), 'JPEG')
  o['jpeg-restart'] = _save(p('RGB', 64, 64, 5), 'JPEG', restart_marker_blocks=3)
  o['jpeg-cmyk'] = _save(p('CMYK', 24, 24, 6), 'JPEG')
  o['jpeg-optimized'] = _save(p('RGB', 50, 30, 7), 'JPEG', optimize=True, quality=60)
  exif = Image.Exif()
  exif[0x0112] = 6
  o['jpeg-exif'] = _save(p('RGB', 20, 28, 8), 'JPEG', exif=exif.tobytes(),
                         comment=b'a comment')
  o['jpeg-tiny'] = _save(p('RGB', 12, 10, 9), 'JPEG')
  o['png-rgb'] = _save(p('RGB', 19, 23, 10), 'PNG')
  o['png-rgba'] = _save(p('RGBA', 16, 20, 11), 'PNG')
  o['png-palette'] = _save(p('P', 18, 14, 12), 'PNG')
  o['png-palette-trns'] = _save(p('P', 14, 18, 13), 'PNG', transparency=0)
  o['png-grey'] = _save(p('L', 20, 24, 14), 'PNG')
  o['png-grey-alpha'] = _save(p('LA', 12, 18, 15), 'PNG')
  o['png-16bit'] = _save(p('I;16', 16, 16, 16), 'PNG')
  o['png-bilevel'] = _save(p('1', 18, 26, 17), 'PNG')
  info = PngImagePlugin.PngInfo()
  info.add_text('Title', 'damaged')
  info.add_text('Comment', 'compressed text ' * 4, zip=True)
  info.add_itxt('Author', 'someone', lang='en', tkey='Autor')
  o['png-text'] = _save(p('RGB', 12, 12, 18), 'PNG', pnginfo=info, dpi=(72, 72))
  rgb = np.asarray(p('RGB', 21, 19, 19))
  o['png-interlaced'] = build_png(rgb, 2, interlaced=True, idat_pieces=3)
  o['png-interlaced-tiny'] = build_png(rgb[:3, :2], 2, interlaced=True)
  o['png-idat-pieces'] = build_png(rgb, 2, idat_pieces=5, extra=(
      (b'gAMA', struct.pack('>I', 45455)), (b'tEXt', b'k\x00v')))
  grey = np.asarray(p('L', 17, 13, 20))
  o['png-grey-trns'] = build_png(grey, 0, transparency=b'\x00\x10')
  o['png-grey-4bit'] = build_png(grey >> 4, 0, depth=4, interlaced=True)
  o['png-rgb16'] = build_png(rgb.astype(np.uint16) * 257, 2, depth=16)
  indices = (grey >> 4).astype(np.uint8)
  o['png-palette-4bit'] = build_png(indices, 3, depth=4, palette=bytes(range(48)),
                                    transparency=b'\x00\x80\xff')
  o['png-rgb-plte'] = build_png(rgb[:8, :8], 2, palette=bytes(range(30)))
  o['gif-one'] = _save(p('P', 16, 20, 21), 'GIF')
  o['gif-interlaced'] = _save(p('P', 24, 18, 22), 'GIF', interlace=True)
  frames = [p('P', 18, 22, 23 + i) for i in range(3)]
  o['gif-frames'] = _save(frames[0], 'GIF', save_all=True, append_images=frames[1:],
                          duration=50, loop=0, comment=b'frames')
  base = p('RGB', 20, 20, 27)
  moved = [base.copy() for _ in range(3)]
  for i, im in enumerate(moved[1:], 1):
    im.paste((255, 0, 0), (4 * i, 3 * i, 4 * i + 6, 3 * i + 5))
  o['gif-offsets'] = _save(moved[0].convert('P'), 'GIF', save_all=True,
                           append_images=[m.convert('P') for m in moved[1:]], optimize=True)
  o['gif-grey'] = _save(p('L', 10, 14, 28), 'GIF')
  o['bmp-24'] = _save(p('RGB', 11, 13, 29), 'BMP')
  o['bmp-32'] = _save(p('RGBA', 9, 7, 30), 'BMP')
  o['bmp-8'] = _save(p('L', 12, 9, 31), 'BMP')
  o['bmp-palette'] = _save(p('P', 6, 10, 32), 'BMP')
  o['bmp-top-down'] = _top_down_bmp(o['bmp-24'])
  return o


# The corpus the tests use: test_decode_check.py proves its decisions TensorFlow's, and
# test_core.py that every stack, TensorFlow or not, decides them alike.
SEED = 20261125
CASES = 2400

_KINDS = ('flip', 'flip', 'byte', 'span', 'truncate', 'insert', 'delete', 'repeat', 'many')


def damage(data: bytes, rng: random.Random, png_fixup: bool = False) -> Tuple[str, bytes]:
  """One kind of damage, drawn from rng; returns (kind, damaged bytes)."""
  d = bytearray(data)
  n = len(d)
  kind = rng.choice(_KINDS)
  if png_fixup:
    return 'in-chunk', _damage_png_chunk(bytes(d), rng)
  if kind == 'flip':
    for _ in range(rng.randint(1, 3)):
      i = rng.randrange(n)
      d[i] ^= 1 << rng.randrange(8)
  elif kind == 'byte':
    d[rng.randrange(n)] = rng.randrange(256)
  elif kind == 'span':
    i, length = rng.randrange(n), rng.randint(2, 24)
    d[i:i + length] = bytes(rng.randrange(256) for _ in range(min(length, n - i)))
  elif kind == 'truncate':
    d = d[:rng.randrange(1, n)]
  elif kind == 'insert':
    i = rng.randrange(n + 1)
    d[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
  elif kind == 'delete':
    i = rng.randrange(n)
    del d[i:i + rng.randint(1, 8)]
  elif kind == 'repeat':
    i = rng.randrange(n)
    d[i:i] = d[i:i + rng.randint(1, 32)]
  else:
    for _ in range(rng.randint(2, 8)):
      d[rng.randrange(len(d))] = rng.randrange(256)
  return kind, bytes(d)


def png_chunks(data: bytes) -> List[Tuple[bytes, bytes]]:
  """A PNG's whole chunks after its signature, as (type, data)."""
  chunks, at = [], 8
  while at + 8 <= len(data):
    length, kind = struct.unpack_from('>I4s', data, at)
    chunks.append((kind, data[at + 8:at + 8 + length]))
    at += 12 + length
  return chunks


def _damage_png_chunk(data: bytes, rng: random.Random) -> bytes:
  """Changes bytes inside one chunk (its data, or its length and type) and writes the
  chunk's CRC anew, or swaps two chunks, or drops one."""
  chunks = [png_chunk(kind, body) for kind, body in png_chunks(data)]
  pick = rng.randrange(len(chunks))
  action = rng.choice(('body', 'body', 'body', 'swap', 'drop', 'duplicate'))
  if action == 'swap' and len(chunks) > 1:
    other = rng.randrange(len(chunks))
    chunks[pick], chunks[other] = chunks[other], chunks[pick]
  elif action == 'drop':
    del chunks[pick]
  elif action == 'duplicate':
    chunks.insert(pick, chunks[pick])
  else:
    chunk = bytearray(chunks[pick])
    kind, body = bytes(chunk[4:8]), chunk[8:-4]
    if body:
      for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(body))
        body[i] = rng.randrange(256) if rng.random() < 0.5 else body[i] ^ (1 << rng.randrange(8))
    elif rng.random() < 0.5:
      body = bytearray(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    chunks[pick] = png_chunk(kind, bytes(body))
  return data[:8] + b''.join(chunks)


def corpus(seed: int, count: int) -> Iterator[Tuple[str, str, bytes]]:
  """`count` damaged images, drawn from `seed`: (original's name, damage, bytes)."""
  rng = random.Random(seed)
  images = originals()
  names = sorted(images)
  for k in range(count):
    name = names[k % len(names)]
    fixup = name.startswith('png') and rng.random() < 0.4
    kind, data = damage(images[name], rng, png_fixup=fixup)
    yield name, kind, data


# -- A corpus of damaged JPEGs of every kind, for the differential test of the JPEG rule
# (images/formats/jpeg_walk.py): libjpeg's outcome depends on the markers, segment
# headers and scan geometry, so besides the damage above it is damaged where those are.

ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'assets', 'jpeg')
_TOKEN = re.compile(rb'\xff[\xff]*[^\x00\xff]')
_MARKERS = bytes([0x01, 0x02, 0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC9, 0xCA, 0xCC, 0xD0, 0xD1,
                  0xD3, 0xD7, 0xD8, 0xD9, 0xDA, 0xDB, 0xDC, 0xDD, 0xDE, 0xE0, 0xE1, 0xEE,
                  0xF0, 0xFE])


def jpeg_originals() -> Dict[str, bytes]:
  """Healthy JPEGs: Pillow's kinds (originals()) and more of them, and the files of
  tests/assets/jpeg (cjpeg and jpegtran: arithmetic coding, restart intervals, scan
  scripts, sampling factors; libjpeg-turbo's own test images)."""
  o = {k: v for k, v in originals().items() if k.startswith('jpeg')}
  p = _picture
  o['jpeg-progressive-restart'] = _save(p('RGB', 37, 29, 40), 'JPEG', progressive=True,
                                        restart_marker_blocks=1)
  o['jpeg-restart-rows'] = _save(p('RGB', 41, 53, 41), 'JPEG', restart_marker_rows=1)
  o['jpeg-grey-progressive'] = _save(p('L', 23, 35, 42), 'JPEG', progressive=True)
  o['jpeg-1x1'] = _save(p('RGB', 1, 1, 43), 'JPEG')
  o['jpeg-422'] = _save(p('RGB', 19, 31, 44), 'JPEG', subsampling=1)
  for name in sorted(os.listdir(ASSETS)):
    if name.endswith('.jpg') and name != 'testorig12.jpg':
      with open(os.path.join(ASSETS, name), 'rb') as f:
        o['jpeg-asset-' + name[:-4]] = f.read()
  return o


def damage_jpeg_structure(data: bytes, rng: random.Random) -> Tuple[str, bytes]:
  """Damage where libjpeg's decision is made: a segment dropped, repeated or cut, a
  marker code changed or inserted, a segment length changed, restart markers swapped."""
  tokens = [m.span() for m in _TOKEN.finditer(data, 2)]
  if not tokens:
    return damage(data, rng)
  start, end = rng.choice(tokens)
  kind = rng.choice(('drop', 'repeat', 'cut', 'marker', 'insert', 'length', 'swap'))
  d = bytearray(data)
  if kind in ('drop', 'repeat'):
    later = [s for s, _ in tokens if s > start]
    stop = later[0] if later else len(d)
    piece = d[start:stop]
    d[start:stop] = piece * 2 if kind == 'repeat' else b''
  elif kind == 'cut':
    d = d[:min(len(d), end + rng.randint(-2, 6))]
  elif kind == 'marker':
    d[end - 1] = rng.choice(_MARKERS) if rng.random() < 0.8 else rng.randrange(1, 255)
  elif kind == 'insert':
    at = rng.choice((start, end, rng.randrange(len(d))))
    marker = bytes([0xFF, rng.choice(_MARKERS)])
    d[at:at] = marker + (struct.pack('>H', rng.randint(0, 40)) if rng.random() < 0.5 else b'')
  elif kind == 'length' and end + 2 <= len(d):
    d[end + rng.randrange(2)] = rng.randrange(256)
  else:
    rsts = [s for s, e in tokens if 0xD0 <= data[e - 1] <= 0xD7]
    if len(rsts) >= 2:
      a, b = rng.sample(rsts, 2)
      d[a + 1], d[b + 1] = d[b + 1], d[a + 1]
    else:
      d[end - 1] ^= 1 << rng.randrange(8)
  return 'structure-' + kind, bytes(d)


def jpeg_corpus(seed: int, count: int) -> Iterator[Tuple[str, str, bytes]]:
  """`count` damaged JPEGs drawn from `seed`: (original's name, damage, bytes); one in
  two damaged where the markers are, one in ten twice."""
  rng = random.Random(seed)
  images = jpeg_originals()
  names = sorted(images)
  for k in range(count):
    name = names[k % len(names)]
    data = images[name]
    for _ in range(1 + (rng.random() < 0.1)):
      if rng.random() < 0.5:
        kind, data = damage_jpeg_structure(data, rng)
      else:
        kind, data = damage(data, rng)
      if len(data) < 3:
        data = images[name][:3]
    yield name, kind, data
