"""`parquet`: the records as Parquet tables (pyarrow, pandas, Hugging Face `datasets`), in
`parquet/`:

    <output>/parquet/<split>-SSSSS-of-NNNNN.parquet   shard k: TFX shard k's records
    <output>/parquet/README.md                        a dataset card for `datasets`

(each shard also writes `<shard>.sha256`, its records' digest, which `finish` reads and
removes).

A row a record, a column a record key (`ctx.features`, in its order), named by the key
(`image/encoded`, `image/class/label` ...). A key every record holds with exactly one
value (`scalar`) is a scalar column, any other a list column: bytes -> binary, int64 ->
int64, float -> float32 (list<...> of them); a record without the key has null there,
one with the key and no value an empty list. Every shard has the run's schema, so the
shards of a split read as one table and an empty shard is a valid file of that schema.
A key of two types cannot be a column (TYPED: `base.check_types` refuses the run).

The card's YAML `configs` lists each split's files under its own name, so
`datasets.load_dataset('<output>/parquet')` gives exactly the run's splits (on its own it
would take a file named `eval-...` for a `test` split), less those without records:
`datasets` cannot load a split of no rows, and one would make every split unloadable
(`Instruction "test" corresponds to no data!`). For classification,
`image/class/label` carries the label names as a `ClassLabel` in the schema's
`huggingface` metadata, which `datasets` reads and pandas ignores.

The card's one config is named `tfrecorder-<digest>` (CONFIG_PREFIX), the digest of what
the rows are (`content_digest`: the columns, the label names, each shard's records in
order), not `default`: `datasets` (5.2: load.py's LocalDatasetModuleFactory, builder.py's
`_relative_data_dir`) caches a folder loaded with no other argument under
`<folder's name>/<config name>/0.0.0/<hash of the card's configs>` and takes neither the
folder's path nor its files' times into it, so under `default` every output's
`parquet/` of the same splits and shard counts had one cache entry, and a second output
loaded the first one's rows (even across processes). Named by its content, an output is
read from its own entry, again from it when loaded again, and from a new one once
overwritten with other records. `load_dataset('<output>/parquet')` takes the one config
as the default, so no name is needed (`load_dataset(folder, name)` takes it too).

Rows are written in row groups of about ROW_GROUP_BYTES of records, so a shard is never
held whole in memory. Encoded images (IMAGE_COLUMNS) are stored as they are: no
compression, dictionary or statistics, which would cost time and gain nothing on JPEG or
PNG bytes; the other columns are Snappy-compressed, with dictionaries and statistics.
Pages hold about 1 MB (WRITE_BATCH_SIZE).
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tfrecorder_component import extras
from tfrecorder_component.io import files, storage
from tfrecorder_component.errors import UsageError
from tfrecorder_component.output.layouts.base import split_files
from tfrecorder_component.record import example_proto
from tfrecorder_component.feature_keys import (CLASS_LABEL, IMAGE_ENCODED, OBJECT_MASK,
                                               SEGMENTATION_ENCODED)

FOLDER = 'parquet'
REQUIRES = ()
TYPED = True
CARD = 'README.md'
DIGEST_SUFFIX = '.sha256'
SUFFIXES = ('', DIGEST_SUFFIX)
CONFIG_PREFIX = 'tfrecorder-'
ROW_GROUP_BYTES = 32 * 2**20
# Values Arrow's writer encodes between its checks of the page size: by default 1,024,
# which for encoded images makes one page of the whole row group, grown by copying as it
# fills (a third of the run's time at 20,000 JPEGs); 32 images keep pages near Arrow's
# 1 MB and the layout's cost a quarter of that.
WRITE_BATCH_SIZE = 32
IMAGE_COLUMNS = (IMAGE_ENCODED, SEGMENTATION_ENCODED, OBJECT_MASK)
_KINDS = {'bytes': 'bytes_list', 'int64': 'int64_list', 'float': 'float_list'}
_HF_DTYPES = {'bytes': 'binary', 'int64': 'int64', 'float': 'float32'}


def check_available() -> None:
  try:
    import pyarrow.parquet  # pylint: disable=g-import-not-at-top,unused-import
  except ModuleNotFoundError as e:
    raise UsageError(extras.message('the parquet layout', 'parquet')) from e
  except ImportError as e:
    raise UsageError(f'the parquet layout needs pyarrow, which cannot be imported here ({e}): '
                     f'{extras.install_command("parquet")}') from e


def shard_name(split: str, index: int, count: int) -> str:
  """Shard `index` of `count`'s file name in FOLDER: `<split>-SSSSS-of-NNNNN.parquet`.

  Args:
    split: The split's name.
    index: The shard's position in the split, from 0.
    count: How many shards the split has.
  """
  return f'{split}-{index:05d}-of-{count:05d}.parquet'


def columns(ctx) -> List[Tuple[str, str, bool]]:
  """(key, type, scalar) of every column, in `ctx.features` order.

  Args:
    ctx: The LayoutContext whose `features` ({key: {'type', 'records', 'scalar'}}) the
      columns are: type 'bytes', 'int64' or 'float', scalar False where not given.
  """
  return [(key, f['type'], bool(f.get('scalar'))) for key, f in ctx.features.items()]


def _arrow_type(kind: str):
  import pyarrow as pa  # pylint: disable=g-import-not-at-top
  return {'bytes': pa.binary(), 'int64': pa.int64(), 'float': pa.float32()}[kind]


def _hf_feature(ctx, key: str, kind: str, scalar: bool) -> Any:
  """The column's `datasets` feature, as `Features.to_dict` writes one (a list column
  as a one-element list, which every `datasets` version since 2 reads as a sequence)."""
  if key == CLASS_LABEL and kind == 'int64' and ctx.task == 'classification':
    feature: Dict[str, Any] = {'names': ctx.label_names(), '_type': 'ClassLabel'}
  else:
    feature = {'dtype': _HF_DTYPES[kind], '_type': 'Value'}
  return feature if scalar else [feature]


def schema(ctx):
  """The run's Arrow schema: every shard's.

  Args:
    ctx: The run's LayoutContext: its `features` give the columns, its task and label
      names the `huggingface` metadata (a ClassLabel for classification).
  """
  import pyarrow as pa  # pylint: disable=g-import-not-at-top
  fields = []
  hf = {}
  for key, kind, scalar in columns(ctx):
    value = _arrow_type(kind)
    fields.append(pa.field(key, value if scalar else pa.list_(pa.field('element', value))))
    hf[key] = _hf_feature(ctx, key, kind, scalar)
  metadata = {'huggingface': json.dumps({'info': {'features': hf}})}
  return pa.schema(fields, metadata=metadata)


def _leaf(key: str, scalar: bool) -> str:
  """The column's leaf path in the Parquet file (compliant nested types: a list's values
  are `element`, as Parquet's spec names them and as they read back)."""
  return key if scalar else f'{key}.list.element'


def writer_options(ctx) -> Dict[str, Any]:
  """ParquetWriter's options: no compression, dictionary or statistics for encoded
  images; Snappy, dictionaries and statistics for the rest.

  Args:
    ctx: The run's LayoutContext, whose `features` give the columns.
  """
  cols = columns(ctx)
  return {
      'compression': {_leaf(k, s): 'NONE' if k in IMAGE_COLUMNS else 'SNAPPY'
                      for k, _, s in cols},
      'use_dictionary': [_leaf(k, s) for k, _, s in cols if k not in IMAGE_COLUMNS],
      'write_statistics': [_leaf(k, s) for k, _, s in cols if k not in IMAGE_COLUMNS],
      'use_compliant_nested_type': True,
      'write_batch_size': WRITE_BATCH_SIZE,
  }


class _Sink:
  """One shard: records parsed into columns, written a row group at a time; at `close`,
  the SHA-256 of its records (each's length, 8 bytes little-endian, then its bytes) in
  `<shard>.sha256` beside it."""

  def __init__(self, ctx, path: str):
    import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
    self._parse = example_proto.Example.FromString
    self._columns = [(key, _KINDS[kind], scalar) for key, kind, scalar in columns(ctx)]
    self._schema = schema(ctx)
    # A local file through Arrow's own file (a Python file object costs a third more).
    if files.is_local(path):
      import pyarrow as pa  # pylint: disable=g-import-not-at-top
      os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
      self._file = pa.OSFile(path, 'wb')
    else:
      self._file = files.create_file(path)
    try:
      self._writer: Optional[Any] = pq.ParquetWriter(self._file, self._schema,
                                                     **writer_options(ctx))
    except BaseException:
      self._file.close()
      raise
    self._path = path
    self._digest = hashlib.sha256()
    self._values: List[List[Any]] = [[] for _ in self._columns]
    self._buffered = 0

  def write(self, record: bytes) -> None:
    self._digest.update(len(record).to_bytes(8, 'little'))
    self._digest.update(record)
    feature = self._parse(record).features.feature
    for (key, kind, scalar), values in zip(self._columns, self._values):
      if key in feature:
        held = getattr(feature[key], kind).value
        values.append(held[0] if scalar else list(held))
      else:
        values.append(None)
    self._buffered += len(record)
    if self._buffered >= ROW_GROUP_BYTES:
      self._flush()

  def _flush(self) -> None:
    import pyarrow as pa  # pylint: disable=g-import-not-at-top
    rows = len(self._values[0]) if self._values else 0
    if not rows:
      return
    arrays = [_binary(values) if field.type == pa.binary() and None not in values
              else pa.array(values, type=field.type)
              for values, field in zip(self._values, self._schema)]
    self._values = [[] for _ in self._columns]
    self._buffered = 0
    self._writer.write_table(pa.Table.from_arrays(arrays, schema=self._schema),
                             row_group_size=rows)

  def close(self) -> None:
    if self._writer is None:
      return
    try:
      self._flush()
      self._writer.close()
    finally:
      self._writer = None
      self._file.close()
    files.write_text(self._path + DIGEST_SUFFIX, self._digest.hexdigest())


def _binary(values: List[bytes]):
  """A binary column of `values` (none null) from one joined buffer and its offsets:
  a third of pa.array's time on encoded images, which it copies one object at a time."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import pyarrow as pa  # pylint: disable=g-import-not-at-top
  offsets = np.zeros(len(values) + 1, dtype=np.int32)
  np.cumsum([len(v) for v in values], out=offsets[1:])
  return pa.Array.from_buffers(pa.binary(), len(values),
                               [None, pa.py_buffer(offsets), pa.py_buffer(b''.join(values))])


def open_path(ctx, split: str, path: str) -> _Sink:  # pylint: disable=unused-argument
  """A sink writing one Parquet shard at `path` in the run's schema and, at `close`, its
  records' digest at `<path>.sha256`.

  Args:
    ctx: The run's LayoutContext, whose `features` make the columns (`schema`).
    split: The shard's split; unused.
    path: The shard file, a local path (written through Arrow's own file) or a URI.
  """
  return _Sink(ctx, path)


def spec(ctx) -> Tuple[Any, ...]:
  """What a shard's bytes depend on beyond its records: the columns and the class
  names of the schema's metadata.

  Args:
    ctx: The LayoutContext whose columns and label names are compared.
  """
  return tuple(columns(ctx)), tuple(ctx.label_names())


def content_digest(ctx, split_files: Dict[str, Sequence[str]],
                   digests: Dict[str, str]) -> str:
  """SHA-256 of what `datasets` reads from the layout: the columns and label names
  (`spec`), and the records digests (their `.sha256`) of each split's shards in order,
  the splits the card names.

  Args:
    ctx: The run's LayoutContext.
    split_files: {split: its shard files' names in FOLDER, in order}, of the splits the
      card names (those with records).
    digests: {shard file name: its records' digest}.
  """
  keys, names = spec(ctx)
  content = {'columns': [list(c) for c in keys], 'label_names': list(names),
             'splits': [[split, [digests[n] for n in shards]]
                        for split, shards in split_files.items()]}
  return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def config_name(digest: str) -> str:
  """The card's config name for an output: CONFIG_PREFIX and the first 16 hex digits of
  its digest.

  Args:
    digest: The output's `content_digest` (hex).
  """
  return CONFIG_PREFIX + digest[:16]


def card(split_files: Dict[str, Sequence[str]], records: Dict[str, int],
         name: str = 'default') -> str:
  """The dataset card: YAML `configs`, one config of name `name`, naming the files of each
  split that has records (JSON strings, which YAML reads as they are), then a line on
  what the files are.

  Args:
    split_files: {split: its shard files' names in FOLDER, in order}.
    records: {split: records written}; a split with none (or absent) is left out of
      `configs`.
    name: The config's name (`config_name` of the output's digest: what `datasets`
      caches it under).
  """
  lines = ['---', 'configs:', f'- config_name: {json.dumps(name)}', '  data_files:']
  for split, names in split_files.items():
    if records.get(split):
      lines += [f'  - split: {json.dumps(split)}', '    path:']
      lines += [f'    - {json.dumps(n)}' for n in names]
  lines += ['---', '', '# Images as Parquet (tfrecorder-component)', '',
            'A row a `tf.train.Example` record of the TFX shards beside this folder',
            "(`../Split-<split>/`), a column a record key (`image/encoded` the image file's",
            "bytes). Read with `datasets.load_dataset('<this folder>')`, or",
            "`pandas.read_parquet` / `pyarrow.parquet.read_table` on a split's files.",
            'The config is named by a digest of the rows, so that `datasets` caches each',
            'output apart.', '']
  return '\n'.join(lines)


def finish(ctx, counts: Dict[str, List[int]]) -> Dict[str, Any]:
  """Reads and removes the shards' digests and writes the dataset card (CARD), its config
  named by their `content_digest`, into the layout's folder; returns the layout's entry
  in the index: its shard files per split, the card's name and ROW_GROUP_BYTES (not the
  config's name, which follows the records' order in the shards, an order two engines
  need not share, where the index and summary.json are the same on both).

  Args:
    ctx: The run's LayoutContext, whose `output_dir` holds the layout's folder.
    counts: {split: [records per shard]} of every shard written.
  """
  folder = ctx.folder('parquet')
  names = split_files(counts, shard_name)
  digests = {}
  for shards in names.values():
    for name in shards:
      path = files.join(folder, name) + DIGEST_SUFFIX
      if not files.is_local(path):  # Beam's file systems, where no Arrow client serves it
        storage.prepare_file_systems(path)
      with storage.open_object(path) as f:  # gs://, s3://: the Arrow client that wrote it
        digests[name] = f.read().decode('ascii').strip()
      files.remove(path)
  records = {split: sum(n) for split, n in counts.items()}
  config = config_name(content_digest(
      ctx, {split: shards for split, shards in names.items() if records.get(split)}, digests))
  files.write_text(files.join(folder, CARD), card(names, records, config))
  return {'files': names, 'card': CARD, 'row_group_bytes': ROW_GROUP_BYTES}
