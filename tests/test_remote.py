"""Remote storage failures: transient ones are retried, permanent ones are actionable rows.

Remote object storage (gs://) cannot be reached from the test machine, so a Beam
FileSystem registered for the `flaky://` scheme stands in for it: it serves bytes from
memory and raises the errors a remote store raises, in a planned order.
"""
import io

import google.api_core.exceptions as gexc
import google.auth.exceptions
import pytest
from apache_beam.io.filesystem import FileSystem

from images import encode, make_image, write_text
from records import by_source_id
from runs import SPLITS, convert
from tfrecorder_component.io import files
from tfrecorder_component.options import ManifestSource
from tfrecorder_component.errors import RowError

DATA = {}      # path -> bytes
FAILURES = {}  # path -> exceptions to raise, one per open(), before serving the bytes


class FlakyFileSystem(FileSystem):
  """A stand-in for remote object storage; only open() is needed by the reader."""

  @classmethod
  def scheme(cls):
    return 'flaky'

  def open(self, path, mime_type='application/octet-stream', compression_type=None):
    plan = FAILURES.get(path)
    if plan:
      raise plan.pop(0)
    if path not in DATA:
      raise gexc.NotFound(f'No such object: {path}')
    return io.BytesIO(DATA[path])

  def _unsupported(self, *args, **kwargs):
    raise NotImplementedError

  join = split = mkdirs = has_dirs = _list = create = copy = rename = exists = size = \
      last_updated = checksum = delete = metadata = _unsupported


@pytest.fixture(autouse=True)
def remote_store():
  DATA.clear()
  FAILURES.clear()
  yield
  DATA.clear()
  FAILURES.clear()


def test_transient_errors_are_retried_with_backoff():
  DATA['flaky://b/a.png'] = b'bytes'
  FAILURES['flaky://b/a.png'] = [gexc.ServiceUnavailable('503'), ConnectionResetError(104, 'reset')]
  sleeps = []
  assert files.read_bytes('flaky://b/a.png', sleep=sleeps.append) == b'bytes'
  assert sleeps == [0.5, 1.0]


def test_transient_errors_that_never_stop_become_a_row_error():
  DATA['flaky://b/a.png'] = b'bytes'
  FAILURES['flaky://b/a.png'] = [gexc.TooManyRequests('429')] * 4
  sleeps = []
  with pytest.raises(RowError) as e:
    files.read_bytes('flaky://b/a.png', sleep=sleeps.append)
  assert e.value.reason == 'unreadable' and '4 attempts' in e.value.message
  assert sleeps == [0.5, 1.0, 2.0]


@pytest.mark.parametrize('error', [
    gexc.Forbidden('403 caller does not have storage.objects.get access'),
    google.auth.exceptions.DefaultCredentialsError('Could not automatically determine credentials'),
    PermissionError(13, 'Permission denied'),
])
def test_permanent_errors_are_not_retried_and_say_what_to_do(error):
  DATA['flaky://b/a.png'] = b'bytes'
  FAILURES['flaky://b/a.png'] = [error]
  sleeps = []
  with pytest.raises(RowError) as e:
    files.read_bytes('flaky://b/a.png', sleep=sleeps.append)
  assert e.value.reason == 'permission_denied' and sleeps == []
  assert 'read access' in e.value.message and 'service account' in e.value.message


def test_remote_rows_in_a_pipeline(tmp_path):
  png = encode(make_image('RGB', 5, 5), 'PNG')
  for name in ('ok', 'flaky', 'forbidden'):
    DATA[f'flaky://bucket/{name}.png'] = png
  FAILURES['flaky://bucket/flaky.png'] = [gexc.ServiceUnavailable('503')]
  FAILURES['flaky://bucket/forbidden.png'] = [gexc.Forbidden('403')]
  manifest = write_text(str(tmp_path / 'm.csv'), ''.join(
      f'TRAIN,flaky://bucket/{n}.png,x\n' for n in ('ok', 'flaky', 'forbidden', 'gone')))
  out, summary, errors = convert(tmp_path, [ManifestSource(manifest)])
  assert sorted(by_source_id(out, SPLITS)) == ['flaky://bucket/flaky.png',
                                               'flaky://bucket/ok.png']
  assert sorted((e['uri'], e['reason']) for e in errors) == [
      ('flaky://bucket/forbidden.png', 'permission_denied'),
      ('flaky://bucket/gone.png', 'missing')]
  assert summary['rows_read'] == 4


@pytest.mark.parametrize('message,kind', [
    ('google::cloud::Status(UNAVAILABLE: Retry policy exhausted in ReadObjectNotWrapped: '
     'EasyPerform() - CURL error [7]=Couldn\'t connect to server)', 'transient'),
    ('google::cloud::Status(RESOURCE_EXHAUSTED: Retry policy exhausted: 429)', 'transient'),
    ('When reading information for key \'imgs/a.jpg\' in bucket \'b\': AWS Error '
     'NETWORK_CONNECTION during HeadObject operation: curlCode: 7', 'transient'),
    ('google::cloud::Status(PERMISSION_DENIED: Permanent error ReadObjectNotWrapped: '
     'caller does not have storage.objects.get access)', 'permission_denied'),
    ('AWS Error ACCESS_DENIED during HeadObject operation: Access Denied', 'permission_denied'),
])
def test_arrow_client_errors_are_classified_by_their_status(message, kind):
  """Arrow's GCS and S3 clients raise OSError with the store's status in its text."""
  assert files.classify(OSError(message)) == kind
