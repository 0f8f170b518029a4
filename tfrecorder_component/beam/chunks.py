"""Rows crossing the shuffle in chunks: one compressed blob per chunk instead of one
element per row."""
from __future__ import annotations

import dataclasses
import pickle
import zlib
from typing import List, Sequence, Tuple

from tfrecorder_component.manifest import ManifestRow

__all__ = ['Chunk', 'pack_chunk', 'unpack_chunk', 'ROWS_PER_BATCH', 'MAX_CHUNKS_PER_FILE',
           'MAX_CHUNK_ROWS']

ROWS_PER_BATCH = 64  # rows converted, and records written, together
MAX_CHUNKS_PER_FILE = 64
MAX_CHUNK_ROWS = 4096  # so that no worker unpacks a large share of a large file at once

# A chunk of rows: (labels of its rows, the tasks of its rows (Task values joined by ','; a
# run converts one task, which the vocabulary step checks), rows). The rows are one zlib-compressed
# pickle of plain tuples: the DirectRunner holds every element of a shuffle decoded in
# memory, where a blob stays one bytes object (8 bytes a row for the benchmark's
# manifest, against some 500 for rows as Python objects). The labels let the vocabulary
# be built without opening the rows.
Chunk = Tuple[Tuple[str, ...], str, bytes]


def pack_chunk(rows: Sequence[ManifestRow]) -> Chunk:
  """Rows as a Chunk."""
  labels = set()
  tasks = set()
  for r in rows:
    labels.update(r.labels)
    labels.update(o.label for o in r.objects or ())
    tasks.add(r.task.value)
  packed = [tuple(getattr(r, name) for name in _FIELDS) for r in rows]
  return (tuple(sorted(labels)), ','.join(sorted(tasks)),
          zlib.compress(pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL), 1))


def unpack_chunk(chunk: Chunk) -> List[ManifestRow]:
  return [ManifestRow(*t) for t in pickle.loads(zlib.decompress(chunk[2]))]


_FIELDS = tuple(f.name for f in dataclasses.fields(ManifestRow))
