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


@pytest.fixture
def s3_bucket(monkeypatch):
  """moto's S3 server on loopback (`storage_servers.S3Server`) with a bucket `bkt`, this
  process's S3 clients pointed at it (its endpoint and keys in the environment); yields
  the server, stopped after the test."""
  from storage_servers import S3Server  # pylint: disable=g-import-not-at-top
  with S3Server() as server:
    server.create_bucket('bkt')
    for key, value in server.client_env().items():
      monkeypatch.setenv(key, value)
    yield server
