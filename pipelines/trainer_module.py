"""Trainer module of the demo: a small Keras CNN over `image/encoded`.

The input pipeline reads the gzipped TFRecord shards with parallel interleave,
parses and decodes in parallel maps, and prefetches. The SavedModel's
`serving_default` signature takes serialized tf.train.Examples, so Evaluator and
serving feed it the records ImageExampleGen wrote.
"""
from __future__ import annotations

import os
from typing import List

import tensorflow as tf
from tensorflow import keras
from tfx.components.trainer.fn_args_utils import FnArgs

IMAGE_SIZE = 32
NUM_CLASSES = 10
BATCH_SIZE = 32
LABEL_KEY = 'image/class/label'
IMAGE_KEY = 'image/encoded'
FEATURES = {
    IMAGE_KEY: tf.io.FixedLenFeature([], tf.string),
    LABEL_KEY: tf.io.FixedLenFeature([], tf.int64),
}


def decode_images(encoded: tf.Tensor) -> tf.Tensor:
  """Serialized image bytes -> float32 [batch, IMAGE_SIZE, IMAGE_SIZE, 1] in [0, 1]."""
  def one(data):
    image = tf.io.decode_image(data, channels=1, expand_animations=False)
    image = tf.image.resize(image, [IMAGE_SIZE, IMAGE_SIZE])
    return image / 255.0
  return tf.map_fn(one, encoded, fn_output_signature=tf.TensorSpec(
      [IMAGE_SIZE, IMAGE_SIZE, 1], tf.float32))


def input_fn(file_patterns: List[str], batch_size: int = BATCH_SIZE,
             shuffle: bool = True) -> tf.data.Dataset:
  """(image, label) batches from an Examples split, read in parallel."""
  files = tf.data.Dataset.list_files(file_patterns, shuffle=shuffle)
  dataset = files.interleave(
      lambda f: tf.data.TFRecordDataset(f, compression_type='GZIP'),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=not shuffle)
  if shuffle:
    dataset = dataset.shuffle(2048)
  dataset = dataset.batch(batch_size)
  dataset = dataset.map(lambda s: tf.io.parse_example(s, FEATURES),
                        num_parallel_calls=tf.data.AUTOTUNE)
  dataset = dataset.map(lambda f: (decode_images(f[IMAGE_KEY]), f[LABEL_KEY]),
                        num_parallel_calls=tf.data.AUTOTUNE)
  return dataset.prefetch(tf.data.AUTOTUNE)


def build_model() -> keras.Model:
  inputs = keras.Input((IMAGE_SIZE, IMAGE_SIZE, 1), name='image')
  x = keras.layers.Conv2D(16, 3, activation='relu')(inputs)
  x = keras.layers.MaxPooling2D()(x)
  x = keras.layers.Conv2D(32, 3, activation='relu')(x)
  x = keras.layers.MaxPooling2D()(x)
  x = keras.layers.Flatten()(x)
  x = keras.layers.Dense(64, activation='relu')(x)
  outputs = keras.layers.Dense(NUM_CLASSES, activation='softmax', name='probabilities')(x)
  model = keras.Model(inputs, outputs)
  model.compile(optimizer=keras.optimizers.Adam(2e-3),
                loss='sparse_categorical_crossentropy', metrics=['accuracy'])
  return model


def _patterns(files: List[str]) -> List[str]:
  return [os.path.join(f, '*') if tf.io.gfile.isdir(f) else f for f in files]


def run_fn(fn_args: FnArgs) -> None:
  """TFX Trainer entry point."""
  train = input_fn(_patterns(fn_args.train_files)).repeat()
  evaluation = input_fn(_patterns(fn_args.eval_files), shuffle=False).repeat()
  model = build_model()
  epochs = int((fn_args.custom_config or {}).get('epochs', 8))
  steps = max(1, fn_args.train_steps // epochs)
  model.fit(train, steps_per_epoch=steps, epochs=epochs, validation_data=evaluation,
            validation_steps=fn_args.eval_steps, verbose=2)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name='examples')])
  def serve(serialized):
    features = tf.io.parse_example(serialized, {IMAGE_KEY: FEATURES[IMAGE_KEY]})
    return {'probabilities': model(decode_images(features[IMAGE_KEY]), training=False)}

  archive = keras.export.ExportArchive()
  archive.track(model)
  archive.add_endpoint('serving_default', serve)
  archive.write_out(fn_args.serving_model_dir)
