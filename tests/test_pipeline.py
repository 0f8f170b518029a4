"""Whole TFX pipelines on LocalDagRunner with the embedded SQLite ML Metadata store."""
import hashlib
import os

import tensorflow as tf
import tensorflow_data_validation as tfdv
from tfx import v1 as tfx
from tfx.proto import example_gen_pb2

from images import write_image, write_text
from records import by_source_id, feature
from tfrecorder_component import ImageExampleGen, ImageManifest, read_label_map
from tfrecorder_component.component.mlmd import latest_output
from tfrecorder_component.splits import DEFAULT_BUCKETS, hash_split

BEAM_ARGS = ['--direct_running_mode=in_memory', '--direct_num_workers=1']


def run(components, root, name):
  config = tfx.orchestration.metadata.sqlite_metadata_connection_config(
      os.path.join(root, 'metadata.db'))
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name=name, pipeline_root=os.path.join(root, 'root'), components=components,
      metadata_connection_config=config, enable_cache=True, beam_pipeline_args=BEAM_ARGS))
  return config


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
