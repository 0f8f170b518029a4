"""Demo data made at run time from scikit-learn's bundled handwritten digits.

The 1,797 8x8 digit images that scikit-learn ships are written as 32x32 greyscale
PNG files under `<root>/images/<label>/` with an AutoML-format manifest
(`split,image_uri,label`, image URIs relative to the manifest). Splits are left
unassigned for most rows so the component's hash splitting is exercised; every 10th
row names its split explicitly. Nothing is downloaded.
"""
from __future__ import annotations

import csv
import os

import numpy as np
from PIL import Image

NAMES = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine']


def write_digits(root: str, size: int = 32, limit: int | None = None) -> str:
  """Writes the digits as PNGs plus `manifest.csv` under `root`; returns the manifest path."""
  from sklearn.datasets import load_digits  # pylint: disable=g-import-not-at-top
  digits = load_digits()
  manifest = os.path.join(root, 'manifest.csv')
  if os.path.exists(manifest):
    return manifest
  os.makedirs(root, exist_ok=True)
  rows = []
  n = len(digits.images) if limit is None else min(limit, len(digits.images))
  explicit = ['TRAIN', 'VALIDATION', 'TEST']
  for i in range(n):
    label = NAMES[digits.target[i]]
    pixels = np.clip(digits.images[i] * 16, 0, 255).astype(np.uint8)
    image = Image.fromarray(pixels, mode='L').resize((size, size), Image.BILINEAR)
    rel = f'images/{label}/digit_{i:04d}.png'
    os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
    image.save(os.path.join(root, rel))
    ml_use = explicit[(i // 10) % 3] if i % 10 == 0 else 'UNASSIGNED'
    rows.append((ml_use, rel, label))
  tmp = manifest + '.tmp'
  with open(tmp, 'w', newline='', encoding='utf-8') as f:
    writer = csv.writer(f)
    writer.writerow(['split', 'image_uri', 'label'])
    writer.writerows(rows)
  os.replace(tmp, manifest)
  return manifest


if __name__ == '__main__':
  import argparse  # pylint: disable=g-import-not-at-top
  parser = argparse.ArgumentParser(description='Writes the digits demo images and manifest.')
  parser.add_argument('--root', required=True, help='folder to write into')
  print(write_digits(parser.parse_args().root))
