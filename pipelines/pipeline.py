"""The demo pipeline, defined once for every runner (LocalDagRunner, Kubeflow, Vertex).

Importer(manifest) -> ImageExampleGen -> StatisticsGen -> SchemaGen -> ExampleValidator
-> Trainer -> Evaluator -> Pusher, and ConversionReportPage (the conversion report as
a page Vertex AI Pipelines and the Kubeflow Pipelines UI show).
"""
from __future__ import annotations

import os
from typing import List, Optional

import tensorflow_data_validation as tfdv
import tensorflow_model_analysis as tfma
from tfx import v1 as tfx

from tfrecorder_component import ConversionReportPage, ImageExampleGen, ImageManifest

TRAINER_MODULE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'trainer_module.py')
# The same trainer by import path, for container runs (Vertex AI, Kubeflow): the pipeline
# image carries `pipelines/`, so nothing is packaged or uploaded when the spec compiles.
TRAINER_RUN_FN = 'pipelines.trainer_module.run_fn'
LABEL_KEY = 'image/class/label'


def eval_config(min_accuracy: float = 0.9) -> tfma.EvalConfig:
  """Accuracy on the eval split; the model is blessed when it reaches `min_accuracy`."""
  return tfma.EvalConfig(
      model_specs=[tfma.ModelSpec(signature_name='serving_default', label_key=LABEL_KEY,
                                  prediction_key='probabilities', model_type='tf_generic')],
      slicing_specs=[tfma.SlicingSpec()],
      metrics_specs=[tfma.MetricsSpec(metrics=[
          tfma.MetricConfig(
              class_name='SparseCategoricalAccuracy',
              threshold=tfma.MetricThreshold(
                  value_threshold=tfma.GenericValueThreshold(lower_bound={'value': min_accuracy}))),
      ])])


def create_pipeline(pipeline_name: str, pipeline_root: str, manifest_uri: str,
                    serving_model_dir: str,
                    metadata_connection_config=None,
                    beam_pipeline_args: Optional[List[str]] = None,
                    heavy_beam_pipeline_args: Optional[List[str]] = None,
                    module_file: Optional[str] = TRAINER_MODULE,
                    run_fn: Optional[str] = None,
                    train_steps: int = 400, eval_steps: int = 10, epochs: int = 8,
                    min_accuracy: float = 0.9,
                    enable_cache: bool = True) -> tfx.dsl.Pipeline:
  """The whole demo pipeline over one manifest file or folder.

  `beam_pipeline_args` apply to every Beam-powered component; `heavy_beam_pipeline_args`
  are added to the ones that read every image or record (ImageExampleGen and
  StatisticsGen), for example DataflowRunner arguments (see `kubeflow/runner.py`).
  The Trainer runs `run_fn` (an import path) if given, else `module_file`.
  """
  manifest = tfx.dsl.Importer(source_uri=manifest_uri, artifact_type=ImageManifest
                              ).with_id('manifest_importer')
  example_gen = ImageExampleGen(manifest=manifest.outputs['result'])
  report_page = ConversionReportPage(report=example_gen.outputs['report'])
  statistics_gen = tfx.components.StatisticsGen(
      examples=example_gen.outputs['examples'],
      stats_options=tfdv.StatsOptions(enable_semantic_domain_stats=True))
  schema_gen = tfx.components.SchemaGen(statistics=statistics_gen.outputs['statistics'])
  example_validator = tfx.components.ExampleValidator(
      statistics=statistics_gen.outputs['statistics'], schema=schema_gen.outputs['schema'])
  for heavy in (example_gen, statistics_gen):
    heavy.with_beam_pipeline_args(heavy_beam_pipeline_args or [])
  trainer = tfx.components.Trainer(
      **({'run_fn': run_fn} if run_fn else {'module_file': module_file}),
      examples=example_gen.outputs['examples'],
      schema=schema_gen.outputs['schema'],
      train_args=tfx.proto.TrainArgs(num_steps=train_steps),
      eval_args=tfx.proto.EvalArgs(num_steps=eval_steps),
      custom_config={'epochs': epochs})
  evaluator = tfx.components.Evaluator(
      examples=example_gen.outputs['examples'],
      model=trainer.outputs['model'],
      eval_config=eval_config(min_accuracy))
  pusher = tfx.components.Pusher(
      model=trainer.outputs['model'],
      model_blessing=evaluator.outputs['blessing'],
      push_destination=tfx.proto.PushDestination(
          filesystem=tfx.proto.PushDestination.Filesystem(base_directory=serving_model_dir)))
  return tfx.dsl.Pipeline(
      pipeline_name=pipeline_name,
      pipeline_root=pipeline_root,
      components=[manifest, example_gen, report_page, statistics_gen, schema_gen,
                  example_validator, trainer, evaluator, pusher],
      enable_cache=enable_cache,
      metadata_connection_config=metadata_connection_config,
      beam_pipeline_args=beam_pipeline_args or ['--direct_running_mode=in_memory',
                                                '--direct_num_workers=1'])
