"""Issue 52: a detection dataset whose annotations yield no object at all says so,
naming where the objects were looked for (as Ultralytics warns "No labels found in
<labels folder>"); and a refusal is at most 5 lines, without a traceback, whatever the
number of failed rows, still naming the first failures (row, URI, reason) and the
counts by reason."""
import json
import logging
import os

import pytest

from images import write_image, write_text
from runs import REFUSAL_LINES, refusal_lines, run_cli, summary_of
import tfrecorder_component as trc
from tfrecorder_component.adapters import cli

WARNING = 'No object in any of the'


def yolo_dataset(root, labels_folder='labels', objects=()):
  """A YOLO dataset of three 32x32 JPEGs in images/train, with data.yaml; the label
  files go to `labels_folder`/train, each holding a box only for the images of
  `objects` (their indices)."""
  for i in range(3):
    write_image(os.path.join(root, 'images', 'train', f'img{i}.jpg'), height=32, width=32,
                seed=i)
    write_text(os.path.join(root, labels_folder, 'train', f'img{i}.txt'),
               '0 0.5 0.5 0.25 0.25\n' if i in objects else '')
  return write_text(os.path.join(root, 'data.yaml'),
                    'train: images/train\nval: images/train\nnames: [car]\n')


# --- (a) a detection dataset without any object --------------------------------------


@pytest.mark.parametrize('beam', [False, True], ids=['local', 'beam'])
def test_a_yolo_dataset_whose_labels_are_misplaced_warns_where_it_looked(tmp_path, beam):
  root = str(tmp_path / 'yolo')
  data = yolo_dataset(root, labels_folder='labels_wrong', objects=(0, 1, 2))
  out = str(tmp_path / 'out')
  extra = ['--beam-arg=--direct_num_workers=1'] if beam else []
  done = run_cli('convert', data, out, '-q', *extra)
  assert done.returncode == 0, done.stderr[-3000:]
  assert 'Wrote 6 records of 6 rows' in done.stdout
  warning = [l for l in done.stderr.splitlines() if WARNING in l]
  assert len(warning) == 1, done.stderr
  # Where the labels were looked for, that it is missing, and where .txt files are.
  assert f'{WARNING} 6 detection records written' in warning[0]
  assert f'{root}/labels/train (no such folder; .txt files are in {root}/labels_wrong/train)' \
      in warning[0]
  assert 'as Ultralytics reads them' in warning[0]
  summary = summary_of(out)
  assert summary['objects_written'] == 0
  assert summary['warnings'] == [warning[0].split(': ', 1)[1]]  # warning: <text>
  page = open(os.path.join(out, 'report', 'report.html'), encoding='utf-8').read()
  assert 'Warning: No object in any of the 6 detection records' in page


def test_a_yolo_obb_dataset_without_label_files_warns(tmp_path):
  root = str(tmp_path / 'obb')
  for split in ('train', 'valid'):
    for i in range(2):
      write_image(os.path.join(root, split, 'images', f'img{i}.jpg'), height=32, width=32,
                  seed=i)
  data = write_text(os.path.join(root, 'data.yaml'),
                    'train: train/images\nval: valid/images\nnc: 1\nnames: [car]\n')
  done = run_cli('convert', data, str(tmp_path / 'out'), '--format', 'yolo_obb', '-q')
  assert done.returncode == 0, done.stderr[-3000:]
  assert WARNING in done.stderr
  assert f'{root}/train/labels (no such folder)' in done.stderr
  assert f'{root}/valid/labels (no such folder)' in done.stderr


def test_a_roboflow_obb_export_in_dota_layout_is_refused_naming_labeltxt(tmp_path):
  """Roboflow's YOLO-OBB export in DOTA's layout: `labelTxt/` beside `images/`, lines
  `x1 y1 ... x4 y4 class difficult` in pixels. Read by Ultralytics' rule, every image
  would have no object: refused in one line naming labelTxt/, with or without
  `--format yolo_obb`, and nothing written."""
  root = str(tmp_path / 'dota')
  for split in ('train', 'valid'):
    for i in range(2):
      write_image(os.path.join(root, split, 'images', f'img{i}.jpg'), height=32, width=32,
                  seed=i)
      write_text(os.path.join(root, split, 'labelTxt', f'img{i}.txt'),
                 '10 10 20 10 20 20 10 20 car 0\n')
  data = write_text(os.path.join(root, 'data.yaml'),
                    'train: train/images\nval: valid/images\nnc: 1\nnames: [car]\n')
  for args in (['--format', 'yolo_obb'], []):
    out = str(tmp_path / f'out{len(args)}')
    done = run_cli('convert', data, out, '-q', *args)
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f'{root}/train/labelTxt' in done.stderr and "DOTA's layout" in done.stderr
    assert not os.path.exists(os.path.join(out, 'Split-train'))


def test_a_coco_file_without_annotations_warns_naming_the_file(tmp_path, caplog):
  data = tmp_path / 'coco'
  for i in range(2):
    write_image(str(data / f'{i}.jpg'), height=32, width=32, seed=i)
  coco = write_text(str(data / 'instances.json'), json.dumps({
      'images': [{'id': i + 1, 'file_name': f'{i}.jpg', 'width': 32, 'height': 32}
                 for i in range(2)],
      'annotations': [], 'categories': [{'id': 1, 'name': 'cat'}]}))
  with caplog.at_level(logging.WARNING):
    result = trc.convert(coco, str(tmp_path / 'out'))
  assert result.records_written == 2
  # (2 images split by hash leave a split empty: that warning too)
  [warning] = [w for w in result.summary['warnings'] if not w.startswith('No record went')]
  assert warning.startswith(f'{WARNING} 2 detection records written')
  assert f'the coco_json annotations in {coco} give none of these images an object' in warning
  assert [r.getMessage() for r in caplog.records if WARNING in r.getMessage()] == [warning]


def test_a_detection_dataset_with_some_objects_does_not_warn(tmp_path):
  data = yolo_dataset(str(tmp_path / 'yolo'), objects=(1,))
  out = str(tmp_path / 'out')
  done = run_cli('convert', data, out, '-q')
  assert done.returncode == 0, done.stderr[-3000:]
  assert WARNING not in done.stderr and 'Boxes: 2 written' in done.stdout
  assert summary_of(out)['warnings'] == []


def test_a_classification_manifest_does_not_warn(tmp_path):
  data = tmp_path / 'data'
  for i in range(2):
    write_image(str(data / f'{i}.jpg'), seed=i)
  manifest = write_text(str(data / 'm.csv'), 'TRAIN,0.jpg,cat\nTRAIN,1.jpg,dog\n')
  out = str(tmp_path / 'out')
  done = run_cli('convert', manifest, out, '-q')
  assert done.returncode == 0 and done.stderr == '', done.stderr[-3000:]
  assert summary_of(out)['warnings'] == []


# --- (b) refusals in at most 5 lines -----------------------------------------------------


def test_wider_face_annotations_read_as_an_image_list_are_refused_in_5_lines(tmp_path):
  """WIDER FACE's wider_face_train_bbx_gt.txt: an image path, a count of faces, a line
  per face: read as an image list, every line fails; the refusal stays short."""
  root = tmp_path / 'WIDER_train'
  write_image(str(root / 'images' / '0--Parade' / '0_Parade_marchingband_1_849.jpg'))
  write_image(str(root / 'images' / '0--Parade' / '0_Parade_Parade_0_904.jpg'))
  gt = write_text(str(tmp_path / 'wider_face_split' / 'wider_face_train_bbx_gt.txt'),
                  '0--Parade/0_Parade_marchingband_1_849.jpg\n1\n'
                  '449 330 122 149 0 0 0 0 0 0\n'
                  '0--Parade/0_Parade_Parade_0_904.jpg\n1\n361 98 263 339 0 0 0 0 0 0\n'
                  '0--Parade/0_Parade_marchingband_1_799.jpg\n3\n'
                  '78 221 7 8 2 0 0 0 0 0\n78 238 14 17 2 0 0 0 0 0\n'
                  '113 212 11 15 2 0 0 0 0 0\n')
  done = run_cli('convert', gt, str(tmp_path / 'out'))
  assert done.returncode != 0
  assert 'Traceback' not in done.stderr
  assert len(done.stderr.strip().splitlines()) <= REFUSAL_LINES, done.stderr
  assert 'wider_face_train_bbx_gt.txt' in done.stderr


def test_rows_failing_for_different_reasons_are_refused_in_5_lines(tmp_path):
  data = tmp_path / 'data'
  write_image(str(data / 'good.jpg'))
  write_text(str(data / 'notes.jpg'), 'not an image')
  manifest = write_text(str(data / 'm.csv'), 'TRAIN,missing.jpg,cat\n'
                        'TRAIN,notes.jpg,dog\n'
                        'SOMETIMES,good.jpg,cat\n'
                        'TRAIN,good.jpg,"cat\n')
  done = run_cli('convert', manifest, str(tmp_path / 'out'))
  lines = refusal_lines(done)
  assert lines[0].startswith('error: 4 of 4 manifest rows failed (100.00%: ')
  for count in ('1 bad_row', '1 missing', '1 not_an_image', '1 unknown_split'):
    assert count in lines[0], lines[0]
  # The first failure, then the first of another reason: row, URI and reason each.
  assert f"{manifest} row 1: 'missing.jpg': missing:" in lines[1]
  assert f"{manifest} row 2: 'notes.jpg': not_an_image:" in lines[2]
  assert lines[3].startswith('  ... and 2 more. Fix or remove these rows')
  errors_path = lines[4].split('All failed rows: ')[1]
  assert len(open(errors_path, encoding='utf-8').read().splitlines()) == 4


def test_a_thousand_missing_images_are_refused_in_5_lines(tmp_path):
  data = tmp_path / 'data'
  manifest = write_text(str(data / 'm.csv'),
                        ''.join(f'TRAIN,img{i}.jpg,cat\n' for i in range(1000)))
  done = run_cli('convert', manifest, str(tmp_path / 'out'))
  lines = refusal_lines(done)
  assert lines[0].startswith('error: 1,000 of 1,000 manifest rows failed (100.00%: '
                             '1,000 missing)'), lines[0]
  assert f"{manifest} row 1: 'img0.jpg': missing:" in lines[1]
  assert f"{manifest} row 2: 'img1.jpg': missing:" in lines[2]
  assert '... and 998 more' in lines[3]
  assert lines[4] == f'All failed rows: {tmp_path}/out/report/errors.jsonl'


def test_a_message_over_several_lines_stays_within_5_lines(tmp_path, capsys):
  """A row's message or URI with line breaks of its own takes one line; an error
  quoting a worker's traceback keeps only the exception's line."""
  data = tmp_path / 'data'
  manifest = write_text(str(data / 'm.csv'), ''.join(
      f'TRAIN,"a\nb\nc{i}.jpg",cat\n' for i in range(3)))
  assert cli.main(['convert', manifest, str(tmp_path / 'out'), '-q']) == 1
  err = capsys.readouterr().err
  assert len(err.strip().splitlines()) <= REFUSAL_LINES and 'missing' in err, err
  quoted = ('Pipeline failed:\nTraceback (most recent call last):\n  File "x.py", line 1, '
            'in f\n    raise ValueError\nValueError: bad thing [while running \'Read\']')
  assert cli.refusal(quoted) == 'error: Pipeline failed:\nValueError: bad thing'
  long = '\n'.join(f'line {i}' for i in range(40))
  assert len(cli.refusal(long).splitlines()) == REFUSAL_LINES


@pytest.mark.parametrize('header, columns', [
    ('image,x,y,width,height,label', 'x, y, width, height'),
    ('image_uri,label,xmin,ymin,xmax,ymax', 'xmin, ymin, xmax, ymax'),
    ('path,label,bbox_x,bbox_y,bbox_w,bbox_h', 'bbox_x, bbox_y, bbox_w, bbox_h'),
    ('ML_USE,image_uri,label,left,top,right,bottom', 'left, top, right, bottom'),
])
def test_a_csv_of_boxes_in_no_box_format_is_refused_naming_its_columns(tmp_path, header,
                                                                       columns):
  """A CSV whose header names a box, in none of the detection CSVs' layouts, is never
  read as classification (one record a box, its corners as features): refused in one
  line naming the columns, as corner or centre, pixels or fractions, cannot be told."""
  write_image(str(tmp_path / 'a.jpg'), height=32, width=32, seed=1)
  values = {'image': 'a.jpg', 'image_uri': 'a.jpg', 'path': 'a.jpg', 'label': 'cat',
            'ML_USE': 'TRAIN'}
  row = ','.join(values.get(name, '1') for name in header.split(','))
  manifest = write_text(str(tmp_path / 'boxes.csv'), f'{header}\n{row}\n')
  done = run_cli('convert', manifest, str(tmp_path / 'out'))
  assert done.returncode == 1, done.stdout
  assert done.stderr.count('\n') == 1 and f'box columns ({columns})' in done.stderr
  assert not (tmp_path / 'out').exists()
