"""The local storage stand-ins of storage_servers.py: fake GCS, moto S3 and the proxy."""
import concurrent.futures
import http.client
import http.server
import os
import shutil
import threading
import time

import boto3
import pyarrow.fs as pafs
import pytest

from storage_servers import GcsServer, Proxy, S3Server, free_port, gcs_behind_proxy

NAME = 'imgs/a b#c?d%e é.jpg'
QUOTED = '/bkt/imgs/a%20b%23c%3Fd%25e%20%C3%A9.jpg'
TASKSET = ('taskset', '-c', '0') if shutil.which('taskset') else ()


def alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
    return True
  except ProcessLookupError:
    return False


def get(endpoint: str, path: str, conn=None):
  """A GET through the proxy on a kept-alive connection; the status and body."""
  conn.request('GET', path, headers={'Host': endpoint})
  resp = conn.getresponse()
  return resp.status, resp.getheader('Retry-After'), resp.read()


@pytest.fixture(scope='module')
def gcs():
  with gcs_behind_proxy(proxy_prefix=TASKSET) as (server, proxy):
    server.create_bucket('bkt')
    server.upload('bkt', NAME, b'hello')
    pids = [server.pid, proxy.pid]
    yield server, proxy
  assert not any(alive(pid) for pid in pids)
  assert not os.path.exists(server.root)


@pytest.fixture
def proxy(gcs):
  proxy = gcs[1]
  proxy.reset_stats()
  yield proxy
  proxy.set_faults([])
  proxy.set_delay(0)


def test_gcs_round_trip_of_awkward_names(gcs, tmp_path):
  server = gcs[0]
  assert server.list('bkt', 'imgs/') == [NAME]
  assert server.read('bkt', NAME) == b'hello'
  for rel in ('x.jpg', 'sub/y #1.png', 'sub/deeper/z%.gif'):
    os.makedirs(os.path.dirname(tmp_path / 'tree' / rel), exist_ok=True)
    (tmp_path / 'tree' / rel).write_bytes(rel.encode())
  names = server.upload_tree(str(tmp_path / 'tree'), 'bkt', 'up')
  assert names == ['up/sub/deeper/z%.gif', 'up/sub/y #1.png', 'up/x.jpg']
  assert server.list('bkt', 'up/') == names
  assert server.read('bkt', 'up/sub/y #1.png') == b'sub/y #1.png'
  with pytest.raises(FileNotFoundError):
    server.read('bkt', 'missing')


def test_pyarrow_gcs_reads_through_the_slow_proxy(gcs, proxy):
  proxy.set_delay(20)
  fs = pafs.GcsFileSystem(anonymous=True, endpoint_override=proxy.endpoint, scheme='http')
  start = time.perf_counter()
  assert fs.open_input_stream('bkt/' + NAME).read() == b'hello'
  assert time.perf_counter() - start >= 0.02
  stats = proxy.stats()
  assert (stats['requests'], stats['methods'], stats['object_reads']) == (1, {'GET': 1}, 1)

  proxy.reset_stats()
  with concurrent.futures.ThreadPoolExecutor(16) as pool:
    reads = list(pool.map(lambda _: fs.open_input_stream('bkt/' + NAME).read(), range(16)))
  assert reads == [b'hello'] * 16
  stats = proxy.stats()
  assert stats['requests'] == 16 and stats['max_in_flight'] >= 8, stats


def test_faults_are_injected_before_forwarding(gcs, proxy):
  proxy.set_faults([{'every': 2, 'action': '503'}])
  conn = http.client.HTTPConnection(*proxy.endpoint.split(':'))
  statuses = [get(proxy.endpoint, QUOTED, conn)[0] for _ in range(4)]
  assert statuses == [200, 503, 200, 503]
  stats = proxy.stats()
  assert stats['faults']['503'] == 2 and stats['statuses'] == {'200': 2, '503': 2}
  assert stats['object_reads'] == 4 and stats['connections'] == 1

  proxy.set_faults([{'every': 1, 'action': '429', 'object_reads': True, 'limit': 1},
                    {'every': 1, 'action': 'drop', 'methods': ['GET'], 'limit': 1}])
  assert get(proxy.endpoint, QUOTED, conn)[:2] == (429, '0')
  with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
    get(proxy.endpoint, QUOTED, conn)
  conn.close()
  conn = http.client.HTTPConnection(*proxy.endpoint.split(':'))
  assert get(proxy.endpoint, QUOTED, conn) == (200, None, b'hello')
  conn.close()
  assert proxy.stats()['faults'] == {'429': 1, '503': 2, 'drop': 1}


def test_proxy_forwards_chunked_uploads_expecting_continue(gcs, proxy):
  conn = http.client.HTTPConnection(*proxy.endpoint.split(':'))
  conn.request('POST', '/upload/storage/v1/b/bkt/o?uploadType=media&name=chunked.bin',
               body=iter([b'ab', b'cd' * 5000]), encode_chunked=True,
               headers={'Expect': '100-continue', 'Content-Type': 'application/octet-stream'})
  assert conn.getresponse().read() and gcs[0].read('bkt', 'chunked.bin') == b'ab' + b'cd' * 5000
  conn.request('HEAD', '/bkt/chunked.bin', headers={'Host': proxy.endpoint})
  resp = conn.getresponse()
  assert (resp.status, resp.getheader('Content-Length'), resp.read()) == (200, '10002', b'')
  assert get(proxy.endpoint, '/bkt/chunked.bin', conn)[2] == b'ab' + b'cd' * 5000
  assert proxy.stats()['methods'] == {'POST': 1, 'HEAD': 1, 'GET': 1}


def test_gcs_restart_keeps_objects(gcs, proxy):
  server = gcs[0]
  server.stop()
  conn = http.client.HTTPConnection(*proxy.endpoint.split(':'))
  assert get(proxy.endpoint, QUOTED, conn)[0] == 502
  server.start()
  assert get(proxy.endpoint, QUOTED, conn)[2] == b'hello'
  assert server.read('bkt', NAME) == b'hello'
  assert proxy.stats()['upstream_errors'] == 1


def test_s3_round_trip_and_pyarrow_read_through_the_proxy(monkeypatch):
  with S3Server() as s3, Proxy(s3.endpoint, delay_ms=5, prefix=TASKSET) as proxy:
    pids = [s3.pid, proxy.pid]
    s3.create_bucket('bkt')
    s3.upload('bkt', NAME, b'hello')
    assert s3.list('bkt') == [NAME] and s3.read('bkt', NAME) == b'hello'
    for key, value in s3.client_env().items():
      monkeypatch.setenv(key, value)
    assert boto3.session.Session().client('s3').list_buckets()['Buckets'][0]['Name'] == 'bkt'

    fs = pafs.S3FileSystem(access_key='testing', secret_key='testing', region='us-east-1',
                           endpoint_override=proxy.endpoint, scheme='http')
    proxy.reset_stats()
    assert fs.open_input_stream('bkt/' + NAME).read() == b'hello'
    stats = proxy.stats()
    assert stats['methods'] == {'HEAD': 1, 'GET': 1} and stats['object_reads'] == 1, stats
  assert not any(alive(pid) for pid in pids)


def test_a_failed_start_says_why_and_leaves_nothing():
  port = free_port()
  with GcsServer(port=port) as first:
    second = GcsServer(port=port)
    with pytest.raises(RuntimeError, match='in use'):
      second.start()
    second.close()
    assert second.pid is None and not os.path.exists(os.path.dirname(second.root))
    assert first.running()


class Framings(http.server.BaseHTTPRequestHandler):
  """Answers /chunked in chunks, /close with a body that ends when the connection does."""

  protocol_version = 'HTTP/1.1'

  def do_GET(self):
    if self.path == '/chunked':
      self.send_response(200)
      self.send_header('Transfer-Encoding', 'chunked')
      self.end_headers()
      for part in (b'abc', b'x' * 70000, b''):
        self.wfile.write(b'%x\r\n%s\r\n' % (len(part), part))
    elif self.path == '/close':
      self.send_response(200)
      self.send_header('Connection', 'close')
      self.end_headers()
      self.wfile.write(b'until close')
      self.close_connection = True
    else:
      self.send_response(204)
      self.end_headers()

  def log_message(self, *args):
    pass


def test_proxy_passes_chunked_close_delimited_and_empty_answers():
  upstream = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Framings)
  thread = threading.Thread(target=upstream.serve_forever, daemon=True)
  thread.start()
  try:
    with Proxy(f'127.0.0.1:{upstream.server_address[1]}') as proxy:
      conn = http.client.HTTPConnection(*proxy.endpoint.split(':'))
      assert get(proxy.endpoint, '/chunked', conn) == (200, None, b'abc' + b'x' * 70000)
      assert get(proxy.endpoint, '/empty', conn) == (204, None, b'')
      assert get(proxy.endpoint, '/close', conn) == (200, None, b'until close')
      conn.close()
      assert proxy.stats()['statuses'] == {'200': 2, '204': 1}
  finally:
    upstream.shutdown()
    upstream.server_close()
