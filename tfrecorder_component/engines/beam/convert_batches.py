"""Converting chunks of rows into records in Beam, with the label vocabulary
(`beam.vocabulary.LabelVocabulary`) as a side input; the work is `steps.convert_chunks`
(every per-row step is `steps.row.convert_row`)."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from tfrecorder_component.io import storage
from tfrecorder_component.manifest.class_map import DROPPED
from tfrecorder_component.options import ConversionOptions
from tfrecorder_component.steps.chunks import Chunk
from tfrecorder_component.steps.convert_chunks import BATCH, ChunkConverter
from tfrecorder_component.steps.outputs import (BOX_ISSUES, ERRORS, METRICS_NAMESPACE, RECORDS,
                                                SAMPLES, STATS)

__all__ = ['ConvertBatches', 'Records']

# ConvertBatches' main output: (split, serialized tf.train.Examples of one batch)
Records = Tuple[str, List[bytes]]


class _ConvertBatch(beam.DoFn):
  """A Chunk of rows in; per split, batches of serialized Examples out, and the tagged
  outputs of `steps.convert_chunks.ChunkConverter` (errors, stats, box issues, samples) as
  Beam's tagged outputs; what each batch did goes to Beam metrics counters (namespace
  `tfrecorder_component`: `rows` done and `rows_failed`, as the run's progress counts
  them: rows that failed to parse included, rows a class map leaves out done but not
  failed; `images_loaded`, `images_converted`,
  `images_failed`, `image_bytes_read`), which Dataflow's job page and
  `PipelineResult.metrics()` show. Rows whose
  remote reads are still in flight at the end of a bundle are converted in
  `finish_bundle`. A row that takes longer than `row_time_limit` fails as `too_slow`:
  a DoFn cannot outlive its process, so it is interrupted in its own thread where it
  returns to Python (`steps.deadline.RowDeadline`; a wait on a read fetched ahead
  returns every half second), not inside C code."""

  def __init__(self, options: ConversionOptions):
    self._options = options
    self._loaded = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_loaded')
    self._converted = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_converted')
    self._failed = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_failed')
    self._bytes = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'image_bytes_read')
    self._rows = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'rows')
    self._rows_failed = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'rows_failed')

  def setup(self):
    storage.prepare_file_systems()
    self._converter = ChunkConverter(self._options)

  def process(self, chunk: Chunk, vocabulary: Dict[str, Any]):
    for tag, value in self._converter.convert(chunk, vocabulary):
      out = self._output(tag, value)
      if out is not None:
        yield out

  def finish_bundle(self):
    for tag, value in self._converter.finish():
      out = self._output(tag, value)
      if out is not None:
        yield (WindowedValue(out, MIN_TIMESTAMP, [GlobalWindow()]) if tag == RECORDS else
               beam.pvalue.TaggedOutput(out.tag, WindowedValue(out.value, MIN_TIMESTAMP,
                                                               [GlobalWindow()])))

  def _output(self, tag: str, value):
    if tag == BATCH:
      rows, failed, converted, read = value
      self._loaded.inc(rows - failed)
      self._failed.inc(failed)
      self._converted.inc(converted)
      self._bytes.inc(read)
      self._rows.inc(rows - failed)  # each failed row is counted by its ERRORS output
      return None
    if tag == ERRORS:  # one per failed row, of a batch or failed to parse
      self._rows.inc()
      if value.get('reason') != DROPPED:  # rows a class map leaves out have not failed
        self._rows_failed.inc()
    return value if tag == RECORDS else beam.pvalue.TaggedOutput(tag, value)


class ConvertBatches(beam.PTransform):
  """Chunks of rows -> `Records`, (split, [serialized tf.train.Example]) per batch.

  Outputs: `records` (main), `errors` (one dict per failed row), `stats` (a list of
  RecordStat per batch), `box_issues` (one dict per dropped or clipped box) and
  `samples` (contact-sheet thumbnails). Label ids come from `vocabulary`, a singleton
  side input, and are set on rows before any image is read: no image bytes wait for
  the vocabulary.

  Args:
    vocabulary: The run's vocabulary as a side input: `beam.pvalue.AsSingleton` of
      `LabelVocabulary`'s output.
    options: The run's options: what each row's conversion checks, transforms and
      writes (`steps.row.convert_row`).
  """

  def __init__(self, vocabulary, options: ConversionOptions):
    super().__init__()
    self._vocabulary = vocabulary
    self._options = options

  def expand(self, chunks):
    """The converted batches, with the tagged outputs above.

    Args:
      chunks: The PCollection of Chunks of rows (`ReadManifestRows`' output).
    """
    convert = beam.ParDo(_ConvertBatch(self._options), vocabulary=self._vocabulary)
    return chunks | (convert.with_input_types(Chunk, vocabulary=Dict[str, Any])
                     .with_output_types(Records)
                     .with_outputs(ERRORS, STATS, BOX_ISSUES, SAMPLES, main='records'))
