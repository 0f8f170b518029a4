"""`tfrecord`: uncompressed TFRecord shards, each with an index sidecar, in `tfrecord/`:

    <output>/tfrecord/images-<split>.tfrecord-SSSSS-of-NNNNN
    <output>/tfrecord/images-<split>.tfrecord-SSSSS-of-NNNNN.idx

The `.idx` file is the one NVIDIA DALI's `fn.readers.tfrecord` and the PyTorch
`tfrecord` package read (their `tfrecord2idx`): a line per record, its byte offset and
its framed size.
"""
from __future__ import annotations

from typing import Any, Dict, List

from tfrecorder_component.io import files
from tfrecorder_component.output.layouts.base import DATASET_NAME, split_files
from tfrecorder_component.io.tfrecord import tfrecord_frame

FOLDER = 'tfrecord'
REQUIRES = ()
INDEX_SUFFIX = '.idx'
SUFFIXES = ('', INDEX_SUFFIX)  # the files a shard at `path` is: path + each


def check_available() -> None:
  pass


def shard_name(split: str, index: int, count: int) -> str:
  """Shard `index` of `count`'s file name in FOLDER:
  `images-<split>.tfrecord-SSSSS-of-NNNNN`, its index that + INDEX_SUFFIX.

  Args:
    split: The split's name.
    index: The shard's position in the split, from 0.
    count: How many shards the split has.
  """
  return f'{DATASET_NAME}-{split}.tfrecord-{index:05d}-of-{count:05d}'


class _Sink:
  def __init__(self, path: str):
    self._data = files.create_file(path)
    self._index: List[str] = []
    self._offset = 0
    self._path = path

  def write(self, record: bytes) -> None:
    frame = tfrecord_frame(record)
    self._data.write(frame)
    self._index.append(f'{self._offset} {len(frame)}\n')
    self._offset += len(frame)

  def close(self) -> None:
    self._data.close()
    files.write_text(self._path + INDEX_SUFFIX, ''.join(self._index))


def open_path(ctx, split: str, path: str) -> _Sink:  # pylint: disable=unused-argument
  """A sink writing one uncompressed TFRecord shard at `path` and, at `close`, its
  `.idx` beside it.

  Args:
    ctx: The run's LayoutContext; unused, since the records are written as they are.
    split: The shard's split; unused.
    path: The shard file, a local path or a URI.
  """
  return _Sink(path)


def finish(ctx, counts: Dict[str, List[int]]) -> Dict[str, Any]:
  """The layout's entry in the index: its shard files per split and the index files'
  suffix; no metadata file is written.

  Args:
    ctx: The run's LayoutContext; unused.
    counts: {split: [records per shard]} of every shard written.
  """
  return {'files': split_files(counts, shard_name),
          'index_suffix': INDEX_SUFFIX}
