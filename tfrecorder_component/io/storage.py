"""Object storage clients for image reads: `gs://` and `s3://` through Arrow's C++
clients, held once per process; every other scheme through Beam's `FileSystems`.

Why not Beam's file systems for images: `GCSFileSystem.open` builds a new GcsIO and
storage client for every file (about 9 ms of CPU), and even one shared
google-cloud-storage client costs about 1.7 ms of CPU a request under the GIL, more
than converting the image. `pyarrow.fs.GcsFileSystem` and `S3FileSystem` (pyarrow comes
with Beam) read an object in one request for about 0.26 ms of CPU, outside the GIL, so
many reads can be in flight from threads. Manifests, listings and outputs still go
through Beam's file systems (their cost is per file, not per image).

Credentials and endpoints are the clients' usual ones:
- gs://: `STORAGE_EMULATOR_HOST` (an emulator, read anonymously); otherwise Google
  Application Default Credentials; with none found, anonymous reads (public buckets),
  said once in the log. `prepare_file_systems` makes Beam's own GCS client agree
  instead of retrying credential discovery for about 21 s.
- s3://: the AWS SDK's chain (`AWS_ACCESS_KEY_ID`, `~/.aws`, instance roles) and the
  endpoint of `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, as MinIO users set it (Beam's
  boto3 client reads the same variables).

The output folder's lock object (`output.remote_lock`) is written with the store's
create-only precondition, which Arrow's clients cannot send: google-cloud-storage's
client for gs:// and boto3's for s3:// (`create_if_absent`, `read_if_present`,
`delete_if_unchanged`).

Length: the object-store clients (gs://, s3://), their background upload writer and the
renames, deletes and create-only writes the output folder needs, which share one client
cache.
"""
from __future__ import annotations

import datetime
import errno
import logging
import os
import stat
import sys
import threading
import urllib.parse
from typing import Any, BinaryIO, Dict, NamedTuple, Optional, Tuple

from tfrecorder_component import extras

__all__ = ['is_object_store', 'is_remote', 'open_object', 'client_for', 'prepare_file_systems',
           'missing_bucket', 'gcs_anonymous', 'RETRY_SECONDS']

# How long Arrow's clients retry a transient failure (503, 429, a reset or refused
# connection) of one request before it reaches `files.read_bytes`, which retries it again
# with backoff and then fails the row.
RETRY_SECONDS = 10

_lock = threading.Lock()
_clients: Dict[Tuple[str, Tuple], Any] = {}


def _forget_clients() -> None:
  """In a process forked from this one (`engines/local/`'s workers): the parent's clients
  hold its connections and threads, none of which the child has; it makes its own."""
  global _lock
  _lock = threading.Lock()
  _clients.clear()


os.register_at_fork(after_in_child=_forget_clients)
_gcs_anonymous: Optional[bool] = None
_beam_primed = False


def is_remote(uri: str) -> bool:
  """Whether `uri` names a file on another machine (a scheme other than file://).

  Args:
    uri: A local path or a URI.
  """
  scheme = uri.split('://', 1)[0] if '://' in uri else ''
  return bool(scheme) and scheme != 'file'


def is_object_store(uri: str) -> bool:
  """Whether `uri` is read by this module's own clients (gs:// or s3://).

  Args:
    uri: A local path or a URI; only the lower-case prefixes `gs://` and `s3://` count.
  """
  return uri.startswith(('gs://', 's3://'))


def _emulator_host() -> Optional[str]:
  return os.environ.get('STORAGE_EMULATOR_HOST') or None


def _no_google_credentials() -> bool:
  """True when Application Default Credentials cannot be found (checked once, without
  the retries Beam adds around the same look-up)."""
  try:
    import google.auth  # pylint: disable=g-import-not-at-top
    import google.auth.exceptions  # pylint: disable=g-import-not-at-top
  except ImportError:
    return True
  try:
    google.auth.default()
  except google.auth.exceptions.DefaultCredentialsError:
    return True
  return False


def gcs_anonymous() -> bool:
  """Whether gs:// is read anonymously here: an emulator, or no credentials at all."""
  global _gcs_anonymous
  if _gcs_anonymous is not None:  # every read asks: no lock once known
    return _gcs_anonymous
  with _lock:
    if _gcs_anonymous is None:
      if _emulator_host():
        _gcs_anonymous = True
      else:
        _gcs_anonymous = _no_google_credentials()
        if _gcs_anonymous:
          logging.warning(
              'No Google credentials found: gs:// is read anonymously, which only public '
              'buckets allow. Give credentials with `gcloud auth application-default '
              'login` or GOOGLE_APPLICATION_CREDENTIALS=<key file>.')
    return _gcs_anonymous


def prepare_file_systems(*uris: str) -> None:
  """Readies Beam's file systems in this process for `uris`, before or without a
  pipeline: Beam's GCS client connects anonymously at once where gs:// is read
  anonymously (an emulator, or, when one of `uris` is on gs://, no credentials), where it
  would retry credential discovery for about 21 s first. Beam's remote file systems get
  default pipeline options when no pipeline has set any: S3's needs them (its boto3
  client then reads the endpoint and keys from the environment), and GCS's would parse
  the command line as Beam arguments and warn about every word. Cheap to call again.

  Args:
    uris: The paths and URIs this process is about to read or write; a remote one
      whose extra is not installed raises MissingExtra. None given: only what needs no
      URI (an emulator's anonymous GCS client, Beam's S3 writer once Beam is imported).
  """
  global _beam_primed
  for uri in uris:
    if is_remote(uri):
      extras.require_for_uri(uri)
  if 'apache_beam' in sys.modules or any(is_remote(u) for u in uris):
    _let_beam_write_empty_s3_objects()  # not worth importing Beam for, where it is unused
  if any(is_remote(u) for u in uris):
    from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
    if getattr(FileSystems, '_pipeline_options', None) is None:
      from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
      FileSystems.set_options(PipelineOptions([]))
  if _beam_primed:
    return
  if _emulator_host() or (any(u.startswith('gs://') for u in uris) and gcs_anonymous()):
    _prime_beam_anonymous()
    _beam_primed = True


def _let_beam_write_empty_s3_objects() -> None:
  """Beam's S3 writer (2.59 to 2.77) completes a multipart upload of an empty file with
  no part, which S3, MinIO and moto refuse (MalformedXML): a run's empty errors.jsonl
  or `_SUCCESS` could not be written. S3 completes an upload of one empty part; this has
  Beam's writer upload one when nothing else was. Once per process."""
  try:
    from apache_beam.io.aws import s3io  # pylint: disable=g-import-not-at-top
  except ImportError:
    return
  uploader = getattr(s3io, 'S3Uploader', None)
  if uploader is None or getattr(uploader, '_writes_empty_objects', False):
    return
  finish = uploader.finish

  def finish_with_a_part(self):
    if not self.parts and not self.buffer and self.last_error is None:
      self._write_to_s3(b'')  # pylint: disable=protected-access
    return finish(self)

  uploader.finish = finish_with_a_part
  uploader._writes_empty_objects = True  # pylint: disable=protected-access


def _prime_beam_anonymous() -> None:
  try:
    from apache_beam.internal.gcp import auth  # pylint: disable=g-import-not-at-top
  except ImportError:
    return
  credentials = getattr(auth, '_Credentials', None)
  if credentials is None or not hasattr(credentials, '_credentials_init'):
    return
  with credentials._credentials_lock:  # pylint: disable=protected-access
    if not credentials._credentials_init:  # pylint: disable=protected-access
      credentials._credentials = None  # pylint: disable=protected-access
      credentials._credentials_init = True  # pylint: disable=protected-access


def _split_endpoint(url: str, default_scheme: str = 'https') -> Tuple[str, str]:
  """('host:port', 'http' | 'https') of an endpoint given as a URL or a bare host."""
  if '://' not in url:
    return url.rstrip('/'), default_scheme
  parts = urllib.parse.urlsplit(url)
  return parts.netloc, parts.scheme


def _client(scheme: str):
  """This process's Arrow file system for `scheme` ('gs' or 's3'), or None if this
  pyarrow cannot serve it (then Beam's file system is used)."""
  if scheme == 'gs':
    emulator = _emulator_host()
    settings: Tuple = ('gs', emulator, gcs_anonymous())
  else:
    endpoint = os.environ.get('AWS_ENDPOINT_URL_S3') or os.environ.get('AWS_ENDPOINT_URL')
    region = os.environ.get('AWS_REGION') or os.environ.get('AWS_DEFAULT_REGION')
    settings = ('s3', endpoint, region)
  key = (scheme, settings)
  if key in _clients:  # every read asks: no lock once made
    return _clients[key]
  try:
    import pyarrow.fs as pafs  # pylint: disable=g-import-not-at-top
    if scheme == 'gs':
      kwargs: Dict[str, Any] = dict(anonymous=settings[2],
                                    retry_time_limit=datetime.timedelta(seconds=RETRY_SECONDS))
      if emulator:
        kwargs['endpoint_override'], kwargs['scheme'] = _split_endpoint(emulator, 'http')
      client = pafs.GcsFileSystem(**kwargs)
    else:
      kwargs = dict(retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=5))
      if settings[1]:
        kwargs['endpoint_override'], kwargs['scheme'] = _split_endpoint(settings[1])
      if settings[2]:
        kwargs['region'] = settings[2]
      client = pafs.S3FileSystem(**kwargs)
  except (ImportError, AttributeError, TypeError, OSError) as e:
    logging.warning('Arrow cannot read %s:// here (%s); using Beam\'s file system', scheme, e)
    client = None
  with _lock:
    return _clients.setdefault(key, client)


def client_for(uri: str):
  """This process's Arrow file system for a gs:// or s3:// `uri` (made once, kept), or
  None: another scheme, or one this pyarrow cannot serve.

  Args:
    uri: A local path or a URI; only its scheme is looked at.
  """
  return _client(uri[:2]) if is_object_store(uri) else None


def _arrow_path(uri: str) -> str:
  return uri.split('://', 1)[1]


def open_object(uri: str) -> BinaryIO:
  """A file object reading `uri` from its start: one request for gs:// and s3:// (Arrow's
  clients), Beam's `FileSystems.open` for every other scheme and for local paths.

  Args:
    uri: A local path or a file:// URI, opened only if it names a regular file
      (NotARegularFile for a FIFO, a device, a socket or a dangling link), or a URI on
      any Beam file system.
  """
  if is_object_store(uri):
    extras.require_for_uri(uri)
    client = _client(uri[:2])
    if client is not None:
      # compression=None: Arrow would otherwise decompress an object named *.gz or *.bz2.
      return client.open_input_stream(_arrow_path(uri), compression=None)
  if '://' not in uri or uri.startswith('file://'):
    return _open_local(uri[len('file://'):] if uri.startswith('file://') else uri)
  extras.require_for_uri(uri)
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  return FileSystems.open(uri, compression_type='uncompressed')


# What an object writer holds while its upload catches up: pieces queued for the upload
# thread or gathered by it, not yet uploaded, at most this many bytes (then `write`
# waits). At least twice UPLOAD_PIECE_BYTES (see `ObjectWriter.write`).
WRITE_QUEUE_BYTES = 32 << 20
# The writes an object writer makes to its upload stream: everything queued when the
# stream is free, once it is this much or more. Arrow's GCS client sends each write of
# 256 KiB or more as its own request of a resumable upload, one round trip after another
# (S3's client makes parts of its own), so an upload that lags behind the worker makes
# fewer, larger requests. On fake-gcs-server behind 20 ms a request, 160 MiB went up in
# 4.7 s in 8 MiB writes and 2.4 s in 32 MiB ones (the emulator hashes the whole object
# again at every request); 16 MiB is the middle.
UPLOAD_PIECE_BYTES = 16 << 20


class ObjectWriter:
  """A file object writing one object on gs:// or s3:// through this process's Arrow
  client: `write` hands each piece to an upload thread and returns at once (Arrow's GCS
  stream uploads a full buffer inside `write`, holding a converting worker for a round
  trip and the transfer), so the upload goes on while the caller converts. The object
  exists once `close()` has returned; a writer whose process is killed leaves no object
  (the stores complete an upload only when told), and one left by an error (`with`, or
  `abort()`) is deleted.
  `close()` raises the upload's failure, if any; so does a later `write`.

  Args:
    client: The Arrow file system of the URI's scheme (`client_for(uri)`).
    uri: The object to write, `gs://bucket/name` or `s3://bucket/name`; it is also the
      writer's `name`. An object already there is replaced.
  """

  def __init__(self, client, uri: str):
    import queue  # pylint: disable=g-import-not-at-top
    self.name = uri
    # compression=None: Arrow would otherwise gzip a file named *.gz (a shard) again.
    self._stream = client.open_output_stream(_arrow_path(uri), compression=None)
    self._queue: 'queue.Queue' = queue.Queue()
    self._room = threading.Condition()
    self._held = 0  # bytes queued or gathered, not yet uploaded (under self._room)
    self._failure: Optional[BaseException] = None
    self._closed = False
    self._written = 0
    self._thread = threading.Thread(target=self._upload, name='tfrecorder-object-writer',
                                    daemon=True)
    self._thread.start()

  def _upload(self) -> None:
    import queue  # pylint: disable=g-import-not-at-top
    pending = bytearray()  # what is queued, gathered into writes of UPLOAD_PIECE_BYTES or more
    done = False
    while not done:
      piece = self._queue.get()
      while True:  # everything queued meanwhile goes into the same write
        if piece is None:
          done = True
          break
        pending += piece
        try:
          piece = self._queue.get_nowait()
        except queue.Empty:
          break
      uploaded = 0
      try:
        if pending and (done or len(pending) >= UPLOAD_PIECE_BYTES):
          uploaded = len(pending)
          if self._failure is None:
            self._stream.write(pending)
          pending = bytearray()
        if done:  # the object completed here, beside the other writers' tails
          self._stream.close()
      except BaseException as e:  # pylint: disable=broad-except  (raised by write/close)
        self._failure = self._failure or e
        uploaded = len(pending) or uploaded
        pending = bytearray()
      finally:
        if uploaded:
          with self._room:
            self._held -= uploaded
            self._room.notify_all()

  # What writers of Python files (pyarrow's Parquet writer, gzip) ask of one.
  @property
  def closed(self) -> bool:
    return self._closed

  def writable(self) -> bool:
    return True

  def readable(self) -> bool:
    return False

  def seekable(self) -> bool:
    return False

  def tell(self) -> int:
    return self._written

  def flush(self) -> None:
    pass

  def write(self, data) -> int:
    """Queues `data` for the upload thread and returns its length; waits only while
    more than WRITE_QUEUE_BYTES would be held. Raises the upload's failure, if any, and
    ValueError once the writer is closed.

    Args:
      data: Bytes or any bytes-like object; copied before it is queued.
    """
    if self._failure is not None:
      raise self._failure
    if self._closed:
      raise ValueError(f'write to a closed object writer ({self.name})')
    data = bytes(data)
    self._written += len(data)
    # Pieces of at most UPLOAD_PIECE_BYTES: a write waits while more than
    # WRITE_QUEUE_BYTES (twice that) would be held, so the upload thread then holds at
    # least UPLOAD_PIECE_BYTES, which it uploads and gives back; it never waits for a
    # piece that cannot come.
    for at in range(0, len(data), UPLOAD_PIECE_BYTES):
      piece = data[at:at + UPLOAD_PIECE_BYTES]
      with self._room:
        while self._held and self._held + len(piece) > WRITE_QUEUE_BYTES:
          if self._failure is not None:
            raise self._failure
          self._room.wait()
        self._held += len(piece)
      self._queue.put(piece)
    return len(data)

  def begin_close(self) -> None:
    """Lets the upload finish what is queued without waiting for it: `close()` then
    waits. Closing several writers this way uploads their tails at once."""
    if not self._closed:
      self._closed = True
      self._queue.put(None)

  def close(self) -> None:
    if self._thread is None:
      return
    self.begin_close()
    self._thread.join()
    self._thread = None
    if self._failure is not None:
      raise self._failure

  def __enter__(self) -> 'ObjectWriter':
    return self

  def __exit__(self, kind, *exc) -> None:
    if kind is None:
      self.close()
    else:
      self.abort()

  def abort(self) -> None:
    """Ends the upload without keeping the object: the caller failed. (Arrow completes an
    upload when its stream is closed or collected, so the object is deleted after.)"""
    if self._thread is None:
      return
    self._failure = self._failure or RuntimeError('aborted')
    self.begin_close()
    self._thread.join()
    self._thread = None
    try:
      delete_object(self.name)
    except Exception:  # pylint: disable=broad-except  (nothing, or an unfinished upload)
      pass


def create_object(uri: str) -> Optional[ObjectWriter]:
  """An ObjectWriter for the gs:// or s3:// `uri`, or None where this pyarrow has no
  client for its scheme (then Beam's file system writes it).

  Args:
    uri: The object to write, a gs:// or s3:// URI.
  """
  client = client_for(uri)
  return None if client is None else ObjectWriter(client, uri)


def _boto3_s3():
  """This process's boto3 S3 client (made once for each endpoint, region, key and
  profile in the environment, as Beam's S3 file system reads them: a process that
  points them elsewhere gets a client of its own), or None without boto3."""
  key = ('boto3', tuple(os.environ.get(name) for name in (
      'AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL', 'AWS_REGION', 'AWS_DEFAULT_REGION',
      'AWS_ACCESS_KEY_ID', 'AWS_PROFILE')))
  if key in _clients:
    return _clients[key]
  try:
    import boto3  # pylint: disable=g-import-not-at-top
    client = boto3.session.Session().client('s3')
  except ImportError:
    client = None
  with _lock:
    return _clients.setdefault(key, client)


def _bucket_key(uri: str) -> Tuple[str, str]:
  bucket, _, name = _arrow_path(uri).partition('/')
  return bucket, name


def move_object(source: str, target: str) -> None:
  """Renames an object within its store: a copy made by the store, then the source
  deleted. gs://: Arrow's client (GCS's rewrite). s3://: boto3's managed copy (one
  CopyObject, or a multipart copy past S3's 5 GB limit) where boto3 is installed (Beam's
  `[aws]` extra, which S3 outputs need), since Arrow's S3 client leaves an empty
  "folder/" object behind each object it deletes; else Arrow's.

  Args:
    source: The object to rename, a gs:// or s3:// URI whose scheme has a client.
    target: Its new URI, in the same store as `source`; an object already there is
      replaced.
  """
  s3 = _boto3_s3() if source.startswith('s3://') else None
  if s3 is not None:
    bucket, name = _bucket_key(source)
    s3.copy({'Bucket': bucket, 'Key': name}, *_bucket_key(target))
    s3.delete_object(Bucket=bucket, Key=name)
    return
  client = client_for(source)
  client.copy_file(_arrow_path(source), _arrow_path(target))
  client.delete_file(_arrow_path(source))


def delete_object(uri: str) -> None:
  """Deletes the object `uri` (gs:// or s3://, as `move_object` does), if it exists.

  Args:
    uri: The object's gs:// or s3:// URI.
  """
  s3 = _boto3_s3() if uri.startswith('s3://') else None
  if s3 is not None:
    bucket, name = _bucket_key(uri)
    s3.delete_object(Bucket=bucket, Key=name)  # S3 answers a missing key alike
    return
  try:
    client_for(uri).delete_file(_arrow_path(uri))
  except FileNotFoundError:
    pass


def _gcs_bucket(bucket: str):
  """A google-cloud-storage Bucket handle of this process's client for gs:// (made once):
  anonymous where gs:// is read anonymously (an emulator: STORAGE_EMULATOR_HOST, which
  the client honours; or no credentials), else Application Default Credentials. Arrow's
  GCS client cannot send preconditions; this one (Beam's [gcp] extra has it) can."""
  key = ('google-cloud-storage', (_emulator_host(), gcs_anonymous()))
  client = _clients.get(key)
  if client is None:
    from google.cloud import storage as gcs  # pylint: disable=g-import-not-at-top
    # project=None: none is needed to read or write an object, and none is looked for.
    made = (gcs.Client.create_anonymous_client() if gcs_anonymous()
            else gcs.Client(project=None))
    with _lock:
      client = _clients.setdefault(key, made)
  return client.bucket(bucket)


def _s3_code(error: BaseException) -> str:
  """The S3 error code of a botocore ClientError ('' for anything else)."""
  response = getattr(error, 'response', None)
  return str(((response or {}).get('Error') or {}).get('Code', '')) if isinstance(
      response, dict) else ''


def create_if_absent(uri: str, data: bytes, metadata: Optional[Dict[str, str]] = None,
                     content_type: str = 'application/json') -> Optional[str]:
  """Writes the object `uri` only if no object of that name exists, in one request the
  store decides atomically: Cloud Storage's `ifGenerationMatch=0`, S3's `If-None-Match: *`
  (S3 since August 2024; moto). Returns the new object's version token for
  `read_if_present` and `delete_if_unchanged` (the generation on gs://, the ETag on
  s3://), or None if an object of that name was there (also where the client's retry of
  this very request found the object its first try made: the caller compares contents).

  Args:
    uri: The object, a gs:// or s3:// URI.
    data: Its whole content (small: one request).
    metadata: The object's custom metadata ({name: value}: `x-goog-meta-*`,
      `x-amz-meta-*`; S3 lower-cases the names); None: none.
    content_type: The object's Content-Type.

  Raises:
    NotImplementedError: An S3-compatible store that refuses the precondition (501).
  """
  bucket, name = _bucket_key(uri)
  if uri.startswith('s3://'):
    s3 = _boto3_s3()
    try:
      answer = s3.put_object(Bucket=bucket, Key=name, Body=data, IfNoneMatch='*',
                             ContentType=content_type, Metadata=dict(metadata or {}))
    except Exception as e:  # pylint: disable=broad-except  botocore's ClientError
      # 409 ConditionalRequestConflict: another conditional write of the name in flight.
      if _s3_code(e) in ('PreconditionFailed', 'ConditionalRequestConflict', '412', '409'):
        return None
      if _s3_code(e) in ('NotImplemented', '501'):
        raise NotImplementedError(f'this S3 store does not take If-None-Match on PutObject '
                                  f'({e})') from e
      raise
    return str(answer.get('ETag', ''))
  from google.api_core import exceptions  # pylint: disable=g-import-not-at-top
  blob = _gcs_bucket(bucket).blob(name)
  if metadata:
    blob.metadata = dict(metadata)
  try:
    blob.upload_from_string(data, content_type=content_type, if_generation_match=0)
  except exceptions.PreconditionFailed:
    return None
  return str(blob.generation)


class StoredObject(NamedTuple):
  """An object as `read_if_present` read it, all of one version.

  Attributes:
    data: Its bytes.
    token: Its version (see `create_if_absent`): the generation on gs://, the ETag on
      s3://.
    metadata: Its custom metadata, {name: value}.
  """
  data: bytes
  token: str
  metadata: Dict[str, str]


def read_if_present(uri: str) -> Optional[StoredObject]:
  """The object `uri` (its content, version token and metadata), or None if there is
  none.

  Args:
    uri: The object, a gs:// or s3:// URI; read whole (it is small).
  """
  bucket, name = _bucket_key(uri)
  if uri.startswith('s3://'):
    s3 = _boto3_s3()
    try:
      answer = s3.get_object(Bucket=bucket, Key=name)
    except Exception as e:  # pylint: disable=broad-except  botocore's ClientError
      if _s3_code(e) in ('NoSuchKey', '404', 'NotFound'):
        return None
      raise
    return StoredObject(answer['Body'].read(), str(answer.get('ETag', '')),
                        dict(answer.get('Metadata') or {}))
  from google.api_core import exceptions  # pylint: disable=g-import-not-at-top
  for _ in range(3):  # replaced between the two requests: read the new one
    blob = _gcs_bucket(bucket).get_blob(name)
    if blob is None:
      return None
    try:
      return StoredObject(blob.download_as_bytes(if_generation_match=blob.generation),
                          str(blob.generation), dict(blob.metadata or {}))
    except exceptions.NotFound:
      return None
    except exceptions.PreconditionFailed:
      continue
  return None


def delete_if_unchanged(uri: str, token: str) -> bool:
  """Deletes the object `uri` if it is still the version `token` names: on gs:// in one
  request (`ifGenerationMatch`); on s3://, where a plain DeleteObject is all every
  S3-compatible store takes, the caller has just read that version. Returns whether an
  object was deleted.

  Args:
    uri: The object, a gs:// or s3:// URI.
    token: Its version, as `create_if_absent` or `read_if_present` gave it.
  """
  bucket, name = _bucket_key(uri)
  if uri.startswith('s3://'):
    _boto3_s3().delete_object(Bucket=bucket, Key=name)
    return True
  from google.api_core import exceptions  # pylint: disable=g-import-not-at-top
  try:
    _gcs_bucket(bucket).delete_blob(name, if_generation_match=int(token))
  except (exceptions.NotFound, exceptions.PreconditionFailed):
    return False
  return True


def list_names(prefix: str) -> list:
  """The names of the objects directly under the gs:// or s3:// folder `prefix`.

  Args:
    prefix: The folder's URI, with or without a trailing `/`; one holding nothing lists
      nothing. Its scheme must have an Arrow client here (`client_for`).
  """
  import pyarrow.fs as pafs  # pylint: disable=g-import-not-at-top
  client = client_for(prefix)
  try:
    infos = client.get_file_info(pafs.FileSelector(_arrow_path(prefix).rstrip('/'),
                                                   allow_not_found=True))
  except FileNotFoundError:
    return []
  return [i.base_name for i in infos if i.type == pafs.FileType.File]


class NotARegularFile(OSError):
  """A local path that names a FIFO, a device, a socket or a dangling link: reading it
  could block forever or never end, so it is not read."""


def _open_local(path: str) -> BinaryIO:
  """A local file opened for reading, only if it is a regular file: opened without
  blocking (a FIFO with no writer would block `open` itself), checked, then read as
  usual."""
  fd, _ = _local_fd(path)
  try:
    return os.fdopen(fd, 'rb')
  except BaseException:
    os.close(fd)
    raise


def read_local(path: str, max_bytes: int) -> bytes:
  """A local file's bytes, read only if it is a regular file (as `_open_local` opens it),
  or its first `max_bytes + 1` where it is larger: what `files.read_bytes` reads through
  `open_object` and its size, without a file object (10 µs of the 30 that reading a
  53 KB image costs).

  Args:
    path: A local path (no scheme).
    max_bytes: The most bytes wanted; one more is read from a larger file, so that the
      caller sees it is larger.
  """
  fd, size = _local_fd(path)
  try:
    # the file's size, plus one in case it grew, so that no read allocates max_bytes
    limit = min(size, max_bytes) + 1
    pieces, got = [], 0
    while got < limit:  # to the end, or the limit, as a buffered read goes
      piece = os.read(fd, limit - got)
      if not piece:
        break
      pieces.append(piece)
      got += len(piece)
    return pieces[0] if len(pieces) == 1 else b''.join(pieces)
  finally:
    os.close(fd)


def _local_fd(path: str) -> Tuple[int, int]:
  """(descriptor, size) of a local path opened for reading, only if it is a regular file
  (NotARegularFile, IsADirectoryError otherwise), in blocking mode."""
  try:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
  except FileNotFoundError:
    if os.path.islink(path):
      raise NotARegularFile(errno.ENOENT, 'a symbolic link to '
                            f'{os.readlink(path)!r}, which does not exist', path) from None
    raise
  try:
    info = os.fstat(fd)
    mode = info.st_mode
    if stat.S_ISDIR(mode):
      raise IsADirectoryError(errno.EISDIR, 'Is a directory', path)
    if not stat.S_ISREG(mode):
      kind = ('a FIFO' if stat.S_ISFIFO(mode) else 'a character device' if stat.S_ISCHR(mode)
              else 'a block device' if stat.S_ISBLK(mode) else 'a socket' if stat.S_ISSOCK(mode)
              else 'not a regular file')
      raise NotARegularFile(errno.EINVAL, f'{kind}, not a regular file', path)
    os.set_blocking(fd, True)
    return fd, info.st_size
  except BaseException:
    os.close(fd)
    raise


def missing_bucket(uri: str) -> Optional[str]:
  """The bucket of a gs:// or s3:// `uri` when that bucket does not exist (or cannot be
  seen with these credentials), else None. Object stores answer a read of a missing
  object and of a missing bucket alike; this tells them apart for the error message.

  Args:
    uri: The URI a read found missing; another scheme than gs:// or s3://, or one this
      pyarrow has no client for, gives None.
  """
  if not is_object_store(uri):
    return None
  client = _client(uri[:2])
  if client is None:
    return None
  bucket = _arrow_path(uri).split('/', 1)[0]
  try:
    import pyarrow.fs as pafs  # pylint: disable=g-import-not-at-top
    info = client.get_file_info(bucket)
  except Exception:  # pylint: disable=broad-except
    return None
  return bucket if info.type == pafs.FileType.NotFound else None
