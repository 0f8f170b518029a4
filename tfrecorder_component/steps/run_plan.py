"""What a run leaves behind once its rows are converted, declared once for both engines.

The per-row work (`convert_chunks.ChunkConverter`) gives tagged outputs (`outputs`). An
engine only spreads that work and gathers what it gives: the local pool
(`engines/local/`) in forked processes, each keeping a `Tally` and sorted runs that its
parent merges; Beam (`engines/beam/`) in combines whose accumulator is a `Tally` and in
sorts. Each hands its results here as the same typed values, in this order:

    Tally (counts, first failed rows and box issues, samples per label)
      -> summarize -> Summarized (the summary's counts, the labels held)
      -> write_label_files                       labels.txt, label_map.pbtxt, .csv
      -> layout_context   (the engine writes the extra layouts from it)
      -> finish(duplicate counts, layouts)       summary.json, report.html, examples.json

and writes the report's JSON-lines files, each declared by a `JsonLines` (its file, its
order, which entries it keeps: ERROR_LINES, BOX_ISSUE_LINES, DUPLICATE_LINES).
"""
from __future__ import annotations

import dataclasses
import heapq
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.options import ConversionOptions, ManifestSource
from tfrecorder_component.output import examples_json
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.output.layouts import base as layouts_base
from tfrecorder_component.record import labels as labels_lib
from tfrecorder_component.steps import duplicates as duplicates_lib
from tfrecorder_component.steps import report
from tfrecorder_component.steps.convert_chunks import SAMPLES_PER_LABEL
from tfrecorder_component.steps.outputs import BOX_ISSUES, ERRORS, SAMPLES, STATS

__all__ = ['BOX_ISSUE_LINES', 'DUPLICATE_LINES', 'ERROR_LINES', 'JsonLines', 'RunOutputs',
           'Summarized', 'Tally', 'finish', 'layout_context', 'summarize',
           'write_label_files']


@dataclasses.dataclass(frozen=True)
class JsonLines:
  """One JSON-lines file of the report.

  Attributes:
    name: Its name, without `.jsonl`.
    key: The sort key of its entries (its order: `jsonl.entry`).
    keep: Whether an entry is written.
  """
  name: str
  key: Callable[[Dict[str, Any]], bytes]
  keep: Callable[[Dict[str, Any]], bool] = lambda entry: True

  def path(self, report_dir: str) -> str:
    """The file in a report folder.

    Args:
      report_dir: The run's report folder.
    """
    return files.join(report_dir, self.name + output_paths.JSON_LINES)

  def work_dir(self, report_dir: str) -> str:
    """The scratch folder of its sorted runs, in the report folder's work folder.

    Args:
      report_dir: The run's report folder.
    """
    return output_paths.work_dir(report_dir, self.name)


ERROR_LINES = JsonLines(output_paths.ERRORS_FILE, report.error_key)
BOX_ISSUE_LINES = JsonLines(output_paths.BOX_ISSUES_FILE, report.box_issue_key)
# A source id several images hold is counted in summary.json, not listed.
DUPLICATE_LINES = JsonLines(output_paths.DUPLICATES_FILE, report.duplicate_key,
                            lambda group: not duplicates_lib.is_source_id_group(group))

# The converter's outputs a Tally takes (`Tally.add`).
TALLIED = frozenset((STATS, ERRORS, BOX_ISSUES, SAMPLES))
# What each tagged output adds to the counts, and the order of the first ones listed.
_COUNTED = {STATS: report.stat_counts, ERRORS: report.error_count,
            BOX_ISSUES: report.box_issue_count}
_LISTED = {ERRORS: report.error_order, BOX_ISSUES: report.box_issue_order}


class Tally:
  """What a part of a run keeps of the converter's outputs for the summary: the counts
  (`report.new_counts`), the first `report.FIRST_ERRORS` failed rows and box issues (in
  `report.error_order`, `box_issue_order`) and the `SAMPLES_PER_LABEL` first samples of
  each label, by (uri, thumbnail). Any number of tallies merge into the run's, whatever
  rows each saw; each list holds at most twice what it keeps."""

  __slots__ = ('counts', 'listed', 'samples')

  def __init__(self):
    self.counts = report.new_counts()
    self.listed: Dict[str, List[Dict[str, Any]]] = {tag: [] for tag in _LISTED}
    self.samples: Dict[str, List[Tuple[str, bytes]]] = {}

  def add(self, tag: str, value) -> 'Tally':
    """Counts one output of the converter (STATS, ERRORS, BOX_ISSUES or SAMPLES: a
    batch's stats, an error or box issue dict, a (label, sample) pair); returns self.

    Args:
      tag: The output's tag (`steps.outputs`).
      value: The output, as the converter gave it (an error as it is written).
    """
    if tag == SAMPLES:
      label, sample = value
      kept = self.samples.setdefault(label, [])
      kept.append(sample)
      if len(kept) > 2 * SAMPLES_PER_LABEL:
        self.samples[label] = heapq.nsmallest(SAMPLES_PER_LABEL, kept)
      return self
    report.count(self.counts, _COUNTED[tag](value))
    if tag in _LISTED:
      listed = self.listed[tag]
      listed.append(value)
      if len(listed) > 2 * report.FIRST_ERRORS:
        self.listed[tag] = heapq.nsmallest(report.FIRST_ERRORS, listed, key=_LISTED[tag])
    return self

  def merge(self, others) -> 'Tally':
    """Adds every tally of `others` into this one; returns self.

    Args:
      others: Tallies of other parts of the run.
    """
    for other in others:
      report.add_counts(self.counts, other.counts)
      for tag, listed in other.listed.items():
        self.listed[tag] = heapq.nsmallest(report.FIRST_ERRORS, self.listed[tag] + listed,
                                           key=_LISTED[tag])
      for label, kept in other.samples.items():
        self.samples[label] = heapq.nsmallest(
            SAMPLES_PER_LABEL, self.samples.get(label, []) + kept)
    return self

  def first(self, tag: str) -> List[Dict[str, Any]]:
    """The first `report.FIRST_ERRORS` outputs tagged `tag` (ERRORS, BOX_ISSUES), in order.

    Args:
      tag: ERRORS or BOX_ISSUES.
    """
    return heapq.nsmallest(report.FIRST_ERRORS, self.listed[tag], key=_LISTED[tag])

  def first_samples(self) -> Dict[str, List[Tuple[str, bytes]]]:
    """{label: its first `SAMPLES_PER_LABEL` samples}, the contact sheet's images."""
    return {label: heapq.nsmallest(SAMPLES_PER_LABEL, kept)
            for label, kept in self.samples.items()}


@dataclasses.dataclass(frozen=True)
class RunOutputs:
  """Where a run writes and what it was asked (`ConvertManifests`' and
  `convert_locally`'s arguments).

  Attributes:
    sources: The run's manifests.
    split_dirs: {split: its output folder}; None for a validation.
    label_dir: Where the label files go; None for a validation.
    report_dir: The run's report folder.
    options: The run's options.
  """
  sources: Sequence[ManifestSource]
  split_dirs: Optional[Mapping[str, str]]
  label_dir: Optional[str]
  report_dir: str
  options: ConversionOptions


@dataclasses.dataclass(frozen=True)
class Summarized:
  """What the counts say once every row is tallied.

  Attributes:
    summary: The run's summary before its warnings, labels and duplicates
      (`report.summary`).
    held: Its vocabulary as the records hold it (`report.held_labels`).
  """
  summary: Dict[str, Any]
  held: Dict[str, Any]


def summarize(tally: Tally, vocabulary: Dict[str, Any]) -> Summarized:
  """The run's counts and held labels, once every row is tallied.

  Args:
    tally: The run's tally, every part's merged.
    vocabulary: The run's vocabulary (`VocabularyBuilder.vocabulary`).
  """
  summary = report.summary(tally.counts)
  return Summarized(summary, report.held_labels(summary, vocabulary))


def write_label_files(label_dir: str, held: Dict[str, Any]) -> None:
  """labels.txt, label_map.pbtxt and label_map.csv of the labels the records hold.

  Args:
    label_dir: The output's folder for them (local, or on object storage).
    held: `Summarized.held`.
  """
  labels_lib.write_label_files(label_dir, dict(zip(held['labels'], held['ids'])),
                               labels_lib.first_label_id(held['task']))


def layout_context(outputs: RunOutputs, summarized: Summarized) -> layouts_base.LayoutContext:
  """What the extra layouts are written with (`layouts.base.context`).

  Args:
    outputs: The run's outputs (its label_dir and split_dirs set).
    summarized: `summarize`'s result.
  """
  return layouts_base.context(summarized.summary, summarized.held, outputs.label_dir,
                              list(outputs.split_dirs))


def finish(outputs: RunOutputs, summarized: Summarized, tally: Tally,
           duplicates: Dict[str, Any], layouts: Optional[Dict[str, Any]]) -> None:
  """summary.json and report.html, then the output's examples.json: the run's last
  files, written once its records, layouts and JSON-lines files are.

  Args:
    outputs: The run's outputs.
    summarized: `summarize`'s result.
    tally: The run's tally (its first failed rows, box issues and samples).
    duplicates: The run's duplicate counts (`report.duplicate_counts`).
    layouts: What the extra layouts' writing gave (`layouts.base.finish`); None: none.
  """
  report.write_summary(summarized.summary, outputs.report_dir, summarized.held, duplicates,
                       tally.first_samples(), tally.first(ERRORS), tally.first(BOX_ISSUES),
                       [], layouts=layouts, sources=outputs.sources,
                       buckets=outputs.options.buckets)
  if outputs.label_dir is not None and outputs.split_dirs is not None:
    examples_json.write_index(summarized.summary, outputs.label_dir, list(outputs.split_dirs),
                              summarized.held['task'], layouts)
