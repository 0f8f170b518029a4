"""The local engine's worker processes: forked from the run's process, each converting
the tasks it takes from one queue (chunks of rows, parts of a manifest, shards to lay
out) with a worker of the caller's (`worker.Worker`, `read.PartWorker`,
`write.LayoutWorker`: `convert(task, index)`, then `result()`), and what is done when
one dies: its rows converted again, the row that ended it isolated and failed as
`crashed`, or, past the row time limit, as `too_slow` (`RowClock`).

Nothing here knows what a task is, but that a chunk of rows can be cut and a row failed.

Length: one pool: its processes, the clock that stops a late row and the isolation of a
crashing row share the queue, the shared-memory slots and what each process had taken.
"""
from __future__ import annotations

import collections
import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import posixpath
import signal
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from tfrecorder_component.errors import RowError, error_record
from tfrecorder_component.manifest import ManifestRow
from tfrecorder_component.output import progress as progress_lib
from tfrecorder_component.steps.chunks import Chunk, pack_chunk, unpack_chunk
from tfrecorder_component.steps.convert_chunks import too_slow_record

__all__ = ['CRASHED', 'FORK', 'POLL_S', 'RowClock', 'convert_chunks']

# The reason of a row whose conversion ended its worker process (`convert_chunks`).
CRASHED = 'crashed'

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


def _work(worker, tasks, conn, counts: Optional[progress_lib.SharedCounts] = None,
          slot: int = 0, taken=None, clock: Optional['RowClock'] = None) -> None:
  """A worker process: converts the (index, chunk) tasks it takes from `tasks` (a queue,
  until None; or a list, its own) and sends ('done', (the indices, its result)) on
  `conn`, its own pipe to the process that forked it, or ('failed', (exception,
  traceback)) at the first failure. The rows it converts are counted in `counts`' slot
  `slot`, which that process reads for the run's progress; `taken` (shared memory, two
  slots a worker) holds the index of the chunk it converts and of the one before,
  whose rows may still wait on their reads (-1: none), for `convert_chunks` to know
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
FORK = 'fork' in multiprocessing.get_all_start_methods()
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


class RowClock:
  """When each worker process's current row started and which row it is, in shared
  memory made before the fork (one writer a slot, no lock, as `progress.SharedCounts`),
  so that the process that forked them stops a worker whose row runs past the row time
  limit (`stop_late`). Killing the process is the one way to interrupt a row stuck in C
  code (a decode, a read that blocks); the killed worker's row then fails as
  `too_slow`, with how long it had run, and its other rows are converted again, as a
  crashed worker's are (`convert_chunks`).

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
    """The watch of one worker (`ChunkConverter.set_watch`): called with (chunk index,
    item index) when a row starts and with None when it ends.

    Args:
      slot: The worker's slot, 0 to `slots` - 1.
    """
    array, i = self._array, 3 * slot

    def watch(where) -> None:
      if where is None:
        array[i] = 0.0
        return
      array[i + 1], array[i + 2] = where
      array[i] = time.monotonic()  # written last: the row's place is there when it is
    return watch

  def clear(self, slot: int) -> None:
    """Forgets a slot's row (before a new process takes the slot).

    Args:
      slot: The slot, 0 to `slots` - 1.
    """
    self._array[3 * slot] = 0.0
    self.late.pop(slot, None)

  def stop_late(self, processes: Sequence[_Process]) -> None:
    """Kills each process whose row has run past the limit, noting in `late` its slot's
    (chunk index, item index, seconds run).

    Args:
      processes: The worker processes, each with its `slot`.
    """
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
             clock: Optional[RowClock] = None):
  """Yields ('done', process, (indices, result)) of each of `processes` as it finishes,
  or ('died', process, exit code) as one ends without its result (with `crashes`, for a
  crash: any end but one of _STOPPING; else RuntimeError), until each has done one or
  the other. A worker's exception is raised here. With `clock`, a worker whose row runs
  past the time limit is killed (`RowClock.stop_late`): it ends as 'died'."""
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


def convert_chunks(chunks: List[Any], make_worker, workers: int,
                    counts: Optional[progress_lib.SharedCounts] = None,
                    poll: Optional[Callable[[], None]] = None,
                    meanwhile: Optional[Callable[[], None]] = None,
                    rows: bool = False, time_limit: float = 0) -> List[Any]:
  """The workers' results, every chunk (or other task) converted by one of `workers`
  processes forked from this one.

  With `rows`, a worker process that dies while converting (a native crash in an image
  library, the OOM killer) fails only the row that ends it: the chunks it had finished
  go back to a pool of workers, and the chunks it was converting (the current one and
  the one before, whose rows may have waited on their reads) are converted a chunk a
  process, halved until the row that ends its process is alone (`_isolate`); that row
  fails as `crashed`, naming how its process ended. With `time_limit`, a worker whose
  row runs longer is killed (`RowClock`) and the row, known from the clock, fails as
  `too_slow`; its chunk goes back to the pool without it, with the dead worker's other
  chunks. Without `rows`, the tasks of one worker are converted in this process, and a
  worker's death ends the run. Where no process can be forked, every task is converted
  here (and the time limit is `steps.deadline.RowDeadline`'s, in this process).

  Args:
    chunks: The tasks, each handed to a worker's `convert`.
    make_worker: Makes a worker (in each forked process): `convert(chunk[, index])`
      and `result()`.
    workers: How many processes convert at once.
    counts: Where each worker counts its rows (`progress.count`), slot i for worker i.
    poll: Called every POLL_S while they work (and after each row counted when this
      process converts), to redraw the progress.
    meanwhile: Run on a thread of this process while the workers convert, started once
      they are forked and joined before this returns or forks again (no thread outlives
      it into a later fork), its exception raised here.
    rows: The chunks are manifest rows (`Chunk`), converted in forked processes even
      when one is enough, a crashed process failing only its row.
    time_limit: A row's time limit, in seconds (rows only; 0: none).
  """
  if not rows and (workers <= 1 or len(chunks) <= 1) or not FORK:
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
  (`convert_chunks`). `named`: worker k of the n is given its `slot` (k, n).
  `time_limit`: a worker whose row runs longer is killed and the row's chunk is to be
  converted again without it (`RowClock`)."""
  workers = max(1, min(workers, len(chunks)))
  chunks = list(chunks)
  context = multiprocessing.get_context('fork')
  tasks = context.Queue()
  taken = multiprocessing.RawArray('q', [-1] * (2 * workers)) if rows else None
  clock = RowClock(workers, time_limit) if rows and time_limit else None
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
  again with that row's `too_slow` error record in its place (`RowClock`)."""
  context = multiprocessing.get_context('fork')
  pending = collections.deque(lost)
  running: Dict[int, Tuple[_Process, Chunk]] = {}
  clock = RowClock(workers, time_limit) if time_limit else None
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
