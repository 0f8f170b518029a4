"""A fast reader: converted records as a `tf.data.Dataset` of (image, label) batches.

    ds = tfrecorder_component.load_dataset('/tmp/out', 'train', batch_size=64,
                                           image_size=(224, 224))
    model.fit(ds, epochs=5)

Shards are read with parallel interleave, records parsed per batch, images decoded and
resized in parallel maps, and batches prefetched; `cache=True` keeps decoded batches
after the first epoch.
"""
from __future__ import annotations

import os
from typing import Optional, Sequence, Tuple, Union

import tensorflow as tf

IMAGE_KEY = 'image/encoded'
LABEL_KEY = 'image/class/label'


def shard_patterns(examples: Union[str, Sequence[str]], split: Optional[str]) -> list:
  """File patterns of a split: `<examples>/Split-<split>/*` for an output folder or
  Examples artifact URI, or the given patterns / folders (as a Trainer's `train_files`)."""
  if isinstance(examples, str):
    if split is None:
      raise ValueError('give the split to read, e.g. split="train"')
    return [os.path.join(examples, f'Split-{split}', '*')]
  return [os.path.join(p, '*') if tf.io.gfile.isdir(p) else p for p in examples]


def decode_images(encoded: tf.Tensor, image_size: Tuple[int, int], channels: int
                  ) -> tf.Tensor:
  """A batch of encoded images -> float32 [batch, height, width, channels] in [0, 1]."""
  def one(data):
    image = tf.io.decode_image(data, channels=channels, expand_animations=False)
    return tf.image.resize(image, image_size) / 255.0
  return tf.map_fn(one, encoded, fn_output_signature=tf.TensorSpec(
      [*image_size, channels], tf.float32))


def load_dataset(examples: Union[str, Sequence[str]], split: Optional[str] = 'train',
                 batch_size: int = 32, image_size: Tuple[int, int] = (224, 224),
                 channels: int = 3, label_key: str = LABEL_KEY,
                 shuffle_buffer: int = 0, cache: bool = False, repeat: bool = False,
                 drop_remainder: bool = False) -> tf.data.Dataset:
  """(image, label) batches of one split of converted records.

  `examples`: an output folder of `convert` or an Examples artifact URI (with `split`),
  or a list of shard patterns or split folders (a Trainer's `fn_args.train_files`).
  Images come as float32 in [0, 1], resized to `image_size` with `channels` channels;
  labels are the int64 ids of `label_key` (see `read_label_map`). `shuffle_buffer` > 0
  shuffles shards and records; `cache` keeps decoded batches in memory after the first
  pass; `repeat` repeats forever.
  """
  files = tf.data.Dataset.list_files(shard_patterns(examples, split),
                                     shuffle=shuffle_buffer > 0)
  dataset = files.interleave(
      lambda f: tf.data.TFRecordDataset(f, compression_type='GZIP'),
      cycle_length=tf.data.AUTOTUNE, num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=shuffle_buffer <= 0)
  if shuffle_buffer > 0:
    dataset = dataset.shuffle(shuffle_buffer)
  features = {IMAGE_KEY: tf.io.FixedLenFeature([], tf.string),
              label_key: tf.io.FixedLenFeature([], tf.int64)}
  size = tuple(int(s) for s in image_size)
  dataset = dataset.batch(batch_size, drop_remainder=drop_remainder).map(
      lambda s: tf.io.parse_example(s, features), num_parallel_calls=tf.data.AUTOTUNE)
  dataset = dataset.map(lambda f: (decode_images(f[IMAGE_KEY], size, channels), f[label_key]),
                        num_parallel_calls=tf.data.AUTOTUNE)
  if cache:
    dataset = dataset.cache()
  if repeat:
    dataset = dataset.repeat()
  return dataset.prefetch(tf.data.AUTOTUNE)
