"""The gzipped TFRecord sink: TensorFlow reads it (and checks every CRC) at any level."""
import glob
import gzip
import io
import os

import apache_beam as beam
import pytest
import tensorflow as tf
from apache_beam.io.tfrecordio import _TFRecordUtil

from tfrecorder_component.beam.sink import GzipTFRecordSink, tfrecord_frame

RECORDS = [b'', b'x', os.urandom(100_000), b'abc' * 1000]


def test_frame_is_byte_identical_to_beams_own_writer():
  for record in RECORDS:
    expected = io.BytesIO()
    _TFRecordUtil.write_record(expected, record)
    assert tfrecord_frame(record) == expected.getvalue()


@pytest.mark.parametrize('level', [0, 1, 6])
def test_tensorflow_reads_shards_at_every_level(tmp_path, level):
  with beam.Pipeline() as p:
    _ = p | beam.Create(RECORDS) | beam.io.Write(
        GzipTFRecordSink(str(tmp_path / 'data_tfrecord'), level))
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
