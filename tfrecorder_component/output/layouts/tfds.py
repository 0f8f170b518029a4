"""`tfds`: the records as TensorFlow Datasets reads them, in `tfds/`:

    <output>/tfds/images-<split>.tfrecord-SSSSS-of-NNNNN   uncompressed TFRecords
    <output>/tfds/dataset_info.json, features.json         TFDS's metadata
    <output>/tfds/*.labels.txt, metadata.json              class names; task, label names

loaded with `tfds.builder_from_directory('<output>/tfds')` (TFDS decodes the images,
names the classes, reads boxes as `BBoxFeature`s).

TFDS reads its own feature keys (a box is one key of 4 floats, where the Object Detection
API has four keys), so each of our records is rewritten as the example TFDS's own
builders (coco, voc, imagenet, oxford_iiit_pet) write, from the record alone, without
TensorFlow or TFDS (`example_proto`): the image bytes as they are, ids copied.

    every task      image: Image (the stored bytes; a GIF, which TFDS cannot decode into
                    one frame, is rewritten as a PNG of its first frame)
                    image/filename, image/source_id: Text
    classification  label: ClassLabel, -1 for an image without a label (as in TFDS's
                    imagenet2012 test split); where any image has several labels,
                    labels: Sequence(ClassLabel) instead (multi-label)
    detection       objects: Sequence({bbox: BBoxFeature [ymin, xmin, ymax, xmax]
                    normalised, label: ClassLabel (label_map id - 1), is_crowd, is_difficult,
                    is_truncated: bool, area: float32 (pixels), mask: Image (include_masks),
                    an object attribute under its name (attribute/<name> where the name is
                    taken)})
    segmentation    segmentation_mask: Image(shape=(None, None, 1)), the class-mask PNG
    other keys      extra manifest columns, keypoints, oriented-box corners under their
                    own names: Text / int64 / float32, a scalar where every record holds
                    one value, else a list; a column of two types is left out

The image feature's channels are the records' own where every record has the same count
(1 for an all-greyscale set), else 3 (decoded to RGB). A split without records is left
out of the metadata (TFDS cannot read an empty split) and its files removed. Each shard
writes a small `<shard>.stats.json` (its bytes; the channels, formats and label counts of
its records) that `finish` reads and removes: what the features depend on beyond the
run's keys. `supervised_keys` are (image, label(s)) for classification, (image,
segmentation_mask) for segmentation; metadata.json holds the task and the label names.

Length: one layout, whose records, features.json and dataset_info.json must agree as TFDS
reads them.
"""
from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import tempfile
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from tfrecorder_component.record import example_proto
from tfrecorder_component import extras
from tfrecorder_component.io import files
from tfrecorder_component.errors import UsageError
from tfrecorder_component.output.layouts.base import DATASET_NAME, split_files
from tfrecorder_component.io.tfrecord import tfrecord_frame
from tfrecorder_component.feature_keys import (CLASS_LABEL, CLASS_TEXT, CORNER_PREFIX,
                                               IMAGE_CHANNELS, IMAGE_ENCODED, IMAGE_FILENAME,
                                               IMAGE_FORMAT, IMAGE_HEIGHT, IMAGE_SHA256,
                                               IMAGE_SOURCE_ID, IMAGE_WIDTH, KEYPOINT_PREFIX,
                                               OBJECT_AREA, OBJECT_CLASS_LABEL, OBJECT_CLASS_TEXT,
                                               OBJECT_DIFFICULT, OBJECT_IS_CROWD, OBJECT_MASK,
                                               OBJECT_PREFIX, OBJECT_TRUNCATED,
                                               SEGMENTATION_ENCODED, SEGMENTATION_FORMAT)

FOLDER = 'tfds'
REQUIRES = ()
VERSION = '1.0.0'
STATS_SUFFIX = '.stats.json'
SUFFIXES = ('', STATS_SUFFIX)

# Keys example.py writes that the TFDS example holds under other names, or not at all.
_COMMON = (IMAGE_ENCODED, IMAGE_FORMAT, IMAGE_HEIGHT, IMAGE_WIDTH, IMAGE_CHANNELS,
           IMAGE_FILENAME, IMAGE_SOURCE_ID, IMAGE_SHA256)
_CLASSIFICATION = (CLASS_LABEL, CLASS_TEXT)
_SEGMENTATION = (SEGMENTATION_ENCODED, SEGMENTATION_FORMAT)
_BOX = tuple(f'image/object/bbox/{k}' for k in ('ymin', 'xmin', 'ymax', 'xmax'))
# Per-object keys copied as they are: {record key: TFDS name inside `objects`}.
_OBJECT_COPIES = {OBJECT_IS_CROWD: 'is_crowd', OBJECT_AREA: 'area',
                  OBJECT_DIFFICULT: 'is_difficult',
                  OBJECT_TRUNCATED: 'is_truncated', OBJECT_MASK: 'mask'}
_DETECTION = (*_BOX, OBJECT_CLASS_LABEL, OBJECT_CLASS_TEXT, *_OBJECT_COPIES)
_STANDARD = frozenset(_COMMON + _CLASSIFICATION + _SEGMENTATION + _DETECTION)
# Per-image lists (not one value an object) kept under their own names.
_FLAT_OBJECT_KEYS = (KEYPOINT_PREFIX, CORNER_PREFIX)
_TOP_NAMES = ('image', IMAGE_FILENAME, IMAGE_SOURCE_ID, 'label', 'labels', 'objects',
              'segmentation_mask')
_OBJECT_NAMES = ('bbox', 'label', *_OBJECT_COPIES.values())
# An object attribute's value where a record lacks it (example._MISSING).
_MISSING = {'bytes': b'', 'int64': -1, 'float': float('nan')}
_LIST_FIELD = {'bytes': 'bytes_list', 'int64': 'int64_list', 'float': 'float_list'}


def check_available() -> None:
  """Whether TFDS is installed; imported later (`prepare`), as the records are written:
  half a second that a run's first row need not wait for."""
  if importlib.util.find_spec('tensorflow_datasets') is None:
    raise UsageError(extras.message('the tfds layout (TensorFlow Datasets)', 'tfds'))


def prepare() -> None:
  import tensorflow_datasets  # pylint: disable=g-import-not-at-top,unused-import


def shard_name(split: str, index: int, count: int) -> str:
  """Shard `index` of `count`'s file name in FOLDER, as TFDS's file template names it:
  `images-<split>.tfrecord-SSSSS-of-NNNNN`.

  Args:
    split: The split's name.
    index: The shard's position in the split, from 0.
    count: How many shards the split has.
  """
  return f'{DATASET_NAME}-{split}.tfrecord-{index:05d}-of-{count:05d}'


class _Plan:
  """Which record keys become which TFDS features, from the run's features alone (the
  same in every shard's writer and in `finish`)."""

  def __init__(self, ctx):
    self.task = ctx.task
    features = ctx.features
    self.masks = self.task == 'detection' and OBJECT_MASK in features
    # (record key, name inside `objects`, type) of each per-object attribute.
    self.attributes: List[Tuple[str, str, str]] = []
    # (record key, type, scalar) of each key kept under its own name.
    self.others: List[Tuple[str, str, bool]] = []
    self.left_out: List[str] = []
    taken = set(_OBJECT_NAMES)
    for key, info in sorted(features.items()):
      if key in _STANDARD:
        continue
      kind = info['type']
      if kind not in _LIST_FIELD:
        self.left_out.append(key)
      elif (self.task == 'detection' and key.startswith(OBJECT_PREFIX)
            and not key.startswith(_FLAT_OBJECT_KEYS)):
        name = key[len(OBJECT_PREFIX):]
        if name in taken:
          name = f'attribute/{name}'
        if name in taken:
          self.left_out.append(key)
          continue
        taken.add(name)
        self.attributes.append((key, name, kind))
      elif key in _TOP_NAMES or key.startswith('objects/'):
        self.left_out.append(key)
      else:
        self.others.append((key, kind, bool(info['scalar'])))


def _first_frame_png(data: bytes) -> bytes:
  """A GIF's first frame as an RGB PNG: what `tf.io.decode_image` yields for it, in one
  frame that TFDS's Image feature decodes."""
  from PIL import Image  # pylint: disable=g-import-not-at-top
  with Image.open(io.BytesIO(data)) as im:
    im.seek(0)
    out = io.BytesIO()
    im.convert('RGB').save(out, 'PNG')
    return out.getvalue()


def tfds_example(record: bytes, plan: _Plan) -> Tuple[bytes, str, int, int]:
  """A record of ours as TFDS's serialized example: (bytes, image format, channels,
  labels). A classification example holds both `label` (the id, -1 without exactly one)
  and `labels` (every id): which one the metadata declares depends on every record.

  Args:
    record: One of our serialized tf.train.Example records.
    plan: The `_Plan` of the run's context: its task, and the keys kept as object
      attributes or under their own names.

  Returns:
    The TFDS example serialized deterministically; the image's format ('png' for a GIF,
    rewritten); its channel count (3 for a GIF); the record's number of class labels
    (0 but for classification).
  """
  src = example_proto.Example.FromString(record).features.feature
  out = example_proto.Example()
  dst = out.features.feature
  data = src[IMAGE_ENCODED].bytes_list.value[0]
  fmt = src[IMAGE_FORMAT].bytes_list.value[0].decode()
  channels = src[IMAGE_CHANNELS].int64_list.value[0]
  if fmt == 'gif':
    data, fmt, channels = _first_frame_png(data), 'png', 3
  dst['image'].bytes_list.value.append(data)
  dst[IMAGE_FILENAME].CopyFrom(src[IMAGE_FILENAME])
  dst[IMAGE_SOURCE_ID].CopyFrom(src[IMAGE_SOURCE_ID])
  labels = 0
  if plan.task == 'classification':
    ids = src[CLASS_LABEL]
    labels = len(ids.int64_list.value)
    dst['label'].int64_list.value.append(ids.int64_list.value[0] if labels == 1 else -1)
    dst['labels'].CopyFrom(ids)
  elif plan.task == 'segmentation':
    dst['segmentation_mask'].CopyFrom(src[SEGMENTATION_ENCODED])
  else:
    _objects(src, dst, plan)
  for key, kind, _ in plan.others:
    if key in src:
      dst[key].CopyFrom(src[key])
  return out.SerializeToString(deterministic=True), fmt, channels, labels


def _objects(src, dst, plan: _Plan) -> None:
  ymin, xmin, ymax, xmax = (src[k].float_list.value for k in _BOX)
  box = dst['objects/bbox'].float_list
  box.SetInParent()
  box.value.extend([v for b in zip(ymin, xmin, ymax, xmax) for v in b])
  label = dst['objects/label'].int64_list
  label.SetInParent()
  label.value.extend([i - 1 for i in src[OBJECT_CLASS_LABEL].int64_list.value])
  for key, name in _OBJECT_COPIES.items():
    if key in src:  # every one but the masks, which only include_masks writes
      dst[f'objects/{name}'].CopyFrom(src[key])
  for key, name, kind in plan.attributes:
    if key in src:
      dst[f'objects/{name}'].CopyFrom(src[key])
    else:  # no object of this record has it
      values = getattr(dst[f'objects/{name}'], _LIST_FIELD[kind])
      values.SetInParent()
      values.value.extend([_MISSING[kind]] * len(ymin))


class _Sink:
  def __init__(self, path: str, plan: _Plan):
    self._data = files.create_file(path)
    self._path = path
    self._plan = plan
    self._bytes = 0
    # {name: {value: records}} of the image channels, image formats, labels a record
    self._counts: Dict[str, Dict[str, int]] = {'channels': {}, 'formats': {}, 'labels': {}}

  def write(self, record: bytes) -> None:
    data, fmt, channels, labels = tfds_example(record, self._plan)
    frame = tfrecord_frame(data)
    self._data.write(frame)
    self._bytes += len(frame)
    for name, value in (('channels', str(channels)), ('formats', fmt),
                        ('labels', str(labels))):
      counts = self._counts[name]
      counts[value] = counts.get(value, 0) + 1

  def close(self) -> None:
    self._data.close()
    files.write_text(self._path + STATS_SUFFIX, json.dumps({'bytes': self._bytes,
                                                            **self._counts}))


def open_path(ctx, split: str, path: str) -> _Sink:  # pylint: disable=unused-argument
  """A sink writing one shard of TFDS examples at `path` and, at `close`, its
  `<shard>.stats.json` beside it.

  Args:
    ctx: The run's LayoutContext, whose features plan the rewrite (`_Plan`).
    split: The shard's split; unused.
    path: The shard file, a local path or a URI.
  """
  return _Sink(path, _Plan(ctx))


def spec(ctx) -> Tuple[Any, ...]:
  """What a record's rewrite depends on beyond the record: two contexts with the same
  spec write the same bytes for it.

  Args:
    ctx: The LayoutContext whose task and features are compared.
  """
  plan = _Plan(ctx)
  return (plan.task, tuple(plan.attributes), tuple((key, kind) for key, kind, _ in plan.others))


def _read_stats(path: str) -> Dict[str, Any]:
  with files.open_file(path) as f:
    return json.loads(f.read())


class Records(NamedTuple):
  """What the features depend on beyond the run's keys, from every shard's stats.

  Attributes:
    channels: The image feature's channel count: the records' own where all agree, else
      3 (TFDS decodes to RGB).
    encoding: The image feature's `encoding_format`: 'jpeg' or 'png' where every image
      is one, else None (no format declared).
    multi_label: Whether some record has several class labels, so the classification
      feature is `labels`, a Sequence of ClassLabel, instead of `label`.
  """
  channels: int = 3
  encoding: Optional[str] = None
  multi_label: bool = False

  @classmethod
  def of(cls, stats: List[Dict[str, Any]]) -> 'Records':
    """The records' own channel count where all agree (3 where they differ: TFDS decodes
    to RGB), 'jpeg' / 'png' where every image is one, several labels in any record.

    Args:
      stats: Every shard's `<shard>.stats.json` contents: {'bytes': the shard's size,
        'channels' / 'formats' / 'labels': {value as a string: records}}.
    """
    seen = lambda name: {v for s in stats for v, n in s[name].items() if n}
    channels, formats = seen('channels'), seen('formats')
    (only,) = channels if len(channels) == 1 else ('3',)
    encoding = formats.pop() if len(formats) == 1 and formats <= {'jpeg', 'png'} else None
    return cls(int(only), encoding, any(int(k) > 1 for k in seen('labels')))


def _bbox_feature(f):
  """The boxes' `BBoxFeature`, declared without a `bbox_format`, so that features.json
  names none: TFDS 4.9.7 added the `bboxFormat` field, which TFDS 4.9.6 and earlier
  refuse to parse (`Message type "tensorflow_datasets.BoundingBoxFeature" has no field
  named "bboxFormat"`), and reads a features.json without it as every dataset prepared
  before 4.9.7: the same boxes ([ymin, xmin, ymax, xmax], normalised), only not drawn in
  its HTML previews. Before 4.9.7 `BBoxFeature` takes no format and writes none.

  Args:
    f: `tfds.features` of the TFDS installed.
  """
  try:
    return f.BBoxFeature(bbox_format=None)
  except TypeError:  # TFDS before 4.9.7
    return f.BBoxFeature()


def features_dict(ctx, records: Records = Records()):
  """The TFDS `FeaturesDict` of the run's records (see the module docstring).

  Args:
    ctx: The run's LayoutContext: its task, label names and features.
    records: What the shards' stats say of the records (`Records.of`); the default
      is 3 channels, any image format and one label a record.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  f = tfds.features
  plan = _Plan(ctx)
  names = ctx.label_names()
  dtypes = {'bytes': np.object_, 'int64': np.int64, 'float': np.float32}
  spec: Dict[str, Any] = {
      'image': f.Image(shape=(None, None, records.channels),
                       encoding_format=records.encoding),
      IMAGE_FILENAME: f.Text(),
      IMAGE_SOURCE_ID: f.Text(),
  }
  if ctx.task == 'classification':
    if records.multi_label:
      spec['labels'] = f.Sequence(f.ClassLabel(names=names))
    else:
      spec['label'] = f.ClassLabel(names=names)
  elif ctx.task == 'segmentation':
    spec['segmentation_mask'] = f.Image(shape=(None, None, 1), encoding_format='png',
                                        use_colormap=True)
  else:
    objects = {'bbox': _bbox_feature(f), 'label': f.ClassLabel(names=names),
               'is_crowd': np.bool_, 'area': np.float32, 'is_difficult': np.bool_,
               'is_truncated': np.bool_}
    if plan.masks:
      objects['mask'] = f.Image(shape=(None, None, 1), encoding_format='png')
    for _, name, kind in plan.attributes:
      objects[name] = dtypes[kind]
    spec['objects'] = f.Sequence(objects)
  for key, kind, scalar in plan.others:
    if kind == 'bytes' and scalar:
      spec[key] = f.Text()
    else:
      spec[key] = f.Tensor(shape=() if scalar else (None,), dtype=dtypes[kind])
  return f.FeaturesDict(spec)


def _supervised_keys(ctx, records: Records) -> Optional[Tuple[str, str]]:
  if ctx.task == 'classification':
    return 'image', 'labels' if records.multi_label else 'label'
  return ('image', 'segmentation_mask') if ctx.task == 'segmentation' else None


def finish(ctx, counts: Dict[str, List[int]]) -> Dict[str, Any]:
  """Removes the stats files and the shards of empty splits; writes TFDS's metadata.

  Args:
    ctx: The run's LayoutContext, whose `output_dir` holds the layout's folder.
    counts: {split: [records per shard]} of every shard written; a split whose shards
      hold no record is left out of the metadata.

  Returns:
    The layout's entry in the index: its name, version, shard files per kept split,
    the metadata files written, and any 'empty_splits' and 'left_out' keys.
  """
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  folder = ctx.folder('tfds')
  names = split_files(counts, shard_name)
  stats = {}
  for split, shards in names.items():
    for name in shards:
      path = files.join(folder, name)
      stats[name] = _read_stats(path + STATS_SUFFIX)
      files.remove(path + STATS_SUFFIX)
      if not sum(counts[split]):
        files.remove(path)
  kept = [split for split in names if sum(counts[split])]
  records = Records.of(list(stats.values()))
  template = tfds.core.ShardedFileTemplate(
      data_dir=folder, template='{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}',
      dataset_name=DATASET_NAME, filetype_suffix='tfrecord')
  splits = tfds.core.SplitDict([
      tfds.core.SplitInfo(name=split, shard_lengths=list(counts[split]),
                          num_bytes=sum(stats[n]['bytes'] for n in names[split]),
                          filename_template=template)
      for split in kept])
  info = tfds.core.DatasetInfo(
      builder=tfds.core.DatasetIdentity(name=DATASET_NAME, version=tfds.core.Version(VERSION),
                                        data_dir=folder, module_name=''),
      description=f'{ctx.task.capitalize()} images converted by tfrecorder-component.',
      features=features_dict(ctx, records), supervised_keys=_supervised_keys(ctx, records),
      metadata=tfds.core.MetadataDict(task=ctx.task, label_names=ctx.label_names()))
  info.set_file_format(tfds.core.FileFormat.TFRECORD)
  info.set_splits(splits)
  local = tempfile.mkdtemp(prefix='tfds-metadata-')
  try:
    info.write_to_directory(local)
    written = sorted(os.listdir(local))
    for name in written:
      with open(os.path.join(local, name), 'rb') as src, \
          files.create_file(files.join(folder, name)) as dst:
        shutil.copyfileobj(src, dst)
  finally:
    shutil.rmtree(local, ignore_errors=True)
  out: Dict[str, Any] = {'name': DATASET_NAME, 'version': VERSION,
                         'files': {split: names[split] for split in kept},
                         'metadata': written}
  empty = [split for split in names if split not in kept]
  if empty:
    out['empty_splits'] = empty
  left_out = _Plan(ctx).left_out
  if left_out:
    out['left_out'] = left_out
  return out
