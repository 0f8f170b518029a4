"""The registry of manifest formats. A format is one module that declares a
`ManifestFormat` (format_spec.py: its name, the file extensions it claims, how to sniff
it from its first characters, how to parse it) and is listed once in `FORMATS`.

A file's format is the one its extension claims; when several formats claim it (`.csv`,
`.json`, `.xml`) or none does, the first of those formats, by their `sniff_rank`, whose
`sniff` accepts the file's first characters, else the last of them. Each format's module
declares its rank beside why it is there.
"""
from __future__ import annotations

from typing import Optional, Tuple

from tfrecorder_component.errors import ManifestError
from tfrecorder_component.manifest import (automl_csv, automl_detection_csv, coco, createml, cvat,
                                           label_studio, labelbox, labelme, open_images,
                                           pascal_voc, segmentation_csv, tf_od_csv, vertex_jsonl,
                                           yolo)
from tfrecorder_component.manifest.format_spec import ManifestFormat

# Every format, one line each; `FORMATS` orders them by their declared `sniff_rank`.
_DECLARED: Tuple[ManifestFormat, ...] = (
    automl_csv.FORMAT,
    automl_detection_csv.FORMAT,
    coco.FORMAT,
    createml.FORMAT,
    cvat.FORMAT,
    label_studio.FORMAT,
    labelbox.FORMAT,
    labelme.FORMAT,
    open_images.FORMAT,
    pascal_voc.FORMAT,
    segmentation_csv.FORMAT,
    tf_od_csv.FORMAT,
    vertex_jsonl.FORMAT,
    yolo.FORMAT,
    yolo.OBB_FORMAT,
    yolo.DARKNET_FORMAT,
)
# In sniffing order (`sniff_rank`).
FORMATS: Tuple[ManifestFormat, ...] = tuple(sorted(_DECLARED, key=lambda f: f.sniff_rank))
MANIFEST_FORMATS = tuple(sorted(f.name for f in FORMATS))
# Files that may be manifests; anything else beside them (images) is skipped.
MANIFEST_EXTENSIONS = tuple(sorted({e for f in FORMATS for e in f.extensions}))


def by_name(name: str, path: Optional[str] = None) -> ManifestFormat:
  """The format named `name`; raises ManifestError, listing the names, for an unknown
  one.

  Args:
    name: the format's name, as `manifest_format` takes it (`MANIFEST_FORMATS`).
    path: the manifest the name was given for, named in the error; None: none named.
  """
  for f in FORMATS:
    if f.name == name:
      return f
  where = f'{path}: ' if path else ''
  raise ManifestError(f'{where}unknown manifest format {name!r}; one of '
                      f'{", ".join(MANIFEST_FORMATS)}')


def detect(path: str, head: str) -> ManifestFormat:
  """The format of the file at `path` whose text starts with `head` (see the module).

  Args:
    path: the file's path or URI; its extension, in any case, names the formats that
      claim it.
    head: the file's first characters (the reader passes 65,536); a BOM and white space
      before the first are skipped.
  """
  lower = path.lower()
  claimed = [f for f in FORMATS if lower.endswith(f.extensions)]
  if len(claimed) == 1:
    return claimed[0]
  start = head.lstrip('\ufeff \t\r\n')
  for f in claimed or FORMATS:
    if f.sniff(start):
      return f
  return (claimed or FORMATS)[-1]


def detect_format(path: str, head: str) -> str:
  """The name of the format `detect` finds.

  Args:
    path: the file's path or URI, whose extension names the formats that claim it.
    head: the file's first characters.
  """
  return detect(path, head).name
