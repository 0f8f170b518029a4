"""Label Studio JSON export: a list of tasks, each with `data` and `annotations`."""
from __future__ import annotations

from typing import Iterator, Mapping, Optional

from tfrecorder_component.errors import ManifestError
from tfrecorder_component.manifest.format_spec import ManifestFormat
from tfrecorder_component.manifest.rows import ParsedItem


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None, **unused) -> Iterator[ParsedItem]:
  raise ManifestError(f'{path}: the label_studio format is not read yet')
  yield  # pylint: disable=unreachable


def _sniff(head: str) -> bool:
  return head.startswith('[') and '"data"' in head and (
      '"annotations"' in head or '"predictions"' in head)


FORMAT = ManifestFormat('label_studio', ('.json',), sniff=_sniff, parse=parse, one_row_an_image=True, annotations=('masks',))
