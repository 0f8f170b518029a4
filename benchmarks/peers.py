"""Peers: the same conversion with the tools users would otherwise reach for, side by side.

    .venv/bin/python -m benchmarks.peers [--sizes 2000,20000,200000] [--repeats 3]
        [--methods cli,tfds,...] [--methods-at-largest cli,tfds,floor] [--largest-from 100000]
        [--image-set photo|synthetic]
    .venv/bin/python -m benchmarks.run --parts peers     (the same, from the benchmark)

Every method reads the same AutoML CSV of the first N images of the image set: by default
photo-like JPEGs (benchmarks/photos.py: crops of real photographs at ImageNet-like sizes,
about 366 px and 53 KB, some progressive and some 4:4:4; cached under
benchmarks/out/photos), or with `--image-set synthetic` the 256x256 synthetic JPEGs of
benchmarks/data.py (benchmarks/out/data); `ML_USE,IMAGE_URI,LABEL`, no header, ML_USE
empty, URIs relative to the manifest's folder. Each method writes a fresh output folder,
in a fresh process timed from launch to exit (interpreter and imports included), with
the peak resident memory of the largest single process and of the whole process tree
(procs.run, sampled every 50 ms).
Then the output is read back and its records counted (TFRecord frames, both checksums
checked; tar members for WebDataset): a count other than N fails the run.

Ours: `tfrecorder-component convert` with default settings (the baseline of the
ratios), the same with `--no-verify-decode`, `tfrecorder_component.convert()` from a
script, and Importer -> ImageExampleGen on LocalDagRunner (benchmarks/localdag.py).
Peers, in their own virtual environment (scripts/peers-env, pinned by
benchmarks/peers-requirements.lock, kept in ~/.cache/tfrecorder-component/peers-venv):
a TFDS GeneratorBasedBuilder with default settings (benchmarks/peers/tfds_images.py),
Ray Data read_csv -> map_batches -> write_tfrecords (benchmarks/peers/ray_images.py),
and a WebDataset ShardWriter in 2 processes writing tar shards, no Example
(benchmarks/peers/webdataset_floor.py). In the product's environment: the naive GZIP
tf.io.TFRecordWriter loop (benchmarks/baseline.py) and the work-only floor (read, the
product's own decode check `probe_image(data, decode=True)`, SHA-256, Example, TFRecord
frame in 2 plain processes: benchmarks/peers/floor.py).

Repeats are interleaved (for each repeat, each N, each method), so the host's noise
falls on all alike; the page cache holds the images before the first timed run. Sizes
of --largest-from images or more run only --methods-at-largest (200,000 images of every
method, 3 times, would take hours). Ratios to our CLI and to TFDS are taken within each
repeat. Writes benchmarks/results/peers.json (every run), peers.md (a table per N) and
peers.png. The default sizes take about half an hour on 2 cores (2,000 and 20,000 images
every method: 3.5 minutes a repeat with the synthetic images), more the first time,
when the 200,000 images are made (photo-like: about 10 GB under benchmarks/out/photos,
some 20 ms an image on one core; synthetic: about 7 GB under benchmarks/out/data);
benchmarks.run leaves this part out unless --parts names it.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import time
from typing import Dict, List, Optional

import google_crc32c
import psutil

from benchmarks import procs

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, 'peers')
BASELINE = 'cli'
# method: (what it is, environment, output files relative to the output folder)
METHODS = {
    'cli': ('ours: `tfrecorder-component convert`, default settings', 'product',
            'Split-*/data_tfrecord-*.gz'),
    'cli_noverify': ('ours: `convert --no-verify-decode`', 'product',
                     'Split-*/data_tfrecord-*.gz'),
    'convert_py': ('ours: `tfrecorder_component.convert()` from a script', 'product',
                   'Split-*/data_tfrecord-*.gz'),
    'localdag': ('ours: Importer -> ImageExampleGen, LocalDagRunner', 'product',
                 '**/Split-*/data_tfrecord-*.gz'),
    'tfds': ('TFDS GeneratorBasedBuilder, default settings (1 process)', 'peers',
             '**/*.tfrecord-*'),
    # Ray 2.40's TFRecord writer names its files *.tar (its default file_format); they
    # hold TFRecord frames.
    'ray': ('Ray Data: read_csv -> map_batches -> write_tfrecords, 2 CPUs', 'peers', '*.tar'),
    'naive_gzip': ('naive tf.io.TFRecordWriter loop, GZIP (1 process)', 'product',
                   'data.tfrecord.gz'),
    'floor': ('floor: read, our decode check, SHA-256, Example, frame; 2 processes', 'product',
              'part-*.tfrecord'),
    'webdataset': ('floor: WebDataset ShardWriter, bytes only, no Example; 2 processes',
                   'peers', '*.tar'),
}
LARGEST = ('cli', 'tfds', 'floor')
# Ray sends usage statistics to its makers by default: off, as this machine is offline.
ENV = {'ray': {'RAY_USAGE_STATS_ENABLED': '0'}}
CONVERT_PY = 'import sys, tfrecorder_component as trc; trc.convert(sys.argv[1], sys.argv[2])'


def peers_python() -> str:
  """The peers' interpreter, made by scripts/peers-env if missing or stale."""
  t = time.perf_counter()
  out = subprocess.run([os.path.join(procs.ROOT, 'scripts', 'peers-env')], check=True,
                       stdout=subprocess.PIPE, text=True).stdout
  python = out.strip().splitlines()[-1]
  print(f'peers: environment {os.path.dirname(os.path.dirname(python))} ready in '
        f'{time.perf_counter() - t:.0f}s', flush=True)
  return python


def command(method: str, manifest: str, out: str, peers: Optional[str]) -> List[str]:
  """The command line of one method, run from the repository root."""
  bin_dir = os.path.dirname(sys.executable)
  if method in ('cli', 'cli_noverify'):
    return [os.path.join(bin_dir, 'tfrecorder-component'), 'convert', manifest, out,
            *(['--no-verify-decode'] if method == 'cli_noverify' else [])]
  if method == 'convert_py':
    return procs.python('-c', CONVERT_PY, manifest, out)
  if method == 'localdag':
    return procs.python('-m', 'benchmarks.localdag', manifest, out)
  if method == 'naive_gzip':
    return procs.python('-m', 'benchmarks.throughput', '--worker', 'naive_gzip', manifest, out)
  if method == 'floor':
    return procs.python(os.path.join(PEERS, 'floor.py'), manifest, out, '2')
  script = {'tfds': 'tfds_images.py', 'ray': 'ray_images.py',
            'webdataset': 'webdataset_floor.py'}[method]
  extra = ['2'] if method == 'webdataset' else []
  return [peers, os.path.join(PEERS, script), manifest, out, *extra]


# ---------------------------------------------------------------- reading back
def _mask(crc: int) -> int:
  return (((crc >> 15) | (crc << 17)) + 0xa282ead8) & 0xffffffff


def count_tfrecords(path: str) -> int:
  """Records in one TFRecord file (GZIP when it ends in .gz), both checksums checked."""
  n = 0
  with (gzip.open if path.endswith('.gz') else open)(path, 'rb') as f:
    while True:
      head = f.read(12)
      if not head:
        return n
      if len(head) < 12:
        raise ValueError(f'{path}: truncated frame header after {n} records')
      length, crc = struct.unpack('<QI', head)
      if _mask(google_crc32c.value(head[:8])) != crc:
        raise ValueError(f'{path}: bad length checksum at record {n}')
      body = f.read(length + 4)
      if len(body) < length + 4:
        raise ValueError(f'{path}: truncated record {n}')
      if _mask(google_crc32c.value(body[:length])) != struct.unpack('<I', body[length:])[0]:
        raise ValueError(f'{path}: bad data checksum at record {n}')
      n += 1


def count_output(method: str, out: str) -> Dict[str, float]:
  """Records (or WebDataset samples) and bytes of one method's output folder."""
  files = sorted(glob.glob(os.path.join(out, METHODS[method][2]), recursive=True))
  if not files:
    raise RuntimeError(f'{method}: no output files {METHODS[method][2]} under {out}')
  if method == 'webdataset':
    records = 0
    for path in files:
      with tarfile.open(path) as tar:
        records += sum(1 for m in tar if m.name.endswith('.jpg'))
  else:
    records = sum(count_tfrecords(path) for path in files)
  return {'records': records, 'files': len(files),
          'output_mb': sum(os.path.getsize(p) for p in files) / 2**20}


# ---------------------------------------------------------------- measuring
def measure(method: str, manifest: str, out: str, peers: Optional[str]) -> Dict[str, float]:
  shutil.rmtree(out, ignore_errors=True)
  os.makedirs(os.path.dirname(out), exist_ok=True)
  r = procs.run(command(method, manifest, out, peers), env=ENV.get(method))
  result = {k: r[k] for k in ('wall_s', 'peak_mb', 'largest_mb', 'process_mb', 'child_mb')}
  result.update(count_output(method, out))
  shutil.rmtree(out, ignore_errors=True)
  return result


def warm_cache(root: str, n: int) -> float:
  """Reads the first n images once, so every timed run finds them in the page cache."""
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  total = 0
  for i in range(n):
    with open(data.image_path(root, i), 'rb') as f:
      total += len(f.read())
  return total / 2**20


def check_disk(root: str, scratch: str, n: int, kb: float = 36) -> None:
  """Fails before generating when the data and the largest outputs would not fit (`kb`:
  the image set's mean KB an image)."""
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  missing = sum(1 for i in range(0, n, 1000) if not os.path.exists(data.image_path(root, i)))
  need = (missing * 1000 + 2 * n) * kb * 2**10  # new images, one output and its temporaries
  os.makedirs(scratch, exist_ok=True)
  free = shutil.disk_usage(scratch).free
  if need > free * 0.9:
    raise RuntimeError(f'N={n:,} needs about {need / 2**30:.1f} GiB, '
                       f'{free / 2**30:.1f} GiB free under {scratch}')


def versions() -> str:
  with open(os.path.join(HERE, 'peers-requirements.lock')) as f:
    pins = dict(re.findall(r'^([\w.-]+)==(\S+)', f.read(), re.M))
  return ', '.join(f'{name} {pins[pkg]}' for name, pkg in (
      ('TFDS', 'tensorflow-datasets'), ('Ray', 'ray'), ('WebDataset', 'webdataset'),
      ('TensorFlow', 'tensorflow')) if pkg in pins)


def plan(sizes: List[int], methods: List[str], largest: List[str],
         largest_from: int) -> Dict[int, List[str]]:
  return {n: [m for m in methods if n < largest_from or m in largest] for n in sizes}


def measure_all(args: argparse.Namespace) -> Dict[str, object]:
  from benchmarks import image_sets  # pylint: disable=g-import-not-at-top
  data = image_sets.image_set(args.image_set)
  sizes = sorted(int(s) for s in args.sizes.split(','))
  todo = plan(sizes, args.methods.split(','), args.methods_at_largest.split(','),
              args.largest_from)
  peers = None
  setup_s = None
  if any(METHODS[m][1] == 'peers' for ms in todo.values() for m in ms):
    t = time.perf_counter()
    peers = peers_python()
    setup_s = time.perf_counter() - t
  check_disk(args.data, args.scratch, max(sizes), data.MEAN_KB)
  t = time.perf_counter()
  data.generate(args.data, max(sizes))
  manifests = {n: data.write_manifest(args.data, n) for n in sizes}
  mb = warm_cache(args.data, max(sizes))
  print(f'peers: {max(sizes):,} images ready and read once ({mb:,.0f} MB) in '
        f'{time.perf_counter() - t:.0f}s', flush=True)
  runs = []
  for rep in range(args.repeats):
    for n in sizes:
      for method in todo[n]:
        r = measure(method, manifests[n], os.path.join(args.scratch, 'peers', method), peers)
        r.update(method=method, n=n, rep=rep)
        runs.append(r)
        print(f'peers rep {rep + 1} N={n:>7} {method:<12} wall {r["wall_s"]:7.1f}s  '
              f'peak {r["largest_mb"]:6.0f} MB largest, {r["peak_mb"]:6.0f} MB tree  '
              f'records {r["records"]:>7}  out {r["output_mb"]:7.1f} MB', flush=True)
        if r['records'] != n:
          raise RuntimeError(f'{method} wrote {r["records"]} records of {n} at N={n}')
  machine = (f'{platform.machine()}, {psutil.cpu_count()} cores, '
             f'{psutil.virtual_memory().total / 2**30:.0f} GiB, Python '
             f'{platform.python_version()}')
  return {'machine': machine, 'versions': versions(), 'images': data.DESCRIPTION,
          'peers_env_s': setup_s, 'runs': runs}


# ---------------------------------------------------------------- reporting
def _ratios(runs: List[Dict], method: str, n: int, base: str) -> List[float]:
  """Wall time of `method` over `base`'s in the same repeat, for each repeat with both."""
  walls = {(r['method'], r['rep']): r['wall_s'] for r in runs if r['n'] == n}
  return [walls[(method, rep)] / walls[(base, rep)] for m, rep in walls
          if m == method and (base, rep) in walls]


def markdown(saved: Dict[str, object]) -> str:
  runs = saved['runs']
  sizes = sorted({r['n'] for r in runs})
  reps = len({r['rep'] for r in runs})
  images = saved.get('images', 'synthetic 256x256 JPEGs (benchmarks/data.py)')
  lines = [f'Measured on: {saved["machine"]}; {saved["versions"]}. Images: {images}. '
           f'{reps} repeat{"s" * (reps > 1)}, interleaved; each figure is the median, with '
           'the range over repeats in brackets. Wall time is a fresh process from launch to exit '
           '(interpreter and imports included), images in the page cache. Ratios are '
           'wall time over our CLI\'s (or TFDS\'s) in the same repeat: above 1 is slower. '
           'Peak memory: resident set of the largest single process, then of the whole '
           'process tree (shared pages, e.g. Ray\'s object store, count once per process '
           'in the tree).']
  for n in sizes:
    lines += ['', f'**N = {n:,} images**', '',
              '| tool | wall s | x our CLI | x TFDS | peak MB largest / tree | records |',
              '|---|---:|---:|---:|---:|---:|']
    for method in METHODS:
      got = [r for r in runs if r['method'] == method and r['n'] == n]
      if not got:
        continue
      cells = [procs.fmt(procs.spread([r['wall_s'] for r in got]))]
      for base in (BASELINE, 'tfds'):
        ratios = _ratios(runs, method, n, base)
        cells.append(procs.fmt(procs.spread(ratios), 2) if ratios and method != base
                     else ('1' if method == base else 'n/a'))
      largest = procs.spread([r['largest_mb'] for r in got])['median']
      tree = procs.spread([r['peak_mb'] for r in got])['median']
      records = ', '.join(f'{c:,}' for c in sorted({r['records'] for r in got}))
      lines.append(f'| {METHODS[method][0]} | ' + ' | '.join(cells) +
                   f' | {largest:,.0f} / {tree:,.0f} | {records} |')
  lines += ['', 'Not the same work: ours checks each image by decoding it (unless '
            '`--no-verify-decode`), hashes it, hash-splits the rows train/eval/test 8:1:1 '
            '(ML_USE is empty) and writes GZIP shards with a report; TFDS and Ray read the '
            'bytes without any check, TFDS puts every row in `train` and shuffles it, Ray '
            'writes uncompressed TFRecords; the naive loop compresses at GZIP level 6 and '
            'checks nothing. Each output was read back and its records counted.']
  return '\n'.join(lines) + '\n'


def plot(saved: Dict[str, object], path: str) -> None:
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  runs = saved['runs']
  sizes = sorted({r['n'] for r in runs})
  fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4.5), squeeze=False)
  for ax, n in zip(axes[0], sizes):
    methods = [m for m in METHODS if any(r['method'] == m and r['n'] == n for r in runs)]
    s = [procs.spread([r['wall_s'] for r in runs if r['method'] == m and r['n'] == n])
         for m in methods]
    colors = ['tab:blue' if METHODS[m][0].startswith('ours') else
              'tab:gray' if METHODS[m][0].startswith(('floor', 'naive')) else 'tab:orange'
              for m in methods]
    ax.barh(methods[::-1], [x['median'] for x in s][::-1], color=colors[::-1],
            xerr=[[x['median'] - x['min'] for x in s][::-1],
                  [x['max'] - x['median'] for x in s][::-1]])
    ax.set_title(f'N = {n:,} images')
    ax.set_xlabel('wall seconds, launch to exit (median, range)')
    ax.grid(True, axis='x', alpha=0.3)
  images = saved.get('images', 'synthetic 256x256 JPEGs').split(' (')[0]
  fig.suptitle(f'{saved["machine"]}; {images}\nblue: ours, orange: peers, gray: naive '
               'loop and floors', fontsize=9)
  fig.tight_layout()
  fig.savefig(path, dpi=90)
  plt.close(fig)


def write(saved: Dict[str, object], results: str) -> None:
  from benchmarks import report  # pylint: disable=g-import-not-at-top
  report.write_part(results, 'peers.md', markdown(saved))
  plot(saved, os.path.join(results, 'peers.png'))


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='2000,20000,200000')
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--methods', default=','.join(METHODS),
                      help=f'any of {",".join(METHODS)}')
  parser.add_argument('--methods-at-largest', default=','.join(LARGEST),
                      help='the only methods run at sizes of --largest-from images or more')
  parser.add_argument('--largest-from', type=int, default=100_000)
  from benchmarks import image_sets  # pylint: disable=g-import-not-at-top
  image_sets.add_arguments(parser)
  parser.add_argument('--scratch', default=os.path.join(HERE, 'out', 'scratch'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  parser.add_argument('--report-only', action='store_true',
                      help='rewrite peers.md and peers.png from peers.json')
  args = parser.parse_args(argv)
  image_sets.resolve(args)
  unknown = (set(args.methods.split(',')) | set(args.methods_at_largest.split(','))) - set(METHODS)
  if unknown:
    parser.error(f'unknown method: {", ".join(sorted(unknown))}')
  path = os.path.join(args.results, 'peers.json')
  if args.report_only:
    with open(path) as f:
      saved = json.load(f)
  else:
    saved = measure_all(args)
    os.makedirs(args.results, exist_ok=True)
    with open(path, 'w') as f:
      json.dump(saved, f, indent=1)
  write(saved, args.results)
  return 0


if __name__ == '__main__':
  sys.exit(main())
