"""The sorted run files of an external sort (the duplicate index, the JSON-lines report
files): written a bundle's entries at a time, read a block at a time."""
from __future__ import annotations

import uuid
from typing import Any, BinaryIO, Callable, Iterable, Iterator, List, Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

BLOCK_BYTES = 64 * 2**10  # read from each run at a time while merging


def read_entries(f: BinaryIO, entry_size: Callable[[bytes, int], int], header_size: int,
                 name: str, length: Optional[int] = None) -> Iterator[bytes]:
  """The entries of open file `f` from where it stands, to its end or over `length`
  bytes, read BLOCK_BYTES at a time. `entry_size(buffer, at)` gives the size of the entry
  at `at` from its first `header_size` bytes. `name` names the file in errors."""
  pending = b''
  left = length
  while left is None or left:
    block = f.read(BLOCK_BYTES if left is None else min(BLOCK_BYTES, left))
    if not block:
      if left is not None or pending:
        raise ValueError(f'{name} ends early')
      return
    if left is not None:
      left -= len(block)
    pending += block
    at = 0
    while len(pending) - at >= header_size:
      size = entry_size(pending, at)
      if len(pending) - at < size:
        break
      yield pending[at:at + size]
      at += size
    pending = pending[at:]
  if pending:
    raise ValueError(f'{name} ends early')


class SpillRuns(beam.DoFn):
  """Elements in; at the end of each bundle, what `write` returned for each run file it
  wrote. A bundle's entries (bytes, from `entries(element)`) are gathered until there
  are `run_entries`, then `write(path, entries)` writes them, sorted, as a new run file
  in `folder`; so a worker holds at most one run's entries."""

  def __init__(self, folder: str, run_entries: int,
               entries: Callable[[Any], Iterable[bytes]],
               write: Callable[[str, List[bytes]], Any]):
    super().__init__()
    self._folder = folder
    self._run_entries = run_entries
    self._entries_of = entries
    self._write = write

  def start_bundle(self):
    self._entries: List[bytes] = []
    self._runs: List[Any] = []

  def process(self, element):
    for packed in self._entries_of(element):
      self._entries.append(packed)
      if len(self._entries) >= self._run_entries:
        self._spill()
    return []

  def _spill(self) -> None:
    path = FileSystems.join(self._folder, f'run-{uuid.uuid4().hex}')
    self._runs.append(self._write(path, self._entries))
    self._entries = []

  def finish_bundle(self):
    if self._entries:
      self._spill()
    for run in self._runs:
      yield WindowedValue(run, MIN_TIMESTAMP, [GlobalWindow()])
    self._runs = []
