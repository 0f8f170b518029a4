"""Questions the end-to-end tests ask ML Metadata."""
from ml_metadata.proto import metadata_store_pb2
from tfx.orchestration import metadata

OUTPUT = metadata_store_pb2.Event.OUTPUT
INPUT = metadata_store_pb2.Event.INPUT


def node_executions(m: metadata.Metadata, pipeline: str, node: str):
  ctx = m.store.get_context_by_type_and_name('node', f'{pipeline}.{node}')
  assert ctx is not None, f'no node context for {node}'
  return sorted(m.store.get_executions_by_context(ctx.id), key=lambda e: e.id)


def artifact_ids(m: metadata.Metadata, execution_id: int, event_type) -> set:
  return {e.artifact_id for e in m.store.get_events_by_execution_ids([execution_id])
          if e.type == event_type}


def output_of_type(m: metadata.Metadata, execution_id: int, type_name: str) -> int:
  """The id of the one artifact of `type_name` that an execution produced."""
  [artifact_type] = [t for t in m.store.get_artifact_types() if t.name == type_name]
  ids = [a.id for a in m.store.get_artifacts_by_id(list(artifact_ids(m, execution_id, OUTPUT)))
         if a.type_id == artifact_type.id]
  assert len(ids) == 1, ids
  return ids[0]
