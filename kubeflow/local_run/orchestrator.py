"""One run of a compiled pipeline spec: the DAG in order, each task as its executor
says (importer, resolver, container), recorded in ML Metadata and looked up in its
cache, as Vertex AI Pipelines runs it."""
from __future__ import annotations

import copy
import datetime
import hashlib
import json
import os
import re
import sys
import time
from typing import Any, Dict, List, Optional

from kubeflow.local_run import launcher
from kubeflow.local_run import spec as spec_lib
from kubeflow.local_run.spec import SpecError
from kubeflow.local_run.store import CONTAINER, IMPORTER, RESOLVER, Store

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUCCEEDED, FAILED = 'SUCCEEDED', 'FAILED'
_QUERY_PLACEHOLDER = re.compile(
    r"\{\{\$\.inputs\.artifacts\['(\w+)'\]\.(uri|metadata\['(\w+)'\])\}\}")


def cache_key(inputs: Dict[str, Any], component: Dict[str, Any],
              container: Dict[str, Any]) -> str:
  """What KFP's `GenerateCacheKey` hashes: input artifact names, input parameter values,
  output artifact types and parameter names, and the container's image, command and
  arguments (placeholders unfilled)."""
  outputs = component.get('outputDefinitions', {})
  key = {
      'inputArtifactNames': {k: [a['name'] for a in listed]
                             for k, listed in inputs['artifacts'].items()},
      'inputParameterValues': inputs['parameterValues'],
      'outputArtifactsSpec': {k: spec_lib.type_title(d['artifactType'])
                              for k, d in outputs.get('artifacts', {}).items()},
      'outputParametersSpec': sorted(outputs.get('parameters', {})),
      'containerSpec': {'image': container.get('image', ''),
                        'cmdArgs': container.get('command', []) + container.get('args', [])},
  }
  return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


class LocalRun:
  """One run of a compiled pipeline spec; `run()` returns the task states and outputs.

  `metadata` is the ML Metadata SQLite file (default `<work>/metadata.sqlite`); with
  `cache=False` no task is taken from the cache (each task's `cachingOptions` decides
  otherwise)."""

  def __init__(self, spec: Dict[str, Any], work_dir: str, *,
               pipeline_root: Optional[str] = None, python: str = sys.executable,
               image_path: str = PROJECT_DIR, parameters: Optional[Dict[str, Any]] = None,
               platform: str = 'vertex', run_id: Optional[str] = None,
               metadata: Optional[str] = None, cache: bool = True,
               log=lambda line: print(line, file=sys.stderr, flush=True)):
    self.spec = spec
    self.work_dir = os.path.abspath(work_dir)
    runtime = spec.get('_runtimeConfig', {})
    root = (pipeline_root or runtime.get('gcsOutputDirectory')
            or spec.get('defaultPipelineRoot') or os.path.join(self.work_dir, 'pipeline_root'))
    self.pipeline_name = spec['pipelineInfo']['name']
    self.run_id = run_id or (f'{self.pipeline_name}-'
                             f'{datetime.datetime.now():%Y%m%d-%H%M%S-%f}')
    self.run_root = f'{root.rstrip("/")}/{self.pipeline_name}/{self.run_id}'
    self.python = python
    self.image_path = os.path.abspath(image_path)
    self.platform = platform
    self.metadata_path = os.path.abspath(metadata or os.path.join(self.work_dir,
                                                                  'metadata.sqlite'))
    self.cache = cache
    self.log = log
    self.typed_parameters = spec_lib.typed_parameters(spec)
    self.parameters = self._pipeline_parameters(runtime, parameters or {})
    self.states: Dict[str, str] = {}
    self.cached: Dict[str, int] = {}
    self.executions: Dict[str, int] = {}
    self.outputs: Dict[str, Dict[str, List[Dict[str, Any]]]] = {}
    self.output_parameters: Dict[str, Dict[str, Any]] = {}
    self.errors: Dict[str, str] = {}
    self.not_run: List[str] = []
    self.store: Optional[Store] = None

  def _pipeline_parameters(self, runtime, overrides) -> Dict[str, Any]:
    values = {}
    for name, definition in self.spec['root'].get('inputDefinitions', {}).get(
        'parameters', {}).items():
      if 'defaultValue' in definition:
        values[name] = spec_lib.plain(definition['defaultValue'])
    values.update(runtime.get('parameterValues', {}))
    values.update({k: spec_lib.plain(v) for k, v in runtime.get('parameters', {}).items()})
    values.update(overrides)
    return values

  # --- the DAG -------------------------------------------------------------------

  def run(self) -> Dict[str, Any]:
    os.makedirs(os.path.join(self.work_dir, self.run_id), exist_ok=True)
    os.makedirs(os.path.dirname(self.metadata_path), exist_ok=True)
    self.store = Store(self.metadata_path, self.pipeline_name, self.run_id)
    self.log(f'Run {self.run_id}: artifacts under {self.run_root}, logs under '
             f'{os.path.join(self.work_dir, self.run_id)}, ML Metadata in '
             f'{self.metadata_path}{"" if self.cache else " (cache off)"}')
    self._run_dag(self.spec['root']['dag'])
    return {
        'run_id': self.run_id,
        'metadata': self.metadata_path,
        'tasks': {name: {'state': state, 'cached': name in self.cached,
                         'execution_id': self.executions.get(name),
                         'outputs': {
                             key: [{'uri': a['uri'], 'metadata': a.get('metadata', {})}
                                   for a in listed]
                             for key, listed in self.outputs.get(name, {}).items()}}
                  for name, state in self.states.items()},
        'not_run': self.not_run,
    }

  @staticmethod
  def _upstream(task: Dict[str, Any]) -> set:
    names = set(task.get('dependentTasks', []))
    for spec in list(task.get('inputs', {}).get('artifacts', {}).values()) + list(
        task.get('inputs', {}).get('parameters', {}).values()):
      for key in ('taskOutputArtifact', 'taskOutputParameter', 'taskFinalStatus'):
        if key in spec:
          names.add(spec[key]['producerTask'])
    return names

  def _order(self, tasks: Dict[str, Any]) -> List[str]:
    """Task names with every task after its upstream tasks (ties by name)."""
    upstream = {name: self._upstream(task) & set(tasks) for name, task in tasks.items()}
    order, done = [], set()
    while len(order) < len(tasks):
      ready = sorted(n for n in tasks if n not in done and upstream[n] <= done)
      if not ready:
        raise SpecError(f'the DAG has a cycle among {sorted(set(tasks) - done)}')
      order.append(ready[0])
      done.add(ready[0])
    return order

  def _run_dag(self, dag: Dict[str, Any]) -> bool:
    tasks = dag['tasks']
    ok = True
    for name in self._order(tasks):
      task = tasks[name]
      upstream = self._upstream(task) & set(tasks)
      all_completed = task.get('triggerPolicy', {}).get(
          'strategy') == 'ALL_UPSTREAM_TASKS_COMPLETED'
      if not all_completed and any(self.states.get(u) != SUCCEEDED for u in upstream):
        self.not_run.append(name)
        continue
      if self._run_task(name, task) == FAILED:
        ok = False
    return ok

  # --- one task ------------------------------------------------------------------

  def _component(self, task):
    return self.spec['components'][task['componentRef']['name']]

  def _resolve_parameter(self, name: str, spec: Dict[str, Any]) -> Any:
    if 'runtimeValue' in spec:
      return spec_lib.runtime_value(spec)
    if 'componentInputParameter' in spec:
      key = spec['componentInputParameter']
      if key not in self.parameters:
        raise SpecError(f'pipeline parameter {key!r} (for {name!r}) has no value: give '
                        f'--param {key}=VALUE')
      return self.parameters[key]
    if 'taskOutputParameter' in spec:
      producer = spec['taskOutputParameter']['producerTask']
      return self.output_parameters[producer][spec['taskOutputParameter']['outputParameterKey']]
    if 'taskFinalStatus' in spec:
      producer = spec['taskFinalStatus']['producerTask']
      state = self.states.get(producer, FAILED)
      return {'state': state, 'pipelineJobResourceName': self.run_id,
              'pipelineTaskName': producer,
              'error': {'message': self.errors.get(producer, '')} if state != SUCCEEDED else {}}
    raise SpecError(f'parameter {name!r}: unsupported input {sorted(spec)}')

  def _inputs(self, task: Dict[str, Any], component: Dict[str, Any]) -> Dict[str, Any]:
    parameters = {name: self._resolve_parameter(name, spec)
                  for name, spec in task.get('inputs', {}).get('parameters', {}).items()}
    for name, definition in component.get('inputDefinitions', {}).get('parameters', {}).items():
      if name not in parameters and 'defaultValue' in definition:
        parameters[name] = spec_lib.plain(definition['defaultValue'])  # as the launcher does
    artifacts = {}
    for name, spec in task.get('inputs', {}).get('artifacts', {}).items():
      if 'taskOutputArtifact' not in spec:
        raise SpecError(f'input artifact {name!r}: only upstream task outputs are '
                        f'supported, got {sorted(spec)}')
      source = spec['taskOutputArtifact']
      artifacts[name] = copy.deepcopy(
          self.outputs[source['producerTask']].get(source['outputArtifactKey'], []))
    return {'parameterValues': parameters, 'artifacts': artifacts}

  def _run_task(self, name: str, task: Dict[str, Any]) -> str:
    component = self._component(task)
    started = time.time()
    how = ''
    try:
      if 'dag' in component:
        state = SUCCEEDED if self._run_dag(component['dag']) else FAILED
      else:
        inputs = self._inputs(task, component)
        condition = task.get('triggerPolicy', {}).get('condition')
        if condition and not spec_lib.cel(condition, inputs):
          self.not_run.append(name)
          self.log(f'{name}: condition {condition} is false, not run')
          return 'SKIPPED'
        executor = self.spec['deploymentSpec']['executors'][component['executorLabel']]
        if 'importer' in executor:
          how = self._import(name, component, executor['importer'], inputs)
        elif 'resolver' in executor:
          how = self._resolve(name, component, executor['resolver'], inputs)
        elif 'container' in executor:
          how = self._execute(name, task, component, executor['container'], inputs)
        else:
          raise SpecError(f'{name}: {sorted(executor)} executors cannot run here')
        state = SUCCEEDED
    except Exception as e:  # pylint: disable=broad-except
      self.errors[name] = str(e)
      self.log(f'{name}: FAILED: {e}')
      if name not in self.executions and self.store is not None and 'dag' not in component:
        executor = self.spec['deploymentSpec']['executors'].get(component.get('executorLabel'), {})
        self.executions[name] = self.store.record_failed(
            name, IMPORTER if 'importer' in executor else
            RESOLVER if 'resolver' in executor else CONTAINER)
      state = FAILED
    self.states[name] = state
    self.log(f'{name}: {state}{f" ({how})" if how else ""} in {time.time() - started:.1f} s')
    return state

  def _import(self, name, component, importer, inputs) -> str:
    """An importer: one artifact at `artifactUri`, typed by `typeSchema`; without
    `reimport`, an existing LIVE artifact of that type and URI is reused."""
    uri = importer['artifactUri']
    if 'runtimeParameter' in uri:
      uri = inputs['parameterValues'][uri['runtimeParameter']]
    else:
      uri = spec_lib.plain(uri.get('constant', uri.get('constantValue', uri)))
    [key] = component['outputDefinitions']['artifacts']
    artifact = {'type': importer['typeSchema'], 'uri': uri,
                'metadata': dict(importer.get('metadata', {}))}
    self.executions[name] = self.store.record_import(name, artifact, key,
                                                     bool(importer.get('reimport')))
    self.outputs[name] = {key: [artifact]}
    return f'imported: artifact {artifact["name"].rsplit("/", 1)[-1]}'

  def _resolve(self, name, component, resolver, inputs) -> str:
    """A resolver: each output is the newest LIVE artifact its query matches, as Vertex
    answers the queries KubeflowV2DagRunner compiles (none: an empty list)."""
    outputs, queries = {}, {}
    for key, query in resolver.get('outputArtifactQueries', {}).items():
      text, complete = query['filter'], True
      for match in _QUERY_PLACEHOLDER.finditer(query['filter']):
        listed = inputs['artifacts'].get(match.group(1), [])
        value = (listed[0]['uri'] if match.group(2) == 'uri'
                 else listed[0].get('metadata', {}).get(match.group(3))) if listed else None
        if value is None:
          complete = False
          break
        text = text.replace(match.group(0), str(value))
      queries[key] = text
      outputs[key] = self.store.query(text, int(query.get('limit', 1))) if complete else []
    self.executions[name] = self.store.record_resolver(name, inputs['artifacts'], outputs,
                                                       queries)
    self.outputs[name] = outputs
    return 'resolved: ' + ', '.join(f'{k}: {len(v)} artifact{"s" * (len(v) != 1)}'
                                    for k, v in sorted(outputs.items()))

  def _command(self, words: List[str]) -> List[str]:
    if words and words[0] in ('python', 'python3'):
      return [self.python, *words[1:]]
    return words

  def _execute(self, name, task, component, container, inputs) -> str:
    """A container task: the driver hook (Vertex), the cache look-up, the container."""
    task_root = f'{self.run_root}/{name}'
    definitions = component.get('outputDefinitions', {})
    outputs = {key: [{'type': d['artifactType'], 'uri': f'{task_root}/{key}',
                      'metadata': dict(d.get('metadata', {}))}]
               for key, d in definitions.get('artifacts', {}).items()}
    declared = component.get('inputDefinitions', {}).get('parameters', {})
    log_path = os.path.join(self.work_dir, self.run_id, f'{name}.log')
    env = dict(os.environ, PYTHONPATH=self.image_path)
    env.update({e['name']: e['value'] for e in container.get('env', [])})

    def run_step(step: str, words: List[str]) -> Dict[str, Any]:
      executor_input = launcher.executor_input(
          inputs, outputs, list(definitions.get('parameters', {})), task_root,
          typed_parameters=self.typed_parameters, declared=declared)
      saved = 'executor_input' if step == 'container' else step
      with open(os.path.join(self.work_dir, self.run_id, f'{name}.{saved}.json'), 'w',
                encoding='utf-8') as f:
        json.dump(executor_input, f, indent=2)
      launcher.prepare_folders(executor_input)
      values = launcher.placeholders(executor_input, inputs['parameterValues'])
      launcher.start(self._command(launcher.fill(words, values)), step=step,
                     log_path=log_path, env=env, cwd=self.image_path)
      return executor_input

    hook = container.get('lifecycle', {}).get('preCacheCheck')
    if hook and self.platform == 'vertex':
      # Vertex runs the hook before the cache check and carries its whole output onto
      # the task: parameters (span, version, input fingerprint, the resolved
      # input_config) into the inputs, artifact metadata onto the outputs.
      written = launcher.read_executor_output(
          run_step('preCacheCheck', hook.get('command', []) + hook.get('args', [])))
      inputs['parameterValues'].update(written['parameterValues'])
      launcher.merge_artifacts(outputs, written['artifacts'])
    key = cache_key(inputs, component, container)
    parameters = inputs['parameterValues']
    if self.cache and task.get('cachingOptions', {}).get('enableCache'):
      hit = self.store.cached(key)
      if hit:
        cached_from, self.outputs[name], self.output_parameters[name] = hit
        self.executions[name] = self.store.record_cached(
            name, inputs['artifacts'], parameters, key, cached_from, self.outputs[name])
        self.cached[name] = cached_from
        return f'cached: outputs of execution {cached_from}'
    execution_id = self.store.start(name, inputs['artifacts'], parameters, key, outputs)
    self.executions[name] = execution_id
    ok, output_parameters = False, {}
    try:
      executor_input = run_step('container', container.get('command', []) +
                                container.get('args', []))
      written = launcher.read_executor_output(executor_input)
      launcher.merge_artifacts(outputs, written['artifacts'])
      output_parameters = launcher.output_parameter_values(executor_input, written)
      ok = True
    finally:
      self.store.finish(execution_id, name, inputs['artifacts'], parameters, key, outputs,
                        output_parameters, ok)
    self.outputs[name] = outputs
    self.output_parameters[name] = output_parameters
    return f'ran: execution {execution_id}'
