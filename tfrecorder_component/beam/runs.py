"""Spilling a bundle's entries into the sorted run files of an external sort (the
duplicate index, the JSON-lines report files); `steps.runs` reads them back."""
from __future__ import annotations

import uuid
from typing import Any, Callable, Iterable, List

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from tfrecorder_component import files


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
    path = files.join(self._folder, f'run-{uuid.uuid4().hex}')
    self._runs.append(self._write(path, self._entries))
    self._entries = []

  def finish_bundle(self):
    if self._entries:
      self._spill()
    for run in self._runs:
      yield WindowedValue(run, MIN_TIMESTAMP, [GlobalWindow()])
    self._runs = []
