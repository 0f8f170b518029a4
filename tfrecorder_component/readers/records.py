"""Converted records without TensorFlow: numpy dicts for PyTorch, JAX or plain Python.

    for record in iter_records('/tmp/out', 'train', keys=['image/encoded',
                                                         'image/class/label']):
      ...

    dataset = RecordDataset('/tmp/out', 'train', decode_images=True)
    loader = torch.utils.data.DataLoader(dataset, batch_size=32, num_workers=2,
                                         collate_fn=collate_detection)

Each record comes as {key: value}, typed by the output's `examples.json`: a key that every
record holds with exactly one value (`scalar` there) as a numpy scalar (np.int64,
np.float32) or `bytes`; any other key as a 1-D array (int64, float32, or an object array
of `bytes`), empty where a record lacks it, so every record has the same keys.
`decode_images=True` adds the pixels of `image/encoded` under `image` (Pillow).

Where it reads: the `tfrecord` layout's uncompressed shards when the output has it
(`layout='auto'`) and their `.idx` files, else TFX's GZIP shards `Split-<split>/...`.

Sharding, so that `world_size` ranks x `num_workers` DataLoader workers read every record
of the split exactly once, whatever the number of shard files: reader
`rank * num_workers + worker` of R readers takes
- with `.idx` files: records [r * N // R, (r + 1) * N // R) of the split's N records in
  shard order (counts within 1 of each other), seeking to the first: it reads no byte
  of another reader's records;
- without (GZIP shards): each shard's R slots are dealt to readers, slot c of shard k
  to reader (k * R + c) // S (S shards), and its record j takes slot j % R (the slots
  interleaved so that its first records go to different readers): whole shards when
  S is a multiple of R, else shards shared record by record between neighbouring
  readers. Each reader opens only the shards it has slots of (a shared one read whole,
  skipping the others' records) and takes about N / R records when the shards hold
  many more than R each, of about the same size (as `num_shards` writes them).
Worker and rank default to PyTorch's (`torch.utils.data.get_worker_info()` inside a
DataLoader worker, `torch.distributed` when it is initialized), read only from a torch
the program has already imported (no torch imported, no DataLoader worker): else 0 of 1.

Nothing here imports TensorFlow. torch is imported only where it is installed, when a
`RecordDataset` is made (to be a `torch.utils.data.IterableDataset` too) or a batch is
collated with `tensors=True`; `iter_records` never imports it.

Length: the reader without TensorFlow: its plan of shard parts across ranks and
DataLoader workers, parsing, image decoding and the PyTorch dataset, which share that
plan.
"""
from __future__ import annotations

import dataclasses
import gzip
import io
import json
import posixpath
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from tfrecorder_component.record import example_proto
from tfrecorder_component.io import files
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.output import examples_json as index_lib
from tfrecorder_component.io import tfrecord as tfrecord_lib
from tfrecorder_component.feature_keys import (BBOX_XMAX, BBOX_XMIN, BBOX_YMAX, BBOX_YMIN,
                                               IMAGE_ENCODED, OBJECT_PREFIX)

IMAGE_KEY = IMAGE_ENCODED
DECODED_IMAGE_KEY = 'image'
BOX_KEYS_XYXY = (BBOX_XMIN, BBOX_YMIN,
                 BBOX_XMAX, BBOX_YMAX)
OBJECT_PREFIX = OBJECT_PREFIX
LAYOUTS = ('auto', 'tfrecord', 'tfx')
_DTYPES = {'int64': np.int64, 'float': np.float32}
_KINDS = {'int64_list': np.int64, 'float_list': np.float32}

Record = Dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Source:
  """What a split is read from: its shard files in order, with each one's record
  offsets (byte offset, framed size) from its `.idx` file, or None (GZIP shards).

  Attributes:
    split: The split's name.
    paths: The shard files, in order (local paths or URIs).
    compressed: Whether the shards are gzipped (TFX's shards; the `tfrecord` layout's
      are not).
    offsets: For each shard, an int64 array [records, 2] of each record's byte offset
      and framed size, read from its `.idx` file; None where the shards have none (GZIP
      shards, or an `.idx` file missing): `plan` then deals the shards' slots.
  """
  split: str
  paths: Tuple[str, ...]
  compressed: bool
  offsets: Optional[Tuple[np.ndarray, ...]] = None  # int64 [records, 2] a shard

  @property
  def counts(self) -> Optional[List[int]]:
    return None if self.offsets is None else [len(o) for o in self.offsets]


# --- the output's index and files -------------------------------------------------------


def read_index(output_dir: str) -> Dict[str, Any]:
  """The output's examples.json ({'split_names', 'records_per_split', 'task', 'features',
  'layouts'}); for an output written before it, the same from its report's summary.json
  (TFX shards only). ValueError when `output_dir` is not a finished output.

  Args:
    output_dir: An output folder of `convert` or an Examples artifact URI (local, gs://,
      s3://), finished (its `_SUCCESS` written).
  """
  why = output_paths.unfinished(output_dir, files.exists)
  if why:
    raise ValueError(why)
  if files.exists(files.join(output_dir, index_lib.INDEX_FILE)):
    return index_lib.read_index(output_dir)
  summary_path = files.join(output_dir, output_paths.REPORT_DIR, output_paths.SUMMARY_FILE)
  if not files.exists(summary_path):
    raise ValueError(f'{output_dir} has no {index_lib.INDEX_FILE} (nor report/summary.json): '
                     'convert it again')
  with files.open_file(summary_path) as f:
    summary = json.loads(f.read())
  splits = list(summary.get('records_per_split') or {})
  return {'split_names': splits, 'records_per_split': summary.get('records_per_split') or {},
          'task': None, 'features': summary.get('features') or {}, 'layouts': {}}


def _read_offsets(path: str) -> np.ndarray:
  """A `.idx` file: a line per record, its byte offset and framed size."""
  with files.open_file(path) as f:
    return np.array(f.read().split(), dtype=np.int64).reshape(-1, 2)


def split_source(output_dir: str, split: str, layout: str = 'auto',
                 index: Optional[Dict[str, Any]] = None) -> Source:
  """The files `split` is read from: `layout` 'tfrecord' (the layout's uncompressed
  shards, with their `.idx` files where all are there), 'tfx' (the GZIP shards), or
  'auto': 'tfrecord' when the output has it, else 'tfx'.

  Args:
    index: The output's index as `read_index` returns it; None: read here.
    layout: 'auto' (the default), 'tfrecord' or 'tfx'; another is a ValueError, as is
      'tfrecord' for an output without that layout.
    output_dir: An output folder of `convert` or an Examples artifact URI.
    split: The split's name; one the output does not have is a ValueError.
  """
  if layout not in LAYOUTS:
    raise ValueError(f'layout must be one of {", ".join(LAYOUTS)}, got {layout!r}')
  index = read_index(output_dir) if index is None else index
  splits = list(index.get('split_names') or [])
  if split not in splits:
    raise ValueError(f'{output_dir} has no split {split!r}; its splits: '
                     f'{", ".join(splits) or "none"}')
  written = (index.get('layouts') or {}).get('tfrecord')
  if layout == 'tfrecord' and not written:
    raise ValueError(f'{output_dir} has no tfrecord layout: convert with '
                     "layouts=['tfrecord'], or read layout='tfx'")
  if layout == 'tfx' or not written:
    folder = output_paths.split_dir(output_dir, split)
    # `folder/*`: listed without Beam on local disk (`files.match`).
    paths = sorted(p for p in files.match(files.join(folder, '*')) if posixpath.basename(
        p).startswith(f'{output_paths.TFRECORD_FILE_NAME}-'))
    return Source(split, tuple(paths), compressed=True)
  folder = files.join(output_dir, written['folder'])
  paths = tuple(files.join(folder, name) for name in written['files'].get(split, []))
  suffix = written.get('index_suffix')
  offsets = None
  if suffix and all(files.exists(p + suffix) for p in paths):
    offsets = tuple(_read_offsets(p + suffix) for p in paths)
  return Source(split, paths, compressed=False, offsets=offsets)


# --- who reads what ---------------------------------------------------------------------


def torch_worker() -> Tuple[int, int]:
  """(worker, num_workers) of the PyTorch DataLoader worker this runs in; (0, 1) outside
  one, or where the program has not imported torch (then it is in no worker)."""
  if 'torch' not in sys.modules:
    return 0, 1
  from torch.utils import data  # pylint: disable=g-import-not-at-top  (already loaded)
  info = data.get_worker_info()
  return (0, 1) if info is None else (int(info.id), int(info.num_workers))


def torch_rank() -> Tuple[int, int]:
  """(rank, world_size) of `torch.distributed` when initialized; else (0, 1)."""
  if 'torch' not in sys.modules:
    return 0, 1
  import torch.distributed as dist  # pylint: disable=g-import-not-at-top  (already loaded)
  if dist.is_available() and dist.is_initialized():
    return int(dist.get_rank()), int(dist.get_world_size())
  return 0, 1


def _pair(value: Optional[int], count: Optional[int], names: str,
          default: Callable[[], Tuple[int, int]]) -> Tuple[int, int]:
  if value is None and count is None:
    return default()
  if value is None or count is None:
    first, second = names.split('/')
    raise ValueError(f'give both {first} and {second}, or neither')
  if count < 1 or not 0 <= value < count:
    raise ValueError(f'{names} must be 0 <= {names.split("/")[0]} < '
                     f'{names.split("/")[1]}, got {value}/{count}')
  return int(value), int(count)


@dataclasses.dataclass(frozen=True)
class Part:
  """What one reader reads of one shard: records [first, end) (with `.idx` offsets), or,
  with `slots`, record j when j % modulus is in `slots` (GZIP shards); else all.

  Attributes:
    shard: The shard's index in `Source.paths`.
    first: The first record read (with `.idx` offsets), counted in the shard.
    end: The record after the last one read (with `.idx` offsets); None: read the
      shard from its start, all of it or by `slots`.
    slots: The slots (record numbers modulo `modulus`) this reader takes of a shared
      GZIP shard; None: every record.
    modulus: The number of slots a shared shard is dealt in: the number of readers.
  """
  shard: int
  first: int = 0
  end: Optional[int] = None
  slots: Optional[Tuple[int, ...]] = None
  modulus: int = 1


def _slot_owners(shard: int, shards: int, readers: int) -> List[int]:
  """The readers of a shard's `readers` slots, interleaved so that its first records go
  to different readers: slot c is given to reader (shard * readers + c) // shards."""
  owners = [(shard * readers + c) // shards for c in range(readers)]
  counts: Dict[int, int] = {}
  for o in owners:
    counts[o] = counts.get(o, 0) + 1
  order: List[int] = []
  rounds = 0
  while len(order) < readers:
    order.extend(o for o in sorted(counts) if counts[o] > rounds)
    rounds += 1
  return order


def plan(source: Source, reader: int, readers: int) -> List[Part]:
  """The parts of `source` that reader `reader` of `readers` reads (see the module's
  docstring): together, the readers' parts hold every record once.

  Args:
    reader: This reader's number, 0 to `readers` - 1 (rank * num_workers + worker).
    readers: The readers sharing the split (world_size * num_workers).
    source: The split's files (`split_source`); with offsets, the records are split by
      count, else the shards' slots are dealt.
  """
  counts = source.counts
  if counts is not None:
    total = sum(counts)
    lo, hi = reader * total // readers, (reader + 1) * total // readers
    parts, start = [], 0
    for k, n in enumerate(counts):
      a, b = max(lo, start), min(hi, start + n)
      if a < b:
        parts.append(Part(k, a - start, b - start))
      start += n
    return parts
  shards = len(source.paths)
  parts = []
  for k in range(shards):
    if not (k * readers) // shards <= reader <= (k * readers + readers - 1) // shards:
      continue  # the shard's slots go to other readers
    if (k * readers) // shards == (k * readers + readers - 1) // shards:
      parts.append(Part(k))  # the whole shard is this reader's
      continue
    slots = tuple(c for c, o in enumerate(_slot_owners(k, shards, readers)) if o == reader)
    parts.append(Part(k, slots=slots, modulus=readers))
  return parts


# --- reading ------------------------------------------------------------------------------


def read_part(source: Source, part: Part) -> Iterator[bytes]:
  """The serialized records of one part of `plan`.

  Args:
    part: The part to read, one of `plan(source, ...)`'s.
    source: The split's files the part was planned from.
  """
  path = source.paths[part.shard]
  with files.open_file(path) as raw:
    if part.end is not None:  # with offsets: seek to the first, read to the end
      raw.seek(int(source.offsets[part.shard][part.first, 0]))
      yield from tfrecord_lib.read_frames(raw, path, part.first, part.end - part.first)
      return
    stream = gzip.GzipFile(fileobj=raw) if source.compressed else raw
    with stream:
      if part.slots is None:
        yield from tfrecord_lib.read_frames(stream, path)
      else:
        slots, modulus = frozenset(part.slots), part.modulus
        yield from tfrecord_lib.read_frames(stream, path, keep=lambda j: j % modulus in slots)


def _values(feature) -> Tuple[Optional[str], Any]:
  kind = feature.WhichOneof('kind')
  return kind, (getattr(feature, kind).value if kind else ())


def _array(kind: Optional[str], values, type_name: str) -> np.ndarray:
  if kind == 'bytes_list' or (kind is None and type_name == 'bytes'):
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out
  dtype = _KINDS.get(kind) or _DTYPES.get(type_name.split('|')[0], np.float32)
  return np.array(values, dtype=dtype)


def _scalar(kind: Optional[str], values):
  if kind == 'bytes_list':
    return values[0]
  return _KINDS[kind](values[0])


def parse_record(data: bytes, features: Dict[str, Dict[str, Any]],
                 keys: Optional[Sequence[str]] = None) -> Record:
  """One serialized record as {key: numpy scalar, bytes or 1-D array}, typed by
  `features` (examples.json's): every key of `keys` (default: all of `features`, and any
  key the record has beyond them).

  Args:
    data: One serialized tf.train.Example.
    features: {key: {'type': 'bytes' | 'int64' | 'float', 'scalar': ...}}, the
      `features` of the output's index; a key not in it is read as a 1-D array.
    keys: The keys to give, each present in the result (an empty array where the record
      lacks it); None: every key of `features` and of the record.
  """
  feature_map = example_proto.Example.FromString(data).features.feature
  wanted = list(features) if keys is None else keys
  out: Record = {}
  for key in wanted:
    info = features.get(key) or {'type': 'float', 'scalar': False}
    kind, values = _values(feature_map[key]) if key in feature_map else (None, ())
    if info.get('scalar') and len(values) == 1:
      out[key] = _scalar(kind, values)
    else:
      out[key] = _array(kind, values, info['type'])
  if keys is None:
    for key in feature_map:
      if key not in out:
        kind, values = _values(feature_map[key])
        out[key] = _array(kind, values, 'float')
  return out


def decode_image(data: bytes, channels: Optional[int] = None) -> np.ndarray:
  """Encoded image bytes as an array [height, width, channels] with Pillow: uint8
  (uint16 for a 16-bit grayscale PNG), channels as stored (1 gray, 2 gray + alpha,
  3 RGB, 4 RGBA; palette images as RGB, or RGBA when they have transparency; CMYK as
  RGB), or `channels` (1, 3 or 4) converted to. The first frame of an animation.

  Args:
    channels: 1, 3 or 4 to convert to (1 keeps a 16-bit grayscale PNG 16-bit); None:
      as stored. Another value is a ValueError.
    data: The encoded image (any format Pillow opens).
  """
  from PIL import Image  # pylint: disable=g-import-not-at-top
  with Image.open(io.BytesIO(data)) as im:
    im.load()
    mode = im.mode
    if channels is not None:
      target = {1: 'L', 3: 'RGB', 4: 'RGBA'}.get(channels)
      if target is None:
        raise ValueError(f'channels must be 1, 3 or 4, got {channels}')
      if mode.startswith('I;16') and channels == 1:
        target = mode
    elif mode == '1':
      target = 'L'
    elif mode in ('P', 'PA'):
      target = 'RGBA' if mode == 'PA' or 'transparency' in im.info else 'RGB'
    elif mode in ('L', 'LA', 'RGB', 'RGBA') or mode.startswith('I;16'):
      target = mode
    else:  # CMYK, YCbCr, LAB, HSV, I, F
      target = 'RGB'
    if target != mode:
      im = im.convert(target)
    array = np.array(im)  # writable (torch.from_numpy warns on a read-only array)
  if array.dtype.byteorder not in ('=', '|'):  # I;16B
    array = array.astype(array.dtype.newbyteorder('='))
  return array[:, :, None] if array.ndim == 2 else array


class RecordDataset:
  """One split of an output, iterated as {key: numpy value} records; a PyTorch
  `IterableDataset` when torch can be imported (see `__new__`).

  `output_dir`: an output folder of `convert` or an Examples artifact URI (local, gs://,
  s3://). `rank`/`world_size` and `worker`/`num_workers` say which part this reader
  takes (see the module docstring); each pair defaults to PyTorch's, else (0, 1): the
  rank `torch.distributed` has when the dataset is made (make it in the training
  process, after `init_process_group`), the worker where it is iterated.
  `keys`: the keys to give (default all; ValueError naming the keys there are for an
  unknown one). `decode_images`: add `image`, the pixels of `image/encoded`
  (`decode_image`, `channels`). `layout`: 'auto', 'tfrecord' or 'tfx' (`split_source`).
  `shuffle_buffer` > 0 shuffles each reader's records through a buffer of that many,
  seeded by `seed`, the epoch (`set_epoch`) and the reader, so an epoch's order is
  reproducible and every record still comes once. `transform`: a function of each
  record whose result is yielded instead (resizing, augmenting: in the DataLoader
  workers); it must pickle where workers are spawned (a module-level function).

  Args:
    output_dir: An output folder of `convert` or an Examples artifact URI.
    split: The split to read.
    rank: This process's rank of `world_size` (default: torch.distributed's, else 0).
    world_size: The ranks reading the split (default: torch.distributed's, else 1).
    worker: This DataLoader worker of `num_workers` (default: PyTorch's, else 0).
    num_workers: The DataLoader's workers (default: PyTorch's, else 1).
    keys: The keys to give (default: all).
    decode_images: Add `image`, the pixels of `image/encoded`.
    channels: Channels of the decoded images (default: as stored).
    layout: 'auto', 'tfrecord' or 'tfx': which shards to read.
    shuffle_buffer: Records shuffled through a buffer of this many (0: in order).
    seed: The shuffle's seed, with the epoch and the reader.
    transform: A function of each record, whose result is yielded instead.
  """

  def __new__(cls, *args, **kwargs):  # pylint: disable=unused-argument
    if cls is RecordDataset and _torch_importable():
      cls = _torch_class()
    return super().__new__(cls)

  def __init__(self, output_dir: str, split: str, *, rank: Optional[int] = None,
               world_size: Optional[int] = None, worker: Optional[int] = None,
               num_workers: Optional[int] = None, keys: Optional[Sequence[str]] = None,
               decode_images: bool = False, channels: Optional[int] = None,
               layout: str = 'auto', shuffle_buffer: int = 0, seed: int = 0,
               transform: Optional[Callable[[Record], Any]] = None):
    self.output_dir = output_dir
    self.split = split
    self.index = read_index(output_dir)
    self.source = split_source(output_dir, split, layout, self.index)
    self.features: Dict[str, Dict[str, Any]] = self.index.get('features') or {}
    if keys is not None:
      unknown = [k for k in keys if k not in self.features]
      if unknown:
        raise ValueError(f'the records have no key {", ".join(map(repr, unknown))}; their '
                         f'keys: {", ".join(sorted(self.features))}')
      keys = list(keys)
    if decode_images and keys is not None and IMAGE_KEY not in keys:
      keys.append(IMAGE_KEY)
    if channels not in (None, 1, 3, 4):
      raise ValueError(f'channels must be 1, 3 or 4, got {channels}')
    self.keys = keys
    self.decode_images = decode_images
    self.channels = channels
    self.shuffle_buffer = int(shuffle_buffer)
    self.seed = seed
    self.transform = transform
    self.epoch = 0
    # The rank now, in the training process (a DataLoader worker has no process group);
    # the worker when iterated, in the worker.
    self.rank, self.world_size = _pair(rank, world_size, 'rank/world_size', torch_rank)
    self._worker = (worker, num_workers)
    _pair(worker, num_workers, 'worker/num_workers', lambda: (0, 1))

  def num_records(self) -> int:
    """The split's records, all readers together."""
    return int((self.index.get('records_per_split') or {}).get(self.split, 0))

  def set_epoch(self, epoch: int) -> None:
    """The epoch, which seeds the shuffle with `seed`: call it before each epoch.

    Args:
      epoch: The epoch's number (0 at first); a whole number.
    """
    self.epoch = int(epoch)

  def reader(self) -> Tuple[int, int]:
    """(this reader's number, readers): rank * num_workers + worker of
    world_size * num_workers, the worker's taken where this runs."""
    worker, num_workers = _pair(*self._worker, 'worker/num_workers', torch_worker)
    return self.rank * num_workers + worker, self.world_size * num_workers

  def serialized(self) -> Iterator[bytes]:
    """This reader's serialized records, unparsed, in file order."""
    reader, readers = self.reader()
    for part in plan(self.source, reader, readers):
      yield from read_part(self.source, part)

  def __iter__(self) -> Iterator[Any]:
    records = (self._record(data) for data in self.serialized())
    if self.shuffle_buffer > 0:
      reader, _ = self.reader()
      records = _shuffled(records, self.shuffle_buffer,
                          np.random.default_rng([self.seed, self.epoch, reader]))
    if self.transform is not None:
      records = map(self.transform, records)
    return records

  def _record(self, data: bytes) -> Record:
    record = parse_record(data, self.features, self.keys)
    if self.decode_images:
      record[DECODED_IMAGE_KEY] = decode_image(record[IMAGE_KEY], self.channels)
    return record


def _shuffled(items: Iterator[Record], size: int, rng: np.random.Generator
              ) -> Iterator[Record]:
  buffer: List[Record] = []
  for item in items:
    if len(buffer) < size:
      buffer.append(item)
      continue
    i = int(rng.integers(size))
    buffer[i], item = item, buffer[i]
    yield item
  rng.shuffle(buffer)
  yield from buffer


def iter_records(output_dir: str, split: str, **options) -> Iterator[Record]:
  """The records of one split as {key: numpy value} dicts.

  Args:
    output_dir: An output folder of `convert` or an Examples artifact URI.
    split: The split to read.
    **options: `RecordDataset`'s options (rank, world_size, worker, num_workers, keys,
      decode_images, channels, layout, shuffle_buffer, seed, transform).

  Returns:
    An iterator of the records, as `RecordDataset` gives them."""
  return iter(_PlainRecordDataset(output_dir, split, **options))


class _PlainRecordDataset(RecordDataset):
  """RecordDataset never made a torch IterableDataset."""


# --- PyTorch, where it is there -----------------------------------------------------------

_TORCH_CLASS: List[type] = []


def _torch_importable() -> bool:
  import importlib.util  # pylint: disable=g-import-not-at-top
  return 'torch' in sys.modules or importlib.util.find_spec('torch') is not None


def _torch_class() -> type:
  """RecordDataset as a subclass of `torch.utils.data.IterableDataset` too (made once),
  so that a DataLoader iterates it instead of indexing it. Pickled by name (spawned
  workers): module `__getattr__` makes it again there."""
  if not _TORCH_CLASS:
    from torch.utils import data  # pylint: disable=g-import-not-at-top

    # pylint: disable-next=abstract-method
    class TorchRecordDataset(RecordDataset, data.IterableDataset):
      __doc__ = RecordDataset.__doc__

    TorchRecordDataset.__qualname__ = 'TorchRecordDataset'
    _TORCH_CLASS.append(TorchRecordDataset)
  return _TORCH_CLASS[0]


def __getattr__(name: str):
  if name == 'TorchRecordDataset':
    return _torch_class()
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


# --- batches -------------------------------------------------------------------------------


def _one_dimensional(value: Any) -> np.ndarray:
  if isinstance(value, np.ndarray):
    return value
  if isinstance(value, bytes):
    out = np.empty(1, dtype=object)
    out[0] = value
    return out
  return np.array([value])


def collate_detection(batch: Sequence[Record], tensors: bool = False) -> Dict[str, Any]:
  """A list of records as one batch, for a DataLoader's `collate_fn`: fixed-size fields
  stacked (numbers as arrays [batch], decoded images as [batch, h, w, c] when all have
  one shape), and the rest kept as lists, one item per record: bytes, images of several
  sizes, and every 1-D key (boxes, labels: ragged). An `image/object/` key is a list of
  1-D arrays even where each record has one object (which makes it scalar in
  examples.json). Where the records have the four `image/object/bbox/*` keys, `boxes`
  is added: a float32 [objects, 4] array per record as (xmin, ymin, xmax, ymax),
  normalised (torchvision's order; times width and height for pixels).
  `tensors=True` gives torch tensors for the arrays
  (`functools.partial(collate_detection, tensors=True)`).

  Args:
    batch: The records of a batch, as `RecordDataset` gives them.
    tensors: Give torch tensors instead of numpy arrays.

  Returns:
    {key: stacked array, or a list with an item a record}, and `boxes` for detection."""
  if not batch:
    return {}
  out: Dict[str, Any] = {}
  for key in batch[0]:
    values = [record[key] for record in batch]
    first = values[0]
    if key.startswith(OBJECT_PREFIX):  # per object: ragged even where each has one
      out[key] = [_one_dimensional(v) for v in values]
    elif isinstance(first, np.ndarray) and first.dtype != object and key != DECODED_IMAGE_KEY:
      out[key] = values  # a 1-D key: ragged
    elif isinstance(first, (np.generic, int, float)) and not isinstance(first, bytes):
      out[key] = np.array(values)
    elif (key == DECODED_IMAGE_KEY and all(isinstance(v, np.ndarray) for v in values)
          and len({v.shape for v in values}) == 1):
      out[key] = np.stack(values)
    else:
      out[key] = values
  if all(k in batch[0] for k in BOX_KEYS_XYXY):
    out['boxes'] = [np.stack([np.asarray(r[k], np.float32).reshape(-1)
                              for k in BOX_KEYS_XYXY], axis=-1) for r in batch]
  if tensors:
    import torch  # pylint: disable=g-import-not-at-top
    for key, value in out.items():
      if isinstance(value, np.ndarray):
        out[key] = torch.as_tensor(value)
      elif isinstance(value, list) and value and all(
          isinstance(v, np.ndarray) and v.dtype != object for v in value):
        out[key] = [torch.as_tensor(v) for v in value]
  return out
