"""Writing in Beam: the split shards and the label files."""
from __future__ import annotations

import itertools
import posixpath
import uuid
from typing import Dict, List, Mapping, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from tfrecorder_component import files
from tfrecorder_component import labels as labels_lib
from tfrecorder_component import layout
from tfrecorder_component.beam import sink as sink_lib

__all__ = ['WriteLabelFiles', 'WriteSplits', 'plan_shards']


class WriteSplits(beam.PTransform):
  """Writes (split, [serialized]) pairs as gzipped TFRecord shards, one folder a split;
  returns the paths of the shards written, once every split is written.

  By default the runner decides the number of shards (one per bundle), as TFX's
  ExampleGen does. With `num_shards`, or `shard_bytes` (a target shard size), each
  bundle is first written to a temporary file, and the records are then spread evenly,
  in order, over exactly that many shards per split, each written by one worker: no
  step holds more than one batch of records, whatever the split's size.
  """

  def __init__(self, split_dirs: Mapping[str, str],
               compression_level: int = sink_lib.DEFAULT_COMPRESSION_LEVEL,
               num_shards: int = 0, shard_bytes: int = 0):
    super().__init__()
    self._split_dirs = dict(split_dirs)
    self._level = compression_level
    self._num_shards = num_shards
    self._shard_bytes = shard_bytes

  def expand(self, records):
    if self._num_shards or self._shard_bytes:
      return self._resharded(records)
    names = list(self._split_dirs)
    parts = records | 'BySplit' >> beam.Partition(lambda kv, n: names.index(kv[0]), len(names))
    return ([part
             | f'Values[{name}]' >> beam.Values()
             | f'Write[{name}]' >> beam.io.Write(sink_lib.GzipTFRecordSink(
                 FileSystems.join(self._split_dirs[name], layout.TFRECORD_FILE_NAME),
                 self._level, batched=True))
             for name, part in zip(names, parts)]
            | 'Shards' >> beam.Flatten().with_output_types(str))

  def _resharded(self, records):
    temp_dir = posixpath.join(posixpath.dirname(next(iter(self._split_dirs.values()))),
                              f'.shards-{uuid.uuid4().hex}')
    shards = (records
              | 'WriteBundles' >> beam.ParDo(_WriteBundles(temp_dir, self._level))
              | 'CollectBundles' >> beam.combiners.ToList()
              | 'PlanShards' >> beam.FlatMap(_plan_shards, self._split_dirs, self._num_shards,
                                             self._shard_bytes)
              | 'SpreadShards' >> beam.Reshuffle()
              | 'WriteShards' >> beam.Map(_write_shard, self._level).with_output_types(str))
    _ = (shards
         | 'AllShards' >> beam.combiners.ToList()
         | 'RemoveBundles' >> beam.Map(lambda _, folder: files.remove(folder), temp_dir))
    return shards


class _WriteBundles(beam.DoFn):
  """Writes a bundle's record batches into temporary files, one per split at a time and
  a new one every TEMP_FILE_BYTES (so a final shard seldom reads far into a file to reach
  its first record); emits (split, path, records, bytes) for each file."""

  def __init__(self, temp_dir: str, compression_level: int):
    self._temp_dir = temp_dir
    self._level = compression_level
    self._writers: Dict[str, sink_lib.ShardWriter] = {}

  def start_bundle(self):
    self._writers = {}

  def process(self, kv):
    split, batch = kv
    writer = self._writers.get(split)
    if writer is None:
      writer = self._writers[split] = sink_lib.ShardWriter(
          posixpath.join(self._temp_dir, split, uuid.uuid4().hex + '.gz'), self._level)
    writer.write(batch)
    if writer.bytes >= TEMP_FILE_BYTES:
      writer.close()
      del self._writers[split]
      yield split, writer.path, writer.records, writer.bytes

  def finish_bundle(self):
    for split, writer in self._writers.items():
      writer.close()
      yield WindowedValue((split, writer.path, writer.records, writer.bytes), MIN_TIMESTAMP,
                          [GlobalWindow()])
    self._writers = {}


TEMP_FILE_BYTES = 16 * 2**20


def plan_shards(bundles: List[Tuple[str, int, int]], num_shards: int = 0,
                shard_bytes: int = 0) -> List[List[Tuple[str, int, int]]]:
  """Spreads one split's records evenly over its shards: for each shard, the
  (bundle path, first record, end record) slices it takes, in bundle order.

  `bundles`: (path, records, bytes) of the temporary files. The shard count is
  `num_shards`, else the split's bytes over `shard_bytes` (at least 1). Shard k takes
  records [k * n // count, (k + 1) * n // count) of the n records in order.
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


def _plan_shards(bundles, split_dirs: Mapping[str, str], num_shards: int, shard_bytes: int):
  """(shard path, slices) for every shard of every split, empty splits included."""
  by_split: Dict[str, List[Tuple[str, int, int]]] = {name: [] for name in split_dirs}
  for split, path, records, size in bundles:
    by_split[split].append((path, records, size))
  for split, split_bundles in by_split.items():
    plan = plan_shards(split_bundles, num_shards, shard_bytes)
    for k, slices in enumerate(plan):
      yield layout.shard_path(split_dirs[split], k, len(plan)), slices


_RECORDS_PER_WRITE = 64


def _write_shard(shard: Tuple[str, List[Tuple[str, int, int]]], level: int) -> str:
  path, slices = shard
  writer = sink_lib.ShardWriter(path, level)
  try:
    for bundle, first, end in slices:
      records = itertools.islice(sink_lib.read_shard(bundle), first, end)
      while True:
        batch = list(itertools.islice(records, _RECORDS_PER_WRITE))
        if not batch:
          break
        writer.write(batch)
  finally:
    writer.close()
  return path


class WriteLabelFiles(beam.PTransform):
  """Writes labels.txt and label_map.pbtxt of the run's vocabulary (one element,
  `report.held_labels`)."""

  def __init__(self, directory: str):
    super().__init__()
    self._directory = directory

  def expand(self, held):
    return held | beam.Map(lambda h, d: labels_lib.write_label_files(
        d, dict(zip(h['labels'], h['ids'])), labels_lib.first_label_id(h['task'])),
                           self._directory)

