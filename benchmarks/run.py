"""Benchmark: the component against the naive loops and the copy limit, side by side.

    .venv/bin/python -m benchmarks.run [--sizes 10000,20000] [--repeats 3]
        [--parts throughput,startup,memory,stages,masks,remote,engines] [--image-set photo]
    .venv/bin/python -m benchmarks.run --parts peers     (TFDS, Ray Data, ...: ~30 minutes)
    .venv/bin/python -m benchmarks.run --parts formats   (Datumaro on YOLO and COCO)

`throughput` (benchmarks/throughput.py): for each repeat, each N and each method
(interleaved), one fresh process converts the first N images of the image set, and the
steady rate between the two largest N and the fixed cost at N = 0 are compared with the
naive GZIP loop's; `--image-set photo` (the default: crops of real photographs at
ImageNet-like sizes, about 366 px and 53 KB, benchmarks/photos.py, cached under
benchmarks/out/photos) or `synthetic` (256x256 colour fields, about 34 KB,
benchmarks/data.py, benchmarks/out/data).

The other parts, each a module that also runs on its own (`python -m benchmarks.PART
--help`): `startup` (benchmarks/startup.py: --help, a 200-image CLI run and a 200-image
LocalDagRunner run, median of 3), `timeline` (benchmarks/timeline.py: where
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
import importlib
import os
import sys
from typing import List

from benchmarks import data, image_sets, report

HERE = os.path.dirname(os.path.abspath(__file__))
# Each part by name: the module whose main(argv) runs it, imported by name when it runs
# (no part imports this runner, so the parts stay free of import cycles). In the order
# they run.
PARTS = {
    'throughput': 'benchmarks.throughput',
    'startup': 'benchmarks.startup',
    'memory': 'benchmarks.memory',
    'stages': 'benchmarks.stages',
    'masks': 'benchmarks.masks',
    'remote': 'benchmarks.remote',
    'engines': 'benchmarks.engines',
    'timeline': 'benchmarks.timeline',
    'peers': 'benchmarks.peers',
    'formats': 'benchmarks.formats',
}
# peers (half an hour) and formats (Datumaro in its own environment): by name only
DEFAULT_PARTS = tuple(p for p in PARTS if p not in ('peers', 'formats'))


def _part(name: str):
  return importlib.import_module(PARTS[name])


def part_arguments(name: str, args: argparse.Namespace) -> List[str]:
  """The command line `run` gives part `name` from its own arguments."""
  images = ['--image-set', args.image_set, '--data', args.data]
  # masks and formats: annotations drawn for the 256x256 synthetic images
  synthetic = args.data if args.image_set == 'synthetic' else data.DEFAULT_ROOT
  results = ['--results', args.results]
  if name == 'throughput':
    return ['--sizes', args.sizes, '--repeats', str(args.repeats), '--methods',
            args.methods, *images, '--scratch', args.scratch, *results]
  if name == 'memory':
    return ['--data', args.tiny_data, *results]
  if name == 'masks':
    return ['--data', synthetic, *results]
  if name == 'peers':
    return [*images, '--scratch', args.scratch, *results]
  if name == 'formats':
    return ['--data', synthetic, '--scratch', args.scratch, *results]
  return [*images, *results]


def main(argv=None) -> int:
  # --methods is the throughput part's: its help lists that part's methods, and a wrong
  # name stops the run before any part starts, even when throughput is not among them.
  throughput = _part('throughput')
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  throughput.add_arguments(parser)
  parser.add_argument('--parts', default=','.join(DEFAULT_PARTS),
                      help=f'any of {",".join(PARTS)} (peers and formats only when named)')
  image_sets.add_arguments(parser)
  parser.add_argument('--tiny-data', default=os.path.join(HERE, 'out', 'tiny'),
                      help="the memory part's 4x4 PNGs and COCO JSON")
  parser.add_argument('--scratch', default=os.path.join(HERE, 'out', 'scratch'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  parser.add_argument('--report-only', action='store_true',
                      help='rewrite the reports from the saved results')
  # Kept for command lines written before the throughput part had its own module.
  parser.add_argument('--worker', nargs=3, metavar=('METHOD', 'MANIFEST', 'OUTPUT'),
                      help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.worker:
    return throughput.main(['--worker', *args.worker])
  image_sets.resolve(args)
  parts = args.parts.split(',')
  unknown = set(parts) - set(PARTS) | set(args.methods.split(',')) - set(throughput.METHODS)
  if unknown:
    parser.error(f'unknown part or method: {", ".join(sorted(unknown))}')
  if args.report_only:
    throughput.main(['--report-only', '--results', args.results])
  else:
    for name in PARTS:
      if name in parts:
        _part(name).main(part_arguments(name, args))
  print(report.assemble(args.results))
  return 0


if __name__ == '__main__':
  sys.exit(main())
