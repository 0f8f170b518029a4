"""ImageExampleGen's component spec: what goes in, what comes out, what can be set."""
from tfx.proto import example_gen_pb2, range_config_pb2
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from tfrecorder_component.component.types import ConversionReport, ImageManifest

MANIFEST_KEY = 'manifest'
EXAMPLES_KEY = 'examples'
INPUT_BASE_KEY = 'input_base'
INPUT_CONFIG_KEY = 'input_config'
OUTPUT_CONFIG_KEY = 'output_config'
RANGE_CONFIG_KEY = 'range_config'
MANIFEST_FORMAT_KEY = 'manifest_format'
MAX_PIXELS_KEY = 'max_pixels'
MAX_ERROR_RATIO_KEY = 'max_error_ratio'
MAX_BYTES_KEY = 'max_bytes'
CONVERT_UNSUPPORTED_KEY = 'convert_unsupported'
COMPRESSION_LEVEL_KEY = 'compression_level'
VERIFY_DECODE_KEY = 'verify_decode'
IMAGE_ROOT_KEY = 'image_root'
FEATURE_TYPES_KEY = 'feature_types'
IMAGE_TRANSFORM_KEY = 'image_transform'
NUM_SHARDS_KEY = 'num_shards'
SHARD_SIZE_MB_KEY = 'shard_size_mb'
INCLUDE_MASKS_KEY = 'include_masks'
INCLUDE_KEYPOINTS_KEY = 'include_keypoints'
CONCURRENT_READS_KEY = 'concurrent_reads'
LABEL_MAP_KEY = 'label_map'
APPEND_NEW_LABELS_KEY = 'append_new_labels'
LABEL_MAP_EXAMPLES_KEY = 'label_map_examples'
CLASS_MAP_KEY = 'class_map'
LAYOUTS_KEY = 'layouts'
REPORT_KEY = 'report'


class ImageExampleGenSpec(ComponentSpec):
  """Inputs: a manifest channel or an input_base folder. Outputs: split Examples, a report."""

  PARAMETERS = {
      INPUT_BASE_KEY: ExecutionParameter(type=str, optional=True),
      INPUT_CONFIG_KEY: ExecutionParameter(type=example_gen_pb2.Input),
      OUTPUT_CONFIG_KEY: ExecutionParameter(type=example_gen_pb2.Output),
      RANGE_CONFIG_KEY: ExecutionParameter(type=range_config_pb2.RangeConfig, optional=True),
      MANIFEST_FORMAT_KEY: ExecutionParameter(type=str, optional=True),
      MAX_PIXELS_KEY: ExecutionParameter(type=int),
      MAX_ERROR_RATIO_KEY: ExecutionParameter(type=float),
      MAX_BYTES_KEY: ExecutionParameter(type=int),
      CONVERT_UNSUPPORTED_KEY: ExecutionParameter(type=int),  # 0 or 1
      COMPRESSION_LEVEL_KEY: ExecutionParameter(type=int),  # gzip level 0..9
      VERIFY_DECODE_KEY: ExecutionParameter(type=int),  # 0 or 1
      IMAGE_ROOT_KEY: ExecutionParameter(type=str, optional=True),
      FEATURE_TYPES_KEY: ExecutionParameter(type=str, optional=True),  # JSON {column: type}
      IMAGE_TRANSFORM_KEY: ExecutionParameter(type=str, optional=True),  # JSON ImageTransform
      NUM_SHARDS_KEY: ExecutionParameter(type=int),  # 0: the runner decides
      SHARD_SIZE_MB_KEY: ExecutionParameter(type=float),  # 0: see num_shards
      INCLUDE_MASKS_KEY: ExecutionParameter(type=int, optional=True),  # 0 or 1
      INCLUDE_KEYPOINTS_KEY: ExecutionParameter(type=int, optional=True),  # 0 or 1
      # reads in flight per worker for remote images; optional so that pipelines
      # compiled before it existed still run
      CONCURRENT_READS_KEY: ExecutionParameter(type=int, optional=True),
      # ids to keep: a label_map.pbtxt / labels.txt path or an earlier output folder
      LABEL_MAP_KEY: ExecutionParameter(type=str, optional=True),
      APPEND_NEW_LABELS_KEY: ExecutionParameter(type=int, optional=True),  # 0 or 1
      # JSON {class: new class or null}: classes to keep, drop, rename or merge
      CLASS_MAP_KEY: ExecutionParameter(type=str, optional=True),
      LAYOUTS_KEY: ExecutionParameter(type=str, optional=True),
  }
  INPUTS = {
      MANIFEST_KEY: ChannelParameter(type=ImageManifest, optional=True),
      # an earlier Examples (a resolver's latest): its ids are kept, new labels appended
      LABEL_MAP_EXAMPLES_KEY: ChannelParameter(type=standard_artifacts.Examples,
                                               optional=True),
  }
  OUTPUTS = {
      EXAMPLES_KEY: ChannelParameter(type=standard_artifacts.Examples),
      REPORT_KEY: ChannelParameter(type=ConversionReport),
  }
