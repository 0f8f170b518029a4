"""Datasets nobody here wrote: Datumaro's test datasets (tests/assets/datumaro, MIT),
each converted as a user points the command line at it. Each one converted must give
the records Datumaro's own reader reads (tests/oracles/read.py, in the reference
readers' environment): the same images, sizes, splits, classes and boxes within 1e-4,
after the project's box rule (a box is clipped to the image, and dropped when nothing of
it is inside: Datumaro keeps such boxes as written, and the VoTT assets' boxes lie past
their 5x5 images). Each one refused must be refused in at most 5 lines, without a
traceback, naming what the folder is, and nothing is written."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from oracle_readers import assert_same, ours, reference
from runs import CLI

ASSETS = os.path.join(os.path.dirname(__file__), 'assets', 'datumaro')
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')

# (the folder or file a user converts, Datumaro's format for it, the path Datumaro reads)
CONVERTED = {
    'voc_devkit_root': ('voc_dataset/voc_dataset1', 'voc_detection', None),
    'voc_annotations_folder': ('voc_dataset/voc_dataset1/Annotations', 'voc_detection',
                               'voc_dataset/voc_dataset1'),
    'coco_root': ('coco_dataset/coco_instances', 'coco_instances', None),
    'coco_annotations_folder': ('coco_dataset/coco_instances/annotations', 'coco_instances',
                                'coco_dataset/coco_instances'),
    # MMDetection's layout (train/, val/ beside annotations/). Datumaro's mmdet_coco reader
    # gives image b four objects where its coco_instances reader, and pycocotools, give
    # the JSON's two (the files are the same as coco_instances'): read as coco_instances.
    'coco_mmdet_root': ('coco_dataset/mmdet_coco', 'coco_instances', 'coco_dataset/coco_instances'),
    'coco_roboflow_split_folders': ('coco_dataset/coco_roboflow', 'coco_instances',
                                    'coco_dataset/coco_instances'),
    'yolo_darknet': ('yolo_dataset/strict', 'yolo', None),
    'vott_csv_folder': ('vott_csv_dataset/dataset', 'vott_csv', None),
    'vott_csv_with_meta_file': ('vott_csv_dataset/dataset_with_meta_file', 'vott_csv', None),
    'vott_csv_file': ('vott_csv_dataset/dataset/train-export.csv', 'vott_csv', None),
    'roboflow_coco': ('roboflow_dataset/coco', 'roboflow_coco', None),
    'roboflow_createml': ('roboflow_dataset/createml', 'roboflow_create_ml', None),
    'roboflow_voc': ('roboflow_dataset/voc', 'roboflow_voc', None),
    'roboflow_multiclass': ('roboflow_dataset/multiclass', 'roboflow_multiclass', None),
}

# (the folder or file, words the refusal must hold)
REFUSED = {
    'yolo_datumaro_images_annotations': ('yolo_dataset/annotations', "YOLO dataset in Datumaro's"),
    'dota_root': ('dota_dataset', 'DOTA'),
    'dota_split': ('dota_dataset/train', 'DOTA'),
    'widerface_root': ('widerface_dataset', 'WIDER FACE'),
    'widerface_box_list': ('widerface_dataset/wider_face_split/wider_face_train_bbx_gt.txt',
                           'failed'),
    'open_images_v5_root': ('open_images_dataset/v5', 'Open Images'),
    'open_images_v6_root': ('open_images_dataset/v6', 'Open Images'),
    # Datumaro's asset names ../valid/images in data.yaml, beside a val/ folder: the path
    # Ultralytics would fail on too.
    'roboflow_yolo_bad_yaml': ('roboflow_dataset/yolo', 'valid/images'),
    # Its OBB export keeps DOTA's labelTxt/ (pixel corners, class names): refused first.
    'roboflow_yolo_obb_dota_labels': ('roboflow_dataset/yolo_obb', "labelTxt (DOTA's layout"),
    'tfrecords_not_images': ('roboflow_dataset/tfrecord', 'no images'),
}


def _box_rule(images):
  """A reader's view after the project's box rule: boxes clipped to [0, 1], dropped when
  nothing of them is inside (images/boxes.py)."""
  out = {}
  for key, image in images.items():
    objects = []
    for obj in image['objects']:
      box = [min(1.0, max(0.0, v)) for v in obj['box']]
      if box[2] > box[0] and box[3] > box[1]:
        objects.append(dict(obj, box=box))
    out[key] = dict(image, objects=objects)
  return out


def _from_centres(images):
  """Datumaro's Create ML reader takes `x`, `y` for the box's corner; Apple's format (and
  Roboflow's export, and this project) has them at its centre: its boxes moved by half
  their size (as tests/test_reference_readers.py makes up for it too)."""
  out = {}
  for key, image in images.items():
    objects = []
    for obj in image['objects']:
      x0, y0, x1, y1 = obj['box']
      w, h = (x1 - x0) / 2, (y1 - y0) / 2
      objects.append(dict(obj, box=[x0 - w, y0 - h, x1 - w, y1 - h]))
    out[key] = dict(image, objects=objects)
  return out


def _convert(source, out):
  return subprocess.run([CLI, 'convert', source, out], capture_output=True, text=True,
                        timeout=300, env=ENV)


@pytest.fixture(scope='module')
def assets(tmp_path_factory):
  """A copy of the assets, so that nothing a run does can touch the committed ones."""
  copy = str(tmp_path_factory.mktemp('datumaro') / 'assets')
  shutil.copytree(ASSETS, copy)
  return copy


@pytest.mark.parametrize('name', sorted(CONVERTED))
def test_converted_as_datumaro_reads_it(name, assets, tmp_path):
  source, fmt, reader_path = CONVERTED[name]
  out = str(tmp_path / 'out')
  done = _convert(os.path.join(assets, source), out)
  assert done.returncode == 0, done.stderr
  theirs = reference('datumaro', fmt, os.path.join(assets, reader_path or source))
  if source.endswith('train-export.csv'):
    theirs = {k: v for k, v in theirs.items() if v['split'] == 'train'}
  if fmt == 'roboflow_create_ml':
    theirs = _from_centres(theirs)
  mine = ours(out)
  assert_same(mine, _box_rule(theirs))
  if name == 'roboflow_multiclass':  # read.py gives no image-level labels: checked here
    from records import by_source_id, feature  # pylint: disable=g-import-not-at-top
    labels = {sid: [t.decode() for t in feature(ex, 'image/class/text')]
              for sid, (_, ex) in by_source_id(out, ['train', 'eval']).items()}
    assert labels == {'train_001.jpg': ['label_0'], 'train_002.jpg': ['label_1'],
                      'val_001.jpg': ['label_0', 'label_1']}, labels


def test_yolo_in_datumaros_labels_layout_as_datumaro_reads_it(assets, tmp_path):
  """obj.names beside images/<subset>/ and labels/<subset>/, read as Ultralytics reads
  those folders. read.py keys images by name, and both subsets hold a `1.jpg`: the val
  image is renamed in a copy (with its label file)."""
  root = str(tmp_path / 'labels')
  shutil.copytree(os.path.join(assets, 'yolo_dataset', 'labels'), root)
  os.rename(os.path.join(root, 'images', 'val', '1.jpg'), os.path.join(root, 'images', 'val', '2.jpg'))
  os.rename(os.path.join(root, 'labels', 'val', '1.txt'), os.path.join(root, 'labels', 'val', '2.txt'))
  done = _convert(root, str(tmp_path / 'out'))
  assert done.returncode == 0, done.stderr
  assert_same(ours(str(tmp_path / 'out')), _box_rule(reference('datumaro', 'yolo', root)))


@pytest.mark.parametrize('name', sorted(REFUSED))
def test_refused_in_at_most_five_lines(name, assets, tmp_path):
  source, words = REFUSED[name]
  out = str(tmp_path / 'out')
  done = _convert(os.path.join(assets, source), out)
  assert done.returncode != 0, done.stdout
  lines = done.stderr.strip().splitlines()
  assert 'Traceback' not in done.stderr and len(lines) <= 5, done.stderr
  assert words in done.stderr, done.stderr
  assert not os.path.exists(os.path.join(out, 'Split-train'))
