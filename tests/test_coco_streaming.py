"""COCO JSON read as a stream in bounded memory (`manifest/coco.py`): members in any
order, a file larger than the in-memory budget sorted on disk, and the same items and
records as the file read whole, with `json.loads`' own values and error messages."""
import dataclasses
import glob
import json
import os
import tempfile

import pytest

from images import write_image, write_text
from tfrecord_digest import digest
import tfrecorder_component as trc
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest import coco, json_stream
from tfrecorder_component.io import sort
from tfrecorder_component.manifest.reader import read_manifest_file

CATEGORIES = [{'id': 3, 'name': 'cat', 'supercategory': 'animal'},
              {'id': 9, 'name': 'dog', 'supercategory': 'animal'}]


def dataset(images: int, per_image: int = 3):
  """A COCO document over images/0.jpg ... (ids not in file order), with failures: an
  image id given twice, an image without a file name, an annotation of no image, one of
  an unknown category and one that is not an object."""
  listed = [{'id': 1000 - i * 7, 'file_name': f'images/{i}.jpg', 'width': 16, 'height': 12}
            for i in range(images)]
  listed.append({'id': 1000, 'file_name': 'images/0.jpg'})  # id given twice
  listed.append({'id': 5})  # no file_name
  annotations = []
  for i in range(images * per_image):
    image = listed[(i * 5) % images]  # an image's annotations are spread over the list
    annotations.append({'id': i + 1, 'image_id': image['id'], 'category_id': 3 + 6 * (i % 2),
                        'bbox': [i % 5, 1.5, 4, 3.25], 'area': 10.5, 'iscrowd': i % 7 == 0,
                        'segmentation': [[1, 1, 5, 1, 5, 4]]})
  annotations += [{'id': -1, 'image_id': 424242, 'category_id': 3, 'bbox': [1, 1, 2, 2]},
                  {'id': -2, 'image_id': 1000, 'category_id': 77, 'bbox': [1, 1, 2, 2]},
                  'not an object']
  return {'info': {'year': 2017}, 'images': listed, 'annotations': annotations,
          'categories': CATEGORIES, 'licenses': [{'id': 1, 'name': 'x'}]}


def ordered(document, keys):
  """The document's JSON with its members in the order of `keys`."""
  return '{' + ', '.join(f'{json.dumps(k)}: {json.dumps(document[k])}' for k in keys) + '}'


def shown(items):
  return [(type(i).__name__, i.describe() if isinstance(i, RowError) else repr(i))
          for i in items]


def write_images(folder, count):
  for i in range(count):
    write_image(os.path.join(folder, 'images', f'{i}.jpg'), height=12, width=16, seed=i)


def test_members_in_any_order_give_the_same_items_and_records(tmp_path):
  """Annotations before images and categories last, or any other order, read as the
  usual order does: the same rows, errors and records."""
  document = dataset(6)
  usual = ['info', 'images', 'annotations', 'categories', 'licenses']
  outputs = []
  expected = None
  for keys in (usual, ['annotations', 'images', 'licenses', 'info', 'categories'],
               ['categories', 'annotations', 'info', 'images', 'licenses']):
    folder = str(tmp_path / '-'.join(k[0] for k in keys))
    write_images(folder, 6)
    path = write_text(os.path.join(folder, 'instances.json'), ordered(document, keys))
    items = shown(coco.parse(path, open(path).read()))
    shown_here = [(kind, text.replace(folder, 'FOLDER')) for kind, text in items]
    if expected is None:
      expected = shown_here
      assert sum(kind == 'ManifestRow' for kind, _ in expected) == 6
      assert [t for k, t in expected if k == 'RowError'] == [
          'FOLDER/instances.json row 7, uri \'images/0.jpg\': bad_row: image id 1000 appears '
          'twice in "images" (first at images[0]); give each image its own id',
          'FOLDER/instances.json row 8: bad_row: images[7] needs a non-empty string '
          '"file_name"',
          'FOLDER/instances.json annotations[18]: bad_row: annotation id -1 '
          '(annotations[18]): unknown image_id 424242; it must be the id of an entry of '
          '"images"',
          'FOLDER/instances.json annotations[20]: bad_row: annotations[20] must be an object',
          'FOLDER/instances.json row 1, uri \'images/0.jpg\': bad_row: annotation id -2 '
          '(annotations[19]): unknown category_id 77; it must be the id of an entry of '
          '"categories"']
    assert shown_here == expected, keys
    result = trc.convert(path, str(tmp_path / f'out-{len(outputs)}'), max_error_ratio=1)
    assert result.summary['records_written'] == 6
    outputs.append(digest(result.output_dir))
  assert outputs[1] == outputs[0] and outputs[2] == outputs[0]


def test_a_file_larger_than_the_memory_budget_converts_to_the_same_records(
    tmp_path, monkeypatch):
  """With a budget of a few KB, the images and annotations are sorted in many runs on
  disk (left in the temporary folder while the rows are yielded, removed after) and
  read in blocks of a few bytes: the items and the records are those of a budget that
  holds the whole file."""
  document = dataset(50, per_image=6)
  write_images(str(tmp_path), 50)
  path = write_text(str(tmp_path / 'coco.json'), json.dumps(document, indent=1))
  assert os.path.getsize(path) > 64 * 2**10  # read streamed, not as one text
  annotations = frozenset({'masks'})

  def items():
    return shown(read_manifest_file(path, annotations=annotations))

  whole = items()
  out_whole = trc.convert(path, str(tmp_path / 'whole'), max_error_ratio=1,
                          include_masks=True)

  scratch = tmp_path / 'scratch'
  scratch.mkdir()
  monkeypatch.setattr(tempfile, 'tempdir', str(scratch))
  monkeypatch.setattr(coco, 'MEMORY_BYTES', 2048)
  monkeypatch.setattr(json_stream, 'READ_BYTES', 7)
  monkeypatch.setattr(sort, 'MAX_OPEN_RUNS', 4)
  assert os.path.getsize(path) > 20 * coco.MEMORY_BYTES
  parsed = coco.parse(path, object(), annotations=annotations)  # the file read by path
  first = next(parsed)
  runs = glob.glob(str(scratch / 'tfrecorder-coco-*' / 'run-*'))
  assert len(runs) > 4  # sorted runs on disk, merged at most 4 at a time
  assert shown([first, *parsed]) == whole
  assert not os.listdir(scratch)  # removed once read
  assert items() == whole
  out_small = trc.convert(path, str(tmp_path / 'small'), max_error_ratio=1,
                          include_masks=True)
  assert out_small.summary['records_written'] == out_whole.summary['records_written'] == 50
  assert digest(out_small.output_dir) == digest(out_whole.output_dir)


@pytest.mark.parametrize('broken', [
    '{"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": [{"id": 1 "x": 2}]}',
    '{"images": [{"id": 1, "file_name": "a.jpg"},]}',
    '{"images": []} {"images": []}',
    '{"images": [], "annotations": [{"id": 1, "name": "\\u12"}]}',
    '{"images": [], "annotations": [{"id": 1, "name": "open}]}',
    '',
])
def test_json_errors_name_the_place_json_loads_names(tmp_path, monkeypatch, broken):
  """Read in pieces of a few characters past 64 KiB of padding, a file that is not JSON
  fails with `json.loads`' own message: what is wrong, and its line, column and
  character in the whole file."""
  monkeypatch.setattr(json_stream, 'READ_BYTES', 5)
  text = (' ' * 70000 + '\n') * 2 + broken if broken else broken
  path = write_text(str(tmp_path / 'coco.json'), text)
  with pytest.raises(ValueError) as expected:
    json.loads(text)
  for given in (text, object()):  # the text, and the file read by path
    with pytest.raises(ManifestError) as e:
      list(coco.parse(path, given))
    assert str(e.value) == f'{path}: not a valid COCO JSON file: {expected.value}'


def test_values_are_what_json_loads_makes_of_them(tmp_path, monkeypatch):
  """NaN, Infinity, ids as 3.0 and 3, escapes, bytes that are not UTF-8 (which fail
  their row, not the file), and numbers and literals cut by the reads' ends, read as the
  whole file would be."""
  monkeypatch.setattr(json_stream, 'READ_BYTES', 3)
  text = ('{"info": 123456789, "categories": [{"id": 3.0, "name": "c\\u00e4t"}], "images": ['
          '{"id": 3, "file_name": "a.jpg"}, {"id": 4, "file_name": "bBADBYTE.jpg"}, '
          '{"id": 5, "file_name": "c.jpg"}], "annotations": [987654321, '
          '{"id": 1, "image_id": 3.0, "category_id": 3, "bbox": [1.5e0, 2, 1234.5678, 4], '
          '"area": NaN}, -Infinity, {"id": 2, "image_id": 5, "category_id": 3, "bbox": '
          '[-0.0, 1e-3, 7, 8], "area": Infinity}, 12.75e1], "licenses": -1234.5e-3}'
          + ' ' * 70000)
  path = str(tmp_path / 'coco.json')
  with open(path, 'wb') as f:
    f.write(text.encode().replace(b'BADBYTE', b'\xff'))
  rows = read_manifest_file(path)
  assert [(type(r).__name__, getattr(r, 'annotation', None)) for r in rows] == [
      ('RowError', 0), ('RowError', 2), ('RowError', 4), ('ManifestRow', None),
      ('RowError', None), ('ManifestRow', None)]
  assert rows[4].reason == 'bad_row' and 'not valid UTF-8' in rows[4].message
  (a,), (c,) = rows[3].objects, rows[5].objects
  assert (a.label, a.xmin, a.ymin, a.xmax, a.ymax, a.invalid) == (
      'cät', 1.5, 2.0, 1.5 + 1234.5678, 6.0, 'bad_area')
  assert (c.xmin, c.ymin, c.xmax, c.ymax, c.invalid) == (0.0, 1e-3, 7.0, 1e-3 + 8, 'bad_area')


def test_a_member_given_twice_counts_as_json_loads_counts_it(tmp_path):
  """`json.loads` keeps the last of a member given twice; so does the stream (the
  first list's images, failed ones too, are not read)."""
  text = ('{"images": [{"id": 1, "file_name": "old.jpg"}, {"id": 7}], "categories": [], '
          '"annotations": [{"id": 1, "image_id": 2, "category_id": 1, "bbox": [0, 0, 1, 1]}], '
          '"images": [{"id": 2, "file_name": "new.jpg"}], '
          '"categories": [{"id": 1, "name": "cat"}]}')
  path = write_text(str(tmp_path / 'coco.json'), text)
  [row] = coco.parse(path, text)
  assert row.image_uri == 'new.jpg' and [o.label for o in row.objects] == ['cat']
  with pytest.raises(ManifestError, match='"annotations" must be a list'):
    list(coco.parse(path, text[:-1] + ', "annotations": {"a": 1}}'))
  assert list(coco.parse(path, text[:-1] + ', "annotations": null}')) == [
      dataclasses.replace(row, objects=(), labels=())]


def test_a_deeply_nested_value_fails_its_annotation_not_the_file(tmp_path):
  """A value nested 900 deep (which `json` reads, and pickle needs more recursion for
  on its way through the sort) fails its annotation, as when the file was read whole."""
  text = ('{"images": [{"id": 1, "file_name": "a.jpg"}], "categories": [{"id": 1, "name": '
          '"c"}], "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": '
          + '[' * 900 + ']' * 900 + '}]}')
  path = write_text(str(tmp_path / 'coco.json'), text)
  failed, row = coco.parse(path, text)
  assert failed.message.startswith('annotation id 1 (annotations[0]): "bbox" must be 4 '
                                   'numbers')
  assert row.objects == ()
