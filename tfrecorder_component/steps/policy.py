"""The error policy of a conversion, shared by the component's executor and `convert()`."""
from __future__ import annotations

import heapq
import json
import logging
import posixpath
import re
from typing import Any, Callable, Dict, List, Optional, Sequence

from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.errors import ManifestError
from tfrecorder_component.io import files

# A refusal for failed rows names this many of them (the first in manifest and row order,
# the first of another reason preferred to a second of the same): with the counts by
# reason, the rest and where they all are, it stays within REFUSAL_LINES lines however
# many rows failed.
FIRST_ERRORS_SHOWN = 2
REFUSAL_LINES = 5
# A failed row's line is cut to this many characters (a message quoting a long field).
ERROR_LINE_CHARS = 500


def _order(error: Dict[str, Any]):
  return str(error.get('source')), error.get('row') or 0


def read_errors(path: str, limit: int) -> List[Dict[str, Any]]:
  """The first `limit` failed rows of an errors.jsonl in manifest and row order (none if
  the file is missing). The file is in the order the workers wrote it; this reads it
  once, keeping `limit` rows.

  Args:
    path: the errors.jsonl file, on any file system.
    limit: how many failed rows to return, at most.
  """
  if not files.exists(path):
    return []
  with files.open_file(path) as f:
    return heapq.nsmallest(limit, (json.loads(line) for line in f if line.strip()),
                           key=_order)


def first_errors_by_reason(path: str, limit: int) -> List[Dict[str, Any]]:
  """`limit` failed rows of an errors.jsonl, in manifest and row order: the first one,
  then the first of each other reason, then the next ones (reading the file once, keeping
  `limit` rows and one a reason): rows of several reasons show each kind of failure.

  Args:
    path: the errors.jsonl file, on any file system; none are returned if it is
      missing.
    limit: how many failed rows to return, at most; below 1 none.
  """
  if limit < 1 or not files.exists(path):
    return []
  first: List[Dict[str, Any]] = []
  per_reason: Dict[str, Dict[str, Any]] = {}
  with files.open_file(path) as f:
    for line in f:
      if not line.strip():
        continue
      error = json.loads(line)
      if len(first) < limit or _order(error) < _order(first[-1]):
        first = sorted([*first, error], key=_order)[:limit]
      kept = per_reason.get(error.get('reason'))
      if kept is None or _order(error) < _order(kept):
        per_reason[error.get('reason')] = error
  if not first:
    return []
  shown = [first[0]]
  others = sorted((e for r, e in per_reason.items() if r != first[0].get('reason')),
                  key=_order)
  for error in [*others, *first[1:]]:
    if len(shown) == limit:
      break
    if all(error is not e for e in shown):
      shown.append(error)
  return sorted(shown, key=_order)


# What str.splitlines takes for a line break.
_LINE_BREAKS = re.compile('[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+')


def one_line(text: str) -> str:
  """`text` on one line: its line breaks made spaces (a message or a URI of the data
  must not add lines of its own).

  Args:
    text: what to show, any value (taken as `str`); each run of line breaks, as
      `str.splitlines` finds them, becomes one space.
  """
  return _LINE_BREAKS.sub(' ', str(text))


def format_error(error: Dict[str, Any]) -> str:
  """A failed row on one line: where it is, its URI, its reason and message.

  Args:
    error: an error record as errors.jsonl has it (`errors.error_record`); where it is:
      its DataFrame `index` if it has one, else its source and row, else its COCO
      annotation, else its source alone.
  """
  uri = f' {error["uri"]!r}:' if error.get('uri') else ''
  if 'index' in error:
    where = f'DataFrame index {error["index"]!r}'
  elif error.get('row') is not None:
    where = f'{error["source"]} row {error["row"]}'
  elif error.get('annotation') is not None:  # a COCO annotation of no known image
    where = f'{error["source"]} annotations[{error["annotation"]}]'
  else:
    where = str(error['source'])
  return one_line(f'{where}:{uri} {error["reason"]}: {error["message"]}')


def _cut(line: str, limit: int = ERROR_LINE_CHARS) -> str:
  return line if len(line) <= limit else line[:limit - 3] + '...'


def failed_rows_lines(errors_path: str, failed: int, limit: int) -> List[str]:
  """The first `limit` failed rows of an errors.jsonl, one indented line each, and how
  many more there are.

  Args:
    errors_path: the errors.jsonl file, on any file system; no rows are listed if it is
      missing.
    failed: how many rows failed in all (the summary's `rows_failed`), for the "and N
      more" line.
    limit: how many failed rows to list, at most.
  """
  errors = read_errors(errors_path, limit)
  lines = ['  ' + _cut(format_error(e)) for e in errors]
  if failed > len(errors):
    lines.append(f'  ... and {failed - len(errors):,} more')
  return lines


def reason_counts(errors_per_reason: Dict[str, int]) -> str:
  """'7 missing, 3 not_an_image': the failed rows per reason, the most first.

  Args:
    errors_per_reason: {reason: failed rows}, as the summary's `errors_per_reason`.
  """
  return ', '.join(f'{n:,} {reason}' for reason, n in sorted(
      errors_per_reason.items(), key=lambda item: (-item[1], item[0])))


# The ratio of failed rows a run allows, as the command line and Python name it: a
# message may reach a user of either (or of the component, whose parameter is Python's).
MAX_ERROR_RATIO = '--max-error-ratio (max_error_ratio)'
IMAGE_ROOT = '--image-root (image_root=)'
# A refusal points at IMAGE_ROOT when at least this share of the rows failed as
# `missing` with relative paths: the images are likely relative to another folder.
MISSING_SHARE_FOR_IMAGE_ROOT = 0.5
_SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*:')
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"")


def _is_relative(uri: str) -> bool:
  return bool(uri) and not uri.startswith(('/', '\\')) and not _SCHEME.match(uri)


def _looked_in(error: Dict[str, Any]) -> str:
  """Where a `missing` row's relative URI was looked for, from the path its message
  quotes: the folder it was resolved against (`No such file or directory:
  '/data/images/a.jpg'` for `images/a.jpg`: 'under /data'), else that path, else the
  manifest's folder (the default)."""
  uri = posixpath.normpath(str(error.get('uri') or '').replace('\\', '/'))
  paths = [m.group(1) or m.group(2)
           for m in _QUOTED.finditer(str(error.get('message') or ''))]
  for path in paths:
    if path.endswith('/' + uri):
      return f'under {path[:-len(uri) - 1] or "/"}'
  absolute = [p for p in paths if not _is_relative(p)]
  return f'as paths like {absolute[0]}' if absolute else "under the manifest's folder"


def _first_missing(errors_path: str, shown: Sequence[Dict[str, Any]]
                   ) -> Optional[Dict[str, Any]]:
  """A failed row of reason `missing`: one of `shown`, else the first in the file."""
  found = next((e for e in shown if e.get('reason') == 'missing'), None)
  if found is not None or not files.exists(errors_path):
    return found
  with files.open_file(errors_path) as f:
    for line in f:
      if line.strip() and json.loads(line).get('reason') == 'missing':
        return json.loads(line)
  return None


def image_root_hint(rows: int, errors_per_reason: Dict[str, int], errors_path: str,
                    shown: Sequence[Dict[str, Any]]) -> Optional[str]:
  """When most rows (MISSING_SHARE_FOR_IMAGE_ROOT) failed as `missing` and their URIs
  are relative: where they were looked for, and that IMAGE_ROOT says where they are
  relative to. None otherwise.

  Args:
    rows: how many manifest rows were read.
    errors_per_reason: {reason: failed rows}; its `missing` count is compared with
      `rows`.
    errors_path: the errors.jsonl file, read for a `missing` row when `shown` has none.
    shown: the failed rows the message already names (error records).
  """
  if errors_per_reason.get('missing', 0) < MISSING_SHARE_FOR_IMAGE_ROOT * rows:
    return None
  error = _first_missing(errors_path, shown)
  if error is None or not _is_relative(str(error.get('uri') or '')):
    return None
  return (f'The relative paths were looked for {_looked_in(error)}; if the images live '
          f'elsewhere, pass their folder as {IMAGE_ROOT}.')


class TooManyFailedRows(RuntimeError):
  """More rows failed than `max_error_ratio` allows. The message, at most REFUSAL_LINES
  lines however many rows failed, gives the counts by reason and, once the report is
  where it is kept (`with_report`), the first failed rows (row, URI, reason) and the
  report's errors.jsonl.

  Args:
    rows: how many manifest rows were read (above 0).
    failed: how many of them failed.
    max_error_ratio: the fraction of the rows allowed to fail, as the run was given it.
    errors_path: the kept report's errors.jsonl, read for the first failed rows; None:
      the message gives the counts only.
    errors_per_reason: {reason: failed rows}, for the counts by reason; None: none
      shown.
  """

  def __init__(self, rows: int, failed: int, max_error_ratio: float,
               errors_path: Optional[str] = None,
               errors_per_reason: Optional[Dict[str, int]] = None):
    self.rows, self.failed, self.max_error_ratio = rows, failed, max_error_ratio
    self.errors_path = errors_path
    self.errors_per_reason = dict(errors_per_reason or {})
    by_reason = f': {reason_counts(self.errors_per_reason)}' if self.errors_per_reason else ''
    message = (f'{failed:,} of {rows:,} manifest rows failed ({failed / rows:.2%}{by_reason}), '
               f'more than {MAX_ERROR_RATIO} {max_error_ratio} allows.')
    if errors_path:
      shown = first_errors_by_reason(errors_path, FIRST_ERRORS_SHOWN)
      more = failed - len(shown)
      # Skipping every row writes nothing: a run where all failed is only fixed.
      advice = image_root_hint(rows, self.errors_per_reason, errors_path, shown) or (
          'Fix or remove these rows.' if failed >= rows else
          f'Fix or remove these rows, or raise {MAX_ERROR_RATIO} to skip them.')
      lines = [message + (' First failures:' if shown else ''),
               *('  ' + _cut(format_error(e)) for e in shown),
               (f'  ... and {more:,} more. ' if more > 0 else '') + advice,
               f'All failed rows: {errors_path}']
      message = '\n'.join(lines)
    super().__init__(message)

  def with_report(self, errors_path: str) -> 'TooManyFailedRows':
    """The same refusal, its message naming the first failed rows and the report.

    Args:
      errors_path: the errors.jsonl of the report where it is kept.
    """
    return TooManyFailedRows(self.rows, self.failed, self.max_error_ratio, errors_path,
                             self.errors_per_reason)


def check_error_policy(summary: Dict[str, Any], max_error_ratio: float,
                       manifests: Sequence[str]) -> None:
  """Raises ManifestError when no row was read, TooManyFailedRows when more rows failed
  than `max_error_ratio` allows.

  Args:
    summary: the run's summary (`report.summary`): its `rows_read`, `rows_failed` and
      `errors_per_reason`.
    max_error_ratio: the fraction of the rows allowed to fail; 0: any failed row raises.
    manifests: the run's manifest paths, which the ManifestError names.
  """
  rows, failed = summary['rows_read'], summary['rows_failed']
  if rows == 0:
    raise ManifestError('the manifest has no rows: ' + ', '.join(manifests))
  if failed and failed / rows > max_error_ratio:
    raise TooManyFailedRows(rows, failed, max_error_ratio,
                            errors_per_reason=summary.get('errors_per_reason'))


def warn_allowed_failures(summary: Dict[str, Any], max_error_ratio: float) -> None:
  """Logs a warning of the rows that failed, if any, where the ratio allowed them.

  Args:
    summary: the run's summary (`report.summary`): its `rows_failed` and `rows_read`.
    max_error_ratio: the ratio that allowed them, which the warning names.
  """
  if summary['rows_failed']:
    logging.warning('%d of %d rows failed (allowed by %s %s).', summary['rows_failed'],
                    summary['rows_read'], MAX_ERROR_RATIO, max_error_ratio)


def apply_error_policy(summary: Dict[str, Any], max_error_ratio: float,
                       manifests: Sequence[str], keep_report: Callable[[], str]) -> None:
  """`check_error_policy`; when too many rows failed, `keep_report()` puts the report
  where it stays and returns that folder, which the error then names with the first
  failed rows. Warns about failures the ratio allows.

  Args:
    summary: the run's summary (`report.summary`).
    max_error_ratio: the fraction of the rows allowed to fail.
    manifests: the run's manifest paths, which a ManifestError names.
    keep_report: called only when too many rows failed; keeps the report and returns
      its folder.
  """
  try:
    check_error_policy(summary, max_error_ratio, manifests)
  except TooManyFailedRows as e:
    errors_path = output_paths.errors_path(keep_report().rstrip('/'))
    raise e.with_report(errors_path) from None
  warn_allowed_failures(summary, max_error_ratio)
