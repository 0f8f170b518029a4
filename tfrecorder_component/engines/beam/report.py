"""The run's report in Beam: the run's `run_plan.Tally` combined where the rows are
converted, duplicate images found, the JSON-lines files sorted, and `run_plan.finish`
once everything is counted."""
from __future__ import annotations

from typing import Any, Dict

import apache_beam as beam

from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.engines.beam.duplicates import FindDuplicates
from tfrecorder_component.engines.beam.jsonl import WriteSortedJsonLines
from tfrecorder_component.steps import report
from tfrecorder_component.steps import run_plan
from tfrecorder_component.steps.outputs import BOX_ISSUES, ERRORS, SAMPLES, STATS

__all__ = ['FindDuplicates', 'Summarize', 'WriteReport']


class _TallyFn(beam.CombineFn):
  """The run's `run_plan.Tally` of one of the converter's outputs (`tag`); Summarize
  combines each output on its own, so the runner pre-combines it where it is made: one
  combine after a Flatten made the runner keep every batch's counts (30,000 dicts at
  2,000,000 rows) until the end of the conversion."""

  def __init__(self, tag: str):
    super().__init__()
    self._tag = tag

  def create_accumulator(self):
    return run_plan.Tally()

  def add_input(self, acc, element):
    return acc.add(self._tag, element)

  def merge_accumulators(self, accumulators):
    accumulators = iter(accumulators)
    return next(accumulators).merge(accumulators)

  def extract_output(self, acc):
    return acc


class _DuplicateCountsFn(beam.CombineFn):
  """Duplicate groups -> their counts (`report.new_duplicate_counts`)."""

  def create_accumulator(self):
    return report.new_duplicate_counts()

  def add_input(self, acc, group: Dict[str, Any]):
    return report.add_duplicate(acc, group)

  def merge_accumulators(self, accumulators):
    return report.merge_duplicate_counts(accumulators)

  def extract_output(self, acc):
    return report.duplicate_counts(acc)


class Summarize(beam.PTransform):
  """(RecordStat lists, error dicts, box issue dicts, samples) -> the run's one
  `run_plan.Tally`: counts per split, label, object label, image format and size, error
  reason and box issue, the first failed rows and box issues, the samples per label."""

  def expand(self, pcolls):
    """One element, the run's Tally.

    Args:
      pcolls: A tuple of four PCollections: RecordStat lists (ConvertBatches' `stats`),
        error dicts (one per failed row), box issue dicts (one per dropped or clipped
        box) and (label, (uri, thumbnail)) samples.
    """
    tallies = [pcoll | label >> beam.CombineGlobally(_TallyFn(tag))
               for pcoll, label, tag in zip(pcolls, _TALLIED, (STATS, ERRORS, BOX_ISSUES,
                                                               SAMPLES))]
    return tallies[0] | 'Combine' >> beam.Map(
        lambda tally, *others: run_plan.Tally().merge([tally, *others]),
        *(beam.pvalue.AsSingleton(t) for t in tallies[1:])).with_output_types(run_plan.Tally)


# The labels of Summarize's combines, one an output.
_TALLIED = ('CountStats', 'CountErrors', 'CountBoxIssues', 'FirstSamples')


class WriteReport(beam.PTransform):
  """Writes a run's report into its `report_dir`: errors.jsonl and box_issues.jsonl in
  manifest row order, duplicates.jsonl in hash order (each an external sort, in
  `report_dir/.work`), then, once everything is counted and those files are written,
  what `run_plan.finish` writes: summary.json, report.html and the output's index.

  Input: a dict of PCollections: 'tally' (Summarize) and 'summarized'
  (`run_plan.summarize`), one element each; 'errors', 'box_issues' (dicts), 'stats'
  (RecordStat lists), 'layouts' (none, or the extra layouts written:
  `layouts.base.finish`). Returns one element once the last file is written.

  Args:
    outputs: The run's outputs (`run_plan.RunOutputs`): its report folder, on any file
      system Beam reaches, its sources and options, which the summary's warnings name.
  """

  def __init__(self, outputs: run_plan.RunOutputs):
    super().__init__()
    self._outputs = outputs

  def expand(self, pcolls):
    """One element once summary.json, report.html and examples.json are written.

    Args:
      pcolls: The dict of PCollections described above ('tally', 'summarized',
        'errors', 'box_issues', 'stats', 'layouts').
    """
    report_dir = self._outputs.report_dir
    write_lines = lambda lines: WriteSortedJsonLines(lines.path(report_dir), lines.key,
                                                     lines.work_dir(report_dir))
    duplicates = pcolls['stats'] | 'FindDuplicates' >> FindDuplicates(
        output_paths.work_dir(report_dir, output_paths.DUPLICATE_INDEX_DIR))
    written = ((pcolls['errors'] | 'WriteErrors' >> write_lines(run_plan.ERROR_LINES),
                duplicates
                | 'RepeatedImages' >> beam.Filter(run_plan.DUPLICATE_LINES.keep)
                | 'WriteDuplicates' >> write_lines(run_plan.DUPLICATE_LINES),
                pcolls['box_issues'] | 'WriteBoxIssues' >> write_lines(
                    run_plan.BOX_ISSUE_LINES))
               | 'JsonLinesWritten' >> beam.Flatten())
    duplicate_counts = (duplicates
                        | 'CountDuplicates' >> beam.CombineGlobally(_DuplicateCountsFn()))
    return pcolls['summarized'] | 'WriteSummary' >> beam.Map(
        _finish, self._outputs, tally=beam.pvalue.AsSingleton(pcolls['tally']),
        duplicates=beam.pvalue.AsSingleton(duplicate_counts),
        layouts=beam.pvalue.AsList(pcolls['layouts']),
        unused_written=beam.pvalue.AsList(written))  # the summary comes last


def _finish(summarized, outputs, tally, duplicates, layouts, unused_written) -> None:
  """`run_plan.finish`, with Beam's side input of the layouts: [] or [what was written]."""
  run_plan.finish(outputs, summarized, tally, duplicates, layouts[0] if layouts else None)
