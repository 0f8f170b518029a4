"""The interpreters of the programs our output feeds, each in a virtual environment of its
own, never the product's: `consumers` (scripts/consumers-env: TensorFlow 2.16.2 with
Keras, TF Model Garden 2.16.0, TFDS 4.9.6, the `tfrecord` package 1.14.5) and `peers`
(scripts/peers-env: TensorFlow 2.16.2, TFDS 4.9.7, Ray Data); and a script run with one
of them, its stdout read as JSON.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.lru_cache(maxsize=None)
def env_python(name: str) -> str:
  """The python of scripts/NAME-env ('consumers' or 'peers'), which builds that
  environment the first time from its committed lock (kept afterwards) and prints its
  interpreter.

  Args:
    name: The environment: scripts/<name>-env makes it.
  """
  done = subprocess.run([os.path.join(ROOT, 'scripts', f'{name}-env')], cwd=ROOT,
                        capture_output=True, text=True, check=False)
  assert done.returncode == 0, f'scripts/{name}-env failed:\n{done.stderr[-4000:]}'
  return done.stdout.strip().splitlines()[-1]


def run_json(name: str, script: str, *args: str, cwd: str = ROOT) -> Any:
  """What `script` (Python source) prints as JSON on its last line of stdout, run with
  the `name` environment's python (`env_python`) in `cwd`; an assertion error with its
  stderr's tail when it fails.

  Args:
    name: The environment: 'consumers' or 'peers'.
    script: The program's source; `sys.argv[1:]` are `args`.
    *args: Its command-line arguments.
    cwd: The folder it runs in.
  """
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', PYTHONWARNINGS='ignore',
             PYTHONPATH='', CUDA_VISIBLE_DEVICES='')
  done = subprocess.run([env_python(name), '-c', script, *args], cwd=cwd, env=env,
                        capture_output=True, text=True, timeout=600, check=False)
  assert done.returncode == 0, (f'the {name} environment\'s script failed:\n'
                                f'{done.stderr[-4000:]}')
  return json.loads(done.stdout.strip().splitlines()[-1])
