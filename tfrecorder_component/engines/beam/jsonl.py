"""The report's JSON-lines files written in Beam by an external sort (`steps.jsonl`):
each bundle spills its sorted runs, one step merges them."""
from __future__ import annotations

from typing import Any, Callable, Dict

import apache_beam as beam

from tfrecorder_component.engines.beam.sorted_runs import SpillRuns
from tfrecorder_component.steps import jsonl
from tfrecorder_component.steps.jsonl import RUN_LINES, row_key

__all__ = ['WriteSortedJsonLines', 'row_key']


class WriteSortedJsonLines(beam.PTransform):
  """Writes dicts as one JSON object a line into the file `path`, in the order
  of `key(dict)` (bytes; `row_key` builds one), then of the line; an empty file when
  there are none. `scratch_dir`: a folder for the sorted runs, reachable by every worker,
  removed once the file is written. Returns the file's path, once written.

  Args:
    key: The sort key of a dict, as bytes (`row_key(source, row, ...)`, or a content
      hash's bytes).
    path: The JSON-lines file to write, on any file system Beam reaches; replaced.
    run_lines: Lines a worker sorts in memory before writing them as a run.
    scratch_dir: The folder for the sorted runs, reachable by every worker; removed
      once the file is written.
  """

  def __init__(self, path: str, key: Callable[[Dict[str, Any]], bytes], scratch_dir: str,
               run_lines: int = RUN_LINES):
    super().__init__()
    self._path = path
    self._key = key
    self._scratch_dir = scratch_dir
    self._run_lines = run_lines

  def expand(self, dicts):
    """One element, `path`, once the file is written.

    Args:
      dicts: The PCollection of JSON-serializable dicts to write, one a line.
    """
    return (dicts
            | 'SpillSortedRuns' >> beam.ParDo(SpillRuns(
                self._scratch_dir, self._run_lines,
                lambda record, key=self._key: (jsonl.entry(record, key),), jsonl.write_run))
            | 'AllRuns' >> beam.combiners.ToList()
            | 'Merge' >> beam.Map(jsonl.merge_runs, self._path, self._scratch_dir))
