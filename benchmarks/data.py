"""Synthetic benchmark images: 256x256 JPEGs of about 34 KB, each distinct.

Each image is a smooth colour field plus noise, shifted and patched per image so that
no two files share bytes. Generation runs in parallel processes and is cached: a folder
made for 50,000 images serves every smaller N (the first N files). The layout and the
manifests are shared with the photo-like images (benchmarks/photos.py); the choice
between the two sets is benchmarks/image_sets.py.
"""
from __future__ import annotations

import csv
import io
import multiprocessing
import os
from typing import Optional

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.join(HERE, 'out', 'data')
DESCRIPTION = ('synthetic 256x256 JPEGs (benchmarks/data.py: smooth colour fields and '
               'noise, about 34 KB, quality 90, baseline 4:2:0)')
SHORT = 'synthetic 256x256 JPEGs (about 34 KB)'
MEAN_KB = 36
SIZE = 256
LABELS = [f'class_{i}' for i in range(10)]
_BASES = 16


def _bases(seed: int = 0) -> np.ndarray:
  rng = np.random.default_rng(seed)
  y, x = np.mgrid[0:SIZE, 0:SIZE]
  out = []
  for _ in range(_BASES):
    field = np.stack([(x * rng.uniform(0.5, 1.5) + y * rng.uniform(0, 1)) % 256,
                      (y * rng.uniform(0.5, 1.5)) % 256,
                      ((x + y) * rng.uniform(0.2, 1)) % 256], -1)
    out.append(np.clip(field + rng.normal(0, 22, field.shape), 0, 255).astype(np.uint8))
  return np.stack(out)


def _write_range(args) -> None:
  root, start, stop, quality = args
  bases = _bases()
  rng = np.random.default_rng(start)
  for i in range(start, stop):
    path = image_path(root, i)
    if os.path.exists(path):
      continue
    pixels = np.roll(bases[i % _BASES], (i * 37) % SIZE, axis=(i // _BASES) % 2)
    y, x = rng.integers(0, SIZE - 32, size=2)
    pixels = pixels.copy()
    pixels[y:y + 32, x:x + 32] = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, 'JPEG', quality=quality)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + '.tmp', 'wb') as f:
      f.write(buffer.getvalue())
    os.replace(path + '.tmp', path)


def image_path(root: str, i: int) -> str:
  return os.path.join(root, 'images', f'{i // 1000:03d}', f'img_{i:06d}.jpg')


def generate(root: str, n: int, processes: Optional[int] = None, quality: int = 90) -> None:
  """Writes images 0..n-1 under `root` (skipping those already there)."""
  processes = processes or os.cpu_count() or 1
  chunk = 1000
  tasks = [(root, s, min(s + chunk, n), quality) for s in range(0, n, chunk)]
  with multiprocessing.get_context('spawn').Pool(processes) as pool:
    pool.map(_write_range, tasks)


def write_manifest(root: str, n: int) -> str:
  """An AutoML CSV of the first n images, splits unassigned (hash split), 10 labels."""
  path = os.path.join(root, f'manifest-{n}.csv')
  with open(path, 'w', newline='') as f:
    writer = csv.writer(f)
    for i in range(n):
      writer.writerow(['', os.path.relpath(image_path(root, i), root), LABELS[i % len(LABELS)]])
  return path
