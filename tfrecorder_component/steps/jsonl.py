"""The report's JSON-lines files (errors.jsonl, box_issues.jsonl, duplicates.jsonl)
written in a fixed order by an external sort, so that no step holds their lines.

Each worker sorts its lines by a key (where a line comes from: manifest and row, or a
content hash) in runs of at most `RUN_LINES`, written as files into a scratch folder;
one step then merges every run into the file, a block of each run at a time, and
removes the runs. The order does not depend on the runner or on how rows were spread
over workers.
"""
from __future__ import annotations

import heapq
import json
import struct
from typing import Any, Callable, Dict, Iterator, List, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.io import sorted_runs

__all__ = ['RUN_LINES', 'entry', 'merge_runs', 'row_key', 'write_run']

RUN_LINES = 20_000  # lines a worker sorts in memory before writing a run
_LENGTHS = struct.Struct('>II')  # key length, line length; then the key and the line


def row_key(*fields) -> bytes:
  """A sort key of (source, row numbers...): the source's text, then each number (None
  first), so keys compare as the fields do.

  Args:
    fields: the source (a manifest path, or any value, taken as text) and then the
      numbers that place the line in it (a row, a box's index), each a whole number of
      0 or more or None.
  """
  source, numbers = fields[0], fields[1:]
  return (str(source).encode('utf-8', 'surrogatepass') + b'\0'
          + b''.join(struct.pack('>Q', 0 if n is None else max(int(n) + 1, 0))
                     for n in numbers))


def _entry_size(buffer: bytes, at: int) -> int:
  key_length, line_length = _LENGTHS.unpack_from(buffer, at)
  return _LENGTHS.size + key_length + line_length


def _sort_key(entry: bytes) -> Tuple[bytes, bytes]:
  key_length, _ = _LENGTHS.unpack_from(entry)
  return entry[_LENGTHS.size:_LENGTHS.size + key_length], entry[_LENGTHS.size + key_length:]


def _line(entry: bytes) -> bytes:
  key_length, _ = _LENGTHS.unpack_from(entry)
  return entry[_LENGTHS.size + key_length:]


def entry(record: Dict[str, Any], key: Callable[[Dict[str, Any]], bytes]) -> bytes:
  """A dict's run entry: the lengths, its key (`key(record)`) and its JSON line.

  Args:
    record: the line's dict, JSON-serializable; written with its keys sorted.
    key: makes the line's sort key (bytes) from the dict (`row_key` builds one).
  """
  sort_key = key(record)
  line = json.dumps(record, ensure_ascii=False, sort_keys=True).encode('utf-8') + b'\n'
  return _LENGTHS.pack(len(sort_key), len(line)) + sort_key + line


def write_run(path: str, entries: List[bytes]) -> str:
  """Writes `entries`, sorted by key then line, as a run file at `path`; returns `path`.

  Args:
    path: the new run file, in the scratch folder (any file system).
    entries: run entries (`entry`); sorted in place.
  """
  entries.sort(key=_sort_key)
  with files.create_file(path) as f:
    f.write(b''.join(entries))
  return path


def _read_run(path: str) -> Iterator[bytes]:
  with files.open_file(path) as f:
    yield from sorted_runs.read_entries(f, _entry_size, _LENGTHS.size, path)


def merge_runs(run_paths: List[str], path: str, scratch_dir: str) -> str:
  """Writes the lines of every run, merged in key order, into `path`; removes the runs.
  Returns `path`.

  Args:
    run_paths: the run files (`write_run`), in any order; none writes an empty file.
    path: the JSON-lines file to write (errors.jsonl, ...), replaced if it is there.
    scratch_dir: the folder the runs were written in; removed whole once the file is
      written.
  """
  with files.create_file(path) as out:
    for entry in heapq.merge(*(_read_run(r) for r in sorted(run_paths)), key=_sort_key):
      out.write(_line(entry))
  files.remove(scratch_dir)
  return path
