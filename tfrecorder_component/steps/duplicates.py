"""Duplicate images found by an external sort, so that no process holds the data set.

Finding equal content hashes needs every record's hash and where it came from; held in
one place that grows with the rows (about 100 bytes a record, and a sixteenth of the
data set on one Dataflow worker when merged by key). Instead:

1. `runs.SpillRuns`: each worker sorts its records' (SHA-256, URI, split) entries, packed,
   in runs of at most `RUN_ENTRIES` and writes each run to a file under the index
   folder, with the offsets of its 256 first-byte buckets in a header. Only the paths
   of runs from bundles that succeeded go on, so a retried bundle counts once.
2. `_ranges`: the runs' total size decides how many hash ranges the merge is spread
   over (about `RANGE_BYTES` of entries each, 1 to 256 ranges of whole buckets).
3. `_MergeRange`: for its range, merges the runs' sorted slices as it reads them, a
   block of each at a time (its memory does not depend on the range's size), keeping
   only the hashes seen more than once.
4. The index folder is removed once every range is merged; `run.run_conversion` removes
   it too when the run fails.

The same code runs in the local run, on the DirectRunner and on Dataflow (the index folder is then on
Cloud Storage, beside the report). Output: one dict per repeated hash, as
`duplicates.jsonl` holds them.
"""
from __future__ import annotations

import heapq
import struct
from typing import Any, Dict, Iterator, List, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.steps.row import RecordStat
from tfrecorder_component.io import sorted_runs

RUN_ENTRIES = 100_000     # entries a worker sorts in memory before writing a run
RANGE_BYTES = 16 * 2**20  # entry bytes one merge task takes, about
BUCKETS = 256             # by the digest's first byte
_MAGIC = b'TFRDUPS1'
_ENTRY = struct.Struct('>32sIH')  # raw SHA-256, URI length, split length
_HEADER = struct.Struct(f'>{BUCKETS + 1}Q')  # where each bucket starts, and the end

# An entry is one bytes object: the raw digest, the URI's and the split's lengths, the
# URI and the split (about 100 bytes, where a tuple of three took about 220). Sorting
# entries sorts them by digest first.


def entry(stat: RecordStat) -> bytes:
  """A record's packed entry for the duplicate index (the layout above).

  Args:
    stat: the written record's stat; its `sha256` (hex), `uri` and `split` are packed.
  """
  uri, split = stat.uri.encode('utf-8', 'surrogatepass'), stat.split.encode('utf-8')
  return _ENTRY.pack(bytes.fromhex(stat.sha256), len(uri), len(split)) + uri + split


def _member(packed: bytes) -> Tuple[str, str]:
  _, uri_length, _ = _ENTRY.unpack_from(packed)
  at = _ENTRY.size
  return (packed[at:at + uri_length].decode('utf-8', 'surrogatepass'),
          packed[at + uri_length:].decode('utf-8'))


def write_run(path: str, entries: List[bytes]) -> int:
  """Writes `entries`, sorted, as a run file at `path`; returns its size in bytes.

  Args:
    path: the new run file, under the index folder (any file system).
    entries: packed entries (`entry`); sorted in place.
  """
  entries.sort()
  offsets, at, bucket = [], 0, 0
  for packed in entries:
    while bucket <= packed[0]:
      offsets.append(at)
      bucket += 1
    at += len(packed)
  offsets += [at] * (BUCKETS + 1 - len(offsets))
  with files.create_file(path) as f:
    f.write(_MAGIC + _HEADER.pack(*offsets))
    f.write(b''.join(entries))
  return len(_MAGIC) + _HEADER.size + at


def read_slice(path: str, first: int, end: int) -> Iterator[bytes]:
  """The entries of buckets [first, end) of a run file, in order, read a block at a time.

  Args:
    path: a run file that `write_run` wrote; any other raises ValueError.
    first: the first bucket (a digest's first byte, 0 to 255) to read.
    end: the bucket after the last to read, 1 to 256.
  """
  with files.open_file(path) as f:
    head = f.read(len(_MAGIC) + _HEADER.size)
    if head[:len(_MAGIC)] != _MAGIC:
      raise ValueError(f'{path} is not a duplicate-index run')
    offsets = _HEADER.unpack_from(head, len(_MAGIC))
    f.seek(len(head) + offsets[first])
    yield from sorted_runs.read_entries(f, _entry_size, _ENTRY.size, path,
                                 offsets[end] - offsets[first])


def _entry_size(buffer: bytes, at: int) -> int:
  _, uri_length, split_length = _ENTRY.unpack_from(buffer, at)
  return _ENTRY.size + uri_length + split_length


def ranges(runs: List[Tuple[str, int]],
            range_bytes: int) -> Iterator[Tuple[int, int, Tuple[str, ...]]]:
  """Hash ranges of whole buckets, about `range_bytes` of entries each, with every run:
  (first bucket, end bucket, run paths) tasks for `merge_range`; none without runs.

  Args:
    runs: (path, size in bytes) of each run file, as `write_run` wrote them.
    range_bytes: about how many bytes of entries one range takes (RANGE_BYTES); the
      ranges are 1 to 256.
  """
  if not runs:
    return
  total = sum(size for _, size in runs)
  count = max(1, min(BUCKETS, -(-total // range_bytes)))
  paths = tuple(sorted(path for path, _ in runs))
  bounds = [round(i * BUCKETS / count) for i in range(count + 1)]
  for first, end in zip(bounds, bounds[1:]):
    yield first, end, paths


def describe(sha256: str, members) -> Dict[str, Any]:
  """A repeated hash as duplicates.jsonl has it.

  Args:
    sha256: the content hash, in hex.
    members: the (URI, split) pair of each record with that hash, in any order.
  """
  members = sorted(members)
  splits = sorted({split for _, split in members})
  return {'sha256': sha256, 'uris': [u for u, _ in members],
          'splits': [s for _, s in members], 'cross_split': len(splits) > 1}


def merge_range(task: Tuple[int, int, Tuple[str, ...]]) -> Iterator[Dict[str, Any]]:
  """A dict per hash seen more than once in a range (`describe`). The runs' slices are
  merged as they are read, a block of each at a time.

  Args:
    task: (first bucket, end bucket, run paths), as `ranges` gives it.
  """
  first, end, paths = task
  group: List[bytes] = []
  for packed in heapq.merge(*(read_slice(p, first, end) for p in paths)):
    if group and packed[:32] != group[0][:32]:
      yield from _repeated(group)
      group = []
    group.append(packed)
  yield from _repeated(group)


def _repeated(group: List[bytes]) -> Iterator[Dict[str, Any]]:
  if len(group) > 1:
    yield describe(group[0][:32].hex(), [_member(p) for p in group])
