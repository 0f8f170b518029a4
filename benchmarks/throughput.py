"""Throughput: the component against the naive loops and the copy limit, side by side.

    .venv/bin/python -m benchmarks.throughput [--sizes 10000,20000] [--repeats 3]
        [--methods naive_gzip,copy,...] [--image-set photo|synthetic]
    .venv/bin/python -m benchmarks.throughput --report-only   (rewrite from throughput.json)

benchmarks/run.py runs it as its `throughput` part. For each repeat, each N and each
method (interleaved, so the host's noise falls on all alike), one fresh process
converts the first N images of the image set: `--image-set photo` (the default: crops
of real photographs at ImageNet-like sizes, about 366 px and 53 KB, benchmarks/photos.py,
cached under benchmarks/out/photos) or `synthetic` (256x256 colour fields, about 34 KB,
benchmarks/data.py, benchmarks/out/data). The steady-state rate of a repeat is the
marginal rate between the two largest N, (N2 - N1) / (t2 - t1), so start-up cancels
out; the fixed cost is what remains at N = 0 (t1 - N1 / rate). Each figure is the median
over repeats with its range, and ratios to the naive GZIP loop are taken within each
repeat. Peak memory is the whole process tree's (the runner and every worker), sampled
every 50 ms. Writes throughput.json, throughput.md and results.png into --results.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from typing import Dict, List

import psutil

from benchmarks import image_sets, procs, report

HERE = os.path.dirname(os.path.abspath(__file__))
METHODS = {
    'naive_gzip': 'naive tf.io.TFRecordWriter loop, GZIP, no decode check (the baseline)',
    'naive_none_check': 'naive loop, no compression, same decode check as the component',
    'naive_gzip_check': 'naive loop, GZIP, same decode check as the component',
    'copy': 'copy limit: read every byte, write once',
    'localdag_default': 'Importer -> ImageExampleGen, LocalDagRunner, default settings',
    'beam_inmemory_1': 'component pipeline, DirectRunner in memory, 1 worker',
    'beam_multiproc_2': 'component pipeline, DirectRunner multi-process, 2 workers',
    'beam_multiproc_2_noverify': 'same, verify_decode=False (header probe only)',
}
DEFAULT_METHODS = ('naive_gzip', 'naive_none_check', 'copy', 'localdag_default',
                   'beam_inmemory_1', 'beam_multiproc_2')
BEAM_ARGS = {
    'beam_inmemory_1': ['--direct_running_mode=in_memory', '--direct_num_workers=1'],
    'beam_multiproc_2': ['--direct_running_mode=multi_processing', '--direct_num_workers=2'],
    'beam_multiproc_2_noverify': ['--direct_running_mode=multi_processing',
                                  '--direct_num_workers=2'],
}
SAVED = 'throughput.json'


# ---------------------------------------------------------------- worker side
def _worker(method: str, manifest: str, output: str) -> Dict[str, float]:
  t0 = time.perf_counter()
  os.makedirs(output, exist_ok=True)
  if method == 'copy':
    from benchmarks import baseline  # pylint: disable=g-import-not-at-top
    t1 = time.perf_counter()
    n = baseline.copy_limit(manifest, os.path.join(output, 'copy.bin'))
  elif method.startswith('naive'):
    from benchmarks import baseline  # pylint: disable=g-import-not-at-top
    t1 = time.perf_counter()
    gzip = 'gzip' in method
    n = baseline.convert(manifest, os.path.join(output, 'data.tfrecord' + '.gz' * gzip),
                         'GZIP' if gzip else '', decode_check=method.endswith('check'))
  else:
    import apache_beam as beam  # pylint: disable=g-import-not-at-top
    from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
    from tfrecorder_component.output import paths as output_paths  # pylint: disable=g-import-not-at-top
    from tfrecorder_component.engines.beam.pipeline import ConvertManifests  # pylint: disable=g-import-not-at-top
    from tfrecorder_component.options import ConversionOptions, ManifestSource  # pylint: disable=g-import-not-at-top
    t1 = time.perf_counter()
    splits = output_paths.split_dirs(output, ('train', 'eval', 'test'))
    options = ConversionOptions(verify_decode=not method.endswith('noverify'))
    report_dir = os.path.join(output, output_paths.REPORT_DIR)
    with beam.Pipeline(options=PipelineOptions(BEAM_ARGS[method])) as p:
      _ = p | ConvertManifests([ManifestSource(manifest)], splits, output, report_dir, options)
    n = output_paths.read_summary(report_dir)['records_written']
  t2 = time.perf_counter()
  return {'import_s': t1 - t0, 'run_s': t2 - t1, 'records': n}


# ---------------------------------------------------------------- driver side
def _measure(method: str, manifest: str, output: str) -> Dict[str, float]:
  shutil.rmtree(output, ignore_errors=True)
  if method == 'localdag_default':
    cmd = procs.python('-m', 'benchmarks.localdag', manifest, output)
  else:
    cmd = procs.python('-m', 'benchmarks.throughput', '--worker', method, manifest, output)
  r = procs.run(cmd)
  result = json.loads(r['stdout'].strip().splitlines()[-1])
  size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(output) for f in fs
             if ('tfrecord' in f or f == 'copy.bin'))
  result.update(wall_s=r['wall_s'], peak_mb=r['peak_mb'], output_mb=size / 2**20)
  shutil.rmtree(output, ignore_errors=True)
  return result


def throughput(args, methods: List[str]) -> None:
  data = image_sets.image_set(args.image_set)
  sizes = sorted(int(s) for s in args.sizes.split(','))
  t = time.perf_counter()
  data.generate(args.data, max(sizes))
  input_mb = {n: sum(os.path.getsize(data.image_path(args.data, i)) for i in range(n)) / 2**20
              for n in sizes}
  print(f'data: {max(sizes)} images ready in {time.perf_counter() - t:.0f}s '
        f'({input_mb[max(sizes)] / max(sizes) * 1024:.1f} KB each)', flush=True)
  runs = []
  for rep in range(args.repeats):
    for n in sizes:
      manifest = data.write_manifest(args.data, n)
      for method in methods:
        r = _measure(method, manifest, os.path.join(args.scratch, method))
        if r['records'] != n:
          raise RuntimeError(f'{method} wrote {r["records"]} records of {n}')
        r.update(method=method, n=n, rep=rep, input_mb=input_mb[n])
        runs.append(r)
        print(f'rep {rep + 1} N={n:>6} {method:<26} run {r["run_s"]:7.1f}s  '
              f'peak {r["peak_mb"]:6.0f} MB  out {r["output_mb"]:7.1f} MB', flush=True)
  machine = (f'{platform.machine()}, {psutil.cpu_count()} cores, '
             f'{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}')
  os.makedirs(args.results, exist_ok=True)
  with open(os.path.join(args.results, SAVED), 'w') as f:
    json.dump({'machine': machine, 'images': data.DESCRIPTION, 'runs': runs}, f, indent=1)
  report.write(runs, METHODS, machine, args.results, data.DESCRIPTION)


def rewrite(results: str) -> None:
  """throughput.md and results.png again from the runs saved in throughput.json."""
  with open(os.path.join(results, SAVED)) as f:
    saved = json.load(f)
  report.write(saved['runs'], METHODS, saved['machine'], results, saved.get('images'))


def add_arguments(parser) -> None:
  """This part's own options: `--sizes`, `--repeats`, `--methods` (`benchmarks.run` takes
  them too, and hands them on)."""
  parser.add_argument('--sizes', default='10000,20000',
                      help='N values; the steady rate is taken between the two largest')
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--methods', default=','.join(DEFAULT_METHODS),
                      help=f'any of {",".join(METHODS)}')


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  add_arguments(parser)
  image_sets.add_arguments(parser)
  parser.add_argument('--scratch', default=os.path.join(HERE, 'out', 'scratch'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  parser.add_argument('--report-only', action='store_true',
                      help='rewrite throughput.md and results.png from throughput.json')
  # One measured conversion in this process: what _measure launches for each run.
  parser.add_argument('--worker', nargs=3, metavar=('METHOD', 'MANIFEST', 'OUTPUT'),
                      help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.worker:
    print(json.dumps(_worker(*args.worker)))
    return 0
  methods = args.methods.split(',')
  unknown = set(methods) - set(METHODS)
  if unknown:
    parser.error(f'unknown method: {", ".join(sorted(unknown))}')
  if args.report_only:
    rewrite(args.results)
  else:
    image_sets.resolve(args)
    throughput(args, methods)
  return 0


if __name__ == '__main__':
  sys.exit(main())
