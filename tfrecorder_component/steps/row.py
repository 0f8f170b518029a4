"""One manifest row to one record, without Beam: read the image, probe and decode-check
it, check its boxes (and masks and keypoints, or its class mask), apply the image
transform to all of them, pick the split and build the `tf.train.Example`. Failures
raise RowError naming the reason."""
from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Callable, Dict, List, NamedTuple, Optional, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.images import geometry
from tfrecorder_component.record import splits as splits_lib
from tfrecorder_component.errors import RowError
from tfrecorder_component.feature_keys import IMAGE_SHA256
from tfrecorder_component.record import wire
from tfrecorder_component.record.example import DetectedObject, example_features, source_id_of
from tfrecorder_component.images import boxes as boxes_lib
from tfrecorder_component.images import probe as image_lib
from tfrecorder_component.images import transform as transform_lib
from tfrecorder_component.manifest import ManifestRow, ObjectBox, Task
from tfrecorder_component.manifest.class_map import is_dropped
from tfrecorder_component.options import ConversionOptions

if TYPE_CHECKING:
  import numpy as np

# `images.masks` (and numpy with it, 130 ms of a run's start-up, before its workers fork)
# is imported only by the rows that have masks: `_masks_lib()`.


def _masks_lib():
  from tfrecorder_component.images import masks  # pylint: disable=g-import-not-at-top
  return masks


class RecordStat(NamedTuple):
  """What the report needs of a written record, without its bytes.

  Attributes:
    split: the split the record is written to.
    labels: the record's labels: a detection record's object labels, each once in the
      order of its objects; else the row's labels.
    sha256: the SHA-256 of the stored image bytes, in hex (the record's
      `image/key/sha256`), which finds duplicate images.
    uri: the image URI as the manifest wrote it.
    objects: detection: the label of each object written; () for other tasks.
    image_format: the stored image's format, as TensorFlow takes it: 'jpeg', 'png', 'gif'
      or 'bmp'.
    size_bucket: `images.geometry.size_bucket` of the stored image (its longest side, such
      as '256-511 px').
    features: `feature_signature` of the record.
    source_id: the record's `image/source_id` where it is not `uri` (a COCO image id,
      a `source_id='number'`), so that two records given one are found
      (`steps.duplicates`); '' where it is the URI.
    split_by_hash: whether the record's split came from the hash buckets (its row
      gave none), so that a bucket left empty is warned of (`warnings`).
  """
  split: str
  labels: Tuple[str, ...]
  sha256: str
  uri: str
  objects: Tuple[str, ...] = ()  # detection: the label of each object written
  image_format: str = ''
  size_bucket: str = ''  # geometry.size_bucket of the stored image
  features: str = ''  # `feature_signature` of the record
  source_id: str = ''  # image/source_id where it is not the URI
  split_by_hash: bool = False


class ConvertedRow(NamedTuple):
  """A row that became a record.

  Attributes:
    split: the split the record goes to: the row's own, else its hash bucket.
    record: the serialized tf.train.Example, byte-reproducible.
    stat: what the report needs of the record.
    box_issues: the boxes (and masks, keypoints, corners) that were dropped, clipped or
      hidden, for box_issues.jsonl.
    data: the image as stored in the record (re-encoded or transformed where it was).
    objects: detection: the objects written; None for other tasks.
    converted: whether the image was re-encoded as PNG (`convert_unsupported`).
    bytes_read: the size in bytes of the image as `load_image` returned it (the PNG's
      for a converted image); a class mask's bytes are not counted.
    class_mask: segmentation: the class mask written (PNG); None for other tasks.
  """
  split: str
  record: bytes  # the serialized tf.train.Example
  stat: RecordStat
  box_issues: List[boxes_lib.BoxIssue]
  data: bytes    # the image as stored in the record
  objects: Optional[List[DetectedObject]]  # detection: the objects written
  converted: bool  # re-encoded as PNG (`convert_unsupported`)
  bytes_read: int
  class_mask: Optional[bytes] = None  # segmentation: the class mask written (PNG)


# Reads a file's bytes, (uri, max_bytes) -> bytes, raising RowError: `files.read_bytes`,
# or the bytes that a Beam step fetched ahead (`beam.convert_batches`).
Read = Callable[[str, int], bytes]


def convert_row(row: ManifestRow, ids: Dict[str, int], options: ConversionOptions,
                read: Read = files.read_bytes) -> ConvertedRow:
  """The record of one row, its split and what the report needs of it; raises RowError
  naming why the row cannot become a record.

  Args:
    row: the manifest row to convert.
    ids: the run's {label: class id}; a label of the row (or of a kept object) not in it
      fails the row as `unknown_label`.
    options: the run's options: the read limits, checks, transform, buckets and what
      the record includes.
    read: reads a file's bytes, (uri, max_bytes) -> bytes, raising RowError; default
      `files.read_bytes`, or the bytes fetched ahead.
  """
  for label in (*row.labels, *(o.label for o in row.objects or () if not is_dropped(o))):
    if label not in ids:  # a label a given label map lacks
      raise RowError('unknown_label', f'the label {label!r} is not in the given label map; '
                     'add it there, or let new labels take new ids (append_new_labels, '
                     '--append-new-labels)')
  data, info, converted = load_image(row, options, read)
  loaded = data
  bytes_read = len(data)
  class_mask = None
  if row.task is Task.SEGMENTATION:
    class_mask = _class_mask(row, info, ids, options, read)
  data, info, objects, issues, class_mask = _objects_and_transform(
      row, data, info, ids, options, class_mask)
  label_ids = None
  if row.task is Task.DETECTION:
    names = tuple(o.label for o in objects)
    labels = tuple(dict.fromkeys(names))
  else:
    label_ids = tuple([ids[l] for l in row.labels])
    names, labels = (), row.labels
  split = row.split or splits_lib.hash_split(row.image_uri, options.buckets)
  encoded_mask = None if class_mask is None else _masks_lib().encode_png(class_mask)
  # A re-encoded image (transformed, or converted to PNG) is named by its stored format.
  filename = (image_lib.stored_filename(posixpath.basename(row.image_uri), info.format)
              if converted or data is not loaded else None)
  source_id = source_id_of(row, options.source_id)
  features = example_features(row, data, info, objects, masks=options.include_masks,
                              keypoints=options.include_keypoints, class_mask=encoded_mask,
                              synset=options.class_synset, filename=filename,
                              source_id=source_id, label_ids=label_ids)
  sha256 = features[IMAGE_SHA256][1][0].decode()
  stat = RecordStat(split, labels, sha256, row.image_uri, names, info.format,
                    geometry.size_bucket(info.width, info.height),
                    signature_of(features),
                    '' if source_id == row.image_uri else source_id, not row.split)
  # the C++ protobuf runtime's deterministic serialization, on every stack: byte-reproducible
  try:
    serialized = wire.serialize(features)
  except wire.TooLarge as e:  # image and mask together
    raise RowError('too_large', 'the record (its image and mask together) would exceed '
                   'the 2 GiB a tf.train.Example can hold') from e
  return ConvertedRow(split, serialized, stat, issues,
                      data, objects, converted, bytes_read, encoded_mask)


_VALUES = {'bytes_list': 'bytes', 'int64_list': 'int64', 'float_list': 'float'}


def feature_signature(example) -> str:
  """The record's keys with their types and whether each has one value, a line each
  (`key<TAB>type<TAB>1|n`, sorted): a run's records share a few signatures, which the
  summary counts into its `features` (`example.record_features`).

  Args:
    example: the record, a tf.train.Example; a feature of no kind is shown as bytes.
  """
  lines = []
  for key, feature in example.features.feature.items():
    kind = feature.WhichOneof('kind')
    one = kind is not None and len(getattr(feature, kind).value) == 1
    lines.append(f'{key}\t{_VALUES.get(kind, "bytes")}\t{"1" if one else "n"}')
  return '\n'.join(sorted(lines))


# {a record's shape: its signature}: the records of a run have a few shapes, and the
# signature's text costs 25 µs a record to write, its lookup 2.
_SIGNATURES: Dict[Tuple[Tuple[str, str, bool], ...], str] = {}


def signature_of(features: wire.Features) -> str:
  """`feature_signature` of the record of `features` (`example.example_features`).

  Args:
    features: the record's {key: (kind, values)}.
  """
  shape = tuple([(key, kind, len(values) == 1) for key, (kind, values) in features.items()])
  signature = _SIGNATURES.get(shape)
  if signature is None:
    signature = '\n'.join(sorted(f'{key}\t{kind}\t{"1" if one else "n"}'
                                 for key, kind, one in shape))
    if len(_SIGNATURES) < 1024:
      _SIGNATURES[shape] = signature
  return signature


def load_image(row: ManifestRow, options: ConversionOptions, read: Read = files.read_bytes
               ) -> Tuple[bytes, image_lib.ImageInfo, bool]:
  """Reads a row's image, probes its header and (by default) proves it decodes.

  Returns (bytes, info, converted); raises RowError naming the reason.

  Args:
    row: the row whose `resolved_uri` is read.
    options: the run's options: `max_bytes`, `max_pixels`, `verify_decode` (decode, not
      only probe), and `convert_unsupported` (an unsupported format re-encoded as PNG,
      `converted` then True, instead of failing).
    read: reads a file's bytes, (uri, max_bytes) -> bytes, raising RowError; default
      `files.read_bytes`. Under `confine_to`, what it is given is the image's path with
      its links resolved inside the roots; an image leading out of them fails as
      `outside_root` before anything is read (`manifest.confine`).
  """
  data = read(confined(row.resolved_uri, options, 'image'), options.max_bytes)
  try:
    return data, image_lib.probe_image(data, options.max_pixels,
                                       decode=options.verify_decode), False
  except RowError as e:
    if e.reason != 'unsupported_format' or not options.convert_unsupported:
      raise
  data = image_lib.convert_to_png(data)
  return data, image_lib.probe_image(data, options.max_pixels,
                                     decode=options.verify_decode), True


def confined(uri: str, options: ConversionOptions, what: str) -> str:
  """The path to read `uri` from: `uri` itself without `confine_to`; with it, `uri` with
  its links resolved, each checked inside the roots before it is followed (a URI's text
  checked), or RowError `outside_root`, the same for every path outside, existing or not.

  Args:
    uri: the image's (or mask's) resolved URI.
    options: the run's options; `confinement` is read.
    what: what the file is, in words, for the message ('image', 'mask').
  """
  confinement = options.confinement
  return uri if confinement is None else confinement.check(uri, what)


def _class_mask(row: ManifestRow, info: image_lib.ImageInfo, ids: Dict[str, int],
                options: ConversionOptions, read: Read) -> np.ndarray:
  """A segmentation row's class mask at the stored image's size; RowError otherwise."""
  mask = confined(row.resolved_mask_uri, options, 'mask')  # outside_root, as at parse time
  try:
    data = read(mask, options.max_bytes)
    return _masks_lib().class_mask(data, row.mask_colors, ids, info.width, info.height)
  except RowError as e:
    raise RowError(e.reason, f'mask {row.mask_uri!r}: {e.message}') from None


class _Annotated(NamedTuple):
  """A kept object, its instance mask as a pycocotools RLE (include_masks), its
  keypoints, normalised (include_keypoints), and its oriented box's corners, normalised."""
  index: int
  obj: ObjectBox
  box: boxes_lib.Box
  rle: Optional[Dict]
  points: Tuple[Tuple[float, float, int], ...]
  corners: Tuple[boxes_lib.Point, ...] = ()

  def issue(self, action: str, reason: str, keypoint: Optional[str] = None):
    obj = self.obj
    return boxes_lib.BoxIssue(self.index, obj.label, (obj.xmin, obj.ymin, obj.xmax, obj.ymax),
                              action, reason, keypoint)


def _objects_and_transform(row: ManifestRow, data: bytes, info: image_lib.ImageInfo,
                           ids: Dict[str, int], options: ConversionOptions,
                           class_mask: Optional[np.ndarray]):
  """Checks the row's boxes, masks and keypoints against the stored image, then applies
  the image transform (they move with the pixels, as does a class mask). Returns
  (bytes, info, objects or None, issues, class mask)."""
  issues: List[boxes_lib.BoxIssue] = []
  annotated: List[_Annotated] = []
  if row.task is Task.DETECTION:
    kept, issues = boxes_lib.normalize_boxes(row.objects, info.width, info.height)
    annotated = _annotate(kept, info, options, issues)
  result = None
  transform = options.transform
  if transform is not None and not transform.is_identity:
    result = transform_lib.apply_transform(
        data, transform, [a.box for a in annotated],
        [(x, y) for a in annotated for x, y, _ in a.points] +
        [point for a in annotated for point in a.corners])
    if result.changed:
      data = result.data
      info = image_lib.probe_image(data, options.max_pixels)
      annotated = _moved(annotated, result, issues)
      if class_mask is not None:
        class_mask = transform_lib.transform_mask(class_mask, result)
    else:
      result = None
  if row.task is not Task.DETECTION:
    return data, info, None, issues, class_mask
  scale = result.scale if result is not None else (1.0, 1.0)
  objects = []
  masks_lib = _masks_lib() if any(a.rle is not None for a in annotated) else None
  for a in annotated:
    mask = None
    if a.rle is not None:  # drawn one object at a time, then encoded
      pixels = masks_lib.decode(a.rle)
      if pixels is None:
        issues.append(a.issue('dropped', 'bad_mask'))
        continue
      mask = masks_lib.encode_png(pixels if result is None
                                  else transform_lib.transform_mask(pixels, result))
    objects.append(DetectedObject(
        label=a.obj.label, class_id=ids[a.obj.label], box=a.box,
        area=(a.obj.area * scale[0] * scale[1] if a.obj.area is not None
              else boxes_lib.pixel_area(a.box, info.width, info.height)),
        is_crowd=a.obj.is_crowd, difficult=a.obj.difficult, truncated=a.obj.truncated,
        mask=mask, keypoints=a.points, keypoint_names=a.obj.keypoint_names if a.points else (),
        corners=a.corners, attributes=a.obj.attributes))
  return data, info, objects, issues, class_mask


def _annotate(kept, info: image_lib.ImageInfo, options: ConversionOptions,
              issues: List[boxes_lib.BoxIssue]) -> List[_Annotated]:
  """Rasterises the kept objects' masks and normalises their keypoints, listing what is
  wrong with them in `issues`: an object whose mask cannot be drawn or is empty is
  dropped, a polygon reaching outside the image is clipped, a labelled keypoint outside
  the image is made unlabelled (0, 0, 0)."""
  annotated = []
  masks_lib = _masks_lib() if options.include_masks and kept else None
  for index, obj, box in kept:
    a = _Annotated(index, obj, box, None, ())
    if options.include_masks:
      rle, reason = masks_lib.rasterize(obj.mask, info.width, info.height)
      if rle is None or reason == 'empty_mask':
        issues.append(a.issue('dropped', reason))
        continue
      if reason:
        issues.append(a.issue('clipped', reason))
      a = a._replace(rle=rle)
    points = []
    scale = (1.0, 1.0) if obj.normalized else (info.width, info.height)
    for name, (x, y, v) in zip(obj.keypoint_names, obj.keypoints):
      point = (x / scale[0], y / scale[1])
      if v and not boxes_lib.inside(point):
        issues.append(a.issue('hidden', 'keypoint_outside', name))
        v = 0
      points.append((*point, v) if v else (0.0, 0.0, 0))
    corners = tuple((x / scale[0], y / scale[1])
                    for x, y in zip(obj.corners[0::2], obj.corners[1::2]))
    inside = tuple((min(1.0, max(0.0, x)), min(1.0, max(0.0, y))) for x, y in corners)
    if inside != corners:
      issues.append(a.issue('clipped', 'corner_outside_image'))
    annotated.append(a._replace(points=tuple(points), corners=inside))
  return annotated


def _moved(annotated: List[_Annotated], result: transform_lib.TransformResult,
           issues: List[boxes_lib.BoxIssue]) -> List[_Annotated]:
  """The objects after a transform: one whose box left the image is dropped, a labelled
  keypoint that left it becomes unlabelled."""
  points = iter(result.points)
  corners = iter(result.points[sum(len(a.points) for a in annotated):])
  moved = []
  for a, box in zip(annotated, result.boxes):
    moved_corners = tuple(next(corners) for _ in a.corners)
    kept_points = []
    for name, (_, _, v) in zip(a.obj.keypoint_names, a.points):
      point = next(points)
      if v and point is None and box is not None:
        issues.append(a.issue('hidden', 'keypoint_outside_after_transform', name))
      kept_points.append((*point, v) if v and point is not None else (0.0, 0.0, 0))
    if box is None:
      issues.append(a.issue('dropped', 'outside_after_transform'))
      continue
    if None in moved_corners:  # a corner left the image: the kept box's corners instead
      issues.append(a.issue('clipped', 'corner_outside_after_transform'))
      x0, y0, x1, y1 = box
      moved_corners = ((x0, y0), (x1, y0), (x1, y1), (x0, y1))
    moved.append(a._replace(box=box, points=tuple(kept_points), corners=moved_corners))
  return moved
