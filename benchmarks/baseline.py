"""The naive baseline: a hand-written single-process tf.io.TFRecordWriter loop.

This is what people write by hand (and roughly what TFRecorder's core does per image):
read each file, build a tf.train.Example, write it to one GZIP TFRecord file.
"""
from __future__ import annotations

import csv
import os

import tensorflow as tf


def convert(manifest: str, output: str, compression: str = 'GZIP') -> int:
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
