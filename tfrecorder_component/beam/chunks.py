"""Rows crossing the shuffle in chunks: each chunk's rows are written to a file, and only
the file's path crosses. A chunk also carries the manifest's failed rows (error records),
so that every error leaves the conversion from one step."""
from __future__ import annotations

import dataclasses
import pickle
import uuid
import zlib
from typing import Any, Dict, List, Sequence, Tuple, Union

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from tfrecorder_component.manifest import ManifestRow

__all__ = ['Chunk', 'Item', 'pack_chunk', 'unpack_chunk', 'ROWS_PER_BATCH', 'MAX_CHUNKS_PER_FILE',
           'MAX_CHUNK_ROWS']

ROWS_PER_BATCH = 64  # rows converted, and records written, together
MAX_CHUNKS_PER_FILE = 64
MAX_CHUNK_ROWS = 4096  # so that no worker unpacks a large share of a large file at once

# A chunk of rows: (labels of its rows, the tasks of its rows (Task values joined by ',';
# a run converts one task, which the vocabulary step checks; '' when all its rows
# failed), the path of its rows, the (label, id) pairs its source defines (COCO category
# ids; `labels.assign_ids`)). The rows are one zlib-compressed pickle of plain
# tuples (error records stay dicts) in a file of the run's chunk folder: the
# DirectRunner holds every element that crosses a stage boundary in memory, in several
# copies (the stage's output, the shuffle's buffer, the next stage's input), and the
# freed copies stay in the process; a path costs the same at any chunk size. The labels
# let the vocabulary be built without opening the rows.
Chunk = Tuple[Tuple[str, ...], str, str, Tuple[Tuple[str, int], ...]]
# What a chunk holds: rows, and the error records (`errors.error_record`) of failed rows.
Item = Union[ManifestRow, Dict[str, Any]]


def pack_chunk(items: Sequence[Item], folder: str) -> Chunk:
  """Writes `items` to a new file in `folder` (any Beam file system); returns their Chunk."""
  labels = set()
  tasks = set()
  source_ids = set()
  for r in items:
    if isinstance(r, ManifestRow):
      labels.update(r.labels)
      for o in r.objects or ():
        labels.add(o.label)
        if o.source_id is not None:
          source_ids.add((o.label, o.source_id))
      tasks.add(r.task.value)
  packed = [tuple(getattr(r, name) for name in _FIELDS) if isinstance(r, ManifestRow) else r
            for r in items]
  path = FileSystems.join(folder, f'chunk-{uuid.uuid4().hex}')
  with FileSystems.create(path, mime_type='application/octet-stream',
                          compression_type=CompressionTypes.UNCOMPRESSED) as f:
    f.write(zlib.compress(pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL), 1))
  return tuple(sorted(labels)), ','.join(sorted(tasks)), path, tuple(sorted(source_ids))


def unpack_chunk(chunk: Chunk) -> List[Item]:
  """The rows and error records of a Chunk, in order, read from its file."""
  with FileSystems.open(chunk[2], compression_type=CompressionTypes.UNCOMPRESSED) as f:
    return [ManifestRow(*t) if isinstance(t, tuple) else t
            for t in pickle.loads(zlib.decompress(f.read()))]


_FIELDS = tuple(f.name for f in dataclasses.fields(ManifestRow))
