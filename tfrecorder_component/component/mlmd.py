"""Reading a pipeline's artifacts back from ML Metadata."""
from __future__ import annotations

from typing import List

from tfx.orchestration import metadata
from tfx.orchestration.portable.mlmd import store_ext
from tfx.types import artifact_utils


def outputs_of(connection_config, pipeline_name: str, node_id: str, key: str) -> List:
  """All artifacts a node produced under output `key`, oldest first."""
  with metadata.Metadata(connection_config) as m:
    artifacts = store_ext.get_live_output_artifacts_of_node_by_output_key(
        m.store, pipeline_id=pipeline_name, node_id=node_id)
    found = [a for per_exec in artifacts.get(key, []) for a in per_exec] if artifacts else []
    types = {t.id: t for t in m.store.get_artifact_types()}
    return sorted((artifact_utils.deserialize_artifact(types[a.type_id], a) for a in found),
                  key=lambda a: a.id)


def latest_output(connection_config, pipeline_name: str, node_id: str, key: str):
  """The newest artifact a node produced under output `key`."""
  found = outputs_of(connection_config, pipeline_name, node_id, key)
  if not found:
    raise LookupError(f'no {key!r} output of {node_id!r} in pipeline {pipeline_name!r}')
  return found[-1]
