"""Manifest parsing: AutoML CSV and Vertex JSONL into ManifestRows, on real files."""
import json
import os

import pytest

from images import write_text
from manifest_items import rows_of
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest import ManifestRow, read_manifest_file, resolve_uri


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


# Columns out of AutoML's order in a file without a header: refused, never read wrongly.

def test_headerless_csv_with_ml_use_where_labels_belong_is_refused(tmp_path):
  path = write_text(str(tmp_path / 'm.csv'),
                    '/abs/a.jpg,TRAIN,cat\n/abs/b.jpg,TEST,dog\n/abs/c.jpg,VALIDATION,cat\n')
  with pytest.raises(ManifestError) as e:
    read_manifest_file(path)
  message = str(e.value)
  assert message.startswith(f'{path}: the file has no header')
  assert 'column 2 holds ML_USE values (TRAIN, TEST, VALIDATION)' in message
  assert 'row 1: /abs/a.jpg,TRAIN,cat' in message
  assert '"image_uri,split,label"' in message
  # The header it suggests reads the file as meant.
  fixed = write_text(str(tmp_path / 'fixed.csv'), 'image_uri,split,label\n' +
                     open(path, encoding='utf-8').read())
  assert [(r.image_uri, r.split, r.labels) for r in read_manifest_file(fixed)] == [
      ('/abs/a.jpg', 'train', ('cat',)), ('/abs/b.jpg', 'test', ('dog',)),
      ('/abs/c.jpg', 'eval', ('cat',))]


def test_headerless_csv_with_paths_where_labels_belong_is_refused(tmp_path):
  path = write_text(str(tmp_path / 'm.csv'), 'TRAIN,cat,/abs/a.jpg\nTEST,dog,imgs/b.png\n')
  with pytest.raises(ManifestError, match=r'column 3 holds image paths \(/abs/a.jpg, '
                                          r'imgs/b.png\).*"split,label,image_uri"'):
    read_manifest_file(path)


def test_labels_that_are_split_words_are_still_labels(tmp_path):
  # A class named `train` (lowercase, the only one) is a label, not an ML_USE column.
  path = write_text(str(tmp_path / 'm.csv'), '/abs/a.jpg,train\n/abs/b.jpg,train\n')
  assert [r.labels for r in read_manifest_file(path)] == [('train',), ('train',)]


def test_headerless_detection_csv_out_of_order_is_refused_with_a_header_that_reads_it(tmp_path):
  text = ('/abs/a.jpg,TRAIN,cat,0.1,0.1,,,0.5,0.5,,\n'
          '/abs/b.jpg,TEST,dog,0.2,0.2,,,0.6,0.7,,\n')
  path = write_text(str(tmp_path / 'm.csv'), text)
  with pytest.raises(ManifestError) as e:
    read_manifest_file(path)
  header = 'image_uri,split,label,x_min,y_min,x2,y2,x_max,y_max,x4,y4'
  assert f'"{header}"' in str(e.value)
  rows = read_manifest_file(write_text(str(tmp_path / 'fixed.csv'), header + '\n' + text))
  assert [(r.image_uri, r.split, [(o.label, o.xmin, o.ymax) for o in r.objects])
          for r in rows] == [('/abs/a.jpg', 'train', [('cat', 0.1, 0.5)]),
                             ('/abs/b.jpg', 'test', [('dog', 0.2, 0.7)])]


def test_jsonl_with_labels_or_image_under_other_keys_fails_those_rows(tmp_path):
  path = write_text(str(tmp_path / 'm.jsonl'),
                    '{"imageUri": "/abs/a.jpg", "label": "cat"}\n'
                    '{"imageGcsUri": "/abs/b.jpg", "label": "dog"}\n'
                    '{"imageGcsUri": "/abs/c.jpg", "classificationAnnotation": '
                    '{"displayName": "cat"}}\n')
  items = read_manifest_file(path)
  errors = [i for i in items if isinstance(i, RowError)]
  assert [(e.row, e.reason) for e in errors] == [(1, 'bad_row'), (2, 'bad_row')]
  assert '(the line has "imageUri", "label")' in errors[0].message
  assert '"label" is not where Vertex AI JSONL puts labels' in errors[1].message
  assert [r.labels for r in rows_of(items)] == [('cat',)]


@pytest.mark.parametrize('kind', ['csv', 'jsonl'])
def test_a_large_manifest_is_read_as_it_is_parsed_with_the_same_rows(tmp_path, kind):
  """Past 64 KiB a CSV or JSONL manifest is streamed: a BOM, CRLF line ends, a quoted
  field over two lines, a row of invalid UTF-8 and one of bad syntax come out as they do
  from the file's whole text."""
  # pylint: disable-next=g-import-not-at-top
  from tfrecorder_component.manifest import iter_manifest_file, parse_manifest_text
  rows = []
  for i in range(8000):
    if kind == 'csv':
      rows.append(f'TRAIN,img/{i}.png,"label {i % 7}"' if i % 500 else
                  f'TEST,img/{i}.png,"two\r\nlines {i}"')
    else:
      rows.append(json.dumps({'imageGcsUri': f'img/{i}.png',
                              'classificationAnnotation': {'displayName': f'l{i % 7}'}}))
  rows[1234] = 'TRAIN' if kind == 'csv' else '{"imageGcsUri": '
  data = ('\ufeff' + '\r\n'.join(rows) + '\r\n').encode('utf-8')
  data = data.replace(b'img/2345.png', b'img/23\xff45.png')  # not UTF-8
  path = str(tmp_path / f'big.{kind}')
  with open(path, 'wb') as f:
    f.write(data)
  assert len(data) > 2 * 65536
  lines, items, spec = iter_manifest_file(path)
  streamed = list(items)
  whole = list(parse_manifest_text(path, data.decode('utf-8-sig', errors='surrogateescape'),
                                   spec.name))
  same = lambda items: [(str(r), vars(r)) if isinstance(r, RowError) else r for r in items]
  assert same(streamed) == same(whole)
  if kind == 'csv':  # the 16 labels over two lines are read whole, and refused
    assert len([r for r in streamed if isinstance(r, ManifestRow)]) == 7982
    assert sorted(r.reason for r in streamed if isinstance(r, RowError)) == [
        'bad_label'] * 16 + ['bad_row', 'bad_row']
    assert "the label 'two\\r\\nlines 0' holds '\\r'" in str(
        next(r for r in streamed if isinstance(r, RowError) and r.reason == 'bad_label'))
  else:
    assert len([r for r in streamed if isinstance(r, ManifestRow)]) == 7998
    assert [r.reason for r in streamed if isinstance(r, RowError)] == ['bad_row', 'bad_row']
  assert abs(lines - data.count(b'\n') - 1) < 400  # estimated from the first 64 KiB


def test_a_one_hot_csv_reads_a_class_a_column(tmp_path):
  """Roboflow's multi-label classification export (`<split>/_classes.csv`: `filename,
  cat, dog`, then 0 or 1 in each class's column): the classes whose column holds 1 are
  the row's labels, never features of unlabelled rows; a later row with another value
  fails alone. A header whose first row holds other values, or with one such column,
  keeps them as features."""
  path = write_text(str(tmp_path / 'train' / '_classes.csv'),
                    'filename, cat, dog\na.jpg, 1, 0\nb.jpg, 1, 1\nc.jpg, 0, 0\n'
                    'd.jpg, 2, 0\ne.jpg, 0, 1\n')
  items = read_manifest_file(path)
  assert [(i.image_uri, i.labels, i.features) for i in items if isinstance(i, ManifestRow)] == [
      ('a.jpg', ('cat',), ()), ('b.jpg', ('cat', 'dog'), ()), ('c.jpg', (), ()),
      ('e.jpg', ('dog',), ())]
  [bad] = [i for i in items if isinstance(i, RowError)]
  assert (bad.row, bad.reason, bad.uri) == (5, 'bad_row', 'd.jpg')
  assert "cat='2'" in bad.message
  path = write_text(str(tmp_path / 'w.csv'), 'image_uri,width,height\na.jpg,640,480\n')
  [row] = read_manifest_file(path)
  assert (row.labels, row.features) == ((), (('height', 480), ('width', 640)))
  path = write_text(str(tmp_path / 'f.csv'), 'image_uri,label,flag,other\na.jpg,cat,1,0\n')
  [row] = read_manifest_file(path)
  assert (row.labels, row.features) == (('cat',), (('flag', 1), ('other', 0)))
  path = write_text(str(tmp_path / 'one.csv'), 'image_uri,flag\na.jpg,1\n')
  [row] = read_manifest_file(path)
  assert (row.labels, row.features) == ((), (('flag', 1),))


def test_a_roboflow_multi_label_export_converts_with_its_splits(tmp_path):
  from images import write_image  # pylint: disable=g-import-not-at-top
  import tfrecorder_component as trc  # pylint: disable=g-import-not-at-top
  from tfrecord_digest import read_records  # pylint: disable=g-import-not-at-top  (no TensorFlow)
  from tfrecorder_component.record.example_proto import Example  # pylint: disable=g-import-not-at-top
  root = tmp_path / 'export'
  for i, (split, name) in enumerate([('train', 'a.jpg'), ('train', 'b.jpg'),
                                     ('valid', 'c.jpg')]):
    write_image(str(root / split / name), seed=i)
  write_text(str(root / 'train' / '_classes.csv'), 'filename, cat, dog\na.jpg, 1, 0\n'
             'b.jpg, 1, 1\n')
  write_text(str(root / 'valid' / '_classes.csv'), 'filename, cat, dog\nc.jpg, 0, 1\n')
  result = trc.convert(str(root), str(tmp_path / 'out'))
  assert result.rows_failed == 0
  assert {k: v for k, v in result.records_per_split.items() if v} == {'train': 2, 'eval': 1}
  got = {}
  for split in ('train', 'eval'):
    for record in read_records(str(tmp_path / 'out' / f'Split-{split}')):
      feature = Example.FromString(record).features.feature
      got[feature['image/source_id'].bytes_list.value[0].decode()] = (
          split, list(feature['image/class/text'].bytes_list.value))
  assert got == {'a.jpg': ('train', [b'cat']), 'b.jpg': ('train', [b'cat', b'dog']),
                 'c.jpg': ('eval', [b'dog'])}
