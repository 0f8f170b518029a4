"""How each option (`option_table.OPTIONS`) travels as one of ImageExampleGen's
execution properties: written by the component's constructor, read back by its
executor. A property is an int, a float or a string, as KFP and ML Metadata keep them:
flags are 0 or 1, maps and transforms JSON, lists comma-separated."""
import json
import numbers
from typing import Any, Dict, Mapping

from tfrecorder_component.images import transform as transform_lib
from tfrecorder_component.manifest.class_map import describe as describe_class_map
from tfrecorder_component.manifest.class_map import parse_class_map
from tfrecorder_component.manifest.columns import to_json as columns_json
from tfrecorder_component.option_table import COMPONENT, Option, taken_by


def to_property(option: Option, value: Any) -> Any:
  """`value` (as the constructor takes it) as the execution property of `option`;
  None for an optional one left unset.

  Args:
    option: The option's declaration (`option_table.OPTIONS`); its `exec_kind` and
      `exec_type` say how the value is written.
    value: The option's value as the component's constructor takes it: a flag's bool,
      a dict (or, for `class_map`, what `parse_class_map` takes; for `columns`, what
      `columns.parse_columns` takes), an ImageTransform or
      its dict, a list or one name, a number or a string. None, or an empty map or
      list, is unset.
  """
  kind = option.exec_kind
  if kind == 'flag':
    return int(bool(value))
  if value is None or (kind in ('json', 'class_map', 'columns', 'list') and not value):
    return None
  if kind == 'columns':
    return columns_json(value)
  if kind == 'json':
    return json.dumps(value, sort_keys=True)
  if kind == 'class_map':
    return json.dumps(describe_class_map(parse_class_map(value)), sort_keys=True)
  if kind == 'transform':
    if isinstance(value, dict):
      value = transform_lib.ImageTransform.from_dict(value)
    return value.to_json()
  if kind == 'list':
    return ','.join([value] if isinstance(value, str) else value)
  if option.exec_type is float and isinstance(value, numbers.Real) and not isinstance(
      value, bool):
    return float(value)
  if option.exec_type is int and isinstance(value, numbers.Integral) and not isinstance(
      value, bool):
    return int(value)  # numpy's too
  return value  # as given: the spec's type check names a value of another type


def from_property(option: Option, prop: Any) -> Any:
  """The value an execution property of `option` stands for (the option's default when
  a compiled pipeline lacks it), as `convert()` would take it.

  Args:
    option: The option's declaration (`option_table.OPTIONS`); its `exec_kind` and
      `exec_type` say how the property is read.
    prop: The execution property as stored: an int (0 or 1 for a flag), a float, or a
      string (JSON, comma-separated names); None or '' stand for the default.
  """
  kind = option.exec_kind
  if prop is None or prop == '':  # unset, as KFP passes an optional string left out
    return option.default
  if kind == 'flag':
    return bool(int(prop))
  if kind in ('json', 'class_map', 'columns'):
    return json.loads(prop)
  if kind == 'transform':
    return transform_lib.ImageTransform.from_json(prop)
  if kind == 'list':
    return tuple(n for n in prop.split(',') if n)
  return option.exec_type(prop)


def to_properties(values: Mapping[str, Any]) -> Dict[str, Any]:
  """{execution property: value} of the component's options given as `values` (by
  option name; an option missing from it takes its default).

  Args:
    values: {option name: value} as the component's constructor takes them; names of
      options the component does not take are ignored.
  """
  return {o.name: to_property(o, values.get(o.name, o.default)) for o in taken_by(COMPONENT)}


def from_properties(exec_properties: Mapping[str, Any]) -> Dict[str, Any]:
  """{option name: value} of the component's options, read from `exec_properties`.

  Args:
    exec_properties: The execution's properties, as `to_properties` wrote them; an
      option missing (a pipeline compiled before it) takes its default.
  """
  return {o.name: from_property(o, exec_properties.get(o.name)) for o in taken_by(COMPONENT)}
