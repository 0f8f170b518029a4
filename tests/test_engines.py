"""The two ways a conversion runs write the same bytes: without Beam on this machine's
cores (`local.convert_locally`, what a local run takes) and as Beam's `ConvertManifests`
(what Dataflow, and any run with Beam arguments, takes). Real files, real Beam runs,
real worker processes."""
import os
import subprocess
import sys

import pytest

from benchmarks import digests
from images import write_image, write_text
import tfrecorder_component as trc
from tfrecorder_component import local
from tfrecorder_component import run
from tfrecorder_component.steps import shards


def test_every_format_writes_the_same_records_and_report_without_beam_as_with_it(
    tmp_path, monkeypatch):
  """benchmarks.digests' runs (every manifest format, classification and detection,
  transforms, failed rows, duplicates, a DataFrame): record for record and byte for byte
  in every report file, the local run in 2 worker processes and Beam's in-memory
  DirectRunner agree."""
  monkeypatch.setattr(run, 'LOCAL_ROWS_PER_WORKER', 1)
  monkeypatch.setattr(run, 'cores', lambda: 2)
  monkeypatch.setattr(local, 'CHUNK_ROWS', 2)  # every run's rows spread over 2 workers
  forked = []
  start = local._convert_chunks  # pylint: disable=protected-access
  monkeypatch.setattr(local, '_convert_chunks', lambda chunks, make, workers, *a: forked.append(
      min(workers, len(chunks))) or start(chunks, make, workers, *a))
  without_beam = digests.digests(str(tmp_path / 'work'))
  assert forked.count(2) >= 6, forked  # the runs of more than one chunk
  taken = []
  monkeypatch.setattr(run, 'local_workers', lambda *a: taken.append(a) and 0)
  beam = digests.digests(str(tmp_path / 'work'))
  assert taken  # every run went to Beam
  assert without_beam == beam


def _rows(tmp_path, n):
  for i in range(n):
    write_image(str(tmp_path / f'{i}.png'), 'PNG', 'RGB', 6 + i % 5, 7, seed=i)
  return write_text(str(tmp_path / 'm.csv'), ''.join(
      f'{["TRAIN", "TEST"][i % 2]},{i}.png,{"ab"[i % 3 % 2]}\n' for i in range(n)))


def test_num_shards_spreads_the_records_of_every_worker_over_exactly_that_many(tmp_path,
                                                                               monkeypatch):
  monkeypatch.setattr(run, 'LOCAL_ROWS_PER_WORKER', 5)
  monkeypatch.setattr(local, 'CHUNK_ROWS', 4)
  result = trc.convert(_rows(tmp_path, 40), str(tmp_path / 'out'), num_shards=3)
  for split, count in (('train', 20), ('test', 20), ('eval', 0)):
    names = sorted(os.listdir(tmp_path / 'out' / f'Split-{split}'))
    assert names == [f'data_tfrecord-0000{k}-of-00003.gz' for k in range(3)]
    sizes = [len(list(shards.read_shard(str(tmp_path / 'out' / f'Split-{split}' / n))))
             for n in names]
    assert sum(sizes) == count and max(sizes) - min(sizes) <= 1
  assert result.records_written == 40
  assert not [p for p, _, _ in os.walk(tmp_path / 'out') if '.work' in p]


def test_a_worker_that_fails_fails_the_run_and_leaves_nothing(tmp_path, monkeypatch):
  """A shard that cannot be written (here: the disk refuses the 7th record) ends the run
  with that error, from the worker process that met it; the other worker is stopped,
  and the output folder is left as it was: no records, no staging folder, no scratch."""
  monkeypatch.setattr(run, 'LOCAL_ROWS_PER_WORKER', 5)
  monkeypatch.setattr(local, 'CHUNK_ROWS', 4)
  frames = shards.tfrecord_frames
  written = []

  def failing(records):
    written.extend(records)
    if len(written) >= 7:
      raise OSError(28, 'No space left on device')
    return frames(records)

  monkeypatch.setattr(shards, 'tfrecord_frames', failing)
  out = tmp_path / 'out'
  with pytest.raises(OSError, match='No space left on device'):
    trc.convert(_rows(tmp_path, 40), str(out))
  assert not out.exists() or os.listdir(out) == []


def test_a_local_run_never_imports_beam(tmp_path):
  """Importing Beam takes seconds; a run on local files does without it, and a run
  that goes to Beam still has it."""
  manifest = _rows(tmp_path, 4)
  script = ('import sys, tfrecorder_component as trc\n'
            'trc.convert(sys.argv[1], sys.argv[2], beam_args=sys.argv[3:])\n'
            'print("apache_beam" in sys.modules)\n')
  for args, imported in (([], 'False'), (['--direct_running_mode=in_memory'], 'True')):
    out = str(tmp_path / f'out{len(args)}')
    done = subprocess.run([sys.executable, '-c', script, manifest, out, *args],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split()[-1] == imported


def test_which_runs_go_without_beam(tmp_path, monkeypatch):
  """Local files and no Beam argument but the DirectRunner: without Beam, a worker per
  LOCAL_ROWS_PER_WORKER rows up to one a core. Any Beam argument, another runner, or a
  manifest or output on object storage: Beam."""
  monkeypatch.setattr(run, 'cores', lambda: 4)
  manifest = write_text(str(tmp_path / 'm.csv'), 'TRAIN,a.png,x\n' * 2_500)
  out = [str(tmp_path / 'out')]
  assert run.local_workers([], [manifest], out) == 2
  assert run.local_workers(['--runner=DirectRunner'], [manifest], out) == 2
  assert run.local_workers(['--runner', 'direct'], [manifest], out) == 2
  assert run.local_workers([], [write_text(str(tmp_path / 's.csv'), 'TRAIN,a.png,x\n')],
                           out) == 1
  for args in (['--direct_num_workers=2'], ['--direct_running_mode=in_memory'],
               ['--runner=DataflowRunner'], ['--runner', 'DataflowRunner']):
    assert run.local_workers(args, [manifest], out) == 0, args
  assert run.local_workers([], ['gs://bkt/m.csv'], out) == 0
  assert run.local_workers([], [manifest], ['s3://bkt/out']) == 0


def test_the_command_loads_neither_beam_nor_pandas(tmp_path):
  """`tfrecorder-component convert` on local files: no Beam (seconds to import) and no
  pandas (the command takes no DataFrame; 0.3 s), yet the records are written."""
  manifest = _rows(tmp_path, 4)
  script = ('import sys\nsys.argv[0] = "tfrecorder-component"\n'
            'from tfrecorder_component import cli\n'
            'code = cli.main(["convert", sys.argv[1], sys.argv[2]])\n'
            'print(code, sorted(m for m in ("apache_beam", "pandas") if m in sys.modules))\n')
  done = subprocess.run([sys.executable, '-c', script, manifest, str(tmp_path / 'out')],
                        capture_output=True, text=True, check=True)
  assert done.stdout.splitlines()[-1] == '0 []'
  assert len(list(shards.read_shard(str(
      tmp_path / 'out' / 'Split-train' / 'data_tfrecord-00000-of-00001.gz')))) == 2
