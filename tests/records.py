"""Reads records back the way downstream components do: gzipped TFRecord shards."""
import glob
import json
import os
from typing import Dict, List

import tensorflow as tf


def read_split(split_dir: str) -> List[tf.train.Example]:
  """The records of a split folder's shards, in order: none where the folder is not
  there (a split no record went to is not written); a folder without shards fails."""
  if not os.path.exists(split_dir):
    return []
  files = sorted(glob.glob(os.path.join(split_dir, 'data_tfrecord-*.gz')))
  assert files, f'no shards in {split_dir}'
  return [tf.train.Example.FromString(r.numpy())
          for r in tf.data.TFRecordDataset(files, compression_type='GZIP')]


def feature(example: tf.train.Example, key: str):
  f = example.features.feature[key]
  kind = f.WhichOneof('kind')
  return list(getattr(f, kind).value) if kind else []


def decoded_masks(example: tf.train.Example) -> list:
  """A record's instance masks (`image/object/mask`), each PNG decoded by TensorFlow to
  a 2-D array; each holds only 0 and 1, as the Object Detection API and Mask R-CNN
  read them."""
  masks = [tf.io.decode_png(m, channels=1).numpy()[..., 0]
           for m in feature(example, 'image/object/mask')]
  for m in masks:
    assert set(m.ravel().tolist()) <= {0, 1}
  return masks


def by_source_id(examples_dir: str, split_names) -> Dict[str, tuple]:
  """{source_id: (split, example)} over every split; fails on a duplicate."""
  out = {}
  for split in split_names:
    for ex in read_split(os.path.join(examples_dir, f'Split-{split}')):
      sid = feature(ex, 'image/source_id')[0].decode()
      assert sid not in out, f'{sid} written twice'
      out[sid] = (split, ex)
  return out


def by_coco_file_name(examples_dir: str, split_names, coco) -> Dict[str, tuple]:
  """{file_name: (split, example)} of a COCO file's output over every split: each record
  found by its image/source_id, the COCO image id in decimal (as Model Garden's
  create_coco_tf_record writes it); fails on a duplicate or an id the file lacks.

  Args:
    examples_dir: The output folder or Examples artifact URI.
    split_names: The splits to read.
    coco: The COCO file's path, or its parsed contents.
  """
  if not isinstance(coco, dict):
    with open(coco, encoding='utf-8') as f:
      coco = json.load(f)
  names = {str(image['id']): image['file_name'] for image in coco['images']}
  out = {}
  for sid, value in by_source_id(examples_dir, split_names).items():
    assert sid in names, f'image/source_id {sid!r} is no image id of the COCO file'
    out[names[sid]] = value
  return out
