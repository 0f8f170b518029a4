"""What the `tfrecorder-component` command writes to the terminal besides its results:
log records as `warning: ...` lines, without the notices the command replaces or that
concern other libraries; control characters escaped (`EscapingStream`); and why a run
stopped, in at most `policy.REFUSAL_LINES` lines (`refusal`).
"""
from __future__ import annotations

import logging
import re
import warnings
from typing import List

from tfrecorder_component.steps import policy
from tfrecorder_component.errors import ManifestError
from tfrecorder_component.io.files import describe_os_error


# What each worker process of a multi-process DirectRunner run logs at start, through the
# runner: nothing the user can act on.
_WORKER_NOTICES = ('No semi_persistent_directory found', 'Discarding unparseable args')
WORKER_WARNINGS = 'ignore::FutureWarning:google.api_core._python_version_support'


class DropNoticesTheCommandReplaces(logging.Filter):
  """Beam without its GCP extra logs, when imported, that BigQuery's client is missing
  (the command never uses BigQuery); its worker processes log start-up notices; and
  Beam logs a traceback for the manifest or file system error (a full disk) that the
  command then states in one line."""

  def filter(self, record: logging.LogRecord) -> bool:
    """Whether the command's handler shows `record` (False: it is one of those notices).

    Args:
      record: The log record the handler is about to emit; its message and, for the
        error the command states itself, its `exc_info` decide.
    """
    try:
      message = record.getMessage()
    except Exception:  # pylint: disable=broad-except
      return True  # a malformed log call is its own caller's to find
    if message.startswith('apitools not found, and bigquery client'):
      return False
    if record.name.endswith('local_job_service') and any(
        notice in message for notice in _WORKER_NOTICES):
      return False
    error = record.exc_info[1] if record.exc_info else None
    if isinstance(error, OSError):  # a full disk, a folder that cannot be written
      return describe_os_error(error) is None
    return not isinstance(error, ManifestError)


class CommandFormatter(logging.Formatter):
  """Log records as the command's own lines: `warning: <message>` (`error: ...`), as its
  refusals read, not `WARNING:root:<message>`; below WARNING (shown only where a
  library's logger is set lower) the message alone. Only the command's handler: a
  program calling `convert()` keeps its own logging."""

  def formatMessage(self, record: logging.LogRecord) -> str:
    """The record's line: `error: `, `warning: ` or nothing before its message.

    Args:
      record: The log record, its `message` already set by `logging.Formatter.format`;
        its `levelno` picks the prefix.
    """
    if record.levelno >= logging.ERROR:
      return f'error: {record.message}'
    if record.levelno >= logging.WARNING:
      return f'warning: {record.message}'
    return record.message


def quiet_third_party_notices() -> None:
  """The command owns its process: notices about other libraries' own support (Google
  clients on the interpreter's age, Beam's BigQuery client) do not reach the user."""
  warnings.filterwarnings('ignore', category=FutureWarning,
                          module='google.api_core._python_version_support')
  root = logging.getLogger()
  if not root.handlers:
    handler = logging.StreamHandler()
    handler.setFormatter(CommandFormatter())
    root.addHandler(handler)
  for handler in root.handlers:
    if not any(isinstance(f, DropNoticesTheCommandReplaces) for f in handler.filters):
      handler.addFilter(DropNoticesTheCommandReplaces())
  # How a dataset folder was read (a zip's root folder read through, a download's split
  # lists): the command says it, on its own line (`manifest.downloads.LOG`).
  logging.getLogger(LAYOUT_LOGGER).setLevel(logging.INFO)
  # Pillow logs why it cannot open a file ("More samples per pixel than can be decoded")
  # before it raises; the row's failure reason says it, once, in the command's words.
  logging.getLogger('PIL').setLevel(logging.CRITICAL)


LAYOUT_LOGGER = 'tfrecorder_component.layout'


# C0 and C1 control characters but line feed and tab, as escapes: a manifest's labels,
# URIs and messages reach the terminal, and must not move the cursor, retitle the window
# or erase a line.
_ESCAPED = {c: f'\\x{c:02x}' for c in [*range(0x20), *range(0x7f, 0xa0)] if c not in (9, 10)}


class EscapingStream:
  """A text stream that writes control characters as escapes (see `_ESCAPED`).
  `unescaped`: the stream itself, for the progress bar's own carriage returns
  (`progress.Progress`), which writes nothing from the manifest.

  Args:
    stream: The text stream written to (the command's `sys.stdout` or `sys.stderr`);
      attributes other than `write` are its own.
  """

  def __init__(self, stream):
    self._stream = stream
    self.unescaped = stream

  def write(self, text: str) -> int:
    """Writes `text` with its control characters escaped; returns what the stream's
    `write` returns for the escaped text.

    Args:
      text: What to write; line feeds and tabs pass as they are.
    """
    return self._stream.write(text.translate(_ESCAPED))

  def __getattr__(self, name):
    return getattr(self._stream, name)


def _without_traceback(lines: List[str]) -> List[str]:
  """`lines` less any Python traceback they quote (a Beam worker's error carries its
  own): its frames go, the exception's own line stays."""
  out, inside = [], False
  for line in lines:
    if line.startswith('Traceback (most recent call last)'):
      inside = True
    elif inside and (line[:1].isspace() or line.startswith(
        ('During handling of the above', 'The above exception'))):
      pass
    else:
      inside = False
      out.append(line)
  return out


def refusal(text: str) -> str:
  """`error: <text>` as the command prints why it stopped: at most
  `policy.REFUSAL_LINES` lines, whatever the number of failed rows or the message an
  error brings (lines past the limit joined into the last one, cut to twice
  ERROR_LINE_CHARS), without a traceback or where in the Beam pipeline it happened,
  which say nothing to the user.

  Args:
    text: Why the run stopped, as the exception's message has it: any number of lines,
      Beam's `[while running '...']` and quoted tracebacks included.
  """
  text = re.sub(r" \[while running '[^']*'\]", '', text)
  lines = _without_traceback([l.rstrip() for l in text.strip().splitlines() if l.strip()])
  lines = lines or ['the conversion stopped']
  limit = policy.REFUSAL_LINES
  if len(lines) > limit:
    rest = ' '.join(l.strip() for l in lines[limit - 1:])
    cut = policy.ERROR_LINE_CHARS * 2
    lines = lines[:limit - 1] + [rest if len(rest) <= cut else rest[:cut - 3] + '...']
  return 'error: ' + '\n'.join(lines)
