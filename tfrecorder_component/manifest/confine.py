"""Reads confined to a run's roots (the `confine_to` option), as tarfile's `filter='data'`
(PEP 706) confines an archive's members to the folder it is extracted into.

With roots given, every file a manifest leads the run to (images, masks, YOLO's image
lists, label files, `path:` roots and split folders, Darknet's names file, Open Images'
class descriptions, the files an image folder or a dataset folder holds) must lie inside
one of them, symbolic links followed; anything else fails its row as `outside_root`
(`OUTSIDE_ROOT`) without being opened, and the message is the same whether the outside
path exists or not.

A path is checked in two steps, so that nothing outside the roots is touched:
- its text (`Confinement.outside`, no file system call): an absolute path, a `..` that
  climbs out, a `file://` URI, another bucket or another scheme leaves the roots. An
  object store's key holding a `.` or `..` segment is refused too: stores and clients
  differ on whether it climbs.
- for a local path whose text is inside, its links (`Confinement.resolve`), one
  component at a time: each link's target is checked before anything is looked up
  through it, so the walk stops at the first step out of the roots. Only what lies
  inside a root (or on the way to one) is ever looked at.

A root is a local folder, `gs://bucket[/prefix]` or `s3://bucket[/prefix]` (any other
Beam file system's scheme too); `source` (`SOURCE`) stands for the source's own folder
and is replaced by it (`with_source`) before anything is read.
"""
from __future__ import annotations

import os
import posixpath
import re
import stat
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from tfrecorder_component.errors import RowError, UsageError

# The reason of a row whose file lies outside the run's roots.
OUTSIDE_ROOT = 'outside_root'
# The root that stands for the source's own folder (a folder source itself, a file
# source's folder).
SOURCE = 'source'
# Symbolic links followed while one path is resolved (Linux's own limit is 40).
MAX_LINKS = 40

_SCHEME = re.compile(r'^([a-zA-Z][a-zA-Z0-9+.-]*)://')
_WEB = ('http', 'https', 'ftp')


def message(what: str = 'image') -> str:
  """The message of an `outside_root` row: the same for every path, existing or not,
  so that it says nothing of what lies outside the roots.

  Args:
    what: what the path is of, in words ('image', 'mask', 'image list', ...).
  """
  return (f'the {what} lies outside the folders this run may read (confine_to): it was '
          'not read; name files inside the dataset, by paths relative to it')


def outside_error(what: str = 'image', **where) -> RowError:
  """The `outside_root` RowError of a path (see `message`).

  Args:
    what: what the path is of, in words.
    **where: `RowError`'s `source`, `row`, `uri`.
  """
  return RowError(OUTSIDE_ROOT, message(what), **where)


def parse_roots(value: Union[None, str, Iterable[str]]) -> Tuple[str, ...]:
  """The `confine_to` option as a tuple of roots, each checked and normalised: a local
  folder absolute (links left as they are), a URI as `scheme://bucket[/prefix]` with no
  trailing `/`; `source` kept. Raises UsageError for a root that cannot be one.

  Args:
    value: None or '' (no confinement: ()), a root, comma-separated roots, or a list of
      those (the command's `--confine-to`, repeatable).
  """
  if value is None:
    return ()
  entries = [value] if isinstance(value, str) else list(value)
  out: List[str] = []
  for entry in entries:
    if not isinstance(entry, str):
      raise UsageError(f'confine_to takes folders (a list of them, or their paths '
                       f'comma-separated), got {entry!r}')
    for part in entry.split(','):
      part = part.strip()
      if part:
        root = _root(part)
        if root not in out:
          out.append(root)
  return tuple(out)


def _root(text: str) -> str:
  if text == SOURCE:
    return text
  if text.startswith('file://'):
    text = text[len('file://'):]
  scheme = _SCHEME.match(text)
  if scheme is None:
    return posixpath.normpath(os.path.abspath(text))
  name = scheme.group(1).lower()
  rest = text[scheme.end():].strip('/')
  bucket = rest.split('/', 1)[0]
  if name in _WEB or not bucket:
    raise UsageError(f'confine_to {text!r}: a root is a local folder, gs://bucket[/prefix] '
                     f'or s3://bucket[/prefix] (or {SOURCE!r}: the source\'s own folder)')
  if any(part in ('.', '..') for part in rest.split('/')):
    raise UsageError(f'confine_to {text!r}: a root on object storage may not hold `.` or '
                     '`..`; name the prefix itself')
  return f'{name}://{rest}'


def source_folder(source: str) -> str:
  """The folder `source` stands for as the `source` root: a folder itself, a file's
  folder, a glob's folder before its first wildcard.

  Args:
    source: the run's source: a local path or a URI (a manifest, a folder or a glob).
  """
  from tfrecorder_component.io import files  # pylint: disable=g-import-not-at-top
  if files.has_glob(source):
    head = re.split(r'[*?\[]', source, maxsplit=1)[0]
    return head.rsplit('/', 1)[0] or '/' if '/' in head else '.'
  if files.is_local(source) or source.startswith('file://'):
    path = source[len('file://'):] if source.startswith('file://') else source
    return path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
  try:  # an object of that very name: a manifest, whose folder is the root
    is_object = source.rstrip('/') in files.match(source.rstrip('/'))
  except Exception:  # pylint: disable=broad-except  (a prefix Beam cannot match)
    is_object = False
  return source.rstrip('/').rsplit('/', 1)[0] if is_object else source.rstrip('/')


def with_source(roots: Sequence[str], sources: Sequence[str]) -> Tuple[str, ...]:
  """`roots` with `source` replaced by the folders of `sources` (`source_folder`).

  Raises UsageError where `source` is given and there is no source path (a DataFrame).

  Args:
    roots: the run's roots (`parse_roots`).
    sources: the run's source paths (the component: each manifest artifact's, or its
      input_base).
  """
  if SOURCE not in roots:
    return tuple(roots)
  if not sources:
    raise UsageError(f'confine_to={SOURCE!r} names the source\'s folder, but this source '
                     'is no path (a DataFrame): name the folders its images are in')
  out: List[str] = []
  for root in roots:
    for each in ([source_folder(s) for s in sources] if root == SOURCE else [root]):
      each = _root(each)
      if each not in out:
        out.append(each)
  return tuple(out)


def _inside(path: str, root: str) -> bool:
  return path == root or path.startswith(root.rstrip('/') + '/')


class Confinement:
  """The roots of a run, and the checks of paths against them (see the module).

  Args:
    roots: the roots, as `parse_roots` gives them (`source` already replaced).
  """

  def __init__(self, roots: Sequence[str]):
    self.roots = parse_roots(roots)
    if SOURCE in self.roots:
      raise UsageError(f'confine_to={SOURCE!r} is replaced by the source\'s folder before '
                       'a run reads anything (confine.with_source)')
    given = [r for r in self.roots if not _SCHEME.match(r)]
    real = [posixpath.normpath(os.path.realpath(r)) for r in given]
    # Local roots as given and with their links resolved: a path's text may use either.
    self._local = tuple(dict.fromkeys(given + real))
    self._real = tuple(dict.fromkeys(real))
    self._remote = tuple(_split_uri(r) for r in self.roots if _SCHEME.match(r))

  def outside(self, path: str) -> bool:
    """Whether the path's text alone leaves every root; no file system call.

    Args:
      path: a local path (relative ones against the working folder), a `file://` URI
        or another URI, as the run would open it.
    """
    if path.startswith('file://') and not path.startswith('file:///'):
      return True  # file://host/...: another machine's file
    local = _local_path(path)
    if local is None:
      scheme, bucket, key = _split_uri(path)
      if any(p in ('.', '..') for p in key.split('/')):
        return True
      return not any(scheme == s and bucket == b and (not p or _inside(key, p))
                     for s, b, p in self._remote)
    normal = posixpath.normpath(local)
    return not any(_inside(normal, root) for root in self._local)

  def resolve(self, path: str) -> Optional[str]:
    """The path to open, or None when it leads outside the roots: the text first
    (`outside`), then, for a local path, its symbolic links one component at a time,
    the target of each checked before anything is looked up through it.

    A path that runs into something missing inside a root is returned as it is, for
    the read to fail as `missing`.

    Args:
      path: a local path, a `file://` URI or another URI, as the run would open it; a
        URI is returned as it is when its text is inside.
    """
    if self.outside(path):
      return None
    local = _local_path(path)
    if local is None:
      return path
    # Resolved afresh every time (a few lstat calls, against an image's decode): a folder
    # made a link since it was last looked at is seen.
    return self._walk('/', local.split('/'))

  def check(self, path: str, what: str = 'image') -> str:
    """`resolve(path)`, raising the `outside_root` RowError where it is None.

    Args:
      path: the path or URI to open.
      what: what it is of, in words, for the message.
    """
    resolved = self.resolve(path)
    if resolved is None:
      raise outside_error(what)
    return resolved

  def _may_look(self, path: str) -> bool:
    """Whether a link-free absolute path lies inside a root, or on the way to one."""
    return any(_inside(path, root) or _inside(root, path) for root in self._local)

  def _walk(self, resolved: str, parts: Sequence[str]) -> Optional[str]:
    """`parts` resolved from the link-free folder `resolved`, as the kernel resolves a
    path, stopping (None) at the first component outside the roots."""
    pending = list(reversed(parts))
    links = 0
    while pending:
      name = pending.pop()
      if name in ('', '.'):
        continue
      if name == '..':
        resolved = posixpath.dirname(resolved)
        continue
      candidate = resolved.rstrip('/') + '/' + name
      if not self._may_look(candidate):
        return None
      try:
        mode = os.lstat(candidate).st_mode
      except (OSError, ValueError):  # missing, no folder, a NUL: nothing further to resolve
        final = posixpath.normpath('/'.join([candidate, *reversed(pending)]))
        return final if any(_inside(final, r) for r in self._real) else None
      if stat.S_ISLNK(mode):
        links += 1
        if links > MAX_LINKS:
          return None
        try:
          target = os.readlink(candidate)
        except (OSError, ValueError):
          return None
        if target.startswith('/'):
          resolved = '/'
        pending.extend(reversed(target.split('/')))
        continue
      resolved = candidate
    return resolved if any(_inside(resolved, r) for r in self._real) else None


def _local_path(path: str) -> Optional[str]:
  """An absolute local path for a local path or `file://` URI; None for another URI."""
  if path.startswith('file://'):
    path = path[len('file://'):]
  elif _SCHEME.match(path) or '://' in path:
    return None
  return path if path.startswith('/') else os.path.join(os.getcwd(), path)


def _split_uri(uri: str) -> Tuple[str, str, str]:
  """(scheme in lower case, bucket, key) of a URI."""
  found = _SCHEME.match(uri)
  if found is None:  # '://' after a character no scheme holds
    return '', '', uri
  rest = uri[found.end():]
  bucket, _, key = rest.partition('/')
  return found.group(1).lower(), bucket, key.rstrip('/')


def confinement(roots: Tuple[str, ...]) -> Optional[Confinement]:
  """The Confinement of `roots` (their links resolved now), or None for () (no
  confinement).

  Args:
    roots: the run's roots, `source` replaced.
  """
  return Confinement(roots) if roots else None
