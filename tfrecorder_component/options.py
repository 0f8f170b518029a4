"""What a conversion reads (`ManifestSource`) and how it converts (`ConversionOptions`),
checked when built."""
from __future__ import annotations

import dataclasses
import operator
from typing import Any, Dict, FrozenSet, Mapping, Optional, Tuple

from tfrecorder_component.record import labels as labels_lib
from tfrecorder_component import option_table
from tfrecorder_component.images import transform as transform_lib
from tfrecorder_component.errors import UsageError
from tfrecorder_component.manifest import MANIFEST_FORMATS, check_feature_types
from tfrecorder_component.manifest import confine
from tfrecorder_component.manifest.class_map import parse_class_map
from tfrecorder_component.manifest.columns import parse_columns
from tfrecorder_component.option_table import OPTIONS


@dataclasses.dataclass(frozen=True)
class ManifestSource:
  """One manifest file to read, with an optional split that every row takes.

  Attributes:
    path: the manifest file's absolute path or URI.
    format: its format, one of `manifest.MANIFEST_FORMATS` (anything else raises
      UsageError); None: detected from the file.
    split: the split every row takes, whatever the manifest says; None: each row's own,
      or its hash bucket where it has none.
    image_root: the folder relative image URIs, COCO `file_name`s and Pascal VOC
      `filename`s are resolved against (default: the annotation file's folder).
    feature_types: (column, 'int' | 'float' | 'string') pairs declaring the types of
      extra manifest columns; () infers them from the file.
    row_index: for a manifest written from a DataFrame, (row, index label) pairs, so
      its failed rows are cited by the index the user knows; () for any other.
    class_map: the run's class map (`manifest.class_map`): (class, new class or None to
      drop it) pairs; () keeps every class as it is.
    columns: the run's `columns` option (`manifest.columns`): (role, header column)
      pairs naming a CSV's image, label, split or mask columns; () finds them by name.
      Any form `parse_columns` takes, kept as its pairs; refused by a manifest of a
      format that has no such columns.
    confine_to: the run's roots (`manifest.confine`, `source` replaced): the files the
      manifest leads to must lie inside them, else their rows fail as `outside_root`;
      (): anywhere.
  """
  path: str
  format: Optional[str] = None
  split: Optional[str] = None
  image_root: Optional[str] = None
  feature_types: Tuple[Tuple[str, str], ...] = ()
  # (row, DataFrame index label) of a manifest written from a DataFrame: its failed rows
  # are cited by the index the user knows (`index` in errors.jsonl).
  row_index: Tuple[Tuple[int, Any], ...] = ()
  # The run's class map (`manifest.class_map`): (class, new class or None) pairs.
  class_map: Tuple[Tuple[str, Optional[str]], ...] = ()
  # The `columns` option (`manifest.columns`): (role, header column) pairs.
  columns: Tuple[Tuple[str, str], ...] = ()
  # The run's roots (`manifest.confine`): what the manifest leads to must lie inside.
  confine_to: Tuple[str, ...] = ()

  def __post_init__(self):
    object.__setattr__(self, 'columns', check_option('columns', self.columns))
    object.__setattr__(self, 'confine_to', check_option('confine_to', self.confine_to))
    check_option('manifest_format', self.format)
    check_option('feature_types', dict(self.feature_types))


def _whole(value) -> Optional[int]:
  """`value` as an int if it is a whole number (numpy's too), not a bool; else None."""
  if isinstance(value, bool):
    return None
  try:
    return operator.index(value)
  except TypeError:
    return None


def check_sharding(num_shards: int, shard_size_mb: float) -> None:
  """Raises UsageError where both `num_shards` and `shard_size_mb` are set: the one
  check between options (each one's own range is its declaration's, `check_option`).

  Args:
    num_shards: shards per split; 0: not set.
    shard_size_mb: the size of each shard in megabytes (of 2**20 bytes); 0: not set.
  """
  if num_shards and shard_size_mb:
    raise UsageError('give num_shards or shard_size_mb, not both')


def _format_name(value: Optional[str]) -> Optional[str]:
  if value is not None and value not in MANIFEST_FORMATS:
    raise UsageError(f'unknown manifest format {value!r}; one of {", ".join(MANIFEST_FORMATS)}')
  return value


def _transform(value):
  return transform_lib.ImageTransform.from_dict(value) if isinstance(value, dict) else value


def _layouts(value, available: bool = True) -> Tuple[str, ...]:
  from tfrecorder_component.output.layouts import check_layouts  # pylint: disable=g-import-not-at-top
  names = [value] if isinstance(value, str) else list(value or ())
  return check_layouts(names, check_available=available) if names else ()


def _progress_every_s(value: Optional[float]) -> Optional[float]:
  if value is not None and not value > 0:
    raise UsageError(f'progress_every_s must be positive, got {value}')
  return value


# The check of each option whose values no bound or choice of its declaration
# (`option_table.Option.bounds`, its flag's `choices`) describes: a function of the value
# giving it in the form a run keeps it, raising UsageError (a ValueError) that names it.
# `check_option` runs these and the declared bounds and choices: every option's check
# is here (`layouts`: `_layouts`, told whether the run is here) or in its declaration,
# once. `label_map` is read where the run starts
# (`labels.given_label_map`): a compiled pipeline's path need not exist where it is
# compiled.
_PARSERS = {
    'manifest_format': _format_name,
    'feature_types': check_feature_types,  # ManifestError, a ValueError, names the entry
    'columns': parse_columns,
    'class_map': parse_class_map,
    'image_transform': _transform,
    'confine_to': confine.parse_roots,
    'progress_every_s': _progress_every_s,
}


def check_option(name: str, value: Any, compiling: bool = False) -> Any:
  """`value` of option `name` checked, in the form a run keeps it (a class map's pairs,
  a transform's ImageTransform, ...); UsageError (a ValueError) naming the option where
  it cannot be one.

  Args:
    name: The option's name (`option_table.OPTIONS`).
    value: The value given, in any form `convert()` or the component takes.
    compiling: True where the run happens elsewhere (a pipeline's component): a
      layout's library need not be installed here.
  """
  option = option_table.BY_NAME[name]
  error = option_table.bounds_error(option, value) or option_table.choice_error(name, value)
  if error:
    raise UsageError(error)
  if name == 'layouts':
    return _layouts(value, available=not compiling)
  parse = _PARSERS.get(name)
  return parse(value) if parse else value


def check_options(values: Mapping[str, Any], compiling: bool = False) -> Dict[str, Any]:
  """{option name: value checked} of `values` (`check_option` each), and the one check
  between options: `num_shards` and `shard_size_mb` not both set.

  Args:
    values: {option name: value}, as `convert()` or the component takes them.
    compiling: True where the run happens elsewhere (`check_option`).
  """
  checked = {name: check_option(name, value, compiling) for name, value in values.items()}
  check_sharding(checked.get('num_shards', 0), checked.get('shard_size_mb', 0.0))
  return checked


@dataclasses.dataclass(frozen=True)
class ConversionOptions:
  """What a conversion does beyond reading manifests and writing splits.

  Built from the options by `from_options`; a value out of range raises UsageError.

  Attributes:
    buckets: (split name, hash buckets) pairs for rows without a split: each goes to a
      split by a stable hash of its image URI, in proportion to the buckets (whole
      numbers, at least one above 0; default train 8, eval 1, test 1).
    max_pixels: the most pixels (width x height) an image's header may claim; a larger
      image fails its row.
    max_bytes: the largest image (or class mask) file, in bytes, that is read (at most
      `option_table.MAX_RECORD_IMAGE_BYTES`, what a record can hold: a larger value
      is taken as that); a larger
      one fails its row.
    verify_decode: decode every image so no undecodable record is written; False only
      probes headers.
    convert_unsupported: re-encode WebP, TIFF, ... as PNG instead of failing their rows.
    compression_level: the gzip level of the shards, 0 (stored, the default) to 9.
    transform: what to do to each image; None: its bytes pass through.
    progress_every_s: seconds between progress reports on stderr (a live bar in a
      terminal); None: only `logging` lines.
    num_shards: shards per split, records spread evenly; 0 (the default, with
      `shard_size_mb` 0): the runner decides, one shard per bundle.
    shard_size_mb: the size of each shard in megabytes of 2**20 bytes (the split's size
      over it gives the shard count); 0: not set. At most one of the two is set.
    include_masks: write each object's mask in `image/object/mask`, where the format has
      them.
    include_keypoints: write each object's keypoints in `image/object/keypoint/*`,
      where the format has them.
    class_synset: classification: also write each record's labels as
      `image/class/synset`, the key of ImageNet's records for the class folder's name.
    source_id: what `image/source_id` holds (`record.example.source_id_of`): 'auto'
      (the source's integer image id, COCO's, else the image URI), 'uri' or 'number'
      (a decimal int64 of the URI's SHA-256; equal numbers are reported).
    concurrent_reads: reads in flight per worker for images on remote storage (gs://,
      s3://, ...); local files are read in line. At most this many twice over are held
      read ahead, each up to `max_bytes`.
    workers: worker processes on this machine (`engines.run.local_workers`): without
      Beam the pool's size, on Beam's DirectRunner its `--direct_num_workers`; 0: as
      many as the rows call for, up to one a core. Refused for another runner.
    label_map: ids to keep (`labels.assign_ids`): a label the map lacks fails its rows
      (`unknown_label`), unless `append_new_labels`; None: the run gives every label an
      id (a source's own ids where it has them, as COCO's categories).
    append_new_labels: with `label_map`, give labels it lacks the next free ids; every
      earlier id stays.
    label_order: the order assigned ids follow (`labels.vocabulary_order`): 'auto' (by
      number when every label is an integer, else as text) or 'text' (as Keras's
      `image_dataset_from_directory` and TFDS's `ImageFolder` number class folders).
    class_map: classes to keep, drop, rename or merge (`manifest.class_map`): (class, new
      class or None to drop it) pairs; the manifest sources carry it too, for parsing.
    layouts: output layouts written beside TFX's GZIP shards, from them
      (`layouts.LAYOUTS`: 'tfrecord', 'tfds', 'array_record', 'parquet').
    confine_to: the folders (local, `gs://bucket/prefix`, `s3://bucket/prefix`) every
      file the run reads for a row must lie inside, links followed (`manifest.confine`);
      a row whose file does not fails as `outside_root`, unopened. `source` stands for
      the source's folder until the run replaces it (`confine.with_source`). (): no
      confinement.
    row_time_limit: seconds a row's conversion (read, checks, record, thumbnail) may
      take; past it the row fails as `too_slow` (`steps.deadline.RowDeadline`; without
      Beam its worker process is stopped, `engines.local.pool`). 0: no limit.
  """
  buckets: Tuple[Tuple[str, int], ...] = option_table.DEFAULT_BUCKETS
  max_pixels: int = option_table.DEFAULT_MAX_PIXELS
  max_bytes: int = option_table.DEFAULT_MAX_BYTES
  verify_decode: bool = True         # decode every image so no undecodable record is written
  convert_unsupported: bool = False  # re-encode WebP, TIFF, ... as PNG instead of failing
  compression_level: int = option_table.DEFAULT_COMPRESSION_LEVEL  # gzip level of the shards
  transform: Optional[transform_lib.ImageTransform] = None  # None: bytes pass through
  progress_every_s: Optional[float] = None  # report rows done, rate and errors on stderr
  # Shards per split: exactly `num_shards`, or the split's size over `shard_size_mb`;
  # both 0 (the default): the runner decides, one shard per bundle.
  num_shards: int = 0
  shard_size_mb: float = 0.0
  # Each object's mask (`image/object/mask`) and keypoints (`image/object/keypoint/*`),
  # where the format has them (`option_table`'s help names which)
  include_masks: bool = False
  include_keypoints: bool = False
  # Classification: the labels again as `image/class/synset` (ImageNet's key).
  class_synset: bool = False
  # What image/source_id holds: 'auto', 'uri' or 'number' (`record.example.source_id_of`).
  source_id: str = option_table.DEFAULT_SOURCE_ID
  # Reads in flight per worker for images on remote storage (gs://, s3://, ...), so its
  # latency hides behind the conversion of what has arrived; local files are read in
  # line. At most this many twice over are held read ahead, each up to max_bytes.
  concurrent_reads: int = option_table.DEFAULT_CONCURRENT_READS
  # Worker processes on this machine (`engines.run.local_workers`); 0: as the rows call for.
  workers: int = 0
  # Ids to keep (`labels.assign_ids`): a label the map lacks fails its rows
  # (`unknown_label`), or with `append_new_labels` takes the next free id.
  label_map: Optional[labels_lib.GivenLabelMap] = None
  append_new_labels: bool = False
  # The order assigned ids follow (`option_table.LABEL_ORDERS`).
  label_order: str = option_table.LABEL_ORDERS[0]
  # Classes to keep, drop, rename or merge (`manifest.class_map`); the manifest sources
  # carry it too, for parsing.
  class_map: Tuple[Tuple[str, Optional[str]], ...] = ()
  # Output layouts written beside TFX's GZIP shards (`layouts.LAYOUTS`), from them.
  layouts: Tuple[str, ...] = ()
  # The folders every file read for a row must lie inside (`manifest.confine`); ():
  # anywhere.
  confine_to: Tuple[str, ...] = ()
  # Seconds a row's conversion may take before it fails as too_slow; 0: no limit.
  row_time_limit: float = option_table.BY_NAME['row_time_limit'].default

  @classmethod
  def from_options(cls, values: Mapping[str, Any]) -> 'ConversionOptions':
    """The options of `values`, an option missing from it at its default: each in the
    form its field keeps.

    Args:
      values: {option name: value}, as `convert()` takes them (see
        `option_table.OPTIONS`): `splits` a dict or pairs, `image_transform` a dict or an
        ImageTransform, `label_map` any form `labels.given_label_map` takes, `class_map`
        a dict, JSON or a file, `layouts` a name or names. Options that fill no field
        (`runner`, `image_root`, ...) are ignored, `progress_every_s` aside.
    """
    given = {o.field: values.get(o.name, o.default) for o in OPTIONS if o.field}
    splits = given['buckets']
    given['buckets'] = (tuple(splits.items()) if isinstance(splits, Mapping)
                        else tuple(map(tuple, splits)))
    given['transform'] = check_option('image_transform', given['transform'])
    for name in ('include_masks', 'include_keypoints', 'class_synset', 'append_new_labels'):
      given[name] = bool(given[name])
    given['label_map'] = labels_lib.given_label_map(given['label_map'])
    given['class_map'] = check_option('class_map', given['class_map'])
    return cls(progress_every_s=values.get('progress_every_s'), **given)

  @property
  def confinement(self) -> Optional[confine.Confinement]:
    """The run's `confine.Confinement` (one a process), or None without `confine_to`."""
    return confine.confinement(self.confine_to)

  @property
  def annotations(self) -> FrozenSet[str]:
    """What manifests are read for beyond boxes: 'masks', 'keypoints'."""
    return frozenset(name for name, asked in (('masks', self.include_masks),
                                              ('keypoints', self.include_keypoints)) if asked)

  def __post_init__(self):
    counts = [_whole(n) for _, n in self.buckets]
    if any(n is None or n < 0 for n in counts) or not sum(n or 0 for n in counts):
      raise UsageError(f'splits must be (name, hash buckets) pairs, whole numbers of at '
                       f'least 0 and at least one above 0, got {self.buckets!r}')
    # Each field's option checked as `check_option` checks it (the parsers' forms are
    # the fields' own: checking again keeps them).
    for option in OPTIONS:
      if option.field and (option.bounds or option.cli.get('choices')
                           or option.name in ('confine_to', 'layouts')):
        object.__setattr__(self, option.field,
                           check_option(option.name, getattr(self, option.field)))
    check_sharding(self.num_shards, self.shard_size_mb)
    _progress_every_s(self.progress_every_s)
    if self.max_bytes > option_table.MAX_RECORD_IMAGE_BYTES:
      # A tf.train.Example is a protocol buffer, at most 2 GiB serialized: a larger file
      # could only end the run when its record is written.
      object.__setattr__(self, 'max_bytes', option_table.MAX_RECORD_IMAGE_BYTES)
