"""Reading a pipeline's artifacts back from ML Metadata.

Two layouts are read: TFX's own (LocalDagRunner: `pipeline` and `node` contexts), and
the one Vertex ML Metadata and Kubeflow Pipelines 2.x use (`kubeflow.local_run` writes
it): a `system.Pipeline` context, executions carrying their `task_name`, artifacts typed
by their schema title with their metadata as custom properties. Either way the answer
is TFX artifacts of their own classes (`Examples`, `Model`, ...).
"""
from __future__ import annotations

from typing import List

from tfx.orchestration import metadata
from tfx.orchestration.portable.mlmd import store_ext
from tfx.types import artifact_utils

VERTEX_PIPELINE_CONTEXT = 'system.Pipeline'


def _from_vertex_layout(store, context, node_id: str, key: str) -> List:
  """The LIVE artifacts that executions of task `node_id` output under `key`."""
  # pylint: disable=g-import-not-at-top
  from google.protobuf import json_format
  from kfp.pipeline_spec import pipeline_spec_pb2
  from ml_metadata.proto import metadata_store_pb2 as mlmd
  from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils
  # pylint: enable=g-import-not-at-top
  executions = [e for e in store.get_executions_by_context(context.id)
                if e.custom_properties['task_name'].string_value == node_id]
  ids = sorted({ev.artifact_id for ev in store.get_events_by_execution_ids(
      [e.id for e in executions]) if ev.type == mlmd.Event.OUTPUT
                and ev.path.steps and ev.path.steps[0].key == key})
  types = {t.id: t.name for t in store.get_artifact_types()}
  found = []
  for stored in store.get_artifacts_by_id(ids):
    if stored.state != mlmd.Artifact.LIVE:
      continue
    values = {}
    for name, value in stored.custom_properties.items():
      kind = value.WhichOneof('value')
      values[name] = (json_format.MessageToDict(value.struct_value)
                      if kind == 'struct_value' else getattr(value, kind))
    runtime = pipeline_spec_pb2.RuntimeArtifact(uri=stored.uri)
    runtime.type.schema_title = types[stored.type_id]
    json_format.ParseDict(values, runtime.metadata, ignore_unknown_fields=True)
    [artifact] = kubeflow_v2_entrypoint_utils.parse_raw_artifact_dict(
        {key: pipeline_spec_pb2.ArtifactList(artifacts=[runtime])})[key]
    artifact.id = stored.id
    found.append(artifact)
  return found


def outputs_of(connection_config, pipeline_name: str, node_id: str, key: str) -> List:
  """All artifacts a node produced under output `key`, oldest first (by artifact id):
  LIVE ones only.

  Args:
    connection_config: ML Metadata's `ConnectionConfig` proto of the store to read (the
      SQLite file of a LocalDagRunner run, for one).
    pipeline_name: The pipeline's name: TFX's pipeline context, or the name of the
      `system.Pipeline` context in the Vertex layout.
    node_id: The component's id, as the pipeline names it (`ImageExampleGen`,
      `Evaluator`); in the Vertex layout, the executions' `task_name`.
    key: The output key (`examples`, `report`, `model`, ...).
  """
  with metadata.Metadata(connection_config) as m:
    vertex = m.store.get_context_by_type_and_name(VERTEX_PIPELINE_CONTEXT, pipeline_name)
    if vertex is not None:
      return sorted(_from_vertex_layout(m.store, vertex, node_id, key), key=lambda a: a.id)
    artifacts = store_ext.get_live_output_artifacts_of_node_by_output_key(
        m.store, pipeline_id=pipeline_name, node_id=node_id)
    found = [a for per_exec in artifacts.get(key, []) for a in per_exec] if artifacts else []
    types = {t.id: t for t in m.store.get_artifact_types()}
    return sorted((artifact_utils.deserialize_artifact(types[a.type_id], a) for a in found),
                  key=lambda a: a.id)


def latest_output(connection_config, pipeline_name: str, node_id: str, key: str):
  """The newest artifact a node produced under output `key` (the last of `outputs_of`).

  Args:
    connection_config: ML Metadata's `ConnectionConfig` proto of the store to read (the
      SQLite file of a LocalDagRunner run, for one).
    pipeline_name: The pipeline's name: TFX's pipeline context, or the name of the
      `system.Pipeline` context in the Vertex layout.
    node_id: The component's id, as the pipeline names it (`ImageExampleGen`,
      `Evaluator`); in the Vertex layout, the executions' `task_name`.
    key: The output key (`examples`, `report`, `model`, ...).

  Raises:
    LookupError: The node has no such output in the store.
  """
  found = outputs_of(connection_config, pipeline_name, node_id, key)
  if not found:
    raise LookupError(f'no {key!r} output of {node_id!r} in pipeline {pipeline_name!r}')
  return found[-1]
