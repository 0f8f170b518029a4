"""The error policy of a conversion, shared by the component's executor and `convert()`."""
from __future__ import annotations

import json
import logging
from typing import Any, Dict, List, Sequence

from tfrecorder_component.errors import ManifestError

FIRST_ERRORS_SHOWN = 5


def read_errors(path: str, limit: int) -> List[Dict[str, Any]]:
  """The first `limit` failed rows of an errors.jsonl (none if the file is missing)."""
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  if not FileSystems.exists(path):
    return []
  out = []
  with FileSystems.open(path, compression_type='uncompressed') as f:
    for line in f:
      if len(out) >= limit:
        break
      out.append(json.loads(line))
  return out


def format_error(error: Dict[str, Any]) -> str:
  return (f'{error["source"]} row {error["row"]}: {error["uri"]!r}: {error["reason"]}: '
          f'{error["message"]}')


def apply_error_policy(summary: Dict[str, Any], errors_path: str, max_error_ratio: float,
                       manifests: Sequence[str]) -> None:
  """Raises when no row was read, or when more rows failed than `max_error_ratio`
  allows, naming the first failed rows (source, row, URI, reason)."""
  rows, failed = summary['rows_read'], summary['rows_failed']
  if rows == 0:
    raise ManifestError('the manifest has no rows: ' + ', '.join(manifests))
  if failed == 0 or failed / rows <= max_error_ratio:
    if failed:
      logging.warning('%d of %d rows failed (allowed by max_error_ratio=%s).',
                      failed, rows, max_error_ratio)
    return
  details = '\n'.join('  ' + format_error(e)
                      for e in read_errors(errors_path, FIRST_ERRORS_SHOWN))
  raise RuntimeError(
      f'{failed} of {rows} manifest rows failed ({failed / rows:.2%}), more than '
      f'max_error_ratio={max_error_ratio}. First failures:\n{details}\n'
      f'All failed rows: {errors_path}\n'
      f'Fix or remove these rows, or raise max_error_ratio to skip them.')
