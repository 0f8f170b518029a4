"""The run's report in Beam: counts per split, label, format and reason, duplicate
images, and summary.json and report.html written once from them."""
from __future__ import annotations

from typing import Any, Dict

import apache_beam as beam

from tfrecorder_component.io import files
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.engines.beam.duplicates import FindDuplicates
from tfrecorder_component.engines.beam.jsonl import WriteSortedJsonLines
from tfrecorder_component.steps import duplicates as duplicates_lib
from tfrecorder_component.steps import report
from tfrecorder_component.steps.convert_chunks import SAMPLES_PER_LABEL

__all__ = ['FindDuplicates', 'Summarize', 'WriteReport']


class _CountsFn(beam.CombineFn):
  """A run's counts (`report.new_counts`, `report.count`); Summarize combines each
  input on its own, so the runner pre-combines it where it is made: one combine after a
  Flatten made the runner keep every batch's counts (30,000 dicts at 2,000,000 rows)
  until the end of the conversion."""

  def create_accumulator(self):
    return report.new_counts()

  def add_input(self, acc, element):
    return report.count(acc, element)

  def merge_accumulators(self, accumulators):
    accumulators = iter(accumulators)
    out = next(accumulators)
    for acc in accumulators:
      report.add_counts(out, acc)
    return out

  def extract_output(self, acc):
    return acc


def _summary(counts, errors, box_issues) -> Dict[str, Any]:
  """The summary of the three inputs' counts (`_CountsFn` outputs)."""
  fn = _CountsFn()
  return report.summary(fn.merge_accumulators([fn.create_accumulator(), counts, errors,
                                               box_issues]))


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
  """(RecordStat lists, error dicts, box issue dicts) -> one summary dict: counts per
  split, label, object label, image format and size, error reason and box issue."""

  def expand(self, pcolls):
    """One element, the summary dict (`report.summary`).

    Args:
      pcolls: A tuple of three PCollections: RecordStat lists (ConvertBatches' `stats`),
        error dicts (one per failed row) and box issue dicts (one per dropped or
        clipped box).
    """
    stats, errors, box_issues = pcolls
    counts = lambda pcoll, label: pcoll | label >> beam.CombineGlobally(_CountsFn())
    errors = counts(errors | 'ErrorReasons' >> beam.Map(report.error_count), 'CountErrors')
    box_issues = counts(box_issues | 'BoxIssueReasons' >> beam.Map(report.box_issue_count),
                        'CountBoxIssues')
    return (counts(stats | 'CountStats' >> beam.Map(report.stat_counts), 'CountAllStats')
            | 'Combine' >> beam.Map(_summary, beam.pvalue.AsSingleton(errors),
                                    beam.pvalue.AsSingleton(box_issues)
                                    ).with_output_types(Dict[str, Any]))


class WriteReport(beam.PTransform):
  """Writes a run's report into `report_dir`: errors.jsonl and box_issues.jsonl in
  manifest row order, duplicates.jsonl in hash order (each an external sort, in
  `report_dir/.work`), then summary.json and report.html once everything is counted
  and those files are written.

  Input: a dict of PCollections: 'summary' (from Summarize) and 'held' (`held_labels`),
  one element each; 'errors', 'box_issues' (dicts), 'stats' (RecordStat lists) and
  'samples' ((label, (uri, thumbnail)) pairs), 'layouts' (none, or the extra layouts
  written: `layouts.base.finish`). Returns one element once summary.json and
  report.html are written.

  Args:
    buckets: The run's hash-bucket splits as (name, buckets) pairs: where they are not
      the default ones, a split of them that got no record is warned of.
    report_dir: The report's folder, on any file system Beam reaches; its `.work`
      subfolder holds the external sorts' runs.
    sources: The run's ManifestSources, which the report's warnings name.
  """

  def __init__(self, report_dir: str, sources=(), buckets=()):
    super().__init__()
    self._report_dir = report_dir
    self._sources = list(sources)  # the run's ManifestSources, which its warnings name
    self._buckets = tuple(buckets)  # its hash-bucket splits, whose emptiness it warns of

  def expand(self, pcolls):
    """One element once summary.json and report.html are written.

    Args:
      pcolls: The dict of PCollections described above ('summary', 'held', 'errors',
        'box_issues', 'stats', 'samples', 'layouts').
    """
    errors, box_issues = pcolls['errors'], pcolls['box_issues']
    write_lines = lambda name, key: WriteSortedJsonLines(
        files.join(self._report_dir, name + output_paths.JSON_LINES), key,
        output_paths.work_dir(self._report_dir, name))
    duplicates = pcolls['stats'] | 'FindDuplicates' >> FindDuplicates(
        output_paths.work_dir(self._report_dir, output_paths.DUPLICATE_INDEX_DIR))
    written = ((errors | 'WriteErrors' >> write_lines(
                    output_paths.ERRORS_FILE, report.error_key),
                duplicates
                | 'RepeatedImages' >> beam.Filter(
                    lambda d: not duplicates_lib.is_source_id_group(d))
                | 'WriteDuplicates' >> write_lines(
                    output_paths.DUPLICATES_FILE, report.duplicate_key),
                box_issues | 'WriteBoxIssues' >> write_lines(
                    output_paths.BOX_ISSUES_FILE, report.box_issue_key))
               | 'JsonLinesWritten' >> beam.Flatten())
    duplicate_counts = (duplicates
                        | 'CountDuplicates' >> beam.CombineGlobally(_DuplicateCountsFn()))
    first = lambda pcoll, label, key: beam.pvalue.AsSingleton(
        pcoll | label >> beam.combiners.Top.Of(report.FIRST_ERRORS, key=key, reverse=True))
    return pcolls['summary'] | 'WriteSummary' >> beam.Map(
        report.write_summary, self._report_dir, held=beam.pvalue.AsSingleton(pcolls['held']),
        duplicates=beam.pvalue.AsSingleton(duplicate_counts),
        samples=beam.pvalue.AsDict(
            pcolls['samples']
            | 'SamplesPerLabel' >> beam.combiners.Top.SmallestPerKey(SAMPLES_PER_LABEL)),
        errors=first(errors, 'FirstErrors', report.error_order),
        box_issues=first(box_issues, 'FirstBoxIssues', report.box_issue_order),
        unused_written=beam.pvalue.AsList(written),  # the summary comes last
        layouts=beam.pvalue.AsList(pcolls['layouts']), sources=self._sources,
        buckets=self._buckets)
