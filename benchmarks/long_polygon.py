"""What one long COCO polygon costs with `--include-masks`: one image, one annotation
whose polygon has N points, converted by the command, for N = 1M and 4M (issue 65: the
external sort's reads were quadratic in an entry's size, 4x the points took 16x the
time). The conversion should grow about linearly: 4M points at most ~6x 1M's time.

    .venv/bin/python -m benchmarks.long_polygon [--points 1000000 4000000]

Prints each case's wall time and the peak resident memory of the command's process tree
(`procs.run`)."""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile

from benchmarks import procs


def write_coco(root: str, points: int) -> str:
  """A 256x256 JPEG and a COCO JSON with one annotation of a `points`-point polygon (a
  circle traced `points` times round, so its mask is a disc)."""
  from PIL import Image  # pylint: disable=g-import-not-at-top
  Image.new('RGB', (256, 256), (90, 140, 200)).save(os.path.join(root, 'a.jpg'), quality=90)
  polygon = []
  for t in range(points):
    angle = 2 * math.pi * t / points
    polygon += [round(128 + 100 * math.cos(angle), 2), round(128 + 100 * math.sin(angle), 2)]
  coco = {'images': [{'id': 1, 'file_name': 'a.jpg', 'width': 256, 'height': 256}],
          'annotations': [{'id': 1, 'image_id': 1, 'category_id': 1, 'iscrowd': 0,
                           'bbox': [28, 28, 200, 200], 'area': 31416,
                           'segmentation': [polygon]}],
          'categories': [{'id': 1, 'name': 'disc'}]}
  path = os.path.join(root, f'coco-{points}.json')
  with open(path, 'w') as f:
    json.dump(coco, f)
  return path


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--points', type=int, nargs='+', default=[1_000_000, 4_000_000])
  args = parser.parse_args(argv)
  root = tempfile.mkdtemp(prefix='long-polygon-')
  try:
    times = {}
    for points in args.points:
      manifest = write_coco(root, points)
      out = os.path.join(root, f'out-{points}')
      result = procs.run(procs.python('-m', 'tfrecorder_component.adapters.cli', 'convert',
                                      manifest, out, '--include-masks', '--quiet'))
      times[points] = result['wall_s']
      print(f'{points:>10,} points: {result["wall_s"]:7.2f} s, peak {result["peak_mb"]:.0f} MB '
            f'(JSON {os.path.getsize(manifest) / 2**20:.0f} MiB)', flush=True)
    first = args.points[0]
    for points in args.points[1:]:
      print(f'{points:,} / {first:,} points: {times[points] / times[first]:.1f}x the time')
  finally:
    shutil.rmtree(root, ignore_errors=True)


if __name__ == '__main__':
  main(sys.argv[1:])
