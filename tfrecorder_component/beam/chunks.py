"""Rows crossing the shuffle in chunks: one compressed blob per chunk instead of one
element per row."""
from __future__ import annotations

import pickle
import zlib
from typing import List, Sequence, Tuple

from tfrecorder_component.manifest import ManifestRow

__all__ = ['Chunk', 'pack_chunk', 'unpack_chunk', 'ROWS_PER_BATCH', 'MAX_CHUNKS_PER_FILE']

ROWS_PER_BATCH = 64  # rows converted, and records written, together
MAX_CHUNKS_PER_FILE = 64

# A chunk of rows: (labels of its rows, task (a Task value), rows). The rows are one zlib-compressed
# pickle of plain tuples: the DirectRunner holds every element of a shuffle decoded in
# memory, where a blob stays one bytes object (8 bytes a row for the benchmark's
# manifest, against some 500 for rows as Python objects). The labels let the vocabulary
# be built without opening the rows.
Chunk = Tuple[Tuple[str, ...], str, bytes]


def pack_chunk(rows: Sequence[ManifestRow]) -> Chunk:
  """Rows of one task (all classification or all detection) as a Chunk."""
  labels = set()
  for r in rows:
    labels.update(r.labels)
    labels.update(o.label for o in r.objects or ())
  packed = [(r.source, r.row, r.image_uri, r.resolved_uri, r.labels, r.split, r.objects,
             r.features) for r in rows]
  return (tuple(sorted(labels)), rows[0].task.value,
          zlib.compress(pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL), 1))


def unpack_chunk(chunk: Chunk) -> List[ManifestRow]:
  return [ManifestRow(source=t[0], row=t[1], image_uri=t[2], resolved_uri=t[3],
                      labels=t[4], split=t[5], objects=t[6], features=t[7])
          for t in pickle.loads(zlib.decompress(chunk[2]))]
