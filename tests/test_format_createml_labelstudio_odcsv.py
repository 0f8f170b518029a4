"""Apple Create ML JSON, Label Studio's JSON export and the TensorFlow Object Detection
CSV: each parser on every shape it reads and each kind of bad input, then each format
end to end (the CLI with the format detected, and convert()), records read back."""
import glob
import json
import os

import numpy as np
import pytest
from hypothesis import given, strategies as st

from images import write_image, write_text
from records import feature, read_split
from manifest_items import FORMAT_SAMPLES, JSON_SCALARS, SETTINGS, check_items
from tfrecorder_component import convert
from tfrecorder_component.adapters.cli import main
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest import ManifestRow
from tfrecorder_component.manifest.reader import parse_manifest_text, read_manifest_file
from tfrecorder_component.manifest.registry import detect_format

MINE = ('createml', 'label_studio', 'tf_od_csv')


def parse(path, text, fmt, **kwargs):
  return list(parse_manifest_text(path, text, fmt, **kwargs))


def boxes(row):
  return [(o.label, o.xmin, o.ymin, o.xmax, o.ymax) for o in row.objects]


def the_error(items):
  errors = [i for i in items if isinstance(i, RowError)]
  assert len(errors) == 1, items
  return errors[0]


def test_the_listed_samples_read_named_and_detected(tmp_path):
  """tests/test_detection_manifests.py's FORMAT_SAMPLES of these formats."""
  for fmt in MINE:
    name, text, _ = FORMAT_SAMPLES[fmt]
    path = write_text(str(tmp_path / fmt / name), text)
    assert detect_format(path, text) == fmt
    for given in (fmt, None):
      [row] = read_manifest_file(path, given)
      assert isinstance(row, ManifestRow) and row.image_uri == 'a.jpg', (fmt, given)


# --- Create ML ------------------------------------------------------------------------

CREATEML = [
    {'image': 'a.jpg', 'verified': True, 'annotations': [
        {'label': 'cat', 'coordinates': {'x': 32, 'y': 24, 'width': 20, 'height': 10}},
        {'label': ' dog ', 'coordinates': {'x': 10.5, 'y': '8', 'width': 5, 'height': 4}}]},
    {'image': 'sub/b.png', 'annotations': []},
    {'imagefilename': 'c.jpg', 'annotation': [
        {'label': 'cat', 'coordinates': {'x': 5, 'y': 5, 'width': 4, 'height': 2}}]},
]


def test_createml_boxes_are_centre_and_size_in_pixels():
  rows = parse('/d/m.json', json.dumps(CREATEML), 'createml')
  assert [r.row for r in rows] == [1, 2, 3]
  assert [r.image_uri for r in rows] == ['a.jpg', 'sub/b.png', 'c.jpg']
  assert [r.resolved_uri for r in rows] == ['/d/a.jpg', '/d/sub/b.png', '/d/c.jpg']
  assert boxes(rows[0]) == [('cat', 22, 19, 42, 29), ('dog', 8, 6, 13, 10)]
  assert rows[0].labels == ('cat', 'dog') and rows[1].labels == ()
  assert not any(o.normalized for o in rows[0].objects)
  assert rows[1].objects == ()  # an image without objects
  assert boxes(rows[2]) == [('cat', 3, 4, 7, 6)]  # Apple's own key spelling
  assert {r.split for r in rows} == {None}
  rooted = parse('/d/m.json', json.dumps(CREATEML), 'createml', image_root='gs://b/imgs')
  assert rooted[1].resolved_uri == 'gs://b/imgs/sub/b.png'


def test_createml_normalised_file_and_split_folders():
  normalised = [{'image': 'a.jpg', 'annotations': [
      {'label': 'cat', 'coordinates': {'x': 0.5, 'y': 0.5, 'width': 0.2, 'height': 0.4}}]}]
  [row] = parse('/d/m.json', json.dumps(normalised), 'createml')
  assert row.objects[0].normalized
  np.testing.assert_allclose(boxes(row)[0][1:], (0.4, 0.3, 0.6, 0.7))
  for folder, split in (('train', 'train'), ('valid', 'eval'), ('Validation', 'eval'),
                        ('val', 'eval'), ('EVAL', 'eval'), ('test', 'test'),
                        ('photos', None)):
    [row] = parse(f'/d/{folder}/_annotations.createml.json', json.dumps(normalised),
                  'createml')
    assert row.split == split, folder


@pytest.mark.parametrize('entry, reason', [
    ({'annotations': []}, 'needs "image"'),
    ({'image': '  ', 'annotations': []}, 'needs "image"'),
    ({'image': 'x.jpg'}, 'needs "annotations"'),
    ('x.jpg', 'must be an object'),
    ({'image': 'x.jpg', 'annotations': [{'coordinates': {'x': 1, 'y': 1, 'width': 1,
                                                          'height': 1}}]},
     'annotations[0] needs "label"'),
    ({'image': 'x.jpg', 'annotations': [{'label': 'cat'}]}, 'needs "coordinates"'),
    ({'image': 'x.jpg', 'annotations': [
        {'label': 'cat', 'coordinates': {'x': 1, 'y': 1, 'width': 'wide', 'height': 1}}]},
     "width='wide'"),
    ({'image': 'x.jpg', 'annotations': [
        {'label': 'cat', 'coordinates': {'x': 1, 'y': 1, 'width': 2}}]}, 'height=null'),
])
def test_createml_bad_entries_fail_their_row(entry, reason):
  text = json.dumps([CREATEML[0], entry, CREATEML[1]])
  items = parse('/d/m.json', text, 'createml')
  error = the_error(items)
  assert (error.reason, error.source, error.row) == ('bad_row', '/d/m.json', 2)
  assert '[1]' in error.message and reason in error.message, error.message
  assert [i.row for i in items if isinstance(i, ManifestRow)] == [1, 3]


def test_createml_whole_file_problems_and_boxes_outside_the_image():
  with pytest.raises(ManifestError, match='not a valid Create ML JSON'):
    parse('/d/m.json', '[{"image": ', 'createml')
  with pytest.raises(ManifestError, match='list of images'):
    parse('/d/m.json', '{"image": "a.jpg"}', 'createml')
  outside = [{'image': 'a.jpg', 'annotations': [
      {'label': 'cat', 'coordinates': {'x': -50, 'y': 900, 'width': -3, 'height': 10}}]}]
  [row] = parse('/d/m.json', json.dumps(outside), 'createml')  # the record step's to judge
  assert boxes(row) == [('cat', -48.5, 895, -51.5, 905)]


# --- Label Studio --------------------------------------------------------------------


def rect(x, y, w, h, *labels, rotation=0, rid='r1', size=(1000, 500), kind='rectanglelabels'):
  value = {'x': x, 'y': y, 'width': w, 'height': h, 'rotation': rotation}
  if labels:
    value['labels' if kind in ('labels', 'rectangle') else kind] = list(labels)
  return {'id': rid, 'type': kind, 'from_name': 'label', 'to_name': 'image',
          'original_width': size[0], 'original_height': size[1], 'image_rotation': 0,
          'value': value}


def polygon(points, *labels, rid='p1'):
  return {'id': rid, 'type': 'polygonlabels', 'from_name': 'poly', 'to_name': 'image',
          'original_width': 1000, 'original_height': 500,
          'value': {'points': points, 'polygonlabels': list(labels)}}


def choices(name, *values, rid='c1', region=None):
  value = dict(region or {}, choices=list(values))
  return {'id': rid, 'type': 'choices', 'from_name': name, 'to_name': 'image', 'value': value}


def task(results, image='a.jpg', **annotation):
  return {'id': 7, 'data': {'image': image},
          'annotations': [dict({'id': 70, 'result': results, 'was_cancelled': False},
                               **annotation)],
          'predictions': [{'result': [rect(0, 0, 50, 50, 'predicted')]}]}


def ls(tasks, path='/p/export.json', **kwargs):
  return parse(path, json.dumps(tasks), 'label_studio', **kwargs)


def test_label_studio_rectangles_are_percent_of_the_image():
  [row] = ls([task([rect(10, 20, 30, 40, 'cat'), rect(50, 50, 10, 10, 'dog', rid='r2')])])
  assert row.row == 1 and row.labels == ('cat', 'dog')
  np.testing.assert_allclose([b[1:] for b in boxes(row)],
                             [(0.1, 0.2, 0.4, 0.6), (0.5, 0.5, 0.6, 0.6)])
  assert all(o.normalized and o.corners == () and o.mask is None for o in row.objects)
  assert row.features == ()  # predictions are never read


def test_label_studio_rotated_rectangle_is_its_enclosing_box_with_corners():
  """Label Studio rotates about the top-left corner, in pixels: on a 1000x500 image a
  300x100 box at (200, 100) turned 90 degrees covers x 100..200, y 100..400 (the
  converter's YOLO OBB rule; label-studio#2293)."""
  [row] = ls([task([rect(20, 20, 30, 20, 'cat', rotation=90)])])
  [obj] = row.objects
  np.testing.assert_allclose((obj.xmin, obj.ymin, obj.xmax, obj.ymax), (0.1, 0.2, 0.2, 0.8),
                             atol=1e-12)
  np.testing.assert_allclose(obj.corners, (0.2, 0.2, 0.2, 0.8, 0.1, 0.8, 0.1, 0.2), atol=1e-12)
  [row] = ls([task([rect(20, 20, 30, 20, 'cat', rotation=360)])])
  assert row.objects[0].corners == ()
  [row] = ls([task([rect(20, 20, 30, 20, 'cat', rotation=30, size=(None, 500))])])
  assert isinstance(row, RowError) and 'original_width' in row.message


def test_label_studio_polygons_and_masks():
  points = [[10, 10], [50, 10], [30, 40]]
  [row] = ls([task([polygon(points, 'dog'), rect(10, 20, 30, 40, 'cat')])])
  np.testing.assert_allclose(boxes(row)[0][1:], (0.1, 0.1, 0.5, 0.4))
  assert row.objects[0].mask is None and row.objects[0].corners == ()
  [row] = ls([task([polygon(points, 'dog'), rect(10, 20, 30, 40, 'cat')])],
             annotations=frozenset({'masks'}))
  dog, cat = row.objects
  assert dog.mask.normalized and cat.mask.normalized
  np.testing.assert_allclose(dog.mask.polygons[0], (0.1, 0.1, 0.5, 0.1, 0.3, 0.4))
  np.testing.assert_allclose(cat.mask.polygons[0], (0.1, 0.2, 0.4, 0.2, 0.4, 0.6, 0.1, 0.6))
  [row] = ls([task([polygon([[1, 1], [2, 2]], 'dog')])])
  assert isinstance(row, RowError) and 'at least 3' in row.message


def test_label_studio_regions_values_and_ignored_results():
  """Results sharing an id are one region: a Rectangle with a separate Labels control,
  per-region choices (attributes); image-level choices and ratings are features; a
  region with two labels is two objects; relations are ignored."""
  region = {'x': 10, 'y': 20, 'width': 30, 'height': 40, 'rotation': 0}
  results = [
      rect(10, 20, 30, 40, kind='rectangle'), rect(10, 20, 30, 40, 'cat', kind='labels'),
      choices('pose', 'sitting', rid='r1', region=region),
      rect(60, 60, 10, 10, 'dog', 'puppy', rid='r2'),
      choices('weather', 'sunny', 'windy'),
      {'id': 'q', 'type': 'rating', 'from_name': 'quality', 'value': {'rating': 4}},
      {'type': 'relation', 'from_id': 'r1', 'to_id': 'r2', 'direction': 'right'},
  ]
  [row] = ls([task(results)])
  assert [(o.label, o.attributes) for o in row.objects] == [
      ('cat', (('pose', 'sitting'),)), ('dog', ()), ('puppy', ())]
  np.testing.assert_allclose(boxes(row)[0][1:], (0.1, 0.2, 0.4, 0.6))
  assert boxes(row)[1][1:] == boxes(row)[2][1:]
  assert row.features == (('quality', 4), ('weather', 'sunny,windy'))


def test_label_studio_which_annotation_is_read():
  cancelled = {'id': 1, 'was_cancelled': True, 'result': [rect(0, 0, 5, 5, 'skipped')],
               'created_at': '2024-05-01T00:00:00Z'}
  old = {'id': 2, 'result': [rect(0, 0, 5, 5, 'old')], 'created_at': '2024-01-01T00:00:00Z'}
  new = {'id': 3, 'result': [rect(0, 0, 5, 5, 'new')], 'created_at': '2024-02-01T00:00:00Z'}
  truth = {'id': 4, 'result': [rect(0, 0, 5, 5, 'truth')], 'ground_truth': True,
           'created_at': '2023-01-01T00:00:00Z'}

  def labels(annotations):
    [row] = ls([{'data': {'image': 'a.jpg'}, 'annotations': annotations}])
    return row.labels if isinstance(row, ManifestRow) else (row.reason, row.message)

  assert labels([old, new, cancelled]) == ('new',)
  assert labels([old, truth, new]) == ('truth',)
  assert labels([dict(old, created_at=None), dict(new, created_at=None)]) == ('old',)
  assert labels([{'id': 5, 'result': []}]) == ()  # submitted with no region: no objects
  [row] = ls([{'data': {'image': 'a.jpg'}, 'completions': [old]}])  # before Label Studio 1.0
  assert row.labels == ('old',)
  assert labels([]) == ()  # not annotated yet: no objects, as the converter writes it
  reason, message = labels([cancelled])
  assert reason == 'not_annotated' and 'cancelled' in message
  [row] = ls([{'data': {'image': 'a.jpg'}, 'predictions': [{'result': []}]}])
  assert row.reason == 'not_annotated' and 'predictions' in row.message


def test_label_studio_image_paths():
  def resolved(image, **kwargs):
    [row] = ls([{'data': {'image': image}, 'annotations': []}], **kwargs)
    return row.image_uri, row.resolved_uri

  assert resolved('/data/upload/3/5f1e-a%20b.jpg') == ('/data/upload/3/5f1e-a%20b.jpg',
                                                       '/p/upload/3/5f1e-a b.jpg')
  assert resolved('/data/upload/3/x.jpg', image_root='/ls/media') == (
      '/data/upload/3/x.jpg', '/ls/media/upload/3/x.jpg')
  assert resolved('/data/local-files/?d=photos%2Fday%201/x.jpg')[1] == '/p/photos/day 1/x.jpg'
  assert resolved('/data/local-files/?d=photos/x.jpg', image_root='gs://b/root')[1] == (
      'gs://b/root/photos/x.jpg')
  assert resolved('http://localhost:8080/data/upload/1/x.jpg')[1] == '/p/upload/1/x.jpg'
  for kept in ('gs://bucket/x.jpg', 's3://bucket/x.jpg', 'https://example.com/img/x.jpg',
               '/abs/x.jpg'):
    assert resolved(kept)[1] == kept
  assert resolved('imgs/x.jpg') == ('imgs/x.jpg', '/p/imgs/x.jpg')
  [row] = ls([{'data': {'img': 'b.jpg', 'n': 3}, 'annotations': []}])  # data's only string
  assert row.image_uri == 'b.jpg'
  [row] = ls([{'data': {'photo': 'b.jpg', 'other': 'c.jpg'}, 'annotations': [
      {'result': [dict(rect(1, 1, 2, 2, 'cat'), source='$photo')]}]}])
  assert row.image_uri == 'b.jpg'
  [row] = ls([task([])], path='/p/valid/export.json')
  assert row.split == 'eval'


@pytest.mark.parametrize('tasks, reason, words', [
    ([{'data': {}, 'annotations': []}], 'bad_row', 'names no image'),
    ([{'data': {'image': ''}, 'annotations': []}], 'bad_row', 'names no image'),
    (['a.jpg'], 'bad_row', 'must be an object with a "data"'),
    ([{'data': {'image': 'data:image/png;base64,AAAA'}, 'annotations': []}], 'bad_row',
     'embedded'),
    ([task([rect('ten', 20, 30, 40, 'cat')])], 'bad_row', 'must be numbers'),
    ([task([rect(10, 20, 30, 40, kind='rectangle')])], 'bad_row', 'has no label'),
    ([task([rect(10, 20, 30, 40, kind='rectanglelabels') | {'value': {
        'x': 1, 'y': 1, 'width': 1, 'height': 1, 'rectanglelabels': []}}])], 'bad_row',
     'non-empty list of labels'),
    ([task([{'id': 'k', 'type': 'keypointlabels', 'from_name': 'kp', 'value': {
        'x': 1, 'y': 2, 'width': 0.5, 'keypointlabels': ['nose']}}])],
     'unsupported_annotation', "'keypointlabels'"),
    ([task([{'id': 'b', 'type': 'brushlabels', 'from_name': 'brush', 'value': {
        'format': 'rle', 'rle': [1, 2], 'brushlabels': ['cat']}}])],
     'unsupported_annotation', "'brushlabels'"),
    ([task([choices('weather', 'sunny'), choices('weather', 'windy', rid='c2')])], 'bad_row',
     "two results of 'weather'"),
    ([task(['not a result'])], 'bad_row', 'result[0] must be an object'),
    ([{'data': {'image': 'a.jpg'}, 'annotations': [{'result': 'x'}]}], 'bad_row',
     '"result" must be a list'),
])
def test_label_studio_bad_tasks_fail_their_row(tasks, reason, words):
  items = ls(tasks + [task([])])
  error = the_error(items)
  assert (error.reason, error.source, error.row) == (reason, '/p/export.json', 1)
  assert words in error.message and '[0]' in error.message, error.message
  assert [i.row for i in items if isinstance(i, ManifestRow)] == [2]


def test_label_studio_whole_file_problems():
  with pytest.raises(ManifestError, match='not a valid Label Studio'):
    parse('/p/e.json', '[{"data"', 'label_studio')
  with pytest.raises(ManifestError, match='list of tasks'):
    parse('/p/e.json', '{"tasks": []}', 'label_studio')
  [row] = parse('/p/e.json', json.dumps(task([])), 'label_studio')  # one task alone
  assert row.image_uri == 'a.jpg'


# --- TensorFlow Object Detection CSV -------------------------------------------------

TF_CSV = ('filename,width,height,class,xmin,ymin,xmax,ymax\n'
          'a.jpg,64,48,cat,10,5,30,25\n'
          'a.jpg,64,48,dog,1.5,2,3,4\n'
          'sub/b.png,50,40,cat,0,0,50,40\n'
          'empty.jpg,32,32,,,,,\n')


def test_tf_od_csv_one_row_a_box_in_pixels():
  rows = parse('/d/m.csv', TF_CSV, 'tf_od_csv')
  assert [(r.row, r.image_uri, r.resolved_uri) for r in rows] == [
      (2, 'a.jpg', '/d/a.jpg'), (3, 'a.jpg', '/d/a.jpg'), (4, 'sub/b.png', '/d/sub/b.png'),
      (5, 'empty.jpg', '/d/empty.jpg')]
  assert [boxes(r) for r in rows] == [[('cat', 10, 5, 30, 25)], [('dog', 1.5, 2, 3, 4)],
                                      [('cat', 0, 0, 50, 40)], []]
  assert rows[3].objects == () and rows[3].labels == ()
  assert not any(o.normalized for r in rows for o in r.objects)
  assert {r.split for r in rows} == {None} and {r.features for r in rows} == {()}
  # Streamed: the lines of a text file give the same rows.
  assert parse('/d/m.csv', TF_CSV.splitlines(keepends=True), 'tf_od_csv') == rows
  assert parse('/d/m.csv', TF_CSV, 'tf_od_csv', image_root='/imgs')[0].resolved_uri == (
      '/imgs/a.jpg')


def test_tf_od_csv_columns_by_name_extra_columns_and_split_folders():
  text = ('xmin,ymin,xmax,ymax,class,filename,source\n'
          '1,2,3,4,cat,a.jpg,flickr\n'
          '5,6,7,8,dog,b.jpg,\n')
  rows = parse('/d/test/_annotations.csv', text, 'tf_od_csv')
  assert [boxes(r) for r in rows] == [[('cat', 1, 2, 3, 4)], [('dog', 5, 6, 7, 8)]]
  assert [r.features for r in rows] == [(('source', 'flickr'),), ()]
  assert {r.split for r in rows} == {'test'}
  assert {r.split for r in parse('/d/valid/_annotations.csv', TF_CSV, 'tf_od_csv')} == {'eval'}
  assert {r.split for r in parse('/d/train/_annotations.csv', TF_CSV, 'tf_od_csv')} == {'train'}
  with pytest.raises(ManifestError, match='xmax, ymax missing'):
    parse('/d/m.csv', 'filename,class,xmin,ymin\na.jpg,cat,1,2\n', 'tf_od_csv')
  with pytest.raises(ManifestError, match='is empty'):
    parse('/d/m.csv', '\n', 'tf_od_csv')


@pytest.mark.parametrize('line, words', [
    ('a.jpg,64,48,cat,1,x,3,4', "ymin='x'"),
    ('a.jpg,64,48,cat,1,2,3', '7 column(s), the header has 8'),
    ('a.jpg,64,48,cat,1,2,3,4,5', '9 column(s)'),
    ('a.jpg,64,48,,1,2,3,4', 'no class'),
    ('a.jpg,64,48,cat,,,,', "xmin=''"),
    (',64,48,cat,1,2,3,4', 'filename column is empty'),
    ('a.jpg,wide,48,cat,1,2,3,4', "width must be"),
    ('a.jpg,64,0,cat,1,2,3,4', "height must be"),
    ('"a.jpg,64,48,cat,1,2,3,4', 'CSV syntax error'),
])
def test_tf_od_csv_bad_rows_fail_alone(line, words):
  text = 'filename,width,height,class,xmin,ymin,xmax,ymax\nok.jpg,9,9,cat,1,1,2,2\n' + line + '\n'
  items = parse('/d/m.csv', text + 'ok2.jpg,9,9,cat,1,1,2,2\n', 'tf_od_csv')
  error = the_error(items)
  assert (error.reason, error.source, error.row) == ('bad_row', '/d/m.csv', 3)
  assert words in error.message, error.message
  assert [i.image_uri for i in items if isinstance(i, ManifestRow)] == ['ok.jpg', 'ok2.jpg']


# --- End to end ----------------------------------------------------------------------

SIZES = {'a.jpg': (64, 48), 'b.png': (50, 40), 'empty.jpg': (32, 24)}  # width, height


def write_images(folder, names=SIZES):
  for name in names:
    width, height = SIZES[os.path.basename(name)]
    write_image(str(folder / name), 'PNG' if name.endswith('.png') else 'JPEG', width=width,
                height=height)


def records(out):
  """{source id: (split, example)} over every split folder that holds records."""
  found = {}
  for split_dir in sorted(glob.glob(os.path.join(out, 'Split-*'))):
    if not glob.glob(os.path.join(split_dir, 'data_tfrecord-*.gz')):
      continue
    for example in read_split(split_dir):
      found[feature(example, 'image/source_id')[0].decode()] = (
          os.path.basename(split_dir)[len('Split-'):], example)
  return found


def objects_of(example):
  corners = zip(*(feature(example, f'image/object/bbox/{k}')
                  for k in ('xmin', 'ymin', 'xmax', 'ymax')))
  return [(t.decode(), tuple(b)) for t, b in
          zip(feature(example, 'image/object/class/text'), corners)]


def assert_objects(example, expected, name):
  """`expected`: (label, pixel box) on image `name`, compared normalised by its real size."""
  width, height = SIZES[os.path.basename(name)]
  got = objects_of(example)
  assert [g[0] for g in got] == [e[0] for e in expected]
  for (_, box), (_, (x0, y0, x1, y1)) in zip(got, expected):
    np.testing.assert_allclose(box, (x0 / width, y0 / height, x1 / width, y1 / height),
                               atol=1e-4)
  assert feature(example, 'image/width') == [width]
  assert feature(example, 'image/height') == [height]


def createml_file(folder, entries):
  return write_text(str(folder / '_annotations.createml.json'), json.dumps(entries))


def test_createml_end_to_end(tmp_path):
  """Roboflow's layout: train/ and valid/ folders, each with its annotation file."""
  write_images(tmp_path / 'ds' / 'train', ['a.jpg', 'empty.jpg'])
  write_images(tmp_path / 'ds' / 'valid', ['b.png'])
  train = createml_file(tmp_path / 'ds' / 'train', [
      {'image': 'a.jpg', 'annotations': [
          {'label': 'cat', 'coordinates': {'x': 32, 'y': 24, 'width': 20, 'height': 10}},
          {'label': 'dog', 'coordinates': {'x': 10, 'y': 40, 'width': 8, 'height': 12}}]},
      {'image': 'empty.jpg', 'annotations': []}])
  valid = createml_file(tmp_path / 'ds' / 'valid', [
      {'image': 'b.png', 'annotations': [
          {'label': 'dog', 'coordinates': {'x': 25, 'y': 20, 'width': 50, 'height': 40}}]}])
  assert main(['convert', train, str(tmp_path / 'out_train')]) == 0
  got = records(str(tmp_path / 'out_train'))
  assert {k: s for k, (s, _) in got.items()} == {'a.jpg': 'train', 'empty.jpg': 'train'}
  assert_objects(got['a.jpg'][1], [('cat', (22, 19, 42, 29)), ('dog', (6, 34, 14, 46))],
                 'a.jpg')
  assert objects_of(got['empty.jpg'][1]) == []
  result = convert(valid, str(tmp_path / 'out_valid'))
  assert result.rows_failed == 0 and result.records_per_split['eval'] == 1
  got = records(str(tmp_path / 'out_valid'))
  assert got['b.png'][0] == 'eval'
  assert_objects(got['b.png'][1], [('dog', (0, 0, 50, 40))], 'b.png')
  # The export's root folder: both files, each with its folder's split.
  result = convert(str(tmp_path / 'ds'), str(tmp_path / 'out_all'))
  assert result.records_per_split == {'train': 2, 'eval': 1, 'test': 0}
  assert {k: s for k, (s, _) in records(str(tmp_path / 'out_all')).items()} == {
      'a.jpg': 'train', 'empty.jpg': 'train', 'b.png': 'eval'}


def test_label_studio_end_to_end(tmp_path):
  """An export beside Label Studio's media folder: an uploaded file, a local-storage
  file, a task not annotated yet; a rotated rectangle, a polygon, choices."""
  root = tmp_path / 'ls'
  write_images(root, ['upload/1/a.jpg', 'photos/b.png', 'empty.jpg'])
  a = task([rect(25, 25, 25, 12.5, 'cat', rotation=90, size=(64, 48)),
            rect(50, 50, 25, 25, 'dog', rid='r2', size=(64, 48)),
            choices('pose', 'lying', rid='r2', region={'x': 50, 'y': 50, 'width': 25,
                                                       'height': 25}),
            choices('weather', 'sunny')], image='/data/upload/1/a.jpg')
  b = task([polygon([[10, 10], [50, 10], [30, 50]], 'cat')],
           image='/data/local-files/?d=photos/b.png')
  empty = {'id': 9, 'data': {'image': 'empty.jpg'}, 'annotations': []}
  export = write_text(str(root / 'export.json'), json.dumps([a, b, empty]))
  out = tmp_path / 'out'
  assert main(['convert', export, str(out), '--splits', 'train=1']) == 0
  got = records(str(out))
  assert sorted(got) == ['/data/local-files/?d=photos/b.png', '/data/upload/1/a.jpg',
                         'empty.jpg']
  example = got['/data/upload/1/a.jpg'][1]
  # The rotated 16x6 px box at (16, 12) turned 90 degrees: x 10..16, y 12..28.
  assert_objects(example, [('cat', (10, 12, 16, 28)), ('dog', (32, 24, 48, 36))], 'a.jpg')
  np.testing.assert_allclose(feature(example, 'image/object/corner/x')[:4],
                             np.array([16, 16, 10, 10]) / 64, atol=1e-4)
  np.testing.assert_allclose(feature(example, 'image/object/corner/y')[:4],
                             np.array([12, 28, 28, 12]) / 48, atol=1e-4)
  assert feature(example, 'image/object/pose') == [b'', b'lying']
  assert feature(example, 'weather') == [b'sunny']
  assert_objects(got['/data/local-files/?d=photos/b.png'][1], [('cat', (5, 4, 25, 20))],
                 'b.png')
  assert objects_of(got['empty.jpg'][1]) == []

  result = convert(export, str(tmp_path / 'masks'), include_masks=True, splits={'train': 1})
  assert result.rows_failed == 0 and result.summary['box_issues'] == {}
  masked = records(str(tmp_path / 'masks'))
  assert len(feature(masked['/data/upload/1/a.jpg'][1], 'image/object/mask')) == 2
  assert len(feature(masked['/data/local-files/?d=photos/b.png'][1], 'image/object/mask')) == 1


def test_tf_od_csv_end_to_end_with_boxes_outside_the_image(tmp_path):
  """Several rows of one image merge into its record; a box partly outside the image
  is clipped and one wholly outside dropped, both listed in box_issues.jsonl."""
  write_images(tmp_path / 'ds' / 'train', ['a.jpg', 'b.png', 'empty.jpg'])
  csv_path = write_text(str(tmp_path / 'ds' / 'train' / '_annotations.csv'),
                        'filename,width,height,class,xmin,ymin,xmax,ymax\n'
                        'a.jpg,64,48,cat,10,5,30,25\n'
                        'b.png,50,40,dog,0,0,25,20\n'
                        'a.jpg,64,48,dog,40,30,80,60\n'       # clipped at 64 x 48
                        'empty.jpg,32,24,,,,,\n'
                        'b.png,50,40,cat,60,50,70,60\n')      # wholly outside: dropped
  out = tmp_path / 'out'
  assert main(['convert', csv_path, str(out)]) == 0
  got = records(str(out))
  assert {k: s for k, (s, _) in got.items()} == {'a.jpg': 'train', 'b.png': 'train',
                                                 'empty.jpg': 'train'}
  assert_objects(got['a.jpg'][1], [('cat', (10, 5, 30, 25)), ('dog', (40, 30, 64, 48))],
                 'a.jpg')
  assert_objects(got['b.png'][1], [('dog', (0, 0, 25, 20))], 'b.png')
  assert objects_of(got['empty.jpg'][1]) == []
  with open(out / 'report' / 'box_issues.jsonl') as f:
    issues = sorted((i['source'], i['uri'], i['row'], i['index'], i['box'], i['action'],
                     i['reason'], i['label']) for i in map(json.loads, f))
  # A merged image is named by its first row; `index` is the box's place in its record.
  assert issues == [(csv_path, 'a.jpg', 2, 1, [40, 30, 80, 60], 'clipped', 'clipped', 'dog'),
                    (csv_path, 'b.png', 3, 1, [60, 50, 70, 60], 'dropped', 'outside_image',
                     'cat')]

  flat = write_text(str(tmp_path / 'flat' / 'boxes.csv'),
                    'filename,width,height,class,xmin,ymin,xmax,ymax\n'
                    '../ds/train/a.jpg,64,48,cat,10,5,30,25\n'
                    '../ds/train/empty.jpg,32,24,,,,,\n')
  result = convert(flat, str(tmp_path / 'out_flat'), splits={'train': 1})
  assert result.rows_failed == 0 and result.records_written == 2
  got = records(str(tmp_path / 'out_flat'))
  assert_objects(got['../ds/train/a.jpg'][1], [('cat', (10, 5, 30, 25))], 'a.jpg')


def test_a_vott_csv_is_detected_and_converted_as_detection(tmp_path):
  """VoTT's CSV export (`image,xmin,ymin,xmax,ymax,label`, every field quoted, a row a
  box) is this format with other column names: each image is one record with all its
  boxes, never a classification record a box row with the corners as features."""
  write_images(tmp_path / 'vott', ['a.jpg', 'b.png'])
  text = ('"image","xmin","ymin","xmax","ymax","label"\n'
          '"a.jpg","8","6","40","30","cat"\n'
          '"b.png","5","4","25","20","cat"\n'
          '"a.jpg","0","0","32","24","dog"\n')
  csv_path = write_text(str(tmp_path / 'vott' / 'vott-export.csv'), text)
  assert detect_format(csv_path, text) == 'tf_od_csv'
  result = convert(csv_path, str(tmp_path / 'out'), splits={'train': 1})
  assert result.rows_failed == 0 and result.records_written == 2
  got = records(str(tmp_path / 'out'))
  assert sorted(got) == ['a.jpg', 'b.png']
  assert_objects(got['a.jpg'][1], [('cat', (8, 6, 40, 30)), ('dog', (0, 0, 32, 24))], 'a.jpg')
  assert_objects(got['b.png'][1], [('cat', (5, 4, 25, 20))], 'b.png')
  assert not [k for k in got['a.jpg'][1].features.feature
              if k.endswith(('xmin', 'ymin', 'xmax', 'ymax')) and not k.startswith('image/object/')]
  # AutoML's detection CSV with a header (8 coordinate columns, normalised) is not taken.
  automl = ('image,label,xmin,ymin,x2,y2,xmax,ymax,x4,y4\na.jpg,cat,0.1,0.2,,,0.5,0.6,,\n')
  assert detect_format(str(tmp_path / 'automl.csv'), automl) == 'automl_detection_csv'
  # A header that has both names keeps the usual ones and the other as a feature.
  rows = parse('/d/m.csv', 'filename,image,class,xmin,ymin,xmax,ymax\na.jpg,cam1,cat,1,2,3,4\n',
               'tf_od_csv')
  assert [(r.image_uri, r.features) for r in rows] == [('a.jpg', (('image', 'cam1'),))]


def test_bad_rows_fail_the_conversion_naming_file_row_and_reason(tmp_path):
  write_images(tmp_path, ['a.jpg'])
  csv_path = write_text(str(tmp_path / 'm.csv'),
                        'filename,width,height,class,xmin,ymin,xmax,ymax\n'
                        'a.jpg,64,48,cat,10,5,30,25\n'
                        'a.jpg,64,48,cat,ten,5,30,25\n')
  assert main(['convert', csv_path, str(tmp_path / 'out')]) == 1
  result = convert(csv_path, str(tmp_path / 'out2'), max_error_ratio=1.0)
  with open(os.path.join(result.report_dir, 'errors.jsonl')) as f:
    [error] = [json.loads(l) for l in f]
  assert (error['source'], error['row'], error['reason']) == (csv_path, 3, 'bad_row')
  assert "xmin='ten'" in error['message']


# --- Any input: rows or the project's own errors, never anything else ----------------

NUMBERS = st.integers(-5, 120) | st.floats(allow_nan=True) | st.sampled_from(['5', 'x', None])
CREATEML_DOCS = st.lists(st.dictionaries(
    st.sampled_from(['image', 'imagefilename', 'annotations', 'annotation']),
    st.sampled_from(['a.jpg', '', ' b.png ']) | JSON_SCALARS | st.lists(st.dictionaries(
        st.sampled_from(['label', 'coordinates']),
        st.sampled_from(['cat', '', ' dog']) | JSON_SCALARS | st.dictionaries(
            st.sampled_from(['x', 'y', 'width', 'height']), NUMBERS), max_size=2),
        max_size=3)), max_size=4)
LS_VALUES = st.dictionaries(
    st.sampled_from(['x', 'y', 'width', 'height', 'rotation', 'points', 'rectanglelabels',
                     'polygonlabels', 'labels', 'choices', 'rating', 'text']),
    NUMBERS | st.lists(st.sampled_from(['cat', '', 'dog']), max_size=2) |
    st.lists(st.lists(NUMBERS, max_size=3), max_size=4), max_size=6)
LS_RESULTS = st.lists(st.fixed_dictionaries(
    {'type': st.sampled_from(['rectanglelabels', 'rectangle', 'labels', 'polygonlabels',
                              'choices', 'rating', 'textarea', 'relation', 'keypointlabels',
                              'x']),
     'id': st.sampled_from(['r1', 'r2', 3]), 'value': LS_VALUES | JSON_SCALARS},
    optional={'from_name': st.sampled_from(['label', 'image/x', 'area', '']),
              'original_width': NUMBERS, 'original_height': NUMBERS}), max_size=4)
LS_DOCS = st.lists(st.fixed_dictionaries(
    {'data': st.fixed_dictionaries({'image': st.sampled_from(
        ['a.jpg', '/data/upload/1/a.jpg', '/data/local-files/?d=x', 'gs://b/a', ''])}) |
     JSON_SCALARS},
    optional={'annotations': st.lists(st.fixed_dictionaries(
        {'result': LS_RESULTS | JSON_SCALARS},
        optional={'was_cancelled': st.booleans(), 'ground_truth': st.booleans(),
                  'created_at': st.sampled_from(['2024', '2023', None])}), max_size=3) |
        JSON_SCALARS}), max_size=4)
CSV_PIECES = st.sampled_from(['a.jpg', ',', ',,,,', 'cat', '5', '1e3', 'nan', '-2', 'x', '"',
                              '\n', ' ', 'class', 'filename'])


@SETTINGS
@given(CREATEML_DOCS)
def test_createml_parser_returns_rows_or_errors(doc):
  check_items(parse('/m/c.json', json.dumps(doc), 'createml'))


@SETTINGS
@given(LS_DOCS, st.booleans())
def test_label_studio_parser_returns_rows_or_errors(doc, masks):
  try:
    check_items(parse('/m/e.json', json.dumps(doc), 'label_studio',
                      annotations=frozenset({'masks'} if masks else ())))
  except ManifestError as e:
    assert 'reserved for the image features' in str(e)  # a from_name 'image/...'


@SETTINGS
@given(st.lists(CSV_PIECES | st.text(max_size=3), max_size=30).map(''.join))
def test_tf_od_csv_parser_returns_rows_or_errors(body):
  check_items(parse('/m/b.csv', 'filename,width,height,class,xmin,ymin,xmax,ymax\n' + body,
                    'tf_od_csv'))
