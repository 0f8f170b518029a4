"""Property-based tests: on any input, the parser and the prober return a result or the
project's own RowError, never anything else; whatever passes the checks decodes in
TensorFlow to exactly what was claimed."""
import json

import tensorflow as tf
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from damaged_images import JPEG_716
from images import encode, make_image
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.images.probe import ImageInfo, probe_image
from tfrecorder_component.manifest import ManifestRow, parse_manifest_text, read_manifest_file

# Derandomized: the same examples on every run, so a test passes or fails for what the
# code does, not for the seed CI happened to draw.
SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

CSV_PIECES = st.sampled_from(['TRAIN', 'test', 'Validation', 'UNASSIGNED', 'TRIAN', '', ',', '"',
                              '""', '\n', '\r\n', ' ', 'a.jpg', 'gs://b/c.png', '/abs/x.bmp',
                              'cat', 'dög', 'split', 'image_uri', 'label', '\x00', '\ufeff',
                              '../up.gif', 'a,b', '\t'])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(['imageGcsUri', 'classificationAnnotation', 'classificationAnnotations',
                         'displayName', 'dataItemResourceLabels',
                         'aiplatform.googleapis.com/ml_use', 'x']), children, max_size=4),
    max_leaves=10)


def check_items(read, text=None):
  """`read()`'s items are rows or RowErrors, each naming its own line of the file (a
  bad row never swallows the rows after it into one); or the whole file is
  refused for columns out of AutoML's order (a label first, or columns read in another
  order), with the project's ManifestError saying so."""
  try:
    items = list(read())
  except ManifestError as e:
    assert ('the file has no header, so its columns are read' in str(e) or
            'the file has no header, and its first column holds labels' in str(e)), str(e)
    return
  rows = [item.row for item in items]
  assert len(set(rows)) == len(rows), rows  # each line is one item at most
  if text is not None:
    lines = len(text.splitlines()) or 1
    assert all(1 <= r <= lines for r in rows), (rows, lines)
    if '"' not in text:  # no quoted field over lines: one item a non-blank line at least
      blank = sum(not line.strip() for line in text.split('\n'))
      assert len(items) >= len(text.split('\n')) - blank - 1  # the header
  for item in items:
    assert isinstance(item, (ManifestRow, RowError)), type(item)
    if isinstance(item, ManifestRow):
      assert item.image_uri.strip() == item.image_uri and item.image_uri
      assert item.split in ('train', 'eval', 'test', None)
      assert item.row >= 1 and all(l == l.strip() and l for l in item.labels)
    else:
      assert item.reason and item.message and item.row >= 1


@SETTINGS
@given(st.lists(CSV_PIECES | st.text(max_size=5), max_size=40).map(''.join))
def test_csv_parser_returns_rows_or_row_errors(text):
  check_items(lambda: parse_manifest_text('/m/manifest.csv', text, 'automl_csv'), text)


@SETTINGS
@given(st.lists(JSON_VALUES.map(json.dumps) | st.text(max_size=10), max_size=8).map('\n'.join))
def test_jsonl_parser_returns_rows_or_row_errors(text):
  check_items(lambda: parse_manifest_text('/m/manifest.jsonl', text, 'vertex_jsonl'))


@SETTINGS
@given(st.binary(max_size=300))
def test_any_manifest_bytes_are_read_without_crashing(tmp_path, data):
  path = tmp_path / 'm.csv'
  path.write_bytes(data)
  check_items(lambda: read_manifest_file(str(path)))


SEEDS = {
    'jpeg': encode(make_image('RGB', 12, 10), 'JPEG'),
    'png': encode(make_image('P', 9, 7), 'PNG'),
    'gif': encode(make_image('P', 6, 8), 'GIF'),
    'bmp': encode(make_image('RGB', 5, 6), 'BMP'),
}


@st.composite
def damaged_images(draw):
  data = bytearray(SEEDS[draw(st.sampled_from(sorted(SEEDS)))])
  for _ in range(draw(st.integers(0, 4))):
    data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
  cut = draw(st.integers(1, len(data)))
  return bytes(data[:cut])


@SETTINGS
@given(st.binary(max_size=200) | damaged_images())
@example(JPEG_716)  # passed the earlier check, which was Pillow's decode alone
def test_prober_returns_info_or_row_error_and_passing_images_decode(data):
  try:
    info = probe_image(data, max_pixels=10**6, decode=True)
  except RowError as e:
    assert e.reason in ('empty', 'not_an_image', 'unsupported_format', 'too_large',
                        'truncated', 'corrupt')
    return
  assert isinstance(info, ImageInfo)
  decoded = tf.io.decode_image(data, expand_animations=False)
  assert (info.height, info.width, info.channels) == tuple(decoded.shape)
