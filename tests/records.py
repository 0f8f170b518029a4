"""Reads records back the way downstream components do: gzipped TFRecord shards."""
import glob
import os
from typing import Dict, List

import tensorflow as tf


def read_split(split_dir: str) -> List[tf.train.Example]:
  files = sorted(glob.glob(os.path.join(split_dir, 'data_tfrecord-*.gz')))
  assert files, f'no shards in {split_dir}'
  return [tf.train.Example.FromString(r.numpy())
          for r in tf.data.TFRecordDataset(files, compression_type='GZIP')]


def feature(example: tf.train.Example, key: str):
  f = example.features.feature[key]
  kind = f.WhichOneof('kind')
  return list(getattr(f, kind).value) if kind else []


def by_source_id(examples_dir: str, split_names) -> Dict[str, tuple]:
  """{source_id: (split, example)} over every split; fails on a duplicate."""
  out = {}
  for split in split_names:
    for ex in read_split(os.path.join(examples_dir, f'Split-{split}')):
      sid = feature(ex, 'image/source_id')[0].decode()
      assert sid not in out, f'{sid} written twice'
      out[sid] = (split, ex)
  return out
