"""What the JSON formats share: a JSON Lines text's lines split at LF only (`lf_lines`),
one line's value or the `bad_row` error saying why it is not JSON (`load_line`), and a
value cut short for a message (`short_json`). Vertex AI JSONL, Labelbox NDJSON and
Label Studio read with them."""
from __future__ import annotations

import io
import json
from typing import Iterable, Iterator, Union

from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest.rows import short


def lf_lines(text: Union[str, Iterable[str]]) -> Iterator[str]:
  """The lines of a JSON Lines text, split at LF only (a CRLF line keeps its CR, which
  JSON reads as white space), the same for a small file's text and for a large file's
  lines as a text file opened with newline='' gives them (split at CR too).

  Args:
    text: the whole text, or its lines as a text file opened with newline='' gives
      them, which are joined until one ends in LF.
  """
  if isinstance(text, str):
    yield from io.StringIO(text, newline='\n')
    return
  pending = ''
  for piece in text:
    pending += piece
    if pending.endswith('\n'):
      yield pending
      pending = ''
  if pending:
    yield pending


def load_line(path: str, row: int, line: str) -> object:
  """The JSON value of one line of a JSON Lines file, or the `bad_row` RowError naming
  why it is not JSON (a CR inside the line, a number of more than 4,300 digits, nesting
  too deep).

  Args:
    path: the file's path, named in the error.
    row: the line's 1-based number, named in the error.
    line: the line's text (its line break, LF or CRLF, is white space to JSON).
  """
  try:
    return json.loads(line)
  except json.JSONDecodeError as e:
    hint = ('; the line holds CR characters: JSON Lines ends each row with LF (or CRLF)'
            if '\r' in line.rstrip('\r\n') and e.msg == 'Extra data' else '')
    return RowError('bad_row', f'invalid JSON: {e}{hint}', source=path, row=row)
  except ValueError:  # a number of more digits than Python converts (4,300)
    return RowError('bad_row', 'invalid JSON: a number of more than 4,300 digits',
                    source=path, row=row)
  except RecursionError:
    return RowError('bad_row', 'invalid JSON: nested too deeply', source=path, row=row)


def short_json(value: object, limit: int = 100) -> str:
  """`value` as JSON (its repr where it is not JSON), cut to `limit` characters, for a
  message naming what a row held.

  Args:
    value: The value a row held.
    limit: The most characters kept.
  """
  try:
    text = json.dumps(value)
  except (TypeError, ValueError):
    text = None  # its repr
  return short(value, limit, text)
