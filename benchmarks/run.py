"""Benchmark: the component against the naive loops and the copy limit, side by side.

    .venv/bin/python -m benchmarks.run [--sizes 10000,20000] [--repeats 3]
        [--parts throughput,startup,memory,stages,masks,remote,engines] [--image-set photo]
    .venv/bin/python -m benchmarks.run --parts peers     (TFDS, Ray Data, ...: ~30 minutes)
    .venv/bin/python -m benchmarks.run --parts formats   (Datumaro on YOLO and COCO)

Throughput: for each repeat, each N and each method (interleaved, so the host's noise
falls on all alike), one fresh process converts the first N images of the image set:
`--image-set photo` (the default: crops of real photographs at ImageNet-like sizes,
about 366 px and 53 KB, benchmarks/photos.py, cached under benchmarks/out/photos) or
`synthetic` (256x256 colour fields, about 34 KB, benchmarks/data.py, benchmarks/out/data).
The steady-state rate of a repeat is the marginal rate between the two largest N, (N2 -
N1) / (t2 - t1), so start-up cancels out; the fixed cost is what remains at N = 0
(t1 - N1 / rate). Each figure is the median over repeats with its range, and ratios to
the naive GZIP loop are taken within each repeat. Peak memory is the whole process
tree's (the runner and every worker), sampled every 50 ms.

The other parts: `startup` (benchmarks/startup.py: --help, a 200-image CLI run and a
200-image LocalDagRunner run, median of 3), `timeline` (benchmarks/timeline.py: where
a CLI run's seconds go, launch to exit, at 200 and 20,000 images), `memory` (benchmarks/memory.py: convert() at
20,000 and 200,000 rows, a 1 GB-class COCO JSON), `stages` (benchmarks/stages.py: the
cost of each step per image), `masks` (benchmarks/masks.py: a COCO JSON with and
without instance masks and keypoints) and `remote` (benchmarks/remote.py: the CLI's
steady rate and CPU an image with the images, then the manifest, images and output, on
gs:// and s3://, real servers behind a proxy adding 20 ms a request, against local disk),
`engines` (benchmarks/engines.py: the CLI's steady rate and CPU an image without Beam and
on Beam's multi-process DirectRunner, the same local images). `peers` (benchmarks/peers.py: the CLI,
convert() and LocalDagRunner against a TFDS builder, Ray Data, the naive loop and two
floors at 2,000, 20,000 and 200,000 images, whole processes, 3 repeats) takes about half
an hour, more when it first makes the 200,000 images, so it runs only when --parts names
it; so does `formats` (benchmarks/formats.py: the same YOLO and COCO datasets converted by
this project's CLI and by Datumaro's `datum convert ... -f tf_detection_api`, in the
reference readers' environment, scripts/oracles-env; both outputs read back and compared).
The image set goes to every part that times conversions of JPEGs (throughput,
startup, timeline, stages, remote, engines, peers); masks and formats draw annotations on the
256x256 synthetic images and always use them (from --data with `--image-set synthetic`,
else benchmarks/out/data). Writes benchmarks/results/results.md (all parts),
results.png and one file per part, each saying which images it converted.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from typing import Dict

import psutil

from benchmarks import procs

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
PARTS = ('throughput', 'startup', 'timeline', 'memory', 'stages', 'masks', 'remote', 'engines',
         'peers', 'formats')
# peers (half an hour) and formats (Datumaro in its own environment): by name only
DEFAULT_PARTS = tuple(p for p in PARTS if p not in ('peers', 'formats'))


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
    from tfrecorder_component import layout  # pylint: disable=g-import-not-at-top
    from tfrecorder_component.beam.pipeline import ConvertManifests  # pylint: disable=g-import-not-at-top
    from tfrecorder_component.options import ConversionOptions, ManifestSource  # pylint: disable=g-import-not-at-top
    t1 = time.perf_counter()
    splits = layout.split_dirs(output, ('train', 'eval', 'test'))
    options = ConversionOptions(verify_decode=not method.endswith('noverify'))
    report = os.path.join(output, layout.REPORT_DIR)
    with beam.Pipeline(options=PipelineOptions(BEAM_ARGS[method])) as p:
      _ = p | ConvertManifests([ManifestSource(manifest)], splits, output, report, options)
    n = layout.read_summary(report)['records_written']
  t2 = time.perf_counter()
  return {'import_s': t1 - t0, 'run_s': t2 - t1, 'records': n}


# ---------------------------------------------------------------- driver side
def _measure(method: str, manifest: str, output: str) -> Dict[str, float]:
  shutil.rmtree(output, ignore_errors=True)
  if method == 'localdag_default':
    cmd = procs.python('-m', 'benchmarks.localdag', manifest, output)
  else:
    cmd = procs.python('-m', 'benchmarks.run', '--worker', method, manifest, output)
  r = procs.run(cmd)
  result = json.loads(r['stdout'].strip().splitlines()[-1])
  size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(output) for f in fs
             if ('tfrecord' in f or f == 'copy.bin'))
  result.update(wall_s=r['wall_s'], peak_mb=r['peak_mb'], output_mb=size / 2**20)
  shutil.rmtree(output, ignore_errors=True)
  return result


def throughput(args, methods) -> None:
  from benchmarks import data as data_lib, report  # pylint: disable=g-import-not-at-top
  data = data_lib.image_set(args.image_set)
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
  with open(os.path.join(args.results, 'throughput.json'), 'w') as f:
    json.dump({'machine': machine, 'images': data.DESCRIPTION, 'runs': runs}, f, indent=1)
  report.write(runs, machine, args.results, data.DESCRIPTION)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='10000,20000',
                      help='N values; the steady rate is taken between the two largest')
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--methods', default=','.join(DEFAULT_METHODS),
                      help=f'any of {",".join(METHODS)}')
  parser.add_argument('--parts', default=','.join(DEFAULT_PARTS),
                      help=f'any of {",".join(PARTS)} (peers and formats only when named)')
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  data.add_arguments(parser)
  parser.add_argument('--tiny-data', default=os.path.join(HERE, 'out', 'tiny'),
                      help="the memory part's 4x4 PNGs and COCO JSON")
  parser.add_argument('--scratch', default=os.path.join(HERE, 'out', 'scratch'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  parser.add_argument('--report-only', action='store_true',
                      help='rewrite the reports from the saved results')
  parser.add_argument('--worker', nargs=3, metavar=('METHOD', 'MANIFEST', 'OUTPUT'),
                      help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.worker:
    print(json.dumps(_worker(*args.worker)))
    return 0
  data.resolve(args)
  images = ['--image-set', args.image_set, '--data', args.data]
  # masks and formats: annotations drawn for the 256x256 synthetic images
  synthetic = args.data if args.image_set == 'synthetic' else data.DEFAULT_ROOT
  from benchmarks import report  # pylint: disable=g-import-not-at-top
  parts = args.parts.split(',')
  unknown = set(parts) - set(PARTS) | set(args.methods.split(',')) - set(METHODS)
  if unknown:
    parser.error(f'unknown part or method: {", ".join(sorted(unknown))}')
  if args.report_only:
    with open(os.path.join(args.results, 'throughput.json')) as f:
      saved = json.load(f)
    report.write(saved['runs'], saved['machine'], args.results, saved.get('images'))
  else:
    if 'throughput' in parts:
      throughput(args, args.methods.split(','))
    if 'startup' in parts:
      from benchmarks import startup  # pylint: disable=g-import-not-at-top
      startup.main([*images, '--results', args.results])
    if 'memory' in parts:
      from benchmarks import memory  # pylint: disable=g-import-not-at-top
      memory.main(['--data', args.tiny_data, '--results', args.results])
    if 'stages' in parts:
      from benchmarks import stages  # pylint: disable=g-import-not-at-top
      stages.main([*images, '--results', args.results])
    if 'masks' in parts:
      from benchmarks import masks  # pylint: disable=g-import-not-at-top
      masks.main(['--data', synthetic, '--results', args.results])
    if 'remote' in parts:
      from benchmarks import remote  # pylint: disable=g-import-not-at-top
      remote.main([*images, '--results', args.results])
    if 'engines' in parts:
      from benchmarks import engines  # pylint: disable=g-import-not-at-top
      engines.main([*images, '--results', args.results])
    if 'timeline' in parts:
      from benchmarks import timeline  # pylint: disable=g-import-not-at-top
      timeline.main([*images, '--results', args.results])
    if 'peers' in parts:
      from benchmarks import peers  # pylint: disable=g-import-not-at-top
      peers.main([*images, '--scratch', args.scratch, '--results', args.results])
    if 'formats' in parts:
      from benchmarks import formats  # pylint: disable=g-import-not-at-top
      formats.main(['--data', synthetic, '--scratch', args.scratch,
                    '--results', args.results])
  print(report.assemble(args.results))
  return 0


if __name__ == '__main__':
  sys.exit(main())
