"""Labelbox's NDJSON export (Export v2, "Image" data rows): rows written as Labelbox
documents them (https://docs.labelbox.com/reference/export-quick-reference,
https://docs.labelbox.com/reference/export-image-annotations), converted end to end
(the CLI with the format detected, and convert()) and read back; each rule of the
parser on its own; detection by extension and by sniffing."""
import glob
import json
import logging
import os
import zlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

from images import write_image, write_text
from records import feature, read_split
from manifest_items import JSON_SCALARS, SETTINGS, check_items
from tfrecorder_component import convert
from tfrecorder_component.adapters.cli import main
from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest import ManifestRow
from tfrecorder_component.manifest.reader import parse_manifest_text, read_manifest_file
from tfrecorder_component.manifest.registry import detect_format
from tfrecorder_component.record.labels import read_label_map

PROJECT = 'cltd3vkju021907u63w2odj69'


# --- Rows as Labelbox writes them ----------------------------------------------------

def bbox(name, top, left, height, width, feature_id='clrf5csvi6ofm07lsf9pygwvi', **extra):
  """An ImageBoundingBox object, as the export-image-annotations page shows it."""
  return {'feature_id': feature_id, 'feature_schema_id': 'clrf5ck4a0b9b071paa9ncu15',
          'name': name, 'value': name.replace(' ', '_'), 'annotation_kind': 'ImageBoundingBox',
          'classifications': [],
          'bounding_box': {'top': top, 'left': left, 'height': height, 'width': width},
          **extra}


def polygon(name, points):
  return {'feature_id': 'clr0x0ol83tvt07ea4has2a4l', 'feature_schema_id': 'clpk2me9t02v707xn',
          'name': name, 'value': name, 'annotation_kind': 'ImagePolygon', 'classifications': [],
          'polygon': [{'x': x, 'y': y} for x, y in points]}


def point(name, x, y):
  return {'feature_id': 'clr0x0ol83tvr07ea', 'feature_schema_id': 'clpk2me9u02vh07xn',
          'name': name, 'value': name, 'annotation_kind': 'ImagePoint', 'classifications': [],
          'point': {'x': x, 'y': y}}


def label(objects, classifications=(), label_id='clur5tlda1n2a07dc0i0zdd4k', **extra):
  return {'label_kind': 'Default', 'version': '1.0.0', 'id': label_id,
          'label_details': {'created_at': '2024-04-08T16:21:26.000+00:00',
                            'updated_at': '2024-04-08T16:34:02.000+00:00',
                            'created_by': 'user@labelbox.com', 'reviews': []},
          'annotations': {'objects': list(objects), 'classifications': list(classifications),
                          'relationships': []}, **extra}


def data_row(row_data, labels, external_id=None, size=None, projects=None, **data):
  """One line of the export: a data row, its media attributes (width, height) and one
  project holding `labels`."""
  external_id = external_id or os.path.basename(row_data)
  row = {'data_row': {'id': f'clf9spzxq029m071{zlib.crc32(row_data.encode()):010d}',
                      'global_key': external_id, 'row_data': row_data,
                      'external_id': external_id, **data,
                      'details': {'dataset_id': 'clf9spwgw04w207ymfwy826qv',
                                  'dataset_name': 'demo_dataset_img'}},
         'attachments': [], 'metadata_fields': []}
  if size:
    row['media_attributes'] = {'height': size[1], 'width': size[0], 'mime_type': 'image/jpeg'}
  row['projects'] = projects if projects is not None else {
      PROJECT: {'name': 'Image Annotation Import Demo', 'labels': labels}}
  return row


def ndjson(rows):
  return ''.join((r if isinstance(r, str) else json.dumps(r)) + '\n' for r in rows)


def parse(text, path='/data/export.ndjson', **kwargs):
  return list(parse_manifest_text(path, text, **kwargs))


def the_error(items):
  errors = [i for i in items if isinstance(i, RowError)]
  assert len(errors) == 1, items
  return errors[0]


# --- End to end ----------------------------------------------------------------------

SIZES = {'a.jpg': (64, 48), 'b.png': (50, 40), 'empty.jpg': (32, 24), 'shapes.jpg': (40, 30),
         'remote.jpg': (60, 36)}  # width, height


def write_export(folder):
  """The images (JPEG and PNG) and an export of six lines: boxes of three classes on
  a.jpg, one labelled by `value` alone; a box on b.png that its declared (wrong) size
  places partly outside the stored image; an image labelled with no objects; one
  labelled with a polygon and a point only; an https:// row whose image was downloaded
  as its external_id; a line that is not JSON."""
  for seed, (name, (width, height)) in enumerate(SIZES.items()):
    write_image(str(folder / name), 'PNG' if name.endswith('.png') else 'JPEG', width=width,
                height=height, seed=seed)
  unnamed = bbox('dog', 30.0, 40.0, 12.0, 20.0, feature_id='f3')
  del unnamed['name']  # its class is its `value`
  rows = [
      data_row('a.jpg', [label([bbox('cat', 10.0, 20.0, 16.0, 30.0),
                                bbox('traffic light', 0, 0, 48, 8, feature_id='f2'),
                                unnamed])], size=(64, 48)),
      data_row('b.png', [label([bbox('dog', 20.5, 25.25, 30, 40)])], size=(100, 80)),
      data_row('empty.jpg', [label([])], size=(32, 24)),
      data_row('shapes.jpg', [label([polygon('cat', [(1, 2), (30, 4), (20, 25)]),
                                     point('nose', 3, 4)],
                                    classifications=[{'name': 'weather', 'value': 'sunny'}])],
               size=(40, 30)),
      data_row('https://storage.labelbox.com/cl0123/abc-remote.jpg?Expires=1',
               [label([bbox('cat', 6, 12, 18, 24)])], external_id='remote.jpg', size=(60, 36)),
      '{"data_row": {"row_data": "a.jpg"}, "projects": ',  # cut short: not JSON
  ]
  return write_text(str(folder / 'export.ndjson'), ndjson(rows))


REMOTE = 'https://storage.labelbox.com/cl0123/abc-remote.jpg?Expires=1'
# source id: (image, [(class, left, top, right, bottom) in pixels])
EXPECTED = {
    'a.jpg': ('a.jpg', [('cat', 20, 10, 50, 26), ('traffic light', 0, 0, 8, 48),
                        ('dog', 40, 30, 60, 42)]),
    'b.png': ('b.png', [('dog', 25.25, 20.5, 50, 40)]),  # clipped at the stored 50 x 40
    'empty.jpg': ('empty.jpg', []),
    'shapes.jpg': ('shapes.jpg', []),
    'remote.jpg': ('remote.jpg', [('cat', 12, 6, 36, 24)]),  # read from image_root
}


def records(out):
  """{source id: example} over every split folder that holds records."""
  found = {}
  for split_dir in sorted(glob.glob(os.path.join(out, 'Split-*'))):
    if glob.glob(os.path.join(split_dir, 'data_tfrecord-*.gz')):
      for example in read_split(split_dir):
        found[feature(example, 'image/source_id')[0].decode()] = example
  return found


def errors(out):
  path = os.path.join(out, 'report', 'errors.jsonl')
  with open(path, encoding='utf-8') as f:
    return [json.loads(line) for line in f if line.strip()]


def assert_records(got, expected, ids):
  """Each record's boxes exactly as the box's pixels over the stored image's size
  (float32, as the record holds them), its class texts and label ids."""
  assert sorted(got) == sorted(expected)
  for source_id, (image, objects) in expected.items():
    example = got[source_id]
    width, height = SIZES[image]
    assert (feature(example, 'image/width'), feature(example, 'image/height')) == (
        [width], [height]), source_id
    assert [t.decode() for t in feature(example, 'image/object/class/text')] == [
        o[0] for o in objects], source_id
    assert feature(example, 'image/object/class/label') == [ids[o[0]] for o in objects]
    for index, key in enumerate(('xmin', 'ymin', 'xmax', 'ymax')):
      scale = width if key.startswith('x') else height
      want = np.array([o[1 + index] / scale for o in objects], dtype=np.float32)
      np.testing.assert_array_equal(
          np.array(feature(example, f'image/object/bbox/{key}'), dtype=np.float32), want,
          err_msg=f'{source_id} {key}')


def test_an_export_through_the_cli_and_convert(tmp_path):
  export = write_export(tmp_path / 'ds')
  out = str(tmp_path / 'out')
  # Without --image-root the https row and the cut line fail, alone.
  assert main(['convert', export, out, '--splits', 'train=1']) == 1
  result = convert(export, str(tmp_path / 'out1'), splits={'train': 1}, max_error_ratio=0.5)
  assert result.rows_failed == 2 and result.records_written == 4
  failed = sorted((e['row'], e['uri'], e['reason']) for e in errors(result.output_dir))
  assert failed == [(5, REMOTE, 'remote_url'), (6, None, 'bad_row')]
  remote = next(e for e in errors(result.output_dir) if e['row'] == 5)
  assert '--image-root' in remote['message'] and '<image_root>/remote.jpg' in remote['message']
  got = records(str(tmp_path / 'out1'))
  ids = read_label_map(str(tmp_path / 'out1'))
  assert ids == {'cat': 1, 'dog': 2, 'traffic light': 3}
  assert_records(got, {k: v for k, v in EXPECTED.items() if k != 'remote.jpg'}, ids)

  # With it, the https row's image is <image_root>/<external_id>, which is also its
  # source id (a signed URL changes with each export: the hash split would too).
  out2 = str(tmp_path / 'out2')
  assert main(['convert', export, out2, '--splits', 'train=1', '--image-root',
               str(tmp_path / 'ds'), '--max-error-ratio', '0.2']) == 0
  [cut] = errors(out2)
  assert (cut['row'], cut['reason']) == (6, 'bad_row') and 'invalid JSON' in cut['message']
  assert_records(records(out2), EXPECTED, read_label_map(out2))
  with open(os.path.join(out2, 'report', 'box_issues.jsonl'), encoding='utf-8') as f:
    issues = [(i['uri'], i['action'], i['reason'], i['label']) for i in map(json.loads, f)]
  assert issues == [('b.png', 'clipped', 'clipped', 'dog')]


def test_a_jsonl_export_is_detected_and_the_folder_converts(tmp_path):
  """The same export named .jsonl (not Vertex AI JSONL), and its folder as the source."""
  export = write_export(tmp_path / 'ds')
  renamed = str(tmp_path / 'ds' / 'export.jsonl')
  os.rename(export, renamed)
  result = convert(renamed, str(tmp_path / 'out'), splits={'train': 1}, image_root=str(
      tmp_path / 'ds'), max_error_ratio=0.2)
  assert (result.records_written, result.rows_failed) == (5, 1)
  assert_records(records(str(tmp_path / 'out')), EXPECTED, read_label_map(str(tmp_path / 'out')))
  os.rename(renamed, export)
  result = convert(str(tmp_path / 'ds'), str(tmp_path / 'folder'), splits={'train': 1},
                   max_error_ratio=0.5)
  assert (result.records_written, result.rows_failed) == (4, 2)
  assert sorted(records(str(tmp_path / 'folder'))) == sorted(set(EXPECTED) - {'remote.jpg'})


# --- The parser, rule by rule --------------------------------------------------------

def boxes(row):
  return [(o.label, o.xmin, o.ymin, o.xmax, o.ymax, o.normalized) for o in row.objects]


def test_boxes_are_pixels_left_top_width_height_labelled_by_name_else_value():
  unnamed = bbox('traffic light', 1, 2, 3, 4)
  unnamed['name'] = ' '
  [row] = parse(ndjson([data_row('img.jpg', [label([
      bbox('cat', 10.0, 20.0, 100.0, 50.0), unnamed,
      bbox('dog', '5', '6', '7', '8')])], size=(640, 480))]))
  assert isinstance(row, ManifestRow) and row.task.value == 'detection'
  assert boxes(row) == [('cat', 20, 10, 70, 110, False), ('traffic_light', 2, 1, 6, 4, False),
                        ('dog', 6, 5, 14, 12, False)]
  assert row.labels == ('cat', 'traffic_light', 'dog')
  assert (row.image_uri, row.resolved_uri, row.row, row.split) == (
      'img.jpg', '/data/img.jpg', 1, None)
  assert row.declared_classes == () and row.image_id is None and row.features == ()


def test_other_kinds_are_counted_and_logged_once_a_file(caplog):
  rows = [data_row('a.jpg', [label([polygon('cat', [(1, 2), (3, 4), (5, 1)]),
                                    bbox('dog', 1, 1, 2, 2), point('nose', 1, 1)])]),
          data_row('b.jpg', [label([polygon('cat', [(1, 2), (3, 4), (5, 1)])],
                                   classifications=[{'name': 'weather'}])])]
  with caplog.at_level(logging.INFO, logger='tfrecorder_component.manifest.labelbox'):
    a, b = parse(ndjson(rows))
  assert [o.label for o in a.objects] == ['dog']
  assert b.objects == () and b.labels == ()  # only a polygon: an image without objects
  logged = [r.getMessage() for r in caplog.records if r.name.endswith('labelbox')]
  assert logged == ['/data/export.ndjson: Labelbox annotations not read (only '
                    'ImageBoundingBox objects become boxes): 1 ImagePoint, 2 ImagePolygon, '
                    '1 classifications']


def test_image_paths_and_urls():
  rows = [data_row(uri, [label([])]) for uri in (
      'images/a.jpg', '/abs/b.jpg', 'gs://bucket/c.jpg', 's3://bucket/d.jpg',
      'file:///local/e.jpg', 'https://storage.labelbox.com/f.jpg', 'http://host/g.jpg')]
  rows.append(data_row('https://host/h.jpg', [label([])]))
  del rows[-1]['data_row']['external_id']  # its global_key names it
  rows.append(data_row('https://host/i.jpg', [label([])]))
  del rows[-1]['data_row']['external_id'], rows[-1]['data_row']['global_key']
  text = ndjson(rows)
  resolved = [i.resolved_uri if isinstance(i, ManifestRow) else i.reason for i in parse(text)]
  assert resolved == ['/data/images/a.jpg', '/abs/b.jpg', 'gs://bucket/c.jpg',
                      's3://bucket/d.jpg', '/local/e.jpg'] + ['remote_url'] * 4
  rooted = parse(text, image_root='gs://bucket/downloads')
  assert [i.resolved_uri if isinstance(i, ManifestRow) else i.reason for i in rooted] == [
      'gs://bucket/downloads/images/a.jpg', '/abs/b.jpg', 'gs://bucket/c.jpg',
      's3://bucket/d.jpg', '/local/e.jpg', 'gs://bucket/downloads/f.jpg',
      'gs://bucket/downloads/g.jpg', 'gs://bucket/downloads/h.jpg', 'remote_url']
  # a URL row is named by the file it is read as; the others as written
  assert [i.image_uri for i in rooted[:8]] == [
      'images/a.jpg', '/abs/b.jpg', 'gs://bucket/c.jpg', 's3://bucket/d.jpg',
      'file:///local/e.jpg', 'f.jpg', 'g.jpg', 'h.jpg']
  assert [i.uri for i in parse(text)[5:]] == [
      'https://storage.labelbox.com/f.jpg', 'http://host/g.jpg', 'https://host/h.jpg',
      'https://host/i.jpg']
  error = rooted[-1]
  assert (error.row, error.uri) == (9, 'https://host/i.jpg')
  assert 'neither "external_id" nor "global_key"' in error.message


def test_which_label_is_read():
  skipped = label([], label_id='s', performance_details={'skipped': True})
  kept = label([bbox('cat', 1, 1, 2, 2)], label_id='k', performance_details={'skipped': False})
  [row] = parse(ndjson([data_row('a.jpg', [skipped, kept])]))
  assert [o.label for o in row.objects] == ['cat']
  # A Catalog export: a project without labels beside the one that has it.
  [row] = parse(ndjson([data_row('a.jpg', [], projects={
      'p1': {'name': 'other', 'labels': []}, 'p2': {'name': 'boxes', 'labels': [kept]}})]))
  assert [o.label for o in row.objects] == ['cat']
  consensus = the_error(parse(ndjson([data_row('a.jpg', [kept, label([], label_id='l2')])])))
  assert consensus.reason == 'several_labels' and '2 labels' in consensus.message
  assert 'consensus' in consensus.message and consensus.uri == 'a.jpg'
  two = the_error(parse(ndjson([data_row('a.jpg', [], projects={
      'p1': {'name': 'first', 'labels': [kept]}, 'p2': {'name': 'second', 'labels': [kept]}})])))
  assert two.reason == 'several_labels'
  assert "project 'first' (p1)" in two.message and "project 'second' (p2)" in two.message
  for projects in ({}, {'p1': {'name': 'x', 'labels': []}}, {'p1': {'labels': [skipped]}}):
    error = the_error(parse(ndjson([data_row('a.jpg', [], projects=projects)])))
    assert error.reason == 'not_annotated', projects
  unlabelled = data_row('a.jpg', [])
  del unlabelled['projects']
  assert the_error(parse(ndjson([unlabelled]))).reason == 'not_annotated'


def test_declared_size_is_checked_not_used():
  [row] = parse(ndjson([data_row('a.jpg', [label([bbox('cat', 10, 20, 30, 40)])],
                                 size=(10, 10))]))
  assert boxes(row) == [('cat', 20, 10, 60, 40, False)]  # pixels, whatever the size said
  for size in ({'width': 0, 'height': 5}, {'width': '640', 'height': 480},
               {'width': 640, 'height': -1}, 'big'):
    row = data_row('a.jpg', [label([])])
    row['media_attributes'] = size
    error = the_error(parse(ndjson([row])))
    assert error.reason == 'bad_row' and 'media_attributes' in error.message, size


def _no(key):
  def edit(row):
    del row['data_row'][key]
  return edit


def _box(**values):
  def edit(row):
    row['projects'][PROJECT]['labels'][0]['annotations']['objects'][0][
        'bounding_box'].update(values)
  return edit


def _object(**values):
  def edit(row):
    obj = row['projects'][PROJECT]['labels'][0]['annotations']['objects'][0]
    obj.update(values)
    for key in [k for k, v in values.items() if v is None]:
      del obj[key]
  return edit


@pytest.mark.parametrize('edit, words', [
    (_no('row_data'), '"data_row" needs "row_data"'),
    (lambda row: row.pop('data_row'), 'no "data_row" object'),
    (_box(width=-5), 'cannot be negative; got width=-5'),
    (_box(height=-0.5), 'cannot be negative; got height=-0.5'),
    (_box(top='x'), 'top="x"'),
    (_box(left=None), 'left=null'),
    (_object(bounding_box=None), 'needs "bounding_box"'),
    (_object(name=None, value=None), 'needs "name" (or "value")'),
    (_object(annotation_kind=None), 'needs "annotation_kind"'),
    (lambda row: row['projects'][PROJECT]['labels'][0].pop('annotations'),
     'the label needs "annotations"'),
    (lambda row: row['projects'][PROJECT]['labels'][0]['annotations'].update(objects={}),
     '"annotations.objects" must be a list'),
    (lambda row: row.update(projects=[]), '"projects" must be an object'),
])
def test_a_bad_row_fails_alone_naming_row_uri_and_reason(edit, words):
  bad = data_row('bad.jpg', [label([bbox('cat', 1, 2, 3, 4)])])
  edit(bad)
  items = parse(ndjson([data_row('a.jpg', [label([bbox('cat', 1, 2, 3, 4)])]), bad,
                        data_row('c.jpg', [label([])])]))
  error = the_error(items)
  assert [i.row for i in items] == [1, 2, 3]
  assert error.row == 2 and error.reason == 'bad_row' and words in error.message, error
  assert error.uri == (None if 'data_row' in words else 'bad.jpg')
  assert all(isinstance(i, ManifestRow) for i in (items[0], items[2]))


def test_lines_that_are_not_json_objects_fail_alone():
  items = parse('{"data_row": \n[1, 2]\n\n' + ndjson([data_row('a.jpg', [label([])])]) +
                '{"data_row": {"row_data": "b.jpg"}, "projects": {}}')  # no final LF
  assert [(i.row, i.reason) if isinstance(i, RowError) else (i.row, i.image_uri)
          for i in items] == [(1, 'bad_row'), (2, 'bad_row'), (4, 'a.jpg'),
                              (5, 'not_annotated')]
  assert 'invalid JSON' in items[0].message and 'a JSON object' in items[1].message


def test_a_streamed_file_reads_as_its_text(tmp_path):
  text = ndjson([data_row(f'{i}.jpg', [label([bbox('cat', i, i, 2, 2)])]) for i in range(3)])
  path = write_text(str(tmp_path / 'e.ndjson'), text)
  as_text = parse(text, path=path)
  with open(path, encoding='utf-8', newline='') as f:
    assert list(parse_manifest_text(path, f, 'labelbox')) == as_text
  assert read_manifest_file(path) == as_text


# --- Detection -----------------------------------------------------------------------

ROW = json.dumps(data_row('a.jpg', [label([bbox('cat', 1, 2, 3, 4)])]))


def test_detected_by_extension_and_by_sniffing():
  assert detect_format('x/export.ndjson', ROW) == 'labelbox'
  assert detect_format('x/EXPORT.NDJSON', '') == 'labelbox'  # the extension alone
  assert detect_format('x/export.ndjson', '{"imageGcsUri": "a.jpg"}') == 'labelbox'
  for name in ('export.jsonl', 'export.json', 'export'):
    assert detect_format(name, ROW + '\n' + ROW) == 'labelbox', name
    assert detect_format(name, '\ufeff\n ' + ROW) == 'labelbox', name
  # Not taken from the formats it sits beside.
  assert detect_format('m.jsonl', '{"imageGcsUri": "a.jpg", "data_row": 1}') == 'vertex_jsonl'
  assert detect_format('m.jsonl', '{"imageGcsUri": "a.jpg"}\n' + ROW) == 'vertex_jsonl'
  coco = json.dumps({'images': [{'id': 1, 'file_name': 'a.jpg'}], 'annotations': []}, indent=1)
  assert detect_format('m.json', coco) == 'coco_json'
  assert detect_format('m.json', '[' + ROW + ']') == 'coco_json'  # a JSON list is no export
  # A first line longer than the characters sniffed (embeddings): still Labelbox.
  long = json.dumps({'data_row': {'id': 'c', 'row_data': 'a.jpg'},
                     'embeddings': [{'values': [{'value': [0.123456] * 20000}]}]})
  assert len(long) > 65536
  assert detect_format('export.jsonl', long[:65536]) == 'labelbox'


def test_named_with_format(tmp_path):
  path = write_text(str(tmp_path / 'rows.txt'), ROW + '\n')
  [row] = read_manifest_file(path, 'labelbox')
  assert isinstance(row, ManifestRow) and [o.label for o in row.objects] == ['cat']


# --- Any input: rows or the project's own errors, never anything else ----------------

NUMBERS = st.integers(-5, 120) | st.floats(allow_nan=True) | st.sampled_from(['5', 'x', None])
OBJECTS = st.lists(st.fixed_dictionaries(
    {'annotation_kind': st.sampled_from(['ImageBoundingBox', 'ImagePolygon', '']) | JSON_SCALARS},
    optional={'name': st.sampled_from(['cat', ' ', ' dog ']) | JSON_SCALARS,
              'value': st.sampled_from(['cat', '']) | JSON_SCALARS,
              'bounding_box': st.dictionaries(st.sampled_from(['top', 'left', 'height',
                                                                'width']), NUMBERS) |
              JSON_SCALARS}), max_size=3)
LABELS = st.lists(st.fixed_dictionaries(
    {}, optional={'annotations': st.fixed_dictionaries(
        {}, optional={'objects': OBJECTS | JSON_SCALARS,
                      'classifications': st.lists(JSON_SCALARS, max_size=2) | JSON_SCALARS}) |
                  JSON_SCALARS,
                  'performance_details': st.fixed_dictionaries(
                      {'skipped': st.booleans() | JSON_SCALARS})}) | JSON_SCALARS, max_size=2)
ROWS = st.lists(st.fixed_dictionaries(
    {'data_row': st.fixed_dictionaries(
        {}, optional={'row_data': st.sampled_from(['a.jpg', ' b.png ', 'https://h/c.jpg', '']) |
                                  JSON_SCALARS,
                      'external_id': st.sampled_from(['c.jpg', '']) | JSON_SCALARS}) |
     JSON_SCALARS},
    optional={'media_attributes': st.dictionaries(st.sampled_from(['width', 'height']),
                                                  NUMBERS) | JSON_SCALARS,
              'projects': st.dictionaries(st.sampled_from(['p1', 'p2']), st.fixed_dictionaries(
                  {}, optional={'name': JSON_SCALARS, 'labels': LABELS | JSON_SCALARS}) |
                  JSON_SCALARS, max_size=2) | JSON_SCALARS}), max_size=4)


@SETTINGS
@given(ROWS, st.sampled_from([None, '/images']))
def test_the_parser_returns_rows_or_errors(rows, image_root):
  items = parse(ndjson(rows) + 'not json\n', image_root=image_root)
  check_items(items)
  assert len(items) == len(rows) + 1 and isinstance(items[-1], RowError)
