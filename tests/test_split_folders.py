"""A folder of split folders of manifests (`train/`, `valid/`, `test/`, as Roboflow's
exports lay them out): each manifest's rows take its folder's split."""
from __future__ import annotations

import pytest

from tfrecorder_component.errors import ManifestError

from images import write_image, write_text
from tfrecorder_component import convert
from tfrecorder_component.adapters.cli import main

VOC = ('<annotation><filename>{0}.jpg</filename><object><name>cat</name><bndbox>'
       '<xmin>1</xmin><ymin>1</ymin><xmax>9</xmax><ymax>9</ymax></bndbox></object></annotation>')


def _dataset(root, splits):
  for split, names in splits.items():
    for name in names:
      write_image(str(root / split / f'{name}.jpg'), height=20, width=30)
      write_text(str(root / split / f'{name}.xml'), VOC.format(name))


def test_split_folders_of_pascal_voc_files_keep_their_splits(tmp_path):
  _dataset(tmp_path / 'data', {'train': 'ab', 'valid': 'c', 'Test': 'd'})
  result = convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert result.records_per_split == {'train': 2, 'eval': 1, 'test': 1}
  assert len(result.manifests) == 4


def test_cli_reads_split_folders_too(tmp_path):
  _dataset(tmp_path / 'data', {'train': 'a', 'val': 'b'})
  assert main(['convert', str(tmp_path / 'data'), str(tmp_path / 'out')]) == 0
  assert sorted(p.name for p in (tmp_path / 'out' / 'Split-eval').iterdir())


@pytest.mark.parametrize('layout', ['train/cat/a.jpg', 'cat/a.jpg'])
def test_image_folders_are_still_image_folders(tmp_path, layout):
  write_image(str(tmp_path / 'data' / layout), height=20, width=30)
  write_image(str(tmp_path / 'data' / layout.replace('cat/a', 'dog/b')), height=20, width=30)
  write_text(str(tmp_path / 'data' / layout.split('/')[0] / 'README.txt'), 'notes\n')
  result = convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert result.records_per_label == {'cat': 1, 'dog': 1}


def test_a_lone_class_folder_is_refused_not_read_as_one_class(tmp_path):
  """A root holding one folder of images (Flowers-102's jpg/, whose labels are
  elsewhere) is no one-class dataset: refused in one line naming the folder."""
  for i in range(3):
    write_image(str(tmp_path / 'data' / 'jpg' / f'image_0000{i}.jpg'), height=20, width=30)
  with pytest.raises(ManifestError) as raised:
    convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert str(raised.value).startswith(f'{tmp_path}/data/jpg holds 3 images and no class '
                                      'folders'), raised.value
  assert '\n' not in str(raised.value)


def test_a_data_set_folder_lists_its_own_files_only(tmp_path):
  """Beside a data.yaml (Roboflow's export holds README.roboflow.txt), or beside Open
  Images annotation CSVs (class descriptions, a hierarchy JSON), the other manifest-like
  files are parts of the data set: the CLI, convert() and ImageExampleGen (all through
  list_manifest_files) read only the data set's own files."""
  from tfrecorder_component.manifest.discover import manifest_files as list_manifest_files  # pylint: disable=g-import-not-at-top
  yolo = tmp_path / 'yolo'
  write_image(str(yolo / 'train' / 'images' / 'a.jpg'), height=20, width=30)
  write_text(str(yolo / 'train' / 'labels' / 'a.txt'), '0 0.5 0.5 0.2 0.2\n')
  write_text(str(yolo / 'README.roboflow.txt'), 'Exported via roboflow.com\n')
  write_text(str(yolo / 'data.yaml'), 'train: ../train/images\nnames: [cat]\n')
  assert list_manifest_files(str(yolo)) == [str(yolo / 'data.yaml')]
  assert convert(str(yolo), str(tmp_path / 'out-yolo')).records_per_label == {'cat': 1}

  notes = tmp_path / 'annotations'
  write_text(str(notes / 'oidv6-train-annotations-bbox.csv'),
             'ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,'
             'IsTruncated,IsGroupOf,IsDepiction,IsInside\n'
             '0001,xclick,/m/01,1,0.1,0.5,0.1,0.5,0,0,0,0,0\n')
  write_text(str(notes / 'oidv6-class-descriptions.csv'), 'LabelName,DisplayName\n/m/01,Cat\n')
  write_text(str(notes / 'bbox_labels_600_hierarchy.json'), '{"LabelName": "/m/0bl9f"}')
  write_image(str(tmp_path / 'images' / 'train' / '0001.jpg'), height=20, width=30)
  assert list_manifest_files(str(notes)) == [str(notes / 'oidv6-train-annotations-bbox.csv')]
  result = convert(str(notes), str(tmp_path / 'out-oi'))
  assert result.records_per_split['train'] == 1 and result.records_per_label == {'Cat': 1}
  # A glob names its files: nothing is left out.
  assert len(list_manifest_files(str(notes / '*'))) == 3
