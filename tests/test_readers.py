"""Readers for those who do not read with `load_dataset`: the tf.data parse function of
every key (`dataset.parse_fn`), and the TensorFlow-free iterator and PyTorch-style
dataset of `readers`, on real conversions, checked against the records TensorFlow reads
from the TFX shards."""
import collections
import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from PIL import Image

from images import write_image
from records import feature, read_split
import tfrecorder_component as trc
from tfrecorder_component.readers import dataset, records as readers

SHA = 'image/key/sha256'
SPLITS = ('train', 'eval')


def rows_of(folder, count=24):
  """Images of three kinds (RGB PNG, grey PNG, JPEG) and sizes, a multi-label row, a
  float column missing where NaN and a text column missing where empty."""
  rows = []
  for i in range(count):
    fmt, mode = [('PNG', 'RGB'), ('PNG', 'L'), ('JPEG', 'RGB')][i % 3]
    path = os.path.join(folder, f'{i:02d}.{fmt.lower()}')
    write_image(path, fmt, mode, height=8 + i % 4, width=10 + i % 3, seed=i)
    rows.append({'split': 'TRAIN' if i < count * 3 // 4 else 'VALIDATION',
                 'image_uri': path,
                 'label': ['cat', 'dog'] if i == 5 else ['cat', 'dog', 'bird'][i % 3],
                 'score': np.nan if i % 5 == 0 else i / 4,
                 'note': 'n' * (i % 4)})
  return rows


@pytest.fixture(scope='module')
def rows(tmp_path_factory):
  return rows_of(str(tmp_path_factory.mktemp('images')))


@pytest.fixture(scope='module')
def outputs(tmp_path_factory, rows):
  """{name: output folder}: TFX shards only (5 a split), with the tfrecord layout (3),
  and one shard a split with the layout."""
  d = tmp_path_factory.mktemp('outputs')
  out = {'plain': str(d / 'plain'), 'layout': str(d / 'layout'), 'one': str(d / 'one')}
  frame = pd.DataFrame(rows)
  trc.convert(frame, out['plain'], num_shards=5)
  trc.convert(frame, out['layout'], num_shards=3, layouts=['tfrecord'])
  trc.convert(frame, out['one'], num_shards=1, layouts=['tfrecord'])
  return out


def tfx_records(out, split):
  """{sha256: tf.train.Example} of a split, as TensorFlow reads the TFX shards."""
  examples = read_split(os.path.join(out, f'Split-{split}'))
  records = {feature(e, SHA)[0]: e for e in examples}
  assert len(records) == len(examples) > 0
  return records


def assert_same_record(ours, example, features):
  """`ours` (a readers record) holds exactly the example's values, typed by examples.json."""
  assert set(ours) >= set(example.features.feature)
  for key, info in features.items():
    want = feature(example, key) if key in example.features.feature else []
    got = ours[key]
    if info['scalar']:
      assert len(want) == 1, key
      if info['type'] == 'bytes':
        assert isinstance(got, bytes) and got == want[0], key
      else:
        assert got.shape == () and got.dtype == {'int64': np.int64, 'float': np.float32}[
            info['type']] and got == np.array(want[0], got.dtype), key
    elif info['type'] == 'bytes':
      assert got.ndim == 1 and got.dtype == object and list(got) == want, key
    else:
      assert got.ndim == 1 and got.dtype == {'int64': np.int64, 'float': np.float32}[
          info['type']], key
      np.testing.assert_array_equal(got, np.array(want, got.dtype), err_msg=key)


def read_all(out, split, world_size, num_workers, **options):
  """{(rank, worker): records} of every reader."""
  return {(rank, worker): list(readers.iter_records(
      out, split, rank=rank, world_size=world_size, worker=worker,
      num_workers=num_workers, **options))
          for rank in range(world_size) for worker in range(num_workers)}


def assert_each_once(parts, out, split):
  expected = tfx_records(out, split)
  got = collections.Counter(r[SHA] for records in parts.values() for r in records)
  assert got == collections.Counter(list(expected)), 'a record missing or read twice'
  features = readers.read_index(out)['features']
  for records in parts.values():
    for record in records:
      assert_same_record(record, expected[record[SHA]], features)


# --- tf.data: parse_fn -------------------------------------------------------------------


def assert_parsed(out, split, batch):
  files = sorted(tf.io.gfile.glob(os.path.join(out, f'Split-{split}', '*')))
  examples = read_split(os.path.join(out, f'Split-{split}'))
  features = readers.read_index(out)['features']
  spec = dataset.feature_spec(out)
  assert sorted(spec) == sorted(features)
  for key, info in features.items():
    assert isinstance(spec[key], tf.io.FixedLenFeature if info['scalar']
                      else tf.io.RaggedFeature), key
  parse = dataset.parse_fn(out)
  parsed = list(tf.data.TFRecordDataset(files, 'GZIP').batch(batch).map(parse))
  assert sum(len(p[SHA]) for p in parsed) == len(examples)
  i = 0
  for p in parsed:
    for row in range(len(p[SHA])):
      example = examples[i]
      for key, info in features.items():
        want = feature(example, key) if key in example.features.feature else []
        value = p[key]
        if info['scalar']:
          assert isinstance(value, tf.Tensor) and value.shape.rank == 1, key
          got = [value[row].numpy()]
        else:
          assert isinstance(value, tf.RaggedTensor), key
          got = value[row].numpy().tolist()
        if info['type'] == 'float':
          np.testing.assert_array_equal(np.float32(got), np.float32(want), err_msg=key)
        else:
          assert got == want, key
      i += 1
  return examples


def test_parse_fn_parses_every_key_of_every_record(outputs):
  """Scalar keys dense [batch], list keys (the multi-label one, a column some rows lack)
  ragged, values equal to those TensorFlow's own proto parse gives."""
  features = readers.read_index(outputs['plain'])['features']
  assert features['image/class/label']['scalar'] is False  # one row has two labels
  assert features['score']['scalar'] is False and features['score']['records'] < 24
  assert features['image/height']['scalar'] is True
  for split in SPLITS:
    assert_parsed(outputs['plain'], split, batch=4)
  examples = assert_parsed(outputs['one'], 'train', batch=7)
  # One record, unbatched; a Trainer's list of split folders gives the same spec.
  one = dataset.parse_examples(tf.constant(examples[0].SerializeToString()),
                               dataset.feature_spec(outputs['one'], keys=[SHA, 'score']))
  assert one[SHA].numpy() == feature(examples[0], SHA)[0] and one['score'].shape.rank == 1
  folders = [os.path.join(outputs['one'], 'Split-train'), os.path.join(outputs['one'],
                                                                       'Split-eval')]
  assert dataset.feature_spec(folders) == dataset.feature_spec(outputs['one'])


def test_parse_fn_on_detection_records(detection):
  out, _ = detection
  examples = assert_parsed(out, 'train', batch=2)
  assert any(len(feature(e, 'image/object/bbox/xmin')) == 2 for e in examples)


def test_feature_spec_leaves_out_a_key_of_two_types():
  features = {'a': {'type': 'float|int64', 'records': 2, 'scalar': True},
              'b': {'type': 'bytes', 'records': 2, 'scalar': True}}
  assert dataset.feature_spec(features) == {'b': tf.io.FixedLenFeature([], tf.string)}
  with pytest.raises(ValueError, match='a was written as float|int64'):
    dataset.feature_spec(features, keys=['a'])
  with pytest.raises(ValueError, match="no key 'c'"):
    dataset.feature_spec({'features': features}, keys=['c'])


# --- the iterator: sharding -------------------------------------------------------------


@pytest.mark.parametrize('name,layout', [('plain', 'auto'), ('layout', 'auto'),
                                         ('layout', 'tfx')])
@pytest.mark.parametrize('num_workers', [2, 3])
def test_ranks_and_workers_read_every_record_once(outputs, name, layout, num_workers):
  """2 ranks x 2 or 3 workers: every record of each split once, equal to TensorFlow's.
  5 GZIP shards for 4 and 6 readers, 3 indexed shards for 4 and 6."""
  out = outputs[name]
  source = readers.split_source(out, 'train', layout)
  assert source.compressed == (name == 'plain' or layout == 'tfx')
  assert (source.offsets is not None) == (not source.compressed)
  for split in SPLITS:
    parts = read_all(out, split, 2, num_workers, layout=layout)
    assert_each_once(parts, out, split)
    counts = [len(records) for records in parts.values()]
    if source.offsets is not None:  # indexed: counts within 1
      assert max(counts) - min(counts) <= 1, counts


@pytest.mark.parametrize('layout', ['tfx', 'tfrecord'])
def test_one_shard_is_split_among_four_readers(outputs, layout):
  out = outputs['one']
  assert len(readers.split_source(out, 'train', layout).paths) == 1
  parts = read_all(out, 'train', 1, 4, layout=layout)
  assert_each_once(parts, out, 'train')
  assert sorted(len(records) for records in parts.values()) == [4, 4, 5, 5]  # 18 records
  parts = read_all(out, 'eval', 2, 2, layout=layout)  # 6 records, 4 readers
  assert_each_once(parts, out, 'eval')
  assert all(parts.values())


def test_with_the_index_a_reader_reads_only_its_own_records(outputs, tmp_path):
  """A byte of the last record spoilt: the readers before never read it (they seek to
  their first record and stop at their last), the last one finds the CRC wrong."""
  out = str(tmp_path / 'copy')
  shutil.copytree(outputs['one'], out)
  source = readers.split_source(out, 'train')
  path = source.paths[0]
  offset, size = source.offsets[0][-1]
  with open(path, 'r+b') as f:
    f.seek(int(offset + size) - 10)  # inside the record's data
    byte = f.read(1)
    f.seek(-1, io.SEEK_CUR)
    f.write(bytes([byte[0] ^ 0xff]))
  for worker in range(3):
    assert len(list(readers.iter_records(out, 'train', worker=worker, num_workers=4))) > 0
  with pytest.raises(ValueError, match=f'{path}: record 17 is corrupt \\(CRC mismatch\\)'):
    list(readers.iter_records(out, 'train', worker=3, num_workers=4))
  assert len(list(readers.iter_records(out, 'train', worker=3, num_workers=4,
                                       layout='tfx'))) == 4  # the GZIP shards are whole


TFRECORD_LOADER = """
import json, sys
from tfrecord.reader import tfrecord_loader
seen = []
for path in sys.argv[1:]:
  for worker in range(2):
    for record in tfrecord_loader(path, path + '.idx', {'image/key/sha256': 'byte',
                                  'image/height': 'int'}, shard=(worker, 2)):
      seen.append(bytes(record['image/key/sha256']).decode())
print(json.dumps(seen))
"""


def test_the_tfrecord_packages_loader_splits_the_layout_between_two_workers(outputs):
  """The PyTorch `tfrecord` package's loader, given the .idx files and shard=(worker, 2)
  as its torch dataset passes a DataLoader worker's, reads each record once. (In a
  process of its own: its example_pb2 and TensorFlow's cannot share one.)"""
  out = outputs['layout']
  written = readers.read_index(out)['layouts']['tfrecord']
  assert written['index_suffix'] == '.idx'
  for split in SPLITS:
    paths = [os.path.join(out, written['folder'], name) for name in written['files'][split]]
    assert len(paths) == 3
    done = subprocess.run([sys.executable, '-c', TFRECORD_LOADER, *paths], check=True,
                          capture_output=True, text=True)
    seen = collections.Counter(s.encode() for s in json.loads(done.stdout))
    assert seen == collections.Counter(list(tfx_records(out, split)))


def test_a_beam_run_is_read_the_same(tmp_path, rows):
  out = str(tmp_path / 'beam')
  trc.convert(pd.DataFrame(rows[:12]), out, layouts=['tfrecord'],
              beam_args=['--direct_num_workers=1'])
  for layout in ('tfrecord', 'tfx'):
    assert_each_once(read_all(out, 'train', 1, 3, layout=layout), out, 'train')


# --- the iterator: records --------------------------------------------------------------


def test_decode_images_gives_pillows_pixels(outputs):
  records = list(readers.iter_records(outputs['layout'], 'train', decode_images=True))
  kinds = set()
  for record in records:
    with Image.open(io.BytesIO(record['image/encoded'])) as im:
      want = np.asarray(im)
      kinds.add(im.mode)
    want = want[:, :, None] if want.ndim == 2 else want
    assert record['image'].dtype == np.uint8
    np.testing.assert_array_equal(record['image'], want)
    assert record['image'].shape == (record['image/height'], record['image/width'],
                                     record['image/channels'])
  assert kinds == {'RGB', 'L'}
  grey = [r for r in records if r['image/channels'] == 1]
  rgb = list(readers.iter_records(outputs['layout'], 'train', decode_images=True,
                                  channels=3, keys=[SHA]))
  by_sha = {r[SHA]: r for r in rgb}
  assert set(by_sha[records[0][SHA]]) == {SHA, 'image/encoded', 'image'}
  for record in grey:
    with Image.open(io.BytesIO(record['image/encoded'])) as im:
      np.testing.assert_array_equal(by_sha[record[SHA]]['image'],
                                    np.asarray(im.convert('RGB')))


def test_keys_and_shuffle(outputs):
  out = outputs['layout']
  plain = [r[SHA] for r in readers.iter_records(out, 'train', keys=[SHA])]
  one = readers.RecordDataset(out, 'train', keys=[SHA, 'score'], shuffle_buffer=5, seed=3)
  first = [r[SHA] for r in one]
  assert sorted(first) == sorted(plain) and first != plain
  assert [r[SHA] for r in one] == first  # the same epoch, the same order
  one.set_epoch(1)
  assert sorted(r[SHA] for r in one) == sorted(plain) and [r[SHA] for r in one] != first
  assert {tuple(r) for r in one} == {(SHA, 'score')}
  assert one.num_records() == len(plain) == 18


def test_wrong_arguments_are_told(outputs, tmp_path):
  out = outputs['plain']
  with pytest.raises(ValueError, match="no split 'test2'; its splits: train, eval$"):
    readers.iter_records(out, 'test2')
  # test got no record: not written, so not a split to read (nor its layout's files).
  for name in ('plain', 'layout'):
    with pytest.raises(ValueError, match="no split 'test'; its splits: train, eval$"):
      readers.iter_records(outputs[name], 'test')
  with pytest.raises(ValueError, match='give both worker and num_workers'):
    readers.iter_records(out, 'train', worker=1)
  with pytest.raises(ValueError, match='0 <= rank < world_size, got 2/2'):
    readers.iter_records(out, 'train', rank=2, world_size=2)
  with pytest.raises(ValueError, match="no key 'image/class'; their keys: image/channels"):
    readers.iter_records(out, 'train', keys=['image/class'])
  with pytest.raises(ValueError, match='has no tfrecord layout'):
    readers.iter_records(out, 'train', layout='tfrecord')
  copy = str(tmp_path / 'unfinished')
  shutil.copytree(out, copy)
  os.remove(os.path.join(copy, '_SUCCESS'))
  with pytest.raises(ValueError, match='not a finished output'):
    readers.iter_records(copy, 'train')


def test_reading_imports_no_tensorflow(outputs):
  code = ('import sys\n'
          'import tfrecorder_component.readers.records as r\n'
          'assert "tensorflow" not in sys.modules\n'
          'n = [sum(1 for _ in r.iter_records(out, "train", decode_images=True))\n'
          '     for out in sys.argv[1:]]\n'
          'bad = [m for m in ("tensorflow", "torch", "apache_beam") if m in sys.modules]\n'
          'print(n, bad)\n')
  done = subprocess.run([sys.executable, '-c', code, outputs['layout'], outputs['plain']],
                        check=True, capture_output=True, text=True)
  assert done.stdout.split('\n')[-2] == '[18, 18] []'


# --- detection and the collate ----------------------------------------------------------

W, H = 16, 12
# (category id, [x, y, w, h]) in pixels per image; 'e.png' has no objects.
OBJECTS = {'a.png': [(5, [1, 2, 4, 6])],
           'b.png': [(1, [0, 0, 8, 6]), (5, [8, 6, 8, 6]), (1, [2, 3, 5, 5])],
           'c.png': [],
           'd.png': [(5, [3, 3, 3, 3]), (1, [4, 1, 2, 9])]}


def coco_output(d, objects):
  images, annotations = [], []
  for image_id, (name, boxes) in enumerate(objects.items(), start=1):
    write_image(str(d / name), 'PNG', height=H, width=W, seed=image_id)
    images.append({'id': image_id, 'file_name': name, 'width': W, 'height': H})
    for category, box in boxes:
      annotations.append({'id': len(annotations) + 1, 'image_id': image_id,
                          'category_id': category, 'bbox': box,
                          'area': float(box[2] * box[3]), 'iscrowd': 0})
  (d / 'instances.json').write_text(json.dumps({
      'images': images, 'annotations': annotations,
      'categories': [{'id': 1, 'name': 'car'}, {'id': 5, 'name': 'bus'}]}))
  out = str(d / 'out')
  trc.convert(str(d / 'instances.json'), out, splits={'train': 1}, layouts=['tfrecord'])
  return out


@pytest.fixture(scope='module')
def detection(tmp_path_factory):
  d = tmp_path_factory.mktemp('coco')
  return coco_output(d, OBJECTS), d


def assert_collated(records, batch, objects_of=OBJECTS):
  n = len(records)
  assert batch['image'].shape == (n, H, W, 3) and batch['image'].dtype == np.uint8
  np.testing.assert_array_equal(batch['image'], np.stack([r['image'] for r in records]))
  assert batch['image/height'].tolist() == [H] * n
  assert batch['image/height'].dtype == np.int64
  assert batch['image/source_id'] == [r['image/source_id'] for r in records]
  for i, record in enumerate(records):
    objects = objects_of[record['image/filename'].decode()]  # source_id: COCO's image id
    assert batch['image/object/class/label'][i].tolist() == [c for c, _ in objects]
    assert list(batch['image/object/class/text'][i]) == [
        {1: b'car', 5: b'bus'}[c] for c, _ in objects]
    boxes = batch['boxes'][i]
    assert boxes.shape == (len(objects), 4) and boxes.dtype == np.float32
    np.testing.assert_allclose(
        boxes, np.array([[x / W, y / H, (x + w) / W, (y + h) / H]
                         for _, (x, y, w, h) in objects], np.float32).reshape(-1, 4),
        atol=1e-6)


def test_collate_detection_stacks_fixed_fields_and_keeps_boxes_ragged(detection):
  out, _ = detection
  parts = read_all(out, 'train', 1, 2, decode_images=True)  # 2 records a worker
  assert_each_once(parts, out, 'train')
  for records in parts.values():
    assert_collated(records, readers.collate_detection(records))


def test_collate_keeps_objects_ragged_where_each_image_has_one(tmp_path):
  """One object an image makes the object keys scalar in examples.json (and dense in
  feature_spec); the collate still gives a list of [1] arrays, [1, 4] boxes."""
  one = {'p.png': [(5, [1, 1, 3, 3])], 'q.png': [(1, [2, 2, 4, 4])]}
  out = coco_output(tmp_path, one)
  assert readers.read_index(out)['features']['image/object/bbox/xmin']['scalar'] is True
  records = list(readers.iter_records(out, 'train', decode_images=True))
  assert isinstance(records[0]['image/object/class/label'], np.int64)
  assert_collated(records, readers.collate_detection(records), one)


def resize(record):
  record['image'] = np.asarray(Image.fromarray(record['image']).resize((20, 10)))
  return record


def test_collate_keeps_images_of_several_sizes_as_a_list(outputs):
  records = list(readers.iter_records(outputs['layout'], 'eval', decode_images=True,
                                      channels=3))
  batch = readers.collate_detection(records)
  assert isinstance(batch['image'], list) and len({i.shape for i in batch['image']}) > 1
  assert 'boxes' not in batch
  assert batch['score'][0].dtype == np.float32 and isinstance(batch['score'], list)
  assert batch['image/width'].shape == (6,)
  resized = list(readers.iter_records(outputs['layout'], 'eval', decode_images=True,
                                      channels=3, transform=resize))
  assert readers.collate_detection(resized)['image'].shape == (6, 10, 20, 3)


def test_the_readers_package_gives_each_name_of_its_records_module():
  """`tfrecorder_component.readers` is where the guides import the readers from: each
  public name of `readers.records` is there, the very object; a name it lacks raises."""
  import tfrecorder_component.readers as package  # pylint: disable=g-import-not-at-top
  public = [name for name in vars(readers) if not name.startswith('_')
            and getattr(getattr(readers, name), '__module__', readers.__name__) == readers.__name__]
  assert public and all(getattr(package, name) is getattr(readers, name) for name in public)
  with pytest.raises(AttributeError):
    getattr(package, 'no_such_name')
