"""Split assignment: a row's own ML_USE, else stable hash buckets of its source id."""
from __future__ import annotations

import hashlib
from typing import List, Sequence, Tuple

from tfrecorder_component.option_table import DEFAULT_BUCKETS  # pylint: disable=unused-import


def hash_split(source_id: str, buckets: Sequence[Tuple[str, int]]) -> str:
  """Picks a split for `source_id` from (name, hash_buckets) pairs, stable across runs.

  Args:
    source_id: The row's stable id (its image URI), hashed with SHA-256.
    buckets: (split name, hash buckets) pairs; each split takes its buckets' share of
      the rows. Their total must be above 0.
  """
  total = sum(n for _, n in buckets)
  bucket = int.from_bytes(hashlib.sha256(source_id.encode('utf-8')).digest()[:8], 'big') % total
  for name, n in buckets:
    if bucket < n:
      return name
    bucket -= n
  raise AssertionError('unreachable')


def output_split_names(buckets: Sequence[Tuple[str, int]]) -> List[str]:
  """Every split a run may write: the hash-bucket splits plus train/eval/test of ML_USE.

  Args:
    buckets: (split name, hash buckets) pairs, as for `hash_split`; their names come
      first, in this order.
  """
  names = [name for name, _ in buckets]
  for name in ('train', 'eval', 'test'):
    if name not in names:
      names.append(name)
  return names
