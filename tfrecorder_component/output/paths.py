"""Where a conversion's files are, under an output folder or an Examples artifact, as
TFX ExampleGen lays them out (`write_split.py`), plus the report beside them:

    <output>/Split-<name>/data_tfrecord-SSSSS-of-NNNNN.gz
    <output>/labels.txt, <output>/label_map.pbtxt     (labels.py)
    <report>/summary.json, errors.jsonl, duplicates.jsonl, box_issues.jsonl, report.html

`convert()` puts the report in `<output>/report`; the component in its own artifact.
Both write `<output>/_SUCCESS` last, on every file system: an output without it is
unfinished, and `load_dataset` and `inspect` refuse it (`unfinished`).
"""
from __future__ import annotations

import json
import posixpath
from typing import Any, Callable, Dict, Iterable, Optional

from tfrecorder_component.record.labels import LABELS_FILE
from tfrecorder_component.io import files

SPLIT_PREFIX = 'Split-'
TFRECORD_FILE_NAME = 'data_tfrecord'
REPORT_DIR = 'report'
SUMMARY_FILE = 'summary.json'
ERRORS_FILE = 'errors'  # errors.jsonl
DUPLICATES_FILE = 'duplicates'  # duplicates.jsonl
BOX_ISSUES_FILE = 'box_issues'  # box_issues.jsonl
REPORT_PAGE = 'report.html'
JSON_LINES = '.jsonl'
SUCCESS_MARKER = '_SUCCESS'  # written last into a finished output
WORK_DIR = '.work'  # in the report folder while a run works; removed when it ends
CHUNK_DIR = 'chunks'  # in WORK_DIR: the manifest rows, a file per chunk
DUPLICATE_INDEX_DIR = 'duplicate-index'  # in WORK_DIR: the duplicate index's sorted runs


def work_dir(report_dir: str, *parts: str) -> str:
  """A run's scratch folder beside its report (so every worker reaches it), or a part."""
  return posixpath.join(report_dir, WORK_DIR, *parts)


def split_dir(output_dir: str, split: str) -> str:
  return posixpath.join(output_dir, f'{SPLIT_PREFIX}{split}')


def shard_path(split_dir: str, index: int, count: int) -> str:
  """The `index`-th of `count` shards of a split, named as Beam and TFX name them."""
  return posixpath.join(split_dir, f'{TFRECORD_FILE_NAME}-{index:05d}-of-{count:05d}.gz')


def split_dirs(output_dir: str, splits: Iterable[str]) -> Dict[str, str]:
  return {name: split_dir(output_dir, name) for name in splits}


def errors_path(report_dir: str) -> str:
  return posixpath.join(report_dir, ERRORS_FILE + JSON_LINES)


def read_summary(report_dir: str) -> Dict[str, Any]:
  """summary.json of a run's report, from any Beam file system."""
  with files.open_file(posixpath.join(report_dir, SUMMARY_FILE)) as f:
    return json.loads(f.read())


def unfinished(output_dir: str, exists: Callable[[str], bool]) -> Optional[str]:
  """Why `output_dir` (an output folder of `convert` or an Examples artifact of the
  component, both finished by `_SUCCESS`) cannot be read, in one line; None if it can.
  `exists` answers for a path on its file system (Beam's or TensorFlow's)."""
  if not exists(output_dir) and '://' not in output_dir:
    return f'{output_dir} does not exist'
  if exists(posixpath.join(output_dir, SUCCESS_MARKER)):
    return None
  if exists(posixpath.join(output_dir, LABELS_FILE)):
    return (f'{output_dir} is not a finished output (no {SUCCESS_MARKER}): a run is still '
            'writing it, or ended before it finished; convert again')
  if exists(posixpath.join(output_dir, REPORT_DIR, SUMMARY_FILE)):
    return (f'{output_dir} holds only the report of a failed run, no records: see '
            f'{errors_path(posixpath.join(output_dir, REPORT_DIR))}')
  return (f'{output_dir} is not an output of convert or an Examples artifact of '
          f'ImageExampleGen (no {SUCCESS_MARKER}, no labels.txt)')
