"""CVAT for images 1.1 XML: `<annotations>` with one `<image>` element per image."""
from __future__ import annotations

import re
from typing import Iterator, Mapping, Optional

from tfrecorder_component.errors import ManifestError
from tfrecorder_component.manifest.format_spec import ManifestFormat
from tfrecorder_component.manifest.rows import ParsedItem


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None, **unused) -> Iterator[ParsedItem]:
  raise ManifestError(f'{path}: the cvat format is not read yet')
  yield  # pylint: disable=unreachable


_ROOT = re.compile(r'(<\?xml[^>]*\?>\s*)?(<!--.*?-->\s*)*<annotations[\s>]', re.S)


def _sniff(head: str) -> bool:
  return _ROOT.match(head) is not None


FORMAT = ManifestFormat('cvat', ('.xml',), sniff=_sniff, parse=parse, one_row_an_image=True, annotations=('masks', 'keypoints'))
