"""The warnings a run's summary carries (`summary.json`'s `warnings`, printed by the
command and logged by the component): what a run that did not fail still got wrong or
may have misread. A detection run that wrote no object, a headerless AutoML CSV whose
rows look like several labels unquoted, classes missing from a split, and a split of
`--splits` no record went to; each names what to check, and none fails the run.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from tfrecorder_component.io import files
from tfrecorder_component.manifest import automl_csv, confine
from tfrecorder_component.record import splits as splits_lib
from tfrecorder_component.steps.policy import one_line


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
          confinement = confine.confinement(tuple(getattr(source, 'confine_to', ())))
          parts.append(spec.objects_from(source.path, source.image_root, confine=confinement)
                       if confinement and spec.reads_files else
                       spec.objects_from(source.path, source.image_root))
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
  and for one whose objects were read and dropped (box_issues say why).

  Args:
    summary: the run's summary (`summary`).
    task: the rows' task: 'classification', 'detection' or 'segmentation'.
    sources: the run's ManifestSources; empty: the warning names no file.
  """
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
  if _format_of(source).name != automl_csv.FORMAT.name or getattr(source, 'columns', ()):
    return None  # columns names a header's columns: the file has a header
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
  label (its labels outnumber the records).

  Args:
    summary: the run's summary (`summary`).
    task: the rows' task; only a 'classification' run is looked at.
    sources: the run's ManifestSources; each is read again (AutoML CSVs only), and one
      that cannot be read gives no warning.
  """
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
  images hash-split: a test split of 2 images, both cats), one a split.

  Args:
    summary: the run's summary (`summary`); its `labels_per_split` is read.
    task: the rows' task: 'classification', 'detection' or 'segmentation' (never
      warned about).
  """
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
  """The warning of a run whose hash-bucket splits include some that got no record
  (they are not written): asked for (`--splits train=8,val=1`), or the default buckets
  where some records were split by hash (`records_split_by_hash`: a dataset of few
  images without its own split). None where none is empty, where no row was split by
  hash under the default buckets (rows that bring their own split leave the others
  empty as a matter of course), or for a run without records.

  Args:
    summary: the run's summary (`summary`).
    buckets: the run's hash-bucket splits, (name, hash buckets) pairs; empty: the
      default ones.
  """
  buckets = tuple((str(name), int(n)) for name, n in buckets or ())
  default = not buckets or buckets == splits_lib.DEFAULT_BUCKETS
  if not summary['records_written'] or default and not summary.get('records_split_by_hash'):
    return None
  asked = ','.join(f'{name}={n}' for name, n in buckets or splits_lib.DEFAULT_BUCKETS)
  empty = [name for name, _ in buckets or splits_lib.DEFAULT_BUCKETS
           if not summary['records_per_split'].get(name)]
  if not empty:
    return None
  several = len(empty) > 1
  if default:
    hashed = summary['records_split_by_hash']
    return (f'No record went to split{"s" if several else ""} {_listed(empty)}: '
            f'{hashed:,} record{"s" if hashed != 1 else ""} without a split of '
            f'{"their" if hashed != 1 else "its"} own {"were" if hashed != 1 else "was"} '
            f'split by hash ({asked}), too few to reach every split, and '
            f'{"they are" if several else "it is"} not written; give rows their split '
            '(ML_USE, split folders) or set --splits (splits)')
  return (f'No record went to split{"s" if several else ""} {_listed(empty)} of --splits '
          f'(splits) {asked}: {"they are" if several else "it is"} not written. Rows '
          'whose manifest gives a split keep it (TRAIN: train, VALIDATION: eval, '
          'TEST: test, a split folder: its name); only the others are hashed into these '
          'buckets, and none fell there')


def run_warnings(summary: Dict[str, Any], task: str, sources=(), buckets=()) -> List[str]:
  """The run's warnings, for summary.json, report.html and the log: a detection run
  without any object (`no_object_warning`), multi-label rows in a single-label CSV
  (`multi_label_warnings`), a class missing from a split (`missing_class_warnings`), a
  hash-bucket split asked for that got no record (`empty_split_warning`).

  Args:
    summary: the run's summary (`summary`).
    task: the rows' task: 'classification', 'detection' or 'segmentation'.
    sources: the run's ManifestSources, which the warnings name and the multi-label
      check reads again; empty: the no-object warning names no file, and the
      multi-label check is skipped.
    buckets: the run's hash-bucket splits, (name, hash buckets) pairs.
  """
  return [w for w in (no_object_warning(summary, task, sources),
                      *multi_label_warnings(summary, task, sources),
                      *missing_class_warnings(summary, task),
                      empty_split_warning(summary, buckets)) if w]


def source_id_warning(duplicates: Dict[str, Any]) -> Optional[str]:
  """The warning of a run in which records of different images hold one
  `image/source_id` (two COCO files numbering their images alike, a `source_id='number'`
  collision); None where none do.

  Args:
    duplicates: the run's duplicate counts (`report.duplicate_counts`): its
      'source_id_groups', 'source_id_groups_in_a_split' and 'first_source_ids' are read.
  """
  count = duplicates.get('source_id_groups', 0)
  if not count:
    return None
  first = duplicates['first_source_ids'][0]
  shown = ', '.join(f'{u} ({s})' for u, s in zip(first['uris'][:3], first['splits'][:3]))
  in_a_split = duplicates.get('source_id_groups_in_a_split', 0)
  held = (f'{count:,} image/source_id value{"s are" if count > 1 else " is"} held by records '
          f'of different images, e.g. {first["source_id"]!r}: {shown}')
  if not in_a_split:
    return (f'{held}; each in different splits only (COCO files that number their images '
            'alike, as one per split does): an evaluation of one split tells them apart, '
            'one of several mixes them up (summary.json: duplicates.first_source_ids)')
  return (f'{held}; {in_a_split:,} within one split, where an evaluation by image id (Model '
          'Garden\'s COCO evaluator) mixes them up: give each image its own id, or convert '
          'with --source-id number (numbers of the image URIs, which Model Garden parses '
          'too) (summary.json: duplicates.first_source_ids)')
