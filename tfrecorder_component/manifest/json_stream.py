"""A JSON text read a value at a time, in bounded memory, with `json`'s own decoder: the
members of its top-level object one by one (`members`), an array's values one by one
(`items`), any other value read past (`skip`). COCO's reader (`coco`) reads a file of
any size this way, an image or an annotation at a time; every value is what
`json.loads` makes of it, and every error names the line, column and character that
`json.loads` would name.
"""
from __future__ import annotations

import codecs
import json
import re
from typing import Any, BinaryIO, Dict, Iterator, NamedTuple, Optional

from tfrecorder_component.io import files

READ_BYTES = 2**20  # read from the file at a time


class NotAnObject(Exception):
  """The file holds JSON, but not an object."""


class TooDeep(NamedTuple):
  """An array's value nested deeper than `json`'s decoder recurses (`items` yields it
  in the value's place, read past without recursion), so that one such value fails its
  own row, not the file.

  Attributes:
    members: the value's members that are numbers, strings or literals, where it is an
      object (`{'id': 7, 'image_id': 3}`), as `json` reads them; {} for an array.
    depth: how many arrays and objects deep it nests.
  """
  members: Dict[str, Any]
  depth: int


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_SCALAR = re.compile(r'-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null'
                     r'|NaN|-?Infinity')


class Text:
  """A JSON text read a value at a time with `json`'s own decoder (`raw_decode`), so
  that values are exactly what `json.loads` makes of them (NaN, lone surrogates, huge
  numbers...): the whole of a str, or a file read READ_BYTES at a time and decoded as
  the reader decodes a manifest (UTF-8, a BOM dropped, bad bytes kept as surrogates).
  `buffer[at:]` is what is left to read; errors name the line, column and character of
  the whole text, as `json.loads`' do.

  Args:
    text: the whole JSON text; '' when it is read from `file`.
    file: a binary file to read the text from, READ_BYTES at a time (closed on leaving
      the `with` block); None: `text` is all there is.
  """

  _SPACE = re.compile(r'[ \t\n\r]*')
  _ENOUGH = 16  # characters past a value that show it has ended (a number, NaN...)

  def __init__(self, text: str, file: Optional[BinaryIO] = None):
    self.buffer = text
    self.at = 0
    self._file = file
    self._decoder = codecs.getincrementaldecoder('utf-8-sig')('surrogateescape')
    self._start = 0  # where the buffer starts in the whole text
    self._lines = 0  # line breaks before it
    self._last_line_break = -1  # where the last of those is
    self.ended = file is None

  @classmethod
  def open(cls, path: str, text: Any) -> 'Text':
    """The text of a manifest, for a `with` block: `text` itself when it is a str, else
    the file at `path`, opened here.

    Args:
      path: the manifest's path on any Beam file system, opened when `text` is no str.
      text: the manifest's whole text, or anything else (a streamed file's lines, which
        are not read) to read it from `path`.
    """
    if isinstance(text, str):
      return cls(text)
    return cls('', files.open_file(path))

  def __enter__(self) -> 'Text':
    return self

  def __exit__(self, *exc_info) -> None:
    if self._file is not None:
      self._file.close()

  def _more(self) -> None:
    """Reads on: at least READ_BYTES, and at least as much again as is held (so that a
    long value is read in a few steps); drops what has been read."""
    cut, buffer = self.at, self.buffer
    if cut:
      breaks = buffer.count('\n', 0, cut)
      if breaks:
        self._lines += breaks
        self._last_line_break = self._start + buffer.rindex('\n', 0, cut)
      self._start += cut
    block = self._file.read(max(READ_BYTES, len(buffer) - cut))
    self.buffer = buffer[cut:] + self._decoder.decode(block, final=not block)
    self.at = 0
    self.ended = not block

  def next(self) -> str:
    """The next character that is not white space ('' at the end), skipping to it."""
    while True:
      self.at = self._SPACE.match(self.buffer, self.at).end()
      if self.at < len(self.buffer):
        return self.buffer[self.at]
      if self.ended:
        return ''
      self._more()

  def value(self, decoder: json.JSONDecoder) -> Any:
    """The JSON value that starts here (after `next`), read past.

    Reads on from the file while the value may run past the buffer's end; raises
    ValueError, naming line, column and character, where the text is not JSON.

    Args:
      decoder: the decoder whose `raw_decode` reads the value (its object_hook applies).
    """
    while True:
      try:
        value, end = decoder.raw_decode(self.buffer, self.at)
      except json.JSONDecodeError as e:
        if not self.ended and (e.pos >= len(self.buffer) - self._ENOUGH or
                               e.msg.startswith('Unterminated string')):
          self._more()  # cut short by the buffer's end, perhaps: read on, and again
          continue
        raise self.error(e.msg, e.pos) from None
      if end > len(self.buffer) - self._ENOUGH and not self.ended:
        self._more()  # a number or a literal may go on past the buffer
        continue
      self.at = end
      return value

  def read_past_deep(self) -> TooDeep:
    """Reads past the array or object that starts here (after `next`) a character at
    a time, without recursion, keeping its top-level scalar members (`TooDeep`); for a
    value `json` cannot decode for its depth. Raises ValueError where it does not end."""
    offset, depth, deepest = 0, 0, 0
    members: Dict[str, Any] = {}
    key: Optional[str] = None  # a top-level member's name, whose value is next
    naming = False  # whether the next string at depth 1 names a member
    while True:
      i = self.at + offset
      if i >= len(self.buffer):
        if self.ended:
          raise self.error('Unterminated value', self.at)
        self._more()
        continue
      character = self.buffer[i]
      found = None
      if character == '"':
        found = _STRING.match(self.buffer, i)
      elif depth == 1 and key is not None and not character.isspace() and character not in ':,':
        found = _SCALAR.match(self.buffer, i)
      if found is not None or character == '"':
        if found is None or found.end() == len(self.buffer) and not self.ended:
          if self.ended:
            raise self.error('Unterminated string starting at', i)
          self._more()  # the string or number may go on past the buffer
          continue
        if depth == 1:
          value = json.loads(found.group())
          if naming:
            key, naming = value, False
          elif key is not None:
            members[key], key = value, None
        offset = found.end() - self.at
        continue
      if character in '[{':
        depth += 1
        deepest = max(deepest, depth)
        if depth == 1:
          naming = character == '{'
        elif depth == 2:
          key = None  # a member holding an array or object: not kept
      elif character in ']}':
        depth -= 1
        if depth == 0:
          self.at = i + 1
          return TooDeep(members, deepest)
      elif character == ',' and depth == 1:
        naming = self.buffer[self.at] == '{'
      offset += 1

  def expect(self, character: str, message: str) -> None:
    """Reads past `character`, the next one that is not white space, or raises
    ValueError with `message` where another is there.

    Args:
      character: the one character expected (':' after a member's name).
      message: the error's message, as `json.loads` words it ("Expecting ':'
        delimiter"); the position is added.
    """
    if self.next() != character:
      raise self.error(message, self.at)
    self.at += 1

  def error(self, message: str, at: int) -> ValueError:
    """`json.JSONDecodeError`'s message for `message` at `buffer[at]`.

    Args:
      message: what is wrong, as `json.loads` words it ('Extra data', ...).
      at: the index in `buffer` of the character at fault; the message gives its line,
        column and character in the whole text.
    """
    position = self._start + at
    breaks = self.buffer.count('\n', 0, at)
    last = (self._start + self.buffer.rindex('\n', 0, at) if breaks else
            self._last_line_break)
    return ValueError(f'{message}: line {self._lines + breaks + 1} column '
                      f'{position - last} (char {position})')


def members(stream: Text, decoder: json.JSONDecoder) -> Iterator[str]:
  """The names of the members of the object the text holds, each yielded with the
  stream at its value, which the caller reads (or skips) before the next; then checks
  that nothing follows. Raises NotAnObject (after reading it through, so that a text
  that is not JSON is told as such) for any other value.

  Args:
    stream: the text, not yet read.
    decoder: the decoder that reads the member names (and a value that is no object,
      read through before NotAnObject).
  """
  if stream.buffer.startswith('\ufeff'):
    raise stream.error('Unexpected UTF-8 BOM (decode using utf-8-sig)', 0)
  if stream.next() != '{':
    skip(stream, decoder)
    _end(stream)
    raise NotAnObject()
  stream.at += 1
  following = stream.next()
  if following == '}':
    stream.at += 1
  while following != '}':
    if stream.next() != '"':
      raise stream.error('Expecting property name enclosed in double quotes', stream.at)
    name = stream.value(decoder)
    stream.expect(':', "Expecting ':' delimiter")
    stream.next()
    yield name
    following = stream.next()
    if following not in ('}', ','):
      raise stream.error("Expecting ',' delimiter", stream.at)
    stream.at += 1
  _end(stream)


def _end(stream: Text) -> None:
  if stream.next():
    raise stream.error('Extra data', stream.at)


def items(stream: Text, decoder: json.JSONDecoder) -> Iterator[Any]:
  """The values of the array the stream is at, one at a time; a value nested deeper
  than `json` decodes is yielded as a `TooDeep`.

  Args:
    stream: the text, at the array's `[` (after `next`).
    decoder: the decoder that reads each value (its object_hook applies to each).
  """
  stream.at += 1  # [
  if stream.next() == ']':
    stream.at += 1
    return
  while True:
    stream.next()
    try:
      value = stream.value(decoder)
    except RecursionError:  # nested deeper than json recurses: that value alone fails
      value = stream.read_past_deep()
    yield value
    following = stream.next()
    if following not in (']', ','):
      raise stream.error("Expecting ',' delimiter", stream.at)
    stream.at += 1
    if following == ']':
      return


def skip(stream: Text, decoder: json.JSONDecoder) -> None:
  """Reads past the value the stream is at (an array a value at a time).

  Args:
    stream: the text, at the value (white space before it is skipped).
    decoder: the decoder that reads the value, or each of the array's values.
  """
  if stream.next() == '[':
    for _ in items(stream, decoder):
      pass
  else:
    stream.value(decoder)
