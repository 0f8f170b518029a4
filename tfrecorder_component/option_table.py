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

Length: one table, each option's entry with all that is said of it (its help, its
guides' texts, its bounds) so that an option is added in one place; the functions that
read it are short.

This module imports nothing of the package, so that every module can take its
defaults from here (`images.probe`, `steps.shards`, ...) and the command can list its
flags without loading Pillow or numpy.
"""
from __future__ import annotations

import dataclasses
import numbers
import operator
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

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
    doc: What it does, in Markdown, as the Python guide's options table and `convert()`
      say it (`{formats}`: the manifest formats' names).
    component_doc: The same for the component (its docstring, links dropped, and the
      component guide's table), where it says more or other; None: `doc`.
    component_default: The component guide's default cell, in Markdown, where words
      say it better than the literal; None: the default as a literal.
    shown_default: The default as the Python guide shows it, where its literal is not
      how a user writes it (`splits`' pairs as a dict); None: its literal.
    annotation: The component constructor's type annotation (names of `typing` and
      `ImageTransform`); None: the default's type.
    bounds: (least, most) of a number, either None for no bound: a whole number where
      `exec_type` is int, else any real number.
    unit: What a number counts, in its range error ('seconds'); None: nothing.
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
  doc: str = ''
  component_doc: Optional[str] = None
  component_default: Optional[str] = None
  shown_default: Optional[str] = None
  annotation: Optional[str] = None
  bounds: Optional[Tuple[Optional[float], Optional[float]]] = None
  unit: Optional[str] = None

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
           '--overwrite', dict(action='store_true'), taken=WITHOUT_A_PIPELINE, writes=True,
           doc='replace an earlier output of this tool in `output_dir`, which must '
               'otherwise be new or empty; files of yours there stay, a folder that is no '
               'output is refused, and the old output stays until the new one is complete '
               '(see [reruns and safety](output.md#output-folders-reruns-and-safety))'),
    Option('max_error_ratio', 0.0,
           'fraction of rows that may fail (default 0: any failure fails)',
           '--max-error-ratio', dict(type='float'), writes=True, exec_type=float,
           exec_optional=False,
           doc='fraction of the rows that may fail; more raise `TooManyFailedRows`, naming '
               'the first failed rows, and leave no records (the failed rows are in '
               '`<output_dir>/report/errors.jsonl` either way; see [the error '
               'policy](report.md#the-error-policy))',
           component_doc='fraction of manifest rows that may fail before the execution '
                         'fails (see [the report](report.md#the-error-policy))',
           component_default='`0.0`',
           bounds=(0, 1)),
    Option('num_shards', 0,
           'write exactly N shards per split, records spread evenly (default: the runner '
           'decides, one shard per bundle)',
           '--num-shards', dict(type='int', metavar='N'), writes=True, group='shards',
           exec_type=int, exec_optional=False, field='num_shards',
           doc='exactly this many shards per split, records spread evenly; `0`: the runner '
               'decides, one shard per bundle',
           component_doc='exactly this many shards per split '
                         '(`data_tfrecord-SSSSS-of-NNNNN.gz`), records spread evenly in '
                         'order (a split no record went to is not written). With 0, as '
                         "TFX's own ExampleGen, one shard per worker and bundle: one per "
                         'split for a local run of up to 2,000 rows (one more a worker '
                         'beyond) and on the in-memory DirectRunner, hundreds of small '
                         'files on Dataflow',
           component_default='`0`: the runner decides',
           bounds=(0, None)),
    Option('shard_size_mb', 0.0,
           'write shards of about MB megabytes each (TensorFlow suggests 100 MB or more, '
           'and at least as many shards as parallel readers)',
           '--shard-size-mb', dict(type='float', metavar='MB'), writes=True, group='shards',
           exec_type=float, exec_optional=False, field='shard_size_mb',
           doc='instead of `num_shards`: shards of about this many megabytes per split',
           component_doc='instead of `num_shards`, shards of about this size per split (at '
                         "least one). TensorFlow's guidance: shards of 100 MB or more, "
                         'and at least as many shards as the readers that read them in '
                         'parallel. Either setting first writes each bundle to a temporary '
                         'file under the output, then rewrites the records into the final '
                         'shards, one worker per shard: one more read and write of the '
                         'data, memory still flat',
           component_default='`0`',
           bounds=(0, None)),
    Option('layouts', (),
           'also write the records in this layout beside TFX\'s GZIP shards (repeatable, or '
           'comma-separated): tfrecord (uncompressed + .idx: DALI, PyTorch), tfds '
           '(tfds.builder_from_directory), array_record (Grain), parquet (pandas, Hugging '
           'Face datasets)',
           '--layout', dict(action='append', metavar='NAME'), writes=True, exec_type=str,
           exec_kind='list', field='layouts',
           doc="extra layouts written beside TFX's GZIP shards: `'tfrecord'`, `'tfds'`, "
               "`'array_record'`, `'parquet'` (see [output layouts](layouts.md))",
           component_doc="output layouts written into the Examples artifact beside TFX's "
                         "GZIP shards, from them: `'tfrecord'` (uncompressed + `.idx`, for "
                         "DALI and PyTorch), `'tfds'`, `'array_record'` (Grain), "
                         "`'parquet'` (see [output layouts](layouts.md))",
           component_default='none', annotation='Optional[Sequence[str]]'),
    Option('manifest_format', None,
           'manifest format, one of: {formats} (default: detected per file; yolo_obb is '
           'only ever named)',
           '--format', exec_type=str,
           doc="the manifest's format, one of [the formats](formats.md) (`'automl_csv'`, "
               "`'coco_json'`, `'pascal_voc'`, `'yolo'`, ...); `None` detects it per file",
           component_doc='one of [the formats](formats.md): {formats}',
           component_default='detected per file',
           annotation='Optional[str]'),
    Option('image_root', None,
           'folder or gs:// prefix that relative image URIs, COCO file_names and Pascal VOC '
           'filenames are relative to (default: the manifest\'s folder)',
           '--image-root', exec_type=str,
           doc='folder or `gs://` prefix that relative image URIs, COCO `file_name`s and '
               "Pascal VOC `filename`s are relative to; `None`: the manifest's folder",
           component_doc='folder or `gs://` prefix that relative image URIs, COCO '
                         '`file_name`s and Pascal VOC `filename`s are relative to, and '
                         "that holds a Labelbox export's downloaded images "
                         '(`<image_root>/<external_id>`)',
           component_default="the manifest's folder",
           annotation='Optional[str]'),
    Option('splits', DEFAULT_BUCKETS,
           'hash buckets for rows without ML_USE (default: train=8,eval=1,test=1)',
           '--splits', dict(type='splits'), taken=WITHOUT_A_PIPELINE, field='buckets',
           doc='hash buckets for the rows without a split (no `ML_USE`, or `UNASSIGNED`): '
               'a dict or `(name, buckets)` pairs',
           shown_default="{'train': 8, 'eval': 1, 'test': 1}"),
    Option('feature_types', None,
           'types of extra manifest columns as JSON, e.g. \'{"weight": "float"}\' '
           '(default: inferred per file)',
           '--feature-types', dict(type='json_object'), exec_type=str, exec_kind='json',
           doc='the types of extra manifest columns, carried as features: `{column: type}` '
               "with `'int'`, `'float'` or `'string'`; `None`: inferred per file",
           component_doc="`{column: 'int' \\| 'float' \\| 'string'}` for extra manifest "
                         'columns carried as features',
           component_default='inferred per file',
           annotation='Optional[Dict[str, str]]'),
    Option('columns', None,
           'the CSV header\'s columns of the image, label (repeatable), split and (segmentation '
           'CSV) mask, where the names the reader knows miss or mislead, e.g. '
           '\'image=filepaths,label=labels,split=data set\': a name runs to the next comma, '
           'spaces and all (quote one that holds a comma); label= or split= reads none '
           '(default: found by the header\'s names)',
           '--columns', dict(type='columns', metavar='ROLE=COLUMN,...'), exec_type=str,
           exec_kind='columns',
           doc="a CSV header's columns of the image, label, split (and a segmentation "
               "CSV's mask), where the names the reader knows miss or mislead: `{'image': "
               "'filepaths', 'label': 'labels', 'split': 'data set'}` (a list of label "
               'columns for a multi-label CSV; `None` for a label or split reads none) or '
               "the command's text `'image=filepaths,label=labels,split=data set'`; a "
               'column the header lacks, or a manifest of another format, is refused (see '
               '[header names and '
               'columns](formats.md#header-names-and-the-columns-option)); `None`: found '
               'by name',
           component_doc="a CSV header's image, label, split (and segmentation mask) "
                         'columns where the names the reader knows miss or mislead: '
                         '`{"image": "filepaths", "label": "labels", "split": "data set"}` '
                         "or `'image=filepaths,label=labels,split=data set'`, kept as "
                         'JSON in the execution property (see [header names and '
                         'columns](formats.md#header-names-and-the-columns-option))',
           component_default='found by name',
           annotation='Optional[Union[str, Dict[str, Any]]]'),
    Option('max_pixels', DEFAULT_MAX_PIXELS,
           'refuse images whose header claims more pixels (default: 178,956,970)',
           '--max-pixels', dict(type='int'), exec_type=int, exec_optional=False,
           field='max_pixels',
           doc='refuse images whose header claims more pixels, before decoding '
               '(decompression bombs)',
           component_doc='images whose header claims more pixels are refused before '
                         'decoding (decompression bombs); Pillow itself refuses more than '
                         'twice its own limit whatever this says',
           component_default='178,956,970',
           bounds=(1, None)),
    Option('max_bytes', DEFAULT_MAX_BYTES,
           'refuse image files larger than this, at most 2 GiB - 16 MiB (what a record can '
           'hold; more is taken as that) (default: 64 MiB)',
           '--max-bytes', dict(type='int'), exec_type=int, exec_optional=False,
           field='max_bytes',
           doc='refuse image files larger than this (64 MiB), after reading at most one '
               'byte more; at most 2 GiB − 16 MiB, what a record can hold (a larger value '
               'is taken as that)',
           component_doc='image files larger than this are refused after reading at most '
                         '`max_bytes + 1` bytes; at most 2 GiB − 16 MiB, what a record can '
                         'hold (a larger value is taken as that)',
           component_default='64 MiB',
           bounds=(1, None)),
    Option('compression_level', DEFAULT_COMPRESSION_LEVEL,
           'gzip level of the shards (default 0, stored: encoded images do not compress)',
           '--compression-level', dict(type='int', choices=range(10), metavar='0-9'),
           writes=True, exec_type=int, exec_kind='value', exec_optional=False,
           field='compression_level',
           doc='gzip level of the shards, 0 to 9; 0 writes stored blocks (encoded images '
               'do not compress)',
           component_doc='gzip level of the shards: 0 writes stored deflate blocks, still '
                         'a valid `.gz` that every TFRecord reader reads; encoded images '
                         'do not compress (0.5% at level 6 on JPEG) while deflate would '
                         'take most of the run time. Use 6 for uncompressed formats such '
                         'as BMP',
           component_default='`0`',
           bounds=(0, 9)),
    Option('verify_decode', True,
           'probe headers only, do not decode every image',
           '--no-verify-decode', dict(action='store_false'), exec_type=int,
           exec_kind='flag', exec_optional=False, field='verify_decode',
           doc='decode every image once, so no truncated or corrupt file becomes a record; '
               '`False` probes headers only (see [the decode '
               'check](report.md#the-decode-check))',
           component_doc='decode every image once so no truncated or corrupt file becomes '
                         'a record; turn off only for trusted images (see the benchmark '
                         'for its cost)',
           component_default='`True`'),
    Option('convert_unsupported', False,
           're-encode WebP, TIFF, ... as PNG instead of failing them',
           '--convert-unsupported', dict(action='store_true'), exec_type=int,
           exec_kind='flag', exec_optional=False, field='convert_unsupported',
           doc='re-encode images TensorFlow cannot decode (WebP, TIFF, ...) as lossless '
               'PNG instead of failing their rows',
           component_doc='re-encode images TensorFlow cannot decode (WebP, TIFF, BMP with '
                         'trailing bytes, ...) as lossless PNG instead of failing their '
                         'rows',
           component_default='`False`'),
    Option('include_masks', False,
           'COCO, YOLO segmentation, LabelMe, CVAT, Label Studio: write each object\'s mask '
           '(polygons or RLE) as a PNG in image/object/mask',
           '--include-masks', dict(action='store_true'), exec_type=int, exec_kind='flag',
           field='include_masks',
           doc="COCO, YOLO segmentation, LabelMe, CVAT, Label Studio: each object's mask "
               'as a PNG in `image/object/mask` (see [masks and '
               'keypoints](formats.md#masks-keypoints-and-segmentation))',
           component_doc='COCO, YOLO segmentation, LabelMe, CVAT, Label Studio: each '
                         "object's instance mask (COCO's `segmentation`: polygons or RLE; "
                         'the drawn polygon or mask elsewhere) as a PNG in '
                         '`image/object/mask` (see [masks, keypoints and '
                         'segmentation](formats.md#masks-keypoints-and-segmentation))',
           component_default='`False`'),
    Option('include_keypoints', False,
           'COCO, YOLO pose, CVAT points: write each object\'s keypoints in '
           'image/object/keypoint/*',
           '--include-keypoints', dict(action='store_true'), exec_type=int,
           exec_kind='flag', field='include_keypoints',
           doc="COCO, YOLO pose, CVAT points: each object's keypoints in "
               '`image/object/keypoint/*`',
           component_doc='COCO, YOLO pose (`kpt_shape`), CVAT points grouped with a shape: '
                         "each object's keypoints in `image/object/keypoint/*`",
           component_default='`False`'),
    Option('class_synset', False,
           'classification: also write each record\'s labels as image/class/synset, the '
           'key of ImageNet\'s records that holds the class folder\'s name (a WordNet id '
           'such as n01440764)',
           '--class-synset', dict(action='store_true'), exec_type=int, exec_kind='flag',
           field='class_synset',
           doc="classification: each record's labels again as `image/class/synset`, the "
               "key ImageNet's records hold their class folder's name in (see "
               '[ImageNet-style readers](feeding-trainers.md#imagenet-style-readers))',
           component_doc="classification: each record's labels again as "
                         "`image/class/synset`, ImageNet's key for the class folder's name "
                         '(see [ImageNet-style '
                         'readers](feeding-trainers.md#imagenet-style-readers))',
           component_default='`False`'),
    Option('source_id', DEFAULT_SOURCE_ID,
           'what image/source_id holds: auto (the default: COCO\'s image id, as Model '
           'Garden\'s and the Object Detection API\'s COCO converters write it; else the '
           'image URI), uri (the image URI as the manifest writes it), number (a decimal '
           'int64 of the URI, the first 63 bits of its SHA-256, which Model Garden\'s '
           'process_source_id parses; equal numbers are reported)',
           '--source-id', dict(choices=SOURCE_IDS), exec_type=str, field='source_id',
           doc="what `image/source_id` holds: `'auto'` COCO's image id (as Model Garden's "
               "and the Object Detection API's COCO converters write it), else the image "
               "URI; `'uri'` the image URI; `'number'` a decimal int64 of the URI (the "
               "first 63 bits of its SHA-256), which Model Garden's `process_source_id` "
               'parses; images given one id are reported (see [record '
               'keys](output.md#record-keys))',
           component_doc="what `image/source_id` holds: `'auto'` COCO's image id, else the "
                         "image URI; `'uri'` the image URI; `'number'` a decimal int64 of "
                         "the URI (63 bits of its SHA-256), which Model Garden's "
                         '`process_source_id` parses (see [record '
                         'keys](output.md#record-keys))',
           component_default="`'auto'`"),
    Option('concurrent_reads', DEFAULT_CONCURRENT_READS,
           'reads in flight per worker for images on gs://, s3:// and other remote storage '
           '(default 64; local files are read in line)',
           '--concurrent-reads', dict(type='int', metavar='N'), exec_type=int,
           field='concurrent_reads',
           doc='reads in flight per worker for images on `gs://`, `s3://` and other remote '
               'storage (see [object storage](object-storage.md)); local files are read '
               'in line',
           component_doc='reads in flight per worker for images on `gs://`, `s3://` and '
                         'other remote storage, so their latency hides behind the '
                         'conversion (see [object storage](object-storage.md)); local '
                         'files are read in line',
           component_default='`64`',
           bounds=(1, None)),
    # The pool's size (`engines.run.local_workers`); on Beam's DirectRunner its
    # --direct_num_workers (`engines.run.with_default_parallelism`).
    Option('workers', 0,
           'worker processes on this machine: without Beam, the pool that converts the rows; '
           'on Beam\'s DirectRunner, its --direct_num_workers; 0, the default, takes a worker '
           'per 1,000 rows without Beam and every core from 8,000 rows on Beam, up to one a '
           'core; other runners set their own (Dataflow: --beam-arg=--max_num_workers=N)',
           '--workers', dict(type='int', metavar='N'), exec_type=int, field='workers',
           doc='worker processes on this machine: without Beam the pool that converts the '
               "rows, on Beam's DirectRunner its `--direct_num_workers`; `0`: a worker per "
               '1,000 rows without Beam, every core from 8,000 rows on Beam, up to one a '
               'core (see [cores, with or without '
               'Beam](component.md#cores-with-or-without-beam)); refused beside another '
               'runner or a `--direct_num_workers` in `beam_args`',
           component_doc="worker processes on the executor's machine: without Beam (the "
                         'DirectRunner and no Beam argument that asks for Beam) the pool '
                         "that converts the rows, on Beam's DirectRunner its "
                         '`--direct_num_workers`; `0`: a worker per 1,000 rows without '
                         'Beam, every core from 8,000 rows on Beam, up to one a core. '
                         'Refused beside another runner (Dataflow sizes itself: '
                         '`--max_num_workers`) or a `--direct_num_workers` in '
                         '`beam_pipeline_args`',
           component_default='`0`: as the rows call for',
           bounds=(0, None)),
    Option('label_map', None,
           'keep the ids of this label map: a label_map.pbtxt, a label_map.csv, a labels.txt '
           'or an earlier output folder; a label it lacks fails its rows',
           '--label-map', dict(metavar='PATH'), exec_type=str, field='label_map',
           doc='ids to keep: a `label_map.pbtxt`, `label_map.csv` or `labels.txt` path, an '
               'earlier output folder, a `{label: id}` dict or a list of labels in id '
               'order; a label it lacks fails its rows (see [label '
               'ids](output.md#label-ids))',
           component_doc='ids to keep: a `label_map.pbtxt`, `label_map.csv` or '
                         '`labels.txt` path, or an earlier output folder (see [label '
                         'ids](output.md#label-ids)); a label it lacks fails its rows '
                         '(`unknown_label`) unless `append_new_labels`',
           component_default='none',
           annotation='Optional[str]'),
    Option('append_new_labels', False,
           'with --label-map: give labels it lacks the next free ids (continuous training: '
           'every earlier id stays)',
           '--append-new-labels', dict(action='store_true'), exec_type=int,
           exec_kind='flag', field='append_new_labels',
           doc='with `label_map`: a label it lacks takes the next free id instead of '
               'failing its rows (continuous training)',
           component_doc='with `label_map`: labels it lacks take the next free ids',
           component_default='`False`'),
    Option('label_order', LABEL_ORDERS[0],
           'the order assigned ids follow: auto (the default: by number when every label '
           'is an integer, 2 before 10, else as text) or text (as text, 10 before 2: the '
           'ids Keras image_dataset_from_directory and TFDS ImageFolder give class '
           'folders)',
           '--label-order', dict(choices=LABEL_ORDERS), exec_type=str,
           field='label_order',
           doc="the order assigned ids follow: `'auto'` by number when every label is an "
               "integer (`2` before `10`), else as text; `'text'` always as text (`10` "
               "before `2`), the ids Keras's `image_dataset_from_directory` and TFDS's "
               '`ImageFolder` give class folders (see [label ids](output.md#label-ids))',
           component_doc="the order assigned ids follow: `'auto'` by number when every "
                         "label is an integer, else as text; `'text'` as text, the ids "
                         "Keras's `image_dataset_from_directory` and TFDS's `ImageFolder` "
                         'give class folders (see [label ids](output.md#label-ids))',
           component_default="`'auto'`"),
    Option('class_map', None,
           'classes to keep, drop, rename or merge: a JSON object or a .json / .yaml file of '
           'one, e.g. \'{"car": "vehicle", "truck": "vehicle", "blurry": null}\'; "*": null '
           'drops every class not listed',
           '--class-map', dict(metavar='JSON|PATH'), exec_type=str, exec_kind='class_map',
           field='class_map',
           doc="classes to keep, drop, rename or merge: a dict such as `{'car': 'vehicle', "
               "'blurry': None, '*': None}` (`'*'`: every class not listed) or a `.json` "
               '/ `.yaml` file of one (see [class mapping](output.md#class-mapping))',
           component_doc='classes to keep, drop, rename or merge, given once: `{"car": '
                         '"vehicle", "truck": "vehicle", "blurry": None}`; `"*"` says what '
                         'becomes of the classes not listed (see [class '
                         'mapping](output.md#class-mapping))',
           component_default='none',
           annotation='Optional[Dict[str, Optional[str]]]'),
    Option('image_transform', None,
           'image transform as JSON, e.g. \'{"longest_side": 512, "encode": "jpeg"}\'',
           '--transform', dict(metavar='JSON'), exec_type=str, exec_kind='transform',
           field='transform',
           doc='an `ImageTransform` or a dict of its fields (`auto_orient`, `size` and '
               '`resize_mode`, `longest_side`, `color`, `encode`, `jpeg_quality`, '
               '`pad_color`); boxes, masks and keypoints follow the pixels (see [image '
               "transforms](output.md#image-transforms)); `None`: the file's bytes pass "
               'through',
           component_doc='an `ImageTransform` or a dict of its fields: `auto_orient`, '
                         '`size` + `resize_mode`, `longest_side`, `color`, `encode`, '
                         '`jpeg_quality`, `pad_color` (see [image '
                         'transforms](output.md#image-transforms))',
           component_default='none: bytes pass through',
           annotation='Optional[Union[ImageTransform, Dict[str, Any]]]'),
    Option('runner', 'DirectRunner',
           'Beam runner (default: %(default)s; on local files with no --beam-arg, without '
           'Beam: a worker process per 1,000 rows, up to one a core; DataflowRunner needs '
           '--project, --region and --temp-location)',
           '--runner', taken=WITHOUT_A_PIPELINE,
           doc='Beam runner; on local files and with no `beam_args`, the run goes without '
               'Beam, a worker process per 1,000 rows up to one a core (see [cores, with '
               'or without Beam](component.md#cores-with-or-without-beam))'),
    Option('project', None, 'Google Cloud project (Dataflow)', '--project',
           taken=WITHOUT_A_PIPELINE,
           doc='Google Cloud project (Dataflow)'),
    Option('region', None, 'Google Cloud region (Dataflow)', '--region',
           taken=WITHOUT_A_PIPELINE,
           doc='Google Cloud region (Dataflow)'),
    Option('temp_location', None, 'gs:// folder for Dataflow\'s temporary files',
           '--temp-location', taken=WITHOUT_A_PIPELINE,
           doc="`gs://` folder for Dataflow's temporary files"),
    Option('beam_args', (),
           'an extra Beam argument (repeatable), e.g. --beam-arg=--direct_num_workers=0',
           '--beam-arg', dict(action='append'), taken=WITHOUT_A_PIPELINE,
           doc="extra Beam pipeline arguments, e.g. `['--direct_num_workers=0']`"),
    # The command shows progress unless --quiet (`--progress-every` sets how often where
    # stderr is no terminal); the component logs it.
    Option('progress_every_s', None,
           'show the run\'s progress on stderr every this many seconds', taken=frozenset((API,)),
           doc="show the run's progress on stderr: a live bar in a terminal, else a line "
               'every this many seconds; `None`: only `logging` INFO lines'),
    # Untrusted input (docs/guides/untrusted-input.md): `manifest.confine`.
    Option('confine_to', None,
           'read only files inside these folders (repeatable, or comma-separated): a local '
           'folder, gs://bucket/prefix or s3://bucket/prefix, or source (the source\'s own '
           'folder); links are followed, and an image, mask, image list, label file, '
           'path: root or any other path a manifest names that leads outside them fails '
           'its row as outside_root, never opened (default: no confinement)',
           '--confine-to', dict(action='append', metavar='ROOT'), exec_type=str,
           exec_kind='list', field='confine_to',
           doc='folders every file read for a row must lie inside, links followed: a local '
               "folder, `'gs://bucket/prefix'`, `'s3://bucket/prefix'`, a list of them, "
               "or `'source'` (the source's own folder); a row whose image, mask, list or "
               'label file leads outside fails as `outside_root`, unopened (see [untrusted '
               'input](untrusted-input.md))',
           component_doc='folders every file read for a row must lie inside, links '
                         'followed: local folders, `gs://bucket/prefix`, '
                         "`s3://bucket/prefix`, or `'source'` (each manifest artifact's "
                         'folder, or `input_base`), kept comma-separated in the execution '
                         'property; a row whose file leads outside fails as '
                         '`outside_root`, unopened (see [untrusted '
                         'input](untrusted-input.md))',
           component_default='none',
           annotation='Optional[Union[str, List[str]]]'),
    # Every row at a bounded cost (issue 65): a row past S seconds fails as too_slow
    # (`steps.deadline.RowDeadline`; without Beam, `engines.local.pool.RowClock` stops its
    # worker process). 60 s is far above any image's conversion (a 178 M-pixel PNG's
    # decode check takes seconds) and short enough that a stuck row does not hold a run.
    Option('row_time_limit', 60.0,
           'fail a row whose conversion (read, checks, record, thumbnail) takes longer than S '
           'seconds as too_slow (default 60; 0: no limit); without Beam its worker process is '
           'stopped, so a read or decode stuck in C code is stopped too',
           '--row-time-limit', dict(type='float', metavar='S'), exec_type=float,
           field='row_time_limit',
           doc="seconds a row's conversion (read, checks, record, thumbnail) may take; a "
               'row past it fails as `too_slow`, naming how long it ran, and the run goes '
               'on: without Beam its worker process is stopped, so a read or decode stuck '
               'in C code is stopped too (see [error reasons](report.md#error-reasons)); '
               '`0`: no limit',
           component_doc="seconds a row's conversion (read, checks, record, thumbnail) may "
                         'take; a row past it fails as `too_slow` (see [error '
                         'reasons](report.md#error-reasons)). On Beam the row is '
                         'interrupted where it returns to Python: a row stuck in C code '
                         'holds its bundle; `0`: no limit',
           component_default='`60.0`',
           bounds=(0, None),
           unit='seconds'),
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


def bounds_error(option: Option, value: Any) -> Optional[str]:
  """Why `value` is outside `option`'s `bounds` (or not a number of its kind: a whole
  number where its `exec_type` is int, numpy's too, never a bool); None where it is
  within them or the option has none.

  Args:
    option: The option's declaration (`OPTIONS`).
    value: The value given.
  """
  if option.bounds is None:
    return None
  least, most = option.bounds
  whole = option.exec_type is int
  if whole:
    try:
      number_ok = not isinstance(value, bool) and value == operator.index(value)
    except TypeError:
      number_ok = False
  else:
    number_ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and (
        value == value)  # not NaN
  if number_ok and (least is None or value >= least) and (most is None or value <= most):
    return None
  kind = ('a whole number' if whole else 'a number') + (f' of {option.unit}' if option.unit
                                                        else '')
  if least is not None and most is not None:
    span = f'from {least} to {most}'
  else:
    span = f'{least} or more' if least is not None else f'at most {most}'
  return f'{option.name} must be {kind}, {span}, got {value!r}'


def literal(option: Option) -> str:
  """The option's default as Python code, as the Python guide shows it (`shown_default`
  where given; a large whole number with `_` between thousands).

  Args:
    option: The option's declaration (`OPTIONS`).
  """
  if option.shown_default is not None:
    return option.shown_default
  value = option.default
  if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
    return f'{value:_}'
  return repr(value)


def _cell(text: str) -> str:
  """`text` in a Markdown table's cell: its pipes escaped."""
  return text.replace('|', '\\|').replace('\\\\|', '\\|')


def docs_texts(where: str, formats: Tuple[str, ...] = ()) -> List[Tuple[str, str, str]]:
  """(name, default, what it does), in Markdown, of each option taken at `where`, in
  `OPTIONS`' order, as the Python guide (API: `doc`, the default's literal) and the
  component guide and constructor (COMPONENT: `component_doc`, `component_default`)
  say them.

  Args:
    where: API or COMPONENT.
    formats: The manifest formats' names, for a `{formats}` in a text.
  """
  names = ', '.join(f'`{name}`' for name in formats)
  texts = []
  for o in taken_by(where):
    if where == COMPONENT:
      text, default = o.component_doc or o.doc, o.component_default or f'`{literal(o)}`'
    else:
      text, default = o.doc, f'`{literal(o)}`'
    texts.append((o.name, default, text.replace('{formats}', names)))
  return texts


def docs_rows(where: str, formats: Tuple[str, ...] = ()) -> List[str]:
  """The Markdown table rows of the options taken at `where` (`docs_texts`):
  `| name | default | what it does |`.

  Args:
    where: API or COMPONENT.
    formats: The manifest formats' names, for a `{formats}` in a text.
  """
  return [f'| `{name}` | {default} | {_cell(text)} |'
          for name, default, text in docs_texts(where, formats)]
