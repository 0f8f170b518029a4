"""The label vocabulary that travels with the data: `labels.txt` and `label_map.pbtxt`.

Ids are 0-based positions in the sorted vocabulary, the same ids written to
`image/class/label`, so they are identical across runs of the same manifest.
"""
from __future__ import annotations

import os
from typing import Dict, Iterable, List

LABELS_FILE = 'labels.txt'
LABEL_MAP_FILE = 'label_map.pbtxt'


def _quote(text: str) -> str:
  return '"' + text.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"'


def label_map_pbtxt(vocabulary: Iterable[str]) -> str:
  """StringIntLabelMap text format, one `item` per label."""
  return ''.join(f'item {{\n  name: {_quote(name)}\n  id: {i}\n}}\n'
                 for i, name in enumerate(vocabulary))


def write_label_files(directory: str, vocabulary: List[str]) -> None:
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.files import write_text  # pylint: disable=g-import-not-at-top
  for name, text in ((LABELS_FILE, ''.join(l + '\n' for l in vocabulary)),
                     (LABEL_MAP_FILE, label_map_pbtxt(vocabulary))):
    write_text(FileSystems.join(directory, name), text)


def read_label_map(examples_uri: str) -> Dict[str, int]:
  """Returns {label: id} for an Examples artifact URI (or any folder holding labels.txt).

  Also accepts a `tfx.types.Artifact`.
  """
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  uri = getattr(examples_uri, 'uri', examples_uri)
  path = FileSystems.join(os.fspath(uri), LABELS_FILE)
  with FileSystems.open(path, compression_type='uncompressed') as f:
    lines = f.read().decode('utf-8').split('\n')
  return {label: i for i, label in enumerate(lines[:-1] if lines and lines[-1] == '' else lines)}
