"""ImageExampleGen: an image manifest becomes a split `Examples` artifact."""
import numbers
from typing import Any, Dict, List, Optional, Union

from tfx.components.example_gen import component as example_gen_component
from tfx.components.example_gen import utils as example_gen_utils
from tfx.dsl.components.base import base_beam_component, executor_spec
from tfx.orchestration import data_types
from tfx.proto import example_gen_pb2, range_config_pb2
from tfx.types import channel, standard_artifacts

from tfrecorder_component import option_table
from tfrecorder_component.images import transform as transform_lib
from tfrecorder_component.adapters.component import driver, executor, properties, spec, types
from tfrecorder_component.manifest import MANIFEST_FORMATS, check_feature_types
from tfrecorder_component.manifest.confine import parse_roots
from tfrecorder_component.output.layouts import check_layouts
from tfrecorder_component.options import check_sharding


def default_output_config() -> example_gen_pb2.Output:
  """Hash buckets for rows without ML_USE: train 8, eval 1, test 1 (AutoML's 80/10/10)."""
  return example_gen_pb2.Output(split_config=example_gen_pb2.SplitConfig(splits=[
      example_gen_pb2.SplitConfig.Split(name=name, hash_buckets=n)
      for name, n in option_table.DEFAULT_BUCKETS]))


class ImageExampleGen(base_beam_component.BaseBeamComponent):
  """Loads the images a manifest lists and writes them as split tf.train.Examples.

  Give the manifest either as `manifest` (a channel of `ImageManifest`, for example
  from `tfx.dsl.Importer`) or as `input_base` (a folder of manifests, matched by the
  split patterns of `input_config`, `{SPAN}` / `{VERSION}` resolved to the latest as
  FileBasedExampleGen does).

  Rows keep the split their ML_USE column names (TRAIN -> train, VALIDATION -> eval,
  TEST -> test). Unassigned rows are split by `output_config` hash buckets over the
  image's source id (default train:eval:test = 8:1:1). With several `input_config`
  splits, every row of a split's files takes that split.

  Outputs: `examples`, a standard Examples artifact (`Split-<name>/data_tfrecord-*.gz`
  plus `labels.txt`, `label_map.pbtxt` and `label_map.csv`; see
  `tfrecorder_component.read_label_map`),
  and `report`, a ConversionReport (summary, failed rows, duplicate images).

  Label ids stay put across runs when a `label_map` is given, or when the optional
  `label_map_examples` input brings the previous run's Examples (see
  `tfrecorder_component.record.labels`).
  """

  SPEC_CLASS = spec.ImageExampleGenSpec
  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)
  DRIVER_CLASS = driver.ImageExampleGenDriver

  def __new__(cls, manifest=None, input_base=None, *args, **kwargs):  # pylint: disable=keyword-arg-before-vararg
    del manifest, args, kwargs  # __init__ reads them
    # With `input_base` the component is also a FileBasedExampleGen, the one kind of
    # node that KubeflowV2DagRunner gives the span driver hook (`preCacheCheck`).
    if cls is ImageExampleGen and input_base:
      cls = FileBasedImageExampleGen
    return super().__new__(cls)

  def __init__(
      self,
      manifest: Optional[channel.BaseChannel] = None,
      input_base: Optional[str] = None,
      input_config: Optional[Union[example_gen_pb2.Input, data_types.RuntimeParameter]] = None,
      output_config: Optional[Union[example_gen_pb2.Output, data_types.RuntimeParameter]] = None,
      range_config: Optional[Union[range_config_pb2.RangeConfig,
                                   data_types.RuntimeParameter]] = None,
      manifest_format: Optional[str] = None,
      max_pixels: int = option_table.DEFAULT_MAX_PIXELS,
      max_bytes: int = option_table.DEFAULT_MAX_BYTES,
      max_error_ratio: float = 0.0,
      convert_unsupported: bool = False,
      compression_level: int = option_table.DEFAULT_COMPRESSION_LEVEL,
      verify_decode: bool = True,
      image_root: Optional[str] = None,
      feature_types: Optional[Dict[str, str]] = None,
      columns: Optional[Union[str, Dict[str, Any]]] = None,
      image_transform: Optional[Union[transform_lib.ImageTransform, Dict[str, Any]]] = None,
      num_shards: int = 0,
      shard_size_mb: float = 0.0,
      include_masks: bool = False,
      include_keypoints: bool = False,
      class_synset: bool = False,
      source_id: str = option_table.DEFAULT_SOURCE_ID,
      concurrent_reads: int = option_table.DEFAULT_CONCURRENT_READS,
      workers: int = 0,
      label_map: Optional[str] = None,
      append_new_labels: bool = False,
      label_order: str = option_table.LABEL_ORDERS[0],
      label_map_examples: Optional[channel.BaseChannel] = None,
      class_map: Optional[Dict[str, Optional[str]]] = None,
      layouts: Optional[List[str]] = None,
      confine_to: Optional[Union[str, List[str]]] = None,
      row_time_limit: float = option_table.BY_NAME['row_time_limit'].default):
    """Constructs an ImageExampleGen.

    Args:
      manifest: Channel of `ImageManifest` (a manifest file or a folder of them).
      input_base: Folder of manifest files; the alternative to `manifest`.
      input_config: Split patterns relative to `input_base` (default: one split, '*').
      output_config: Hash buckets for rows without ML_USE (default 8:1:1
        train/eval/test).
      range_config: Span range, as for FileBasedExampleGen.
      manifest_format: One of 'automl_csv', 'automl_detection_csv', 'vertex_jsonl',
        'coco_json', 'pascal_voc', 'segmentation_csv', 'yolo' ... (docs/guides/formats.md);
        detected per file if unset.
      max_pixels: Images whose header claims more pixels are refused before they are
        decoded (decompression bombs).
      max_bytes: Image files larger than this are refused (default 64 MiB).
      max_error_ratio: Fraction of manifest rows that may fail (missing, not an image,
        ...) before the execution fails. Default 0.0: any failed row fails the run.
        Failed rows are listed in the `report` output either way.
      convert_unsupported: Re-encode images TensorFlow cannot decode (WebP, TIFF, ...)
        as PNG instead of reporting them as `unsupported_format`.
      compression_level: gzip level of the TFRecord shards. Default 0 (stored): encoded
        images do not compress, and deflate would dominate the run time. Use 6 for
        uncompressed formats such as BMP.
      verify_decode: Decode every image once so no truncated or corrupt file becomes a
        record (about 40% of the run time on 35 KB JPEGs). Turn off only for trusted
        images: the header is still probed, but broken image data goes unnoticed.
      image_root: Folder (or gs:// prefix) that relative image URIs, COCO
        `file_name`s and Pascal VOC `filename`s are relative to; default: the
        manifest's (or annotation file's) folder.
      feature_types: {column: 'int' | 'float' | 'string'} for extra manifest columns
        carried as features; undeclared columns are inferred per file.
      columns: A CSV header's columns that hold the image, label(s), split (and a
        segmentation CSV's mask), where the names the reader knows miss or are
        ambiguous: {'image': 'filepaths', 'label': 'labels', 'split': 'data set'}, or
        the command's text 'image=filepaths,label=labels,split=data set'; a label or
        split of None reads none. Default: found by name (docs/guides/formats.md).
      image_transform: An `ImageTransform` (or its fields as a dict): auto-orient,
        resize, colour, re-encode. Default: image bytes pass through unchanged.
      num_shards: Write exactly this many shards per split, records spread evenly.
        Default 0: the runner decides (one shard per bundle), as CsvExampleGen does.
      shard_size_mb: Instead of `num_shards`, shards of about this size (TensorFlow
        suggests 100 MB or more, and at least as many shards as parallel readers).
      include_masks: COCO, YOLO segmentation, LabelMe, CVAT, Label Studio: write each
        object's instance mask (polygons or RLE, rasterised as pycocotools does) as a
        PNG in `image/object/mask`, as the Object Detection API's `--include_masks`
        does and Mask R-CNN reads.
      include_keypoints: COCO, YOLO pose, CVAT points: write each object's keypoints
        (`image/object/keypoint/{x,y,visibility,num,text}`).
      class_synset: Classification: also write each record's labels as
        `image/class/synset`, the key of ImageNet's records that holds the class
        folder's name (a WordNet id such as n01440764).
      source_id: What `image/source_id` holds: 'auto' (COCO's image id in decimal, as
        Model Garden's and the Object Detection API's COCO converters write it; else
        the image URI), 'uri' (the image URI as the manifest writes it) or 'number'
        (the first 63 bits of the URI's SHA-256 in decimal, an int64 that Model
        Garden's `process_source_id` parses; images given one number are reported).
      concurrent_reads: Reads in flight per worker for images on gs://, s3:// and
        other remote storage, so that its latency hides behind the conversion
        (default 64). Local files are read in line.
      workers: Worker processes on the executor's machine: without Beam (the
        DirectRunner and no Beam argument that asks for Beam), the pool that converts
        the rows; on Beam's DirectRunner, its `--direct_num_workers`. Default 0: a worker
        per 1,000 rows without Beam, every core from 8,000 rows on Beam, up to one a
        core. The run refuses it beside another runner (Dataflow sets its own:
        `--max_num_workers`) or a `--direct_num_workers` in `beam_pipeline_args`.
      label_map: Ids to keep: a label_map.pbtxt, label_map.csv or labels.txt path (any
        file system Beam reads) or an earlier output folder. A label it lacks fails its rows
        (`unknown_label`) unless `append_new_labels`. Default: ids the source defines
        (COCO category ids), else the sorted labels.
      append_new_labels: With `label_map`: give labels it lacks the next free ids.
      label_order: The order assigned ids follow: 'auto' (by number when every label is
        an integer, `2` before `10`, else as text) or 'text' (as text, `10` before `2`:
        the ids Keras's `image_dataset_from_directory` and TFDS's `ImageFolder` give
        class folders).
      label_map_examples: Optional channel of an earlier `Examples` (a resolver's latest
        ImageExampleGen output, for continuous training): its ids are kept and new
        labels appended after them (closed instead when `label_map` is given without
        `append_new_labels`). Empty on a pipeline's first run: ids are assigned then.
      class_map: Classes to keep, drop, rename or merge, {class as annotated: class to
        write, or None to drop it}; the key "*" says what becomes of the classes not
        listed (None: dropped). Dropped objects are listed in box_issues.jsonl, rows
        left with no label in errors.jsonl (not counted as failures).
      layouts: Output layouts written into the Examples artifact beside TFX's GZIP
        shards, from them: 'tfrecord' (uncompressed + .idx, for DALI and PyTorch),
        'tfds', 'array_record' (Grain), 'parquet' (docs/guides/layouts.md).
      confine_to: Folders every file read for a row must lie inside, links followed
        (local folders, 'gs://bucket/prefix', 's3://bucket/prefix', or 'source': each
        manifest artifact's folder, or `input_base`): an image, mask, list or label
        file or any path a manifest names that leads outside fails its row as
        `outside_root`, never opened (docs/guides/untrusted-input.md). Default: none.
      row_time_limit: Seconds a row's conversion (read, checks, record, thumbnail) may
        take; a row past it fails as `too_slow` (docs/guides/report.md), interrupted
        where it returns to Python (a DoFn cannot outlive its process: a row stuck in C
        code holds its bundle). Default 60; 0: no limit.
    """
    # The conversion's options, as `option_table.OPTIONS` names them.
    options = {name: value for name, value in locals().items()
               if name in option_table.BY_NAME}
    if (manifest is None) == (not input_base):
      raise ValueError('ImageExampleGen needs exactly one of `manifest` (a channel of '
                       'ImageManifest) or `input_base` (a folder of manifests).')
    if manifest_format not in (None, *MANIFEST_FORMATS):
      raise ValueError(f'manifest_format must be one of {MANIFEST_FORMATS}, got {manifest_format!r}')
    if not 0 <= compression_level <= 9:
      raise ValueError(f'compression_level must be 0..9, got {compression_level}')
    if not 0.0 <= max_error_ratio <= 1.0:
      raise ValueError(f'max_error_ratio must be within [0, 1], got {max_error_ratio}')
    check_sharding(num_shards, shard_size_mb)
    if isinstance(concurrent_reads, bool) or not isinstance(concurrent_reads, numbers.Integral) or (
        concurrent_reads < 1):
      raise ValueError(f'concurrent_reads must be a whole number of at least 1, got '
                       f'{concurrent_reads!r}')
    if isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or workers < 0:
      raise ValueError(f'workers must be a whole number, 0 (as many as the rows call for) or '
                       f'more, got {workers!r}')
    for error in (option_table.choice_error('source_id', source_id),
                  option_table.choice_error('label_order', label_order)):
      if error:
        raise ValueError(error)
    if isinstance(image_transform, dict):
      image_transform = transform_lib.ImageTransform.from_dict(image_transform)
    check_feature_types(feature_types)  # ManifestError, a ValueError, names the bad entry
    input_config = input_config or example_gen_utils.make_default_input_config()
    output_config = output_config or default_output_config()
    # Explicitly the Beam component's constructor: FileBasedImageExampleGen also
    # inherits FileBasedExampleGen, whose constructor builds another spec.
    if layouts:
      options['layouts'] = check_layouts(layouts, check_available=False)
    options['confine_to'] = parse_roots(confine_to)  # UsageError (a ValueError) names a bad root
    base_beam_component.BaseBeamComponent.__init__(self, spec=spec.ImageExampleGenSpec(
        manifest=manifest,
        input_base=input_base,
        input_config=input_config,
        output_config=output_config,
        range_config=range_config,
        label_map_examples=label_map_examples,
        examples=channel.Channel(type=standard_artifacts.Examples),
        report=channel.Channel(type=types.ConversionReport),
        **properties.to_properties(options)))


class FileBasedImageExampleGen(ImageExampleGen, example_gen_component.FileBasedExampleGen):
  """ImageExampleGen over `input_base`, as `ImageExampleGen(input_base=...)` builds it.

  The same spec, executor and driver; being a `FileBasedExampleGen` as well makes
  KubeflowV2DagRunner attach TFX's example-gen driver as the executor's
  `lifecycle.preCacheCheck` hook, so `{SPAN}`, `{VERSION}`, `range_config` and the
  input fingerprint resolve on Vertex AI before the cache check, as on LocalDagRunner.
  Its node id and type are ImageExampleGen's, so pipelines, caches and ML Metadata
  see one component whichever input it reads.
  """

  @classmethod
  def get_class_type(cls) -> str:
    return ImageExampleGen.get_class_type()

  @property
  def id(self) -> str:
    return self._id or ImageExampleGen.__name__

  @id.setter
  def id(self, value: str) -> None:
    self._id = value
