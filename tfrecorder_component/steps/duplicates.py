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

The same index finds records given one `image/source_id` where it is not the image URI
(a COCO image id, `source_id='number'`): each such record adds a second entry keyed by
the SHA-256 of its source id, and a source id that records of different images (another
URI or other bytes) hold is one dict with a `source_id` (`describe_source_id`), which
summary.json counts (`steps.report.add_duplicate`) instead of duplicates.jsonl.
"""
from __future__ import annotations

import hashlib
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
# raw SHA-256 (of the image, or of the source id), kind, URI length, split length, the
# length of what follows them (a source id entry: the image's raw SHA-256, its source id)
_ENTRY = struct.Struct('>32sBIHH')
_HEADER = struct.Struct(f'>{BUCKETS + 1}Q')  # where each bucket starts, and the end
_CONTENT, _SOURCE_ID = 0, 1  # the kinds of entry
_KEY = 33  # the bytes entries of one group share: the digest and the kind

# An entry is one bytes object: the raw digest, its kind, the lengths, the URI, the
# split and, for a source id, the image's digest and the source id (about 100 bytes,
# where a tuple of three took about 220). Sorting entries sorts them by digest first.


def _pack(digest: bytes, kind: int, uri: str, split: str, extra: bytes = b'') -> bytes:
  uri_bytes, split_bytes = uri.encode('utf-8', 'surrogatepass'), split.encode('utf-8')
  return (_ENTRY.pack(digest, kind, len(uri_bytes), len(split_bytes), len(extra))
          + uri_bytes + split_bytes + extra)


def entry(stat: RecordStat) -> bytes:
  """A record's packed entry for the duplicate index (the layout above): its image's.

  Args:
    stat: the written record's stat; its `sha256` (hex), `uri` and `split` are packed.
  """
  return _pack(bytes.fromhex(stat.sha256), _CONTENT, stat.uri, stat.split)


def entries(stats) -> Iterator[bytes]:
  """The index's entries of written records: each record's image (`entry`), and its
  source id where it is not the URI (`RecordStat.source_id`).

  Args:
    stats: the written records' RecordStats (any iterable).
  """
  for stat in stats:
    yield entry(stat)
    if stat.source_id:
      sid = stat.source_id.encode('utf-8', 'surrogatepass')
      yield _pack(hashlib.sha256(b'image/source_id\0' + sid).digest(), _SOURCE_ID, stat.uri,
                  stat.split, bytes.fromhex(stat.sha256) + sid)


def _member(packed: bytes) -> Tuple[str, str]:
  _, _, uri_length, split_length, _ = _ENTRY.unpack_from(packed)
  at = _ENTRY.size
  return (packed[at:at + uri_length].decode('utf-8', 'surrogatepass'),
          packed[at + uri_length:at + uri_length + split_length].decode('utf-8'))


def _extra(packed: bytes) -> bytes:
  _, _, uri_length, split_length, _ = _ENTRY.unpack_from(packed)
  return packed[_ENTRY.size + uri_length + split_length:]


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
  _, _, uri_length, split_length, extra_length = _ENTRY.unpack_from(buffer, at)
  return _ENTRY.size + uri_length + split_length + extra_length


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


def describe_source_id(source_id: str, members, in_a_split: bool) -> Dict[str, Any]:
  """A source id that records of different images hold, as summary.json lists it.

  Args:
    source_id: the `image/source_id` they hold.
    members: the (URI, split) pair of each record holding it, in any order.
    in_a_split: whether one split holds two of those images (another URI or other
      bytes), which an evaluation of that split by image id mixes up.
  """
  members = sorted(members)
  return {'source_id': source_id, 'uris': [u for u, _ in members],
          'splits': [s for _, s in members],
          'cross_split': len({s for _, s in members}) > 1, 'in_a_split': in_a_split}


def is_source_id_group(group: Dict[str, Any]) -> bool:
  """Whether a dict of `merge_range` is a source id several images hold
  (`describe_source_id`), not a repeated image (`describe`).

  Args:
    group: a dict `merge_range` yielded.
  """
  return 'source_id' in group


def merge_range(task: Tuple[int, int, Tuple[str, ...]]) -> Iterator[Dict[str, Any]]:
  """A dict per hash seen more than once in a range (`describe`), and per source id
  that records of different images hold (`describe_source_id`). The runs' slices are
  merged as they are read, a block of each at a time.

  Args:
    task: (first bucket, end bucket, run paths), as `ranges` gives it.
  """
  first, end, paths = task
  group: List[bytes] = []
  for packed in heapq.merge(*(read_slice(p, first, end) for p in paths)):
    if group and packed[:_KEY] != group[0][:_KEY]:
      yield from _repeated(group)
      group = []
    group.append(packed)
  yield from _repeated(group)


def _repeated(group: List[bytes]) -> Iterator[Dict[str, Any]]:
  if len(group) < 2:
    return
  if group[0][32] == _CONTENT:
    yield describe(group[0][:32].hex(), [_member(p) for p in group])
    return
  members = [_member(p) for p in group]
  images: Dict[str, set] = {}  # split: its (URI, image digest) pairs
  for (uri, split), p in zip(members, group):
    images.setdefault(split, set()).add((uri, _extra(p)[:32]))
  if len(set().union(*images.values())) > 1:  # one image listed twice is a duplicate only
    yield describe_source_id(_extra(group[0])[32:].decode('utf-8', 'surrogatepass'), members,
                             any(len(pairs) > 1 for pairs in images.values()))
