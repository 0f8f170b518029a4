"""Runs a compiled KFP v2 pipeline spec on this machine, task by task, the way the
Kubeflow Pipelines v2 launcher and Vertex AI Pipelines run it.

    python -m kubeflow.local_run SPEC.json --work DIR [--pipeline-root ROOT]
        [--python PYTHON] [--image-path DIR] [--param NAME=VALUE ...]
        [--platform vertex|kfp]

SPEC is what `KubeflowV2DagRunner` compiles (a bare PipelineSpec or a PipelineJob with
`pipelineSpec`, as JSON or YAML). Tasks run in DAG order, each as its executor says:

- an importer makes its one output artifact from `artifactUri` and `typeSchema`;
- a container runs its `lifecycle.preCacheCheck` hook first (with `--platform
  vertex`, the default: Vertex AI runs the hook, Kubeflow Pipelines 2.x does not),
  then its `command` + `args`, with `{{$}}` replaced by the ExecutorInput JSON built
  from the spec: parameters (constants, pipeline parameters, upstream output
  parameters), input artifacts (upstream outputs, with the type and metadata their
  executor output gave them) and output artifacts under
  `<pipeline root>/<pipeline name>/<run id>/<task>/<output key>`, the executor output
  file beside them;
- the executor output JSON is read back (artifact URIs and metadata, parameter
  values) and feeds the next tasks' inputs.

The image's `python` is `--python` (default: this interpreter), started in
`--image-path` with `PYTHONPATH` set to it, as the pipeline image's WORKDIR and
PYTHONPATH (default: this checkout, which holds `pipelines/`). Nothing else stands in
for the services: there is no ML Metadata store, so there is no cache and no resolver
node (a task with a resolver executor fails, saying so). Trigger conditions (TFX's
`Cond`) and exit handlers (`ALL_UPSTREAM_TASKS_COMPLETED`, `taskFinalStatus`) are
honoured.

Per-task logs and ExecutorInputs are written under `--work`. The exit status is 1 if
any task failed; the last line on stdout is one JSON object:
`{"tasks": {"<task>": {"state": "SUCCEEDED" | "FAILED", "outputs": {"<key>":
[{"uri": ..., "metadata": {...}}]}}}, "not_run": [...]}`; `not_run` lists the tasks
left out after a failure or by a false trigger condition.
"""
from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import re
import subprocess
import sys
import time
import types
from typing import Any, Dict, List, Optional

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUCCEEDED, FAILED = 'SUCCEEDED', 'FAILED'
_EXECUTOR_INPUT = '{{$}}'


class SpecError(ValueError):
  """The spec uses something this runner cannot run here."""


def load_spec(path: str) -> Dict[str, Any]:
  """The PipelineSpec in `path` (JSON or YAML; bare, or a PipelineJob's
  `pipelineSpec` whose `runtimeConfig` is kept as `_runtimeConfig`)."""
  with open(path, encoding='utf-8') as f:
    text = f.read()
  if path.endswith(('.yaml', '.yml')):
    import yaml  # pylint: disable=g-import-not-at-top
    data = next(d for d in yaml.safe_load_all(text) if d)  # KFP appends platform specs
  else:
    data = json.loads(text)
  if 'pipelineSpec' in data:
    spec = dict(data['pipelineSpec'])
    spec['_runtimeConfig'] = data.get('runtimeConfig', {})
    return spec
  if 'root' not in data or 'deploymentSpec' not in data:
    raise SpecError(f'{path} is not a KFP pipeline spec (no root DAG or deploymentSpec)')
  return data


def local_path(uri: str) -> str:
  """Where a container sees `uri`: as the launcher mounts buckets (gs://b/x -> /gcs/b/x);
  a local path is itself."""
  for scheme, mount in (('gs://', '/gcs/'), ('s3://', '/s3/'), ('minio://', '/minio/')):
    if uri.startswith(scheme):
      return mount + uri[len(scheme):]
  return uri


def _placeholders(executor_input: Dict[str, Any]) -> Dict[str, str]:
  """The launcher's placeholder values (backend/src/v2/component/launcher_v2.go)."""
  values = {_EXECUTOR_INPUT: json.dumps(executor_input)}
  inputs, outputs = executor_input['inputs'], executor_input['outputs']
  for name, listed in inputs.get('artifacts', {}).items():
    if listed['artifacts']:
      uri = listed['artifacts'][0]['uri']
      values[f"{{{{$.inputs.artifacts['{name}'].uri}}}}"] = uri
      values[f"{{{{$.inputs.artifacts['{name}'].path}}}}"] = local_path(uri)
  for name, listed in outputs.get('artifacts', {}).items():
    uri = listed['artifacts'][0]['uri']
    values[f"{{{{$.outputs.artifacts['{name}'].uri}}}}"] = uri
    values[f"{{{{$.outputs.artifacts['{name}'].path}}}}"] = local_path(uri)
  for name, value in inputs.get('parameterValues', {}).items():
    if isinstance(value, bool):
      text = str(value).lower()
    elif isinstance(value, float) and value.is_integer():
      text = str(int(value))
    elif isinstance(value, (dict, list)):
      text = json.dumps(value)
    else:
      text = str(value)
    values[f"{{{{$.inputs.parameters['{name}']}}}}"] = text
  for name, param in outputs.get('parameters', {}).items():
    values[f"{{{{$.outputs.parameters['{name}'].output_file}}}}"] = param['outputFile']
  return values


def _fill(words: List[str], placeholders: Dict[str, str]) -> List[str]:
  filled = []
  for word in words:
    for key, value in placeholders.items():
      word = word.replace(key, value)
    filled.append(word)
  return filled


def _cel(expression: str, inputs: Dict[str, Any]) -> bool:
  """Evaluates the CEL conditions TFX compiles (`Cond`): comparisons of input artifacts'
  `.uri` / `.metadata['key']` with literals, joined by `&&`, `||` and `!`."""

  def wrap(value):
    if isinstance(value, dict):
      return types.SimpleNamespace(**{k: wrap(v) if k == 'artifacts' else v
                                      for k, v in value.items()})
    if isinstance(value, list):
      return [wrap(v) for v in value]
    return value

  python = re.sub(r'!(?!=)', ' not ', expression.replace('&&', ' and ').replace('||', ' or '))
  scope = {'inputs': types.SimpleNamespace(
      artifacts={k: wrap(v) for k, v in inputs.get('artifacts', {}).items()},
      parameter_values=inputs.get('parameterValues', {}))}
  return bool(eval(python, {'__builtins__': {}}, scope))  # pylint: disable=eval-used


class LocalRun:
  """One run of a compiled pipeline spec; `run()` returns the task states and outputs."""

  def __init__(self, spec: Dict[str, Any], work_dir: str, *,
               pipeline_root: Optional[str] = None, python: str = sys.executable,
               image_path: str = PROJECT_DIR, parameters: Optional[Dict[str, Any]] = None,
               platform: str = 'vertex', run_id: Optional[str] = None,
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
    self.log = log
    self.parameters = self._pipeline_parameters(runtime, parameters or {})
    self.states: Dict[str, str] = {}
    self.outputs: Dict[str, Dict[str, List[Dict[str, Any]]]] = {}
    self.output_parameters: Dict[str, Dict[str, Any]] = {}
    self.errors: Dict[str, str] = {}
    self.not_run: List[str] = []
    self._artifact_count = 0

  def _pipeline_parameters(self, runtime, overrides) -> Dict[str, Any]:
    values = {}
    for name, definition in self.spec['root'].get('inputDefinitions', {}).get(
        'parameters', {}).items():
      if 'defaultValue' in definition:
        values[name] = definition['defaultValue']
    values.update(runtime.get('parameterValues', {}))
    values.update(runtime.get('parameters', {}))
    values.update(overrides)
    return values

  # --- the DAG -------------------------------------------------------------------

  def run(self) -> Dict[str, Any]:
    os.makedirs(self.work_dir, exist_ok=True)
    self.log(f'Run {self.run_id}: artifacts under {self.run_root}, logs under '
             f'{os.path.join(self.work_dir, self.run_id)}')
    self._run_dag(self.spec['root']['dag'])
    return {
        'tasks': {name: {'state': state, 'outputs': {
            key: [{'uri': a['uri'], 'metadata': a.get('metadata', {})} for a in listed]
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

  def _new_artifact_name(self) -> str:
    self._artifact_count += 1
    return (f'projects/local/locations/local/metadataStores/default/artifacts/'
            f'{self.run_id}-{self._artifact_count}')

  def _resolve_parameter(self, name: str, spec: Dict[str, Any]) -> Any:
    if 'runtimeValue' in spec:
      return spec['runtimeValue']['constant']
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
        parameters[name] = definition['defaultValue']  # as the launcher adds defaults
    artifacts = {}
    for name, spec in task.get('inputs', {}).get('artifacts', {}).items():
      if 'taskOutputArtifact' not in spec:
        raise SpecError(f'input artifact {name!r}: only upstream task outputs are '
                        f'supported, got {sorted(spec)}')
      source = spec['taskOutputArtifact']
      artifacts[name] = {'artifacts': copy.deepcopy(
          self.outputs[source['producerTask']][source['outputArtifactKey']])}
    return {'parameterValues': parameters, 'artifacts': artifacts}

  def _run_task(self, name: str, task: Dict[str, Any]) -> str:
    component = self._component(task)
    started = time.time()
    try:
      if 'dag' in component:
        state = SUCCEEDED if self._run_dag(component['dag']) else FAILED
      else:
        inputs = self._inputs(task, component)
        condition = task.get('triggerPolicy', {}).get('condition')
        if condition and not _cel(condition, inputs):
          self.not_run.append(name)
          self.log(f'{name}: condition {condition} is false, not run')
          return 'SKIPPED'
        executor = self.spec['deploymentSpec']['executors'][component['executorLabel']]
        if 'importer' in executor:
          self._import(name, component, executor['importer'], inputs)
        elif 'container' in executor:
          self._execute(name, component, executor['container'], inputs)
        else:
          raise SpecError(f'{name}: {sorted(executor)} executors need an ML Metadata '
                          f'store and cannot run here')
        state = SUCCEEDED
    except Exception as e:  # pylint: disable=broad-except
      self.errors[name] = str(e)
      self.log(f'{name}: FAILED: {e}')
      state = FAILED
    self.states[name] = state
    self.log(f'{name}: {state} in {time.time() - started:.1f} s')
    return state

  def _import(self, name, component, importer, inputs) -> None:
    """An importer: one artifact at `artifactUri`, typed by `typeSchema`."""
    uri = importer['artifactUri']
    if 'constant' in uri:
      uri = uri['constant']
    elif 'runtimeParameter' in uri:
      uri = inputs['parameterValues'][uri['runtimeParameter']]
    [key] = component['outputDefinitions']['artifacts']
    self.outputs[name] = {key: [{
        'name': self._new_artifact_name(), 'type': importer['typeSchema'], 'uri': uri,
        'metadata': dict(importer.get('metadata', {}))}]}

  def _executor_input(self, name, component, inputs) -> Dict[str, Any]:
    task_root = f'{self.run_root}/{name}'
    outputs = component.get('outputDefinitions', {})
    return {
        'inputs': inputs,
        'outputs': {
            'artifacts': {key: {'artifacts': [{
                'name': self._new_artifact_name(), 'type': definition['artifactType'],
                'uri': f'{task_root}/{key}', 'metadata': dict(definition.get('metadata', {}))}]}
                          for key, definition in outputs.get('artifacts', {}).items()},
            'parameters': {key: {'outputFile': f'{task_root}/parameters/{key}'}
                           for key in outputs.get('parameters', {})},
            'outputFile': f'{task_root}/executor_output.json',
        },
    }

  def _command(self, words: List[str]) -> List[str]:
    if words and words[0] in ('python', 'python3'):
      return [self.python, *words[1:]]
    return words

  def _start(self, name: str, step: str, words: List[str], env: Dict[str, str]) -> None:
    log_path = os.path.join(self.work_dir, self.run_id, f'{name}.log')
    with open(log_path, 'a', encoding='utf-8') as log:
      log.write(f'--- {step}: {" ".join(words[:3])} ...\n')
      log.flush()
      done = subprocess.run(words, stdout=log, stderr=subprocess.STDOUT, env=env,
                            cwd=self.image_path, check=False)
    if done.returncode:
      with open(log_path, encoding='utf-8', errors='replace') as log:
        tail = log.read()[-3000:]
      raise RuntimeError(f'{step} exited with {done.returncode}; log: {log_path}\n{tail}')

  def _execute(self, name, component, container, inputs) -> None:
    executor_input = self._executor_input(name, component, inputs)
    os.makedirs(os.path.join(self.work_dir, self.run_id), exist_ok=True)
    with open(os.path.join(self.work_dir, self.run_id, f'{name}.executor_input.json'), 'w',
              encoding='utf-8') as f:
      json.dump(executor_input, f, indent=2)
    outputs = executor_input['outputs']
    for listed in outputs['artifacts'].values():  # the launcher makes the parent folders
      parent = os.path.dirname(local_path(listed['artifacts'][0]['uri']))
      if '://' not in parent:
        os.makedirs(parent, exist_ok=True)
    for param in outputs['parameters'].values():
      os.makedirs(os.path.dirname(param['outputFile']), exist_ok=True)
    env = dict(os.environ, PYTHONPATH=self.image_path)
    env.update({e['name']: e['value'] for e in container.get('env', [])})
    placeholders = _placeholders(executor_input)
    hook = container.get('lifecycle', {}).get('preCacheCheck')
    if hook and self.platform == 'vertex':
      self._start(name, 'preCacheCheck', self._command(
          _fill(hook.get('command', []) + hook.get('args', []), placeholders)), env)
    self._start(name, 'container', self._command(
        _fill(container.get('command', []) + container.get('args', []), placeholders)), env)
    self._collect(name, executor_input)

  def _collect(self, name: str, executor_input: Dict[str, Any]) -> None:
    """Merges the executor output into the task's outputs, as the launcher does."""
    outputs = executor_input['outputs']
    executor_output = {}
    if os.path.exists(outputs['outputFile']):
      with open(outputs['outputFile'], encoding='utf-8') as f:
        executor_output = json.load(f)
    artifacts = {}
    for key, listed in outputs['artifacts'].items():
      artifact = listed['artifacts'][0]
      written = executor_output.get('artifacts', {}).get(key, {}).get('artifacts', [])
      if written:
        if written[0].get('uri'):
          artifact['uri'] = written[0]['uri']
        artifact['metadata'] = {**artifact.get('metadata', {}), **written[0].get('metadata', {})}
      artifacts[key] = [artifact]
    self.outputs[name] = artifacts
    values = dict(executor_output.get('parameterValues', {}))
    for key, param in outputs['parameters'].items():
      if key not in values:
        with open(param['outputFile'], encoding='utf-8') as f:
          values[key] = f.read()
    self.output_parameters[name] = values


def _parameter(text: str):
  name, _, value = text.partition('=')
  if not name or not _:
    raise argparse.ArgumentTypeError(f'expected NAME=VALUE, got {text!r}')
  try:
    return name, json.loads(value)
  except json.JSONDecodeError:
    return name, value


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('spec', help='pipeline spec compiled by KubeflowV2DagRunner (.json/.yaml)')
  parser.add_argument('--work', required=True, help='folder for task logs and inputs')
  parser.add_argument('--pipeline-root',
                      help="where artifacts go (default: the spec's defaultPipelineRoot)")
  parser.add_argument('--python', default=sys.executable,
                      help="the interpreter that plays the image's `python`")
  parser.add_argument('--image-path', default=PROJECT_DIR,
                      help="the image's WORKDIR and PYTHONPATH (default: this checkout)")
  parser.add_argument('--param', action='append', type=_parameter, default=[],
                      metavar='NAME=VALUE', help='a pipeline parameter (JSON or text)')
  parser.add_argument('--platform', choices=('vertex', 'kfp'), default='vertex',
                      help='vertex runs preCacheCheck hooks; kfp (KFP 2.x) does not')
  parser.add_argument('--run-id')
  args = parser.parse_args(argv)
  spec = load_spec(args.spec)
  run = LocalRun(spec, args.work, pipeline_root=args.pipeline_root, python=args.python,
                 image_path=args.image_path, parameters=dict(args.param),
                 platform=args.platform, run_id=args.run_id)
  result = run.run()
  print(json.dumps(result, sort_keys=True))
  return 1 if any(t['state'] == FAILED for t in result['tasks'].values()) else 0


if __name__ == '__main__':
  sys.exit(main())
