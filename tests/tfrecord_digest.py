"""Reads a conversion's output with the package's own shard reader (no TensorFlow, which
the core-only installs lack), and prints a digest of it that two installs can be
compared by.

    python tests/tfrecord_digest.py OUTPUT_DIR

One line per split (its records' SHA-256s, sorted, hashed: the shard count is the
runner's choice, the records are not) and one per label file.
"""
import glob
import hashlib
import os
import sys
from typing import Dict, List

from tfrecorder_component.io.tfrecord import read_shard


def read_records(split_dir: str) -> List[bytes]:
  """Every record of a split's gzipped TFRecord shards, read as `inspect` reads them
  (test_sink checks the sink's shards against TensorFlow's reader)."""
  return [record for path in sorted(glob.glob(os.path.join(split_dir, 'data_tfrecord-*.gz')))
          for record in read_shard(path)]


def digest(output_dir: str) -> Dict[str, str]:
  out = {}
  for split_dir in sorted(glob.glob(os.path.join(output_dir, 'Split-*'))):
    records = sorted(hashlib.sha256(r).hexdigest() for r in read_records(split_dir))
    out[os.path.basename(split_dir)] = (
        f'{len(records)} records {hashlib.sha256("".join(records).encode()).hexdigest()}')
  for name in ('labels.txt', 'label_map.pbtxt', 'label_map.csv'):
    with open(os.path.join(output_dir, name), 'rb') as f:
      out[name] = hashlib.sha256(f.read()).hexdigest()
  return out


if __name__ == '__main__':
  for key, value in digest(sys.argv[1]).items():
    print(key, value)
