"""Reading a compiled KFP pipeline spec: the file, its schema version, parameter values in
the forms of schema 2.0 (typed `Value`s) and 2.1 (JSON values), artifact type titles, and
the CEL conditions TFX compiles."""
from __future__ import annotations

import json
import re
import types
from typing import Any, Dict

_TYPED_KEYS = ('stringValue', 'intValue', 'doubleValue')


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


def typed_parameters(spec: Dict[str, Any]) -> bool:
  """Whether executors take schema 2.0's typed `parameters` rather than 2.1's
  `parameterValues` (KubeflowV2DagRunner's default compiles 2.0.0)."""
  return str(spec.get('schemaVersion', '2.1.0')).startswith('2.0')


def plain(value: Any) -> Any:
  """A parameter value as plain JSON: schema 2.0's `{"intValue": "6"}` is 6; a 2.1
  value is itself."""
  if isinstance(value, dict) and len(value) == 1:
    [(key, inner)] = value.items()
    if key == 'intValue':
      return int(inner)
    if key == 'doubleValue':
      return float(inner)
    if key == 'stringValue':
      return inner
  return value


def typed(value: Any, declared: str = '') -> Dict[str, Any]:
  """`value` as schema 2.0's typed Value, by the declared type (`INT`, `DOUBLE`,
  `STRING`) or, when undeclared (a driver hook's extra parameters), by its own."""
  if declared == 'INT' or (not declared and isinstance(value, (int, float))
                           and not isinstance(value, bool) and float(value).is_integer()):
    return {'intValue': str(int(value))}
  if declared == 'DOUBLE' or (not declared and isinstance(value, float)):
    return {'doubleValue': float(value)}
  if isinstance(value, (dict, list, bool)):
    return {'stringValue': json.dumps(value)}
  return {'stringValue': str(value)}


def runtime_value(spec: Dict[str, Any]) -> Any:
  """A task input's `runtimeValue`: 2.1's `constant`, 2.0's `constantValue`."""
  runtime = spec['runtimeValue']
  if 'constant' in runtime:
    return runtime['constant']
  if 'constantValue' in runtime:
    return plain(runtime['constantValue'])
  raise SpecError(f'unsupported runtimeValue {sorted(runtime)}')


def type_title(artifact_type: Dict[str, Any]) -> str:
  """The schema title of an `artifactType` (`schemaTitle`, or the `title` of an
  `instanceSchema`, as TFX's schema 2.0 specs give it)."""
  if 'schemaTitle' in artifact_type:
    return artifact_type['schemaTitle']
  match = re.search(r'^title:\s*(\S+)', artifact_type.get('instanceSchema', ''), re.M)
  return match.group(1) if match else 'system.Artifact'


def cel(expression: str, inputs: Dict[str, Any]) -> bool:
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
      artifacts={k: wrap({'artifacts': v} if isinstance(v, list) else v)
                 for k, v in inputs.get('artifacts', {}).items()},
      parameter_values=inputs.get('parameterValues', {}))}
  return bool(eval(python, {'__builtins__': {}}, scope))  # pylint: disable=eval-used
