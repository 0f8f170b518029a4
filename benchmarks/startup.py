"""Start-up: what a small run costs a user, from the command line, median of 3.

    .venv/bin/python -m benchmarks.startup [--repeats 3] [--image-set photo|synthetic]

Each case is a fresh process, timed from launch to exit: `tfrecorder-component --help`;
`tfrecorder-component convert` of 200 benchmark JPEGs (photo-like by default,
benchmarks/photos.py) into a fresh folder; Importer ->
ImageExampleGen on the same 200 images on LocalDagRunner (a fresh pipeline root and
SQLite store each time). Writes benchmarks/results/startup.md.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Dict, List

from benchmarks import procs, report

HERE = os.path.dirname(os.path.abspath(__file__))
N = 200
# (case, what it is, target in seconds)
CASES = (
    ('help', '`tfrecorder-component --help`', 1.5),
    ('cli', f'`tfrecorder-component convert` of {N} images', 6.0),
    ('localdag', f'Importer -> ImageExampleGen on {N} images, LocalDagRunner', 20.0),
)


def _command(case: str, manifest: str, out: str) -> List[str]:
  cli = os.path.join(os.path.dirname(sys.executable), 'tfrecorder-component')
  if case == 'help':
    return [cli, '--help']
  if case == 'cli':
    return [cli, 'convert', manifest, out]
  return procs.python('-m', 'benchmarks.localdag', manifest, out)


def measure(data_root: str, repeats: int, image_set: str = 'photo'
            ) -> Dict[str, Dict[str, float]]:
  from benchmarks import image_sets  # pylint: disable=g-import-not-at-top
  data = image_sets.image_set(image_set)
  data.generate(data_root, N)
  manifest = data.write_manifest(data_root, N)
  scratch = os.path.join(HERE, 'out', 'startup')
  times: Dict[str, List[float]] = {case: [] for case, _, _ in CASES}
  for rep in range(repeats):
    for case, _, _ in CASES:
      shutil.rmtree(scratch, ignore_errors=True)
      # As in a user's shell: nothing silenced, so the cost of any notice is counted.
      r = procs.run(_command(case, manifest, scratch),
                    env={'PYTHONWARNINGS': '', 'TF_CPP_MIN_LOG_LEVEL': '0'})
      times[case].append(r['wall_s'])
      print(f'start-up rep {rep + 1} {case:<9} {r["wall_s"]:6.2f} s', flush=True)
  shutil.rmtree(scratch, ignore_errors=True)
  return {case: procs.spread(v) for case, v in times.items()}


def markdown(results: Dict[str, Dict[str, float]], images: str = '') -> str:
  lines = [*([f'Images: {images}.', ''] if images else []),
           '| start-up case (fresh process, launch to exit) | seconds, median (min–max) '
           '| target | holds |', '|---|---:|---:|---|']
  for case, what, target in CASES:
    s = results[case]
    lines.append(f'| {what} | {procs.fmt(s, 2)} | < {target:g} s | '
                 f'{"yes" if s["median"] < target else "**no**"} |')
  return '\n'.join(lines) + '\n'


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--repeats', type=int, default=3)
  from benchmarks import image_sets  # pylint: disable=g-import-not-at-top
  image_sets.add_arguments(parser)
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  args = parser.parse_args(argv)
  images = image_sets.resolve(args)
  report.write_part(args.results, 'startup.md',
                    markdown(measure(args.data, args.repeats, args.image_set), images.SHORT))
  return 0


if __name__ == '__main__':
  sys.exit(main())
