"""The local engine's last files but the report's: the workers' files named as the run's
shards (or spread over a planned count of them: `steps.shards`), the extra layouts of
each shard (those the workers wrote as they converted named, the rest written from the
finished TFX shards by the pool's processes), and what a worker that ended without its
result left behind, removed."""
from __future__ import annotations

import logging
import os
import posixpath
import time
import uuid
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from tfrecorder_component.engines.local import pool
from tfrecorder_component.io import files
from tfrecorder_component.io import storage
from tfrecorder_component.io import tfrecord as tfrecord_lib
from tfrecorder_component.options import ConversionOptions
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.output.layouts import base as layouts_base
from tfrecorder_component.steps import shards as shards_lib

__all__ = ['name_shards', 'remove_parts', 'write_layouts']


class _LayoutWorker:
  """What one worker process makes of the TFX shards it takes (`(job, layouts)`): each
  written into those layouts (`layouts.base.write_shard`); its result, what each gave."""

  def __init__(self, ctx):
    self._ctx = ctx
    self._written: List[Tuple[str, int, int]] = []

  def convert(self, task, index: int = -1) -> None:  # pylint: disable=unused-argument
    job, names = task
    self._written.append(layouts_base.write_shard(job, names, self._ctx))

  def result(self) -> List[Tuple[str, int, int]]:
    return self._written


def write_layouts(names, ctx, shards, placed, workers: int):
  """The extra layouts of every TFX shard of `shards` (`name_shards`): the files the
  workers wrote as they converted (`placed`: {TFX file: InlineShard.close()}) named as
  their shard, and any shard or layout they could not write (an empty split, a spec
  that is not the run's, planned shards) written from the finished TFX shard, a task per
  shard on up to `workers` processes (as the conversion's: `pool.convert_chunks`); returns
  what `layouts.base.finish` returns.

  Args:
    names: The extra layouts to write (`ConversionOptions.layouts`).
    ctx: The run's layout context (`steps.run_plan.layout_context`).
    shards: Every TFX shard, as `name_shards` returns them.
    placed: {a worker's TFX file: what its InlineShard's close() gave}.
    workers: The most processes to write the others with.
  """
  start = time.perf_counter()
  layouts_base.check_types(names, ctx)
  written: Dict[Tuple[str, int], int] = {}
  tasks = []
  for split, index, count, path, part, records in shards:
    todo = layouts_base.place(placed.get(part), names, ctx, split, index, count)
    if todo:
      tasks.append(((split, index, count, path), todo))
    else:
      written[split, index] = records
  results = pool.convert_chunks(tasks, lambda: _LayoutWorker(ctx), min(workers, len(tasks)))
  for r in results:
    for split, index, n in r:
      written[split, index] = n
  info = layouts_base.finish(names, ctx, [(s, i, n) for (s, i), n in written.items()])
  logging.info('Local run: %s written (%d of %d shard(s) from the TFX shards) in %.2f s',
               ', '.join(names), len(tasks), len(shards), time.perf_counter() - start)
  return info


def remove_parts(folders: Sequence[str], shards: bool = False) -> None:
  """Removes the `.part-` files left in `folders` (local, gs:// or s3://) once every shard
  and layout file has its name: those of worker processes that ended without their
  result. `shards`: the shards too (`data_tfrecord-*`), for a run that failed after its
  workers uploaded theirs (split folders of its own: an artifact's, a new output's).

  Args:
    folders: The split and layout folders to clean (local, gs:// or s3://; a folder
      that is missing, or on a file system with no client here, is skipped).
    shards: Also remove the shards (`data_tfrecord-*`) themselves; default False.
  """
  prefixes = ('.part-', f'{output_paths.TFRECORD_FILE_NAME}-') if shards else ('.part-',)
  for folder in folders:
    if not files.is_local(folder):
      if storage.client_for(folder) is not None:
        for name in storage.list_names(folder):
          if name.startswith(prefixes):
            storage.delete_object(posixpath.join(folder, name))
      continue
    try:
      names = os.listdir(folder)
    except FileNotFoundError:
      continue
    for name in names:
      if name.startswith(prefixes):
        os.remove(os.path.join(folder, name))


def name_shards(bundles: List[Tuple[str, str, int, int]], split_dirs: Mapping[str, str],
                options: ConversionOptions) -> List[Tuple[str, int, int, str, Optional[str],
                                                         int]]:
  """Gives the workers' files their shard names: by default each worker's file of a
  split is one shard (an empty split gets one empty shard, as Beam writes it). The n
  workers the pool first forks wrote shard k of n of every split (`worker.Worker.slot`),
  so when each of them ended well nothing is renamed; files of workers forked to convert
  again what a dead one left are named after them (object stores rename by copying).
  With `num_shards` or `shard_size_mb` the records are spread over exactly that many
  shards (`shards.plan_split_shards`). Returns (split, index, count, path, the worker's
  file it was (None: made here), records) of every shard.

  Args:
    bundles: The workers' files, (split, path, records, bytes) each (`worker.Converted`).
    split_dirs: {split: its folder of shards}, every split the run writes.
    options: The run's options (its shard count or size, its compression level).
  """
  if options.num_shards or options.shard_size_mb:
    plan = shards_lib.plan_split_shards(bundles, split_dirs, options.num_shards,
                                        int(options.shard_size_mb * 2**20))
    for shard in plan:
      shards_lib.write_shard(shard, options.compression_level)
    return [(split, index, count, path, None, -1)
            for split, index, count, path in layouts_base.shard_jobs(split_dirs)]
  shards = []
  for split, folder in split_dirs.items():
    # The files already named by their worker's slot first, in order; temporary ones after.
    parts = sorted(((path, records) for s, path, records, _ in bundles if s == split),
                   key=lambda p: (posixpath.basename(p[0]).startswith('.part-'), p[0]))
    if not sum(records for _, records in parts) and [p for p, _ in parts] != [
        output_paths.shard_path(folder, 0, 1)]:  # an empty split: one empty shard
      for part, _ in parts:
        _remove_file(part)
      parts = []
    if not parts:
      path = output_paths.shard_path(folder, 0, 1)
      tfrecord_lib.ShardWriter(path, options.compression_level).close()
      shards.append((split, 0, 1, path, None, 0))
    targets = [output_paths.shard_path(folder, k, len(parts)) for k in range(len(parts))]
    moves = [(part, target) for (part, _), target in zip(parts, targets) if part != target]
    held = {part for part, _ in parts}
    if any(target in held for _, target in moves):  # a name another part still has
      aside = []
      for part, target in moves:
        temporary = posixpath.join(folder, f'.part-{uuid.uuid4().hex}.gz')
        files.rename(part, temporary)
        aside.append((temporary, target))
      moves = aside
    for part, target in moves:
      files.rename(part, target)
    for k, ((part, records), target) in enumerate(zip(parts, targets)):
      shards.append((split, k, len(parts), target, part, records))
    _remove_strays(folder, {posixpath.basename(t) for t in targets} or
                   {posixpath.basename(output_paths.shard_path(folder, 0, 1))})
  return shards


def _remove_strays(folder: str, keep) -> None:
  """Removes the shards in a split folder (the run's own) that are not the run's final
  ones (`keep`, names): a worker that died after opening its shard under its slot's name
  left it there, partly written or not counted, where readers would take it for one."""
  prefix = f'{output_paths.TFRECORD_FILE_NAME}-'
  if files.is_local(folder):
    names = os.listdir(folder) if os.path.isdir(folder) else []
  else:
    names = storage.list_names(folder)
  for name in names:
    if name.startswith(prefix) and name not in keep:
      logging.warning('Removing %s: a shard a worker process left as it ended',
                      posixpath.join(folder, name))
      _remove_file(posixpath.join(folder, name))


def _remove_file(path: str) -> None:
  if files.is_local(path):
    os.remove(path)
  else:
    storage.delete_object(path)
