"""Photo-like benchmark images: random crops of real photographs at ImageNet-like sizes.

    .venv/bin/python -m benchmarks.photos N [--data DIR] [--seed 0]   (make N, print stats)

The sources are the three photographs that installed packages ship: scikit-learn's
`sklearn/datasets/images/china.jpg` and `flower.jpg` (640x427) and matplotlib's
`mpl-data/sample_data/grace_hopper.jpg` (512x600). Image i is drawn from its own random
generator, seeded by (seed, i): one of the sources; an aspect ratio (4:3, 3:4, 1:1, 3:2,
2:3, 5:4, 4:5, mostly landscape); a shorter side of 250 px up to 500 px, as far as the
source allows (the mean side comes to about 366 px); a crop of that size up to 1.6
times larger (never smaller: nothing is upscaled), downscaled to it with Lanczos; a
horizontal flip half the time; a mild exposure and white-balance change, Gaussian
sensor noise (sigma 0.5 to 2 of 255: no two files share bytes) and a camera's
sharpening (unsharp mask, radius 1 px, 20-70%). Each is written as a baseline or
progressive (15%) JPEG at a quality of 85 to 97, chroma subsampled 4:2:0 or 4:4:4
(15%): about 53 KB an image on average.

Where the sources are looked for, in order (the first copy whose SHA-256 is the known
one wins; else the first found, with a warning): the packages of this interpreter
(`importlib.util.find_spec`, nothing imported); the other virtual environments under
~/.cache/tfrecorder-component (e.g. oracles-venv, whose matplotlib has grace_hopper.jpg);
the wheels that uv unpacked into its cache ($UV_CACHE_DIR or ~/.cache/uv, archive-v*).
scikit-learn is never installed for this: the TFX 1.16 stack's lock has it (a TFX
dependency); on the TFX 1.21 and core stacks it is found in those caches, or the set is
made of the sources found (at least one).

Same layout and manifests as benchmarks/data.py (images/NNN/img_NNNNNN.jpg; AutoML CSV
`,uri,label` with 10 labels), generated in parallel processes and cached: a folder made
for N images serves every smaller N. A stamp (photos.json: recipe version, seed, the
sources' SHA-256) marks the folder; a folder stamped otherwise is emptied and remade.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import importlib.util
import io
import json
import multiprocessing
import os
import shutil
import sys
import time
import warnings
from typing import Dict, List, Optional, Tuple

import numpy as np
from PIL import Image, ImageFilter

from benchmarks.data import LABELS, image_path, write_manifest  # pylint: disable=unused-import

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.join(HERE, 'out', 'photos')
DESCRIPTION = ('photo-like JPEGs (benchmarks/photos.py: random crops of 3 photographs, '
               'about 366 px mean side, 53 KB, quality 85-97, 15% progressive, 15% 4:4:4)')
SHORT = 'photo-like JPEGs (mean side about 366 px, about 53 KB)'
MEAN_KB = 53
RECIPE = 1  # bump when the images change, so that cached folders are remade
STAMP = 'photos.json'
# name: (package, path inside the package, SHA-256 of the copy the figures were made with)
SOURCES = {
    'china.jpg': ('sklearn', 'datasets/images/china.jpg',
                  '8378025ad2519d649d02e32bd98990db4ab572357d9f09841c2fbfbb4fefad29'),
    'flower.jpg': ('sklearn', 'datasets/images/flower.jpg',
                   'a77f6ec41e353afdf8bdff2ea981b2955535d8d83294f8cfa49cf4e423dd5638'),
    'grace_hopper.jpg': ('matplotlib', 'mpl-data/sample_data/grace_hopper.jpg',
                         'a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130'),
}
# (width, height) ratios and their weights: mostly landscape 4:3, as photographs are
ASPECTS = ((4 / 3, 0.40), (3 / 4, 0.18), (1.0, 0.12), (3 / 2, 0.12), (2 / 3, 0.08),
           (5 / 4, 0.05), (4 / 5, 0.05))
MIN_SHORT, MAX_SHORT = 250, 500
MAX_ZOOM = 1.6
NOISE = (0.5, 2.0)  # sensor noise, sigma of 255
SHARPEN = (20, 71)  # unsharp mask percent, radius 1
QUALITY = (85, 97)
PROGRESSIVE = 0.15
FULL_CHROMA = 0.15  # 4:4:4; the rest 4:2:0
CHUNK = 250


# ---------------------------------------------------------------- the sources
def _candidates(package: str, inner: str) -> List[str]:
  """Every copy of one package file this machine has, in the order they are preferred."""
  out = []
  try:
    spec = importlib.util.find_spec(package)
  except (ImportError, ValueError):
    spec = None
  for location in (spec.submodule_search_locations or []) if spec else []:
    out.append(os.path.join(location, inner))
  home = os.path.expanduser('~')
  out += sorted(glob.glob(os.path.join(home, '.cache', 'tfrecorder-component', '*', 'lib',
                                       'python*', 'site-packages', package, inner)))
  uv = os.environ.get('UV_CACHE_DIR') or os.path.join(home, '.cache', 'uv')
  out += sorted(glob.glob(os.path.join(uv, 'archive-v*', '*', package, inner)))
  return [p for p in dict.fromkeys(out) if os.path.isfile(p)]


def _sha256(path: str) -> str:
  with open(path, 'rb') as f:
    return hashlib.sha256(f.read()).hexdigest()


def find_sources() -> Dict[str, str]:
  """{name: path} of each source photograph found (see the module); raises if none."""
  found = {}
  for name, (package, inner, digest) in SOURCES.items():
    paths = _candidates(package, inner)
    if not paths:
      warnings.warn(f'photos: no {package}/{inner} on this machine; made without it')
      continue
    good = [p for p in paths if _sha256(p) == digest]
    if not good:
      warnings.warn(f'photos: {paths[0]} is not the copy the recorded figures used '
                    f'(SHA-256 differs); the images will differ from them')
    found[name] = (good or paths)[0]
  if not found:
    raise RuntimeError('photos: none of the source photographs was found: install '
                       'scikit-learn or matplotlib (in any environment under '
                       '~/.cache/tfrecorder-component), or use the synthetic images')
  return found


def _load(sources: Dict[str, str]) -> List[np.ndarray]:
  return [np.asarray(Image.open(sources[name]).convert('RGB')) for name in sorted(sources)]


# ---------------------------------------------------------------- one image
def _geometry(rng: np.random.Generator, height: int, width: int) -> Tuple[int, int]:
  """The output (width, height): an aspect ratio and a shorter side the source holds."""
  ratios = np.array([r for r, _ in ASPECTS])
  weights = np.array([w for _, w in ASPECTS])
  while True:
    r = ratios[rng.choice(len(ratios), p=weights / weights.sum())]
    # the longest shorter side this source holds at this ratio
    top = min(MAX_SHORT, height, width / r) if r >= 1 else min(MAX_SHORT, width, height * r)
    if top >= MIN_SHORT:
      break
  short = MIN_SHORT + (top - MIN_SHORT) * rng.beta(1.4, 1.6)
  long_ = short * max(r, 1 / r)
  w, h = (long_, short) if r >= 1 else (short, long_)
  return min(width, int(round(w))), min(height, int(round(h)))


def render(sources: List[np.ndarray], seed: int, i: int) -> bytes:
  """Image i's JPEG bytes: the same for the same sources, seed and i."""
  rng = np.random.default_rng([seed, i])
  src = sources[int(rng.integers(len(sources)))]
  height, width = src.shape[:2]
  w, h = _geometry(rng, height, width)
  zoom = 1 + (min(MAX_ZOOM, width / w, height / h) - 1) * rng.random()
  cw, ch = min(width, int(round(w * zoom))), min(height, int(round(h * zoom)))
  x, y = int(rng.integers(width - cw + 1)), int(rng.integers(height - ch + 1))
  im = Image.fromarray(src[y:y + ch, x:x + cw])
  if (cw, ch) != (w, h):
    im = im.resize((w, h), Image.LANCZOS)
  pixels = np.asarray(im, dtype=np.float32)
  if rng.random() < 0.5:
    pixels = pixels[:, ::-1]
  gain = rng.uniform(0.92, 1.08) * rng.uniform(0.97, 1.03, size=3).astype(np.float32)
  noise = rng.standard_normal(pixels.shape, dtype=np.float32) * rng.uniform(*NOISE)
  im = Image.fromarray(np.clip(pixels * gain + noise + 0.5, 0, 255).astype(np.uint8))
  # the camera's own sharpening, after the noise (which it sharpens too)
  im = im.filter(ImageFilter.UnsharpMask(1.0, int(rng.integers(*SHARPEN)), 0))
  out = io.BytesIO()
  im.save(
      out, 'JPEG', quality=int(rng.integers(QUALITY[0], QUALITY[1] + 1)),
      progressive=bool(rng.random() < PROGRESSIVE),
      subsampling=0 if rng.random() < FULL_CHROMA else 2)
  return out.getvalue()


# ---------------------------------------------------------------- the folder
def _write_range(args) -> None:
  root, start, stop, seed, sources = args
  pixels = None
  for i in range(start, stop):
    path = image_path(root, i)
    if os.path.exists(path):
      continue
    if pixels is None:
      pixels = _load(sources)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + '.tmp', 'wb') as f:
      f.write(render(pixels, seed, i))
    os.replace(path + '.tmp', path)


def _stamp(seed: int, sources: Dict[str, str]) -> Dict[str, object]:
  return {'recipe': RECIPE, 'seed': seed,
          'sources': {name: _sha256(path) for name, path in sorted(sources.items())}}


def _claim(root: str, stamp: Dict[str, object]) -> None:
  """Makes `root` this recipe's: remakes a folder stamped otherwise; refuses a folder
  of images without a stamp (not made here: e.g. the synthetic images' folder)."""
  path = os.path.join(root, STAMP)
  if os.path.exists(path):
    with open(path) as f:
      if json.load(f) == stamp:
        return
    print(f'photos: {root} was made by another recipe, seed or sources: remaking it',
          flush=True)
    shutil.rmtree(os.path.join(root, 'images'), ignore_errors=True)
    for manifest in glob.glob(os.path.join(root, 'manifest-*.csv')):
      os.remove(manifest)
  elif os.path.exists(os.path.join(root, 'images')):
    raise RuntimeError(f'{root} holds images that benchmarks/photos.py did not make '
                       f'(no {STAMP}); give another folder')
  os.makedirs(root, exist_ok=True)
  with open(path, 'w') as f:
    json.dump(stamp, f, indent=1)


def generate(root: str, n: int, processes: Optional[int] = None, seed: int = 0) -> None:
  """Writes images 0..n-1 under `root` (skipping those already there)."""
  sources = find_sources()
  _claim(root, _stamp(seed, sources))
  # each chunk is written in order: its last file there means the whole chunk is
  if all(os.path.exists(image_path(root, min(s + CHUNK, n) - 1)) for s in range(0, n, CHUNK)):
    return
  processes = processes or os.cpu_count() or 1
  tasks = [(root, s, min(s + CHUNK, n), seed, sources) for s in range(0, n, CHUNK)]
  with multiprocessing.get_context('spawn').Pool(processes) as pool:
    pool.map(_write_range, tasks)


def statistics(root: str, n: int) -> Dict[str, float]:
  """Count, distinct files, mean side, mean bytes, and the shares of progressive and of
  4:4:4 files among the first n images."""
  from PIL import JpegImagePlugin  # pylint: disable=g-import-not-at-top
  sides, sizes, progressive, full, digests = [], [], 0, 0, set()
  for i in range(n):
    with open(image_path(root, i), 'rb') as f:
      data = f.read()
    digests.add(hashlib.sha256(data).digest())
    sizes.append(len(data))
    with Image.open(io.BytesIO(data)) as im:
      sides += list(im.size)
      progressive += bool(im.info.get('progressive') or im.info.get('progression'))
      full += JpegImagePlugin.get_sampling(im) == 0
  return {'count': n, 'distinct': len(digests), 'mean_side_px': float(np.mean(sides)),
          'shorter_side_px': (int(np.min(np.minimum(sides[::2], sides[1::2]))),
                              int(np.max(np.minimum(sides[::2], sides[1::2])))),
          'mean_kb': float(np.mean(sizes)) / 1000,
          'progressive': progressive / max(n, 1), 'yuv444': full / max(n, 1)}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('n', type=int, help='how many images (the first N of the set)')
  parser.add_argument('--data', default=DEFAULT_ROOT)
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--processes', type=int, default=None)
  args = parser.parse_args(argv)
  for name, path in find_sources().items():
    print(f'source {name}: {path}')
  t = time.perf_counter()
  generate(args.data, args.n, args.processes, args.seed)
  took = time.perf_counter() - t
  write_manifest(args.data, args.n)
  s = statistics(args.data, args.n)
  print(f'{s["count"]:,} images ({s["distinct"]:,} distinct) under {args.data} in {took:.1f}s: '
        f'mean side {s["mean_side_px"]:.0f} px, shorter side {s["shorter_side_px"][0]}-'
        f'{s["shorter_side_px"][1]} px, mean {s["mean_kb"]:.1f} KB, progressive '
        f'{s["progressive"]:.1%}, 4:4:4 {s["yuv444"]:.1%}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
