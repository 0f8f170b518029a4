"""Formats: the same YOLO and COCO datasets converted by Datumaro and by us, side by side.

    .venv/bin/python -m benchmarks.formats [--images 2000] [--repeats 3] [--formats coco,yolo]

Each dataset holds the first N synthetic 256x256 JPEGs (benchmarks/data.py, linked, not
copied) with 1 to 5 boxes each over 10 classes (seeded), laid out as each tool reads it:

  YOLO: data.yaml (`train: images/train`, `val: images/val`, `names`), images/<split>/
    and labels/<split>/<stem>.txt, one image in 10 in val;
  COCO: annotations/instances_train.json (pixel boxes) and images/train/.

Converted by (a) Datumaro, `datum convert -if yolo | coco_instances -i DIR
-f tf_detection_api -o OUT -- --save-media`, in the reference readers' environment
(scripts/oracles-env, pinned by tests/oracles/requirements.lock), and (b) our
`tfrecorder-component convert DIR/data.yaml OUT` (COCO: the JSON, `--image-root
DIR/images/train`), default settings. Each is a fresh process timed from launch to exit
(interpreter and imports included) with the peak resident memory of the largest single
process and of the whole process tree (procs.run, sampled every 50 ms); repeats are
interleaved, the images are in the page cache before the first timed run, and the
figures are medians with their range.

Both outputs are then read back, Datumaro's with Datumaro's own `tf_detection_api`
reader (tests/oracles/read.py) and ours as TFRecords of tf.train.Example, and compared
with each other: the same images, the same classes and boxes (within 1e-4, normalised)
and the same splits (YOLO); whether the stored image bytes are the source file's is
checked on both. The table says whether they matched. Writes benchmarks/results/formats.md
(and every run's figures to benchmarks/out/formats.json, which --report-only reads).

Length: one comparison end to end (the datasets laid out, both tools run, both outputs
read back and compared, the table), whose parts share the datasets' layout.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import time
from typing import Any, Dict, Iterator, List, Optional

import numpy as np
import psutil

from benchmarks import procs

HERE = os.path.dirname(os.path.abspath(__file__))
LABELS = [f'class_{i}' for i in range(10)]
TOL = 1e-4
# tool: what it is
TOOLS = {
    'ours': 'ours: `tfrecorder-component convert`, default settings',
    'datumaro': 'Datumaro 1.13: `datum convert -f tf_detection_api -- --save-media`',
}
# Datumaro's importer names (its `yolo` importer finds the Ultralytics layout by data.yaml;
# `-if yolo_ultralytics` names the reader behind it, which the command cannot start alone).
DATUMARO_INPUT = {'yolo': 'yolo', 'coco': 'coco_instances'}


def oracles_python() -> str:
  """The reference readers' interpreter (Datumaro's), made by scripts/oracles-env if
  missing or stale."""
  out = subprocess.run([os.path.join(procs.ROOT, 'scripts', 'oracles-env')], check=True,
                       stdout=subprocess.PIPE, text=True).stdout
  return out.strip().splitlines()[-1]


# ---------------------------------------------------------------- the datasets
def objects(i: int) -> List[tuple]:
  """Image i's boxes: (class index, xmin, ymin, xmax, ymax) in pixels of the 256x256
  image, 1 to 5 of them, whole pixels so that both formats state them exactly."""
  rng = np.random.default_rng(i)
  out = []
  for _ in range(int(rng.integers(1, 6))):
    w, h = (int(v) for v in rng.integers(8, 160, size=2))
    x, y = int(rng.integers(0, 256 - w)), int(rng.integers(0, 256 - h))
    out.append((int(rng.integers(0, len(LABELS))), x, y, x + w, y + h))
  return out


def _link(src: str, dst: str) -> None:
  os.makedirs(os.path.dirname(dst), exist_ok=True)
  if os.path.exists(dst):
    return
  try:
    os.link(src, dst)
  except OSError:
    shutil.copyfile(src, dst)


def split_of(i: int) -> str:
  return 'val' if i % 10 == 9 else 'train'


def make_yolo(data_root: str, root: str, n: int) -> str:
  """The YOLO dataset of the first n images; returns its data.yaml."""
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  size = data.SIZE
  for i in range(n):
    split = split_of(i)
    stem = f'img_{i:06d}'
    _link(data.image_path(data_root, i), os.path.join(root, 'images', split, stem + '.jpg'))
    lines = [f'{c} {(x0 + x1) / 2 / size:.6f} {(y0 + y1) / 2 / size:.6f} '
             f'{(x1 - x0) / size:.6f} {(y1 - y0) / size:.6f}'
             for c, x0, y0, x1, y1 in objects(i)]
    path = os.path.join(root, 'labels', split, stem + '.txt')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
      f.write('\n'.join(lines) + '\n')
  path = os.path.join(root, 'data.yaml')
  with open(path, 'w') as f:
    f.write('train: images/train\nval: images/val\nnames: [' + ', '.join(LABELS) + ']\n')
  return path


def make_coco(data_root: str, root: str, n: int) -> str:
  """The COCO dataset of the first n images; returns its JSON."""
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  images, annotations = [], []
  for i in range(n):
    name = f'img_{i:06d}.jpg'
    _link(data.image_path(data_root, i), os.path.join(root, 'images', 'train', name))
    images.append({'id': i + 1, 'file_name': name, 'width': data.SIZE, 'height': data.SIZE})
    for c, x0, y0, x1, y1 in objects(i):
      annotations.append({'id': len(annotations) + 1, 'image_id': i + 1, 'category_id': c + 1,
                          'bbox': [x0, y0, x1 - x0, y1 - y0], 'area': (x1 - x0) * (y1 - y0),
                          'iscrowd': 0, 'segmentation': []})
  path = os.path.join(root, 'annotations', 'instances_train.json')
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'w') as f:
    json.dump({'images': images, 'annotations': annotations,
               'categories': [{'id': c + 1, 'name': name, 'supercategory': 'thing'}
                              for c, name in enumerate(LABELS)]}, f)
  return path


def make(fmt: str, data_root: str, root: str, n: int) -> Dict[str, str]:
  """The dataset (made once, kept under benchmarks/out/formats) and its entry points."""
  done = os.path.join(root, '.complete')
  if fmt == 'yolo':
    entry = os.path.join(root, 'data.yaml')
    if not os.path.exists(done):
      shutil.rmtree(root, ignore_errors=True)
      make_yolo(data_root, root, n)
    ours_args = [entry]
  else:
    entry = os.path.join(root, 'annotations', 'instances_train.json')
    if not os.path.exists(done):
      shutil.rmtree(root, ignore_errors=True)
      make_coco(data_root, root, n)
    ours_args = [entry, '--image-root', os.path.join(root, 'images', 'train')]
  open(done, 'w').close()
  return {'root': root, 'entry': entry, 'ours_args': ours_args}


def command(tool: str, fmt: str, dataset: Dict[str, Any], out: str,
            oracles: Optional[str]) -> List[str]:
  if tool == 'ours':
    cli = os.path.join(os.path.dirname(sys.executable), 'tfrecorder-component')
    return [cli, 'convert', dataset['ours_args'][0], out, *dataset['ours_args'][1:]]
  datum = os.path.join(os.path.dirname(oracles), 'datum')
  return [datum, 'convert', '-if', DATUMARO_INPUT[fmt], '-i', dataset['root'],
          '-f', 'tf_detection_api', '-o', out, '--', '--save-media']


# ---------------------------------------------------------------- reading back
def _mask(crc: int) -> int:
  return (((crc >> 15) | (crc << 17)) + 0xa282ead8) & 0xffffffff


def frames(path: str) -> Iterator[bytes]:
  """The records of one TFRecord file (GZIP when it ends in .gz), checksums checked."""
  import google_crc32c  # pylint: disable=g-import-not-at-top
  with (gzip.open if path.endswith('.gz') else open)(path, 'rb') as f:
    while True:
      head = f.read(12)
      if not head:
        return
      length, crc = struct.unpack('<QI', head)
      if _mask(google_crc32c.value(head[:8])) != crc:
        raise ValueError(f'{path}: bad length checksum')
      body = f.read(length + 4)
      if _mask(google_crc32c.value(body[:length])) != struct.unpack('<I', body[length:])[0]:
        raise ValueError(f'{path}: bad data checksum')
      yield body[:length]


def _values(example, key: str) -> list:
  f = example.features.feature[key]
  kind = f.WhichOneof('kind')
  return list(getattr(f, kind).value) if kind else []


def read_records(files: List[str], split_of_file) -> Dict[str, Any]:
  """Records as tests/oracles/read.py prints images (key: the file name's stem), with
  each image's stored bytes' SHA-256."""
  from tfrecorder_component.record.example_proto import Example  # pylint: disable=g-import-not-at-top
  images = {}
  for path in files:
    for record in frames(path):
      example = Example.FromString(record)
      key = os.path.splitext(_values(example, 'image/filename')[0].decode())[0]
      boxes = zip(*(_values(example, f'image/object/bbox/{k}')
                    for k in ('xmin', 'ymin', 'xmax', 'ymax')))
      labels = [t.decode() for t in _values(example, 'image/object/class/text')]
      if key in images:
        raise RuntimeError(f'{path}: {key} written twice')
      images[key] = {'split': split_of_file(path),
                     'sha256': hashlib.sha256(_values(example, 'image/encoded')[0]).hexdigest(),
                     'objects': [{'label': l, 'box': list(b)} for l, b in zip(labels, boxes)]}
  return images


def read_ours(out: str) -> Dict[str, Any]:
  import glob  # pylint: disable=g-import-not-at-top
  files = sorted(glob.glob(os.path.join(out, 'Split-*', 'data_tfrecord-*.gz')))
  return read_records(files, lambda p: os.path.basename(os.path.dirname(p))[len('Split-'):])


def read_datumaro(out: str, oracles: str) -> Dict[str, Any]:
  """Datumaro's output as Datumaro's own tf_detection_api reader sees it, with the
  stored bytes' hashes from the records."""
  import glob  # pylint: disable=g-import-not-at-top
  done = subprocess.run([oracles, os.path.join(procs.ROOT, 'tests', 'oracles', 'read.py'),
                         '--reader', 'datumaro', '--format', 'tf_detection_api', out],
                        capture_output=True, text=True, check=False,
                        env={**os.environ, **procs.QUIET})
  if done.returncode:
    raise RuntimeError(f'Datumaro could not read {out}:\n{done.stderr[-3000:]}')
  seen = json.loads(done.stdout)['images']
  raw = read_records(sorted(glob.glob(os.path.join(out, '*.tfrecord'))), lambda p: None)
  for key, image in seen.items():
    image['sha256'] = raw[key]['sha256'] if key in raw else None
  return seen


def source_hashes(root: str) -> Dict[str, str]:
  out = {}
  for folder, _, names in os.walk(os.path.join(root, 'images')):
    for name in names:
      with open(os.path.join(folder, name), 'rb') as f:
        out[os.path.splitext(name)[0]] = hashlib.sha256(f.read()).hexdigest()
  return out


def compare(ours: Dict[str, Any], theirs: Dict[str, Any], splits: bool) -> List[str]:
  """The differences: images on one side only, splits, and each image's objects, each of
  ours matched to one of theirs of the same label and a box within TOL."""
  out = [f'{k}: only in ours' for k in sorted(set(ours) - set(theirs))]
  out += [f'{k}: only in Datumaro\'s' for k in sorted(set(theirs) - set(ours))]
  for key in sorted(set(ours) & set(theirs)):
    a, b = ours[key], theirs[key]
    if splits and a['split'] != b['split']:
      out.append(f'{key}: split {a["split"]} (ours) vs {b["split"]}')
    left = [(o['label'], o['box']) for o in b['objects']]
    for o in a['objects']:
      match = next((m for m in left if m[0] == o['label'] and
                    max(abs(x - y) for x, y in zip(m[1], o['box'])) <= TOL), None)
      if match is None:
        out.append(f'{key}: {o["label"]} {[round(v, 6) for v in o["box"]]} (ours) not in '
                   'theirs')
      else:
        left.remove(match)
    out += [f'{key}: {label} {[round(v, 6) for v in box]} (theirs) not in ours'
            for label, box in left]
  return out


def expected(fmt: str, n: int) -> Dict[str, Any]:
  """What both should hold: the generated boxes, normalised by 256."""
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  s = float(data.SIZE)
  return {f'img_{i:06d}': {
      'split': {'train': 'train', 'val': 'eval'}[split_of(i)] if fmt == 'yolo' else None,
      'objects': [{'label': LABELS[c], 'box': [x0 / s, y0 / s, x1 / s, y1 / s]}
                  for c, x0, y0, x1, y1 in objects(i)]} for i in range(n)}


# ---------------------------------------------------------------- measuring
def measure(tool: str, fmt: str, dataset: Dict[str, Any], out: str,
            oracles: Optional[str]) -> Dict[str, Any]:
  shutil.rmtree(out, ignore_errors=True)
  os.makedirs(os.path.dirname(out), exist_ok=True)
  r = procs.run(command(tool, fmt, dataset, out, oracles))
  result = {k: r[k] for k in ('wall_s', 'peak_mb', 'largest_mb', 'process_mb', 'child_mb')}
  return result


def check(tool: str, fmt: str, dataset: Dict[str, Any], out: str, oracles: str, n: int,
          hashes: Dict[str, str]) -> Dict[str, Any]:
  """Reads one output back and compares it with what was generated."""
  seen = read_ours(out) if tool == 'ours' else read_datumaro(out, oracles)
  want = expected(fmt, n)
  if tool == 'ours' and fmt == 'coco':  # COCO has no split: ours are hash splits
    seen = {k: dict(v, split=None) for k, v in seen.items()}
  if tool == 'datumaro' and fmt == 'coco':  # Datumaro's one subset, 'train'
    seen = {k: dict(v, split=None) for k, v in seen.items()}
  diffs = compare(seen, want, splits=True)
  return {'images': len(seen), 'objects': sum(len(v['objects']) for v in seen.values()),
          'differences': diffs[:20], 'n_differences': len(diffs),
          'bytes_kept': sum(1 for k, v in seen.items() if v.get('sha256') == hashes.get(k)),
          'output_mb': sum(os.path.getsize(os.path.join(d, f))
                           for d, _, fs in os.walk(out) for f in fs) / 2**20,
          'seen': seen}


def versions(oracles: str) -> str:
  with open(os.path.join(procs.ROOT, 'tests', 'oracles', 'requirements.lock')) as f:
    pins = dict(re.findall(r'^([\w.-]+)==(\S+)', f.read(), re.M))
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  return (f'Datumaro {pins["datumaro"]} with TensorFlow {pins["tensorflow"]} (Python 3.11); '
          f'ours {metadata.version("tfrecorder-component")} with TensorFlow '
          f'{metadata.version("tensorflow")} (Python {platform.python_version()})')


def measure_all(args: argparse.Namespace) -> Dict[str, Any]:
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  from benchmarks.peers import warm_cache  # pylint: disable=g-import-not-at-top
  n = args.images
  t = time.perf_counter()
  oracles = oracles_python()
  setup_s = time.perf_counter() - t
  data.generate(args.data, n)
  formats = args.formats.split(',')
  datasets = {f: make(f, args.data, os.path.join(args.scratch, 'formats', f'{f}-{n}'), n)
              for f in formats}
  warm_cache(args.data, n)
  hashes = {f: source_hashes(d['root']) for f, d in datasets.items()}
  runs, checks = [], {}
  for rep in range(args.repeats):
    for fmt in formats:
      for tool in args.tools.split(','):
        out = os.path.join(args.scratch, 'formats', 'out', f'{fmt}-{tool}')
        r = measure(tool, fmt, datasets[fmt], out, oracles)
        r.update(tool=tool, format=fmt, n=n, rep=rep)
        if (fmt, tool) not in checks:  # the first repeat's output is read back
          checks[fmt, tool] = check(tool, fmt, datasets[fmt], out, oracles, n, hashes[fmt])
        shutil.rmtree(out, ignore_errors=True)
        runs.append(r)
        c = checks[fmt, tool]
        print(f'formats rep {rep + 1} {fmt:<5} {tool:<9} wall {r["wall_s"]:6.1f}s  peak '
              f'{r["largest_mb"]:6.0f} MB largest, {r["peak_mb"]:6.0f} MB tree  images '
              f'{c["images"]}  objects {c["objects"]}  differences {c["n_differences"]}',
              flush=True)
  # Ours against Datumaro's, image by image, where both ran.
  both = {}
  for fmt in formats:
    if (fmt, 'ours') in checks and (fmt, 'datumaro') in checks:
      diffs = compare(checks[fmt, 'ours']['seen'], checks[fmt, 'datumaro']['seen'],
                      splits=True)
      both[fmt] = {'n_differences': len(diffs), 'differences': diffs[:20]}
  machine = (f'{platform.machine()}, {psutil.cpu_count()} cores, '
             f'{psutil.virtual_memory().total / 2**30:.0f} GiB')
  for c in checks.values():
    del c['seen']
  return {'machine': machine, 'versions': versions(oracles), 'oracles_env_s': setup_s,
          'images': n, 'runs': runs,
          'checks': {f'{f}/{t}': c for (f, t), c in checks.items()}, 'ours_vs_datumaro': both}


# ---------------------------------------------------------------- reporting
def markdown(saved: Dict[str, Any]) -> str:
  runs = saved['runs']
  reps = len({r['rep'] for r in runs})
  n = saved['images']
  n_boxes = sum(len(objects(i)) for i in range(n))
  lines = [f'Measured on: {saved["machine"]}; {saved["versions"]}. {n:,} synthetic '
           f'256x256 JPEGs, {n_boxes:,} boxes over 10 classes; {reps} repeat'
           f'{"s" * (reps > 1)}, interleaved; each figure is the median, with the range over '
           'repeats in brackets. Wall time is a fresh process from launch to exit '
           '(interpreter and imports included), images in the page cache; peak memory is '
           'the resident set of the largest single process, then of the whole process tree. '
           '"Matches" compares the output, read back (Datumaro\'s with its own '
           '`tf_detection_api` reader), with the generated boxes: images, classes, boxes '
           'within 1e-4 and splits; "bytes kept" counts the records whose image is the '
           'source file byte for byte.', '',
           '| format | tool | wall s | x ours | peak MB largest / tree | images | boxes | '
           'matches | bytes kept | output MB |',
           '|---|---|---:|---:|---:|---:|---:|---|---:|---:|']
  for fmt in sorted({r['format'] for r in runs}, key=['yolo', 'coco'].index):
    for tool in TOOLS:
      got = [r for r in runs if r['format'] == fmt and r['tool'] == tool]
      if not got:
        continue
      wall = procs.fmt(procs.spread([r['wall_s'] for r in got]))
      base = {r['rep']: r['wall_s'] for r in runs if r['format'] == fmt and r['tool'] == 'ours'}
      ratios = [r['wall_s'] / base[r['rep']] for r in got if r['rep'] in base]
      ratio = '1' if tool == 'ours' else (procs.fmt(procs.spread(ratios), 2) if ratios
                                          else 'n/a')
      largest = procs.spread([r['largest_mb'] for r in got])['median']
      tree = procs.spread([r['peak_mb'] for r in got])['median']
      c = saved['checks'][f'{fmt}/{tool}']
      match = ('yes' if not c['n_differences'] else
               f'no: {c["n_differences"]:,} differences, e.g. {c["differences"][0]}')
      lines.append(f'| {fmt} | {TOOLS[tool]} | {wall} | {ratio} | {largest:,.0f} / '
                   f'{tree:,.0f} | {c["images"]:,} | {c["objects"]:,} | {match} | '
                   f'{c["bytes_kept"]:,} | {c["output_mb"]:,.1f} |')
  for fmt, both in saved.get('ours_vs_datumaro', {}).items():
    lines += ['', f'{fmt}: ours against Datumaro\'s, image by image: ' +
              ('the same images, classes, boxes and splits.' if not both['n_differences'] else
               f'{both["n_differences"]:,} differences, e.g. ' +
               '; '.join(both['differences'][:3]) + '.')]
  lines += ['', 'Not the same work: Datumaro decodes each image and encodes it again '
            '(its records do not hold the source bytes) and writes one uncompressed '
            'TFRecord file per subset; ours checks each image by decoding it, keeps its '
            'bytes, hashes it, writes GZIP shards per split with a report, and hash-splits '
            'COCO\'s images train/eval/test 8:1:1 (COCO has no split; Datumaro puts them all '
            'in its one subset, `train`).']
  return '\n'.join(lines) + '\n'


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--images', type=int, default=2000)
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--formats', default='yolo,coco', help='any of yolo,coco')
  parser.add_argument('--tools', default='ours,datumaro', help='any of ours,datumaro')
  parser.add_argument('--data', default=os.path.join(HERE, 'out', 'data'))
  parser.add_argument('--scratch', default=os.path.join(HERE, 'out', 'scratch'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  parser.add_argument('--report-only', action='store_true',
                      help='rewrite formats.md from formats.json')
  args = parser.parse_args(argv)
  path = os.path.join(HERE, 'out', 'formats.json')
  if args.report_only:
    with open(path) as f:
      saved = json.load(f)
  else:
    saved = measure_all(args)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
      json.dump(saved, f, indent=1)
  from benchmarks import report  # pylint: disable=g-import-not-at-top
  report.write_part(args.results, 'formats.md', markdown(saved))
  bad = [k for k, c in saved['checks'].items() if c['n_differences']]
  return 1 if bad else 0


if __name__ == '__main__':
  sys.exit(main())
