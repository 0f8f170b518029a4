"""Image folders laid out as datasets of another kind (as annotation tools and benchmark
suites export them) are refused in one line naming the layout, never read as class
folders; class folders of annotation files and images inside class folders are refused,
never left out. Real folders on disk and on an S3 server (moto), the real CLI."""
import os
import subprocess
import sys

import pytest

from images import write_image, write_text
import tfrecorder_component as trc
from tfrecorder_component import sources
from tfrecorder_component.errors import ManifestError

CLI = os.path.join(os.path.dirname(sys.executable), 'tfrecorder-component')

VOC_XML = ('<annotation><folder>VOC2007</folder><filename>{name}.jpg</filename>'
           '<size><width>16</width><height>12</height><depth>3</depth></size>'
           '<object><name>{label}</name><difficult>0</difficult><bndbox><xmin>2</xmin>'
           '<ymin>3</ymin><xmax>10</xmax><ymax>9</ymax></bndbox></object></annotation>')


def _tree(root, paths):
  """Writes each path: a small JPEG or PNG for an image name, else a line of text."""
  for i, rel in enumerate(paths):
    path = os.path.join(str(root), rel)
    if rel.lower().endswith(('.jpg', '.png')):
      write_image(path, 'PNG' if rel.endswith('.png') else 'JPEG', seed=i)
    else:
      write_text(path, 'x\n')
  return str(root)


# (layout, its folders and files, words the refusal must hold)
LAYOUTS = {
    'voc_devkit': (['VOC2007/JPEGImages/000001.jpg', 'VOC2007/JPEGImages/000002.jpg',
                    'VOC2007/ImageSets/Main/train.txt', 'VOC2007/SegmentationClass/000001.png',
                    'VOC2007/SegmentationObject/000001.png'],
                   'VOC2007', ['Pascal VOC', 'JPEGImages/', 'SegmentationClass/']),
    'voc_segmentation_only': (['voc/JPEGImages/a.jpg', 'voc/SegmentationClass/a.png'], 'voc',
                              ['Pascal VOC dataset without Annotations/']),
    'kitti_training': (['training/image_2/000000.png', 'training/label_2/000000.txt',
                        'training/calib/000000.txt'], 'training', ['KITTI', 'image_2/']),
    'yolo_ultralytics': (['ds/images/a.jpg', 'ds/labels/a.txt'], 'ds', ['YOLO', 'data.yaml']),
    'yolo_by_split': (['ds/train/images/a.jpg', 'ds/train/labels/a.txt',
                       'ds/valid/images/b.jpg', 'ds/valid/labels/b.txt'], 'ds',
                      ['YOLO', 'images/', 'labels/']),
    'dota': (['dota/images/P0001.png', 'dota/labelTxt/P0001.txt'], 'dota',
             ['DOTA', 'labelTxt/']),
    'datumaro_yolo_images': (['dm/Images/a.jpg', 'dm/Images/b.jpg'], 'dm', ['Images/']),
    'coco_root': (['coco/images/train/a.jpg', 'coco/annotations/instances_train.json'], 'coco',
                  ['COCO', 'instances_train.json']),
    'nested_class': (['pets/cat/a.jpg', 'pets/cat/kitten/b.jpg', 'pets/dog/c.jpg'], 'pets',
                     ['pets/cat/kitten', 'inside the class folder cat']),
    'nested_by_split': (['pets/train/cat/a.jpg', 'pets/train/dog/persian/deep/b.jpg'], 'pets',
                        ['train/dog/persian', 'class folders inside class folders']),
    'annotation_folder': (['data/cat/a.jpg', 'data/boxes/a.xml', 'data/boxes/b.xml'], 'data',
                          ['data/boxes holds annotation files (a.xml']),
}


@pytest.mark.parametrize('name', sorted(LAYOUTS))
def test_a_folder_of_another_layout_is_refused_in_one_line(tmp_path, name):
  paths, root, words = LAYOUTS[name]
  _tree(tmp_path, paths)
  folder = str(tmp_path / root)
  with pytest.raises(ManifestError) as raised:
    trc.convert(folder, str(tmp_path / 'out'))
  message = str(raised.value)
  assert '\n' not in message
  for word in words:
    assert word in message, (word, message)
  assert not (tmp_path / 'out').exists()
  before = sorted(os.path.relpath(os.path.join(d, f), tmp_path)
                  for d, _, fs in os.walk(tmp_path) for f in fs)
  done = subprocess.run([CLI, 'convert', folder, str(tmp_path / 'out')], capture_output=True,
                        text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  assert done.returncode != 0
  assert 'Traceback' not in done.stderr and len(done.stderr.strip().splitlines()) <= 5, (
      done.stderr)
  assert words[0] in done.stderr
  after = sorted(os.path.relpath(os.path.join(d, f), tmp_path)
                 for d, _, fs in os.walk(tmp_path) for f in fs)
  assert after == before  # nothing written, nothing of the dataset's touched


def test_the_command_a_voc_refusal_gives_converts_the_boxes(tmp_path):
  """The refusal of a VOC devkit root names a command; that command converts its boxes."""
  names = [('000001', 'cat'), ('000002', 'dog'), ('000003', 'cat')]
  _tree(tmp_path, [f'VOC2007/JPEGImages/{n}.jpg' for n, _ in names] +
        ['VOC2007/SegmentationClass/000001.png', 'VOC2007/ImageSets/Main/train.txt'])
  for n, label in names:
    write_text(str(tmp_path / 'VOC2007' / 'Annotations' / f'{n}.xml'),
               VOC_XML.format(name=n, label=label))
  root = str(tmp_path / 'VOC2007')
  with pytest.raises(ManifestError) as raised:
    trc.convert(root, str(tmp_path / 'out'))
  command = str(raised.value).split('`')[1].split()
  assert command[:3] == ['tfrecorder-component', 'convert', f'{root}/Annotations']
  out = str(tmp_path / 'out')
  result = trc.convert(command[2], out, image_root=command[command.index('--image-root') + 1])
  assert result.records_written == 3 and result.rows_failed == 0
  assert result.records_per_label == {'cat': 2, 'dog': 1}
  assert result.summary['objects_per_label'] == {'cat': 2, 'dog': 1}  # a box each


def test_class_folders_still_read_as_before(tmp_path):
  """Ordinary `<label>/<image>` and `<split>/<label>/<image>` folders, with a notes file
  beside the images and a hidden folder inside a class, read as classes."""
  root = _tree(tmp_path / 'pets', ['cat/a.jpg', 'cat/notes.txt', 'cat/.thumbs/a.jpg',
                                   'dog/b.png', 'README.md'])
  assert sources.folder_manifest(root).splitlines() == [
      'split,image_uri,label', ',cat/a.jpg,cat', ',dog/b.png,dog']
  root = _tree(tmp_path / 'split', ['train/cat/a.jpg', 'Validation/dog/b.jpg', 'test/cat/c.jpg'])
  assert sources.folder_manifest(root).splitlines() == [
      'split,image_uri,label', 'VALIDATION,Validation/dog/b.jpg,dog',
      'TEST,test/cat/c.jpg,cat', 'TRAIN,train/cat/a.jpg,cat']


def test_a_folder_on_object_storage_is_refused_or_read_as_on_disk(tmp_path, s3_bucket):
  """The same rules on an S3 prefix (moto's S3 server), from one listing."""
  from tfrecorder_component import storage  # pylint: disable=g-import-not-at-top
  good = ['cat/a.jpg', 'cat/notes.txt', 'dog/b.png']
  _tree(tmp_path / 'good', good)
  for name in ('voc_devkit', 'nested_class', 'annotation_folder', 'yolo_by_split'):
    _tree(tmp_path / name, LAYOUTS[name][0])
  s3_bucket.upload_tree(str(tmp_path), 'bkt', 'ds')
  storage.prepare_file_systems('s3://bkt/ds')
  assert (sources.folder_manifest('s3://bkt/ds/good')
          == sources.folder_manifest(str(tmp_path / 'good')))
  for name in ('voc_devkit', 'nested_class', 'annotation_folder', 'yolo_by_split'):
    _, root, words = LAYOUTS[name]
    with pytest.raises(ManifestError) as raised:
      sources.folder_manifest(f's3://bkt/ds/{name}/{root}')
    assert words[0] in str(raised.value), (name, str(raised.value))
