"""The TensorFlow Object Detection CSV: `filename,width,height,class,xmin,ymin,xmax,ymax`,
one row a box, in pixels."""
from __future__ import annotations

from typing import Iterator, Mapping, Optional

from tfrecorder_component.errors import ManifestError
from tfrecorder_component.manifest.format_spec import ManifestFormat
from tfrecorder_component.manifest.rows import ParsedItem


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None, **unused) -> Iterator[ParsedItem]:
  raise ManifestError(f'{path}: the tf_od_csv format is not read yet')
  yield  # pylint: disable=unreachable


HEADER = ('filename', 'width', 'height', 'class', 'xmin', 'ymin', 'xmax', 'ymax')


def _sniff(head: str) -> bool:
  first = head.split('\n', 1)[0].strip().lower().replace(' ', '')
  return tuple(first.split(',')[:8]) == HEADER


FORMAT = ManifestFormat('tf_od_csv', ('.csv',), sniff=_sniff, parse=parse)
