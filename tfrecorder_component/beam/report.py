"""The run's report in Beam: counts per split, label, format and reason, duplicate
images, and summary.json and report.html written once from them."""
from __future__ import annotations

import heapq
import json
from typing import Any, Dict, List, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from tfrecorder_component import files
from tfrecorder_component import labels as labels_lib
from tfrecorder_component import layout
from tfrecorder_component import report_html
from tfrecorder_component.beam.convert import SAMPLES_PER_LABEL
from tfrecorder_component.beam.duplicates import FindDuplicates
from tfrecorder_component.beam.jsonl import WriteSortedJsonLines, row_key
from tfrecorder_component.record import RecordStat

__all__ = ['FindDuplicates', 'Summarize', 'WriteReport', 'held_labels']

FIRST_ERRORS = 50  # failed rows and box issues listed on report.html


def _stat_counts(stats: List[RecordStat]) -> Dict[str, Dict[str, int]]:
  """A batch's RecordStats as counts per split, label and object label: a few small
  dicts cross to the summary instead of a stat per record."""
  counts: Dict[str, Dict[str, int]] = {k: {} for k in _STAT_KINDS}

  def add(kind: str, key: str) -> None:
    counts[kind][key] = counts[kind].get(key, 0) + 1

  for stat in stats:
    add('records', stat.split)
    for label in stat.labels:
      add('labels', label)
      add('split_labels', f'{stat.split}\t{label}')
    for label in stat.objects:
      add('objects', label)
    add('formats', stat.image_format)
    add('sizes', stat.size_bucket)
  return counts


_STAT_KINDS = ('records', 'labels', 'split_labels', 'objects', 'formats', 'sizes')


def _add_counts(acc: Dict[str, Dict[str, int]], counts: Dict[str, Dict[str, int]]):
  """Adds `counts` ({kind: {key: n}}) into `acc`, in place; returns `acc`."""
  for kind, values in counts.items():
    target = acc[kind]
    for key, n in values.items():
      target[key] = target.get(key, 0) + n
  return acc


class _CountsFn(beam.CombineFn):
  """Counts records per split and per label (from `_stat_counts`), errors per reason and
  box issues per action and reason; outputs the counts (`_summary` makes the summary).
  Summarize combines each input on its own, so the runner pre-combines it where it is
  made: one combine after a Flatten made the runner keep every batch's counts (30,000
  dicts at 2,000,000 rows) until the end of the conversion."""

  def create_accumulator(self):
    return {k: {} for k in (*_STAT_KINDS, 'errors', 'box_issues')}

  def add_input(self, acc, element):
    if isinstance(element, tuple):  # ('errors' | 'box_issues', reason)
      kind, key = element
      acc[kind][key] = acc[kind].get(key, 0) + 1
      return acc
    return _add_counts(acc, element)

  def merge_accumulators(self, accumulators):
    accumulators = iter(accumulators)
    out = next(accumulators)
    for acc in accumulators:
      _add_counts(out, acc)
    return out

  def extract_output(self, acc):
    return acc


def _summary(counts, errors, box_issues) -> Dict[str, Any]:
  """The summary of the three inputs' counts (`_CountsFn` outputs)."""
  fn = _CountsFn()
  acc = fn.merge_accumulators([fn.create_accumulator(), counts, errors, box_issues])
  records = sum(acc['records'].values())
  failed = sum(acc['errors'].values())
  per_split: Dict[str, Dict[str, int]] = {}
  for key, n in sorted(acc['split_labels'].items()):
    split, label = key.split('\t', 1)
    per_split.setdefault(split, {})[label] = n
  return {
      'rows_read': records + failed,
      'records_written': records,
      'rows_failed': failed,
      'records_per_split': dict(sorted(acc['records'].items())),
      'records_per_label': dict(sorted(acc['labels'].items())),
      'errors_per_reason': dict(sorted(acc['errors'].items())),
      'objects_written': sum(acc['objects'].values()),
      'objects_per_label': dict(sorted(acc['objects'].items())),
      'box_issues': dict(sorted(acc['box_issues'].items())),
      'labels_per_split': per_split,
      'image_formats': dict(sorted(acc['formats'].items())),
      'image_sizes': dict(sorted(acc['sizes'].items())),
  }


FIRST_DUPLICATES = 10  # duplicate groups in summary.json, the first by their URIs


def _first_groups(groups: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
  return heapq.nsmallest(FIRST_DUPLICATES, groups, key=lambda g: (g['uris'], g['sha256']))


class _DuplicateCountsFn(beam.CombineFn):
  """Duplicate groups -> {'groups', 'extra_records', 'cross_split_groups', 'first'}: counts
  and the FIRST_DUPLICATES groups first by URI, whatever the number of groups."""

  def create_accumulator(self):
    return {'groups': 0, 'extra_records': 0, 'cross_split_groups': 0, 'first': []}

  def add_input(self, acc, group: Dict[str, Any]):
    acc['groups'] += 1
    acc['extra_records'] += len(group['uris']) - 1
    acc['cross_split_groups'] += int(group['cross_split'])
    acc['first'].append(group)
    if len(acc['first']) > 2 * FIRST_DUPLICATES:
      acc['first'] = _first_groups(acc['first'])
    return acc

  def merge_accumulators(self, accumulators):
    out = self.create_accumulator()
    for acc in accumulators:
      for key in ('groups', 'extra_records', 'cross_split_groups'):
        out[key] += acc[key]
      out['first'] = _first_groups(out['first'] + acc['first'])
    return out

  def extract_output(self, acc):
    return dict(acc, first=_first_groups(acc['first']))


def held_labels(summary: Dict[str, Any], vocabulary: Dict[str, Any]) -> Dict[str, Any]:
  """The run's vocabulary (`convert.LabelVocabulary`) with 'left_out': the rows' labels
  that no record holds. They keep their ids (nothing is renumbered, `labels`); for
  segmentation every label counts as held (its ids are pixel values of the masks)."""
  counts = summary['records_per_label']
  left_out = [] if vocabulary['task'] == 'segmentation' else [
      l for l in vocabulary['seen'] if not counts.get(l)]
  return dict(vocabulary, left_out=left_out)


class Summarize(beam.PTransform):
  """(RecordStat lists, error dicts, box issue dicts) -> one summary dict: counts per
  split, label, object label, image format and size, error reason and box issue."""

  def expand(self, pcolls):
    stats, errors, box_issues = pcolls
    counts = lambda pcoll, label: pcoll | label >> beam.CombineGlobally(_CountsFn())
    errors = counts(errors | 'ErrorReasons' >> beam.Map(lambda e: ('errors', e['reason'])),
                    'CountErrors')
    box_issues = counts(box_issues | 'BoxIssueReasons' >> beam.Map(
        lambda b: ('box_issues', f'{b["action"]}:{b["reason"]}')), 'CountBoxIssues')
    return (counts(stats | 'CountStats' >> beam.Map(_stat_counts), 'CountAllStats')
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
  'samples' ((label, (uri, thumbnail)) pairs). Returns one element once summary.json and
  report.html are written.
  """

  def __init__(self, report_dir: str):
    super().__init__()
    self._report_dir = report_dir

  def expand(self, pcolls):
    errors, box_issues = pcolls['errors'], pcolls['box_issues']
    write_lines = lambda name, key: WriteSortedJsonLines(
        FileSystems.join(self._report_dir, name + layout.JSON_LINES), key,
        layout.work_dir(self._report_dir, name))
    duplicates = pcolls['stats'] | 'FindDuplicates' >> FindDuplicates(
        layout.work_dir(self._report_dir, layout.DUPLICATE_INDEX_DIR))
    written = ((errors | 'WriteErrors' >> write_lines(
                    layout.ERRORS, lambda e: row_key(e['source'], e['row'])),
                duplicates | 'WriteDuplicates' >> write_lines(
                    layout.DUPLICATES, lambda d: bytes.fromhex(d['sha256'])),
                box_issues | 'WriteBoxIssues' >> write_lines(
                    layout.BOX_ISSUES, lambda b: row_key(b['source'], b['row'], b['index'])))
               | 'JsonLinesWritten' >> beam.Flatten())
    duplicate_counts = (duplicates
                        | 'CountDuplicates' >> beam.CombineGlobally(_DuplicateCountsFn()))
    first = lambda pcoll, label: beam.pvalue.AsSingleton(pcoll | label >> beam.combiners.Top.Of(
        FIRST_ERRORS, key=lambda e: (e['source'], e['row'] or 0), reverse=True))
    return pcolls['summary'] | 'WriteSummary' >> beam.Map(
        _write_summary, self._report_dir, held=beam.pvalue.AsSingleton(pcolls['held']),
        duplicates=beam.pvalue.AsSingleton(duplicate_counts),
        samples=beam.pvalue.AsDict(
            pcolls['samples']
            | 'SamplesPerLabel' >> beam.combiners.Top.SmallestPerKey(SAMPLES_PER_LABEL)),
        errors=first(errors, 'FirstErrors'), box_issues=first(box_issues, 'FirstBoxIssues'),
        unused_written=beam.pvalue.AsList(written))  # the summary comes last


def _write_summary(summary: Dict[str, Any], report_dir: str, held: Dict[str, Any],
                   duplicates: Dict[str, Any], samples: Dict[str, List[Tuple[str, bytes]]],
                   errors: List[Dict[str, Any]], box_issues: List[Dict[str, Any]],
                   unused_written: List[str]) -> None:
  """summary.json, and report.html: the same counts with a contact sheet and the first
  failed rows, for people. Written once the JSON-lines files are (`unused_written`)."""
  summary = dict(summary, vocabulary=held['labels'],
                 label_ids=dict(zip(held['labels'], held['ids'])),
                 labels_left_out=held['left_out'], labels_appended=held['appended'],
                 labels_unknown=held['unknown'], label_id_conflicts=held['conflicts'],
                 label_map_given=held['given'], duplicates=duplicates)
  files.write_text(FileSystems.join(report_dir, layout.SUMMARY_FILE),
                   json.dumps(summary, indent=2, ensure_ascii=False))
  files.write_text(FileSystems.join(report_dir, layout.REPORT_PAGE),
                   report_html.render(summary, samples, errors, box_issues=box_issues))
