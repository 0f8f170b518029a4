"""What every layout writer is given, and the run over the finished TFX shards: each
shard's records read once and handed to every layout's sink (local worker processes or a
Beam ParDo, a task per shard), then each layout's `finish`."""
from __future__ import annotations

import dataclasses
import posixpath
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

from tfrecorder_component import files
from tfrecorder_component import layout
from tfrecorder_component import layouts as registry
from tfrecorder_component.errors import UsageError
from tfrecorder_component.steps.shards import read_shard

DATASET_NAME = 'images'  # the TFDS name the shards are named by (`<name>-<split>.tfrecord-...`)


@dataclasses.dataclass(frozen=True)
class LayoutContext:
  """The run's output as every layout writer sees it.

  `features`: summary.json's `features` ({key: {'type', 'records', 'scalar'}}) of the
  records written; `label_ids`: {label: id} of label_map.pbtxt (classification ids from 0,
  detection from 1, segmentation pixel values); `task`: 'classification', 'detection' or
  'segmentation'.
  """
  output_dir: str
  split_names: Tuple[str, ...]
  features: Dict[str, Dict[str, Any]]
  label_ids: Dict[str, int]
  task: str

  def folder(self, name: str) -> str:
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
  """The LayoutContext of a run from its summary and `held_labels`."""
  return LayoutContext(output_dir, tuple(split_names), summary.get('features') or {},
                       dict(zip(held['labels'], held['ids'])), held['task'])


def shard_jobs(split_dirs: Mapping[str, str]) -> List[Tuple[str, int, int, str]]:
  """(split, index, count, path) of every finished TFX shard."""
  jobs = []
  for split, folder in split_dirs.items():
    # `folder/*` lists a local folder without importing Beam; the shards by their names.
    paths = sorted(p for p in files.match(files.join(folder, '*'))
                   if posixpath.basename(p).startswith(f'{layout.TFRECORD_FILE_NAME}-'))
    jobs.extend((split, k, len(paths), path) for k, path in enumerate(paths))
  return jobs


def write_shard(job: Tuple[str, int, int, str], names: Sequence[str],
                ctx: LayoutContext) -> Tuple[str, int, int]:
  """Writes one TFX shard's records into every layout of `names`; (split, index,
  records)."""
  split, index, count, path = job
  sinks = []
  try:
    for name in names:
      sinks.append(registry.module(name).open_shard(ctx, split, index, count))
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
  index, count)`, from `finish`'s counts ({split: [records per shard]})."""
  return {split: [shard_name(split, k, len(n)) for k in range(len(n))]
          for split, n in counts.items()}


def finish(names: Sequence[str], ctx: LayoutContext,
           written: Sequence[Tuple[str, int, int]]) -> Dict[str, Dict[str, Any]]:
  """Each layout's metadata, once every shard is written; {layout: {'folder', ...}}."""
  counts: Dict[str, List[int]] = {split: [] for split in ctx.split_names}
  for split, index, n in sorted(written):
    counts[split].append(n)
  out = {}
  for name in names:
    mod = registry.module(name)
    out[name] = {'folder': mod.FOLDER, **(mod.finish(ctx, counts) or {})}
  return out


def check_types(names: Sequence[str], ctx: LayoutContext) -> None:
  """UsageError when a layout with typed columns meets a key of two types."""
  mixed = ctx.mixed_types()
  typed = [n for n in names if getattr(registry.module(n), 'TYPED', False)]
  if mixed and typed:
    raise UsageError(
        f'the {", ".join(typed)} layout needs one type a feature, but '
        + '; '.join(f'{k} is {ctx.features[k]["type"]}' for k in mixed)
        + ': declare the column\'s type (feature_types / --feature-type)')
