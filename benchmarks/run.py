"""Benchmark: the component's Beam pipeline against the naive loop and the copy limit.

    .venv/bin/python -m benchmarks.run [--sizes 1000,5000,10000,50000]

For each N it converts the first N synthetic 256x256 JPEGs with every method, each in
its own process, side by side in one run, and measures wall time, peak memory of the
whole process tree (sampled every 50 ms) and output bytes. Start-up is measured apart:
imports for the single-process methods, and for Beam the time of the same pipeline on
20 images (runner and worker start-up). Steady-state throughput at each N is the
marginal rate since the next smaller N, so fixed costs cancel out. Writes benchmarks/results.md and benchmarks/results.png.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from typing import Dict, List

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
METHODS = {
    'naive_gzip': 'naive tf.io.TFRecordWriter loop, GZIP (baseline)',
    'naive_none': 'naive loop, no compression',
    'copy': 'copy limit: read every byte, write once',
    'beam_inmemory_1': 'component pipeline, DirectRunner in-memory, 1 worker',
    'beam_multiproc_1': 'component pipeline, DirectRunner multi-process, 1 worker',
    'beam_multiproc_2': 'component pipeline, DirectRunner multi-process, 2 workers',
    'beam_multiproc_2_noverify': 'same, 2 workers, verify_decode=False (header probe only)',
}
BEAM_ARGS = {
    'beam_inmemory_1': ['--direct_running_mode=in_memory', '--direct_num_workers=1'],
    'beam_multiproc_1': ['--direct_running_mode=multi_processing', '--direct_num_workers=1'],
    'beam_multiproc_2': ['--direct_running_mode=multi_processing', '--direct_num_workers=2'],
    'beam_multiproc_2_noverify': ['--direct_running_mode=multi_processing',
                                  '--direct_num_workers=2'],
}
STARTUP_N = 20


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
    import tensorflow  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
    t1 = time.perf_counter()
    n = baseline.convert(manifest, os.path.join(output, 'data.tfrecord.gz'),
                         'GZIP' if method == 'naive_gzip' else '')
  else:
    import apache_beam as beam  # pylint: disable=g-import-not-at-top
    from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
    from tfrecorder_component.beam.pipeline import ConvertManifests  # pylint: disable=g-import-not-at-top
    from tfrecorder_component.options import ManifestSource  # pylint: disable=g-import-not-at-top
    t1 = time.perf_counter()
    from tfrecorder_component.options import ConversionOptions  # pylint: disable=g-import-not-at-top
    splits = {s: os.path.join(output, f'Split-{s}') for s in ('train', 'eval', 'test')}
    options = ConversionOptions(verify_decode=not method.endswith('noverify'))
    with beam.Pipeline(options=PipelineOptions(BEAM_ARGS[method])) as p:
      _ = p | ConvertManifests([ManifestSource(manifest)], splits, output,
                               os.path.join(output, 'report'), options)
    with open(os.path.join(output, 'report', 'summary.json')) as f:
      n = json.load(f)['records_written']
  t2 = time.perf_counter()
  return {'import_s': t1 - t0, 'run_s': t2 - t1, 'records': n}


# ---------------------------------------------------------------- driver side
def _tree_rss(proc: psutil.Process) -> int:
  total = 0
  for p in [proc] + proc.children(recursive=True):
    try:
      total += p.memory_info().rss
    except psutil.Error:
      pass
  return total


def _measure(method: str, manifest: str, output: str) -> Dict[str, float]:
  shutil.rmtree(output, ignore_errors=True)
  cmd = [sys.executable, '-m', 'benchmarks.run', '--worker', method, manifest, output]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', PYTHONWARNINGS='ignore')
  start = time.perf_counter()
  proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          cwd=os.path.dirname(HERE))
  ps = psutil.Process(proc.pid)
  peak = 0
  while proc.poll() is None:
    peak = max(peak, _tree_rss(ps))
    time.sleep(0.05)
  wall = time.perf_counter() - start
  out, err = proc.communicate()
  if proc.returncode:
    raise RuntimeError(f'{method} failed:\n{err.decode()[-3000:]}')
  result = json.loads(out.decode().strip().splitlines()[-1])
  size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(output) for f in fs
             if 'report' not in d and f not in ('labels.txt', 'label_map.pbtxt'))
  result.update(wall_s=wall, peak_mb=peak / 2**20, output_mb=size / 2**20)
  shutil.rmtree(output, ignore_errors=True)
  return result


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='1000,5000,10000,50000')
  parser.add_argument('--methods', default=','.join(METHODS))
  parser.add_argument('--data', default=os.path.join(HERE, 'out', 'data'))
  parser.add_argument('--scratch', default=os.path.join(HERE, 'out', 'scratch'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  parser.add_argument('--report-only', action='store_true',
                      help='rewrite results.md and results.png from results.json')
  parser.add_argument('--worker', nargs=3, metavar=('METHOD', 'MANIFEST', 'OUTPUT'),
                      help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.worker:
    print(json.dumps(_worker(*args.worker)))
    return 0

  from benchmarks import data, report  # pylint: disable=g-import-not-at-top
  if args.report_only:
    with open(os.path.join(args.results, 'results.json')) as f:
      saved = json.load(f)
    report.write(saved['results'], saved['machine'], args.results, STARTUP_N)
    print(open(os.path.join(args.results, 'results.md')).read())
    return 0
  sizes = sorted(int(s) for s in args.sizes.split(','))
  methods = args.methods.split(',')
  t = time.perf_counter()
  data.generate(args.data, max(sizes))
  input_mb = {n: sum(os.path.getsize(data.image_path(args.data, i)) for i in range(n)) / 2**20
              for n in sizes + [STARTUP_N]}
  print(f'data: {max(sizes)} images ready in {time.perf_counter() - t:.0f}s '
        f'({input_mb[max(sizes)] / max(sizes) * 1024:.1f} KB each)', flush=True)
  results: List[Dict] = []
  startup = {}
  for method in methods:
    if method.startswith('beam'):
      r = _measure(method, data.write_manifest(args.data, STARTUP_N),
                   os.path.join(args.scratch, method))
      startup[method] = r['run_s']
      print(f'start-up {method}: {r["run_s"]:.1f}s on {STARTUP_N} images', flush=True)
  for n in sizes:
    manifest = data.write_manifest(args.data, n)
    for method in methods:
      r = _measure(method, manifest, os.path.join(args.scratch, method))
      assert r['records'] == n, (method, r)
      r.update(method=method, n=n, input_mb=input_mb[n], startup_s=startup.get(method, 0.0))
      results.append(r)
      print(f'N={n:>6} {method:<18} run {r["run_s"]:7.1f}s  peak {r["peak_mb"]:6.0f} MB  '
            f'out {r["output_mb"]:7.1f} MB', flush=True)
  machine = (f'{platform.machine()}, {psutil.cpu_count()} cores, '
             f'{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}')
  os.makedirs(args.results, exist_ok=True)
  with open(os.path.join(args.results, 'results.json'), 'w') as f:
    json.dump({'machine': machine, 'results': results}, f, indent=1)
  report.write(results, machine, args.results, STARTUP_N)
  print(open(os.path.join(args.results, 'results.md')).read())
  from benchmarks import stages  # pylint: disable=g-import-not-at-top
  stages.main(['--data', args.data, '--results', args.results])
  return 0


if __name__ == '__main__':
  sys.exit(main())
