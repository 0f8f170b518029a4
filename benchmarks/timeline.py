"""Timeline: where the seconds of one `tfrecorder-component convert` go, from launch to
exit, at 200 and 20,000 images, median of 3.

    .venv/bin/python -m benchmarks.timeline [--sizes 200,20000] [--repeats 3]
        [--image-set photo|synthetic]

Each run is a fresh process that imports the package and runs the command's own `main`
as the `tfrecorder-component` script does and notes the time at each step: the interpreter and
the imports, then the local run's own steps (its INFO log lines: manifests read into
chunks and the vocabulary, rows converted by the worker processes, shards named and the
report written), then publishing the output (moving it into place, `_SUCCESS`) and the
command's summary, then the process's exit, seen from this one. Writes
benchmarks/results/timeline.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Dict, List

from benchmarks import procs

HERE = os.path.dirname(os.path.abspath(__file__))
PHASES = ('interpreter and imports', 'manifests read into chunks, vocabulary',
          'rows converted (worker processes)', 'shards named, report written',
          'output published, summary printed', 'process exit')
_CHILD = r'''
import json, logging, sys, time
marks = [time.time()]
sys.argv[0] = 'tfrecorder-component'  # imports as the command's own script does
from tfrecorder_component.adapters import cli
marks.append(time.time())
class Marks(logging.Handler):
  def emit(self, record):
    if record.getMessage().startswith('Local run:'):
      marks.append(record.created)
logging.getLogger().addHandler(Marks())
logging.getLogger().setLevel(logging.INFO)
code = cli.main(['convert', sys.argv[1], sys.argv[2]])
marks.append(time.time())
print(json.dumps(marks), file=sys.__stderr__)
sys.exit(code)
'''


def _run(manifest: str, out: str) -> List[float]:
  """Seconds of each phase (PHASES) of one run."""
  shutil.rmtree(out, ignore_errors=True)
  launched = time.time()
  done = subprocess.run([sys.executable, '-c', _CHILD, manifest, out], capture_output=True,
                        text=True, env={**os.environ, **procs.QUIET}, check=False)
  ended = time.time()
  if done.returncode:
    raise RuntimeError(f'convert exited {done.returncode}:\n{done.stderr[-2000:]}')
  marks = json.loads(done.stderr.strip().splitlines()[-1])
  if len(marks) != 6:
    raise RuntimeError(f'expected the local run\'s three steps, got {marks}')
  points = [launched, *marks[1:], ended]
  return [b - a for a, b in zip(points, points[1:])]


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='200,20000')
  parser.add_argument('--repeats', type=int, default=3)
  from benchmarks import image_sets  # pylint: disable=g-import-not-at-top
  image_sets.add_arguments(parser)
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  args = parser.parse_args(argv)
  data = image_sets.resolve(args)
  sizes = [int(s) for s in args.sizes.split(',')]
  data.generate(args.data, max(sizes))
  out = os.path.join(HERE, 'out', 'timeline')
  runs: Dict[int, List[List[float]]] = {n: [] for n in sizes}
  for rep in range(args.repeats):
    for n in sizes:
      runs[n].append(_run(data.write_manifest(args.data, n), out))
      print(f'timeline rep {rep + 1} N={n:>6} {sum(runs[n][-1]):6.2f} s', flush=True)
  shutil.rmtree(out, ignore_errors=True)
  head = ' | '.join(f'{n:,} images' for n in sizes)
  lines = [f'`tfrecorder-component convert`, default settings, a fresh process each run; '
           f'median seconds of {args.repeats} runs (each phase\'s own median, so the '
           f'phases need not add up to the total exactly). Images: {data.SHORT}.', '',
           f'| phase | {head} |', '|---|' + '---:|' * len(sizes)]
  for k, phase in enumerate(PHASES):
    lines.append(f'| {phase} | ' + ' | '.join(
        f'{statistics.median(r[k] for r in runs[n]):.2f}' for n in sizes) + ' |')
  lines.append('| **launch to exit** | ' + ' | '.join(
      f'**{statistics.median(sum(r) for r in runs[n]):.2f}**' for n in sizes) + ' |')
  text = '\n'.join(lines) + '\n'
  os.makedirs(args.results, exist_ok=True)
  with open(os.path.join(args.results, 'timeline.md'), 'w') as f:
    f.write(text)
  print(text)
  return 0


if __name__ == '__main__':
  sys.exit(main())
