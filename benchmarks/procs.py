"""Runs one measured command in its own process: wall time and the peak resident memory
of its whole process tree (the runner and every Beam worker), sampled every 50 ms."""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Sequence

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIET = {'TF_CPP_MIN_LOG_LEVEL': '3', 'PYTHONWARNINGS': 'ignore'}


def tree_rss(proc: psutil.Process, peaks: Optional[Dict[int, int]] = None) -> int:
  """Resident bytes of `proc` and all its descendants; `peaks` keeps each one's highest."""
  total = 0
  for p in [proc] + proc.children(recursive=True):
    try:
      rss = p.memory_info().rss
    except psutil.Error:
      continue
    total += rss
    if peaks is not None:
      peaks[p.pid] = max(peaks.get(p.pid, 0), rss)
  return total


# This checkout's own packages, which the editable install leaves uncompiled.
SOURCES = ('tfrecorder_component', 'benchmarks', 'pipelines')
_compiled = False


def compile_sources() -> None:
  """Compiles this checkout's modules' bytecode (those not compiled since they changed),
  once a process: a user's `pip install` compiles the package, while an editable
  install under PYTHONDONTWRITEBYTECODE leaves every measured process compiling it
  again (0.2-0.4 CPU-s a start, before the workers fork), which the peers, installed
  compiled, do not pay."""
  global _compiled
  if not _compiled:
    subprocess.run([sys.executable, '-m', 'compileall', '-q', *SOURCES], cwd=ROOT,
                   check=True, stdout=subprocess.DEVNULL)
    _compiled = True


def run(cmd: Sequence[str], env: Optional[Dict[str, str]] = None,
        cwd: str = ROOT) -> Dict[str, object]:
  """Runs `cmd`; returns wall_s, cpu_s (user and system time of the command and the
  processes it waited for), peak_mb (the tree), process_mb (the launched process's
  own peak), child_mb (the largest child's, e.g. a Beam worker), largest_mb (the largest
  single process's peak, the launched one or any descendant) and stdout. Raises with
  stderr's tail on failure. This checkout's modules are compiled first
  (`compile_sources`), as an installed package's are."""
  compile_sources()
  start = time.perf_counter()
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env={**os.environ, **QUIET, **(env or {})}, cwd=cwd)
  # Both pipes drain while it runs, so a chatty command (progress bars) never blocks on a
  # full pipe.
  streams = {}
  readers = [threading.Thread(target=lambda k, f: streams.__setitem__(k, f.read()),
                              args=(k, f), daemon=True)
             for k, f in (('out', proc.stdout), ('err', proc.stderr))]
  for t in readers:
    t.start()
  ps = psutil.Process(proc.pid)
  peak, peaks = 0, {}
  while proc.poll() is None:
    peak = max(peak, tree_rss(ps, peaks))
    time.sleep(0.05)
  wall = time.perf_counter() - start
  after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the command and its waited-for
  cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)  # descendants
  for t in readers:  # a descendant that outlives the command may hold a pipe open
    t.join(timeout=30)
  out, err = streams.get('out', b''), streams.get('err', b'')
  if proc.returncode:
    raise RuntimeError(f'{" ".join(cmd)[:300]} exited {proc.returncode}:\n'
                       f'{err.decode(errors="replace")[-3000:]}')
  children = [v for pid, v in peaks.items() if pid != proc.pid]
  return {'wall_s': wall, 'cpu_s': cpu, 'peak_mb': peak / 2**20,
          'process_mb': peaks.get(proc.pid, 0) / 2**20,
          'child_mb': max(children, default=0) / 2**20,
          'largest_mb': max(peaks.values(), default=0) / 2**20,
          'stdout': out.decode(errors='replace')}


def python(*args: str) -> List[str]:
  return [sys.executable, *args]


def marginal(a: Dict, b: Dict, n1: int, n2: int) -> Optional[Dict[str, float]]:
  """The steady figures between two whole-process runs of n1 < n2 images (`run`'s
  wall_s and cpu_s): images a second, CPU ms an image, and the wall and CPU seconds
  left at N = 0; None where b took no longer than a (too close to time a rate)."""
  if b['wall_s'] <= a['wall_s']:
    return None
  rate = (n2 - n1) / (b['wall_s'] - a['wall_s'])
  cpu_ms = 1000 * (b['cpu_s'] - a['cpu_s']) / (n2 - n1)
  return {'rate': rate, 'cpu_ms': cpu_ms, 'fixed_s': max(0.0, a['wall_s'] - n1 / rate),
          'fixed_cpu_s': max(0.0, a['cpu_s'] - n1 * cpu_ms / 1000)}


def spread(values: Sequence[float]) -> Dict[str, float]:
  """Median, min and max of repeated measurements."""
  return {'median': statistics.median(values), 'min': min(values), 'max': max(values),
          'n': len(values)}


def fmt(s: Dict[str, float], digits: int = 1, unit: str = '') -> str:
  """'12.3 (11.0–14.1)': the median, then the range over repeats."""
  f = f'{{:,.{digits}f}}'
  if s['n'] == 1:
    return f.format(s['median']) + unit
  return f'{f.format(s["median"])}{unit} ({f.format(s["min"])}–{f.format(s["max"])})'
