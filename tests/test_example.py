"""Records as TensorFlow parses them."""
import tensorflow as tf

from images import encode, make_image
from tfrecorder_component.example import build_example
from tfrecorder_component.images.probe import probe_image
from tfrecorder_component.manifest import ManifestRow

SPEC = {
    'image/encoded': tf.io.FixedLenFeature([], tf.string),
    'image/height': tf.io.FixedLenFeature([], tf.int64),
    'image/channels': tf.io.FixedLenFeature([], tf.int64),
    'image/class/text': tf.io.VarLenFeature(tf.string),
    'image/class/label': tf.io.VarLenFeature(tf.int64),
}


def parse(row, data):
  serialized = build_example(row, data, probe_image(data)).SerializeToString(deterministic=True)
  return tf.io.parse_single_example(serialized, SPEC)


def test_multi_label_and_unlabelled_records_parse():
  data = encode(make_image('RGB', 6, 4), 'PNG')
  multi = parse(ManifestRow('m', 1, 'd/a.png', '/d/a.png', ('cat', 'dog'), 'train', (0, 1)), data)
  assert multi['image/encoded'].numpy() == data
  assert list(multi['image/class/text'].values.numpy()) == [b'cat', b'dog']
  assert list(multi['image/class/label'].values.numpy()) == [0, 1]
  assert int(multi['image/height']) == 6 and int(multi['image/channels']) == 3
  none = parse(ManifestRow('m', 2, 'b.png', '/b.png'), data)
  assert none['image/class/text'].values.shape == (0,)
  assert none['image/class/label'].values.shape == (0,)
