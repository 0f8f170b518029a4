"""The sorted run files of an external sort (the duplicate index, the JSON-lines report
files), read a block at a time."""
from __future__ import annotations

from typing import BinaryIO, Callable, Iterator, Optional

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
