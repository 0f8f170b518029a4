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
from oracle_readers import hf_parquet, hf_parquet_shared
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
  # A split no record went to is not written (no TFX folder, not in split_names nor
  # records_per_split); the layout keeps its own rule: the empty files it wrote in the
  # run from that split's empty TFX shards.
  for split in sorted(set(index(out)['layouts']['array_record']['files'])
                      - set(index(out)['split_names'])):
    assert not os.path.exists(os.path.join(str(out), f'Split-{split}'))
    assert split not in index(out)['records_per_split']
    paths = layout_files(out, 'array_record', split)
    listed += [os.path.basename(p) for p in paths]
    assert paths and len(grain.ArrayRecordDataSource(paths)) == 0
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
  # test got no record: not written, while the layout has its 3 empty files.
  assert index(classification)['split_names'] == ['train', 'eval']
  assert index(classification)['records_per_split'] == {'train': 20, 'eval': 10}
  assert [os.path.basename(p) for p in layout_files(classification, 'array_record', 'test')] == [
      f'test.array_record-{k:05d}-of-00003' for k in range(3)]
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


def small_classification(root, count, labels, seed=0, overwrite=False):
  """`count` PNGs, TRAIN 7 of 10 and VALIDATION the rest, one shard a split, the
  `parquet` layout only: the card of every such output is the same, but for its name."""
  rows = []
  for i in range(count):
    path = str(root / 'images' / f'{seed}-{i}.png')
    write_image(path, 'PNG', height=9 + i % 3, width=11, seed=seed + i)
    rows.append({'split': 'TRAIN' if i % 10 < 7 else 'VALIDATION', 'image_uri': path,
                 'label': labels[i % len(labels)]})
  out = root / 'out'
  trc.convert(pd.DataFrame(rows), str(out), layouts=['parquet'], num_shards=1,
              overwrite=overwrite)
  return out


def small_detection(root):
  """write_coco's six images and ten more, hashed into train and eval, one shard a split:
  a card like small_classification's but for its name."""
  coco = json.loads(open(write_coco(root)).read())
  for i in range(6, 16):
    name = f'{i}.jpg'
    write_image(str(root / name), 'JPEG', height=40, width=60, seed=100 + i)
    coco['images'].append({'id': i + 1, 'file_name': name, 'width': 60, 'height': 40})
  out = root / 'out'
  trc.convert(write_text(str(root / 'instances.json'), json.dumps(coco)), str(out),
              layouts=['parquet'], num_shards=1, splits={'train': 7, 'eval': 3})
  return out


def check_hf_read(read, out, names=None):
  """`read` (hf_parquet's) is exactly `out`'s: its splits with records, every row as its
  TFX records hold it, its columns; `names`, for classification, the ClassLabel's."""
  want = hf_expected(out)
  assert {s: r['count'] for s, r in read['splits'].items()} == {
      s: len(rows) for s, rows in want.items()}
  assert {s: r['rows'] for s, r in read['splits'].items()} == want
  assert list(read['features']) == list(index(out)['features'])
  label = read['features'].get('image/class/label')
  if names:
    assert label == {'names': names, '_type': 'ClassLabel'}
  else:
    assert label is None and 'image/object/bbox/xmin' in read['features']


def cache_state(hf_home):
  """{file under HF_HOME's datasets cache: its modification time (ns)}."""
  root = os.path.join(str(hf_home), 'datasets')
  return {os.path.join(parent, n): os.stat(os.path.join(parent, n)).st_mtime_ns
          for parent, _, names in os.walk(root) for n in names
          if not n.endswith('.lock')}


def test_hugging_face_datasets_never_reads_another_outputs_cache(tmp_path):
  """Two outputs whose cards list the same file names (a classification of 20 rows, a
  detection of 16), loaded with `datasets.load_dataset('<out>/parquet')` one after the
  other in one HF_HOME: each gives its own rows and columns, in one process and in two;
  loaded again, an output is read from the cache its first load made, nothing made anew."""
  cls = small_classification(tmp_path / 'cls', 20, LABELS)
  det = small_detection(tmp_path / 'det')
  counts = [[index(o)['records_per_split'][s] for s in ('train', 'eval')] for o in (cls, det)]
  assert counts[0] == [14, 6] and all(counts[1]) and sum(counts[1]) == 16
  assert sorted(os.listdir(cls / 'parquet')) == sorted(os.listdir(det / 'parquet'))
  one, two = hf_parquet_shared([cls / 'parquet', det / 'parquet'], tmp_path / 'hf-one')
  check_hf_read(one, cls, LABELS)
  check_hf_read(two, det)
  hf_home = tmp_path / 'hf-two'
  (first,) = hf_parquet_shared([cls / 'parquet'], hf_home)
  check_hf_read(first, cls, LABELS)
  cached = cache_state(hf_home)
  det_read, again = hf_parquet_shared([det / 'parquet', cls / 'parquet'], hf_home)
  check_hf_read(det_read, det)
  check_hf_read(again, cls, LABELS)
  assert again['cache_files'] == first['cache_files']
  assert set(det_read['cache_files']['train']).isdisjoint(first['cache_files']['train'])
  assert cache_state(hf_home).items() >= cached.items()  # nothing made anew
  for read in (one, two, first, det_read):
    assert all(f.startswith(str(tmp_path)) for f in sum(read['cache_files'].values(), []))


def test_an_output_overwritten_in_place_is_not_read_from_the_cache(tmp_path):
  """An output loaded with `datasets`, then overwritten in place (`overwrite`) by one of
  other rows and labels: the next load in the same HF_HOME gives the new rows, then
  the new ones again from the cache it made."""
  hf_home = tmp_path / 'hf'
  out = small_classification(tmp_path, 20, LABELS)
  (old,) = hf_parquet_shared([out / 'parquet'], hf_home)
  check_hf_read(old, out, LABELS)
  small_classification(tmp_path, 30, ['ant', 'bee'], seed=50, overwrite=True)
  assert index(out)['records_per_split']['train'] == 21
  new, again = hf_parquet_shared([out / 'parquet', out / 'parquet'], hf_home)
  check_hf_read(new, out, ['ant', 'bee'])
  assert set(new['cache_files']['train']).isdisjoint(old['cache_files']['train'])
  assert again == new


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
  # test got no record: its TFX shards are not there to write it from (the run wrote its
  # empty layout files before they were removed); the written splits' files are the same.
  assert splits == ['train', 'eval']
  assert info == {name: {**layout, 'files': {s: layout['files'][s] for s in splits}}
                  for name, layout in summary['layouts'].items()}
  left_out = {n for layout in summary['layouts'].values() for n in layout['files']['test']}
  assert sorted(left_out) == sorted(
      [f'test.array_record-{k:05d}-of-00003' for k in range(3)]
      + [f'test-{k:05d}-of-00003.parquet' for k in range(3)])
  local = tmp_path / 'out'
  s3_bucket.download('bkt', 'out', str(local))
  for folder in ('array_record', 'parquet'):
    assert sorted(os.listdir(local / folder)) == sorted(
        set(os.listdir(classification / folder)) - left_out)
    for name in os.listdir(local / folder):
      assert (local / folder / name).read_bytes() == (classification / folder / name
                                                     ).read_bytes(), name
