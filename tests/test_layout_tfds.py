"""The `tfds` layout read back by TensorFlow Datasets itself (`tfds.builder_from_directory`):
split counts, decoded images, class names, detection boxes as BBoxFeatures, segmentation
masks; through the local run, Beam and the CLI. TFX's shards are unchanged by it."""
import glob
import io
import json
import os
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from PIL import Image

import tfrecorder_component as trc
from images import write_image, write_text
from tfrecorder_component.adapters.cli import main
from tfrecorder_component.errors import UsageError
from tfrecorder_component.record.labels import read_label_map
from tfrecorder_component.output.layouts import tfds as tfds_layout


def pil_pixels(path, mode='RGB'):
  with Image.open(path) as im:
    return np.asarray(im.convert(mode))


def examples(builder, split):
  return list(tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False)))


def split_files(out):
  """{path under the output: bytes} of every file of TFX's splits."""
  found = {}
  for path in sorted(glob.glob(os.path.join(out, 'Split-*', '*'))):
    with open(path, 'rb') as f:
      found[os.path.relpath(path, out)] = f.read()
  return found


def tfds_records(folder, split):
  return [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(
      sorted(glob.glob(os.path.join(folder, f'images-{split}.tfrecord-*'))))]


# --- classification -------------------------------------------------------------------


LABELS = {0: 'cat', 1: 'dog', 2: 'emu', 3: 'cat', 4: 'dog', 5: None, 6: 'emu'}


@pytest.fixture(scope='module')
def classification(tmp_path_factory):
  """Seven JPEGs of different sizes (one unlabelled), train 5 / eval 2 / test 0, two
  extra columns; converted with the layout and without it."""
  d = tmp_path_factory.mktemp('classification')
  rows = []
  for i, label in LABELS.items():
    path = str(d / 'img' / f'{i}.jpg')
    write_image(path, 'JPEG', height=10 + i, width=14 + 2 * i, seed=i)
    rows.append({'split': 'TRAIN' if i < 5 else 'VALIDATION', 'image_uri': path,
                 'label': label or '', 'weight': i * 0.5, 'site': f'site-{i % 2}'})
  out = str(d / 'out')
  trc.convert(pd.DataFrame(rows), out, layouts=['tfds'])
  trc.convert(pd.DataFrame(rows), str(d / 'plain'))
  return d, out


def test_classification_loads_every_split_with_decoded_images_and_class_names(classification):
  d, out = classification
  builder = tfds.builder_from_directory(os.path.join(out, 'tfds'))
  info = builder.info
  assert {s: info.splits[s].num_examples for s in info.splits} == {'train': 5, 'eval': 2}
  assert info.features['label'].names == ['cat', 'dog', 'emu']
  assert info.supervised_keys == ('image', 'label')
  assert info.features['image'].shape == (None, None, 3)
  assert info.metadata['task'] == 'classification'
  seen = {}
  for split, want in (('train', range(5)), ('eval', range(5, 7))):
    got = examples(builder, split)
    assert sorted(int(e['image/filename'].decode()[:-4]) for e in got) == list(want)
    for e in got:
      i = int(e['image/filename'].decode()[:-4])
      path = str(d / 'img' / f'{i}.jpg')
      assert e['image/source_id'].decode() == path
      with open(path, 'rb') as f:  # the source's bytes, decoded as TensorFlow decodes them
        np.testing.assert_array_equal(e['image'], tf.io.decode_jpeg(f.read()).numpy())
      # PIL's decode differs by a few levels (TensorFlow's IDCT is libjpeg's fast one).
      np.testing.assert_allclose(e['image'], pil_pixels(path), atol=6)
      assert e['image'].shape == (10 + i, 14 + 2 * i, 3)
      # The unlabelled image: -1, as TFDS's imagenet2012 test split has it.
      assert e['label'] == (info.features['label'].str2int(LABELS[i]) if LABELS[i] else -1)
      assert e['weight'] == pytest.approx(i * 0.5)
      assert e['site'] == f'site-{i % 2}'.encode()
      seen[i] = split
  assert len(seen) == 7


def test_an_empty_split_is_left_out_and_the_index_lists_the_layout(classification):
  _, out = classification
  folder = os.path.join(out, 'tfds')
  # No record went to test: TFX's split is not written (its empty shard, which the layout
  # is written from, is removed after the run); TFDS cannot read an empty split, so it is
  # not in the metadata, and no file of it (nor any stats file) is left.
  assert not os.path.exists(os.path.join(out, 'Split-test'))
  assert sorted(os.listdir(folder)) == [
      'dataset_info.json', 'features.json', 'images-eval.tfrecord-00000-of-00001',
      'images-train.tfrecord-00000-of-00001', 'label.labels.txt', 'metadata.json']
  builder = tfds.builder_from_directory(folder)
  assert 'test' not in builder.info.splits
  with pytest.raises(ValueError, match="Unknown split 'test'"):
    builder.as_dataset(split='test')
  assert len(examples(builder, 'train+eval')) == 7
  with open(os.path.join(out, 'examples.json')) as f:
    index = json.load(f)
  assert index['layouts']['tfds'] == {
      'folder': 'tfds', 'name': 'images', 'version': '1.0.0',
      'files': {'train': ['images-train.tfrecord-00000-of-00001'],
                'eval': ['images-eval.tfrecord-00000-of-00001']},
      'metadata': ['dataset_info.json', 'features.json', 'label.labels.txt',
                   'metadata.json'],
      'empty_splits': ['test']}
  assert index['split_names'] == ['train', 'eval']
  assert index['records_per_split'] == {'train': 5, 'eval': 2}


def test_records_are_what_tfds_own_serializer_writes(classification):
  """The records built without TFDS equal, field for field, the ones TFDS's
  FeaturesDict.serialize_example makes of the same values."""
  d, out = classification
  folder = os.path.join(out, 'tfds')
  features = tfds.builder_from_directory(folder).info.features
  for record in tfds_records(folder, 'train'):
    values = {k: v.bytes_list.value or v.int64_list.value or v.float_list.value
              for k, v in record.features.feature.items()}
    decoded = {'image': values['image'][0],
               'image/filename': values['image/filename'][0].decode(),
               'image/source_id': values['image/source_id'][0].decode(),
               'label': values['label'][0], 'weight': values['weight'][0],
               'site': values['site'][0].decode()}
    if decoded['label'] == -1:  # TFDS's ClassLabel refuses -1 when it encodes
      continue
    want = tf.train.Example.FromString(features.serialize_example(decoded))
    del record.features.feature['labels']  # written for a multi-label set, not declared
    assert record == want
    path = decoded['image/source_id']
    with open(path, 'rb') as f:
      assert decoded['image'] == f.read()  # the image bytes as they are


def test_tfx_shards_are_byte_identical_with_and_without_the_layout(classification):
  d, out = classification
  with_layout, without = split_files(out), split_files(str(d / 'plain'))
  # train and eval's shard each; test got no record and is not written, with or without.
  assert sorted(with_layout) == sorted(without) == [
      'Split-eval/data_tfrecord-00000-of-00001.gz',
      'Split-train/data_tfrecord-00000-of-00001.gz']
  assert with_layout == without


def test_multi_label_records_are_a_sequence_of_class_labels(tmp_path):
  for i in range(4):
    write_image(str(tmp_path / f'{i}.png'), 'PNG', height=6, width=5, seed=i)
  manifest = write_text(str(tmp_path / 'multi.csv'), 'TRAIN,0.png,cat,dog\nTRAIN,1.png,dog\n'
                        'TRAIN,2.png\nTRAIN,3.png,emu,cat\n')
  trc.convert(manifest, str(tmp_path / 'out'), layouts=['tfds'])
  builder = tfds.builder_from_directory(str(tmp_path / 'out' / 'tfds'))
  features = builder.info.features
  assert 'label' not in features
  assert features['labels'].feature.names == ['cat', 'dog', 'emu']
  assert builder.info.supervised_keys == ('image', 'labels')
  assert features['image'].encoding_format == 'png'
  got = {e['image/filename'].decode(): sorted(e['labels'].tolist())
         for e in examples(builder, 'train')}
  assert got == {'0.png': [0, 1], '1.png': [1], '2.png': [], '3.png': [0, 2]}


# --- detection ------------------------------------------------------------------------


W, H = 40, 30
# Pixel boxes (x, y, w, h); 'c.png' has no objects.
OBJECTS = {'a.png': [('pagoda', 4.0, 3.0, 20.0, 15.0), ('tree', 0.0, 10.0, 12.0, 20.0)],
           'b.png': [('flower', 10.5, 2.0, 25.0, 26.0)], 'c.png': []}
CATEGORIES = {'pagoda': 3, 'tree': 17, 'flower': 90}  # COCO ids: not contiguous
CROWD = {('tree', 0.0)}


def write_coco(d):
  images, annotations = [], []
  for image_id, (name, objects) in enumerate(OBJECTS.items(), start=7):
    write_image(str(d / name), 'PNG', height=H, width=W, seed=image_id)
    images.append({'id': image_id, 'file_name': name, 'width': W, 'height': H})
    for label, x, y, w, h in objects:
      annotations.append({'id': len(annotations) + 100, 'image_id': image_id,
                          'category_id': CATEGORIES[label], 'bbox': [x, y, w, h],
                          'area': w * h * 0.5, 'iscrowd': int((label, x) in CROWD),
                          'segmentation': [[x, y, x + w, y, x + w, y + h, x, y + h]]})
  coco = {'images': images, 'annotations': annotations,
          'categories': [{'id': i, 'name': n} for n, i in CATEGORIES.items()]}
  return write_text(str(d / 'instances.json'), json.dumps(coco))


def test_detection_through_beam_reads_boxes_labels_and_masks(tmp_path):
  manifest = write_coco(tmp_path)
  out = str(tmp_path / 'out')
  trc.convert(manifest, out, layouts=['tfds'], splits={'train': 1}, include_masks=True,
              beam_args=['--direct_num_workers=1'])
  builder = tfds.builder_from_directory(os.path.join(out, 'tfds'))
  objects = builder.info.features['objects']
  assert isinstance(objects.feature['bbox'], tfds.features.BBoxFeature)
  names = objects.feature['label'].names
  # COCO's category ids are the label map's ids: a ClassLabel index is the id - 1, ids
  # no category holds are named unused_<id>.
  assert read_label_map(out) == CATEGORIES
  assert len(names) == 90 and names[17] == 'unused_18'
  assert {label: names[i - 1] for label, i in CATEGORIES.items()} == {
      label: label for label in CATEGORIES}
  assert builder.info.splits['train'].num_examples == 3
  assert builder.info.supervised_keys is None
  got = {e['image/filename'].decode(): e for e in examples(builder, 'train')}
  assert sorted(got) == sorted(OBJECTS)
  for name, want in OBJECTS.items():
    e, o = got[name], got[name]['objects']
    np.testing.assert_array_equal(e['image'], pil_pixels(str(tmp_path / name)))
    assert o['bbox'].shape == (len(want), 4) and o['label'].shape == (len(want),)
    np.testing.assert_allclose(
        o['bbox'], np.array([[y / H, x / W, (y + h) / H, (x + w) / W]
                             for _, x, y, w, h in want], np.float32).reshape(-1, 4),
        rtol=1e-6)
    assert [names[i] for i in o['label']] == [label for label, *_ in want]
    assert o['is_crowd'].tolist() == [(label, x) in CROWD for label, x, *_ in want]
    np.testing.assert_allclose(o['area'], [w * h * 0.5 for *_, w, h in want])
    assert o['is_difficult'].tolist() == o['is_truncated'].tolist() == [False] * len(want)
    # (an image without objects: no masks, of shape (0, 0, 0, 1))
    assert o['mask'].shape == ((len(want), H, W, 1) if want else (0, 0, 0, 1))
    for mask, (_, x, y, w, h) in zip(o['mask'], want):
      assert mask[int(y) + 1:int(y + h) - 1, int(x) + 1:int(x + w) - 1].min() == 1
      assert mask.sum() <= (w + 1) * (h + 1)


# Reads the `tfds` layout at argv[1] with the environment's own TFDS: {'tfds': version,
# 'names': the ClassLabel's, 'examples': {filename: {'bbox': [[ymin, xmin, ymax, xmax]],
# 'label': [ClassLabel index]}}}.
_READ_WITH_TFDS = """
import json, sys
import tensorflow_datasets as tfds
builder = tfds.builder_from_directory(sys.argv[1])
objects = builder.info.features['objects']
assert isinstance(objects.feature['bbox'], tfds.features.BBoxFeature)
got = {}
for e in tfds.as_numpy(builder.as_dataset(split='train', shuffle_files=False)):
  got[e['image/filename'].decode()] = {'bbox': e['objects']['bbox'].tolist(),
                                       'label': e['objects']['label'].tolist()}
print(json.dumps({'tfds': tfds.__version__, 'names': objects.feature['label'].names,
                  'examples': got}))
"""


@pytest.mark.parametrize('env, version', [('consumers', '4.9.6'), ('peers', '4.9.7')])
def test_detection_metadata_is_read_by_tfds_4_9_6_and_4_9_7(tmp_path, env, version):
  """features.json names no `bboxFormat`, a field TFDS 4.9.7 added and 4.9.6 refuses
  (`Message type "tensorflow_datasets.BoundingBoxFeature" has no field named
  "bboxFormat"`): each reads the boxes and labels our records hold."""
  from consumer_envs import run_json  # pylint: disable=g-import-not-at-top
  manifest = write_coco(tmp_path)
  out = str(tmp_path / 'out')
  trc.convert(manifest, out, layouts=['tfds'], splits={'train': 1})
  with open(os.path.join(out, 'tfds', 'features.json'), encoding='utf-8') as f:
    assert 'bboxFormat' not in f.read()
  ours = {}
  for r in tf.data.TFRecordDataset(glob.glob(os.path.join(out, 'Split-train', '*')), 'GZIP'):
    e = tf.train.Example.FromString(r.numpy()).features.feature
    box = [e[f'image/object/bbox/{k}'].float_list.value
           for k in ('ymin', 'xmin', 'ymax', 'xmax')]
    labels = [i - 1 for i in e['image/object/class/label'].int64_list.value]
    ours[e['image/filename'].bytes_list.value[0].decode()] = ([list(b) for b in zip(*box)], labels)
  read = run_json(env, _READ_WITH_TFDS, os.path.join(out, 'tfds'))
  assert read['tfds'] == version
  assert sorted(read['examples']) == sorted(ours) == sorted(OBJECTS)
  names = read['names']
  for name, (boxes, labels) in ours.items():
    got = read['examples'][name]
    np.testing.assert_array_equal(np.array(got['bbox'], np.float32).reshape(-1, 4),
                                  np.array(boxes, np.float32).reshape(-1, 4))
    assert got['label'] == labels
    assert [names[i] for i in got['label']] == [label for label, *_ in OBJECTS[name]]


def test_object_attributes_tags_and_corners_from_cvat(tmp_path):
  """CVAT's per-object attributes become `objects` features (a record without one: '',
  -1 for each object, as example.py fills them); image tags and a rotated box's corners
  stay lists under their own keys."""
  for name in ('a.png', 'b.png'):
    write_image(str(tmp_path / name), 'PNG', height=40, width=60)
  labels = ''.join(f'<label><name>{n}</name></label>' for n in ('cat', 'ant'))
  manifest = write_text(str(tmp_path / 'annotations.xml'), (
      '<?xml version="1.0" encoding="utf-8"?>\n<annotations><version>1.1</version>'
      f'<meta><task><labels>{labels}</labels></task></meta>'
      '<image id="0" name="a.png" width="60" height="40" subset="Train">'
      '<box label="cat" occluded="1" xtl="12" ytl="4" xbr="30" ybr="20" group_id="2">'
      '<attribute name="color">red</attribute></box>'
      '<box label="ant" occluded="0" xtl="0" ytl="0" xbr="20" ybr="10" rotation="90"/>'
      '<tag label="cat"><attribute name="color">blue</attribute></tag></image>'
      '<image id="1" name="b.png" width="60" height="40" subset="Train">'
      '<box label="ant" occluded="0" xtl="30" ytl="20" xbr="60" ybr="40"/></image>'
      '</annotations>'))
  out = str(tmp_path / 'out')
  trc.convert(manifest, out, layouts=['tfds'])
  builder = tfds.builder_from_directory(os.path.join(out, 'tfds'))
  objects = builder.info.features['objects'].feature
  assert sorted(objects) == ['area', 'attribute/color', 'bbox', 'group_id', 'is_crowd',
                             'is_difficult', 'is_truncated', 'label', 'occluded']
  got = {e['image/filename'].decode(): e for e in examples(builder, 'train')}
  a, b = got['a.png'], got['b.png']
  assert [objects['label'].names[i] for i in a['objects']['label']] == ['cat', 'ant']
  np.testing.assert_allclose(a['objects']['bbox'][0], [4 / 40, 12 / 60, 20 / 40, 30 / 60],
                             rtol=1e-6)
  assert a['objects']['occluded'].tolist() == [1, 0]
  assert a['objects']['group_id'].tolist() == [2, -1]
  assert a['objects']['attribute/color'].tolist() == [b'red', b'']
  assert b['objects']['occluded'].tolist() == [0]
  assert b['objects']['group_id'].tolist() == [-1]  # filled: b has no such attribute
  assert b['objects']['attribute/color'].tolist() == [b'']
  assert a['tag/cat'].tolist() == [1] and b['tag/cat'].tolist() == []
  assert a['tag/cat/color'].tolist() == [b'blue']
  assert len(a['image/object/corner/x']) == 8 and len(b['image/object/corner/x']) == 0


# --- segmentation, greyscale, GIF, CLI ------------------------------------------------


def test_segmentation_masks_and_greyscale_images(tmp_path):
  masks = {}
  for i in range(3):
    write_image(str(tmp_path / f'{i}.png'), 'PNG', 'L', height=8, width=9, seed=i)
    mask = np.zeros((8, 9), np.uint8)
    mask[i:i + 4, 2:7] = i + 1
    mask[0, :] = 255
    Image.fromarray(mask, 'L').save(tmp_path / f'{i}-mask.png')
    masks[f'{i}.png'] = mask
  manifest = write_text(str(tmp_path / 'seg.csv'), 'ml_use,image_uri,mask_uri\n' + ''.join(
      f'TRAIN,{i}.png,{i}-mask.png\n' for i in range(3)))
  trc.convert(manifest, str(tmp_path / 'out'), layouts=['tfds'])
  builder = tfds.builder_from_directory(str(tmp_path / 'out' / 'tfds'))
  assert builder.info.features['image'].shape == (None, None, 1)  # every image greyscale
  assert builder.info.features['segmentation_mask'].shape == (None, None, 1)
  assert builder.info.supervised_keys == ('image', 'segmentation_mask')
  assert builder.info.metadata['task'] == 'segmentation'
  got = examples(builder, 'train')
  assert len(got) == 3
  for e in got:
    name = e['image/filename'].decode()
    np.testing.assert_array_equal(e['image'][..., 0], pil_pixels(str(tmp_path / name), 'L'))
    np.testing.assert_array_equal(e['segmentation_mask'][..., 0], masks[name])


def test_cli_layout_with_gif_bmp_and_mixed_channels(tmp_path):
  """A GIF (TFDS's Image decodes none into one frame: rewritten as a PNG of its first
  frame), a BMP and an RGBA PNG: channels differ, so images decode to RGB."""
  write_image(str(tmp_path / 'a.gif'), 'GIF', 'P', height=10, width=12, seed=1)
  write_image(str(tmp_path / 'b.bmp'), 'BMP', 'RGB', height=7, width=13, seed=2)
  write_image(str(tmp_path / 'c.png'), 'PNG', 'RGBA', height=9, width=9, seed=3)
  manifest = write_text(str(tmp_path / 'm.csv'), 'TRAIN,a.gif,x\nTRAIN,b.bmp,y\n'
                        'VALIDATION,c.png,x\n')
  out = str(tmp_path / 'out')
  assert main(['convert', manifest, out, '--layout', 'tfds']) == 0
  builder = tfds.builder_from_directory(os.path.join(out, 'tfds'))
  assert builder.info.features['image'].shape == (None, None, 3)
  assert builder.info.features['image'].encoding_format is None
  assert {s: builder.info.splits[s].num_examples for s in builder.info.splits} == {
      'train': 2, 'eval': 1}
  for split in ('train', 'eval'):
    for e in examples(builder, split):
      name = e['image/filename'].decode()
      np.testing.assert_array_equal(e['image'], pil_pixels(str(tmp_path / name)))
      assert e['label'] == {'a.gif': 0, 'b.bmp': 1, 'c.png': 0}[name]
  # TFX's record keeps the GIF's bytes; only the TFDS record holds a PNG.
  record, = [r for r in tfds_records(os.path.join(out, 'tfds'), 'train')
             if r.features.feature['image/filename'].bytes_list.value[0] == b'a.gif']
  with Image.open(io.BytesIO(record.features.feature['image'].bytes_list.value[0])) as im:
    assert im.format == 'PNG'


def test_an_output_on_s3_holds_the_same_dataset(tmp_path, s3_bucket):
  """On object storage (moto's S3 server on loopback) the shards, stats and metadata go
  through `files`: downloaded, the folder loads as the local one does."""
  for i in range(4):
    write_image(str(tmp_path / f'{i}.png'), 'PNG', height=5 + i, width=6, seed=i)
  manifest = write_text(str(tmp_path / 'm.csv'), ''.join(
      f'{"TRAIN" if i < 3 else "TEST"},{i}.png,{"ab"[i % 2]}\n' for i in range(4)))
  trc.convert(manifest, str(tmp_path / 'local'), layouts=['tfds'])
  trc.convert(manifest, 's3://bkt/out', layouts=['tfds'])
  names = s3_bucket.list('bkt', 'out/tfds/')
  s3_bucket.download('bkt', 'out/tfds', str(tmp_path / 'down'))
  assert sorted(os.path.basename(n) for n in names) == sorted(
      os.listdir(tmp_path / 'local' / 'tfds'))
  got = {}
  for folder in ('local/tfds', 'down'):
    builder = tfds.builder_from_directory(str(tmp_path / folder))
    got[folder] = {s: sorted((e['image/filename'], e['label'], e['image'].tobytes())
                             for e in examples(builder, s)) for s in builder.info.splits}
  assert got['down'] == got['local/tfds']
  assert {s: len(v) for s, v in got['down'].items()} == {'train': 3, 'test': 1}


TFDS_EXTRA = r"\[tfds\] extra.*pip install 'tfrecorder-component\[tfds\]'"


def test_without_tensorflow_datasets_the_layout_is_refused_before_the_run(tmp_path,
                                                                          monkeypatch):
  monkeypatch.setitem(sys.modules, 'tensorflow_datasets', None)  # as if not installed
  with pytest.raises(UsageError, match=TFDS_EXTRA):
    tfds_layout.check_available()
  write_image(str(tmp_path / 'a.png'), 'PNG')
  with pytest.raises(UsageError, match=TFDS_EXTRA):
    trc.convert(pd.DataFrame([{'image_uri': str(tmp_path / 'a.png'), 'label': 'x'}]),
                str(tmp_path / 'out'), layouts=['tfds'])
  assert not os.path.exists(tmp_path / 'out' / 'Split-train')
