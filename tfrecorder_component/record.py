"""One manifest row to one record, without Beam: read the image, probe and decode-check
it, check its boxes, apply the image transform, pick the split and build the
`tf.train.Example`. Failures raise RowError naming the reason."""
from __future__ import annotations

import dataclasses
from typing import Dict, List, NamedTuple, Optional, Tuple

from tfrecorder_component import files
from tfrecorder_component import report_html
from tfrecorder_component import splits as splits_lib
from tfrecorder_component.errors import RowError
from tfrecorder_component.example import DetectedObject, build_example
from tfrecorder_component.images import boxes as boxes_lib
from tfrecorder_component.images import probe as image_lib
from tfrecorder_component.images import transform as transform_lib
from tfrecorder_component.manifest import ManifestRow, Task
from tfrecorder_component.options import ConversionOptions


class RecordStat(NamedTuple):
  """What the report needs of a written record, without its bytes."""
  split: str
  labels: Tuple[str, ...]
  sha256: str
  uri: str
  objects: Tuple[str, ...] = ()  # detection: the label of each object written
  image_format: str = ''
  size_bucket: str = ''  # report_html.size_bucket of the stored image


class ConvertedRow(NamedTuple):
  """A row that became a record."""
  split: str
  record: bytes  # the serialized tf.train.Example
  stat: RecordStat
  box_issues: List[boxes_lib.BoxIssue]
  data: bytes    # the image as stored in the record
  objects: Optional[List[DetectedObject]]  # detection: the objects written
  converted: bool  # re-encoded as PNG (`convert_unsupported`)
  bytes_read: int


def convert_row(row: ManifestRow, ids: Dict[str, int],
                options: ConversionOptions) -> ConvertedRow:
  """The record of one row, its split and what the report needs of it; raises RowError
  naming why the row cannot become a record. `ids`: the run's {label: class id}."""
  data, info, converted = load_image(row, options)
  bytes_read = len(data)
  data, info, objects, issues = _objects_and_transform(row, data, info, ids, options)
  if row.task is Task.CLASSIFICATION:
    row = dataclasses.replace(row, label_ids=tuple(ids[l] for l in row.labels))
    names, labels = (), row.labels
  else:
    names = tuple(o.label for o in objects)
    labels = tuple(dict.fromkeys(names))
  split = row.split or splits_lib.hash_split(row.image_uri, options.buckets)
  example = build_example(row, data, info, objects)
  sha256 = example.features.feature['image/key/sha256'].bytes_list.value[0].decode()
  stat = RecordStat(split, labels, sha256, row.image_uri, names, info.format,
                    report_html.size_bucket(info.width, info.height))
  # deterministic: byte-reproducible records
  return ConvertedRow(split, example.SerializeToString(deterministic=True), stat, issues,
                      data, objects, converted, bytes_read)


def load_image(row: ManifestRow, options: ConversionOptions
               ) -> Tuple[bytes, image_lib.ImageInfo, bool]:
  """Reads a row's image, probes its header and (by default) proves it decodes.

  Returns (bytes, info, converted); raises RowError naming the reason.
  """
  data = files.read_bytes(row.resolved_uri, max_bytes=options.max_bytes)
  try:
    return data, image_lib.probe_image(data, options.max_pixels,
                                       decode=options.verify_decode), False
  except RowError as e:
    if e.reason != 'unsupported_format' or not options.convert_unsupported:
      raise
  data = image_lib.convert_to_png(data)
  return data, image_lib.probe_image(data, options.max_pixels,
                                     decode=options.verify_decode), True


def _objects_and_transform(row: ManifestRow, data: bytes, info: image_lib.ImageInfo,
                           ids: Dict[str, int], options: ConversionOptions):
  """Checks the row's boxes against the stored image, then applies the image transform
  (boxes move with the pixels). Returns (bytes, info, objects or None, box issues)."""
  kept, issues = ([], []) if row.task is Task.CLASSIFICATION else boxes_lib.normalize_boxes(
      row.objects, info.width, info.height)
  scale = (1.0, 1.0)
  transform = options.transform
  if transform is not None and not transform.is_identity:
    result = transform_lib.apply_transform(data, transform, [box for _, _, box in kept])
    if result.changed:
      data, scale = result.data, result.scale
      info = image_lib.probe_image(data, options.max_pixels)
      for (index, obj, _), box in zip(kept, result.boxes):
        if box is None:
          issues.append(boxes_lib.BoxIssue(index, obj.label,
                                           (obj.xmin, obj.ymin, obj.xmax, obj.ymax),
                                           'dropped', 'outside_after_transform'))
      kept = [(index, obj, box) for (index, obj, _), box in zip(kept, result.boxes)
              if box is not None]
  if row.task is Task.CLASSIFICATION:
    return data, info, None, issues
  objects = [DetectedObject(
      label=obj.label, class_id=ids[obj.label], box=box,
      area=(obj.area * scale[0] * scale[1] if obj.area is not None
            else boxes_lib.pixel_area(box, info.width, info.height)),
      is_crowd=obj.is_crowd, difficult=obj.difficult, truncated=obj.truncated)
             for _, obj, box in kept]
  return data, info, objects, issues
