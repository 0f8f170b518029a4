"""An external sort of keyed entries in bounded memory, for annotation files of any size
(COCO's join of images and annotations, Open Images' grouping by image): entries are
held until a shared budget is spent, written as sorted runs (`sorted_runs.RunSpiller`) and
merged back a block of each run at a time (`sorted_runs.read_entries`)."""
from __future__ import annotations

import heapq
import os
import pickle
import struct
import sys
import uuid
from typing import Any, Callable, Iterator, List, Tuple

from tfrecorder_component.io import sorted_runs

MAX_OPEN_RUNS = 64  # runs merged at once; more are merged into longer runs first


class SortBudget:
  """The bytes of entries the ExternalSorts of one parse hold together; past `limit`,
  every one of them writes what it holds as a run."""

  def __init__(self, limit: int):
    self.limit = limit
    self.held = 0
    self.sorters: List['ExternalSort'] = []

  def take(self, size: int) -> None:
    self.held += size
    if self.held > self.limit:
      self.spill()

  def spill(self) -> None:
    for sorter in self.sorters:
      sorter.spill()
    self.held = 0


def deep(function: Callable[..., Any], *args, **kwargs) -> Any:
  """`function(*args)` (pickle's dumps or loads), given recursion enough for a value
  nested as deep as `json` reads (pickle takes two levels of recursion for each of
  JSON's)."""
  try:
    return function(*args, **kwargs)
  except RecursionError:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit * 3)
    try:
      return function(*args, **kwargs)
    finally:
      sys.setrecursionlimit(limit)


def unpacked_value(data: bytes) -> Any:
  """The value of an ExternalSort entry (`entries`)."""
  return deep(pickle.loads, data)


class ExternalSort:
  """An external sort of entries (a key, a pickled value), gathered in memory until the
  budget is spent, then written as a sorted run (`steps.sorted_runs.RunSpiller`); read back
  merged, a block of each run at a time (`steps.sorted_runs.read_entries`).

  An entry is its key's length, the key, its value's length and the value, compared
  as bytes: entries sort by key length, then key. Keys must be distinct. Runs are files
  in `folder` (local temporary disk), removed with it by the caller."""

  _LENGTH = struct.Struct('>I')
  _OVERHEAD = 64  # bytes Python spends on an entry held in memory beyond its own

  def __init__(self, folder: str, budget: SortBudget):
    self._folder = folder
    self._budget = budget
    self._spiller = sorted_runs.RunSpiller(folder, sys.maxsize, self._write)
    budget.sorters.append(self)

  def add(self, key: bytes, value: object) -> None:
    self.add_packed(key, deep(pickle.dumps, value, protocol=pickle.HIGHEST_PROTOCOL))

  def add_packed(self, key: bytes, data: bytes) -> None:
    entry = b''.join((self._LENGTH.pack(len(key)), key, self._LENGTH.pack(len(data)), data))
    self._spiller.add((entry,))
    self._budget.take(len(entry) + self._OVERHEAD)

  def spill(self) -> None:
    self._spiller.spill()

  def discard(self) -> None:
    """Drops every entry (those of a list given twice: the first one's)."""
    self._spiller.spill()
    for path in self._spiller.runs:
      if os.path.exists(path):  # not merged into a longer run (`merged`) already
        os.remove(path)
    self._spiller.runs.clear()

  def entries(self) -> Iterator[Tuple[bytes, bytes]]:
    """Every entry, as (key, pickled value), in key order."""
    return self.merged(self)

  @classmethod
  def merged(cls, *sorters: 'ExternalSort') -> Iterator[Tuple[bytes, bytes]]:
    """The entries of all of `sorters`, as (key, pickled value), in key order."""
    paths = []
    for sorter in sorters:
      sorter.spill()
      paths += sorter._spiller.runs  # pylint: disable=protected-access
    folder = sorters[0]._folder  # pylint: disable=protected-access
    while len(paths) > MAX_OPEN_RUNS:  # longer runs first, so that few files are open
      merged = os.path.join(folder, f'run-{uuid.uuid4().hex}')
      with open(merged, 'wb') as f:
        for entry in heapq.merge(*map(cls._entries, paths[:MAX_OPEN_RUNS])):
          f.write(entry)
      for path in paths[:MAX_OPEN_RUNS]:
        os.remove(path)
      paths = paths[MAX_OPEN_RUNS:] + [merged]
    size = cls._LENGTH.size
    for entry in heapq.merge(*map(cls._entries, paths)):
      at = size + cls._LENGTH.unpack_from(entry)[0]
      yield entry[size:at], entry[at + size:]

  @classmethod
  def _size(cls, buffer: bytes, at: int) -> int:
    """The size of the entry at `buffer[at]`, or more than is there while its value's
    length is not (`steps.sorted_runs.read_entries`)."""
    size = cls._LENGTH.size
    key_end = at + size + cls._LENGTH.unpack_from(buffer, at)[0]
    if len(buffer) < key_end + size:
      return key_end + size - at
    return key_end + size + cls._LENGTH.unpack_from(buffer, key_end)[0] - at

  @classmethod
  def _entries(cls, path: str) -> Iterator[bytes]:
    with open(path, 'rb') as f:
      yield from sorted_runs.read_entries(f, cls._size, cls._LENGTH.size, path)

  @staticmethod
  def _write(path: str, entries: List[bytes]) -> str:
    entries.sort()
    with open(path, 'wb') as f:
      f.write(b''.join(entries))
    return path
