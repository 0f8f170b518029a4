"""The conversion on this machine's cores, without Beam: the same steps (`steps/`) as
`beam.pipeline.ConvertManifests`, the same bytes out, in a fraction of the fixed cost.

    parse manifests into chunk files -> vocabulary -> N worker processes convert chunks
    (each writes its own shard per split, and its shard of every extra layout, spills its
    sorted runs) -> shards named, JSON-lines files merged, duplicates found,
    summary.json and report.html written

Importing Beam takes seconds, building and starting a pipeline and its worker
processes more (each worker imports Beam and this package again): on a small run that
is most of the wall time, and on a large one it delays every core's first row. Here
the workers are forked from this process, which has imported only what converting
needs, so they start in milliseconds; each converts chunks as the others do, taken
from one queue. `run.run_conversion` picks this way for DirectRunner runs whose
manifests and outputs are local or on gs:// or s3:// (shards uploaded as the workers
write them, the rest staged on local disk: `staging`) and whose Beam arguments ask
nothing of the runner.

Nothing that grows with the rows is held by one process: rows travel as chunk files,
records go straight from a worker to its shard, and the report's JSON-lines files and
the duplicate index are the same external sorts the Beam steps use.

Length: one engine: its worker pool, the isolation of a crashing row, and the merge of
the workers' shards and sorted runs, which share the run's state.
"""
from __future__ import annotations

import collections
import ctypes
import heapq
import logging
import multiprocessing
import multiprocessing.connection
import os
import posixpath
import shutil
import signal
import tempfile
import threading
import time
import traceback
import uuid
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.record import labels as labels_lib
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.output import progress as progress_lib
from tfrecorder_component.io import storage
from tfrecorder_component.errors import RowError, error_record
from tfrecorder_component.manifest import ManifestRow
from tfrecorder_component.manifest.parts import Part, plan_parts
from tfrecorder_component.options import ConversionOptions, ManifestSource
from tfrecorder_component.steps import duplicates as duplicates_lib
from tfrecorder_component.steps import jsonl
from tfrecorder_component.steps import report
from tfrecorder_component.steps import shards as shards_lib
from tfrecorder_component.io import tfrecord as tfrecord_lib
from tfrecorder_component.output import layouts as layouts_registry
from tfrecorder_component.output.layouts import base as layouts_base
from tfrecorder_component.output import examples_json as index_lib
from tfrecorder_component.steps.chunks import (CHUNK, ROWS_PER_BATCH, Chunk, merged_item,
                                               pack_chunk, parse_manifest, unpack_chunk)
from tfrecorder_component.steps.convert_chunks import (SAMPLES_PER_LABEL, ChunkConverter,
                                                       too_slow_record)
from tfrecorder_component.steps.vocabulary import VocabularyBuilder
from tfrecorder_component.steps.outputs import BOX_ISSUES, ERRORS, OBJECTS, RECORDS, SAMPLES, STATS
from tfrecorder_component.io.sorted_runs import RunSpiller
from tfrecorder_component.io.sort import ExternalSort, SortBudget, unpacked_value

__all__ = ['convert_locally']

# Rows a chunk holds at least (a file's rows are cut into at most MAX_CHUNKS_PER_FILE
# chunks): the unit a worker takes from the queue.
CHUNK_ROWS = ROWS_PER_BATCH
# The rows of detection manifests with a row a box (AutoML CSV, Vertex AI JSONL), held
# in this process while they are read, at most this many bytes: past it they are
# written as sorted runs to local temporary disk and merged back an image at a time
# (`io.sort`), as Beam's GroupByKey groups them.
OBJECT_ROWS_BYTES = 64 << 20
# The reason of a row whose conversion ended its worker process (`_convert_chunks`).
CRASHED = 'crashed'

def _json_lines(report_dir: str, name: str) -> RunSpiller:
  """Sorted runs of the JSON-lines file `name`'s entries (`jsonl.entry`), in the scratch
  folder `jsonl.merge_runs` removes."""
  return RunSpiller(output_paths.work_dir(report_dir, name), jsonl.RUN_LINES, jsonl.write_run)


class _Worker:
  """What one worker process makes of the chunks it takes: its shard (or temporary
  bundle file) per split and, with `layouts_dir`, that shard in every extra layout
  (`layouts.base.InlineShard`), its counts, its sorted runs and its samples, handed back
  by `result()`."""

  def __init__(self, options: ConversionOptions, vocabulary: Dict[str, Any],
               split_dirs: Optional[Mapping[str, str]], report_dir: str,
               first_error_of, layouts_dir: Optional[str] = None):
    self._options = options
    # Where the extra layouts are written as the records are (None: from the finished
    # TFX shards, after the run: `_write_layouts`).
    self._layouts_dir = layouts_dir
    self._inline: Dict[str, layouts_base.InlineShard] = {}
    self._unsigned: Dict[str, List[List[bytes]]] = {}  # a batch's records till its STATS
    self._placed: Dict[str, Dict[str, Any]] = {}  # {TFX file: its InlineShard's close()}
    self._vocabulary = vocabulary
    self._split_dirs = split_dirs
    self._report_dir = report_dir
    self._first_error_of = first_error_of
    self._converter = ChunkConverter(options)
    self._writers: Dict[str, tfrecord_lib.ShardWriter] = {}
    self._bundles: List[Tuple[str, str, int, int]] = []
    self._counts = report.new_counts()
    self._errors = _json_lines(report_dir, output_paths.ERRORS_FILE)
    self._box_issues = _json_lines(report_dir, output_paths.BOX_ISSUES_FILE)
    self._first_errors: List[Dict[str, Any]] = []
    self._first_box_issues: List[Dict[str, Any]] = []
    self._index = RunSpiller(output_paths.work_dir(report_dir, output_paths.DUPLICATE_INDEX_DIR),
                             duplicates_lib.RUN_ENTRIES,
                             lambda path, entries: (path, duplicates_lib.write_run(path, entries)))
    self._samples: Dict[str, List[Tuple[str, bytes]]] = {}
    # (k, n): this worker is the k-th of the n that `_pool` first forks, and writes shard k
    # of n of every split under its final name, so that on object storage, where a
    # rename is a copy, no shard is renamed when every worker ends well (`_name_shards`).
    # None: a worker forked to convert again what another's death left (temporary names).
    self.slot: Optional[Tuple[int, int]] = None

  def convert(self, chunk: Chunk, index: int = -1) -> None:
    self._take(self._converter.convert(chunk, self._vocabulary, index))

  def watch(self, watch) -> None:
    """Has the process that forked this worker's enforce the row time limit: `watch` is
    told where each row is as it starts (`_RowClock.watch`)."""
    self._converter.set_watch(watch)

  def result(self) -> Dict[str, Any]:
    self._take(self._converter.finish())
    if self.slot is not None and self._split_dirs is not None and not self._planned:
      for split in self._split_dirs:  # its shard of a split it had no record of: empty
        if split not in self._writers:
          self._open(split)
    for writer in self._writers.values():  # every shard's upload tail at once
      writer.finish()
    for split in list(self._writers):
      self._close(split)
    for spiller in (self._errors, self._box_issues, self._index):
      spiller.spill()
    return {'bundles': self._bundles, 'counts': self._counts,
            'error_runs': self._errors.runs, 'box_issue_runs': self._box_issues.runs,
            'first_errors': self._first_errors, 'first_box_issues': self._first_box_issues,
            'index_runs': self._index.runs, 'samples': self._samples,
            'inline': self._placed}

  def _take(self, outputs) -> None:
    for tag, value in outputs:
      if tag == RECORDS:
        self._write(*value)
      elif tag == STATS:
        self._write_inline(value)
        report.count(self._counts, report.stat_counts(value))
        self._index.add(duplicates_lib.entries(value))
      elif tag == ERRORS:
        value = self._first_error_of(value)
        report.count(self._counts, report.error_count(value))
        self._errors.add((jsonl.entry(value, report.error_key),))
        self._first_errors = _first(self._first_errors, value, report.error_order)
      elif tag == BOX_ISSUES:
        report.count(self._counts, report.box_issue_count(value))
        self._box_issues.add((jsonl.entry(value, report.box_issue_key),))
        self._first_box_issues = _first(self._first_box_issues, value,
                                        report.box_issue_order)
      elif tag == SAMPLES:
        label, sample = value
        kept = self._samples.setdefault(label, [])
        kept.append(sample)
        if len(kept) > 2 * SAMPLES_PER_LABEL:
          self._samples[label] = heapq.nsmallest(SAMPLES_PER_LABEL, kept)

  def _write(self, split: str, records: List[bytes]) -> None:
    if self._split_dirs is None:  # a validation: no record is kept
      return
    writer = self._writers.get(split) or self._open(split)
    writer.write(records)
    if self._layouts_dir is not None:
      self._unsigned.setdefault(split, []).append(records)
    if self._planned and writer.bytes >= shards_lib.TEMP_FILE_BYTES:
      self._close(split)

  def _write_inline(self, stats) -> None:
    """Hands the batch's records, now that their stats (in the same order, split by
    split) have come, to each split's InlineShard."""
    if not self._unsigned:
      return
    signatures: Dict[str, List[str]] = {}
    for stat in stats:
      signatures.setdefault(stat.split, []).append(stat.features)
    for split, batches in self._unsigned.items():
      records = [r for batch in batches for r in batch]
      inline = self._inline.get(split)
      if inline is None:
        inline = self._inline[split] = layouts_base.InlineShard(
            self._options.layouts, self._layouts_dir, split, self._vocabulary['task'],
            dict(zip(self._vocabulary['labels'], self._vocabulary['ids'])))
      inline.write(records, signatures[split])
    self._unsigned = {}

  def _open(self, split: str) -> tfrecord_lib.ShardWriter:
    """A new file for `split`'s records: shard k of n under its final name for the k-th
    worker of `_pool`'s first n (`slot`), else a temporary `.part-` file that
    `_name_shards` names (in the report's work folder where shards are planned)."""
    if self._planned:
      path = posixpath.join(output_paths.work_dir(self._report_dir, 'bundles', split),
                            f'.part-{uuid.uuid4().hex}.gz')
    elif self.slot is not None:
      path = output_paths.shard_path(self._split_dirs[split], *self.slot)
    else:
      path = posixpath.join(self._split_dirs[split], f'.part-{uuid.uuid4().hex}.gz')
    writer = self._writers[split] = tfrecord_lib.ShardWriter(path, self._options.compression_level)
    return writer

  @property
  def _planned(self) -> bool:
    return bool(self._options.num_shards or self._options.shard_size_mb)

  def _close(self, split: str) -> None:
    writer = self._writers.pop(split)
    writer.close()
    self._bundles.append((split, writer.path, writer.records, writer.bytes))
    inline = self._inline.pop(split, None)
    if inline is not None and self._unsigned.pop(split, None):  # records it never had
      inline.abort()
    elif inline is not None:
      self._placed[writer.path] = inline.close()


def _first(kept: List[Dict[str, Any]], record: Dict[str, Any], order) -> List[Dict[str, Any]]:
  """`kept` with `record`, keeping the report.FIRST_ERRORS first by `order`."""
  kept.append(record)
  if len(kept) > 2 * report.FIRST_ERRORS:
    kept = heapq.nsmallest(report.FIRST_ERRORS, kept, key=order)
  return kept


# ------------------------------------------------------------------ worker processes
# glibc's mallopt parameters (malloc.h) and what a worker sets them to.
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
_KEPT_HEAP = ((_M_TRIM_THRESHOLD, 64 << 20), (_M_TOP_PAD, 16 << 20),
              (_M_MMAP_THRESHOLD, 32 << 20))


def _keep_freed_heap() -> None:
  """Lets a worker process keep up to 64 MiB of freed heap instead of giving it back.

  By default glibc returns the top of the heap to the system as soon as 128 KiB of it
  is free, and a worker that reads, checks and frames one ~50 KB image after another
  takes it back with page faults for the next: 27 faults an image, 550,000 and 1.3 s
  of system time for 20,000 photo-like JPEGs on 2 cores. With the heap kept (and
  buffers up to 32 MiB taken from it rather than mapped) that run faults 32,000 times
  and takes 0.7 s less wall time (benchmarks/peers.py, `cli`). Workers are this
  package's own processes, so the setting never reaches a caller's. Elsewhere than
  glibc nothing is done."""
  try:
    mallopt = ctypes.CDLL(None).mallopt
  except (OSError, AttributeError):  # no C library to load, or no mallopt in it
    return
  for parameter, value in _KEPT_HEAP:
    mallopt(parameter, value)


def _work(worker: _Worker, tasks, conn, counts: Optional[progress_lib.SharedCounts] = None,
          slot: int = 0, taken=None, clock: Optional['_RowClock'] = None) -> None:
  """A worker process: converts the (index, chunk) tasks it takes from `tasks` (a queue,
  until None; or a list, its own) and sends ('done', (the indices, its result)) on
  `conn`, its own pipe to the process that forked it, or ('failed', (exception,
  traceback)) at the first failure. The rows it converts are counted in `counts`' slot
  `slot`, which that process reads for the run's progress; `taken` (shared memory, two
  slots a worker) holds the index of the chunk it converts and of the one before,
  whose rows may still wait on their reads (-1: none), for `_convert_chunks` to know
  which chunk ended it if it dies. With `clock`, each row's start and place are written
  in its slot `slot`, and that process stops this one if a row runs too long."""
  _keep_freed_heap()
  if counts is not None:
    progress_lib.set_sink(counts.adder(slot))
  if clock is not None:
    worker.watch(clock.watch(slot))
  try:
    done = []
    for index, chunk in (iter(tasks) if isinstance(tasks, list) else iter(tasks.get, None)):
      if taken is not None:
        taken[2 * slot + 1], taken[2 * slot] = taken[2 * slot], index
      worker.convert(chunk, index)
      done.append(index)
    conn.send(('done', (done, worker.result())))
  except BaseException as e:  # pylint: disable=broad-except
    text = traceback.format_exc()
    try:
      conn.send(('failed', (e, text)))
    except Exception:  # pylint: disable=broad-except  (an exception that cannot be pickled)
      conn.send(('failed', (RuntimeError(f'{type(e).__name__}: {e}'), text)))
  finally:
    conn.close()


# Where processes cannot be forked (Windows), a run converts in its own process.
_FORK = 'fork' in multiprocessing.get_all_start_methods()
# How often the process that forked the workers checks on them and redraws the progress.
POLL_S = progress_lib.DRAW_EVERY_S
# Signals that end a worker because the run is being stopped (Ctrl-C, a supervisor's
# SIGTERM): the run stops. Any other end without a result (SIGSEGV, SIGABRT, SIGBUS,
# SIGKILL from the OOM killer, an exit code) is a crash of what the worker converted.
_STOPPING = frozenset((signal.SIGINT, signal.SIGTERM, signal.SIGHUP))


def _death(exitcode: int) -> str:
  """How a worker process ended, in words: 'SIGSEGV, Segmentation fault' or 'exit code 3'."""
  if exitcode < 0:
    try:
      sig = signal.Signals(-exitcode)
      return f'{sig.name}, {signal.strsignal(sig) or "a signal"}'
    except ValueError:
      return f'signal {-exitcode}'
  return f'exit code {exitcode}'


class _Process:
  """A forked worker process and the read end of its own result pipe: the process that
  forked it holds no write end, so the pipe ends (EOFError) when the worker does, even
  part-way through a message."""

  def __init__(self, context, target, args, slot: int, counts):
    self.slot = slot
    self.counts_before = counts.slot(slot) if counts is not None else (0, 0)
    self.conn, writer = context.Pipe(duplex=False)
    self.process = context.Process(target=target, args=(*args[:2], writer, *args[2:]),
                                   name=f'tfrecorder-worker-{slot}', daemon=True)
    self.process.start()
    writer.close()

  def end(self) -> None:
    if self.process.is_alive():
      self.process.kill()
    self.process.join()
    self.conn.close()


class _RowClock:
  """When each worker process's current row started and which row it is, in shared
  memory made before the fork (one writer a slot, no lock, as `progress.SharedCounts`),
  so that the process that forked them stops a worker whose row runs past the row time
  limit (`stop_late`). Killing the process is the one way to interrupt a row stuck in C
  code (a decode, a read that blocks); the killed worker's row then fails as
  `too_slow`, with how long it had run, and its other rows are converted again, as a
  crashed worker's are (`_convert_chunks`).

  Args:
    slots: How many worker processes are watched (one slot each).
    limit: The row time limit, in seconds (above 0).
  """

  def __init__(self, slots: int, limit: float):
    self.limit = limit
    # Per slot: the row's start (time.monotonic, the same clock in every process; 0: no
    # row), its chunk's index, its index among the chunk's items.
    self._array = multiprocessing.RawArray(ctypes.c_double, 3 * max(1, slots))
    self.late: Dict[int, Tuple[int, int, float]] = {}  # slot: (chunk, item, seconds)

  def watch(self, slot: int):
    """The watch of slot `slot`'s worker (`ChunkConverter.set_watch`)."""
    array, i = self._array, 3 * slot

    def watch(where) -> None:
      if where is None:
        array[i] = 0.0
        return
      array[i + 1], array[i + 2] = where
      array[i] = time.monotonic()  # written last: the row's place is there when it is
    return watch

  def clear(self, slot: int) -> None:
    """Forgets slot `slot`'s row (before a new process takes the slot)."""
    self._array[3 * slot] = 0.0
    self.late.pop(slot, None)

  def stop_late(self, processes: Sequence[_Process]) -> None:
    """Kills each of `processes` whose row has run past the limit, noting in `late` its
    slot's (chunk index, item index, seconds run)."""
    array, now = self._array, time.monotonic()
    for process in processes:
      i = 3 * process.slot
      started = array[i]
      if not started or now - started <= self.limit or process.slot in self.late:
        continue
      chunk, item = int(array[i + 1]), int(array[i + 2])
      if array[i] != started:  # it moved on meanwhile
        continue
      self.late[process.slot] = (chunk, item, now - started)
      logging.warning('A row has been converted for %.1f s, past the row time limit (%g s): '
                      'its worker process is stopped and the row fails as too_slow',
                      now - started, self.limit)
      process.process.kill()


def _without_late_row(chunk: Chunk, item: int, limit: float, seconds: float) -> Chunk:
  """The chunk with its row `item` (one that ran past the row time limit in a process
  that was killed for it) replaced by the row's `too_slow` error record."""
  items = unpack_chunk(chunk)
  row = items[item]
  if not isinstance(row, ManifestRow):
    raise RuntimeError(f'a worker process was stopped past the row time limit while '
                       f'writing the failed row {row!r}')
  logging.warning('%s row %s (%s) took longer than the row time limit (%g s): it fails as '
                  'too_slow', row.source, row.row, row.image_uri, limit)
  items[item] = too_slow_record(row, limit, seconds, 'its worker process was stopped')
  return pack_chunk(items, posixpath.dirname(chunk[2]))


def _collect(processes: List[_Process], poll, crashes: bool,
             clock: Optional[_RowClock] = None):
  """Yields ('done', process, (indices, result)) of each of `processes` as it finishes,
  or ('died', process, exit code) as one ends without its result (with `crashes`, for a
  crash: any end but one of _STOPPING; else RuntimeError), until each has done one or
  the other. A worker's exception is raised here. With `clock`, a worker whose row runs
  past the time limit is killed (`_RowClock.stop_late`): it ends as 'died'."""
  waiting = {p.conn: p for p in processes}
  while waiting:
    if poll is not None:
      poll()
    if clock is not None:
      clock.stop_late(list(waiting.values()))
    for conn in multiprocessing.connection.wait(list(waiting), timeout=POLL_S):
      process = waiting.pop(conn)
      try:
        kind, value = conn.recv()
      except (EOFError, OSError):  # it ended without its result
        process.process.join()
        code = process.process.exitcode
        if not crashes or code == 0 or -code in _STOPPING:
          raise RuntimeError(f'a worker process ended ({_death(code)}) before finishing '
                             'its rows') from None
        yield 'died', process, code
        continue
      if kind == 'failed':
        error, text = value
        raise error from RuntimeError(f'in a worker process:\n{text}')
      yield 'done', process, value


def _convert_chunks(chunks: List[Any], make_worker, workers: int,
                    counts: Optional[progress_lib.SharedCounts] = None,
                    poll: Optional[Callable[[], None]] = None,
                    meanwhile: Optional[Callable[[], None]] = None,
                    rows: bool = False, time_limit: float = 0) -> List[Any]:
  """The workers' results, every chunk (or other task) converted by one of `workers`
  processes forked from this one. `counts`: where each worker counts its rows
  (`progress.count`), slot i for worker i; `poll`: called every POLL_S while they work
  (and after each row counted when this process converts), to redraw the progress;
  `meanwhile`: run on a thread of this process while the workers convert, started once
  they are forked and joined before this returns or forks again (no thread outlives
  it into a later fork), its exception raised here.

  `rows`: the chunks are manifest rows (`Chunk`), converted in forked processes even
  when one is enough, and a worker process that dies while converting (a native crash
  in an image library, the OOM killer) fails only the row that ends it: the chunks it
  had finished go back to a pool of workers, and the chunks it was converting (the
  current one and the one before, whose rows may have waited on their reads) are
  converted a chunk a process, halved until the row that ends its process is alone
  (`_isolate`); that row fails as `crashed`, naming how its process ended. With
  `time_limit` (seconds, rows only), a worker whose row runs longer is killed
  (`_RowClock`) and the row, known from the clock, fails as `too_slow`; its chunk goes
  back to the pool without it, with the dead worker's other chunks. Without `rows`,
  the tasks of one worker are converted in this process, and a worker's death ends the
  run. Where no process can be forked, every task is converted here (and the time limit
  is `steps.deadline.RowDeadline`'s, in this process)."""
  if not rows and (workers <= 1 or len(chunks) <= 1) or not _FORK:
    worker = make_worker()
    with progress_lib.counting(counts.adder(0, poll) if counts is not None else None):
      for chunk in chunks:
        worker.convert(chunk)
      result = [worker.result()]
    if meanwhile is not None:
      meanwhile()
    return result
  limit = time_limit if rows else 0
  done, lost, suspects = _pool(chunks, make_worker, workers, counts, poll, meanwhile, rows,
                               named=rows, time_limit=limit)
  losses: Dict[Chunk, int] = collections.Counter()
  while suspects or lost:
    losses.update(lost)
    # A chunk a dead worker had finished long before is converted in the pool again; one
    # lost twice is a suspect too (its rows' reads may have waited past two chunks).
    suspects += [c for c in lost if losses[c] > 1]
    lost = [c for c in lost if losses[c] <= 1]
    if suspects:
      logging.warning('Converting %d chunk(s) of rows again, each in a process of its own, '
                      'to find the row that ends its worker process', len(suspects))
      done.extend(_isolate(suspects, make_worker, workers, counts, poll, limit))
    more, lost, suspects = (_pool(lost, make_worker, workers, counts, poll, None, True,
                                  time_limit=limit) if lost else ([], [], []))
    done.extend(more)
  return done


def _pool(chunks: List[Any], make_worker, workers: int, counts, poll, meanwhile,
          rows: bool, named: bool = False,
          time_limit: float = 0) -> Tuple[List[Any], List[Any], List[Any]]:
  """(results, chunks to convert again, chunks that may have ended a worker) of
  `chunks` converted by `workers` processes that take them from one queue
  (`_convert_chunks`). `named`: worker k of the n is given its `slot` (k, n).
  `time_limit`: a worker whose row runs longer is killed and the row's chunk is to be
  converted again without it (`_RowClock`)."""
  workers = max(1, min(workers, len(chunks)))
  chunks = list(chunks)
  context = multiprocessing.get_context('fork')
  tasks = context.Queue()
  taken = multiprocessing.RawArray('q', [-1] * (2 * workers)) if rows else None
  clock = _RowClock(workers, time_limit) if rows and time_limit else None
  processes: List[_Process] = []
  thread, failure = None, []
  done, converted, suspected, died = [], set(), set(), []
  try:
    for i in range(workers):  # forked before this process starts the queue's thread
      worker = make_worker()
      if named:
        worker.slot = (i, workers)
      processes.append(_Process(context, _work, (worker, tasks, counts, i, taken, clock), i,
                                counts))
    if meanwhile is not None:
      thread = threading.Thread(target=_catching(meanwhile, failure), name='tfrecorder-meanwhile',
                                daemon=True)
      thread.start()
    for task in enumerate(chunks):
      tasks.put(task)
    for _ in range(workers):
      tasks.put(None)
    for event, process, value in _collect(processes, poll, rows, clock):
      if event == 'done':
        converted.update(value[0])
        done.append(value[1])
        continue
      late = clock.late.get(process.slot) if clock is not None else None
      if late is not None:  # killed for a row past the time limit: it is known
        died.append(f'stopped past the row time limit ({time_limit:g} s)')
        index, item, seconds = late
        chunks[index] = _without_late_row(chunks[index], item, time_limit, seconds)
      else:
        died.append(_death(value))
        suspected.update(i for i in taken[2 * process.slot:2 * process.slot + 2] if i >= 0)
      if counts is not None:
        counts.restore(process.slot, process.counts_before)  # its rows are converted again
  finally:
    for process in processes:
      process.end()
    tasks.cancel_join_thread()  # what a dead worker left in it is not waited for
    tasks.close()
    if thread is not None:
      thread.join()
  if failure:
    raise failure[0]
  if died:
    logging.warning('%d worker process(es) ended while converting (%s): their rows are '
                    'converted again', len(died), '; '.join(sorted(set(died))))
  lost = [i for i in range(len(chunks)) if i not in converted]
  return (done, [chunks[i] for i in lost if i not in suspected],
          [chunks[i] for i in lost if i in suspected])


def _isolate(lost: List[Chunk], make_worker, workers: int,
             counts: Optional[progress_lib.SharedCounts], poll,
             time_limit: float = 0) -> List[Any]:
  """The results of converting `lost` chunks, each in a process of its own (up to
  `workers` at a time, in `counts`' slots): a chunk whose process crashes is cut in two
  halves, converted the same way, and a single row whose process crashes becomes the
  error record of a `crashed` row, converted as a failed row is (it rides in a chunk).
  With `time_limit`, a process whose row runs longer is killed and its chunk converted
  again with that row's `too_slow` error record in its place (`_RowClock`)."""
  context = multiprocessing.get_context('fork')
  pending = collections.deque(lost)
  running: Dict[int, Tuple[_Process, Chunk]] = {}
  clock = _RowClock(workers, time_limit) if time_limit else None
  done = []
  try:
    while pending or running:
      while pending and len(running) < workers:
        slot = next(i for i in range(workers) if i not in running)
        chunk = pending.popleft()
        if clock is not None:
          clock.clear(slot)
        running[slot] = (_Process(context, _work, (make_worker(), [(0, chunk)], counts, slot,
                                                   None, clock), slot, counts), chunk)
      # The first process to end frees its slot for the next chunk.
      event, process, value = next(_collect([p for p, _ in running.values()], poll, True,
                                            clock))
      _, chunk = running.pop(process.slot)
      process.end()
      if event == 'done':
        done.append(value[1])
        continue
      if counts is not None:
        counts.restore(process.slot, process.counts_before)
      late = clock.late.get(process.slot) if clock is not None else None
      if late is not None:
        _, item, seconds = late
        pending.append(_without_late_row(chunk, item, time_limit, seconds))
      else:
        pending.extend(_cut(chunk, value))
  finally:
    for process, _ in running.values():
      process.end()
  return done


def _cut(chunk: Chunk, exitcode: int) -> List[Chunk]:
  """What to convert instead of a chunk whose process crashed: its two halves, or, for
  one row, the row's `crashed` error record."""
  items = unpack_chunk(chunk)
  folder = posixpath.dirname(chunk[2])
  if len(items) > 1:
    half = len(items) // 2
    return [pack_chunk(items[:half], folder), pack_chunk(items[half:], folder)]
  (row,) = items
  if not isinstance(row, ManifestRow):
    raise RuntimeError(f'a worker process ended ({_death(exitcode)}) while writing the '
                       f'failed row {row!r}')
  logging.warning('%s row %s (%s) ended its worker process (%s): it fails as crashed',
                  row.source, row.row, row.image_uri, _death(exitcode))
  return [pack_chunk([error_record(RowError(
      CRASHED, f'converting it ended its worker process ({_death(exitcode)}); the other '
      'rows were converted without it'), row)], folder)]


def _catching(function: Callable[[], None], failure: List[BaseException]) -> Callable[[], None]:
  def run() -> None:
    try:
      function()
    except BaseException as e:  # pylint: disable=broad-except  (raised by the caller)
      failure.append(e)
  return run


# ------------------------------------------------------------------ the run
_SEQUENCE = 8  # bytes of the row's number that end an image key


def _image_key(key: Tuple[Any, Any], number: int) -> bytes:
  """The sort key of a box row: its image's (source, URI), each part's length before it
  (so no image's key starts another's), then the row's number (keys must be distinct)."""
  parts = [str(part).encode('utf-8', 'surrogatepass') for part in key]
  return b''.join(len(p).to_bytes(4, 'big') + p for p in parts) + number.to_bytes(_SEQUENCE, 'big')


def _images(entries: Iterator[Tuple[bytes, bytes]]) -> Iterator[List[Any]]:
  """The rows of each image, an image at a time, from entries sorted by `_image_key`:
  an image's entries have one length and one prefix, so they come together."""
  image, rows = None, []
  for key, data in entries:
    if key[:-_SEQUENCE] != image:
      if rows:
        yield rows
      image, rows = key[:-_SEQUENCE], []
    rows.append(unpacked_value(data))
  if rows:
    yield rows


def convert_locally(sources: Sequence[ManifestSource], split_dirs: Optional[Mapping[str, str]],
                    label_dir: Optional[str], report_dir: str, options: ConversionOptions,
                    workers: int, first_error_of=lambda e: e,
                    progress: Optional[progress_lib.Progress] = None) -> None:
  """Runs the conversion of `sources` with `workers` processes: writes what
  `ConvertManifests` writes (see there; `split_dirs` and `label_dir` None: only the
  report). `first_error_of`: applied to each error record (the DataFrame index cited).
  `progress`: told each stage, and the rows read, then done and failed, as they go
  (the caller closes it).

  Args:
    first_error_of: A function of an error record (dict) to the one written (a
      `report.CiteIndex` for manifests written from a DataFrame); the default returns
      it as it is.
    label_dir: The folder (local, or on object storage) for the label files, the extra
      layouts and the output's index; None: none are written.
    options: The run's options.
    progress: The run's progress, told the stages and counts; None: none is shown.
    report_dir: The report's folder; its `.work` subfolder holds the chunks and sorted
      runs (the caller removes it).
    sources: The manifest files to read, in order.
    split_dirs: {split name: its folder of shards} (local, gs:// or s3://), every split
      the run writes; None: no records are written.
    workers: Worker processes to fork (`run.local_workers`); at most one per chunk of
      rows is used.
  """
  progress = progress or progress_lib.Progress('off')
  start = time.perf_counter()
  chunks, read, vocabulary = _read_manifests(sources, report_dir, options, workers, progress)
  parsed = time.perf_counter()
  logging.info('Local run: manifests read into %d chunks in %.2f s', len(chunks), parsed - start)

  # The extra layouts are written by the workers as they write the TFX files, where
  # those files become the shards as they are (not planned) on this machine's disk.
  inline = (options.layouts and split_dirs is not None and label_dir is not None
            and not (options.num_shards or options.shard_size_mb) and files.is_local(label_dir))
  make_worker = lambda: _Worker(options, vocabulary, split_dirs, report_dir, first_error_of,
                                label_dir if inline else None)
  workers = min(workers, len(chunks))
  progress.stage('converting', total=read)
  counts = progress_lib.SharedCounts(workers)
  # Meanwhile this process loads what the layouts' metadata needs (TFDS, half a second).
  results = _convert_chunks(chunks, make_worker, workers, counts,
                            lambda: progress.update(*counts.totals()),
                            (lambda: layouts_base.prepare(options.layouts)) if options.layouts
                            else None, True, options.row_time_limit)
  progress.update(*counts.totals())
  converted = time.perf_counter()
  logging.info('Local run: rows converted in %.2f s by %d worker process(es)',
               converted - parsed, max(workers, 1))
  _write_outputs(results, vocabulary, sources, split_dirs, label_dir, report_dir, options,
                 workers, progress)
  logging.info('Local run: shards named, report written in %.2f s',
               time.perf_counter() - converted)


def _read_manifests(sources: Sequence[ManifestSource], report_dir: str,
                    options: ConversionOptions, workers: int, progress: progress_lib.Progress
                    ) -> Tuple[List[Chunk], int, Any]:
  """The run's chunks of rows, written under `report_dir`'s work folder (each source's
  rows, then the images merged from the box rows of the sources that have them), the
  items they hold (the progress's total) and the run's vocabulary, from every chunk."""
  progress.stage('reading', counted=True)
  read = 0
  chunk_dir = output_paths.work_dir(report_dir, output_paths.CHUNK_DIR)
  builder = VocabularyBuilder(options.label_map, options.append_new_labels,
                              options.class_map, options.label_order)
  acc = builder.new()
  chunks: List[Chunk] = []
  sort_dir = tempfile.mkdtemp(prefix='tfrecorder-boxes-')
  try:
    objects = ExternalSort(sort_dir, SortBudget(OBJECT_ROWS_BYTES))
    boxes = 0
    for source in sources:
      parsed = _parsed_in_parts(source, chunk_dir, options.annotations, workers)
      with progress.ticking():  # ended before any worker is forked
        if parsed is None:  # not cut into parts: parsed here, as it streams
          parsed = parse_manifest(source, chunk_dir, options.annotations, CHUNK_ROWS)
        for tag, value in parsed:
          if tag == CHUNK:
            chunks.append(value)
            read += value[4]  # the progress's total: the chunk's items
            progress.update(read)
          elif tag == OBJECTS:
            key, row = value
            objects.add(_image_key(key, boxes), row)
            boxes += 1
    merged: List[Any] = []
    for rows in _images(objects.entries()) if boxes else ():
      merged.append(merged_item(rows))
      read += 1
      if len(merged) == CHUNK_ROWS:
        chunks.append(pack_chunk(merged, chunk_dir))
        merged = []
    if merged:
      chunks.append(pack_chunk(merged, chunk_dir))
    del merged
  finally:
    shutil.rmtree(sort_dir, ignore_errors=True)
  for chunk in chunks:
    builder.add(acc, chunk)
  return chunks, read, builder.vocabulary(acc)


def _write_outputs(results: List[Dict[str, Any]], vocabulary, sources: Sequence[ManifestSource],
                   split_dirs: Optional[Mapping[str, str]], label_dir: Optional[str],
                   report_dir: str, options: ConversionOptions, workers: int,
                   progress: progress_lib.Progress) -> None:
  """What follows the workers' conversion (`convert_locally`'s arguments, the workers'
  `results`): the label files, the shards named, the extra layouts, the report's
  error, box-issue and duplicate files, summary.json with its samples and first errors,
  and the output's index."""
  counts = report.new_counts()
  for r in results:
    report.add_counts(counts, r['counts'])
  summary = report.summary(counts)
  held = report.held_labels(summary, vocabulary)
  if label_dir is not None:
    labels_lib.write_label_files(label_dir, dict(zip(held['labels'], held['ids'])),
                                 labels_lib.first_label_id(held['task']))
  written_layouts = None
  if split_dirs is not None:
    progress.stage('writing shards')
    shards = _name_shards([b for r in results for b in r['bundles']], split_dirs, options)
    if options.layouts:
      progress.stage('writing layouts')
      placed = {path: shard for r in results for path, shard in r['inline'].items()}
      written_layouts = _write_layouts(options.layouts, layouts_base.context(
          summary, held, label_dir, list(split_dirs)), shards, placed, workers)
    # A worker that crashed (`_convert_chunks`) left its unfinished files.
    remove_parts([*split_dirs.values(), *(
        files.join(label_dir, layouts_registry.module(n).FOLDER)
        for n in (options.layouts if label_dir is not None else ()))])

  def merge(name: str, runs: List[str]) -> None:
    jsonl.merge_runs(runs, files.join(report_dir, name + output_paths.JSON_LINES),
                     output_paths.work_dir(report_dir, name))

  progress.stage('writing the report')
  merge(output_paths.ERRORS_FILE, [p for r in results for p in r['error_runs']])
  merge(output_paths.BOX_ISSUES_FILE, [p for r in results for p in r['box_issue_runs']])
  duplicate_counts = report.new_duplicate_counts()
  groups = _json_lines(report_dir, output_paths.DUPLICATES_FILE)
  index_runs = [run for r in results for run in r['index_runs']]
  for task in duplicates_lib.ranges(index_runs, duplicates_lib.RANGE_BYTES):
    for group in duplicates_lib.merge_range(task):
      report.add_duplicate(duplicate_counts, group)
      if not duplicates_lib.is_source_id_group(group):  # summary.json counts those
        groups.add((jsonl.entry(group, report.duplicate_key),))
  groups.spill()
  merge(output_paths.DUPLICATES_FILE, groups.runs)

  samples: Dict[str, List[Tuple[str, bytes]]] = {}
  for r in results:
    for label, kept in r['samples'].items():
      samples.setdefault(label, []).extend(kept)
  samples = {label: heapq.nsmallest(SAMPLES_PER_LABEL, kept)
             for label, kept in samples.items()}
  first = lambda key, order: heapq.nsmallest(
      report.FIRST_ERRORS, (e for r in results for e in r[key]), key=order)
  report.write_summary(summary, report_dir, held, report.duplicate_counts(duplicate_counts),
                       samples, first('first_errors', report.error_order),
                       first('first_box_issues', report.box_issue_order), [],
                       layouts=written_layouts, sources=sources, buckets=options.buckets)
  if label_dir is not None and split_dirs is not None:
    index_lib.write_index(summary, label_dir, list(split_dirs), held['task'], written_layouts)


class _PartWorker:
  """What one worker process makes of the Parts of a manifest (`manifest.parts.plan_parts`) it
  takes: `parse_manifest`'s output of each; its result, (part index, output) pairs."""

  def __init__(self, source: ManifestSource, chunk_dir: str, annotations):
    self._args = (source, chunk_dir, annotations, CHUNK_ROWS)
    self._parsed: List[Tuple[int, List[Tuple[str, Any]]]] = []

  def convert(self, part: Part, index: int = -1) -> None:
    self._parsed.append((index, list(parse_manifest(*self._args, part=part))))

  def result(self) -> List[Tuple[int, List[Tuple[str, Any]]]]:
    return self._parsed


def _parsed_in_parts(source: ManifestSource, chunk_dir: str, annotations,
                     workers: int) -> Optional[List[Tuple[str, Any]]]:
  """`parse_manifest`'s output for `source`, in file order, parsed in parts by up to
  `workers` forked processes where its format and text allow (`manifest.parts.plan_parts`);
  None where they do not (this process parses it). At 30 µs a row the parse is the
  run's serial part: 0.6 s of one core for 20,000 rows, 6 s for 200,000, while the other
  cores wait for the vocabulary it gives."""
  parts = plan_parts(source.path, source.format, workers, source.columns) if _FORK else []
  if not parts:
    return None
  results = _convert_chunks(parts, lambda: _PartWorker(source, chunk_dir, annotations),
                            min(workers, len(parts)))
  return [output for _, part in sorted(p for r in results for p in r) for output in part]


class _LayoutWorker:
  """What one worker process makes of the TFX shards it takes (`(job, layouts)`): each
  written into those layouts (`layouts.base.write_shard`); its result, what each gave."""

  def __init__(self, ctx):
    self._ctx = ctx
    self._written: List[Tuple[str, int, int]] = []

  def convert(self, task, index: int = -1) -> None:  # pylint: disable=unused-argument
    job, names = task
    self._written.append(layouts_base.write_shard(job, names, self._ctx))

  def result(self) -> List[Tuple[str, int, int]]:
    return self._written


def _write_layouts(names, ctx, shards, placed, workers: int):
  """The extra layouts of every TFX shard of `shards` (`_name_shards`): the files the
  workers wrote as they converted (`placed`: {TFX file: InlineShard.close()}) named as
  their shard, and any shard or layout they could not write (an empty split, a spec
  that is not the run's, planned shards) written from the finished TFX shard, a task per
  shard on up to `workers` processes (as the conversion's: `_convert_chunks`); returns
  what `layouts.base.finish` returns."""
  start = time.perf_counter()
  layouts_base.check_types(names, ctx)
  written: Dict[Tuple[str, int], int] = {}
  tasks = []
  for split, index, count, path, part, records in shards:
    todo = layouts_base.place(placed.get(part), names, ctx, split, index, count)
    if todo:
      tasks.append(((split, index, count, path), todo))
    else:
      written[split, index] = records
  results = _convert_chunks(tasks, lambda: _LayoutWorker(ctx), min(workers, len(tasks)))
  for r in results:
    for split, index, n in r:
      written[split, index] = n
  info = layouts_base.finish(names, ctx, [(s, i, n) for (s, i), n in written.items()])
  logging.info('Local run: %s written (%d of %d shard(s) from the TFX shards) in %.2f s',
               ', '.join(names), len(tasks), len(shards), time.perf_counter() - start)
  return info


def remove_parts(folders: Sequence[str], shards: bool = False) -> None:
  """Removes the `.part-` files left in `folders` (local, gs:// or s3://) once every shard
  and layout file has its name: those of worker processes that ended without their
  result. `shards`: the shards too (`data_tfrecord-*`), for a run that failed after its
  workers uploaded theirs (split folders of its own: an artifact's, a new output's).

  Args:
    folders: The split and layout folders to clean (local, gs:// or s3://; a folder
      that is missing, or on a file system with no client here, is skipped).
    shards: Also remove the shards (`data_tfrecord-*`) themselves; default False.
  """
  prefixes = ('.part-', f'{output_paths.TFRECORD_FILE_NAME}-') if shards else ('.part-',)
  for folder in folders:
    if not files.is_local(folder):
      if storage.client_for(folder) is not None:
        for name in storage.list_names(folder):
          if name.startswith(prefixes):
            storage.delete_object(posixpath.join(folder, name))
      continue
    try:
      names = os.listdir(folder)
    except FileNotFoundError:
      continue
    for name in names:
      if name.startswith(prefixes):
        os.remove(os.path.join(folder, name))


def _name_shards(bundles: List[Tuple[str, str, int, int]], split_dirs: Mapping[str, str],
                 options: ConversionOptions) -> List[Tuple[str, int, int, str, Optional[str],
                                                          int]]:
  """Gives the workers' files their shard names: by default each worker's file of a
  split is one shard (an empty split gets one empty shard, as Beam writes it). The n
  workers `_pool` first forks wrote shard k of n of every split (`_Worker.slot`), so
  when each of them ended well nothing is renamed; files of workers forked to convert
  again what a dead one left are named after them (object stores rename by copying).
  With
  `num_shards` or `shard_size_mb` the records are spread over exactly that many shards
  (`shards.plan_split_shards`). Returns (split, index, count, path, the worker's file
  it was (None: made here), records) of every shard."""
  if options.num_shards or options.shard_size_mb:
    plan = shards_lib.plan_split_shards(bundles, split_dirs, options.num_shards,
                                        int(options.shard_size_mb * 2**20))
    for shard in plan:
      shards_lib.write_shard(shard, options.compression_level)
    return [(split, index, count, path, None, -1)
            for split, index, count, path in layouts_base.shard_jobs(split_dirs)]
  shards = []
  for split, folder in split_dirs.items():
    # The files already named by their worker's slot first, in order; temporary ones after.
    parts = sorted(((path, records) for s, path, records, _ in bundles if s == split),
                   key=lambda p: (posixpath.basename(p[0]).startswith('.part-'), p[0]))
    if not sum(records for _, records in parts) and [p for p, _ in parts] != [
        output_paths.shard_path(folder, 0, 1)]:  # an empty split: one empty shard
      for part, _ in parts:
        _remove_file(part)
      parts = []
    if not parts:
      path = output_paths.shard_path(folder, 0, 1)
      tfrecord_lib.ShardWriter(path, options.compression_level).close()
      shards.append((split, 0, 1, path, None, 0))
    targets = [output_paths.shard_path(folder, k, len(parts)) for k in range(len(parts))]
    moves = [(part, target) for (part, _), target in zip(parts, targets) if part != target]
    held = {part for part, _ in parts}
    if any(target in held for _, target in moves):  # a name another part still has
      aside = []
      for part, target in moves:
        temporary = posixpath.join(folder, f'.part-{uuid.uuid4().hex}.gz')
        files.rename(part, temporary)
        aside.append((temporary, target))
      moves = aside
    for part, target in moves:
      files.rename(part, target)
    for k, ((part, records), target) in enumerate(zip(parts, targets)):
      shards.append((split, k, len(parts), target, part, records))
    _remove_strays(folder, {posixpath.basename(t) for t in targets} or
                   {posixpath.basename(output_paths.shard_path(folder, 0, 1))})
  return shards


def _remove_strays(folder: str, keep) -> None:
  """Removes the shards in a split folder (the run's own) that are not the run's final
  ones (`keep`, names): a worker that died after opening its shard under its slot's name
  left it there, partly written or not counted, where readers would take it for one."""
  prefix = f'{output_paths.TFRECORD_FILE_NAME}-'
  if files.is_local(folder):
    names = os.listdir(folder) if os.path.isdir(folder) else []
  else:
    names = storage.list_names(folder)
  for name in names:
    if name.startswith(prefix) and name not in keep:
      logging.warning('Removing %s: a shard a worker process left as it ended',
                      posixpath.join(folder, name))
      _remove_file(posixpath.join(folder, name))


def _remove_file(path: str) -> None:
  if files.is_local(path):
    os.remove(path)
  else:
    storage.delete_object(path)
