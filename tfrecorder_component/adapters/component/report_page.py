"""ConversionReportPage: ImageExampleGen's report as a page the pipeline consoles show.

Vertex AI Pipelines and the Kubeflow Pipelines UI render an artifact of the KFP type
`system.HTML` inline, reading the page at the artifact's URI. ImageExampleGen's
`report` is a folder (summary, failed rows, duplicates and `report.html`); this
component publishes its `report.html` as such an artifact:

    page = ConversionReportPage(report=example_gen.outputs['report'])

It is a component of its own, not a third ImageExampleGen output, because TFX's
example-gen driver (the `preCacheCheck` hook ImageExampleGen gets with `input_base`)
parses every output of its component by type before this package is imported, and
`system.HTML` is not an import path it could follow.
"""
import os
from typing import Any, Dict, List

from tfx import types
from tfx.dsl.components.base import base_component, base_executor, executor_spec
from tfx.dsl.io import fileio
from tfx.types import artifact_utils, channel
from tfx.types.component_spec import ChannelParameter, ComponentSpec

from tfrecorder_component.adapters.component.types import HTML, ConversionReport

REPORT_KEY = 'report'
PAGE_KEY = 'page'
REPORT_PAGE_FILE = 'report.html'


class ConversionReportPageSpec(ComponentSpec):
  """Input: a ConversionReport. Output: its page, typed `system.HTML`."""
  PARAMETERS = {}
  INPUTS = {REPORT_KEY: ChannelParameter(type=ConversionReport)}
  OUTPUTS = {PAGE_KEY: ChannelParameter(type=HTML)}


class Executor(base_executor.BaseExecutor):
  """Copies `report.html` of the report folder to the page artifact's URI."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Copies `<report URI>/report.html` to the page artifact's URI, replacing any file
    there.

    Args:
      input_dict: The input artifacts by key: one `report` (ConversionReport) folder.
      output_dict: The output artifacts by key: one `page` (HTML), whose URI is the
        file written.
      exec_properties: Unused: the component has no parameters.

    Raises:
      FileNotFoundError: The report folder has no `report.html`.
    """
    del exec_properties
    report = artifact_utils.get_single_instance(input_dict[REPORT_KEY])
    page = artifact_utils.get_single_instance(output_dict[PAGE_KEY])
    source = os.path.join(report.uri, REPORT_PAGE_FILE)
    if not fileio.exists(source):
      raise FileNotFoundError(f'{source} does not exist: the report at {report.uri} was '
                              'not written by ImageExampleGen')
    fileio.makedirs(os.path.dirname(page.uri))
    fileio.copy(source, page.uri, overwrite=True)


class ConversionReportPage(base_component.BaseComponent):
  """Publishes ImageExampleGen's `report.html` as a `system.HTML` artifact."""

  SPEC_CLASS = ConversionReportPageSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)

  def __init__(self, report: channel.BaseChannel):
    """Constructs a ConversionReportPage.

    Args:
      report: ImageExampleGen's `report` output.
    """
    super().__init__(spec=ConversionReportPageSpec(
        report=report, page=channel.Channel(type=HTML)))
