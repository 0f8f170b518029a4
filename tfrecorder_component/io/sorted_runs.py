"""The sorted run files of an external sort (the duplicate index, the JSON-lines report
files): written a process's entries at a time, read a block at a time."""
from __future__ import annotations

import uuid
from typing import Any, BinaryIO, Callable, Iterable, Iterator, List, Optional

from tfrecorder_component.io import files

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


class RunSpiller:
  """Entries (bytes) gathered until there are `run_entries`, then `write(path, entries)`
  writes them, sorted, as a new run file in `folder`; `runs` holds what each `write`
  returned. So one process holds at most one run's entries (a Beam bundle's in
  `beam.sorted_runs.SpillRuns`, a local worker's in `engines/local_pool.py`)."""

  def __init__(self, folder: str, run_entries: int, write: Callable[[str, List[bytes]], Any]):
    self._folder = folder
    self._run_entries = run_entries
    self._write = write
    self._entries: List[bytes] = []
    self.runs: List[Any] = []

  def add(self, entries: Iterable[bytes]) -> None:
    for packed in entries:
      self._entries.append(packed)
      if len(self._entries) >= self._run_entries:
        self.spill()

  def spill(self) -> None:
    """Writes the entries gathered so far as a run, if there are any."""
    if self._entries:
      self.runs.append(self._write(files.join(self._folder, f'run-{uuid.uuid4().hex}'),
                                   self._entries))
      self._entries = []
