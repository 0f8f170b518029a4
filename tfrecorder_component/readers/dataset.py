"""A fast reader: converted records as a `tf.data.Dataset` of (image, label) batches.

    ds = tfrecorder_component.load_dataset('/tmp/out', 'train', batch_size=64,
                                           image_size=(224, 224))
    model.fit(ds, epochs=5)

Shards are read with parallel interleave, records parsed per batch, images decoded and
resized in parallel maps, and batches prefetched; `cache=True` keeps the decoded
records after the first epoch (and, with `shuffle_buffer`, shuffles them anew each one).

For a pipeline of one's own, every key of the records parsed as written:

    parse = tfrecorder_component.readers.dataset.parse_fn('/tmp/out')
    ds = tf.data.TFRecordDataset(files, 'GZIP').batch(64).map(parse)

`feature_spec` gives the spec `parse_fn` uses: a scalar `FixedLenFeature` for each key
that every record holds with exactly one value (`scalar` in examples.json), else a
`RaggedFeature`.
"""
from __future__ import annotations

import json
import logging
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import tensorflow as tf

from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.record import labels as labels_lib
from tfrecorder_component.output import examples_json as index_lib
from tfrecorder_component.feature_keys import (BBOX_XMAX, BBOX_XMIN, BBOX_YMAX, BBOX_YMIN,
                                               CLASS_LABEL, IMAGE_ENCODED, OBJECT_CLASS_LABEL)

IMAGE_KEY = IMAGE_ENCODED
LABEL_KEY = CLASS_LABEL


def shard_patterns(examples: Union[str, Sequence[str]], split: Optional[str]) -> list:
  """File patterns of a split: `<examples>/Split-<split>/*` for an output folder or
  Examples artifact URI, or the given patterns / folders (as a Trainer's `train_files`).

  Args:
    examples: An output folder of `convert` or an Examples artifact URI, finished (its
      `_SUCCESS` written); or a list of shard patterns or split folders, a folder
      becoming `<folder>/*`.
    split: The split to read, with an output folder or artifact URI (None there is a
      ValueError, as is a split it has no records in); ignored with a list.
  """
  if isinstance(examples, str):
    if split is None:
      raise ValueError('give the split to read, e.g. split="train"')
    why = output_paths.unfinished(examples, tf.io.gfile.exists)
    if why:
      raise ValueError(why)
    pattern = os.path.join(output_paths.split_dir(examples, split), '*')
    if not tf.io.gfile.glob(pattern):
      splits = sorted(os.path.basename(p.rstrip('/'))[len(output_paths.SPLIT_PREFIX):]
                      for p in tf.io.gfile.glob(output_paths.split_dir(examples, '*')))
      raise ValueError(f'{examples} has no records in split {split!r}; its splits: '
                       f'{", ".join(splits) or "none"}')
    return [pattern]
  return [os.path.join(p, '*') if tf.io.gfile.isdir(p) else p for p in examples]


def decode_images(encoded: tf.Tensor, image_size: Tuple[int, int], channels: int
                  ) -> tf.Tensor:
  """A batch of encoded images -> float32 [batch, height, width, channels] in [0, 1].

  Args:
    channels: Channels each image is decoded to (1, 3 or 4), whatever it has.
    encoded: A string tensor [batch] of encoded images (JPEG, PNG, GIF's first frame,
      BMP).
    image_size: (height, width) every image is resized to (bilinear, aspect ratio not
      kept).
  """
  def one(data):
    image = tf.io.decode_image(data, channels=channels, expand_animations=False)
    return tf.image.resize(image, image_size) / 255.0
  return tf.map_fn(one, encoded, fn_output_signature=tf.TensorSpec(
      [*image_size, channels], tf.float32))


LABEL_MODES = ('auto', 'id', 'multi_hot', 'ragged', 'boxes')
BOX_KEYS = (BBOX_YMIN, BBOX_XMIN, BBOX_YMAX,
            BBOX_XMAX)
OBJECT_LABEL_KEY = OBJECT_CLASS_LABEL
_SNIFF_RECORDS = 1000


def _label_folders(examples: Union[str, Sequence[str]]) -> List[str]:
  """The folders holding label_map.pbtxt: the output folder, or the parents of the
  split folders or shard patterns (a Trainer's `train_files`, one per span)."""
  if isinstance(examples, str):
    return [examples]
  folders = []
  for path in examples:
    path = path.rstrip('/')
    if not tf.io.gfile.isdir(path):
      path = os.path.dirname(path)
    folder = os.path.dirname(path)
    if folder not in folders:
      folders.append(folder)
  return folders


def label_map(examples: Union[str, Sequence[str]]) -> Dict[str, int]:
  """{label: id} of what `load_dataset(examples)` reads: one output's label map, or for
  several (a window of spans) their union; ValueError in one line when their maps
  disagree (a label with two ids, or an id with two labels), so ids are never mixed.

  Args:
    examples: An output folder or Examples artifact URI, or a list of shard patterns or
      split folders, whose parent folders hold the label maps; a folder without
      label_map.pbtxt adds nothing.
  """
  maps = []
  for folder in _label_folders(examples):
    path = os.path.join(folder, labels_lib.LABEL_MAP_FILE)
    if tf.io.gfile.exists(path):  # read with TensorFlow's file systems: no Beam import
      with tf.io.gfile.GFile(path, 'rb') as f:
        maps.append((folder, labels_lib.parse_label_map(f.read().decode('utf-8'), path)))
  return labels_lib.merged_label_maps(maps)


_DTYPES = {'bytes': tf.string, 'int64': tf.int64, 'float': tf.float32}
Spec = Dict[str, Union[tf.io.FixedLenFeature, tf.io.RaggedFeature]]


def _index_features(folder: str) -> Dict[str, Dict[str, Any]]:
  """The `features` of one output's examples.json (its report's summary.json when it has
  none: an output written before the index was)."""
  for path in (os.path.join(folder, index_lib.INDEX_FILE),
               os.path.join(folder, output_paths.REPORT_DIR, output_paths.SUMMARY_FILE)):
    if tf.io.gfile.exists(path):  # read with TensorFlow's file systems: no Beam import
      with tf.io.gfile.GFile(path, 'rb') as f:
        return json.loads(f.read()).get('features') or {}
  raise ValueError(f'{folder} has no {index_lib.INDEX_FILE}: not an output of convert or an '
                   'Examples artifact of ImageExampleGen')


def read_features(examples: Union[str, Sequence[str], Dict[str, Any]]
                  ) -> Dict[str, Dict[str, Any]]:
  """{key: {'type': 'bytes' | 'int64' | 'float', 'records', 'scalar'}} of the records of
  `examples`, as examples.json lists them: an output folder or Examples artifact URI, a
  list of shard patterns or split folders (as `load_dataset` takes; several outputs' are
  merged: a key is scalar only where it is in all of them), or an index or `features`
  dict already read.

  Args:
    examples: An output folder or Examples artifact URI, a list of shard patterns or
      split folders, a whole examples.json dict, or its `features` dict (returned as
      it is). A folder without examples.json (or an older output's summary.json) is a
      ValueError.
  """
  if isinstance(examples, dict):
    inner = examples.get('features')
    if isinstance(inner, dict) and 'type' not in inner:  # a whole examples.json
      return inner
    return examples
  merged: Dict[str, Dict[str, Any]] = {}
  folders = _label_folders(examples)
  for folder in folders:
    for key, f in _index_features(folder).items():
      entry = merged.setdefault(key, {'types': set(), 'records': 0, 'outputs': 0,
                                      'scalar': True})
      entry['types'].update(f['type'].split('|'))
      entry['records'] += f['records']
      entry['outputs'] += 1
      entry['scalar'] = entry['scalar'] and f['scalar']
  return {key: {'type': '|'.join(sorted(e['types'])), 'records': e['records'],
                'scalar': e['scalar'] and e['outputs'] == len(folders)}
          for key, e in sorted(merged.items())}


def feature_spec(examples: Union[str, Sequence[str], Dict[str, Any]],
                 keys: Optional[Sequence[str]] = None) -> Spec:
  """The `tf.io.parse_example` spec of every key of the records (or of `keys`).

  A key every record holds with exactly one value (`scalar` in examples.json) is a
  `FixedLenFeature([], dtype)`: a dense [batch] tensor, never missing. Any other key is
  a `RaggedFeature(dtype)`: a RaggedTensor [batch, None], an empty row for a record
  without it (a `VarLenFeature` would give a SparseTensor, which batches, pads
  (`.to_tensor()`) and feeds Keras less readily; ragged is what `load_dataset` uses).
  dtypes: bytes tf.string, int64 tf.int64, float tf.float32. A key written with two
  types (see `read_features`) has no single dtype: left out, with a warning, unless
  asked for in `keys`, which is then a ValueError.

  Args:
    examples: An output folder, an Examples artifact URI, a list of shard patterns or
      split folders, or the `features` of an examples.json already read.
    keys: The keys to give (default: all).

  Returns:
    {key: FixedLenFeature or RaggedFeature} for `tf.io.parse_example`.
  """
  features = read_features(examples)
  wanted = list(features) if keys is None else list(keys)
  spec: Spec = {}
  for key in wanted:
    if key not in features:
      raise ValueError(f'the records have no key {key!r}; their keys: '
                       f'{", ".join(sorted(features))}')
    kind = features[key]['type']
    if kind not in _DTYPES:
      message = (f'{key} was written as {kind}, no single dtype: declare the column\'s '
                 'type when converting (feature_types / --feature-type)')
      if keys is not None:
        raise ValueError(message)
      logging.warning('feature_spec leaves %s out: %s', key, message)
      continue
    dtype = _DTYPES[kind]
    spec[key] = (tf.io.FixedLenFeature([], dtype) if features[key]['scalar']
                 else tf.io.RaggedFeature(dtype))
  return spec


def parse_examples(serialized: tf.Tensor, spec: Spec) -> Dict[str, tf.Tensor]:
  """Serialized records parsed by `spec`: a batch ([batch] strings, as after
  `.batch(n)`) with `tf.io.parse_example`, one record (a scalar string) with
  `tf.io.parse_single_example` (ragged keys then come as 1-D tensors).

  Args:
    serialized: Serialized tf.train.Example records: a string tensor [batch], or a
      scalar string for one record (anything `tf.convert_to_tensor` makes one of).
    spec: {key: FixedLenFeature or RaggedFeature}, as `feature_spec` gives it.
  """
  serialized = tf.convert_to_tensor(serialized, tf.string)
  if serialized.shape.rank == 0:
    return tf.io.parse_single_example(serialized, spec)
  return tf.io.parse_example(serialized, spec)


def parse_fn(examples: Union[str, Sequence[str], Dict[str, Any]],
             keys: Optional[Sequence[str]] = None
             ) -> Callable[[tf.Tensor], Dict[str, tf.Tensor]]:
  """A function for `Dataset.map` that parses records into {key: tensor} by
  `feature_spec(examples, keys)`, batched or not:

      parse = parse_fn('/tmp/out')
      files = tf.io.gfile.glob('/tmp/out/Split-train/*')
      ds = tf.data.TFRecordDataset(files, 'GZIP').batch(32).map(parse)

  Args:
    examples: What `feature_spec` takes.
    keys: The keys to parse (default: all).

  Returns:
    A function of serialized records (a batch, or one) to {key: tensor}.
  """
  spec = feature_spec(examples, keys)
  return lambda serialized: parse_examples(serialized, spec)


def _sniff_mode(patterns: List[str], label_key: str) -> str:
  """'boxes' for detection records, 'multi_hot' if one of the first records has several
  labels, else 'id'."""
  files = sorted(f for p in patterns for f in tf.io.gfile.glob(p))
  for data in tf.data.TFRecordDataset(files, compression_type='GZIP').take(_SNIFF_RECORDS):
    feature = tf.train.Example.FromString(data.numpy()).features.feature
    if BOX_KEYS[0] in feature:
      return 'boxes'
    if len(feature[label_key].int64_list.value) > 1:
      return 'multi_hot'
  return 'id'


def load_dataset(examples: Union[str, Sequence[str]], split: Optional[str] = 'train',
                 batch_size: int = 32, image_size: Tuple[int, int] = (224, 224),
                 channels: int = 3, label_key: str = LABEL_KEY, labels: str = 'auto',
                 num_classes: Optional[int] = None,
                 shuffle_buffer: int = 0, cache: bool = False, repeat: bool = False,
                 drop_remainder: bool = False) -> tf.data.Dataset:
  """(image, label) batches of one split of converted records, whatever they hold.

  `examples`: an output folder of `convert` or an Examples artifact URI (with `split`),
  or a list of shard patterns or split folders (a Trainer's `fn_args.train_files`,
  several spans' when a resolver gives it a window: their label maps must agree, as
  they do when each span kept the ids of the one before; see `label_map`).
  Images come as float32 in [0, 1], resized to `image_size` with `channels` channels.
  The label part of each element, by `labels`:

  - 'id': int64 [batch], the id of `label_key` (see `read_label_map`); -1 for a record
    without a label. A record with several labels fails with a message naming the modes
    that take it.
  - 'multi_hot': float32 [batch, num_classes], 1 for each label the record has (none for
    an unlabelled one); `num_classes` defaults to the size of the label map.
  - 'ragged': int64 RaggedTensor [batch, None], every label id of each record.
  - 'boxes' (detection records): {'boxes': float32 RaggedTensor [batch, None, 4] as
    (ymin, xmin, ymax, xmax) normalised, 'classes': int64 RaggedTensor [batch, None],
    the 1-based ids of `image/object/class/label`}; boxes follow any resize.
  - 'auto' (default): 'boxes' for detection records, 'multi_hot' if one of the first
    1,000 records has several labels, else 'id'.

  `shuffle_buffer` > 0 shuffles shards and records; `cache` keeps the decoded records
  in memory after the first pass (shuffled again on each pass when `shuffle_buffer` >
  0); `repeat` repeats forever.

  Args:
    examples: An output folder of `convert`, an Examples artifact URI, or a list of
      shard patterns or split folders.
    split: The split to read (with an output folder or artifact URI).
    batch_size: Records a batch.
    image_size: (height, width) the images are resized to.
    channels: Channels of the decoded images (1, 3 or 4).
    label_key: The key the class labels are read from.
    labels: 'auto', 'id', 'multi_hot', 'ragged' or 'boxes' (above).
    num_classes: With 'multi_hot': the length of the vectors (default: the label map's
      size).
    shuffle_buffer: Records shuffled through a buffer of this many (0: in order).
    cache: Keep the decoded records in memory after the first pass.
    repeat: Repeat forever.
    drop_remainder: Drop a last batch smaller than `batch_size`.

  Returns:
    A `tf.data.Dataset` of (image, label part) batches, prefetched.
  """
  if labels not in LABEL_MODES:
    raise ValueError(f'labels must be one of {", ".join(LABEL_MODES)}, got {labels!r}')
  patterns = shard_patterns(examples, split)
  ids = label_map(examples)  # several label maps: refused unless they agree
  if labels == 'auto':
    labels = _sniff_mode(patterns, label_key)
  if labels == 'multi_hot' and num_classes is None:
    num_classes = max(ids.values(), default=-1) + 1
  files = tf.data.Dataset.list_files(patterns, shuffle=shuffle_buffer > 0)
  dataset = files.interleave(
      lambda f: tf.data.TFRecordDataset(f, compression_type='GZIP'),
      cycle_length=tf.data.AUTOTUNE, num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=shuffle_buffer <= 0)
  # Cached and shuffled: the decoded records are cached one by one and shuffled after
  # the cache, so each pass over the cache comes in another order (shuffled before it,
  # every epoch would repeat the first one's batches).
  reshuffle = cache and shuffle_buffer > 0
  if shuffle_buffer > 0 and not reshuffle:
    dataset = dataset.shuffle(shuffle_buffer)
  features = {IMAGE_KEY: tf.io.FixedLenFeature([], tf.string)}
  if labels == 'boxes':
    features.update({k: tf.io.RaggedFeature(tf.float32) for k in BOX_KEYS})
    features[OBJECT_LABEL_KEY] = tf.io.RaggedFeature(tf.int64)
  else:
    features[label_key] = tf.io.RaggedFeature(tf.int64)
  size = tuple(int(s) for s in image_size)
  # Cached and reshuffled, the records are batched again after the cache: a remainder
  # dropped here would be the same records left out of every epoch.
  dataset = dataset.batch(batch_size, drop_remainder=drop_remainder and not reshuffle).map(
      lambda s: tf.io.parse_example(s, features), num_parallel_calls=tf.data.AUTOTUNE)
  dataset = dataset.map(lambda f: (decode_images(f[IMAGE_KEY], size, channels),
                                   _label_part(f, labels, label_key, num_classes)),
                        num_parallel_calls=tf.data.AUTOTUNE)
  if reshuffle:
    # ragged_batch batches the ragged label parts (`ragged`, `boxes`) as parse_example
    # made them, with int32 row splits, and the dense ones as `batch` does.
    dataset = dataset.unbatch().cache().shuffle(shuffle_buffer).ragged_batch(
        batch_size, drop_remainder=drop_remainder, row_splits_dtype=tf.int32)
  elif cache:
    dataset = dataset.cache()
  if repeat:
    dataset = dataset.repeat()
  return dataset.prefetch(tf.data.AUTOTUNE)


def _label_part(parsed, mode: str, label_key: str, num_classes: Optional[int]):
  if mode == 'boxes':
    boxes = tf.stack([parsed[k] for k in BOX_KEYS], axis=-1)
    return {'boxes': boxes, 'classes': parsed[OBJECT_LABEL_KEY]}
  ids = parsed[label_key]
  if mode == 'ragged':
    return ids
  if mode == 'multi_hot':
    hot = tf.one_hot(ids, num_classes, dtype=tf.float32)  # [batch, (labels), classes]
    return tf.minimum(tf.reduce_sum(hot, axis=1), 1.0)  # an unlabelled record: all 0
  counts = ids.row_lengths()
  check = tf.debugging.assert_less_equal(
      counts, tf.ones_like(counts), message='a record has several labels: load it with '
      'labels=multi_hot or labels=ragged')
  with tf.control_dependencies([check]):
    return tf.reshape(ids.to_tensor(default_value=-1, shape=[None, 1]), [-1])
