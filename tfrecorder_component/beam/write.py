"""Writing in Beam: the split shards, the label files and JSON-lines reports."""
from __future__ import annotations

import functools
import json
from typing import Any, Dict, Mapping

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from tfrecorder_component import example_proto as tf_example
from tfrecorder_component import labels as labels_lib
from tfrecorder_component import layout
from tfrecorder_component.beam import sink as sink_lib
from tfrecorder_component.manifest import Task

__all__ = ['RenumberLabels', 'WriteJsonLines', 'WriteLabelFiles', 'WriteSplits']


class WriteSplits(beam.PTransform):
  """Writes (split, [serialized]) pairs as gzipped TFRecord shards, one folder a split."""

  def __init__(self, split_dirs: Mapping[str, str],
               compression_level: int = sink_lib.DEFAULT_COMPRESSION_LEVEL):
    super().__init__()
    self._split_dirs = dict(split_dirs)
    self._level = compression_level

  def expand(self, records):
    """Returns the paths of the shards written, once every split is written."""
    names = list(self._split_dirs)
    parts = records | 'BySplit' >> beam.Partition(lambda kv, n: names.index(kv[0]), len(names))
    return [part
            | f'Values[{name}]' >> beam.Values()
            | f'Write[{name}]' >> beam.io.Write(sink_lib.GzipTFRecordSink(
                FileSystems.join(self._split_dirs[name], layout.TFRECORD_FILE_NAME), self._level,
                batched=True))
            for name, part in zip(names, parts)] | 'Shards' >> beam.Flatten().with_output_types(str)


class RenumberLabels(beam.PTransform):
  """Gives the records of the written shards the ids of the held vocabulary (a singleton
  side input from `report.held_labels`): only when a label was left out."""

  def __init__(self, held, compression_level: int = sink_lib.DEFAULT_COMPRESSION_LEVEL):
    super().__init__()
    self._held = held
    self._level = compression_level

  def expand(self, shards):
    return shards | beam.Map(_renumber_shard, self._held, self._level)


def _renumber_shard(shard: str, held: Dict[str, Any], level: int) -> None:
  if held['ids']:
    key = ('image/object/class/label' if held['task'] == Task.DETECTION.value
           else 'image/class/label')
    sink_lib.rewrite_shard(shard, functools.partial(_renumber, key=key, ids=held['ids']), level)


def _renumber(record: bytes, key: str, ids: Dict[int, int]) -> bytes:
  example = tf_example.Example.FromString(record)
  values = example.features.feature[key].int64_list.value
  values[:] = [ids[v] for v in values]
  return example.SerializeToString(deterministic=True)


class WriteLabelFiles(beam.PTransform):
  """Writes labels.txt and label_map.pbtxt of the held vocabulary (one element)."""

  def __init__(self, directory: str):
    super().__init__()
    self._directory = directory

  def expand(self, held):
    return held | beam.Map(lambda h, d: labels_lib.write_label_files(
        d, h['labels'], labels_lib.first_label_id(h['task'])), self._directory)


class WriteJsonLines(beam.PTransform):
  """Writes dicts as one JSON object a line into `<directory>/<name>.jsonl`."""

  def __init__(self, directory: str, name: str):
    super().__init__()
    self._path = FileSystems.join(directory, name)

  def expand(self, dicts):
    return (dicts
            | 'ToJson' >> beam.Map(lambda d: json.dumps(d, ensure_ascii=False, sort_keys=True))
            | 'Write' >> beam.io.WriteToText(self._path, file_name_suffix=layout.JSON_LINES,
                                              shard_name_template=''))
