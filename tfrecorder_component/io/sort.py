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
  every one of them writes what it holds as a run.

  Args:
    limit: The bytes the sorts may hold together, each entry counted with what Python
      spends on it in memory.
  """

  def __init__(self, limit: int):
    self.limit = limit
    self.held = 0
    self.sorters: List['ExternalSort'] = []

  def take(self, size: int) -> None:
    """Counts an entry just held; past `limit`, every sort spills and the count starts
    from 0.

    Args:
      size: The bytes the entry takes in memory (its packed length plus
        `ExternalSort`'s allowance for Python's own).
    """
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
  JSON's).

  Args:
    function: The function to call: `pickle.dumps` or `pickle.loads`.
    args: Its positional arguments: the value to pickle, or the pickled bytes.
    kwargs: Its keyword arguments (`protocol` for `dumps`).
  """
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
  """The value of an ExternalSort entry (`entries`).

  Args:
    data: The entry's pickled value, as `entries` or `merged` yields it beside the key.
  """
  return deep(pickle.loads, data)


class ExternalSort:
  """An external sort of entries (a key, a pickled value), gathered in memory until the
  budget is spent, then written as a sorted run (`io.sorted_runs.RunSpiller`); read back
  merged, a block of each run at a time (`io.sorted_runs.read_entries`).

  An entry is its key's length, the key, its value's length and the value, compared
  as bytes: entries sort by key length, then key. Keys must be distinct. Runs are files
  in `folder` (local temporary disk), removed with it by the caller.

  Args:
    folder: An existing local folder for the run files, which the caller creates and
      removes.
    budget: The memory budget this sort shares with the parse's other sorts; the sort
      joins its `sorters`, so that any of them going past it spills them all.
  """

  _LENGTH = struct.Struct('>I')
  _OVERHEAD = 64  # bytes Python spends on an entry held in memory beyond its own

  def __init__(self, folder: str, budget: SortBudget):
    self._folder = folder
    self._budget = budget
    self._spiller = sorted_runs.RunSpiller(folder, sys.maxsize, self._write)
    budget.sorters.append(self)

  def add(self, key: bytes, value: object) -> None:
    """Adds an entry, its value pickled here.

    Args:
      key: The entry's sort key, distinct from every other key of this sort.
      value: Any picklable value; `unpacked_value` gives it back.
    """
    self.add_packed(key, deep(pickle.dumps, value, protocol=pickle.HIGHEST_PROTOCOL))

  def add_packed(self, key: bytes, data: bytes) -> None:
    """Adds an entry whose value is already pickled (one read back from a sort).

    Args:
      key: The entry's sort key, distinct from every other key of this sort.
      data: The pickled value, stored as it is; `unpacked_value` reads it.
    """
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
    """The entries of all of `sorters`, as (key, pickled value), in key order.

    Args:
      sorters: One sort or more; each writes what it holds as a run first. Past
        MAX_OPEN_RUNS runs, the first one's folder takes the longer runs merged first.
    """
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
    length is not (`io.sorted_runs.read_entries`)."""
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
