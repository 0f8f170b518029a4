"""Spilling a bundle's entries into the sorted run files of an external sort (the
duplicate index, the JSON-lines report files): `io.sorted_runs.RunSpiller` per bundle;
`io.sorted_runs` reads them back."""
from __future__ import annotations

from typing import Any, Callable, Iterable, List

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from tfrecorder_component.io.sorted_runs import RunSpiller


class SpillRuns(beam.DoFn):
  """Elements in; at the end of each bundle, what `write` returned for each run file it
  wrote. A bundle's entries (bytes, from `entries(element)`) are gathered until there
  are `run_entries`, then `write(path, entries)` writes them, sorted, as a new run file
  in `folder`; so a worker holds at most one run's entries.

  Args:
    entries: A function of an element to its entries, packed bytes that `write` sorts.
    folder: The folder (any file system the workers reach) the run files are written
      into, as `run-<random hex>`.
    run_entries: Entries gathered before they are written as a run.
    write: Writes a run: called with the run file's path and the list of entries, which
      it sorts; what it returns is emitted at the end of the bundle.
  """

  def __init__(self, folder: str, run_entries: int,
               entries: Callable[[Any], Iterable[bytes]],
               write: Callable[[str, List[bytes]], Any]):
    super().__init__()
    self._folder = folder
    self._run_entries = run_entries
    self._entries_of = entries
    self._write = write

  def start_bundle(self):
    self._spiller = RunSpiller(self._folder, self._run_entries, self._write)

  def process(self, element):
    """Gathers the element's entries; emits nothing (the runs leave in `finish_bundle`).

    Args:
      element: An input element, passed to `entries`.
    """
    self._spiller.add(self._entries_of(element))
    return []

  def finish_bundle(self):
    self._spiller.spill()
    for run in self._spiller.runs:
      yield WindowedValue(run, MIN_TIMESTAMP, [GlobalWindow()])
