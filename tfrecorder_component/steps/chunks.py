"""Rows crossing the shuffle in chunks: each chunk's rows are written to a file, and only
the file's path crosses. A chunk also carries the manifest's failed rows (error records),
so that every error leaves the conversion from one step."""
from __future__ import annotations

import dataclasses
import operator
import pickle
import uuid
import zlib
from typing import AbstractSet, Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from tfrecorder_component.io import files
from tfrecorder_component.io import storage
from tfrecorder_component.errors import RowError, error_record
from tfrecorder_component.manifest import ManifestRow, Task, iter_manifest_file
from tfrecorder_component.manifest.class_map import is_dropped
from tfrecorder_component.manifest.parts import Part, iter_manifest_part
from tfrecorder_component.manifest.rows import merge_image_rows
from tfrecorder_component.options import ManifestSource
from tfrecorder_component.steps.outputs import OBJECTS

__all__ = ['CHUNK', 'Chunk', 'Item', 'MAX_CHUNKS_PER_FILE', 'MAX_CHUNK_ROWS', 'ROWS_PER_BATCH',
           'merged_item', 'pack_chunk', 'parse_manifest', 'unpack_chunk']

ROWS_PER_BATCH = 64  # rows converted, and records written, together
MAX_CHUNKS_PER_FILE = 64
MAX_CHUNK_ROWS = 4096  # so that no worker unpacks a large share of a large file at once

# A chunk of rows: (labels of its rows, the tasks of its rows (Task values joined by ',';
# a run converts one task, which the vocabulary step checks; '' when all its rows
# failed), the path of its rows, the (label, id) pairs its source defines (COCO category
# ids, of its objects and of the file's declared classes, `ManifestRow.declared_classes`:
# a pair whose label no row holds is a class declared with no annotation;
# `labels.assign_ids`), how many items it holds (rows and error records: the run's
# progress counts them without opening the file)). The rows are one zlib-compressed pickle of plain
# tuples (error records stay dicts) in a file of the run's chunk folder: the
# DirectRunner holds every element that crosses a stage boundary in memory, in several
# copies (the stage's output, the shuffle's buffer, the next stage's input), and the
# freed copies stay in the process; a path costs the same at any chunk size. The labels
# let the vocabulary be built without opening the rows.
Chunk = Tuple[Tuple[str, ...], str, str, Tuple[Tuple[str, int], ...], int]
# What a chunk holds: rows, and the error records (`errors.error_record`) of failed rows.
Item = Union[ManifestRow, Dict[str, Any]]


def pack_chunk(items: Sequence[Item], folder: str) -> Chunk:
  """Writes `items` to a new file in `folder`; returns their Chunk.

  Args:
    items: the rows (ManifestRows) and error records (dicts) to carry, in order.
    folder: the run's chunk folder, on any file system; the file is named
      `chunk-<random hex>`.
  """
  labels = set()
  tasks = set()
  source_ids = set()
  for r in items:
    if isinstance(r, ManifestRow):
      labels.update(r.labels)
      for o in r.objects or ():
        if is_dropped(o):  # a class the class map drops takes no id
          continue
        labels.add(o.label)
        if o.source_id is not None:
          source_ids.add((o.label, o.source_id))
      source_ids.update(r.declared_classes)  # a file's classes, on its first row
      tasks.add(r.task.value)
  fields = _ROW_FIELDS
  packed = [fields(r) if isinstance(r, ManifestRow) else r for r in items]
  path = files.join(folder, f'chunk-{uuid.uuid4().hex}')
  with files.create_file(path) as f:
    f.write(zlib.compress(pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL), 1))
  return (tuple(sorted(labels)), ','.join(sorted(tasks)), path, tuple(sorted(source_ids)),
          len(packed))


def unpack_chunk(chunk: Chunk) -> List[Item]:
  """The rows and error records of a Chunk, in order, read from its file.

  Args:
    chunk: a Chunk from `pack_chunk`; only its path (the third element) is read.
  """
  with files.open_file(chunk[2]) as f:
    return [ManifestRow(*t) if isinstance(t, tuple) else t
            for t in pickle.loads(zlib.decompress(f.read()))]


_FIELDS = tuple(f.name for f in dataclasses.fields(ManifestRow))
# A row's fields as a tuple in one C call (a generator of getattr cost 5 µs a row).
_ROW_FIELDS = operator.attrgetter(*_FIELDS)


CHUNK = 'chunk'  # parse_manifest's output tag of a Chunk


def parse_manifest(source: ManifestSource, chunk_dir: str, annotations: AbstractSet[str],
                   rows_per_batch: int = ROWS_PER_BATCH,
                   max_chunks: int = MAX_CHUNKS_PER_FILE,
                   part: Optional[Part] = None) -> Iterator[Tuple[str, Any]]:
  """Streams a manifest file's rows, and the error records of rows that failed to parse,
  out in chunks as they are parsed, tagged CHUNK: at most `max_chunks` per file (sized
  from the file's line count) until chunks reach MAX_CHUNK_ROWS rows, of at least
  `rows_per_batch` rows. Detection rows that must be merged per image first (one row a
  box: AutoML CSV, Vertex AI JSONL) leave one by one, tagged OBJECTS, as ((source, image
  URI), row), for `merge_image_rows`, as do, for a format of one row a box, the error
  records of rows that failed naming their image (`merged_item` fails the image whole).
  A COCO JSON is streamed, its join sorted on local temporary disk, by the worker
  reading it.

  Args:
    source: the manifest file to read, with its format, split, image root, feature types,
      class map, columns and the run's roots (`confine_to`).
    chunk_dir: the run's chunk folder (any file system) the chunks' files are written
      in.
    annotations: what to read beyond boxes (`ConversionOptions.annotations`): 'masks',
      'keypoints'.
    rows_per_batch: the fewest items a chunk is sized for (the last may hold fewer).
    max_chunks: the most chunks the file is cut into while they hold at most
      MAX_CHUNK_ROWS items.
    part: the range of the file to read (`manifest.parts.plan_parts`), read as its
      `format`; None: the whole file.
  """
  storage.prepare_file_systems(source.path, source.image_root or '', chunk_dir)
  options = dict(image_root=source.image_root,
                 feature_types=dict(source.feature_types) or None, annotations=annotations,
                 class_map=source.class_map, columns=source.columns,
                 confine_to=source.confine_to)
  if part is None:
    lines, items, spec = iter_manifest_file(source.path, source.format, source.split,
                                            **options)
  else:
    lines, items, spec = iter_manifest_part(source.path, part, source.split, **options)
  size = max(rows_per_batch, min(-(-lines // max_chunks), MAX_CHUNK_ROWS))
  merge = not spec.one_row_an_image
  chunk: List[Item] = []
  for item in items:
    failed = isinstance(item, RowError)
    if merge and not failed and item.task is Task.DETECTION:  # merged per image first
      yield OBJECTS, ((item.source, item.image_uri), item)
      continue
    if spec.one_row_a_box and failed and item.uri is not None:  # fails its image whole
      yield OBJECTS, ((item.source, item.uri), error_record(item))
      continue
    chunk.append(error_record(item) if failed else item)
    if len(chunk) == size:
      yield CHUNK, pack_chunk(chunk, chunk_dir)
      chunk = []
  if chunk:
    yield CHUNK, pack_chunk(chunk, chunk_dir)


def merged_item(rows: Sequence[Item]) -> Item:
  """The rows of one detection image merged (`merge_image_rows`); an image whose rows
  could not merge is an error record. An image one of whose rows failed to parse (an
  error record among `rows`) fails whole, as its first failed row, naming the rows
  that are not written with it: writing it without the failed row's box would write an
  object as background.

  Args:
    rows: the items of one image, keyed alike in `parse_manifest`'s OBJECTS output
      ((source, image URI)): its ManifestRows and the error records of its failed rows.
  """
  failed = sorted((r for r in rows if not isinstance(r, ManifestRow)),
                  key=lambda e: (str(e['source']), e['row'] or 0))
  if failed:
    others = sorted(r['row'] if isinstance(r, dict) else r.row for r in rows
                    if r is not failed[0])
    if not others:
      return failed[0]
    listed = ', '.join(str(n) for n in others)
    return dict(failed[0], message=f'{failed[0]["message"]} (the image fails whole: its '
                f'row{"s" if len(others) > 1 else ""} {listed} {"are" if len(others) > 1 else "is"} '
                'not written without this one)')
  merged = merge_image_rows(rows)
  return error_record(merged) if isinstance(merged, RowError) else merged
