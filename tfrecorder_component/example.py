"""A manifest row plus its image bytes becomes a `tf.train.Example` with standard keys."""
from __future__ import annotations

import hashlib
import posixpath
from typing import Mapping

import tensorflow as tf

from tfrecorder_component.image import ImageInfo
from tfrecorder_component.manifest import ManifestRow


def _bytes(*values: bytes) -> tf.train.Feature:
  return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))


def _ints(*values: int) -> tf.train.Feature:
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def build_example(row: ManifestRow, data: bytes, info: ImageInfo,
                  label_ids: Mapping[str, int]) -> tf.train.Example:
  """Builds a classification record; `image/encoded` holds `data` unchanged."""
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
      'image/class/label': _ints(*(label_ids[l] for l in row.labels)),
  }
  return tf.train.Example(features=tf.train.Features(feature=features))
