"""The naive baselines: a hand-written single-process tf.io.TFRecordWriter loop.

This is what people write by hand (and roughly what TFRecorder's core does per image):
read each file, build a tf.train.Example, write it to one TFRecord file. With
`decode_check`, each image first goes through the same decode check the component
runs by default (`probe_image(..., decode=True)`), so the loop does the same work per
image as the component's pipeline.
"""
from __future__ import annotations

import csv
import os

import tensorflow as tf

from tfrecorder_component.images.probe import probe_image


def convert(manifest: str, output: str, compression: str = 'GZIP',
            decode_check: bool = False) -> int:
  root = os.path.dirname(manifest)
  with open(manifest, newline='') as f:
    rows = list(csv.reader(f))
  labels = sorted({r[2] for r in rows})
  ids = {l: i for i, l in enumerate(labels)}
  options = tf.io.TFRecordOptions(compression_type=compression)
  with tf.io.TFRecordWriter(output, options) as writer:
    for _, uri, label in rows:
      with open(os.path.join(root, uri), 'rb') as img:
        data = img.read()
      if decode_check:
        probe_image(data, decode=True)
      example = tf.train.Example(features=tf.train.Features(feature={
          'image/encoded': tf.train.Feature(bytes_list=tf.train.BytesList(value=[data])),
          'image/filename': tf.train.Feature(bytes_list=tf.train.BytesList(
              value=[uri.encode()])),
          'image/class/label': tf.train.Feature(int64_list=tf.train.Int64List(
              value=[ids[label]])),
      }))
      writer.write(example.SerializeToString())
  return len(rows)


def copy_limit(manifest: str, output: str) -> int:
  """Reads every input byte and writes it out once: the I/O floor of any conversion."""
  root = os.path.dirname(manifest)
  with open(manifest, newline='') as f:
    rows = list(csv.reader(f))
  with open(output, 'wb') as out:
    for _, uri, _ in rows:
      with open(os.path.join(root, uri), 'rb') as img:
        out.write(img.read())
  return len(rows)
