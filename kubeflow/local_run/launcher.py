"""What the KFP v2 launcher does for one container task: the ExecutorInput, the
placeholders in the command, the processes, and the executor output read back
(backend/src/v2/component/launcher_v2.go)."""
from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Dict, List

from kubeflow.local_run import spec as spec_lib

EXECUTOR_INPUT = '{{$}}'


def local_path(uri: str) -> str:
  """Where a container sees `uri`: as the launcher mounts buckets (gs://b/x -> /gcs/b/x);
  a local path is itself."""
  for scheme, mount in (('gs://', '/gcs/'), ('s3://', '/s3/'), ('minio://', '/minio/')):
    if uri.startswith(scheme):
      return mount + uri[len(scheme):]
  return uri


def runtime_artifact(artifact: Dict[str, Any]) -> Dict[str, Any]:
  """An artifact as an ExecutorInput RuntimeArtifact."""
  return {key: artifact[key] for key in ('name', 'type', 'uri', 'metadata') if key in artifact}


def executor_input(inputs: Dict[str, Any], outputs: Dict[str, List[Dict[str, Any]]],
                   output_parameters: List[str], task_root: str, *,
                   typed_parameters: bool,
                   declared: Dict[str, Any]) -> Dict[str, Any]:
  """The ExecutorInput of a task: `inputs` is `{'parameterValues': {name: plain value},
  'artifacts': {name: [artifact]}}`; with `typed_parameters` (schema 2.0) parameters go
  as typed `parameters`, by their declared types (`declared`: the component's
  inputDefinitions parameters)."""
  values = inputs['parameterValues']
  if typed_parameters:
    parameters = {'parameters': {
        name: spec_lib.typed(value, declared.get(name, {}).get('type', ''))
        for name, value in values.items()}}
  else:
    parameters = {'parameterValues': dict(values)}
  return {
      'inputs': {**parameters, 'artifacts': {
          name: {'artifacts': [runtime_artifact(a) for a in listed]}
          for name, listed in inputs['artifacts'].items()}},
      'outputs': {
          'artifacts': {key: {'artifacts': [runtime_artifact(a) for a in listed]}
                        for key, listed in outputs.items()},
          'parameters': {key: {'outputFile': f'{task_root}/parameters/{key}'}
                         for key in output_parameters},
          'outputFile': f'{task_root}/executor_output.json',
      },
  }


def _text(value: Any) -> str:
  if isinstance(value, bool):
    return str(value).lower()
  if isinstance(value, float) and value.is_integer():
    return str(int(value))
  if isinstance(value, (dict, list)):
    return json.dumps(value)
  return str(value)


def placeholders(executor_input: Dict[str, Any],
                 parameter_values: Dict[str, Any]) -> Dict[str, str]:
  """The launcher's placeholder values."""
  values = {EXECUTOR_INPUT: json.dumps(executor_input)}
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
  for name, value in parameter_values.items():
    values[f"{{{{$.inputs.parameters['{name}']}}}}"] = _text(value)
  for name, param in outputs.get('parameters', {}).items():
    values[f"{{{{$.outputs.parameters['{name}'].output_file}}}}"] = param['outputFile']
  return values


def fill(words: List[str], values: Dict[str, str]) -> List[str]:
  filled = []
  for word in words:
    for key, value in values.items():
      word = word.replace(key, value)
    filled.append(word)
  return filled


def prepare_folders(executor_input: Dict[str, Any]) -> None:
  """The folders the launcher makes before the container starts."""
  outputs = executor_input['outputs']
  for listed in outputs['artifacts'].values():
    parent = os.path.dirname(local_path(listed['artifacts'][0]['uri']))
    if '://' not in parent:
      os.makedirs(parent, exist_ok=True)
  for param in outputs['parameters'].values():
    os.makedirs(os.path.dirname(param['outputFile']), exist_ok=True)
  os.makedirs(os.path.dirname(outputs['outputFile']), exist_ok=True)


def start(words: List[str], *, step: str, log_path: str, env: Dict[str, str],
          cwd: str) -> None:
  """Runs one process of a task, its output appended to the task's log."""
  with open(log_path, 'a', encoding='utf-8') as log:
    log.write(f'--- {step}: {" ".join(words[:3])} ...\n')
    log.flush()
    done = subprocess.run(words, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                          check=False)
  if done.returncode:
    with open(log_path, encoding='utf-8', errors='replace') as log:
      tail = log.read()[-3000:]
    raise RuntimeError(f'{step} exited with {done.returncode}; log: {log_path}\n{tail}')


def read_executor_output(executor_input: Dict[str, Any]) -> Dict[str, Any]:
  """The ExecutorOutput file the task wrote (empty if none), parameters as plain values
  under `parameterValues` whichever form (2.0 `parameters`, 2.1 `parameterValues`)."""
  path = executor_input['outputs']['outputFile']
  if not os.path.exists(path):
    return {'artifacts': {}, 'parameterValues': {}}
  with open(path, encoding='utf-8') as f:
    written = json.load(f)
  values = {k: spec_lib.plain(v) for k, v in written.get('parameters', {}).items()}
  values.update(written.get('parameterValues', {}))
  return {'artifacts': written.get('artifacts', {}), 'parameterValues': values}


def merge_artifacts(outputs: Dict[str, List[Dict[str, Any]]],
                    written: Dict[str, Any]) -> None:
  """Carries an executor output's artifacts (URI, metadata) onto `outputs`, as the
  launcher does before publishing them (and, for a driver hook's output, before the
  executor runs)."""
  for key, listed in outputs.items():
    artifacts = written.get(key, {}).get('artifacts', [])
    if artifacts and listed:
      if artifacts[0].get('uri'):
        listed[0]['uri'] = artifacts[0]['uri']
      listed[0]['metadata'] = {**listed[0].get('metadata', {}),
                               **artifacts[0].get('metadata', {})}


def output_parameter_values(executor_input: Dict[str, Any],
                            written: Dict[str, Any]) -> Dict[str, Any]:
  """Output parameters: from the executor output, else from their output files."""
  values = dict(written['parameterValues'])
  for key, param in executor_input['outputs']['parameters'].items():
    if key not in values:
      with open(param['outputFile'], encoding='utf-8') as f:
        values[key] = f.read()
  return values
