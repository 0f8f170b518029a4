"""The label vocabulary that travels with the data: `labels.txt` and `label_map.pbtxt`.

Ids follow the sorted vocabulary (by number when every label is an integer), so they are
identical across runs of the same manifest: 0-based for classification (the ids of
`image/class/label`, as Keras' sparse labels expect), 1-based for detection (the ids of
`image/object/class/label`; the Object Detection API reserves 0 for the background).
label_map.pbtxt holds the ids the records hold; labels.txt lists the labels in id order.

A label none of whose rows became a record (every row failed, or every box of it was
dropped) is left out: ids are set from the manifest before images are read, and
`held_vocabulary` says how to renumber the records afterwards, which a run does only when
some label was left out.
"""
from __future__ import annotations

import os
import re
from typing import Dict, Iterable, List, Tuple

LABELS_FILE = 'labels.txt'
LABEL_MAP_FILE = 'label_map.pbtxt'


def vocabulary_order(labels: Iterable[str]) -> List[str]:
  """The labels in id order: by number when every label is an integer (`2` before
  `10`, as a digits data set means them), else sorted as text."""
  labels = list(labels)
  if labels and all(re.fullmatch(r'[+-]?\d+', l) for l in labels):
    return sorted(labels, key=lambda l: (int(l), l))
  return sorted(labels)


def first_label_id(task: str) -> int:
  """Class ids start at 0 for classification, at 1 for detection and segmentation (0 is
  the background)."""
  return 0 if task == 'classification' else 1


def held_vocabulary(labels: List[str], first_id: int,
                    records_per_label: Dict[str, int]) -> Tuple[List[str], Dict[int, int]]:
  """The labels in id order that some record holds, and {id set before the run: its id
  now}: empty when no id moves (no label left out, the usual case, or only the last)."""
  held = [l for l in labels if records_per_label.get(l)]
  new = {label: i for i, label in enumerate(held, start=first_id)}
  ids = {i: new[l] for i, l in enumerate(labels, start=first_id) if l in new}
  return held, {} if all(i == j for i, j in ids.items()) else ids


def _quote(text: str) -> str:
  return '"' + text.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"'


def label_map_pbtxt(vocabulary: Iterable[str], first_id: int = 0) -> str:
  """StringIntLabelMap text format, one `item` per label."""
  return ''.join(f'item {{\n  name: {_quote(name)}\n  id: {i}\n}}\n'
                 for i, name in enumerate(vocabulary, start=first_id))


def write_label_files(directory: str, vocabulary: List[str], first_id: int = 0) -> None:
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.files import write_text  # pylint: disable=g-import-not-at-top
  for name, text in ((LABELS_FILE, ''.join(l + '\n' for l in vocabulary)),
                     (LABEL_MAP_FILE, label_map_pbtxt(vocabulary, first_id))):
    write_text(FileSystems.join(directory, name), text)


_ITEM = re.compile(r'item\s*\{\s*name:\s*"((?:[^"\\]|\\.)*)"\s*id:\s*(-?\d+)\s*\}')
_UNESCAPE = re.compile(r'\\(.)')


def read_label_map(examples_uri: str) -> Dict[str, int]:
  """Returns {label: id} for an Examples artifact URI (or any folder holding
  label_map.pbtxt), with the ids the records hold. Also accepts a `tfx.types.Artifact`.
  """
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  uri = getattr(examples_uri, 'uri', examples_uri)
  path = FileSystems.join(os.fspath(uri), LABEL_MAP_FILE)
  with FileSystems.open(path, compression_type='uncompressed') as f:
    text = f.read().decode('utf-8')
  return {_UNESCAPE.sub(lambda m: '\n' if m.group(1) == 'n' else m.group(1), name): int(i)
          for name, i in _ITEM.findall(text)}
