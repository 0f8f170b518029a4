"""Records as TensorFlow parses them."""
import tensorflow as tf

from images import encode, make_image
from tfrecorder_component.record.example import build_example
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


def test_an_object_attribute_never_adds_to_a_key_the_record_already_has():
  """An attribute named as a key the record writes (a Label Studio control named
  `truncated`) goes under image/object/attribute/, so each list keeps one value an
  object."""
  from tfrecorder_component.record.example import DetectedObject, build_example  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.images.probe import ImageInfo  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.manifest import ManifestRow  # pylint: disable=g-import-not-at-top
  row = ManifestRow('m.json', 1, 'a.jpg', 'a.jpg', objects=())
  objects = [DetectedObject('cat', 1, (0.1, 0.1, 0.5, 0.5), 4.0, truncated=True,
                            attributes=(('truncated', 'partly'), ('color', 'red'))),
             DetectedObject('cat', 1, (0.2, 0.2, 0.6, 0.6), 4.0)]
  example = build_example(row, b'x', ImageInfo('jpeg', 10, 10, 3), objects)
  feature = example.features.feature
  assert list(feature['image/object/truncated'].int64_list.value) == [1, 0]
  assert list(feature['image/object/attribute/truncated'].bytes_list.value) == [b'partly', b'']
  assert list(feature['image/object/color'].bytes_list.value) == [b'red', b'']
