"""Gzipped TFRecord shards as `io.tfrecord` writes them, read back by gzip, zlib and
TensorFlow: level 0's stored blocks (written without zlib) across block boundaries,
records larger than a block, empty shards, several writes, short writes, and the levels
zlib writes; zlib-ng's CRC-32, which level 0 takes, against zlib's."""
import gzip
import os
import zlib

from hypothesis import given, settings, strategies as st
import pytest
import tensorflow as tf
from zlib_ng import zlib_ng

from tfrecorder_component.io import tfrecord


def _records(seed: int, sizes):
  return [bytes((seed + i + j) % 256 for j in range(n)) for i, n in enumerate(sizes)]


BATCHES = [
    [],
    _records(1, [0, 1, 100]),
    _records(2, [65535 - 12, 65535 - 16, 1]),     # frames ending at and around a block's end
    _records(3, [200_000, 65535, 65536, 131070]),  # records spanning several blocks
    _records(4, [5] * 3000),                       # many small records in one write
]


@pytest.mark.parametrize('level', [0, 1, 6])
def test_shards_read_back_with_gzip_zlib_and_tensorflow(tmp_path, level):
  path = str(tmp_path / f'shard-{level}.gz')
  writer = tfrecord.ShardWriter(path, level)
  for batch in BATCHES:
    writer.write(batch)
  writer.close()
  expected = [r for batch in BATCHES for r in batch]
  framed = tfrecord.tfrecord_frames(expected)
  assert writer.records == len(expected) and writer.bytes == len(framed)
  with open(path, 'rb') as f:
    raw = f.read()
  assert gzip.decompress(raw) == framed
  assert zlib.decompress(raw, 16 + zlib.MAX_WBITS) == framed
  assert list(tfrecord.read_shard(path)) == expected
  got = [r.numpy() for r in tf.data.TFRecordDataset(path, compression_type='GZIP')]
  assert got == expected
  if level == 0:  # stored: a few bytes a block beyond the frames, no compression
    assert len(raw) - len(framed) < 18 + 5 * (len(framed) // 65535 + len(BATCHES) + 1)


def test_an_empty_level_0_shard_is_an_empty_gzip_stream(tmp_path):
  path = str(tmp_path / 'empty.gz')
  tfrecord.ShardWriter(path, 0).close()
  with open(path, 'rb') as f:
    raw = f.read()
  assert gzip.decompress(raw) == b''
  assert list(tf.data.TFRecordDataset(path, compression_type='GZIP')) == []


def test_level_0_stream_takes_plain_writes_too(tmp_path):
  path = str(tmp_path / 'plain.gz')
  data = os.urandom(70_000)
  stream = tfrecord.GzipStream(open(path, 'wb'), 0)
  stream.write(data[:3])
  stream.write(data[3:])
  stream.finish()
  stream.close()
  with open(path, 'rb') as f:
    assert gzip.decompress(f.read()) == data


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=3000), max_size=8), st.integers(0, 2**32 - 1))
def test_zlib_ngs_crc32_is_zlibs_chained_part_by_part(parts, start):
  crc_ng = crc_zlib = start
  for part in parts:
    crc_ng, crc_zlib = zlib_ng.crc32(part, crc_ng), zlib.crc32(part, crc_zlib)
    assert crc_ng == crc_zlib
  assert zlib_ng.crc32(b''.join(parts), start) == zlib.crc32(b''.join(parts), start)


def test_zlib_ngs_crc32_is_zlibs_on_large_buffers_and_views():
  data = os.urandom(1 << 20)
  for n in (0, 15, 16, 63, 64, 65, 4095, 65535, 65536, 200_003, len(data)):
    assert zlib_ng.crc32(data[:n]) == zlib.crc32(data[:n])
    assert zlib_ng.crc32(memoryview(data)[7:n]) == zlib.crc32(data[7:n])


@pytest.mark.parametrize('most', [1, 7, 65536, 100_000])
def test_a_local_level_0_shard_survives_short_writes(tmp_path, monkeypatch, most):
  # writev may write fewer bytes than asked (a signal, a quota): here each call writes at
  # most `most` bytes, on the real file, and the rest must follow in order.
  real = os.writev
  calls = []

  def short_writev(fd, parts):
    calls.append(len(parts))
    taken, room = [], most
    for part in parts:
      taken.append(bytes(part[:room]))
      room -= len(taken[-1])
      if not room:
        break
    return real(fd, taken)
  monkeypatch.setattr(tfrecord.os, 'writev', short_writev)
  path = str(tmp_path / 'short.gz')
  writer = tfrecord.ShardWriter(path, 0)
  batch = _records(5, [3, 70_000, 0, 12]) + _records(6, [5] * 400)  # 1,616 parts
  writer.write(batch)
  writer.close()
  assert calls and max(calls) <= tfrecord._IOV_MAX
  with open(path, 'rb') as f:
    assert gzip.decompress(f.read()) == tfrecord.tfrecord_frames(batch)
