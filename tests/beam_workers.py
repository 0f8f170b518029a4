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
process group killed) when the `with` block ends. `pool.explain()` prints the end of
their output when the block inside it fails, where pytest shows it.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from typing import Dict, Iterator, List

from storage_servers import _Service

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_SCRIPT = os.path.join(REPO, 'scripts', 'beam-worker-env')


def worker_python() -> str:
  """The worker venv's python, built or refreshed first where it is missing or stale
  (its progress on stderr)."""
  done = subprocess.run([ENV_SCRIPT], stdout=subprocess.PIPE, text=True, check=True,
                        timeout=1800)
  return done.stdout.strip().splitlines()[-1]


class WorkerPool(_Service):
  """Beam's worker pool as a server (`storage_servers._Service`: its own process group,
  started on a free port and waited for, stopped by its process id), run by `python`
  in the working folder `cwd`."""

  name = 'beam-worker-pool'
  ready_seconds = 120.0

  def __init__(self, python: str, cwd: str):
    super().__init__(None, ())
    self.python, self.cwd = python, cwd

  def _command(self) -> List[str]:
    return [self.python, '-m', 'apache_beam.runners.worker.worker_pool_main',
            f'--service_port={self.port}']

  def _ready(self) -> bool:
    import socket  # pylint: disable=g-import-not-at-top
    try:
      with socket.create_connection(('localhost', self.port), timeout=1):
        return True
    except OSError:
      return False

  def _environment(self) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ('PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV', 'PYTHONSTARTUP')}
    # worker_pool_main starts each SDK worker as `python -c ...`, the `python` found on
    # PATH, not its own interpreter: the worker venv's bin comes first.
    venv_bin = os.path.dirname(self.python)
    env['PATH'] = os.pathsep.join([venv_bin, env.get('PATH', '')])
    env['VIRTUAL_ENV'] = os.path.dirname(venv_bin)
    env['PYTHONWARNINGS'] = 'ignore::FutureWarning'  # google.api_core's on Python 3.10
    return env

  def stop(self) -> None:
    """Stops the pool's process group, then kills what is left of it: the SDK workers
    the pool started may outlive it a moment."""
    pid = self.pid
    super().stop()
    if pid is not None:
      try:
        os.killpg(pid, signal.SIGKILL)
      except ProcessLookupError:
        pass

  @property
  def beam_args(self) -> List[str]:
    """Beam arguments (without --runner) that run a PortableRunner pipeline's DoFns in
    this pool's workers."""
    return ['--job_endpoint=embed', '--environment_type=EXTERNAL',
            f'--environment_config=localhost:{self.port}']

  def describe(self) -> str:
    return (f'worker pool on port {self.port}, python {self.python}, cwd {self.cwd}; '
            f'its output, last part:\n{self.output()}')

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
  there)."""
  cwd = os.path.join(folder, 'cwd')
  os.makedirs(cwd)
  with WorkerPool(worker_python(), cwd) as pool:
    yield pool
