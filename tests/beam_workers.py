"""Beam SDK workers as Dataflow runs them: in another Python environment and another
working folder than the program that builds the pipeline.

`worker_pool(folder)` starts Beam's worker pool (`apache_beam.runners.worker.
worker_pool_main`) from the virtual environment of `scripts/beam-worker-env` (only
apache-beam[gcp] and this package, installed from an sdist of the current source; built
on first use, a few minutes at most, then cached), with its working folder a fresh one
under `folder`, on a free port. A pipeline run with `pool.beam_args` (Beam's
PortableRunner with an embedded job server and an EXTERNAL environment) executes its
DoFns in SDK worker processes that the pool starts: `python -m ...sdk_worker` children
of the pool, in its folder and environment. The pool and its workers are stopped (their
process group killed) when the `with` block ends. Their stderr goes to `pool.log`;
`pool.explain()` prints its end when the block inside it fails, where pytest shows it.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Iterator, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_SCRIPT = os.path.join(REPO, 'scripts', 'beam-worker-env')
START_TIMEOUT_S = 120


def worker_python() -> str:
  """The worker venv's python, built or refreshed first where it is missing or stale
  (its progress on stderr)."""
  done = subprocess.run([ENV_SCRIPT], stdout=subprocess.PIPE, text=True, check=True,
                        timeout=1800)
  return done.stdout.strip().splitlines()[-1]


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('localhost', 0))
    return s.getsockname()[1]


def _listening(port: int) -> bool:
  try:
    with socket.create_connection(('localhost', port), timeout=1):
      return True
  except OSError:
    return False


class WorkerPool:
  """A running worker pool: its `port`, working folder `cwd`, `python` and `log`."""

  def __init__(self, python: str, cwd: str, log: str, port: int, process: subprocess.Popen):
    self.python, self.cwd, self.log, self.port, self.process = python, cwd, log, port, process

  @property
  def beam_args(self) -> List[str]:
    """Beam arguments (without --runner) that run a PortableRunner pipeline's DoFns in
    this pool's workers."""
    return ['--job_endpoint=embed', '--environment_type=EXTERNAL',
            f'--environment_config=localhost:{self.port}']

  def log_tail(self, chars: int = 20_000) -> str:
    try:
      with open(self.log, encoding='utf-8', errors='replace') as f:
        text = f.read()
    except OSError as e:
      return f'(no worker pool log: {e})'
    return text[-chars:]

  def describe(self) -> str:
    return (f'worker pool on port {self.port}, python {self.python}, cwd {self.cwd}; '
            f'its stderr ({self.log}), last part:\n{self.log_tail()}')

  @contextlib.contextmanager
  def explain(self) -> Iterator[None]:
    """Prints the pool's log when the block fails (pytest shows it with the failure)."""
    try:
      yield
    except BaseException:
      print(self.describe())
      raise


@contextlib.contextmanager
def worker_pool(folder: str) -> Iterator[WorkerPool]:
  """A worker pool whose working folder is a new folder `folder`/cwd (no test data
  there) and whose stderr goes to `folder`/worker-pool.log."""
  python = worker_python()
  cwd = os.path.join(folder, 'cwd')
  os.makedirs(cwd)
  log = os.path.join(folder, 'worker-pool.log')
  env = {k: v for k, v in os.environ.items()
         if k not in ('PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV', 'PYTHONSTARTUP')}
  # worker_pool_main starts each SDK worker as `python -c ...`, the `python` found on
  # PATH, not its own interpreter: the worker venv's bin comes first.
  venv_bin = os.path.dirname(python)
  env['PATH'] = os.pathsep.join([venv_bin, env.get('PATH', '')])
  env['VIRTUAL_ENV'] = os.path.dirname(venv_bin)
  env['PYTHONWARNINGS'] = 'ignore::FutureWarning'  # google.api_core's on Python 3.10
  port = _free_port()
  with open(log, 'wb') as err:
    process = subprocess.Popen(
        [python, '-m', 'apache_beam.runners.worker.worker_pool_main',
         f'--service_port={port}'],
        cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
        start_new_session=True)
  pool = WorkerPool(python, cwd, log, port, process)
  try:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _listening(port):
      if process.poll() is not None:
        raise RuntimeError(f'the worker pool exited ({process.returncode}) before '
                           f'listening: {pool.describe()}')
      if time.monotonic() > deadline:
        raise RuntimeError(f'the worker pool is not listening after {START_TIMEOUT_S} s: '
                           f'{pool.describe()}')
      time.sleep(0.1)
    yield pool
  finally:
    _stop(process)


def _stop(process: subprocess.Popen) -> None:
  """Kills the pool's process group: the pool and the SDK workers it started."""
  for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
    try:
      os.killpg(process.pid, sig)
    except ProcessLookupError:
      break
    try:
      process.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
      continue
    # The pool is gone; its workers (same group) may linger a moment after SIGTERM.
    try:
      os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
      pass
    break
  if process.returncode is None:
    print(f'warning: worker pool {process.pid} did not stop', file=sys.stderr)
