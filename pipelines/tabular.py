"""A pipeline of TFX's own components only, in the shape of TFX's templates (the taxi
pipeline): CsvExampleGen over `span-{SPAN}/*.csv` -> StatisticsGen -> SchemaGen ->
ExampleValidator -> Trainer -> Evaluator, whose baseline is the latest blessed model
(a `LatestBlessedModelStrategy` resolver) -> Pusher.

It is what `kubeflow.local_run` is checked against besides the demo: the pipeline
users run on Vertex AI, compiled with KubeflowV2DagRunner's defaults. The data is a
small synthetic table made at run time (`write_span`); the Trainer is `run_fn` here,
by import path, as for the demo.
"""
from __future__ import annotations

import csv
import os
import random
from typing import List, Optional

import tensorflow_model_analysis as tfma
from tfx import v1 as tfx

FEATURES = ['x1', 'x2']
LABEL_KEY = 'label'
TRAINER_RUN_FN = 'pipelines.tabular.run_fn'
RESOLVER_ID = 'latest_blessed_model_resolver'


def write_span(root: str, span: int, rows: int = 400, seed: Optional[int] = None) -> str:
  """Writes `<root>/span-<span>/data.csv` (x1, x2, label = x1 + x2 > 0); returns it."""
  rng = random.Random(span if seed is None else seed)
  path = os.path.join(root, f'span-{span}', 'data.csv')
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'w', newline='', encoding='utf-8') as f:
    writer = csv.writer(f)
    writer.writerow([*FEATURES, LABEL_KEY])
    for _ in range(rows):
      x1, x2 = rng.uniform(-1, 1), rng.uniform(-1, 1)
      writer.writerow([f'{x1:.4f}', f'{x2:.4f}', int(x1 + x2 > 0)])
  return path


def eval_config(min_accuracy: float = 0.8) -> tfma.EvalConfig:
  """Accuracy on the eval split, at least `min_accuracy`; with a baseline, no more than
  0.5 below the baseline's (TFX's templates set a change threshold the same way)."""
  return tfma.EvalConfig(
      model_specs=[tfma.ModelSpec(signature_name='serving_default', label_key=LABEL_KEY,
                                  prediction_key='probabilities', model_type='tf_generic')],
      slicing_specs=[tfma.SlicingSpec()],
      metrics_specs=[tfma.MetricsSpec(metrics=[tfma.MetricConfig(
          class_name='SparseCategoricalAccuracy',
          threshold=tfma.MetricThreshold(
              value_threshold=tfma.GenericValueThreshold(lower_bound={'value': min_accuracy}),
              change_threshold=tfma.GenericChangeThreshold(
                  direction=tfma.MetricDirection.HIGHER_IS_BETTER,
                  absolute={'value': -0.5})))])])


def create_pipeline(pipeline_name: str, pipeline_root: str, data_root: str,
                    serving_model_dir: str, *, train_steps: int = 200,
                    min_accuracy: float = 0.8,
                    beam_pipeline_args: Optional[List[str]] = None) -> tfx.dsl.Pipeline:
  """The pipeline over the newest span under `data_root`."""
  example_gen = tfx.components.CsvExampleGen(
      input_base=data_root,
      input_config=tfx.proto.Input(splits=[
          tfx.proto.Input.Split(name='single_split', pattern='span-{SPAN}/*.csv')]))
  statistics_gen = tfx.components.StatisticsGen(examples=example_gen.outputs['examples'])
  schema_gen = tfx.components.SchemaGen(statistics=statistics_gen.outputs['statistics'])
  example_validator = tfx.components.ExampleValidator(
      statistics=statistics_gen.outputs['statistics'], schema=schema_gen.outputs['schema'])
  trainer = tfx.components.Trainer(
      run_fn=TRAINER_RUN_FN, examples=example_gen.outputs['examples'],
      schema=schema_gen.outputs['schema'],
      train_args=tfx.proto.TrainArgs(num_steps=train_steps),
      eval_args=tfx.proto.EvalArgs(num_steps=5))
  model_resolver = tfx.dsl.Resolver(
      strategy_class=tfx.dsl.experimental.LatestBlessedModelStrategy,
      model=tfx.dsl.Channel(type=tfx.types.standard_artifacts.Model),
      model_blessing=tfx.dsl.Channel(type=tfx.types.standard_artifacts.ModelBlessing),
  ).with_id(RESOLVER_ID)
  evaluator = tfx.components.Evaluator(
      examples=example_gen.outputs['examples'], model=trainer.outputs['model'],
      baseline_model=model_resolver.outputs['model'], eval_config=eval_config(min_accuracy))
  pusher = tfx.components.Pusher(
      model=trainer.outputs['model'], model_blessing=evaluator.outputs['blessing'],
      push_destination=tfx.proto.PushDestination(
          filesystem=tfx.proto.PushDestination.Filesystem(base_directory=serving_model_dir)))
  return tfx.dsl.Pipeline(
      pipeline_name=pipeline_name, pipeline_root=pipeline_root,
      components=[example_gen, statistics_gen, schema_gen, example_validator, trainer,
                  model_resolver, evaluator, pusher],
      enable_cache=True,
      beam_pipeline_args=beam_pipeline_args or ['--direct_running_mode=in_memory',
                                                '--direct_num_workers=1'])


def run_fn(fn_args) -> None:
  """TFX Trainer entry point: logistic regression on (x1, x2), served on serialized
  tf.train.Examples as the Evaluator feeds them."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow import keras  # pylint: disable=g-import-not-at-top
  tf.keras.utils.set_random_seed(0)
  spec = {name: tf.io.FixedLenFeature([], tf.float32) for name in FEATURES}
  spec[LABEL_KEY] = tf.io.FixedLenFeature([], tf.int64)

  def dataset(files):
    paths = [path for pattern in files for path in tf.io.gfile.glob(pattern)]
    records = tf.data.TFRecordDataset(paths, compression_type='GZIP')
    return records.batch(32).map(lambda s: tf.io.parse_example(s, spec)).map(
        lambda f: (tf.stack([f[n] for n in FEATURES], axis=1), f[LABEL_KEY])).repeat()

  inputs = keras.Input((len(FEATURES),), name='x')
  outputs = keras.layers.Dense(2, activation='softmax', name='probabilities')(inputs)
  model = keras.Model(inputs, outputs)
  model.compile(optimizer=keras.optimizers.Adam(0.1), loss='sparse_categorical_crossentropy',
                metrics=['accuracy'])
  model.fit(dataset(fn_args.train_files), steps_per_epoch=fn_args.train_steps, epochs=1,
            validation_data=dataset(fn_args.eval_files), validation_steps=fn_args.eval_steps,
            verbose=2)
  features = {name: tf.io.FixedLenFeature([], tf.float32) for name in FEATURES}

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name='examples')])
  def serve(serialized):
    parsed = tf.io.parse_example(serialized, features)
    return {'probabilities': model(tf.stack([parsed[n] for n in FEATURES], axis=1))}

  archive = keras.export.ExportArchive()
  archive.track(model)
  archive.add_endpoint('serving_default', serve)
  archive.write_out(fn_args.serving_model_dir)
