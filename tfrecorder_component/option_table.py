"""Every option of a conversion, declared once: its name (`convert()`'s keyword and the
component's execution parameter), default, help, command-line flag and how the
component carries it as an execution property.

Made from `OPTIONS`: the command's flags (`cli`), the keywords `convert()` and
`validate()` take and their defaults (`conversion`), the component's execution
parameters (`component.spec`), the properties its constructor writes
(`component.component`) and the `ConversionOptions` its executor reads back
(`component.executor`, through `component.properties`). tests/test_options.py checks
that the four agree, and the Python guide's options table is written from it
(`scripts/cli-reference`).

This module imports nothing of the package, so that every module can take its
defaults from here (`images.probe`, `steps.shards`, ...) and the command can list its
flags without loading Pillow or numpy.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, FrozenSet, Mapping, Optional, Tuple

# AutoML's own default for unassigned rows: 80% train, 10% validation, 10% test.
DEFAULT_BUCKETS: Tuple[Tuple[str, int], ...] = (('train', 8), ('eval', 1), ('test', 1))
DEFAULT_MAX_PIXELS = 178_956_970  # Pillow's own decompression-bomb limit (2**31 / 4 / 3).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# The largest image a record can hold: a serialized protocol buffer is at most 2 GiB - 1
# (protobuf's limit, which tf.train.Example's SerializeToString enforces), less room for
# the record's other features; max_bytes above it is taken as it.
MAX_RECORD_IMAGE_BYTES = 2**31 - 1 - 16 * 1024 * 1024
# Stored blocks: encoded JPEG and PNG bytes do not compress (level 6 saved under 1% of
# photo-like JPEGs and tripled the write time), and every TFRecord reader inflates them.
DEFAULT_COMPRESSION_LEVEL = 0
DEFAULT_CONCURRENT_READS = 64
# The order assigned label ids follow (`record.labels.vocabulary_order`): 'auto' by
# number where every label is an integer, else as text; 'text' always as text, as Keras's
# `image_dataset_from_directory` and TFDS's `ImageFolder` order class folders.
LABEL_ORDERS = ('auto', 'text')
# What `image/source_id` holds (`record.example.source_id_of`).
SOURCE_IDS = ('auto', 'uri', 'number')
DEFAULT_SOURCE_ID = 'auto'

# Where an option is taken: the command line, `convert()` (and `validate()`), the
# component.
CLI, API, COMPONENT = 'cli', 'api', 'component'
EVERYWHERE = frozenset((CLI, API, COMPONENT))
WITHOUT_A_PIPELINE = frozenset((CLI, API))


@dataclasses.dataclass(frozen=True)
class Option:
  """One option of a conversion.

  Args:
    name: `convert()`'s keyword, the component's constructor argument and execution
      property.
    default: The value when the option is not given, everywhere it is taken.
    help: What it does, as the command's help says it (`{formats}`: the manifest
      formats' names).
    flag: The command-line flag, or None where the command has none.
    cli: argparse keywords beside the flag and help: `type` names one of the command's
      parsers (`cli.ARGUMENT_TYPES`), the others are argparse's own.
    taken: Where the option is taken (CLI, API, COMPONENT).
    writes: Only where records are written: `convert`, not `validate`.
    group: The command's mutually exclusive group the flag is in, if any.
    exec_type: The execution parameter's type (int, float or str; flags are 0 or 1).
    exec_kind: How a value becomes that property and back (`component.properties`):
      'value', 'flag' (0 or 1), 'json', 'transform' (an ImageTransform's JSON),
      'class_map' (the parsed map's JSON), 'columns' (the `columns` option's JSON,
      `manifest.columns.describe`), 'list' (comma-separated).
    exec_optional: Whether a compiled pipeline may lack the property (those added
      after the first release: a pipeline compiled before them still runs).
    field: The `ConversionOptions` field it fills, if any (others go to the manifest
      sources or the error policy).
  """
  name: str
  default: Any
  help: str
  flag: Optional[str] = None
  cli: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  taken: FrozenSet[str] = EVERYWHERE
  writes: bool = False
  group: Optional[str] = None
  exec_type: Optional[type] = None
  exec_kind: str = 'value'
  exec_optional: bool = True
  field: Optional[str] = None

  def taken_by(self, where: str) -> bool:
    """Whether the option is taken at `where`.

    Args:
      where: CLI, API or COMPONENT.
    """
    return where in self.taken


OPTIONS: Tuple[Option, ...] = (
    Option('overwrite', False,
           'replace an earlier output of this tool in OUTPUT_DIR (by default it must be new '
           'or empty); files of yours there stay, a folder that is no output is refused, '
           'and the old output stays until the new one is complete',
           '--overwrite', dict(action='store_true'), taken=WITHOUT_A_PIPELINE, writes=True),
    Option('max_error_ratio', 0.0,
           'fraction of rows that may fail (default 0: any failure fails)',
           '--max-error-ratio', dict(type='float'), writes=True, exec_type=float,
           exec_optional=False),
    Option('num_shards', 0,
           'write exactly N shards per split, records spread evenly (default: the runner '
           'decides, one shard per bundle)',
           '--num-shards', dict(type='int', metavar='N'), writes=True, group='shards',
           exec_type=int, exec_optional=False, field='num_shards'),
    Option('shard_size_mb', 0.0,
           'write shards of about MB megabytes each (TensorFlow suggests 100 MB or more, '
           'and at least as many shards as parallel readers)',
           '--shard-size-mb', dict(type='float', metavar='MB'), writes=True, group='shards',
           exec_type=float, exec_optional=False, field='shard_size_mb'),
    Option('layouts', (),
           'also write the records in this layout beside TFX\'s GZIP shards (repeatable, or '
           'comma-separated): tfrecord (uncompressed + .idx: DALI, PyTorch), tfds '
           '(tfds.builder_from_directory), array_record (Grain), parquet (pandas, Hugging '
           'Face datasets)',
           '--layout', dict(action='append', metavar='NAME'), writes=True, exec_type=str,
           exec_kind='list', field='layouts'),
    Option('manifest_format', None,
           'manifest format, one of: {formats} (default: detected per file; yolo_obb is '
           'only ever named)',
           '--format', exec_type=str),
    Option('image_root', None,
           'folder or gs:// prefix that relative image URIs, COCO file_names and Pascal VOC '
           'filenames are relative to (default: the manifest\'s folder)',
           '--image-root', exec_type=str),
    Option('splits', DEFAULT_BUCKETS,
           'hash buckets for rows without ML_USE (default: train=8,eval=1,test=1)',
           '--splits', dict(type='splits'), taken=WITHOUT_A_PIPELINE, field='buckets'),
    Option('feature_types', None,
           'types of extra manifest columns as JSON, e.g. \'{"weight": "float"}\' '
           '(default: inferred per file)',
           '--feature-types', dict(type='json_object'), exec_type=str, exec_kind='json'),
    Option('columns', None,
           'the CSV header\'s columns of the image, label (repeatable), split and (segmentation '
           'CSV) mask, where the names the reader knows miss or mislead, e.g. '
           '\'image=filepaths,label=labels,split=data set\': a name runs to the next comma, '
           'spaces and all (quote one that holds a comma); label= or split= reads none '
           '(default: found by the header\'s names)',
           '--columns', dict(type='columns', metavar='ROLE=COLUMN,...'), exec_type=str,
           exec_kind='columns'),
    Option('max_pixels', DEFAULT_MAX_PIXELS,
           'refuse images whose header claims more pixels (default: 178,956,970)',
           '--max-pixels', dict(type='int'), exec_type=int, exec_optional=False,
           field='max_pixels'),
    Option('max_bytes', DEFAULT_MAX_BYTES,
           'refuse image files larger than this, at most 2 GiB - 16 MiB (what a record can '
           'hold; more is taken as that) (default: 64 MiB)',
           '--max-bytes', dict(type='int'), exec_type=int, exec_optional=False,
           field='max_bytes'),
    Option('compression_level', DEFAULT_COMPRESSION_LEVEL,
           'gzip level of the shards (default 0, stored: encoded images do not compress)',
           '--compression-level', dict(type='int', choices=range(10), metavar='0-9'),
           writes=True, exec_type=int, exec_kind='value', exec_optional=False,
           field='compression_level'),
    Option('verify_decode', True,
           'probe headers only, do not decode every image',
           '--no-verify-decode', dict(action='store_false'), exec_type=int,
           exec_kind='flag', exec_optional=False, field='verify_decode'),
    Option('convert_unsupported', False,
           're-encode WebP, TIFF, ... as PNG instead of failing them',
           '--convert-unsupported', dict(action='store_true'), exec_type=int,
           exec_kind='flag', exec_optional=False, field='convert_unsupported'),
    Option('include_masks', False,
           'COCO, YOLO segmentation, LabelMe, CVAT, Label Studio: write each object\'s mask '
           '(polygons or RLE) as a PNG in image/object/mask',
           '--include-masks', dict(action='store_true'), exec_type=int, exec_kind='flag',
           field='include_masks'),
    Option('include_keypoints', False,
           'COCO, YOLO pose, CVAT points: write each object\'s keypoints in '
           'image/object/keypoint/*',
           '--include-keypoints', dict(action='store_true'), exec_type=int,
           exec_kind='flag', field='include_keypoints'),
    Option('class_synset', False,
           'classification: also write each record\'s labels as image/class/synset, the '
           'key of ImageNet\'s records that holds the class folder\'s name (a WordNet id '
           'such as n01440764)',
           '--class-synset', dict(action='store_true'), exec_type=int, exec_kind='flag',
           field='class_synset'),
    Option('source_id', DEFAULT_SOURCE_ID,
           'what image/source_id holds: auto (the default: COCO\'s image id, as Model '
           'Garden\'s and the Object Detection API\'s COCO converters write it; else the '
           'image URI), uri (the image URI as the manifest writes it), number (a decimal '
           'int64 of the URI, the first 63 bits of its SHA-256, which Model Garden\'s '
           'process_source_id parses; equal numbers are reported)',
           '--source-id', dict(choices=SOURCE_IDS), exec_type=str, field='source_id'),
    Option('concurrent_reads', DEFAULT_CONCURRENT_READS,
           'reads in flight per worker for images on gs://, s3:// and other remote storage '
           '(default 64; local files are read in line)',
           '--concurrent-reads', dict(type='int', metavar='N'), exec_type=int,
           field='concurrent_reads'),
    # The pool's size (`engines.run.local_workers`); on Beam's DirectRunner its
    # --direct_num_workers (`engines.run.with_default_parallelism`).
    Option('workers', 0,
           'worker processes on this machine: without Beam, the pool that converts the rows; '
           'on Beam\'s DirectRunner, its --direct_num_workers; 0, the default, takes a worker '
           'per 1,000 rows without Beam and every core from 8,000 rows on Beam, up to one a '
           'core; other runners set their own (Dataflow: --beam-arg=--max_num_workers=N)',
           '--workers', dict(type='int', metavar='N'), exec_type=int, field='workers'),
    Option('label_map', None,
           'keep the ids of this label map: a label_map.pbtxt, a label_map.csv, a labels.txt '
           'or an earlier output folder; a label it lacks fails its rows',
           '--label-map', dict(metavar='PATH'), exec_type=str, field='label_map'),
    Option('append_new_labels', False,
           'with --label-map: give labels it lacks the next free ids (continuous training: '
           'every earlier id stays)',
           '--append-new-labels', dict(action='store_true'), exec_type=int,
           exec_kind='flag', field='append_new_labels'),
    Option('label_order', LABEL_ORDERS[0],
           'the order assigned ids follow: auto (the default: by number when every label '
           'is an integer, 2 before 10, else as text) or text (as text, 10 before 2: the '
           'ids Keras image_dataset_from_directory and TFDS ImageFolder give class '
           'folders)',
           '--label-order', dict(choices=LABEL_ORDERS), exec_type=str,
           field='label_order'),
    Option('class_map', None,
           'classes to keep, drop, rename or merge: a JSON object or a .json / .yaml file of '
           'one, e.g. \'{"car": "vehicle", "truck": "vehicle", "blurry": null}\'; "*": null '
           'drops every class not listed',
           '--class-map', dict(metavar='JSON|PATH'), exec_type=str, exec_kind='class_map',
           field='class_map'),
    Option('image_transform', None,
           'image transform as JSON, e.g. \'{"longest_side": 512, "encode": "jpeg"}\'',
           '--transform', dict(metavar='JSON'), exec_type=str, exec_kind='transform',
           field='transform'),
    Option('runner', 'DirectRunner',
           'Beam runner (default: %(default)s; on local files with no --beam-arg, without '
           'Beam: a worker process per 1,000 rows, up to one a core; DataflowRunner needs '
           '--project, --region and --temp-location)',
           '--runner', taken=WITHOUT_A_PIPELINE),
    Option('project', None, 'Google Cloud project (Dataflow)', '--project',
           taken=WITHOUT_A_PIPELINE),
    Option('region', None, 'Google Cloud region (Dataflow)', '--region',
           taken=WITHOUT_A_PIPELINE),
    Option('temp_location', None, 'gs:// folder for Dataflow\'s temporary files',
           '--temp-location', taken=WITHOUT_A_PIPELINE),
    Option('beam_args', (),
           'an extra Beam argument (repeatable), e.g. --beam-arg=--direct_num_workers=0',
           '--beam-arg', dict(action='append'), taken=WITHOUT_A_PIPELINE),
    # The command shows progress unless --quiet (`--progress-every` sets how often where
    # stderr is no terminal); the component logs it.
    Option('progress_every_s', None,
           'show the run\'s progress on stderr every this many seconds', taken=frozenset((API,))),
    # Untrusted input (docs/guides/untrusted-input.md): `manifest.confine`.
    Option('confine_to', None,
           'read only files inside these folders (repeatable, or comma-separated): a local '
           'folder, gs://bucket/prefix or s3://bucket/prefix, or source (the source\'s own '
           'folder); links are followed, and an image, mask, image list, label file, '
           'path: root or any other path a manifest names that leads outside them fails '
           'its row as outside_root, never opened (default: no confinement)',
           '--confine-to', dict(action='append', metavar='ROOT'), exec_type=str,
           exec_kind='list', field='confine_to'),
    # Every row at a bounded cost (issue 65): a row past S seconds fails as too_slow
    # (`steps.deadline.RowDeadline`; without Beam, `engines.local_pool._RowClock` stops its
    # worker process). 60 s is far above any image's conversion (a 178 M-pixel PNG's
    # decode check takes seconds) and short enough that a stuck row does not hold a run.
    Option('row_time_limit', 60.0,
           'fail a row whose conversion (read, checks, record, thumbnail) takes longer than S '
           'seconds as too_slow (default 60; 0: no limit); without Beam its worker process is '
           'stopped, so a read or decode stuck in C code is stopped too',
           '--row-time-limit', dict(type='float', metavar='S'), exec_type=float,
           field='row_time_limit'),
)

BY_NAME: Dict[str, Option] = {o.name: o for o in OPTIONS}


def taken_by(where: str, writes: bool = True) -> Tuple[Option, ...]:
  """The options taken at one place, in `OPTIONS`' order.

  Args:
    where: CLI, API or COMPONENT.
    writes: False to leave out the options that only matter where records are written
      (what `validate` takes).
  """
  return tuple(o for o in OPTIONS if o.taken_by(where) and (writes or not o.writes))


def defaults(where: str = API, writes: bool = True) -> Dict[str, Any]:
  """The defaults of the options taken at one place, as {option name: default}.

  Args:
    where: CLI, API (the default: `convert()`'s keywords) or COMPONENT.
    writes: False to leave out the options that only matter where records are written
      (what `validate` takes).
  """
  return {o.name: o.default for o in taken_by(where, writes)}


def choice_error(name: str, value: Any) -> Optional[str]:
  """Why `value` cannot be option `name`'s, for an option of a few named choices (its
  flag's `choices`: `source_id`, `label_order`); None where it is one of them.

  Args:
    name: The option's name (`OPTIONS`).
    value: The value given.
  """
  choices = BY_NAME[name].cli.get('choices')
  if choices is None or value in choices:
    return None
  return f'{name} must be one of {", ".join(map(str, choices))}, got {value!r}'
