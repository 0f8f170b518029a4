"""Ultralytics YOLO datasets (data.yaml, labels/*.txt): parsed, and converted end to end.

Every dataset is written here: JPEG and PNG images of different sizes (Pillow), label
files in the layouts Ultralytics and Roboflow write, and data.yaml files.
"""
import json
import logging
import os

from hypothesis import HealthCheck, given, settings, strategies as st
import numpy as np
import pytest
from pycocotools import mask as coco_mask

from images import write_image, write_text
from records import by_source_id, decoded_masks, feature
from manifest_items import FORMAT_SAMPLES, check_items
import tfrecorder_component as trc
from tfrecorder_component.adapters.cli import main
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.record.labels import read_label_map
from tfrecorder_component.manifest import ManifestRow, read_manifest_file, yolo
from tfrecorder_component.manifest.registry import detect_format


def write_dataset(root, yaml_text, images, labels):
  """`images`: {relative path: (width, height)}; `labels`: {relative path: text}."""
  for i, (name, (width, height)) in enumerate(images.items()):
    fmt = 'PNG' if name.endswith('.png') else 'JPEG'
    write_image(os.path.join(root, name), fmt, width=width, height=height, seed=i)
  for name, text in labels.items():
    write_text(os.path.join(root, name), text)
  return write_text(os.path.join(root, 'data.yaml'), yaml_text)


def read(path, fmt=None, annotations=frozenset(), **kwargs):
  return read_manifest_file(str(path), fmt, annotations=frozenset(annotations), **kwargs)


def boxes(row):
  return [(o.label, o.source_id, pytest.approx((o.xmin, o.ymin, o.xmax, o.ymax), abs=1e-9))
          for o in row.objects]


def box(cx, cy, w, h):
  return (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


# --- parsing ----------------------------------------------------------------------------

DETECTION = {
    'images/train/a.jpg': (40, 30),
    'images/train/b.png': (20, 20),        # empty label file
    'images/train/c.jpg': (30, 40),        # no label file
    'images/train/sub/d.JPG': (16, 12),    # nested, upper-case extension
    'images/val/e.jpg': (24, 24),
}
DETECTION_LABELS = {
    'labels/train/a.txt': '0 0.5 0.5 0.2 0.4\n2 0.25 0.75 0.1 0.1\n',
    'labels/train/b.txt': '',
    'labels/train/sub/d.txt': '\n1 0.1 0.2 0.1 0.2\n\n',
    'labels/val/e.txt': '1 0.5 0.5 1 1\r\n',
}


def test_detection_dataset_rows_splits_and_boxes(tmp_path):
  path = write_dataset(tmp_path, 'val: images/val\ntrain: images/train\nnames: [cat, dog, fox]\n'
                       'test:\n', DETECTION, DETECTION_LABELS)
  write_text(str(tmp_path / 'images/train/.hidden.jpg'), 'not read')
  write_text(str(tmp_path / 'images/train/notes.txt'), 'not an image')
  assert detect_format(path, open(path).read()) == 'yolo'
  rows = read(path)
  assert all(isinstance(r, ManifestRow) for r in rows), rows
  # split by split in the yaml's order (val first here), images sorted; test: empty
  assert [(r.row, r.image_uri, r.split) for r in rows] == [
      (1, 'images/val/e.jpg', 'eval'), (2, 'images/train/a.jpg', 'train'),
      (3, 'images/train/b.png', 'train'), (4, 'images/train/c.jpg', 'train'),
      (5, 'images/train/sub/d.JPG', 'train')]
  assert all(r.source == path for r in rows)
  assert [r.resolved_uri for r in rows] == [str(tmp_path / r.image_uri) for r in rows]
  e, a, b, c, d = rows
  assert boxes(a) == [('cat', 0, box(0.5, 0.5, 0.2, 0.4)), ('fox', 2, box(0.25, 0.75, 0.1, 0.1))]
  assert a.labels == ('cat', 'fox')
  assert b.objects == () and c.objects == () and b.labels == ()
  assert boxes(d) == [('dog', 1, box(0.1, 0.2, 0.1, 0.2))]
  assert boxes(e) == [('dog', 1, (0.0, 0.0, 1.0, 1.0))]
  assert all(o.normalized and o.mask is None and not o.keypoints and not o.corners
             for r in rows for o in r.objects)


def test_names_as_a_dict_and_as_nc(tmp_path):
  images = {'images/train/a.jpg': (10, 10)}
  labels = {'labels/train/a.txt': '0 .5 .5 .2 .2\n7 .5 .5 .4 .4\n'}
  path = write_dataset(tmp_path, "train: images/train\nnames:\n  0: cat\n  '7': big dog\n",
                       images, labels)
  [row] = read(path)
  assert [(o.label, o.source_id) for o in row.objects] == [('cat', 0), ('big dog', 7)]
  write_text(path, 'train: images/train\nnc: 8\n')
  [row] = read(path)
  assert [o.label for o in row.objects] == ['class_0', 'class_7']
  for text, words in [('train: images/train\nnc: 2\nnames: [a, b, c]\n', '`nc` is 2'),
                      ('train: images/train\n', 'no `names`'),
                      ('train: images/train\nnames: {x: cat}\n', "key 'x'"),
                      ('train: images/train\nnames: [cat, ""]\n', 'non-empty name'),
                      ('train: [images/train\nnames: [cat]\n', 'not a valid YAML'),
                      ('- names\n', 'a mapping')]:
    write_text(path, text)
    with pytest.raises(ManifestError, match='data.yaml: .*' + words):
      read(path, 'yolo')


def test_polygons_become_their_bounding_box_and_with_masks_their_mask(tmp_path):
  polygon = [0.1, 0.2, 0.6, 0.1, 0.5, 0.9, 0.2, 0.7]
  path = write_dataset(tmp_path, 'train: images/train\nnames: [cat, dog]\n',
                       {'images/train/a.jpg': (40, 30)},
                       {'labels/train/a.txt': '1 ' + ' '.join(map(str, polygon)) + '\n'
                                              '0 0.1 0.1 0.3 0.1 0.2 0.3\n'})
  [row] = read(path)
  assert boxes(row) == [('dog', 1, (0.1, 0.1, 0.6, 0.9)), ('cat', 0, (0.1, 0.1, 0.3, 0.3))]
  assert all(o.mask is None for o in row.objects)
  [row] = read(path, annotations={'masks'})
  assert boxes(row) == [('dog', 1, (0.1, 0.1, 0.6, 0.9)), ('cat', 0, (0.1, 0.1, 0.3, 0.3))]
  assert row.objects[0].mask.polygons == (tuple(polygon),)
  assert row.objects[0].mask.normalized
  assert row.objects[1].mask.polygons == ((0.1, 0.1, 0.3, 0.1, 0.2, 0.3),)
  # with masks asked for, a plain box has no mask to give: its image fails
  write_text(str(tmp_path / 'labels/train/a.txt'), '0 0.1 0.1 0.3 0.1 0.2 0.3\n1 .5 .5 .2 .2\n')
  [error] = read(path, annotations={'masks'})
  assert isinstance(error, RowError) and error.reason == 'bad_row'
  assert f'{tmp_path}/labels/train/a.txt line 2: a box line' in error.message
  assert 'include_masks' in error.message


POSE_YAML = ('train: images/train\nnames: {0: person, 1: cat}\nkpt_shape: [3, 3]\n'
             'kpt_names:\n  0: [nose, left, right]\n')


def test_pose_lines_give_boxes_and_with_keypoints_named_points(tmp_path):
  path = write_dataset(tmp_path, POSE_YAML, {'images/train/a.jpg': (40, 30)}, {
      'labels/train/a.txt': '0 0.5 0.5 0.4 0.6 0.5 0.3 2 0.4 0.6 1 0 0 0\n'
                            '1 0.2 0.2 0.2 0.2 0.1 0.1 2.0 0.3 0.3 2 0.2 0.15 1\n'})
  [row] = read(path)
  assert boxes(row) == [('person', 0, box(0.5, 0.5, 0.4, 0.6)), ('cat', 1, box(.2, .2, .2, .2))]
  assert all(not o.keypoints for o in row.objects)
  [row] = read(path, annotations={'keypoints'})
  person, cat = row.objects
  assert boxes(row) == [('person', 0, box(0.5, 0.5, 0.4, 0.6)), ('cat', 1, box(.2, .2, .2, .2))]
  assert person.keypoints == ((0.5, 0.3, 2), (0.4, 0.6, 1), (0.0, 0.0, 0))
  assert person.keypoint_names == ('nose', 'left', 'right')
  assert cat.keypoints == ((0.1, 0.1, 2), (0.3, 0.3, 2), (0.2, 0.15, 1))
  assert cat.keypoint_names == ('0', '1', '2')  # kpt_names names none of cat's
  assert all(isinstance(v, int) for o in row.objects for _, _, v in o.keypoints)
  # 2-d points: every point labelled and visible, as Ultralytics counts them present
  write_text(path, 'train: images/train\nnames: [hand]\nkpt_shape: [2, 2]\n'
             'kpt_names: [[tip, base]]\n')
  write_text(str(tmp_path / 'labels/train/a.txt'), '0 0.5 0.5 0.2 0.2 0.45 0.4 0 0\n')
  [row] = read(path, annotations={'keypoints'})
  assert row.objects[0].keypoints == ((0.45, 0.4, 2), (0.0, 0.0, 2))
  assert row.objects[0].keypoint_names == ('tip', 'base')
  # a point with a visibility other than 0, 1, 2; a line of the wrong length
  write_text(path, POSE_YAML)
  for line, words in [('0 .5 .5 .2 .2 .1 .1 2 .2 .2 3 .3 .3 0',
                           "keypoint 1's visibility is none of 0, 1 and 2"),
                      ('0 .5 .5 .2 .2 .1 .1 2 .2 .2', 'a pose line (kpt_shape [3, 3]) is')]:
    write_text(str(tmp_path / 'labels/train/a.txt'), '0 .5 .5 .2 .2 0 0 0 0 0 0 0 0 0\n' + line)
    [error] = read(path, annotations={'keypoints'})
    assert f'a.txt line 2: {words}' in error.message, error.message


def test_keypoints_and_masks_asked_of_the_wrong_dataset(tmp_path):
  path = write_dataset(tmp_path, 'train: images/train\nnames: [cat]\n',
                       {'images/train/a.jpg': (10, 10)}, {})
  with pytest.raises(ManifestError, match='include_keypoints asked for.*kpt_shape'):
    read(path, annotations={'keypoints'})
  write_text(path, POSE_YAML)
  with pytest.raises(ManifestError, match='include_masks asked for.*pose dataset'):
    read(path, annotations={'masks'})
  write_text(path, 'train: images/train\nnames: [cat]\nkpt_shape: [3, 4]\n')
  with pytest.raises(ManifestError, match='kpt_shape'):
    read(path)
  write_text(path, 'train: images/train\nnames: [cat]\n')
  with pytest.raises(ManifestError, match=r'include_masks.*\(yolo_obb\) has no masks'):
    read(path, 'yolo_obb', annotations={'masks'})


def test_oriented_boxes_keep_their_corners(tmp_path):
  corners = (0.1, 0.3, 0.5, 0.1, 0.7, 0.5, 0.3, 0.7)
  path = write_dataset(tmp_path, 'train: images/train\nnames: [plane, ship]\n',
                       {'images/train/a.jpg': (40, 30)},
                       {'labels/train/a.txt': '1 ' + ' '.join(map(str, corners)) + '\n'})
  [row] = read(path, 'yolo_obb')
  assert boxes(row) == [('ship', 1, (0.1, 0.1, 0.7, 0.7))]
  assert row.objects[0].corners == corners and row.objects[0].normalized
  write_text(str(tmp_path / 'labels/train/a.txt'), '0 .5 .5 .2 .2\n')
  [error] = read(path, 'yolo_obb')
  assert 'a.txt line 1: an oriented box line is `class x1 y1' in error.message
  assert 'got 4 numbers' in error.message


def test_an_image_list_file_and_a_list_of_folders(tmp_path):
  images = {'images/a.jpg': (10, 10), 'images/b.jpg': (12, 10), 'more/c.png': (10, 12),
            'extra/z.jpg': (10, 10)}
  labels = {'labels/a.txt': '0 .5 .5 .2 .2\n', 'more/c.txt': '1 .5 .5 .2 .2\n',
            'extra/z.txt': '0 .5 .5 .1 .1\n'}
  path = write_dataset(tmp_path, 'train: lists/train.txt\nval: [more, extra]\nnames: [a, b]\n',
                       images, labels)
  write_text(str(tmp_path / 'lists/train.txt'),
             f'../images/b.jpg\n\n./../images/a.jpg\n{tmp_path}/more/c.png\n'
             '../images/gone.jpg\n../images/notes.md\n')
  items = read(path)
  assert [(i.row, getattr(i, 'image_uri', None) or i.uri, getattr(i, 'split', None))
          for i in items] == [
      (1, 'images/a.jpg', 'train'), (2, 'images/b.jpg', 'train'),
      (3, 'images/gone.jpg', 'train'),  # a missing image fails when its record is built
      (4, None, None), (5, 'more/c.png', 'train'),  # a line of no image: not quoted
      (6, 'extra/z.jpg', 'eval'), (7, 'more/c.png', 'eval')]
  assert isinstance(items[3], RowError) and items[3].reason == 'bad_row'
  assert f'{tmp_path}/lists/train.txt line 6 is not an image file name' in items[3].message
  assert 'notes.md' not in items[3].message  # a list may be any file: its text is not shown
  assert [o.label for o in items[0].objects] == ['a'] and items[1].objects == ()
  assert [o.label for o in items[4].objects] == ['b']  # labels beside it (no /images/)
  assert items[2].resolved_uri == str(tmp_path / 'images/gone.jpg')


def test_roboflow_export_layout(tmp_path, caplog):
  """Roboflow writes `train: ../train/images` relative to a yaml in the dataset folder;
  Ultralytics retries a missing `../x` as `x` under the root. A label file without an
  image is not read, and a warning counts them."""
  images = {'train/images/a.jpg': (20, 10), 'valid/images/b.jpg': (10, 20),
            'test/images/c.jpg': (10, 10)}
  labels = {'train/labels/a.txt': '0 .5 .5 .2 .2\n', 'valid/labels/b.txt': '1 .5 .5 .2 .2\n',
            'train/labels/orphan1.txt': '0 .5 .5 .2 .2\n', 'train/labels/orphan2.txt': ''}
  path = write_dataset(
      tmp_path, 'train: ../train/images\nval: ../valid/images\ntest: ../test/images\n\n'
      'nc: 2\nnames: [\'hard hat\', \'vest\']\n\nroboflow:\n  workspace: w\n  version: 3\n',
      images, labels)
  with caplog.at_level(logging.WARNING):
    rows = read(path)
  assert [(r.image_uri, r.split, [o.label for o in r.objects]) for r in rows] == [
      ('train/images/a.jpg', 'train', ['hard hat']), ('valid/images/b.jpg', 'eval', ['vest']),
      ('test/images/c.jpg', 'test', [])]
  [warning] = [r.getMessage() for r in caplog.records if 'have no image' in r.getMessage()]
  assert '2 label file(s) of `train` have no image' in warning
  assert f'e.g. {tmp_path}/train/labels/orphan1.txt' in warning


def test_path_key_image_root_and_missing_splits(tmp_path, caplog):
  images = {'ds/images/train/a.jpg': (10, 10)}
  path = write_dataset(tmp_path, 'path: ds\ntrain: images/train\nnames: [cat]\n', images,
                       {'ds/labels/train/a.txt': '0 .5 .5 .2 .2\n'})
  [row] = read(path)
  assert (row.image_uri, row.resolved_uri) == ('ds/images/train/a.jpg',
                                               str(tmp_path / 'ds/images/train/a.jpg'))
  assert [o.label for o in row.objects] == ['cat']
  # a `path` that does not exist here (written on another machine): the yaml's folder
  write_text(path, 'path: /content/datasets/ds\ntrain: ds/images/train\nnames: [cat]\n')
  with caplog.at_level(logging.WARNING):
    [row] = read(path)
  assert row.image_uri == 'ds/images/train/a.jpg'
  assert any('/content/datasets/ds' in r.getMessage() for r in caplog.records)
  # image_root replaces the yaml's folder
  elsewhere = write_text(str(tmp_path / 'configs/data.yaml'),
                         'train: images/train\nnames: [cat]\n')
  [row] = read(elsewhere, image_root=str(tmp_path / 'ds'))
  assert (row.image_uri, row.resolved_uri) == ('images/train/a.jpg',
                                               str(tmp_path / 'ds/images/train/a.jpg'))
  assert [o.label for o in row.objects] == ['cat']
  # a split naming nothing that exists
  write_text(path, 'path: ds\ntrain: images/train\nval: ../images/val\nnames: [cat]\n')
  with pytest.raises(ManifestError) as e:
    read(path)
  assert '`val: ../images/val` names' in str(e.value)
  assert f'{tmp_path}/images/val or {tmp_path}/ds/images/val, which does not exist' in str(
      e.value)
  write_text(path, 'train: 7\nnames: [cat]\n')
  with pytest.raises(ManifestError, match='`train` must be a folder'):
    read(path)


# A label file is found by its image's path, so it may be any .txt file: its values are
# never quoted, only where they are (the line, the value's place).
BAD_LINES = [
    ('x 0.5 0.5 0.2 0.2', "the class (the line's first value) is not a class id"),
    ('0.5 0.5 0.5 0.2 0.2', "the class (the line's first value) is not a class id"),
    ('3 0.5 0.5 0.2 0.2', "the class id is not in the data.yaml's `names` (ids 0 to 2)"),
    ('-1 0.5 0.5 0.2 0.2', 'the class id is not in'),
    ('0 0.5 0.5 0.2', 'a line is `class cx cy w h` (a box) or'),
    ('0 0.5 0.5 0.2 0.2 0.3', 'got 5 numbers after the class'),
    ('0 0.1 0.1 0.2 0.2 0.3 0.3 0.4', 'got 7 numbers'),
    ('0 0.5 abc 0.2 0.2', 'value 2 after the class is not a number'),
    ('0 0.5 0.5 -0.2 0.2', 'coordinates must be normalised to [0, 1]'),
    ('0 320 240 50 80', 'got a value above 1; convert pixel coordinates'),
    ('0 0.5 nan 0.2 0.2', 'got a value that is not a number (nan)'),
    ('1 0.1 0.1 1.2 0.1 0.5 0.5', 'got a value above 1'),
    ('0 0.5 0.5 0.2 0.2 # a comment', 'value 5 after the class is not a number'),
]


@pytest.mark.parametrize('line,words', BAD_LINES)
def test_a_bad_label_line_fails_its_image_naming_file_and_line(tmp_path, line, words):
  path = write_dataset(tmp_path, 'train: images/train\nnames: [cat, dog, fox]\n',
                       {'images/train/a.jpg': (10, 10), 'images/train/b.jpg': (10, 10)},
                       {'labels/train/a.txt': f'0 0.5 0.5 0.2 0.2\n\n{line}\n',
                        'labels/train/b.txt': '1 0.5 0.5 0.2 0.2\n'})
  error, good = read(path)
  assert isinstance(error, RowError), error
  assert (error.reason, error.row, error.uri, error.source) == (
      'bad_row', 1, 'images/train/a.jpg', path)
  assert error.message.startswith(f'{tmp_path}/labels/train/a.txt line 3: ')
  assert words in error.message, error.message
  assert not any(repr(v) in error.message for v in line.split())  # no value quoted
  assert isinstance(good, ManifestRow) and [o.label for o in good.objects] == ['dog']


def test_coordinates_within_ultralytics_tolerance_are_read(tmp_path):
  """Ultralytics accepts coordinates up to 0.01 outside [0, 1]; the record step clips."""
  path = write_dataset(tmp_path, 'train: images/train\nnames: [cat]\n',
                       {'images/train/a.jpg': (10, 10)},
                       {'labels/train/a.txt': '0 1.005 0.5 0.2 0.2\n0 -0.004 0.1 0.1 0.3 0.2 0.2\n'
                                              '0 0.5 0.5 0.2 1.02\n'})
  [error] = read(path)
  assert 'a.txt line 3: coordinates must be normalised' in error.message
  write_text(str(tmp_path / 'labels/train/a.txt'), '0 1.005 0.5 0.2 0.2\n0 -0.004 0.1 0.1 0.3 '
             '0.2 0.2\n')
  [row] = read(path)
  assert boxes(row) == [('cat', 0, box(1.005, 0.5, 0.2, 0.2)), ('cat', 0, (-0.004, 0.1, 0.2, 0.3))]


def test_a_label_file_that_is_not_utf8_fails_its_image(tmp_path):
  path = write_dataset(tmp_path, 'train: images/train\nnames: [cat]\n',
                       {'images/train/a.jpg': (10, 10)}, {})
  (tmp_path / 'labels/train').mkdir(parents=True)
  (tmp_path / 'labels/train/a.txt').write_bytes(b'0 0.5 0.5 0.2 0.2 \xff\n')
  [error] = read(path)
  assert error.reason == 'bad_row' and 'a.txt: the label file is not UTF-8' in error.message


def test_the_format_samples_read_named_and_detected(tmp_path):
  for fmt in ('yolo', 'yolo_obb'):
    name, text, others = FORMAT_SAMPLES[fmt]
    path = write_text(str(tmp_path / fmt / name), text)
    for other, content in others.items():
      write_text(str(tmp_path / fmt / other), content)
    for given in (fmt, None) if fmt == 'yolo' else (fmt,):
      [row] = read(path, given)
      assert isinstance(row, ManifestRow) and row.image_uri == 'images/train/a.jpg'
      assert [o.label for o in row.objects] == ['cat']
  assert read(tmp_path / 'yolo_obb' / 'data.yaml', 'yolo_obb')[0].objects[0].corners == (
      0.1, 0.1, 0.5, 0.1, 0.5, 0.4, 0.1, 0.4)
  # read as yolo, the oriented box is a polygon: its bounding box
  assert boxes(read(tmp_path / 'yolo_obb' / 'data.yaml', 'yolo')[0]) == [
      ('cat', 0, (0.1, 0.1, 0.5, 0.4))]


NUMBERS = st.sampled_from(['0', '1', '0.5', '0.25', '1.005', '-0.004', '2', '1.2', '-1',
                           '1e-3', 'nan', 'inf', '2.0', '1' * 30])
JUNK = st.sampled_from(['x', '#', '', '\t', '\r', '\udce9', '0,5'])
LABEL_LINE = st.tuples(st.sampled_from(['0', '1', '2', '-1', '1.0', 'cat']),
                       st.lists(NUMBERS | JUNK, max_size=16)).map(
                           lambda t: ' '.join([t[0], *t[1]]))
YAML_EXTRAS = st.sampled_from(['kpt_shape: [2, 3]\n', 'kpt_shape: [1, 2]\n', 'nc: 2\n',
                               'nc: 3\n', 'path: .\n', 'path: nowhere\n', 'test:\n',
                               'kpt_names: [[a]]\n', 'kpt_names: {0: [a, b]}\n',
                               'names: {0: cat, 1: dog}\n', 'val: [images/train]\n',
                               'names: [cat]\n', 'train: nowhere\n', "'", '- x\n'])


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(YAML_EXTRAS, max_size=3).map(
    lambda extras: 'train: images/train\nnames: [cat, dog]\n' + ''.join(extras)),
       st.lists(LABEL_LINE, max_size=4).map('\n'.join), st.booleans(), st.booleans())
def test_any_yaml_and_label_text_gives_rows_or_the_projects_errors(tmp_path, yaml_text, label,
                                                                   masks, keypoints):
  write_image(str(tmp_path / 'images/train/a.jpg'))
  (tmp_path / 'labels/train').mkdir(parents=True, exist_ok=True)
  (tmp_path / 'labels/train/a.txt').write_bytes(label.encode('utf-8', 'surrogateescape'))
  path = write_text(str(tmp_path / 'data.yaml'), yaml_text)
  asked = {n for n, on in (('masks', masks), ('keypoints', keypoints)) if on}
  for fmt in ('yolo', 'yolo_obb'):
    try:
      items = read(path, fmt, annotations=asked)
    except ManifestError:
      continue
    check_items(items)
    for item in items:
      if isinstance(item, RowError):
        assert item.message.startswith(f'{tmp_path}/labels/train/a.txt'), item.message


# --- end to end ---------------------------------------------------------------------------

# name: (width, height, [(class, cx, cy, w, h)])
E2E_TRAIN = {
    'a.jpg': (64, 48, [(0, 0.5, 0.5, 0.5, 0.5), (2, 0.2, 0.3, 0.2, 0.4)]),
    'b.jpg': (40, 60, [(1, 0.75, 0.25, 0.3, 0.3)]),
    'c.png': (50, 50, []),           # an empty label file
    'd.jpg': (32, 32, None),         # no label file
}
E2E_VAL = {
    'e.jpg': (48, 64, [(2, 0.5, 0.6, 0.8, 0.4), (0, 0.1, 0.1, 0.1, 0.1)]),
    'f.jpg': (30, 20, None),
}


def write_e2e_dataset(root):
  images, labels = {}, {}
  for split, spec in (('train', E2E_TRAIN), ('val', E2E_VAL)):
    for name, (width, height, objects) in spec.items():
      images[f'images/{split}/{name}'] = (width, height)
      if objects is not None:
        labels[f'labels/{split}/{name.rsplit(".", 1)[0]}.txt'] = ''.join(
            f'{c} {cx} {cy} {w} {h}\n' for c, cx, cy, w, h in objects)
  return write_dataset(root, 'path: .\ntrain: images/train\nval: images/val\n'
                       'names:\n  0: cat\n  1: dog\n  2: red fox\n', images, labels)


def check_e2e_records(out):
  records = by_source_id(str(out), ['train', 'eval'])
  expected = {f'images/{split}/{name}': (s, spec[name])
              for split, s, spec in (('train', 'train', E2E_TRAIN), ('val', 'eval', E2E_VAL))
              for name in spec}
  assert sorted(records) == sorted(expected)
  label_map = read_label_map(str(out))
  assert label_map == {'cat': 1, 'dog': 2, 'red fox': 3}  # class id + 1
  for uri, (split, example) in records.items():
    want_split, (width, height, objects) = expected[uri]
    assert split == want_split, uri
    assert feature(example, 'image/width') == [width]
    assert feature(example, 'image/height') == [height]
    objects = objects or []
    texts = [t.decode() for t in feature(example, 'image/object/class/text')]
    assert texts == [NAMES_E2E[c] for c, *_ in objects], uri
    assert feature(example, 'image/object/class/label') == [c + 1 for c, *_ in objects]
    got = np.array(list(zip(*(feature(example, f'image/object/bbox/{k}')
                              for k in ('xmin', 'ymin', 'xmax', 'ymax'))))).reshape(-1, 4)
    want = np.array([box(*o[1:]) for o in objects]).reshape(-1, 4)
    np.testing.assert_allclose(got, want, atol=1e-4)
  return records


NAMES_E2E = {0: 'cat', 1: 'dog', 2: 'red fox'}


@pytest.fixture(scope='module')
def e2e_dataset(tmp_path_factory):
  root = tmp_path_factory.mktemp('yolo')
  return write_e2e_dataset(root)


def test_cli_converts_the_yaml_and_the_dataset_folder(e2e_dataset, tmp_path):
  for source in (e2e_dataset, os.path.dirname(e2e_dataset)):
    out = tmp_path / os.path.basename(source)
    assert main(['convert', source, str(out)]) == 0
    check_e2e_records(out)
    with open(out / 'report' / 'summary.json') as f:
      summary = json.load(f)
    assert (summary['rows_read'], summary['records_written'], summary['rows_failed'],
            summary['objects_written'], summary['box_issues']) == (6, 6, 0, 5, {})


def test_convert_reports_bad_label_files_with_file_and_line(e2e_dataset, tmp_path):
  result = trc.convert(e2e_dataset, str(tmp_path / 'out'))
  check_e2e_records(tmp_path / 'out')
  assert result.rows_failed == 0
  root = tmp_path / 'bad'
  path = write_e2e_dataset(root)
  write_text(str(root / 'labels/val/f.txt'), '0 0.5 0.5 0.2 0.2\n1 320 200 40 40\n')
  result = trc.convert(path, str(tmp_path / 'out_bad'), max_error_ratio=0.5)
  assert result.rows_failed == 1
  with open(os.path.join(result.report_dir, 'errors.jsonl')) as f:
    [error] = [json.loads(line) for line in f]
  assert (error['reason'], error['uri'], error['source'], error['row']) == (
      'bad_row', 'images/val/f.jpg', path, 6)
  assert f'{root}/labels/val/f.txt line 2: coordinates must be normalised' in error['message']
  assert result.records_per_split == {'train': 4, 'eval': 1, 'test': 0}


def test_cli_include_masks_writes_the_polygons_masks(tmp_path):
  width, height = 80, 60
  polygon = [0.1, 0.1, 0.7, 0.2, 0.4, 0.9]
  path = write_dataset(tmp_path / 'seg', 'train: images/train\nnames: [leaf]\n',
                       {'images/train/a.jpg': (width, height), 'images/train/b.jpg': (20, 20)},
                       {'labels/train/a.txt': '0 ' + ' '.join(map(str, polygon)) + '\n'})
  out = tmp_path / 'out'
  assert main(['convert', path, str(out), '--include-masks']) == 0
  records = by_source_id(str(out), ['train'])
  _, example = records['images/train/a.jpg']
  np.testing.assert_allclose(
      [feature(example, f'image/object/bbox/{k}')[0] for k in ('xmin', 'ymin', 'xmax', 'ymax')],
      [0.1, 0.1, 0.7, 0.9], atol=1e-4)
  [mask] = decoded_masks(example)
  pixels = [v * (width if i % 2 == 0 else height) for i, v in enumerate(polygon)]
  reference = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects([pixels], height, width)))
  assert mask.shape == (height, width)
  assert ((mask > 0) == (reference > 0)).mean() >= 0.99
  assert decoded_masks(records['images/train/b.jpg'][1]) == []


def test_convert_include_keypoints_writes_normalised_named_points(tmp_path):
  path = write_dataset(tmp_path / 'pose', 'train: images/train\nval: images/val\n'
                       'names: [person]\nkpt_shape: [3, 3]\nkpt_names: {0: [nose, l, r]}\n',
                       {'images/train/a.jpg': (64, 48), 'images/val/b.jpg': (40, 40)},
                       {'labels/train/a.txt': '0 0.5 0.5 0.4 0.6 0.5 0.3 2 0.4 0.6 1 0 0 0\n'})
  result = trc.convert(path, str(tmp_path / 'out'), include_keypoints=True)
  assert result.rows_failed == 0
  records = by_source_id(str(tmp_path / 'out'), ['train', 'eval'])
  split, example = records['images/train/a.jpg']
  assert split == 'train'
  np.testing.assert_allclose(feature(example, 'image/object/keypoint/x'), [0.5, 0.4, 0.0],
                             atol=1e-6)
  np.testing.assert_allclose(feature(example, 'image/object/keypoint/y'), [0.3, 0.6, 0.0],
                             atol=1e-6)
  assert feature(example, 'image/object/keypoint/visibility') == [2, 1, 0]
  assert feature(example, 'image/object/keypoint/num') == [2]
  assert feature(example, 'image/object/keypoint/text') == [b'nose', b'l', b'r']
  np.testing.assert_allclose(
      [feature(example, f'image/object/bbox/{k}')[0] for k in ('xmin', 'ymin', 'xmax', 'ymax')],
      box(0.5, 0.5, 0.4, 0.6), atol=1e-4)
  split, example = records['images/val/b.jpg']
  assert split == 'eval' and feature(example, 'image/object/class/text') == []


def test_convert_oriented_boxes_writes_their_corners(tmp_path):
  corners = (0.1, 0.3, 0.5, 0.1, 0.7, 0.5, 0.3, 0.7)
  path = write_dataset(tmp_path / 'obb', 'train: images/train\nnames: [plane, ship]\n',
                       {'images/train/a.jpg': (40, 30)},
                       {'labels/train/a.txt': '1 ' + ' '.join(map(str, corners)) + '\n'})
  result = trc.convert(path, str(tmp_path / 'out'), manifest_format='yolo_obb')
  assert result.rows_failed == 0
  [(_, example)] = by_source_id(str(tmp_path / 'out'), ['train']).values()
  np.testing.assert_allclose(feature(example, 'image/object/corner/x'), corners[0::2], atol=1e-6)
  np.testing.assert_allclose(feature(example, 'image/object/corner/y'), corners[1::2], atol=1e-6)
  np.testing.assert_allclose(
      [feature(example, f'image/object/bbox/{k}')[0] for k in ('xmin', 'ymin', 'xmax', 'ymax')],
      [0.1, 0.1, 0.7, 0.7], atol=1e-4)
  assert feature(example, 'image/object/class/text') == [b'ship']


def test_an_ultralytics_classification_folder_converts_with_its_splits(tmp_path):
  """Ultralytics' classification datasets are `train/<class>/img`, `val/<class>/img`:
  the image-folder reader takes them, `val` as the eval split."""
  root = tmp_path / 'cls'
  for i, (split, label) in enumerate([('train', 'cat'), ('train', 'dog'), ('train', 'cat'),
                                      ('val', 'dog'), ('test', 'cat')]):
    write_image(str(root / split / label / f'{i}.jpg'), width=12 + i, height=10, seed=i)
  result = trc.convert(str(root), str(tmp_path / 'out'))
  assert result.rows_failed == 0
  assert result.records_per_split == {'train': 3, 'eval': 1, 'test': 1}
  records = by_source_id(str(tmp_path / 'out'), ['train', 'eval', 'test'])
  assert {uri: (split, feature(ex, 'image/class/text')) for uri, (split, ex) in
          records.items()} == {
      'train/cat/0.jpg': ('train', [b'cat']), 'train/dog/1.jpg': ('train', [b'dog']),
      'train/cat/2.jpg': ('train', [b'cat']), 'val/dog/3.jpg': ('eval', [b'dog']),
      'test/cat/4.jpg': ('test', [b'cat'])}


def test_a_dataset_on_s3_reads_as_it_does_from_disk(tmp_path, caplog, s3_bucket):
  """Listed with one object listing a folder, label files read through Beam's S3 file
  system (moto's S3 server on loopback)."""
  from tfrecorder_component.io import storage  # pylint: disable=g-import-not-at-top
  path = write_e2e_dataset(tmp_path)
  write_text(str(tmp_path / 'labels/train/orphan.txt'), '0 .5 .5 .1 .1\n')
  local = read(path)
  s3_bucket.upload_tree(str(tmp_path), 'bkt', 'ds')
  storage.prepare_file_systems('s3://bkt/ds/data.yaml')
  with caplog.at_level(logging.WARNING):
    remote = read('s3://bkt/ds/data.yaml')
  assert [(r.row, r.image_uri, r.split, r.objects) for r in remote] == [
      (r.row, r.image_uri, r.split, r.objects) for r in local]
  assert [r.resolved_uri for r in remote] == [f's3://bkt/ds/{r.image_uri}' for r in local]
  assert [r.source for r in remote] == ['s3://bkt/ds/data.yaml'] * 6
  assert any('1 label file(s) of `train` have no image' in r.getMessage() and
             's3://bkt/ds/labels/train/orphan.txt' in r.getMessage() for r in caplog.records)


# --- Darknet (obj.data) ---------------------------------------------------------------------



def read_darknet(path, **kwargs):
  with open(path, encoding='utf-8') as f:
    return list(yolo.DARKNET_FORMAT.parse(str(path), f.read(), **kwargs))


def write_cvat_export(root):
  """CVAT's "YOLO 1.1" export, unzipped into `root`: paths written as `data/...`."""
  write_dataset(root, '', {'obj_train_data/b.jpg': (20, 10), 'obj_train_data/a.png': (10, 20),
                           'obj_valid_data/c.jpg': (16, 16)},
                {'obj_train_data/b.txt': '1 0.5 0.5 0.2 0.4\n0 0.1 0.1 0.1 0.1\n',
                 'obj_valid_data/c.txt': '0 0.5 0.5 1 1\n'})
  os.remove(os.path.join(root, 'data.yaml'))
  write_text(os.path.join(root, 'obj.names'), 'car\ntruck\n\n')
  write_text(os.path.join(root, 'train.txt'),
             'data/obj_train_data/b.jpg\ndata/obj_train_data/a.png\n')
  write_text(os.path.join(root, 'valid.txt'), 'data/obj_valid_data/c.jpg\n')
  return write_text(os.path.join(root, 'obj.data'),
                    'classes = 2\ntrain = data/train.txt\nvalid = data/valid.txt\n'
                    'names = data/obj.names\nbackup = backup/\n')


def test_darknet_cvat_export_reads_its_lists_in_order(tmp_path):
  path = write_cvat_export(tmp_path)
  assert yolo.DARKNET_FORMAT.sniff(open(path).read())
  rows = read_darknet(path)
  assert [(r.row, r.image_uri, r.split, r.resolved_uri) for r in rows] == [
      (1, 'obj_train_data/b.jpg', 'train', str(tmp_path / 'obj_train_data/b.jpg')),
      (2, 'obj_train_data/a.png', 'train', str(tmp_path / 'obj_train_data/a.png')),
      (3, 'obj_valid_data/c.jpg', 'eval', str(tmp_path / 'obj_valid_data/c.jpg'))]
  assert boxes(rows[0]) == [('truck', 1, box(0.5, 0.5, 0.2, 0.4)),
                            ('car', 0, box(0.1, 0.1, 0.1, 0.1))]
  assert rows[1].objects == ()
  assert boxes(rows[2]) == [('car', 0, (0.0, 0.0, 1.0, 1.0))]
  write_text(str(tmp_path / 'obj_train_data/b.txt'), '0 .5 .5 .2 .2\n1 0.1 0.1 0.3 0.1 0.2 0.3\n')
  error = read_darknet(path)[0]
  assert error.reason == 'bad_row'
  assert f'{tmp_path}/obj_train_data/b.txt line 2: a Darknet line is `class cx cy w h`' in (
      error.message)
  write_text(path, 'classes = 3\ntrain = data/train.txt\nnames = data/obj.names\n')
  with pytest.raises(ManifestError, match=r'`classes = 3` but .*obj.names names 2 classes'):
    read_darknet(path)
  write_text(path, 'classes = 2\ntrain = data/nothing.txt\nnames = data/obj.names\n')
  with pytest.raises(ManifestError, match=r'`train = data/nothing.txt` names no file'):
    read_darknet(path)
  # Datumaro's export names the eval list `val`; a key darknet does not know stops the
  # run rather than leave a split out.
  write_text(path, 'classes = 2\ntrain = data/train.txt\nval = data/valid.txt\n'
             'names = data/obj.names\n')
  write_text(str(tmp_path / 'obj_train_data/b.txt'), '0 .5 .5 .2 .2\n')
  assert [r.split for r in read_darknet(path)] == ['train', 'train', 'eval']
  write_text(path, 'classes = 2\ntrain = data/train.txt\nvalidate = data/valid.txt\n'
             'names = data/obj.names\n')
  with pytest.raises(ManifestError, match='unknown key validate; a Darknet .data file has'):
    read_darknet(path)


def test_darknet_paths_relative_to_its_working_folder_and_the_labels_rule(tmp_path):
  """AlexeyAB's layout: darknet/data/obj.data, paths relative to darknet/; and a list
  whose images are under images/ with their labels under labels/."""
  darknet = tmp_path / 'darknet'
  write_dataset(darknet, '', {'data/obj/a.jpg': (20, 20), 'data/images/b.jpg': (20, 20)},
                {'data/obj/a.txt': '0 0.5 0.5 0.2 0.2\n', 'data/labels/b.txt': '1 .5 .5 .1 .1\n'})
  write_text(str(darknet / 'data/obj.names'), 'cat\ndog\n')
  write_text(str(darknet / 'data/train.txt'), 'data/obj/a.jpg\ndata/images/b.jpg\n')
  path = write_text(str(darknet / 'data/obj.data'),
                    'classes= 2\ntrain  = data/train.txt\nnames = data/obj.names\n')
  rows = read_darknet(path)
  assert [(r.image_uri, [o.label for o in r.objects]) for r in rows] == [
      ('obj/a.jpg', ['cat']), ('images/b.jpg', ['dog'])]
  assert rows[0].resolved_uri == str(darknet / 'data/obj/a.jpg')


def test_darknet_export_converts(tmp_path):
  path = write_cvat_export(tmp_path / 'export')
  result = trc.convert(path, str(tmp_path / 'out'))
  assert result.rows_failed == 0
  records = by_source_id(str(tmp_path / 'out'), ['train', 'eval'])
  assert {uri: (split, feature(ex, 'image/object/class/text')) for uri, (split, ex) in
          records.items()} == {'obj_train_data/b.jpg': ('train', [b'truck', b'car']),
                               'obj_train_data/a.png': ('train', []),
                               'obj_valid_data/c.jpg': ('eval', [b'car'])}
  assert read_label_map(str(tmp_path / 'out')) == {'car': 1, 'truck': 2}
