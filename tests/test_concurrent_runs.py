"""Two runs at once into one gs:// or s3:// output prefix, against real storage servers on
loopback (moto's S3 server; fake-gcs-server behind the tests' proxy, which answers Beam's
batch requests as Cloud Storage does): the lock object a run takes there first, with the
store's create-only precondition, lets exactly one of them write; the other is refused
before it deletes or writes anything, naming the run that holds the lock and the command
that removes a dead run's lock. Every run is the real command in its own process.

Both runs of a pair start at the same moment and read their images through `slow://`
(tests/slowfs.py), held until each run of the pair has either ended or started reading:
the two overlap however fast either is, and a run that reads images while another
writes into the same prefix (as it did before the lock) has its output destroyed or
published as the other's.
"""
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

import pytest

from images import write_image, write_text
from runs import CLI
from storage_servers import S3Server, _http, gcs_behind_proxy
from tfrecord_digest import read_records

TESTS = os.path.dirname(os.path.abspath(__file__))
BUCKET = 'bkt'
LOCK = '.tfrecorder-lock'
SPLIT_OF = {'TRAIN': 'train', 'VALIDATION': 'eval', 'TEST': 'test'}
# Two runs' data sets, told apart by their labels and splits.
RUNS = {'a': [('TRAIN', 'a0'), ('TRAIN', 'a1'), ('TRAIN', 'a0'), ('VALIDATION', 'a1'),
              ('TRAIN', 'a1'), ('VALIDATION', 'a0')],
        'b': [('TRAIN', 'b0'), ('VALIDATION', 'b1'), ('TEST', 'b2'), ('TRAIN', 'b1'),
              ('VALIDATION', 'b2'), ('TEST', 'b0'), ('TRAIN', 'b2'), ('TEST', 'b1'),
              ('VALIDATION', 'b0')]}
REPEATS = 5  # races of two --overwrite runs, a store
FRESH_REPEATS = 2  # races of two runs into a new prefix, a store


class Store:
  """One storage server, as the tests see it: the command's environment, and listing,
  reading and deleting objects through the fixture's own client."""

  def __init__(self, scheme, server, env):
    self.scheme, self.server, self.env = scheme, server, env

  def uri(self, prefix):
    return f'{self.scheme}://{BUCKET}/{prefix}'

  def names(self, prefix):
    """The objects under `prefix/`, relative to it."""
    return sorted(n[len(prefix) + 1:] for n in self.server.list(BUCKET, prefix + '/'))

  def read(self, name):
    return self.server.read(BUCKET, name)

  def delete(self, name):
    if self.scheme == 's3':
      self.server.client().delete_object(Bucket=BUCKET, Key=name)
      return
    status, data = _http(self.server.port, 'DELETE', f'/storage/v1/b/{BUCKET}/o/'
                         f'{urllib.parse.quote(name, safe="")}')
    assert status in (200, 204), (status, data)

  def metadata(self, name):
    """The object's custom metadata."""
    if self.scheme == 's3':
      return self.server.client().head_object(Bucket=BUCKET, Key=name)['Metadata']
    status, data = _http(self.server.port, 'GET', f'/storage/v1/b/{BUCKET}/o/'
                         f'{urllib.parse.quote(name, safe="")}')
    assert status == 200, (status, data)
    return json.loads(data).get('metadata') or {}

  def download(self, prefix, to):
    return self.server.download(BUCKET, prefix, to)


@pytest.fixture(scope='module', params=['s3', 'gs'])
def store(request):
  if request.param == 's3':
    with S3Server() as server:
      server.create_bucket(BUCKET)
      yield Store('s3', server, server.client_env())
  else:
    with gcs_behind_proxy() as (server, proxy):
      server.create_bucket(BUCKET)
      yield Store('gs', server, {'STORAGE_EMULATOR_HOST': proxy.url})


@pytest.fixture(scope='module')
def data(tmp_path_factory):
  """{run: its manifest}, images named through slow://, so that a run can be held."""
  root = str(tmp_path_factory.mktemp('data'))
  manifests = {}
  for run, rows in RUNS.items():
    lines = []
    for i, (split, label) in enumerate(rows):
      path = os.path.join(root, run, f'{i}.png')
      write_image(path, 'PNG', seed=i + 100 * (run == 'b'))
      lines.append(f'{split},slow://{path},{label}\n')
    manifests[run] = write_text(os.path.join(root, run, 'm.csv'), ''.join(lines))
  return manifests


def environment(store, **extra):
  site = os.path.join(TESTS, 'slowfs_site')
  return dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', **store.env,
              PYTHONPATH=os.pathsep.join([site, TESTS] + sys.path), **extra)


def start(store, *args, **extra):
  return subprocess.Popen([CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=environment(store, **extra), start_new_session=True)


def run(store, *args):
  return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300,
                        env=environment(store))


def race(store, data, out, *flags):
  """Runs a and b into `out` at once, held (see the module) until each has ended or
  started reading; returns {run: (exit status, stdout, stderr)}."""
  folder = tempfile.mkdtemp(prefix='race-')
  hold = write_text(os.path.join(folder, 'hold'), '')
  markers = {r: os.path.join(folder, f'reading-{r}') for r in data}
  procs = {r: start(store, 'convert', data[r], out, *flags, SLOW_FS_MARKER=markers[r],
                    SLOW_FS_HOLD=hold) for r in data}
  try:
    deadline = time.time() + 120
    while not all(p.poll() is not None or os.path.exists(markers[r])
                  for r, p in procs.items()):
      assert time.time() < deadline, 'the runs never got to reading their images'
      time.sleep(0.05)
    os.remove(hold)
    return {r: (p.wait(timeout=240), *p.communicate()) for r, p in procs.items()}
  finally:
    for p in procs.values():
      if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def printed(stdout):
  """(rows read, {split: records}) as the command printed them."""
  found = re.search(r'^Wrote ([\d,]+) records of ([\d,]+) rows to ', stdout, re.M)
  assert found, stdout
  splits = {s: int(n.replace(',', '')) for s, n in
            re.findall(r'^  (\w+): ([\d,]+) records in ', stdout, re.M)}
  assert sum(splits.values()) == int(found.group(1).replace(',', ''))
  return int(found.group(2).replace(',', '')), splits


def expected(run_name):
  """{split: records} a run's data set gives."""
  counts = {}
  for split, _ in RUNS[run_name]:
    counts[SPLIT_OF[split]] = counts.get(SPLIT_OF[split], 0) + 1
  return counts


def assert_output_of(store, prefix, run_name, stdout, tmp):
  """The output at `prefix` is `run_name`'s, complete, and what its run printed; no lock
  and no staging prefix are left."""
  names = store.names(prefix)
  assert '_SUCCESS' in names, names
  assert LOCK not in names and not [n for n in names if n.startswith('.tfrecorder-')], names
  local = store.download(prefix, tempfile.mkdtemp(prefix='out-', dir=tmp))
  # `_SUCCESS` is empty, as on local disk; its metadata names the run that published it.
  assert store.read(f'{prefix}/_SUCCESS') == b''
  assert re.fullmatch(r'[0-9a-f]{12}', store.metadata(f'{prefix}/_SUCCESS')['tfrecorder-run'])
  with open(os.path.join(local, 'report', 'summary.json'), encoding='utf-8') as f:
    summary = json.load(f)
  rows, splits = printed(stdout)
  assert splits == expected(run_name), stdout
  assert summary['rows_read'] == rows == len(RUNS[run_name])
  assert {s: n for s, n in summary['records_per_split'].items() if n} == splits
  assert sorted(n for n in os.listdir(local) if n.startswith('Split-')) == sorted(
      f'Split-{s}' for s in splits)
  for split, count in splits.items():
    assert len(read_records(os.path.join(local, f'Split-{split}'))) == count
  with open(os.path.join(local, 'labels.txt'), encoding='utf-8') as f:
    assert sorted(f.read().split()) == sorted({label for _, label in RUNS[run_name]})


def lock_refusal(store, out, stderr):
  """The command a refusal for a held lock on `out` gives to remove it, checked against
  what it must be (one line, naming the prefix, the lock and the run holding it)."""
  lock = f'{out}/{LOCK}'
  lines = stderr.strip().splitlines()
  assert len(lines) == 1, stderr
  line = lines[0]
  assert line.startswith(f'error: {out} is in use by another run (run '), line
  assert re.search(r'pid \d+ on \S+, started \d{4}-\d\d-\d\dT', line), line
  assert f'lock {lock}' in line and 'wait for it to end' in line, line
  command = re.findall(r'`([^`]+)`', line)
  assert len(command) == 1, line
  words = shlex.split(command[0])
  if store.scheme == 's3':
    assert words == ['aws', '--endpoint-url', store.env['AWS_ENDPOINT_URL'], 's3', 'rm', lock]
  else:
    assert words == ['gcloud', 'storage', 'rm', lock]
  return words


def assert_one_won(store, data, prefix, results, tmp):
  """Exactly one run of a race exited 0 and the output is its; the other was refused
  for the lock, before it wrote anything. Returns the winner."""
  won = [r for r, (code, _, _) in results.items() if code == 0]
  assert len(won) == 1, {r: (c, e[-3000:]) for r, (c, _, e) in results.items()}
  winner, = won
  loser, = set(results) - {winner}
  code, stdout, stderr = results[loser]
  assert code == 2, stderr
  assert stdout == '', stdout
  lock_refusal(store, store.uri(prefix), stderr)
  assert_output_of(store, prefix, winner, results[winner][1], tmp)
  return winner


def test_two_overwrite_runs_at_once_leave_exactly_one_complete_output(store, data, tmp_path):
  prefix = 'overwrite'
  out = store.uri(prefix)
  first = run(store, 'convert', data['a'], out)
  assert first.returncode == 0, first.stderr
  assert_output_of(store, prefix, 'a', first.stdout, str(tmp_path))
  winners = []
  for _ in range(REPEATS):
    results = race(store, data, out, '--overwrite')
    winners.append(assert_one_won(store, data, prefix, results, str(tmp_path)))
  assert len(winners) == REPEATS


def test_two_fresh_runs_at_once_into_one_new_prefix(store, data, tmp_path):
  for i in range(FRESH_REPEATS):
    prefix = f'fresh-{i}'
    results = race(store, data, store.uri(prefix))
    assert_one_won(store, data, prefix, results, str(tmp_path))


def _held_run(store, data, out, tmp_path, *flags):
  """A run of a into `out` that is reading its images (held there)."""
  marker, hold = str(tmp_path / 'reading'), write_text(str(tmp_path / 'hold'), '')
  if os.path.exists(marker):
    os.remove(marker)
  proc = start(store, 'convert', data['a'], out, *flags, SLOW_FS_MARKER=marker,
               SLOW_FS_HOLD=hold)
  deadline = time.time() + 120
  while not os.path.exists(marker):
    assert proc.poll() is None, proc.communicate()
    assert time.time() < deadline, 'the run never got to reading its images'
    time.sleep(0.05)
  return proc, hold


def test_a_killed_runs_lock_refuses_the_next_run_until_the_given_command_removes_it(
    store, data, tmp_path):
  prefix = 'killed'
  out = store.uri(prefix)
  proc, hold = _held_run(store, data, out, tmp_path)
  os.killpg(proc.pid, signal.SIGKILL)
  proc.wait()
  os.remove(hold)
  left = {n: store.read(f'{prefix}/{n}') for n in store.names(prefix)}
  assert LOCK in left
  held = json.loads(store.read(f'{prefix}/{LOCK}'))
  assert held['pid'] == proc.pid and held['run'] and held['host'] and held['started']
  refused = run(store, 'convert', data['b'], out)
  assert refused.returncode == 2, refused.stderr
  assert f'(run {held["run"]}, pid {proc.pid} on ' in refused.stderr
  words = lock_refusal(store, out, refused.stderr)
  # A run on Beam is refused the same, by the launcher, before its pipeline starts.
  beam = run(store, 'convert', data['b'], out, '--beam-arg=--direct_num_workers=1')
  assert beam.returncode == 2, beam.stderr
  assert 'converting (Beam pipeline)' not in beam.stderr
  assert lock_refusal(store, out, beam.stderr) == words
  assert {n: store.read(f'{prefix}/{n}') for n in store.names(prefix)} == left  # untouched
  # What the command does (`aws s3 rm` / `gcloud storage rm` of that object), done
  # through the fixture's client; then the same command runs, and cleans up the killed
  # run's leftovers.
  store.delete(words[-1].split('://', 1)[1].split('/', 1)[1])
  again = run(store, 'convert', data['b'], out)
  assert again.returncode == 0, again.stderr
  assert_output_of(store, prefix, 'b', again.stdout, str(tmp_path))


def test_the_lock_is_removed_after_success_failure_and_sigterm(store, data, tmp_path):
  prefix = 'ends'
  out = store.uri(prefix)
  done = run(store, 'convert', data['a'], out)
  assert done.returncode == 0, done.stderr
  assert_output_of(store, prefix, 'a', done.stdout, str(tmp_path))
  before = {n: store.read(f'{prefix}/{n}') for n in store.names(prefix)}
  # A failed run (a missing image, no failed row allowed): the old output stays, its
  # report goes beside it, and the lock goes.
  bad = write_text(str(tmp_path / 'bad.csv'), f'TRAIN,{tmp_path}/gone.png,a0\n')
  failed = run(store, 'convert', bad, out, '--overwrite')
  assert failed.returncode == 1, failed.stderr
  assert {n: store.read(f'{prefix}/{n}') for n in store.names(prefix)} == before
  # SIGTERM in the middle of an overwrite: exit 143, the old output as it was, no lock.
  proc, hold = _held_run(store, data, out, tmp_path, '--overwrite')
  proc.send_signal(signal.SIGTERM)
  _, stderr = proc.communicate(timeout=120)
  os.remove(hold)
  assert proc.returncode == 143, stderr
  assert 'terminated (SIGTERM)' in stderr
  assert {n: store.read(f'{prefix}/{n}') for n in store.names(prefix)} == before
  # The next run takes the prefix at once (it gets to reading its images). Its lock
  # removed while it works (by hand, wrongly), it does not publish: it stops before
  # deleting the old output, which stays, and says why.
  proc, hold = _held_run(store, data, out, tmp_path, '--overwrite')
  store.delete(f'{prefix}/{LOCK}')
  os.remove(hold)
  stdout, stderr = proc.communicate(timeout=120)
  assert proc.returncode == 2, stderr
  assert f'error: this run no longer holds the lock {out}/{LOCK} of {out} (it is gone' in stderr
  assert 'Wrote ' not in stdout
  assert {n: store.read(f'{prefix}/{n}') for n in store.names(prefix)} == before


def test_the_removal_command_is_quoted_and_names_the_endpoint(monkeypatch):
  from tfrecorder_component.output.remote_lock import removal_command
  monkeypatch.delenv('AWS_ENDPOINT_URL', raising=False)
  monkeypatch.delenv('AWS_ENDPOINT_URL_S3', raising=False)
  assert removal_command('s3://b/my out/.tfrecorder-lock') == (
      "aws s3 rm 's3://b/my out/.tfrecorder-lock'")
  assert removal_command('gs://b/o/.tfrecorder-lock') == 'gcloud storage rm gs://b/o/.tfrecorder-lock'
  monkeypatch.setenv('AWS_ENDPOINT_URL', 'http://minio:9000')
  assert shlex.split(removal_command('s3://b/o/.tfrecorder-lock')) == [
      'aws', '--endpoint-url', 'http://minio:9000', 's3', 'rm', 's3://b/o/.tfrecorder-lock']
  monkeypatch.setenv('AWS_ENDPOINT_URL_S3', 'http://s3only:9000')
  assert '--endpoint-url http://s3only:9000 ' in removal_command('s3://b/o/.tfrecorder-lock')
