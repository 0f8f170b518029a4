"""The label vocabulary that travels with the data: `labels.txt`, `label_map.pbtxt` and
`label_map.csv`, and where its ids come from.

Ids, in order of precedence:

1. A label map given to the run (`label_map`: a label_map.pbtxt, a label_map.csv, a
   labels.txt, or an earlier output / Examples artifact holding one; in a pipeline also the optional
   `label_map_examples` input a resolver fills with the latest Examples): its ids are
   kept. A label the map lacks fails its rows (`unknown_label`) unless new labels are
   appended (`append_new_labels`, always for the pipeline input): then it takes the
   next free id, and the run names it.
2. Ids the source defines: COCO category ids, a category `categories` declares and no
   annotation has included (its id is kept where it is free and not the background; it
   takes no new id). For detection and segmentation, whose ids start at 1 (the Object
   Detection API reserves 0 for the background), a source whose annotations number from
   0 has every id moved up by one.
3. Otherwise ids are assigned: the sorted labels (by number when every label is an
   integer, unless `label_order` is 'text'), 0-based for classification, 1-based for
   detection and segmentation, after any ids of 1 and 2.

Ids are fixed before any image is read and never renumbered: a label none of whose rows
became a record keeps its id (`labels_left_out` in the report; a declared category of no
annotation is also in `labels_declared_only`), so no other id moves.

label_map.pbtxt (StringIntLabelMap text format) holds the ids the records hold, and
label_map.csv the same as `id,name` lines (the CSV label map of Model Garden's
`TfExampleDecoderLabelMap`).
labels.txt holds one label per id from the task's first id up: line k is the label of id
`first + k`, and an empty line an id no label has (a given or COCO map with gaps), so
`tf.lookup.TextFileInitializer` maps line numbers to ids. Labels never hold line breaks
or control characters (the manifest readers refuse them, `bad_label`).

Length: the ids' one order of precedence, the three files that carry them and their
readers, which must agree.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import os
import re
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from tfrecorder_component.errors import UsageError
from tfrecorder_component.io import files
from tfrecorder_component.io import storage

LABELS_FILE = 'labels.txt'
LABEL_MAP_FILE = 'label_map.pbtxt'
# The same ids as `id,name` lines, the CSV that Model Garden's TfExampleDecoderLabelMap
# reads (`label_map=...csv`): no header, a name with a comma or a quote quoted.
LABEL_MAP_CSV_FILE = 'label_map.csv'
LABEL_FILES = (LABELS_FILE, LABEL_MAP_FILE, LABEL_MAP_CSV_FILE)


def vocabulary_order(labels: Iterable[str], order: str = 'auto') -> List[str]:
  """The labels in id order: by number when every label is an integer (`2` before
  `10`, as a digits data set means them), else sorted as text; or with `order` 'text'
  sorted as text whatever they are.

  Args:
    labels: The labels to order; one given twice is listed twice.
    order: 'auto' (the default), or 'text' (`10` before `2`: Python's `sorted`, as
      Keras's `image_dataset_from_directory` and TFDS's `ImageFolder` order class
      folders).
  """
  labels = list(labels)
  if order == 'auto' and labels and all(re.fullmatch(r'[+-]?\d+', l) for l in labels):
    return sorted(labels, key=lambda l: (int(l), l))
  return sorted(labels)


def first_label_id(task: str) -> int:
  """Class ids start at 0 for classification, at 1 for detection and segmentation (0 is
  the background).

  Args:
    task: The run's task, a `Task` value: 'classification', 'detection' or
      'segmentation'.
  """
  return 0 if task == 'classification' else 1


@dataclasses.dataclass(frozen=True)
class GivenLabelMap:
  """A label map given to a run (`read_given_label_map`): (label, id) pairs, or for a
  labels.txt (label, line index) pairs whose ids start at the task's first id.

  Attributes:
    source: Where the map was read from (a path or URI, or 'the label_map argument'),
      for messages.
    items: (label, id) pairs, or with `by_line` (label, line index) pairs, in the order
      given.
    by_line: Whether `items` hold line indexes (a labels.txt, or a list of labels)
      rather than ids.
  """
  source: str
  items: Tuple[Tuple[str, int], ...]
  by_line: bool = False

  def ids(self, first_id: int) -> Dict[str, int]:
    """{label: id}: the ids as given, or for `by_line` the line index plus `first_id`.

    Args:
      first_id: The task's first class id (`first_label_id`), which line 0 takes.
    """
    return {label: i + (first_id if self.by_line else 0) for label, i in self.items}


@dataclasses.dataclass(frozen=True)
class Vocabulary:
  """The run's {label: id} in id order, and how it came about.

  Attributes:
    ids: {label: id}, in id order.
    appended: Labels a given map lacked, given new ids (`append_new_labels`).
    unknown: Labels a closed map lacks: their rows fail (`unknown_label`).
    conflicts: One line each: source ids that could not be kept (a label with several,
      or an id another label holds), and declared classes left out.
    declared: Classes a source declares that no row holds (`assign_ids`' `declared`),
      kept in `ids`.
  """
  ids: Dict[str, int]
  appended: Tuple[str, ...] = ()
  unknown: Tuple[str, ...] = ()
  conflicts: Tuple[str, ...] = ()
  declared: Tuple[str, ...] = ()


def assign_ids(labels: Iterable[str], first_id: int, given: Optional[GivenLabelMap] = None,
               append_new_labels: bool = False,
               source_ids: Mapping[str, Iterable[int]] = (),
               declared: Mapping[str, int] = (), *,
               order: str = 'auto') -> Vocabulary:
  """The ids of a run whose rows hold `labels`, by the precedence in the module's
  docstring.

  Args:
    labels: The labels the run's rows hold; repeats are fine.
    first_id: The task's first class id (`first_label_id`): 0 or 1.
    given: The label map given to the run, whose ids are kept; None: none was given.
    append_new_labels: Whether labels `given` lacks take new ids (their source ids
      where free, else the next after the largest); otherwise they are `unknown`.
    source_ids: {label: the ids its source gives it} (COCO category ids). Where the
      lowest is below `first_id` (a source numbering from 0), all are moved up by the
      difference.
    declared: {class: its source id} of classes a source declares that no row holds
      (COCO categories of no annotation; any of `labels` is ignored). Each keeps its id
      (moved up with `source_ids`, never deciding the move), or the id a given map
      gives it; one whose id is below `first_id` (0, the background, for detection) or
      held by another label is left out and named in `conflicts`. A closed given map
      (`given` without `append_new_labels`) keeps only those it has. None takes a new
      id, so no id the rows need moves for them.
    order: The order of the labels that take new ids (`vocabulary_order`): 'auto' or
      'text'.
  """
  labels = set(labels)
  declared = {l: i for l, i in dict(declared).items() if l not in labels}
  ids: Dict[str, int] = given.ids(first_id) if given else {}
  new = [l for l in vocabulary_order(labels, order) if l not in ids]
  if given and not append_new_labels:
    return Vocabulary(dict(sorted(ids.items(), key=lambda item: item[1])), unknown=tuple(new),
                      declared=tuple(l for l in sorted(declared) if l in ids))
  taken = set(ids.values())
  conflicts = []
  source = {l: sorted(set(source_ids[l])) for l in new if l in source_ids}
  lowest = min((i[0] for i in source.values()), default=first_id)
  shift = max(0, first_id - lowest)  # a source numbering from 0, for a task from 1
  assigned = []
  for label in new:
    wanted = [i + shift for i in source.get(label, ())]
    if len(wanted) > 1:
      conflicts.append(f'{label!r} has several source ids ({", ".join(map(str, wanted))}); '
                       f'it takes {wanted[0]}')
    if wanted and wanted[0] not in taken:
      ids[label] = wanted[0]
      taken.add(wanted[0])
    else:
      if wanted:
        owner = next(l for l, i in ids.items() if i == wanted[0])
        conflicts.append(f'{label!r} cannot keep source id {wanted[0]}, which {owner!r} '
                         'holds; it takes a new id')
      assigned.append(label)
  kept = []
  for label, source_id in sorted(declared.items(), key=lambda item: (item[1], item[0])):
    wanted = source_id + shift
    if label in ids:  # the given map's id
      kept.append(label)
    elif wanted < first_id:
      conflicts.append(f'{label!r} (declared with id {source_id}, no annotation) is left out: '
                       f'id {wanted} is the background')
    elif wanted in taken:
      owner = next(l for l, i in ids.items() if i == wanted)
      conflicts.append(f'{label!r} (declared with id {source_id}, no annotation) is left out: '
                       f'{owner!r} holds id {wanted}')
    else:
      ids[label] = wanted
      taken.add(wanted)
      kept.append(label)
  start = max(taken, default=first_id - 1) + 1
  ids.update((label, i) for i, label in enumerate(assigned, start=start))
  ordered = dict(sorted(ids.items(), key=lambda item: item[1]))
  return Vocabulary(ordered, appended=tuple(new) if given else (),
                    conflicts=tuple(conflicts), declared=tuple(sorted(kept)))


def _quote(text: str) -> str:
  return '"' + text.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"'


def label_map_pbtxt(ids: Mapping[str, int]) -> str:
  """StringIntLabelMap text format, one `item` per label, in id order.

  Args:
    ids: {label: id}; each label is written quoted, with quotes, backslashes and line
      breaks escaped.
  """
  return ''.join(f'item {{\n  name: {_quote(name)}\n  id: {i}\n}}\n'
                 for name, i in sorted(ids.items(), key=lambda item: item[1]))


def label_map_csv(ids: Mapping[str, int]) -> str:
  """`id,name` lines, one per label, in id order, without a header: the CSV label map of
  Model Garden's `TfExampleDecoderLabelMap` (Python's csv: a name holding a comma or a
  double quote is quoted, its quotes doubled).

  Args:
    ids: {label: id}.
  """
  out = io.StringIO()
  writer = csv.writer(out, lineterminator='\n')
  for name, i in sorted(ids.items(), key=lambda item: item[1]):
    writer.writerow((i, name))
  return out.getvalue()


def parse_label_map_csv(text: str, source: str = LABEL_MAP_CSV_FILE) -> Dict[str, int]:
  """{name: id} of a label_map.csv's text (`id,name` lines, as `label_map_csv` writes and
  Model Garden's `TfExampleDecoderLabelMap` reads them), in file order; UsageError naming
  `source` and the line for a line that is not a whole-number id and a name, or a name
  or id given twice.

  Args:
    text: The file's text.
    source: The file's path or name, for the errors.
  """
  out: Dict[str, int] = {}
  owners: Dict[int, str] = {}
  for number, row in enumerate(csv.reader(io.StringIO(text, newline='')), start=1):
    where = f'{source}: line {number}'
    if len(row) != 2 or not re.fullmatch(r'\s*[+-]?\d+\s*', row[0]) or not row[1]:
      raise UsageError(f'{where} must be `id,name` (a whole-number id, a name; no header), '
                       f'got {",".join(row)!r}')
    i, name = int(row[0]), row[1]
    if name in out or i in owners:
      raise UsageError(f'{where}: {"name " + repr(name) if name in out else f"id {i}"} is '
                       'given twice')
    out[name], owners[i] = i, name
  return out


def labels_txt(ids: Mapping[str, int], first_id: int) -> str:
  """One line per id from `first_id` to the largest: its label, or empty for an id no
  label has.

  Args:
    ids: {label: id}; a label whose id is below `first_id` gets no line.
    first_id: The id of the first line: the task's first class id.
  """
  by_id = {i: label for label, i in ids.items()}
  return ''.join(by_id.get(i, '') + '\n' for i in range(first_id, max(by_id, default=-1) + 1))


def write_label_files(directory: str, ids: Mapping[str, int], first_id: int = 0) -> None:
  """Writes `labels.txt`, `label_map.pbtxt` and `label_map.csv` of `ids` into
  `directory`, replacing any.

  Args:
    directory: The folder, a local path or a URI on any Beam file system.
    ids: The run's {label: id}.
    first_id: The task's first class id, that of labels.txt's first line; default 0
      (classification).
  """
  for name, text in ((LABELS_FILE, labels_txt(ids, first_id)),
                     (LABEL_MAP_FILE, label_map_pbtxt(ids)),
                     (LABEL_MAP_CSV_FILE, label_map_csv(ids))):
    files.write_text(files.join(directory, name), text)


# StringIntLabelMap text format: `item { ... }` blocks whose fields (`name`, `id`,
# `display_name`, and others, nested messages included, that this ignores) come in any
# order, strings in double or single quotes with C escapes, `#` comments.
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|#[^\n]*|[{}:]|[^\s{}:"\'#]+')
_ESCAPE = re.compile(r'\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)', re.S)
_ESCAPES = {'n': '\n', 't': '\t', 'r': '\r', 'a': '\a', 'b': '\b', 'f': '\f', 'v': '\v'}


def _unquote(text: str) -> str:
  """A text-format string's value: C escapes, octal and hex bytes decoded as UTF-8."""
  def one(m):
    e = m.group(1)
    if e[0] == 'x':
      return chr(int(e[1:], 16))
    if e[0] in '01234567':
      return chr(int(e, 8))
    return _ESCAPES.get(e, e)
  raw = _ESCAPE.sub(one, text[1:-1])
  try:  # byte escapes (\303\251) spell UTF-8
    return raw.encode('latin-1').decode('utf-8')
  except (UnicodeEncodeError, UnicodeDecodeError):
    return raw


def _items(text: str, source: str) -> List[Dict[str, str]]:
  """The top-level fields (name: token) of each `item { }` of a text-format file."""
  items: List[Dict[str, str]] = []
  depth, key, expect_value = 0, None, False
  for token in (t for t in _TOKEN.findall(text) if not t.startswith('#')):
    if token == '{':
      if depth == 0 and key != 'item':
        raise UsageError(f'{source}: expected `item {{`, got {key!r}')
      depth += 1
      if depth == 1:
        items.append({})
      key, expect_value = None, False
    elif token == '}':
      depth -= 1
      if depth < 0:
        raise UsageError(f'{source}: an unmatched `}}`')
      key, expect_value = None, False
    elif token == ':':
      expect_value = True
    elif expect_value:
      if depth == 1 and key is not None:
        items[-1].setdefault(key, token)
      key, expect_value = None, False
    else:
      key = token
  if depth:
    raise UsageError(f'{source}: an `item {{` is not closed')
  return items


def parse_label_map(text: str, source: str = LABEL_MAP_FILE) -> Dict[str, int]:
  """{name: id} of a label_map.pbtxt's text, in file order; UsageError naming `source`
  and the item for an item without a quoted name or whole-number id, or a name or id
  given twice.

  Args:
    text: The file's text: `item { name: ... id: ... }` blocks (`display_name` stands in
      for a missing `name`; other fields are ignored).
    source: The file's path or name, for the errors.
  """
  out: Dict[str, int] = {}
  owners: Dict[int, str] = {}
  for number, fields in enumerate(_items(text, source), start=1):
    name = fields.get('name', fields.get('display_name', ''))
    where = f'{source}: item {number}'
    if name[:1] not in ('"', "'") or not re.fullmatch(r'[+-]?\d+', fields.get('id', '')):
      raise UsageError(f'{where} needs a quoted name and a whole-number id, got {fields!r}')
    name, i = _unquote(name), int(fields['id'])
    if name in out or i in owners:
      raise UsageError(f'{where}: {"name " + repr(name) if name in out else f"id {i}"} is '
                       'given twice')
    out[name], owners[i] = i, name
  if not out and text.strip():
    raise UsageError(f'{source} holds no `item {{ name: ... id: ... }}`')
  return out


def read_given_label_map(path: str) -> GivenLabelMap:
  """The label map at `path`: a label_map.pbtxt or a label_map.csv (`id,name` lines, as
  Model Garden reads them; ids as written), a labels.txt (line k: the task's first id +
  k; empty lines are ids no label has), or a folder holding label_map.pbtxt (an earlier
  output, an Examples artifact URI), on any Beam file system. UsageError naming the path
  when it cannot be read or is malformed.

  Args:
    path: A path or URI: a file named `*.pbtxt`, `*.csv` or `*.txt`, else a folder
      holding label_map.pbtxt (or a file read as one); or an object with a `uri` (an
      artifact).
  """
  path = os.fspath(getattr(path, 'uri', path))
  candidates = [path] if path.endswith(('.pbtxt', '.txt', '.csv')) else [
      files.join(path, LABEL_MAP_FILE), path]
  for candidate in candidates:
    try:
      with files.open_file(candidate) as f:
        data = f.read()
    except Exception:  # pylint: disable=broad-except
      continue
    try:
      text = data.decode('utf-8')
    except UnicodeDecodeError as e:
      raise UsageError(f'label map {candidate} is not UTF-8 text ({e})') from None
    if candidate.endswith('.txt'):
      lines = text.split('\n')
      if lines and lines[-1] == '':
        lines.pop()
      items = [(l.rstrip('\r'), k) for k, l in enumerate(lines) if l.rstrip('\r')]
      seen: Set[str] = set()
      for label, k in items:
        if label in seen:
          raise UsageError(f'{candidate}: line {k + 1}: label {label!r} is given twice')
        seen.add(label)
      return GivenLabelMap(candidate, tuple(items), by_line=True)
    if candidate.endswith('.csv'):
      return GivenLabelMap(candidate, tuple(parse_label_map_csv(text, candidate).items()))
    return GivenLabelMap(candidate, tuple(parse_label_map(text, candidate).items()))
  raise UsageError(f'no label map at {path}: give a label_map.pbtxt, a label_map.csv, a '
                   f'labels.txt or an earlier output folder holding {LABEL_MAP_FILE}')


def given_label_map(value) -> Optional[GivenLabelMap]:
  """A `label_map` argument as a GivenLabelMap: None; a path or URI (see
  `read_given_label_map`), or an Examples artifact; a {label: id} mapping; or a list of
  labels in id order from the task's first id.

  Args:
    value: The `label_map` option as given, in any of those forms; a GivenLabelMap is
      returned as it is.
  """
  if value is None or isinstance(value, GivenLabelMap):
    return value
  if isinstance(value, Mapping):
    items = tuple((str(k), int(v)) for k, v in value.items())
    if len({i for _, i in items}) != len(items):
      raise UsageError(f'label_map gives one id to several labels: {dict(items)!r}')
    return GivenLabelMap('the label_map argument', items)
  if isinstance(value, (list, tuple)):
    if len(set(value)) != len(value):
      raise UsageError('label_map lists a label twice')
    return GivenLabelMap('the label_map argument', tuple((str(l), k) for k, l in
                                                          enumerate(value)), by_line=True)
  path = os.fspath(getattr(value, 'uri', value))
  storage.prepare_file_systems(path)
  return read_given_label_map(path)


def label_notes(summary: Mapping[str, object]) -> List[str]:
  """Lines naming the labels of a run's summary that no record holds (classes declared
  with no annotation apart), that a given label map lacked (appended, or failing their
  rows) and source ids not kept.

  Args:
    summary: The run's summary; its `labels_left_out`, `labels_declared_only`,
      `labels_appended`, `label_ids`, `labels_unknown`, `label_map_given` and
      `label_id_conflicts` are read, and a key missing or empty gives no line.
  """
  named = lambda labels: ', '.join(repr(l) for l in labels)
  lines = []
  declared = summary.get('labels_declared_only') or []
  left_out = [l for l in summary.get('labels_left_out') or () if l not in declared]
  if left_out:
    lines.append('Labels with no record (each keeps its id in label_map.pbtxt): '
                 + named(left_out))
  if declared:
    ids = summary.get('label_ids', {})
    lines.append('Classes declared with no annotation (each keeps its id in the label '
                 'files, no record holds it): '
                 + ', '.join(f'{l!r} (id {ids.get(l)})' for l in declared))
  if summary.get('labels_appended'):
    ids = summary.get('label_ids', {})
    lines.append(f'Labels new to the label map {summary.get("label_map_given")}, appended: '
                 + ', '.join(f'{l!r} (id {ids.get(l)})' for l in summary['labels_appended']))
  if summary.get('labels_unknown'):
    lines.append(f'Labels not in the label map {summary.get("label_map_given")} (their rows '
                 'failed, unknown_label): ' + named(summary['labels_unknown']))
  lines.extend('Label id not kept: ' + c for c in summary.get('label_id_conflicts') or ())
  return lines


def read_label_map(examples_uri: str) -> Dict[str, int]:
  """The label map of an output: {label: id}, with the ids the records hold.

  Args:
    examples_uri: An Examples artifact URI, a `convert` output folder or any folder
      holding label_map.pbtxt (local, gs://, s3://), or a `tfx.types.Artifact`.

  Returns:
    {label: id}.
  """
  uri = getattr(examples_uri, 'uri', examples_uri)
  path = files.join(os.fspath(uri), LABEL_MAP_FILE)
  with files.open_file(path) as f:
    return parse_label_map(f.read().decode('utf-8'), path)


def merged_label_maps(maps: Sequence[Tuple[str, Mapping[str, int]]]) -> Dict[str, int]:
  """One {label: id} for data written with several label maps ((where, map) pairs):
  their union when they agree (a later span's map extends an earlier one); ValueError in
  one line naming both when a label has two ids or an id two labels.

  Args:
    maps: (where, {label: id}) pairs, `where` (an output folder) naming the map in the
      error.
  """
  merged: Dict[str, int] = {}
  where_label: Dict[str, str] = {}
  owners: Dict[int, Tuple[str, str]] = {}
  for where, ids in maps:
    for label, i in ids.items():
      if label in merged and merged[label] != i:
        raise ValueError(f'the label maps disagree: {label!r} is id {merged[label]} in '
                         f'{where_label[label]} and id {i} in {where}; convert with one '
                         'label map (label_map / the label_map_examples input)')
      if i in owners and owners[i][0] != label:
        raise ValueError(f'the label maps disagree: id {i} is {owners[i][0]!r} in '
                         f'{owners[i][1]} and {label!r} in {where}; convert with one '
                         'label map (label_map / the label_map_examples input)')
      merged[label], where_label[label], owners[i] = i, where, (label, where)
  return dict(sorted(merged.items(), key=lambda item: item[1]))
