"""The local engine's first stage: the manifests read into chunk files of rows (an
AutoML CSV in parts, by the pool's processes, where its text allows: `manifest.parts`),
the box rows of detection manifests merged an image at a time, and the run's
vocabulary from every chunk, as Beam's `read.ReadManifestRows` and `LabelVocabulary` do."""
from __future__ import annotations

import shutil
import tempfile
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from tfrecorder_component.engines.local import pool
from tfrecorder_component.io.sort import ExternalSort, SortBudget, unpacked_value
from tfrecorder_component.manifest.parts import Part, plan_parts
from tfrecorder_component.options import ConversionOptions, ManifestSource
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.output import progress as progress_lib
from tfrecorder_component.steps.chunks import (CHUNK, ROWS_PER_BATCH, Chunk, merged_item,
                                               pack_chunk, parse_manifest)
from tfrecorder_component.steps.outputs import OBJECTS
from tfrecorder_component.steps.vocabulary import VocabularyBuilder

__all__ = ['CHUNK_ROWS', 'OBJECT_ROWS_BYTES', 'read_manifests']

# Rows a chunk holds at least (a file's rows are cut into at most MAX_CHUNKS_PER_FILE
# chunks): the unit a worker takes from the queue.
CHUNK_ROWS = ROWS_PER_BATCH
# The rows of detection manifests with a row a box (AutoML CSV, Vertex AI JSONL), held
# in this process while they are read, at most this many bytes: past it they are
# written as sorted runs to local temporary disk and merged back an image at a time
# (`io.sort`), as Beam's GroupByKey groups them.
OBJECT_ROWS_BYTES = 64 << 20
_SEQUENCE = 8  # bytes of the row's number that end an image key


def _image_key(key: Tuple[Any, Any], number: int) -> bytes:
  """The sort key of a box row: its image's (source, URI), each part's length before it
  (so no image's key starts another's), then the row's number (keys must be distinct)."""
  parts = [str(part).encode('utf-8', 'surrogatepass') for part in key]
  return b''.join(len(p).to_bytes(4, 'big') + p for p in parts) + number.to_bytes(_SEQUENCE, 'big')


def _images(entries: Iterator[Tuple[bytes, bytes]]) -> Iterator[List[Any]]:
  """The rows of each image, an image at a time, from entries sorted by `_image_key`:
  an image's entries have one length and one prefix, so they come together."""
  image, rows = None, []
  for key, data in entries:
    if key[:-_SEQUENCE] != image:
      if rows:
        yield rows
      image, rows = key[:-_SEQUENCE], []
    rows.append(unpacked_value(data))
  if rows:
    yield rows


def read_manifests(sources: Sequence[ManifestSource], report_dir: str,
                    options: ConversionOptions, workers: int, progress: progress_lib.Progress
                    ) -> Tuple[List[Chunk], int, Any]:
  """The run's chunks of rows, written under the report folder's work folder (each
  source's rows, then the images merged from the box rows of the sources that have
  them), the items they hold (the progress's total) and the run's vocabulary, from
  every chunk.

  Args:
    sources: The run's manifests.
    report_dir: The run's report folder (its work folder holds the chunks).
    options: The run's options (annotations, label map, class map, label order).
    workers: How many processes may parse a manifest in parts.
    progress: The run's progress ("reading", counted).
  """
  progress.stage('reading', counted=True)
  read = 0
  chunk_dir = output_paths.work_dir(report_dir, output_paths.CHUNK_DIR)
  builder = VocabularyBuilder(options.label_map, options.append_new_labels,
                              options.class_map, options.label_order)
  acc = builder.new()
  chunks: List[Chunk] = []
  sort_dir = tempfile.mkdtemp(prefix='tfrecorder-boxes-')
  try:
    objects = ExternalSort(sort_dir, SortBudget(OBJECT_ROWS_BYTES))
    boxes = 0
    for source in sources:
      parsed = _parsed_in_parts(source, chunk_dir, options.annotations, workers)
      with progress.ticking():  # ended before any worker is forked
        if parsed is None:  # not cut into parts: parsed here, as it streams
          parsed = parse_manifest(source, chunk_dir, options.annotations, CHUNK_ROWS)
        for tag, value in parsed:
          if tag == CHUNK:
            chunks.append(value)
            read += value[4]  # the progress's total: the chunk's items
            progress.update(read)
          elif tag == OBJECTS:
            key, row = value
            objects.add(_image_key(key, boxes), row)
            boxes += 1
    merged: List[Any] = []
    for rows in _images(objects.entries()) if boxes else ():
      merged.append(merged_item(rows))
      read += 1
      if len(merged) == CHUNK_ROWS:
        chunks.append(pack_chunk(merged, chunk_dir))
        merged = []
    if merged:
      chunks.append(pack_chunk(merged, chunk_dir))
    del merged
  finally:
    shutil.rmtree(sort_dir, ignore_errors=True)
  for chunk in chunks:
    builder.add(acc, chunk)
  return chunks, read, builder.vocabulary(acc)


class PartWorker:
  """What one worker process makes of the Parts of a manifest (`manifest.parts.plan_parts`) it
  takes: `parse_manifest`'s output of each; its result, (part index, output) pairs.

  Args:
    source: The manifest.
    chunk_dir: Where its chunks of rows are written.
    annotations: The run's `annotations` option.
  """

  def __init__(self, source: ManifestSource, chunk_dir: str, annotations):
    self._args = (source, chunk_dir, annotations, CHUNK_ROWS)
    self._parsed: List[Tuple[int, List[Tuple[str, Any]]]] = []

  def convert(self, part: Part, index: int = -1) -> None:
    """Parses one part.

    Args:
      part: The part (a byte range of the manifest).
      index: Its place among the manifest's parts.
    """
    self._parsed.append((index, list(parse_manifest(*self._args, part=part))))

  def result(self) -> List[Tuple[int, List[Tuple[str, Any]]]]:
    return self._parsed


def _parsed_in_parts(source: ManifestSource, chunk_dir: str, annotations,
                     workers: int) -> Optional[List[Tuple[str, Any]]]:
  """`parse_manifest`'s output for `source`, in file order, parsed in parts by up to
  `workers` forked processes where its format and text allow (`manifest.parts.plan_parts`);
  None where they do not (this process parses it). At 30 µs a row the parse is the
  run's serial part: 0.6 s of one core for 20,000 rows, 6 s for 200,000, while the other
  cores wait for the vocabulary it gives."""
  parts = plan_parts(source.path, source.format, workers, source.columns) if pool.FORK else []
  if not parts:
    return None
  results = pool.convert_chunks(parts, lambda: PartWorker(source, chunk_dir, annotations),
                            min(workers, len(parts)))
  return [output for _, part in sorted(p for r in results for p in r) for output in part]
