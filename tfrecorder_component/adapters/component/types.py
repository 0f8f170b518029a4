"""Artifact types of the component."""
import sys

from tfx.types import value_artifact
from tfx.types.artifact import Artifact


class ImageManifest(Artifact):
  """An image manifest: one manifest file, or a folder of them.

  Any format the component reads (docs/guides/formats.md). The type name is both Vertex AI's
  `prefix.CamelName` form and this class's import path (the Kubeflow V2 container
  entry point imports custom artifact types by their schema title), and the type
  declares no PROPERTIES, so Vertex AI Pipelines accepts it.
  """
  TYPE_NAME = 'tfrecorder_component.ImageManifest'


class ConversionReport(Artifact):
  """What a conversion did: `summary.json`, `errors.jsonl` (one failed row a line) and
  `duplicates.jsonl` (images written more than once). Vertex-compatible like ImageManifest.
  """
  TYPE_NAME = 'tfrecorder_component.ConversionReport'


class HTML(value_artifact.ValueArtifact):
  """A self-contained HTML page; the artifact's URI is the page file itself.

  The type name is KFP's `system.HTML`, the type that Vertex AI Pipelines and the
  Kubeflow Pipelines UI render inline (`ConversionReportPage` outputs one). That name
  is not an import path, so the Kubeflow V2 container entry point finds this class
  through its title table, which this module extends on import (see
  `_register_kubeflow_v2_title`).
  """
  TYPE_NAME = 'system.HTML'

  def encode(self, value: str) -> bytes:
    """The page's UTF-8 bytes, as the artifact's file holds them.

    Args:
      value: The HTML page's text.
    """
    return value.encode('utf-8')

  def decode(self, serialized_value: bytes) -> str:
    """The page's text.

    Args:
      serialized_value: The artifact file's bytes, UTF-8.
    """
    return serialized_value.decode('utf-8')


def _register_kubeflow_v2_title() -> None:
  """Lets the Kubeflow V2 container entry point import `HTML` by its title.

  The entry point imports each artifact's class by its schema title, through
  `compiler_utils.TITLE_TO_CLASS_PATH` for titles that are not import paths. It has
  loaded that module before it parses any artifact, and it parses a task's inputs
  before its outputs, so a `ConversionReport` input (whose title is an import path
  into this package) brings this module in before the `system.HTML` output is parsed.
  """
  compiler_utils = sys.modules.get('tfx.orchestration.kubeflow.v2.compiler_utils')
  if compiler_utils is not None:
    compiler_utils.TITLE_TO_CLASS_PATH.setdefault(HTML.TYPE_NAME, f'{__name__}.HTML')


_register_kubeflow_v2_title()
