"""Class mapping at conversion (`class_map`, `--class-map`): classes kept, dropped, renamed
and merged, as the label map, the records, the counts and the report show them."""
from __future__ import annotations

import json
import os

import pytest

from images import write_image, write_text
from records import feature, read_split
from tfrecorder_component import convert, read_label_map
from tfrecorder_component.adapters.cli import main
from tfrecorder_component.errors import ManifestError, UsageError
from tfrecorder_component.manifest.class_map import parse_class_map

BOXES = ('TRAIN,a.jpg,car,0.1,0.1,,,0.5,0.5,,\n'
         'TRAIN,a.jpg,truck,0.2,0.2,,,0.6,0.6,,\n'
         'TRAIN,a.jpg,blurry,0.2,0.2,,,0.6,0.6,,\n'
         'TRAIN,b.jpg,blurry,0.1,0.1,,,0.3,0.3,,\n'
         'TRAIN,c.jpg,person,0.1,0.1,,,0.3,0.3,,\n')


@pytest.fixture
def photos(tmp_path):
  for name in 'abc':
    write_image(str(tmp_path / f'{name}.jpg'), height=20, width=30)
  return tmp_path


def _summary(out):
  with open(os.path.join(out, 'report', 'summary.json'), encoding='utf-8') as f:
    return json.load(f)


def _objects(out):
  records = {feature(e, 'image/source_id')[0].decode(): e
             for e in read_split(os.path.join(out, 'Split-train'))}
  return {uri: [(t.decode(), i) for t, i in zip(feature(e, 'image/object/class/text'),
                                                  feature(e, 'image/object/class/label'))]
          for uri, e in records.items()}


def test_cli_renames_merges_and_drops_detection_classes(photos):
  manifest = write_text(str(photos / 'boxes.csv'), BOXES)
  out = str(photos / 'out')
  assert main(['convert', manifest, out, '--class-map',
               '{"car": "vehicle", "truck": "vehicle", "blurry": null}']) == 0
  # every image is kept; b.jpg's only object was dropped, so it has none
  assert _objects(out) == {'a.jpg': [('vehicle', 2), ('vehicle', 2)], 'b.jpg': [],
                           'c.jpg': [('person', 1)]}
  with open(os.path.join(out, 'labels.txt'), encoding='utf-8') as f:
    assert f.read().split() == ['person', 'vehicle']
  summary = _summary(out)
  assert summary['objects_per_label'] == {'person': 1, 'vehicle': 2}
  assert summary['box_issues'] == {'dropped:dropped_class': 2}
  assert summary['class_map'] == {'blurry': None, 'car': 'vehicle', 'truck': 'vehicle'}
  assert summary['rows_failed'] == 0
  with open(os.path.join(out, 'report', 'box_issues.jsonl'), encoding='utf-8') as f:
    issues = [json.loads(line) for line in f]
  assert sorted((i['uri'], i['label'], i['reason']) for i in issues) == [
      ('a.jpg', 'blurry', 'dropped_class'), ('b.jpg', 'blurry', 'dropped_class')]


def test_keep_only_listed_classes_from_a_yaml_file(photos):
  manifest = write_text(str(photos / 'boxes.csv'), BOXES)
  mapping = write_text(str(photos / 'classes.yaml'), 'person: person\n"*": null\n')
  out = str(photos / 'out')
  result = convert(manifest, out, class_map=mapping)
  assert result.records_written == 3
  assert _objects(out) == {'a.jpg': [], 'b.jpg': [], 'c.jpg': [('person', 1)]}
  assert _summary(out)['box_issues'] == {'dropped:dropped_class': 4}


def test_others_merged_into_one_class(photos):
  manifest = write_text(str(photos / 'boxes.csv'), BOXES)
  out = str(photos / 'out')
  convert(manifest, out, class_map={'person': 'person', '*': 'other'})
  assert _objects(out) == {'a.jpg': [('other', 1)] * 3, 'b.jpg': [('other', 1)],
                           'c.jpg': [('person', 2)]}


def test_classification_rows_left_with_no_label_are_left_out_not_failed(photos):
  manifest = write_text(str(photos / 'labels.csv'),
                        'TRAIN,a.jpg,car\nTRAIN,b.jpg,blurry\nTRAIN,c.jpg,person\n')
  out = str(photos / 'out')
  result = convert(manifest, out, class_map={'car': 'vehicle', 'blurry': None})
  assert result.records_written == 2 and result.rows_failed == 0
  summary = _summary(out)
  assert summary['rows_left_out'] == {'dropped_class': 1} and summary['rows_read'] == 3
  assert summary['records_per_label'] == {'person': 1, 'vehicle': 1}
  with open(os.path.join(out, 'report', 'errors.jsonl'), encoding='utf-8') as f:
    [left_out] = [json.loads(line) for line in f]
  assert (left_out['uri'], left_out['reason'], left_out['row']) == ('b.jpg', 'dropped_class', 2)


def test_coco_category_ids_kept_only_for_unrenamed_classes(photos):
  coco = {'images': [{'id': 1, 'file_name': 'a.jpg'}],
          'annotations': [{'id': 1, 'image_id': 1, 'category_id': 7, 'bbox': [1, 1, 5, 5]},
                          {'id': 2, 'image_id': 1, 'category_id': 3, 'bbox': [2, 2, 5, 5]}],
          'categories': [{'id': 7, 'name': 'dog'}, {'id': 3, 'name': 'cat'}]}
  manifest = write_text(str(photos / 'coco.json'), json.dumps(coco))
  out = str(photos / 'out')
  convert(manifest, out, class_map={'cat': 'feline'})
  assert _objects(out) == {'1': [('dog', 7), ('feline', 8)]}  # by COCO's image id
  # the renamed category keeps no declared id: 'cat' is in no label file
  assert read_label_map(out) == {'dog': 7, 'feline': 8}


@pytest.mark.parametrize('given, message', [
    ('[1, 2]', 'a class map is an object'),
    ('{"car": 3}', "'car' must map to a class name"),
    ('{"": "x"}', 'a class must be a non-empty string'),
    ('{"car": "x", " car": "y"}', 'listed twice'),
    ('{not json', 'not valid JSON'),
    ('/no/such/classes.yaml', 'cannot read /no/such/classes.yaml'),
])
def test_bad_class_maps_are_refused_before_anything_runs(given, message):
  with pytest.raises(UsageError, match=message):
    parse_class_map(given)


def test_cli_refuses_a_bad_class_map_with_its_reason(photos, capsys):
  manifest = write_text(str(photos / 'boxes.csv'), BOXES)
  assert main(['convert', manifest, str(photos / 'out'), '--class-map', '{"car": 3}']) != 0
  assert "'car' must map to a class name" in capsys.readouterr().err
  assert not os.path.exists(photos / 'out' / '_SUCCESS')


def test_segmentation_masks_refuse_a_class_map(photos):
  write_image(str(photos / 'a.png'), fmt='PNG', mode='L', height=20, width=30)
  manifest = write_text(str(photos / 'seg.csv'), 'image_uri,mask_uri\na.jpg,a.png\n')
  with pytest.raises(ManifestError, match='not to segmentation masks'):
    convert(manifest, str(photos / 'out'), class_map={'1': 'one'})
