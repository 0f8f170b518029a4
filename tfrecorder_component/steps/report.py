"""The run's report, without Beam: counts per split, label, format and reason, duplicate
groups, and summary.json and report.html written once from them."""
from __future__ import annotations

import heapq
import json
from typing import Any, Dict, List, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.output import report_html
from tfrecorder_component.record.example import record_features
from tfrecorder_component.steps import jsonl
from tfrecorder_component.steps.row import RecordStat
from tfrecorder_component.manifest.class_map import DROPPED
from tfrecorder_component.steps.warnings import run_warnings, source_id_warning

FIRST_ERRORS = 50  # failed rows and box issues listed on report.html


def error_order(error: Dict[str, Any]) -> Tuple[str, int]:
  """Where a failed row comes from, for the first ones listed: (source, row).

  Args:
    error: an error record (`errors.error_record`); a row of None sorts as 0.
  """
  return error['source'], error['row'] or 0


def box_issue_order(issue: Dict[str, Any]) -> Tuple[str, int, int]:
  """Where a box issue comes from, for the first ones listed: (source, row, box).

  Args:
    issue: a box issue's dict, as box_issues.jsonl has it: its source, row and the box's
      `index` in the row.
  """
  return issue['source'], issue['row'] or 0, issue['index']


# What a run's report is made of, declared once for both engines (each spreads the work
# its own way: the local pool in its parent process, Beam in combines and sorts): the
# order of each JSON-lines file, as sort keys of its entries (`jsonl.row_key`: manifest
# row order, a box's index within its row; duplicates.jsonl in hash order), and the
# summary's count each error and box issue adds to.


def error_key(error: Dict[str, Any]) -> bytes:
  """errors.jsonl's order: by source, then row (`jsonl.row_key`).

  Args:
    error: an error record (`errors.error_record`).
  """
  return jsonl.row_key(error['source'], error['row'])


def box_issue_key(issue: Dict[str, Any]) -> bytes:
  """box_issues.jsonl's order: by source, row, then the box's index in the row.

  Args:
    issue: a box issue's dict, with its source, row and `index`.
  """
  return jsonl.row_key(issue['source'], issue['row'], issue['index'])


def duplicate_key(group: Dict[str, Any]) -> bytes:
  """duplicates.jsonl's order: by the images' SHA-256.

  Args:
    group: a group of equal images (`duplicates.groups`), with its hex `sha256`.
  """
  return bytes.fromhex(group['sha256'])


def error_count(error: Dict[str, Any]) -> Tuple[str, str]:
  """The summary's count a failed row adds to: ('errors', its reason).

  Args:
    error: an error record (`errors.error_record`).
  """
  return 'errors', error['reason']


def box_issue_count(issue: Dict[str, Any]) -> Tuple[str, str]:
  """The summary's count a box issue adds to: ('box_issues', 'action:reason').

  Args:
    issue: a box issue's dict, with its `action` and `reason`.
  """
  return 'box_issues', f'{issue["action"]}:{issue["reason"]}'


class CiteIndex:
  """Adds the DataFrame `index` to the errors of rows of manifests written from one.

  Args:
    sources: the run's ManifestSources; those with a `row_index` (written from a
      DataFrame) give the index label of each of their rows.
  """

  def __init__(self, sources):
    self._index = {s.path: dict(s.row_index) for s in sources if s.row_index}

  def __call__(self, error: Dict[str, Any]) -> Dict[str, Any]:
    index = self._index.get(error['source'], {}).get(error['row'])
    return error if index is None else dict(error, index=index)


def stat_counts(stats: List[RecordStat]) -> Dict[str, Dict[str, int]]:
  """A batch's RecordStats as counts per split, label and object label: a few small
  dicts cross to the summary instead of a stat per record.

  Args:
    stats: the RecordStats of a batch's records (`steps.outputs.STATS`).
  """
  counts: Dict[str, Dict[str, int]] = {k: {} for k in STAT_KINDS}

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
    add('features', stat.features)
    if stat.split_by_hash:
      add('hashed', stat.split)
  return counts


STAT_KINDS = ('records', 'labels', 'split_labels', 'objects', 'formats', 'sizes', 'features',
              'hashed')




def add_counts(acc: Dict[str, Dict[str, int]], counts: Dict[str, Dict[str, int]]):
  """Adds `counts` into `acc`, in place; returns `acc`.

  Args:
    acc: a run's counts (`new_counts`), or any {kind: {key: n}} holding every kind of
      `counts`.
    counts: {kind: {key: n}} to add, such as a batch's `stat_counts`.
  """
  for kind, values in counts.items():
    target = acc[kind]
    for key, n in values.items():
      target[key] = target.get(key, 0) + n
  return acc


def new_counts() -> Dict[str, Dict[str, int]]:
  """Empty counts of a run: records per split, label, object label, image format and
  size (from `stat_counts`), errors per reason, box issues per action and reason."""
  return {k: {} for k in (*STAT_KINDS, 'errors', 'box_issues')}


def count(acc: Dict[str, Dict[str, int]], element) -> Dict[str, Dict[str, int]]:
  """Adds one element to `acc`, in place; returns `acc`.

  Args:
    acc: a run's counts (`new_counts`).
    element: a batch's `stat_counts`, or a tuple ('errors' | 'box_issues', reason) that
      counts one failed row or box issue.
  """
  if isinstance(element, tuple):
    kind, key = element
    acc[kind][key] = acc[kind].get(key, 0) + 1
    return acc
  return add_counts(acc, element)


def summary(acc: Dict[str, Dict[str, int]]) -> Dict[str, Any]:
  """The summary of a run's counts, as summary.json has it before its warnings, labels
  and duplicates are added (`write_summary`). Rows a class map leaves out are read but
  not failed.

  Args:
    acc: the run's counts (`new_counts`, added to by `count`).
  """
  records = sum(acc['records'].values())
  errors = dict(acc['errors'])
  left_out = errors.pop(DROPPED, 0)  # rows a class map leaves out: not failures
  failed = sum(errors.values())
  per_split: Dict[str, Dict[str, int]] = {}
  for key, n in sorted(acc['split_labels'].items()):
    split, label = key.split('\t', 1)
    per_split.setdefault(split, {})[label] = n
  return {
      'rows_read': records + failed + left_out,
      'records_written': records,
      'rows_failed': failed,
      'rows_left_out': {DROPPED: left_out} if left_out else {},
      'records_per_split': dict(sorted(acc['records'].items())),
      'records_per_label': dict(sorted(acc['labels'].items())),
      'errors_per_reason': dict(sorted(errors.items())),
      'objects_written': sum(acc['objects'].values()),
      'objects_per_label': dict(sorted(acc['objects'].items())),
      'box_issues': dict(sorted(acc['box_issues'].items())),
      'labels_per_split': per_split,
      'image_formats': dict(sorted(acc['formats'].items())),
      'image_sizes': dict(sorted(acc['sizes'].items())),
      'features': record_features(acc.get('features', {}), records),
      'records_split_by_hash': sum(acc.get('hashed', {}).values()),
  }


FIRST_DUPLICATES = 10  # duplicate groups in summary.json, the first by their URIs


def _first_groups(groups: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
  return heapq.nsmallest(FIRST_DUPLICATES, groups, key=lambda g: (g['uris'], g['sha256']))


def _first_source_ids(groups: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
  return heapq.nsmallest(FIRST_DUPLICATES, groups, key=lambda g: (g['source_id'], g['uris']))


def new_duplicate_counts() -> Dict[str, Any]:
  """Counts of duplicate groups: {'groups', 'extra_records', 'cross_split_groups',
  'first'}, the FIRST_DUPLICATES groups first by URI, whatever the number of groups; and
  of source ids held by several images: {'source_id_groups', 'source_id_groups_in_a_split'
  (those whose images share a split: a COCO evaluation of it mixes them up),
  'first_source_ids'}, the FIRST_DUPLICATES first by source id."""
  return {'groups': 0, 'extra_records': 0, 'cross_split_groups': 0, 'first': [],
          'source_id_groups': 0, 'source_id_groups_in_a_split': 0, 'first_source_ids': []}


def add_duplicate(acc: Dict[str, Any], group: Dict[str, Any]) -> Dict[str, Any]:
  """Counts one duplicate group into `acc`, in place; returns `acc`.

  Args:
    acc: duplicate counts (`new_duplicate_counts`); its 'first' and 'first_source_ids'
      keep at most twice FIRST_DUPLICATES groups.
    group: a repeated hash as duplicates.jsonl has it (`duplicates.describe`), or a
      source id several images hold (`duplicates.describe_source_id`).
  """
  if 'source_id' in group:
    acc['source_id_groups'] += 1
    acc['source_id_groups_in_a_split'] += int(group['in_a_split'])
    acc['first_source_ids'].append(group)
    if len(acc['first_source_ids']) > 2 * FIRST_DUPLICATES:
      acc['first_source_ids'] = _first_source_ids(acc['first_source_ids'])
    return acc
  acc['groups'] += 1
  acc['extra_records'] += len(group['uris']) - 1
  acc['cross_split_groups'] += int(group['cross_split'])
  acc['first'].append(group)
  if len(acc['first']) > 2 * FIRST_DUPLICATES:
    acc['first'] = _first_groups(acc['first'])
  return acc


def merge_duplicate_counts(accumulators) -> Dict[str, Any]:
  """The duplicate counts of several accumulators added up, with the first
  FIRST_DUPLICATES groups of all.

  Args:
    accumulators: duplicate counts (`new_duplicate_counts`, `add_duplicate`); any
      iterable.
  """
  out = new_duplicate_counts()
  for acc in accumulators:
    for key in ('groups', 'extra_records', 'cross_split_groups', 'source_id_groups',
                'source_id_groups_in_a_split'):
      out[key] += acc[key]
    out['first'] = _first_groups(out['first'] + acc['first'])
    out['first_source_ids'] = _first_source_ids(out['first_source_ids']
                                                + acc['first_source_ids'])
  return out


def duplicate_counts(acc: Dict[str, Any]) -> Dict[str, Any]:
  """The duplicate counts as summary.json has them: 'first' cut to the FIRST_DUPLICATES
  groups first by URI, 'first_source_ids' to those first by source id.

  Args:
    acc: the run's duplicate counts (`new_duplicate_counts`, `add_duplicate`); not
      changed.
  """
  return dict(acc, first=_first_groups(acc['first']),
              first_source_ids=_first_source_ids(acc['first_source_ids']))


def held_labels(summary: Dict[str, Any], vocabulary: Dict[str, Any]) -> Dict[str, Any]:
  """The run's vocabulary (`convert.LabelVocabulary`) with 'left_out': the rows' labels,
  and the classes declared with no annotation (COCO categories) kept, that no record
  holds. They keep their ids (nothing is renumbered, `labels`); for
  segmentation every label counts as held (its ids are pixel values of the masks).

  Args:
    summary: the run's summary (`summary`); its `records_per_label` says which labels a
      record holds.
    vocabulary: the run's vocabulary dict (`VocabularyBuilder.vocabulary`): its 'task'
      and 'seen' labels are read.
  """
  counts = summary['records_per_label']
  left_out = [] if vocabulary['task'] == 'segmentation' else [
      l for l in vocabulary['seen'] if not counts.get(l)]
  return dict(vocabulary, left_out=left_out)


def write_summary(summary: Dict[str, Any], report_dir: str, held: Dict[str, Any],
                   duplicates: Dict[str, Any], samples: Dict[str, List[Tuple[str, bytes]]],
                   errors: List[Dict[str, Any]], box_issues: List[Dict[str, Any]],
                   unused_written: List[str], layouts=None, sources=(),
                   buckets=()) -> None:
  """summary.json, and report.html: the same counts with a contact sheet and the first
  failed rows, for people. Written once the JSON-lines files are (`unused_written`).

  Args:
    summary: the run's summary (`summary`); written with its warnings, labels,
      duplicates and layouts added.
    report_dir: the report's folder, on any file system.
    held: the run's vocabulary with its labels left out (`held_labels`).
    duplicates: the run's duplicate counts (`duplicate_counts`).
    samples: {label: [(uri, JPEG thumbnail)]}, the contact sheet's images.
    errors: the first failed rows (error records, at most FIRST_ERRORS), for the page.
    box_issues: the first dropped or clipped boxes (at most FIRST_ERRORS), for the page.
    unused_written: not read: a Beam side input of the JSON-lines files written, so that
      the summary comes last ([] in the local run).
    layouts: the extra output layouts written (`layouts.base.finish`: {layout: its
      metadata}), if any; as Beam's side input, [] or [that dict].
    sources: the run's ManifestSources, which the `warnings` name (`run_warnings`).
    buckets: the run's hash-bucket splits, (name, hash buckets) pairs (`run_warnings`).
  """
  warnings = run_warnings(summary, held['task'], sources, buckets)
  warnings += [w for w in (source_id_warning(duplicates),) if w]
  summary = dict(summary, warnings=warnings, vocabulary=held['labels'],
                 label_ids=dict(zip(held['labels'], held['ids'])),
                 labels_left_out=held['left_out'],
                 labels_declared_only=held.get('declared', []),
                 labels_appended=held['appended'],
                 labels_unknown=held['unknown'], label_id_conflicts=held['conflicts'],
                 label_map_given=held['given'], class_map=held.get('class_map'),
                 duplicates=duplicates)
  if isinstance(layouts, list):  # Beam's side input: [] or [the layouts written]
    layouts = layouts[0] if layouts else None
  if layouts:
    summary['layouts'] = layouts
  files.write_text(files.join(report_dir, output_paths.SUMMARY_FILE),
                   json.dumps(summary, indent=2, ensure_ascii=False))
  files.write_text(files.join(report_dir, output_paths.REPORT_PAGE),
                   report_html.render(summary, samples, errors, box_issues=box_issues))
