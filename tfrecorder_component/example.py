"""A manifest row plus its image bytes becomes a `tf.train.Example` with standard keys.

The message classes come from `example_proto` (TensorFlow's schema, without importing
TensorFlow); the serialized records are what `tf.train.Example` parses.
"""
from __future__ import annotations

import hashlib
import posixpath
from tfrecorder_component import example_proto as tf_example
from tfrecorder_component.image import ImageInfo
from tfrecorder_component.manifest import ManifestRow


def _bytes(*values: bytes):
  return tf_example.Feature(bytes_list=tf_example.BytesList(value=list(values)))


def _ints(*values: int):
  return tf_example.Feature(int64_list=tf_example.Int64List(value=list(values)))


def build_example(row: ManifestRow, data: bytes, info: ImageInfo):
  """Builds a classification record; `image/encoded` holds `data` unchanged.

  `row.label_ids` must hold the ids of `row.labels` (see beam.transforms.AssignLabelIds).
  """
  features = {
      'image/encoded': _bytes(data),
      'image/format': _bytes(info.format.encode()),
      'image/height': _ints(info.height),
      'image/width': _ints(info.width),
      'image/channels': _ints(info.channels),
      'image/filename': _bytes(posixpath.basename(row.image_uri).encode('utf-8')),
      'image/source_id': _bytes(row.image_uri.encode('utf-8')),
      'image/key/sha256': _bytes(hashlib.sha256(data).hexdigest().encode()),
      'image/class/text': _bytes(*(l.encode('utf-8') for l in row.labels)),
      'image/class/label': _ints(*row.label_ids),
  }
  return tf_example.Example(features=tf_example.Features(feature=features))
