"""Reading manifests in Beam: files parsed in parallel, detection rows merged per image,
rows packed into chunks and spread over the workers."""
from __future__ import annotations

from typing import AbstractSet, Sequence

import apache_beam as beam

from tfrecorder_component.options import ManifestSource
from tfrecorder_component.steps.chunks import (CHUNK, MAX_CHUNKS_PER_FILE, ROWS_PER_BATCH, Chunk,
                                               Item, merged_item, pack_chunk, parse_manifest)
from tfrecorder_component.steps.outputs import OBJECTS

__all__ = ['ReadManifestRows']


class _ParseManifest(beam.DoFn):
  """A manifest file's chunks of rows (`chunks.parse_manifest`); detection rows to merge
  per image go to the OBJECTS output."""

  def __init__(self, chunk_dir: str, rows_per_batch: int, max_chunks: int,
               annotations: AbstractSet[str]):
    self._chunk_dir = chunk_dir
    self._rows_per_batch = rows_per_batch
    self._max_chunks = max_chunks
    self._annotations = frozenset(annotations)

  def process(self, source: ManifestSource):
    for tag, value in parse_manifest(source, self._chunk_dir, self._annotations,
                                     self._rows_per_batch, self._max_chunks):
      yield value if tag == CHUNK else beam.pvalue.TaggedOutput(tag, value)


class ReadManifestRows(beam.PTransform):
  """Parses manifest files into Chunks of rows and of the error records of rows that
  failed to parse or merge; the chunks' items are written into `chunk_dir` (see
  `chunks.Chunk`), which the caller removes once they are converted.

  Each file is parsed by one worker so rows keep their positions; the chunks are then
  redistributed so image loading fans out across all workers. A file becomes at most
  `max_chunks` chunks (of at least `rows_per_batch` rows) until chunks reach
  MAX_CHUNK_ROWS rows: each chunk is a file, written once and read once, and only its
  path and labels cross the shuffle, never a row. Detection rows are first merged per
  image, unless the format yields one row an image (COCO, Pascal VOC). `annotations`:
  what is read beyond boxes ('masks', 'keypoints').

  Args:
    annotations: What detection rows read beyond boxes: a set of 'masks', 'keypoints'
      (empty: boxes only).
    chunk_dir: The folder the chunks' files are written into, reachable by every
      worker.
    max_chunks: Chunks a manifest file is cut into at most, until chunks reach
      MAX_CHUNK_ROWS rows.
    rows_per_batch: Rows a chunk holds at least, and the rows of each chunk of merged
      detection images.
    sources: The manifest files to read, each parsed by one worker.
  """

  def __init__(self, sources: Sequence[ManifestSource], chunk_dir: str,
               rows_per_batch: int = ROWS_PER_BATCH, max_chunks: int = MAX_CHUNKS_PER_FILE,
               annotations: AbstractSet[str] = frozenset()):
    super().__init__()
    self._sources = list(sources)
    self._chunk_dir = chunk_dir
    self._rows_per_batch = rows_per_batch
    self._max_chunks = max_chunks
    self._annotations = frozenset(annotations)

  def expand(self, pbegin):
    """The Chunks, redistributed over the workers.

    Args:
      pbegin: The pipeline's begin: the sources are created on it.
    """
    parsed = (pbegin
              | 'ListManifests' >> beam.Create(self._sources)
              | 'Parse' >> beam.ParDo(_ParseManifest(
                  self._chunk_dir, self._rows_per_batch, self._max_chunks, self._annotations)
                                      ).with_outputs(OBJECTS, main='rows'))
    image_chunks = (parsed[OBJECTS]
                    | 'GroupObjects' >> beam.CombinePerKey(_MergeObjectsFn())
                    | 'ImageRows' >> beam.Values()
                    | 'BatchImages' >> beam.BatchElements(
                        min_batch_size=self._rows_per_batch, max_batch_size=self._rows_per_batch)
                    | 'PackImages' >> beam.Map(pack_chunk, self._chunk_dir))
    return ((parsed.rows, image_chunks)
            | 'AllChunks' >> beam.Flatten()
            | 'Redistribute' >> beam.Reshuffle().with_output_types(Chunk))


class _MergeObjectsFn(beam.CombineFn):
  """Merges the rows of one detection image (`chunks.merged_item`): one row per box in
  AutoML CSV or Vertex AI JSONL, from any files. A Beam combine, so the grouping scales
  with the runner."""

  def create_accumulator(self):
    return []

  def add_input(self, acc, row: Item):
    acc.append(row)
    return acc

  def merge_accumulators(self, accumulators):
    return [row for acc in accumulators for row in acc]

  def extract_output(self, acc) -> Item:
    return merged_item(acc)
