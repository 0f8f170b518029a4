"""A large local manifest parsed in byte ranges of whole lines, each by its own process,
as the whole file's parse reads those lines (`plan_parts`, `iter_manifest_part`): at
30 µs a row the parse is a run's serial part (0.6 s of one core for 20,000 rows, 6 s
for 200,000) while the other cores wait for the vocabulary it gives."""
from __future__ import annotations

import io
import itertools
import mmap
import os
import re
from typing import Iterator, List, NamedTuple, Optional

from tfrecorder_component.errors import ManifestError
from tfrecorder_component.io import files
from tfrecorder_component.manifest import registry
from tfrecorder_component.manifest.columns import Columns, parse_columns
from tfrecorder_component.manifest.reader import (_SNIFF_CHARS, ManifestItems,
                                                  parse_manifest_text)


class Part(NamedTuple):
  """A range of whole lines of a local manifest file, parsed on its own by
  `iter_manifest_part` as the whole file's parse reads those lines (`plan_parts`).

  Attributes:
    start: the offset of its first byte (a line's first).
    end: the offset after its last byte (a line's last, or the file's end).
    first_line: the line number of its first line (1-based).
    context: the bytes of the file's first lines that set the parser's state
      (`ManifestFormat.part_context`), read before the range and not yielded; 0 for
      the first range, which starts there.
    context_lines: how many lines those bytes hold.
    file_lines: the file's line count (to size its chunks).
    format: the file's format's name, as `plan_parts` checked it.
  """
  start: int
  end: int
  first_line: int
  context: int
  context_lines: int
  file_lines: int
  format: str


# A manifest smaller than this is parsed whole: at 40 bytes and 30 µs a row, its parse
# (about 0.2 s) would not pay for the processes parsing it in parts.
PART_MIN_BYTES = 256 << 10
_CONTEXT_BYTES = 1 << 20  # where a format's context lines are looked for
_LONE_CR = re.compile(rb'\r(?!\n)')


def plan_parts(path: str, fmt: Optional[str], parts: int, columns: Columns = ()) -> List[Part]:
  """`path` cut into up to `parts` ranges of whole lines, each parsed as the whole
  file's parse reads it, where that holds by construction: a local file of at least
  PART_MIN_BYTES whose format declares `part_context` and gives one for its first lines,
  with no quote (`"`: no CSV field spans lines, so every line ends a row) and no line
  ended by a lone CR (csv's line ends are then its newlines). Else []: parse it whole.
  Line ends are LF bytes in UTF-8, whatever the bytes around them.

  Args:
    path: the manifest file's path.
    fmt: its format's name; None: detected as `iter_manifest_file` detects it.
    parts: the most ranges to cut (the processes that parse them).
    columns: the `columns` option, in any form `columns.parse_columns` takes.
  """
  if parts < 2 or not files.is_local(path):
    return []
  try:
    with open(path, 'rb') as f:
      if os.fstat(f.fileno()).st_size < PART_MIN_BYTES:
        return []
      with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return _cut(path, data, fmt, parts, parse_columns(columns))
  except (OSError, ValueError, ManifestError):  # the whole file's parse reports it
    return []


def _cut(path: str, data, fmt: Optional[str], parts: int, columns: Columns) -> List[Part]:
  head = data[:_SNIFF_CHARS].decode('utf-8-sig', errors='surrogateescape')
  spec = registry.by_name(fmt, path) if fmt else registry.detect(path, head)
  if spec.part_context is None or data.find(b'"') >= 0 or _LONE_CR.search(data):
    return []
  top = data[:_CONTEXT_BYTES]
  top = top[:top.rfind(b'\n') + 1]
  context_lines = spec.part_context(path, io.StringIO(
      top.decode('utf-8-sig', errors='surrogateescape'), newline=''), columns)
  if context_lines is None:
    return []
  context, line = 0, 0
  while line < context_lines:
    context, line = data.find(b'\n', context) + 1, line + 1
  size = len(data)
  starts = [0]
  for k in range(1, parts):
    cut = data.find(b'\n', max(context, size * k // parts) - 1) + 1
    if 0 < cut < size and cut > starts[-1] and cut >= context:
      starts.append(cut)
  if len(starts) < 2:
    return []
  ends = starts[1:] + [size]
  firsts = [1]
  for start, end in zip(starts, ends):
    firsts.append(firsts[-1] + _newlines(data, start, end))
  file_lines = firsts[-1] - (1 if data[-1:] == b'\n' else 0)
  return [Part(start, end, first, context if start else 0, context_lines if start else 0,
               file_lines, spec.name)
          for start, end, first in zip(starts, ends, firsts)]


def _newlines(data, start: int, end: int) -> int:
  """The LF bytes of data[start:end], counted in blocks: a slice of an mmap is a copy."""
  return sum(data[at:min(at + _COUNT_BLOCK, end)].count(b'\n')
             for at in range(start, end, _COUNT_BLOCK))


_COUNT_BLOCK = 16 << 20


class _part_text:  # pylint: disable=invalid-name
  """A Part's lines as a parser takes a streamed file's (`_streamed_text`): the file's
  context lines, blank lines standing for those between (a blank line is no row, and
  keeps the line numbers the file's), then the range's own; read as they are parsed,
  so that no process holds its range whole."""

  def __init__(self, path: str, part: Part):
    self._path, self._part = path, part

  def __iter__(self):
    part = self._part
    with open(self._path, 'rb') as f:
      if not part.context:
        yield from _lines(f, part.end, 'utf-8-sig')
        return
      yield from _lines(f, part.context, 'utf-8-sig')
      yield from itertools.repeat('\n', part.first_line - 1 - part.context_lines)
      f.seek(part.start)
      yield from _lines(f, part.end - part.start, 'utf-8')


def _lines(f, size: int, first_codec: str) -> Iterator[str]:
  """The whole lines of the next `size` bytes of binary file `f`, decoded as the whole
  file's text is (`reader._streamed_text`), the first with `first_codec`: lines end at
  LF, as csv's do where no line ends at a lone CR (`plan_parts` refuses those)."""
  codec = first_codec
  for line in f:
    yield line.decode(codec, errors='surrogateescape')
    codec = 'utf-8'
    size -= len(line)
    if size <= 0:
      return


def iter_manifest_part(path: str, part: Part, split_override: Optional[str] = None,
                       **options) -> 'ManifestItems':
  """`iter_manifest_file` of one Part of a file (`plan_parts`): the items of its lines,
  as the whole file's parse gives them.

  Args:
    path: the manifest file's path.
    part: the range to parse, from `plan_parts(path, ...)`, read as its `format`.
    split_override: as `iter_manifest_file`'s.
    options: `iter_manifest_file`'s keywords (image_root, feature_types, annotations,
      class_map, columns, confine_to).
  """
  spec = registry.by_name(part.format, path)
  items = parse_manifest_text(path, _part_text(path, part), spec.name, split_override,
                              **options)
  if part.context_lines:
    items = (item for item in items if item.row > part.context_lines)
  return ManifestItems(part.file_lines, items, spec)
