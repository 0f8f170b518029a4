"""Converting chunks of rows into records in Beam, with the label vocabulary as a side
input; every per-row step is `record.convert_row`."""
from __future__ import annotations

import collections
import concurrent.futures
import os
import sys
import threading
import time
from typing import Any, Deque, Dict, List, NamedTuple, Optional, Tuple

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from tfrecorder_component import files
from tfrecorder_component import labels as labels_lib
from tfrecorder_component import record as record_lib
from tfrecorder_component import storage
from tfrecorder_component.beam.chunks import ROWS_PER_BATCH, Chunk, unpack_chunk
from tfrecorder_component.beam.outputs import (BOX_ISSUES, ERRORS, METRICS_NAMESPACE, SAMPLES,
                                               STATS)
from tfrecorder_component.errors import ManifestError, RowError, error_record
from tfrecorder_component.images import thumbnail as thumbnail_lib
from tfrecorder_component.manifest import ManifestRow, Task
from tfrecorder_component.options import ConversionOptions

__all__ = ['ConvertBatches', 'LabelVocabulary', 'Records', 'SAMPLES_PER_LABEL']

SAMPLES_PER_LABEL = 8  # thumbnails per label on report.html's contact sheet
# ConvertBatches' main output: (split, serialized tf.train.Examples of one batch)
Records = Tuple[str, List[bytes]]


_POOLS: Dict[int, concurrent.futures.ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _read_pool(threads: int) -> concurrent.futures.ThreadPoolExecutor:
  """This process's pool of `threads` readers, shared by every DoFn instance in it (a
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
  Local files are not read here: `convert_row` reads them in line, as before."""

  def __init__(self, threads: int):
    self._threads = threads
    self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None

  def submit(self, row: ManifestRow, max_bytes: int) -> Optional[Dict[str, Any]]:
    """{uri: future of its bytes (`files.read_bytes`, so a failed read's future raises
    its RowError)} for the row's remote files, or None."""
    uris = [u for u in (row.resolved_uri, row.resolved_mask_uri)
            if u is not None and storage.is_remote(u)]
    if not uris:
      return None
    if self._pool is None:
      storage.prepare_file_systems(*uris)
      self._pool = _read_pool(self._threads)
    return {u: self._pool.submit(files.read_bytes, u, max_bytes) for u in uris}


def _reader(fetched: Optional[Dict[str, Any]]) -> record_lib.Read:
  """`convert_row`'s read: the bytes fetched ahead where there are some."""
  if not fetched:
    return files.read_bytes

  def read(uri: str, max_bytes: int) -> bytes:
    future = fetched.get(uri)
    return files.read_bytes(uri, max_bytes) if future is None else future.result()
  return read


class _Pending(NamedTuple):
  row: ManifestRow
  fetched: Optional[Dict[str, Any]]  # _ReadAhead.submit's futures, None for local files
  ends_batch: bool


class _ConvertBatch(beam.DoFn):
  """A Chunk of rows in; per split, batches of serialized Examples out. The error records
  a chunk carries (rows that failed to parse) go out as they are, so every error of the
  run leaves from this step.

  For each row: label ids from the vocabulary, read, probe and decode check, boxes
  checked (see `boxes`), optional image transform, split, Example. Side outputs: one
  error record per failed row (`errors`), one list of RecordStats per batch (`stats`),
  one record per dropped or clipped box (`box_issues`).

  Images on remote storage are read ahead: up to `2 * concurrent_reads` rows of the
  bundle wait with their reads in flight (`concurrent_reads` at a time in the worker
  process), across the bundle's chunks, and are converted in order; the rest of the
  bundle is converted in `finish_bundle`. Rows, batches and their order are the same as
  reading in line.
  """

  def __init__(self, options: ConversionOptions):
    self._options = options
    self._ids: Tuple[Any, Dict[str, int]] = (None, {})
    self._sampled: Dict[str, int] = {}
    self._loaded = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_loaded')
    self._converted = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_converted')
    self._failed = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_failed')
    self._bytes = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'image_bytes_read')

  def setup(self):
    storage.prepare_file_systems()
    self._read_ahead = _ReadAhead(self._options.concurrent_reads)

  def start_bundle(self):
    self._pending: Deque[_Pending] = collections.deque()
    self._vocabulary: Optional[Dict[str, Any]] = None
    self._batch = _Batch()

  def _samples(self, labels: Tuple[str, ...], uri: str, out: record_lib.ConvertedRow):
    """(label, (uri, thumbnail)) for each of the record's labels (or '(none)') of which
    this DoFn instance has seen fewer than SAMPLES_PER_LABEL records, so every label
    appears on the contact sheet; detection thumbnails show the boxes with their class
    names and masks, segmentation ones the class mask. The contact sheet costs a few
    decodes, never a second read."""
    wanted = [label for label in (labels or ('(none)',))
              if self._sampled.get(label, 0) < SAMPLES_PER_LABEL]
    if not wanted:
      return []
    for label in wanted:
      self._sampled[label] = self._sampled.get(label, 0) + 1
    objects = out.objects or ()
    thumbnail = thumbnail_lib.thumbnail(
        out.data, [(o.label, o.box) for o in objects],
        [(o.label, o.mask) for o in objects if o.mask is not None], out.class_mask)
    return [] if thumbnail is None else [(label, (uri, thumbnail)) for label in wanted]

  def _label_ids(self, vocabulary: Dict[str, Any]) -> Dict[str, int]:
    if self._ids[0] is not vocabulary:  # the side input is the same object per bundle
      self._ids = (vocabulary, dict(zip(vocabulary['labels'], vocabulary['ids'])))
    return self._ids[1]

  def process(self, chunk: Chunk, vocabulary: Dict[str, Any]):
    self._vocabulary = vocabulary
    rows = []
    for item in unpack_chunk(chunk):
      if isinstance(item, ManifestRow):
        rows.append(item)
      else:  # the error record of a row that failed to parse or merge
        yield beam.pvalue.TaggedOutput(ERRORS, item)
    window = 2 * self._options.concurrent_reads
    for start in range(0, len(rows), ROWS_PER_BATCH):
      batch = rows[start:start + ROWS_PER_BATCH]
      for i, row in enumerate(batch):
        self._pending.append(_Pending(row, self._read_ahead.submit(row, self._options.max_bytes),
                                      i == len(batch) - 1))
        yield from self._convert_pending(window)

  def finish_bundle(self):
    for out in self._convert_pending(0):
      if isinstance(out, beam.pvalue.TaggedOutput):
        yield beam.pvalue.TaggedOutput(out.tag, _in_global_window(out.value))
      else:
        yield _in_global_window(out)

  def _convert_pending(self, window: int):
    """Converts the pending rows at the head of the queue: those read in line, and the
    oldest while more than `window` wait."""
    pending = self._pending
    while pending and (len(pending) > window or pending[0].fetched is None):
      row, fetched, ends_batch = pending.popleft()
      yield from self._convert(row, fetched)
      if ends_batch:
        yield from self._end_batch()

  def _convert(self, row: ManifestRow, fetched: Optional[Dict[str, Any]]):
    batch = self._batch
    batch.rows += 1
    try:
      out = record_lib.convert_row(row, self._label_ids(self._vocabulary), self._options,
                                   _reader(fetched))
    except RowError as e:
      self._failed.inc()
      batch.failed += 1
      yield beam.pvalue.TaggedOutput(ERRORS, error_record(e, row))
      return
    for issue in out.box_issues:
      yield beam.pvalue.TaggedOutput(BOX_ISSUES, dict(
          source=row.source, row=row.row, uri=row.image_uri, **issue.as_dict()))
    batch.converted += out.converted
    batch.bytes += out.bytes_read
    batch.records.setdefault(out.split, []).append(out.record)
    batch.stats.append(out.stat)
    for sample in self._samples(out.stat.labels, row.image_uri, out):
      yield beam.pvalue.TaggedOutput(SAMPLES, sample)

  def _end_batch(self):
    batch, self._batch = self._batch, _Batch()
    self._loaded.inc(batch.rows - batch.failed)
    self._converted.inc(batch.converted)
    self._bytes.inc(batch.bytes)
    if self._options.progress_every_s:
      _PROGRESS.add(batch.rows, batch.failed, self._options.progress_every_s)
    for split, serialized in batch.records.items():
      yield split, serialized
    if batch.stats:
      yield beam.pvalue.TaggedOutput(STATS, batch.stats)


class _Batch:
  """What one batch of rows (ROWS_PER_BATCH of a chunk) has made so far."""

  def __init__(self):
    self.rows = self.failed = self.converted = self.bytes = 0
    self.records: Dict[str, List[bytes]] = {}
    self.stats: List[record_lib.RecordStat] = []


def _in_global_window(value):
  return WindowedValue(value, MIN_TIMESTAMP, [GlobalWindow()])


class _Progress:
  """Rows done, rate and failures of this worker process, printed at most every few
  seconds (each worker of a multi-process run reports its own share)."""

  def __init__(self):
    self._start = self._last = None
    self._rows = self._failed = 0

  def add(self, rows: int, failed: int, every_s: float) -> None:
    now = time.monotonic()
    if self._start is None:
      self._start = self._last = now
    self._rows += rows
    self._failed += failed
    if now - self._last >= every_s:
      self._last = now
      rate = self._rows / max(now - self._start, 1e-9)
      print(f'[{os.getpid()}] {self._rows:,} rows done, {rate:,.0f} rows/s, '
            f'{self._failed:,} failed', file=sys.stderr, flush=True)


_PROGRESS = _Progress()


class ConvertBatches(beam.PTransform):
  """Chunks of rows -> `Records`, (split, [serialized tf.train.Example]) per batch.

  Outputs: `records` (main), `errors` (one dict per failed row), `stats` (a list of
  RecordStat per batch), `box_issues` (one dict per dropped or clipped box) and
  `samples` (contact-sheet thumbnails). Label ids come from `vocabulary`, a singleton
  side input, and are set on rows before any image is read: no image bytes wait for
  the vocabulary.
  """

  def __init__(self, vocabulary, options: ConversionOptions):
    super().__init__()
    self._vocabulary = vocabulary
    self._options = options

  def expand(self, chunks):
    convert = beam.ParDo(_ConvertBatch(self._options), vocabulary=self._vocabulary)
    return chunks | (convert.with_input_types(Chunk, vocabulary=Dict[str, Any])
                     .with_output_types(Records)
                     .with_outputs(ERRORS, STATS, BOX_ISSUES, SAMPLES, main='records'))


class _LabelSetFn(beam.CombineFn):
  """The vocabulary of Chunks of rows (`labels.assign_ids`) and their task:
  classification, detection or segmentation (a run converts one of them)."""

  def __init__(self, given: Optional[labels_lib.GivenLabelMap] = None,
               append_new_labels: bool = False):
    self._given = given
    self._append = append_new_labels

  def create_accumulator(self):
    return set(), set(), set()

  def add_input(self, acc, chunk: Chunk):
    labels, tasks, _, source_ids = chunk
    acc[0].update(labels)
    acc[1].update(t for t in tasks.split(',') if t)  # '': only failed rows
    acc[2].update(source_ids)
    return acc

  def merge_accumulators(self, accumulators):
    accumulators = list(accumulators)
    return tuple(set().union(*(a[k] for a in accumulators)) for k in range(3))

  def extract_output(self, acc):
    labels, tasks, source_pairs = acc
    if len(tasks) > 1:
      raise ManifestError(f'the manifests mix {" and ".join(sorted(tasks))} rows; convert '
                          'them in separate runs')
    task = next(iter(tasks), Task.CLASSIFICATION.value)
    source_ids: Dict[str, List[int]] = {}
    for label, i in sorted(source_pairs):
      source_ids.setdefault(label, []).append(i)
    vocabulary = labels_lib.assign_ids(labels, labels_lib.first_label_id(task), self._given,
                                       self._append, source_ids)
    return {'labels': list(vocabulary.ids), 'ids': list(vocabulary.ids.values()),
            'task': task, 'seen': labels_lib.vocabulary_order(labels),
            'appended': list(vocabulary.appended), 'unknown': list(vocabulary.unknown),
            'conflicts': list(vocabulary.conflicts),
            'given': self._given.source if self._given else None}


class LabelVocabulary(beam.PTransform):
  """The run's vocabulary, one element: {'labels': in id order, 'ids': theirs, 'task',
  'seen': the rows' labels, 'appended' / 'unknown': labels a given label map lacks
  (given new ids / failing their rows), 'conflicts': source ids not kept, one line each,
  'given': where the given label map was read from, or None}. See `labels.assign_ids`."""

  def __init__(self, given: Optional[labels_lib.GivenLabelMap] = None,
               append_new_labels: bool = False):
    super().__init__()
    self._given = given
    self._append = append_new_labels

  def expand(self, chunks):
    return chunks | beam.CombineGlobally(_LabelSetFn(self._given, self._append)
                                         ).with_input_types(Chunk).with_output_types(
                                             Dict[str, Any])
