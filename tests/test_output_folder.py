"""The output folder as users give it, and runs that end badly: real folders, a real
tmpfs mount and capabilities dropped with setpriv (as root; skipped otherwise, saying
why), real signals to real processes of the command."""
import glob
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest

from images import write_image, write_text
from runs import CLI, tree
import tfrecorder_component as trc

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason='mounting tmpfs and dropping capabilities '
                                'need root')


def dataset(folder, n=6, scheme=''):
  """n small PNGs and a manifest naming them (through `scheme`, e.g. 'slow://')."""
  rows = []
  for i in range(n):
    path = os.path.join(folder, 'img', f'{i}.png')
    write_image(path, 'PNG', seed=i)
    rows.append(f'TRAIN,{scheme}{path},l{i % 2}\n')
  return write_text(os.path.join(folder, 'm.csv'), ''.join(rows))


def env(**extra):
  """The command's environment: the tests' folder importable, so `slow://` (slowfs) is
  registered in the command and in its worker processes (sitecustomize)."""
  site = os.path.join(TESTS, 'slowfs_site')
  return dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
              PYTHONPATH=os.pathsep.join([site, TESTS] + sys.path), **extra)


def start(*args, **extra):
  return subprocess.Popen([CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env(**extra), start_new_session=True)


def wait_for(path, proc, seconds=240):
  deadline = time.time() + seconds
  while not os.path.exists(path):
    assert proc.poll() is None, proc.communicate()
    assert time.time() < deadline, f'{path} never appeared'
    time.sleep(0.1)


def run(*args, **extra):
  return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=600,
                        env=env(**extra))


def test_a_second_run_is_refused_and_a_file_put_in_during_a_run_is_kept(tmp_path):
  manifest = dataset(str(tmp_path / 'data'), scheme='slow://')
  out = tmp_path / 'out'
  marker, hold = str(tmp_path / 'reading'), write_text(str(tmp_path / 'hold'), '')
  first = start('convert', manifest, str(out), SLOW_FS_MARKER=marker, SLOW_FS_HOLD=hold)
  wait_for(marker, first)  # the first run reads images, until `hold` is removed
  second = run('convert', manifest, str(out), '--overwrite')
  assert second.returncode == 2, second.stderr
  assert second.stderr == (f'error: {out} is in use by another run: wait for it to end, or '
                           'convert into another folder\n')
  write_text(str(out / 'notes.txt'), 'mine')
  os.remove(hold)
  stdout, stderr = first.communicate(timeout=600)
  assert first.returncode == 0, stderr
  assert (out / 'notes.txt').read_text() == 'mine'
  # TRAIN rows only: eval and test got no record, and are not written.
  assert sorted(os.listdir(out)) == ['Split-train', '_SUCCESS',
                                     'examples.json', 'label_map.csv', 'label_map.pbtxt',
                                     'labels.txt', 'notes.txt', 'report']
  assert 'Wrote 6 records of 6 rows' in stdout


def test_a_name_taken_during_a_run_is_not_replaced(tmp_path):
  manifest = dataset(str(tmp_path / 'data'), scheme='slow://')
  out = tmp_path / 'out'
  marker, hold = str(tmp_path / 'reading'), write_text(str(tmp_path / 'hold'), '')
  first = start('convert', manifest, str(out), SLOW_FS_MARKER=marker, SLOW_FS_HOLD=hold)
  wait_for(marker, first)
  write_text(str(out / 'labels.txt'), 'my own labels\n')
  os.remove(hold)
  _, stderr = first.communicate(timeout=600)
  assert first.returncode == 2
  assert stderr == (f'error: labels.txt appeared in {out} while the run worked; nothing '
                    "there was replaced and the run's output is removed: convert again into "
                    'an empty folder\n')
  assert os.listdir(out) == ['labels.txt'] and (out / 'labels.txt').read_text() == (
      'my own labels\n')


@needs_root
def test_a_mount_point_is_written_in_place(tmp_path):
  manifest = dataset(str(tmp_path / 'data'))
  out = tmp_path / 'volume'
  out.mkdir()
  subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', str(out)], check=True)
  try:
    done = run('convert', manifest, str(out))
    assert done.returncode == 0, done.stderr
    device = os.stat(out).st_dev
    assert device != os.stat(tmp_path).st_dev
    assert all(os.stat(p).st_dev == device for p in glob.glob(str(out / '**'), recursive=True))
    assert len(glob.glob(str(out / 'Split-train' / '*.gz'))) >= 1
    assert (out / '_SUCCESS').exists()
    assert [n for n in os.listdir(tmp_path) if n.startswith('.')] == []
    # A second run with --overwrite replaces it there too.
    done = run('convert', manifest, str(out), '--overwrite')
    assert done.returncode == 0, done.stderr
    # TRAIN rows only: eval and test got no record, and are not written.
    assert sorted(os.listdir(out)) == ['Split-train', '_SUCCESS',
                                       'examples.json', 'label_map.csv', 'label_map.pbtxt',
                                       'labels.txt', 'report']
  finally:
    subprocess.run(['umount', str(out)], check=True)


@needs_root
@pytest.mark.skipif(shutil.which('setpriv') is None, reason='needs setpriv (util-linux)')
def test_an_empty_folder_in_a_parent_the_user_cannot_write(tmp_path):
  manifest = dataset(str(tmp_path / 'data'))
  parent = tmp_path / 'readonly'
  out = parent / 'given'
  out.mkdir(parents=True)
  out.chmod(0o777)
  parent.chmod(0o555)
  drop = ['setpriv', '--bounding-set', '-dac_override,-dac_read_search,-fowner',
          '--inh-caps', '-dac_override,-dac_read_search,-fowner']
  try:
    # The parent really is unwritable to this process.
    probe = subprocess.run(drop + ['touch', str(parent / 'x')], capture_output=True)
    assert probe.returncode != 0
    done = subprocess.run(drop + [CLI, 'convert', manifest, str(out)], capture_output=True,
                          text=True, timeout=600, env=env())
    assert done.returncode == 0, done.stderr
    assert (out / '_SUCCESS').exists() and glob.glob(str(out / 'Split-train' / '*.gz'))
    # A failing --overwrite keeps its report inside the folder, the old output as it was.
    before = tree(str(out))
    bad = write_text(str(tmp_path / 'data' / 'bad.csv'), 'TRAIN,missing.png,x\n')
    done = subprocess.run(drop + [CLI, 'convert', bad, str(out), '--overwrite'],
                          capture_output=True, text=True, timeout=600, env=env())
    assert done.returncode == 1, done.stderr
    assert f'All failed rows: {out}/report.failed/errors.jsonl' in done.stderr
    after = tree(str(out))
    assert {k: v for k, v in after.items() if not k.startswith('report.failed')} == before
  finally:
    parent.chmod(0o755)


def test_a_symlinked_output_folder_stays_a_link(tmp_path):
  manifest = dataset(str(tmp_path / 'data'))
  target = tmp_path / 'big-disk' / 'target'
  target.mkdir(parents=True)
  link = tmp_path / 'out'
  link.symlink_to(target)
  result = trc.convert(manifest, str(link))
  assert result.records_written == 6
  assert link.is_symlink() and os.readlink(link) == str(target)
  assert (target / '_SUCCESS').exists() and glob.glob(str(target / 'Split-train' / '*.gz'))
  trc.convert(manifest, str(link), overwrite=True)
  assert link.is_symlink() and (target / '_SUCCESS').exists()


def test_modes_follow_the_umask_and_a_prepared_folder_keeps_its_own(tmp_path):
  manifest = dataset(str(tmp_path / 'data'))
  old = os.umask(0o027)
  try:
    trc.convert(manifest, str(tmp_path / 'new'))
    prepared = tmp_path / 'shared'
    prepared.mkdir()
    os.chown(prepared, -1, 100) if ROOT else None
    prepared.chmod(0o2775)
    trc.convert(manifest, str(prepared))
  finally:
    os.umask(old)
  new = tmp_path / 'new'
  assert stat.S_IMODE(os.stat(new).st_mode) == 0o750
  for path in glob.glob(str(new / '**'), recursive=True):
    mode = stat.S_IMODE(os.stat(path).st_mode)
    assert mode == (0o750 if os.path.isdir(path) else 0o640), (path, oct(mode))
  assert stat.S_IMODE(os.stat(prepared).st_mode) == 0o2775
  if ROOT:
    assert os.stat(prepared).st_gid == 100
    # The set-group-ID folder gives its group to what the run creates in it.
    assert {os.stat(p).st_gid for p in glob.glob(str(prepared / '**'), recursive=True)} == {100}


def _clean_run(tmp_path, manifest):
  trc.convert(manifest, str(tmp_path / 'clean'))
  return tree(str(tmp_path / 'clean'))


def test_sigkill_while_reading_then_a_rerun_gives_a_clean_runs_files(tmp_path):
  manifest = dataset(str(tmp_path / 'data'))
  slow = write_text(str(tmp_path / 'data' / 'slow.csv'), open(manifest).read().replace(
      'TRAIN,', 'TRAIN,slow://'))
  out = tmp_path / 'out'
  marker = str(tmp_path / 'reading')
  proc = start('convert', slow, str(out), SLOW_FS_SECONDS='2', SLOW_FS_MARKER=marker)
  wait_for(marker, proc)
  os.killpg(proc.pid, signal.SIGKILL)
  proc.communicate()
  assert [n for n in os.listdir(out) if n.startswith('.tfrecorder-partial-')]  # left behind
  assert not (out / '_SUCCESS').exists()
  trc.convert(manifest, str(out))  # no --overwrite needed: nothing finished was there
  assert tree(str(out)) == _clean_run(tmp_path, manifest)


# Kills the command at its n-th rename while it moves a finished run into place.
_KILL_AT_RENAME = """
import os, sys
from tfrecorder_component.output import folder as output_folder
n = int(os.environ['KILL_AT_RENAME'])
real = os.rename
def rename(a, b):
  global n
  if n == 0:
    os._exit(137)
  n -= 1
  real(a, b)
output_folder.os.rename = rename
from tfrecorder_component.adapters.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_sigkill_in_the_move_into_place_then_a_rerun_gives_a_clean_runs_files(tmp_path):
  """A real process killed halfway through replacing an old output (--overwrite): the
  old output's entries are partly moved away, the new ones partly in."""
  manifest = dataset(str(tmp_path / 'data'))
  other = write_text(str(tmp_path / 'data' / 'other.csv'),
                     open(manifest).read().replace(',l1', ',l2'))
  clean = _clean_run(tmp_path, manifest)
  out = tmp_path / 'out'
  trc.convert(other, str(out))
  old = tree(str(out))
  done = subprocess.run([sys.executable, '-c', _KILL_AT_RENAME, 'convert', manifest, str(out),
                         '--overwrite'], capture_output=True, text=True, timeout=600,
                        env=env(KILL_AT_RENAME='8'))
  assert done.returncode == 137, done.stderr
  assert not (out / '_SUCCESS').exists()
  assert [n for n in os.listdir(out) if n.startswith('.tfrecorder-old-')]
  # Only undone: the old output is back.
  trc.convert(manifest, str(tmp_path / 'elsewhere'))
  from tfrecorder_component.output.folder import OutputSwap  # pylint: disable=g-import-not-at-top
  OutputSwap(str(out), overwrite=True).abandon()
  assert tree(str(out)) == old
  # The same command again gives exactly a clean run's files.
  trc.convert(manifest, str(out), overwrite=True)
  assert tree(str(out)) == clean


class _Killed(BaseException):
  """Stands for the process dying at that point."""


def _fake_run(work, tag):
  """What a finished run leaves in its staging folder (its names, made-up contents)."""
  for name in ('Split-eval', 'Split-train', 'report'):
    os.makedirs(os.path.join(work, name))
    write_text(os.path.join(work, name, 'data'), tag)
  write_text(os.path.join(work, 'report', 'summary.json'), json.dumps(
      {'rows_read': 1, 'rows_failed': 0, 'records_per_split': {'train': 1},
       'errors_per_reason': {}}))
  for name in ('labels.txt', 'label_map.pbtxt'):
    write_text(os.path.join(work, name), tag)


@pytest.mark.parametrize('overwrite', [False, True])
def test_a_move_into_place_cut_at_any_rename_is_undone_by_the_next_run(tmp_path, monkeypatch,
                                                                        overwrite):
  """Every rename of the move into place, cut in turn (the lock released as a dying
  process releases it): the next run finds the folder as it was before the cut run, and
  its own move then gives exactly its files."""
  from tfrecorder_component.output import folder as output_folder  # pylint: disable=g-import-not-at-top
  real = os.rename
  cuts = 0
  while True:
    out = str(tmp_path / f'out{cuts}')
    if overwrite:
      first = output_folder.OutputSwap(out)
      _fake_run(first.work, 'old')
      first.commit()
    before = tree(out) if os.path.isdir(out) else {}
    swap = output_folder.OutputSwap(out, overwrite)
    _fake_run(swap.work, 'new')
    left = [cuts]

    def rename(a, b, left=left):
      if left[0] == 0:
        raise _Killed()
      left[0] -= 1
      real(a, b)

    monkeypatch.setattr(os, 'rename', rename)
    try:
      swap.commit()
      break
    except _Killed:
      pass
    finally:
      monkeypatch.setattr(os, 'rename', real)
    swap._release()  # pylint: disable=protected-access
    assert not os.path.exists(os.path.join(out, '_SUCCESS')) or overwrite and cuts == 0
    again = output_folder.OutputSwap(out, overwrite=True)
    staging = os.path.basename(again.work)  # the new run's, empty: nothing else is left
    assert {k: v for k, v in tree(out).items() if k != staging} == before, cuts
    _fake_run(again.work, 'new')
    again.commit()
    assert sorted(os.listdir(out)) == [
        'Split-eval', 'Split-train', '_SUCCESS', 'label_map.pbtxt', 'labels.txt', 'report']
    assert open(os.path.join(out, 'labels.txt')).read() == 'new'
    cuts += 1
  assert cuts == (10 if overwrite else 5)  # old entries out, new ones in


@pytest.mark.parametrize('workers', [0, 2])
@pytest.mark.parametrize('sig, code, said', [(signal.SIGINT, 130, 'interrupted (Ctrl-C)'),
                                             (signal.SIGTERM, 143, 'terminated (SIGTERM)')])
def test_ctrl_c_and_sigterm_exit_in_one_line_and_leave_nothing(tmp_path, workers, sig, code,
                                                               said):
  manifest = dataset(str(tmp_path / 'data'), n=8, scheme='slow://')
  out = tmp_path / 'out'
  marker = str(tmp_path / 'reading')
  mode = (['--beam-arg=--direct_running_mode=multi_processing',
           f'--beam-arg=--direct_num_workers={workers}'] if workers else [])
  # No progress line (every 10 s where stderr is no terminal) before the signal, however
  # long a loaded machine takes to start Beam's workers: stderr is the one error line.
  proc = start('convert', manifest, str(out), *mode, '--progress-every', '600',
               SLOW_FS_SECONDS='3', SLOW_FS_MARKER=marker)
  wait_for(marker, proc)
  time.sleep(0.5)
  # A terminal's Ctrl-C reaches every process of the foreground group: the command's
  # and its workers'.
  os.killpg(proc.pid, sig)
  _, stderr = proc.communicate(timeout=120)
  assert proc.returncode == code, stderr
  assert stderr == f'error: {said}; {out} is as it was before the run\n'
  assert not out.exists()  # the run made it, and removed it
  assert sorted(os.listdir(tmp_path)) == ['data', 'reading']
  time.sleep(1)
  ps = subprocess.run(['ps', '-eo', 'pid,pgid,stat,args'], capture_output=True,
                      text=True).stdout
  alive = [line for line in ps.splitlines()
           if line.split()[1] == str(proc.pid) and not line.split()[2].startswith('Z')]
  assert alive == []  # no worker process left running


def test_fifos_devices_and_dangling_links_fail_their_rows(tmp_path):
  data = tmp_path / 'data'
  write_image(str(data / 'ok.png'), 'PNG')
  os.mkfifo(data / 'fifo.png')
  (data / 'gone.png').symlink_to(data / 'nowhere.png')
  manifest = write_text(str(data / 'm.csv'), 'TRAIN,ok.png,a\nTRAIN,fifo.png,a\n'
                        'TRAIN,/dev/zero,a\nTRAIN,gone.png,a\n')
  done = subprocess.run([CLI, 'convert', manifest, str(tmp_path / 'out'),
                         '--max-error-ratio', '1'], capture_output=True, text=True,
                        timeout=120, env=env())
  assert done.returncode == 0, done.stderr
  errors = {e['uri']: e for e in map(json.loads, open(
      tmp_path / 'out' / 'report' / 'errors.jsonl', encoding='utf-8'))}
  assert errors['fifo.png']['reason'] == 'not_a_file'
  assert errors['fifo.png']['message'] == 'a FIFO, not a regular file; only regular files are read'
  assert errors['/dev/zero']['message'].startswith('a character device, not a regular file')
  assert errors['gone.png']['reason'] == 'missing'
  assert errors['gone.png']['message'] == (
      f"a symbolic link to '{data / 'nowhere.png'}', which does not exist; only regular "
      'files are read')

  # In an image folder, a dangling link is a row that fails, not an image left out.
  folder = tmp_path / 'folder'
  write_image(str(folder / 'cat' / 'a.jpg'))
  write_image(str(folder / 'dog' / 'c.jpg'))
  (folder / 'cat' / 'b.jpg').symlink_to(folder / 'cat' / 'deleted.jpg')
  result = trc.convert(str(folder), str(tmp_path / 'from-folder'), max_error_ratio=1.0)
  assert (result.rows_read, result.rows_failed) == (3, 1)
  assert result.errors_per_reason == {'missing': 1}


@needs_root
def test_a_full_disk_is_one_line_naming_the_path_and_leaves_nothing(tmp_path):
  data = tmp_path / 'data'
  rows = []
  for i in range(12):
    write_image(str(data / f'{i}.png'), 'PNG', height=256, width=256, seed=i)
    rows.append(f'TRAIN,{i}.png,a\n')
  manifest = write_text(str(data / 'm.csv'), ''.join(rows))
  disk = tmp_path / 'small'
  disk.mkdir()
  subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', str(disk)], check=True)
  out = disk / 'out'
  try:
    done = run('convert', manifest, str(out))
    assert done.returncode == 2
    assert done.stderr == f'error: no space left on device while writing {out}\n' or (
        done.stderr.startswith(f'error: no space left on device: {out}/')
        and done.stderr.count('\n') == 1), done.stderr
    assert os.listdir(disk) == []
  finally:
    subprocess.run(['umount', str(disk)], check=True)


def test_load_dataset_and_inspect_say_what_is_missing_in_one_line(tmp_path):
  from tfrecorder_component import load_dataset  # pylint: disable=g-import-not-at-top
  with pytest.raises(ValueError, match=f'^{tmp_path}/absent does not exist$'):
    load_dataset(str(tmp_path / 'absent'), 'train')
  bad = write_text(str(tmp_path / 'bad.csv'), 'TRAIN,missing.png,x\n')
  with pytest.raises(RuntimeError):
    trc.convert(bad, str(tmp_path / 'failed'))
  assert os.listdir(tmp_path / 'failed') == ['report']
  why = (f'{tmp_path}/failed holds only the report of a failed run, no records: see '
         f'{tmp_path}/failed/report/errors.jsonl')
  with pytest.raises(ValueError) as e:
    load_dataset(str(tmp_path / 'failed'), 'train')
  assert str(e.value) == why
  done = run('inspect', str(tmp_path / 'failed'))
  assert (done.returncode, done.stderr) == (2, f'error: {why}\n')
  manifest = dataset(str(tmp_path / 'data'))
  trc.convert(manifest, str(tmp_path / 'out'))
  with pytest.raises(ValueError, match="has no records in split 'holdout'; its splits: "
                     'train$'):
    load_dataset(str(tmp_path / 'out'), 'holdout')
  # A split no record went to (TRAIN rows only) is not written: the same message.
  with pytest.raises(ValueError, match="has no records in split 'test'; its splits: train$"):
    load_dataset(str(tmp_path / 'out'), 'test')
  os.remove(tmp_path / 'out' / '_SUCCESS')  # as a run that is still moving its files in
  with pytest.raises(ValueError, match=r'is not a finished output \(no _SUCCESS\)'):
    load_dataset(str(tmp_path / 'out'), 'train')
  done = run('inspect', str(tmp_path / 'out'))
  assert done.returncode == 2 and 'is not a finished output' in done.stderr
