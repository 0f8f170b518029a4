"""A floor of the benchmark: read every image and write its bytes into WebDataset shards.

    PEERS_PYTHON benchmarks/peers/webdataset_floor.py MANIFEST OUT [WORKERS]

The rows of the AutoML CSV (no header, URIs relative to its folder) are cut into WORKERS
(default 2) contiguous halves; each process writes its own tar shards with
`webdataset.ShardWriter` (OUT/wds-W-NNNNNN.tar, at most 10,000 samples a shard), one
sample per image: `jpg` (the file's bytes) and `cls` (the label id). No Example, no
TFRecord, no decode check: what reading and writing the bytes costs in two processes.
"""
from __future__ import annotations

import csv
import multiprocessing
import os
import sys

import webdataset as wds


def _write(args) -> int:
  worker, rows, out = args
  with wds.ShardWriter(os.path.join(out, f'wds-{worker}-%06d.tar'), maxcount=10_000,
                       verbose=0) as sink:
    for key, path, label in rows:
      with open(path, 'rb') as f:
        sink.write({'__key__': f'{key:08d}', 'jpg': f.read(), 'cls': label})
  return len(rows)


def main(manifest: str, out: str, workers: int = 2) -> int:
  root = os.path.dirname(os.path.abspath(manifest))
  with open(manifest, newline='') as f:
    rows = list(csv.reader(f))
  ids = {label: i for i, label in enumerate(sorted({r[2] for r in rows}))}
  rows = [(i, os.path.join(root, uri), ids[label]) for i, (_, uri, label) in enumerate(rows)]
  os.makedirs(out, exist_ok=True)
  k = -(-len(rows) // workers)
  with multiprocessing.get_context('fork').Pool(workers) as pool:
    n = sum(pool.map(_write, [(w, rows[w * k:(w + 1) * k], out) for w in range(workers)]))
  print(n, 'samples')
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1], sys.argv[2], *map(int, sys.argv[3:4])))
