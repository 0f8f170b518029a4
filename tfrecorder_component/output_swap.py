"""`convert()`'s output folder: checked before a run, written beside and moved in only
when the run succeeded."""
from __future__ import annotations

import os
import posixpath
import shutil
import tempfile

from tfrecorder_component import files
from tfrecorder_component import layout
from tfrecorder_component import storage
from tfrecorder_component.errors import UsageError


def local_folder(path: str) -> str:
  """`path` made absolute if local (and created), else without a trailing slash."""
  if '://' in path:
    return path.rstrip('/')
  path = os.path.abspath(path)
  os.makedirs(path, exist_ok=True)
  return path


def output_folder(output_dir: str, overwrite: bool) -> str:
  """`output_dir`, absolute if local, after checking it can take a conversion: not a
  file, and empty or absent unless `overwrite`. A folder holding only the report that a
  failed run left there (no record) counts as empty: the next run replaces it."""
  if '://' in output_dir:
    output_dir = output_dir.rstrip('/')
    storage.prepare_file_systems(output_dir)
    listed = files.list_objects(output_dir)  # an object store has no folder to test for
    used = bool(listed) and not (
        all(p.startswith(layout.REPORT_DIR + '/') for p in listed)
        and f'{layout.REPORT_DIR}/{layout.SUMMARY_FILE}' in listed)
  else:
    output_dir = os.path.abspath(output_dir)
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
      raise UsageError(f'{output_dir} is a file; the output must be a folder')
    used = (os.path.isdir(output_dir) and bool(os.listdir(output_dir))
            and not _only_a_failed_report(output_dir))
  if used and not overwrite:
    raise UsageError(f'{output_dir} is not empty: convert into a new or empty folder, or '
                     'pass overwrite=True (--overwrite) to replace what is there')
  return output_dir


def _only_a_failed_report(folder: str) -> bool:
  return os.listdir(folder) == [layout.REPORT_DIR] and os.path.isfile(
      os.path.join(folder, layout.REPORT_DIR, layout.SUMMARY_FILE))


class OutputSwap:
  """Writes a conversion next to `output_dir` and moves it in only when it succeeded, so
  the folder never mixes two runs nor looks complete when it is not.

  Local: the run writes into a hidden sibling, `.<name>.partial-*`; on success it
  replaces `output_dir` (an old output is renamed away, then deleted). On failure no
  record remains; the run's report is kept at `<output_dir>/report` if `output_dir` was
  empty or absent, else (an old output stays as it was) at `<output_dir>.failed/report`.
  Remote (gs://, s3://): an object store cannot rename a folder, so the run writes in
  place, after `overwrite` deleted the old output (its `_SUCCESS` marker first), and
  `commit` writes `<output_dir>/_SUCCESS` last: an output is finished when, and only
  when, that marker is there. A failed run's shards are deleted and its report kept.
  """

  def __init__(self, output_dir: str):
    self.output_dir = output_dir
    self.local = '://' not in output_dir
    if self.local:
      parent, name = os.path.split(output_dir)
      os.makedirs(parent, exist_ok=True)
      self.work = tempfile.mkdtemp(prefix=f'.{name}.partial-', dir=parent)
    else:
      files.remove(posixpath.join(output_dir, layout.SUCCESS_MARKER))  # unfinished from now
      files.remove(output_dir)
      self.work = output_dir

  def failed_report_dir(self) -> str:
    """Where the report of a failed run is kept (see the class)."""
    if not self.local:
      return posixpath.join(self.output_dir, layout.REPORT_DIR)
    if os.path.isdir(self.output_dir) and os.listdir(self.output_dir):
      return os.path.join(self.output_dir + '.failed', layout.REPORT_DIR)
    return os.path.join(self.output_dir, layout.REPORT_DIR)

  @staticmethod
  def _retarget(report: str, old: str, new: str) -> None:
    """Rewrites the report's mentions of `old` (the run's own folder: a DataFrame's or
    image folder's generated manifest is cited from there) to `new`, where it will be."""
    for name in os.listdir(report):
      if name.endswith(('.json', '.jsonl', '.html')):
        path = os.path.join(report, name)
        with open(path, encoding='utf-8') as f:
          text = f.read()
        if old in text:
          with open(path, 'w', encoding='utf-8') as f:
            f.write(text.replace(old, new))

  def keep_failed_report(self) -> str:
    """Removes the failed run's records and keeps its report; returns where."""
    kept = self.failed_report_dir()
    report = posixpath.join(self.work, layout.REPORT_DIR)
    if self.local:
      files.remove(os.path.dirname(kept) if kept.endswith('.failed/' + layout.REPORT_DIR)
                   else kept)
      os.makedirs(os.path.dirname(kept), exist_ok=True)
      if os.path.isdir(report):
        self._retarget(report, report, kept)
        os.replace(report, kept)
      shutil.rmtree(self.work, ignore_errors=True)
    else:
      from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
      others = [m.path for m in FileSystems.match([self.work + '/**'])[0].metadata_list
                if not m.path.startswith(report + '/')]
      if others:
        FileSystems.delete(others)
    return kept

  def commit(self) -> None:
    if not self.local:
      files.write_text(posixpath.join(self.output_dir, layout.SUCCESS_MARKER), '')
      return
    self._retarget(os.path.join(self.work, layout.REPORT_DIR), self.work, self.output_dir)
    old = None
    if os.path.lexists(self.output_dir):
      old = tempfile.mkdtemp(prefix=f'.{os.path.basename(self.output_dir)}.old-',
                             dir=os.path.dirname(self.output_dir))
      os.replace(self.output_dir, os.path.join(old, 'output'))
    os.replace(self.work, self.output_dir)
    if old:
      shutil.rmtree(old, ignore_errors=True)
    files.remove(self.output_dir + '.failed')  # an earlier failure's report is out of date

  def abandon(self) -> None:
    """After a crash (no summary): nothing of the run is worth keeping."""
    if self.local:
      shutil.rmtree(self.work, ignore_errors=True)
