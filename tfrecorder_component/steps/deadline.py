"""The row time limit (`row_time_limit`) in the process that converts a row: a row that
runs longer fails as `too_slow`, with its cost in seconds (`too_slow_record`).

`RowDeadline` interrupts the row in its own thread, where it returns to Python: the
limit on Beam and wherever the conversion runs in one process. A run without Beam
kills the worker process of a late row instead, which interrupts C code too
(`engines.local.pool.RowClock`, told where each row is by `convert.ChunkConverter`'s
watch); its error record is this module's too.
"""
from __future__ import annotations

import ctypes
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from tfrecorder_component.errors import RowError, error_record
from tfrecorder_component.manifest import ManifestRow

__all__ = ['RowDeadline', 'RowTooSlow', 'TOO_SLOW', 'Where', 'too_slow_record']

# The reason of a row whose conversion took longer than `row_time_limit`.
TOO_SLOW = 'too_slow'
# Where a row is, for a watch (`convert.ChunkConverter.set_watch`): (the chunk's tag,
# the row's index among the chunk's items).
Where = Tuple[Any, int]


def too_slow_record(row: ManifestRow, limit: float, seconds: float,
                    stopped: str = 'it was stopped') -> Dict[str, Any]:
  """The error record of a row whose conversion took longer than the row time limit:
  reason `too_slow`, its cost in seconds in the message.

  Args:
    row: The row.
    limit: The `row_time_limit`, in seconds.
    seconds: How long it had run when it was stopped.
    stopped: What stopped it, in words ('its worker process was stopped').
  """
  return error_record(RowError(TOO_SLOW, (
      f'converting it took longer than the row time limit ({limit:g} s, '
      f'row_time_limit): {stopped} after {seconds:.1f} s')), row)


class RowTooSlow(BaseException):
  """Raised in a converting thread by `RowDeadline` when its row has run past the limit.
  A BaseException, so that no `except Exception` of the row's code (a thumbnail's, a
  decoder's fallback) takes it for the row's own failure."""


class RowDeadline:
  """Fails a row that runs past `limit` seconds, in the process that converts it: a
  monitor thread (one a process) raises RowTooSlow in the converting thread
  (`PyThreadState_SetAsyncExc`), which leaves whatever Python code the row is in.

  Code in C (a decode, a blocking read) is not interrupted: the exception arrives once
  it returns to Python. A read fetched ahead is waited for half a second at a time
  (`convert._reader`), so a row waiting on a stuck remote read stops at its deadline. This is the limit on Beam (a
  DoFn cannot outlive its process) and in a run that converts in its own process; a
  run without Beam forks its workers and stops a late row's process instead
  (`engines.local.pool.RowClock`), which interrupts C code too.

  Use as `with deadline:` around one row; RowTooSlow leaves the block.

  Args:
    limit: The seconds a row may take (`row_time_limit`), above 0.
  """

  _lock = threading.Lock()
  _rows: Dict[int, List[Any]] = {}  # thread ident: [deadline, fired]
  _monitor: Optional[threading.Thread] = None
  POLL_S = 0.1

  def __init__(self, limit: float):
    self.limit = limit

  @classmethod
  def forget(cls) -> None:
    """In a forked child: the parent's monitor thread is not there."""
    cls._lock = threading.Lock()
    cls._rows = {}
    cls._monitor = None

  def __enter__(self) -> 'RowDeadline':
    cls = type(self)
    with cls._lock:
      cls._rows[threading.get_ident()] = [time.monotonic() + self.limit, False]
      if cls._monitor is None:
        cls._monitor = threading.Thread(target=cls._watch, name='tfrecorder-row-deadline',
                                        daemon=True)
        cls._monitor.start()
    return self

  def __exit__(self, *exc_info) -> bool:
    cls = type(self)
    ident = threading.get_ident()
    with cls._lock:
      entry = cls._rows.pop(ident, None)
      if entry is not None and entry[1]:  # fired, maybe not delivered yet: cancelled
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), None)
    return False

  @classmethod
  def _watch(cls) -> None:
    while True:
      time.sleep(cls.POLL_S)
      now = time.monotonic()
      with cls._lock:
        for ident, entry in cls._rows.items():
          if not entry[1] and now >= entry[0]:
            entry[1] = True
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                                       ctypes.py_object(RowTooSlow))
