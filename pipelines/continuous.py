"""Continuous training over spans, with label ids that keep their meaning.

    latest_examples (Resolver: the newest Examples) --label_map_examples--+
    manifests/span-{SPAN}/*.csv -> ImageExampleGen <----------------------+
        -> StatisticsGen -> SchemaGen -> ExampleValidator
        -> span_window (Resolver: the last `window_spans` spans) -> Trainer

Each run converts the newest span, keeping the ids of the Examples before it: a class
that first appears in a later span is appended after them, and one that is missing from
a span keeps its id. So every span of the Trainer's window holds the same ids for the
same class text, and `load_dataset(fn_args.train_files)` reads them together (it refuses
spans whose label maps disagree).

KubeflowV2DagRunner (Vertex AI Pipelines, Kubeflow Pipelines) compiles only the latest-
artifact and latest-blessed-model resolvers: `for_vertex=True` leaves out the span
window (and so the Trainer); the label ids stay the same there too.
"""
from __future__ import annotations

from typing import List, Optional

from tfx import v1 as tfx
from tfx.proto import example_gen_pb2, range_config_pb2

from tfrecorder_component import ImageExampleGen


def latest_examples() -> tfx.dsl.Resolver:
  """The newest Examples of the pipeline: the previous run's ImageExampleGen output
  (none on the first run)."""
  return tfx.dsl.Resolver(
      strategy_class=tfx.dsl.experimental.LatestArtifactStrategy,
      examples=tfx.dsl.Channel(type=tfx.types.standard_artifacts.Examples),
  ).with_id('latest_examples')


def create_pipeline(pipeline_name: str, pipeline_root: str, input_base: str, *,
                    module_file: Optional[str] = None, window_spans: int = 3,
                    train_steps: int = 10, for_vertex: bool = False,
                    metadata_connection_config=None,
                    beam_pipeline_args: Optional[List[str]] = None) -> tfx.dsl.Pipeline:
  """The pipeline above over `input_base/span-{SPAN}/*.csv`; the Trainer runs
  `module_file` on the last `window_spans` spans (not with `for_vertex`)."""
  latest = latest_examples()
  example_gen = ImageExampleGen(
      input_base=input_base,
      input_config=example_gen_pb2.Input(splits=[
          example_gen_pb2.Input.Split(name='span', pattern='span-{SPAN}/*.csv')]),
      label_map_examples=latest.outputs['examples'])
  statistics_gen = tfx.components.StatisticsGen(examples=example_gen.outputs['examples'])
  schema_gen = tfx.components.SchemaGen(statistics=statistics_gen.outputs['statistics'])
  example_validator = tfx.components.ExampleValidator(
      statistics=statistics_gen.outputs['statistics'], schema=schema_gen.outputs['schema'])
  components = [latest, example_gen, statistics_gen, schema_gen, example_validator]
  if not for_vertex:
    window = tfx.dsl.Resolver(
        strategy_class=tfx.dsl.experimental.SpanRangeStrategy,
        config={'range_config': range_config_pb2.RangeConfig(
            rolling_range=range_config_pb2.RollingRange(num_spans=window_spans))},
        examples=tfx.dsl.Channel(type=tfx.types.standard_artifacts.Examples,
                                 producer_component_id=example_gen.id,
                                 output_key='examples'),
    ).with_id('span_window')
    window.add_upstream_node(example_gen)
    trainer = tfx.components.Trainer(
        module_file=module_file,
        examples=window.outputs['examples'],
        schema=schema_gen.outputs['schema'],
        train_args=tfx.proto.TrainArgs(num_steps=train_steps),
        eval_args=tfx.proto.EvalArgs(num_steps=1))
    components += [window, trainer]
  return tfx.dsl.Pipeline(
      pipeline_name=pipeline_name, pipeline_root=pipeline_root, components=components,
      enable_cache=False, metadata_connection_config=metadata_connection_config,
      beam_pipeline_args=beam_pipeline_args or ['--direct_running_mode=in_memory',
                                                '--direct_num_workers=1'])
