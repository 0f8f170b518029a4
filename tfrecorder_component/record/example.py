"""A manifest row plus its image bytes becomes a `tf.train.Example` with standard keys.

Classification records carry `image/class/{text,label}` (0-based ids; with `class_synset`
the labels again in ImageNet's `image/class/synset`); detection records
carry the TF Object Detection API's `image/object/...` keys (1-based class ids, the ids
of label_map.pbtxt), with `image/object/mask` and `image/object/keypoint/...` when asked
for; segmentation records carry Model Garden's `image/segmentation/class/{encoded,format}`.
Extra manifest columns become features under their own names.

A run writes the records' bytes directly (`wire.serialize`, byte for byte protobuf's
deterministic serialization); `build_example` puts the same features in a message, whose
classes come from `example_proto` (TensorFlow's schema, without importing TensorFlow).
The serialized records are what `tf.train.Example` parses.
"""
from __future__ import annotations

import hashlib
import posixpath
from typing import Any, Dict, NamedTuple, Optional, Sequence, Tuple

from tfrecorder_component.record import wire
from tfrecorder_component.images.probe import ImageInfo
from tfrecorder_component.manifest import ManifestRow, Task
from tfrecorder_component.feature_keys import (CLASS_LABEL, CLASS_SYNSET, CLASS_TEXT,
                                               CORNER_X, CORNER_Y,
                                               IMAGE_CHANNELS, IMAGE_ENCODED, IMAGE_FILENAME,
                                               IMAGE_FORMAT, IMAGE_HEIGHT, IMAGE_SHA256,
                                               IMAGE_SOURCE_ID, IMAGE_WIDTH, KEYPOINT_NUM,
                                               KEYPOINT_TEXT, KEYPOINT_VISIBILITY, KEYPOINT_X,
                                               KEYPOINT_Y, OBJECT_AREA, OBJECT_CLASS_LABEL,
                                               OBJECT_CLASS_TEXT, OBJECT_DIFFICULT, OBJECT_IS_CROWD,
                                               OBJECT_MASK, OBJECT_TRUNCATED, SEGMENTATION_ENCODED,
                                               SEGMENTATION_FORMAT)


class DetectedObject(NamedTuple):
  """One object of a detection record, its box normalised to the stored image.

  Attributes:
    label: The object's class name, as the annotation gives it (`image/object/class/text`).
    class_id: Its class id in label_map.pbtxt, 1-based.
    box: (xmin, ymin, xmax, ymax), each a fraction of the stored image's width or
      height, in [0, 1].
    area: Its area in pixels of the stored image: the annotated area (COCO) scaled with
      the image, else the box's.
    is_crowd: Whether it marks a crowd of objects (COCO's `iscrowd`).
    difficult: Whether the annotation marks it hard to recognise (VOC's `difficult`).
    truncated: Whether the annotation marks it cut off (VOC's `truncated`).
    mask: Its instance mask, a PNG of 0 and 1 the stored image's size; written only
      with `include_masks`. None: no mask.
    keypoints: (x, y, visibility) of each keypoint, x and y normalised; (0, 0, 0) for
      one not labelled. Written only with `include_keypoints`.
    keypoint_names: The name of each of `keypoints`, in the same order.
    corners: An oriented box's 4 (x, y) corners, normalised, in annotation order; ():
      none, and the box's own corners are written where another object has some.
    attributes: (name, value) pairs of the object's other annotated attributes
      (`ObjectBox.attributes`), each written as `image/object/<name>`.
  """
  label: str
  class_id: int  # 1-based
  box: Tuple[float, float, float, float]  # xmin, ymin, xmax, ymax in [0, 1]
  area: float    # in pixels of the stored image
  is_crowd: bool = False
  difficult: bool = False
  truncated: bool = False
  mask: Optional[bytes] = None  # PNG, 0 or 1, the stored image's size (include_masks)
  # (x, y, visibility), normalised; (0, 0, 0) for one not labelled (include_keypoints)
  keypoints: Tuple[Tuple[float, float, int], ...] = ()
  keypoint_names: Tuple[str, ...] = ()
  corners: Tuple[Tuple[float, float], ...] = ()  # an oriented box's 4 corners, normalised
  attributes: Tuple[Tuple[str, object], ...] = ()  # ObjectBox.attributes


def uri_number(uri: str) -> int:
  """The first 63 bits of the SHA-256 of `uri` (UTF-8) as a whole number from 0 to
  2**63 - 1: the `image/source_id` of `source_id='number'`, the same in every run and
  span, and a decimal int64 that `tf.strings.to_number(x, tf.int64)` parses.

  Args:
    uri: The image URI as the manifest writes it.
  """
  return int.from_bytes(hashlib.sha256(uri.encode('utf-8', 'surrogatepass')).digest()[:8],
                        'big') >> 1


def source_id_of(row: ManifestRow, mode: str = 'auto') -> str:
  """What a row's record holds as `image/source_id`.

  Args:
    row: The manifest row: its `image_uri`, and its `image_id` where the source gives
      one (COCO's `images[].id`).
    mode: 'auto' (the default): the row's `image_id` in decimal where it has one, as
      Model Garden's and the Object Detection API's COCO converters write
      `str(image['id'])`, else the image URI; 'uri': the image URI; 'number': the
      image URI's `uri_number` in decimal.
  """
  if mode == 'number':
    return str(uri_number(row.image_uri))
  if mode == 'auto' and row.image_id is not None:
    return str(row.image_id)
  return row.image_uri


def build_example(row: ManifestRow, data: bytes, info: ImageInfo,
                  objects: Optional[Sequence[DetectedObject]] = None, **options):
  """The record as a `tf.train.Example` message: `example_features` in the message.

  Args:
    row: The manifest row (`example_features`).
    data: The image's encoded bytes, as stored.
    info: What the image's header says.
    objects: A detection record's objects.
    options: `example_features`' keywords (masks, keypoints, class_mask, synset,
      filename, source_id).
  """
  # The message classes only here: a run writes `wire.serialize`'s bytes, and its
  # start-up does not wait for protobuf's descriptors (30 ms).
  from tfrecorder_component.record import example_proto as tf_example  # pylint: disable=g-import-not-at-top
  example = tf_example.Example()
  feature = example.features.feature
  for key, (kind, values) in example_features(row, data, info, objects, **options).items():
    target = getattr(feature[key], _LISTS[kind])
    target.SetInParent()
    target.value.extend(values)
  return example


_LISTS = {'bytes': 'bytes_list', 'float': 'float_list', 'int64': 'int64_list'}


def example_features(row: ManifestRow, data: bytes, info: ImageInfo,
                     objects: Optional[Sequence[DetectedObject]] = None, *,
                     masks: bool = False, keypoints: bool = False,
                     class_mask: Optional[bytes] = None, synset: bool = False,
                     filename: Optional[str] = None, source_id: Optional[str] = None,
                     label_ids: Optional[Sequence[int]] = None) -> wire.Features:
  """A record's features, {key: (kind, values)} (`wire.Features`), which
  `wire.serialize` writes as the `tf.train.Example`'s bytes and `build_example` puts in
  the message; `image/encoded` holds `data` unchanged.

  By `row.task`: a classification record, whose `row.label_ids` hold the ids of
  `row.labels` (see `steps.row.convert_row`), a detection record of `objects` (possibly
  none; with their `masks` and `keypoints` when asked for) or a segmentation record of
  `class_mask` (a PNG). A key given twice keeps the message's rule: values of the same
  kind are appended, another kind replaces them (`_put`).

  Args:
    row: The manifest row: its task, its image URI (`image/filename` is its base name
      unless `filename` is given, `image/source_id` the whole unless `source_id` is), its
      labels and their ids, its extra features.
    data: The image's encoded bytes, as stored (also hashed into `image/key/sha256`).
    info: What the image's header says: its format, height, width and channels.
    objects: A detection record's objects; None or empty: a record of no object, its
      object lists present and empty.
    masks: Whether to write each object's `mask` (`include_masks`).
    keypoints: Whether to write the objects' keypoints (`include_keypoints`).
    class_mask: A segmentation record's mask of class ids, PNG-encoded, written as
      `image/segmentation/class/encoded`.
    synset: Whether a classification record also holds its labels as
      `image/class/synset` (`class_synset`), as ImageNet's records hold their class
      folder's name.
    filename: `image/filename`; None: the base name of the row's image URI.
    source_id: `image/source_id` (`source_id_of`); None: the row's image URI.
    label_ids: A classification record's `image/class/label`; None: `row.label_ids`.
  """
  feature: wire.Features = {
      IMAGE_ENCODED: ('bytes', [data]),
      IMAGE_FORMAT: ('bytes', [info.format.encode()]),
      IMAGE_HEIGHT: ('int64', [info.height]),
      IMAGE_WIDTH: ('int64', [info.width]),
      IMAGE_CHANNELS: ('int64', [info.channels]),
      IMAGE_FILENAME: ('bytes', [(filename or posixpath.basename(row.image_uri)).encode('utf-8')]),
      IMAGE_SOURCE_ID: ('bytes', [(row.image_uri if source_id is None
                                   else source_id).encode('utf-8')]),
      IMAGE_SHA256: ('bytes', [hashlib.sha256(data).hexdigest().encode()]),
  }
  if row.task is Task.CLASSIFICATION:
    _int64s(feature, CLASS_LABEL, row.label_ids if label_ids is None else label_ids)
    _bytes(feature, CLASS_TEXT, [l.encode('utf-8') for l in row.labels])
    if synset:
      _bytes(feature, CLASS_SYNSET, [l.encode('utf-8') for l in row.labels])
  elif row.task is Task.SEGMENTATION:
    _bytes(feature, SEGMENTATION_ENCODED, [class_mask])
    _bytes(feature, SEGMENTATION_FORMAT, [b'png'])
  else:
    objects = objects or ()
    for i, key in enumerate(('xmin', 'ymin', 'xmax', 'ymax')):
      _floats(feature, f'image/object/bbox/{key}', [o.box[i] for o in objects])
    _bytes(feature, OBJECT_CLASS_TEXT, [o.label.encode('utf-8') for o in objects])
    _int64s(feature, OBJECT_CLASS_LABEL, [o.class_id for o in objects])
    _int64s(feature, OBJECT_IS_CROWD, [int(o.is_crowd) for o in objects])
    _floats(feature, OBJECT_AREA, [o.area for o in objects])
    _int64s(feature, OBJECT_DIFFICULT, [int(o.difficult) for o in objects])
    _int64s(feature, OBJECT_TRUNCATED, [int(o.truncated) for o in objects])
    if masks:
      _bytes(feature, OBJECT_MASK, [o.mask for o in objects])
    if keypoints:
      _keypoints(feature, objects)
    if any(o.corners for o in objects):
      _corners(feature, objects)
    if any(o.attributes for o in objects):
      _attributes(feature, objects)
  for name, value in row.features:
    if isinstance(value, str):
      _bytes(feature, name, [value.encode('utf-8')])
    elif isinstance(value, float):
      _floats(feature, name, [value])
    else:
      _int64s(feature, name, [value])
  return feature


def _keypoints(feature, objects: Sequence[DetectedObject]) -> None:
  """The Object Detection API's keypoint keys: every object's keypoints in turn, `num`
  the count of each object's labelled ones."""
  points = [p for o in objects for p in o.keypoints]
  _floats(feature, KEYPOINT_X, [x for x, _, _ in points])
  _floats(feature, KEYPOINT_Y, [y for _, y, _ in points])
  _int64s(feature, KEYPOINT_VISIBILITY, [v for _, _, v in points])
  _int64s(feature, KEYPOINT_NUM,
          [sum(1 for _, _, v in o.keypoints if v) for o in objects])
  _bytes(feature, KEYPOINT_TEXT,
         [n.encode('utf-8') for o in objects for n in o.keypoint_names])


def _corners(feature, objects: Sequence[DetectedObject]) -> None:
  """Oriented boxes (YOLO OBB): 4 corners an object, in annotation order, normalised
  (an object without corners: its box's, clockwise from the top left)."""
  corners = [p for o in objects for p in (o.corners or (
      (o.box[0], o.box[1]), (o.box[2], o.box[1]), (o.box[2], o.box[3]), (o.box[0], o.box[3])))]
  _floats(feature, CORNER_X, [x for x, _ in corners])
  _floats(feature, CORNER_Y, [y for _, y in corners])


# An attribute's value where an object lacks it, by the type of the values others give.
_MISSING = {str: '', int: -1, float: float('nan')}


def _attributes(feature, objects: Sequence[DetectedObject]) -> None:
  """`image/object/<name>`, one value an object, for each attribute any object has: a
  string, an int or a float list by the values given (ints and floats mixed: floats);
  '' / -1 / NaN for an object without it. A name whose key the record already has (a
  Label Studio control named `truncated` or `area`) is written as
  `image/object/attribute/<name>`, so no list gets two values for one object."""
  names = sorted({name for o in objects for name, _ in o.attributes})
  values = [dict(o.attributes) for o in objects]
  for name in names:
    given = [v[name] for v in values if name in v]
    kind = (str if any(isinstance(g, str) for g in given) else
            float if any(isinstance(g, float) for g in given) else int)
    column = [v.get(name, _MISSING[kind]) for v in values]
    key = f'image/object/{name}'
    if key in feature:
      key = f'image/object/attribute/{name}'
    if kind is str:
      _bytes(feature, key, [str(c).encode('utf-8') for c in column])
    elif kind is float:
      _floats(feature, key, [float(c) for c in column])
    else:
      _int64s(feature, key, column)


# Each list is present (possibly empty) in every record, so every record has the same
# keys: an unlabelled image, an image with no objects.
def _put(feature: wire.Features, key: str, kind: str, values) -> None:
  """As the message's `feature[key].<kind>_list.value.extend(values)`: a key already of
  this kind keeps its values before the new ones; one of another kind loses them (the
  oneof switches)."""
  given = feature.get(key)
  if given is not None and given[0] == kind:
    given[1].extend(values)
  else:
    feature[key] = (kind, list(values))


def _bytes(feature: wire.Features, key: str, values) -> None:
  _put(feature, key, 'bytes', values)


def _int64s(feature: wire.Features, key: str, values) -> None:
  _put(feature, key, 'int64', values)


def _floats(feature: wire.Features, key: str, values) -> None:
  _put(feature, key, 'float', values)


def record_features(signatures: Dict[str, int], records: int) -> Dict[str, Dict[str, Any]]:
  """{key: {'type': 'bytes' | 'int64' | 'float', 'records': records holding it, 'scalar':
  whether every record holds it with exactly one value}} of the records written, from
  their `steps.row.feature_signature` counts. A key written with two types (an extra
  column read as text in one manifest, as a number in another) has them joined by '|'.

  Args:
    signatures: {a record's `feature_signature`: how many records written have it}.
    records: How many records were written; a key is `scalar` only when that many hold
      it with exactly one value.
  """
  out: Dict[str, Dict[str, Any]] = {}
  for signature, n in signatures.items():
    for line in signature.split('\n') if signature else ():
      key, kind, values = line.split('\t')
      entry = out.setdefault(key, {'types': set(), 'records': 0, 'one': 0})
      entry['types'].add(kind)
      entry['records'] += n
      entry['one'] += n if values == '1' else 0
  return {key: {'type': '|'.join(sorted(e['types'])), 'records': e['records'],
                'scalar': e['one'] == records}
          for key, e in sorted(out.items())}
