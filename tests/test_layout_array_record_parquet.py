"""The `array_record` and `parquet` layouts, read back by their own loaders: Grain's
ArrayRecordDataSource and ArrayRecord's reader, pyarrow and pandas, and Hugging Face
`datasets` (in the reference readers' environment, tests/oracles/read.py). Every value is
compared with the TFX records of the GZIP shards beside them, record by record in order.
"""
from __future__ import annotations

import glob
import json
import os
import random
import sys

from array_record.python import array_record_data_source, array_record_module
import grain.python as grain
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf

from images import write_image, write_text
from oracle_readers import hf_parquet
import tfrecorder_component as trc
from tfrecorder_component.adapters import cli
from tfrecorder_component.record import example_proto
from tfrecorder_component.errors import UsageError
from tfrecorder_component.output.layouts import base, check_layouts
from tfrecorder_component.output.layouts import parquet as parquet_layout

LABELS = ['cat', 'dog', 'fox']
DETECTION = ['car', 'person']


def list_of(value_type):
  """A list column's type, as it reads back (Parquet's `element`)."""
  return pa.list_(pa.field('element', value_type))


def tfx_shards(out, split):
  paths = sorted(glob.glob(os.path.join(str(out), f'Split-{split}', 'data_tfrecord-*.gz')))
  assert paths, f'no TFX shard of {split}'
  return paths


def tfx_records(out, split):
  """[[serialized record] per TFX shard], read by TensorFlow."""
  return [[r.numpy() for r in tf.data.TFRecordDataset(p, compression_type='GZIP')]
          for p in tfx_shards(out, split)]


def index(out):
  with open(os.path.join(str(out), 'examples.json')) as f:
    return json.load(f)


def layout_files(out, name, split):
  folder = index(out)['layouts'][name]['folder']
  return [os.path.join(str(out), folder, n)
          for n in index(out)['layouts'][name]['files'][split]]


def values(record: bytes, features):
  """{key: the record's value as a column holds it} (None where the record has no key)."""
  held = example_proto.Example.FromString(record).features.feature
  row = {}
  for key, f in features.items():
    if key not in held:
      row[key] = None
      continue
    kind = held[key].WhichOneof('kind')
    vals = list(getattr(held[key], kind).value) if kind else []
    row[key] = vals[0] if f['scalar'] else vals
  return row


@pytest.fixture(scope='module')
def classification(tmp_path_factory):
  """30 JPEGs in train and eval, none in test (a split of 0 records), three shards a
  split; an extra float column and an extra text column some rows leave empty."""
  root = tmp_path_factory.mktemp('classification')
  rows = []
  for i in range(30):
    uri = str(root / 'images' / f'{i:02d}.jpg')
    write_image(uri, 'JPEG', height=20 + i % 7, width=24 + i % 5, seed=i)
    rows.append({'split': 'TRAIN' if i % 3 else 'VALIDATION', 'image_uri': uri,
                 'label': LABELS[i % 3], 'weight': 0.25 * i,
                 'note': f'n{i}' if i % 4 else ''})
  out = root / 'out'
  trc.convert(pd.DataFrame(rows), str(out), layouts=['array_record', 'parquet'], num_shards=3)
  return out


def write_coco(root):
  """Six images: several objects, one none; through Beam."""
  images, annotations = [], []
  for i in range(6):
    name = f'{i}.jpg'
    write_image(str(root / name), 'JPEG', height=40, width=60, seed=100 + i)
    images.append({'id': i + 1, 'file_name': name, 'width': 60, 'height': 40})
    for k in range(i % 3):  # 0, 1 or 2 objects
      annotations.append({'id': len(annotations) + 1, 'image_id': i + 1,
                          'category_id': 1 + (i + k) % 2,
                          'bbox': [1.5 + k, 2.0 + i, 10.0 + k, 7.25], 'area': 50.0,
                          'iscrowd': 0})
  coco = {'images': images, 'annotations': annotations,
          'categories': [{'id': i + 1, 'name': n} for i, n in enumerate(DETECTION)]}
  return write_text(str(root / 'instances.json'), json.dumps(coco))


@pytest.fixture(scope='module')
def detection(tmp_path_factory):
  root = tmp_path_factory.mktemp('detection')
  out = root / 'out'
  trc.convert(write_coco(root), str(out), layouts=['array_record', 'parquet'],
              beam_args=['--direct_num_workers=1'])
  return out


def check_array_record(out):
  """Grain's data source over each split's files gives record i of the TFX shards as
  ds[i], in any order; ArrayRecord's reader gives shard k's records in order."""
  found = sorted(os.listdir(os.path.join(str(out), 'array_record')))
  listed = []
  for split in index(out)['split_names']:
    shards = tfx_records(out, split)
    paths = layout_files(out, 'array_record', split)
    listed += [os.path.basename(p) for p in paths]
    assert [os.path.basename(p) for p in paths] == [
        f'{split}.array_record-{k:05d}-of-{len(shards):05d}' for k in range(len(shards))]
    for path, records in zip(paths, shards):
      reader = array_record_module.ArrayRecordReader(path,
                                                     'readahead_buffer_size:0,max_parallelism:0')
      assert reader.num_records() == len(records)
      assert ('group_size:1' in reader.writer_options_string()
              and 'uncompressed' in reader.writer_options_string())
      if records:
        assert reader.read_all() == records
        assert reader.read([len(records) - 1]) == [records[-1]]
      reader.close()
    flat = [r for shard in shards for r in shard]
    ds = grain.ArrayRecordDataSource(paths)
    assert len(ds) == len(flat) == index(out)['records_per_split'][split]
    order = list(range(len(flat)))
    random.Random(split).shuffle(order)
    for i in order:
      assert ds[i] == flat[i], f'{split} record {i}'
    with array_record_data_source.ArrayRecordDataSource(paths) as direct:
      assert len(direct) == len(flat)
      if order:  # (it asks for a pool of 0 threads for no keys)
        assert direct.__getitems__(order) == [flat[i] for i in order]
  assert found == sorted(listed)


def check_parquet(out):
  """Each split's files: the run's schema (empty shards too), a row per TFX record in
  order with every key's values; pandas reads a split's files as one frame."""
  features = index(out)['features']
  kinds = {'bytes': pa.binary(), 'int64': pa.int64(), 'float': pa.float32()}
  want = pa.schema([pa.field(k, kinds[f['type']] if f['scalar'] else list_of(kinds[f['type']]))
                    for k, f in features.items()])
  for split in index(out)['split_names']:
    shards = tfx_records(out, split)
    paths = layout_files(out, 'parquet', split)
    assert [os.path.basename(p) for p in paths] == [
        f'{split}-{k:05d}-of-{len(shards):05d}.parquet' for k in range(len(shards))]
    for path, records in zip(paths, shards):
      table = pq.read_table(path)
      assert table.schema.remove_metadata().equals(want, check_metadata=False), (
          f'{path}: {table.schema}')
      assert table.num_rows == len(records)
      assert table.to_pylist() == [values(r, features) for r in records], path
      meta = pq.ParquetFile(path).metadata  # images as they are, the rest Snappy
      for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
          column = meta.row_group(g).column(c)
          if column.path_in_schema == 'image/encoded':
            assert column.compression == 'UNCOMPRESSED'
            assert 'RLE_DICTIONARY' not in column.encodings and not column.is_stats_set
          else:
            assert column.compression == 'SNAPPY', column.path_in_schema
    frame = pd.read_parquet(paths)
    flat = [r for shard in shards for r in shard]
    assert len(frame) == len(flat)
    assert list(frame.columns) == list(features)
    assert list(frame['image/encoded']) == [values(r, features)['image/encoded'] for r in flat]


def test_classification_array_record_random_access(classification):
  assert index(classification)['records_per_split']['test'] == 0
  check_array_record(classification)


def test_classification_parquet(classification):
  features = index(classification)['features']
  table = pq.read_table(layout_files(classification, 'parquet', 'train')[0])
  types = {f.name: f.type for f in table.schema}
  assert types['image/encoded'] == pa.binary()
  assert types['image/class/label'] == pa.int64()
  assert types['weight'] == pa.float32()
  assert types['note'] == list_of(pa.binary())  # some records have none: a list column
  assert not features['note']['scalar']
  check_parquet(classification)
  note = pd.read_parquet(layout_files(classification, 'parquet', 'eval'))['note']
  assert note.isna().any() and not note.isna().all()
  for path in layout_files(classification, 'parquet', 'test'):  # empty, the run's schema
    assert pq.read_table(path).num_rows == 0
  card = (classification / 'parquet' / 'README.md').read_text()
  assert 'split: "train"' in card and 'split: "eval"' in card
  assert '"test' not in card  # `datasets` cannot load a split of no rows


def test_detection_through_beam(detection):
  table = pq.read_table(layout_files(detection, 'parquet', 'train')[0])
  types = {f.name: f.type for f in table.schema}
  for key in ('xmin', 'ymin', 'xmax', 'ymax'):
    assert types[f'image/object/bbox/{key}'] == list_of(pa.float32())
  assert types['image/object/class/label'] == list_of(pa.int64())
  assert types['image/object/class/text'] == list_of(pa.binary())
  assert sum(index(detection)['records_per_split'].values()) == 6
  check_array_record(detection)
  check_parquet(detection)


def hf_expected(out):
  """{split: [row]} from the TFX records, for the splits with records."""
  features = index(out)['features']
  return {split: [values(r, features) for shard in tfx_records(out, split) for r in shard]
          for split in index(out)['split_names'] if index(out)['records_per_split'][split]}


def test_hugging_face_datasets_loads_the_splits(classification):
  read = hf_parquet(str(classification / 'parquet'))
  want = hf_expected(classification)
  assert set(read['splits']) == {'train', 'eval'} == set(want)
  assert read['features']['image/class/label'] == {'names': LABELS, '_type': 'ClassLabel'}
  assert read['features']['image/encoded'] == {'dtype': 'binary', '_type': 'Value'}
  for split, rows in want.items():
    got = read['splits'][split]
    assert got['count'] == len(rows) == index(classification)['records_per_split'][split]
    for mine, theirs in zip(rows, got['rows']):
      assert theirs['image/encoded'] == mine['image/encoded']
      assert theirs['image/class/label'] == mine['image/class/label']
      assert LABELS[theirs['image/class/label']].encode() == mine['image/class/text']
      assert theirs == mine


def test_hugging_face_datasets_reads_boxes(detection):
  read = hf_parquet(str(detection / 'parquet'))
  want = hf_expected(detection)
  assert set(read['splits']) == set(want)
  for split, rows in want.items():
    assert read['splits'][split]['count'] == len(rows)
    assert read['splits'][split]['rows'] == rows
  boxes = [len(r['image/object/bbox/xmin'] or []) for rows in want.values() for r in rows]
  assert sorted(boxes) == [0, 0, 1, 1, 2, 2]


def test_cli_writes_the_parquet_layout_alone(tmp_path):
  rows = []
  for i in range(8):
    write_image(str(tmp_path / 'data' / f'{i}.png'), 'PNG', height=9, width=11, seed=i)
    rows.append(f'{("TRAIN", "VALIDATION", "TEST", "TRAIN")[i % 4]},{i}.png,{LABELS[i % 2]}\n')
  manifest = write_text(str(tmp_path / 'data' / 'manifest.csv'), ''.join(rows))
  out = tmp_path / 'out'
  assert cli.main(['convert', manifest, str(out), '--layout', 'parquet']) == 0
  assert set(index(out)['layouts']) == {'parquet'}
  assert not (out / 'array_record').exists()
  check_parquet(out)
  frame = pd.read_parquet(sorted(glob.glob(str(out / 'parquet' / 'train-*.parquet'))))
  assert sorted(frame['image/class/text']) == [b'cat', b'cat', b'dog', b'dog']


def test_row_groups_are_bounded(classification, tmp_path, monkeypatch):
  """A shard is written a row group at a time: ROW_GROUP_BYTES of records each."""
  summary = index(classification)
  ctx = base.LayoutContext(str(tmp_path), tuple(summary['split_names']), summary['features'],
                           dict(zip(LABELS, range(3))), 'classification')
  shard = tfx_shards(classification, 'train')[0]
  records = tfx_records(classification, 'train')[0]
  monkeypatch.setattr(parquet_layout, 'ROW_GROUP_BYTES', max(len(r) for r in records))
  assert base.write_shard(('train', 0, 1, shard), ['parquet'], ctx) == ('train', 0,
                                                                       len(records))
  written = pq.ParquetFile(os.path.join(str(tmp_path), 'parquet', 'train-00000-of-00001.parquet'))
  sizes = [written.metadata.row_group(g).num_rows for g in range(written.num_row_groups)]
  assert max(sizes) <= 2 and sum(sizes) == len(records) and len(sizes) >= len(records) / 2
  assert written.read().to_pylist() == [values(r, summary['features']) for r in records]


def test_a_key_of_two_types_is_refused_by_parquet_only(classification):
  summary = index(classification)
  features = dict(summary['features'], weight={'type': 'bytes|float', 'records': 30,
                                               'scalar': True})
  ctx = base.LayoutContext('/nowhere', ('train',), features, {}, 'classification')
  with pytest.raises(UsageError, match='parquet layout needs one type a feature.*weight'):
    base.check_types(['array_record', 'parquet'], ctx)
  base.check_types(['array_record'], ctx)


def test_a_missing_array_record_package_is_a_usage_error(monkeypatch):
  for name in [m for m in sys.modules if m == 'array_record' or m.startswith('array_record.')]:
    monkeypatch.delitem(sys.modules, name)
  monkeypatch.setitem(sys.modules, 'array_record', None)  # what `import` finds missing
  with pytest.raises(UsageError, match=r"\[array_record\] extra.*pip install "
                                        r"'tfrecorder-component\[array_record\]'"):
    check_layouts(['array_record'])
  assert check_layouts(['parquet']) == ('parquet',)


def test_an_output_on_s3_gets_both_layouts(classification, tmp_path, s3_bucket):
  """On s3:// (moto's server on loopback): ArrayRecord shards written locally and copied
  up, Parquet shards streamed up; what is read back is what was written locally."""
  summary = index(classification)
  splits = summary['split_names']
  ctx = base.LayoutContext('s3://bkt/out', tuple(splits), summary['features'],
                           dict(zip(LABELS, range(3))), 'classification')
  jobs = base.shard_jobs({s: str(classification / f'Split-{s}') for s in splits})
  written = [base.write_shard(job, ['array_record', 'parquet'], ctx) for job in jobs]
  info = base.finish(['array_record', 'parquet'], ctx, written)
  assert info == summary['layouts']
  local = tmp_path / 'out'
  s3_bucket.download('bkt', 'out', str(local))
  for folder in ('array_record', 'parquet'):
    assert sorted(os.listdir(local / folder)) == sorted(os.listdir(classification / folder))
    for name in os.listdir(local / folder):
      assert (local / folder / name).read_bytes() == (classification / folder / name
                                                     ).read_bytes(), name
