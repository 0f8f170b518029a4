"""A split's records spread evenly over a fixed number of gzipped TFRecord shards: the plan
(which slices of the temporary bundle files each shard takes) and the shard written from
it (`io.tfrecord` frames and compresses the bytes).
"""
from __future__ import annotations

import itertools
from typing import Dict, Iterable, Iterator, List, Mapping, Tuple

from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.io.tfrecord import ShardWriter, read_shard

# When shards are planned (`num_shards`, `shard_size_mb`), each bundle's records go to a
# temporary file first, a new one every this many bytes (so a final shard seldom reads
# far into a file to reach its first record).
TEMP_FILE_BYTES = 16 * 2**20


def plan_shards(bundles: List[Tuple[str, int, int]], num_shards: int = 0,
                shard_bytes: int = 0) -> List[List[Tuple[str, int, int]]]:
  """Spreads one split's records evenly over its shards: for each shard, the
  (bundle path, first record, end record) slices it takes, in bundle order.

  The shard count is `num_shards`, else the split's bytes over `shard_bytes` (at least
  1). Shard k takes records [k * n // count, (k + 1) * n // count) of the n records in
  order.

  Args:
    bundles: (path, records, bytes) of the split's temporary files; taken in path
      order.
    num_shards: the split's shard count; 0: from `shard_bytes`.
    shard_bytes: about how many bytes of records a shard holds, used where
      `num_shards` is 0; one of the two must be above 0.
  """
  bundles = sorted(bundles)
  total = sum(records for _, records, _ in bundles)
  count = num_shards or max(1, -(-sum(size for _, _, size in bundles) // shard_bytes))
  plan: List[List[Tuple[str, int, int]]] = [[] for _ in range(count)]
  start = 0  # index of the bundle's first record among all records
  for path, records, _ in bundles:
    for k in range(count):
      first, end = k * total // count, (k + 1) * total // count
      lo, hi = max(first, start), min(end, start + records)
      if lo < hi:
        plan[k].append((path, lo - start, hi - start))
    start += records
  return plan


def plan_split_shards(bundles: Iterable[Tuple[str, str, int, int]], split_dirs: Mapping[str, str],
                      num_shards: int, shard_bytes: int
                      ) -> Iterator[Tuple[str, List[Tuple[str, int, int]]]]:
  """(shard path, slices) for every shard of every split, empty splits included.

  Args:
    bundles: (split, path, records, bytes) of the temporary files; each split must be a
      key of `split_dirs`.
    split_dirs: {split: its output folder}, every split written, the shards named in
      it as Beam and TFX name them.
    num_shards: shards per split; 0: from `shard_bytes` (`plan_shards`).
    shard_bytes: about how many bytes of records a shard holds, where `num_shards` is
      0.
  """
  by_split: Dict[str, List[Tuple[str, int, int]]] = {name: [] for name in split_dirs}
  for split, path, records, size in bundles:
    by_split[split].append((path, records, size))
  for split, split_bundles in by_split.items():
    plan = plan_shards(split_bundles, num_shards, shard_bytes)
    for k, slices in enumerate(plan):
      yield output_paths.shard_path(split_dirs[split], k, len(plan)), slices


_RECORDS_PER_WRITE = 64


def write_shard(shard: Tuple[str, List[Tuple[str, int, int]]], level: int) -> str:
  """Writes the shard; returns its path.

  Args:
    shard: (path, slices of `plan_shards`), as `plan_split_shards` gives it; a file at
      the path is replaced.
    level: the gzip compression level, 0 (stored) to 9.
  """
  path, slices = shard
  writer = ShardWriter(path, level)
  try:
    for bundle, first, end in slices:
      records = itertools.islice(read_shard(bundle), first, end)
      while True:
        batch = list(itertools.islice(records, _RECORDS_PER_WRITE))
        if not batch:
          break
        writer.write(batch)
  finally:
    writer.close()
  return path
