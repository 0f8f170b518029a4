"""Where a conversion's files are, under an output folder or an Examples artifact, as
TFX ExampleGen lays them out (`write_split.py`), plus the report beside them:

    <output>/Split-<name>/data_tfrecord-SSSSS-of-NNNNN.gz
    <output>/labels.txt, <output>/label_map.pbtxt     (labels.py)
    <report>/summary.json, errors.jsonl, duplicates.jsonl, box_issues.jsonl, report.html

`convert()` puts the report in `<output>/report`; the component in its own artifact.
On object storage (gs://, s3://), where a folder cannot be renamed into place,
`convert()` writes `<output>/_SUCCESS` last: an output without it is unfinished.
"""
from __future__ import annotations

import json
import posixpath
from typing import Any, Dict, Iterable

SPLIT_PREFIX = 'Split-'
TFRECORD_FILE_NAME = 'data_tfrecord'
REPORT_DIR = 'report'
SUMMARY_FILE = 'summary.json'
ERRORS = 'errors'          # errors.jsonl
DUPLICATES = 'duplicates'  # duplicates.jsonl
BOX_ISSUES = 'box_issues'  # box_issues.jsonl
REPORT_PAGE = 'report.html'
JSON_LINES = '.jsonl'
SUCCESS_MARKER = '_SUCCESS'  # written last into a finished remote output
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
  return posixpath.join(report_dir, ERRORS + JSON_LINES)


def read_summary(report_dir: str) -> Dict[str, Any]:
  """summary.json of a run's report, from any Beam file system."""
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  with FileSystems.open(posixpath.join(report_dir, SUMMARY_FILE),
                        compression_type='uncompressed') as f:
    return json.loads(f.read())
