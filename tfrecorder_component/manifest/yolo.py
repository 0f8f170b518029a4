"""Ultralytics YOLO datasets: a `data.yaml` naming split folders (or image lists) and
the class names; each image's objects in a `.txt` beside it under `labels/`."""
from __future__ import annotations

import re
from typing import Iterator, Mapping, Optional

from tfrecorder_component.errors import ManifestError
from tfrecorder_component.manifest.format_spec import ManifestFormat
from tfrecorder_component.manifest.rows import ParsedItem


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None, **unused) -> Iterator[ParsedItem]:
  raise ManifestError(f'{path}: the yolo format is not read yet')
  yield  # pylint: disable=unreachable


def _sniff(head: str) -> bool:
  return re.search(r'^names\s*:', head, re.M) is not None


FORMAT = ManifestFormat('yolo', ('.yaml', '.yml'), sniff=_sniff, parse=parse, one_row_an_image=True, annotations=('masks', 'keypoints'))
OBB_FORMAT = ManifestFormat('yolo_obb', (), sniff=lambda head: False, parse=parse, one_row_an_image=True)
