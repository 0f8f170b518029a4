"""Manifest parsing: AutoML CSV and Vertex JSONL into ManifestRows, on real files."""
import json
import os

import pytest

from images import write_text
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest import ManifestRow, read_manifest_file, resolve_uri


def rows_of(items):
  return [i for i in items if isinstance(i, ManifestRow)]


def test_automl_csv_without_header_with_ml_use_in_any_case(tmp_path):
  path = write_text(str(tmp_path / 'm.csv'),
                    'TRAIN,a.jpg,cat\ntraining,b.jpg,dog\nValidation,c.jpg,cat\nVALIDATE,d.jpg\n'
                    'test,e.jpg,dog,cat\nUNASSIGNED,f.jpg,cat\n,g.jpg,cat\n')
  rows = read_manifest_file(path)
  assert [r.split for r in rows] == ['train', 'train', 'eval', 'eval', 'test', None, None]
  assert [r.labels for r in rows] == [('cat',), ('dog',), ('cat',), (), ('dog', 'cat'),
                                      ('cat',), ('cat',)]
  assert [r.row for r in rows] == [1, 2, 3, 4, 5, 6, 7]
  assert rows[0].resolved_uri == str(tmp_path / 'a.jpg')


def test_automl_csv_without_ml_use_column(tmp_path):
  path = write_text(str(tmp_path / 'm.csv'), 'gs://bucket/a.jpg,cat\n/abs/b.png,dog\n')
  rows = read_manifest_file(path)
  assert [(r.image_uri, r.resolved_uri, r.split, r.labels) for r in rows] == [
      ('gs://bucket/a.jpg', 'gs://bucket/a.jpg', None, ('cat',)),
      ('/abs/b.png', '/abs/b.png', None, ('dog',))]


def test_header_quoted_fields_non_ascii_bom_blank_lines(tmp_path):
  text = ('\ufeffsplit,image_uri,label\n\n"TRAIN","sub dir/ä, b ""x"".jpg"," café "\n'
          '\nTEST,sub dir/c.jpg,dog\n')
  path = write_text(str(tmp_path / 'm.csv'), text)
  rows = read_manifest_file(path)
  assert len(rows) == 2
  assert rows[0].image_uri == 'sub dir/ä, b "x".jpg'
  assert rows[0].resolved_uri == os.path.join(str(tmp_path), 'sub dir/ä, b "x".jpg')
  assert rows[0].labels == ('café',) and rows[0].row == 3
  assert rows[1].split == 'test' and rows[1].row == 5


def test_bad_rows_are_errors_with_row_and_reason(tmp_path):
  path = write_text(str(tmp_path / 'm.csv'), 'TRAIN,a.jpg,cat\nTRIAN,b.jpg,cat\nTEST,,dog\nTEST\n')
  items = read_manifest_file(path)
  assert isinstance(items[0], ManifestRow)
  errors = items[1:]
  assert all(isinstance(e, RowError) for e in errors)
  assert [(e.row, e.reason) for e in errors] == [(2, 'unknown_split'), (3, 'bad_row'),
                                                 (4, 'bad_row')]
  assert errors[0].uri == 'b.jpg' and 'TRIAN' in errors[0].message


def test_vertex_jsonl_single_and_multi_label(tmp_path):
  lines = [
      {'imageGcsUri': 'gs://b/a.jpg', 'classificationAnnotation': {'displayName': 'cat'},
       'dataItemResourceLabels': {'aiplatform.googleapis.com/ml_use': 'training'}},
      {'imageGcsUri': 'b.jpg', 'classificationAnnotations': [{'displayName': 'cat'},
                                                             {'displayName': 'dog'}],
       'dataItemResourceLabels': {'aiplatform.googleapis.com/ml_use': 'validation'}},
      {'imageGcsUri': 'c.jpg'},
  ]
  path = write_text(str(tmp_path / 'm.jsonl'), '\n'.join(json.dumps(l) for l in lines) + '\n\n')
  rows = read_manifest_file(path)
  assert [(r.image_uri, r.split, r.labels) for r in rows] == [
      ('gs://b/a.jpg', 'train', ('cat',)), ('b.jpg', 'eval', ('cat', 'dog')), ('c.jpg', None, ())]
  assert rows[1].resolved_uri == str(tmp_path / 'b.jpg')


def test_jsonl_detected_without_extension_and_bad_json_is_a_row_error(tmp_path):
  path = write_text(str(tmp_path / 'manifest'), '{"imageGcsUri": "a.jpg"}\n{not json\n')
  items = read_manifest_file(path)
  assert isinstance(items[0], ManifestRow)
  assert isinstance(items[1], RowError) and items[1].reason == 'bad_row' and items[1].row == 2


def test_missing_manifest_is_a_clear_error(tmp_path):
  with pytest.raises(ManifestError, match='cannot read manifest'):
    read_manifest_file(str(tmp_path / 'nope.csv'))


def test_a_non_utf8_row_fails_alone(tmp_path):
  path = str(tmp_path / 'mixed.csv')
  with open(path, 'wb') as f:
    f.write('TRAIN,a.jpg,cat\n'.encode() + 'TRAIN,caf\xe9.jpg,cat\n'.encode('latin-1') +
            'TEST,ü.jpg,dog\n'.encode())
  items = read_manifest_file(path)
  assert [type(i).__name__ for i in items] == ['ManifestRow', 'RowError', 'ManifestRow']
  assert items[1].reason == 'bad_row' and items[1].row == 2 and 'UTF-8' in items[1].message
  assert items[1].uri == 'caf\\xe9.jpg'
  assert items[2].image_uri == 'ü.jpg'


def test_header_fixes_the_column_count(tmp_path):
  path = write_text(str(tmp_path / 'm.csv'), 'split,image_uri,label\nTRAIN,a.jpg,cat\n'
                    'TRAIN,b.jpg\nTRAIN,c.jpg,cat,dog\n')
  items = read_manifest_file(path)
  assert isinstance(items[0], ManifestRow)
  assert [(i.row, i.reason, i.uri) for i in items[1:]] == [(3, 'bad_row', 'b.jpg'),
                                                            (4, 'bad_row', 'c.jpg')]


def test_resolve_uri():
  assert resolve_uri('x/../a.jpg', '/data/m.csv') == '/data/a.jpg'
  assert resolve_uri('a.jpg', 'gs://b/dir/m.csv') == 'gs://b/dir/a.jpg'
  assert resolve_uri('file:///x/a.jpg', '/data/m.csv') == '/x/a.jpg'


def test_extra_columns_are_typed_over_the_whole_file_in_file_order(tmp_path):
  # The first rows have no extra values; the types come from every later row, and the
  # rows stay in file order around the bad one.
  path = write_text(str(tmp_path / 'm.csv'),
                    'image_uri,label,count,zone\n'
                    'a.jpg,cat,,\nb.jpg,cat,,\nc.jpg,cat,3,7\nbad,,,\n'
                    'd.jpg,dog,4,x\n,dog,1,\ne.jpg,dog,5,\n')
  items = read_manifest_file(path)
  assert [i.row for i in items] == [2, 3, 4, 5, 6, 7, 8]
  assert isinstance(items[5], RowError) and items[5].reason == 'bad_row'
  by_uri = {i.image_uri: i.features for i in rows_of(items)}
  assert by_uri == {'a.jpg': (), 'b.jpg': (), 'c.jpg': (('count', 3), ('zone', '7')),
                    'bad': (), 'd.jpg': (('count', 4), ('zone', 'x')),
                    'e.jpg': (('count', 5),)}


def test_a_file_is_parsed_twice_only_when_it_has_extra_values():
  from tfrecorder_component.manifest import typed_items  # pylint: disable=g-import-not-at-top
  calls = []

  def parse(rows):
    def untyped():
      calls.append(1)
      for number, features in enumerate(rows, start=1):
        yield ManifestRow(source='m', row=number, image_uri=f'{number}.jpg',
                          resolved_uri=f'/{number}.jpg', features=features)
    return untyped

  plain = list(typed_items('m', parse([(), ()]), {}, from_text=True))
  assert len(calls) == 1 and [r.row for r in plain] == [1, 2]
  calls.clear()
  typed = list(typed_items('m', parse([(), (('n', '1.5'),), (('n', '2'),)]), {},
                           from_text=True))
  assert len(calls) == 2
  assert [(r.row, r.features) for r in typed] == [(1, ()), (2, (('n', 1.5),)),
                                                   (3, (('n', 2.0),))]
