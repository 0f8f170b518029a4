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
