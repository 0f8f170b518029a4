"""The run's report, without Beam: counts per split, label, format and reason, duplicate
groups, and summary.json and report.html written once from them."""
from __future__ import annotations

import heapq
import json
from typing import Any, Dict, List, Optional, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.output import report_html
from tfrecorder_component.record.example import record_features
from tfrecorder_component.steps.row import RecordStat
from tfrecorder_component.manifest.class_map import DROPPED
from tfrecorder_component.record import splits as splits_lib
from tfrecorder_component.steps.policy import one_line
from tfrecorder_component.manifest import automl_csv

FIRST_ERRORS = 50  # failed rows and box issues listed on report.html


def error_order(error: Dict[str, Any]) -> Tuple[str, int]:
  """Where a failed row comes from, for the first ones listed: (source, row)."""
  return error['source'], error['row'] or 0


def box_issue_order(issue: Dict[str, Any]) -> Tuple[str, int, int]:
  """Where a box issue comes from, for the first ones listed: (source, row, box)."""
  return issue['source'], issue['row'] or 0, issue['index']


class CiteIndex:
  """Adds the DataFrame `index` to the errors of rows of manifests written from one."""

  def __init__(self, sources):
    self._index = {s.path: dict(s.row_index) for s in sources if s.row_index}

  def __call__(self, error: Dict[str, Any]) -> Dict[str, Any]:
    index = self._index.get(error['source'], {}).get(error['row'])
    return error if index is None else dict(error, index=index)


def stat_counts(stats: List[RecordStat]) -> Dict[str, Dict[str, int]]:
  """A batch's RecordStats as counts per split, label and object label: a few small
  dicts cross to the summary instead of a stat per record."""
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
  return counts


STAT_KINDS = ('records', 'labels', 'split_labels', 'objects', 'formats', 'sizes', 'features')




def add_counts(acc: Dict[str, Dict[str, int]], counts: Dict[str, Dict[str, int]]):
  """Adds `counts` ({kind: {key: n}}) into `acc`, in place; returns `acc`."""
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
  """Adds to `acc`, in place, a batch's `stat_counts`, or one ('errors' | 'box_issues',
  reason); returns `acc`."""
  if isinstance(element, tuple):
    kind, key = element
    acc[kind][key] = acc[kind].get(key, 0) + 1
    return acc
  return add_counts(acc, element)


def summary(acc: Dict[str, Dict[str, int]]) -> Dict[str, Any]:
  """The summary of a run's counts (`new_counts`, added to by `count`)."""
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
  }


FIRST_DUPLICATES = 10  # duplicate groups in summary.json, the first by their URIs


def _first_groups(groups: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
  return heapq.nsmallest(FIRST_DUPLICATES, groups, key=lambda g: (g['uris'], g['sha256']))


def new_duplicate_counts() -> Dict[str, Any]:
  """Counts of duplicate groups: {'groups', 'extra_records', 'cross_split_groups',
  'first'}, the FIRST_DUPLICATES groups first by URI, whatever the number of groups."""
  return {'groups': 0, 'extra_records': 0, 'cross_split_groups': 0, 'first': []}


def add_duplicate(acc: Dict[str, Any], group: Dict[str, Any]) -> Dict[str, Any]:
  acc['groups'] += 1
  acc['extra_records'] += len(group['uris']) - 1
  acc['cross_split_groups'] += int(group['cross_split'])
  acc['first'].append(group)
  if len(acc['first']) > 2 * FIRST_DUPLICATES:
    acc['first'] = _first_groups(acc['first'])
  return acc


def merge_duplicate_counts(accumulators) -> Dict[str, Any]:
  out = new_duplicate_counts()
  for acc in accumulators:
    for key in ('groups', 'extra_records', 'cross_split_groups'):
      out[key] += acc[key]
    out['first'] = _first_groups(out['first'] + acc['first'])
  return out


def duplicate_counts(acc: Dict[str, Any]) -> Dict[str, Any]:
  return dict(acc, first=_first_groups(acc['first']))


def held_labels(summary: Dict[str, Any], vocabulary: Dict[str, Any]) -> Dict[str, Any]:
  """The run's vocabulary (`convert.LabelVocabulary`) with 'left_out': the rows' labels
  that no record holds. They keep their ids (nothing is renumbered, `labels`); for
  segmentation every label counts as held (its ids are pixel values of the masks)."""
  counts = summary['records_per_label']
  left_out = [] if vocabulary['task'] == 'segmentation' else [
      l for l in vocabulary['seen'] if not counts.get(l)]
  return dict(vocabulary, left_out=left_out)


# Annotation files the warning of a detection run without objects names; the rest are
# counted, with the folder they are in.
FILES_NAMED = 3


def _objects_from(sources) -> str:
  """Where the run's manifests' objects were looked for, and what to check, in words:
  each format's `objects_from` (YOLO: its label folders), else the files themselves."""
  by_format: Dict[str, List[Any]] = {}
  for source in sources:
    try:
      spec = _format_of(source)
    except Exception:  # pylint: disable=broad-except  (a warning never fails a run)
      spec = None
    by_format.setdefault(spec.name if spec else '', []).append((spec, source))
  parts = []
  for name, pairs in by_format.items():
    spec = pairs[0][0]
    if spec is not None and spec.objects_from is not None:
      for _, source in pairs[:FILES_NAMED]:
        try:
          parts.append(spec.objects_from(source.path, source.image_root))
        except Exception:  # pylint: disable=broad-except
          parts.append(f'the {name} annotations in {source.path}')
      continue
    paths = [source.path for _, source in pairs]
    named = ', '.join(paths[:FILES_NAMED])
    if len(paths) > FILES_NAMED:
      folders = sorted({p.rsplit('/', 1)[0] for p in paths if '/' in p})
      named += (f' and {len(paths) - FILES_NAMED:,} more files' +
                (f' in {folders[0]}' if len(folders) == 1 else ''))
    parts.append(f'the {name or "manifest"} annotations in {named} give none of these images '
                 'an object; check that they hold the boxes of these images, and that '
                 '--format (manifest_format), if given, is their format')
  return '; '.join(parts)


def no_object_warning(summary: Dict[str, Any], task: str, sources) -> Optional[str]:
  """The warning of a detection run (`task`, the rows' `Task`: objects are the point of
  its format) that wrote records without a single object among them, naming where the
  objects were looked for (`ManifestSource`s) and what to check, as Ultralytics warns
  'No labels found in <labels folder>' for such a dataset; None for any other run,
  and for one whose objects were read and dropped (box_issues say why)."""
  if task != 'detection' or not summary['records_written'] or summary['objects_written']:
    return None
  if any(key.startswith('dropped:') for key in summary.get('box_issues') or {}):
    return None
  records = summary['records_written']
  where = _objects_from(sources) if sources else 'the manifest gives none of them an object'
  return (f'No object in any of the {records:,} detection records written (each holds its '
          f'image without a box): {where}')


# Names a warning lists at most (classes, splits); the rest are counted.
NAMES_SHOWN = 5
# A class missing from a split is warned about in runs of at most this many classes:
# with more, a small split lacking a few is to be expected.
MISSING_CLASS_MAX_CLASSES = 20
# Multi-label rows of a headerless AutoML CSV are warned about when they are at most
# this share of its labelled rows, or fewer than its single-label rows with a label
# field beginning with a space (`TRAIN,img.jpg,Bird, blue`).
MULTI_LABEL_SHARE = 0.1
_ROW_CHARS = 200  # a row quoted in a warning is cut to this many characters


def _listed(names: List[str], shown: int = NAMES_SHOWN) -> str:
  text = ', '.join(names[:shown])
  return text + (f' and {len(names) - shown:,} more' if len(names) > shown else '')


def _format_of(source):
  """A ManifestSource's format (`ManifestFormat`), given or detected from its head."""
  from tfrecorder_component.manifest import registry  # pylint: disable=g-import-not-at-top
  if source.format:
    return registry.by_name(source.format)
  with files.open_file(source.path) as f:
    return registry.detect(source.path, f.read(2**16).decode('utf-8-sig', 'replace'))


def _multi_label_warning(source) -> Optional[str]:
  """The warning of a headerless AutoML CSV that is single-label but for a few rows
  with several labels (`automl_csv.label_counts`), naming the first; None otherwise."""
  import io  # pylint: disable=g-import-not-at-top
  if _format_of(source).name != automl_csv.FORMAT.name:
    return None
  with files.open_file(source.path) as f:
    counts = automl_csv.label_counts(source.path, io.TextIOWrapper(
        f, encoding='utf-8-sig', errors='replace', newline=''))
  if counts is None or not counts.multi or counts.single <= counts.multi or not (
      counts.multi <= MULTI_LABEL_SHARE * (counts.single + counts.multi) or counts.spaced):
    return None
  row, fields, label_fields = counts.first_multi
  text = one_line(','.join(fields))
  text = text if len(text) <= _ROW_CHARS else text[:_ROW_CHARS - 3] + '...'
  labels = list(dict.fromkeys(f.strip(' \t') for f in label_fields))
  quoted = one_line(','.join(label_fields).strip())
  rows = 'row has' if counts.multi == 1 else 'rows have'
  return (f'{source.path}: {counts.multi:,} {rows} more than one label, where its other '
          f'{counts.single:,} have one (the first, row {row}: {text}, is read as the labels '
          f'{_listed([repr(l) for l in labels])}): a comma inside a label needs quotes '
          f'(write "{quoted}"); if these rows hold several labels on purpose, all is well')


def multi_label_warnings(summary: Dict[str, Any], task: str, sources) -> List[str]:
  """The warnings of the run's headerless AutoML CSVs whose rows have one label but for
  a few with several (`_multi_label_warning`): an unquoted comma in a label makes a
  row multi-label without a word. Read again only when some record holds more than one
  label (its labels outnumber the records)."""
  if task != 'classification' or not sources or (
      sum(summary['records_per_label'].values()) <= summary['records_written']):
    return []
  warnings = []
  for source in sources:
    try:
      warning = _multi_label_warning(source)
    except Exception:  # pylint: disable=broad-except  (a warning never fails a run)
      warning = None
    if warning:
      warnings.append(warning)
  return warnings


def missing_class_warnings(summary: Dict[str, Any], task: str) -> List[str]:
  """The warnings of a classification or detection run of a few classes (at most
  MISSING_CLASS_MAX_CLASSES) with a split that holds no record of some of them (36
  images hash-split: a test split of 2 images, both cats), one a split."""
  per_split = summary.get('labels_per_split') or {}
  classes = sorted({label for labels in per_split.values() for label in labels})
  if task not in ('classification', 'detection') or not (
      2 <= len(classes) <= MISSING_CLASS_MAX_CLASSES):
    return []
  thing = 'image' if task == 'classification' else 'object'
  warnings = []
  for split, labels in sorted(per_split.items()):
    missing = [c for c in classes if not labels.get(c)]
    if not missing:
      continue
    records = summary['records_per_split'].get(split, 0)
    held = _listed([f'{n:,} {label}' for label, n in sorted(
        labels.items(), key=lambda item: (-item[1], item[0]))])
    warnings.append(
        f'Split {split} has no {thing} of {len(missing):,} of the {len(classes):,} classes: '
        f'{_listed(missing)} (its {records:,} records hold {held}); a split of few images can '
        'leave a class out: give some of its images this split in the manifest (ML_USE), or '
        'convert more images')
  return warnings


def empty_split_warning(summary: Dict[str, Any], buckets) -> Optional[str]:
  """The warning of a run whose hash-bucket splits, asked for (`buckets` other than
  `splits.DEFAULT_BUCKETS`: `--splits train=8,val=1`), include some that got no record
  (their folders are empty); None for the default buckets, which rows that bring their
  own split (ML_USE, a split folder) leave empty as a matter of course, or a run
  without records."""
  buckets = tuple((str(name), int(n)) for name, n in buckets or ())
  if not buckets or buckets == splits_lib.DEFAULT_BUCKETS or not summary['records_written']:
    return None
  empty = [name for name, _ in buckets if not summary['records_per_split'].get(name)]
  if not empty:
    return None
  asked = ','.join(f'{name}={n}' for name, n in buckets)
  several = len(empty) > 1
  return (f'No record went to split{"s" if several else ""} {_listed(empty)} of --splits '
          f'(splits) {asked}: {"their folders are" if several else "its folder is"} '
          'empty. Rows whose manifest gives a split keep it (TRAIN: train, VALIDATION: eval, '
          'TEST: test, a split folder: its name); only the others are hashed into these '
          'buckets, and none fell there')


def run_warnings(summary: Dict[str, Any], task: str, sources=(), buckets=()) -> List[str]:
  """The run's warnings, for summary.json, report.html and the log: a detection run
  without any object (`no_object_warning`), multi-label rows in a single-label CSV
  (`multi_label_warnings`), a class missing from a split (`missing_class_warnings`), a
  hash-bucket split asked for that got no record (`empty_split_warning`)."""
  return [w for w in (no_object_warning(summary, task, sources),
                      *multi_label_warnings(summary, task, sources),
                      *missing_class_warnings(summary, task),
                      empty_split_warning(summary, buckets)) if w]


def write_summary(summary: Dict[str, Any], report_dir: str, held: Dict[str, Any],
                   duplicates: Dict[str, Any], samples: Dict[str, List[Tuple[str, bytes]]],
                   errors: List[Dict[str, Any]], box_issues: List[Dict[str, Any]],
                   unused_written: List[str], layouts=None, sources=(),
                   buckets=()) -> None:
  """summary.json, and report.html: the same counts with a contact sheet and the first
  failed rows, for people. Written once the JSON-lines files are (`unused_written`);
  `layouts`: the extra output layouts written (`layouts.base.finish`), if any;
  `sources`: the run's ManifestSources, which the `warnings` name, and `buckets` its
  hash-bucket splits (`run_warnings`)."""
  warnings = run_warnings(summary, held['task'], sources, buckets)
  summary = dict(summary, warnings=warnings, vocabulary=held['labels'],
                 label_ids=dict(zip(held['labels'], held['ids'])),
                 labels_left_out=held['left_out'], labels_appended=held['appended'],
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
