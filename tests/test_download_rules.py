"""The rules under the famous downloads' readings (tests/test_downloads.py), each on its
own: a folder's text files are manifests only by their content, a CSV beside class
folders that names no label is not read, split-named manifests take their split, the
junk operating systems leave is never data, a layout one step away is found, an empty
hash split warns, and refusals name what to do. Real folders, the real conversion."""
import os

import pytest

from images import write_image, write_text
import tfrecorder_component as trc
from tfrecorder_component.errors import ManifestError
from tfrecorder_component.manifest import discover

VOC_XML = ('<annotation><filename>{name}.png</filename><size><width>30</width>'
           '<height>20</height><depth>3</depth></size><object><name>{label}</name><bndbox>'
           '<xmin>2</xmin><ymin>3</ymin><xmax>20</xmax><ymax>15</ymax></bndbox></object>'
           '</annotation>')


def _written(result):
  return {split: n for split, n in result.records_per_split.items() if n}


def _images(root, paths, fmt='JPEG'):
  for i, rel in enumerate(paths):
    write_image(os.path.join(str(root), rel), fmt, height=20, width=30, seed=i)


@pytest.mark.parametrize('text, kind', [
    ('Structure:\n----------\npec/\n    images/\n', None),  # Food-101's README.txt
    ('1 001.Black_footed_Albatross/Black_Footed_Albatross_0001_796111.jpg\n', None),  # CUB
    ('n01440764 tench, Tinca tinca\n', None),  # ImageNet's LOC_synset_mapping.txt
    ('class id,filepaths,labels,data set\n0,train/a/1.jpg,a,train\n', 'labelled'),
    ('path,noisy_labels_0,is_valid\ntrain/n1/a.JPEG,n1,False\n', 'unlabelled'),
    ('TRAIN,gs://bucket/a.jpg,cat\n', 'labelled'),
    ('gs://bucket/a.jpg,cat\n', 'labelled'),
    ('image_uri,label\na.jpg,cat\n', 'labelled'),
])
def test_a_text_file_is_a_manifest_only_by_its_content(tmp_path, text, kind):
  path = write_text(str(tmp_path / 'file.csv'), text)
  assert discover.manifest_kind(path) == kind


def test_a_folder_of_only_text_files_is_refused_naming_them(tmp_path):
  write_text(str(tmp_path / 'data' / 'README.txt'), 'Structure:\n  images/\n')
  write_text(str(tmp_path / 'data' / 'license_agreement.txt'), 'LICENSE AGREEMENT\n')
  with pytest.raises(ManifestError) as raised:
    trc.convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  message = str(raised.value)
  assert 'README.txt, license_agreement.txt name no image, so they are no manifest' in message
  assert '\n' not in message


def test_split_named_manifests_take_their_split_and_a_file_named_by_none_is_not_read(tmp_path):
  """A Kaggle competition's train.csv, test.csv and sample_submission.csv."""
  _images(tmp_path / 'data', ['img/a.jpg', 'img/b.jpg', 'img/c.jpg'])
  write_text(str(tmp_path / 'data' / 'train.csv'), 'image_uri,label\nimg/a.jpg,cat\nimg/b.jpg,dog\n')
  write_text(str(tmp_path / 'data' / 'test.csv'), 'image_uri,label\nimg/c.jpg,cat\n')
  write_text(str(tmp_path / 'data' / 'sample_submission.csv'), 'image_uri,label\nimg/c.jpg,dog\n')
  result = trc.convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert _written(result) == {'train': 2, 'test': 1}
  assert result.records_per_label == {'cat': 2, 'dog': 1}


def test_a_csv_naming_no_label_beside_class_folders_is_not_read(tmp_path, caplog):
  _images(tmp_path / 'data', ['cat/a.jpg', 'cat/b.jpg', 'dog/c.jpg'])
  write_text(str(tmp_path / 'data' / 'extra.csv'), 'path,score\ncat/a.jpg,0.5\n')
  result = trc.convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert result.records_per_label == {'cat': 2, 'dog': 1}
  assert any('extra.csv names images but no label column; not read' in r.message
             for r in caplog.records)


@pytest.mark.parametrize('junk', ['__MACOSX/cat/._a.jpg', 'cat/._a.jpg', 'cat/Thumbs.db',
                                  'cat/desktop.ini', '.DS_Store', 'dog/.DS_Store',
                                  '._train.csv'])
def test_operating_system_junk_is_never_data(tmp_path, junk):
  _images(tmp_path / 'data', ['cat/a.jpg', 'dog/b.jpg'])
  path = tmp_path / 'data' / junk
  os.makedirs(path.parent, exist_ok=True)
  path.write_bytes(b'\x00\x05\x16\x07' + b'\x00' * 4092)  # an AppleDouble header
  result = trc.convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert result.records_per_label == {'cat': 1, 'dog': 1}
  assert result.summary['rows_failed'] == 0


def test_a_zip_root_folder_is_read_through_but_a_lone_split_folder_keeps_its_split(tmp_path):
  _images(tmp_path / 'zip', ['dataset/cat/a.jpg', 'dataset/dog/b.jpg'])
  assert trc.convert(str(tmp_path / 'zip'), str(tmp_path / 'o1')).records_per_label == {
      'cat': 1, 'dog': 1}
  _images(tmp_path / 'split', ['train/cat/a.jpg', 'train/dog/b.jpg'])
  assert _written(trc.convert(str(tmp_path / 'split'), str(tmp_path / 'o2'))) == {'train': 2}


def test_voc_xmls_in_annotations_beside_images_are_read(tmp_path):
  """Kaggle's detection sets (a face-mask set: images/*.png, annotations/*.xml)."""
  _images(tmp_path / 'data', ['images/m0.png', 'images/m1.png'], fmt='PNG')
  for i, label in enumerate(['with_mask', 'without_mask']):
    write_text(str(tmp_path / 'data' / 'annotations' / f'm{i}.xml'),
               VOC_XML.format(name=f'm{i}', label=label))
  result = trc.convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert result.summary['objects_per_label'] == {'with_mask': 1, 'without_mask': 1}


def test_images_beside_annotations_that_are_no_annotation_files_get_no_command(tmp_path):
  """`images/` beside an `annotations/` of MATLAB files: no command that would fail."""
  _images(tmp_path / 'data', ['images/a.jpg', 'images/b.jpg'])
  write_text(str(tmp_path / 'data' / 'annotations' / 'a.mat'), 'MATLAB 5.0\n')
  with pytest.raises(ManifestError) as raised:
    trc.convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert 'holds no annotation file this tool reads' in str(raised.value)
  assert '`' not in str(raised.value)


def test_a_hash_split_left_empty_warns(tmp_path):
  _images(tmp_path / 'data', ['cat/a.jpg', 'dog/b.jpg'])
  result = trc.convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  empty = sorted({'train', 'eval', 'test'} - set(_written(result)))
  assert empty  # 2 images cannot reach 3 splits
  assert [w for w in result.summary['warnings'] if w.startswith('No record went to split')
          and 'records without a split of their own were split by hash' in w], (
              result.summary['warnings'])
  assert result.summary['records_split_by_hash'] == 2


def test_rows_that_bring_their_split_leave_others_empty_without_a_warning(tmp_path):
  _images(tmp_path / 'data', ['train/cat/a.jpg', 'train/dog/b.jpg'])
  result = trc.convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert _written(result) == {'train': 2}
  assert not [w for w in result.summary['warnings'] if w.startswith('No record went')]
  assert result.summary['records_split_by_hash'] == 0


def test_a_refusals_suggested_command_run_as_printed_reads_the_dataset(tmp_path):
  """`images/` and `annotations/` of VOC XMLs beside a third folder: refused, naming the
  command; that command, run as printed (OUT replaced), converts every box."""
  import re  # pylint: disable=g-import-not-at-top
  import shlex  # pylint: disable=g-import-not-at-top
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  root = tmp_path / 'data'
  _images(root, ['images/m0.png', 'images/m1.png'], fmt='PNG')
  for i, label in enumerate(['with_mask', 'without_mask']):
    write_text(str(root / 'annotations' / f'm{i}.xml'), VOC_XML.format(name=f'm{i}', label=label))
  write_text(str(root / 'docs' / 'notes.md'), 'notes\n')
  with pytest.raises(ManifestError) as raised:
    trc.convert(str(root), str(tmp_path / 'out'))
  [command] = re.findall(r'`(tfrecorder-component [^`]+)`', str(raised.value))
  args = shlex.split(command.replace(' OUT ', f' {tmp_path / "suggested"} '))
  cli = os.path.join(os.path.dirname(sys.executable), 'tfrecorder-component')
  done = subprocess.run([cli, *args[1:]], capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr[-2000:]
  assert 'Boxes: 2 written' in done.stdout, done.stdout
