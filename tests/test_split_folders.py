"""A folder of split folders of manifests (`train/`, `valid/`, `test/`, as Roboflow's
exports lay them out): each manifest's rows take its folder's split."""
from __future__ import annotations

import pytest

from images import write_image, write_text
from tfrecorder_component import convert
from tfrecorder_component.cli import main

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
  write_text(str(tmp_path / 'data' / layout.split('/')[0] / 'README.txt'), 'notes\n')
  result = convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert result.records_per_label == {'cat': 1}
