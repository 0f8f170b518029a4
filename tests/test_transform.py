"""apply_transform on real images: pixels, boxes and bytes that TensorFlow decodes."""
from __future__ import annotations

import io
import os
from typing import Tuple

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image, ImageOps

from images import encode, make_image
from tfrecorder_component.errors import RowError
from tfrecorder_component.images.probe import probe_image, stored_filename
from tfrecorder_component.images.transform import ImageTransform, TransformResult, apply_transform

ORIENTATION = 0x0112
BACKGROUND = (40, 40, 40)
RED = (250, 20, 20)


def _decode(data: bytes) -> Image.Image:
  im = Image.open(io.BytesIO(data))
  im.load()
  return im


def _pixels(data: bytes) -> np.ndarray:
  return np.asarray(_decode(data)).astype(np.int64)


def _box_masks(box, height: int, width: int, margin: float) -> Tuple[np.ndarray, np.ndarray]:
  """Pixels well inside the box, and pixels well outside it (`margin` pixels away)."""
  x0, y0, x1, y1 = box
  ys = (np.arange(height) + 0.5)[:, None]
  xs = (np.arange(width) + 0.5)[None, :]
  inside = ((xs > x0 * width + margin) & (xs < x1 * width - margin)
            & (ys > y0 * height + margin) & (ys < y1 * height - margin))
  outside = ((xs < x0 * width - margin) | (xs > x1 * width + margin)
             | (ys < y0 * height - margin) | (ys > y1 * height + margin))
  return inside, outside


def _scene(width: int, height: int, rect: Tuple[int, int, int, int],
           colour=RED, background=BACKGROUND) -> Image.Image:
  """A flat background with one coloured rectangle (x0, y0, x1, y1 in pixels)."""
  arr = np.empty((height, width, 3), np.uint8)
  arr[:] = background
  x0, y0, x1, y1 = rect
  arr[y0:y1, x0:x1] = colour
  return Image.fromarray(arr)


def _red_bbox(arr: np.ndarray) -> Tuple[float, float, float, float]:
  """The normalised bounding box of the red pixels of an image."""
  red = (arr[..., 0] > 150) & (arr[..., 1] < 100)
  ys, xs = np.nonzero(red)
  h, w = red.shape
  return xs.min() / w, ys.min() / h, (xs.max() + 1) / w, (ys.max() + 1) / h


def _with_orientation(im: Image.Image, fmt: str, orientation: int) -> bytes:
  exif = Image.Exif()
  exif[ORIENTATION] = orientation
  exif[0x010F] = 'test camera'  # Make, so that the EXIF block is more than the tag.
  if fmt == 'JPEG':
    return encode(im, 'JPEG', exif=exif.tobytes(), quality=100, subsampling=0)
  return encode(im, 'PNG', exif=exif.tobytes())


def _check_tf_agrees(result: TransformResult) -> None:
  info = probe_image(result.data, decode=True)
  decoded = tf.io.decode_image(result.data, expand_animations=False)
  assert tuple(decoded.shape) == (info.height, info.width, info.channels)


# Passthrough.

def test_identity_keeps_the_bytes_and_clips_the_boxes():
  data = encode(make_image('RGB', 20, 30), 'JPEG')
  result = apply_transform(data, ImageTransform(),
                           [(-0.1, 0.2, 0.5, 1.2), (0.3, 0.3, 0.3, 0.6)])
  assert ImageTransform().is_identity
  assert result.data is data
  assert result.changed is False
  assert result.scale == (1.0, 1.0)
  assert result.boxes == [(0.0, 0.2, 0.5, 1.0), None]


@pytest.mark.parametrize('source,transform', [
    ('jpeg', ImageTransform(auto_orient=True)),
    ('jpeg-orientation-1', ImageTransform(auto_orient=True)),
    ('png', ImageTransform(auto_orient=True)),
    ('jpeg', ImageTransform(color='rgb', encode='jpeg')),
    ('png', ImageTransform(encode='png', size=(30, 20))),
    ('png', ImageTransform(longest_side=30, resize_mode='stretch')),
    ('jpeg-orientation-6', ImageTransform(color='rgb')),  # orientation kept when not asked
], ids=['jpeg-auto-orient', 'jpeg-orientation-1', 'png-auto-orient', 'jpeg-rgb-jpeg',
        'png-same-size', 'png-same-longest-side', 'jpeg-orientation-6-no-orient'])
def test_no_pixel_change_keeps_the_original_bytes(source, transform):
  im = make_image('RGB', 20, 30)
  if source.startswith('jpeg-orientation-'):
    data = _with_orientation(im, 'JPEG', int(source.rsplit('-', 1)[1]))
  else:
    data = encode(im, source.upper())
  result = apply_transform(data, transform, [(0.1, 0.2, 0.3, 0.4)])
  assert not transform.is_identity
  assert result.data == data
  assert result.changed is False
  assert result.boxes == [(0.1, 0.2, 0.3, 0.4)]
  assert result.scale == (1.0, 1.0)


# EXIF orientation.

# Stored 120x80, the rectangle in the top right; where each orientation puts it upright.
STORED_RECT = (80, 10, 110, 30)
UPRIGHT_BOX = {
    1: (80 / 120, 10 / 80, 110 / 120, 30 / 80),
    2: (10 / 120, 10 / 80, 40 / 120, 30 / 80),
    3: (10 / 120, 50 / 80, 40 / 120, 70 / 80),
    4: (80 / 120, 50 / 80, 110 / 120, 70 / 80),
    5: (10 / 80, 80 / 120, 30 / 80, 110 / 120),
    6: (50 / 80, 80 / 120, 70 / 80, 110 / 120),
    7: (50 / 80, 10 / 120, 70 / 80, 40 / 120),
    8: (10 / 80, 10 / 120, 30 / 80, 40 / 120),
}


@pytest.mark.parametrize('fmt', ['JPEG', 'PNG'])
@pytest.mark.parametrize('orientation', range(1, 9))
def test_auto_orient_moves_pixels_and_boxes_together(orientation, fmt):
  stored = _scene(120, 80, STORED_RECT)
  data = _with_orientation(stored, fmt, orientation)
  box = (80 / 120, 10 / 80, 110 / 120, 30 / 80)
  # The pixel truth comes from Pillow's own orientation handling of the original.
  upright = np.asarray(ImageOps.exif_transpose(_decode(data)))
  assert _red_bbox(upright) == pytest.approx(UPRIGHT_BOX[orientation], abs=1.5 / 80)

  result = apply_transform(data, ImageTransform(auto_orient=True, size=(96, 64)), [box])

  assert result.changed is True
  out = _decode(result.data)
  assert out.size == (96, 64)
  assert out.format == fmt
  assert out.getexif().get(ORIENTATION) is None
  (mapped,) = result.boxes
  assert mapped == pytest.approx(UPRIGHT_BOX[orientation], abs=1e-9)
  arr = np.asarray(out.convert('RGB')).astype(np.int64)
  inside, outside = _box_masks(mapped, 64, 96, margin=1.5)
  assert inside.sum() >= 100
  mean_in = arr[inside].mean(axis=0)
  assert mean_in[0] > 220 and mean_in[1] < 50 and mean_in[2] < 50
  assert arr[outside][:, 0].max() < 90  # no red anywhere else
  upright_w, upright_h = (80, 120) if orientation >= 5 else (120, 80)
  assert result.scale == pytest.approx((96 / upright_w, 64 / upright_h))
  _check_tf_agrees(result)


def test_reencoded_jpeg_drops_the_orientation_tag_even_without_auto_orient():
  data = _with_orientation(_scene(120, 80, STORED_RECT), 'JPEG', 6)
  box = (80 / 120, 10 / 80, 110 / 120, 30 / 80)
  result = apply_transform(data, ImageTransform(size=(60, 40)), [box])
  out = _decode(result.data)
  assert out.size == (60, 40)  # stored pixels, not turned
  assert out.getexif().get(ORIENTATION) is None
  assert result.boxes == [pytest.approx(box)]


# Resizing.

@pytest.mark.parametrize('width,height,side,expected', [
    (120, 80, 60, (60, 40)), (80, 120, 60, (40, 60)), (30, 20, 90, (90, 60)),
    (1000, 3, 100, (100, 1)),
])
def test_longest_side_keeps_the_aspect(width, height, side, expected):
  data = encode(make_image('RGB', height, width), 'PNG')
  result = apply_transform(data, ImageTransform(longest_side=side), [(0.1, 0.2, 0.6, 0.7)])
  assert _decode(result.data).size == expected
  assert result.boxes == [pytest.approx((0.1, 0.2, 0.6, 0.7))]
  assert result.scale == pytest.approx((expected[0] / width, expected[1] / height))


def test_stretch_gives_the_exact_size_and_keeps_normalised_boxes():
  rect = (30, 20, 60, 60)
  data = encode(_scene(120, 80, rect), 'PNG')
  box = (30 / 120, 20 / 80, 60 / 120, 60 / 80)
  result = apply_transform(data, ImageTransform(size=(30, 60)), [box])
  arr = _pixels(result.data)
  assert arr.shape == (60, 30, 3)
  assert result.scale == pytest.approx((0.25, 0.75))
  assert result.boxes == [pytest.approx(box)]
  inside, outside = _box_masks(result.boxes[0], 60, 30, margin=1.5)
  assert arr[inside].mean(axis=0) == pytest.approx(RED, abs=12)
  assert arr[outside][:, 0].max() < 90


def test_fit_pads_with_pad_colour_and_keeps_the_box_on_its_object():
  rect = (60, 40, 100, 70)
  data = encode(_scene(120, 80, rect), 'PNG')
  box = (60 / 120, 40 / 80, 100 / 120, 70 / 80)
  result = apply_transform(
      data, ImageTransform(size=(60, 60), resize_mode='fit', pad_color=(0, 255, 0)), [box])
  arr = _pixels(result.data)
  assert arr.shape == (60, 60, 3)
  # The 120x80 image becomes 60x40, centred: green bands of 10 rows above and below.
  assert (arr[:10] == (0, 255, 0)).all() and (arr[50:] == (0, 255, 0)).all()
  assert not (arr[10:50] == (0, 255, 0)).all(axis=-1).any()
  assert result.boxes == [pytest.approx((0.5, (10 + 20) / 60, 50 / 60, (10 + 35) / 60))]
  assert result.scale == pytest.approx((0.5, 0.5))
  inside, _ = _box_masks(result.boxes[0], 60, 60, margin=1.5)
  assert arr[inside].mean(axis=0) == pytest.approx(RED, abs=12)
  outside_content = _box_masks(result.boxes[0], 60, 60, margin=1.5)[1]
  outside_content[:10] = outside_content[50:] = False
  assert arr[outside_content].mean(axis=0) == pytest.approx(BACKGROUND, abs=3)


def test_fit_pads_portrait_images_left_and_right_in_grey_jpeg():
  data = encode(_scene(40, 80, (0, 0, 40, 80), colour=(200, 200, 200)).convert('L'), 'JPEG')
  result = apply_transform(
      data, ImageTransform(size=(40, 40), resize_mode='fit', pad_color=(255, 255, 255)),
      [(0.0, 0.0, 1.0, 1.0)])
  arr = _pixels(result.data)
  assert arr.shape == (40, 40)
  assert result.boxes == [pytest.approx((0.25, 0.0, 0.75, 1.0))]
  assert arr[:, :8].min() > 245 and arr[:, 32:].min() > 245
  assert abs(arr[:, 12:28].mean() - 200) < 4


def test_crop_keeps_the_centre_and_drops_or_clips_boxes():
  # 240x120 to 60x60: scaled by 0.5 to 120x60, then the middle 60 columns are kept,
  # which are x in [0.25, 0.75] of the original.
  arr = np.empty((120, 240, 3), np.uint8)
  arr[:] = BACKGROUND
  arr[:, :48] = (0, 0, 250)          # left band, cut away
  arr[40:80, 100:140] = RED          # centre object
  data = encode(Image.fromarray(arr), 'PNG')
  boxes = [(0.0, 0.1, 0.2, 0.9),     # fully in the cut-away band
           (0.1, 0.2, 0.5, 0.8),     # partly inside
           (100 / 240, 40 / 120, 140 / 240, 80 / 120),
           (0.75, 0.0, 1.0, 1.0)]    # touches the kept part only at its edge
  result = apply_transform(data, ImageTransform(size=(60, 60), resize_mode='crop'), boxes)
  out = _pixels(result.data)
  assert out.shape == (60, 60, 3)
  assert result.scale == pytest.approx((0.5, 0.5))
  assert result.boxes[0] is None
  assert result.boxes[1] == pytest.approx((0.0, 0.2, 0.5, 0.8))
  assert result.boxes[2] == pytest.approx(
      ((100 / 240 - 0.25) / 0.5, 1 / 3, (140 / 240 - 0.25) / 0.5, 2 / 3))
  assert result.boxes[3] is None
  assert out[..., 2].max() < 90  # nothing of the blue band survives
  inside, outside = _box_masks(result.boxes[2], 60, 60, margin=1.5)
  assert out[inside].mean(axis=0) == pytest.approx(RED, abs=12)
  assert out[outside][:, 0].max() < 90


def test_crop_of_a_portrait_cuts_top_and_bottom():
  data = encode(make_image('RGB', 100, 50), 'PNG')
  result = apply_transform(data, ImageTransform(size=(50, 50), resize_mode='crop'),
                           [(0.0, 0.0, 1.0, 0.2), (0.0, 0.3, 1.0, 0.5)])
  original = _pixels(data)
  assert np.array_equal(_pixels(result.data), original[25:75])
  assert result.boxes == [None, pytest.approx((0.0, 0.1, 1.0, 0.5))]


def test_large_jpeg_downscale_uses_draft_without_losing_quality():
  sklearn_datasets = pytest.importorskip('sklearn.datasets')
  photo = Image.fromarray(sklearn_datasets.load_sample_image('china.jpg'))
  data = encode(photo, 'JPEG', quality=95)
  result = apply_transform(data, ImageTransform(longest_side=100))
  out = _pixels(result.data)
  assert out.shape == (67, 100, 3)
  reference = np.asarray(_decode(data).resize((100, 67), Image.Resampling.LANCZOS))
  assert np.abs(out - reference).mean() < 4
  _check_tf_agrees(result)


# Colour and encoding.

def test_rgb_turns_palette_and_grey_into_three_channels():
  palette = encode(make_image('P', 12, 16), 'PNG')
  grey = encode(make_image('L', 12, 16), 'JPEG')
  for data, fmt in ((palette, 'PNG'), (grey, 'JPEG')):
    result = apply_transform(data, ImageTransform(color='rgb'))
    out = _decode(result.data)
    assert (out.format, out.mode) == (fmt, 'RGB')
    assert np.array_equal(np.asarray(out)[..., 0], np.asarray(out)[..., 1]) == (fmt == 'JPEG')
    _check_tf_agrees(result)
  assert np.array_equal(_pixels(apply_transform(palette, ImageTransform(color='rgb')).data),
                        np.asarray(_decode(palette).convert('RGB')))


def test_grey_gives_one_channel_luminance():
  arr = np.zeros((16, 16, 3), np.uint8)
  arr[:, :8] = (255, 0, 0)
  arr[:, 8:] = (0, 0, 255)
  result = apply_transform(encode(Image.fromarray(arr), 'PNG'), ImageTransform(color='grey'))
  out = _pixels(result.data)
  assert out.shape == (16, 16)
  assert out[0, 0] == 76 and out[0, 15] == 29  # ITU-R 601-2 luma of red and blue
  _check_tf_agrees(result)


def test_rgb_composites_alpha_on_pad_colour():
  arr = np.zeros((10, 10, 4), np.uint8)
  arr[..., :3] = (200, 10, 10)
  arr[:, :5, 3] = 255
  data = encode(Image.fromarray(arr, 'RGBA'), 'PNG')
  result = apply_transform(data, ImageTransform(color='rgb', pad_color=(0, 0, 255)))
  out = _pixels(result.data)
  assert out.shape == (10, 10, 3)
  assert (out[:, :5] == (200, 10, 10)).all() and (out[:, 5:] == (0, 0, 255)).all()


def test_jpeg_quality_changes_the_size():
  photo = _decode(encode(make_image('RGB', 96, 128, seed=3).resize((256, 192)), 'PNG'))
  data = encode(photo, 'PNG')
  low = apply_transform(data, ImageTransform(encode='jpeg', jpeg_quality=20))
  high = apply_transform(data, ImageTransform(encode='jpeg', jpeg_quality=95))
  assert _decode(low.data).format == _decode(high.data).format == 'JPEG'
  assert len(low.data) < 0.6 * len(high.data)
  original = np.asarray(photo).astype(np.int64)
  assert np.abs(_pixels(high.data) - original).mean() < np.abs(_pixels(low.data) - original).mean()


def test_encode_png_is_lossless_on_the_decoded_jpeg():
  data = encode(make_image('RGB', 20, 30), 'JPEG')
  result = apply_transform(data, ImageTransform(encode='png'))
  out = _decode(result.data)
  assert out.format == 'PNG' and result.changed
  assert np.array_equal(np.asarray(out), np.asarray(_decode(data)))
  assert result.scale == (1.0, 1.0)


@pytest.mark.parametrize('mode,expected_mode', [('RGBA', 'RGB'), ('LA', 'L'), ('P', 'RGB')])
def test_jpeg_output_drops_alpha_onto_pad_colour(mode, expected_mode):
  arr = np.zeros((8, 8, 4), np.uint8)
  arr[..., :3] = 120
  arr[:4, :, 3] = 255
  im = Image.fromarray(arr, 'RGBA')
  if mode == 'LA':
    im = im.convert('LA')
    data = encode(im, 'PNG')
  elif mode == 'P':
    data = encode(im.convert('RGB').convert('P'), 'PNG', transparency=0)
  else:
    data = encode(im, 'PNG')
  result = apply_transform(data, ImageTransform(encode='jpeg', pad_color=(255, 255, 255)))
  out = _decode(result.data)
  assert (out.format, out.mode) == ('JPEG', expected_mode)
  if mode != 'P':
    arr = np.asarray(out).astype(np.int64)
    assert abs(arr[:3].mean() - 120) < 3 and arr[5:].min() > 250
  _check_tf_agrees(result)


def test_animated_gif_keeps_its_first_frame_as_png():
  colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255)]
  frames = [Image.new('RGB', (20, 10), c).convert('P') for c in colours]
  data = encode(frames[0], 'GIF', save_all=True, append_images=frames[1:], duration=50)
  assert probe_image(data).frames == 3
  result = apply_transform(data, ImageTransform(size=(10, 5)))
  info = probe_image(result.data)
  assert (info.format, info.width, info.height, info.channels, info.frames) == ('png', 10, 5, 3, 1)
  assert (_pixels(result.data) == (255, 0, 0)).all()
  _check_tf_agrees(result)


def test_gif_transparency_becomes_pad_colour_like_tensorflow_decodes_it():
  im = Image.new('P', (8, 6), 1)
  im.putpalette([0, 0, 0, 200, 100, 50, 10, 250, 10] + [0] * 759)
  im.paste(2, (0, 0, 4, 6))
  data = encode(im, 'GIF', transparency=2)
  result = apply_transform(data, ImageTransform(encode='png'))
  out = _pixels(result.data)
  assert np.array_equal(out, tf.io.decode_image(data, expand_animations=False).numpy())
  assert (out[:, :4] == 0).all() and (out[:, 4:] == (200, 100, 50)).all()


def test_sixteen_bit_grey_becomes_eight_bit_like_tensorflow():
  data = encode(make_image('I;16', 10, 12), 'PNG')
  result = apply_transform(data, ImageTransform(size=(12, 10), resize_mode='crop',
                                                encode='jpeg', jpeg_quality=100))
  assert result.changed
  png = apply_transform(data, ImageTransform(color='grey'))
  assert np.array_equal(_pixels(png.data)[..., None],
                        tf.io.decode_image(data, expand_animations=False).numpy())
  _check_tf_agrees(result)


SOURCES = [
    ('JPEG', 'RGB', {}), ('JPEG', 'L', {}), ('JPEG', 'CMYK', {}),
    ('PNG', '1', {}), ('PNG', 'L', {}), ('PNG', 'LA', {}), ('PNG', 'RGBA', {}),
    ('PNG', 'P', {}), ('PNG', 'P', {'transparency': 0}), ('PNG', 'I;16', {}),
    ('PNG', 'L', {'transparency': 0}), ('GIF', 'P', {}), ('BMP', 'RGB', {}), ('BMP', 'L', {}),
]
TRANSFORMS = [
    ImageTransform(size=(9, 7), resize_mode='fit'),
    ImageTransform(longest_side=25, color='grey', encode='jpeg'),
    ImageTransform(size=(7, 9), resize_mode='crop', color='rgb', encode='png'),
    ImageTransform(encode='jpeg'),
]


@pytest.mark.parametrize('fmt,mode,kwargs', SOURCES,
                         ids=[f'{f}-{m}{"-trns" if k else ""}' for f, m, k in SOURCES])
def test_every_output_decodes_in_tensorflow_as_probed(fmt, mode, kwargs):
  data = encode(make_image(mode, 13, 21), fmt, **kwargs)
  for transform in TRANSFORMS:
    result = apply_transform(data, transform)
    info = probe_image(result.data, decode=True)
    decoded = tf.io.decode_image(result.data, expand_animations=False)
    assert tuple(decoded.shape) == (info.height, info.width, info.channels)
    if transform.size:
      assert (info.width, info.height) == transform.size
    if transform.color == 'grey':
      assert info.channels == 1
    if transform.color == 'rgb':
      assert info.channels == 3
    expected = transform.encode or ('jpeg' if fmt == 'JPEG' else 'png')
    assert info.format == expected


# Errors.

@pytest.mark.parametrize('kwargs,message', [
    ({'size': (10, 10), 'longest_side': 10}, 'not both'),
    ({'size': (0, 10)}, 'size'),
    ({'size': (10,)}, 'size'),
    ({'size': (10.0, 10)}, 'size'),
    ({'longest_side': 0}, 'longest_side'),
    ({'longest_side': -5}, 'longest_side'),
    ({'size': (10, 10), 'resize_mode': 'pad'}, 'resize_mode'),
    ({'resize_mode': 'fit'}, 'needs size'),
    ({'color': 'gray'}, 'color'),
    ({'encode': 'webp'}, 'encode'),
    ({'jpeg_quality': 0}, 'jpeg_quality'),
    ({'jpeg_quality': 101}, 'jpeg_quality'),
    ({'pad_color': (0, 0, 256)}, 'pad_color'),
    ({'pad_color': (0, 0)}, 'pad_color'),
])
def test_invalid_settings_are_refused(kwargs, message):
  with pytest.raises(ValueError, match=message):
    ImageTransform(**kwargs)


def test_settings_normalise_to_tuples():
  transform = ImageTransform(size=[4, 3], pad_color=[1, 2, 3])
  assert transform.size == (4, 3) and transform.pad_color == (1, 2, 3)
  assert not transform.is_identity
  assert ImageTransform(jpeg_quality=10, pad_color=(9, 9, 9)).is_identity


def test_malformed_boxes_are_refused():
  data = encode(make_image('RGB', 8, 8), 'PNG')
  for transform in (ImageTransform(), ImageTransform(size=(4, 4))):
    with pytest.raises(ValueError, match='4 numbers'):
      apply_transform(data, transform, [(0.1, 0.2, 0.3)])


@pytest.mark.parametrize('data', [
    b'not an image at all',
    encode(make_image('RGB', 64, 64), 'JPEG')[:300],
    encode(make_image('RGB', 64, 64), 'PNG')[:200],
], ids=['garbage', 'truncated-jpeg', 'truncated-png'])
def test_undecodable_bytes_raise_transform_failed(data):
  with pytest.raises(RowError) as e:
    apply_transform(data, ImageTransform(size=(8, 8)))
  assert e.value.reason == 'transform_failed'


# The record's file name follows a re-encode.

@pytest.mark.parametrize('name, image_format, want', [
    ('a.png', 'jpeg', 'a.jpg'), ('a.PNG', 'jpeg', 'a.jpg'), ('b.jpg', 'png', 'b.png'),
    ('c.gif', 'png', 'c.png'), ('d.webp', 'png', 'd.png'), ('e.tiff', 'png', 'e.png'),
    ('f.JPEG', 'jpeg', 'f.JPEG'), ('g.jpeg', 'jpeg', 'g.jpeg'), ('h.png', 'png', 'h.png'),
    ('scan.001', 'png', 'scan.001'), ('photo', 'jpeg', 'photo'),
    ('archive.tar.gif', 'jpeg', 'archive.tar.jpg'), ('.png', 'jpeg', '.png'),
    ('i.bmp', 'bmp', 'i.bmp')])
def test_stored_filename_names_the_stored_format(name, image_format, want):
  assert stored_filename(name, image_format) == want


def test_a_reencoded_image_is_named_by_its_stored_format_in_the_record(tmp_path):
  """`image/filename` ends with the stored format's extension once the image is
  re-encoded (`encode`, a resize of a GIF, `convert_unsupported`'s PNG); an image stored
  as its file's bytes keeps its name, and `image/source_id` is always the URI."""
  import tfrecorder_component as trc  # pylint: disable=g-import-not-at-top
  from images import write_image, write_text  # pylint: disable=g-import-not-at-top
  from records import feature, read_split  # pylint: disable=g-import-not-at-top
  names = {'a.png': 'PNG', 'b.jpg': 'JPEG', 'c.gif': 'GIF', 'd.webp': 'WEBP', 'e.JPEG': 'JPEG'}
  for i, (name, fmt) in enumerate(names.items()):
    write_image(str(tmp_path / name), fmt, 'RGB', 10, 12, seed=i)
  manifest = write_text(str(tmp_path / 'm.csv'), ''.join(f'TRAIN,{n},x\n' for n in names))
  runs = {
      'encode': (dict(image_transform={'encode': 'jpeg'}, convert_unsupported=True),
                 {'a.png': ('a.jpg', b'jpeg'), 'b.jpg': ('b.jpg', b'jpeg'),
                  'c.gif': ('c.jpg', b'jpeg'), 'd.webp': ('d.jpg', b'jpeg'),
                  'e.JPEG': ('e.JPEG', b'jpeg')}),
      'convert': (dict(convert_unsupported=True),
                  {'a.png': ('a.png', b'png'), 'b.jpg': ('b.jpg', b'jpeg'),
                   'c.gif': ('c.gif', b'gif'), 'd.webp': ('d.png', b'png'),
                   'e.JPEG': ('e.JPEG', b'jpeg')}),
      'resize': (dict(image_transform={'longest_side': 6}, convert_unsupported=True),
                 {'a.png': ('a.png', b'png'), 'b.jpg': ('b.jpg', b'jpeg'),
                  'c.gif': ('c.png', b'png'), 'd.webp': ('d.png', b'png'),
                  'e.JPEG': ('e.JPEG', b'jpeg')}),
  }
  for run, (options, want) in runs.items():
    out = str(tmp_path / run)
    trc.convert(manifest, out, **options)
    got = {feature(e, 'image/source_id')[0].decode(): (
        feature(e, 'image/filename')[0].decode(), feature(e, 'image/format')[0])
           for e in read_split(os.path.join(out, 'Split-train'))}
    assert got == want, run
