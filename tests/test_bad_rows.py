"""One bad row fails alone: it never stops, shrinks or corrupts a run, and no label
reaches an output file or the terminal in a form that changes its meaning."""
import json
import os
import subprocess
import sys

from images import write_image, write_text
from runs import CLI
import tfrecorder_component as trc
from tfrecorder_component.manifest import iter_manifest_file, parse_manifest_text
from tfrecorder_component.manifest.rows import ManifestRow


def images(folder, names):
  for i, name in enumerate(names):
    write_image(os.path.join(folder, name), 'PNG', seed=i)


def errors_of(output_dir):
  with open(os.path.join(output_dir, 'report', 'errors.jsonl'), encoding='utf-8') as f:
    return sorted((e['row'], e['reason'], e['message']) for e in map(json.loads, f))


def labels_txt(output_dir):
  with open(os.path.join(output_dir, 'labels.txt'), encoding='utf-8', newline='') as f:
    return f.read()


def test_an_unbalanced_quote_fails_its_row_and_no_row_after_it(tmp_path):
  data = str(tmp_path / 'data')
  images(data, ['img0.png', 'img1.png', 'img2.png', 'img3.png'])
  manifest = write_text(os.path.join(data, 'm.csv'), 'TRAIN,img0.png,cat\nTRAIN,img1.png,"dog\n'
                        'TRAIN,img2.png,cat\nTRAIN,img3.png,dog\n')
  result = trc.convert(manifest, str(tmp_path / 'out'), max_error_ratio=0.25)
  assert (result.rows_read, result.records_written, result.rows_failed) == (4, 3, 1)
  (row, reason, message), = errors_of(result.output_dir)
  assert (row, reason) == (2, 'bad_row')
  assert 'a quote opened on this line is not closed' in message
  assert labels_txt(result.output_dir) == 'cat\ndog\n'


def test_a_field_over_the_size_limit_does_not_turn_its_tail_into_a_row(tmp_path):
  data = str(tmp_path / 'data')
  images(data, ['a.png', 'b.png'])
  huge = 'x' * 200_000
  manifest = write_text(os.path.join(data, 'm.csv'),
                        f'TRAIN,a.png,cat\nTRAIN,b.png,"{huge}",TRAIN,a.png,x\n'
                        'TRAIN,b.png,dog\n')
  result = trc.convert(manifest, str(tmp_path / 'out'), max_error_ratio=0.5)
  assert (result.rows_read, result.rows_failed) == (3, 1)
  assert result.records_per_label == {'cat': 1, 'dog': 1}
  (row, reason, message), = errors_of(result.output_dir)
  assert (row, reason) == (2, 'bad_row') and 'field larger than field limit' in message


def test_huge_numbers_fail_their_row_not_the_run(tmp_path):
  data = str(tmp_path / 'data')
  images(data, ['a.png', 'b.png', 'c.png'])
  digits = '1' * 4301
  jsonl = write_text(os.path.join(data, 'm.jsonl'), ''.join(
      json.dumps({'imageGcsUri': n, 'classificationAnnotation': {'displayName': 'cat'}})
      .replace('}}', '}, "weight": ' + (digits if n == 'b.png' else '2') + '}') + '\n'
      for n in ('a.png', 'b.png', 'c.png')))
  done = subprocess.run([CLI, 'convert', jsonl, str(tmp_path / 'out'), '--max-error-ratio',
                         '0.4'], capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stderr
  assert 'Traceback' not in done.stderr
  assert errors_of(str(tmp_path / 'out')) == [
      (2, 'bad_row', 'invalid JSON: a number of more than 4,300 digits')]
  # In CSV: an int column with such a value is text (inferred) or a bad_feature (declared).
  csv = write_text(os.path.join(data, 'm.csv'), f'split,image_uri,label,weight,score\n'
                   f'TRAIN,a.png,cat,{digits},0.5\nTRAIN,b.png,cat,3,1e39\nTRAIN,c.png,cat,4,2\n')
  result = trc.convert(csv, str(tmp_path / 'csv'), max_error_ratio=0.4)
  assert result.records_written == 2
  assert errors_of(result.output_dir) == [
      (3, 'bad_feature', "column 'score': '1e39' is not a valid float (inferred from the "
       "file's other values); fix the value or declare the column as 'string'")]
  declared = trc.convert(csv, str(tmp_path / 'declared'), max_error_ratio=0.7,
                         feature_types={'weight': 'int', 'score': 'string'})
  assert [(row, reason) for row, reason, _ in errors_of(declared.output_dir)] == [
      (2, 'bad_feature')]


def test_jsonl_lines_end_at_lf_whatever_the_file_size(tmp_path):
  """A small file is parsed from its text, a large one as it is read: both split lines
  at LF only, so a CR between JSON tokens is white space in both, and CR-only line ends
  give one failed row that says why."""
  row = lambda i: ('{"imageGcsUri": "img/%d.png",\r"classificationAnnotation": '
                   '{"displayName": "cat"}}' % i)
  for n in (3, 4000):  # 3 lines: one text; 4,000 lines (over 64 KiB): streamed
    path = write_text(str(tmp_path / f'{n}.jsonl'), '\n'.join(row(i) for i in range(n)) + '\n')
    _, items, _ = iter_manifest_file(path)
    assert sum(isinstance(r, ManifestRow) for r in items) == n
  cr_only = write_text(str(tmp_path / 'cr.jsonl'), '\r'.join(
      '{"imageGcsUri": "img/%d.png"}' % i for i in range(4)) + '\r')
  items = list(parse_manifest_text(cr_only, open(cr_only, newline='').read()))
  assert len(items) == 1 and items[0].reason == 'bad_row'
  assert 'JSON Lines ends each row with LF (or CRLF)' in items[0].message


def test_labels_in_every_output_file_map_back_exactly(tmp_path):
  """A label with a line break or a control character fails its row (labels.txt's line
  is the id); a lone surrogate fails its row, not the run; NFC and NFD are one class."""
  data = str(tmp_path / 'data')
  names = [f'{i}.png' for i in range(7)]
  images(data, names)
  labels = ['café', 'cafe\u0301', 'two\nlines', 'a\u2028b', 'bell\x07', 'bad\ud800', 'dog']
  rows = [json.dumps({'imageGcsUri': n, 'classificationAnnotation': {'displayName': label}})
          for n, label in zip(names, labels)]
  manifest = write_text(os.path.join(data, 'm.jsonl'), '\n'.join(rows) + '\n')
  done = subprocess.run([CLI, 'convert', manifest, str(tmp_path / 'out'), '--max-error-ratio',
                         '0.6'], capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stderr
  out = str(tmp_path / 'out')
  assert labels_txt(out) == 'café\ndog\n'
  assert [(row, reason) for row, reason, _ in errors_of(out)] == [
      (3, 'bad_label'), (4, 'bad_label'), (5, 'bad_label'), (6, 'bad_row')]
  with open(os.path.join(out, 'report', 'summary.json'), encoding='utf-8') as f:
    assert json.load(f)['records_per_label'] == {'café': 2, 'dog': 1}


def test_nothing_from_the_data_reaches_the_terminal_unescaped(tmp_path):
  """Labels, URIs and messages that hold escape sequences (retitle the window, erase the
  line, print a fake status) are printed as escapes."""
  data = str(tmp_path / 'data')
  images(data, ['ok.png'])
  title = '\x1b]0;owned\x07\x1b[2K\rall good'
  manifest = write_text(os.path.join(data, 'm.csv'),
                        f'TRAIN,ok.png,cat\nTRAIN,missing.png,"{title}"\n'
                        f'TRAIN,"{title}.png",cat\n')
  done = subprocess.run([CLI, 'convert', manifest, str(tmp_path / 'out'), '--max-error-ratio',
                         '0.7'], capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stderr
  for stream in (done.stdout, done.stderr):
    assert '\x1b' not in stream and '\x07' not in stream and '\r' not in stream
  assert '\\x1b]0;owned\\x07' in done.stdout


_UNDER_4_GIB = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
import tfrecorder_component as trc
result = trc.convert(sys.argv[1], sys.argv[2], include_masks=True)
print(result.summary['box_issues'], result.summary['objects_written'])
"""


def test_a_hostile_polygon_converts_with_masks_under_4_gib(tmp_path):
  """Polygons are clipped to the image before pycocotools draws them (it walks every
  edge at 5 times its length); a coordinate that is not finite drops its mask's object
  with a reason."""
  data = str(tmp_path / 'data')
  images(data, ['a.png'])  # 16 x 12
  far, nan = 1e10, float('nan')
  polygons = [[[1, 1, far, 1, far, far, 1, 10]], [[1, 1, 8, 1, 8, nan]],
              [[1, 1, 1e8, 2, 3, 9]], [[2, 2, 10, 2, 10, 9, 2, 9]]]
  coco = {'images': [{'id': 1, 'file_name': 'a.png', 'width': 16, 'height': 12}],
          'categories': [{'id': 7, 'name': 'thing'}],
          'annotations': [{'id': i + 1, 'image_id': 1, 'category_id': 7,
                           'bbox': [1, 1, 5, 5], 'segmentation': p, 'area': 25, 'iscrowd': 0}
                          for i, p in enumerate(polygons)]}
  manifest = write_text(os.path.join(data, 'coco.json'), json.dumps(coco).replace(
      'NaN', 'NaN'))
  done = subprocess.run([sys.executable, '-c', _UNDER_4_GIB, manifest, str(tmp_path / 'out')],
                        capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stderr[-3000:]
  issues, written = done.stdout.strip().rsplit(' ', 1)
  assert written == '3'
  assert eval(issues) == {'clipped:mask_outside_image': 2,  # pylint: disable=eval-used
                          'dropped:mask_not_finite': 1}


def test_coco_area_and_iscrowd_are_checked_and_objects_keep_annotation_order(tmp_path):
  data = str(tmp_path / 'data')
  images(data, ['a.png'])  # 16 x 12
  objects = [  # (x, area, iscrowd): the boxes differ by x only
      (9.5, 4, 0), (1.25, -5, 0), (3.0, 'NaN', 0), (4.0, 1e300, 0), (5.0, '7', 0),
      (6.0, 4, 'yes'), (7.0, 4, 0.5), (2.0, 4, 1), (8.0, None, None), (0.5, 4, True)]
  coco = {'images': [{'id': 1, 'file_name': 'a.png', 'width': 16, 'height': 12}],
          'categories': [{'id': 1, 'name': 'thing'}],
          'annotations': [dict({'id': i + 1, 'image_id': 1, 'category_id': 1,
                                'bbox': [x, 1, 2, 2]},
                               **({'area': area} if area is not None else {}),
                               **({'iscrowd': crowd} if crowd is not None else {}))
                          for i, (x, area, crowd) in enumerate(objects)]}
  manifest = write_text(os.path.join(data, 'coco.json'),
                        json.dumps(coco).replace('"NaN"', 'NaN'))
  result = trc.convert(manifest, str(tmp_path / 'out'))
  assert result.summary['box_issues'] == {'dropped:bad_area': 4, 'dropped:bad_iscrowd': 2}
  from tfrecord_digest import read_records  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.record import example_proto  # pylint: disable=g-import-not-at-top
  (record,) = [r for split in ('train', 'eval', 'test')
               for r in read_records(os.path.join(result.output_dir, f'Split-{split}'))]
  feature = example_proto.Example.FromString(record).features.feature
  xmins = [round(v * 16, 4) for v in feature['image/object/bbox/xmin'].float_list.value]
  assert xmins == [9.5, 2.0, 8.0, 0.5]  # annotation order, not sorted by value
  assert list(feature['image/object/is_crowd'].int64_list.value) == [0, 1, 0, 1]
  assert [round(v, 3) for v in feature['image/object/area'].float_list.value] == [
      4.0, 4.0, 4.0, 4.0]


def test_a_quote_left_open_on_two_lines_is_a_bad_label_not_a_shortened_label():
  """Two lines each ending in an open quote pair up into one quoted field over both
  lines: its label holds the line break, so the row fails as bad_label instead of the
  break being trimmed away and the label taking the next line's text."""
  from tfrecorder_component.manifest import parse_manifest_text  # pylint: disable=g-import-not-at-top
  items = list(parse_manifest_text('/m/m.csv', 'TRAIN,a.png,"\nTRAIN,b.png,"\nTEST,c.png,cat\n',
                                   'automl_csv'))
  assert [(i.row, getattr(i, 'reason', None)) for i in items] == [(2, 'bad_label'), (3, None)]
  assert "the label '\\nTRAIN,b.png,' holds '\\n'" in items[0].message


def test_a_bad_box_line_fails_its_whole_image_on_both_engines(tmp_path):
  """In a one-row-a-box manifest, an image one of whose lines cannot be read is not
  written with its other boxes (that would write the unread object as background): it
  fails whole, as the bad line, naming the rows left unwritten. Images whose lines are
  all good are written, without Beam and with it."""
  images(str(tmp_path), ['a.png', 'b.png'])
  manifest = write_text(str(tmp_path / 'boxes.csv'),
                        'TRAIN,a.png,cat,0.1,0.1,,,0.5,0.5,,\n'
                        'TRAIN,a.png,dog,0.2,x,,,0.6,0.6,,\n'
                        'TRAIN,b.png,cat,0.1,0.1,,,0.5,0.5,,\n'
                        'TRAIN,a.png,cat,0.3,0.3,,,0.4,0.4,,\n')
  for name, beam_args in (('local', []), ('beam', ['--direct_num_workers=1'])):
    out = str(tmp_path / name)
    result = trc.convert(manifest, out, max_error_ratio=1.0, beam_args=beam_args)
    assert result.records_written == 1 and result.rows_failed == 1, name
    [(row, reason, message)] = errors_of(out)
    assert (row, reason) == (2, 'bad_row'), name
    assert message.endswith('(the image fails whole: its rows 1, 4 are not written without '
                            'this one)'), message
