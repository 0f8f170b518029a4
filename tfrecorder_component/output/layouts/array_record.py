"""`array_record`: ArrayRecord shards for random access (Grain, JAX), in `array_record/`:

    <output>/array_record/<split>.array_record-SSSSS-of-NNNNN

Shard k of a split holds TFX shard k's records, in order, each the serialized
`tf.train.Example` unchanged, so `grain.python.ArrayRecordDataSource(<a split's files>)`
gives record i of the split (the TFX shards read one after the other) as `ds[i]`.

Written with `group_size:1,uncompressed` (WRITER_OPTIONS): a chunk per record, so
reading one record reads and decodes only that record (Grain's advice for random
access; ArrayRecord's default packs 65,536 records a chunk, decompressed whole to read
any of them); and no compression, since a record is mostly its encoded image (JPEG,
PNG), which does not compress: on 2,000 records of 23 KB JPEGs zstd:1 saved 0.1% of the
size, took 3.5 times as long to write and 20% longer to read a record.

ArrayRecord's writer takes a local path only: for an output on gs:// or s3:// each
shard is written to a local temporary file first, then copied up.
"""
from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from typing import Any, Dict, List

from tfrecorder_component import extras
from tfrecorder_component.io import files
from tfrecorder_component.errors import UsageError
from tfrecorder_component.output.layouts.base import split_files

FOLDER = 'array_record'
REQUIRES = ()
WRITER_OPTIONS = 'group_size:1,uncompressed'
PIP = "pip install 'tfrecorder-component[array_record]'"
SUFFIXES = ('',)


def check_available() -> None:
  try:
    importlib.import_module('array_record.python.array_record_module')
  except ModuleNotFoundError as e:
    raise UsageError(extras.message('the array_record layout', 'array_record') +
                     ' (Grain, which reads it: pip install grain)') from e
  except ImportError as e:
    raise UsageError(f'the array_record layout needs the array-record package, which cannot '
                     f'be imported here ({e}): {PIP} (Grain, which reads it: pip install '
                     f'grain)') from e


def shard_name(split: str, index: int, count: int) -> str:
  """Shard `index` of `count`'s file name in FOLDER: `<split>.array_record-SSSSS-of-NNNNN`.

  Args:
    split: The split's name.
    index: The shard's position in the split, from 0.
    count: How many shards the split has.
  """
  return f'{split}.array_record-{index:05d}-of-{count:05d}'


class _Sink:
  """One shard: written in place on local disk, else to a temporary file copied up at
  close."""

  def __init__(self, path: str):
    from array_record.python import array_record_module  # pylint: disable=g-import-not-at-top
    self._path = path
    if files.is_local(path):
      os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
      self._local = path
      self._temporary = False
    else:
      fd, self._local = tempfile.mkstemp(suffix='.array_record')
      os.close(fd)
      self._temporary = True
    try:
      self._writer = array_record_module.ArrayRecordWriter(self._local, WRITER_OPTIONS)
    except BaseException:
      self._remove_temporary()
      raise
    if not self._writer.ok():
      self._remove_temporary()
      raise OSError(f'{path}: ArrayRecord could not open {self._local} for writing')

  def write(self, record: bytes) -> None:
    self._writer.write(record)

  def close(self) -> None:
    if self._writer is None:
      return
    writer, self._writer = self._writer, None
    try:
      writer.close()
      if self._temporary:
        with open(self._local, 'rb') as source, files.create_file(self._path) as target:
          shutil.copyfileobj(source, target, 8 * 2**20)
    finally:
      self._remove_temporary()

  def _remove_temporary(self) -> None:
    if self._temporary and os.path.exists(self._local):
      os.remove(self._local)


def open_path(ctx, split: str, path: str) -> _Sink:  # pylint: disable=unused-argument
  """A sink writing one ArrayRecord shard at `path` (a record each, unchanged).

  Args:
    ctx: The run's LayoutContext; unused, since the records are written as they are.
    split: The shard's split; unused.
    path: The shard file, local or on gs:// or s3:// (then written to a local temporary
      file and copied up at `close`).
  """
  return _Sink(path)


def finish(ctx, counts: Dict[str, List[int]]) -> Dict[str, Any]:
  """The layout's entry in the index: its shard files per split and WRITER_OPTIONS; no
  metadata file is written.

  Args:
    ctx: The run's LayoutContext; unused.
    counts: {split: [records per shard]} of every shard written.
  """
  return {'files': split_files(counts, shard_name),
          'writer_options': WRITER_OPTIONS}
