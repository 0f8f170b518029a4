"""Shared fixtures. TensorFlow is imported once per test process, at module level."""
import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
sys.path.insert(0, os.path.dirname(__file__))

import tempfile  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope='session', autouse=True)
def _session_temp_folder(tmp_path_factory):
  """Temporary files of this test process and the programs it starts go under pytest's
  own temporary folder, which pytest removes a few runs later: TFX's Beam executors
  (StatisticsGen, Evaluator) leave about 50 MB of package build behind at every start."""
  folder = str(tmp_path_factory.mktemp('tmp'))
  given = os.environ.get('TMPDIR')
  os.environ['TMPDIR'] = folder
  tempfile.tempdir = None
  yield folder
  if given is None:
    os.environ.pop('TMPDIR', None)
  else:
    os.environ['TMPDIR'] = given
  tempfile.tempdir = None
