"""ImageExampleGen's component spec: what goes in, what comes out, what can be set."""
from tfx.proto import example_gen_pb2, range_config_pb2
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from tfrecorder_component import option_table
from tfrecorder_component.adapters.component.types import ConversionReport, ImageManifest

MANIFEST_KEY = 'manifest'
EXAMPLES_KEY = 'examples'
INPUT_BASE_KEY = 'input_base'
INPUT_CONFIG_KEY = 'input_config'
OUTPUT_CONFIG_KEY = 'output_config'
RANGE_CONFIG_KEY = 'range_config'
LABEL_MAP_EXAMPLES_KEY = 'label_map_examples'
REPORT_KEY = 'report'


class ImageExampleGenSpec(ComponentSpec):
  """Inputs: a manifest channel or an input_base folder. Outputs: split Examples, a report."""

  PARAMETERS = {
      INPUT_BASE_KEY: ExecutionParameter(type=str, optional=True),
      INPUT_CONFIG_KEY: ExecutionParameter(type=example_gen_pb2.Input),
      OUTPUT_CONFIG_KEY: ExecutionParameter(type=example_gen_pb2.Output),
      RANGE_CONFIG_KEY: ExecutionParameter(type=range_config_pb2.RangeConfig, optional=True),
      # The conversion's options, as `option_table.OPTIONS` declares them (their
      # values as `component.properties` writes them: flags 0 or 1, maps JSON).
      **{o.name: ExecutionParameter(type=o.exec_type, optional=o.exec_optional)
         for o in option_table.taken_by(option_table.COMPONENT)},
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
