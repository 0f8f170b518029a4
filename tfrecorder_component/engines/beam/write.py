"""Writing in Beam: the split shards and the label files."""
from __future__ import annotations

import posixpath
import uuid
from typing import Dict, Mapping

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from tfrecorder_component.io import files
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.engines.beam import sink as sink_lib
from tfrecorder_component.output.layouts import base as layouts_base
from tfrecorder_component.steps import run_plan
from tfrecorder_component.steps import shards as shards_lib
from tfrecorder_component.io import tfrecord as tfrecord_lib

__all__ = ['WriteLabelFiles', 'WriteLayouts', 'WriteSplits']


class WriteSplits(beam.PTransform):
  """Writes (split, [serialized]) pairs as gzipped TFRecord shards, one folder a split;
  returns the paths of the shards written, once every split is written.

  By default the runner decides the number of shards (one per bundle), as TFX's
  ExampleGen does. With `num_shards`, or `shard_bytes` (a target shard size), each
  bundle is first written to a temporary file, and the records are then spread evenly,
  in order, over exactly that many shards per split, each written by one worker: no
  step holds more than one batch of records, whatever the split's size.

  Args:
    compression_level: zlib's level for the gzip shards, 0 (stored, the default) to 9.
    num_shards: Shards per split; 0: not set.
    shard_bytes: The target size of a shard in bytes of TFRecord frames, before
      compression: a split's bytes over it are its shard count (at least 1); 0: not
      set. `num_shards` wins where both are.
    split_dirs: {split name: its folder of shards}; every record's split must be one of
      them. With resharding, the temporary files go into a `.shards-<hex>` folder beside
      them, removed once the shards are written.
  """

  def __init__(self, split_dirs: Mapping[str, str],
               compression_level: int = tfrecord_lib.DEFAULT_COMPRESSION_LEVEL,
               num_shards: int = 0, shard_bytes: int = 0):
    super().__init__()
    self._split_dirs = dict(split_dirs)
    self._level = compression_level
    self._num_shards = num_shards
    self._shard_bytes = shard_bytes

  def expand(self, records):
    """The paths of the shards written, once every split is written.

    Args:
      records: The PCollection of (split, [serialized tf.train.Example]) batches
        (ConvertBatches' `records`).
    """
    if self._num_shards or self._shard_bytes:
      return self._resharded(records)
    names = list(self._split_dirs)
    parts = records | 'BySplit' >> beam.Partition(lambda kv, n: names.index(kv[0]), len(names))
    return ([part
             | f'Values[{name}]' >> beam.Values()
             | f'Write[{name}]' >> beam.io.Write(sink_lib.GzipTFRecordSink(
                 FileSystems.join(self._split_dirs[name], output_paths.TFRECORD_FILE_NAME),
                 self._level, batched=True))
             for name, part in zip(names, parts)]
            | 'Shards' >> beam.Flatten().with_output_types(str))

  def _resharded(self, records):
    temp_dir = posixpath.join(posixpath.dirname(next(iter(self._split_dirs.values()))),
                              f'.shards-{uuid.uuid4().hex}')
    shards = (records
              | 'WriteBundles' >> beam.ParDo(_WriteBundles(temp_dir, self._level))
              | 'CollectBundles' >> beam.combiners.ToList()
              | 'PlanShards' >> beam.FlatMap(shards_lib.plan_split_shards, self._split_dirs, self._num_shards,
                                             self._shard_bytes)
              | 'SpreadShards' >> beam.Reshuffle()
              | 'WriteShards' >> beam.Map(shards_lib.write_shard, self._level).with_output_types(str))
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
    self._writers: Dict[str, tfrecord_lib.ShardWriter] = {}

  def start_bundle(self):
    self._writers = {}

  def process(self, kv):
    split, batch = kv
    writer = self._writers.get(split)
    if writer is None:
      writer = self._writers[split] = tfrecord_lib.ShardWriter(
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


TEMP_FILE_BYTES = shards_lib.TEMP_FILE_BYTES  # here, so a test can make it small


class WriteLabelFiles(beam.PTransform):
  """Writes labels.txt, label_map.pbtxt and label_map.csv of the run's vocabulary (one
  element, `run_plan.Summarized.held`: `run_plan.write_label_files`).

  Args:
    directory: The folder the three files are written into (the output folder), on any
      file system Beam reaches.
  """

  def __init__(self, directory: str):
    super().__init__()
    self._directory = directory

  def expand(self, held):
    """Writes the files; its one element is None.

    Args:
      held: The PCollection of one dict, `steps.report.held_labels`: the vocabulary's
        'labels', their 'ids' and the 'task', whose first id labels.txt starts at.
    """
    return held | beam.Map(lambda h, d: run_plan.write_label_files(d, h), self._directory)



class WriteLayouts(beam.PTransform):
  """Writes the extra output layouts (`layouts.LAYOUTS`) from the finished TFX shards,
  once `WriteSplits` (its input) has written them all: a task per shard, then each
  layout's metadata. Returns one element, what `layouts.base.finish` returns.

  Args:
    outputs: The run's outputs (`run_plan.RunOutputs`): the layouts its options name
      go into its label_dir, from the TFX shards of its split_dirs.
    summarized: The PCollection of one `run_plan.Summarized`: the feature types, ids
      and task the layouts declare.
  """

  def __init__(self, outputs: run_plan.RunOutputs, summarized):
    super().__init__()
    self._outputs = outputs
    self._names = tuple(outputs.options.layouts)
    self._split_dirs = dict(outputs.split_dirs)
    self._summarized = summarized

  def expand(self, shards):
    """One element, {layout: its metadata}, once every layout is written.

    Args:
      shards: The shard paths `WriteSplits` emits: only waited for (all of them), the
        shards are then listed from `split_dirs`.
    """
    context = beam.pvalue.AsSingleton(
        self._summarized | 'LayoutContext' >> beam.Map(
            lambda s, outputs, names: _checked(run_plan.layout_context(outputs, s), names),
            self._outputs, self._names))
    return (shards
            | 'AllShards' >> beam.combiners.ToList()
            | 'ShardJobs' >> beam.FlatMap(lambda _, dirs: layouts_base.shard_jobs(dirs),
                                          self._split_dirs)
            | 'SpreadJobs' >> beam.Reshuffle()
            | 'WriteShards' >> beam.Map(layouts_base.write_shard, self._names, context)
            | 'AllWritten' >> beam.combiners.ToList()
            | 'Finish' >> beam.Map(lambda written, names, ctx: layouts_base.finish(
                names, ctx, written), self._names, context))


def _checked(ctx, names):
  layouts_base.check_types(names, ctx)
  return ctx
