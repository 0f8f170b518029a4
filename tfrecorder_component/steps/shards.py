"""Gzipped TFRecord shards, with a gzip level that is a choice and a C CRC32C: written
record by record, read back in order, and spread evenly over a fixed number of shards.

Encoded images barely compress (about 0.5% for JPEG), yet deflate runs at a few tens of
MB/s per core on them, so the default level is 0: stored deflate blocks, still a valid
`.gz` that every TFRecord reader and TFX component reads. Raise the level for
uncompressed images (BMP) where it pays.
"""
from __future__ import annotations

import gzip
import io
import itertools
import struct
import zlib
from typing import BinaryIO, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

import google_crc32c

from tfrecorder_component import files
from tfrecorder_component import layout
from tfrecorder_component.option_table import DEFAULT_COMPRESSION_LEVEL  # pylint: disable=unused-import

# When shards are planned (`num_shards`, `shard_size_mb`), each bundle's records go to a
# temporary file first, a new one every this many bytes (so a final shard seldom reads
# far into a file to reach its first record).
TEMP_FILE_BYTES = 16 * 2**20


def masked_crc32c(data: bytes) -> bytes:
  """TFRecord's masked CRC32C of `data`, as the 4 bytes a frame holds."""
  crc = google_crc32c.value(data)
  return struct.pack('<I', (((crc >> 15) | (crc << 17)) + 0xa282ead8) & 0xffffffff)


def tfrecord_frame(record: bytes) -> bytes:
  """One record in the TFRecord format: length, CRC of length, data, CRC of data."""
  return b''.join(_frame_parts(record))


def _frame_parts(record: bytes) -> Tuple[bytes, bytes, bytes, bytes]:
  length = struct.pack('<Q', len(record))
  return length, masked_crc32c(length), record, masked_crc32c(record)


def tfrecord_frames(records) -> bytes:
  """Records in the TFRecord format, one after the other (each record copied once)."""
  return b''.join([part for record in records for part in _frame_parts(record)])


def read_frames(f: BinaryIO, path: str, first: int = 0, limit: Optional[int] = None,
            keep: Callable[[int], bool] = lambda j: True) -> Iterator[bytes]:
  """The records of an open TFRecord stream from where it stands (record `first` of its
  file), `limit` of them at most; a record `keep` refuses (by its number in the file)
  is skipped. ValueError naming the file and record for a CRC mismatch or a cut."""
  j = first
  while limit is None or j < first + limit:
    header = f.read(12)
    if not header:
      if limit is not None:
        raise ValueError(f'{path} ends before its index says it does')
      return
    if len(header) < 12:
      raise ValueError(f'{path} is truncated: a record header has {len(header)} bytes')
    if header[8:] != masked_crc32c(header[:8]):
      raise ValueError(f'{path}: record {j} has a corrupt length (CRC mismatch)')
    length, = struct.unpack('<Q', header[:8])
    if not keep(j):  # another reader's: skipped, its data unchecked
      f.seek(length + 4, io.SEEK_CUR)
      j += 1
      continue
    data = f.read(length)
    crc = f.read(4)
    if len(data) < length or len(crc) < 4:
      raise ValueError(f'{path} is truncated in record {j}')
    if crc != masked_crc32c(data):
      raise ValueError(f'{path}: record {j} is corrupt (CRC mismatch)')
    yield data
    j += 1


_READ_BYTES = 1 << 20  # compressed bytes read at a time


def read_shard(path: str) -> Iterator[bytes]:
  """The records of one gzipped TFRecord shard, in order. Inflated a block at a time and
  cut into records in memory (gzip's own reader makes two small reads a record, several
  times slower); zlib checks each gzip member's CRC32 and length. A shard that ends
  inside a gzip member or a record raises EOFError."""
  with files.open_file(path) as raw:
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    begun = False  # whether the current gzip member has had input
    data = bytearray()
    while True:
      block = raw.read(_READ_BYTES)
      if not block:
        break
      while block:
        begun = True
        data += inflate.decompress(block)
        block = b''
        if inflate.eof:  # the member ended: another may follow (concatenated gzip)
          block, begun = inflate.unused_data, False
          inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
      pos = 0
      with memoryview(data) as view:  # released before `data` is cut
        while len(data) - pos >= 12:
          length, = struct.unpack_from('<Q', data, pos)
          end = pos + 12 + length
          if end + 4 > len(data):
            break
          yield bytes(view[pos + 12:end])  # its masked CRC32C: readers downstream check it
          pos = end + 4
      del data[:pos]
    if begun or data:
      raise EOFError(f'{path}: the shard ends inside its gzip stream or a record')


class GzipStream:
  """A gzip stream over an open binary file; closing it closes both."""

  def __init__(self, raw: BinaryIO, level: int):
    self._raw = raw
    # No file name or time in the header: shards are byte-reproducible.
    self._gzip = gzip.GzipFile(filename='', fileobj=raw, mode='wb', compresslevel=level,
                               mtime=0)

  def write(self, data: bytes) -> None:
    self._gzip.write(data)

  def finish(self) -> None:
    """Writes the gzip trailer and lets the file finish without waiting for it (an
    object's upload: `storage.ObjectWriter.begin_close`); `close()` then waits."""
    self._gzip.close()
    begin_close = getattr(self._raw, 'begin_close', None)
    if begin_close is not None:
      begin_close()

  def close(self) -> None:
    self._gzip.close()
    self._raw.close()


class ShardWriter:
  """A gzipped TFRecord shard written record by record on any file system."""

  def __init__(self, path: str, compression_level: int = DEFAULT_COMPRESSION_LEVEL):
    self.path = path
    self.records = 0
    self.bytes = 0  # framed, before compression
    self._file = GzipStream(files.create_file(path), compression_level)

  def write(self, records) -> None:
    data = tfrecord_frames(records)
    self._file.write(data)
    self.records += len(records)
    self.bytes += len(data)

  def finish(self) -> None:
    """Ends the shard without waiting for its upload (`GzipStream.finish`); `close()`
    waits for it."""
    self._file.finish()

  def close(self) -> None:
    self._file.close()


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


def plan_split_shards(bundles: Iterable[Tuple[str, str, int, int]], split_dirs: Mapping[str, str],
                      num_shards: int, shard_bytes: int
                      ) -> Iterator[Tuple[str, List[Tuple[str, int, int]]]]:
  """(shard path, slices) for every shard of every split, empty splits included;
  `bundles`: (split, path, records, bytes) of the temporary files."""
  by_split: Dict[str, List[Tuple[str, int, int]]] = {name: [] for name in split_dirs}
  for split, path, records, size in bundles:
    by_split[split].append((path, records, size))
  for split, split_bundles in by_split.items():
    plan = plan_shards(split_bundles, num_shards, shard_bytes)
    for k, slices in enumerate(plan):
      yield layout.shard_path(split_dirs[split], k, len(plan)), slices


_RECORDS_PER_WRITE = 64


def write_shard(shard: Tuple[str, List[Tuple[str, int, int]]], level: int) -> str:
  """Writes the shard (path, slices of `plan_shards`); returns its path."""
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
