"""The `columns` option: which header columns of a CSV manifest hold the image, its
label(s), its split (and a segmentation CSV's mask), where the names the reader knows
(`automl_csv`'s spellings) are missing, wrong or ambiguous.

Given as text, `ROLE=COLUMN` pairs separated by commas, as the command line takes it:

    --columns 'image=filepaths,label=labels,split=data set'
    --columns image=Path,label=ClassId,split="data set"

A column name is everything after `=` up to the next comma, spaces around it stripped,
so names with spaces need no quotes beyond the shell's own; a name that holds a comma
(or keeps spaces at its ends) is quoted, `"..."` or `'...'`, right after the `=`. Or as
a JSON object (text starting with `{`), a dict `{'image': 'Path', 'label': 'ClassId'}`
(`convert()`, the component), or (role, column) pairs.

Roles: `image`, `label` (repeatable: a multi-label CSV's columns, a row's labels their
union), `split`, `mask` (the segmentation CSV). `label=` or `split=` with no column
reads none: rows unlabelled, or hash split, the column the reader would have guessed
then kept as a feature. A role not named is still found from the header's names.
Column names are matched as written (spaces around them aside), else without case,
spaces, underscores, dashes and dots where that matches one column alone.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from tfrecorder_component.errors import UsageError, closest

ROLES = ('image', 'label', 'split', 'mask')
# (role, header column) pairs: the image, the labels, the split, the mask, in that order;
# an empty column: none (label and split only).
Columns = Tuple[Tuple[str, str], ...]


def parse_columns(value: Any) -> Columns:
  """The `columns` option as (role, column) pairs, checked; raises UsageError (a
  ValueError) for a value it cannot be.

  Args:
    value: None, '' or an empty dict or tuple (no column named); text (`role=column`
      pairs separated by commas, or a JSON object, see the module); a mapping {role:
      column, a list of columns (label), or None / '' for none}; or (role, column)
      pairs, as this returns them.
  """
  if value is None or (not isinstance(value, str) and not value):
    return ()
  if isinstance(value, str):
    text = value.strip()
    if not text:
      return ()
    if text.startswith('{'):
      try:
        value = json.loads(text)
      except json.JSONDecodeError as e:
        raise UsageError(f'columns: not a JSON object ({e}): {text!r}') from None
      if not isinstance(value, dict):
        raise UsageError(f'columns: expected a JSON object, got {text!r}')
    else:
      value = _text_pairs(text)
  if isinstance(value, Mapping):
    pairs: List[Tuple[Any, Any]] = []
    for role, names in value.items():
      names = names if isinstance(names, (list, tuple)) else [names]
      pairs.extend((role, name) for name in names or [None])
  else:
    try:
      pairs = [tuple(p) for p in value]
    except TypeError:
      raise UsageError(f'columns: expected "role=column,..." text, a dict or (role, '
                       f'column) pairs, got {value!r}') from None
  return _checked(pairs)


def _checked(pairs) -> Columns:
  found: Dict[str, List[str]] = {}
  for pair in pairs:
    if len(pair) != 2 or not isinstance(pair[0], str) or not isinstance(
        pair[1], (str, type(None))):
      raise UsageError(f'columns: expected (role, column name) pairs, got {pair!r}')
    role, name = pair[0].strip().lower(), (pair[1] or '').strip()
    if role not in ROLES:
      close = closest(role, ROLES)
      raise UsageError(f'columns: unknown role {pair[0]!r}' +
                       (f'; did you mean {close!r}?' if close else '') +
                       f' (roles: {", ".join(ROLES)})')
    found.setdefault(role, []).append(name)
  for role, names in found.items():
    if role != 'label' and len(names) > 1:
      raise UsageError(f'columns: {role} is named {len(names)} times ({_listed(names)}); '
                       f'a CSV has one {role} column')
    if role in ('image', 'mask') and not names[0]:
      raise UsageError(f'columns: {role}= names no column; name the {role} column, or '
                       f'leave {role} out to find it from the header')
    if role == 'label' and '' in names and len(names) > 1:
      raise UsageError('columns: label= (no label column) and label columns '
                       f'({_listed([n for n in names if n])}) at once')
  named = [(role, name) for role in ROLES for name in found.get(role, ()) if name]
  seen: Dict[str, str] = {}
  for role, name in named:
    if name in seen:
      raise UsageError(f'columns: column {name!r} is named as {seen[name]} and as {role}; '
                       'a column has one role')
    seen[name] = role
  return tuple((role, name) for role in ROLES for name in found.get(role, ()))


def _listed(names) -> str:
  return ', '.join(repr(n) for n in names)


def _token(text: str, at: int, stops: str) -> Tuple[str, int]:
  """The role or column name starting at `at` and where it ends: quoted (`"..."` or
  `'...'`, quotes opened at its start) or up to the next of `stops`, spaces stripped."""
  while at < len(text) and text[at] in ' \t':
    at += 1
  if at < len(text) and text[at] in '"\'':
    end = text.find(text[at], at + 1)
    if end < 0:
      raise UsageError(f'columns: the quote at character {at + 1} is not closed: {text!r}')
    token, after = text[at + 1:end], end + 1
    while after < len(text) and text[after] in ' \t':
      after += 1
    if after < len(text) and text[after] not in stops:
      raise UsageError(f'columns: text after the quoted name {token!r}: {text!r} (a comma '
                       'goes between ROLE=COLUMN pairs)')
    return token, after
  end = at
  while end < len(text) and text[end] not in stops:
    end += 1
  return text[at:end].strip(), end


def _text_pairs(text: str) -> List[Tuple[str, str]]:
  """`image=Path,label=ClassId,split=data set` as [('image', 'Path'), ...]."""
  pairs, at = [], 0
  while at < len(text):
    role, at = _token(text, at, '=,')
    if at >= len(text) and not role:
      break  # a trailing comma
    if at >= len(text) or text[at] != '=':
      raise UsageError(f'columns: expected ROLE=COLUMN pairs separated by commas (roles: '
                       f'{", ".join(ROLES)}), e.g. "image=filepaths,label=labels,split=data '
                       f'set"; got {role!r} in {text!r}')
    name, at = _token(text, at + 1, ',')
    pairs.append((role, name))
    at += 1  # the comma
  return pairs


def named(columns: Columns, role: str) -> Optional[List[str]]:
  """The columns `columns` names for `role`: [] for none (`label=`, `split=`), None
  where the role is not named (the reader finds it from the header).

  Args:
    columns: the option, as `parse_columns` gives it.
    role: one of ROLES.
  """
  names = [name for r, name in columns if r == role]
  return [n for n in names if n] if names else None


def describe(columns: Columns) -> Dict[str, Any]:
  """The option as a JSON object: {role: column, a list of label columns, or None for
  none}; `parse_columns` reads it back.

  Args:
    columns: the option, as `parse_columns` gives it.
  """
  out: Dict[str, Any] = {}
  for role in ROLES:
    names = named(columns, role)
    if names is not None:
      out[role] = (None if not names else names[0] if len(names) == 1 else names)
  return out


def to_json(value: Any) -> Optional[str]:
  """The option as the component's execution property keeps it: its `describe` as JSON
  (keys sorted), or None where it names nothing.

  Args:
    value: the option in any form `parse_columns` takes.
  """
  columns = parse_columns(value)
  return json.dumps(describe(columns), sort_keys=True) if columns else None


def as_text(columns: Columns) -> str:
  """The option as `role=column` text (a name with a comma or quote, or spaces at its
  ends, quoted), for messages.

  Args:
    columns: the option, as `parse_columns` gives it.
  """
  def shown(name: str) -> str:
    if ',' in name or name != name.strip() or name[:1] in '"\'':
      quote = "'" if '"' in name else '"'
      return f'{quote}{name}{quote}'
    return name
  return ','.join(f'{role}={shown(name)}' for role, name in columns)
