"""What every layout writer is given, and the two ways shards are written: as the records
are converted (`InlineShard`, the local run's worker processes, beside each TFX shard
file), or from the finished TFX shards (`write_shard`: each shard's records read once and
handed to every layout's sink, on worker processes or in a Beam ParDo, a task per shard:
Beam runs, planned shard counts, and any shard the first way could not write), then each
layout's `finish`."""
from __future__ import annotations

import dataclasses
import os
import posixpath
import uuid
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.output import layouts as registry
from tfrecorder_component.errors import UsageError
from tfrecorder_component.record.example import record_features
from tfrecorder_component.io.tfrecord import read_shard

DATASET_NAME = 'images'  # the TFDS name the shards are named by (`<name>-<split>.tfrecord-...`)


@dataclasses.dataclass(frozen=True)
class LayoutContext:
  """The run's output as every layout writer sees it.

  Attributes:
    output_dir: The folder the layouts' folders go under (the run's output, or its
      staging folder while the run writes), a local path or a URI.
    split_names: The run's output splits, in the order they are written.
    features: summary.json's `features` ({key: {'type', 'records', 'scalar'}}) of the
      records written.
    label_ids: {label: id} of label_map.pbtxt (classification ids from 0, detection
      from 1, segmentation pixel values).
    task: 'classification', 'detection' or 'segmentation'.
  """
  output_dir: str
  split_names: Tuple[str, ...]
  features: Dict[str, Dict[str, Any]]
  label_ids: Dict[str, int]
  task: str

  def folder(self, name: str) -> str:
    """Where layout `name` writes: its FOLDER under `output_dir`.

    Args:
      name: A layout's name, a key of `layouts.LAYOUTS`.
    """
    return files.join(self.output_dir, registry.module(name).FOLDER)

  def label_names(self) -> List[str]:
    """Names by id from 0 (detection: id - 1), as TFDS's ClassLabel and Parquet's
    class columns take them; an id no label holds is named `unused_<id>`."""
    first = 1 if self.task == 'detection' else 0
    by_id = {i: l for l, i in self.label_ids.items()}
    top = max(by_id, default=first - 1)
    return [by_id.get(i, f'unused_{i}') for i in range(first, top + 1)]

  def mixed_types(self) -> List[str]:
    return [k for k, f in self.features.items() if '|' in f['type']]


def context(summary: Dict[str, Any], held: Dict[str, Any], output_dir: str,
            split_names: Sequence[str]) -> LayoutContext:
  """The LayoutContext of a run from its summary and `held_labels`.

  Args:
    summary: The run's summary (summary.json's contents); only its `features` is used,
      none meaning no feature.
    held: `steps.report.held_labels` of the run: its vocabulary, with 'labels' and 'ids' (in
      id order) and 'task'.
    output_dir: The folder the layouts' folders go under.
    split_names: The run's output splits, in order.
  """
  return LayoutContext(output_dir, tuple(split_names), summary.get('features') or {},
                       dict(zip(held['labels'], held['ids'])), held['task'])


def shard_jobs(split_dirs: Mapping[str, str]) -> List[Tuple[str, int, int, str]]:
  """(split, index, count, path) of every finished TFX shard.

  Args:
    split_dirs: {split: its `Split-<split>` folder}, local or a URI; the shards in each
      are the files named `data_tfrecord-*`, indexed in name order.
  """
  jobs = []
  for split, folder in split_dirs.items():
    # `folder/*` lists a local folder without importing Beam; the shards by their names.
    paths = sorted(p for p in files.match(files.join(folder, '*'))
                   if posixpath.basename(p).startswith(f'{output_paths.TFRECORD_FILE_NAME}-'))
    jobs.extend((split, k, len(paths), path) for k, path in enumerate(paths))
  return jobs


def shard_path(name: str, ctx: LayoutContext, split: str, index: int, count: int) -> str:
  """Where layout `name` writes shard `index` of `count` of `split`.

  Args:
    name: A layout's name, a key of `layouts.LAYOUTS`.
    ctx: The run's LayoutContext (its `output_dir` holds the layout's folder).
    split: The split's name.
    index: The shard's position in the split, from 0.
    count: How many shards the split has.
  """
  return files.join(ctx.folder(name), registry.module(name).shard_name(split, index, count))


def open_shard(name: str, ctx: LayoutContext, split: str, index: int, count: int):
  """Layout `name`'s sink (`write(record)`, `close()`) for shard `index` of `count` of
  `split`, at `shard_path`.

  Args:
    name: A layout's name, a key of `layouts.LAYOUTS`.
    ctx: The run's LayoutContext.
    split: The split's name.
    index: The shard's position in the split, from 0.
    count: How many shards the split has.
  """
  return registry.module(name).open_path(ctx, split, shard_path(name, ctx, split, index, count))


def spec(name: str, ctx: LayoutContext) -> Any:
  """What layout `name`'s bytes depend on beyond the records (None: nothing), as its
  module's `spec(ctx)` says: the run's record keys for the typed layouts.

  Args:
    name: A layout's name, a key of `layouts.LAYOUTS`.
    ctx: The LayoutContext whose `features` the spec is taken from (the run's, or an
      InlineShard's records so far).
  """
  of = getattr(registry.module(name), 'spec', None)
  return None if of is None else of(ctx)


def write_shard(job: Tuple[str, int, int, str], names: Sequence[str],
                ctx: LayoutContext) -> Tuple[str, int, int]:
  """Writes one TFX shard's records into every layout of `names`; (split, index,
  records). On an error every sink opened is closed and the first error raised.

  Args:
    job: (split, index, count, path) of the TFX shard, as `shard_jobs` gives it.
    names: The layouts to write the shard into, keys of `layouts.LAYOUTS`.
    ctx: The run's LayoutContext.
  """
  split, index, count, path = job
  sinks = []
  try:
    for name in names:
      sinks.append(open_shard(name, ctx, split, index, count))
    n = 0
    for record in read_shard(path):
      for sink in sinks:
        sink.write(record)
      n += 1
  except BaseException:
    for sink in sinks:
      try:
        sink.close()
      except Exception:  # pylint: disable=broad-except  (the first error is the one told)
        pass
    raise
  for sink in sinks:
    sink.close()
  return split, index, n


def split_files(counts: Mapping[str, Sequence[int]],
                shard_name: Callable[[str, int, int], str]) -> Dict[str, List[str]]:
  """{split: its shard files' names, in order} of a layout naming shards `shard_name(split,
  index, count)`, from `finish`'s counts.

  Args:
    counts: {split: [records per shard]}, as a layout's `finish` is given it; only the
      number of shards is used.
    shard_name: The layout's `shard_name(split, index, count)`: a shard's file name.
  """
  return {split: [shard_name(split, k, len(n)) for k in range(len(n))]
          for split, n in counts.items()}


def finish(names: Sequence[str], ctx: LayoutContext,
           written: Sequence[Tuple[str, int, int]]) -> Dict[str, Dict[str, Any]]:
  """Each layout's metadata, once every shard is written; {layout: {'folder', ...}}.

  Args:
    names: The layouts written, keys of `layouts.LAYOUTS`.
    ctx: The run's LayoutContext; a split of its `split_names` with no shard written
      gets an empty count list.
    written: (split, index, records) of every shard written, in any order (what
      `write_shard` returns, or the TFX shard's count for a placed InlineShard).
  """
  counts: Dict[str, List[int]] = {split: [] for split in ctx.split_names}
  for split, index, n in sorted(written):
    counts[split].append(n)
  out = {}
  for name in names:
    mod = registry.module(name)
    out[name] = {'folder': mod.FOLDER, **(mod.finish(ctx, counts) or {})}
  return out


def prepare(names: Sequence[str]) -> None:
  """Loads what the layouts of `names` need at `finish` (their modules' `prepare()`), so
  that a run can do it while its workers convert.

  Args:
    names: The layouts the run writes, keys of `layouts.LAYOUTS`; one whose module has
      no `prepare` is skipped.
  """
  for name in names:
    getattr(registry.module(name), 'prepare', lambda: None)()


def check_types(names: Sequence[str], ctx: LayoutContext) -> None:
  """UsageError when a layout with typed columns meets a key of two types.

  Args:
    names: The layouts the run writes; those whose module sets TYPED are checked.
    ctx: The run's LayoutContext, whose `features` give each key's type(s).
  """
  mixed = ctx.mixed_types()
  typed = [n for n in names if getattr(registry.module(n), 'TYPED', False)]
  if mixed and typed:
    raise UsageError(
        f'the {", ".join(typed)} layout needs one type a feature, but '
        + '; '.join(f'{k} is {ctx.features[k]["type"]}' for k in mixed)
        + ': declare the column\'s type (feature_types / --feature-type)')


class InlineShard:
  """One worker's records of one split written into every layout of `names` as they are
  converted, beside its TFX shard file: no reading back, no second phase. Files go to
  `<layout folder>/.part-<id>` (+ the layout's SUFFIXES) and take their shard names
  when the TFX shards take theirs (`place`).

  A typed layout's bytes depend on the run's record keys (`spec`), which are known only
  once every record is written; here they are taken from this shard's records, the
  first batch's signatures (`steps.row.feature_signature`) and every new one after. A shard
  whose spec is not the run's at the end, or changes on the way (a new key, a key with
  a second value), is left to `write_shard` from its TFX shard: never wrong, at worst
  written twice.

  Args:
    names: The layouts to write, keys of `layouts.LAYOUTS`.
    output_dir: The folder the layouts' folders go under (the run's staging folder), a
      local one: the files are created and renamed with `os`.
    split: The split whose records this worker writes.
    task: 'classification', 'detection' or 'segmentation'.
    label_ids: {label: id} of the run's vocabulary (copied).
  """

  def __init__(self, names: Sequence[str], output_dir: str, split: str, task: str,
               label_ids: Dict[str, int]):
    self._names = list(names)
    self._output_dir = output_dir
    self._split = split
    self._task = task
    self._label_ids = dict(label_ids)
    self._part = f'.part-{uuid.uuid4().hex}'
    self._signatures: Dict[str, int] = {}
    self._records = 0
    self._sinks: Optional[Dict[str, Any]] = None
    self._specs: Dict[str, Any] = {}

  def _context(self) -> LayoutContext:
    return LayoutContext(self._output_dir, (self._split,),
                         record_features(self._signatures, self._records),
                         self._label_ids, self._task)

  def _base(self, name: str) -> str:
    return files.join(self._output_dir, registry.module(name).FOLDER, self._part)

  def write(self, records: Sequence[bytes], signatures: Sequence[str]) -> None:
    """Writes `records`, whose `feature_signature`s are `signatures` (in order).

    Args:
      records: Serialized tf.train.Example records of this shard's split, a batch as
        the worker converted them.
      signatures: `steps.row.feature_signature` of each record of `records`, in the same
        order; a new one may drop a layout whose spec it changes.
    """
    new = False
    for signature in signatures:
      if signature not in self._signatures:
        self._signatures[signature] = 0
        new = True
      self._signatures[signature] += 1
    self._records += len(records)
    if self._sinks is None:
      ctx = self._context()
      self._sinks = {}
      for name in self._names:
        os.makedirs(ctx.folder(name), exist_ok=True)
        self._sinks[name] = registry.module(name).open_path(ctx, self._split, self._base(name))
        self._specs[name] = spec(name, ctx)
    elif new:
      ctx = self._context()
      for name in list(self._sinks):
        if spec(name, ctx) != self._specs[name]:
          self._abandon(name)
    for sink in self._sinks.values():
      for record in records:
        sink.write(record)

  def _abandon(self, name: str) -> None:
    sink = self._sinks.pop(name)
    del self._specs[name]
    try:
      sink.close()
    finally:
      remove_files(self._base(name), registry.module(name).SUFFIXES)

  def close(self) -> Dict[str, Any]:
    """What `place` takes: {'part': the files' name, 'specs': {layout: spec} of the
    layouts written whole}."""
    for sink in (self._sinks or {}).values():
      sink.close()
    return {'part': self._part, 'specs': dict(self._specs)}

  def abort(self) -> None:
    """Closes and removes what was written (the run failed)."""
    for name in list(self._sinks or {}):
      self._abandon(name)


def remove_files(base: str, suffixes: Sequence[str]) -> None:
  """Removes the local files of a layout's shard, those of them that exist.

  Args:
    base: The shard's path without suffix (an InlineShard's `.part-<id>` file).
    suffixes: The layout's SUFFIXES: the shard's files are `base` + each.
  """
  for suffix in suffixes:
    if os.path.exists(base + suffix):
      os.remove(base + suffix)


def place(inline: Optional[Dict[str, Any]], names: Sequence[str], ctx: LayoutContext,
          split: str, index: int, count: int) -> List[str]:
  """Gives an InlineShard's files (its `close()`, or None) of the layouts whose spec is
  the run's the names of shard `index` of `count`, removes the others; the layouts of
  `names` still to write (from the TFX shard, `write_shard`).

  Args:
    inline: What the InlineShard that wrote beside this TFX shard returned from
      `close()` ({'part', 'specs'}), or None where none did (all of `names` to write).
    names: The layouts the run writes, keys of `layouts.LAYOUTS`.
    ctx: The run's LayoutContext, whose specs the InlineShard's must equal.
    split: The TFX shard's split.
    index: The TFX shard's position in the split, from 0.
    count: How many shards the split has.
  """
  todo = list(names)
  if inline is None:
    return todo
  for name in names:
    mod = registry.module(name)
    base = files.join(ctx.folder(name), inline['part'])
    if name in inline['specs'] and inline['specs'][name] == spec(name, ctx):
      target = shard_path(name, ctx, split, index, count)
      for suffix in mod.SUFFIXES:
        os.replace(base + suffix, target + suffix)
      todo.remove(name)
    else:
      remove_files(base, mod.SUFFIXES)
  return todo
