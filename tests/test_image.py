"""probe_image agrees with tf.io.decode_image on real encoded bytes, from the header alone."""
import pytest
import tensorflow as tf

from images import encode, make_image
from tfrecorder_component.errors import RowError
from tfrecorder_component.images.probe import probe_image

CASES = [
    ('JPEG', 'L', {}), ('JPEG', 'RGB', {}), ('JPEG', 'CMYK', {}),
    ('PNG', '1', {}), ('PNG', 'L', {}), ('PNG', 'LA', {}), ('PNG', 'RGB', {}),
    ('PNG', 'RGBA', {}), ('PNG', 'P', {}), ('PNG', 'P', {'transparency': 0}),
    ('PNG', 'L', {'transparency': 0}), ('PNG', 'I;16', {}),
    ('GIF', 'P', {}), ('GIF', 'L', {}),
    ('BMP', 'RGB', {}), ('BMP', 'L', {}), ('BMP', 'RGBA', {}),
]


@pytest.mark.parametrize('fmt,mode,kwargs', CASES,
                         ids=[f'{f}-{m}{"-trns" if k else ""}' for f, m, k in CASES])
def test_probe_matches_tensorflow_decode(fmt, mode, kwargs):
  data = encode(make_image(mode, height=13, width=21), fmt, **kwargs)
  info = probe_image(data)
  decoded = tf.io.decode_image(data, expand_animations=False)
  assert (info.height, info.width, info.channels) == tuple(decoded.shape)
  assert info.format == fmt.lower()


def test_animated_gif_counts_frames_and_tensorflow_returns_them_all():
  frames = [make_image('RGB', 10, 14, seed=s).convert('P') for s in range(3)]
  data = encode(frames[0], 'GIF', save_all=True, append_images=frames[1:], duration=50)
  info = probe_image(data)
  assert (info.format, info.height, info.width, info.channels, info.frames) == ('gif', 10, 14, 3, 3)
  assert tuple(tf.io.decode_image(data).shape) == (3, 10, 14, 3)


def test_probe_reads_only_the_header():
  # A PNG cut after its header chunks still probes: no full decode happens.
  data = encode(make_image('RGB', 300, 400), 'PNG')
  info = probe_image(data[:200])
  assert (info.height, info.width, info.channels) == (300, 400, 3)


@pytest.mark.parametrize('data,reason', [
    (b'', 'empty'),
    (b'hello, I am a text file', 'not_an_image'),
    (encode(make_image('RGB'), 'WEBP'), 'unsupported_format'),
    (encode(make_image('RGB'), 'TIFF'), 'unsupported_format'),
    (encode(make_image('1'), 'BMP'), 'unsupported_format'),
    # TensorFlow's BMP decoder needs the exact size its header implies.
    (encode(make_image('RGB'), 'BMP') + b'\0', 'unsupported_format'),
    (encode(make_image('RGB'), 'BMP')[:-1], 'truncated'),
])
def test_probe_refuses_what_tensorflow_cannot_decode(data, reason):
  with pytest.raises(RowError) as e:
    probe_image(data)
  assert e.value.reason == reason


def test_pixel_limit_refuses_before_decoding():
  data = encode(make_image('L', 100, 100), 'PNG')
  with pytest.raises(RowError) as e:
    probe_image(data, max_pixels=9_999)
  assert e.value.reason == 'too_large' and '100x100' in e.value.message
  assert probe_image(data, max_pixels=10_000).height == 100


def test_gif_cut_inside_its_image_is_refused_as_tensorflow_refuses_it():
  """Pillow decodes a GIF whose image data lacks its block terminator; TensorFlow's
  giflib does not (found by the property-based test). Without only the trailer, both
  decode it."""
  data = encode(make_image('P', 6, 8, seed=3), 'GIF')
  assert data.endswith(b'\x00;')
  assert tf.io.decode_image(data[:-1]).shape == (1, 6, 8, 3)
  assert probe_image(data[:-1], decode=True).frames == 1
  with pytest.raises(tf.errors.InvalidArgumentError):
    tf.io.decode_image(data[:-2])
  with pytest.raises(RowError) as e:
    probe_image(data[:-2], decode=True)
  assert e.value.reason == 'truncated'


@pytest.mark.parametrize('cut', ['no IEND', 'IDAT without its CRC', 'IDAT with a bad CRC',
                                 'cut inside IDAT'])
def test_png_broken_after_its_pixels_is_refused_as_tensorflow_refuses_it(cut):
  # Pillow stops reading once the pixels are in; libpng (TensorFlow's decoder) does not:
  # found by the property test.
  png = encode(make_image('P', 9, 7), 'PNG')
  end, idat = png.index(b'IEND'), png.index(b'IDAT')
  n = int.from_bytes(png[idat - 4:idat], 'big')
  data = {'no IEND': png[:end - 4],
          'IDAT without its CRC': png[:idat + 4 + n],
          'IDAT with a bad CRC': png[:idat + 4 + n] + b'\0\0\0\0' + png[idat + 8 + n:],
          'cut inside IDAT': png[:idat + n]}[cut]
  with pytest.raises(tf.errors.InvalidArgumentError):
    tf.io.decode_image(data)
  with pytest.raises(RowError) as e:
    probe_image(data, decode=True)
  assert e.value.reason in ('truncated', 'corrupt')
  assert probe_image(png, decode=True).format == 'png'  # the whole file passes


@pytest.mark.parametrize('mode', ['1', 'L', 'LA', 'RGB', 'RGBA', 'CMYK', 'I;16'])
@pytest.mark.parametrize('compression', [None, 'tiff_lzw'])
def test_tiff_samples_per_pixel_reads_what_pillow_wrote(mode, compression):
  """The TIFF header reading that names a multispectral TIFF agrees with Pillow, the
  writer here, on every mode it writes (SamplesPerPixel absent for bilevel and grey:
  its default, 1)."""
  from tfrecorder_component.images.probe import tiff_samples_per_pixel  # pylint: disable=g-import-not-at-top
  im = make_image(mode, 12, 16)
  data = encode(im, 'TIFF', **({'compression': compression} if compression else {}))
  assert tiff_samples_per_pixel(data) == len(im.getbands())
  assert tiff_samples_per_pixel(encode(im.convert('RGB'), 'PNG')) is None


def test_a_multispectral_tiff_fails_as_unsupported_format_naming_its_bands():
  import numpy as np  # pylint: disable=g-import-not-at-top
  from dataset_replicas import multispectral_tiff  # pylint: disable=g-import-not-at-top
  data = multispectral_tiff(np.zeros((8, 8, 13), dtype=np.uint16))
  with pytest.raises(RowError) as raised:
    probe_image(data)
  assert raised.value.reason == 'unsupported_format'
  assert 'a TIFF of 13 bands per pixel (a multispectral image)' in raised.value.message


def test_an_8_bit_bmp_is_written_only_where_tensorflow_decodes_its_pixels():
  """TensorFlow's BMP decoder reads no palette: a greyscale BMP (the grey ramp) decodes
  to its pixels and is accepted; a palette BMP of other colours decodes to its indices,
  not its colours, and fails as unsupported_format."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  grey = make_image('L', 12, 16)
  data = encode(grey, 'BMP')
  assert probe_image(data).channels == 1
  assert np.array_equal(tf.io.decode_image(data).numpy()[..., 0], np.asarray(grey))
  palette = make_image('RGB', 12, 16).quantize(8)
  data = encode(palette, 'BMP')
  decoded = tf.io.decode_image(data).numpy()
  assert decoded.shape[-1] == 1  # indices, where the image has colours
  assert not np.array_equal(np.repeat(decoded, 3, axis=-1), np.asarray(palette.convert('RGB')))
  with pytest.raises(RowError) as raised:
    probe_image(data)
  assert raised.value.reason == 'unsupported_format'
  assert 'palette is not grey' in raised.value.message
