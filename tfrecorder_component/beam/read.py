"""Reading manifests in Beam: files parsed in parallel, detection rows merged per image,
rows packed into chunks and spread over the workers."""
from __future__ import annotations

from typing import AbstractSet, List, Sequence, Union

import apache_beam as beam

from tfrecorder_component import storage
from tfrecorder_component.beam.chunks import (MAX_CHUNK_ROWS, MAX_CHUNKS_PER_FILE,
                                              ROWS_PER_BATCH, Chunk, Item, pack_chunk)
from tfrecorder_component.beam.outputs import OBJECTS
from tfrecorder_component.errors import RowError, error_record
from tfrecorder_component.manifest import ManifestRow, Task, iter_manifest_file
from tfrecorder_component.manifest.rows import merge_image_rows
from tfrecorder_component.options import ManifestSource

__all__ = ['ReadManifestRows']


class _ParseManifest(beam.DoFn):
  """Streams a manifest file's rows, and the error records of rows that failed to parse,
  out in chunks as they are parsed: at most `max_chunks` per file (sized from the
  file's line count) until chunks reach MAX_CHUNK_ROWS rows, of at least
  `rows_per_batch` rows. Rows stream out as parsed (a COCO JSON is parsed whole by the
  worker reading it)."""

  def __init__(self, chunk_dir: str, rows_per_batch: int, max_chunks: int,
               annotations: AbstractSet[str]):
    self._chunk_dir = chunk_dir
    self._rows_per_batch = rows_per_batch
    self._max_chunks = max_chunks
    self._annotations = frozenset(annotations)

  def process(self, source: ManifestSource):
    storage.prepare_file_systems(source.path, source.image_root or '', self._chunk_dir)
    lines, items, spec = iter_manifest_file(source.path, source.format, source.split,
                                            image_root=source.image_root,
                                            feature_types=dict(source.feature_types) or None,
                                            annotations=self._annotations)
    size = max(self._rows_per_batch, min(-(-lines // self._max_chunks), MAX_CHUNK_ROWS))
    merge = not spec.one_row_an_image
    chunk: List[Item] = []
    for item in items:
      failed = isinstance(item, RowError)
      if merge and not failed and item.task is Task.DETECTION:  # merged per image first
        yield beam.pvalue.TaggedOutput(OBJECTS, ((item.source, item.image_uri), item))
        continue
      chunk.append(error_record(item) if failed else item)
      if len(chunk) == size:
        yield pack_chunk(chunk, self._chunk_dir)
        chunk = []
    if chunk:
      yield pack_chunk(chunk, self._chunk_dir)


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
    parsed = (pbegin
              | 'ListManifests' >> beam.Create(self._sources)
              | 'Parse' >> beam.ParDo(_ParseManifest(
                  self._chunk_dir, self._rows_per_batch, self._max_chunks, self._annotations)
                                      ).with_outputs(OBJECTS, main='rows'))
    image_chunks = (parsed[OBJECTS]
                    | 'GroupObjects' >> beam.CombinePerKey(_MergeObjectsFn())
                    | 'ImageRows' >> beam.Map(_merged)
                    | 'BatchImages' >> beam.BatchElements(
                        min_batch_size=self._rows_per_batch, max_batch_size=self._rows_per_batch)
                    | 'PackImages' >> beam.Map(pack_chunk, self._chunk_dir))
    return ((parsed.rows, image_chunks)
            | 'AllChunks' >> beam.Flatten()
            | 'Redistribute' >> beam.Reshuffle().with_output_types(Chunk))


class _MergeObjectsFn(beam.CombineFn):
  """Merges the rows of one detection image (`merge_image_rows`): one row per box in
  AutoML CSV or Vertex AI JSONL, from any files. A Beam combine, so the grouping scales
  with the runner."""

  def create_accumulator(self):
    return []

  def add_input(self, acc, row: ManifestRow):
    acc.append(row)
    return acc

  def merge_accumulators(self, accumulators):
    return [row for acc in accumulators for row in acc]

  def extract_output(self, acc) -> Union[ManifestRow, RowError]:
    return merge_image_rows(acc)


def _merged(kv) -> Item:
  """A merged image row; an image whose rows could not merge is an error record."""
  _, merged = kv
  return error_record(merged) if isinstance(merged, RowError) else merged
