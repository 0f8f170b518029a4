"""Readers: what the extra output layouts cost to write, and how fast each trainer's
loader reads them, side by side.

    .venv/bin/python -m benchmarks.readers [--images 20000] [--repeats 3] [--limit 5000]
        [--image-set photo|synthetic]

Writing: the first N JPEGs of the image set (photo-like by default, benchmarks/photos.py;
`--image-set synthetic`: the 256x256 ones of benchmarks/data.py), hash-split 8:1:1, 10
labels, converted by `tfrecorder-component convert MANIFEST OUT`, a fresh process timed
from launch to exit, with no extra layout (TFX's GZIP shards alone), with each layout
(`--layout tfrecord`, `tfds`, `array_record`, `parquet`) and with all four; repeats
interleaved (the disk synced before each), medians with their range: wall time, and
the CPU time of the command and its worker processes (steadier than wall time on a
shared machine), each ratio to the TFX-only run taken within its repeat. The TFX records of every run (each split's, in any order: which shard a
record lands in varies between multi-process runs) are compared with the TFX-only run's.

Reading: the all-layouts output's `train` split read by each loader in a fresh process
(benchmarks/read_layouts.py, in the loader's own environment): tf.data over the GZIP
shards (what TFX reads) and over the uncompressed `tfrecord` layout, the PyTorch
`tfrecord` package with the `.idx` files, this project's framework-free iterator
(`tfrecorder_component.readers.records`), TFDS (`builder_from_directory`), Grain's
`ArrayRecordDataSource` (random access, in order), pyarrow over the Parquet files,
Hugging Face `datasets.load_dataset` of the Parquet folder (scripts/oracles-env) and
NVIDIA DALI's `fn.readers.tfrecord` on the CPU (scripts/dali-env). The first `--limit`
records, with and without decoding the JPEGs: records/s and CPU ms per 1,000 records
after the first record, and the seconds to the first record (imports and opening).
Writes benchmarks/results/readers.md (figures of every run in benchmarks/out/readers.json).
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from typing import Any, Dict, List

import psutil

from benchmarks import image_sets
from benchmarks import procs

HERE = os.path.dirname(os.path.abspath(__file__))
LAYOUT_RUNS = {
    'tfx': [],
    'tfrecord': ['--layout', 'tfrecord'],
    'tfds': ['--layout', 'tfds'],
    'array_record': ['--layout', 'array_record'],
    'parquet': ['--layout', 'parquet'],
    'all': ['--layout', 'tfrecord,tfds,array_record,parquet'],
}
# reader: (environment, what it reads)
READERS = {
    'tf_data_gzip': ('product', 'tf.data TFRecordDataset, GZIP shards (TFX layout)'),
    'tf_data_tfrecord': ('product', 'tf.data TFRecordDataset, `tfrecord` layout'),
    'tfrecord_package': ('product', 'PyTorch `tfrecord` 1.14 loader + .idx, `tfrecord` layout'),
    'ours_iterator': ('product', 'ours: `readers.iter_records` (no TensorFlow), `tfrecord` layout'),
    'tfds': ('product', 'TFDS 4.9 `builder_from_directory`, `tfds` layout'),
    'grain': ('product', 'Grain `ArrayRecordDataSource`, `array_record` layout'),
    'pyarrow': ('product', 'pyarrow `ParquetFile.iter_batches`, `parquet` layout'),
    'hf_datasets': ('oracles', 'Hugging Face `datasets.load_dataset`, `parquet` layout'),
    'dali': ('dali', 'NVIDIA DALI 2.4 `fn.readers.tfrecord` (CPU), `tfrecord` layout'),
}


def _env_python(env: str) -> str:
  if env == 'product':
    return sys.executable
  script = {'oracles': 'oracles-env', 'dali': 'dali-env'}[env]
  out = subprocess.run([os.path.join(procs.ROOT, 'scripts', script)], check=True,
                       stdout=subprocess.PIPE, text=True).stdout
  return out.strip().splitlines()[-1]


def _tfx_digest(out: str) -> str:
  """A digest of the TFX records of each split, whatever their order: with several worker
  processes, which shard a record lands in varies from run to run, with or without
  layouts (tests/test_layouts.py compares whole shards byte for byte on one worker)."""
  from tfrecorder_component.io.tfrecord import read_shard  # pylint: disable=g-import-not-at-top
  h = hashlib.sha256()
  for split in sorted(glob.glob(os.path.join(out, 'Split-*'))):
    records = sorted(hashlib.sha256(r).digest()
                     for path in glob.glob(os.path.join(split, '*.gz')) for r in read_shard(path))
    h.update(os.path.basename(split).encode() + b''.join(records))
  return h.hexdigest()


def write_runs(manifest: str, scratch: str, repeats: int) -> List[Dict[str, Any]]:
  cli = os.path.join(os.path.dirname(sys.executable), 'tfrecorder-component')
  runs = []
  for repeat in range(repeats):
    for name, flags in LAYOUT_RUNS.items():
      out = os.path.join(scratch, f'write-{name}')
      shutil.rmtree(out, ignore_errors=True)
      os.sync()  # no run pays for the writing back of the one before
      r = procs.run([cli, 'convert', manifest, out, *flags, '--quiet'])
      r.pop('stdout')
      runs.append({'repeat': repeat, 'layouts': name, 'digest': _tfx_digest(out), **r})
      print(f'write {repeat} {name:13s} {r["wall_s"]:6.1f} s', flush=True)
      if name != 'all':
        shutil.rmtree(out)
  return runs


def read_runs(out: str, repeats: int, limit: int, readers: List[str]) -> List[Dict[str, Any]]:
  pythons = {env: _env_python(env) for env in {READERS[r][0] for r in readers}}
  script = os.path.join(HERE, 'read_layouts.py')
  runs = []
  for repeat in range(repeats):
    for reader in readers:
      for decode in (False, True):
        cmd = [pythons[READERS[reader][0]], script, reader, out, '--limit', str(limit)]
        r = procs.run(cmd + (['--decode'] if decode else []),
                      env={'PYTHONPATH': procs.ROOT, 'HF_DATASETS_OFFLINE': '1'})
        figures = json.loads(r['stdout'].strip().splitlines()[-1])
        runs.append({'repeat': repeat, 'wall_s': r['wall_s'], 'peak_mb': r['peak_mb'],
                     **figures})
        print(f'read {repeat} {reader:17s} decode={int(decode)} {figures["records"]:6d} '
              f'records, {figures["records"] / figures["read_s"]:8.0f}/s, first after '
              f'{figures["setup_s"]:.1f} s', flush=True)
  return runs


def _write_table(runs: List[Dict[str, Any]]) -> List[str]:
  by = lambda name: [r for r in runs if r['layouts'] == name]
  base = {r['repeat']: r for r in by('tfx')}
  digest = by('tfx')[0]['digest']
  lines = ['| layouts written | wall s, launch to exit | vs TFX only | CPU s, every process '
           '| vs TFX only | TFX records |', '|---|---|---|---|---|---|']
  for name in LAYOUT_RUNS:
    rs = by(name)
    cells = []
    for key in ('wall_s', 'cpu_s'):
      cells.append(procs.fmt(procs.spread([r[key] for r in rs])))
      cells.append(procs.fmt(procs.spread([r[key] / base[r['repeat']][key] for r in rs]), 2)
                   + 'x')
    same = 'the same' if all(r['digest'] == digest for r in rs) else '**differ**'
    lines.append(f'| {name} | {" | ".join(cells)} | {same} |')
  return lines


def _read_table(runs: List[Dict[str, Any]], readers: List[str]) -> List[str]:
  lines = ['| loader | records/s | CPU ms / 1,000 | records/s, decoded | CPU ms / 1,000, '
           'decoded | first record after, s |', '|---|---|---|---|---|---|']
  for reader in readers:
    cells = []
    for decode in (False, True):
      rs = [r for r in runs if r['reader'] == reader and r['decode'] == decode]
      cells.append(procs.fmt(procs.spread([r['records'] / r['read_s'] for r in rs]), 0))
      cells.append(procs.fmt(procs.spread([1e6 * r['cpu_s'] / r['records'] for r in rs]), 0))
    first = procs.spread([r['setup_s'] for r in runs if r['reader'] == reader])
    lines.append(f'| {READERS[reader][1]} | {" | ".join(cells)} | {procs.fmt(first)} |')
  return lines


def report(saved: Dict[str, Any], path: str) -> str:
  """readers.md; each table between snippet markers (`<!-- --8<-- [start:write] -->`), so
  the documentation includes it by name (`--8<-- "benchmarks/results/readers.md:write"`)."""
  section = lambda name, lines: [f'<!-- --8<-- [start:{name}] -->', *lines,
                                 f'<!-- --8<-- [end:{name}] -->']
  text = '\n'.join([
      '# Readers: extra output layouts, written and read', '',
      f'{saved["machine"]}; {saved["images"]:,} '
      f'{saved.get("image_set", "synthetic 256x256 JPEGs (about 34 KB)")}; medians (range). '
      'Command: `.venv/bin/python -m benchmarks.readers`.', '',
      f'## Writing: `tfrecorder-component convert` with each layout, {saved["repeats"]} '
      'repeats interleaved', '',
      *section('write', _write_table(saved['write'])), '',
      f'## Reading the `train` split: the first {saved["limit"]:,} records, '
      f'{saved.get("read_repeats", saved["repeats"])} repeats interleaved', '',
      *section('read', ['Rates after the first record; CPU is every thread of the loader\'s '
                        'process.', '', *_read_table(saved['read'], saved['readers'])]), ''])
  with open(path, 'w') as f:
    f.write(text)
  return text


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--images', type=int, default=20_000)
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--limit', type=int, default=5_000)
  parser.add_argument('--readers', default=','.join(READERS),
                      help='loaders to time (none: only the writing part)')
  image_sets.add_arguments(parser)
  parser.add_argument('--scratch', default=os.path.join(HERE, 'out', 'scratch'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  parser.add_argument('--report-only', action='store_true')
  args = parser.parse_args(argv)
  saved_path = os.path.join(HERE, 'out', 'readers.json')
  if not args.report_only:
    readers = [r for r in args.readers.split(',') if r and r != 'none']
    data = image_sets.resolve(args)
    data.generate(args.data, args.images)
    manifest = data.write_manifest(args.data, args.images)
    os.makedirs(args.scratch, exist_ok=True)
    machine = (f'{platform.machine()}, {psutil.cpu_count()} cores, '
               f'{psutil.virtual_memory().total / 2**30:.0f} GiB, '
               f'Python {platform.python_version()}')
    write = write_runs(manifest, args.scratch, args.repeats)
    saved = {'machine': machine, 'images': args.images, 'image_set': data.SHORT,
             'repeats': args.repeats,
             'limit': args.limit, 'readers': readers, 'write': write, 'read': []}
    if readers:
      saved['read'] = read_runs(os.path.join(args.scratch, 'write-all'), args.repeats,
                                args.limit, readers)
    elif os.path.exists(saved_path):  # a writing-only run keeps the last reading figures
      with open(saved_path) as f:
        last = json.load(f)
      saved.update({k: last[k] for k in ('limit', 'readers', 'read')},
                   read_repeats=last.get('read_repeats', last['repeats']))
    saved.setdefault('read_repeats', args.repeats)
    with open(saved_path, 'w') as f:
      json.dump(saved, f, indent=1)
  with open(saved_path) as f:
    saved = json.load(f)
  os.makedirs(args.results, exist_ok=True)
  print(report(saved, os.path.join(args.results, 'readers.md')))
  return 0


if __name__ == '__main__':
  sys.exit(main())
