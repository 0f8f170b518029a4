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
from typing import Any, BinaryIO, Dict, Optional, Tuple

__all__ = ['is_object_store', 'is_remote', 'open_object', 'client_for', 'prepare_file_systems',
           'missing_bucket', 'gcs_anonymous', 'RETRY_SECONDS']

# How long Arrow's clients retry a transient failure (503, 429, a reset or refused
# connection) of one request before it reaches `files.read_bytes`, which retries it again
# with backoff and then fails the row.
RETRY_SECONDS = 10

_lock = threading.Lock()
_clients: Dict[Tuple[str, Tuple], Any] = {}


def _forget_clients() -> None:
  """In a process forked from this one (`local.py`'s workers): the parent's clients
  hold its connections and threads, none of which the child has; it makes its own."""
  global _lock
  _lock = threading.Lock()
  _clients.clear()


os.register_at_fork(after_in_child=_forget_clients)
_gcs_anonymous: Optional[bool] = None
_beam_primed = False


def is_remote(uri: str) -> bool:
  """Whether `uri` names a file on another machine (a scheme other than file://)."""
  scheme = uri.split('://', 1)[0] if '://' in uri else ''
  return bool(scheme) and scheme != 'file'


def is_object_store(uri: str) -> bool:
  """Whether `uri` is read by this module's own clients (gs:// or s3://)."""
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
  the command line as Beam arguments and warn about every word. Cheap to call again."""
  global _beam_primed
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
  None: another scheme, or one this pyarrow cannot serve."""
  return _client(uri[:2]) if is_object_store(uri) else None


def _arrow_path(uri: str) -> str:
  return uri.split('://', 1)[1]


def open_object(uri: str) -> BinaryIO:
  """A file object reading `uri` from its start: one request for gs:// and s3:// (Arrow's
  clients), Beam's `FileSystems.open` for every other scheme and for local paths."""
  if is_object_store(uri):
    client = _client(uri[:2])
    if client is not None:
      # compression=None: Arrow would otherwise decompress an object named *.gz or *.bz2.
      return client.open_input_stream(_arrow_path(uri), compression=None)
  if '://' not in uri or uri.startswith('file://'):
    return _open_local(uri[len('file://'):] if uri.startswith('file://') else uri)
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  return FileSystems.open(uri, compression_type='uncompressed')


class NotARegularFile(OSError):
  """A local path that names a FIFO, a device, a socket or a dangling link: reading it
  could block forever or never end, so it is not read."""


def _open_local(path: str) -> BinaryIO:
  """A local file opened for reading, only if it is a regular file: opened without
  blocking (a FIFO with no writer would block `open` itself), checked, then read as
  usual."""
  try:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
  except FileNotFoundError:
    if os.path.islink(path):
      raise NotARegularFile(errno.ENOENT, 'a symbolic link to '
                            f'{os.readlink(path)!r}, which does not exist', path) from None
    raise
  try:
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
      raise IsADirectoryError(errno.EISDIR, 'Is a directory', path)
    if not stat.S_ISREG(mode):
      kind = ('a FIFO' if stat.S_ISFIFO(mode) else 'a character device' if stat.S_ISCHR(mode)
              else 'a block device' if stat.S_ISBLK(mode) else 'a socket' if stat.S_ISSOCK(mode)
              else 'not a regular file')
      raise NotARegularFile(errno.EINVAL, f'{kind}, not a regular file', path)
    os.set_blocking(fd, True)
    return os.fdopen(fd, 'rb')
  except BaseException:
    os.close(fd)
    raise


def missing_bucket(uri: str) -> Optional[str]:
  """The bucket of a gs:// or s3:// `uri` when that bucket does not exist (or cannot be
  seen with these credentials), else None. Object stores answer a read of a missing
  object and of a missing bucket alike; this tells them apart for the error message."""
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
