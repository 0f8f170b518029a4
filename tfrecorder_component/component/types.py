"""Artifact types of the component."""
from tfx.types.artifact import Artifact


class ImageManifest(Artifact):
  """An image manifest: one manifest file, or a folder of them.

  Supported formats: AutoML Vision / Vertex AI classification CSV and Vertex AI
  JSONL. The type name follows Vertex AI's `prefix.CamelName` form and the type
  declares no PROPERTIES, so Vertex AI Pipelines accepts it.
  """
  TYPE_NAME = 'tfrecorder.ImageManifest'


class ConversionReport(Artifact):
  """What a conversion did: `summary.json`, `errors.jsonl` (one failed row a line) and
  `duplicates.jsonl` (images written more than once). Vertex-compatible like ImageManifest.
  """
  TYPE_NAME = 'tfrecorder.ConversionReport'
