"""Output layouts beside TFX's: the same records, written once more in the form another
trainer's loader reads, with no second pass over the images: by the local run's workers
as they write their TFX shards, else from the finished TFX shards (`base`).

    <output>/Split-<split>/data_tfrecord-SSSSS-of-NNNNN.gz   TFX (always; ExampleGen's)
    <output>/tfrecord/      `tfrecord`: uncompressed shards + `.idx` (DALI, PyTorch's
                            `tfrecord`)
    <output>/tfds/          `tfds`: TFDS's own records (boxes as BBoxFeature) +
                            dataset_info.json, features.json (tfds.builder_from_directory)
    <output>/array_record/  `array_record`: ArrayRecord shards (Grain, JAX)
    <output>/parquet/       `parquet`: Parquet shards (pyarrow, pandas, Hugging Face
                            `datasets`)
    <output>/examples.json  the output's index: splits, record counts, the records'
                            features, the layouts written (`index.py`)

Shard k of a split in every layout holds exactly the records of TFX shard k, in order.
Each layout is a module with one entry in LAYOUTS, offering:

    FOLDER: str                     its folder under the output
    REQUIRES: tuple                 layouts it builds on (written too)
    check_available() -> None       UsageError if a library it needs is missing
    SUFFIXES: tuple                 the files a shard at `path` is: path + each suffix
    shard_name(split, index, count) -> str   a shard's file name in FOLDER
    open_path(context, split, path) -> a sink with write(record) and close()
    spec(context) -> hashable       (optional) what a shard's bytes depend on beyond its
                                    records; where absent, nothing
    finish(context, counts) -> dict once every shard is written ({split: [records per
                                    shard]}): metadata files; what the index lists
"""
from __future__ import annotations

import importlib
from typing import Iterable, Tuple

from tfrecorder_component.errors import UsageError

LAYOUTS = {
    'tfrecord': 'tfrecorder_component.output.layouts.tfrecord',
    'tfds': 'tfrecorder_component.output.layouts.tfds',
    'array_record': 'tfrecorder_component.output.layouts.array_record',
    'parquet': 'tfrecorder_component.output.layouts.parquet',
}


def module(name: str):
  """The module of a layout, imported on first use.

  Args:
    name: A key of LAYOUTS ('tfrecord', 'tfds', 'array_record', 'parquet'); another
      raises KeyError.
  """
  return importlib.import_module(LAYOUTS[name])


def check_layouts(names: Iterable[str], check_available: bool = True) -> Tuple[str, ...]:
  """The layouts to write for `names` (a layout's requirements first, each once), in
  registry order; UsageError for an unknown name, or a layout whose library is missing.

  Args:
    names: Layout names, as an iterable or one comma-separated string
      ('tfds,parquet'); blanks around a name are dropped.
    check_available: Also check that each chosen layout's library is installed. False
      where the layouts are written elsewhere (a TFX component's executor), so only the
      names are checked.
  """
  if isinstance(names, str):
    names = [n for n in names.split(',') if n.strip()]
  wanted = set()
  pending = [n.strip() for n in names]
  while pending:
    name = pending.pop()
    if name not in LAYOUTS:
      raise UsageError(f'unknown output layout {name!r}; one of {", ".join(LAYOUTS)}')
    if name not in wanted:
      wanted.add(name)
      pending.extend(module(name).REQUIRES)
  chosen = tuple(n for n in LAYOUTS if n in wanted)
  if check_available:
    for name in chosen:
      module(name).check_available()
  return chosen
