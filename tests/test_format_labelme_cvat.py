"""LabelMe JSON and CVAT for images 1.1 XML: every shape each format has, every bad input,
and both end to end (the CLI with the format detected, and convert()), records read back
and checked against the annotations normalised by the real image sizes."""
import base64
import collections
import glob
import io
import json
import os
import re
import tracemalloc

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from pycocotools import mask as coco_mask

from images import write_image, write_text
from records import decoded_masks, feature, read_split
import tfrecorder_component as trc
from tfrecorder_component.adapters.cli import main
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.record.labels import read_label_map
from tfrecorder_component.manifest import ManifestRow, detect_format
from tfrecorder_component.manifest.reader import (iter_manifest_file, parse_manifest_text,
                                                  read_manifest_file)

MASKS = frozenset({'masks'})
KEYPOINTS = frozenset({'keypoints'})


def one(items):
  [item] = items
  return item


def rows(items):
  return [i for i in items if isinstance(i, ManifestRow)]


def boxes(row):
  return [(o.label, (o.xmin, o.ymin, o.xmax, o.ymax)) for o in row.objects]


# --- LabelMe, parser --------------------------------------------------------------------


def labelme(shapes, **fields):
  doc = {'version': '5.2.1', 'flags': {}, 'shapes': shapes, 'imagePath': 'a.jpg',
         'imageData': None, 'imageHeight': 40, 'imageWidth': 60, **fields}
  return json.dumps(doc)


def shape(label, points, kind='polygon', **fields):
  return {'label': label, 'points': points, 'group_id': None, 'description': '',
          'shape_type': kind, 'flags': {}, **fields}


def read_labelme(text, annotations=frozenset(), path='/d/a.json', **kwargs):
  return list(parse_manifest_text(path, text, 'labelme', annotations=annotations, **kwargs))


def png_b64(bitmap):
  out = io.BytesIO()
  Image.fromarray(np.asarray(bitmap, dtype=np.uint8) * 255).save(out, 'PNG')
  return base64.b64encode(out.getvalue()).decode()


def test_labelme_every_shape_type():
  text = labelme([
      shape('cat', [[30, 20], [10, 5]], 'rectangle'),  # corners in any order
      shape('cat', [[1, 1], [9, 1], [9, 7], [1, 7]], 'rectangle'),  # X-AnyLabeling's 4
      shape('dog', [[5, 5], [25, 8], [15, 30]], 'polygon'),
      shape('dog', [[4, 4], [8, 4], [6, 9]], None),  # labelme's default: polygon
      shape('ball', [[20, 20], [23, 24]], 'circle'),  # radius 5
      shape('box', [[10, 0], [20, 10], [10, 20], [0, 10]], 'rotation'),
      shape('nose', [[3, 4]], 'point'),
      shape('edge', [[1, 2], [11, 2]], 'line'),
      shape('path', [[1, 2], [5, 9], [7, 3]], 'linestrip'),
      shape('prompt', [[1, 1], [2, 2]], 'points'),
  ])
  row = one(read_labelme(text))
  assert row.image_uri == 'a.jpg' and row.resolved_uri == '/d/a.jpg' and row.row == 1
  assert row.split is None  # hash splitting
  assert boxes(row) == [
      ('cat', (10, 5, 30, 20)), ('cat', (1, 1, 9, 7)), ('dog', (5, 5, 25, 30)),
      ('dog', (4, 4, 8, 9)), ('ball', (15, 15, 25, 25)), ('box', (0, 0, 20, 20)),
      ('nose', (3, 4, 3, 4)), ('edge', (1, 2, 11, 2)), ('path', (1, 2, 7, 9)),
      ('prompt', (1, 1, 2, 2))]
  assert all(not o.normalized for o in row.objects)
  assert [o.invalid for o in row.objects] == [''] * 6 + [
      'point_shape', 'line_shape', 'linestrip_shape', 'points_shape']
  assert row.objects[5].corners == (10, 0, 20, 10, 10, 20, 0, 10)
  assert all(o.corners == () for i, o in enumerate(row.objects) if i != 5)
  assert row.labels == ('cat', 'dog', 'ball', 'box', 'nose', 'edge', 'path', 'prompt')
  assert all(o.mask is None for o in row.objects)  # not asked for
  assert row.features == () and all(o.attributes == () for o in row.objects)


def test_labelme_masks_of_every_region_shape():
  bitmap = np.zeros((4, 5), bool)
  bitmap[1:3, 2:5] = True
  text = labelme([
      shape('cat', [[30, 20], [10, 5]], 'rectangle'),
      shape('dog', [[5, 5], [25, 8], [15, 30]]),
      shape('ball', [[20, 20], [23, 24]], 'circle'),
      shape('box', [[10, 0], [20, 10], [10, 20], [0, 10]], 'rotation'),
      shape('blob', [[7, 3], [11, 6]], 'mask', mask=png_b64(bitmap)),
      shape('nose', [[3, 4]], 'point'),
  ])
  row = one(read_labelme(text, MASKS))
  cat, dog, ball, box, blob, nose = row.objects
  assert cat.mask.polygons == ((10, 5, 30, 5, 30, 20, 10, 20),)
  assert dog.mask.polygons == ((5, 5, 25, 8, 15, 30),)
  circle = np.array(ball.mask.polygons[0]).reshape(-1, 2)
  assert len(circle) == 64
  np.testing.assert_allclose(np.hypot(circle[:, 0] - 20, circle[:, 1] - 20), 5)
  assert box.mask.polygons == ((10, 0, 20, 10, 10, 20, 0, 10),)
  assert boxes(row)[4] == ('blob', (7, 3, 12, 7))  # the pixels 7..11, 3..6
  assert blob.mask.rle_size == (40, 60)
  pixels = coco_mask.decode(coco_mask.frPyObjects(
      {'size': [40, 60], 'counts': list(blob.mask.rle_counts)}, 40, 60))
  expected = np.zeros((40, 60), np.uint8)
  expected[3:7, 7:12] = bitmap
  np.testing.assert_array_equal(pixels, expected)
  assert nose.invalid == 'point_shape'  # dropped by the record step: needs no mask


def test_labelme_groups_flags_and_difficult():
  text = labelme([
      shape('car', [[0, 0], [10, 0], [10, 10]], group_id=3, flags={'parked': True}),
      shape('person', [[50, 5], [55, 5], [55, 9]], group_id=3, difficult=True),
      shape('car', [[20, 20], [30, 20], [30, 35]], group_id=3, flags={'parked': False}),
      shape('car', [[40, 0], [45, 0], [45, 4]], group_id=None),
      shape('car', [[1, 2], [3, 4]], 'line', group_id=3),
  ], flags={'night': True, 'blurry': False})
  row = one(read_labelme(text, MASKS))
  # the two car polygons of group 3 are one object (labelme's instance): its box
  # encloses both and its mask has both parts
  assert boxes(row) == [('car', (0, 0, 30, 35)), ('person', (50, 5, 55, 9)),
                        ('car', (40, 0, 45, 4)), ('car', (1, 2, 3, 4))]
  car, person, lone, line = row.objects
  assert car.mask.polygons == ((0, 0, 10, 0, 10, 10), (20, 20, 30, 20, 30, 35))
  assert car.attributes == (('group_id', 3), ('flags/parked', 1))  # the first shape's
  assert person.attributes == (('group_id', 3),) and person.difficult
  assert not car.difficult and lone.attributes == () and line.invalid == 'line_shape'
  assert row.features == (('flags/blurry', 0), ('flags/night', 1))


def test_labelme_image_paths():
  text = labelme([], imagePath='..\\images\\a.jpg')
  row = one(read_labelme(text, path='/d/ann/a.json'))
  assert row.image_uri == '../images/a.jpg' and row.resolved_uri == '/d/images/a.jpg'
  assert row.objects == ()  # an image without objects
  row = one(read_labelme(labelme([]), image_root='gs://bucket/pics'))
  assert row.resolved_uri == 'gs://bucket/pics/a.jpg'


@pytest.mark.parametrize('shapes, fields, message', [
    ([shape('cat', [[1, 'x'], [3, 4]], 'rectangle')], {},
     r"shapes\[0\] \(rectangle 'cat'\): \"points\" must be \[x, y\] pairs of numbers, "
     r"got \[1, 'x'\]"),
    ([shape('cat', [[1, 2, 3], [3, 4]], 'rectangle')], {}, r'pairs of numbers'),
    ([shape('cat', 'oops', 'rectangle')], {}, r'"points" must be a list'),
    ([shape('cat', [[1, 2]], 'rectangle')], {}, r'a rectangle needs 2 corners \(or 4\), got 1'),
    ([shape('cat', [[1, 2], [3, 4]], 'polygon')], {},
     r"shapes\[0\] \(polygon 'cat'\): a polygon needs at least 3 points, got 2"),
    ([shape('cat', [[1, 2]], 'circle')], {}, r'a circle needs 2 points'),
    ([shape('cat', [[1, 2], [3, 4]], 'rotation')], {}, r'rotation .* needs its 4 corners'),
    ([shape('cat', [], 'point')], {}, r'a point needs at least 1 point, got 0'),
    ([shape('cat', [[1, 2]], 'line')], {}, r'a line needs at least 2 points, got 1'),
    ([shape('ok', [[1, 2], [3, 4]], 'rectangle'), shape('cat', [[1, 2]], 'ellipse')], {},
     r"shapes\[1\] \(ellipse 'cat'\): unknown \"shape_type\" 'ellipse'; LabelMe has rectangle"),
    ([shape('', [[1, 2], [3, 4]], 'rectangle')], {}, r'"label" must be a non-empty string'),
    ([shape(None, [[1, 2], [3, 4]], 'rectangle')], {}, r'"label" must be a non-empty string'),
    ([shape('cat', [[1, 2], [3, 4]], 'rectangle', group_id='a')], {}, r'"group_id" must be'),
    ([shape('cat', [[1, 2], [3, 4]], 'rectangle', flags={'x': 'yes'})], {}, r'"flags"'),
    ([shape('cat', [[1, 2], [3, 4]], 'rectangle', difficult='very')], {}, r'"difficult"'),
    (['cat'], {}, r'shapes\[0\]: a shape is an object'),
    ({'cat': 1}, {}, r'"shapes" must be a list'),
    ([], {'flags': ['x']}, r'"flags": flags are \{name: true or false\}'),
    ([], {'imagePath': None}, r'no "imagePath"'),
    ([], {'imagePath': ' '}, r'no "imagePath"'),
    ([], {'imagePath': None, 'imageData': 'aGVsbG8='},
     r'only "imageData" \(the image embedded\), which is not read'),
])
def test_labelme_bad_input_fails_the_image(shapes, fields, message):
  error = one(read_labelme(labelme(shapes, **fields)))
  assert isinstance(error, RowError) and error.reason == 'bad_row'
  assert error.source == '/d/a.json' and error.row == 1
  assert error.uri == (None if 'imagePath' in fields else 'a.jpg')
  assert re.search(message, error.message), error.message


def test_labelme_bad_mask_shape_with_masks():
  bad = labelme([shape('blob', [[1, 1], [3, 3]], 'mask', mask='not base64!')])
  assert one(read_labelme(bad)).objects[0].mask is None  # not read unless asked
  error = one(read_labelme(bad, MASKS))
  assert isinstance(error, RowError) and 'base64 PNG' in error.message
  no_size = labelme([shape('blob', [[1, 1], [3, 3]], 'mask', mask=png_b64(np.ones((3, 3))))],
                    imageHeight=None)
  assert 'imageHeight' in one(read_labelme(no_size, MASKS)).message
  mixed = labelme([shape('blob', [[1, 1], [3, 3]], 'mask', mask=png_b64(np.ones((3, 3))),
                         group_id=1),
                   shape('blob', [[5, 5], [9, 5], [9, 9]], group_id=1)])
  assert 'cannot be joined' in one(read_labelme(mixed, MASKS)).message


def test_labelme_files_that_are_not_labelme():
  error = one(read_labelme('{"shapes": [1, 2'))  # truncated: that image fails
  assert isinstance(error, RowError) and 'not a valid LabelMe JSON file' in error.message
  with pytest.raises(ManifestError, match='not one'):
    read_labelme('[{"shapes": []}]')
  with pytest.raises(ManifestError, match='an object with "shapes"'):
    read_labelme('{"imagePath": "a.jpg"}')


def test_labelme_is_detected_beside_coco():
  assert detect_format('/d/a.json', labelme([])) == 'labelme'
  assert detect_format('/d/c.json', '{"images": [], "annotations": []}') == 'coco_json'


# --- CVAT, parser -----------------------------------------------------------------------

META = ('<meta><task><id>1</id><name>t</name><labels>'
        + ''.join(f'<label><name>{n}</name><color>#fff</color><type>any</type>'
                  f'<attributes><attribute><name>color</name><input_type>select</input_type>'
                  f'</attribute></attributes></label>' for n in ('zebra', 'ant', 'cat'))
        + '</labels></task><dumped>2024-01-01</dumped></meta>')


def cvat(images, meta=META):
  return ('<?xml version="1.0" encoding="utf-8"?>\n<annotations>\n  <version>1.1</version>\n'
          f'  {meta}\n' + '\n'.join(f'  {i}' for i in images) + '\n</annotations>\n')


def image(body='', name='a.jpg', id_=0, **attrs):
  extra = ''.join(f' {k}="{v}"' for k, v in attrs.items())
  return f'<image id="{id_}" name="{name}" width="60" height="40"{extra}>{body}</image>'


def read_cvat(text, annotations=frozenset(), path='/d/annotations.xml', **kwargs):
  return list(parse_manifest_text(path, text, 'cvat', annotations=annotations, **kwargs))


def test_cvat_every_shape():
  rle = '3, 2, 4, 3'  # a 3 x 4 box: 0 0 0 1 / 1 0 0 0 / 0 1 1 1
  text = cvat([image(
      '<box label="cat" source="manual" occluded="1" xtl="10.5" ytl="5" xbr="30" ybr="20" '
      'z_order="0" group_id="2"><attribute name="color">red</attribute></box>'
      '<box label="ant" occluded="0" xtl="0" ytl="0" xbr="20" ybr="10" rotation="90"/>'
      '<polygon label="zebra" occluded="0" points="5.00,5.00;25.00,8.00;15.00,30.00"/>'
      '<polyline label="cat" occluded="0" points="1,2;11,2"/>'
      '<points label="ant" occluded="0" points="3,4"/>'
      '<ellipse label="cat" occluded="0" cx="20" cy="20" rx="8" ry="3" rotation="90"/>'
      '<cuboid label="cat" occluded="0" xtl1="1" ytl1="1" xbl1="1" ybl1="9" xtr1="8" '
      'ytr1="1" xbr1="8" ybr1="9" xtl2="3" ytl2="0" xbl2="3" ybl2="7" xtr2="12" ytr2="0" '
      'xbr2="12" ybr2="7"/>'
      f'<mask label="zebra" occluded="0" rle="{rle}" left="40" top="30" width="4" '
      'height="3"/>'
      '<tag label="cat" source="manual"><attribute name="color">blue</attribute></tag>',
      subset='Train')])
  row = one(read_cvat(text))
  assert row.image_uri == 'a.jpg' and row.resolved_uri == '/d/a.jpg' and row.split == 'train'
  got = boxes(row)
  assert [label for label, _ in got] == ['cat', 'ant', 'zebra', 'cat', 'ant', 'cat', 'cat',
                                         'zebra']
  np.testing.assert_allclose([b for _, b in got], [
      (10.5, 5, 30, 20), (5, -5, 15, 15), (5, 5, 25, 30), (1, 2, 11, 2), (3, 4, 3, 4),
      (17, 12, 23, 28), (1, 0, 12, 9), (40, 30, 44, 33)], atol=1e-9)
  assert [o.invalid for o in row.objects] == [
      '', '', '', 'polyline_shape', 'points_shape', '', '', '']
  # the declared order gives the class ids (0-based here, 1-based in the label map)
  assert [o.source_id for o in row.objects] == [2, 1, 0, 2, 1, 2, 2, 0]
  cat, ant = row.objects[:2]
  assert cat.attributes == (('occluded', 1), ('group_id', 2), ('attribute/color', 'red'))
  assert ant.attributes == (('occluded', 0),)
  assert cat.corners == ()
  np.testing.assert_allclose(ant.corners, (15, -5, 15, 15, 5, 15, 5, -5), atol=1e-9)
  assert row.labels == ('cat', 'ant', 'zebra')
  assert row.features == (('tag/cat', 1), ('tag/cat/color', 'blue'))
  assert all(o.mask is None and o.keypoints == () for o in row.objects)


def test_cvat_masks():
  rle = '3, 2, 4, 3'
  text = cvat([image(
      '<box label="cat" occluded="0" xtl="10" ytl="5" xbr="30" ybr="20"/>'
      '<box label="ant" occluded="0" xtl="0" ytl="0" xbr="20" ybr="10" rotation="90"/>'
      '<polygon label="zebra" occluded="0" points="5,5;25,8;15,30"/>'
      '<ellipse label="cat" occluded="0" cx="20" cy="20" rx="8" ry="3"/>'
      '<cuboid label="cat" occluded="0" xtl1="1" ytl1="1" xbl1="1" ybl1="9" xtr1="8" '
      'ytr1="1" xbr1="8" ybr1="9" xtl2="3" ytl2="0" xbl2="3" ybl2="7" xtr2="12" ytr2="0" '
      'xbr2="12" ybr2="7"/>'
      f'<mask label="zebra" occluded="0" rle="{rle}" left="40" top="30" width="4" '
      'height="3"/>'
      '<polyline label="cat" occluded="0" points="1,2;11,2"/>')])
  box, turned, polygon, ellipse, cuboid, mask, line = one(read_cvat(text, MASKS)).objects
  assert box.mask.polygons == ((10, 5, 30, 5, 30, 20, 10, 20),)
  np.testing.assert_allclose(turned.mask.polygons[0], turned.corners)
  assert polygon.mask.polygons == ((5, 5, 25, 8, 15, 30),)
  points = np.array(ellipse.mask.polygons[0]).reshape(-1, 2)
  np.testing.assert_allclose(((points[:, 0] - 20) / 8) ** 2 + ((points[:, 1] - 20) / 3) ** 2, 1)
  hull = set(zip(cuboid.mask.polygons[0][0::2], cuboid.mask.polygons[0][1::2]))
  assert hull == {(1, 1), (1, 9), (8, 9), (12, 7), (12, 0), (3, 0)}
  assert mask.mask.rle_size == (40, 60)
  pixels = coco_mask.decode(coco_mask.frPyObjects(
      {'size': [40, 60], 'counts': list(mask.mask.rle_counts)}, 40, 60))
  expected = np.zeros((40, 60), np.uint8)
  expected[30:33, 40:44] = [[0, 0, 0, 1], [1, 0, 0, 0], [0, 1, 1, 1]]
  np.testing.assert_array_equal(pixels, expected)
  assert line.mask is None and line.invalid == 'polyline_shape'


def test_cvat_points_grouped_with_a_box_are_its_keypoints():
  text = cvat([
      image('<box label="cat" occluded="0" xtl="10" ytl="5" xbr="30" ybr="20" group_id="1"/>'
            '<points label="cat" occluded="0" points="12,6;14,7" group_id="1"/>'
            '<points label="ant" occluded="1" points="20,10" group_id="1"/>'
            '<box label="zebra" occluded="0" xtl="0" ytl="0" xbr="5" ybr="5"/>'
            '<points label="ant" occluded="0" points="1,1"/>'),
      image('<box label="cat" occluded="0" xtl="1" ytl="1" xbr="5" ybr="5" group_id="4"/>'
            '<box label="cat" occluded="0" xtl="1" ytl="1" xbr="5" ybr="5" group_id="4"/>'
            '<points label="ant" occluded="0" points="2,2" group_id="4"/>', name='b.jpg')])
  first, second = read_cvat(text, KEYPOINTS)
  cat, zebra, loose = first.objects
  # ant (declared before cat) first; padded to the most points a group has: 3
  assert cat.keypoints == ((20, 10, 1), (12, 6, 2), (14, 7, 2))
  assert cat.keypoint_names == ('ant', 'cat/1', 'cat/2')
  assert zebra.keypoints == ((0, 0, 0),) * 3 and zebra.keypoint_names == ('',) * 3
  assert loose.invalid == 'points_without_object' and loose.label == 'ant'
  assert first.labels == ('cat', 'zebra', 'ant')
  # a group of two boxes: whose keypoints would they be? neither's: dropped
  assert [o.invalid for o in second.objects] == ['', '', 'points_without_object']


def test_cvat_subsets_and_labels_without_meta():
  text = cvat([image(name=f'{i}.jpg', id_=i, **({'subset': s} if s else {}))
               for i, s in enumerate(['Train', 'Validation', 'Test', 'default', None,
                                      'validation'])])
  assert [r.split for r in read_cvat(text)] == ['train', 'eval', 'test', None, None, 'eval']
  assert [r.row for r in read_cvat(text)] == [1, 2, 3, 4, 5, 6]
  error = one(read_cvat(cvat([image(subset='fold1')])))
  assert isinstance(error, RowError) and "unknown subset 'fold1'" in error.message
  # no labels declared: every label is taken, with no class ids of its own
  row = one(read_cvat(cvat([image('<box label="any" xtl="1" ytl="1" xbr="2" ybr="2"/>')],
                           meta='')))
  assert boxes(row) == [('any', (1, 1, 2, 2))] and row.objects[0].source_id is None


def test_cvat_images_folder(tmp_path):
  """As Datumaro's CVAT importer: <xml folder>/images/<name> (CVAT's task export), then
  images/<subset>/<name> (its project export), else beside the XML."""
  xml = str(tmp_path / 'annotations.xml')
  text = cvat([image(name='a.jpg'), image(name='b.jpg', subset='Train'),
               image(name='c.jpg'), image(name='sub/d.jpg', subset='Test'),
               image(name='/abs/e.jpg')])
  assert [r.resolved_uri for r in read_cvat(text, path=xml)] == [
      f'{tmp_path}/a.jpg', f'{tmp_path}/b.jpg', f'{tmp_path}/c.jpg', f'{tmp_path}/sub/d.jpg',
      '/abs/e.jpg']  # no images/ folder
  write_image(str(tmp_path / 'images/a.jpg'))
  write_image(str(tmp_path / 'images/Train/b.jpg'))
  write_image(str(tmp_path / 'images/Test/sub/d.jpg'))
  assert [r.resolved_uri for r in read_cvat(text, path=xml)] == [
      f'{tmp_path}/images/a.jpg', f'{tmp_path}/images/Train/b.jpg', f'{tmp_path}/c.jpg',
      f'{tmp_path}/images/Test/sub/d.jpg', '/abs/e.jpg']
  assert [r.resolved_uri for r in read_cvat(text, path=xml, image_root='/pics')] == [
      '/pics/a.jpg', '/pics/b.jpg', '/pics/c.jpg', '/pics/sub/d.jpg', '/abs/e.jpg']


BOX = 'xtl="1" ytl="1" xbr="5" ybr="5"'


@pytest.mark.parametrize('body, message', [
    ('<box label="cat" xtl="1" ytl="x" xbr="5" ybr="5"/>',
     r'<image id="0" name="a.jpg">, <box> 1: "ytl" must be a number of pixels, got \'x\''),
    ('<box label="cat" xtl="1" ytl="1" xbr="5"/>', r'<box> 1: "ybr" must be a number'),
    (f'<box label="cat" {BOX}/><box label="cat" {BOX} rotation="a lot"/>',
     r'<box> 2: "rotation" must be a number'),
    ('<polygon label="cat" points="1,2;3,4"/>', r'<polygon> 1: a <polygon> needs at least 3 '
     r'points, got 2'),
    ('<polygon label="cat" points="1,2;3;5,6"/>', r'"points" must be "x1,y1;x2,y2;..."'),
    ('<polygon label="cat" points="1,2;3,4;5,b"/>', r'"points" must be'),
    ('<polygon label="cat"/>', r'"points" must be'),
    ('<polyline label="cat" points="1,2"/>', r'a <polyline> needs at least 2 points'),
    ('<ellipse label="cat" cx="1" cy="1" rx="2"/>', r'"ry" must be a number'),
    ('<cuboid label="cat" xtl1="1"/>', r'"ytl1" must be a number'),
    ('<mask label="cat" rle="1,2" left="0" top="0" width="a" height="1"/>',
     r'"width" must be a whole number'),
    (f'<box label="cat" {BOX}/><circle label="cat" cx="1"/>',
     r'<circle> 1: unknown shape <circle>; CVAT for images 1\.1 has box, polygon'),
    ('<skeleton label="cat"><points label="nose" points="1,1"/></skeleton>',
     r'<skeleton> 1: skeletons are not read'),
    (f'<box label="dog" {BOX}/>',
     r"<box> 1: label 'dog' is not declared in <meta> <labels> \(declared: zebra, ant, cat\)"),
    (f'<box {BOX}/>', r'<box> 1: it has no "label"'),
    ('<tag label="dog"/>', r"<tag> 1: label 'dog' is not declared"),
    (f'<box label="cat" occluded="yes" {BOX}/>', r'"occluded" must be 0 or 1'),
    (f'<box label="cat" group_id="g" {BOX}/>', r'"group_id" must be a whole number'),
])
def test_cvat_bad_shape_fails_its_image(body, message):
  items = read_cvat(cvat([image(body), image(name='ok.jpg', id_=1)]))
  error, fine = items
  assert isinstance(fine, ManifestRow) and fine.row == 2
  assert isinstance(error, RowError) and error.reason == 'bad_row'
  assert error.source == '/d/annotations.xml' and error.row == 1 and error.uri == 'a.jpg'
  assert re.search(message, error.message), error.message


def test_cvat_bad_mask_rle_with_masks():
  body = '<mask label="cat" rle="1, 2" left="0" top="0" width="2" height="2"/>'
  assert one(read_cvat(cvat([image(body)]))).objects[0].mask is None  # box only
  error = one(read_cvat(cvat([image(body)]), MASKS))
  assert 'add up to 3, not width x height = 4' in error.message
  bad = '<mask label="cat" rle="1, x" left="0" top="0" width="2" height="2"/>'
  assert '"rle" must be run lengths' in one(read_cvat(cvat([image(bad)]), MASKS)).message
  sized = cvat(['<image id="0" name="a.jpg"><mask label="cat" rle="4" left="0" top="0" '
                'width="2" height="2"/></image>'])
  assert '"width" and "height"' in one(read_cvat(sized, MASKS)).message


@pytest.mark.parametrize('left, top', [(0, 0), (3, 2), (-2, -1), (57, 37), (-8, 0), (61, 5)])
def test_a_bitmap_placed_in_the_image_is_cut_at_its_edges(left, top):
  from tfrecorder_component.manifest.cvat import bitmap_mask
  rng = np.random.default_rng(abs(left * 100 + top))
  bitmap = rng.integers(0, 2, size=(5, 7)).astype(np.uint8)
  mask = bitmap_mask(bitmap, left, top, 40, 60)
  canvas = np.zeros((40 + 20, 60 + 20), np.uint8)  # with room around the image
  canvas[top + 10:top + 15, left + 10:left + 17] = bitmap
  expected = canvas[10:50, 10:70]
  assert mask.rle_size == (40, 60) and sum(mask.rle_counts) == 40 * 60
  pixels = coco_mask.decode(coco_mask.frPyObjects(
      {'size': [40, 60], 'counts': list(mask.rle_counts)}, 40, 60))
  np.testing.assert_array_equal(pixels, expected)


def test_a_bitmap_in_a_huge_image_takes_no_image_sized_memory():
  from tfrecorder_component.manifest.cvat import bitmap_mask
  mask = bitmap_mask(np.ones((2, 2)), 5, 5, 10**9, 10**9)
  assert mask.rle_counts == (5 * 10**9 + 5, 2, 10**9 - 2, 2, 10**18 - 6 * 10**9 - 7)


def test_cvat_image_without_a_name():
  error = one(read_cvat(cvat(['<image id="7" width="6" height="4"></image>'])))
  assert isinstance(error, RowError) and error.row == 1
  assert error.message.startswith('<image id="7"> has no "name"')


@pytest.mark.parametrize('text, message', [
    ('', 'not a valid CVAT XML file'),
    ('<annotations><image id="0" name="a.jpg">', 'not a valid CVAT XML file'),
    ('<annotation><filename>a.jpg</filename></annotation>', 'root element is <annotations>'),
    (cvat(['<track id="0" label="cat"><box frame="0" xtl="1" ytl="1" xbr="2" ybr="2"/>'
           '</track>']), 'CVAT for video 1.1, which is not read'),
    ('<annotations><image id="0" name="a.jpg"/>' + META + '</annotations>',
     '<meta> comes after 1 <image>'),
])
def test_cvat_files_that_are_not_cvat_for_images(text, message):
  with pytest.raises(ManifestError, match=message):
    read_cvat(text)


def test_cvat_is_detected_beside_pascal_voc():
  assert detect_format('/d/annotations.xml', cvat([])) == 'cvat'
  assert detect_format('/d/a.xml', '<annotation><filename>a</filename></annotation>') == (
      'pascal_voc')


def test_cvat_parse_keeps_memory_bounded():
  """A large file is parsed in bounded memory: each <image> is let go once read. For
  20,000 images (5 MB) the parse peaks at the text's bytes plus about 1 MB; holding the
  tree would take 10 times the text."""
  body = ('<box label="cat" occluded="0" xtl="1" ytl="2" xbr="30" ybr="40" z_order="0">'
          '<attribute name="color">red</attribute></box>'
          '<polygon label="ant" occluded="0" points="1,2;3,4;5,6;7,8;9,10"/>')
  text = cvat([image(body, name=f'img_{i:06d}.jpg', id_=i) for i in range(20_000)])
  tracemalloc.start()
  try:
    count = 0
    for item in parse_manifest_text('/d/annotations.xml', text, 'cvat'):
      assert isinstance(item, ManifestRow)
      count += 1
    _, peak = tracemalloc.get_traced_memory()
  finally:
    tracemalloc.stop()
  assert count == 20_000
  assert peak < len(text) * 1.5, (peak, len(text))


# --- end to end -------------------------------------------------------------------------


def all_records(out):
  """{source id: (split, example)} over every split written."""
  records = {}
  for split_dir in sorted(glob.glob(os.path.join(out, 'Split-*'))):
    if not glob.glob(os.path.join(split_dir, 'data_tfrecord-*.gz')):
      continue
    for example in read_split(split_dir):
      source_id = feature(example, 'image/source_id')[0].decode()
      assert source_id not in records
      records[source_id] = (os.path.basename(split_dir)[len('Split-'):], example)
  return records


def record_objects(example):
  labels = [t.decode() for t in feature(example, 'image/object/class/text')]
  ids = feature(example, 'image/object/class/label')
  box = list(zip(*(feature(example, f'image/object/bbox/{k}')
                   for k in ('xmin', 'ymin', 'xmax', 'ymax'))))
  return list(zip(labels, ids, box))


def assert_boxes(example, expected, size, ids):
  """The record's objects are `expected` ((label, pixel box) in order), normalised by
  the real image size (height, width), within 1e-4."""
  height, width = size
  assert feature(example, 'image/height') == [height]
  assert feature(example, 'image/width') == [width]
  got = record_objects(example)
  assert [(l, i) for l, i, _ in got] == [(l, ids[l]) for l, _ in expected]
  for (_, _, box), (_, (x0, y0, x1, y1)) in zip(got, expected):
    want = (max(0, x0) / width, max(0, y0) / height, min(x1, width) / width,
            min(y1, height) / height)
    np.testing.assert_allclose(box, want, atol=1e-4)


def read_jsonl(path):
  with open(path) as f:
    return [json.loads(line) for line in f if line.strip()]


def write_labelme_folder(folder):
  """a.jpg (64 x 40) with a rectangle, a polygon, a circle, a point and a box reaching
  past the image; b.png (50 x 30) without objects; c.jpg (80 x 60) whose two car
  polygons of one group are one object, annotated with the wrong imageHeight /
  imageWidth (the stored size counts)."""
  write_image(str(folder / 'a.jpg'), 'JPEG', height=40, width=64)
  write_image(str(folder / 'b.png'), 'PNG', height=30, width=50, seed=1)
  write_image(str(folder / 'c.jpg'), 'JPEG', height=60, width=80, seed=2)
  write_text(str(folder / 'a.json'), labelme([
      shape('cat', [[40, 30], [10, 5]], 'rectangle'),
      shape('dog', [[5, 5], [25, 8], [15, 30]]),
      shape('ball', [[50, 20], [53, 24]], 'circle'),
      shape('nose', [[3, 4]], 'point'),
      shape('cat', [[50, 30], [70, 45]], 'rectangle'),  # clipped to 64 x 40
  ], imagePath='a.jpg', imageHeight=40, imageWidth=64))
  write_text(str(folder / 'b.json'), labelme([], imagePath='b.png'))
  write_text(str(folder / 'c.json'), labelme([
      shape('car', [[10, 10], [30, 12], [20, 25]], group_id=1),
      shape('car', [[40, 30], [60, 30], [50, 50]], group_id=1),
  ], imagePath='c.jpg', imageHeight=600, imageWidth=800, flags={'night': True}))
  return {'a.jpg': ((40, 64), [('cat', (10, 5, 40, 30)), ('dog', (5, 5, 25, 30)),
                               ('ball', (45, 15, 55, 25)), ('cat', (50, 30, 70, 45))]),
          'b.png': ((30, 50), []),
          'c.jpg': ((60, 80), [('car', (10, 10, 60, 50))])}


def test_labelme_folder_through_the_cli(tmp_path, capsys):
  folder = tmp_path / 'labelme'
  expected = write_labelme_folder(folder)
  out = str(tmp_path / 'out')
  assert main(['convert', str(folder), out]) == 0, capsys.readouterr()
  records = all_records(out)
  assert sorted(records) == sorted(expected)
  ids = read_label_map(out)
  # every class the shapes name, the dropped point's too (it keeps its id)
  assert ids == {'ball': 1, 'car': 2, 'cat': 3, 'dog': 4, 'nose': 5}
  for name, (size, objects) in expected.items():
    assert_boxes(records[name][1], objects, size, ids)
  assert feature(records['c.jpg'][1], 'flags/night') == [1]
  assert set(records[n][0] for n in records) <= {'train', 'eval', 'test'}  # hash split
  issues = read_jsonl(os.path.join(out, 'report', 'box_issues.jsonl'))
  assert sorted((i['uri'], i['label'], i['action'], i['reason']) for i in issues) == [
      ('a.jpg', 'cat', 'clipped', 'clipped'), ('a.jpg', 'nose', 'dropped', 'point_shape')]
  assert read_jsonl(os.path.join(out, 'report', 'errors.jsonl')) == []


CVAT_META = META  # zebra, ant, cat: the declared order gives ids 1, 2, 3


def write_cvat_export(folder):
  """annotations.xml of a CVAT project export: images/<subset>/<name> and, for one
  image, images/<name> as a task export has it; Train, Validation, Test and default
  subsets; a box reaching past its image, a rotated box, a polyline, and an image of
  an undeclared label."""
  write_image(str(folder / 'images/Train/t.jpg'), 'JPEG', height=40, width=64)
  write_image(str(folder / 'images/Validation/v.png'), 'PNG', height=30, width=50, seed=1)
  write_image(str(folder / 'images/x.jpg'), 'JPEG', height=60, width=80, seed=2)
  write_image(str(folder / 'images/default/e.jpg'), 'JPEG', height=20, width=20, seed=3)
  write_image(str(folder / 'images/Train/bad.jpg'), 'JPEG', height=20, width=20, seed=4)
  write_text(str(folder / 'annotations.xml'), cvat([
      image('<box label="cat" occluded="1" xtl="10" ytl="5" xbr="40" ybr="30">'
            '<attribute name="color">red</attribute></box>'
            '<polygon label="zebra" occluded="0" points="5,5;25,8;15,30"/>'
            '<box label="ant" occluded="0" xtl="50" ytl="30" xbr="70" ybr="45"/>'
            '<polyline label="cat" occluded="0" points="1,2;11,2"/>',
            name='t.jpg', id_=0, subset='Train'),
      image('<box label="ant" occluded="0" xtl="0" ytl="0" xbr="20" ybr="10" rotation="90"/>',
            name='v.png', id_=1, subset='Validation'),
      image('<polygon label="cat" occluded="0" points="10,10;30,12;20,25"/>',
            name='x.jpg', id_=2, subset='Test'),
      image(name='e.jpg', id_=3, subset='default'),
      image('<box label="dog" occluded="0" xtl="1" ytl="1" xbr="5" ybr="5"/>',
            name='bad.jpg', id_=4, subset='Train'),
  ], meta=CVAT_META))
  return {'t.jpg': ('train', (40, 64), [('cat', (10, 5, 40, 30)), ('zebra', (5, 5, 25, 30)),
                                        ('ant', (50, 30, 70, 45))]),
          'v.png': ('eval', (30, 50), [('ant', (5, -5, 15, 15))]),
          'x.jpg': ('test', (60, 80), [('cat', (10, 10, 30, 25))]),
          'e.jpg': (None, (20, 20), [])}


def test_cvat_export_through_the_cli(tmp_path, capsys):
  folder = tmp_path / 'cvat'
  expected = write_cvat_export(folder)
  out = str(tmp_path / 'out')
  code = main(['convert', str(folder / 'annotations.xml'), out, '--max-error-ratio', '0.5'])
  assert code == 0, capsys.readouterr()
  records = all_records(out)
  assert sorted(records) == sorted(expected)
  ids = read_label_map(out)
  assert ids == {'zebra': 1, 'ant': 2, 'cat': 3}  # the order <meta> declares
  for name, (split, size, objects) in expected.items():
    if split is not None:
      assert records[name][0] == split, name
    assert_boxes(records[name][1], objects, size, ids)
  t = records['t.jpg'][1]
  assert feature(t, 'image/object/occluded') == [1, 0, 0]
  assert feature(t, 'image/object/attribute/color') == [b'red', b'', b'']
  corners = feature(records['v.png'][1], 'image/object/corner/x')
  np.testing.assert_allclose(corners, np.array([15, 15, 5, 5]) / 50, atol=1e-4)
  issues = read_jsonl(os.path.join(out, 'report', 'box_issues.jsonl'))
  assert sorted((i['uri'], i['label'], i['action'], i['reason']) for i in issues) == [
      ('t.jpg', 'ant', 'clipped', 'clipped'), ('t.jpg', 'cat', 'dropped', 'polyline_shape'),
      ('v.png', 'ant', 'clipped', 'clipped'), ('v.png', 'ant', 'clipped', 'corner_outside_image')]
  [error] = read_jsonl(os.path.join(out, 'report', 'errors.jsonl'))
  assert error['uri'] == 'bad.jpg' and error['row'] == 5 and error['reason'] == 'bad_row'
  assert "<image id=\"4\" name=\"bad.jpg\">, <box> 1: label 'dog' is not declared" in (
      error['message'])


def raster(polygon, height, width):
  return coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects([polygon], height, width)))


def iou(a, b):
  a, b = a > 0, b > 0
  return (a & b).sum() / (a | b).sum()


def test_labelme_and_cvat_masks_through_convert(tmp_path):
  folder = tmp_path / 'labelme'
  write_image(str(folder / 'a.jpg'), 'JPEG', height=40, width=64)
  polygon = [5, 5, 40, 8, 20, 35]
  write_text(str(folder / 'a.json'), labelme([
      shape('dog', [[5, 5], [40, 8], [20, 35]]),
      shape('cat', [[44, 4], [60, 20]], 'rectangle')], imagePath='a.jpg'))
  result = trc.convert(str(folder), str(tmp_path / 'out_labelme'), include_masks=True,
                       splits={'train': 1})
  assert result.rows_failed == 0
  (_, example), = all_records(result.output_dir).values()
  assert_boxes(example, [('dog', (5, 5, 40, 35)), ('cat', (44, 4, 60, 20))], (40, 64),
               read_label_map(result.output_dir))
  dog, cat = decoded_masks(example)
  assert iou(dog, raster(polygon, 40, 64)) > 0.99
  rectangle = np.zeros((40, 64), np.uint8)
  rectangle[4:20, 44:60] = 1
  assert iou(cat, rectangle) > 0.9

  cvat_dir = tmp_path / 'cvat'
  write_image(str(cvat_dir / 'images/b.jpg'), 'JPEG', height=40, width=64)
  write_text(str(cvat_dir / 'annotations.xml'), cvat([image(
      '<polygon label="cat" occluded="0" points="5,5;40,8;20,35"/>'
      '<mask label="zebra" occluded="0" rle="3, 2, 4, 3" left="40" top="30" width="4" '
      'height="3"/>', name='b.jpg')]).replace('width="60"', 'width="64"'))
  result = trc.convert(str(cvat_dir / 'annotations.xml'), str(tmp_path / 'out_cvat'),
                       include_masks=True, splits={'train': 1})
  assert result.rows_failed == 0
  (_, example), = all_records(result.output_dir).values()
  assert_boxes(example, [('cat', (5, 5, 40, 35)), ('zebra', (40, 30, 44, 33))], (40, 64),
               {'zebra': 1, 'cat': 3})
  polygon_mask, bitmap = decoded_masks(example)
  assert iou(polygon_mask, raster(polygon, 40, 64)) > 0.99
  expected = np.zeros((40, 64), np.uint8)
  expected[30:33, 40:44] = [[0, 0, 0, 1], [1, 0, 0, 0], [0, 1, 1, 1]]
  np.testing.assert_array_equal(bitmap, expected)


def test_the_format_samples_read(tmp_path):
  """The samples of tests/test_detection_manifests.py, read named and detected."""
  for fmt, name, text in [
      ('labelme', 'm.json', '{"version": "5.2.1", "shapes": [], "imagePath": "a.jpg", '
       '"imageHeight": 10, "imageWidth": 10}'),
      ('cvat', 'm.xml', '<?xml version="1.0"?>\n<annotations><version>1.1</version>'
       '<image id="0" name="a.jpg" width="10" height="10"></image></annotations>')]:
    path = write_text(str(tmp_path / fmt / name), text)
    for given in (fmt, None):
      row = one(read_manifest_file(path, given))
      assert row.image_uri == 'a.jpg' and row.objects == ()


# --- any input: rows or the project's own errors, and every row converts or fails -------

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])
ODD = (st.none() | st.booleans() | st.integers(-3, 70) | st.floats()
       | st.sampled_from([10**30, -10**30, 1e300, '1', 'x', '', [], {}, [1, 2]]))


def mostly(valid, odd=ODD):
  """`valid` three times in four, else `odd`."""
  return st.one_of(valid, valid, valid, odd)


NUMBER = mostly(st.integers(-10, 70), st.floats() | st.sampled_from(['1', 'x', None]))
LABELME_POINTS = mostly(st.lists(mostly(st.lists(NUMBER, min_size=2, max_size=2),
                                        st.lists(NUMBER, max_size=3)), max_size=5))
POINT_COUNTS = {'rectangle': 2, 'polygon': 4, 'circle': 2, 'rotation': 4, 'mask': 2,
                'point': 1, 'points': 2, 'line': 2, 'linestrip': 3}
VALID_SHAPES = st.sampled_from(sorted(POINT_COUNTS)).flatmap(lambda kind: st.fixed_dictionaries({
    'label': st.sampled_from(['cat', 'dog']), 'shape_type': st.just(kind),
    'points': st.lists(st.tuples(st.integers(-4, 20), st.integers(-4, 16)).map(list),
                       min_size=POINT_COUNTS[kind], max_size=POINT_COUNTS[kind])},
    optional={'group_id': st.sampled_from([1, 2, None]),
              'mask': st.just(png_b64(np.ones((3, 4))))}))
ODD_SHAPES = st.fixed_dictionaries(
    {'label': mostly(st.sampled_from(['cat', 'dog']), st.sampled_from([' ', 'a\nb']) | ODD),
     'points': LABELME_POINTS,
     'shape_type': mostly(st.sampled_from(['rectangle', 'polygon', 'circle', 'rotation',
                                           'mask', 'point', 'points', 'line', 'linestrip']),
                          st.just('ellipse') | ODD)},
    optional={'group_id': mostly(st.sampled_from([1, 2, None])),
              'flags': mostly(st.dictionaries(st.sampled_from(['a', 'b']), st.booleans(),
                                              max_size=2),
                              st.dictionaries(st.sampled_from(['a', ' ']), ODD) | ODD),
              'difficult': mostly(st.booleans()),
              'mask': mostly(st.sampled_from([png_b64(np.ones((3, 4))),
                                              png_b64(np.ones((80, 90)))]),
                             st.sampled_from(['', 'abc']) | ODD)})
LABELME_SHAPES = st.lists(mostly(VALID_SHAPES, ODD_SHAPES), max_size=4)
LABELME_DOCS = st.fixed_dictionaries(
    {'shapes': mostly(LABELME_SHAPES),
     'imagePath': mostly(st.sampled_from(['img.png', ' img.png', '.\\img.png']),
                         st.just('') | ODD)},
    optional={'imageData': ODD,
              'flags': mostly(st.dictionaries(st.sampled_from(['n']), st.booleans()),
                              st.dictionaries(st.sampled_from(['n']), ODD) | ODD),
              'imageHeight': mostly(st.just(12), st.sampled_from([0, 2**40]) | ODD),
              'imageWidth': mostly(st.just(16), st.sampled_from([0]) | ODD)})
CVAT_SHAPES = st.sampled_from([
    '<box label="cat" occluded="1" xtl="1" ytl="2" xbr="14" ybr="9"/>',
    '<box label="zebra" xtl="-5" ytl="3" xbr="8" ybr="20" rotation="45"/>',
    '<polygon label="cat" points="1,2;10,4;5,11"/>', '<polyline label="ant" points="1,2;3,4"/>',
    '<points label="ant" points="1,2;4,4" group_id="1"/>',
    '<box label="cat" xtl="0" ytl="0" xbr="5" ybr="5" group_id="1"/>',
    '<ellipse label="cat" cx="5" cy="5" rx="9" ry="2" rotation="10"/>',
    '<mask label="cat" rle="3, 2, 4, 3" left="10" top="9" width="4" height="3"/>',
    '<cuboid label="cat" xtl1="1" ytl1="1" xbl1="1" ybl1="9" xtr1="8" ytr1="1" xbr1="8" '
    'ybr1="9" xtl2="3" ytl2="0" xbl2="3" ybl2="7" xtr2="12" ytr2="0" xbr2="12" ybr2="7"/>',
    '<tag label="cat"/>', '<box label="ant" xtl="1" ytl="1" xbr="3" ybr="3">'
    '<attribute name="a">v</attribute></box>'])
ODD_PIECES = st.sampled_from([
    '<box label="dog" xtl="1"/>', '<box label="cat" xtl="-5" ytl="nan" xbr="1e400" ybr="9"/>',
    '<box label="cat" xtl="1" ytl="1" xbr="2" ybr="2" rotation="inf"/>',
    '<polygon label="cat" points="1,2"/>', '<points label="cat" points="3,3;x,y"/>',
    '<mask label="cat" rle="1" left="0" top="0" width="99999" height="99999"/>',
    '<skeleton label="cat"/>', '<box label="cat" occluded="2" xtl="1" ytl="2" xbr="3" ybr="4"/>',
    '<', '"', '&amp;', '<image id="9" name="img.png">', '</image>', '<track id="1">',
    ' subset="Test"'])
CVAT_PIECES = mostly(CVAT_SHAPES, ODD_PIECES)
CVAT_IMAGES = st.lists(st.tuples(
    mostly(st.just('img.png'), st.sampled_from(['', 'other.png'])),
    mostly(st.sampled_from(['', 'Train', 'default']), st.just('fold')),
    st.lists(CVAT_PIECES, max_size=4).map(''.join)), max_size=4)


@pytest.fixture(scope='module')
def fuzz_folder(tmp_path_factory):
  d = tmp_path_factory.mktemp('fuzz')
  write_image(str(d / 'img.png'), 'PNG', height=12, width=16)
  return d


def convert_every_row(path, fmt, annotations, outcomes):
  """Reads `path` as a run does; each row converts (masks, keypoints) or fails with a
  RowError; a refused file is a ManifestError naming it. Counts what became of each in
  `outcomes`."""
  from tfrecorder_component.steps import row as row_lib
  from tfrecorder_component.options import ConversionOptions
  options = ConversionOptions(include_masks='masks' in annotations,
                              include_keypoints='keypoints' in annotations)
  try:
    items = list(iter_manifest_file(path, fmt, annotations=annotations).items)
  except ManifestError as e:
    assert path in str(e)
    outcomes['file'] += 1
    return
  for item in items:
    assert isinstance(item, (ManifestRow, RowError)), type(item)
    if isinstance(item, RowError):
      assert item.reason and item.message and item.row
      outcomes['row_error'] += 1
      continue
    ids = {label: i for i, label in enumerate(
        dict.fromkeys((*item.labels, *(o.label for o in item.objects))), start=1)}
    try:
      out = row_lib.convert_row(item, ids, options)
      assert out.record
      outcomes['record'] += 1
      outcomes['objects'] += len(feature(tf.train.Example.FromString(out.record),
                                         'image/object/class/label'))
    except RowError as e:
      assert e.reason and e.message
      outcomes['failed_record'] += 1


def test_labelme_any_input_reads_and_converts_or_fails_cleanly(fuzz_folder):
  outcomes = collections.Counter()

  @FUZZ
  @given(LABELME_DOCS, st.sampled_from([frozenset(), MASKS]))
  def example(doc, annotations):
    path = write_text(str(fuzz_folder / 'a.json'), json.dumps(doc))
    convert_every_row(path, 'labelme', annotations, outcomes)

  example()
  assert outcomes['record'] and outcomes['objects'] and outcomes['row_error'], outcomes


def test_cvat_any_input_reads_and_converts_or_fails_cleanly(fuzz_folder):
  outcomes = collections.Counter()

  @FUZZ
  @given(CVAT_IMAGES, st.sampled_from([frozenset(), MASKS, KEYPOINTS, MASKS | KEYPOINTS]),
         st.booleans())
  def example(images, annotations, declared):
    body = [f'<image id="{i}" name="{n}" width="16" height="12"'
            + (f' subset="{s}"' if s else '') + f'>{shapes}</image>'
            for i, (n, s, shapes) in enumerate(images)]
    path = write_text(str(fuzz_folder / 'annotations.xml'),
                      cvat(body, meta=META if declared else ''))
    convert_every_row(path, 'cvat', annotations, outcomes)

  example()
  assert outcomes['record'] and outcomes['objects'] and outcomes['row_error'], outcomes
