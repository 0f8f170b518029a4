"""One file never ends a run: a JPEG whose coding process TensorFlow refuses is refused
from its header before any image library decodes it (libjpeg-turbo 3.x in Pillow
corrupts its heap on 8-bit lossless data), and a row whose conversion kills its worker
process (a native crash: SIGABRT, SIGSEGV) fails alone, as `crashed`, on one worker and
on two: the local run converts the dead worker's rows again, narrowing down to the row
that kills a process. Real files, real forked processes, real signals."""
import json
import os
import signal
import subprocess
import sys

import pytest

from images import lossless_jpeg, write_image, write_text
from runs import CLI
from tfrecord_digest import digest
import tfrecorder_component as trc
from tfrecorder_component.engines.local import read as local_read
from tfrecorder_component.steps import row as row_lib
from tfrecorder_component.engines import run

GOOD = 50


def dataset(folder, extra=()):
  """GOOD small JPEGs of two labels, the `extra` files (name: bytes) among them, and a
  manifest naming them all (the extra ones at every seventh row)."""
  rows = []
  for i in range(GOOD):
    write_image(os.path.join(folder, 'img', f'{i:02d}.jpg'), 'JPEG', seed=i, height=24, width=32)
    rows.append(f'TRAIN,img/{i:02d}.jpg,{("cat", "dog")[i % 2]}\n')
  for k, (name, data) in enumerate(extra):
    with open(os.path.join(folder, 'img', name), 'wb') as f:
      f.write(data)
    rows.insert(7 * (k + 1), f'TRAIN,img/{name},cat\n')
  return write_text(os.path.join(folder, 'm.csv'), ''.join(rows))


def errors(out):
  with open(os.path.join(out, 'report', 'errors.jsonl'), encoding='utf-8') as f:
    return [json.loads(line) for line in f]


def test_tensorflow_refuses_the_lossless_jpeg():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with pytest.raises(tf.errors.InvalidArgumentError):
    tf.io.decode_image(lossless_jpeg())
  from PIL import Image  # pylint: disable=g-import-not-at-top
  import io  # pylint: disable=g-import-not-at-top
  with Image.open(io.BytesIO(lossless_jpeg())) as im:  # a valid file: Pillow decodes it
    assert im.getextrema() == (128, 128)


@pytest.mark.parametrize('workers', ['1', '2'])
def test_a_lossless_jpeg_fails_its_row_and_the_run_goes_on(tmp_path, workers):
  """The command, on 1 and on 2 worker processes, with the decode check on and off:
  every good image is written and the lossless one fails as TensorFlow would fail it,
  never reaching Pillow's decoder (which aborted the process: exit 134)."""
  manifest = dataset(str(tmp_path), [('lossless.jpg', lossless_jpeg(64, 48))])
  for check in ([], ['--no-verify-decode']):
    out = str(tmp_path / f'out{len(check)}')
    done = subprocess.run([CLI, 'convert', manifest, out, '--max-error-ratio', '0.1', *check],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TFRECORDER_LOCAL_WORKERS=workers,
                                   TF_CPP_MIN_LOG_LEVEL='2'))
    assert done.returncode == 0, done.stderr
    assert f'Wrote {GOOD} records of {GOOD + 1} rows' in done.stdout
    (error,) = errors(out)
    assert (error['uri'], error['reason'], error['message']) == (
        'img/lossless.jpg', 'unsupported_format',
        'TensorFlow cannot decode this JPEG: unsupported JPEG process: SOF type 0xc3')
  # --convert-unsupported re-encodes it, as any image TensorFlow cannot decode: Pillow
  # decodes lossless data at full scale without harm.
  out = str(tmp_path / 'converted')
  done = subprocess.run([CLI, 'convert', manifest, out, '--convert-unsupported'],
                        capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, TFRECORDER_LOCAL_WORKERS=workers,
                                 TF_CPP_MIN_LOG_LEVEL='2'))
  assert done.returncode == 0, done.stderr
  assert f'Wrote {GOOD + 1} records of {GOOD + 1} rows' in done.stdout


def test_a_lossless_jpeg_on_beam_fails_its_row(tmp_path):
  manifest = dataset(str(tmp_path), [('lossless.jpg', lossless_jpeg(640, 480))])
  result = trc.convert(manifest, str(tmp_path / 'out'), max_error_ratio=0.1,
                       beam_args=['--direct_running_mode=in_memory'])
  assert (result.records_written, result.errors_per_reason) == (GOOD, {'unsupported_format': 1})


def crashing_convert_row(monkeypatch):
  """convert_row, in this process and the workers forked from it, ending its process as
  a native crash does when a row's image is named abort*.jpg (SIGABRT, as glibc's heap
  checks end it) or segv*.jpg (SIGSEGV)."""
  convert_row = row_lib.convert_row

  def crashing(row, *args, **kwargs):
    name = os.path.basename(row.image_uri)
    if name.startswith('abort'):
      os.abort()
    if name.startswith('segv'):
      os.kill(os.getpid(), signal.SIGSEGV)
    return convert_row(row, *args, **kwargs)
  monkeypatch.setattr(row_lib, 'convert_row', crashing)


@pytest.mark.parametrize('workers', [1, 2])
def test_rows_that_kill_their_worker_fail_alone(tmp_path, monkeypatch, workers):
  """Two rows whose conversion kills the worker process (in different chunks, one of
  them the last row of a worker's chunk) and a lossless JPEG among good images: every
  good image is written, exactly as a run without the three rows writes it, each of
  the three is listed with its reason, and nothing the dead workers wrote is left."""
  bad = [('abort.jpg', b'x'), ('lossless.jpg', lossless_jpeg()), ('segv.jpg', b'y')]
  manifest = dataset(str(tmp_path / 'data'), bad)
  with open(manifest, encoding='utf-8') as f:
    lines = f.readlines()
  clean = write_text(str(tmp_path / 'data' / 'clean.csv'),
                     ''.join(l for l in lines if 'img/' + bad[0][0] not in l
                             and bad[1][0] not in l and bad[2][0] not in l))
  crashing_convert_row(monkeypatch)
  monkeypatch.setenv(run.LOCAL_WORKERS_ENV, str(workers))
  monkeypatch.setattr(local_read, 'CHUNK_ROWS', 8)  # 7 chunks: the workers share them
  out = str(tmp_path / 'out')
  result = trc.convert(manifest, out, max_error_ratio=0.1)
  assert (result.rows_read, result.records_written) == (GOOD + 3, GOOD)
  assert result.errors_per_reason == {'crashed': 2, 'unsupported_format': 1}
  found = {e['uri']: (e['reason'], e['message']) for e in errors(out)}
  assert found == {
      'img/abort.jpg': ('crashed', 'converting it ended its worker process (SIGABRT, '
                        'Aborted); the other rows were converted without it'),
      'img/segv.jpg': ('crashed', 'converting it ended its worker process (SIGSEGV, '
                       'Segmentation fault); the other rows were converted without it'),
      'img/lossless.jpg': ('unsupported_format', 'TensorFlow cannot decode this JPEG: '
                           'unsupported JPEG process: SOF type 0xc3')}
  left = [os.path.join(d, n) for d, _, names in os.walk(out) for n in names
          if n.startswith('.part-')]
  assert left == []
  # Every row is TRAIN: eval and test got no record and are not written.
  assert sorted(n for n in os.listdir(out) if n.startswith('Split-')) == ['Split-train']
  names = sorted(os.listdir(os.path.join(out, 'Split-train')))
  assert names == [f'data_tfrecord-{k:05d}-of-{len(names):05d}.gz'  # shard k of n, every k
                   for k in range(len(names))], names  # once: no stray shard
  assert digest(out) == digest(trc.convert(clean, str(tmp_path / 'clean')).output_dir)
  assert result.summary['rows_failed'] == 3


def test_crashes_with_layouts_and_the_progress_counts(tmp_path, monkeypatch):
  """With an extra layout written by the workers, a crashed worker's layout files are
  not left and the layout holds every record; the progress counts each row once."""
  manifest = dataset(str(tmp_path / 'data'), [('abort1.jpg', b'x'), ('abort2.jpg', b'y')])
  crashing_convert_row(monkeypatch)
  monkeypatch.setenv(run.LOCAL_WORKERS_ENV, '2')
  monkeypatch.setattr(local_read, 'CHUNK_ROWS', 8)
  updates = []
  from tfrecorder_component.output import progress as progress_lib  # pylint: disable=g-import-not-at-top
  update = progress_lib.Progress.update
  monkeypatch.setattr(progress_lib.Progress, 'update',
                      lambda self, done, failed=0: updates.append((done, failed)) or update(
                          self, done, failed))
  out = str(tmp_path / 'out')
  result = trc.convert(manifest, out, max_error_ratio=0.1, layouts=['tfrecord'])
  assert result.errors_per_reason == {'crashed': 2}
  assert max(done for done, _ in updates) == GOOD + 2
  assert updates[-1] == (GOOD + 2, 2)
  names = sorted(os.listdir(os.path.join(out, 'tfrecord')))
  assert not [n for n in names if n.startswith('.part-')]
  from tfrecorder_component.readers import records as readers  # pylint: disable=g-import-not-at-top
  assert sum(1 for _ in readers.iter_records(out, 'train', layout='tfrecord',
                                             decode_images=False)) == GOOD


SCRIPT = '''
import os, signal, sys
sys.path.insert(0, {tests!r})
import tfrecorder_component as trc
from tfrecorder_component.engines.local import read as local_read
from tfrecorder_component.steps import row as row_lib
convert_row = row_lib.convert_row
class Unpicklable(Exception):
  def __reduce__(self):
    raise TypeError('cannot be pickled')
def crashing(row, *args, **kwargs):
  name = os.path.basename(row.image_uri)
  if name.startswith('abort'):
    os.abort()
  if name.startswith('odd'):
    raise Unpicklable('an exception no pipe can carry')
  return convert_row(row, *args, **kwargs)
row_lib.convert_row = crashing
local_read.CHUNK_ROWS = 1
try:
  result = trc.convert({manifest!r}, {out!r}, max_error_ratio=0.5)
  print('records', result.records_written, result.errors_per_reason)
except Exception as e:
  print('raised', type(e).__name__, e)
'''


@pytest.mark.parametrize('bad, said', [
    ('abort.jpg', "records 50 {'crashed': 1}"),
    ('odd.jpg', 'raised RuntimeError Unpicklable: an exception no pipe can carry')])
def test_a_worker_that_dies_early_or_cannot_send_its_error_never_hangs(tmp_path, bad, said):
  """One worker, a chunk a row, the first rows' worker dying with the other chunks still
  queued (nobody left to read them): the run ends, and its process exits. A worker
  whose exception cannot be pickled ends the run with that exception's text."""
  manifest = dataset(str(tmp_path / 'data'), [(bad, b'x')])
  with open(manifest, encoding='utf-8') as f:
    lines = f.readlines()
  write_text(manifest, ''.join([lines[7]] + lines[:7] + lines[8:]))  # the bad row first
  done = subprocess.run(
      [sys.executable, '-c', SCRIPT.format(tests=os.path.dirname(__file__), manifest=manifest,
                                           out=str(tmp_path / 'out'))],
      capture_output=True, text=True, timeout=240,
      env=dict(os.environ, TFRECORDER_LOCAL_WORKERS='1', TF_CPP_MIN_LOG_LEVEL='2'))
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.strip().splitlines()[-1] == said
