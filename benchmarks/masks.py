"""What instance masks and keypoints cost: one COCO JSON converted with boxes only, with
`--include-masks` and with both flags, side by side (interleaved, median of 3).

    .venv/bin/python -m benchmarks.masks [--images 5000] [--repeats 3]

The COCO JSON covers the first N benchmark JPEGs (256x256), five objects an image, each
a 16-point polygon; one in three carries three keypoints. Each case is a fresh
`tfrecorder-component convert` process (default settings: every core from 8,000 rows,
else one worker in memory), timed from launch to exit, with its process tree's peak
memory and the size of the records written. Writes benchmarks/results/masks.md.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
from typing import Dict, List

from benchmarks import procs, report

HERE = os.path.dirname(os.path.abspath(__file__))
OBJECTS = 5  # an image
CASES = (
    ('boxes', 'boxes only (the default)', []),
    ('masks', '`--include-masks`', ['--include-masks']),
    ('both', '`--include-masks --include-keypoints`', ['--include-masks', '--include-keypoints']),
)


def write_coco(root: str, n: int) -> str:
  """The COCO JSON of the first n benchmark images (see the module)."""
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  rng = random.Random(0)
  images, annotations = [], []
  for i in range(n):
    images.append({'id': i, 'file_name': os.path.relpath(data.image_path(root, i), root),
                   'width': 256, 'height': 256})
    for k in range(OBJECTS):
      cx, cy, r = rng.uniform(40, 216), rng.uniform(40, 216), rng.uniform(10, 35)
      polygon = [v for t in range(16) for v in (cx + r * math.cos(t * math.pi / 8),
                                                cy + r * math.sin(t * math.pi / 8))]
      annotation = {'id': len(annotations), 'image_id': i, 'category_id': 1 + k % 3,
                    'bbox': [cx - r, cy - r, 2 * r, 2 * r], 'area': math.pi * r * r,
                    'iscrowd': 0, 'segmentation': [polygon]}
      if k % 3 == 0:
        annotation['keypoints'] = [cx, cy, 2, cx + r / 2, cy, 1, 0, 0, 0]
      annotations.append(annotation)
  categories = [{'id': 1, 'name': 'person', 'keypoints': ['head', 'hand', 'foot']},
                {'id': 2, 'name': 'car'}, {'id': 3, 'name': 'dog'}]
  path = os.path.join(root, f'coco-{n}.json')
  with open(path, 'w') as f:
    json.dump({'images': images, 'annotations': annotations, 'categories': categories}, f)
  return path


def _size(folder: str) -> int:
  return sum(os.path.getsize(os.path.join(d, name))
             for d, _, names in os.walk(folder) for name in names)


def measure(data_root: str, n: int, repeats: int) -> Dict[str, Dict[str, List[float]]]:
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  data.generate(data_root, n)
  coco = write_coco(data_root, n)
  cli = os.path.join(os.path.dirname(sys.executable), 'tfrecorder-component')
  scratch = os.path.join(HERE, 'out', 'masks')
  got: Dict[str, Dict[str, List[float]]] = {
      case: {'wall_s': [], 'peak_mb': [], 'mb': []} for case, _, _ in CASES}
  for rep in range(repeats):
    for case, _, flags in CASES:
      shutil.rmtree(scratch, ignore_errors=True)
      r = procs.run([cli, 'convert', coco, scratch, '--splits', 'train=1', *flags])
      size = _size(os.path.join(scratch, 'Split-train')) / 2**20
      for key, value in (('wall_s', r['wall_s']), ('peak_mb', r['peak_mb']), ('mb', size)):
        got[case][key].append(value)
      print(f'masks rep {rep + 1} {case:<6} {r["wall_s"]:6.2f} s {size:7.1f} MB', flush=True)
  shutil.rmtree(scratch, ignore_errors=True)
  return got


def markdown(got: Dict[str, Dict[str, List[float]]], n: int) -> str:
  base_wall = procs.spread(got['boxes']['wall_s'])['median']
  base_mb = procs.spread(got['boxes']['mb'])['median']
  lines = [f'COCO JSON over {n:,} 256x256 JPEGs, {OBJECTS} polygon objects an image '
           f'({n * OBJECTS:,} masks); `tfrecorder-component convert`, fresh process each.',
           '', '| case | seconds, median (min–max) | vs boxes only | records, MB | vs boxes '
           'only | peak memory, MB |', '|---|---:|---:|---:|---:|---:|']
  for case, what, _ in CASES:
    wall, mb = procs.spread(got[case]['wall_s']), procs.spread(got[case]['mb'])
    peak = procs.spread(got[case]['peak_mb'])
    lines.append(f'| {what} | {procs.fmt(wall, 2)} | {wall["median"] / base_wall:.2f}x | '
                 f'{mb["median"]:,.1f} | {mb["median"] / base_mb - 1:+.1%} | '
                 f'{procs.fmt(peak, 0)} |')
  masks = procs.spread(got['masks']['wall_s'])['median']
  lines += ['', f'Each mask costs about {(masks - base_wall) / (n * OBJECTS) * 1e6:,.0f} µs '
            'of one core (rasterise, decode, PNG-encode; the PNG encode is most of it) and '
            f'{(procs.spread(got["masks"]["mb"])["median"] - base_mb) * 2**20 / (n * OBJECTS):,.0f}'
            ' bytes of record.']
  return '\n'.join(lines) + '\n'


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--images', type=int, default=5000)
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--data', default=os.path.join(HERE, 'out', 'data'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  args = parser.parse_args(argv)
  got = measure(args.data, args.images, args.repeats)
  report.write_part(args.results, 'masks.md', markdown(got, args.images))
  return 0


if __name__ == '__main__':
  sys.exit(main())
