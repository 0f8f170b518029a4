"""The row model every manifest format yields: `ManifestRow` (one image, its labels,
objects or segmentation mask, split and extra features), `ObjectBox` (with its
`InstanceMask` and keypoints when asked for), the row's `Task`, and the AutoML / Vertex
AI ML_USE values."""
from __future__ import annotations

import dataclasses
import enum
import functools
import posixpath
import re
from typing import Optional, Sequence, Tuple, Union

from tfrecorder_component.errors import RowError

# ML_USE / split values of the AutoML Vision and Vertex AI import formats, mapped to
# TFX split names. None means "unassigned": the row goes through hash splitting.
ML_USE_TO_SPLIT = {
    'TRAIN': 'train', 'TRAINING': 'train',
    'VALIDATION': 'eval', 'VALIDATE': 'eval', 'VALID': 'eval', 'VAL': 'eval', 'EVAL': 'eval',
    'TEST': 'test',
    'UNASSIGNED': None, '': None,
}

# The `ObjectBox.invalid` of an object whose class the run's class map drops
# (`class_map.py`): its label takes no id.
DROPPED_CLASS = 'dropped_class'

_SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*://')


@dataclasses.dataclass(frozen=True)
class InstanceMask:
  """An object's COCO `segmentation`, as annotated, in the pixels of the stored image.

  Either `polygons` (one or more parts, each x1, y1, x2, y2, ... in pixels; the parts of
  one object are merged) or a run-length encoding of `rle_size` (height, width), its
  `rle_counts` uncompressed (a tuple of run lengths) or compressed (COCO's string).
  Rasterised with pycocotools when the record is built (`images.masks`).

  Attributes:
    polygons: the polygon parts, each a flat x1, y1, x2, y2, ... tuple; () for an RLE.
    rle_size: an RLE's (height, width) in pixels; None for polygons.
    rle_counts: an RLE's run lengths: a tuple of ints (uncompressed) or COCO's
      compressed string; None for polygons.
    normalized: True when the polygons are fractions of the image's width and height
      in [0, 1] (YOLO), False when they are in pixels.
  """
  polygons: Tuple[Tuple[float, ...], ...] = ()
  rle_size: Optional[Tuple[int, int]] = None
  rle_counts: Union[str, Tuple[int, ...], None] = None
  # True when the polygons are normalised to [0, 1] (YOLO), not in pixels.
  normalized: bool = False


@dataclasses.dataclass(frozen=True)
class ObjectBox:
  """One annotated object of a detection manifest, in the frame of the stored pixels.

  Coordinates are as the manifest gives them: normalised to [0, 1] (AutoML, Vertex AI,
  YOLO) or in pixels (COCO, Pascal VOC; `normalized=False`); keypoints and corners are in
  the same frame as the box. They are checked, clipped and normalised against the
  image's real size when the record is built.

  Attributes:
    label: the object's class, as annotated (then as the class map names it).
    xmin: the box's left edge.
    ymin: the box's top edge (y grows downwards).
    xmax: the box's right edge.
    ymax: the box's bottom edge.
    normalized: True when the coordinates are fractions of the image's size, False
      when they are pixels.
    is_crowd: whether the object is a crowd of several (COCO's iscrowd, Open Images'
      IsGroupOf), written as `image/object/is_crowd`.
    difficult: whether the object is marked difficult (Pascal VOC, X-AnyLabeling).
    truncated: whether the object is marked truncated (Pascal VOC, Open Images).
    area: the object's area in pixels, as annotated (COCO); None: the box's own area.
    mask: its instance mask, read when include_masks asks for it; None: none.
    keypoints: with include_keypoints, (x, y, visibility) triples in the box's frame,
      one per name of `keypoint_names`, padded with (0, 0, 0) to the file's longest
      list; (): none.
    keypoint_names: the names of `keypoints`, in order ('' for padding).
    invalid: why the object cannot be written as annotated ('bad_area', 'point_shape',
      'dropped_class', ...), so that the record step drops it and lists it in
      box_issues; '' for a valid object.
    source_id: the class id the source gives (COCO's category_id, a YOLO class index),
      which the run's id for the class keeps where it can; None: none, or the class
      map renamed the class.
    corners: an oriented box's four corners, x1, y1, ... x4, y4, in the box's frame
      (YOLO OBB, rotated CVAT, LabelMe and Label Studio boxes); the axis-aligned box
      encloses them. (): none.
    attributes: what else the source says of the object, as (name, value) pairs, a
      value an int, a float or a string, each written as `image/object/<name>`.
  """
  label: str
  xmin: float
  ymin: float
  xmax: float
  ymax: float
  normalized: bool = True
  is_crowd: bool = False
  difficult: bool = False
  truncated: bool = False
  area: Optional[float] = None  # in pixels, as annotated (COCO); None: the box's own area
  mask: Optional[InstanceMask] = None  # COCO, with include_masks
  # COCO, with include_keypoints: (x, y, visibility) triples in pixels, one per name of
  # `keypoint_names` (padded with (0, 0, 0) and '' to the file's longest list).
  keypoints: Tuple[Tuple[float, float, int], ...] = ()
  keypoint_names: Tuple[str, ...] = ()
  # Why the object cannot be written as annotated ('bad_area', 'bad_iscrowd' (COCO),
  # 'point_shape' and the other shapes without an area (LabelMe, CVAT), 'dropped_class'
  # (the class map)), else '': it is dropped with that reason in box_issues.
  invalid: str = ''
  source_id: Optional[int] = None  # the class id the source gives (COCO's category_id)
  # An oriented box's four corners, x1, y1, ... x4, y4, as annotated (YOLO OBB); the
  # axis-aligned box above encloses them.
  corners: Tuple[float, ...] = ()
  # What else the source says of the object, written as `image/object/<name>`, one value
  # an object: (name, value) pairs, a value an int, a float or a string (CVAT attributes,
  # Open Images' IsOccluded ...).
  attributes: Tuple[Tuple[str, Union[int, float, str]], ...] = ()


FeatureValue = Union[int, float, str]


class Task(str, enum.Enum):
  """What a row's record is for; one run converts rows of one task."""
  CLASSIFICATION = 'classification'
  DETECTION = 'detection'
  SEGMENTATION = 'segmentation'


# A semantic-segmentation mask's colour (red, green, blue) and the class it paints
# (Vertex AI's `annotationSpecColors`).
MaskColor = Tuple[Tuple[int, int, int], str]


@dataclasses.dataclass(frozen=True)
class ManifestRow:
  """One image of a manifest, with where it came from.

  Attributes:
    source: the manifest file's path.
    row: the row's 1-based position in that file (its line, or its place in a list).
    image_uri: the image's URI as written in the manifest; the record's source id
      unless the source gives an `image_id` (see `record.example.source_id_of`).
    resolved_uri: where the image's bytes are read from (`resolve_uri`).
    labels: the image's classes (for detection, its objects' classes, once each).
    split: the TFX split name ('train', 'eval', 'test', ...); None when unassigned:
      the row is hash split.
    label_ids: the ids of `labels` in the run's vocabulary, set in the pipeline; ()
      until then.
    objects: detection: the image's objects (() for an image without any); None for
      classification and segmentation.
    features: extra manifest columns / JSON fields as typed features: (name, value)
      pairs, sorted by name.
    mask_uri: segmentation: the class mask's URI as written; None for other tasks.
    resolved_mask_uri: where the class mask's bytes are read from.
    mask_colors: a colour mask's (colour, class) pairs; (): the mask's pixel values are
      the class indices.
    image_id: the image's own integer id in its source (COCO's `images[].id`), which
      `source_id='auto'` writes as `image/source_id`; None: the source has none (the
      image URI is written).
    declared_classes: (class, id) pairs of every class the source declares, annotated
      or not (COCO's `categories`), sorted by id; carried by the first row a file
      yields only (), so that a class no annotation has keeps its id in the label
      files (`labels.assign_ids`). (): none, or not the first row.
  """
  source: str                 # the manifest file
  row: int                    # 1-based position of the row in that file
  image_uri: str              # as written in the manifest
  resolved_uri: str           # where the bytes are read from
  labels: Tuple[str, ...] = ()
  split: Optional[str] = None  # TFX split name, or None when unassigned
  label_ids: Tuple[int, ...] = ()  # ids of `labels` in the run's vocabulary, set in the pipeline
  # Detection: the image's objects (() for an image without any); None for classification.
  objects: Optional[Tuple[ObjectBox, ...]] = None
  # Extra manifest columns / JSON fields, carried as typed features: (name, value) pairs.
  features: Tuple[Tuple[str, FeatureValue], ...] = ()
  # Semantic segmentation: the class mask's URI as written and where it is read from;
  # `mask_colors` maps a colour mask's colours to classes (empty: the mask's pixel values
  # are the class indices). `labels` then holds the colours' class names.
  mask_uri: Optional[str] = None
  resolved_mask_uri: Optional[str] = None
  mask_colors: Tuple[MaskColor, ...] = ()
  # The image's own integer id in its source (COCO's images[].id): image/source_id under
  # source_id='auto'. None: none.
  image_id: Optional[int] = None
  # (class, id) of every class the source declares (COCO's categories), on the first row
  # of a file only: a class no annotation has keeps its id.
  declared_classes: Tuple[Tuple[str, int], ...] = ()

  @property
  def task(self) -> Task:
    """Segmentation when the row has a class mask, detection when it carries objects
    (possibly none), else classification."""
    if self.mask_uri is not None:
      return Task.SEGMENTATION
    return Task.CLASSIFICATION if self.objects is None else Task.DETECTION


def merge_image_rows(rows: Sequence[ManifestRow]) -> Union[ManifestRow, RowError]:
  """The rows of one detection image (one per box in AutoML CSV, one per annotation in
  COCO) as one row. Objects keep annotation order: by manifest file and row, and within
  one row (COCO's annotations of an image) in the order given, so the record is the
  same whatever order a runner brings the rows in. Rows that give different splits are
  a RowError.

  Args:
    rows: one or more detection rows (`objects` not None) of the same image URI and
      manifest; the first in file order gives the merged row's fields, the features of
      all are merged (a later row's value of a name wins).
  """
  if len(rows) == 1:
    return rows[0]
  rows = sorted(rows, key=lambda r: (r.source, r.row))  # stable: COCO's order kept
  if len({r.split for r in rows}) > 1:
    listed = ', '.join(f'{r.row} ({r.split or "unassigned"})' for r in rows)
    return RowError('conflicting_split', f'the rows of this image give different ML_USE '
                    f'values: rows {listed}; give every row of an image the same ML_USE',
                    source=rows[0].source, row=rows[0].row, uri=rows[0].image_uri)
  boxes = tuple(o for r in rows for o in r.objects)
  return dataclasses.replace(
      rows[0], objects=boxes,
      labels=tuple(dict.fromkeys(o.label for o in boxes if o.invalid != DROPPED_CLASS)),
      features=tuple(sorted(dict(f for r in rows for f in r.features).items())))




def split_for_ml_use(value: str) -> Optional[str]:
  """Maps an ML_USE value (any case) to a TFX split name; raises KeyError if unknown.

  Args:
    value: the ML_USE field (TRAIN, VALIDATION, TEST, UNASSIGNED, the aliases of
      `ML_USE_TO_SPLIT`, or empty); spaces around it are ignored. Empty and
      UNASSIGNED give None.
  """
  return ML_USE_TO_SPLIT[value.strip().upper()]


def split_of_folder(path: str) -> Optional[str]:
  """The split a manifest's folder names, or None: Roboflow exports a dataset as train/,
  valid/ and test/ folders, each with its own annotation file (`valid/_annotations.csv`:
  'eval'). The folder names are ML_USE values in any case, as for a source folder of
  split folders (sources.py): train, training, valid, val, validation, eval, test.

  Args:
    path: the manifest's path or URI (backslashes read as `/`); only the name of the
      folder that holds it counts.
  """
  folder = posixpath.basename(posixpath.dirname(path.replace('\\', '/')))
  return ML_USE_TO_SPLIT.get(folder.upper()) if folder else None


def resolve_uri(image_uri: str, manifest_path: str, image_root: Optional[str] = None) -> str:
  """Resolves an image URI against `image_root`, by default the manifest's own folder.

  Absolute paths and URIs with a scheme are kept; relative ones never depend on the
  working directory unless `image_root` itself is relative.

  Args:
    image_uri: the image's URI as the manifest writes it; a `file://` prefix is
      dropped, and the rest is returned as it is.
    manifest_path: the manifest's path, whose folder is the base when `image_root` is
      None ('.' for a path without a folder).
    image_root: the folder (a local path, `file://` path or URI) relative URIs resolve
      against; None or '': the manifest's folder.
  """
  uri = image_uri
  if uri.startswith('file://'):
    return uri[len('file://'):]
  if _SCHEME.match(uri) or uri.startswith('/'):
    return uri
  if image_root:
    root = image_root[len('file://'):] if image_root.startswith('file://') else image_root
    base = root.rstrip('/') or '/'
  else:
    base = manifest_path.rsplit('/', 1)[0] if '/' in manifest_path else '.'
  if _SCHEME.match(base):
    return posixpath.join(base, uri)
  if '//' in uri or uri.endswith('/') or '/.' in '/' + uri:
    return posixpath.normpath(posixpath.join(base, uri))
  # No empty, '.' or '..' segment in `uri`: normpath would change only `base` (a third
  # of a CSV row's parse, done once a folder here; tests/test_resolve_uri.py holds this to
  # posixpath.normpath).
  root = _normalized(base)
  if root == '.':
    return uri
  return root + uri if root.endswith('/') else root + '/' + uri


@functools.lru_cache(maxsize=256)
def _normalized(base: str) -> str:
  return posixpath.normpath(base)


ParsedItem = Union[ManifestRow, RowError]


def short(value: object, limit: int = 80, text: Optional[str] = None) -> str:
  """A value as an error message quotes it: `text` (default its repr), cut to `limit`
  characters with '...'.

  Args:
    value: the value quoted, as its repr when `text` is None.
    limit: the most characters returned, '...' included.
    text: the value as already written (a JSON dump, say); None: `repr(value)`.
  """
  text = repr(value) if text is None else text
  return text if len(text) <= limit else text[:limit - 3] + '...'
