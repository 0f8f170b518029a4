"""Ctrl-C and SIGTERM for the command: one line, exit 130 (143), nothing left behind.

A run of the command owns its process. `install()` makes SIGINT and SIGTERM reach one
thread of this process instead of every process of the run: both are ignored (so the
DirectRunner's worker processes, which inherit that, print no traceback of their own)
and blocked in every thread (Linux keeps a blocked signal pending even while it is
ignored), and a thread waits for them with `sigwait`. When one comes it stops the run's
worker processes, runs the clean-ups registered with `on_interrupt` (an unfinished
output's staging folder is removed, its lock released), prints one line, kills the
workers and ends the process. The package installs it on import when the process is
the `tfrecorder-component` command, before pandas starts BLAS threads that would not
block the signals. `convert()` called from Python keeps Python's own KeyboardInterrupt.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable, Dict, List

_SIGNALS = {signal.SIGINT: 'interrupted (Ctrl-C)', signal.SIGTERM: 'terminated (SIGTERM)'}
_cleanups: Dict[int, Callable[[], str]] = {}
_lock = threading.RLock()
_installed = False


def on_interrupt(cleanup: Callable[[], str]) -> int:
  """Registers `cleanup` (returning what it left, for the line printed); returns a key
  for `done`.

  Args:
    cleanup: Called with no arguments, in the signal thread, when SIGINT or SIGTERM
      ends the command; returns a phrase for the printed line (what it left as it
      was), or '' to add nothing.
  """
  with _lock:
    key = id(cleanup)
    _cleanups[key] = cleanup
    return key


def done(key: int) -> None:
  """Unregisters a clean-up once what it guards has ended; an unknown key is ignored.

  Args:
    key: What `on_interrupt` returned for the clean-up.
  """
  with _lock:
    _cleanups.pop(key, None)


def guarded() -> threading.RLock:
  """Held while a step must not be cut in half by a signal's clean-up (moving a finished
  output into place): the clean-up waits for it."""
  return _lock


def _descendants(pid: int) -> List[int]:
  """Every process below `pid`, from /proc (Linux)."""
  children: Dict[int, List[int]] = {}
  try:
    names = os.listdir('/proc')
  except OSError:
    return []
  for name in names:
    if not name.isdigit():
      continue
    try:
      with open(f'/proc/{name}/stat', 'rb') as f:
        stat = f.read()
    except OSError:
      continue
    parent = int(stat[stat.rindex(b')') + 2:].split()[1])
    children.setdefault(parent, []).append(int(name))
  found, stack = [], [pid]
  while stack:
    for child in children.get(stack.pop(), ()):
      found.append(child)
      stack.append(child)
  return found


def _signal_all(pids: List[int], sig: int) -> None:
  for pid in pids:
    try:
      os.kill(pid, sig)
    except OSError:
      pass


def _echoes_control_characters(stream) -> bool:
  """Whether `stream` is a terminal that echoes Ctrl-C as `^C` (ECHO and ECHOCTL)."""
  try:
    import termios  # pylint: disable=g-import-not-at-top
    fd = stream.fileno()
    if not os.isatty(fd):
      return False
    flags = termios.tcgetattr(fd)[3]
    return bool(flags & termios.ECHO and flags & getattr(termios, 'ECHOCTL', 0))
  except Exception:  # pylint: disable=broad-except  no fileno, closed, termios.error
    return False


def line_start(sig: int) -> str:
  """What goes before the line an interrupted command prints, so that it starts a line
  of its own: the progress bar's line is ended (`progress.end_bars`); without a bar, a
  newline after the `^C` a terminal echoes for Ctrl-C.

  Args:
    sig: The signal that ended the command (signal.SIGINT or signal.SIGTERM); only
      SIGINT's `^C` is echoed.
  """
  progress = sys.modules.get('tfrecorder_component.output.progress')  # no import in this thread
  if progress is not None and progress.end_bars():
    return ''
  return '\n' if sig == signal.SIGINT and _echoes_control_characters(sys.stderr) else ''


def _wait() -> None:
  sig = signal.sigwait(set(_SIGNALS))
  # Worker processes are stopped first (stopping tells the runner's threads nothing, so
  # they print nothing), the clean-ups run, the line is printed, and only then are the
  # workers killed, with this process's output closed.
  workers = _descendants(os.getpid())
  _signal_all(workers, signal.SIGSTOP)
  with _lock:
    left = []
    for cleanup in list(_cleanups.values()):
      try:
        left.append(cleanup())
      except Exception as e:  # pylint: disable=broad-except
        left.append(f'clean-up failed: {e}')
  said = '; '.join(s for s in left if s)
  try:
    sys.stderr.write(line_start(sig) + f'error: {_SIGNALS[sig]}' +
                     (f'; {said}' if said else '') + '\n')
    sys.stderr.flush()
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
  finally:
    _signal_all(workers + _descendants(os.getpid()), signal.SIGKILL)
    os._exit(128 + sig)  # pylint: disable=protected-access


def _other_threads() -> bool:
  """Whether this process runs any thread but this one (native ones included, such as
  a BLAS library's), or cannot tell."""
  try:
    return len(os.listdir('/proc/self/task')) > 1
  except OSError:
    return True


def install() -> None:
  """Takes SIGINT and SIGTERM for the process (see the module), if no other thread runs
  yet (a thread that does not block them would take and drop them): the command's
  import of the package does it first thing. Once."""
  global _installed
  if (_installed or threading.current_thread() is not threading.main_thread()
      or not hasattr(signal, 'sigwait') or _other_threads()):
    return  # Python's own KeyboardInterrupt: a thread already started would swallow them
  for sig in _SIGNALS:
    signal.signal(sig, signal.SIG_IGN)
  signal.pthread_sigmask(signal.SIG_BLOCK, set(_SIGNALS))
  threading.Thread(target=_wait, name='tfrecorder-signals', daemon=True).start()
  _installed = True
