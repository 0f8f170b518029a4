"""Peak memory against manifest size: `convert()` at 20,000 and 200,000 rows, and a
1 GB-class COCO JSON.

    .venv/bin/python -m benchmarks.memory [--sizes 20000,200000] [--coco-images 200000]

`--sizes ''` skips the CSV conversions (the COCO file alone: `--coco-images 20000` is about
100 MB, 200000 about 1 GB).

Images are distinct 4x4 PNGs (so nothing but the row count grows; generated once under
benchmarks/out/tiny). `--sizes 20000,200000,2000000` adds the long 2,000,000-row run
(about 8 GB of small files, made once). Each conversion runs `convert()` in its own
process, with the default settings (every core from 8,000 rows) and in memory with one
worker, from a cold file cache where the OS lets the benchmark empty it (as root), and
reports the time a row and the peak resident memory of the whole process tree, of the
runner process and of the largest worker. The COCO file has 8 annotations per image, each with a 40-point polygon
(about 1 GB for 200,000 images); it is converted with the default settings. Writes
benchmarks/results/memory.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from typing import Dict, List

import numpy as np

from benchmarks import procs, report

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = {'default': [], 'in memory, 1 worker': ['--direct_running_mode=in_memory',
                                                '--direct_num_workers=1']}
CHILD = '''
import json, sys
import tfrecorder_component as trc
trc.convert(sys.argv[1], sys.argv[2], beam_args=json.loads(sys.argv[3]) or None)
'''
ANNOTATIONS_PER_IMAGE = 8
POLYGON_POINTS = 40


def generate(root: str, n: int) -> None:
  """Distinct 4x4 RGB PNGs img/0.png .. img/{n-1}.png (kept between runs)."""
  from PIL import Image  # pylint: disable=g-import-not-at-top
  folder = os.path.join(root, 'img')
  os.makedirs(folder, exist_ok=True)
  done = len(os.listdir(folder))
  rng = np.random.default_rng(done)
  for i in range(done, n):
    Image.fromarray(rng.integers(0, 255, (4, 4, 3), dtype=np.uint8)).save(
        os.path.join(folder, f'{i}.png'))


def write_csv(root: str, n: int) -> str:
  path = os.path.join(root, f'manifest-{n}.csv')
  with open(path, 'w') as f:
    f.write(''.join(f'TRAIN,img/{i}.png,c{i % 10}\n' for i in range(n)))
  return path


def write_coco(root: str, images: int) -> str:
  """A COCO detection JSON over the first `images` PNGs, written once."""
  path = os.path.join(root, f'coco-{images}.json')
  if os.path.exists(path):
    return path
  rng = np.random.default_rng(0)
  with open(path + '.tmp', 'w') as f:
    f.write('{"info": {"description": "benchmark"}, "images": [')
    f.write(','.join(json.dumps({'id': i + 1, 'file_name': f'img/{i}.png', 'width': 4,
                                 'height': 4}) for i in range(images)))
    f.write('], "categories": [')
    f.write(','.join(json.dumps({'id': c * 3 + 1, 'name': f'category_{c}',
                                 'supercategory': 'thing'}) for c in range(80)))
    f.write('], "annotations": [')
    for i in range(images):
      parts = []
      for k in range(ANNOTATIONS_PER_IMAGE):
        x, y = rng.uniform(0, 2, 2).round(2)
        w, h = rng.uniform(0.5, 2, 2).round(2)
        polygon = rng.uniform(0, 4, 2 * POLYGON_POINTS).round(2).tolist()
        parts.append(json.dumps({
            'id': i * ANNOTATIONS_PER_IMAGE + k + 1, 'image_id': i + 1,
            'category_id': int(rng.integers(80)) * 3 + 1, 'iscrowd': 0,
            'area': round(float(w * h), 2), 'bbox': [float(x), float(y), float(w), float(h)],
            'segmentation': [polygon]}))
      f.write((',' if i else '') + ','.join(parts))
    f.write(']}')
  os.replace(path + '.tmp', path)
  return path


def drop_file_cache() -> bool:
  """Empties the OS page cache (Linux, as root), then reads the code a conversion imports
  back into it, so that a conversion reads its images from disk and nothing else; False
  where it cannot. 2,000,000 small files take about 10 GB of page cache and inodes: they
  do not stay cached between runs where 200,000 do, so without this the time a row would
  compare a cold disk with a warm cache."""
  os.sync()
  try:
    with open('/proc/sys/vm/drop_caches', 'w') as f:
      f.write('3\n')
  except OSError:
    return False
  procs.run(procs.python('-c', WARM_IMPORTS))
  return True


WARM_IMPORTS = '''
import tfrecorder_component as trc
from apache_beam.runners.portability.fn_api_runner import fn_runner, worker_handlers
from apache_beam.runners.worker import sdk_worker_main
from tfrecorder_component.engines.beam import pipeline
'''


def _convert(manifest: str, out: str, args: List[str]) -> Dict[str, float]:
  shutil.rmtree(out, ignore_errors=True)
  cold = drop_file_cache()
  r = procs.run(procs.python('-c', CHILD, manifest, out, json.dumps(args)))
  with open(os.path.join(out, 'report', 'summary.json')) as f:
    summary = json.load(f)
  shutil.rmtree(out, ignore_errors=True)
  return {'wall_s': r['wall_s'], 'peak_mb': r['peak_mb'], 'runner_mb': r['process_mb'],
          'worker_mb': r['child_mb'], 'records': summary['records_written'],
          'objects': summary.get('objects_written', 0), 'cold_cache': cold}


def measure(root: str, sizes: List[int], coco_images: int) -> Dict[str, List[Dict]]:
  generate(root, max(sizes + [coco_images]))
  out = os.path.join(HERE, 'out', 'memory-output')
  rows = []
  for n in sizes:
    manifest = write_csv(root, n)
    for mode, args in MODES.items():
      r = _convert(manifest, out, args)
      assert r['records'] == n, r
      rows.append(dict(r, n=n, mode=mode))
      print(f'memory N={n:>7,} {mode:<20} {r["wall_s"]:6.0f} s  tree {r["peak_mb"]:6.0f} MB  '
            f'runner {r["runner_mb"]:6.0f} MB  largest worker {r["worker_mb"]:6.0f} MB',
            flush=True)
  coco = []
  if coco_images:
    manifest = write_coco(root, coco_images)
    r = _convert(manifest, out, [])
    assert r['records'] == coco_images, r
    coco.append(dict(r, images=coco_images, file_mb=os.path.getsize(manifest) / 2**20))
    print(f'memory COCO {coco[-1]["file_mb"]:,.0f} MB: {r}', flush=True)
  return {'rows': rows, 'coco': coco}


def markdown(results: Dict[str, List[Dict]]) -> str:
  rows = results['rows']
  lines = ['| rows | settings | seconds | µs a row | peak MB, process tree | runner MB | '
           'largest worker MB |', '|---:|---|---:|---:|---:|---:|---:|']
  for r in rows:
    lines.append(f'| {r["n"]:,} | {r["mode"]} | {r["wall_s"]:.0f} | '
                 f'{r["wall_s"] / r["n"] * 1e6:.0f} | {r["peak_mb"]:,.0f} | '
                 f'{r["runner_mb"]:,.0f} | {r["worker_mb"]:,.0f} |')
  if rows and all(r.get('cold_cache') for r in rows):
    lines += ['', 'Every conversion started with the OS file cache emptied: each size read '
              'its images from disk alike.']
  sizes = sorted({r['n'] for r in rows})
  if len(sizes) > 1:
    lines += ['', '| target | measured | holds |', '|---|---:|---|']
    small = sizes[0]
    for big in sizes[1:]:
      limit = 1.1 if big <= 10 * small else 1.2
      for mode in MODES:
        a, b = (next(r for r in rows if r['n'] == n and r['mode'] == mode) for n in (small, big))
        for what, key in (('largest process', None), ('process tree', 'peak_mb')):
          peak = (lambda r: r[key]) if key else (lambda r: max(r['runner_mb'], r['worker_mb']))
          ratio = peak(b) / peak(a)
          lines.append(f'| `convert()` {mode}, {what}: peak at {big:,} rows <= {limit}x at '
                       f'{small:,} | {ratio:.2f}x | {"yes" if ratio <= limit else "**no**"} |')
    for before, big in zip(sizes[1:], sizes[2:]):
      for mode in MODES:
        a, b = (next(r for r in rows if r['n'] == n and r['mode'] == mode) for n in (before, big))
        per_row = [r['wall_s'] / r['n'] * 1e6 for r in (a, b)]
        lines.append(f'| `convert()` {mode}: time a row at {big:,} rows <= at {before:,} | '
                     f'{per_row[1]:.0f} against {per_row[0]:.0f} µs | '
                     f'{"yes" if per_row[1] <= per_row[0] else "**no**"} |')
  for c in results['coco']:
    lines += ['', f'COCO JSON of {c["file_mb"]:,.0f} MB ({c["images"]:,} images, '
              f'{c["objects"]:,} boxes written, {POLYGON_POINTS}-point polygons), default '
              f'settings: {c["wall_s"]:.0f} s, peak {c["peak_mb"]:,.0f} MB for the process tree, '
              f'{c["runner_mb"]:,.0f} MB in the runner, {c["worker_mb"]:,.0f} MB in the largest '
              'worker.']
  return '\n'.join(lines) + '\n'


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='20000,200000')
  parser.add_argument('--coco-images', type=int, default=200000,
                      help='images of the COCO JSON (0: skip it)')
  parser.add_argument('--data', default=os.path.join(HERE, 'out', 'tiny'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  args = parser.parse_args(argv)
  sizes = sorted(int(s) for s in args.sizes.split(',') if s.strip())
  results = measure(args.data, sizes, args.coco_images)
  report.write_part(args.results, 'memory.md', markdown(results))
  with open(os.path.join(args.results, 'memory.json'), 'w') as f:
    json.dump(results, f, indent=1)
  return 0


if __name__ == '__main__':
  sys.exit(main())
