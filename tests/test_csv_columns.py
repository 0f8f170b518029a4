"""CSV manifests read by their header: the column names real downloads use (Kaggle's 100
Sports `sports.csv`, GTSRB's `Train.csv` / `Test.csv` / `Meta.csv`, Imagenette's
`noisy_imagenette.csv`, fastai's `is_valid`), the rule that picks one label column of
two, and the `columns` option that names them where the guess is ambiguous or wrong, from
the command line, `convert()` and the component; each on real image files through the
real conversion, records read back."""
import json
import os
import subprocess

import pandas as pd
import pytest

from images import write_image, write_text
from runs import CLI
from records import by_source_id, feature
import tfrecorder_component as trc
from tfrecorder_component.adapters import conversion
from tfrecorder_component.errors import ManifestError, UsageError
from tfrecorder_component.manifest import read_manifest_file
from tfrecorder_component.manifest.automl_csv import header_roles
from tfrecorder_component.manifest.columns import as_text, describe, parse_columns

SPLITS = ['train', 'eval', 'test']


def _images(root, paths):
  for i, path in enumerate(paths):
    write_image(os.path.join(str(root), path), 'PNG' if path.endswith('.png') else 'JPEG',
                seed=i)


def _records(out):
  return by_source_id(str(out), SPLITS)


def _text(example):
  return [t.decode() for t in feature(example, 'image/class/text')]


def run_cli(*args, cwd=None, shell_line=None):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  if shell_line is not None:  # the command as typed in a shell, its quotes the shell's
    return subprocess.run(['bash', '-c', f'"{CLI}" {shell_line}'], capture_output=True,
                          text=True, cwd=cwd, timeout=600, env=env)
  return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=600,
                        env=env)


# Kaggle's "100 Sports Image Classification": sports.csv beside train/, valid/, test/.
SPORTS = [('0', 'train/air hockey/001.jpg', 'air hockey', 'train'),
          ('0', 'train/air hockey/002.jpg', 'air hockey', 'train'),
          ('1', 'train/ampute football/001.jpg', 'ampute football', 'train'),
          ('0', 'valid/air hockey/1.jpg', 'air hockey', 'valid'),
          ('1', 'valid/ampute football/1.jpg', 'ampute football', 'valid'),
          ('1', 'test/ampute football/1.jpg', 'ampute football', 'test')]


def _sports(root):
  _images(root, [p for _, p, _, _ in SPORTS])
  return write_text(str(root / 'sports.csv'), 'class id,filepaths,labels,data set\n' + ''.join(
      f'{c},{p},{l},{s}\n' for c, p, l, s in SPORTS))


def test_sports_csv_converts_with_its_text_labels_and_data_set_splits(tmp_path):
  manifest = _sports(tmp_path / 'sports')
  result = trc.convert(manifest, str(tmp_path / 'out'))
  assert result.rows_failed == 0 and result.records_written == len(SPORTS)
  assert result.records_per_split == {'train': 3, 'eval': 2, 'test': 1}
  assert result.records_per_label == {'air hockey': 3, 'ampute football': 3}
  records = _records(tmp_path / 'out')
  for class_id, path, label, split in SPORTS:
    written, example = records[path]
    assert written == {'valid': 'eval'}.get(split, split), path
    # `labels` (text) is the label, `class id` (the same class as an integer) a feature
    # under its own name, space and all.
    assert _text(example) == [label]
    assert feature(example, 'class id') == [int(class_id)]
  assert (tmp_path / 'out' / 'labels.txt').read_text() == 'air hockey\nampute football\n'


def test_sports_csv_can_take_the_integer_class_id_as_its_label_instead(tmp_path):
  manifest = _sports(tmp_path / 'sports')
  result = trc.convert(manifest, str(tmp_path / 'out'), columns={'label': 'class id'})
  assert result.records_per_label == {'0': 3, '1': 3}
  example = _records(tmp_path / 'out')['valid/ampute football/1.jpg'][1]
  assert _text(example) == ['1'] and feature(example, 'labels') == [b'ampute football']


GTSRB_HEADER = 'Width,Height,Roi.X1,Roi.Y1,Roi.X2,Roi.Y2,ClassId,Path\n'


def test_gtsrb_train_and_test_csvs_convert_with_class_id_labels(tmp_path):
  root = tmp_path / 'gtsrb'
  train = [('27', '26', '5', '5', '22', '20', '20', 'Train/20/00020_00000_00000.png'),
           ('28', '27', '5', '6', '23', '22', '20', 'Train/20/00020_00000_00001.png'),
           ('30', '31', '6', '5', '25', '26', '1', 'Train/1/00001_00000_00000.png')]
  test = [('53', '54', '6', '5', '48', '49', '16', 'Test/00000.png'),
          ('42', '45', '5', '5', '36', '40', '1', 'Test/00001.png')]
  _images(root, [r[-1] for r in train + test])
  write_text(str(root / 'Train.csv'), GTSRB_HEADER + ''.join(','.join(r) + '\n' for r in train))
  write_text(str(root / 'Test.csv'), GTSRB_HEADER + ''.join(','.join(r) + '\n' for r in test))
  result = trc.convert(str(root / 'Train.csv'), str(tmp_path / 'train'),
                       splits={'train': 1}, layouts=['parquet'])
  assert result.rows_failed == 0 and result.records_per_label == {'1': 1, '20': 2}
  records = _records(tmp_path / 'train')
  for width, height, x1, y1, x2, y2, class_id, path in train:
    example = records[path][1]
    assert _text(example) == [class_id]
    # Dotted column names are features as written, ints as the file gives them.
    assert [feature(example, k) for k in ('Width', 'Height', 'Roi.X1', 'Roi.Y1', 'Roi.X2',
                                          'Roi.Y2')] == [[int(v)] for v in (width, height,
                                                                            x1, y1, x2, y2)]
  # And so the Parquet layout's columns.
  frame = pd.read_parquet(tmp_path / 'train' / 'parquet' / 'train-00000-of-00001.parquet')
  assert {'Roi.X1', 'Roi.Y2', 'Width'} <= set(frame.columns)
  assert sorted(frame['Roi.X1']) == [5, 5, 6]

  result = trc.convert(str(root / 'Test.csv'), str(tmp_path / 'test'), splits={'test': 1})
  assert result.rows_failed == 0 and result.records_per_split['test'] == 2
  assert {p: _text(e) for p, (_, e) in _records(tmp_path / 'test').items()} == {
      'Test/00000.png': ['16'], 'Test/00001.png': ['1']}


def test_gtsrb_meta_csv_takes_class_id_over_sign_id(tmp_path):
  root = tmp_path / 'gtsrb'
  _images(root, ['Meta/0.png', 'Meta/1.png'])
  manifest = write_text(str(root / 'Meta.csv'), 'Path,ClassId,ShapeId,ColorId,SignId\n'
                        'Meta/0.png,0,1,0,3.29\nMeta/1.png,1,1,0,3.29.1\n')
  assert header_roles('Path,ClassId,ShapeId,ColorId,SignId'.split(',')) == {
      'image': 0, 'label': [1], 'split': None}
  result = trc.convert(manifest, str(tmp_path / 'out'), splits={'train': 1})
  assert result.records_per_label == {'0': 1, '1': 1}
  example = _records(tmp_path / 'out')['Meta/1.png'][1]
  assert _text(example) == ['1'] and feature(example, 'SignId') == [b'3.29.1']


NOISY_HEADER = ('path,noisy_labels_0,noisy_labels_1,noisy_labels_5,noisy_labels_25,'
                'noisy_labels_50,is_valid\n')


def _noisy(root):
  rows = [('train/n02979186/n02979186_9036.JPEG', 'n02979186', 'False'),
          ('train/n03394916/n03394916_58454.JPEG', 'n03394916', 'False'),
          ('val/n02979186/n02979186_8971.JPEG', 'n02979186', 'True')]
  _images(root, [p for p, _, _ in rows])
  return write_text(str(root / 'noisy_imagenette.csv'), NOISY_HEADER + ''.join(
      f'{p},{w},{w},{w},{w},n03888605,{v}\n' for p, w, v in rows)), rows


def test_imagenette_noisy_csv_splits_by_is_valid_and_reads_no_label_column(tmp_path):
  manifest, rows = _noisy(tmp_path / 'imagenette2')
  assert header_roles(NOISY_HEADER.strip().split(',')) == {'image': 0, 'label': [],
                                                           'split': 6}
  items = read_manifest_file(manifest)
  assert [(r.image_uri, r.labels, r.split) for r in items] == [
      (p, (), 'eval' if v == 'True' else 'train') for p, _, v in rows]
  assert dict(items[0].features)['noisy_labels_50'] == 'n03888605'
  # Named, one of them is the label; the others stay features.
  result = trc.convert(manifest, str(tmp_path / 'out'), columns='label=noisy_labels_0')
  assert result.rows_failed == 0
  assert result.records_per_split == {'train': 2, 'eval': 1, 'test': 0}
  assert result.records_per_label == {'n02979186': 2, 'n03394916': 1}
  example = _records(tmp_path / 'out')['val/n02979186/n02979186_8971.JPEG'][1]
  assert _text(example) == ['n02979186']
  assert feature(example, 'noisy_labels_50') == [b'n03888605']


def test_is_valid_and_is_train_flags_split_rows_and_other_values_fail_naming_the_column(
    tmp_path):
  _images(tmp_path, ['a.png', 'b.png', 'c.png', 'd.png'])
  manifest = write_text(str(tmp_path / 'm.csv'), 'fname,label,is_valid\n'
                        'a.png,cat,True\nb.png,dog,false\nc.png,cat,\nd.png,dog,maybe\n')
  # `fname` is no name the reader knows: columns names it.
  result = trc.convert(manifest, str(tmp_path / 'out'), columns={'image': 'fname'},
                       max_error_ratio=0.5, splits={'test': 1})
  assert result.rows_failed == 1 and result.errors_per_reason == {'unknown_split': 1}
  records = _records(tmp_path / 'out')
  assert {p: s for p, (s, _) in records.items()} == {'a.png': 'eval', 'b.png': 'train',
                                                     'c.png': 'test'}  # empty: hashed
  with open(os.path.join(result.report_dir, 'errors.jsonl'), encoding='utf-8') as f:
    error = json.loads(f.readline())
  assert error['row'] == 5 and "column 'is_valid' holds 'maybe'" in error['message']
  assert 'True (eval), False (train)' in error['message']

  flags = write_text(str(tmp_path / 'flags.csv'), 'Image_Path,Class,Is-Train\n'
                     'a.png,cat,1\nb.png,dog,0\n')
  assert [(r.image_uri, r.split) for r in read_manifest_file(flags)] == [
      ('a.png', 'train'), ('b.png', 'eval')]


def test_a_split_column_of_other_values_fails_its_rows_unless_columns_reads_none(tmp_path):
  _images(tmp_path, ['a.png', 'b.png'])
  manifest = write_text(str(tmp_path / 'sets.csv'), 'image,label,subset\na.png,cat,0\n'
                        'b.png,dog,1\n')
  items = read_manifest_file(manifest)
  assert [i.reason for i in items] == ['unknown_split', 'unknown_split']
  assert "unknown ML_USE value '0' in column 'subset'" in items[0].message
  assert 'columns "split="' in items[0].message
  result = trc.convert(manifest, str(tmp_path / 'out'), columns='split=')
  assert result.rows_failed == 0 and result.records_written == 2
  assert sorted(feature(e, 'subset') for _, e in _records(tmp_path / 'out').values()) == [
      [0], [1]]


def test_a_k_fold_column_is_a_feature_not_a_split(tmp_path):
  _images(tmp_path, ['a.png', 'b.png'])
  manifest = write_text(str(tmp_path / 'folds.csv'), 'image,label,fold\na.png,cat,0\n'
                        'b.png,dog,1\n')
  result = trc.convert(manifest, str(tmp_path / 'out'))
  assert result.rows_failed == 0 and result.records_written == 2
  assert sorted(feature(e, 'fold') for _, e in _records(tmp_path / 'out').values()) == [
      [0], [1]]


def test_the_command_line_names_columns_with_spaces_as_a_shell_passes_them(tmp_path):
  root = tmp_path / 'data'
  _images(root, ['a.jpg', 'b.jpg', 'c.jpg'])
  write_text(str(root / 'photos.csv'), 'photo file,kind,data set\n'
             'a.jpg,cat,train\nb.jpg,dog,valid\nc.jpg,dog,test\n')
  # Quoted the way one types it: the shell takes the quotes, the option the names.
  done = run_cli(shell_line='convert photos.csv out --columns image="photo file",label=kind,'
                 'split="data set"', cwd=str(root))
  assert done.returncode == 0, done.stdout + done.stderr[-3000:]
  assert 'Wrote 3 records of 3 rows' in done.stdout
  records = _records(root / 'out')
  assert {p: (s, _text(e)) for p, (s, e) in records.items()} == {
      'a.jpg': ('train', ['cat']), 'b.jpg': ('eval', ['dog']), 'c.jpg': ('test', ['dog'])}
  # One argument, quoted whole.
  done = run_cli('convert', 'photos.csv', 'again', '--columns',
                 'image=photo file, label = kind ,split=data set', cwd=str(root))
  assert done.returncode == 0, done.stdout + done.stderr[-3000:]
  assert _records(root / 'again').keys() == records.keys()

  # A column the header lacks: one line naming the file, the column and the header's.
  done = run_cli('convert', 'photos.csv', 'missing', '--columns', 'image=photo,label=kind',
                 cwd=str(root))
  assert done.returncode == 1, done.stdout + done.stderr
  assert (f"{root / 'photos.csv'}: columns names image='photo', but the header has no column "
          "'photo'; the header's columns are 'photo file', 'kind', 'data set'") in done.stderr
  assert not os.path.exists(root / 'missing' / 'Split-train')
  # A syntax error is a usage error, before any run.
  done = run_cli('convert', 'photos.csv', 'bad', '--columns', 'picture=photo file',
                 cwd=str(root))
  assert done.returncode == 2 and "unknown role 'picture'" in done.stderr, done.stderr


def test_convert_takes_columns_where_the_guess_is_wrong(tmp_path):
  # `filename` is the original upload's name; the file on disk is `crop_path`.
  _images(tmp_path, ['crops/1.png', 'crops/2.png'])
  manifest = write_text(str(tmp_path / 'm.csv'), 'filename,crop_path,label\n'
                        'IMG_0001.JPG,crops/1.png,cat\nIMG_0002.JPG,crops/2.png,dog\n')
  guessed = read_manifest_file(manifest)
  assert [r.image_uri for r in guessed] == ['IMG_0001.JPG', 'IMG_0002.JPG']
  result = trc.convert(manifest, str(tmp_path / 'out'), columns={'image': 'crop_path'},
                       splits={'train': 1})
  assert result.rows_failed == 0 and result.records_per_label == {'cat': 1, 'dog': 1}
  example = _records(tmp_path / 'out')['crops/1.png'][1]
  assert feature(example, 'filename') == [b'IMG_0001.JPG']
  # validate() takes it too.
  summary = conversion.validate(manifest, str(tmp_path / 'report'), columns='image=crop_path')
  assert summary['rows_failed'] == 0


def test_a_named_column_missing_from_the_header_is_refused_naming_it(tmp_path):
  _images(tmp_path, ['a.png'])
  manifest = write_text(str(tmp_path / 'm.csv'), 'Path,ClassId\na.png,3\n')
  with pytest.raises(ManifestError) as raised:
    trc.convert(manifest, str(tmp_path / 'out'), columns={'image': 'Path', 'label': 'class'})
  assert str(raised.value) == (f"{manifest}: columns names label='class', but the header has "
                               "no column 'class'; the header's columns are 'Path', 'ClassId'")
  assert not os.path.exists(tmp_path / 'out' / 'Split-train')
  # Names match without case and separators where one column alone does.
  assert [r.labels for r in read_manifest_file(manifest, columns='label=class_id')] == [('3',)]
  # Naming the label alone, of a header whose image column has no name the reader knows.
  unnamed = write_text(str(tmp_path / 'u.csv'), 'picture,kind\na.png,cat\n')
  with pytest.raises(ManifestError, match=r"u\.csv: the header names no image column .*its "
                     r"columns are 'picture', 'kind': name the image column with columns"):
    read_manifest_file(unnamed, columns='label=kind')
  # A file without a header has no columns to name.
  headerless = write_text(str(tmp_path / 'h.csv'), 'TRAIN,a.png,cat\n')
  with pytest.raises(ManifestError, match=r"no column 'Path'.*this first row reads as data"):
    read_manifest_file(headerless, columns='image=Path')


def test_two_candidate_label_columns_are_picked_by_the_documented_rule(tmp_path):
  def roles(header):
    return header_roles(header.split(','))
  # A text label over an integer id of the same class (100 Sports).
  assert roles('class id,filepaths,labels,data set') == {'image': 1, 'label': [2], 'split': 3}
  # Of two fallbacks, the first listed: class_name, ..., class_id, ..., target, y.
  assert roles('image,class_id,class_name') == {'image': 0, 'label': [2], 'split': None}
  assert roles('image,target,ClassId') == {'image': 0, 'label': [2], 'split': None}
  assert roles('image,x,y') == {'image': 0, 'label': [], 'split': None}  # a coordinate
  assert roles('image,y') == {'image': 0, 'label': [1], 'split': None}
  # The first group is read whole, as before: a multi-label CSV's label_1, label_2.
  assert roles('image_uri,label_1,label_2,class_id') == {'image': 0, 'label': [1, 2],
                                                         'split': None}
  _images(tmp_path, ['a.png'])
  manifest = write_text(str(tmp_path / 'm.csv'), 'image,class_id,target\na.png,3,7\n')
  [row] = read_manifest_file(manifest)
  assert row.labels == ('3',) and dict(row.features) == {'target': 7}
  [row] = read_manifest_file(manifest, columns={'label': ['class_id', 'target']})
  assert row.labels == ('3', '7') and row.features == ()


def test_header_roles_answers_from_the_first_line_alone():
  assert header_roles(['TRAIN', 'gs://b/a.jpg', 'cat']) is None  # a data row
  assert header_roles(['name', 'kind']) is None  # no image column
  assert header_roles(['File_Name', 'Target', 'Subset']) == {'image': 0, 'label': [1],
                                                              'split': 2}
  # An image_id counts where the first data row holds a path there.
  assert header_roles(['image_id', 'dx']) is None
  assert header_roles(['image_id', 'dx'], first_row=['ISIC_0027419', 'bkl']) is None
  assert header_roles(['image_id', 'dx'], first_row=['imgs/ISIC_1.jpg', 'bkl']) == {
      'image': 0, 'label': [], 'split': None}
  assert header_roles(['name', 'kind'], columns='image=name,label=kind') == {
      'image': 0, 'label': [1], 'split': None}
  with pytest.raises(ManifestError, match="no column 'photo'"):
    header_roles(['name', 'kind'], columns='image=photo')


def test_an_image_id_column_of_ids_is_refused_and_one_of_paths_is_read(tmp_path):
  ids = write_text(str(tmp_path / 'HAM10000_metadata.csv'), 'lesion_id,image_id,dx\n'
                   'HAM_0000118,ISIC_0027419,bkl\n')
  with pytest.raises(ManifestError, match=r"column 'image_id' holds ids, not image paths "
                     r"\(row 2: 'ISIC_0027419'\)"):
    read_manifest_file(ids)
  paths = write_text(str(tmp_path / 'paths.csv'), 'image_id,dx\nimages/ISIC_0027419.jpg,bkl\n')
  assert [(r.image_uri, r.labels) for r in read_manifest_file(paths)] == [
      ('images/ISIC_0027419.jpg', ())]
  assert [r.labels for r in read_manifest_file(paths, columns='label=dx')] == [('bkl',)]


def test_columns_for_a_manifest_of_another_format_is_refused(tmp_path):
  _images(tmp_path, ['a.png'])
  coco = write_text(str(tmp_path / 'c.json'), json.dumps({
      'images': [{'id': 1, 'file_name': 'a.png', 'width': 16, 'height': 12}],
      'annotations': [], 'categories': [{'id': 1, 'name': 'cat'}]}))
  with pytest.raises(ManifestError, match=r'c\.json: columns \(image=a\) names the columns of a '
                     r'CSV header, but this manifest is coco_json'):
    trc.convert(coco, str(tmp_path / 'out'), columns='image=a')
  seg = write_text(str(tmp_path / 's.csv'), 'image,mask\na.png,a.png\n')
  with pytest.raises(ManifestError, match='columns names label, which this manifest '
                     r'\(segmentation_csv\) has no column for'):
    read_manifest_file(seg, columns='label=mask')
  classification = write_text(str(tmp_path / 'k.csv'), 'image,label\na.png,cat\n')
  with pytest.raises(ManifestError, match='columns names mask'):
    read_manifest_file(classification, columns='mask=label')
  # An image folder is read through a manifest written for it: no column is the user's.
  _images(tmp_path / 'folder', ['cat/1.png', 'dog/1.png'])
  with pytest.raises(UsageError, match=r'is read through manifests written for it'):
    trc.convert(str(tmp_path / 'folder'), str(tmp_path / 'out2'), columns='label=kind')


def test_the_detection_and_segmentation_csvs_take_columns_too(tmp_path):
  boxes = write_text(str(tmp_path / 'boxes.csv'),
                     'Photo,Kind,a,b,c,d,e,f,g,h,Subset\n'
                     'a.png,cat,0.1,0.2,,,0.5,0.6,,,valid\n')
  [row] = read_manifest_file(boxes, 'automl_detection_csv',
                             columns='image=Photo,label=Kind')
  assert row.image_uri == 'a.png' and row.split == 'eval'
  assert [(o.label, o.xmin, o.ymax) for o in row.objects] == [('cat', 0.1, 0.6)]
  masks = write_text(str(tmp_path / 'masks.csv'), 'Photo,Annotation,mask_uri\n'
                     'a.png,a_mask.png,other.png\n')
  [row] = read_manifest_file(masks, 'segmentation_csv', columns='image=Photo,mask=Annotation')
  assert (row.image_uri, row.mask_uri, dict(row.features)) == (
      'a.png', 'a_mask.png', {'mask_uri': 'other.png'})


def test_the_option_reads_its_text_json_and_dict_forms_alike():
  expected = (('image', 'Path'), ('label', 'ClassId'), ('split', 'data set'))
  for value in ('image=Path,label=ClassId,split=data set',
                ' split = "data set" , image=Path,label=ClassId,',
                "image='Path',label=ClassId,split='data set'",
                '{"image": "Path", "label": "ClassId", "split": "data set"}',
                {'split': 'data set', 'image': 'Path', 'label': 'ClassId'}, expected):
    assert parse_columns(value) == expected, value
  assert parse_columns('label="a, b",label=c') == (('label', 'a, b'), ('label', 'c'))
  assert parse_columns({'label': None, 'split': ''}) == (('label', ''), ('split', ''))
  assert describe(parse_columns('image=p,label=a,label=b,split=')) == {
      'image': 'p', 'label': ['a', 'b'], 'split': None}
  assert as_text(parse_columns('label="a, b"')) == 'label="a, b"'
  assert parse_columns(None) == parse_columns('') == parse_columns({}) == ()
  for bad, message in (('imgae=Path', "unknown role 'imgae'; did you mean 'image'?"),
                       ('image', 'expected ROLE=COLUMN pairs'),
                       ('image=a,image=b', 'image is named 2 times'),
                       ('image=', 'image= names no column'),
                       ('image=a,label=a', "column 'a' is named as image and as label"),
                       ('label=,label=a', r'label= \(no label column\) and label columns'),
                       ('split="data set', 'is not closed'),
                       ('{"image": ', 'not a JSON object')):
    with pytest.raises(UsageError, match=message):
      parse_columns(bad)


def test_the_component_carries_columns_to_its_manifest_sources(tmp_path):
  from tfrecorder_component.adapters.component import component as component_lib  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.adapters.component import executor  # pylint: disable=g-import-not-at-top
  write_text(str(tmp_path / 'in' / 'photos.csv'), 'photo file,kind\na.jpg,cat\n')
  built = component_lib.ImageExampleGen(input_base=str(tmp_path / 'in'),
                                        columns='image=photo file,label=kind')
  assert json.loads(built.exec_properties['columns']) == {'image': 'photo file',
                                                          'label': 'kind'}
  exec_properties = dict(built.exec_properties)
  values, _ = executor.conversion_options({}, exec_properties)
  sources = executor._sources({}, exec_properties, values, str(tmp_path / 'report'))  # pylint: disable=protected-access
  assert [s.columns for s in sources] == [(('image', 'photo file'), ('label', 'kind'))]
  with pytest.raises(ValueError, match="unknown role 'imag'"):
    component_lib.ImageExampleGen(input_base=str(tmp_path / 'in'), columns='imag=a')


def test_a_dataframe_names_its_image_column_with_columns(tmp_path, monkeypatch):
  _images(tmp_path, ['a.png', 'b.png'])
  monkeypatch.chdir(tmp_path)
  df = pd.DataFrame({'picture': ['a.png', 'b.png'], 'kind': ['cat', 'dog']})
  result = trc.convert(df, str(tmp_path / 'out'), columns={'image': 'picture', 'label': 'kind'},
                       splits={'train': 1})
  assert result.records_per_label == {'cat': 1, 'dog': 1}
  # Kaggle's spellings need no option.
  df = pd.DataFrame({'filepaths': ['a.png', 'b.png'], 'labels': ['cat', 'dog']})
  assert trc.convert(df, str(tmp_path / 'out2'), splits={'train': 1}).records_written == 2
