"""Duplicate images found in Beam by an external sort (`steps.duplicates`): each bundle
spills sorted runs of its records' entries, the hash ranges are merged in parallel."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import apache_beam as beam

from tfrecorder_component.io import files
from tfrecorder_component.engines.beam.sorted_runs import SpillRuns
from tfrecorder_component.steps import duplicates

__all__ = ['FindDuplicates']


class _MergeRange(beam.DoFn):
  """Merges one hash range of the runs (`duplicates.merge_range`)."""

  def process(self, task):
    yield from duplicates.merge_range(task)


def _write_run(path: str, entries: List[bytes]) -> Tuple[str, int]:
  return path, duplicates.write_run(path, entries)


def _remove(index_dir: str, unused_merged: int) -> None:
  files.remove(index_dir)


class FindDuplicates(beam.PTransform):
  """Finds records with equal content hashes; emits one dict per hash seen more than once.

  Catches the same image listed twice and identical bytes under different names, and
  flags groups that span splits (test data leaking into training). Input: RecordStat
  lists. `index_dir`: a folder for the sorted runs (removed at the end), reachable by
  every worker; `run_entries` and `range_bytes` size the runs and the merge ranges.

  Args:
    index_dir: The folder (any file system the workers reach) the sorted runs are
      written into; removed once every range is merged.
    run_entries: Entries a worker sorts in memory before writing them as a run.
    range_bytes: About how many bytes of entries one merge task reads: the runs' total
      over this is the number of hash ranges merged in parallel (1 to 256).
  """

  def __init__(self, index_dir: str, run_entries: int = duplicates.RUN_ENTRIES,
               range_bytes: int = duplicates.RANGE_BYTES):
    super().__init__()
    self._index_dir = index_dir
    self._run_entries = run_entries
    self._range_bytes = range_bytes

  def expand(self, stats):
    """The repeated hashes, one dict each (`duplicates.describe`: the hash and its
    records, and whether they span splits).

    Args:
      stats: The PCollection of RecordStat lists, one per converted batch
        (ConvertBatches' `stats` output).
    """
    spilled = (stats
               | 'SpillSortedRuns' >> beam.ParDo(SpillRuns(
                   self._index_dir, self._run_entries, duplicates.entries, _write_run))
               | 'AllRuns' >> beam.combiners.ToList())
    repeated = (spilled
                | 'HashRanges' >> beam.FlatMap(duplicates.ranges, self._range_bytes)
                | 'SpreadRanges' >> beam.Reshuffle()
                | 'MergeRange' >> beam.ParDo(_MergeRange()).with_output_types(Dict[str, Any]))
    merged = repeated | 'Merged' >> beam.combiners.Count.Globally()
    _ = spilled | 'RemoveIndex' >> beam.Map(lambda _, n, d=self._index_dir: _remove(d, n),
                                            beam.pvalue.AsSingleton(merged))
    return repeated
