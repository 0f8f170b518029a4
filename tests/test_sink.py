"""The gzipped TFRecord sink: TensorFlow reads it (and checks every CRC) at any level."""
import glob
import gzip
import io
import os

import apache_beam as beam
import pytest
import tensorflow as tf
from apache_beam.io.tfrecordio import _TFRecordUtil

from tfrecorder_component.engines.beam.sink import GzipTFRecordSink
from tfrecorder_component.io.tfrecord import tfrecord_frame

RECORDS = [b'', b'x', os.urandom(100_000), b'abc' * 1000]


def test_frame_is_byte_identical_to_beams_own_writer():
  for record in RECORDS:
    expected = io.BytesIO()
    _TFRecordUtil.write_record(expected, record)
    assert tfrecord_frame(record) == expected.getvalue()


@pytest.mark.parametrize('level,batched', [(0, False), (1, False), (6, False), (0, True)])
def test_tensorflow_reads_shards_at_every_level(tmp_path, level, batched):
  elements = [RECORDS[:3], RECORDS[3:]] if batched else RECORDS
  with beam.Pipeline() as p:
    _ = p | beam.Create(elements) | beam.io.Write(
        GzipTFRecordSink(str(tmp_path / 'data_tfrecord'), level, batched=batched))
  shards = sorted(glob.glob(str(tmp_path / 'data_tfrecord-*.gz')))
  assert shards
  read = [r.numpy() for r in tf.data.TFRecordDataset(shards, compression_type='GZIP')]
  assert sorted(read) == sorted(RECORDS)
  raw = b''.join(gzip.decompress(open(s, 'rb').read()) for s in shards)
  size = sum(os.path.getsize(s) for s in shards)
  if level == 0:
    assert size >= len(raw)  # stored blocks: nothing compressed
  else:
    assert size < len(raw)   # the repetitive record compresses


def test_level_is_validated():
  with pytest.raises(ValueError, match='compression_level'):
    GzipTFRecordSink('/tmp/x', 10)


def test_example_messages_serialize_exactly_like_tensorflow():
  from tfrecorder_component.record import example_proto
  ours, theirs = example_proto.Example(), tf.train.Example()
  for message in (ours, theirs):
    message.features.feature['image/encoded'].bytes_list.value.append(b'\x00\xffdata')
    message.features.feature['image/class/label'].int64_list.value.extend([0, 7, 2**40])
    message.features.feature['score'].float_list.value.extend([0.5, -1.25])
    message.features.feature['empty'].bytes_list.SetInParent()
  assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
      deterministic=True)
  assert tf.train.Example.FromString(ours.SerializeToString()) == theirs
