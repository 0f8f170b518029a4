"""Opt-in image transforms applied before an image becomes a record (Pillow only).

The steps run in a fixed order: EXIF orientation, colour conversion, resize, encode.
Bounding boxes and keypoints given with the image follow every geometric step and come
back normalised in the output image; masks (2-D arrays of the stored image's size)
follow the same steps afterwards, one at a time (`transform_mask`), resampled with
nearest-neighbour (so values stay class indices) and padded with 0. When no step
changes the pixels and the format stays, the original bytes are returned untouched.

Multi-frame images (animated GIF, APNG) are reduced to their first frame, the frame
`tf.io.decode_image(..., expand_animations=False)` would return. Wherever alpha has to
go (JPEG output, `color='rgb'` or `'grey'`, GIF, whose frames TensorFlow decodes to
RGB) it is composited onto `pad_color`. 16-bit greyscale becomes 8-bit (the top byte,
as TensorFlow's own uint8 decode does). Re-encoded images carry no EXIF, so no
orientation tag; an ICC profile is kept while the colour space stays RGB or grey.
JPEGs that are scaled down a lot are decoded at a reduced DCT scale first.
"""
from __future__ import annotations

import dataclasses
import difflib
import io
import json
import math
import warnings
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from PIL import Image, ImageOps

from tfrecorder_component.images import probe as image_lib
from tfrecorder_component.images import geometry
from tfrecorder_component.images.boxes import Box, Point, clip_box, inside
from tfrecorder_component.errors import RowError

if TYPE_CHECKING:
  import numpy as np
# numpy is imported by the two functions that use it: `options` imports this module for
# ImageTransform, and a run without masks or 16-bit images would otherwise wait 130 ms
# for numpy before its workers fork.


RESIZE_MODES = ('stretch', 'fit', 'crop')
COLORS = ('rgb', 'grey')
ENCODINGS = ('jpeg', 'png')

_ORIENTATION_TAG = 0x0112
_SIXTEEN_BIT = ('I', 'I;16', 'I;16B', 'I;16L', 'I;16N')
_GREY_MODES = ('1', 'L', 'LA') + _SIXTEEN_BIT
_ALPHA_MODES = ('RGBA', 'LA', 'PA', 'RGBa', 'La')
_DRAFT_GAP = 2  # JPEG DCT scaling stops at twice the target size; resampling does the rest.
_REDUCING_GAP = 3.0


def _is_int(value) -> bool:
  return isinstance(value, int) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class ImageTransform:
  """What to do to each image; the default does nothing (`is_identity`).

  Attributes:
    auto_orient: Turn the pixels upright by their EXIF orientation tag first; boxes,
      points and masks turn with them.
    size: The exact output (width, height) in pixels, reached by `resize_mode`; None:
      no fixed size.
    longest_side: Instead of `size`, scales so that the longer side has that length in
      pixels, keeping the aspect; None: no such scaling.
    resize_mode: How `size` is reached: 'stretch' (aspect ignored; the default), 'fit'
      (scaled to fit inside, centred on `pad_color`) or 'crop' (scaled to cover, centre
      cropped). The last two need `size`.
    color: None (keep), 'rgb' or 'grey'.
    encode: None (JPEG stays JPEG, everything else re-encoded becomes PNG), 'jpeg' or
      'png'.
    jpeg_quality: Pillow's JPEG quality, 1 to 100 (default 95), for every image written
      as JPEG.
    pad_color: (r, g, b), each 0 to 255: the 'fit' padding, and the colour lost alpha
      is composited onto. Default black.
  """
  auto_orient: bool = False
  size: Optional[Tuple[int, int]] = None
  longest_side: Optional[int] = None
  resize_mode: str = 'stretch'
  color: Optional[str] = None
  encode: Optional[str] = None
  jpeg_quality: int = 95
  pad_color: Tuple[int, int, int] = (0, 0, 0)

  def __post_init__(self):
    if self.size is not None:
      size = tuple(self.size)
      if len(size) != 2 or not all(_is_int(v) and v > 0 for v in size):
        raise ValueError(f'size must be two positive integers (width, height), got {self.size!r}')
      object.__setattr__(self, 'size', size)
    if self.longest_side is not None and not (_is_int(self.longest_side)
                                              and self.longest_side > 0):
      raise ValueError(f'longest_side must be a positive integer, got {self.longest_side!r}')
    if self.size is not None and self.longest_side is not None:
      raise ValueError('give either size or longest_side, not both')
    if self.resize_mode not in RESIZE_MODES:
      raise ValueError(f'resize_mode must be one of {", ".join(RESIZE_MODES)}, '
                       f'got {self.resize_mode!r}')
    if self.resize_mode != 'stretch' and self.size is None:
      raise ValueError(f'resize_mode {self.resize_mode!r} needs size (width, height)')
    if self.color is not None and self.color not in COLORS:
      raise ValueError(f'color must be None, {" or ".join(map(repr, COLORS))}, '
                       f'got {self.color!r}')
    if self.encode is not None and self.encode not in ENCODINGS:
      raise ValueError(f'encode must be None, {" or ".join(map(repr, ENCODINGS))}, '
                       f'got {self.encode!r}')
    if not (_is_int(self.jpeg_quality) and 1 <= self.jpeg_quality <= 100):
      raise ValueError(f'jpeg_quality must be an integer from 1 to 100, got {self.jpeg_quality!r}')
    pad = tuple(self.pad_color)
    if len(pad) != 3 or not all(_is_int(v) and 0 <= v <= 255 for v in pad):
      raise ValueError(f'pad_color must be three integers from 0 to 255, got {self.pad_color!r}')
    object.__setattr__(self, 'pad_color', pad)

  @property
  def is_identity(self) -> bool:
    """True when nothing is asked: records keep the original bytes."""
    return (not self.auto_orient and self.size is None and self.longest_side is None
            and self.color is None and self.encode is None)

  def to_json(self) -> str:
    """The fields as a JSON object (how the component stores them as a parameter)."""
    return json.dumps(dataclasses.asdict(self), sort_keys=True)

  @classmethod
  def from_json(cls, text: Optional[str]) -> Optional['ImageTransform']:
    """The transform of a JSON object of its fields (as `to_json` writes it, or the CLI's
    `--image-transform`); None for no transform. ValueError for text that is not a JSON
    object, or fields `from_dict` refuses.

    Args:
      text: The JSON text; None or '' means no transform.
    """
    if not text:
      return None
    try:
      fields = json.loads(text)
    except json.JSONDecodeError as e:
      raise ValueError(f'the image transform is not JSON ({e}): {text!r}') from None
    if not isinstance(fields, dict):
      raise ValueError(f'the image transform must be a JSON object, got {text!r}')
    return cls.from_dict(fields)

  @classmethod
  def from_dict(cls, fields: Dict[str, Any]) -> 'ImageTransform':
    """The transform of a dict of its fields; an unknown key is a ValueError naming the
    closest field.

    Args:
      fields: {field name: value}, e.g. {'size': [224, 224], 'resize_mode': 'fit'};
        fields left out keep their defaults, and values are checked as the constructor
        checks them.
    """
    known = [f.name for f in dataclasses.fields(cls)]
    for key in fields:
      if key not in known:
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f' (did you mean {close[0]!r}?)' if close else ''
        raise ValueError(f'unknown image transform field {key!r}{hint}; the fields are '
                         f'{", ".join(known)}')
    return cls(**fields)


@dataclasses.dataclass(frozen=True)
class TransformResult:
  """The bytes to store and the boxes and points in them.

  `orientation` and `plan` are the geometry applied, which `transform_mask` applies to
  masks.

  Attributes:
    data: The bytes to store: the re-encoded image, or the input bytes when nothing
      changed.
    boxes: One entry per input box, normalised in the output and clipped to [0, 1], or
      None for a box that left the image or became empty.
    changed: Whether the image was re-encoded; False: `data` is the input, untouched.
    scale: Output pixels per upright input pixel in x and y, for scaling annotated
      areas; (1.0, 1.0) without a resize.
    points: The input points normalised in the output, or None for one outside it.
    orientation: The EXIF orientation applied, 1 to 8 (1: none).
    plan: The resize applied, or None for none.
  """
  data: bytes
  boxes: List[Optional[Box]]
  changed: bool
  scale: Tuple[float, float]
  points: List[Optional[Point]] = dataclasses.field(default_factory=list)
  orientation: int = 1
  plan: Optional[geometry.ResizePlan] = None


def _unchanged(data: bytes, boxes: List[Box], points: Sequence[Point]) -> TransformResult:
  return TransformResult(data, [clip_box(b) for b in boxes], False, (1.0, 1.0),
                         [p if inside(p) else None for p in points])


def transform_mask(mask: np.ndarray, result: TransformResult) -> np.ndarray:
  """A mask of the stored image's size (2-D uint8) through the geometry of `result`:
  EXIF orientation, then the resize, nearest-neighbour and padded with 0.

  Args:
    mask: A 2-D array, height x width of the stored image, of values 0 to 255 (an
      instance mask's 0 and 1, or a class mask's indices).
    result: The `apply_transform` result of the mask's image.
  """
  if result.orientation == 1 and result.plan is None:
    return mask
  import numpy as np  # pylint: disable=g-import-not-at-top,redefined-outer-name
  im = Image.fromarray(np.asarray(mask, dtype=np.uint8), 'L')
  if result.orientation != 1:
    im = im.transpose(_TRANSPOSE[result.orientation])
  if result.plan is not None:
    im = _resize(im, result.plan, 0, nearest=True)
  return np.asarray(im)


def _orientation(im: Image.Image) -> int:
  try:
    value = im.getexif().get(_ORIENTATION_TAG, 1)
  except Exception:  # Unreadable EXIF carries no usable orientation.
    return 1
  return value if value in range(1, 9) else 1


def _target_mode(im: Image.Image, fmt: str, color: Optional[str], out_format: str) -> str:
  if color == 'grey':
    mode = 'L'
  elif color == 'rgb':
    mode = 'RGB'
  else:
    alpha = fmt != 'GIF' and _has_alpha(im, fmt)
    grey = im.mode in _GREY_MODES and fmt != 'GIF'
    mode = ('LA' if alpha else 'L') if grey else ('RGBA' if alpha else 'RGB')
  if out_format == 'JPEG':
    mode = mode.replace('A', '')
  return mode


def _has_alpha(im: Image.Image, fmt: str) -> bool:
  """Whether the pixels carry transparency that TensorFlow's decode would show.

  A colour-key tRNS on a greyscale or RGB PNG is ignored, as TensorFlow ignores it; a
  palette's transparency counts, and a GIF's, which TensorFlow paints black.
  """
  return im.mode in _ALPHA_MODES or ('transparency' in im.info
                                     and (im.mode == 'P' or fmt == 'GIF'))


def _convert(im: Image.Image, fmt: str, mode: str,
             pad_color: Tuple[int, int, int]) -> Image.Image:
  """Converts to mode ('L', 'LA', 'RGB' or 'RGBA'), compositing lost alpha onto pad_color."""
  if im.mode in _SIXTEEN_BIT:
    import numpy as np  # pylint: disable=g-import-not-at-top,redefined-outer-name
    grey = np.clip(np.asarray(im).astype(np.int64), 0, 65535) >> 8
    im = Image.fromarray(grey.astype(np.uint8), 'L')
  if im.mode == mode:
    return im
  if _has_alpha(im, fmt) and 'A' not in mode:
    canvas = Image.new('RGBA', im.size, pad_color + (255,))
    canvas.alpha_composite(im.convert('RGBA'))
    return canvas.convert(mode)
  return im.convert(mode)


def _pad_value(mode: str, pad_color: Tuple[int, int, int]):
  if mode in ('L', 'LA'):
    grey = Image.new('RGB', (1, 1), pad_color).convert('L').getpixel((0, 0))
    return grey if mode == 'L' else (grey, 255)
  return pad_color if mode == 'RGB' else pad_color + (255,)


def _resize(im: Image.Image, plan: geometry.ResizePlan, pad, nearest: bool = False
            ) -> Image.Image:
  """Resizes by `plan`, padding with `pad` (a pixel value of the image's mode);
  `nearest`: nearest-neighbour, for masks, so that values are never blended."""
  w, h = im.size
  rx0, ry0, rx1, ry1 = plan.region
  content = im.resize(plan.content,
                      Image.Resampling.NEAREST if nearest else Image.Resampling.LANCZOS,
                      box=(rx0 * w, ry0 * h, rx1 * w, ry1 * h),
                      reducing_gap=None if nearest else _REDUCING_GAP)
  if plan.content == plan.size:
    return content
  canvas = Image.new(im.mode, plan.size, pad)
  canvas.paste(content, plan.offset)
  return canvas


def _draft(im: Image.Image, plan: Optional[geometry.ResizePlan], orientation: int, grey: bool) -> None:
  """Lets libjpeg decode at a reduced scale (and straight to grey) where that is enough."""
  if im.format != 'JPEG':
    return
  size = None
  if plan is not None:
    rx0, ry0, rx1, ry1 = plan.region
    need_w = math.ceil(plan.content[0] / (rx1 - rx0)) * _DRAFT_GAP
    need_h = math.ceil(plan.content[1] / (ry1 - ry0)) * _DRAFT_GAP
    size = (need_h, need_w) if orientation >= 5 else (need_w, need_h)
  mode = 'L' if grey and im.mode == 'RGB' else None
  if size is not None or mode is not None:
    im.draft(mode, size)


def _same_colour_space(source_mode: str, mode: str) -> bool:
  return (source_mode in ('RGB', 'RGBA') and mode in ('RGB', 'RGBA')) or (
      source_mode in ('L', 'LA') and mode in ('L', 'LA'))


def apply_transform(data: bytes, transform: ImageTransform,
                    boxes: Sequence[Box] = (), points: Sequence[Point] = ()
                    ) -> TransformResult:
  """Applies `transform` to the image `data` and maps `boxes` and `points` along with it
  (masks follow with `transform_mask`).

  Boxes and points are normalised to the stored pixels (before EXIF orientation). Only
  the first frame of a multi-frame image is transformed. Raises ValueError for a box
  that is not 4 numbers, RowError `transform_failed` when the image cannot be decoded
  or encoded.

  Args:
    data: The image file's bytes.
    transform: What to do; an identity transform returns `data` untouched.
    boxes: Normalised (xmin, ymin, xmax, ymax) boxes, each any sequence of 4 numbers.
    points: Normalised (x, y) points: keypoints and oriented-box corners.
  """
  boxes = [geometry.as_box(box) for box in boxes]
  if transform.is_identity:
    return _unchanged(data, boxes, points)
  try:
    with warnings.catch_warnings():
      warnings.simplefilter('ignore', Image.DecompressionBombWarning)
      with Image.open(io.BytesIO(data)) as im:
        return _transform_open(data, im, transform, boxes, points)
  except RowError:
    raise
  except Exception as e:  # Pillow raises OSError, SyntaxError, ValueError and others.
    raise RowError('transform_failed', f'could not transform the image '
                   f'({type(e).__name__}: {image_lib.pillow_message(e)})') from None


def _transform_open(data: bytes, im: Image.Image, transform: ImageTransform,
                    boxes: List[Box], points: Sequence[Point]) -> TransformResult:
  fmt = im.format
  if fmt is None:
    raise RowError('transform_failed', 'the image format is not recognised')
  orientation = _orientation(im) if transform.auto_orient else 1
  width, height = im.size
  if orientation >= 5:
    width, height = height, width
  plan = geometry.plan_resize(transform, width, height)
  out_format = (transform.encode or ('jpeg' if fmt == 'JPEG' else 'png')).upper()
  source_format = fmt if fmt in ('JPEG', 'PNG') else None
  wanted_mode = {'rgb': 'RGB', 'grey': 'L'}.get(transform.color)
  recolour = wanted_mode is not None and (im.mode != wanted_mode or fmt == 'GIF')
  reencode = transform.encode is not None and out_format != source_format
  if orientation == 1 and plan is None and not recolour and not reencode:
    return _unchanged(data, boxes, points)

  source_mode = im.mode
  icc_profile = im.info.get('icc_profile')
  _draft(im, plan, orientation, transform.color == 'grey')
  im.load()
  if orientation != 1:
    im = ImageOps.exif_transpose(im)
    boxes = [geometry.orient_box(b, orientation) for b in boxes]
    points = [geometry.orient_point(p, orientation) for p in points]
  im = _convert(im, fmt, _target_mode(im, fmt, transform.color, out_format),
                transform.pad_color)
  scale = (1.0, 1.0)
  if plan is not None:
    im = _resize(im, plan, _pad_value(im.mode, transform.pad_color))
    boxes = [geometry.resize_box(b, plan) for b in boxes]
    points = [geometry.resize_point(p, plan) for p in points]
    scale = plan.scale

  im.info = {}
  options = {}
  if icc_profile and _same_colour_space(source_mode, im.mode):
    options['icc_profile'] = icc_profile
  if out_format == 'JPEG':
    options.update(quality=transform.jpeg_quality, optimize=False)
  else:
    options.update(optimize=False)
  out = io.BytesIO()
  im.save(out, out_format, **options)
  return TransformResult(out.getvalue(), [clip_box(b) for b in boxes], True, scale,
                         [p if inside(p) else None for p in points], orientation, plan)


# The transposition of each EXIF orientation, as ImageOps.exif_transpose applies it.
_TRANSPOSE = {2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180,
              4: Image.Transpose.FLIP_TOP_BOTTOM, 5: Image.Transpose.TRANSPOSE,
              6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
              8: Image.Transpose.ROTATE_90}
