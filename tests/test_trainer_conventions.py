"""Our output read by trainers' own conventions, in their own environment (tests/consumer_envs.py,
scripts/consumers-env), never the product's: ImageNet's readers (TF Model Garden's
legacy ImageNet input, which parses `image/class/label` and subtracts 1, and the
`image/class/synset` key) with a 1-based label map and `--class-synset`; and integer
class folders numbered as Keras's `image_dataset_from_directory` and TFDS's
`ImageFolder` number them, with `--label-order text`.
"""
import os

import pandas as pd
import pytest

import tfrecorder_component as trc
from consumer_envs import run_json
from images import write_image, write_text
from records import feature, read_split
from tfrecorder_component.adapters.cli import main
from tfrecorder_component.errors import ManifestError
from tfrecorder_component.record.labels import read_label_map

# WordNet ids, as ImageNet's class folders are named (tench, goldfish, Chihuahua).
SYNSETS = ['n01440764', 'n01443537', 'n02085620']

# Reads the uncompressed `tfrecord` layout's train shards at argv[1] as Model Garden's
# legacy ImageNet input does: dataset_factory's DatasetBuilder (records builder, its
# parse_record subtracting 1) and resnet's imagenet_preprocessing.parse_record (the same),
# and `image/class/synset` as build_imagenet_data.py wrote it.
_IMAGENET_READERS = """
import glob, json, sys
import tensorflow as tf
from official.legacy.image_classification import dataset_factory
from official.legacy.image_classification.resnet import imagenet_preprocessing

files = sorted(glob.glob(sys.argv[1] + '/images-train.tfrecord-*[0-9]'))
count = sum(1 for _ in tf.data.TFRecordDataset(files))
config = dataset_factory.ImageNetConfig(filenames=files, split='validation', image_size=32,
                                        num_classes=3, num_examples=count,
                                        batch_size=count, one_hot=False)
images, builder_labels = next(iter(dataset_factory.DatasetBuilder(config).build()))
records = []
for raw in tf.data.TFRecordDataset(files):
  image, label = imagenet_preprocessing.parse_record(raw, False, tf.float32)
  keys = tf.io.parse_single_example(raw, {
      'image/filename': tf.io.FixedLenFeature([], tf.string),
      'image/class/synset': tf.io.FixedLenFeature([], tf.string, default_value='')})
  records.append({'filename': keys['image/filename'].numpy().decode(),
                  'synset': keys['image/class/synset'].numpy().decode(),
                  'label': int(label.numpy()[0]), 'shape': image.shape.as_list()})
print(json.dumps({'builder_labels': builder_labels.numpy().ravel().tolist(),
                  'builder_images': images.shape.as_list(), 'records': records}))
"""


def _imagenet_folder(root) -> dict:
  """Class folders named by synset, JPEGs and one PNG (ImageNet's readers decode JPEG
  only: the run re-encodes it); {file name: its synset}."""
  named = {}
  for k, synset in enumerate(SYNSETS):
    for i in range(2):
      fmt, ext = ('PNG', 'png') if (k, i) == (2, 1) else ('JPEG', 'JPEG')
      name = f'{synset}_{i}.{ext}'
      write_image(str(root / 'train' / synset / name), fmt, height=20 + i, width=24, seed=3 * k + i)
      named[name] = synset
  return named


@pytest.mark.parametrize('label_map', ['label_map.pbtxt', 'labels.txt'])
def test_imagenet_readers_read_our_classes_with_a_one_based_label_map(tmp_path, label_map):
  """ImageNet's ids start at 1 (its readers subtract 1, so our class 0 would be -1): a
  label map from 1, as a label_map.pbtxt or a labels.txt whose first line (id 0) is
  empty, keeps id 0 for no label, and `--class-synset` writes the class folder's name
  as `image/class/synset`."""
  named = _imagenet_folder(tmp_path / 'data')
  if label_map == 'labels.txt':
    given = write_text(str(tmp_path / label_map), '\n' + '\n'.join(SYNSETS) + '\n')
  else:
    given = write_text(str(tmp_path / label_map), ''.join(
        f'item {{\n  name: "{s}"\n  id: {i}\n}}\n' for i, s in enumerate(SYNSETS, 1)))
  out = str(tmp_path / 'out')
  assert main(['convert', str(tmp_path / 'data' / 'train'), out, '--label-map', given,
               '--class-synset', '--transform', '{"encode": "jpeg"}', '--layout', 'tfrecord',
               '--splits', 'train=1', '--quiet']) == 0
  assert read_label_map(out) == {s: i for i, s in enumerate(SYNSETS, 1)}
  with open(os.path.join(out, 'labels.txt'), encoding='utf-8') as f:
    assert f.read() == '\n' + '\n'.join(SYNSETS) + '\n'  # line 1, id 0: no label's
  read = run_json('consumers', _IMAGENET_READERS, os.path.join(out, 'tfrecord'))
  by_name = {r['filename']: r for r in read['records']}
  # The PNG, re-encoded as JPEG, is named so.
  want = {name.replace('.png', '.jpg'): synset for name, synset in named.items()}
  assert sorted(by_name) == sorted(want)
  for name, synset in want.items():
    assert by_name[name]['synset'] == synset
    assert by_name[name]['label'] == SYNSETS.index(synset)  # our id - 1
    assert by_name[name]['shape'] == [224, 224, 3]
  assert read['builder_labels'] == [r['label'] for r in read['records']]
  assert read['builder_images'] == [len(want), 32, 32, 3]


def test_class_synset_holds_every_label_of_a_classification_record_and_only_then(tmp_path):
  for i in range(3):
    write_image(str(tmp_path / f'{i}.png'), 'PNG', height=6, width=5, seed=i)
  df = pd.DataFrame({'split': ['TRAIN'] * 3, 'image_uri': [str(tmp_path / f'{i}.png')
                                                           for i in range(3)],
                     'label': [['n2', 'n1'], ['n1'], []]})
  out = str(tmp_path / 'out')
  trc.convert(df, out, class_synset=True)
  records = {feature(e, 'image/filename')[0]: e
             for e in read_split(os.path.join(out, 'Split-train'))}
  for name, labels in ((b'0.png', [b'n2', b'n1']), (b'1.png', [b'n1']), (b'2.png', [])):
    assert feature(records[name], 'image/class/synset') == labels
    assert feature(records[name], 'image/class/text') == labels
  plain = str(tmp_path / 'plain')
  trc.convert(df, plain)
  assert all('image/class/synset' not in e.features.feature
             for e in read_split(os.path.join(plain, 'Split-train')))


def test_a_synset_column_is_refused_naming_class_synset(tmp_path):
  write_image(str(tmp_path / 'a.jpg'), 'JPEG', height=6, width=5)
  manifest = write_text(str(tmp_path / 'm.csv'),
                        'image_uri,label,image/class/synset\na.jpg,tench,n01440764\n')
  with pytest.raises(ManifestError) as raised:
    trc.convert(manifest, str(tmp_path / 'out'))
  message = str(raised.value)
  assert "column 'image/class/synset'" in message and 'm.csv' in message
  assert '--class-synset' in message and 'class_synset=True' in message


# --- integer class folders --------------------------------------------------------------

CLASSES = ['1', '2', '3', '10', '11']

# Keras's image_dataset_from_directory on argv[1] (one split's class folders) and TFDS's
# ImageFolder on argv[2] (split folders of class folders): their class names, and the
# label Keras gives each file.
_KERAS_AND_TFDS = """
import json, os, sys
import tensorflow as tf
import tensorflow_datasets as tfds
ds = tf.keras.utils.image_dataset_from_directory(sys.argv[1], shuffle=False, batch_size=None,
                                                 image_size=(8, 8))
labels = [int(label) for _, label in ds]
print(json.dumps({
    'keras': ds.class_names,
    'keras_labels': {os.path.basename(p): l for p, l in zip(ds.file_paths, labels)},
    'tfds': tfds.ImageFolder(sys.argv[2]).info.features['label'].names}))
"""


def test_integer_class_folders_take_the_ids_keras_and_tfds_give_with_label_order_text(tmp_path):
  """Keras and TFDS sort class folders as text ('10' before '2'); ours sorts labels that
  are all integers by number unless label_order='text' (--label-order text)."""
  root = tmp_path / 'data'
  for c in CLASSES:
    for i in range(2):
      write_image(str(root / 'train' / c / f'{c}-{i}.jpg'), 'JPEG', height=9, width=8,
                  seed=int(c) * 2 + i)
  by_number, as_text = str(tmp_path / 'by-number'), str(tmp_path / 'as-text')
  trc.convert(str(root), by_number)
  assert main(['convert', str(root), as_text, '--label-order', 'text', '--quiet']) == 0
  read = run_json('consumers', _KERAS_AND_TFDS, str(root / 'train'), str(root))
  assert read['keras'] == read['tfds'] == ['1', '10', '11', '2', '3']
  ids = read_label_map(as_text)
  assert list(ids) == read['keras'] and list(ids.values()) == [0, 1, 2, 3, 4]
  assert list(read_label_map(by_number)) == CLASSES  # the default: by number
  ours = {feature(e, 'image/filename')[0].decode(): feature(e, 'image/class/label')[0]
          for e in read_split(os.path.join(as_text, 'Split-train'))}
  assert ours == read['keras_labels']
