"""Dataset folders as annotation tools and benchmark suites export them: Pascal VOC
devkit roots and COCO roots are read as their layouts define them; other layouts are
refused in one line naming the layout, never read as class folders; class folders of
annotation files and images inside class folders are refused, never left out. Real
folders on disk and on an S3 server (moto), the real CLI."""
import json
import os
import subprocess

import pytest

from images import write_image, write_text
from runs import CLI
import tfrecorder_component as trc
from tfrecorder_component.manifest import sources
from tfrecorder_component.errors import ManifestError


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
    'datumaro_yolo_images': (['dm/Images/a.jpg', 'dm/Images/b.jpg'], 'dm', ['Images holds 2 images and no class folders']),
    'coco_captions_only': (['coco/images/train/a.jpg', 'coco/annotations/captions_train.json'],
                           'coco', ['COCO annotations without boxes', 'captions_train.json']),
    'coco_root_without_images': (['coco/annotations/instances_train2017.json', 'coco/x.txt'],
                                 'coco', ["'train2017' images", 'images/train2017/']),
    'synthia': (['al/RGB/000000.png', 'al/Depth/000000.png', 'al/SemSeg/000000.png'], 'al',
                ['SYNTHIA', 'RGB/']),
    'camvid': (['cv/train/a.png', 'cv/trainannot/a.png', 'cv/val/b.png', 'cv/valannot/b.png'],
               'cv', ['CamVid', 'trainannot/']),
    'super_resolution': (['sr/HR/a.png', 'sr/LR/a.png'], 'sr', ['super-resolution']),
    'market1501': (['m/bounding_box_train/0001_c1.jpg', 'm/query/0001_c2.jpg'], 'm',
                   ['Market-1501']),
    'ade20k': (['ade/training/street/1.jpg', 'ade/training/street/1_seg.png',
                'ade/training/street/1_atr.txt'], 'ade', ['ADE20K', '1_seg.png']),
    'datasets_side_by_side': (['dm/export1/a.jpg', 'dm/export1/train-export.json',
                               'dm/export2/b.jpg'], 'dm',
                              ['train-export.json beside its images', "dataset's folder"]),
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


def _voc_devkit(root):
  """A VOC devkit root: train, val and test lists (and trainval, their union, and a class's
  list, neither a subset), an XML without <filename>, a listed image without an XML, an
  XML in no list, and segmentation masks beside."""
  names = {'000001': ('cat', 'train'), '000002': ('dog', 'val'), '000003': ('cat', 'test'),
           '000005': ('dog', None), '000006': ('dog', 'train')}
  _tree(root, [f'JPEGImages/{n}.jpg' for n in list(names) + ['000004']] +
        ['SegmentationClass/000001.png'])
  for n, (label, _) in names.items():
    xml = VOC_XML.format(name=n, label=label)
    if n == '000006':
      xml = xml.replace('<filename>000006.jpg</filename>', '')
    write_text(str(root / 'Annotations' / f'{n}.xml'), xml)
  lists = {'train': ['000001', '000006'], 'val': ['000002'], 'test': ['000003', '000004'],
           'trainval': ['000001', '000002', '000006'], 'cat_train': ['000001  1']}
  for subset, ids in lists.items():
    write_text(str(root / 'ImageSets' / 'Main' / f'{subset}.txt'), '\n'.join(ids) + '\n')
  write_text(str(root / 'labelmap.txt'), 'cat:::\ndog:::\n')
  return str(root)


def test_a_voc_devkit_root_is_read_with_its_split_lists(tmp_path, caplog):
  """As the VOC devkit (and Datumaro) read a root: the ImageSets/Main lists name each
  subset's images; an XML without <filename> annotates JPEGImages/<its id>.jpg; a listed
  image without an XML is an image without objects; an XML in no list is not read, with
  a warning. The root and its Annotations/ folder give the same records."""
  from records import by_source_id, feature  # pylint: disable=g-import-not-at-top
  root = _voc_devkit(tmp_path / 'VOC2007')
  result = trc.convert(root, str(tmp_path / 'out'))
  assert result.records_per_split == {'train': 2, 'eval': 1, 'test': 2}
  assert result.rows_failed == 0
  assert '2 annotation files' not in caplog.text and '1 annotation files are in no list' in (
      caplog.text)
  records = by_source_id(str(tmp_path / 'out'), ['train', 'eval', 'test'])
  seen = {sid.rsplit('/', 1)[-1]: (split, [t.decode() for t in feature(
      ex, 'image/object/class/text')]) for sid, (split, ex) in records.items()}
  assert seen == {'000001.jpg': ('train', ['cat']), '000006.jpg': ('train', ['dog']),
                  '000002.jpg': ('eval', ['dog']), '000003.jpg': ('test', ['cat']),
                  '000004.jpg': ('test', [])}
  _, example = records['000001.jpg']
  assert feature(example, 'image/object/bbox/xmin') == pytest.approx([2 / 16])
  again = trc.convert(os.path.join(root, 'Annotations'), str(tmp_path / 'again'))
  assert again.records_per_split == result.records_per_split
  from tfrecord_digest import digest  # pylint: disable=g-import-not-at-top
  assert ({k: v for k, v in digest(str(tmp_path / 'again')).items() if 'Split-' in k}
          == {k: v for k, v in digest(str(tmp_path / 'out')).items() if 'Split-' in k})


def _coco(root, subset, images_folder, names):
  images = [{'id': i + 1, 'file_name': f'{n}.jpg', 'width': 16, 'height': 12}
            for i, n in enumerate(names)]
  annotations = [{'id': i + 1, 'image_id': i + 1, 'category_id': 1, 'iscrowd': 0,
                  'bbox': [2, 3, 8, 6], 'area': 48} for i in range(len(names))]
  write_text(str(root / 'annotations' / f'instances_{subset}.json'), json.dumps(
      {'images': images, 'annotations': annotations,
       'categories': [{'id': 1, 'name': 'cat'}]}))
  write_text(str(root / 'annotations' / f'captions_{subset}.json'), '{}')
  _tree(root, [f'{images_folder}/{n}.jpg' for n in names])


@pytest.mark.parametrize('folders', [('images/train', 'images/val'),  # Datumaro's layout
                                     ('train2017', 'val2017')])  # the COCO site's archives
def test_a_coco_root_is_read_subset_by_subset(tmp_path, folders):
  """annotations/instances_<subset>.json, each subset's images in images/<subset>/ or
  <subset>/, its split from the subset's name (a year after it dropped); the captions
  files beside are not read. The root and its annotations/ folder read alike."""
  subsets = [f.rsplit('/', 1)[-1] for f in folders]
  _coco(tmp_path / 'coco', subsets[0], folders[0], ['a', 'b'])
  _coco(tmp_path / 'coco', subsets[1], folders[1], ['c'])
  for i, source in enumerate(('coco', 'coco/annotations')):
    result = trc.convert(str(tmp_path / source), str(tmp_path / f'out{i}'))
    assert result.records_per_split == {'train': 2, 'eval': 1, 'test': 0}, source
    assert result.rows_failed == 0 and result.summary['objects_per_label'] == {'cat': 3}
    assert sorted(os.path.basename(m) for m in result.manifests) == [
        f'instances_{s}.json' for s in sorted(subsets)]


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
  from tfrecorder_component.io import storage  # pylint: disable=g-import-not-at-top
  good = ['cat/a.jpg', 'cat/notes.txt', 'dog/b.png']
  _tree(tmp_path / 'good', good)
  for name in ('voc_devkit', 'nested_class', 'annotation_folder', 'yolo_by_split'):
    _tree(tmp_path / name, LAYOUTS[name][0])
  _voc_devkit(tmp_path / 'devkit' / 'VOC2007')
  s3_bucket.upload_tree(str(tmp_path), 'bkt', 'ds')
  storage.prepare_file_systems('s3://bkt/ds')
  assert (sources.folder_manifest('s3://bkt/ds/good')
          == sources.folder_manifest(str(tmp_path / 'good')))
  for name in ('voc_devkit', 'nested_class', 'annotation_folder', 'yolo_by_split'):
    _, root, words = LAYOUTS[name]
    with pytest.raises(ManifestError) as raised:
      sources.folder_manifest(f's3://bkt/ds/{name}/{root}')
    assert words[0] in str(raised.value), (name, str(raised.value))
  for source in ('s3://bkt/ds/devkit/VOC2007', 's3://bkt/ds/devkit/VOC2007/Annotations'):
    result = trc.convert(source, str(tmp_path / 'voc_out'), overwrite=True)
    assert result.records_per_split == {'train': 2, 'eval': 1, 'test': 2}
    assert result.rows_failed == 0


def test_the_component_reads_a_dataset_folder_as_convert_does(tmp_path):
  """A manifest artifact naming a VOC devkit root: the same layout reading (splits from
  its lists) through the TFX component's executor, its implied manifest in the report."""
  from runs import run_executor  # pylint: disable=g-import-not-at-top
  from records import read_split  # pylint: disable=g-import-not-at-top
  root = _voc_devkit(tmp_path / 'VOC2007')
  run_executor(tmp_path, root)
  counts = {split: len(read_split(str(tmp_path / 'examples' / f'Split-{split}')))
            for split in ('train', 'eval', 'test')}
  assert counts == {'train': 2, 'eval': 1, 'test': 2}


def test_images_beside_voc_files_without_one_are_images_without_objects(tmp_path, caplog):
  """A folder of VOC XMLs beside their images (LabelImg's layout): an image without an XML
  of its name is an image without objects, as Datumaro's relaxed VOC reader and
  Ultralytics (a background image) take it, with a warning naming it."""
  from records import by_source_id, feature  # pylint: disable=g-import-not-at-top
  _tree(tmp_path / 'voc', ['a.jpg', 'b.jpg'])
  write_text(str(tmp_path / 'voc' / 'a.xml'), VOC_XML.format(name='a', label='cat'))
  result = trc.convert(str(tmp_path / 'voc'), str(tmp_path / 'out'), splits={'train': 1})
  assert result.records_written == 2 and result.rows_failed == 0
  assert 'b.jpg' in caplog.text and 'images without objects' in caplog.text
  records = by_source_id(str(tmp_path / 'out'), ['train'])
  labels = {sid.rsplit('/', 1)[-1]: [t.decode() for t in feature(ex, 'image/object/class/text')]
            for sid, (_, ex) in records.items()}
  assert labels == {'a.jpg': ['cat'], 'b.jpg': []}


def test_an_image_another_xml_names_is_not_added_without_objects(tmp_path):
  """XMLs named otherwise than their images (`ann1.xml` naming photo1.jpg): each image is
  written once, with its boxes."""
  _tree(tmp_path / 'voc', ['photo1.jpg', 'photo2.jpg'])
  for i in (1, 2):
    write_text(str(tmp_path / 'voc' / f'ann{i}.xml'),
               VOC_XML.format(name=f'photo{i}', label='cat'))
  result = trc.convert(str(tmp_path / 'voc'), str(tmp_path / 'out'))
  assert result.records_written == 2 and result.summary['objects_per_label'] == {'cat': 2}


def test_coco_roots_are_known_by_coco_task_names_only(tmp_path):
  """LabelMe files in annotations/ (`frame_001.json`) are no COCO root; a COCO subset with
  an underscore (`instances_val_small.json`) is read as that subset."""
  labelme = {'version': '5.0.1', 'flags': {}, 'imagePath': '../images/frame_001.jpg',
             'imageData': None, 'imageHeight': 12, 'imageWidth': 16,
             'shapes': [{'label': 'cat', 'points': [[2, 3], [10, 9]], 'shape_type': 'rectangle',
                         'group_id': None, 'flags': {}}]}
  _tree(tmp_path / 'lm', ['images/frame_001.jpg'])
  write_text(str(tmp_path / 'lm' / 'annotations' / 'frame_001.json'), json.dumps(labelme))
  result = trc.convert(str(tmp_path / 'lm' / 'annotations'), str(tmp_path / 'out_lm'))
  assert result.summary['objects_per_label'] == {'cat': 1}
  _coco(tmp_path / 'coco', 'train', 'images/train', ['a'])
  _coco(tmp_path / 'coco', 'val_small', 'images/val_small', ['b', 'c'])
  result = trc.convert(str(tmp_path / 'coco'), str(tmp_path / 'out_coco'))
  assert result.records_written == 3 and sorted(os.path.basename(m) for m in result.manifests) == [
      'instances_train.json', 'instances_val_small.json']


def test_an_output_inside_an_image_folder_a_layout_implies_is_refused(tmp_path):
  root = _voc_devkit(tmp_path / 'VOC2007')
  before = sorted(os.listdir(os.path.join(root, 'JPEGImages')))
  with pytest.raises(Exception, match='image folder'):
    trc.convert(os.path.join(root, 'Annotations'), os.path.join(root, 'JPEGImages', 'out'))
  assert sorted(os.listdir(os.path.join(root, 'JPEGImages'))) == before


def test_a_coco_roots_image_root_given_wins(tmp_path):
  """A COCO root whose images are elsewhere: --image-root names them."""
  _coco(tmp_path / 'coco', 'train2017', 'elsewhere/train2017', ['a'])
  result = trc.convert(str(tmp_path / 'coco'), str(tmp_path / 'out'),
                       image_root=str(tmp_path / 'coco' / 'elsewhere' / 'train2017'))
  assert result.records_per_split['train'] == 1


@pytest.mark.parametrize('folders', [['cat', 'dog', 'depth'], ['hr', 'normal'], ['query', 'x']])
def test_one_folder_named_like_a_layouts_part_is_still_a_class(tmp_path, folders):
  _tree(tmp_path / 'data', [f'{f}/a.jpg' for f in folders] + ['cat/.meta.json'])
  result = trc.convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert sorted(result.records_per_label) == sorted(folders)
