"""The run's ML Metadata store, laid out as Vertex ML Metadata and Kubeflow Pipelines 2.x
lay theirs out: one `system.Pipeline` context per pipeline and one `system.PipelineRun`
context per run; an execution per task (`system.ContainerExecution`,
`system.ImporterExecution`, `system.ResolverExecution`) with its parameters and cache key;
artifacts typed by their schema title (`tfx.Examples`, `system.HTML`, ...), their URI and
their metadata as custom properties, LIVE once published; INPUT and OUTPUT events
between them. The same store answers resolver queries and cache look-ups.

A SQLite file through `ml-metadata`, readable afterwards with its own API:

    from ml_metadata.metadata_store import metadata_store
    from ml_metadata.proto import metadata_store_pb2
    config = metadata_store_pb2.ConnectionConfig()
    config.sqlite.filename_uri = 'WORK/metadata.sqlite'
    store = metadata_store.MetadataStore(config)
"""
from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from google.protobuf import json_format
from ml_metadata.metadata_store import metadata_store
from ml_metadata.proto import metadata_store_pb2 as mlmd

from kubeflow.local_run.spec import SpecError, type_title

PIPELINE_CONTEXT = 'system.Pipeline'
RUN_CONTEXT = 'system.PipelineRun'
CONTAINER = 'system.ContainerExecution'
IMPORTER = 'system.ImporterExecution'
RESOLVER = 'system.ResolverExecution'
NAME_PREFIX = 'projects/local/locations/local/metadataStores/default/artifacts/'
_LIST = '__list__'  # a list-valued metadata entry, kept as a struct
_METADATA_FIELD = r'metadata\.(\w+)\.(number|string|bool)_value'  # a query's metadata term


def connection_config(path: str) -> mlmd.ConnectionConfig:
  config = mlmd.ConnectionConfig()
  config.sqlite.filename_uri = path
  config.sqlite.connection_mode = mlmd.SqliteMetadataSourceConfig.READWRITE_OPENCREATE
  return config


def artifact_name(artifact_id: int) -> str:
  """An artifact's resource name, as Vertex ML Metadata names it."""
  return f'{NAME_PREFIX}{artifact_id}'


def artifact_id(name: str) -> Optional[int]:
  return int(name[len(NAME_PREFIX):]) if re.fullmatch(
      re.escape(NAME_PREFIX) + r'\d+', name or '') else None


def to_value(value: Any) -> mlmd.Value:
  result = mlmd.Value()
  if isinstance(value, bool):
    result.bool_value = value
  elif isinstance(value, int):
    result.int_value = value
  elif isinstance(value, float):
    result.double_value = value
  elif isinstance(value, str):
    result.string_value = value
  else:
    json_format.ParseDict(value if isinstance(value, dict) else {_LIST: value},
                          result.struct_value)
  return result


def from_value(value: mlmd.Value) -> Any:
  kind = value.WhichOneof('value')
  if kind == 'struct_value':
    data = json_format.MessageToDict(value.struct_value)
    return data[_LIST] if set(data) == {_LIST} else data
  return getattr(value, kind) if kind else None


def _struct(data: Dict[str, Any]) -> mlmd.Value:
  result = mlmd.Value()
  json_format.ParseDict(data, result.struct_value)
  return result


class Store:
  """One pipeline run's view of the store."""

  def __init__(self, path: str, pipeline_name: str, run_id: str):
    self.path = path
    self.store = metadata_store.MetadataStore(connection_config(path))
    self._types: Dict[Tuple[str, str], int] = {}
    self.pipeline = self._context(PIPELINE_CONTEXT, pipeline_name)
    self.run = self._context(RUN_CONTEXT, run_id)

  # --- types and contexts ----------------------------------------------------------

  def _type_id(self, kind: str, name: str) -> int:
    if (kind, name) not in self._types:
      put = {'artifact': (self.store.put_artifact_type, mlmd.ArtifactType),
             'execution': (self.store.put_execution_type, mlmd.ExecutionType),
             'context': (self.store.put_context_type, mlmd.ContextType)}[kind]
      self._types[kind, name] = put[0](put[1](name=name))
    return self._types[kind, name]

  def _context(self, type_name: str, name: str) -> mlmd.Context:
    found = self.store.get_context_by_type_and_name(type_name, name)
    if found is None:
      context = mlmd.Context(type_id=self._type_id('context', type_name), name=name)
      [context.id] = self.store.put_contexts([context])
      return context
    return found

  # --- artifacts -------------------------------------------------------------------

  def _artifact_type_name(self, type_id: int) -> str:
    for (kind, name), known in self._types.items():
      if kind == 'artifact' and known == type_id:
        return name
    [found] = self.store.get_artifact_types_by_id([type_id])
    self._types['artifact', found.name] = type_id
    return found.name

  def _to_mlmd(self, artifact: Dict[str, Any], state) -> mlmd.Artifact:
    result = mlmd.Artifact(type_id=self._type_id('artifact', type_title(artifact['type'])),
                           uri=artifact['uri'], state=state)
    if artifact_id(artifact.get('name', '')) is not None:
      result.id = artifact_id(artifact['name'])
    for key, value in artifact.get('metadata', {}).items():
      if value is not None:
        result.custom_properties[key].CopyFrom(to_value(value))
    return result

  def to_dict(self, artifact: mlmd.Artifact) -> Dict[str, Any]:
    """An MLMD artifact as a task's input artifact (a RuntimeArtifact)."""
    return {'name': artifact_name(artifact.id),
            'type': {'schemaTitle': self._artifact_type_name(artifact.type_id)},
            'uri': artifact.uri,
            'metadata': {k: from_value(v) for k, v in artifact.custom_properties.items()}}

  def _put(self, artifacts: Iterable[Dict[str, Any]], state) -> None:
    listed = list(artifacts)
    ids = self.store.put_artifacts([self._to_mlmd(a, state) for a in listed])
    for artifact, new_id in zip(listed, ids):
      artifact['name'] = artifact_name(new_id)

  def _attribute(self, artifacts: Iterable[Dict[str, Any]]) -> None:
    ids = [artifact_id(a['name']) for a in artifacts]
    self.store.put_attributions_and_associations(
        [mlmd.Attribution(artifact_id=i, context_id=c.id)
         for i in ids for c in (self.pipeline, self.run)], [])

  # --- executions ------------------------------------------------------------------

  def _execution(self, type_name: str, task: str, state, properties: Dict[str, Any],
                 inputs: Dict[str, List[Dict[str, Any]]],
                 outputs: Dict[str, List[Dict[str, Any]]],
                 output_event=mlmd.Event.OUTPUT, execution_id: Optional[int] = None) -> int:
    execution = mlmd.Execution(type_id=self._type_id('execution', type_name),
                               last_known_state=state)
    if execution_id is not None:
      execution.id = execution_id
    execution.custom_properties['task_name'].string_value = task
    execution.custom_properties['run_id'].string_value = self.run.name
    for key, value in properties.items():
      if value is not None:
        execution.custom_properties[key].CopyFrom(
            _struct(value) if isinstance(value, dict) else to_value(value))
    pairs, seen = [], set()
    for event_type, listed in ((mlmd.Event.INPUT, inputs), (output_event, outputs)):
      for key, artifacts in sorted(listed.items()):
        for index, artifact in enumerate(artifacts):
          if (artifact['name'], event_type) in seen:
            continue  # one event per artifact and type (a baseline that is the model)
          seen.add((artifact['name'], event_type))
          stored = mlmd.Artifact()
          stored.CopyFrom(self.store.get_artifacts_by_id([artifact_id(artifact['name'])])[0])
          event = mlmd.Event(type=event_type)
          event.path.steps.add().key = key
          event.path.steps.add().index = index
          pairs.append((stored, event))
    new_id, _, _ = self.store.put_execution(execution, pairs, [self.pipeline, self.run])
    return new_id

  def start(self, task: str, inputs, parameters: Dict[str, Any], cache_key: str,
            outputs: Dict[str, List[Dict[str, Any]]]) -> int:
    """A RUNNING container execution with its input events; its output artifacts are
    made PENDING (they get their names here)."""
    self._put([a for listed in outputs.values() for a in listed], mlmd.Artifact.PENDING)
    return self._execution(CONTAINER, task, mlmd.Execution.RUNNING,
                           {'parameters': parameters, 'cache_key': cache_key}, inputs, {})

  def finish(self, execution_id: int, task: str, inputs, parameters, cache_key: str,
             outputs: Dict[str, List[Dict[str, Any]]], output_parameters: Dict[str, Any],
             ok: bool) -> None:
    """Publishes a container execution: COMPLETE with LIVE outputs, or FAILED with its
    outputs ABANDONED."""
    state = mlmd.Artifact.LIVE if ok else mlmd.Artifact.ABANDONED
    self.store.put_artifacts([self._to_mlmd(a, state)
                              for listed in outputs.values() for a in listed])
    self._attribute(a for listed in outputs.values() for a in listed)
    self._execution(CONTAINER, task, mlmd.Execution.COMPLETE if ok else mlmd.Execution.FAILED,
                    {'parameters': parameters, 'cache_key': cache_key,
                     'output_parameters': output_parameters}, {}, outputs,
                    execution_id=execution_id)  # its INPUT events were put at the start

  def cached(self, cache_key: str) -> Optional[Tuple[int, Dict[str, List[Dict]], Dict]]:
    """(execution id, outputs, output parameters) of the newest COMPLETE execution of
    this pipeline with `cache_key` whose outputs are all still LIVE; else None."""
    candidates = sorted(
        (e for e in self.store.get_executions_by_context(self.pipeline.id)
         if e.last_known_state == mlmd.Execution.COMPLETE
         and e.custom_properties['cache_key'].string_value == cache_key),
        key=lambda e: e.id, reverse=True)
    for execution in candidates:
      events = [e for e in self.store.get_events_by_execution_ids([execution.id])
                if e.type == mlmd.Event.OUTPUT]
      artifacts = {a.id: a for a in self.store.get_artifacts_by_id(
          [e.artifact_id for e in events])}
      if any(a.state != mlmd.Artifact.LIVE for a in artifacts.values()):
        continue
      outputs: Dict[str, List[Dict]] = {}
      for event in sorted(events, key=lambda e: (e.path.steps[0].key, e.path.steps[1].index)):
        outputs.setdefault(event.path.steps[0].key, []).append(
            self.to_dict(artifacts[event.artifact_id]))
      params = (from_value(execution.custom_properties['output_parameters'])
                if 'output_parameters' in execution.custom_properties else {})
      return execution.id, outputs, params
    return None

  def record_cached(self, task: str, inputs, parameters, cache_key: str, cached_from: int,
                    outputs) -> int:
    """A CACHED execution: the earlier execution's outputs are this one's."""
    self._attribute(a for listed in outputs.values() for a in listed)
    return self._execution(CONTAINER, task, mlmd.Execution.CACHED,
                           {'parameters': parameters, 'cache_key': cache_key,
                            'cached_execution_id': cached_from}, inputs, outputs)

  def record_import(self, task: str, artifact: Dict[str, Any], key: str,
                    reimport: bool) -> int:
    """An importer: without `reimport`, the newest LIVE artifact of the same type and URI
    is the output (as the KFP importer does); else a new one."""
    if not reimport:
      type_id = self._type_id('artifact', type_title(artifact['type']))
      same = [a for a in self.store.get_artifacts_by_uri(artifact['uri'])
              if a.type_id == type_id and a.state == mlmd.Artifact.LIVE]
      if same:
        artifact.update(self.to_dict(max(same, key=lambda a: a.id)))
    if 'name' not in artifact:
      self._put([artifact], mlmd.Artifact.LIVE)
    self._attribute([artifact])
    return self._execution(IMPORTER, task, mlmd.Execution.COMPLETE,
                           {'artifact_uri': artifact['uri']}, {}, {key: [artifact]})

  def record_resolver(self, task: str, inputs, outputs, queries: Dict[str, str]) -> int:
    """A resolver: what it found are INTERNAL_OUTPUT events (it made none of them)."""
    return self._execution(RESOLVER, task, mlmd.Execution.COMPLETE, {'queries': queries},
                           inputs, outputs, output_event=mlmd.Event.INTERNAL_OUTPUT)

  def record_failed(self, task: str, type_name: str = CONTAINER) -> int:
    return self._execution(type_name, task, mlmd.Execution.FAILED, {}, {}, {})

  # --- artifact queries (resolvers) ------------------------------------------------

  def query(self, query_filter: str, limit: int = 1) -> List[Dict[str, Any]]:
    """The newest LIVE artifacts of this pipeline matching a Vertex ML Metadata filter
    of the forms KubeflowV2DagRunner emits: `field=value` terms joined by AND, over
    `schema_title`, `state`, `name`, `uri` and `metadata.KEY.(number|string|bool)_value`."""
    terms = []
    for term in re.split(r'\s+AND\s+', query_filter.strip()):
      match = re.fullmatch(r'([\w.]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s"]+)', term)
      if not match:
        raise SpecError(f'artifact query {query_filter!r}: cannot read {term!r}')
      field, value = match.groups()
      if field not in ('schema_title', 'state', 'name', 'uri') and not re.fullmatch(
          _METADATA_FIELD, field):
        raise SpecError(f'artifact query {query_filter!r}: field {field!r} is not supported')
      terms.append((field, value[1:-1] if value.startswith('"') else value))
    found = [a for a in self.store.get_artifacts_by_context(self.pipeline.id)
             if all(self._matches(a, field, value) for field, value in terms)]
    found.sort(key=lambda a: (a.create_time_since_epoch, a.id), reverse=True)
    return [self.to_dict(a) for a in found[:limit or len(found)]]

  def _matches(self, artifact: mlmd.Artifact, field: str, value: str) -> bool:
    if field == 'schema_title':
      return self._artifact_type_name(artifact.type_id) == value
    if field == 'state':
      return mlmd.Artifact.State.Name(artifact.state) == value
    if field == 'name':
      return artifact_name(artifact.id) == value
    if field == 'uri':
      return artifact.uri == value
    key, kind = re.fullmatch(_METADATA_FIELD, field).groups()
    if key not in artifact.custom_properties:
      return False
    stored = from_value(artifact.custom_properties[key])
    if kind == 'number':
      return isinstance(stored, (int, float)) and float(stored) == float(value)
    if kind == 'bool':
      return stored is (value.lower() == 'true')
    return stored == value
