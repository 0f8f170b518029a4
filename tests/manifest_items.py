"""What a manifest reader yields, sorted out: its rows and its failed rows' errors
(`read_manifest_file`, `parse_manifest_text`: ManifestRow and RowError items in file
order)."""
from __future__ import annotations

from typing import Iterable, List

from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest import ManifestRow


def rows_of(items: Iterable) -> List[ManifestRow]:
  """The rows among a reader's items, in order."""
  return [i for i in items if isinstance(i, ManifestRow)]


def errors_of(items: Iterable) -> List[RowError]:
  """The failed rows' errors among a reader's items, in order."""
  return [i for i in items if isinstance(i, RowError)]
