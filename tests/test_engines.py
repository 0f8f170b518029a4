"""The two ways a conversion runs write the same bytes: without Beam on this machine's
cores (`engines.local.pipeline.convert_locally`, what a local run takes) and as Beam's `ConvertManifests`
(what Dataflow, and any run with Beam arguments, takes). Real files, real Beam runs,
real worker processes."""
import os
import subprocess
import sys
import threading

import pytest

import digests
from images import write_image, write_text
from tfrecord_digest import digest
import tfrecorder_component as trc
from tfrecorder_component.engines.local import pipeline as local_pipeline
from tfrecorder_component.engines.local import pool as local_pool
from tfrecorder_component.engines.local import read as local_read
from tfrecorder_component.engines import run
from tfrecorder_component.errors import UsageError
from tfrecorder_component.io import files
from tfrecorder_component.io import tfrecord


def test_every_format_writes_the_same_records_and_report_without_beam_as_with_it(
    tmp_path, monkeypatch):
  """digests.py's runs (every manifest format, classification and detection,
  transforms, failed rows, duplicates, a DataFrame, the Parquet and ArrayRecord layouts):
  record for record and byte for byte in every report and layout file, the local run in
  2 worker processes and Beam's in-memory DirectRunner agree. The local runs group the
  box rows of detection manifests through an external sort that writes a run to disk for
  every row (each image's rows merged back from many runs), as Beam's GroupByKey groups
  them."""
  monkeypatch.setattr(local_read, 'OBJECT_ROWS_BYTES', 1)
  runs_merged = []

  class CountingSort(local_read.ExternalSort):
    def entries(self):
      self.spill()
      runs_merged.append(len(self._spiller.runs))  # pylint: disable=protected-access
      return super().entries()

  monkeypatch.setattr(local_read, 'ExternalSort', CountingSort)
  monkeypatch.setattr(run, 'LOCAL_ROWS_PER_WORKER', 1)
  monkeypatch.setattr(run, 'cores', lambda: 2)
  monkeypatch.setattr(local_read, 'CHUNK_ROWS', 2)  # every run's rows spread over 2 workers
  forked = []
  start = local_pool.convert_chunks
  monkeypatch.setattr(local_pool, 'convert_chunks', lambda chunks, make, workers, *a: forked.append(
      min(workers, len(chunks))) or start(chunks, make, workers, *a))
  without_beam = digests.digests(str(tmp_path / 'work'))
  assert forked.count(2) >= 6, forked  # the runs of more than one chunk
  assert runs_merged and max(runs_merged) > 1, runs_merged  # box rows went through disk
  taken = []
  monkeypatch.setattr(run, 'local_workers', lambda *a: taken.append(a) and 0)
  beam = digests.digests(str(tmp_path / 'work'))
  assert taken  # every run went to Beam
  assert _layout_bytes_left_out(without_beam) == _layout_bytes_left_out(beam)


def _layout_bytes_left_out(runs):
  """digests' runs with each Parquet and ArrayRecord file's hash left out, its name kept:
  a layout's shard holds its TFX shard's records in the order the runner wrote them, an
  order the two engines need not share (tfrecord_digest sorts the records for that
  reason), so their bytes are compared within one engine (digests.py before and after a
  change), not across the two."""
  folders = tuple(f'{folder}/' for folder in digests.LAYOUT_FOLDERS)
  return {name: {path: None if path.startswith(folders) else value
                 for path, value in files.items()}
          for name, files in runs.items()}


def _rows(tmp_path, n):
  for i in range(n):
    write_image(str(tmp_path / f'{i}.png'), 'PNG', 'RGB', 6 + i % 5, 7, seed=i)
  return write_text(str(tmp_path / 'm.csv'), ''.join(
      f'{["TRAIN", "TEST"][i % 2]},{i}.png,{"ab"[i % 3 % 2]}\n' for i in range(n)))


def test_num_shards_spreads_the_records_of_every_worker_over_exactly_that_many(tmp_path,
                                                                               monkeypatch):
  monkeypatch.setattr(run, 'LOCAL_ROWS_PER_WORKER', 5)
  monkeypatch.setattr(local_read, 'CHUNK_ROWS', 4)
  result = trc.convert(_rows(tmp_path, 40), str(tmp_path / 'out'), num_shards=3)
  for split, count in (('train', 20), ('test', 20)):
    names = sorted(os.listdir(tmp_path / 'out' / f'Split-{split}'))
    assert names == [f'data_tfrecord-0000{k}-of-00003.gz' for k in range(3)]
    sizes = [len(list(tfrecord.read_shard(str(tmp_path / 'out' / f'Split-{split}' / n))))
             for n in names]
    assert sum(sizes) == count and max(sizes) - min(sizes) <= 1
  # eval got no record: not written, none of the workers' empty shards left behind.
  assert sorted(n for n in os.listdir(tmp_path / 'out') if n.startswith('Split-')) == [
      'Split-test', 'Split-train']
  assert result.records_per_split == {'train': 20, 'eval': 0, 'test': 20}
  assert list(result.split_dirs) == ['train', 'test']
  assert result.records_written == 40
  assert not [p for p, _, _ in os.walk(tmp_path / 'out') if '.work' in p]


def test_a_worker_that_fails_fails_the_run_and_leaves_nothing(tmp_path, monkeypatch):
  """A shard that cannot be written (here: the disk refuses the 7th record) ends the run
  with that error, from the worker process that met it; the other worker is stopped,
  and the output folder is left as it was: no records, no staging folder, no scratch."""
  monkeypatch.setattr(run, 'LOCAL_ROWS_PER_WORKER', 5)
  monkeypatch.setattr(local_read, 'CHUNK_ROWS', 4)
  write_records = tfrecord.GzipStream.write_records
  written = []

  def failing(stream, records):
    written.extend(records)
    if len(written) >= 7:
      raise OSError(28, 'No space left on device')
    return write_records(stream, records)

  monkeypatch.setattr(tfrecord.GzipStream, 'write_records', failing)
  out = tmp_path / 'out'
  with pytest.raises(OSError, match='(?i)no space left on device'):
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
  """The DirectRunner and no Beam argument that asks anything of Beam: without Beam, a
  worker per LOCAL_ROWS_PER_WORKER rows up to one a core, whether the manifests and
  outputs are local or on gs:// or s3:// (a Vertex AI or Kubeflow run's), and whatever
  Google Cloud settings a TFX pipeline passes every component. A direct-runner flag,
  another runner, or a file system only Beam reaches: Beam."""
  monkeypatch.setattr(run, 'cores', lambda: 4)
  manifest = write_text(str(tmp_path / 'm.csv'), 'TRAIN,a.png,x\n' * 2_500)
  out = [str(tmp_path / 'out')]
  assert run.local_workers([], [manifest], out) == 2
  assert run.local_workers(['--runner=DirectRunner'], [manifest], out) == 2
  assert run.local_workers(['--runner', 'direct'], [manifest], out) == 2
  assert run.local_workers([], [write_text(str(tmp_path / 's.csv'), 'TRAIN,a.png,x\n')],
                           out) == 1
  for args in (['--project=p', '--temp_location=gs://b/tmp', '--region', 'europe-west4'],
               ['--runner=DirectRunner', '--setup_file=./setup.py', '--labels=team=vision'],
               ['--extra_package', 'dist/x.whl', '--save_main_session']):
    assert run.local_workers(args, [manifest], out) == 2, args
  for args in (['--direct_num_workers=2'], ['--direct_running_mode=in_memory'],
               ['--runner=DataflowRunner'], ['--runner', 'DataflowRunner'],
               ['--project=p', '--direct_num_workers', '0'], ['--flink_master=x:8081']):
    assert run.local_workers(args, [manifest], out) == 0, args
  monkeypatch.setenv(run.LOCAL_WORKERS_ENV, '3')  # no remote manifest is counted here
  assert run.local_workers([], ['gs://bkt/m.csv'], ['gs://bkt/out', 'gs://bkt/out/report']) == 3
  assert run.local_workers([], [manifest], ['s3://bkt/out']) == 3
  assert run.local_workers([], ['hdfs://nn/m.csv'], out) == 0
  assert run.local_workers([], [manifest], ['hdfs://nn/out']) == 0


def test_the_workers_option_sizes_the_pool(tmp_path):
  """`--workers N`: the run without Beam forks N worker processes whatever the rows call
  for (200 rows call for one), each writing its own shard of each split, and the
  records are the default run's; a pool size that is no whole number is refused, as is
  one beside a Beam argument that sizes the DirectRunner itself."""
  manifest = _rows(tmp_path, 200)  # 4 chunks of 64 rows (`engines.local.read.CHUNK_ROWS`)
  command = [sys.executable, '-m', 'tfrecorder_component.adapters.cli', 'convert', '-q']
  runs = {}
  for workers in ('0', '3'):
    out = str(tmp_path / f'out{workers}')
    subprocess.run([*command, '--workers', workers, manifest, out], check=True,
                   capture_output=True, timeout=300)
    runs[workers] = (digest(out), sorted(os.listdir(os.path.join(out, 'Split-train'))))
  assert runs['0'][0] == runs['3'][0]
  assert runs['0'][1] == ['data_tfrecord-00000-of-00001.gz']
  assert runs['3'][1] == [f'data_tfrecord-0000{k}-of-00003.gz' for k in range(3)]
  for args, told in (
      (['--workers', '-1'], 'workers must be a whole number, 0'),
      (['--workers', '2', '--beam-arg=--direct_num_workers=2'],
       'workers=2 and the Beam argument --direct_num_workers both set'),
  ):
    done = subprocess.run([*command, *args, manifest, str(tmp_path / 'refused')],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and told in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / 'refused').exists()


def test_workers_on_beam_s_direct_runner_and_other_runners(tmp_path, monkeypatch):
  """On Beam's DirectRunner `workers` is --direct_num_workers (1: the in-memory runner,
  as a small run takes); another runner sets its own workers, and is refused it."""
  monkeypatch.setattr(run, 'cores', lambda: 4)
  manifest = write_text(str(tmp_path / 'm.csv'), 'TRAIN,a.png,x\n')
  assert run.with_default_parallelism(['--runner=DirectRunner'], [manifest], workers=3) == [
      '--runner=DirectRunner', '--direct_running_mode=multi_processing',
      '--direct_num_workers=3']
  assert run.with_default_parallelism([], [manifest], workers=1) == list(
      run.DEFAULT_DIRECT_ARGS)
  assert run.with_default_parallelism([], [manifest]) == list(run.DEFAULT_DIRECT_ARGS)
  monkeypatch.setenv(run.LOCAL_WORKERS_ENV, '2')  # the option, where given, comes first
  assert run.local_workers([], [manifest], [str(tmp_path / 'out')], workers=5) == 5
  assert run.local_workers([], [manifest], [str(tmp_path / 'out')]) == 2
  run.check_workers(['--runner=DataflowRunner'], 0)
  run.check_workers(['--direct_num_workers=2'], 0)
  with pytest.raises(UsageError, match='the DataflowRunner sizes its own workers'):
    run.check_workers(['--runner=DataflowRunner'], 4)
  with pytest.raises(UsageError, match='--direct_running_mode both set'):
    run.check_workers(['--direct_running_mode=in_memory'], 4)


def test_the_command_loads_neither_beam_nor_pandas(tmp_path):
  """`tfrecorder-component convert` on local files: no Beam (seconds to import) and no
  pandas (the command takes no DataFrame; 0.3 s), yet the records are written."""
  manifest = _rows(tmp_path, 4)
  script = ('import sys\nsys.argv[0] = "tfrecorder-component"\n'
            'from tfrecorder_component.adapters import cli\n'
            'code = cli.main(["convert", sys.argv[1], sys.argv[2]])\n'
            'print(code, sorted(m for m in ("apache_beam", "pandas") if m in sys.modules))\n')
  done = subprocess.run([sys.executable, '-c', script, manifest, str(tmp_path / 'out')],
                        capture_output=True, text=True, check=True)
  assert done.stdout.splitlines()[-1] == '0 []'
  assert len(list(tfrecord.read_shard(str(
      tmp_path / 'out' / 'Split-train' / 'data_tfrecord-00000-of-00001.gz')))) == 2


# ------------------------------------------------ manifests and outputs on object storage
def _beam_reads_gcs() -> bool:
  try:
    import apache_beam.io.gcp.gcsio  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    return False
  return True


BUCKET = 'bkt'
# A classification CSV (a missing image, a duplicate across splits) and a detection CSV.
REMOTE_MANIFESTS = ('cls.csv', 'det.csv')


@pytest.fixture(scope='module')
def stores(tmp_path_factory):
  """The data set on local disk, uploaded to fake-gcs-server's gs://bkt/data/ and moto's
  s3://bkt/data/, the two servers' endpoints in the environment as users set them."""
  from storage_servers import S3Server, gcs_behind_proxy  # pylint: disable=g-import-not-at-top
  data = str(tmp_path_factory.mktemp('remote-data'))
  rows = []
  for i in range(14):
    fmt, ext = (('JPEG', 'jpg'), ('PNG', 'png'))[i % 2]
    write_image(os.path.join(data, 'images', f'{i}.{ext}'), fmt, 'RGB', 9 + i % 4, 11 + i % 3,
                seed=i)
    rows.append(f'{("TRAIN", "VALIDATION", "TEST", "")[i % 4]},images/{i}.{ext},'
                f'{("cat", "dog", "fox")[i % 3]}\n')
  rows += ['TRAIN,images/missing.jpg,cat\n', 'TEST,images/0.jpg,cat\n']
  write_text(os.path.join(data, 'cls.csv'), ''.join(rows))
  write_text(os.path.join(data, 'det.csv'), ''.join(
      f'{("TRAIN", "TEST")[i % 2]},images/{i}.jpg,{("car", "person")[k]},'
      f'0.{k + 1},0.2,,,0.{k + 5},0.9,,\n' for i in range(0, 14, 2) for k in range(2)))
  # fake-gcs-server behind the tests' proxy, which answers the batch requests Beam's
  # GCS client deletes with.
  with gcs_behind_proxy() as (gcs, proxy), S3Server() as s3:
    for server in (gcs, s3):
      server.create_bucket(BUCKET)
      server.upload_tree(data, BUCKET, 'data')
    yield data, {'gs': gcs, 's3': s3}, {'STORAGE_EMULATOR_HOST': proxy.url, **s3.client_env()}


def _tree(folder: str, keep=lambda rel: True):
  """{relative path: bytes} of every file under `folder` that `keep` keeps."""
  out = {}
  for root, _, names in os.walk(folder):
    for name in names:
      rel = os.path.relpath(os.path.join(root, name), folder)
      if keep(rel):
        with open(os.path.join(root, name), 'rb') as f:
          out[rel] = f.read()
  return out


@pytest.mark.parametrize('manifest', REMOTE_MANIFESTS)
@pytest.mark.parametrize('scheme', ['gs', 's3'])
def test_manifest_and_output_on_object_storage_write_the_same_bytes_both_ways(
    stores, scheme, manifest, tmp_path, monkeypatch):
  """Manifest, images and output all on gs:// or s3:// (the Vertex AI path): the run
  without Beam (outputs written locally, then uploaded) writes every file of the
  records, label files and extra layouts byte for byte as the same run on local disk,
  and the same records and report, byte for byte, as Beam's DirectRunner; nothing is
  left in the machine's temporary folder."""
  if scheme == 'gs' and not _beam_reads_gcs():
    pytest.skip("Beam without its [gcp] extra has no gs:// file system")
  data, servers, env = stores
  for key, value in env.items():
    monkeypatch.setenv(key, value)
  scratch = tmp_path / 'tmp'
  scratch.mkdir()
  monkeypatch.setenv('TMPDIR', str(scratch))
  monkeypatch.setattr('tempfile.tempdir', None)
  options = dict(max_error_ratio=0.2, layouts=('tfds',))
  local_out = str(tmp_path / 'local')
  trc.convert(os.path.join(data, manifest), local_out, **options)
  source = f'{scheme}://{BUCKET}/data/{manifest}'
  prefix = f'{tmp_path.name}-{scheme}'
  calls = []
  convert_locally = local_pipeline.convert_locally
  monkeypatch.setattr(local_pipeline, 'convert_locally', lambda *a, **k: calls.append(a[3]) or
                      convert_locally(*a, **k))
  without_beam = trc.convert(source, f'{scheme}://{BUCKET}/{prefix}/local', **options)
  # It ran without Beam, into a local stand-in of the remote report folder.
  assert len(calls) == 1 and calls[0].startswith(str(scratch)), calls
  assert os.listdir(scratch) == []  # the staged output removed once uploaded
  taken = []
  monkeypatch.setattr(run, 'local_workers', lambda *a: taken.append(a) and 0)
  with_beam = trc.convert(source, f'{scheme}://{BUCKET}/{prefix}/beam', **options)
  assert taken and without_beam.records_written == with_beam.records_written > 0
  remote = servers[scheme].download(BUCKET, f'{prefix}/local', str(tmp_path / 'dl-local'))
  beam = servers[scheme].download(BUCKET, f'{prefix}/beam', str(tmp_path / 'dl-beam'))
  records = lambda rel: not rel.startswith('report')  # the report names the manifest
  assert _tree(remote, records) == _tree(local_out, records)
  assert '_SUCCESS' in _tree(remote) and any(r.startswith('tfds') for r in _tree(remote))
  assert (dict(digest(remote), **digests._report_digests(remote))  # pylint: disable=protected-access
          == dict(digest(beam), **digests._report_digests(beam)))  # pylint: disable=protected-access


@pytest.mark.parametrize('scheme', ['gs', 's3'])
def test_an_object_appears_only_once_its_writer_closes(stores, scheme, monkeypatch):
  """The object writer the workers stream shards with: bytes written in a thousand small
  pieces (as a layout writes a frame a record) and in one piece larger than its queue
  arrive whole and in order, only once it closes; a writer left by an error leaves no
  object."""
  from tfrecorder_component.io import storage  # pylint: disable=g-import-not-at-top
  _, servers, env = stores
  for key, value in env.items():
    monkeypatch.setenv(key, value)
  storage._forget_clients()  # pylint: disable=protected-access  (this test's endpoints)
  data = os.urandom(3 << 20) * 15  # 45 MiB: more than the queue and one upload write
  uri = f'{scheme}://{BUCKET}/writer/{scheme}.gz'
  writer = storage.create_object(uri)

  def write_all():  # on a thread: a writer that waits for room that never comes is a failure
    for i in range(0, 1 << 20, 1024):  # many pieces far smaller than an upload write
      writer.write(data[i:i + 1024])
    writer.write(data[1 << 20:])

  thread = threading.Thread(target=write_all, daemon=True)
  thread.start()
  thread.join(timeout=120)
  assert not thread.is_alive(), 'the object writer stopped taking writes'
  assert 'writer/' + f'{scheme}.gz' not in servers[scheme].list(BUCKET, 'writer/')
  writer.close()
  assert servers[scheme].read(BUCKET, f'writer/{scheme}.gz') == data
  with pytest.raises(ValueError):
    with storage.create_object(f'{scheme}://{BUCKET}/writer/failed') as writer:
      writer.write(b'half a shard')
      raise ValueError('the worker failed')
  assert servers[scheme].list(BUCKET, 'writer/') == [f'writer/{scheme}.gz']


@pytest.mark.parametrize('scheme', ['gs', 's3'])
def test_workers_write_their_shards_on_object_storage_under_their_final_names(
    stores, scheme, tmp_path, monkeypatch):
  """Three workers on a remote output: each writes shard k of 3 of every split (an empty
  one where it had no record of it), so none is renamed; the records are the local
  run's, and no temporary file is left."""
  if scheme == 'gs' and not _beam_reads_gcs():
    pytest.skip("Beam without its [gcp] extra has no gs:// file system")
  data, servers, env = stores
  for key, value in env.items():
    monkeypatch.setenv(key, value)
  monkeypatch.setenv(run.LOCAL_WORKERS_ENV, '3')
  monkeypatch.setattr(local_read, 'CHUNK_ROWS', 2)
  renamed = []
  rename = files.rename
  monkeypatch.setattr(files, 'rename', lambda a, b: renamed.append(a) or rename(a, b))
  prefix = f'{tmp_path.name}-{scheme}'
  trc.convert(f'{scheme}://{BUCKET}/data/cls.csv', f'{scheme}://{BUCKET}/{prefix}',
              max_error_ratio=0.2, splits={'train': 1})
  names = servers[scheme].list(BUCKET, prefix + '/')
  shards = sorted(n.split('/', 1)[1] for n in names if '/Split-' in n)
  assert shards == [f'Split-{split}/data_tfrecord-0000{k}-of-00003.gz'
                    for split in ('eval', 'test', 'train') for k in range(3)], shards
  assert renamed == [] and not [n for n in names if '.part-' in n]
  trc.convert(os.path.join(data, 'cls.csv'), str(tmp_path / 'local'), max_error_ratio=0.2,
              splits={'train': 1})
  assert digest(servers[scheme].download(BUCKET, prefix, str(tmp_path / 'dl'))) == digest(
      str(tmp_path / 'local'))
