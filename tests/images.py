"""Writes real image files of every format and colour mode the tests need."""
from __future__ import annotations

import io
import os
from typing import Optional

import numpy as np
from PIL import Image


def pixels(height: int, width: int, channels: int = 3, seed: int = 0) -> np.ndarray:
  rng = np.random.default_rng(seed)
  shape = (height, width) if channels == 1 else (height, width, channels)
  return rng.integers(0, 256, size=shape, dtype=np.uint8)


def make_image(mode: str = 'RGB', height: int = 12, width: int = 16, seed: int = 0) -> Image.Image:
  """An image of `mode` ('RGB', 'L', 'RGBA', 'LA', 'P', '1', 'CMYK', 'I;16')."""
  if mode == 'I;16':
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 65535, size=(height, width), dtype=np.uint16))
  return Image.fromarray(pixels(height, width, 3, seed)).convert(mode)


def encode(im: Image.Image, fmt: str, **kwargs) -> bytes:
  out = io.BytesIO()
  im.save(out, fmt, **kwargs)
  return out.getvalue()


def write_image(path: str, fmt: str = 'JPEG', mode: str = 'RGB', height: int = 12,
                width: int = 16, seed: int = 0, **kwargs) -> bytes:
  """Writes an image file and returns its bytes."""
  data = encode(make_image(mode, height, width, seed), fmt, **kwargs)
  os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
  with open(path, 'wb') as f:
    f.write(data)
  return data


def write_text(path: str, text: str, encoding: Optional[str] = 'utf-8') -> str:
  os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
  with open(path, 'w', encoding=encoding, newline='') as f:
    f.write(text)
  return path


def lossless_jpeg(width: int = 64, height: int = 48, predictor: int = 1) -> bytes:
  """An 8-bit greyscale lossless JPEG (SOF3, ITU T.81 annex H), written byte by byte:
  one component, the standard luminance DC Huffman table (annex K.3) as table 0, one
  scan with `predictor`, every sample's difference 0 (category 0, code '00'), so every
  sample is 128. TensorFlow's libjpeg-turbo 2.1.4 refuses it ("Unsupported JPEG
  process: SOF type 0xc3"); libjpeg-turbo 3.x decodes it."""
  import struct  # pylint: disable=g-import-not-at-top
  segment = lambda marker, body: bytes([0xFF, marker]) + struct.pack('>H', len(body) + 2) + body
  bits = bytes([0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0])  # codes per length 1..16
  values = bytes(range(12))
  data = b'\xff\xd8'
  data += segment(0xC3, bytes([8]) + struct.pack('>HH', height, width) + bytes([1, 1, 0x11, 0]))
  data += segment(0xC4, bytes([0x00]) + bits + values)
  data += segment(0xDA, bytes([1, 1, 0x00, predictor, 0, 0]))  # Ss = predictor, Se, Ah/Al 0
  length = 2 * width * height  # bits: '00' a sample
  scan = bytearray(length // 8)
  if length % 8:
    scan.append((1 << (8 - length % 8)) - 1)  # the last byte padded with 1-bits
  return data + bytes(scan) + b'\xff\xd9'
