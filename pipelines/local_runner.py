"""Runs the demo pipeline on LocalDagRunner with the embedded SQLite ML Metadata store.

    python -m pipelines.local_runner [--home DIR]

Writes the digits demo data, runs the pipeline, and prints where the artifacts, the
MLMD store and the pushed model are, and the eval accuracy from Evaluator.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

from absl import logging as absl_logging

PIPELINE_NAME = 'tfrecorder_demo'


def evaluation_accuracy(evaluation_uri: str) -> float:
  """SparseCategoricalAccuracy on the eval split, from an Evaluator's evaluation."""
  import tensorflow_model_analysis as tfma  # pylint: disable=g-import-not-at-top
  for record in tfma.load_metrics(evaluation_uri):
    for key in record.metric_keys_and_values:
      if key.key.name == 'sparse_categorical_accuracy':
        return key.value.double_value.value
  raise LookupError(f'no accuracy in the evaluation at {evaluation_uri}')


def eval_accuracy(connection_config, pipeline_name: str) -> float:
  """SparseCategoricalAccuracy on the eval split, from Evaluator's newest evaluation."""
  from tfrecorder_component.component.mlmd import latest_output  # pylint: disable=g-import-not-at-top
  return evaluation_accuracy(
      latest_output(connection_config, pipeline_name, 'Evaluator', 'evaluation').uri)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--home', default=os.path.join(os.getcwd(), 'tfx_home'),
                      help='folder for demo data, pipeline root, MLMD and served models')
  parser.add_argument('--train-steps', type=int, default=400)
  parser.add_argument('--min-accuracy', type=float, default=0.9)
  args = parser.parse_args(argv)

  # Keep the console readable: TensorFlow's C++ start-up chatter and the Google client
  # libraries' Python-version notices say nothing about this run.
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  warnings.filterwarnings('ignore', category=FutureWarning)
  absl_logging.set_verbosity(absl_logging.WARNING)
  from tfx import v1 as tfx  # pylint: disable=g-import-not-at-top
  from pipelines import demo_data, pipeline  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.component.mlmd import latest_output  # pylint: disable=g-import-not-at-top

  home = os.path.abspath(args.home)
  manifest = demo_data.write_digits(os.path.join(home, 'data', 'digits'))
  root = os.path.join(home, 'pipelines', PIPELINE_NAME)
  metadata_path = os.path.join(home, 'metadata', PIPELINE_NAME, 'metadata.db')
  serving = os.path.join(home, 'serving_model', PIPELINE_NAME)
  config = tfx.orchestration.metadata.sqlite_metadata_connection_config(metadata_path)
  tfx.orchestration.LocalDagRunner().run(pipeline.create_pipeline(
      PIPELINE_NAME, root, manifest, serving, metadata_connection_config=config,
      train_steps=args.train_steps, min_accuracy=args.min_accuracy))

  examples = latest_output(config, PIPELINE_NAME, 'ImageExampleGen', 'examples')
  blessing = latest_output(config, PIPELINE_NAME, 'Evaluator', 'blessing')
  accuracy = eval_accuracy(config, PIPELINE_NAME)
  counts = {k: int(v) for k, v in examples.get_json_value_custom_property('record_counts').items()}
  blessed = bool(blessing.get_int_custom_property('blessed'))
  print(f'Manifest:        {manifest}')
  print(f'Examples:        {examples.uri}  records per split: {counts}')
  print(f'MLMD (SQLite):   {metadata_path}')
  print(f'Pipeline root:   {root}')
  print(f'Pushed model:    {serving if blessed else "(not pushed: model not blessed)"}')
  ok = accuracy >= args.min_accuracy and blessed
  print(f'Eval accuracy:   {accuracy:.4f} (required >= {args.min_accuracy}: '
        f'{"OK" if ok else "FAILED"})')
  return 0 if ok else 1


if __name__ == '__main__':
  sys.exit(main())
