"""Driver: resolves `{SPAN}` / `{VERSION}` and the input fingerprint for `input_base`.

With `input_base` it does exactly what FileBasedExampleGen's driver does (latest span,
latest version, fingerprint of the matched manifests, all part of the cache key).
With a `manifest` channel there is nothing to resolve, and it changes nothing.
"""
from tfx.components.example_gen import driver as example_gen_driver
from tfx.proto.orchestration import driver_output_pb2


class ImageExampleGenDriver(example_gen_driver.FileBasedDriver):

  def run(self, execution_info) -> driver_output_pb2.DriverOutput:
    """FileBasedDriver's resolution where `input_base` is set; otherwise an empty
    DriverOutput, which leaves the execution's properties and outputs as they are.

    Args:
      execution_info: The execution the orchestrator is about to run (TFX's portable
        `ExecutionInfo`): its `exec_properties` (`input_base`, `input_config`,
        `range_config`, ...) and its `output_dict` of the Examples artifact.
    """
    if not execution_info.exec_properties.get('input_base'):
      return driver_output_pb2.DriverOutput()
    return super().run(execution_info)
