"""`convert()`'s output folder: locked, written inside, finished by `_SUCCESS`.

A run writes into the folder the user named, whatever it is: new, existing and empty, a
mount point, a symbolic link, a folder whose parent the user cannot write. Locally:

- The folder is created with the user's umask (a prepared one keeps its mode and
  group), then locked (`flock` on the folder) for the whole run: a second run into it
  is refused in one line.
- The folder must be new or empty. `overwrite` replaces an earlier output of this tool
  (a folder whose `examples.json` or report's `summary.json` this tool wrote: a finished
  run's or a failed one's) and nothing else: only the names a run writes
  (`written_by_a_run`) are replaced; anything else in
  the folder (a README, notes, a notebook) is kept, and a folder that is no output of
  this tool is refused, naming what it holds. The output may not be, hold or lie inside
  an input (`refuse_overlap`), which is checked before anything is read.
- The run writes into `<output>/.tfrecorder-partial-<id>/`. When it succeeded, the old
  `_SUCCESS` is removed, what the run replaces (with `overwrite`, the old output) is
  moved into `.tfrecorder-old-<id>/`, the new entries are moved in, and `_SUCCESS` is
  written last: an output is finished when, and only when, `_SUCCESS` is there. What
  appeared in the folder during the run, and what the run does not replace, is never
  touched.
- A run killed at any point (SIGKILL, the OOM killer) leaves its staging folder; the
  next run into the folder, holding the lock, removes it and, if the killed run had
  started moving its files in (`.tfrecorder-commit` in the staging folder, the plan of
  the move), undoes that move first: a run that never said it finished leaves the
  folder as it was, and the same command can simply run again.

On object storage (gs://, s3://), where nothing can be renamed at once, a run first
takes the prefix's lock object (`remote_lock`: created with the store's create-only
precondition; a second run is refused before it deletes or writes anything, naming the
run that holds it and the command that removes a dead run's lock), and removes it
however it ends. A run into a new, empty or unfinished folder (no `_SUCCESS`, only this
layout's names) then writes in place; an `overwrite` of a finished output writes under
`<output>/.tfrecorder-partial-<id>/` and, once complete, removes the old output's objects
(those under the names a run writes; others stay), copies its own into place and writes
`_SUCCESS` last, so a failed run leaves the old output as it was. Before each step that
deletes or publishes, the run checks the lock is still its own; its `_SUCCESS` (empty,
as on local disk) is written create-only with the run's id in its metadata
(`tfrecorder-run`), read back before the run reports success.

A failed run (the error policy) keeps its report and no record: at `<output>/report`
when the folder held no output before, else at `<output>.failed/report` (an old output
stays as it was) or, where the parent cannot be written, `<output>/report.failed`.

Length: the output folder's whole life (lock, staging, refusal of overlaps, the swap,
clean-up after a killed run), on local disk and object storage alike.
"""
from __future__ import annotations

import json
import logging
import os
import posixpath
import shutil
import uuid
from typing import Iterable, List, Optional, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.output import interrupt
from tfrecorder_component.output import remote_lock
from tfrecorder_component.record import labels
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.io import storage
from tfrecorder_component.errors import UsageError
from tfrecorder_component.output.layouts import LAYOUTS
from tfrecorder_component.output.examples_json import INDEX_FILE

try:
  import fcntl
except ImportError:  # not POSIX: runs are not locked
  fcntl = None

PARTIAL = '.tfrecorder-partial-'  # a run's staging folder inside the output
OLD = '.tfrecorder-old-'  # what a finishing run replaces, until it is removed
COMMIT = '.tfrecorder-commit'  # in a staging folder: complete, being moved into place
FAILED_SUFFIX = '.failed'
# The custom metadata of a remote output's `_SUCCESS` naming the run that published it.
RUN_METADATA = 'tfrecorder-run'
FAILED_REPORT_INSIDE = 'report.failed'
# The names a run writes at the top of its output folder, besides `Split-<name>`: the
# only ones `overwrite` replaces.
_RUN_NAMES = frozenset((*labels.LABEL_FILES, output_paths.REPORT_DIR,
                        FAILED_REPORT_INSIDE, output_paths.SUCCESS_MARKER, INDEX_FILE, *LAYOUTS))
_WORK = output_paths.work_dir(output_paths.REPORT_DIR) + '/'  # a run's scratch files, under its report
_NAMED = 5  # entries a message names before "and N more"


def written_by_a_run(name: str) -> bool:
  """Whether `name`, at the top of an output folder, is one a run writes: a split, the
  label files, the index, a layout's folder, the report (or a failed run's, kept inside
  an old output), `_SUCCESS`.

  Args:
    name: An entry's name directly under the output folder (or the first part of an
      object's path under an output prefix), not a path.
  """
  return name.startswith(output_paths.SPLIT_PREFIX) or name in _RUN_NAMES


# The keys that tell this tool's JSON files from anybody's of the same name.
_INDEX_KEYS = ('split_names', 'records_per_split', 'layouts')
_SUMMARY_KEYS = ('rows_read', 'rows_failed', 'records_per_split', 'errors_per_reason')


def _ours(read, path: str, keys: Tuple[str, ...]) -> bool:
  """Whether the file at `path` (relative; `read` gives its bytes, or None) is a JSON
  object holding every one of `keys`."""
  data = read(path)
  if data is None or len(data) > 2**24:
    return False
  try:
    value = json.loads(data)
  except ValueError:
    return False
  return isinstance(value, dict) and all(k in value for k in keys)


def _earlier_output(names: Iterable[str], read) -> bool:
  """Whether a folder whose top entries are `names` is an output of this tool: its
  `examples.json`, its report's `summary.json` (a failed run's too, also one kept
  inside an old output) read as this tool writes them; a `_SUCCESS` or a file named
  like ours is not enough. `read(relative path)`: the file's bytes, or None."""
  names = set(names)
  return (INDEX_FILE in names and _ours(read, INDEX_FILE, _INDEX_KEYS)) or any(
      folder in names and _ours(read, posixpath.join(folder, output_paths.SUMMARY_FILE),
                                _SUMMARY_KEYS)
      for folder in (output_paths.REPORT_DIR, FAILED_REPORT_INSIDE))


def earlier_report(folder: str) -> bool:
  """Whether local folder `folder` is a report of this tool's (`validate --report-dir`),
  which a new report may replace: it holds only a report's names
  (`output_paths.REPORT_NAMES`), and its summary.json reads as this tool writes it (as
  for an earlier output, a file named like ours is not enough).

  Args:
    folder: An existing local folder.
  """
  return (set(os.listdir(folder)) <= output_paths.REPORT_NAMES
          and _ours(_read_local(folder), output_paths.SUMMARY_FILE, _SUMMARY_KEYS))


def _read_local(folder: str):
  def read(path: str) -> Optional[bytes]:
    full = os.path.join(folder, path)
    if not os.path.isfile(full):
      return None
    with open(full, 'rb') as f:
      return f.read(2**24 + 1)
  return read


def _read_remote(folder: str, listed: Iterable[str]):
  listed = set(listed)

  def read(path: str) -> Optional[bytes]:
    if path not in listed:
      return None
    with files.open_file(posixpath.join(folder, path)) as f:
      return f.read(2**24 + 1)
  return read


def _listing(names: List[str]) -> str:
  shown = ', '.join(names[:_NAMED])
  return shown + (f' and {len(names) - _NAMED} more' if len(names) > _NAMED else '')


def _comparable(path: str) -> str:
  """`path` as `refuse_overlap` compares it: local paths absolute with links resolved,
  URIs without a trailing slash."""
  if '://' in path:
    return path.rstrip('/')
  return os.path.realpath(os.path.abspath(path))


def _within(path: str, folder: str) -> bool:
  return path.startswith(folder.rstrip('/') + '/')


def refuse_overlap(output_dir: str, inputs: Iterable[Tuple[str, Optional[str]]]) -> None:
  """Refuses (UsageError, one line) an output folder that is, holds or lies inside one of
  `inputs` ((what, path): a manifest, an image folder or root, a label map, a class map):
  a run there would put its files among the user's, a later run read them as input, and
  an overwrite replace them. Local paths are compared with links resolved; URIs as
  written. Checked before anything is read or created.

  Args:
    output_dir: The output folder, a local path or a URI (gs://, s3://).
    inputs: (what, path) pairs: `what` names the input in the message ('manifest',
      'image folder', ...); `path` is a local path or a URI, and a None or empty one is
      skipped.

  Raises:
    UsageError: The output folder is, holds or lies inside one of `inputs`.
  """
  out = _comparable(output_dir)
  for what, path in inputs:
    if not path:
      continue
    where = _comparable(path)
    if where == out:
      relation = 'is'
    elif _within(where, out):
      relation = 'holds'
    elif _within(out, where):
      relation = 'lies inside'
    else:
      continue
    shown = path if '://' in path else os.path.abspath(path)
    raise UsageError(f'the output folder {output_dir} {relation} the {what} {shown}: '
                     'convert into a folder outside the inputs (nothing was written)')


def local_folder(path: str) -> str:
  """`path` made absolute if local (and created), else without a trailing slash.

  Args:
    path: A local folder (relative to the working directory, or absolute), created with
      its parents if missing; or a URI (gs://, s3://), which is not touched.
  """
  if '://' in path:
    return path.rstrip('/')
  path = os.path.abspath(path)
  os.makedirs(path, exist_ok=True)
  return path


def output_folder(output_dir: str) -> str:
  """`output_dir`, absolute if local, after checking it is not a file.

  Args:
    output_dir: The output folder as the user named it: a local path (relative or
      absolute; it need not exist yet) or a URI, whose trailing slash is dropped.

  Raises:
    UsageError: A local `output_dir` that is an existing file.
  """
  if '://' in output_dir:
    return output_dir.rstrip('/')
  output_dir = os.path.abspath(output_dir)
  if os.path.exists(output_dir) and not os.path.isdir(output_dir):
    raise UsageError(f'{output_dir} is a file; the output must be a folder')
  return output_dir


def _staging(name: str) -> bool:
  return name.startswith((PARTIAL, OLD))


def _not_empty(output_dir: str, foreign: List[str], overwrite: bool,
               earlier: bool) -> UsageError:
  """The refusal of a folder that holds something: an earlier output (which `overwrite`
  replaces, keeping any file of the user's beside it), or files this tool did not write
  (which nothing here replaces)."""
  if earlier:
    kept = (f' and files this tool did not write ({_listing(foreign)}), which stay'
            if foreign else '')
    return UsageError(f'{output_dir} holds an earlier output{kept}: pass overwrite=True '
                      '(--overwrite) to replace it, or convert into a new or empty folder')
  if overwrite:
    return UsageError(f'{output_dir} is not an output of this tool (it holds '
                      f'{_listing(foreign)}): overwrite replaces only an earlier output, '
                      'so nothing there was changed; convert into a new or empty folder')
  return UsageError(f'{output_dir} is not empty (it holds {_listing(foreign)}): convert '
                    'into a new or empty folder')


class _Lock:
  """An exclusive `flock` on a local folder, held until `release`; a file system that
  has no flock (some network file systems) runs unlocked, with a warning."""

  def __init__(self, folder: str):
    if fcntl is None:
      self.fd = None
      return
    self.fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
      fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      os.close(self.fd)
      raise UsageError(f'{folder} is in use by another run: wait for it to end, or convert '
                       'into another folder') from None
    except OSError as e:
      logging.warning('Cannot lock %s (%s): a second run into it would not be detected.',
                      folder, e)

  def release(self) -> None:
    if self.fd is not None:
      os.close(self.fd)  # closing the only descriptor releases the flock
      self.fd = None


def _roll_forward(output_dir: str, partial: str, old: str, plan: dict) -> None:
  """Moves a complete run (`partial`) into `output_dir` by `plan` ({'replace': names of
  the old output, 'new': the run's names}); safe to repeat after it was cut anywhere."""
  success = os.path.join(output_dir, output_paths.SUCCESS_MARKER)
  if os.path.lexists(success):
    os.remove(success)  # from here the folder is unfinished
  os.makedirs(old, exist_ok=True)
  new = set(plan['new'])
  for name in plan['replace']:
    if name in new and not os.path.lexists(os.path.join(partial, name)):
      continue  # already the new one
    if os.path.lexists(os.path.join(output_dir, name)):
      os.rename(os.path.join(output_dir, name), os.path.join(old, name))
  for name in plan['new']:
    if os.path.lexists(os.path.join(partial, name)):
      os.rename(os.path.join(partial, name), os.path.join(output_dir, name))
  with open(success, 'wb'):
    pass
  shutil.rmtree(partial, ignore_errors=True)
  shutil.rmtree(old, ignore_errors=True)


def _roll_back(output_dir: str, partial: str, old: str, plan: dict) -> None:
  """Undoes a move into place that was cut (`_roll_forward`'s steps in reverse): the
  run's entries that were moved in are removed, the old ones moved back, and the old
  output's `_SUCCESS` written again if it had one."""
  for name in plan['new']:
    if not os.path.lexists(os.path.join(partial, name)):
      files.remove(os.path.join(output_dir, name))  # moved in: the killed run's
  for name in plan['replace']:
    if os.path.lexists(os.path.join(old, name)):
      os.rename(os.path.join(old, name), os.path.join(output_dir, name))
  if plan.get('finished'):
    with open(os.path.join(output_dir, output_paths.SUCCESS_MARKER), 'wb'):
      pass


def _recover(output_dir: str) -> None:
  """What killed runs left in `output_dir` (the lock is held): a run killed while it
  moved its files into place is undone (it never said it finished) unless the move was
  complete; every staging folder is removed. The folder is then as it was before the
  killed run, so the same command can run again."""
  for name in sorted(os.listdir(output_dir)):
    path = os.path.join(output_dir, name)
    if not name.startswith(PARTIAL):
      continue
    journal = os.path.join(path, COMMIT)
    if os.path.isfile(journal):
      with open(journal, encoding='utf-8') as f:
        plan = json.load(f)
      moved = not any(os.path.lexists(os.path.join(path, n)) for n in plan['new'])
      if not (moved and os.path.exists(os.path.join(output_dir, output_paths.SUCCESS_MARKER))):
        logging.warning('Undoing the move into place of a run that was killed in it: %s',
                        output_dir)
        _roll_back(output_dir, path, os.path.join(output_dir, OLD + name[len(PARTIAL):]),
                   plan)
    else:
      logging.info('Removing what a killed run left: %s', path)
    shutil.rmtree(path, ignore_errors=True)
  for name in os.listdir(output_dir):
    if name.startswith(OLD):
      shutil.rmtree(os.path.join(output_dir, name), ignore_errors=True)


class OutputSwap:
  """A run's place in `output_dir` (see the module); `work` is where it writes.

  Constructing it creates and locks a local folder (removing what a killed run left) and
  refuses, with a UsageError, a folder it may not write into.

  Args:
    output_dir: The output folder: a local path, absolute as `output_folder` gives it,
      or a URI (gs://, s3://) without a trailing slash.
    overwrite: Replace an earlier output of this tool in `output_dir` (only the names a
      run writes; other files stay). Default False: the folder must be new, empty or
      hold only an unfinished or failed run's leftovers.
  """

  def __init__(self, output_dir: str, overwrite: bool = False):
    self.output_dir = output_dir
    self.local = '://' not in output_dir
    self._lock: Optional[_Lock] = None
    self._remote_lock: Optional[remote_lock.RemoteLock] = None
    self._key = None
    self.work: Optional[str] = None
    run_id = self.run_id = uuid.uuid4().hex[:12]
    if self.local:
      self._created = not os.path.lexists(output_dir)
      try:
        os.makedirs(output_dir, exist_ok=True)
      except OSError as e:
        raise UsageError(f'cannot create the output folder {output_dir}: '
                         f'{e.strerror or e}') from None
      self._lock = _Lock(output_dir)
      try:
        _recover(output_dir)
        entries = self._entries()
        earlier = _earlier_output(entries, _read_local(output_dir))
        ours = [n for n in entries if earlier and written_by_a_run(n)]
        foreign = [n for n in entries if n not in ours]
        # An earlier failed run's report alone counts as empty: this run replaces it.
        self._had_output = bool(entries) and not (ours == [output_paths.REPORT_DIR] and not foreign)
        if self._had_output and (foreign and not (overwrite and earlier) or not overwrite):
          raise _not_empty(output_dir, foreign, overwrite, earlier)
        if foreign:
          logging.info('Keeping what this tool did not write in %s: %s', output_dir,
                       _listing(foreign))
        self._before = entries
        self._replace = ours  # the old output, or an earlier failed run's report
        self.work = os.path.join(output_dir, PARTIAL + run_id)
        try:
          os.mkdir(self.work)
        except OSError as e:
          raise UsageError(f'cannot write into the output folder {output_dir}: '
                           f'{e.strerror or e}') from None
      except BaseException:
        self._release()
        raise
    else:
      storage.prepare_file_systems(output_dir)
      with interrupt.guarded():  # a signal's clean-up finds the lock taken, and removes it
        self._remote_lock = remote_lock.RemoteLock(output_dir, run_id)
        self._key = interrupt.on_interrupt(self._interrupted)
      try:
        self._open_remote(output_dir, overwrite, run_id)
      except BaseException:
        self._release()
        raise
    if self._key is None:
      self._key = interrupt.on_interrupt(self._interrupted)

  def _open_remote(self, output_dir: str, overwrite: bool, run_id: str) -> None:
    """The object-store half of the constructor, the lock held."""
    # An object store has no folder to test for; the lock is no output's object.
    listed = [p for p in files.list_objects(output_dir) if p != remote_lock.LOCK_NAME]
    finished = output_paths.SUCCESS_MARKER in listed
    # A run writes its report's scratch files first (under report/.work/): objects of
    # this layout, some of them a run's scratch files or a failed run's summary, and no
    # _SUCCESS are what a killed or failed run left.
    tops = sorted({p.split('/', 1)[0] for p in listed})
    earlier = _earlier_output(tops, _read_remote(output_dir, listed))
    leftovers = bool(listed) and not finished and all(_layout_object(p) for p in listed) \
        and (earlier or any(p.startswith((_WORK, PARTIAL)) for p in listed))
    self._had_output = bool(listed) and not leftovers
    foreign = [t for t in tops if not (earlier and written_by_a_run(t) or t.startswith(PARTIAL))]
    if self._had_output and (foreign and not (overwrite and earlier) or not overwrite):
      raise _not_empty(output_dir, foreign, overwrite, earlier)
    if leftovers:
      self._remote_lock.confirm()
      self._remove_remote(keep=None)  # a killed or failed run's: unfinished
    self.work = (posixpath.join(output_dir, PARTIAL + run_id) if self._had_output
                 else output_dir)
    # Again, a listing later: a store that let two creates of the lock through (one
    # ignoring the precondition) has the last one's by now.
    self._remote_lock.confirm()

  def _entries(self) -> List[str]:
    return sorted(n for n in os.listdir(self.output_dir) if not _staging(n))

  def _release(self) -> None:
    if self._lock:
      self._lock.release()
      self._lock = None
    if self._remote_lock:
      self._remote_lock.release()
      self._remote_lock = None
    if self._key is not None:
      interrupt.done(self._key)
      self._key = None

  def _interrupted(self) -> str:
    if self._key is None:
      return ''
    self.abandon()
    return f'{self.output_dir} is as it was before the run'

  def failed_report_dir(self) -> str:
    """Where the report of a failed run is kept (see the module): beside the output
    unless the parent cannot be written or something not a failed run's report has the
    sibling's name there."""
    if not self._had_output:
      return posixpath.join(self.output_dir, output_paths.REPORT_DIR)
    sibling = self._failed_sibling()
    if (sibling is None
        or self.local and not os.access(os.path.dirname(self.output_dir), os.W_OK | os.X_OK)
        or not _failed_report_folder(sibling, missing=True)):
      return posixpath.join(self.output_dir, FAILED_REPORT_INSIDE)
    return posixpath.join(sibling, output_paths.REPORT_DIR)

  def _failed_sibling(self) -> Optional[str]:
    """`<output>.failed`, or None where that is no sibling (a bucket's root: it would
    name another bucket)."""
    if not self.local and '/' not in self.output_dir.split('://', 1)[1]:
      return None
    return self.output_dir + FAILED_SUFFIX

  def _retarget(self, report: str, new: str) -> None:
    """Rewrites the report's mentions of the run's own folder (a DataFrame's or image
    folder's generated manifest is cited from there) to `new`, where it will be."""
    old = posixpath.join(self.work, output_paths.REPORT_DIR)
    if old == new:
      return
    for path in files.match(posixpath.join(report, '*')):
      if path.endswith(('.json', '.jsonl', '.html')):
        with files.open_file(path) as f:
          text = f.read().decode('utf-8')
        if old in text:
          files.write_text(path, text.replace(old, new))

  def keep_failed_report(self) -> str:
    """Removes the failed run's records and keeps its report; returns where."""
    with interrupt.guarded():
      try:
        return self._keep_failed_report()
      except BaseException:
        self._end_after_failure()
        raise

  def _keep_failed_report(self) -> str:
    if self._remote_lock is not None:
      self._remote_lock.confirm()  # what follows deletes
    kept = self.failed_report_dir()
    report = posixpath.join(self.work, output_paths.REPORT_DIR)
    if self.local:
      if (kept == os.path.join(self.output_dir, output_paths.REPORT_DIR) and os.path.lexists(kept)
          and output_paths.REPORT_DIR not in self._before):
        # A report folder appeared while the run worked: not this run's to replace.
        sibling = self.output_dir + FAILED_SUFFIX
        kept = (os.path.join(sibling, output_paths.REPORT_DIR)
                if _failed_report_folder(sibling, missing=True)
                else os.path.join(self.output_dir, FAILED_REPORT_INSIDE))
      # An earlier failed run's report goes (`<output>.failed` as a whole).
      files.remove(os.path.dirname(kept) if kept.endswith(FAILED_SUFFIX + '/'
                                                          + output_paths.REPORT_DIR) else kept)
      os.makedirs(os.path.dirname(kept), exist_ok=True)
      if os.path.isdir(report):
        self._retarget(report, kept)
        shutil.move(report, kept)  # `<output>.failed` may be on another file system
      shutil.rmtree(self.work, ignore_errors=True)
      self._finish_local()
    elif self.work == self.output_dir:
      self._remove_remote(keep=report)
    else:  # an earlier failure's report goes (`<output>.failed` as a whole)
      files.remove(kept if kept.endswith('/' + FAILED_REPORT_INSIDE)
                   else posixpath.dirname(kept))
      self._retarget(report, kept)
      _move_objects(report, kept)
      files.remove(self.work)
    self._release()
    return kept

  def commit(self) -> None:
    """Moves the finished run into place and writes `_SUCCESS` last.

    Raises:
      UsageError: On object storage, the run no longer holds the prefix's lock, or the
        `_SUCCESS` read back is not its own: nothing of another run's was touched, and
        the run did not publish.
    """
    with interrupt.guarded():
      try:
        self._commit()
      except BaseException:
        self._end_after_failure()
        raise

  def _end_after_failure(self) -> None:
    """A commit or a failed run's clean-up that raised: the lock goes all the same. On
    object storage nothing of the run is kept (the next run finds an unfinished output,
    no `_SUCCESS`, if it was cut after the old one went); a local folder keeps the plan
    of its move, which the next run undoes."""
    try:
      if not self.local:
        self.abandon()
    except Exception as e:  # pylint: disable=broad-except  the first failure is raised
      logging.warning('Cannot remove what the run wrote in %s: %s', self.output_dir, e)
    finally:
      self._release()

  def _commit(self) -> None:
    final_report = posixpath.join(self.output_dir, output_paths.REPORT_DIR)
    if not self.local:
      self._remote_lock.confirm()  # what follows deletes the old output
    self._retarget(posixpath.join(self.work, output_paths.REPORT_DIR), final_report)
    if not self.local:
      success = posixpath.join(self.output_dir, output_paths.SUCCESS_MARKER)
      if self.work != self.output_dir:
        files.remove(success)
        self._remove_remote(keep=self.work)  # the old output and any killed run's
        _move_objects(self.work, self.output_dir)
      self._remote_lock.confirm()
      self._publish(success)
      self._release()
      return
    new = sorted(os.listdir(self.work))
    appeared = set(self._entries()) - set(self._before)
    clash = sorted(appeared & set(new + [output_paths.SUCCESS_MARKER]))
    if clash:
      self.abandon()
      raise UsageError(f'{", ".join(clash)} appeared in {self.output_dir} while the run '
                       'worked; nothing there was replaced and the run\'s output is '
                       'removed: convert again into an empty folder')
    plan = {'replace': [n for n in self._replace if n != output_paths.SUCCESS_MARKER],
            'new': new, 'finished': output_paths.SUCCESS_MARKER in self._replace}
    with open(os.path.join(self.work, COMMIT), 'w', encoding='utf-8') as f:
      json.dump(plan, f)
    old = os.path.join(self.output_dir, OLD + os.path.basename(self.work)[len(PARTIAL):])
    _roll_forward(self.output_dir, self.work, old, plan)
    try:
      if self._failed_sibling() and _failed_report_folder(self._failed_sibling(),
                                                          missing=False):
        files.remove(self.output_dir + FAILED_SUFFIX)  # an earlier failure's: out of date
    except OSError as e:
      logging.warning('Cannot remove an earlier failed run\'s report %s: %s',
                      self.output_dir + FAILED_SUFFIX, e)
    self._release()

  def _publish(self, success: str) -> None:
    """Writes `_SUCCESS` at `success` (empty, as on local disk) create-only, this run's id
    in its metadata (RUN_METADATA), and reads it back: only once it and the lock are
    this run's is the output the one the run reports."""
    try:
      storage.create_if_absent(success, b'', metadata={RUN_METADATA: self.run_id},
                               content_type='application/octet-stream')
    except NotImplementedError:  # a store without the precondition: the run is unlocked
      files.write_text(success, '')
      return
    found = storage.read_if_present(success)
    whose = found.metadata.get(RUN_METADATA) if found else None
    if whose != self.run_id:
      named = f'names run {whose}' if whose else 'names no run'
      raise UsageError(f'the output at {self.output_dir} is not this run\'s once published '
                       f'(its {output_paths.SUCCESS_MARKER} {named}): another run wrote '
                       'there while this one held its lock; convert again once no other '
                       'run writes there')
    self._remote_lock.confirm()

  def abandon(self) -> None:
    """After a crash or an interrupt: nothing of the run is kept, and the folder is as
    it was before (removed if the run created it). On object storage a run that no
    longer holds the prefix's lock removes only its own staging prefix."""
    with interrupt.guarded():
      if self._key is None and self._lock is None and self._remote_lock is None:
        return  # already ended
      try:
        if self.work is None:
          pass  # cut before it had a place to write
        elif self.local:
          shutil.rmtree(self.work, ignore_errors=True)
          self._finish_local()
        elif self.work != self.output_dir:
          files.remove(self.work)
        elif self._remote_lock is not None and self._remote_lock.holds():
          self._remove_remote(keep=None)
        else:
          logging.warning('Leaving %s as it is: this run no longer holds its lock',
                          self.output_dir)
      finally:
        self._release()

  def _finish_local(self) -> None:
    """A folder this run created and left empty is removed."""
    if self._created:
      try:
        os.rmdir(self.output_dir)
      except OSError:
        pass

  def _remove_remote(self, keep: Optional[str]) -> None:
    """Removes the objects under the output that a run writes (`_layout_object`),
    except those under `keep`; any other object stays."""
    from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
    ours = [posixpath.join(self.output_dir, p) for p in files.list_objects(self.output_dir)
            if _layout_object(p)]
    if keep is not None:
      ours = [p for p in ours if not _within(p, keep)]
    if ours:
      FileSystems.delete(ours)


def _layout_object(path: str) -> bool:
  """Whether an object (relative to an output prefix) is one a run writes."""
  top = path.split('/', 1)[0]
  return written_by_a_run(top) or top.startswith(PARTIAL)


def _failed_report_folder(path: str, missing: bool) -> bool:
  """Whether `path` (`<output>.failed`) holds only a failed run's report; `missing`:
  the answer when there is nothing there."""
  if '://' in path:
    listed = files.list_objects(path)
    if not listed:
      return missing
    return _earlier_output([output_paths.REPORT_DIR], _read_remote(path, listed)) and all(
        p.startswith(output_paths.REPORT_DIR + '/') for p in listed)
  if not os.path.lexists(path):
    return missing
  return (os.path.isdir(path) and not os.path.islink(path)
          and os.listdir(path) == [output_paths.REPORT_DIR]
          and _earlier_output([output_paths.REPORT_DIR], _read_local(path)))


def _move_objects(source: str, target: str) -> None:
  """Moves every object under the `source` prefix to the same place under `target`
  (a server-side copy and a delete each)."""
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  names = files.list_objects(source)
  if names:
    FileSystems.rename([posixpath.join(source, n) for n in names],
                       [posixpath.join(target, n) for n in names])
