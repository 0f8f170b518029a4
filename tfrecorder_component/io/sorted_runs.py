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
  bytes, read BLOCK_BYTES at a time.

  Linear in the bytes read, however long an entry is: the blocks are appended to one
  `bytearray` (amortised growth) and what has been yielded is cut from its front (which
  CPython does without moving the rest), so an entry spanning n blocks costs O(n), not
  the O(n^2) of `bytes += block` (issue 65: a 4M-point COCO polygon's entry, ~36 MB,
  took 20x a 1M-point one's time).

  Args:
    f: A binary file open for reading, standing at the first entry to read.
    entry_size: `entry_size(buffer, at)` gives the size in bytes of the entry at `at`
      from its first `header_size` bytes (more than `buffer` holds while those do not
      tell it all); `buffer` is a bytearray (read it with `struct.unpack_from`).
    header_size: The bytes an entry must have in the buffer before `entry_size` is
      asked its size.
    name: The file's path or name, for the errors.
    length: The bytes to read from where `f` stands (a slice of the file); None: to
      its end.

  Raises:
    ValueError: `f` ends inside an entry, or before `length` bytes.
  """
  pending = bytearray()
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
    with memoryview(pending) as view:  # released before `pending` is cut or grows
      while len(pending) - at >= header_size:
        size = entry_size(pending, at)
        if len(pending) - at < size:
          break
        yield bytes(view[at:at + size])
        at += size
    del pending[:at]
  if pending:
    raise ValueError(f'{name} ends early')


class RunSpiller:
  """Entries (bytes) gathered until there are `run_entries`, then `write(path, entries)`
  writes them, sorted, as a new run file in `folder`; `runs` holds what each `write`
  returned. So one process holds at most one run's entries (a Beam bundle's in
  `beam.sorted_runs.SpillRuns`, a local worker's in `engines/local/worker.py`).

  Args:
    folder: The folder the run files are made in: a local path or a URI.
    run_entries: The entries held before they are written as a run; `sys.maxsize`:
      only when `spill` is called.
    write: `write(path, entries)` sorts `entries` and writes them to the new file
      `path` (`files.join(folder, 'run-<uuid>')`); what it returns (the path, in this
      package) is appended to `runs`.
  """

  def __init__(self, folder: str, run_entries: int, write: Callable[[str, List[bytes]], Any]):
    self._folder = folder
    self._run_entries = run_entries
    self._write = write
    self._entries: List[bytes] = []
    self.runs: List[Any] = []

  def add(self, entries: Iterable[bytes]) -> None:
    """Holds `entries`, writing a run each time `run_entries` are held.

    Args:
      entries: Packed entries, in any order.
    """
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
