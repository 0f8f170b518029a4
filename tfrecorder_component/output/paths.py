"""Where a conversion's files are, under an output folder or an Examples artifact, as
TFX ExampleGen lays them out (`write_split.py`), plus the report beside them:

    <output>/Split-<name>/data_tfrecord-SSSSS-of-NNNNN.gz
    <output>/labels.txt, label_map.pbtxt, label_map.csv  (labels.py)
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
# What a report folder holds: the only names a folder may hold for `validate` to
# replace it as an earlier report.
REPORT_NAMES = frozenset({SUMMARY_FILE, REPORT_PAGE, WORK_DIR,
                          *(name + JSON_LINES
                            for name in (ERRORS_FILE, DUPLICATES_FILE, BOX_ISSUES_FILE))})


def work_dir(report_dir: str, *parts: str) -> str:
  """A run's scratch folder beside its report (so every worker reaches it), or a part.

  Args:
    report_dir: The run's report folder (local, a URI, or relative to the output); the
      scratch folder is its `.work`.
    parts: Path parts under the scratch folder ('chunks', a split's 'bundles' ...);
      none for the folder itself.
  """
  return posixpath.join(report_dir, WORK_DIR, *parts)


def split_dir(output_dir: str, split: str) -> str:
  """Where a split's TFX shards go: `<output_dir>/Split-<split>`.

  Args:
    output_dir: The output folder or Examples artifact URI, local or a URI.
    split: The split's name ('train', 'eval' ...).
  """
  return posixpath.join(output_dir, f'{SPLIT_PREFIX}{split}')


def shard_path(split_dir: str, index: int, count: int) -> str:
  """The `index`-th of `count` shards of a split, named as Beam and TFX name them.

  Args:
    split_dir: The split's folder (`split_dir`).
    index: The shard's position in the split, from 0.
    count: How many shards the split has.
  """
  return posixpath.join(split_dir, f'{TFRECORD_FILE_NAME}-{index:05d}-of-{count:05d}.gz')


def split_dirs(output_dir: str, splits: Iterable[str]) -> Dict[str, str]:
  """{split: its folder (`split_dir`)}, in the order of `splits`.

  Args:
    output_dir: The output folder or Examples artifact URI, local or a URI.
    splits: The split names.
  """
  return {name: split_dir(output_dir, name) for name in splits}


def errors_path(report_dir: str) -> str:
  """Where a run's failed rows are listed: `<report_dir>/errors.jsonl`.

  Args:
    report_dir: The run's report folder, local or a URI.
  """
  return posixpath.join(report_dir, ERRORS_FILE + JSON_LINES)


def read_summary(report_dir: str) -> Dict[str, Any]:
  """summary.json of a run's report, from any Beam file system.

  Args:
    report_dir: The run's report folder, a local path or a URI.
  """
  with files.open_file(posixpath.join(report_dir, SUMMARY_FILE)) as f:
    return json.loads(f.read())


def unfinished(output_dir: str, exists: Callable[[str], bool]) -> Optional[str]:
  """Why `output_dir` (an output folder of `convert` or an Examples artifact of the
  component, both finished by `_SUCCESS`) cannot be read, in one line; None if it can.

  Args:
    output_dir: The folder to read, a local path or a URI (a URI is not itself tested
      for existence: an object store has no folders).
    exists: Whether a path exists, on its file system (Beam's `files.exists` or
      TensorFlow's `tf.io.gfile.exists`).
  """
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
