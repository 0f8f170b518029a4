"""Open Images CSVs (`manifest/open_images.py`): boxes and image-level labels, class
descriptions, the images' folders, splits, files out of ImageID order (sorted on disk),
bad lines, and conversions of real JPEGs end to end."""
import json
import logging
import os

import pytest

from images import write_image, write_text
from tfrecord_digest import read_records
import tfrecorder_component as trc
from tfrecorder_component.record import example_proto
from tfrecorder_component.adapters.cli import main
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest import coco, open_images
from tfrecorder_component.manifest import detect_format, read_manifest_file
from tfrecorder_component.manifest.rows import ManifestRow

BOX_HEADER = ('ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,'
              'IsTruncated,IsGroupOf,IsDepiction,IsInside\n')
LABEL_HEADER = 'ImageID,Source,LabelName,Confidence\n'
BOXABLE = '/m/01g317,Person\n/m/0k4j,Car\n/m/01yrx,Cat\n'  # no header, as Open Images has it
# (ImageID, MID, XMin, XMax, YMin, YMax, IsOccluded, IsTruncated, IsGroupOf, IsDepiction,
# IsInside): coordinates all different, so a column read as another shows.
BOXES = [
    ('000a1249af2bc5f0', '/m/01g317', 0.1, 0.45, 0.2, 0.85, 1, 0, 0, 0, 0),
    ('000a1249af2bc5f0', '/m/0k4j', 0.5, 0.95, 0.3, 0.65, 0, 1, 1, -1, 0),
    ('0f2c4a3d5e6b7c8d', '/m/01yrx', 0.05, 0.6, 0.15, 0.7, -1, -1, -1, 1, 1),
]


def box_lines(boxes):
  return ''.join(f'{i},xclick,{m},1,{a},{b},{c},{d},{e},{f},{g},{h},{k}\n'
                 for i, m, a, b, c, d, e, f, g, h, k in boxes)


def parse(path, text):
  return list(open_images.parse(path, text))


def test_boxes_are_read_in_open_images_column_order_with_flags_and_names(tmp_path):
  folder = tmp_path / 'oi'
  write_text(str(folder / 'oidv7-class-descriptions-boxable.csv'), BOXABLE)
  path = write_text(str(folder / 'oidv6-train-annotations-bbox.csv'),
                    BOX_HEADER + box_lines(BOXES))
  assert detect_format(path, BOX_HEADER) == 'open_images'
  first, second = read_manifest_file(path)
  assert (first.row, first.image_uri, first.split) == (2, '000a1249af2bc5f0.jpg', 'train')
  assert first.resolved_uri == str(folder / '000a1249af2bc5f0.jpg')
  assert first.labels == ('Person', 'Car') and second.labels == ('Cat',)
  person, car = first.objects
  assert (person.xmin, person.xmax, person.ymin, person.ymax) == (0.1, 0.45, 0.2, 0.85)
  assert person.normalized and not person.is_crowd and not person.truncated
  assert person.attributes == (('occluded', 1), ('group_of', 0), ('depiction', 0),
                               ('inside', 0))
  assert car.is_crowd and car.truncated  # IsGroupOf 1, IsTruncated 1
  assert car.attributes == (('occluded', 0), ('group_of', 1), ('depiction', -1), ('inside', 0))
  (cat,) = second.objects
  assert (cat.xmin, cat.xmax, cat.ymin, cat.ymax) == (0.05, 0.6, 0.15, 0.7)
  assert not cat.is_crowd and not cat.truncated  # -1: unknown
  assert cat.attributes == (('occluded', -1), ('group_of', -1), ('depiction', 1), ('inside', 1))
  assert cat.source_id is None


def test_image_level_labels_take_confidence_0_as_no_label(tmp_path):
  """Confidence 0 is a verified negative: the class is not in the image."""
  write_text(str(tmp_path / 'oidv7-class-descriptions.csv'),
             'LabelName,DisplayName\n' + BOXABLE + '/m/0bt9lr,Dog\n')
  path = write_text(str(tmp_path / 'validation-annotations-human-imagelabels.csv'),
                    LABEL_HEADER + 'aa,verification,/m/01g317,1\naa,verification,/m/0k4j,0\n'
                    'aa,verification,/m/0bt9lr,1\naa,crowdsource-verified,/m/01g317,1\n'
                    'bb,verification,/m/0k4j,0\ncc,machine,/m/01yrx,0.7\n')
  aa, bb, cc = parse(path, open(path).read())
  assert (aa.labels, aa.objects, aa.split, aa.row) == (('Person', 'Dog'), None, 'eval', 2)
  assert bb.labels == () and bb.row == 6  # negatives alone: an unlabelled image
  assert cc.labels == ('Cat',)


def test_class_descriptions_with_and_without_header_and_shared_names(tmp_path):
  """The full list is preferred to the boxable one; a header is told by its names; two
  MIDs of one display name stay two classes."""
  text = LABEL_HEADER + 'aa,v,/m/01g317,1\naa,v,/m/0k4j,1\naa,v,/m/0x1,1\naa,v,/m/0x2,1\n'
  write_text(str(tmp_path / 'oidv7-class-descriptions-boxable.csv'),
             '/m/01g317,Boxable person\n/m/0k4j,Car\n')
  write_text(str(tmp_path / 'oidv7-class-descriptions.csv'),
             'LabelName,DisplayName\n/m/01g317,Person\n/m/0k4j,Car\n/m/0x1,Bat\n'
             '/m/0x2,Bat\n')
  path = write_text(str(tmp_path / 'labels.csv'), text)
  [row] = parse(path, text)
  assert row.labels == ('Person', 'Car', 'Bat (/m/0x1)', 'Bat (/m/0x2)')
  os.remove(tmp_path / 'oidv7-class-descriptions.csv')
  [failed] = parse(path, text)  # the boxable list does not name /m/0x1
  assert isinstance(failed, RowError) and failed.reason == 'bad_row'
  assert failed.message.startswith(
      "line 4: LabelName '/m/0x1' is not in "
      f"{tmp_path}/oidv7-class-descriptions-boxable.csv")
  assert failed.uri == 'aa.jpg'
  write_text(str(tmp_path / 'oidv7-class-descriptions-boxable.csv'),
             'LabelName,DisplayName\n/m/01g317,Person\n/m/0k4j,Car\n/m/0x1,Bat\n/m/0x2,Club\n')
  [row] = parse(path, text)
  assert row.labels == ('Person', 'Car', 'Bat', 'Club')


def test_class_descriptions_under_the_name_tensorflow_datasets_gives_them(tmp_path):
  """TFDS's Open Images builder and its fake data name the file class_descriptions.csv."""
  write_text(str(tmp_path / 'class_descriptions.csv'), '/m/01g317,Person\n/m/0k4j,Car\n')
  path = write_text(str(tmp_path / 'train-annotations-bbox.csv'),
                    BOX_HEADER + box_lines(BOXES[:1]))
  [row] = parse(path, open(path).read())
  assert row.labels == ('Person',)


def test_without_class_descriptions_labels_are_the_mids_with_a_warning(tmp_path, caplog):
  path = write_text(str(tmp_path / 'train-annotations-bbox.csv'),
                    BOX_HEADER + box_lines(BOXES[:1]))
  with caplog.at_level(logging.WARNING, logger=open_images.__name__):
    [row] = parse(path, open(path).read())
  assert row.labels == ('/m/01g317',)
  [warning] = [r.getMessage() for r in caplog.records if 'class descriptions' in r.getMessage()]
  assert 'its labels are the MIDs' in warning
  assert f'{tmp_path}/oidv7-class-descriptions.csv' in warning
  assert f'{tmp_path}/class-descriptions-boxable.csv' in warning


def test_a_file_out_of_imageid_order_groups_each_image_once(tmp_path, monkeypatch):
  """The rows of one image apart (here the file is large enough to be read as a stream,
  and sorted in many runs on disk) make one row with its boxes in line order, as the
  same lines in ImageID order do."""
  write_text(str(tmp_path / 'class-descriptions-boxable.csv'), BOXABLE)
  ids = [f'{(i * 7919) % 3000:016x}' for i in range(3000)]  # unordered
  lines = [(image_id, ('/m/01g317', '/m/0k4j', '/m/01yrx')[k], k / 10, k / 10 + 0.5,
            0.25, 0.75, 0, 0, k % 2, 0, 0)
           for k in range(3) for image_id in ids]  # each image's lines 3,000 lines apart
  unordered = write_text(str(tmp_path / 'unordered' / 'train-annotations-bbox.csv'),
                         BOX_HEADER + box_lines(lines))
  write_text(str(tmp_path / 'unordered' / 'class-descriptions-boxable.csv'), BOXABLE)
  ordered_lines = sorted(lines, key=lambda line: line[0])  # stable: line order kept
  ordered = write_text(str(tmp_path / 'ordered' / 'train-annotations-bbox.csv'),
                       BOX_HEADER + box_lines(ordered_lines))
  write_text(str(tmp_path / 'ordered' / 'class-descriptions-boxable.csv'), BOXABLE)
  assert os.path.getsize(unordered) > 64 * 2**10  # read as a stream of lines
  monkeypatch.setattr(coco, 'MEMORY_BYTES', 4096)
  rows = read_manifest_file(unordered)
  expected = read_manifest_file(ordered)
  assert len(rows) == len(expected) == 3000
  assert [r.image_uri for r in rows] == sorted(f'{i}.jpg' for i in ids)
  for row, same in zip(rows, expected):
    assert row.image_uri == same.image_uri and row.objects == same.objects
    assert [o.label for o in row.objects] == ['Person', 'Car', 'Cat']
    assert [o.is_crowd for o in row.objects] == [False, True, False]
  assert rows[0].row == 2 + ids.index(rows[0].image_uri[:-4])  # its first line


def test_bad_lines_fail_their_image_naming_the_line(tmp_path):
  write_text(str(tmp_path / 'class-descriptions-boxable.csv'), BOXABLE)
  text = BOX_HEADER + box_lines(BOXES) + (
      'bad1,x,/m/01g317,1,0.1,zero,0.2,0.3,0,0,0,0,0\n'
      'bad2,x,/m/01g317,1,0.6,0.5,0.2,0.3,0,0,0,0,0\n'
      'bad2,x,/m/01g317,1,0.1,0.5,0.4,0.3,0,0,0,0,0\n'
      'bad3,x,/m/01g317,1,0.1,0.5,0.2,0.3,0,0,0\n'
      'bad4,x,/m/01g317,2,0.1,0.5,0.2,0.3,0,0,0,0,0\n'
      'bad5,x,/m/01g317,1,0.1,0.5,0.2,0.3,0,0,yes,0,0\n'
      'bad6,x,,1,0.1,0.5,0.2,0.3,0,0,0,0,0\n'
      'bad7,x,/m/01g317,1,nan,0.5,0.2,0.3,0,0,0,0,0\n'
      ',x,/m/01g317,1,0.1,0.5,0.2,0.3,0,0,0,0,0\n')
  path = write_text(str(tmp_path / 'test-annotations-bbox.csv'), text)
  items = parse(path, text)
  # Out of order, so sorted: by ImageID length, then text ('' and bad1 ... first).
  assert [type(i).__name__ for i in items] == ['RowError'] * 8 + ['ManifestRow'] * 2
  failed = {i.uri: (i.row, i.message) for i in items if isinstance(i, RowError)}
  assert failed[None] == (13, 'the row has no ImageID')
  assert failed['bad1.jpg'] == (5, "line 5: XMin, XMax, YMin and YMax must be numbers "
                                "(normalised to [0, 1]), got XMin '0.1', XMax 'zero', YMin "
                                "'0.2', YMax '0.3'")
  assert failed['bad2.jpg'] == (6, "line 6: the box is reversed: XMin 0.6, XMax 0.5, YMin "
                                "0.2, YMax 0.3 (Open Images' column order is XMin, XMax, "
                                "YMin, YMax) (and 1 more of its lines)")
  assert failed['bad3.jpg'] == (8, 'line 8: the row has 11 column(s), the header has 13')
  assert failed['bad4.jpg'] == (9, "line 9: Confidence must be a number from 0 to 1, got '2'")
  assert failed['bad5.jpg'] == (10, "line 10: IsGroupOf must be 1, 0 or -1 (unknown), got "
                                "'yes'")
  assert failed['bad6.jpg'] == (11, 'line 11: LabelName is empty')
  assert failed['bad7.jpg'][0] == 12
  assert all(i.source == path and i.reason == 'bad_row'
             for i in items if isinstance(i, RowError))


def test_columns_other_than_open_images_are_not_read_and_missing_ones_are_named(tmp_path):
  """The train boxes file's XClick columns are not read; the columns may come in any
  order; a header without the box columns, or no header, stops the file."""
  header = ('LabelName,ImageID,XMin,XMax,YMin,YMax,IsGroupOf,XClick1X,XClick2X,Confidence,'
            'Source\n')
  text = header + '/m/0k4j,cc,0.1,0.2,0.3,0.4,1,0.15,0.2,1,xclick\n'
  path = write_text(str(tmp_path / 'boxes.csv'), text)
  [row] = parse(path, text)
  (box,) = row.objects
  assert (row.image_uri, row.split, box.label) == ('cc.jpg', None, '/m/0k4j')
  assert (box.xmin, box.xmax, box.ymin, box.ymax, box.is_crowd) == (0.1, 0.2, 0.3, 0.4, True)
  assert box.attributes == (('group_of', 1),)
  with pytest.raises(ManifestError, match=r'needs the columns YMin, YMax in its header'):
    parse(path, 'ImageID,LabelName,XMin,XMax\ncc,/m/0k4j,0.1,0.2\n')
  with pytest.raises(ManifestError, match=r'starts with a header naming its columns'):
    parse(path, 'cc,xclick,/m/0k4j,1,0.1,0.2,0.3,0.4,0,0,0,0,0\n')
  with pytest.raises(ManifestError, match=r'the file is empty'):
    parse(path, '\n')


def test_a_quoted_file_is_read_as_csv(tmp_path):
  """A line holding a quote is read by csv, not split at its commas: a quoted field may
  hold a comma or a line break."""
  text = (LABEL_HEADER + '"zz","a, b",/m/0k4j,1\n"aa","x\ny",/m/01g317,1\n')
  path = write_text(str(tmp_path / 'labels.csv'), text)
  aa, zz = parse(path, text)
  assert (aa.image_uri, aa.labels, aa.row) == ('aa.jpg', ('/m/01g317',), 4)
  assert (zz.image_uri, zz.labels, zz.row) == ('zz.jpg', ('/m/0k4j',), 2)


@pytest.mark.parametrize('name, split', [
    ('oidv6-train-annotations-bbox.csv', 'train'), ('train-annotations-bbox.csv', 'train'),
    ('validation-annotations-bbox.csv', 'eval'),
    ('oidv7-validation-annotations-human-imagelabels.csv', 'eval'),
    ('test-annotations-human-imagelabels-boxable.csv', 'test'),
    ('challenge-2019-train-detection-bbox.csv', 'train'),
    ('train/labels/detections.csv', 'train'),  # FiftyOne's layout
    ('my-boxes.csv', None), ('training-boxes.csv', None)])
def test_split_from_the_file_name(tmp_path, name, split):
  text = BOX_HEADER + box_lines(BOXES[:1])
  path = write_text(str(tmp_path / name), text)
  [row] = parse(path, text)
  assert row.split == split


@pytest.mark.parametrize('csv_path, image_dir, image_root', [
    ('validation-annotations-bbox.csv', '', None),  # beside the CSV (downloader.py)
    ('validation-annotations-bbox.csv', 'validation', None),  # the bucket's validation/
    ('annotations/validation-annotations-bbox.csv', 'images/validation', None),  # Datumaro
    ('validation/labels/detections.csv', 'validation/data', None),  # FiftyOne
    ('csv/validation-annotations-bbox.csv', 'jpegs', 'jpegs'),  # image_root itself
    ('csv/validation-annotations-bbox.csv', 'jpegs/validation', 'jpegs'),  # its split folder
])
def test_the_images_folder_is_found_once_for_the_file(tmp_path, csv_path, image_dir,
                                                      image_root):
  lines = box_lines(BOXES)
  path = write_text(str(tmp_path / csv_path), BOX_HEADER + lines)
  # The first image is missing: the second one tells where they are.
  write_image(str(tmp_path / image_dir / '0f2c4a3d5e6b7c8d.jpg'))
  root = str(tmp_path / image_root) if image_root else None
  rows = list(open_images.parse(path, BOX_HEADER + lines, image_root=root))
  assert [r.resolved_uri for r in rows] == [
      os.path.normpath(str(tmp_path / image_dir / f'{i}.jpg'))
      for i in ('000a1249af2bc5f0', '0f2c4a3d5e6b7c8d')]


def test_images_found_nowhere_are_read_beside_the_csv_with_a_warning(tmp_path, caplog):
  path = write_text(str(tmp_path / 'test-annotations-bbox.csv'), BOX_HEADER + box_lines(BOXES))
  with caplog.at_level(logging.WARNING, logger=open_images.__name__):
    rows = parse(path, open(path).read())
  assert rows[0].resolved_uri == str(tmp_path / '000a1249af2bc5f0.jpg')
  [warning] = [r.getMessage() for r in caplog.records if 'first images' in r.getMessage()]
  assert f'{tmp_path}/test/000a1249af2bc5f0.jpg' in warning


def read_back(output_dir):
  records = {}
  for split in ('train', 'eval', 'test'):
    folder = os.path.join(output_dir, f'Split-{split}')
    if os.path.isdir(folder):
      for data in read_records(folder):
        feature = example_proto.Example.FromString(data).features.feature
        records[feature['image/source_id'].bytes_list.value[0].decode()] = (split, feature)
  return records


def list_of(feature):
  return list(getattr(feature, feature.WhichOneof('kind')).value)


def test_boxes_convert_end_to_end_from_the_command_line(tmp_path):
  """Real JPEGs as `validation/<ImageID>.jpg`: the records hold each box where the CSV
  puts it (normalised, in XMin, YMin, XMax, YMax order), its class and its flags."""
  data = tmp_path / 'oid'
  write_text(str(data / 'oidv7-class-descriptions-boxable.csv'), BOXABLE)
  path = write_text(str(data / 'validation-annotations-bbox.csv'),
                    BOX_HEADER + box_lines(BOXES))
  for seed, image_id in enumerate(('000a1249af2bc5f0', '0f2c4a3d5e6b7c8d')):
    write_image(str(data / 'validation' / f'{image_id}.jpg'), height=30, width=40, seed=seed)
  out = str(tmp_path / 'out')
  assert main(['convert', path, out]) == 0
  records = read_back(out)
  assert sorted(records) == ['validation/000a1249af2bc5f0.jpg',
                             'validation/0f2c4a3d5e6b7c8d.jpg']
  with open(os.path.join(out, 'labels.txt'), encoding='utf-8') as f:
    labels = f.read().split('\n')[:-1]
  for image_id in ('000a1249af2bc5f0', '0f2c4a3d5e6b7c8d'):
    split, feature = records[f'validation/{image_id}.jpg']
    boxes = [b for b in BOXES if b[0] == image_id]
    assert split == 'eval'
    values = lambda key, f=feature: list_of(f[key])  # pylint: disable=unnecessary-lambda-assignment
    for key, column in (('xmin', 2), ('xmax', 3), ('ymin', 4), ('ymax', 5)):
      assert values(f'image/object/bbox/{key}') == pytest.approx([b[column] for b in boxes],
                                                                 abs=1e-4)
    names = dict(line.split(',') for line in BOXABLE.split())
    assert [t.decode() for t in values('image/object/class/text')] == [
        names[b[1]] for b in boxes]
    assert values('image/object/class/label') == [labels.index(names[b[1]]) + 1 for b in boxes]
    assert values('image/object/is_crowd') == [int(b[8] == 1) for b in boxes]
    assert values('image/object/truncated') == [int(b[7] == 1) for b in boxes]
    assert values('image/object/group_of') == [b[8] for b in boxes]
    assert values('image/object/occluded') == [b[6] for b in boxes]
    assert values('image/object/depiction') == [b[9] for b in boxes]
    assert values('image/object/inside') == [b[10] for b in boxes]
  assert sorted(labels) == ['Car', 'Cat', 'Person']


def test_image_level_labels_convert_end_to_end(tmp_path):
  data = tmp_path / 'oid'
  write_text(str(data / 'oidv7-class-descriptions.csv'), 'LabelName,DisplayName\n' + BOXABLE)
  path = write_text(str(data / 'train-annotations-human-imagelabels.csv'),
                    LABEL_HEADER + 'aa,verification,/m/0k4j,1\naa,verification,/m/01yrx,0\n'
                    'bb,verification,/m/01yrx,1\n')
  for seed, image_id in enumerate(('aa', 'bb')):
    write_image(str(data / 'train' / f'{image_id}.jpg'), seed=seed)
  result = trc.convert(path, str(tmp_path / 'out'))
  assert result.summary['records_written'] == 2
  records = read_back(result.output_dir)
  assert {k: (s, [t.decode() for t in f['image/class/text'].bytes_list.value])
          for k, (s, f) in records.items()} == {'train/aa.jpg': ('train', ['Car']),
                                                 'train/bb.jpg': ('train', ['Cat'])}
  with open(os.path.join(result.output_dir, 'report', 'summary.json')) as f:
    assert json.load(f)['records_per_label'] == {'Car': 1, 'Cat': 1}


def test_a_row_is_a_manifest_row_or_an_error_whatever_the_lines(tmp_path):
  """Every line of a file of mixed good and bad lines, in any order, is accounted for
  by exactly one image (a row or a RowError)."""
  write_text(str(tmp_path / 'class-descriptions-boxable.csv'), BOXABLE)
  text = BOX_HEADER + box_lines(BOXES) + 'ee,x,/m/0k4j,1,0.9,0.1,0,1,0,0,0,0,0\n' + box_lines(
      BOXES[:1]) + '\n\n'
  path = write_text(str(tmp_path / 'boxes.csv'), text)
  items = parse(path, text)
  assert all(isinstance(i, (ManifestRow, RowError)) for i in items)
  assert sorted((i.uri if isinstance(i, RowError) else i.image_uri) for i in items) == [
      '000a1249af2bc5f0.jpg', '0f2c4a3d5e6b7c8d.jpg', 'ee.jpg']
  [first] = [i for i in items if getattr(i, 'image_uri', None) == '000a1249af2bc5f0.jpg']
  assert len(first.objects) == 3  # its third line comes after the others
