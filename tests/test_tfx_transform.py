"""The README's TFX pattern through Transform, with every component's defaults: an
Importer of a manifest of TRAIN and VALIDATION rows only (most users' manifests) ->
ImageExampleGen -> StatisticsGen -> SchemaGen -> Transform, whose `preprocessing_fn`
reads the documented keys (`image/encoded`, `image/class/label`), on LocalDagRunner with
SQLite ML Metadata.

A split no row went to is not written (`engines.run.written_splits`): were the empty
`test` split there, SchemaGen would merge its statistics into the schema, mark every
feature deprecated, and Transform would fail with `KeyError: 'image/encoded'`.
"""
import os

import numpy as np
import tensorflow as tf
import tensorflow_data_validation as tfdv
from tfx import v1 as tfx
from tfx.types import artifact_utils

from images import write_image, write_text
from records import feature
from tfrecorder_component import ImageExampleGen, ImageManifest, read_label_map
from tfrecorder_component.adapters.component.mlmd import latest_output

BEAM_ARGS = ['--direct_running_mode=in_memory', '--direct_num_workers=1']
SIZE = 32

# The module file a user hands Transform: decodes `image/encoded` (JPEG or PNG) to a
# fixed size, keeps the label id, and scales one analyzer's worth of pixels.
PREPROCESSING = f'''
import tensorflow as tf
import tensorflow_transform as tft

SIZE = {SIZE}


def _image(encoded):
  image = tf.io.decode_image(encoded, channels=3, expand_animations=False)
  return tf.image.resize(image, [SIZE, SIZE]) / 255.0


def preprocessing_fn(inputs):
  encoded = tf.reshape(inputs['image/encoded'], [-1])  # SchemaGen gives it shape [1]
  images = tf.map_fn(_image, encoded,
                     fn_output_signature=tf.TensorSpec([SIZE, SIZE, 3], tf.float32))
  return {{'image': images,
          'brightness': tft.scale_to_0_1(tf.reduce_mean(images, axis=[1, 2, 3])),
          'label': tf.reshape(inputs['image/class/label'], [-1])}}
'''


def test_train_and_validation_manifest_through_schema_gen_and_transform(tmp_path):
  data = tmp_path / 'data'
  rows = []
  for i, (split, label) in enumerate([('TRAIN', 'cat'), ('TRAIN', 'dog'), ('TRAIN', 'cat'),
                                      ('TRAIN', 'dog'), ('VALIDATION', 'cat'),
                                      ('VALIDATION', 'dog')]):
    fmt, ext = ('PNG', 'png') if i % 2 else ('JPEG', 'jpg')
    write_image(str(data / f'images/{label}-{i}.{ext}'), fmt, 'RGB', 24 + i, 40, seed=i)
    rows.append(f'{split},images/{label}-{i}.{ext},{label}\n')
  manifest = write_text(str(data / 'manifest.csv'), ''.join(rows))
  module = write_text(str(tmp_path / 'preprocessing.py'), PREPROCESSING)

  importer = tfx.dsl.Importer(source_uri=manifest, artifact_type=ImageManifest).with_id('manifest')
  gen = ImageExampleGen(manifest=importer.outputs['result'])
  stats = tfx.components.StatisticsGen(examples=gen.outputs['examples'])
  schema = tfx.components.SchemaGen(statistics=stats.outputs['statistics'])
  transform = tfx.components.Transform(examples=gen.outputs['examples'],
                                       schema=schema.outputs['schema'], module_file=module)
  root = str(tmp_path / 'tfx')
  config = tfx.orchestration.metadata.sqlite_metadata_connection_config(
      os.path.join(root, 'metadata.db'))
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name='images', pipeline_root=os.path.join(root, 'root'),
      components=[importer, gen, stats, schema, transform],
      metadata_connection_config=config, beam_pipeline_args=BEAM_ARGS))

  examples = latest_output(config, 'images', 'ImageExampleGen', 'examples')
  assert artifact_utils.decode_split_names(examples.split_names) == ['train', 'eval']
  assert sorted(os.listdir(examples.uri)) == [
      'Split-eval', 'Split-train', '_SUCCESS', 'examples.json', 'label_map.csv',
      'label_map.pbtxt', 'labels.txt']
  inferred = tfdv.load_schema_text(os.path.join(
      latest_output(config, 'images', 'SchemaGen', 'schema').uri, 'schema.pbtxt'))
  assert [f.name for f in inferred.feature if f.lifecycle_stage] == []  # none deprecated
  ids = read_label_map(examples)
  assert ids == {'cat': 0, 'dog': 1}

  transformed = latest_output(config, 'images', 'Transform', 'transformed_examples')
  assert sorted(artifact_utils.decode_split_names(transformed.split_names)) == ['eval', 'train']
  graph = latest_output(config, 'images', 'Transform', 'transform_graph')
  assert os.path.isdir(os.path.join(graph.uri, 'transform_fn'))
  labels = {}
  for split in ('train', 'eval'):
    folder = os.path.join(transformed.uri, f'Split-{split}')
    paths = [os.path.join(folder, n) for n in os.listdir(folder)]
    for raw in tf.data.TFRecordDataset(paths, compression_type='GZIP'):
      example = tf.train.Example.FromString(raw.numpy())
      image = np.array(feature(example, 'image'))
      assert image.shape == (SIZE * SIZE * 3,)
      assert 0.0 <= image.min() <= image.max() <= 1.0 and image.std() > 0
      assert 0.0 <= feature(example, 'brightness')[0] <= 1.0
      labels.setdefault(split, []).append(feature(example, 'label')[0])
  assert sorted(labels['train']) == [0, 0, 1, 1]
  assert sorted(labels['eval']) == [0, 1]
