"""Detection manifests (AutoML / Vertex CSV and JSONL, COCO, Pascal VOC) and extra
feature columns, parsed from real files."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from images import write_text
from manifest_items import (FORMAT_SAMPLES, JSON_SCALARS, ONLY_NAMED, SETTINGS, check_items,
                            errors_of, rows_of)
from tfrecorder_component.errors import ManifestError, RowError, error_record
from tfrecorder_component.steps.policy import format_error
from tfrecorder_component.manifest.registry import FORMATS
from tfrecorder_component.manifest import (MANIFEST_FORMATS, ManifestRow, ObjectBox, detect_format,
                                           parse_manifest_text, read_manifest_file)


# AutoML / Vertex detection CSV


def test_detection_csv_two_and_four_vertices_no_box_and_ml_use(tmp_path):
  path = write_text(str(tmp_path / 'boxes.csv'),
                    'TRAIN,gs://b/a.jpg,cat,0.1,0.2,,,0.5,0.6,,\n'
                    'TRAIN,gs://b/a.jpg,dog,0.3,0.1,0.9,0.1,0.9,0.4,0.3,0.4\n'
                    'VALIDATION,img/b.jpg,,,,,,,,,\n'
                    'TEST,img/c.jpg,cat,0,0,,,1,1,,\n')
  items = read_manifest_file(path)
  assert all(isinstance(i, ManifestRow) for i in items)
  assert [(r.row, r.image_uri, r.split, r.labels) for r in items] == [
      (1, 'gs://b/a.jpg', 'train', ('cat',)), (2, 'gs://b/a.jpg', 'train', ('dog',)),
      (3, 'img/b.jpg', 'eval', ()), (4, 'img/c.jpg', 'test', ('cat',))]
  assert items[0].objects == (ObjectBox('cat', 0.1, 0.2, 0.5, 0.6),)
  assert items[1].objects == (ObjectBox('dog', 0.3, 0.1, 0.9, 0.4),)
  assert items[2].objects == ()
  assert items[2].resolved_uri == str(tmp_path / 'img/b.jpg')
  assert items[3].objects[0].normalized and items[3].features == ()


def test_detection_csv_without_ml_use_with_header(tmp_path):
  path = write_text(str(tmp_path / 'boxes.csv'),
                    'image_uri,label,x_min,y_min,x2,y2,x_max,y_max,x4,y4\n'
                    'a.jpg,cat,0.1,0.2,,,0.5,0.6,,\n'
                    'b.png,,,,,,,,,\n')
  assert detect_format(path, open(path).read()) == 'automl_detection_csv'
  items = read_manifest_file(path)
  assert [(r.row, r.image_uri, r.split, r.objects) for r in items] == [
      (2, 'a.jpg', None, (ObjectBox('cat', 0.1, 0.2, 0.5, 0.6),)), (3, 'b.png', None, ())]


def test_detection_csv_without_header_or_ml_use_and_trailing_uri_only_rows(tmp_path):
  path = write_text(str(tmp_path / 'boxes.csv'),
                    'a.jpg,cat,0.1,0.2,,,0.5,0.6,,\nb.jpg,,,,,,,,,\n')
  items = read_manifest_file(path)
  assert [(r.image_uri, r.split, r.labels, len(r.objects)) for r in items] == [
      ('a.jpg', None, ('cat',), 1), ('b.jpg', None, (), 0)]


def test_detection_csv_bad_rows_fail_alone(tmp_path):
  path = write_text(str(tmp_path / 'boxes.csv'),
                    'TRAIN,a.jpg,cat,0.1,0.2,,,0.5,0.6,,\n'
                    'TRAIN,b.jpg,cat,abc,0.2,,,0.5,0.6,,\n'
                    'TRAIN,c.jpg,cat,0.1,0.2,,,,,,\n'
                    'TRAIN,d.jpg,,0.1,0.2,,,0.5,0.6,,\n'
                    'TRAIN,e.jpg,cat,1.5,nan,,,-0.2,0.6,,\n'
                    'TRAIN,f.jpg,cat,0.1,0.2,,,0.5,0.6,,,extra\n')
  items = read_manifest_file(path, 'automl_detection_csv')
  errors = errors_of(items)
  assert [(e.row, e.reason, e.uri) for e in errors] == [
      (2, 'bad_row', 'b.jpg'), (3, 'bad_row', 'c.jpg'), (4, 'bad_row', 'd.jpg'),
      (6, 'bad_row', 'f.jpg')]
  assert "'abc'" in errors[0].message and 'number' in errors[0].message
  assert 'X_MIN,Y_MIN,,,X_MAX,Y_MAX,,' in errors[1].message
  assert 'no label' in errors[2].message
  rows = rows_of(items)
  assert [r.image_uri for r in rows] == ['a.jpg', 'e.jpg']
  box = rows[1].objects[0]  # out of range and NaN: checked later, against the image
  assert (box.xmin, box.xmax) == (1.5, -0.2) and box.ymin != box.ymin


def test_detection_csv_split_override_and_uris_relative_to_the_manifest(tmp_path):
  path = write_text(str(tmp_path / 'm' / 'boxes.csv'), 'a.jpg,cat,0.1,0.2,,,0.5,0.6,,\n')
  [row] = read_manifest_file(path, split_override='eval')
  assert row.split == 'eval' and row.resolved_uri == str(tmp_path / 'm' / 'a.jpg')
  [row] = read_manifest_file(path, image_root='gs://bucket/imgs/')  # image_root wins
  assert row.image_uri == 'a.jpg' and row.resolved_uri == 'gs://bucket/imgs/a.jpg'


# Vertex AI JSONL


def test_vertex_jsonl_detection_with_string_coordinates(tmp_path):
  lines = [
      {'imageGcsUri': 'gs://b/a.jpg',
       'boundingBoxAnnotations': [
           {'displayName': 'cat', 'xMin': 0.1, 'yMin': 0.2, 'xMax': 0.5, 'yMax': 0.6},
           {'displayName': 'dog', 'xMin': '0.3', 'yMin': '0.1', 'xMax': '0.9', 'yMax': '0.4',
            'annotationResourceLabels': {'x': 'y'}},
           {'displayName': 'cat', 'xMin': 0, 'yMin': 0, 'xMax': 1, 'yMax': 1}],
       'dataItemResourceLabels': {'aiplatform.googleapis.com/ml_use': 'training'}},
      {'imageGcsUri': 'b.jpg', 'boundingBoxAnnotations': []},
      {'imageGcsUri': 'c.jpg', 'classificationAnnotation': {'displayName': 'cat'}},
      {'imageGcsUri': 'd.jpg', 'boundingBoxAnnotations': [
          {'displayName': 'cat', 'xMin': 'left', 'yMin': 0, 'xMax': 1, 'yMax': 1}]},
  ]
  path = write_text(str(tmp_path / 'm.jsonl'), '\n'.join(json.dumps(l) for l in lines) + '\n')
  items = read_manifest_file(path)
  a, b, c, bad = items
  assert a.labels == ('cat', 'dog') and a.split == 'train'
  assert a.objects == (ObjectBox('cat', 0.1, 0.2, 0.5, 0.6), ObjectBox('dog', 0.3, 0.1, 0.9, 0.4),
                       ObjectBox('cat', 0.0, 0.0, 1.0, 1.0))
  assert b.objects == () and b.labels == () and b.resolved_uri == str(tmp_path / 'b.jpg')
  assert c.objects is None and c.labels == ('cat',)
  assert isinstance(bad, RowError) and bad.reason == 'bad_row' and bad.row == 4
  assert 'xMin' in bad.message and 'left' in bad.message


def test_vertex_jsonl_extra_fields_are_typed_features(tmp_path):
  lines = [
      {'imageGcsUri': 'a.jpg', 'weather': 'sunny', 'count': 3, 'score': 1, 'ok': True,
       'note': None},
      {'imageGcsUri': 'b.jpg', 'weather': 'rain', 'count': 4, 'score': 0.5, 'ok': False},
      {'imageGcsUri': 'c.jpg', 'meta': {'nested': 1}},
  ]
  path = write_text(str(tmp_path / 'm.jsonl'), '\n'.join(json.dumps(l) for l in lines))
  a, b, bad = read_manifest_file(path)
  assert a.features == (('count', 3), ('ok', 1), ('score', 1.0), ('weather', 'sunny'))
  assert b.features == (('count', 4), ('ok', 0), ('score', 0.5), ('weather', 'rain'))
  assert isinstance(a.features[2][1], float)
  assert isinstance(bad, RowError) and bad.reason == 'bad_row' and "'meta'" in bad.message


def test_vertex_jsonl_declared_types(tmp_path):
  lines = [{'imageGcsUri': 'a.jpg', 'count': '3', 'id': 7},
           {'imageGcsUri': 'b.jpg', 'count': 'many', 'id': 8}]
  path = write_text(str(tmp_path / 'm.jsonl'), '\n'.join(json.dumps(l) for l in lines))
  a, bad = read_manifest_file(path, feature_types={'count': 'int', 'id': 'string'})
  assert a.features == (('count', 3), ('id', '7'))
  assert bad.reason == 'bad_feature' and bad.row == 2 and bad.uri == 'b.jpg'
  assert "'count'" in bad.message and "'many'" in bad.message and 'int' in bad.message


# COCO JSON


COCO = {
    'images': [
        {'id': 10, 'file_name': 'a.jpg', 'width': 640, 'height': 480},
        {'id': 11, 'file_name': 'sub/b.jpg', 'width': 320, 'height': 200},
        {'id': 12, 'file_name': 'empty.jpg', 'width': 100, 'height': 100},
    ],
    'annotations': [
        {'id': 1, 'image_id': 10, 'category_id': 18, 'bbox': [10, 20, 30, 40], 'area': 1000.5,
         'iscrowd': 0},
        {'id': 2, 'image_id': 10, 'category_id': 90, 'bbox': [0.5, 1.5, 100, 50], 'area': 4000,
         'iscrowd': 1, 'segmentation': {'counts': 'abc', 'size': [480, 640]}},
        {'id': 3, 'image_id': 99, 'category_id': 18, 'bbox': [1, 2, 3, 4]},
        {'id': 4, 'image_id': 11, 'category_id': 1, 'bbox': [5, 5, 10, 10]},
        {'id': 5, 'image_id': 11, 'category_id': 42, 'bbox': [5, 5, 10, 10]},
        {'id': 6, 'image_id': 11, 'category_id': 1, 'bbox': [5, 'x', 10, 10]},
        {'id': 7, 'image_id': 11, 'category_id': 1, 'bbox': [5, 5, 10]},
    ],
    'categories': [{'id': 1, 'name': 'person'}, {'id': 18, 'name': 'dog'},
                   {'id': 90, 'name': 'toothbrush'}],
}


def test_coco_one_row_an_image_with_its_boxes_and_non_contiguous_categories(tmp_path):
  path = write_text(str(tmp_path / 'ann' / 'instances.json'), json.dumps(COCO))
  items = read_manifest_file(path)
  rows, errors = rows_of(items), errors_of(items)
  assert [(r.row, r.image_uri, r.labels) for r in rows] == [
      (1, 'a.jpg', ('dog', 'toothbrush')), (2, 'sub/b.jpg', ('person',)), (3, 'empty.jpg', ())]
  assert rows[0].objects == (
      ObjectBox('dog', 10, 20, 40, 60, normalized=False, area=1000.5, source_id=18),
      ObjectBox('toothbrush', 0.5, 1.5, 100.5, 51.5, normalized=False, is_crowd=True, area=4000,
                source_id=90))
  assert rows[1].objects == (ObjectBox('person', 5, 5, 15, 15, normalized=False, source_id=1),)
  assert rows[2].objects == ()  # an image without annotations: a record without boxes
  assert rows[0].resolved_uri == str(tmp_path / 'ann' / 'a.jpg')
  assert rows[1].resolved_uri == str(tmp_path / 'ann' / 'sub/b.jpg')
  assert all(r.split is None and r.source == path for r in rows)
  assert all(e.reason == 'bad_row' for e in errors)
  assert ['annotation id 3' in errors[0].message, 'annotation id 5' in errors[1].message,
          'annotation id 6' in errors[2].message,
          'annotation id 7' in errors[3].message] == [True] * 4
  assert 'image_id 99' in errors[0].message and 'category_id 42' in errors[1].message
  assert (errors[1].row, errors[1].uri) == (2, 'sub/b.jpg')


def test_an_annotation_of_no_known_image_is_named_by_its_place_in_the_file(tmp_path):
  """It has no image, so no row and no URI: errors.jsonl and every message name its
  place in "annotations" instead."""
  path = write_text(str(tmp_path / 'instances.json'), json.dumps(COCO))
  unknown = errors_of(read_manifest_file(path))[0]
  record = error_record(unknown)
  assert (record['row'], record['uri'], record['annotation']) == (None, None, 2)
  assert format_error(record) == (
      f'{path} annotations[2]: bad_row: annotation id 3 (annotations[2]): unknown image_id '
      '99; it must be the id of an entry of "images"')
  assert str(unknown).startswith(f'{path} annotations[2]: bad_row: ')


def test_coco_objects_keep_annotation_order(tmp_path):
  """Objects are in the file's annotation order (as Model Garden's COCO readers and
  pycocotools give them), masks and keypoints with them: reversed annotations give
  reversed objects."""
  shuffled = dict(COCO, annotations=COCO['annotations'][::-1])
  rows = rows_of(read_manifest_file(write_text(str(tmp_path / 'a.json'), json.dumps(COCO))))
  again = rows_of(read_manifest_file(write_text(str(tmp_path / 'b.json'), json.dumps(shuffled))))
  assert any(len(r.objects) > 1 for r in rows)
  assert [r.objects[::-1] for r in again] == [r.objects for r in rows]
  first = next(r for r in rows if len(r.objects) > 1)
  in_file = [a for a in COCO['annotations'] if a['image_id'] == 10]
  assert [o.xmin for o in first.objects] == [float(a['bbox'][0]) for a in in_file]


def test_coco_custom_image_root_and_split(tmp_path):
  path = write_text(str(tmp_path / 'instances.json'), json.dumps(COCO))
  items = read_manifest_file(path, split_override='train', image_root='gs://bucket/train2017')
  rows = rows_of(items)
  assert rows[1].resolved_uri == 'gs://bucket/train2017/sub/b.jpg'
  assert {r.split for r in rows} == {'train'}
  local = rows_of(read_manifest_file(path, image_root=str(tmp_path / 'images')))
  assert local[0].resolved_uri == str(tmp_path / 'images' / 'a.jpg')


def test_coco_malformed_json_is_a_manifest_error(tmp_path):
  path = write_text(str(tmp_path / 'instances.json'), '{"images": [')
  with pytest.raises(ManifestError, match='COCO'):
    read_manifest_file(path)
  path = write_text(str(tmp_path / 'other.json'), '[1, 2]')
  with pytest.raises(ManifestError, match='images'):
    read_manifest_file(path)


def test_coco_bad_image_entries(tmp_path):
  data = {'images': [{'id': 1, 'file_name': 'a.jpg'}, {'id': 2}, {'id': 1, 'file_name': 'c.jpg'}],
          'categories': []}
  items = read_manifest_file(write_text(str(tmp_path / 'c.json'), json.dumps(data)))
  assert [(r.row, r.image_uri) for r in rows_of(items)] == [(1, 'a.jpg')]
  errors = errors_of(items)
  assert [(e.row, e.reason) for e in errors] == [(2, 'bad_row'), (3, 'bad_row')]
  assert 'twice' in errors[1].message


# Pascal VOC XML

VOC = """<?xml version="1.0" encoding="utf-8"?>
<annotation>
  <folder>VOC2007</folder>
  <filename>000005.jpg</filename>
  <size><width>500</width><height>375</height><depth>3</depth></size>
  <object>
    <name>chair</name><pose>Rear</pose><truncated>0</truncated><difficult>0</difficult>
    <bndbox><xmin>263</xmin><ymin>211</ymin><xmax>324</xmax><ymax>339</ymax></bndbox>
  </object>
  <object>
    <name>person</name><truncated>1</truncated><difficult>1</difficult>
    <bndbox><xmin>5.5</xmin><ymin>7</ymin><xmax>67.25</xmax><ymax>373</ymax></bndbox>
    <part><name>head</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></part>
  </object>
  <object>
    <name>chair</name>
    <bndbox><xmin>1</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax></bndbox>
  </object>
</annotation>
"""


def test_pascal_voc_objects_with_flags(tmp_path):
  path = write_text(str(tmp_path / 'Annotations' / '000005.xml'), VOC)
  [row] = read_manifest_file(path)
  assert (row.row, row.image_uri, row.labels) == (1, '000005.jpg', ('chair', 'person'))
  assert row.resolved_uri == str(tmp_path / 'Annotations' / '000005.jpg')
  assert row.objects == (
      ObjectBox('chair', 263, 211, 324, 339, normalized=False),
      ObjectBox('person', 5.5, 7, 67.25, 373, normalized=False, difficult=True, truncated=True),
      ObjectBox('chair', 1, 2, 3, 4, normalized=False))
  [row] = read_manifest_file(path, image_root=str(tmp_path / 'JPEGImages'))
  assert row.resolved_uri == str(tmp_path / 'JPEGImages' / '000005.jpg')


def test_pascal_voc_malformed_is_one_row_error(tmp_path):
  path = write_text(str(tmp_path / 'bad.xml'), VOC[:200])
  [error] = read_manifest_file(path)
  assert isinstance(error, RowError) and (error.reason, error.row) == ('bad_row', 1)
  path = write_text(str(tmp_path / 'nobox.xml'),
                    VOC.replace('<xmax>324</xmax>', '<xmax>wide</xmax>'))
  [error] = read_manifest_file(path)
  assert error.reason == 'bad_row' and 'xmax' in error.message and error.uri == '000005.jpg'


def test_pascal_voc_image_without_objects(tmp_path):
  path = write_text(str(tmp_path / 'e.xml'), '<annotation><filename>e.png</filename>'
                    '<size><width>4</width><height>3</height></size></annotation>')
  [row] = read_manifest_file(path)
  assert row.objects == () and row.labels == ()


# Extra CSV columns as typed features


def test_csv_feature_inference_per_file(tmp_path):
  path = write_text(str(tmp_path / 'm.csv'),
                    'split,image_uri,label,weather,count,score,zone,big\n'
                    'TRAIN,a.jpg,cat,sunny,3,0.5,7,12345678901234567890\n'
                    'TEST,b.jpg,dog,,4,1,x9,1\n'
                    'TRAIN,c.jpg,cat,rain,,2e-3,8,2\n')
  a, b, c = read_manifest_file(path)
  assert a.features == (('big', '12345678901234567890'), ('count', 3), ('score', 0.5),
                        ('weather', 'sunny'), ('zone', '7'))
  assert b.features == (('big', '1'), ('count', 4), ('score', 1.0), ('zone', 'x9'))
  assert c.features == (('big', '2'), ('score', 0.002), ('weather', 'rain'), ('zone', '8'))
  assert a.labels == ('cat',) and a.split == 'train' and a.objects is None


def test_csv_declared_types_and_bad_feature(tmp_path):
  path = write_text(str(tmp_path / 'm.csv'),
                    'image_uri,label,count,zone\na.jpg,cat,3,7\nb.jpg,dog,lots,8\n'
                    'c.jpg,dog,4.0,9\n')
  a, bad, c = read_manifest_file(path, feature_types={'count': 'int', 'zone': 'string'})
  assert a.features == (('count', 3), ('zone', '7'))
  assert c.features == (('count', 4), ('zone', '9'))
  assert isinstance(bad, RowError) and bad.reason == 'bad_feature'
  assert (bad.row, bad.uri) == (3, 'b.jpg')
  assert "'count'" in bad.message and "'lots'" in bad.message and 'int' in bad.message
  [row] = rows_of(read_manifest_file(path, feature_types={'count': 'float'})[2:])
  assert row.features == (('count', 4.0), ('zone', 9))


def test_detection_csv_header_with_features(tmp_path):
  path = write_text(str(tmp_path / 'boxes.csv'),
                    'ml_use,image_uri,label,x1,y1,x2,y2,x3,y3,x4,y4,camera\n'
                    'TRAIN,a.jpg,cat,0.1,0.2,,,0.5,0.6,,,3\n'
                    'TRAIN,a.jpg,dog,0.2,0.2,,,0.3,0.3,,,3\n'
                    'TEST,b.jpg,,,,,,,,,,4\n')
  assert detect_format(path, open(path).read()) == 'automl_detection_csv'
  rows = read_manifest_file(path)
  assert [(r.image_uri, r.split, r.features, len(r.objects)) for r in rows] == [
      ('a.jpg', 'train', (('camera', 3),), 1), ('a.jpg', 'train', (('camera', 3),), 1),
      ('b.jpg', 'test', (('camera', 4),), 0)]


def test_reserved_feature_names_and_unknown_types_are_manifest_errors(tmp_path):
  path = write_text(str(tmp_path / 'm.csv'), 'image_uri,label,image/height\na.jpg,cat,3\n')
  with pytest.raises(ManifestError, match='image/height'):
    read_manifest_file(path)
  path = write_text(str(tmp_path / 'm.jsonl'), '{"imageGcsUri": "a.jpg", "image/format": "x"}\n')
  with pytest.raises(ManifestError, match='image/format'):
    read_manifest_file(path)
  path = write_text(str(tmp_path / 'ok.csv'), 'a.jpg,cat\n')
  with pytest.raises(ManifestError, match='feature_types'):
    read_manifest_file(path, feature_types={'count': 'integer'})


def test_classification_csv_without_extra_columns_is_unchanged(tmp_path):
  path = write_text(str(tmp_path / 'm.csv'), 'TRAIN,a.jpg,cat,dog\nTEST,image,cat\n')
  rows = read_manifest_file(path)
  assert [(r.image_uri, r.labels, r.objects, r.features) for r in rows] == [
      ('a.jpg', ('cat', 'dog'), None, ()), ('image', ('cat',), None, ())]


# Format detection


@pytest.mark.parametrize('name, text, expected', [
    ('m.csv', 'TRAIN,a.jpg,cat\n', 'automl_csv'),
    ('m.csv', 'a.jpg,cat,dog\n', 'automl_csv'),
    ('m.csv', 'TRAIN,a.jpg,cat,0.1,0.2,,,0.5,0.6,,\n', 'automl_detection_csv'),
    ('m.csv', 'a.jpg,cat,0.1,0.2,,,0.5,0.6,,\n', 'automl_detection_csv'),
    ('m.txt', 'a.jpg,cat,0.1,0.2,0.5,0.2,0.5,0.6,0.1,0.6\n', 'automl_detection_csv'),
    ('m.csv', 'TRAIN,a.jpg,,,,,,,,,\n', 'automl_detection_csv'),
    ('m.csv', 'TRAIN,a.jpg\nTRAIN,b.jpg,cat,0.1,0.2,,,0.5,0.6,,\n', 'automl_detection_csv'),
    ('m.csv', 'split,image_uri,label\nTRAIN,a.jpg,cat\n', 'automl_csv'),
    ('m.csv', 'split,image_uri,label,a,b,c,d,e,f,g,h\nTRAIN,a.jpg,cat,1,2,,,3,4,,\n',
     'automl_detection_csv'),
    ('m.csv', 'a.jpg,cat,0.1,0.2,,,big,0.6,,\n', 'automl_csv'),
    ('m.csv', 'a.jpg,cat,0.1,0.2,,,0.5,0.6,,,\n', 'automl_csv'),
    ('m.jsonl', '{"imageGcsUri": "a.jpg"}\n', 'vertex_jsonl'),
    ('m.json', '{"images": []}', 'coco_json'),
    ('a.XML', '<annotation/>', 'pascal_voc'),
    ('manifest', '{"imageGcsUri": "a.jpg"}\n', 'vertex_jsonl'),
    ('manifest', '<?xml version="1.0"?><annotation/>', 'pascal_voc'),
    ('manifest', 'a.jpg,cat,0.1,0.2,,,0.5,0.6,,\n', 'automl_detection_csv'),
    ('manifest', 'a.jpg,cat\n', 'automl_csv'),
    ('m.csv', 'image_uri,mask_uri\na.jpg,a.png\n', 'segmentation_csv'),
    ('m.txt', 'Split,Image,Mask,weather\nTRAIN,a.jpg,a.png,sun\n', 'segmentation_csv'),
    ('m.csv', 'image_uri,masked\na.jpg,yes\n', 'automl_csv'),
    ('m.csv', 'a.jpg,a.png\n', 'automl_csv'),
])
def test_detect_format(name, text, expected):
  assert detect_format(name, text) == expected




def test_every_format_declares_a_title_a_sample_and_its_own_sniff_rank():
  assert all(f.title and f.sample for f in FORMATS), [f.name for f in FORMATS if not f.sample]
  ranks = [f.sniff_rank for f in FORMATS]
  assert len(set(ranks)) == len(ranks) and ranks == sorted(ranks)
  assert ONLY_NAMED == {'yolo_obb'}


def test_every_listed_format_reads_its_files_named_or_detected(tmp_path):
  """MANIFEST_FORMATS is what ImageExampleGen, convert() and the CLI accept as
  `manifest_format`: each name must read a file of its format, named or detected from
  the file, and a name not listed must be refused with the list."""
  for fmt in MANIFEST_FORMATS:
    name, text, others = FORMAT_SAMPLES[fmt]  # a new format needs a sample here
    path = write_text(str(tmp_path / fmt / name), text)
    for other, content in others.items():
      write_text(str(tmp_path / fmt / other), content)
    if fmt not in ONLY_NAMED:
      assert detect_format(path, text) == fmt
    for given in (fmt,) if fmt in ONLY_NAMED else (fmt, None):
      [row] = read_manifest_file(path, given)
      assert isinstance(row, ManifestRow) and row.image_uri.endswith('a.jpg'), (fmt, given)
  with pytest.raises(ManifestError, match='unknown manifest format') as e:
    read_manifest_file(path, 'coco')
  assert [fmt for fmt in MANIFEST_FORMATS if fmt not in str(e.value)] == []


# Any input: rows or the project's own errors, never anything else

DETECTION_PIECES = st.sampled_from(['TRAIN', 'test', 'a.jpg', 'gs://b/c.png', 'cat', 'dög', ',',
                                    ',,', '0.1', '1e-3', 'nan', '-2', 'x', '"', '\n', ' ',
                                    'image_uri', 'label', 'image/x', '\udce9'])
COCO_DOCS = st.fixed_dictionaries({
    'images': st.lists(st.fixed_dictionaries({'id': st.integers(0, 3) | JSON_SCALARS,
                                              'file_name': st.sampled_from(['a.jpg', '', 'b'])}),
                       max_size=4),
    'annotations': st.lists(st.dictionaries(
        st.sampled_from(['id', 'image_id', 'category_id', 'bbox', 'area', 'iscrowd']),
        st.integers(0, 3) | JSON_SCALARS | st.lists(JSON_SCALARS, max_size=5)), max_size=5),
    'categories': st.lists(st.fixed_dictionaries({'id': st.integers(0, 3),
                                                  'name': st.sampled_from(['cat', 'dog'])}),
                           max_size=2, unique_by=lambda c: c['id']),
})


@SETTINGS
@given(st.lists(DETECTION_PIECES | st.text(max_size=4), max_size=40).map(''.join))
def test_detection_csv_parser_returns_rows_or_errors(text):
  try:
    check_items(list(parse_manifest_text('/m/boxes.csv', text, 'automl_detection_csv')))
  except ManifestError:
    pass  # a header that cannot describe a detection file


@SETTINGS
@given(COCO_DOCS)
def test_coco_parser_returns_rows_or_errors(doc):
  check_items(list(parse_manifest_text('/m/c.json', json.dumps(doc), 'coco_json')))


@SETTINGS
@given(st.text(alphabet='<>/ab="01xminame\n', max_size=80))
def test_voc_parser_returns_rows_or_errors(text):
  check_items(list(parse_manifest_text('/m/a.xml', '<annotation>' + text, 'pascal_voc')))
