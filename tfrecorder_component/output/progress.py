"""How far a conversion is, for the person or the log that watches it: one reporter
(`Progress`) for the whole run, whatever processes convert its rows.

    progress = Progress.for_run(every_s)   # None: logging lines only
    progress.stage('reading')              # rows read so far, no total yet
    progress.stage('converting', total=n)  # rows done of n, rate, ETA, failed rows
    progress.update(rows, failed)          # absolute counts; redraws when due
    progress.stage('writing the report')
    progress.close()                       # the final counts
    end_bars()                             # interrupted: the bar's line ends where it is

Three renderings, picked once per run:

- 'bar': stderr is a terminal: one live tqdm bar, redrawn every DRAW_EVERY_S.
- 'lines': stderr is not a terminal (CI, Vertex AI, Kubeflow logs): a plain line at
  most once per `every_s` for the whole run, the first after `every_s`, and the final
  counts after any line (a shorter run prints nothing but its result).
- 'log': no terminal output asked for (`convert()` by default, the component): the same
  lines as `logging` INFO records (stage changes too), for the component's logs.

Rows are counted where they are converted: `count(rows, failed)` adds to this process's
sink, which the run installs (`counting`): the reporter's own counts in the process that
draws, or one slot of a `SharedCounts` array in a worker process forked from it, which the
drawing process sums. Workers never print.

Length: one progress display, a live bar and plain lines, fed by counters shared with
the worker processes; its parts share that state.
"""
from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import sys
import threading
import time
import weakref
from typing import Callable, Iterator, Optional, Tuple

__all__ = ['DRAW_EVERY_S', 'LOG_EVERY_S', 'Progress', 'SharedCounts', 'count', 'counting',
           'end_bars', 'set_sink']

DRAW_EVERY_S = 0.25  # a terminal bar's redraws; also how often the run polls its workers
LOG_EVERY_S = 10.0  # 'log' rendering: a line at most this often

Sink = Callable[[int, int], None]
_sink: Optional[Sink] = None
# The reporters whose bar is on screen with its line open (drawn, not closed).
_open_bars: 'weakref.WeakSet[Progress]' = weakref.WeakSet()


def end_bars() -> bool:
  """Stops every bar on screen where it is and ends its line, so that what is written
  next (the interrupted command's `error: interrupted (Ctrl-C)`, `interrupt`) starts a
  line of its own, not after the bar and the terminal's `^C`; the bars draw nothing
  more. Whether any bar's line was open. Called from any thread."""
  ended = False
  for progress in list(_open_bars):
    ended = progress._end_line() or ended  # pylint: disable=protected-access
  return ended


def count(rows: int, failed: int = 0) -> None:
  """Adds `rows` done, `failed` of them failed, to this process's sink (`counting`); a
  no-op where none is installed (a Beam worker on Dataflow), so converters call it
  unconditionally, once a row.

  Args:
    rows: Rows converted since the last call, failed ones included.
    failed: How many of `rows` failed.
  """
  sink = _sink
  if sink is not None:
    sink(rows, failed)


@contextlib.contextmanager
def counting(sink: Optional[Sink]) -> Iterator[None]:
  """`count` adds to `sink` in this process while the block runs.

  Args:
    sink: Called with (rows, failed) for each `count`; None: rows are not counted
      while the block runs. The sink before is installed again after it.
  """
  global _sink
  given, _sink = _sink, sink
  try:
    yield
  finally:
    _sink = given


def set_sink(sink: Optional[Sink]) -> None:
  """Installs `sink` for the rest of this process (a forked worker's whole life).

  Args:
    sink: Called with (rows, failed) for each `count` (a `SharedCounts.adder`); None:
      rows are no longer counted.
  """
  global _sink
  _sink = sink


class SharedCounts:
  """Rows done and failed per worker process, in shared memory made before the fork:
  each worker adds to its own slot (no lock: one writer a slot), the drawing process
  reads the sums.

  Args:
    slots: How many worker processes count (one slot each); at least 1 is made, and a
      slot number past the last wraps around.
  """

  def __init__(self, slots: int):
    self._slots = max(1, slots)
    self._array = multiprocessing.RawArray(ctypes.c_longlong, 2 * self._slots)

  def adder(self, slot: int, after: Optional[Callable[[], None]] = None) -> Sink:
    """A sink adding to `slot`'s counts, then calling `after` (the drawing process's own
    redraw, when it converts rows itself).

    Args:
      slot: The worker's slot, from 0 (taken modulo the number of slots).
      after: Called with no arguments after each addition; None: nothing is.
    """
    array, i = self._array, 2 * (slot % self._slots)

    def add(rows: int, failed: int) -> None:
      array[i] += rows
      array[i + 1] += failed
      if after is not None:
        after()
    return add

  def slot(self, slot: int) -> Tuple[int, int]:
    """(rows done, rows failed) of `slot`.

    Args:
      slot: The worker's slot, from 0 (taken modulo the number of slots).
    """
    i = 2 * (slot % self._slots)
    return self._array[i], self._array[i + 1]

  def restore(self, slot: int, counts: Tuple[int, int]) -> None:
    """Sets `slot`'s counts back to `counts` (`slot`'s, before a process whose rows are
    converted again began adding to it); no process may be adding to it.

    Args:
      slot: The slot of the process that ended (taken modulo the number of slots).
      counts: (rows done, rows failed) to set, as `slot(slot)` read them earlier.
    """
    i = 2 * (slot % self._slots)
    self._array[i], self._array[i + 1] = counts

  def totals(self) -> Tuple[int, int]:
    """(rows done, rows failed) of every slot."""
    values = self._array[:]
    return sum(values[0::2]), sum(values[1::2])


def _clock(seconds: float, tenths: bool = False) -> str:
  """H:MM:SS, or H:MM:SS.s with `tenths` (a line's time stamp)."""
  whole = int(seconds)
  text = f'{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}'
  return f'{text}.{int((seconds - whole) * 10)}' if tenths else text


def _isatty(stream) -> bool:
  try:
    return bool(stream.isatty())
  except (AttributeError, ValueError):  # no such method, or a closed stream
    return False


class Progress:
  """The run's progress, drawn by one process: see the module's docstring.

  Args:
    mode: 'bar' (a live tqdm bar), 'lines' (plain lines), 'log' (logging INFO records)
      or 'off' (nothing shown, for a run that reports no progress); another raises
      ValueError.
    every_s: Seconds between two plain lines ('lines', 'log'); the bar redraws every
      DRAW_EVERY_S whatever it is.
    stream: Where the bar and lines go; default sys.stderr. A stream that escapes
      control characters and has an `unescaped` attribute is written through that.
  """

  def __init__(self, mode: str = 'log', every_s: float = LOG_EVERY_S, stream=None):
    if mode not in ('bar', 'lines', 'log', 'off'):
      raise ValueError(f'unknown progress mode {mode!r}')
    self.mode = mode
    self._every_s = every_s
    # A stream that escapes control characters (the CLI's) offers the one it writes
    # to: the bar's own carriage returns must reach the terminal.
    stream = sys.stderr if stream is None else stream
    self._stream = getattr(stream, 'unescaped', stream)
    self._lock = threading.RLock()
    self._start = time.monotonic()
    self._stage: Optional[str] = None
    self._stage_start = self._start
    self._counted = False  # whether the stage's rows are counted (reading, converting)
    self._total: Optional[int] = None
    self._rows = self._failed = 0
    self._rate: Optional[float] = None  # the converting stage's, once it has ended
    self._last_draw: Optional[float] = None
    self._bar = None
    self._clear: Optional[_ClearBar] = None  # on the handlers writing to the bar's terminal
    self._hooked: list = []
    self._closed = False

  @classmethod
  def for_run(cls, every_s: Optional[float] = None, stream=None) -> 'Progress':
    """The reporter of a run: `every_s` None: logging lines only; else a live bar where
    `stream` (default stderr) is a terminal, plain lines every `every_s` seconds where
    it is not.

    Args:
      every_s: The run's `progress_every_s`: seconds between plain lines; None for
        logging lines (every LOG_EVERY_S) and no terminal output.
      stream: Where to draw; default sys.stderr, whose being a terminal picks the bar.
    """
    if every_s is None:
      return cls('log', LOG_EVERY_S)
    stream = sys.stderr if stream is None else stream
    return cls('bar' if _isatty(stream) else 'lines', every_s, stream)

  # ---------------------------------------------------------------- what the run says
  def stage(self, name: str, total: Optional[int] = None, counted: bool = False) -> None:
    """The run goes on to stage `name`. `total` given or `counted`: its rows are counted
    from 0 (of `total`, where known); else the counts shown stay those of the last
    counted stage.

    Args:
      name: The stage as shown ('reading', 'converting', 'writing shards' ...).
      total: The rows the stage will count, where known (a percentage and an ETA are
        shown); None: no total.
      counted: Count the stage's rows from 0 even without a `total`.
    """
    with self._lock:
      now = time.monotonic()
      if self._counted and (self._stage or '').startswith('converting'):
        self._rate = self._rows / max(now - self._stage_start, 1e-9)
      self._stage, self._stage_start = name, now
      if total is not None or counted:
        self._counted, self._total, self._rows, self._failed = True, total, 0, 0
      else:
        self._counted = False
      if self.mode == 'log':
        logging.info('Conversion: %s%s', name, f' ({total:,} rows)' if total else '')
      elif self.mode == 'bar':
        self._draw_bar(stage_changed=True, reset=total is not None or counted)
        self._last_draw = now
      else:
        self.tick()

  def update(self, rows: int, failed: int = 0) -> None:
    """The counted stage's rows done and failed so far (absolute); redraws when due.

    Args:
      rows: Rows done so far in the stage, failed ones included.
      failed: How many of `rows` failed.
    """
    with self._lock:
      self._rows, self._failed = rows, failed
      self.tick()

  def tick(self) -> None:
    """Redraws (bar) or writes a line (lines, log) if one is due."""
    with self._lock:
      if self._closed or self.mode == 'off':
        return
      now = time.monotonic()
      every = DRAW_EVERY_S if self.mode == 'bar' else self._every_s
      # Lines: the first once a whole interval has passed, so a short run (or one that
      # fails on its input at once) says nothing but its result or its error.
      last = self._last_draw if self._last_draw is not None or self.mode == 'bar' else (
          self._start)
      if last is not None and now - last < every:
        return
      self._last_draw = now
      if self.mode == 'bar':
        self._draw_bar()
      else:
        self._line(self._status(now))

  def close(self, outcome: str = 'done') -> None:
    """The final counts: the bar left on screen, or one last line, named `outcome`
    ('done', or 'stopped' for a run that failed or was interrupted). Closing twice does
    nothing more.

    Args:
      outcome: The final stage's name, 'done' or 'stopped'.
    """
    with self._lock:
      if self._closed:
        return
      now = time.monotonic()
      self._closed = True
      if self._stage is None:  # nothing started: nothing to say
        return
      if self.mode == 'bar':
        _open_bars.discard(self)
        self._stage = outcome
        bar = self._bar if self._bar is not None else _new_bar(self._stream, outcome,
                                                               self._total)
        bar.set_description_str(outcome, refresh=False)
        bar.n = self._rows
        bar.close()  # drawn once more, left on screen
        self._unhook_logging()
      elif self.mode == 'log' or self._last_draw is not None:  # lines: after lines only
        rate = self._rate if self._rate is not None else (
            self._rows / max(now - self._stage_start, 1e-9) if self._counted else None)
        text = f'{outcome}: {self._rows:,} rows, {self._failed:,} failed'
        if rate is not None:
          text += f', {rate:,.1f} rows/s'
        self._line(f'[{_clock(now - self._start, tenths=True)}] {text}')

  @contextlib.contextmanager
  def live(self) -> Iterator[None]:
    """While the block runs, rows `count`ed in this process (by any thread: Beam's
    in-memory DirectRunner converts in this process) are added to the counted stage,
    and a thread redraws every DRAW_EVERY_S; the block's own thread may wait all along
    (`Pipeline.run`)."""
    counts = [self._rows, self._failed]
    guard = threading.Lock()

    def add(rows: int, failed: int) -> None:
      with guard:
        counts[0] += rows
        counts[1] += failed

    def redraw() -> None:
      with guard:
        rows, failed = counts
      self.update(rows, failed)

    with counting(add), self.ticking(redraw):
      yield
    redraw()

  @contextlib.contextmanager
  def ticking(self, redraw: Optional[Callable[[], None]] = None) -> Iterator[None]:
    """While the block runs, a thread calls `redraw` (default: `tick`, which redraws the
    bar's elapsed time) every DRAW_EVERY_S, for a block that may not say anything for
    long (a large COCO JSON read before its first rows). The thread has ended when the
    block has: no worker process is forked while it runs.

    Args:
      redraw: Called with no arguments every DRAW_EVERY_S from the thread; None: `tick`.
    """
    if self.mode == 'off':
      yield
      return
    redraw = redraw or self.tick
    stop = threading.Event()

    def run() -> None:
      while not stop.wait(DRAW_EVERY_S):
        redraw()

    ticker = threading.Thread(target=run, name='tfrecorder-progress', daemon=True)
    ticker.start()
    try:
      yield
    finally:
      stop.set()
      ticker.join()

  # ---------------------------------------------------------------- drawing
  def _handlers(self):
    """The logging handlers that write to the bar's terminal (the root logger's, and
    Python's last resort)."""
    for handler in [*logging.getLogger().handlers, logging.lastResort]:
      stream = getattr(handler, 'stream', None)
      if stream is not None and getattr(stream, 'unescaped', stream) is self._stream:
        yield handler

  def _hook_logging(self) -> None:
    self._clear = _ClearBar(self._bar)
    self._hooked = list(self._handlers())
    for handler in self._hooked:
      handler.addFilter(self._clear)

  def _unhook_logging(self) -> None:
    for handler in self._hooked:
      handler.removeFilter(self._clear)
    self._hooked = []

  def _status(self, now: float) -> str:
    """One plain line: elapsed, stage, rows (of total, %), rate, ETA, failed."""
    text = f'[{_clock(now - self._start, tenths=True)}] {self._stage}'
    if self._stage == 'reading':
      return f'{text}: {self._rows:,} rows read'
    if self._counted or self._rate is not None:
      text += f': {self._rows:,}'
      text += f'/{self._total:,} rows ({100 * self._rows // max(self._total, 1)}%)' if (
          self._total) else ' rows'
      if self._counted:
        rate = self._rows / max(now - self._stage_start, 1e-9)
        text += f', {rate:,.1f} rows/s'
        if self._total and rate > 0:
          text += f', ETA {_clock((self._total - self._rows) / rate)}'
      text += f', {self._failed:,} failed'
    return text

  def _line(self, text: str) -> None:
    if self.mode == 'log':
      logging.info('Conversion: %s', text)
      return
    try:
      self._stream.write(text + '\n')
      self._stream.flush()
    except (OSError, ValueError):  # a closed pipe: the run goes on without its lines
      pass

  def _end_line(self) -> bool:
    """`end_bars` for this reporter: whether its bar's line was open."""
    # A thread drawing holds the lock for a moment; one that holds it longer (blocked on
    # a terminal nobody reads) must not keep the line from ending.
    locked = self._lock.acquire(timeout=1.0)
    try:
      if self._closed or self._bar is None:
        return False
      self._closed = True
      _open_bars.discard(self)
      self._unhook_logging()
      self._bar.disable = True  # tqdm draws it no more, not even when collected
      try:
        self._stream.write('\n')
        self._stream.flush()
      except (OSError, ValueError):
        pass
      return True
    finally:
      if locked:
        self._lock.release()

  def _draw_bar(self, stage_changed: bool = False, reset: bool = False) -> None:
    if self._closed:  # ended (`end_bars`): nothing drawn after its line
      return
    bar = self._bar
    if bar is None:
      bar = self._bar = _new_bar(self._stream, self._stage, self._total)
      self._hook_logging()
      _open_bars.add(self)
      reset = False
    if stage_changed:
      bar.set_description_str(self._stage, refresh=False)
    if reset:
      bar.reset(total=self._total)
    elif bar.total != self._total:
      bar.total = self._total
    bar.n = self._rows
    bar.set_postfix_str('' if self._stage == 'reading' else f'{self._failed:,} failed',
                        refresh=False)
    bar.refresh()


def _new_bar(stream, stage: Optional[str], total: Optional[int]):
  """A tqdm bar on `stream` that starts no monitor thread (worker processes are forked
  from the drawing one) and draws only when told."""
  import tqdm  # pylint: disable=g-import-not-at-top

  class Bar(tqdm.tqdm):
    monitor_interval = 0

  # A terminal that reports no width (a pseudo-terminal nobody sized: `script`, some CI
  # runners) gets 80 columns, not a bar of none.
  try:
    sized = os.get_terminal_size(stream.fileno()).columns > 0
  except (AttributeError, OSError, ValueError):
    sized = False
  return Bar(desc=stage, total=total, unit=' rows', file=stream, smoothing=0, mininterval=0,
             dynamic_ncols=sized, ncols=None if sized else 80, leave=True)


class _ClearBar(logging.Filter):
  """On a handler that writes to the bar's terminal: clears the bar's line before a
  record is written there, so the record starts its own line; the bar is drawn again
  below it at its next redraw."""

  def __init__(self, bar):
    super().__init__()
    self._bar = bar

  def filter(self, record: logging.LogRecord) -> bool:
    try:
      self._bar.clear()
    except (OSError, ValueError):
      pass
    return True
