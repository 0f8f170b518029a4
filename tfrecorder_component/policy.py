"""The error policy of a conversion, shared by the component's executor and `convert()`."""
from __future__ import annotations

import heapq
import json
import logging
from typing import Any, Callable, Dict, List, Optional, Sequence

from tfrecorder_component import layout
from tfrecorder_component.errors import ManifestError

FIRST_ERRORS_SHOWN = 5


def read_errors(path: str, limit: int) -> List[Dict[str, Any]]:
  """The first `limit` failed rows of an errors.jsonl in manifest and row order (none if
  the file is missing). The file is in the order the workers wrote it; this reads it
  once, keeping `limit` rows."""
  from tfrecorder_component import files  # pylint: disable=g-import-not-at-top
  if not files.exists(path):
    return []
  with files.open_file(path) as f:
    return heapq.nsmallest(limit, (json.loads(line) for line in f if line.strip()),
                           key=lambda e: (str(e.get('source')), e.get('row') or 0))


def format_error(error: Dict[str, Any]) -> str:
  uri = f' {error["uri"]!r}:' if error.get('uri') else ''
  if 'index' in error:
    where = f'DataFrame index {error["index"]!r}'
  elif error.get('row') is not None:
    where = f'{error["source"]} row {error["row"]}'
  elif error.get('annotation') is not None:  # a COCO annotation of no known image
    where = f'{error["source"]} annotations[{error["annotation"]}]'
  else:
    where = str(error['source'])
  return f'{where}:{uri} {error["reason"]}: {error["message"]}'


def failed_rows_lines(errors_path: str, failed: int, limit: int) -> List[str]:
  """The first `limit` failed rows of an errors.jsonl, one indented line each, and how
  many more there are."""
  errors = read_errors(errors_path, limit)
  lines = ['  ' + format_error(e) for e in errors]
  if failed > len(errors):
    lines.append(f'  ... and {failed - len(errors):,} more')
  return lines


class TooManyFailedRows(RuntimeError):
  """More rows failed than `max_error_ratio` allows. The message names the first failed
  rows and the report, once it is where it is kept (`with_report`)."""

  def __init__(self, rows: int, failed: int, max_error_ratio: float,
               errors_path: Optional[str] = None):
    self.rows, self.failed, self.max_error_ratio = rows, failed, max_error_ratio
    self.errors_path = errors_path
    message = (f'{failed} of {rows} manifest rows failed ({failed / rows:.2%}), more than '
               f'max_error_ratio={max_error_ratio}.')
    if errors_path:
      details = '\n'.join(failed_rows_lines(errors_path, failed, FIRST_ERRORS_SHOWN))
      message += (f' First failures:\n{details}\nAll failed rows: {errors_path}\n'
                  f'Fix or remove these rows, or raise max_error_ratio to skip them.')
    super().__init__(message)

  def with_report(self, errors_path: str) -> 'TooManyFailedRows':
    return TooManyFailedRows(self.rows, self.failed, self.max_error_ratio, errors_path)


def check_error_policy(summary: Dict[str, Any], max_error_ratio: float,
                       manifests: Sequence[str]) -> None:
  """Raises ManifestError when no row was read, TooManyFailedRows when more rows failed
  than `max_error_ratio` allows."""
  rows, failed = summary['rows_read'], summary['rows_failed']
  if rows == 0:
    raise ManifestError('the manifest has no rows: ' + ', '.join(manifests))
  if failed and failed / rows > max_error_ratio:
    raise TooManyFailedRows(rows, failed, max_error_ratio)


def warn_allowed_failures(summary: Dict[str, Any], max_error_ratio: float) -> None:
  if summary['rows_failed']:
    logging.warning('%d of %d rows failed (allowed by max_error_ratio=%s).',
                    summary['rows_failed'], summary['rows_read'], max_error_ratio)


def apply_error_policy(summary: Dict[str, Any], max_error_ratio: float,
                       manifests: Sequence[str], keep_report: Callable[[], str]) -> None:
  """`check_error_policy`; when too many rows failed, `keep_report()` puts the report
  where it stays and returns that folder, which the error then names with the first
  failed rows. Warns about failures the ratio allows."""
  try:
    check_error_policy(summary, max_error_ratio, manifests)
  except TooManyFailedRows as e:
    errors_path = layout.errors_path(keep_report().rstrip('/'))
    raise e.with_report(errors_path) from None
  warn_allowed_failures(summary, max_error_ratio)
