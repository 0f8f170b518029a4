"""Where peak memory goes: the pipeline run by parts, and per process with 2 workers.

    .venv/bin/python -m benchmarks.memory_parts [--sizes 5000,50000]

Uses the synthetic images and manifests of `benchmarks.run --image-set synthetic` (run
it once first; --data names another folder of images and manifests). Parts,
each in its own process, DirectRunner in-memory: `rows` (ReadManifestRows only),
`convert` (+ label vocabulary, conversion and writing), `dups` (+ duplicate index),
`full` (ConvertManifests). Then the full pipeline multi-process with 2 workers, peak
resident memory of the runner and of each worker process.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import psutil

from benchmarks import procs

HERE = os.path.dirname(os.path.abspath(__file__))
PARTS = ('rows', 'convert', 'dups', 'full', 'full_2_workers')


def _sample(peaks, stop):
  me = psutil.Process()
  while not stop.is_set():
    procs.tree_rss(me, peaks)
    time.sleep(0.05)


def _part(part: str, manifest: str, out: str) -> dict:
  import apache_beam as beam  # pylint: disable=g-import-not-at-top
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.engines.beam.convert_batches import ConvertBatches
  from tfrecorder_component.engines.beam.vocabulary import LabelVocabulary
  from tfrecorder_component.steps.outputs import STATS
  from tfrecorder_component.engines.beam.pipeline import ConvertManifests
  from tfrecorder_component.engines.beam.read import ReadManifestRows
  from tfrecorder_component.engines.beam.duplicates import FindDuplicates
  from tfrecorder_component.engines.beam.write import WriteSplits
  from tfrecorder_component.options import ConversionOptions, ManifestSource
  # pylint: enable=g-import-not-at-top
  peaks, stop = {}, threading.Event()
  threading.Thread(target=_sample, args=(peaks, stop), daemon=True).start()
  splits = {s: os.path.join(out, f'Split-{s}') for s in ('train', 'eval', 'test')}
  args = (['--direct_running_mode=multi_processing', '--direct_num_workers=2']
          if part == 'full_2_workers' else
          ['--direct_running_mode=in_memory', '--direct_num_workers=1'])
  start = time.perf_counter()
  with beam.Pipeline(options=PipelineOptions(args)) as p:
    if part.startswith('full'):
      _ = p | ConvertManifests([ManifestSource(manifest)], splits, out,
                               os.path.join(out, 'report'))
    else:
      chunks = p | ReadManifestRows([ManifestSource(manifest)], os.path.join(out, 'chunks'))
      if part == 'rows':
        _ = chunks | beam.combiners.Count.Globally()
      else:
        vocabulary = chunks | LabelVocabulary()
        converted = chunks | ConvertBatches(beam.pvalue.AsSingleton(vocabulary),
                                                    ConversionOptions())
        _ = converted.records | WriteSplits(splits)
        if part == 'dups':
          _ = (converted[STATS] | FindDuplicates(os.path.join(out, 'duplicate-index'))
               | beam.combiners.Count.Globally())
  stop.set()
  me = os.getpid()
  named = {('runner' if pid == me else f'worker {pid}'): rss for pid, rss in peaks.items()}
  return {'run_s': round(time.perf_counter() - start, 1),
          **{k: round(v / 2**20) for k, v in sorted(named.items()) if v > 2**24}}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='5000,50000')
  parser.add_argument('--data', default=os.path.join(HERE, 'out', 'data'))
  parser.add_argument('--part', nargs=2, help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.part:
    out = tempfile.mkdtemp()
    try:
      print(json.dumps(_part(args.part[0], args.part[1], out)))
    finally:
      shutil.rmtree(out, ignore_errors=True)
    return 0
  for n in (int(s) for s in args.sizes.split(',')):
    manifest = os.path.join(args.data, f'manifest-{n}.csv')
    if not os.path.exists(manifest):
      raise SystemExit(f'{manifest} is missing: run `python -m benchmarks.run --sizes {n}` first')
    for part in PARTS:
      done = subprocess.run([sys.executable, '-m', 'benchmarks.memory_parts', '--part', part,
                             manifest], capture_output=True, text=True, check=True,
                            cwd=os.path.dirname(HERE),
                            env=dict(os.environ, PYTHONWARNINGS='ignore'))
      print(f'N={n:>6} {part:<15} {done.stdout.strip().splitlines()[-1]}', flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
