"""Whole TFX pipelines on LocalDagRunner with the embedded SQLite ML Metadata store."""
import hashlib
import os

import pytest
import tensorflow as tf
import tensorflow_data_validation as tfdv
from tfx import v1 as tfx
from tfx.proto import example_gen_pb2

from images import write_image, write_text
from runs import run
from records import by_source_id, feature
from tfrecorder_component import ImageExampleGen, ImageManifest, read_label_map
from tfrecorder_component.adapters.component.mlmd import latest_output
from tfrecorder_component.record.splits import DEFAULT_BUCKETS, hash_split


def test_importer_to_schema_gen_from_another_working_directory(tmp_path, monkeypatch):
  data = tmp_path / 'data'
  files = {
      'photos/rgb.jpg': write_image(str(data / 'photos/rgb.jpg'), 'JPEG', 'RGB', 24, 32, seed=1),
      'photos/grey.jpg': write_image(str(data / 'photos/grey.jpg'), 'JPEG', 'L', 10, 10, seed=2),
      'photos/odd name, (1).png': write_image(str(data / 'photos/odd name, (1).png'), 'PNG',
                                              'RGBA', 9, 17, seed=3),
      'photos/日本語.png': write_image(str(data / 'photos/日本語.png'), 'PNG', 'L', 6, 6, seed=4),
      'photos/pal.png': write_image(str(data / 'photos/pal.png'), 'PNG', 'P', 12, 5, seed=5),
      'photos/clip.gif': write_image(str(data / 'photos/clip.gif'), 'GIF', 'P', 8, 9, seed=6),
      'photos/scan.bmp': write_image(str(data / 'photos/scan.bmp'), 'BMP', 'RGB', 7, 3, seed=7),
      'photos/free1.jpg': write_image(str(data / 'photos/free1.jpg'), 'JPEG', 'RGB', 5, 5, seed=8),
      'photos/free2.png': write_image(str(data / 'photos/free2.png'), 'PNG', 'RGB', 5, 5, seed=9),
  }
  ml_use = {'photos/rgb.jpg': 'TRAIN', 'photos/grey.jpg': 'training',
            'photos/odd name, (1).png': 'Validation', 'photos/日本語.png': 'test',
            'photos/pal.png': 'VALIDATE', 'photos/clip.gif': 'Test', 'photos/scan.bmp': 'train',
            'photos/free1.jpg': 'UNASSIGNED', 'photos/free2.png': ''}
  label = {uri: ('cat', 'dog', 'fox')[i % 3] for i, uri in enumerate(files)}
  manifest = write_text(str(data / 'manifest.csv'), 'split,image_uri,label\n' + ''.join(
      f'{ml_use[u]},"{u}",{label[u]}\n' for u in files))
  expected_split = {u: {'TRAIN': 'train', 'TRAINING': 'train', 'VALIDATION': 'eval',
                        'VALIDATE': 'eval', 'TEST': 'test'}.get(ml_use[u].upper())
                    or hash_split(u, DEFAULT_BUCKETS) for u in files}

  elsewhere = tmp_path / 'elsewhere'
  elsewhere.mkdir()
  monkeypatch.chdir(elsewhere)
  importer = tfx.dsl.Importer(source_uri=manifest, artifact_type=ImageManifest).with_id('importer')
  gen = ImageExampleGen(manifest=importer.outputs['result'])
  stats = tfx.components.StatisticsGen(
      examples=gen.outputs['examples'],
      stats_options=tfdv.StatsOptions(enable_semantic_domain_stats=True))
  schema = tfx.components.SchemaGen(statistics=stats.outputs['statistics'])
  config = run([importer, gen, stats, schema], str(tmp_path / 'tfx'), 'mixed')

  examples = latest_output(config, 'mixed', 'ImageExampleGen', 'examples')
  splits = sorted(eval(examples.split_names))  # pylint: disable=eval-used
  assert splits == ['eval', 'test', 'train']
  records = by_source_id(examples.uri, splits)
  assert sorted(records) == sorted(files)  # each image exactly once
  # Finished last, as convert()'s output is: load_dataset and inspect read it.
  assert os.path.exists(os.path.join(examples.uri, '_SUCCESS'))
  ids = read_label_map(examples)
  assert ids == {'cat': 0, 'dog': 1, 'fox': 2}
  for uri, (split, ex) in records.items():
    data = feature(ex, 'image/encoded')[0]
    assert data == files[uri], uri
    shape = tuple(tf.io.decode_image(data, expand_animations=False).shape)
    assert tuple(feature(ex, k)[0] for k in ('image/height', 'image/width', 'image/channels')) \
        == shape, uri
    assert split == expected_split[uri], uri
    assert feature(ex, 'image/class/text') == [label[uri].encode()]
    assert feature(ex, 'image/class/label') == [ids[label[uri]]]
    assert feature(ex, 'image/key/sha256')[0].decode() == hashlib.sha256(data).hexdigest()

  counts = examples.get_json_value_custom_property('record_counts')
  assert {k: int(v) for k, v in counts.items()} == {
      s: sum(1 for sp, _ in records.values() if sp == s) for s in splits}
  assert examples.span == 0
  assert examples.get_string_custom_property('payload_format') == 'FORMAT_TF_EXAMPLE'
  assert examples.get_string_custom_property('file_format') == 'tfrecords_gzip'
  assert 'num_files:1' in examples.get_string_custom_property('input_fingerprint')
  schema_artifact = latest_output(config, 'mixed', 'SchemaGen', 'schema')
  inferred = tfdv.load_schema_text(os.path.join(schema_artifact.uri, 'schema.pbtxt'))
  assert tfdv.get_feature(inferred, 'image/class/label').type == 2  # INT


def test_input_base_resolves_latest_span_and_input_splits(tmp_path):
  base = tmp_path / 'base'
  for span in (1, 2):
    for split in ('train', 'eval'):
      write_image(str(base / f'span-{span}/{split}/img.png'), 'PNG', seed=span)
      write_text(str(base / f'span-{span}/{split}/manifest.csv'),
                 f'img.png,label{span}\n')
  input_config = example_gen_pb2.Input(splits=[
      example_gen_pb2.Input.Split(name='train', pattern='span-{SPAN}/train/*.csv'),
      example_gen_pb2.Input.Split(name='eval', pattern='span-{SPAN}/eval/*.csv')])
  gen = ImageExampleGen(input_base=str(base), input_config=input_config)
  config = run([gen], str(tmp_path / 'tfx'), 'spans')
  examples = latest_output(config, 'spans', 'ImageExampleGen', 'examples')
  assert examples.span == 2
  assert sorted(eval(examples.split_names)) == ['eval', 'train']  # pylint: disable=eval-used
  assert 'num_files:1' in examples.get_string_custom_property('input_fingerprint')
  for split in ('train', 'eval'):
    records = by_source_id(examples.uri, [split])
    assert list(records) == ['img.png']
    assert feature(records['img.png'][1], 'image/class/text') == [b'label2']


def test_every_layout_in_the_examples_artifact_reads_with_its_loader(tmp_path):
  """ImageExampleGen(layouts=...) on LocalDagRunner: the Examples artifact holds TFX's
  shards (which StatisticsGen reads, by split) and every other layout beside them, each
  read back by its own loader with the same records."""
  # The loaders are in the TFX 1.16 stack's lock (the README's), not TFX 1.21's.
  grain = pytest.importorskip('grain.python')
  tfds = pytest.importorskip('tensorflow_datasets')
  pytest.importorskip('array_record')
  import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.readers import records as readers  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.output import examples_json as index_lib  # pylint: disable=g-import-not-at-top
  data = tmp_path / 'data'
  rows = []
  for i in range(12):
    write_image(str(data / f'{i}.png'), 'PNG', 'RGB', 6 + i % 3, 7, seed=i)
    rows.append(f'{("TRAIN", "VALIDATION")[i % 4 == 0]},{i}.png,{("cat", "dog", "fox")[i % 3]}\n')
  manifest = write_text(str(data / 'manifest.csv'), ''.join(rows))
  importer = tfx.dsl.Importer(source_uri=manifest, artifact_type=ImageManifest).with_id('importer')
  gen = ImageExampleGen(manifest=importer.outputs['result'],
                        layouts=['tfrecord', 'tfds', 'array_record', 'parquet'])
  stats = tfx.components.StatisticsGen(examples=gen.outputs['examples'])
  config = run([importer, gen, stats], str(tmp_path), 'layouts')
  examples = latest_output(config, 'layouts', 'ImageExampleGen', 'examples')
  uri = examples.uri
  index = index_lib.read_index(uri)
  assert list(index['layouts']) == ['tfrecord', 'tfds', 'array_record', 'parquet']
  # No record went to test: it is not written (no folder, not in split_names) ...
  assert index['split_names'] == ['train', 'eval']
  assert index['records_per_split'] == {'train': 9, 'eval': 3}
  assert examples.split_names == '["train", "eval"]'
  assert sorted(n for n in os.listdir(uri) if n.startswith('Split-')) == [
      'Split-eval', 'Split-train']
  # ... while each layout keeps its own rule, every file it lists there.
  for name, written in index['layouts'].items():
    for split, listed in written['files'].items():
      for n in listed:
        assert os.path.isfile(os.path.join(uri, written['folder'], n)), (name, split, n)
  tfx_records = {split: [r.numpy() for r in tf.data.TFRecordDataset(
      sorted(tf.io.gfile.glob(os.path.join(uri, f'Split-{split}', '*'))), 'GZIP')]
                 for split in ('train', 'eval')}
  stats_uri = latest_output(config, 'layouts', 'StatisticsGen', 'statistics').uri
  for split, records in tfx_records.items():
    stats_file = os.path.join(stats_uri, f'Split-{split}', 'FeatureStats.pb')
    assert tfdv.load_stats_binary(stats_file).datasets[0].num_examples == len(records)
    # tfrecord: uncompressed, the same records, as tf.data and our iterator read them
    files = [os.path.join(uri, 'tfrecord', n) for n in index['layouts']['tfrecord']['files'][split]]
    assert [r.numpy() for r in tf.data.TFRecordDataset(files)] == records
    assert sorted(r['image/key/sha256'] for r in readers.iter_records(uri, split, worker=0,
                                                                       num_workers=1)) == sorted(
        tf.train.Example.FromString(r).features.feature['image/key/sha256'].bytes_list.value[0]
        for r in records)
    # array_record: random access to every record
    source = grain.ArrayRecordDataSource([
        os.path.join(uri, 'array_record', n)
        for n in index['layouts']['array_record']['files'][split]])
    assert [source[i] for i in range(len(source))] == records
    # parquet: a row a record
    table = pq.read_table([os.path.join(uri, 'parquet', n)
                           for n in index['layouts']['parquet']['files'][split]])
    assert table.column('image/encoded').to_pylist() == [
        tf.train.Example.FromString(r).features.feature['image/encoded'].bytes_list.value[0]
        for r in records]
  # tfds: the builder loads the splits with records, labels by name
  builder = tfds.builder_from_directory(os.path.join(uri, 'tfds'))
  assert {s: builder.info.splits[s].num_examples for s in ('train', 'eval')} == {
      'train': 9, 'eval': 3}
  names = builder.info.features['label'].names
  labels = sorted(names[int(e['label'])] for e in tfds.as_numpy(builder.as_dataset('eval')))
  assert labels == ['cat', 'dog', 'fox']  # images 0, 4 and 8
