"""Chunks of rows converted into record batches, without Beam: every per-row step is
`steps.row.convert_row`; what a batch made leaves as tagged outputs (`steps.outputs`),
which the Beam step emits as its tagged outputs and the local run collects. The run's
label vocabulary, fixed before any image is read, is `steps.vocabulary`'s."""
from __future__ import annotations

import bisect
import collections
import concurrent.futures
import contextlib
import os
import threading
import time
from typing import Any, Callable, Deque, Dict, Iterator, List, NamedTuple, Optional, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.output import progress
from tfrecorder_component.steps import row as row_lib
from tfrecorder_component.steps.deadline import RowDeadline, RowTooSlow, Where, too_slow_record
from tfrecorder_component.io import storage
from tfrecorder_component.errors import RowError, error_record
from tfrecorder_component.images import thumbnail as thumbnail_lib
from tfrecorder_component.manifest.class_map import DROPPED
from tfrecorder_component.manifest import ManifestRow
from tfrecorder_component.options import ConversionOptions
from tfrecorder_component.steps.chunks import ROWS_PER_BATCH, Chunk, unpack_chunk
from tfrecorder_component.steps.outputs import BOX_ISSUES, ERRORS, RECORDS, SAMPLES, STATS

__all__ = ['BATCH', 'ChunkConverter', 'Output', 'SAMPLES_PER_LABEL']

SAMPLES_PER_LABEL = 8  # thumbnails per label on report.html's contact sheet
# What each batch did, for metrics and progress: (rows, failed, converted, bytes read).
BATCH = 'batch'
# One output of a chunk's conversion: (tag, value), the tag one of steps.outputs' or BATCH.
Output = Tuple[str, Any]
# A batch's records leave (RECORDS) once this many of their bytes wait, not at the batch's
# end: a shard's write then copies records still in the core's cache. A batch's 64 photos
# (3.4 MB) written at once cost the kernel's copy into the page cache about 1 CPU-s more
# a GB on 2 cores with 4 MiB of L2 each (perf: copy_folio_from_iter_atomic), through
# fewer and larger writes; 256 KiB matched the system time of the work floor's writes.
RECORD_BYTES_HELD = 1 << 18

_POOLS: Dict[int, concurrent.futures.ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _forget_pools() -> None:
  """In a process forked from this one (`engines/local/`'s workers): the parent's reader
  threads are not there; the child starts its own pool (and its own deadline monitor)."""
  global _POOLS_LOCK
  _POOLS_LOCK = threading.Lock()
  _POOLS.clear()
  RowDeadline.forget()


os.register_at_fork(after_in_child=_forget_pools)


def _read_pool(threads: int) -> concurrent.futures.ThreadPoolExecutor:
  """This process's pool of `threads` readers, shared by every converter in it (a
  runner may run several per process, Dataflow one per worker thread), so the reads in
  flight are bounded per worker process; its threads start as they are needed."""
  with _POOLS_LOCK:
    if threads not in _POOLS:
      _POOLS[threads] = concurrent.futures.ThreadPoolExecutor(
          threads, thread_name_prefix='tfrecorder-read')
    return _POOLS[threads]


class _ReadAhead:
  """Reads of remote images kept in flight on the process's reader pool, so that a
  worker converts what has arrived while the next rows' requests wait on the network.
  Local files are not read here: `convert_row` reads them in line."""

  def __init__(self, threads: int, confinement=None):
    self._threads = threads
    self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
    self._confinement = confinement  # the run's roots: nothing outside is fetched

  def submit(self, row: ManifestRow, max_bytes: int) -> Optional[Dict[str, Any]]:
    """{uri: future of its bytes (`files.read_bytes`, so a failed read's future raises
    its RowError)} for the row's remote files inside the run's roots, or None."""
    uris = [u for u in (row.resolved_uri, row.resolved_mask_uri)
            if u is not None and storage.is_remote(u) and not (
                self._confinement is not None and self._confinement.outside(u))]
    if not uris:
      return None
    if self._pool is None:
      storage.prepare_file_systems(*uris)
      self._pool = _read_pool(self._threads)
    return {u: self._pool.submit(files.read_bytes, u, max_bytes) for u in uris}


_WAIT_S = 0.5  # a wait on a read fetched ahead returns to Python this often (`deadline`)


def _reader(fetched: Optional[Dict[str, Any]]) -> row_lib.Read:
  """`convert_row`'s read: the bytes fetched ahead where there are some, waited for
  _WAIT_S at a time, so that a row past its deadline (`deadline.RowDeadline`) stops
  waiting."""
  if not fetched:
    return files.read_bytes

  def read(uri: str, max_bytes: int) -> bytes:
    future = fetched.get(uri)
    if future is None:
      return files.read_bytes(uri, max_bytes)
    while True:
      try:
        return future.result(timeout=_WAIT_S)
      except concurrent.futures.TimeoutError:
        continue
  return read


class _Pending(NamedTuple):
  row: ManifestRow
  fetched: Optional[Dict[str, Any]]  # _ReadAhead.submit's futures, None for local files
  ends_batch: bool
  where: Where  # (the chunk's tag, the row's index among its items), for a watch


@contextlib.contextmanager
def _watched(watch: Callable[[Optional[Where]], None], where: Where):
  """A row converted under a watch (`ChunkConverter.set_watch`): told where the row is
  as it starts, None as it ends."""
  watch(where)
  try:
    yield
  finally:
    watch(None)


class _Batch:
  """What one batch of rows (ROWS_PER_BATCH of a chunk) has made so far."""

  def __init__(self):
    self.rows = self.failed = self.converted = self.bytes = 0
    self.records: Dict[str, List[bytes]] = {}
    self.held = 0  # bytes of `records`
    self.stats: List[row_lib.RecordStat] = []


class ChunkConverter:
  """Chunks of rows in; per batch of rows, outputs tagged (`steps.outputs`): RECORDS
  (split, [serialized Examples]) per split, each time RECORD_BYTES_HELD of them wait and
  at the batch's end, STATS (a list of RecordStat), one ERRORS
  dict per failed row (those that failed to parse ride in the chunk), one BOX_ISSUES
  dict per dropped or clipped box, SAMPLES (label, (uri, thumbnail)) for the contact
  sheet (or (label, (uri, b'', note)) for a thumbnail skipped), and BATCH (rows,
  failed, converted, bytes read).

  For each row: label ids from the vocabulary, read, probe and decode check, boxes
  checked, optional image transform, split, Example (`steps.row.convert_row`), and its
  thumbnail where it starts a label's contact sheet. With `row_time_limit`, a row that
  takes longer fails as `too_slow` (`deadline.RowDeadline`, or the watch of
  `set_watch`).

  Images on remote storage are read ahead: up to `2 * concurrent_reads` rows wait with
  their reads in flight (`concurrent_reads` at a time in the process), across chunks,
  and are converted in order; `finish` converts the rest. Rows, batches and their order
  are the same as reading in line.

  Args:
    options: the run's options: the reads' limits and `concurrent_reads`, the checks,
      the transform and the buckets each row is converted with.
  """

  def __init__(self, options: ConversionOptions):
    self._options = options
    self._ids: Tuple[Any, Dict[str, int]] = (None, {})
    self._vocabulary: Optional[Dict[str, Any]] = None
    self._sampled: Dict[str, List[str]] = {}
    self._read_ahead = _ReadAhead(options.concurrent_reads, options.confinement)
    self._pending: Deque[_Pending] = collections.deque()
    self._batch = _Batch()
    limit = options.row_time_limit
    self._deadline: Optional[RowDeadline] = RowDeadline(limit) if limit else None
    self._watch: Optional[Callable[[Optional[Where]], None]] = None

  def set_watch(self, watch: Callable[[Optional[Where]], None]) -> None:
    """Has `watch(where)` called as each row starts, where = (its chunk's tag, its index
    among the chunk's items), and `watch(None)` as it ends, in place of the in-process
    `RowDeadline`: the process that forked this one then enforces the time limit
    (`engines.local.pool.RowClock`).

    Args:
      watch: Called with the row's Where as it starts, with None as it ends.
    """
    self._watch = watch
    self._deadline = None

  def convert(self, chunk: Chunk, vocabulary: Dict[str, Any], tag: Any = None) -> Iterator[Output]:
    """The outputs of the chunk's rows converted so far (remote ones may wait).

    Args:
      chunk: the Chunk to convert; its error records leave at once, tagged ERRORS.
      vocabulary: the run's vocabulary (`VocabularyBuilder.vocabulary`), whose 'labels'
        and 'ids' give the rows' label ids; the same object for a bundle.
      tag: what names the chunk to a watch (`set_watch`): the local run's chunk index.
    """
    self._vocabulary = vocabulary
    rows = []
    for position, item in enumerate(unpack_chunk(chunk)):
      if isinstance(item, ManifestRow):
        rows.append((position, item))
      else:  # the error record of a row that failed to parse or merge
        progress.count(1, int(item.get('reason') != DROPPED))  # left out: not failed
        yield ERRORS, item
    window = 2 * self._options.concurrent_reads
    for start in range(0, len(rows), ROWS_PER_BATCH):
      batch = rows[start:start + ROWS_PER_BATCH]
      for i, (position, row) in enumerate(batch):
        self._pending.append(_Pending(row, self._read_ahead.submit(row, self._options.max_bytes),
                                      i == len(batch) - 1, (tag, position)))
        yield from self._convert_pending(window)

  def finish(self) -> Iterator[Output]:
    """The outputs of the rows still waiting on their reads."""
    yield from self._convert_pending(0)

  def _convert_pending(self, window: int) -> Iterator[Output]:
    """Converts the pending rows at the head of the queue: those read in line, and the
    oldest while more than `window` wait."""
    pending = self._pending
    while pending and (len(pending) > window or pending[0].fetched is None):
      row, fetched, ends_batch, where = pending.popleft()
      yield from self._convert(row, fetched, where)
      if ends_batch:
        yield from self._end_batch()

  def _label_ids(self) -> Dict[str, int]:
    vocabulary = self._vocabulary
    if self._ids[0] is not vocabulary:  # the side input is the same object per bundle
      self._ids = (vocabulary, dict(zip(vocabulary['labels'], vocabulary['ids'])))
    return self._ids[1]

  def _guard(self, where: Where):
    """What a row is converted under: the watch (`set_watch`), the in-process
    `RowDeadline`, or nothing (`row_time_limit` 0)."""
    if self._watch is not None:
      return _watched(self._watch, where)
    return self._deadline if self._deadline is not None else contextlib.nullcontext()

  def _convert(self, row: ManifestRow, fetched: Optional[Dict[str, Any]],
               where: Where) -> Iterator[Output]:
    batch = self._batch
    batch.rows += 1
    started = time.monotonic()
    try:  # the row's whole cost, its thumbnail included, is under the time limit
      with self._guard(where):
        out = row_lib.convert_row(row, self._label_ids(), self._options, _reader(fetched))
        samples = self._samples(out.stat.labels, row.image_uri, out)
    except RowError as e:
      batch.failed += 1
      progress.count(1, 1)
      yield ERRORS, error_record(e, row)
      return
    except RowTooSlow:
      batch.failed += 1
      progress.count(1, 1)
      yield ERRORS, too_slow_record(row, self._options.row_time_limit,
                                    time.monotonic() - started)
      return
    progress.count(1, 0)  # per row: a batch of large remote images may take seconds
    for issue in out.box_issues:
      yield BOX_ISSUES, dict(source=row.source, row=row.row, uri=row.image_uri,
                             **issue.as_dict())
    batch.converted += out.converted
    batch.bytes += out.bytes_read
    batch.records.setdefault(out.split, []).append(out.record)
    batch.held += len(out.record)
    batch.stats.append(out.stat)
    for sample in samples:
      yield SAMPLES, sample
    if batch.held >= RECORD_BYTES_HELD:
      yield from self._records(batch)

  def _end_batch(self) -> Iterator[Output]:
    batch, self._batch = self._batch, _Batch()
    yield BATCH, (batch.rows, batch.failed, batch.converted, batch.bytes)
    yield from self._records(batch)
    if batch.stats:
      yield STATS, batch.stats

  @staticmethod
  def _records(batch: _Batch) -> Iterator[Output]:
    """RECORDS (split, [serialized]) for each split the batch's waiting records are of,
    in their order; the batch then holds none."""
    for split, serialized in batch.records.items():
      yield RECORDS, (split, serialized)
    batch.records = {}
    batch.held = 0

  def _samples(self, labels: Tuple[str, ...], uri: str, out: row_lib.ConvertedRow):
    """(label, (uri, thumbnail)) for each of the record's labels (or '(none)') whose
    SAMPLES_PER_LABEL smallest URIs seen by this converter this one is among, so every
    label appears on the contact sheet, and the sheet shows each label's first URIs
    however the rows were spread over workers. Detection thumbnails show the boxes with
    their class names and masks, segmentation ones the class mask. The contact sheet
    costs a few decodes at a bounded cost, never a second read: an image too costly to
    decode (`thumbnail.skip_note`: too many JPEG scans, too many pixels) gives
    (label, (uri, b'', note)), its note shown in its place."""
    wanted = []
    for label in labels or ('(none)',):
      kept = self._sampled.setdefault(label, [])
      if len(kept) < SAMPLES_PER_LABEL or uri < kept[-1]:
        bisect.insort(kept, uri)
        del kept[SAMPLES_PER_LABEL:]
        wanted.append(label)
    if not wanted:
      return []
    objects = out.objects or ()
    thumbnail, note = thumbnail_lib.make(
        out.data, [(o.label, o.box) for o in objects],
        [(o.label, o.mask) for o in objects if o.mask is not None], out.class_mask)
    if note:
      return [(label, (uri, b'', note)) for label in wanted]
    return [] if thumbnail is None else [(label, (uri, thumbnail)) for label in wanted]
