"""Engines: the CLI's steady rate and CPU an image without Beam and on Beam's
multi-process DirectRunner, the same local JPEGs, side by side.

    .venv/bin/python -m benchmarks.engines [--sizes 2000,20000] [--repeats 3]
                                           [--images D] [--image-set photo]

Two runs of the first N benchmark JPEGs (`--image-set`: photo-like by default,
benchmarks/photos.py), manifest and output on local disk, each a fresh
`tfrecorder-component convert MANIFEST OUT` process on every core. With `--images D`
only D distinct images are made and a larger N lists them over again in order (row i
names image i mod D, so both engines read, convert and report the same repeated
images, as duplicates): Beam's fixed cost (about 15 CPU-s) moves by 1 to 3 s between
runs, and 60,000 rows (`--sizes 2000,60000 --images 20000`) make that small beside
the steady difference without making 60,000 photos.

- `without Beam`: default settings (the engine without Beam: a worker process a core);
- `Beam`: the same with `--beam-arg=--direct_running_mode=multi_processing
  --beam-arg=--direct_num_workers=C` (C the cores), which the CLI hands to Beam's
  DirectRunner (a `--direct_*` argument asks for Beam).

Timed from launch to exit, with the CPU time (user and system) of the whole process tree.
For each repeat and each N the two runs alternate, so the host's noise falls on both.
The steady rate of a repeat is (N2 - N1) / (t2 - t1) and the CPU an image
(c2 - c1) / (N2 - N1), so start-up cancels out; the fixed costs are what remains at
N = 0. Each figure is the median over repeats with its range; the ratio Beam / without
Beam is taken within each repeat. The records of the two N2 runs are compared once
(tests/tfrecord_digest.py). Writes benchmarks/results/engines.md.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Dict, List

from benchmarks import procs, report

HERE = os.path.dirname(os.path.abspath(__file__))

KINDS = ('without Beam', 'Beam')
TARGET_CPU = 1.1  # Beam's steady CPU an image over the run without Beam's, at most


def _command(kind: str, manifest: str, out: str, cores: int) -> List[str]:
  cmd = procs.python('-m', 'tfrecorder_component.adapters.cli', 'convert', '-q', manifest, out)
  if kind == 'Beam':
    cmd += ['--beam-arg=--direct_running_mode=multi_processing',
            f'--beam-arg=--direct_num_workers={cores}']
  return cmd


def _cycled_manifest(data, data_root: str, n: int, distinct: int) -> str:
  """A manifest of n rows over the first `distinct` images: row i is the distinct
  manifest's row i mod `distinct`, written beside it (its relative paths hold)."""
  with open(data.write_manifest(data_root, distinct), encoding='utf-8') as f:
    rows = f.read().splitlines(True)
  if len(rows) != distinct:
    raise ValueError(f'expected {distinct} rows in the manifest of {distinct} images')
  path = os.path.join(data_root, f'manifest-{n}-of-{distinct}.csv')
  with open(path, 'w', encoding='utf-8') as f:
    f.writelines(rows[i % distinct] for i in range(n))
  return path


def measure(data_root: str, sizes: List[int], repeats: int, scratch: str,
            image_set: str = 'photo', distinct: int = 0) -> Dict:
  from benchmarks import image_sets  # pylint: disable=g-import-not-at-top
  from tests import tfrecord_digest  # pylint: disable=g-import-not-at-top
  data = image_sets.image_set(image_set)
  n2 = sizes[-1]
  distinct = min(distinct or n2, n2)
  data.generate(data_root, distinct)
  manifests = {n: (data.write_manifest(data_root, n) if n <= distinct else
                   _cycled_manifest(data, data_root, n, distinct)) for n in sizes}
  cores = len(os.sched_getaffinity(0))
  shutil.rmtree(scratch, ignore_errors=True)
  os.makedirs(scratch)
  runs: List[Dict] = []
  identical = None
  try:
    for kind in KINDS:  # warm-up: the page cache and the interpreter's files
      out = os.path.join(scratch, 'warmup')
      procs.run(_command(kind, manifests[sizes[0]], out, cores))
      shutil.rmtree(out, ignore_errors=True)
    for rep in range(repeats):
      for n in sizes:
        outs = {}
        for kind in KINDS:
          out = os.path.join(scratch, f'{kind.replace(" ", "-")}-{rep}-{n}')
          r = procs.run(_command(kind, manifests[n], out, cores))
          runs.append({'kind': kind, 'n': n, 'rep': rep, 'wall_s': r['wall_s'],
                       'cpu_s': r['cpu_s'], 'peak_mb': r['peak_mb']})
          print(f'engines rep {rep + 1} N={n:>6} {kind:<13} {r["wall_s"]:7.2f}s  cpu '
                f'{r["cpu_s"]:7.2f}s  peak {r["peak_mb"]:6.0f} MB', flush=True)
          outs[kind] = out
        if identical is None and n == n2:
          identical = (tfrecord_digest.digest(outs['without Beam'])
                       == tfrecord_digest.digest(outs['Beam']))
          print(f'engines: records of the two N={n} runs identical: '
                f'{"yes" if identical else "NO"}', flush=True)
        for out in outs.values():
          shutil.rmtree(out, ignore_errors=True)
  finally:
    shutil.rmtree(scratch, ignore_errors=True)
  return {'runs': runs, 'identical': identical, 'sizes': sizes, 'repeats': repeats,
          'cores': cores, 'images': data.SHORT, 'distinct': distinct}


def figures(got: Dict) -> Dict:
  runs, (n1, n2) = got['runs'], got['sizes'][-2:]
  pick = lambda kind, n, rep: next(r for r in runs if (r['kind'], r['n'], r['rep'])
                                   == (kind, n, rep))
  per = {k: {'rate': [], 'cpu_ms': [], 'fixed_s': [], 'fixed_cpu_s': []} for k in KINDS}
  ratio_cpu, ratio_rate = [], []
  for rep in range(got['repeats']):
    cpu, rate = {}, {}
    for kind in KINDS:
      steady = procs.marginal(pick(kind, n1, rep), pick(kind, n2, rep), n1, n2)
      if steady is None:
        continue
      rate[kind], cpu[kind] = steady['rate'], steady['cpu_ms']
      for name, values in per[kind].items():
        values.append(steady[name])
    if len(cpu) == len(KINDS):
      ratio_cpu.append(cpu['Beam'] / cpu['without Beam'])
      ratio_rate.append(rate['Beam'] / rate['without Beam'])
  return {'kinds': {k: {name: procs.spread(v) if v else None for name, v in f.items()}
                    for k, f in per.items()},
          'cpu': procs.spread(ratio_cpu) if ratio_cpu else None,
          'rate': procs.spread(ratio_rate) if ratio_rate else None,
          'peak_mb': {k: procs.spread([r['peak_mb'] for r in runs
                                       if (r['kind'], r['n']) == (k, n2)]) for k in KINDS}}


def markdown(got: Dict, figs: Dict) -> str:
  n1, n2 = got['sizes'][-2:]
  opt = lambda s, d, u='': procs.fmt(s, d, u) if s else 'n/a'
  lines = [
      f'The first {n2:,} and {n1:,} {got.get("images", "JPEGs")}'
      + (f' (the first {got["distinct"]:,} listed over again in order past them: each '
         'repeated image is read, converted and reported as a duplicate on both engines)'
         if got.get('distinct', n2) < n2 else '')
      + ', manifest and output on '
      f'local disk; `tfrecorder-component convert` on all {got["cores"]} cores, a fresh '
      'process per run: **without Beam** (default settings) and **Beam** (the same with '
      '`--beam-arg=--direct_running_mode=multi_processing --beam-arg=--direct_num_workers='
      f'{got["cores"]}`). {got["repeats"]} repeat{"s" * (got["repeats"] != 1)}, the runs '
      'alternating; median (min–max) over repeats.',
      '',
      '| run | images/s | CPU ms an image | fixed cost s | fixed CPU s '
      f'| peak MB at N={n2:,} |',
      '|---|---:|---:|---:|---:|---:|']
  for kind in KINDS:
    f = figs['kinds'][kind]
    lines.append(f'| {kind} | {opt(f["rate"], 0)} | {opt(f["cpu_ms"], 3)} | '
                 f'{opt(f["fixed_s"], 1)} | {opt(f["fixed_cpu_s"], 1)} | '
                 f'{figs["peak_mb"][kind]["median"]:,.0f} |')
  held = figs['cpu'] is not None and figs['cpu']['median'] <= TARGET_CPU
  same = {None: 'n/a', True: 'yes', False: '**no**'}[got['identical']]
  lines += [
      '',
      '| target | measured, median (range) | holds |',
      '|---|---:|---|',
      f'| Beam\'s DirectRunner: at most {TARGET_CPU}x the CPU an image without Beam | '
      f'{opt(figs["cpu"], 2, "x")} | {"yes" if held else "no"} |',
      '',
      f'Beam / without Beam, steady rate: {opt(figs["rate"], 2, "x")}. Steady rate: '
      f'(N={n2:,} - N={n1:,}) / (difference of wall times, launch to exit) within one '
      'repeat; CPU an image: the difference of the runs\' CPU time (user and system, the '
      'whole process tree) over the same difference of N; fixed costs: what remains at '
      f'N = 0. Records of the two N={n2:,} runs identical (tests/tfrecord_digest.py): '
      f'{same}.']
  return '\n'.join(lines) + '\n'


def main(argv=None) -> Dict:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='2000,20000',
                      help='N values; the steady rate is taken between the two largest')
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--images', type=int, default=0,
                      help='distinct images to make; a larger N lists them over again '
                      '(default: as many as the largest N)')
  from benchmarks import image_sets  # pylint: disable=g-import-not-at-top
  image_sets.add_arguments(parser)
  parser.add_argument('--scratch', default=os.path.join(HERE, 'out', 'engines'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  args = parser.parse_args(argv)
  sizes = sorted({int(v) for v in args.sizes.split(',') if v.strip()})
  if len(sizes) < 2 or args.repeats < 1:
    parser.error('need two sizes or more and one repeat or more')
  image_sets.resolve(args)
  got = measure(args.data, sizes, args.repeats, args.scratch, args.image_set,
                args.images)
  figs = figures(got)
  report.write_part(args.results, 'engines.md', markdown(got, figs))
  return {'figures': figs, 'identical': got['identical'], 'runs': got['runs']}


if __name__ == '__main__':
  main()
  sys.exit(0)
