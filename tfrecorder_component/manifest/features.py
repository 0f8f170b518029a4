"""Extra manifest columns (CSV) and fields (JSON) as typed record features: declared
types checked, undeclared ones inferred per file, values converted."""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.rows import FeatureValue, ManifestRow, ParsedItem
from tfrecorder_component.feature_keys import CLASS_SYNSET, RESERVED_PREFIX

FEATURE_TYPES = ('int', 'float', 'string')
RESERVED_FEATURE_PREFIX = RESERVED_PREFIX
_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1
_INT64_DIGITS = 19  # more digits than this is out of int64's range: not even converted
FLOAT32_MAX = 3.4028234663852886e38  # a finite float beyond it would be written as inf
_INT = re.compile(r'[+-]?\d+\Z', re.ASCII)
_DECIMAL = re.compile(r'[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z', re.ASCII)
_NUMBER = re.compile(r'[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|nan|inf|infinity)\Z',
                     re.ASCII | re.IGNORECASE)


def _past_int64(digits: str) -> bool:
  """Whether an integer's text has more digits than int64 holds (checked before
  `int()`, which refuses texts of over 4,300 digits)."""
  return len(digits.lstrip('+-').lstrip('0')) > _INT64_DIGITS


def parse_number(text: str) -> Optional[float]:
  """The number written in `text` ('0.5', '-1e-3', 'nan'), or None when it is not one.

  Args:
    text: a CSV field or JSON string; spaces around it are ignored. 'nan', 'inf' and
      'infinity' (any case, signed) are numbers.
  """
  text = text.strip()
  return float(text) if _NUMBER.match(text) else None


def as_number(value: object) -> Optional[float]:
  """A JSON coordinate (a number or a numeric string) as a float, or None.

  Args:
    value: a decoded JSON value. A bool, null, list or object, a string that is no
      number (`parse_number`) and an int past a float's range give None.
  """
  if isinstance(value, str):
    return parse_number(value)
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    return None
  try:
    return float(value)
  except OverflowError:
    return None


def check_feature_name(path: str, name: str) -> None:
  """Raises ManifestError for a column name that would clash with the record's own features.

  Args:
    path: what the error names as the name's source: the manifest's path, or
      'feature_types'.
    name: the column's (or JSON field's, or declared feature's) name, which becomes the
      feature's key; it may not start with 'image/' (`image/class/synset` is named:
      `class_synset` writes it).
  """
  if name == CLASS_SYNSET:
    raise ManifestError(f'{path}: column {name!r} would become a feature named {name!r}, '
                        'which is reserved for the records\' labels: leave the column out '
                        'and convert with --class-synset (class_synset=True), which writes '
                        'each record\'s labels under that key, or rename the column')
  if name.startswith(RESERVED_FEATURE_PREFIX):
    raise ManifestError(f'{path}: column {name!r} would become a feature named '
                        f'{name!r}; names starting with {RESERVED_FEATURE_PREFIX!r} are '
                        'reserved for the image features, rename the column')


def check_feature_types(feature_types: Optional[Mapping[str, str]]) -> Dict[str, str]:
  """Validates declared feature types ({name: 'int' | 'float' | 'string'}).

  Returns them as a new dict; raises ManifestError for an unknown type or a reserved
  name (`check_feature_name`).

  Args:
    feature_types: {feature name: 'int' | 'float' | 'string'}; None: none declared.
  """
  declared = dict(feature_types or {})
  for name, type_ in declared.items():
    if type_ not in FEATURE_TYPES:
      raise ManifestError(f'feature_types[{name!r}] is {type_!r}; use one of {FEATURE_TYPES}')
    check_feature_name('feature_types', name)
  return declared


def _format_value(value: Union[FeatureValue, bool]) -> str:
  if isinstance(value, str):
    return value
  return json.dumps(value)  # true/false, 3, 0.5


def convert_feature(value: Union[FeatureValue, bool], type_: str) -> FeatureValue:
  """Converts a CSV text or JSON value to `type_`; raises ValueError when it does not fit.

  Args:
    value: a CSV field's text (spaces around a number ignored), or a JSON value (a
      number, a string or a bool).
    type_: 'string' (JSON non-strings as JSON writes them: true, 3, 0.5), 'int' (an
      integer in int64's range; a whole float such as 3.0 counts) or 'float' (finite
      values within float32's range, nan and inf kept).
  """
  if type_ == 'string':
    return _format_value(value)
  if isinstance(value, str):
    text = value.strip()
    if type_ == 'int' and _INT.match(text):
      if _past_int64(text):
        raise ValueError(value)
      value = int(text)
    elif _NUMBER.match(text):
      value = float(text)
    else:
      raise ValueError(value)
  if type_ == 'float':
    number = float(value)
    if math.isfinite(number) and abs(number) > FLOAT32_MAX:
      raise ValueError(value)  # float32 would make it inf, a value the input did not give
    return number
  if isinstance(value, float):
    if not math.isfinite(value) or value != int(value):
      raise ValueError(value)
    value = int(value)
  if not _INT64_MIN <= value <= _INT64_MAX:
    raise ValueError(value)
  return int(value)


class _TypeInference:
  """One file's extra-column types, inferred from its values one row at a time.

  From CSV text: int if every value is an integer (in int64 range), else float if every
  value is a number, else string. From JSON values, which keep their type: int if every
  value is an integer, else float if every value is a number, else string.
  """

  def __init__(self, from_text: bool):
    self._from_text = from_text
    self._seen: Dict[str, List[bool]] = {}  # name -> [all int, any int out of range, all number]

  def observe(self, features: Tuple[Tuple[str, Union[FeatureValue, bool]], ...]) -> None:
    for name, value in features:
      state = self._seen.setdefault(name, [True, False, True])
      if self._from_text:
        text = value.strip() if isinstance(value, str) else None
        as_int = None
        if text is not None and _INT.match(text):
          as_int = _INT64_MAX + 1 if _past_int64(text) else int(text)
        number = text is not None and bool(_DECIMAL.match(text))
      else:
        as_int = int(value) if isinstance(value, int) else None
        number = isinstance(value, (int, float))
      state[0] = state[0] and as_int is not None
      state[1] = state[1] or (as_int is not None and not _INT64_MIN <= as_int <= _INT64_MAX)
      state[2] = state[2] and number

  def types(self, declared: Mapping[str, str]) -> Dict[str, str]:
    return {name: declared.get(name) or (
        'string' if out_of_range else 'int' if all_int else 'float' if number else 'string')
            for name, (all_int, out_of_range, number) in self._seen.items()}


def typed_items(path: str, parse: Callable[[], Iterable[ParsedItem]],
                feature_types: Mapping[str, str], *, from_text: bool,
                what: str = 'column') -> Iterator[ParsedItem]:
  """Gives one file's extra columns their types: declared, else one inferred per file.

  `parse()` returns a fresh iterator of the file's items with raw feature values. Items
  stream through until the first row with features; from there the file's values are
  only observed, and a second `parse()` yields the rest typed. So no file is ever held
  whole, and a file without extra columns is parsed once. `from_text`: values are CSV
  text (see `_TypeInference`). A value that does not convert to a declared type makes
  the row a `bad_feature` error.

  Args:
    path: the manifest's path, named in the `bad_feature` RowErrors.
    parse: a function that returns a fresh iterator of the file's items, features
      untyped; called once, or twice when a row has features.
    feature_types: declared types ({name: 'int' | 'float' | 'string'}, as
      `check_feature_types` checked them); a feature not declared is inferred.
    from_text: True when feature values are CSV text, False when they are JSON values
      that keep their own type.
    what: what the errors call a feature: 'column' (CSV) or 'field' (JSON).
  """
  inference = _TypeInference(from_text)
  passed = 0
  deferred = False
  for item in parse():
    if isinstance(item, ManifestRow) and item.features:
      deferred = True
      inference.observe(item.features)
    elif not deferred:
      passed += 1
      yield item
  if not deferred:
    return
  types = inference.types(feature_types)
  for item in itertools.islice(parse(), passed, None):
    yield (_typed(path, item, types, what, feature_types) if isinstance(item, ManifestRow)
           else item)


def _typed(path: str, item: ManifestRow, types: Mapping[str, str], what: str,
           declared: Mapping[str, str]) -> ParsedItem:
  features, bad = [], []
  for name, value in item.features:
    try:
      features.append((name, convert_feature(value, types[name])))
    except (ValueError, OverflowError):
      why = ('declared in feature_types' if name in declared else
             "inferred from the file's other values")
      bad.append(f'{what} {name!r}: {_format_value(value)!r} is not a valid {types[name]} '
                 f'({why})')
  if bad:
    return RowError(
        'bad_feature', '; '.join(bad) + f"; fix the value or declare the {what} as 'string'",
        source=path, row=item.row, uri=item.image_uri)
  return dataclasses.replace(item, features=tuple(sorted(features)))
