"""Files on any Beam file system: image bytes read with retries and actionable errors,
and the few operations a run needs (open, create, join, list, remove).

Transient failures of remote storage (connection resets, timeouts, HTTP 429/5xx) are
retried with exponential backoff; permanent ones become a RowError whose reason and
message say what to do. Local paths are handled with the standard library, so a run
on local files never imports Beam (importing it takes seconds); other paths go
through Beam's `FileSystems`.

Length: every read and write of the package goes through here, with the one account of
what a file system error means (retried, a row's reason, a line naming the full disk),
which the reads and writes share.
"""
from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import time
from typing import BinaryIO, Callable, Iterable, List, Optional

from tfrecorder_component import extras
from tfrecorder_component.io import storage
from tfrecorder_component.errors import RowError
from tfrecorder_component.option_table import DEFAULT_MAX_BYTES

DEFAULT_ATTEMPTS = 4
_TRANSIENT_ERRNOS = {errno.EAGAIN, errno.ETIMEDOUT, errno.ECONNRESET, errno.ECONNABORTED,
                     errno.EPIPE}
_TRANSIENT_NAMES = {'ServiceUnavailable', 'TooManyRequests', 'InternalServerError',
                    'GatewayTimeout', 'DeadlineExceeded', 'BadGateway', 'RetryError',
                    'TransportError'}
_PERMISSION_NAMES = {'Forbidden', 'Unauthorized', 'PermissionDenied',
                     'DefaultCredentialsError', 'RefreshError', 'Unauthenticated'}
_MISSING_NAMES = {'NotFound'}
# Arrow's GCS (google-cloud-cpp) and S3 (AWS SDK) clients raise OSError with the status
# in the message: these parts of it say which kind of failure it was.
_ARROW_TRANSIENT = ('UNAVAILABLE', 'RESOURCE_EXHAUSTED', 'DEADLINE_EXCEEDED', 'ABORTED',
                    'Retry policy exhausted', 'NETWORK_CONNECTION', 'SLOW_DOWN',
                    'SERVICE_UNAVAILABLE', 'THROTTLING', 'REQUEST_TIMEOUT',
                    'INTERNAL_FAILURE', 'Connection refused', 'Couldn\'t connect')
_ARROW_PERMISSION = ('PERMISSION_DENIED', 'UNAUTHENTICATED', 'ACCESS_DENIED',
                     'AccessDenied', 'INVALID_ACCESS_KEY_ID', 'SIGNATURE_DOES_NOT_MATCH')


def _causes(e: BaseException) -> Iterable[BaseException]:
  """The exception, what Beam wrapped in it, and its chained causes."""
  seen = set()
  stack = [e]
  while stack:
    current = stack.pop()
    if current is None or id(current) in seen:
      continue
    seen.add(id(current))
    yield current
    details = getattr(current, 'exception_details', None)  # Beam's BeamIOError
    if isinstance(details, dict):
      stack.extend(v for v in details.values()
                   if isinstance(v, BaseException))
    stack.extend([current.__cause__, current.__context__])


def classify(e: BaseException) -> str:
  """'missing', 'not_a_file', 'permission_denied', 'transient' or 'unreadable'.

  Args:
    e: The exception a file system raised for a read. Its chained causes and what Beam
      wrapped in it are looked at first (by type, errno or class name), then its text,
      where Arrow's clients put the status.
  """
  for c in _causes(e):
    name = type(c).__name__
    if isinstance(c, IsADirectoryError):
      return 'not_a_file'
    if isinstance(c, FileNotFoundError) or name in _MISSING_NAMES:
      return 'missing'
    if isinstance(c, PermissionError) or name in _PERMISSION_NAMES:
      return 'permission_denied'
    if isinstance(c, (ConnectionError, TimeoutError)) or name in _TRANSIENT_NAMES or (
        isinstance(c, OSError) and c.errno in _TRANSIENT_ERRNOS):
      return 'transient'
  text = str(e)
  if any(t in text for t in _ARROW_PERMISSION):
    return 'permission_denied'
  if any(t in text for t in _ARROW_TRANSIENT):
    return 'transient'
  if 'No such file' in text or 'Not found' in text or 'not found' in text:
    return 'missing'
  if 'Is a directory' in text:
    return 'not_a_file'
  return 'unreadable'


_ADVICE = {
    'missing': 'the file does not exist; fix the URI or remove the row',
    'not_a_file': 'the URI names a directory, not an image file',
    'permission_denied': ('permission denied; grant the identity that runs the pipeline '
                          '(for gs://, the workers\' service account) read access, e.g. '
                          'roles/storage.objectViewer, or run `gcloud auth '
                          'application-default login` locally'),
    'unreadable': 'the file could not be read',
}




def file_systems(uri: str = ''):
  """Beam's `FileSystems`, imported when a path that is not local (`uri`) needs it; a
  MissingExtra names the extra its scheme needs where that is not installed.

  Args:
    uri: The path or URI it is wanted for, whose scheme's extra is checked. Default '':
      no check (the caller has checked, or needs no extra).
  """
  if uri:
    extras.require_for_uri(uri)
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  return FileSystems


def is_local(path: str) -> bool:
  """Whether `path` is a local path (no scheme), handled without Beam.

  Args:
    path: A path or URI; one holding `://` (a file:// URI too) is not local.
  """
  return '://' not in path


def absolute(path: str) -> str:
  """`path` made absolute if local (as this process's working folder resolves it), for
  processes that do not share that folder: Beam's workers, Dataflow's. URIs as given.

  Args:
    path: A local path, relative or absolute, or a URI.
  """
  return os.path.abspath(path) if is_local(path) else path


def join(path: str, *parts: str) -> str:
  """`path` joined with `parts`, as Beam's `FileSystems.join` joins them.

  Args:
    path: The folder: a local path (joined with `os.path.join`) or a URI, whose scheme
      picks the file system.
    parts: The names to append, in order.
  """
  return os.path.join(path, *parts) if is_local(path) else file_systems(path).join(path, *parts)


def open_file(path: str) -> BinaryIO:
  """`path` opened for reading bytes, as they are (no decompression).

  Args:
    path: A local path or a URI on any Beam file system.
  """
  if is_local(path):
    return open(path, 'rb')
  return file_systems(path).open(path, compression_type='uncompressed')


def create_file(path: str) -> BinaryIO:
  """`path` created (with its parent folders) for writing bytes, as they are.

  Args:
    path: A local path, a gs:// or s3:// URI (written by this process's Arrow client
      where it has one, else by Beam) or a URI on another Beam file system. A file
      already there is replaced.
  """
  if is_local(path):
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    return open(path, 'wb')
  if storage.is_object_store(path):  # one Arrow client a process, the upload on a thread
    writer = storage.create_object(path)
    if writer is not None:
      return writer
  storage.prepare_file_systems(path)
  return file_systems(path).create(path, mime_type='application/octet-stream',
                               compression_type='uncompressed')


def rename(source: str, target: str) -> None:
  """Renames a file (local: at once; gs:// and s3://: copied by the store, then the
  source deleted; elsewhere Beam's `FileSystems.rename`).

  Args:
    source: The file to rename: a local path or a URI, whose scheme picks how.
    target: Its new path, on the same file system as `source`; a local file already
      there is replaced.
  """
  if is_local(source):
    os.replace(source, target)
  elif storage.client_for(source) is not None:
    storage.move_object(source, target)
  else:
    storage.prepare_file_systems(source)
    file_systems(source).rename([source], [target])


def exists(path: str) -> bool:
  """Whether a file or folder exists at `path` (a URI: as Beam's `FileSystems.exists`
  answers).

  Args:
    path: A local path or a URI.
  """
  return os.path.exists(path) if is_local(path) else file_systems(path).exists(path)


def size(path: str) -> int:
  """The size of the file at `path`, in bytes.

  Args:
    path: A local path, or a URI naming one file on any Beam file system.
  """
  if is_local(path):
    return os.path.getsize(path)
  return file_systems(path).match([path])[0].metadata_list[0].size_in_bytes


def has_glob(pattern: str) -> bool:
  """Whether `pattern` holds a glob character: `*`, `?` or `[`.

  Args:
    pattern: A path or URI, as given to `match`.
  """
  return any(c in pattern for c in '*?[')


def match(pattern: str) -> List[str]:
  """The paths `pattern` matches, as Beam's `FileSystems.match` lists them; a local path,
  or the files directly inside a local folder (`folder/*`), without Beam.

  Args:
    pattern: A path or glob on any file system: a local one without a glob character
      is checked for existence, a local `folder/*` listed (files only), everything
      else matched by Beam. What matches nothing, a local folder that is not there and
      a pattern Beam fails to match give []; a local folder that cannot be read raises
      its OSError.
  """
  if is_local(pattern) and not has_glob(pattern):
    return [pattern] if os.path.exists(pattern) else []
  folder, name = os.path.split(pattern)
  if is_local(pattern) and name == '*' and not has_glob(folder):
    try:
      names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
      return []
    return [os.path.join(folder, n) for n in names if os.path.isfile(os.path.join(folder, n))]
  storage.prepare_file_systems(pattern)
  from apache_beam.io.filesystem import BeamIOError  # pylint: disable=g-import-not-at-top
  try:
    return [m.path for m in file_systems(pattern).match([pattern])[0].metadata_list]
  except BeamIOError:
    return []


def list_objects(prefix: str) -> List[str]:
  """The paths, relative to `prefix`, of the objects under a gs:// or s3:// prefix (at
  any depth), sorted: one listing.

  Args:
    prefix: The folder's URI, with or without a trailing `/`.
  """
  prefix = prefix.rstrip('/')
  return sorted(p[len(prefix) + 1:] for p in match(prefix + '/**')
                if p.startswith(prefix + '/'))


def remove(path: str) -> None:
  """Removes a file or a whole folder (or gs:// or s3:// object or prefix), if it exists.
  An object store has no folders: a prefix is removed object by object, as listed.

  Args:
    path: A local path, or a URI: the object of that name and every object under
      `path/` are deleted.
  """
  if '://' in path:
    storage.prepare_file_systems(path)
    found = match(path) + [path.rstrip('/') + '/' + p for p in list_objects(path)]
    if found:
      file_systems(path).delete(sorted(set(found)))
  elif os.path.lexists(path):
    shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def write_text(path: str, text: str) -> None:
  """Writes `text` as UTF-8 to `path` on any Beam file system.

  Args:
    path: A local path or a URI, created as `create_file` creates it (parent folders
      made, a file already there replaced).
    text: The whole content of the file.
  """
  with create_file(path) as f:
    f.write(text.encode('utf-8'))


def _one_line(e: BaseException) -> str:
  """An exception's text on one line (Arrow's messages span several)."""
  return ' '.join(str(e).split())


def _read_size(f, max_bytes: int) -> int:
  """How much to ask of `f` to read it whole, or past `max_bytes` if it is larger: a
  local file's size (plus one, in case it grew), so that no read allocates `max_bytes`
  (64 MB by default: a third of the time of reading a 35 KB image)."""
  try:
    size = os.fstat(f.fileno()).st_size
  except (AttributeError, OSError, ValueError):  # a stream (Arrow, Beam) with no descriptor
    return max_bytes + 1
  return min(size, max_bytes) + 1


def read_bytes(uri: str, max_bytes: int = DEFAULT_MAX_BYTES, attempts: int = DEFAULT_ATTEMPTS,
               backoff_seconds: float = 0.5,
               sleep: Callable[[float], None] = time.sleep) -> bytes:
  """Reads a whole file, retrying transient failures; raises RowError otherwise.

  Files larger than `max_bytes` are refused (`too_large`) after reading at most
  `max_bytes + 1` bytes.

  Args:
    uri: A local path, a file:// URI (either must name a regular file), a gs:// or s3://
      URI (read by this process's Arrow client) or a URI on another Beam file system.
    max_bytes: The largest file accepted, in bytes; default 64 MiB (DEFAULT_MAX_BYTES).
    attempts: Tries in all while the failure is transient (a reset or timeout, HTTP 429
      or 5xx); after the last, the row fails as `unreadable`. At least 1.
    backoff_seconds: The wait after the first failed try; it doubles after each later
      one.
    sleep: Called with the seconds to wait between tries; tests pass a stand-in.
  """
  for attempt in range(1, attempts + 1):
    try:
      if '://' in uri:
        with storage.open_object(uri) as f:
          data = f.read(_read_size(f, max_bytes))
      else:
        data = storage.read_local(uri, max_bytes)
    except Exception as e:  # File systems raise their own types; classify() sorts them.
      kind = classify(e)
      if kind == 'transient' and attempt < attempts:
        delay = backoff_seconds * 2 ** (attempt - 1)
        logging.warning('Transient error reading %s (attempt %d of %d), retrying in %.1fs: %s',
                        uri, attempt, attempts, delay, e)
        sleep(delay)
        continue
      if kind == 'transient':
        raise RowError('unreadable', f'still failing after {attempts} attempts: '
                       f'{type(e).__name__}: {_one_line(e)}') from None
      if isinstance(e, storage.NotARegularFile):  # a FIFO, a device, a dangling link
        raise RowError('missing' if e.errno == errno.ENOENT else 'not_a_file',
                       f'{e.strerror}; only regular files are read') from None
      bucket = storage.missing_bucket(uri) if kind == 'missing' else None
      if bucket:
        raise RowError('missing', f'the bucket {bucket!r} does not exist, or these '
                       'credentials cannot see it; fix the URI or the bucket name') from None
      raise RowError(kind, f'{_ADVICE[kind]} ({type(e).__name__}: {_one_line(e)})') from None
    if len(data) > max_bytes:
      raise RowError('too_large', f'the file is larger than max_bytes={max_bytes}; raise '
                     f'max_bytes if it is genuine')
    return data
  raise AssertionError('unreachable')


def describe_os_error(error: BaseException, output_dir: Optional[str] = None
                      ) -> Optional[str]:
  """One line for a file system error anywhere in `error` (a worker's error reaches the
  command as text): what happened, and the path, or the output folder when the error
  names none. None if there is none.

  Args:
    error: The exception caught. An OSError among it and its causes with a named errno
      (no space, quota, permission, read-only file system, I/O) is used, else the first
      `[Errno N] ...: 'path'` in its text.
    output_dir: The run's output folder, named when the error names no path; None: the
      line then names no place.
  """
  for cause in _causes(error):
    if isinstance(cause, OSError) and cause.errno in _NAMED_ERRNOS:
      return _os_line(cause.errno, cause.filename, output_dir)
  found = re.search(r'\[Errno (\d+)\] [^:\n\]]+(?:: \'([^\'\n]+)\')?', str(error))
  if found and int(found.group(1)) in _NAMED_ERRNOS:
    return _os_line(int(found.group(1)), found.group(2), output_dir)
  return None


_NAMED_ERRNOS = {errno.ENOSPC: 'no space left on device', errno.EDQUOT: 'disk quota exceeded',
                 errno.EACCES: 'permission denied', errno.EPERM: 'operation not permitted',
                 errno.EROFS: 'read-only file system', errno.EIO: 'input/output error'}


def _os_line(number: int, path: Optional[str], output_dir: Optional[str]) -> str:
  what = _NAMED_ERRNOS[number]
  if path:
    return f'{what}: {path}'
  if number in (errno.ENOSPC, errno.EDQUOT):
    full = _full_folder(output_dir)
    if full:
      return full
  return f'{what} while writing {output_dir}' if output_dir else what


# Free bytes below which a folder's file system counts as the one that filled up.
_NEARLY_FULL = 16 * 1024 * 1024


def _full_folder(output_dir: Optional[str]) -> Optional[str]:
  """For a full disk named by no path (a temporary file's write): the line naming the
  folder whose file system is (nearly) full, the temporary folder (TMPDIR) or the
  output folder, where one of them is and the other is not; None where it cannot be
  told."""
  import tempfile  # pylint: disable=g-import-not-at-top

  def free(folder: Optional[str]) -> Optional[int]:
    while folder and not os.path.isdir(folder):
      folder = os.path.dirname(folder.rstrip('/')) if folder != '/' else None
    try:
      return shutil.disk_usage(folder).free if folder else None
    except OSError:
      return None

  temporary = tempfile.gettempdir()
  temporary_free = free(temporary)
  output_free = free(output_dir) if output_dir and is_local(output_dir) else None
  if temporary_free is not None and temporary_free < _NEARLY_FULL and (
      output_free is None or output_free >= _NEARLY_FULL):
    return (f'no space left in the temporary folder {temporary}, where a run keeps its '
            'scratch files: free some, or point TMPDIR at a folder with room')
  if output_free is not None and output_free < _NEARLY_FULL:
    return f'no space left on device while writing {output_dir}'
  return None
