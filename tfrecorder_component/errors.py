"""The project's own errors: each names the row, the URI and the reason.

One convention for a row that fails: the per-row code raises `RowError`; the Beam step
that runs it turns it into a dead-letter dict (`error_record`, a line of errors.jsonl)
on its `errors` output. Parsers stream, so they yield RowErrors among their rows.
Whole-run problems raise `ManifestError` (a manifest cannot be read) or `UsageError`
(a wrong option or path, found before any row is read).
"""
from __future__ import annotations

import difflib
from typing import Any, Dict, Iterable, Optional


class RowError(ValueError):
  """A manifest row that cannot become a record.

  Args:
    reason: a short, stable category (for example `missing`, `not_an_image`, `bad_row`):
      errors.jsonl's `reason` and the key of the run's failed-row counts.
    message: what happened and, where possible, what to do.
    source: the manifest file the row is in, if known.
    row: the row's 1-based position in `source`, if known.
    uri: the image URI as the manifest wrote it, if known.
    annotation: COCO: the 0-based index in "annotations" of an annotation that belongs
      to no image (so it has no `row`); None otherwise.
  """

  def __init__(self, reason: str, message: str, *, source: Optional[str] = None,
               row: Optional[int] = None, uri: Optional[str] = None,
               annotation: Optional[int] = None):
    self.reason = reason
    self.message = message
    self.source = source
    self.row = row
    self.uri = uri
    # COCO: the 0-based index in "annotations" of an annotation that belongs to no image
    # (so it has no row)
    self.annotation = annotation
    super().__init__(self.describe())

  def __reduce__(self):  # keyword-only fields: pickled (to a worker's parent) by keyword
    return _row_error, (self.reason, self.message, self.source, self.row, self.uri,
                        self.annotation)

  def describe(self) -> str:
    where = []
    if self.source is not None:
      at = (f' row {self.row}' if self.row is not None else
            f' annotations[{self.annotation}]' if self.annotation is not None else '')
      where.append(f'{self.source}{at}')
    if self.uri:
      where.append(f'uri {self.uri!r}')
    prefix = ', '.join(where)
    return f'{prefix}: {self.reason}: {self.message}' if prefix else f'{self.reason}: {self.message}'


def _row_error(reason, message, source, row, uri, annotation) -> RowError:
  return RowError(reason, message, source=source, row=row, uri=uri, annotation=annotation)


class ManifestError(ValueError):
  """A manifest as a whole cannot be read (missing, empty, unknown format)."""


class UsageError(ValueError):
  """What a conversion was asked to do cannot be done: a source that does not exist, an
  unknown option value, an output folder in use. Raised before any row is read; the
  command exits 2 for it (1 is for data that failed)."""


def error_record(error: RowError, row: Optional[Any] = None) -> Dict[str, Any]:
  """The dead-letter form of a failed row, as written to errors.jsonl.

  Args:
    error: the row's failure; gives `reason` and `message`, and where the row is when
      `row` is None.
    row: the ManifestRow that failed, when known: its source, row number and image URI
      replace the error's own.
  """
  record = {
      'source': row.source if row else error.source,
      'row': row.row if row else error.row,
      'uri': row.image_uri if row else error.uri,
      'reason': error.reason,
      'message': error.message,
  }
  if row is None and error.annotation is not None:
    record['annotation'] = error.annotation  # COCO: an annotation of no image
  return record


def closest(word: str, choices: Iterable[str]) -> Optional[str]:
  """The choice closest to a mistyped `word`, if one is close enough to suggest (the
  "did you mean" of an unknown option, keyword or command).

  Args:
    word: what was given.
    choices: what could have been meant.
  """
  found = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
  return found[0] if found else None
