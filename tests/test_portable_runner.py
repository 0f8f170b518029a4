"""A conversion on Beam's portable runner, whose SDK workers run in another working folder
and another Python environment (as Dataflow's do; tests/beam_workers.py), gives the same
records as the local engine: local paths given relative to the caller's working folder
(the manifest, `image_root`) must reach the workers as the files they name."""
import os
import subprocess

import pytest

from beam_workers import worker_pool
from images import write_image, write_text
from runs import CLI
from tfrecord_digest import digest
import tfrecorder_component as trc

IMAGES = {  # name: (format, mode, height, width)
    'a.jpg': ('JPEG', 'RGB', 12, 16),
    'b.jpg': ('JPEG', 'L', 9, 7),
    'c.png': ('PNG', 'RGBA', 8, 10),
    'd.png': ('PNG', 'RGB', 11, 5),
    'e.jpg': ('JPEG', 'RGB', 6, 6),
}
MANIFEST = ('split,image_uri,label\n'
            'TRAIN,images/a.jpg,cat\n'
            'TRAIN,images/b.jpg,dog\n'
            'VALIDATION,images/c.png,cat\n'
            'TEST,images/d.png,dog\n'
            'TRAIN,images/e.jpg,bird\n')


@pytest.fixture
def data(tmp_path):
  """tmp_path/data: the images under images/ and automl.csv naming them relative to
  data/."""
  for i, (name, (fmt, mode, height, width)) in enumerate(sorted(IMAGES.items())):
    write_image(str(tmp_path / 'data' / 'images' / name), fmt, mode, height, width, seed=i)
  write_text(str(tmp_path / 'data' / 'automl.csv'), MANIFEST)
  return tmp_path / 'data'


@pytest.fixture
def pool(tmp_path_factory):
  """A worker pool in another venv, its working folder not the test's."""
  with worker_pool(str(tmp_path_factory.mktemp('beam-workers'))) as p:
    yield p


def local_digest(manifest, image_root):
  """The digest of the same conversion by the default local engine (no Beam), into
  out-local of the working folder."""
  result = trc.convert(manifest, 'out-local', image_root=image_root)
  assert result.rows_failed == 0 and result.records_written == len(IMAGES)
  return digest(os.path.abspath('out-local'))


@pytest.mark.parametrize('paths', ['relative', 'absolute'])
def test_convert_on_portable_runner_matches_local_engine(tmp_path, data, pool, monkeypatch,
                                                         paths):
  monkeypatch.chdir(tmp_path)
  assert os.path.realpath(pool.cwd) != os.path.realpath(tmp_path)
  if paths == 'relative':
    manifest, image_root = 'data/automl.csv', 'data'
  else:
    manifest, image_root = str(data / 'automl.csv'), str(data)
  with pool.explain():
    result = trc.convert(manifest, 'out', image_root=image_root, runner='PortableRunner',
                         beam_args=pool.beam_args)
  assert result.rows_failed == 0, result.errors_per_reason
  assert result.records_written == len(IMAGES)
  assert digest(str(tmp_path / 'out')) == local_digest(manifest, image_root)


def test_cli_convert_on_portable_runner_with_relative_paths(tmp_path, data, pool,
                                                            monkeypatch):
  done = subprocess.run(
      [CLI, 'convert', 'data/automl.csv', 'out2', '--image-root', 'data',
       '--runner', 'PortableRunner', *(f'--beam-arg={a}' for a in pool.beam_args)],
      cwd=tmp_path, capture_output=True, text=True, timeout=600,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  if done.returncode:
    print(pool.describe())
  assert done.returncode == 0, done.stderr[-5000:]
  monkeypatch.chdir(tmp_path)
  assert digest(str(tmp_path / 'out2')) == local_digest('data/automl.csv', 'data')


def test_detection_manifest_on_portable_runner_matches_local_engine(tmp_path, data, pool,
                                                                    monkeypatch):
  """Boxes too: an AutoML detection CSV (several boxes an image, grouped into one record
  per image by the workers) gives the local engine's records, labels and box counts."""
  monkeypatch.chdir(tmp_path)
  write_text(str(data / 'boxes.csv'), ''.join(
      f'{split},images/{name},{label},0.{k + 1},0.1,,,0.{k + 5},0.8,,\n'
      for (split, name) in (('TRAIN', 'a.jpg'), ('TEST', 'b.jpg'), ('', 'e.jpg'),
                            ('VALIDATION', 'c.png'))
      for k, label in enumerate(('car', 'person', 'car'))))
  with pool.explain():
    result = trc.convert(str(data / 'boxes.csv'), 'out-boxes', runner='PortableRunner',
                         beam_args=pool.beam_args)
  assert result.rows_failed == 0, result.errors_per_reason
  assert result.records_written == 4 and result.summary['objects_written'] == 12
  local = trc.convert(str(data / 'boxes.csv'), 'out-boxes-local')
  assert local.summary['objects_written'] == 12
  assert digest(str(tmp_path / 'out-boxes')) == digest(str(tmp_path / 'out-boxes-local'))
