"""Artifact types of the component."""
from tfx.types.artifact import Artifact


class ImageManifest(Artifact):
  """An image manifest: one manifest file, or a folder of them.

  Any format the component reads (see the README). The type name is both Vertex AI's
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
