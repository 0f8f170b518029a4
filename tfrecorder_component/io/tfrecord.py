"""TFRecord framing and gzipped TFRecord shards, with a gzip level that is a choice and a C
CRC32C: records framed as TensorFlow's record writer frames them, written record by record
on any file system, and read back in order (`read_frames` checks each frame's CRCs;
`read_shard` reads a run's own gzipped shards back, zlib checking each member's CRC32).

Encoded images barely compress (about 0.5% for JPEG), yet deflate runs at a few tens of
MB/s per core on them, so the default level is 0: stored deflate blocks, still a valid
`.gz` that every TFRecord reader and TFX component reads. Raise the level for
uncompressed images (BMP) where it pays.
"""
from __future__ import annotations

import gzip
import io
import os
import struct
import zlib
from typing import BinaryIO, Callable, Iterator, Optional, Tuple

import google_crc32c
from zlib_ng import zlib_ng  # CRC-32 at SIMD speed: 1.2 µs for 53 KB, zlib's 17-20 µs

from tfrecorder_component.io import files
from tfrecorder_component.option_table import DEFAULT_COMPRESSION_LEVEL  # pylint: disable=unused-import

def masked_crc32c(data: bytes) -> bytes:
  """TFRecord's masked CRC32C of `data`, as the 4 bytes a frame holds.

  Args:
    data: The bytes the CRC covers: a frame's 8-byte length, or its record.
  """
  crc = google_crc32c.value(data)
  return struct.pack('<I', (((crc >> 15) | (crc << 17)) + 0xa282ead8) & 0xffffffff)


def tfrecord_frame(record: bytes) -> bytes:
  """One record in the TFRecord format: length, CRC of length, data, CRC of data.

  Args:
    record: One serialized record (a `tf.train.Example`'s bytes).
  """
  return b''.join(_frame_parts(record))


def _frame_parts(record: bytes) -> Tuple[bytes, bytes, bytes, bytes]:
  length = struct.pack('<Q', len(record))
  return length, masked_crc32c(length), record, masked_crc32c(record)


def tfrecord_frames(records) -> bytes:
  """Records in the TFRecord format, one after the other (each record copied once).

  Args:
    records: Serialized records (bytes), framed in the order given.
  """
  return b''.join([part for record in records for part in _frame_parts(record)])


def read_frames(f: BinaryIO, path: str, first: int = 0, limit: Optional[int] = None,
            keep: Callable[[int], bool] = lambda j: True) -> Iterator[bytes]:
  """The records of an open TFRecord stream from where it stands (record `first` of its
  file), `limit` of them at most; a record `keep` refuses (by its number in the file)
  is skipped. ValueError naming the file and record for a CRC mismatch or a cut.

  Args:
    f: An uncompressed binary stream standing at a record's header; it must be seekable
      where `keep` skips records.
    path: The file's path, for the errors.
    first: The number in its file of the record `f` stands at; 0: the file's first.
    limit: The records to go through from `first`, skipped ones included; the stream
      must hold them all (ValueError if it ends first). None: to the stream's end.
    keep: `keep(j)` is False for a record number `j` to skip (another reader's); its
      data is then neither read nor checked. Default: every record is kept.
  """
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
  inside a gzip member or a record raises EOFError.

  Args:
    path: The shard (gzip members, one or more), a local path or a URI on any Beam file
      system.
  """
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
  """A gzip stream over an open binary file; closing it closes both.

  At level 0 the stream is written here, as RFC 1952 (gzip) and RFC 1951 section 3.2.4
  (stored blocks) define it: a header with no name and no time, the data in stored
  blocks of at most 65,535 bytes (each a 0 byte, LEN and its complement NLEN,
  little-endian, then the bytes as they are), an empty final block, then the CRC-32 and
  the length mod 2^32. zlib's level 0 copies the data through its window at a few
  hundred MB/s; this copies it once, into the file's write, and takes the CRC-32 with
  zlib-ng's (the same CRC as zlib's, folded with carry-less multiplies). Other levels
  are zlib's (`gzip.GzipFile`). tests/test_tfrecord.py reads both back with gzip, zlib
  and TensorFlow.

  Args:
    raw: The binary file the compressed bytes go to (a local file, an ObjectWriter, a
      Beam file); `finish` lets an ObjectWriter end its upload without waiting.
    level: The gzip level, 0 (stored blocks: no compression) to 9.
  """

  def __init__(self, raw: BinaryIO, level: int):
    self._raw = raw
    self._stored = level == 0
    self._finished = False
    # A local file's stored blocks go to its descriptor in one writev, with no join of
    # the parts into one buffer first (a copy of every byte, about 0.1 CPU-s a GB).
    local = isinstance(raw, io.BufferedWriter) and isinstance(raw.raw, io.FileIO)
    self._fd = raw.fileno() if self._stored and _WRITEV and local else None
    if self._stored:
      self._crc = 0
      self._size = 0
      raw.write(_GZIP_HEADER)
    else:
      # No file name or time in the header: shards are byte-reproducible.
      self._gzip = gzip.GzipFile(filename='', fileobj=raw, mode='wb', compresslevel=level,
                                 mtime=0)

  def write(self, data: bytes) -> None:
    """Compresses `data` into the stream.

    Args:
      data: The bytes to write (a shard's TFRecord frames).
    """
    if self._stored:
      self._write_stored([data])
    else:
      self._gzip.write(data)

  def write_records(self, records) -> int:
    """Frames `records` (TFRecord frames) into the stream; returns the framed bytes'
    length. At level 0 each record is copied once, into the file's write.

    Args:
      records: Serialized records (bytes), in order.
    """
    if not self._stored:
      data = tfrecord_frames(records)
      self._gzip.write(data)
      return len(data)
    parts = [part for record in records for part in _frame_parts(record)]
    return self._write_stored(parts)

  def _write_stored(self, parts) -> int:
    crc32 = zlib_ng.crc32  # the same CRC-32 as zlib.crc32 (tests/test_tfrecord.py)
    out = []
    block: list = []
    room = _STORED_BLOCK
    crc = self._crc
    total = 0
    for part in parts:
      crc = crc32(part, crc)
      n = len(part)
      total += n
      view = memoryview(part) if n > room else part
      start = 0
      while n - start > room:  # the part fills this block: the block is cut there
        block.append(view[start:start + room])
        start += room
        out.append(_block_header(_STORED_BLOCK))
        out.extend(block)
        block, room = [], _STORED_BLOCK
      if start:
        block.append(view[start:])
      else:
        block.append(part)
      room -= n - start
    if block:
      out.append(_block_header(_STORED_BLOCK - room))
      out.extend(block)
    self._crc = crc
    self._size += total
    if out and self._fd is not None:
      self._raw.flush()  # the header, written through the buffer
      _write_all(self._fd, out)
    elif out:
      self._raw.write(b''.join(out))
    return total

  def _end(self) -> None:
    if self._finished:
      return
    self._finished = True
    if self._stored:
      self._raw.write(_FINAL_BLOCK + struct.pack('<II', self._crc, self._size & 0xffffffff))
    else:
      self._gzip.close()

  def finish(self) -> None:
    """Writes the gzip trailer and lets the file finish without waiting for it (an
    object's upload: `storage.ObjectWriter.begin_close`); `close()` then waits."""
    self._end()
    begin_close = getattr(self._raw, 'begin_close', None)
    if begin_close is not None:
      begin_close()

  def close(self) -> None:
    self._end()
    self._raw.close()


# ID1 ID2, CM 8 (deflate), no flags, MTIME 0, XFL 0, OS 255 (unknown), as gzip.GzipFile
# writes them at level 0 with no name and mtime=0.
_GZIP_HEADER = b'\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff'
_STORED_BLOCK = 65535  # LEN is 16 bits
_FINAL_BLOCK = b'\x01\x00\x00\xff\xff'  # BFINAL 1, stored, LEN 0, NLEN 0xffff


_WRITEV = hasattr(os, 'writev')  # POSIX; not on Windows, which joins
_IOV_MAX = 1024  # POSIX's least IOV_MAX is 16; Linux's and the BSDs' is 1024
try:
  _LIMIT = os.sysconf('SC_IOV_MAX')
  if _LIMIT > 0:  # -1: no limit known
    _IOV_MAX = min(_IOV_MAX, _LIMIT)
except (AttributeError, ValueError, OSError):  # no sysconf, or no such name
  pass


def _write_all(fd: int, parts: list) -> None:
  """Writes `parts` (bytes and memoryviews) to the file descriptor `fd`, in order, with
  writev: IOV_MAX parts a call, the rest of a part a call writes short of written by
  the next call."""
  while parts:
    batch = parts[:_IOV_MAX]
    written = os.writev(fd, batch)
    if not written and any(batch):
      raise OSError(f'writev wrote nothing of {sum(map(len, batch))} bytes')
    for i, part in enumerate(batch):
      if written < len(part):
        parts = [memoryview(part)[written:], *batch[i + 1:], *parts[len(batch):]]
        break
      written -= len(part)
    else:
      parts = parts[len(batch):]


def _block_header(length: int) -> bytes:
  """A stored block that is not the last: BFINAL 0, BTYPE 00 (padded to the byte), LEN,
  NLEN."""
  return struct.pack('<BHH', 0, length, length ^ 0xffff)


class ShardWriter:
  """A gzipped TFRecord shard written record by record on any file system.

  Args:
    path: The shard to create: a local path or a URI (`files.create_file`); a file
      already there is replaced.
    compression_level: The gzip level, 0 to 9; default 0 (DEFAULT_COMPRESSION_LEVEL):
      stored deflate blocks.
  """

  def __init__(self, path: str, compression_level: int = DEFAULT_COMPRESSION_LEVEL):
    self.path = path
    self.records = 0
    self.bytes = 0  # framed, before compression
    self._file = GzipStream(files.create_file(path), compression_level)

  def write(self, records) -> None:
    """Frames `records` and writes them, adding to the counts `records` and `bytes`.

    Args:
      records: Serialized records (bytes), in order: a sequence, since they are
        counted with `len`.
    """
    self.bytes += self._file.write_records(records)
    self.records += len(records)

  def finish(self) -> None:
    """Ends the shard without waiting for its upload (`GzipStream.finish`); `close()`
    waits for it."""
    self._file.finish()

  def close(self) -> None:
    self._file.close()
