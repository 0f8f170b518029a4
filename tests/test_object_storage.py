"""Images, manifests and outputs on object storage, against real storage servers on
loopback: fake-gcs-server (gs://, through Beam's GCS file system and Arrow's GCS
client) and moto's S3 server (s3://, given to the clients as a MinIO user gives an
endpoint: AWS_ENDPOINT_URL). Each server sits behind the tests' own proxy
(storage_servers.Proxy), which counts the requests, sees how many are in flight and
injects 429s, 503s and dropped connections.

Every conversion here is compared with the same files converted from local disk: the
manifests name images by relative paths (resolved against the manifest's folder, local
or remote), so the records, split by the hash of that path, must be byte-identical.
"""
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from images import write_image, write_text
from storage_servers import Proxy, S3Server, environment, gcs_behind_proxy
from tfrecord_digest import digest, read_records
import tfrecorder_component as trc
from tfrecorder_component.record import example_proto
from tfrecorder_component.steps.policy import TooManyFailedRows

# Object names users have: spaces, '#', '?', '%' and non-ASCII.
AWKWARD = ['a b.png', 'hash#1.png', 'what?.png', '100%.png', 'été ünï.png']
NAMES = [f'img{i}.{ext}' for i, ext in zip(range(12), ['jpg', 'png'] * 6)] + AWKWARD
LABELS = ['cat', 'dog', 'fox']
BUCKET = 'bkt'


def _beam_reads_gcs() -> bool:
  try:
    import apache_beam.io.gcp.gcsio  # pylint: disable=g-import-not-at-top,unused-import
    import google.cloud.storage  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    return False
  return True


# Manifests and outputs on gs:// go through Beam's GCS file system, which the core-only
# stacks (Beam without its [gcp] extra) do not have; images on gs:// are read with Arrow
# there too, which the tests with a local manifest and output check.
beam_gcs = pytest.mark.skipif(not _beam_reads_gcs(),
                              reason="Beam without its [gcp] extra has no gs:// file system")


def _write_dataset(root: str) -> None:
  """Images under `root`/images and a manifest naming them relatively, in `root`."""
  rows = []
  for i, name in enumerate(NAMES):
    fmt = 'PNG' if name.endswith('.png') else 'JPEG'
    write_image(os.path.join(root, 'images', name), fmt, 'RGB', 10 + i % 4, 12 + i % 5, seed=i)
    rows.append(f'{("TRAIN", "VALIDATION", "TEST", "")[i % 4]},images/{name},{LABELS[i % 3]}\n')
  write_text(os.path.join(root, 'manifest.csv'), ''.join(rows))


@pytest.fixture(scope='module')
def dataset(tmp_path_factory):
  """The data set on local disk and its local conversion, the reference."""
  root = str(tmp_path_factory.mktemp('local'))
  _write_dataset(os.path.join(root, 'data'))
  trc.convert(os.path.join(root, 'data', 'manifest.csv'), os.path.join(root, 'out'))
  return root


@pytest.fixture(scope='module')
def gcs(dataset):
  """fake-gcs-server behind the proxy, the data set uploaded to gs://bkt/data/, and
  STORAGE_EMULATOR_HOST pointing this process's clients at the proxy."""
  with gcs_behind_proxy() as (server, proxy):
    server.create_bucket(BUCKET)
    server.upload_tree(os.path.join(dataset, 'data'), BUCKET, 'data')
    with environment({'STORAGE_EMULATOR_HOST': proxy.url}):
      yield server, proxy


@pytest.fixture
def proxy(gcs):
  server, proxy = gcs
  proxy.reset_stats()
  proxy.set_faults([])
  proxy.set_delay(0)
  yield proxy
  proxy.set_faults([])
  proxy.set_delay(0)


def image_reads(proxy):
  """{/bucket/object: reads of it} of the images (not the manifests) since the last reset.
  Arrow's GCS client reads through the XML API (/bucket/object) or, in newer pyarrow,
  the JSON API (/storage/v1/b/bucket/o/object?alt=media)."""
  reads = {}
  for path, n in proxy.stats()['reads_by_path'].items():
    path = re.sub(r'^(/download)?/storage/v1/b/([^/]+)/o/', r'/\2/', path)
    if '/images/' in path:
      reads[path] = reads.get(path, 0) + n
  return reads


def split_records(output_dir: str):
  """{split folder: its records, sorted}."""
  return {name: sorted(read_records(os.path.join(output_dir, name)))
          for name in sorted(os.listdir(output_dir)) if name.startswith('Split-')}


def image_label_pairs(output_dir: str):
  """(image bytes, label text) of every record of an output, sorted."""
  pairs = []
  for records in split_records(output_dir).values():
    for record in records:
      feature = example_proto.Example.FromString(record).features.feature
      pairs.append((feature['image/encoded'].bytes_list.value[0],
                    feature['image/class/text'].bytes_list.value[0]))
  return sorted(pairs)


def cli(*args, env=None):
  """The CLI in a fresh process (cwd: the tests folder, so the package comes from where
  the environment installed it)."""
  return subprocess.run([sys.executable, '-m', 'tfrecorder_component.adapters.cli', *args],
                        capture_output=True, text=True, timeout=600, check=False,
                        cwd=os.path.dirname(os.path.abspath(__file__)),
                        env={**os.environ, **(env or {})})


@beam_gcs
def test_cli_converts_manifest_images_and_output_all_on_gcs(dataset, gcs, proxy, tmp_path):
  server, _ = gcs
  done = cli('convert', f'gs://{BUCKET}/data/manifest.csv', f'gs://{BUCKET}/cli-out')
  assert done.returncode == 0, done.stderr
  assert f'Wrote {len(NAMES)} records of {len(NAMES)} rows' in done.stdout
  # No credential discovery with an emulator (Beam would log its retries), and Beam's GCS
  # client does not take the command line for Beam arguments.
  assert 'default credentials' not in done.stderr and 'Retry with exponential' not in done.stderr
  assert 'Discarding unparseable args' not in done.stderr
  local = server.download(BUCKET, 'cli-out', str(tmp_path / 'cli-out'))
  assert digest(local) == digest(os.path.join(dataset, 'out'))
  assert os.path.exists(os.path.join(local, '_SUCCESS'))
  assert image_reads(proxy) == {f'/{BUCKET}/data/images/{n}': 1 for n in NAMES}


@beam_gcs
def test_convert_reads_concurrently_hiding_latency(dataset, gcs, proxy, tmp_path):
  """At 100 ms a request, 17 images read one at a time would take 1.7 s of waiting;
  the reads are in flight together (seen at the proxy), each object read once."""
  proxy.set_delay(100)
  result = trc.convert(f'gs://{BUCKET}/data/manifest.csv', str(tmp_path / 'out'),
                       concurrent_reads=8)
  assert result.records_written == len(NAMES)
  assert digest(str(tmp_path / 'out')) == digest(os.path.join(dataset, 'out'))
  stats = proxy.stats()
  assert 4 <= stats['max_in_flight'] <= 8, stats
  assert image_reads(proxy) == {f'/{BUCKET}/data/images/{n}': 1 for n in NAMES}


def test_a_local_run_reads_gcs_images_in_forked_workers_after_its_parent_did(
    dataset, gcs, proxy, tmp_path, monkeypatch):
  """A local manifest naming gs:// images runs without Beam. The first run reads them in
  this process (its Arrow client and reader threads are made here); the second forks 2
  workers, which make their own (a forked child has none of its parent's connections
  and threads) and read every object once, with the same records."""
  from tfrecorder_component.engines import run  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.engines.local import pool, read  # pylint: disable=g-import-not-at-top
  rows = [line.split(',') for line in
          open(os.path.join(dataset, 'data', 'manifest.csv')).read().splitlines()]
  manifest = write_text(str(tmp_path / 'm.csv'), ''.join(
      f'{split},gs://{BUCKET}/data/{uri},{label}\n' for split, uri, label in rows))
  trc.convert(manifest, str(tmp_path / 'first'))
  proxy.reset_stats()
  monkeypatch.setattr(run, 'LOCAL_ROWS_PER_WORKER', 1)
  monkeypatch.setattr(run, 'cores', lambda: 2)
  monkeypatch.setattr(read, 'CHUNK_ROWS', 4)
  forked = []
  start = pool.convert_chunks
  monkeypatch.setattr(pool, 'convert_chunks', lambda chunks, make, workers, *a: forked.append(
      min(workers, len(chunks))) or start(chunks, make, workers, *a))
  trc.convert(manifest, str(tmp_path / 'forked'))
  # Two worker processes took the chunks from one queue (which took how many is theirs
  # to race for: one shard a split each, or one of them all).
  assert forked == [2]
  assert image_reads(proxy) == {f'/{BUCKET}/data/images/{n}': 1 for n in NAMES}
  records = lambda out: sorted(r for split in ('train', 'eval', 'test')
                               for r in read_records(os.path.join(out, f'Split-{split}')))
  assert records(str(tmp_path / 'forked')) == records(str(tmp_path / 'first'))


def test_missing_object_and_missing_bucket_are_actionable_row_errors(gcs, proxy, tmp_path):
  write_text(str(tmp_path / 'm.csv'),
             f'TRAIN,gs://{BUCKET}/data/images/img0.jpg,cat\n'
             f'TRAIN,gs://{BUCKET}/data/images/nope.jpg,cat\n'
             'TRAIN,gs://no-such-bucket/images/img0.jpg,cat\n')
  result = trc.convert(str(tmp_path / 'm.csv'), str(tmp_path / 'out'), max_error_ratio=1.0)
  assert result.records_written == 1
  with open(os.path.join(result.report_dir, 'errors.jsonl'), encoding='utf-8') as f:
    errors = {e['uri']: e for e in map(json.loads, f)}
  missing = errors[f'gs://{BUCKET}/data/images/nope.jpg']
  assert missing['reason'] == 'missing' and 'fix the URI or remove the row' in missing['message']
  no_bucket = errors['gs://no-such-bucket/images/img0.jpg']
  assert no_bucket['reason'] == 'missing'
  assert "the bucket 'no-such-bucket' does not exist" in no_bucket['message']


@beam_gcs
@pytest.mark.parametrize('faults', [
    [{'every': 3, 'action': '503', 'object_reads': True, 'limit': 5}],
    [{'every': 2, 'action': '429', 'object_reads': True, 'limit': 5}],
    [{'every': 3, 'action': 'drop', 'object_reads': True, 'limit': 5}],
], ids=['503', '429', 'drop'])
def test_transient_faults_at_the_store_are_retried_and_lose_nothing(dataset, gcs, proxy,
                                                                      tmp_path, faults):
  proxy.set_faults(faults)
  result = trc.convert(f'gs://{BUCKET}/data/manifest.csv', str(tmp_path / 'out'))
  assert result.rows_failed == 0 and result.records_written == len(NAMES)
  assert digest(str(tmp_path / 'out')) == digest(os.path.join(dataset, 'out'))
  assert proxy.stats()['faults_total'] >= 4


@beam_gcs
def test_a_store_down_for_seconds_mid_run_loses_nothing(dataset, gcs, proxy, tmp_path):
  """The server stops after the run has begun reading images and starts again 3 s later
  (the proxy answers 502 meanwhile): retries carry the reads over the gap."""
  server, _ = gcs
  proxy.set_delay(150)
  done = {}

  def run():
    done['result'] = trc.convert(f'gs://{BUCKET}/data/manifest.csv', str(tmp_path / 'out'),
                                 concurrent_reads=2)

  # The run in a thread, the outage from this one: a server dies with the thread that
  # started it (storage_servers).
  t = threading.Thread(target=run)
  t.start()
  deadline = time.monotonic() + 60
  while len(image_reads(proxy)) < 3 and time.monotonic() < deadline:
    time.sleep(0.02)
  server.stop()
  time.sleep(3)
  server.start()
  t.join()
  result = done['result']
  assert result.rows_failed == 0 and result.records_written == len(NAMES)
  assert digest(str(tmp_path / 'out')) == digest(os.path.join(dataset, 'out'))
  assert proxy.stats()['statuses'].get('502', 0) >= 1  # the outage was seen


@beam_gcs
def test_a_failed_run_on_gcs_publishes_nothing(gcs, proxy, tmp_path):
  """An object store cannot rename a folder into place: a run writes `_SUCCESS` last, and
  a failed one leaves no record and no marker, only its report."""
  server, _ = gcs
  write_text(str(tmp_path / 'm.csv'), f'TRAIN,gs://{BUCKET}/data/images/img0.jpg,cat\n'
                                      f'TRAIN,gs://{BUCKET}/data/images/gone.jpg,cat\n')
  with pytest.raises(TooManyFailedRows):
    trc.convert(str(tmp_path / 'm.csv'), f'gs://{BUCKET}/failed')
  left = server.list(BUCKET, 'failed/')
  assert left and all(n.startswith('failed/report/') for n in left), left
  # A folder holding only a failed run's report takes the next run.
  trc.convert(str(tmp_path / 'm.csv'), f'gs://{BUCKET}/failed', max_error_ratio=1.0)
  assert 'failed/_SUCCESS' in server.list(BUCKET, 'failed/')
  # TRAIN rows only: eval and test got no record, and no object of theirs is left.
  assert {n.split('/')[1] for n in server.list(BUCKET, 'failed/')
          if n.startswith('failed/Split-')} == {'Split-train'}
  # A finished output is not overwritten unless asked; when it is, nothing of it is left.
  server.upload(BUCKET, 'failed/Split-old/stray.gz', b'x')
  done = cli('convert', str(tmp_path / 'm.csv'), f'gs://{BUCKET}/failed',
             '--max-error-ratio', '1')
  assert done.returncode == 2 and f'gs://{BUCKET}/failed holds an earlier output' in done.stderr
  # An object the user put beside the output is not the tool's: an overwrite keeps it.
  server.upload(BUCKET, 'failed/NOTES.md', b'my notes')
  trc.convert(str(tmp_path / 'm.csv'), f'gs://{BUCKET}/failed', max_error_ratio=1.0,
              overwrite=True)
  left = server.list(BUCKET, 'failed/')
  assert 'failed/_SUCCESS' in left and 'failed/Split-old/stray.gz' not in left
  assert 'failed/NOTES.md' in left
  # A prefix holding only the user's objects is no output: overwrite refuses it.
  server.upload(BUCKET, 'mine/photo.jpg', b'not an output')
  done = cli('convert', str(tmp_path / 'm.csv'), f'gs://{BUCKET}/mine', '--overwrite',
             '--max-error-ratio', '1')
  assert done.returncode == 2 and 'is not an output of this tool (it holds photo.jpg)' in (
      done.stderr), done.stderr
  assert server.list(BUCKET, 'mine/') == ['mine/photo.jpg']
  # Objects of the user's under names a run writes (no summary, no scratch files of a
  # run) are no leftovers of a killed run: refused, with or without overwrite, kept.
  server.upload(BUCKET, 'theirs/report/q3.pdf', b'a report of the user\'s')
  server.upload(BUCKET, 'theirs/labels.txt', b'a\nb\n')
  for flags in ([], ['--overwrite']):
    done = cli('convert', str(tmp_path / 'm.csv'), f'gs://{BUCKET}/theirs',
               '--max-error-ratio', '1', *flags)
    assert done.returncode == 2 and 'it holds labels.txt, report' in done.stderr, done.stderr
  assert sorted(server.list(BUCKET, 'theirs/')) == ['theirs/labels.txt', 'theirs/report/q3.pdf']


@beam_gcs
def test_coco_and_pascal_voc_manifests_on_gcs_with_image_root_on_gcs(gcs, proxy, tmp_path):
  server, _ = gcs
  coco = {'images': [{'id': i, 'file_name': n, 'width': 12 + i % 5, 'height': 10 + i % 4}
                     for i, n in enumerate(NAMES[:4])],
          'categories': [{'id': 1, 'name': 'cat'}],
          'annotations': [{'id': i, 'image_id': i, 'category_id': 1, 'bbox': [1, 1, 5, 5]}
                          for i in range(4)]}
  server.upload(BUCKET, 'ann/coco.json', json.dumps(coco).encode())
  voc = ('<annotation><filename>{}</filename><size><width>{}</width><height>{}</height>'
         '</size><object><name>dog</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>6</xmax>'
         '<ymax>6</ymax></bndbox></object></annotation>')
  for i, name in enumerate(NAMES[4:7]):
    server.upload(BUCKET, f'voc/{i}.xml', voc.format(name, 12 + (i + 4) % 5,
                                                     10 + (i + 4) % 4).encode())
  root = f'gs://{BUCKET}/data/images'
  coco_out = trc.convert(f'gs://{BUCKET}/ann/coco.json', str(tmp_path / 'coco'),
                         image_root=root, splits={'train': 1})
  voc_out = trc.convert(f'gs://{BUCKET}/voc', str(tmp_path / 'voc'), image_root=root,
                        splits={'train': 1})
  assert (coco_out.records_written, voc_out.records_written) == (4, 3)
  assert (coco_out.rows_failed, voc_out.rows_failed) == (0, 0)
  assert coco_out.records_per_label == {'cat': 4} and voc_out.records_per_label == {'dog': 3}


@beam_gcs
def test_a_split_label_folder_given_as_a_gcs_prefix(dataset, gcs, proxy, tmp_path):
  server, _ = gcs
  for i, name in enumerate(NAMES[:6]):
    with open(os.path.join(dataset, 'data', 'images', name), 'rb') as f:
      server.upload(BUCKET, f'folder/{("train", "test")[i % 2]}/{LABELS[i % 3]}/{name}',
                    f.read())
  result = trc.convert(f'gs://{BUCKET}/folder', str(tmp_path / 'out'))
  assert result.rows_failed == 0
  assert result.records_per_split == {'train': 3, 'eval': 0, 'test': 3}
  assert sum(result.records_per_label.values()) == 6


@beam_gcs
def test_image_example_gen_on_local_dag_runner_with_manifest_and_images_on_gcs(
    dataset, gcs, proxy, tmp_path):
  """An Importer hands ImageExampleGen a gs:// manifest whose images are on gs://; the
  Examples artifact (on local disk: TensorFlow's own gs:// client cannot be pointed at an
  emulator) holds the local conversion's records. concurrent_reads bounds the reads in
  flight, seen at the proxy."""
  tfx = pytest.importorskip('tfx.v1')  # the component's stacks only
  from tfrecorder_component import ImageExampleGen, ImageManifest
  proxy.set_delay(50)
  importer = tfx.dsl.Importer(source_uri=f'gs://{BUCKET}/data/manifest.csv',
                              artifact_type=ImageManifest).with_id('manifest')
  gen = ImageExampleGen(manifest=importer.outputs['result'], concurrent_reads=3)
  root = str(tmp_path / 'pipeline')
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name='gcs', pipeline_root=root, components=[importer, gen],
      metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
          str(tmp_path / 'mlmd.sqlite'))))
  examples, = [os.path.join(d, n) for d, dirs, _ in os.walk(root) for n in dirs
               if n.isdigit() and d.endswith(os.path.join('ImageExampleGen', 'examples'))]
  assert split_records(examples) == split_records(os.path.join(dataset, 'out'))
  stats = proxy.stats()
  assert 2 <= stats['max_in_flight'] <= 3, stats


@pytest.fixture(scope='module')
def s3(dataset):
  """moto's S3 server behind the proxy, the data set uploaded to s3://bkt/data/; the
  endpoint and keys given as a MinIO user gives them, in the environment."""
  with S3Server() as server:
    with Proxy(server.endpoint) as proxy:
      server.create_bucket(BUCKET)
      server.upload_tree(os.path.join(dataset, 'data'), BUCKET, 'data')
      env = {**server.client_env(), 'AWS_ENDPOINT_URL': proxy.url}
      with environment(env):
        yield server, proxy, env


def test_cli_converts_manifest_images_and_output_all_on_s3(dataset, s3, tmp_path):
  server, proxy, env = s3
  proxy.set_delay(50)
  proxy.reset_stats()
  done = cli('convert', f's3://{BUCKET}/data/manifest.csv', f's3://{BUCKET}/out', env=env)
  assert done.returncode == 0, done.stderr
  local = server.download(BUCKET, 'out', str(tmp_path / 'out'))
  assert digest(local) == digest(os.path.join(dataset, 'out'))
  assert os.path.exists(os.path.join(local, '_SUCCESS'))
  stats = proxy.stats()
  assert stats['max_in_flight'] > 1, stats  # read concurrently, seen at the server


@beam_gcs
def test_without_credentials_gcs_is_read_anonymously_without_discovery_retries(tmp_path):
  """No emulator and no credentials anywhere (a laptop, a CI runner): Beam's GCS client
  is told to connect anonymously at once, where it would retry discovery for about 21 s;
  the run says once that only public buckets can be read."""
  code = (
      'import logging, sys\n'
      'logging.basicConfig(level=logging.WARNING)\n'
      'from apache_beam.internal.gcp import auth\n'
      'from apache_beam.options.pipeline_options import PipelineOptions\n'
      'from tfrecorder_component.io import storage\n'
      'storage.prepare_file_systems("gs://public-bucket/manifest.csv")\n'
      'print(auth.get_service_credentials(PipelineOptions([])), storage.gcs_anonymous())\n')
  env = {k: v for k, v in os.environ.items()
         if k not in ('STORAGE_EMULATOR_HOST', 'GOOGLE_APPLICATION_CREDENTIALS')}
  # No gcloud credentials file, and a metadata server that refuses at once.
  env.update(HOME=str(tmp_path), CLOUDSDK_CONFIG=str(tmp_path / 'gcloud'),
             GCE_METADATA_HOST='127.0.0.1:9', GCE_METADATA_IP='127.0.0.1:9')
  done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                        timeout=120, check=False, env=env,
                        cwd=os.path.dirname(os.path.abspath(__file__)))
  assert done.returncode == 0, done.stderr
  assert done.stdout.split() == ['None', 'True']
  assert 'Retry with exponential backoff' not in done.stderr
  assert done.stderr.count('No Google credentials found') == 1


def test_s3_missing_object_missing_bucket_and_faults(dataset, s3, tmp_path):
  """A local manifest naming s3:// images: 503s and dropped connections at the store are
  retried and the records are the local run's; a missing object and a missing bucket
  are error rows that say which."""
  server, proxy, _ = s3
  proxy.reset_stats()
  proxy.set_faults([{'every': 3, 'action': '503', 'limit': 4},
                    {'every': 5, 'action': 'drop', 'limit': 3}])
  try:
    rows = open(os.path.join(dataset, 'data', 'manifest.csv'), encoding='utf-8').read()
    write_text(str(tmp_path / 'm.csv'), rows.replace(',images/', f',s3://{BUCKET}/data/images/'))
    result = trc.convert(str(tmp_path / 'm.csv'), str(tmp_path / 'out'))
  finally:
    proxy.set_faults([])
  assert result.rows_failed == 0 and result.records_written == len(NAMES)
  assert proxy.stats()['faults_total'] == 7
  # The URIs are absolute here, so splits by hash differ from the local run's; the images
  # and labels written are the same.
  assert image_label_pairs(str(tmp_path / 'out')) == image_label_pairs(
      os.path.join(dataset, 'out'))
  write_text(str(tmp_path / 'bad.csv'), f'TRAIN,s3://{BUCKET}/data/images/nope.jpg,cat\n'
                                        'TRAIN,s3://no-such-bucket/img0.jpg,cat\n')
  bad = trc.convert(str(tmp_path / 'bad.csv'), str(tmp_path / 'bad'), max_error_ratio=1.0)
  with open(os.path.join(bad.report_dir, 'errors.jsonl'), encoding='utf-8') as f:
    errors = {e['uri']: e for e in map(json.loads, f)}
  assert errors[f's3://{BUCKET}/data/images/nope.jpg']['reason'] == 'missing'
  assert "the bucket 'no-such-bucket' does not exist" in errors[
      's3://no-such-bucket/img0.jpg']['message']


def test_s3_overwrite_keeps_the_old_output_until_the_new_one_is_complete(dataset, s3,
                                                                         tmp_path):
  """On s3:// an --overwrite run writes beside the old output (under a staging prefix)
  and replaces it only once complete: a run that fails leaves every old object as it
  was (its report beside, in OUT.failed/); a run that succeeds leaves only its own."""
  server, _, env = s3
  out = f's3://{BUCKET}/kept'
  done = cli('convert', f's3://{BUCKET}/data/manifest.csv', out, env=env)
  assert done.returncode == 0, done.stderr
  before = {n: server.read(BUCKET, n) for n in server.list(BUCKET, 'kept/')}
  assert 'kept/_SUCCESS' in before and any(n.startswith('kept/Split-') for n in before)
  write_text(str(tmp_path / 'bad.csv'), f'TRAIN,s3://{BUCKET}/data/images/gone.jpg,cat\n')
  done = cli('convert', str(tmp_path / 'bad.csv'), out, '--overwrite', env=env)
  assert done.returncode == 1, done.stderr
  assert f'All failed rows: {out}.failed/report/errors.jsonl' in done.stderr
  assert {n: server.read(BUCKET, n) for n in server.list(BUCKET, 'kept/')} == before
  assert 'kept.failed/report/errors.jsonl' in server.list(BUCKET, 'kept.failed/')
  # inspect reads s3:// outputs.
  done = cli('inspect', out, env=env)
  assert done.returncode == 0, done.stderr
  assert done.stdout.startswith('Records per split: ')
  # A successful overwrite: only the new run's objects, no staging prefix left.
  small = ''.join(open(os.path.join(dataset, 'data', 'manifest.csv'),
                       encoding='utf-8').readlines()[:4])
  write_text(str(tmp_path / 'small.csv'), small.replace(',images/',
                                                        f',s3://{BUCKET}/data/images/'))
  done = cli('convert', str(tmp_path / 'small.csv'), out, '--overwrite', env=env)
  assert done.returncode == 0, done.stderr
  after = server.list(BUCKET, 'kept/')
  assert 'kept/_SUCCESS' in after and not [n for n in after if '.tfrecorder-' in n]
  local = server.download(BUCKET, 'kept', str(tmp_path / 'kept'))
  fresh = trc.convert(str(tmp_path / 'small.csv'), str(tmp_path / 'fresh'))
  assert split_records(local) == split_records(fresh.output_dir)
  assert sorted(os.path.relpath(os.path.join(d, n), local) for d, _, ns in os.walk(local)
                for n in ns if '/report' not in d) == sorted(
      os.path.relpath(os.path.join(d, n), fresh.output_dir)
      for d, _, ns in os.walk(fresh.output_dir) for n in ns if '/report' not in d)
