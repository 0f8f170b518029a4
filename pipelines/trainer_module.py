"""Trainer module of the demo: a small Keras CNN over `image/encoded`.

The input pipeline is `tfrecorder_component.load_dataset` (parallel interleave over
the gzipped shards, parallel parse and decode, prefetch). The SavedModel's
`serving_default` signature takes serialized tf.train.Examples, so Evaluator and
serving feed it the records ImageExampleGen wrote.
"""
from __future__ import annotations

from typing import List

import tensorflow as tf
from tensorflow import keras
from tfx.components.trainer.fn_args_utils import FnArgs

from tfrecorder_component.readers import dataset as dataset_lib
from tfrecorder_component.readers.dataset import load_dataset

IMAGE_SIZE = 32
NUM_CLASSES = 10
BATCH_SIZE = 32
LABEL_KEY = 'image/class/label'
IMAGE_KEY = 'image/encoded'
FEATURES = {IMAGE_KEY: tf.io.FixedLenFeature([], tf.string)}


def decode_images(encoded: tf.Tensor) -> tf.Tensor:
  """Serialized image bytes -> float32 [batch, IMAGE_SIZE, IMAGE_SIZE, 1] in [0, 1]."""
  return dataset_lib.decode_images(encoded, (IMAGE_SIZE, IMAGE_SIZE), 1)


def input_fn(files: List[str], batch_size: int = BATCH_SIZE,
             shuffle: bool = True) -> tf.data.Dataset:
  """(image, label) batches of a Trainer's split folders, repeated."""
  return load_dataset(files, None, batch_size=batch_size, image_size=(IMAGE_SIZE, IMAGE_SIZE),
                      channels=1, shuffle_buffer=2048 if shuffle else 0, repeat=True)


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


def run_fn(fn_args: FnArgs) -> None:
  """TFX Trainer entry point."""
  train = input_fn(fn_args.train_files)
  evaluation = input_fn(fn_args.eval_files, shuffle=False)
  model = build_model()
  epochs = int((fn_args.custom_config or {}).get('epochs', 8))
  steps = max(1, fn_args.train_steps // epochs)
  model.fit(train, steps_per_epoch=steps, epochs=epochs, validation_data=evaluation,
            validation_steps=fn_args.eval_steps, verbose=2)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name='examples')])
  def serve(serialized):
    features = tf.io.parse_example(serialized, FEATURES)
    return {'probabilities': model(decode_images(features[IMAGE_KEY]), training=False)}

  archive = keras.export.ExportArchive()
  archive.track(model)
  archive.add_endpoint('serving_default', serve)
  archive.write_out(fn_args.serving_model_dir)
