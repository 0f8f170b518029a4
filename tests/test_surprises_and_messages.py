"""Issue 53, item 3 and "Messages that leave a user stuck": what used to happen without a
word now warns (multi-label rows in a single-label CSV, a class missing from a split, a
split asked for that got no record), and the refusals a new user meets say what to do
(`--image-root` for images relative to another folder, no "raise the ratio" when every
row failed, a `label,image_uri` file named as such, the command's flags named).
Everything runs the command (or `convert()`) on real files."""
import ast
import os
import re

import pytest

from images import write_image, write_text
from runs import refusal_lines, run_cli, summary_of
import tfrecorder_component as trc
from tfrecorder_component.record import splits as splits_lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def warning_lines(stderr, text):
  """The lines of the command's stderr holding `text` (a warning, whatever its prefix)."""
  return [line for line in stderr.splitlines() if text in line]


def images(folder, names):
  for i, name in enumerate(names):
    write_image(os.path.join(folder, name), height=16, width=16, seed=i)


# --- A1: an unquoted comma in a label ----------------------------------------------------


def test_an_unquoted_comma_in_a_label_warns_naming_the_file_count_and_first_row(tmp_path):
  data = str(tmp_path / 'data')
  names = [f'img{i}.jpg' for i in range(36)]
  images(data, names)
  rows = [f'TRAIN,{n},{"cat" if i % 2 else "dog"}' for i, n in enumerate(names)]
  rows[5] = 'TRAIN,img5.jpg,Bird, blue'
  manifest = write_text(os.path.join(data, 'm.csv'), '\n'.join(rows) + '\n')
  out = str(tmp_path / 'out')
  done = run_cli('convert', manifest, out, '-q')
  assert done.returncode == 0, done.stderr[-3000:]
  warning = warning_lines(done.stderr, 'more than one label')
  assert len(warning) == 1, done.stderr
  assert f'{manifest}: 1 row has more than one label, where its other 35 have one' \
      in warning[0]
  assert "row 6: TRAIN,img5.jpg,Bird, blue, is read as the labels 'Bird', 'blue'" in warning[0]
  assert 'a comma inside a label needs quotes (write "Bird, blue")' in warning[0]
  warnings = summary_of(out)['warnings']
  assert len(warnings) == 1 and warnings[0] in warning[0]
  page = open(os.path.join(out, 'report', 'report.html'), encoding='utf-8').read()
  assert 'a comma inside a label needs quotes' in page

  # Quoted, the label is one: no warning.
  rows[5] = 'TRAIN,img5.jpg,"Bird, blue"'
  write_text(manifest, '\n'.join(rows) + '\n')
  done = run_cli('convert', manifest, str(tmp_path / 'quoted'), '-q')
  assert done.returncode == 0 and not warning_lines(done.stderr, 'more than one label'), \
      done.stderr
  assert summary_of(str(tmp_path / 'quoted'))['records_per_label']['Bird, blue'] == 1


def test_a_multi_label_csv_does_not_warn(tmp_path):
  """Rows with several labels as a multi-label file has them: most rows, no space after
  the comma; and a header's label columns, which say so."""
  data = str(tmp_path / 'data')
  names = [f'img{i}.jpg' for i in range(6)]
  images(data, names)
  multi = write_text(os.path.join(data, 'multi.csv'), ''.join(
      f'TRAIN,{n},cat,dog\n' if i % 3 else f'TRAIN,{n},cat\n' for i, n in enumerate(names)))
  header = write_text(os.path.join(data, 'header.csv'), 'split,image_uri,label_1,label_2\n' +
                      ''.join(f'TRAIN,{n},cat,{"dog" if i == 0 else ""}\n'
                              for i, n in enumerate(names)))
  for manifest in (multi, header):
    out = str(tmp_path / os.path.basename(manifest))
    done = run_cli('convert', manifest, out, '-q')
    assert done.returncode == 0, done.stderr[-3000:]
    assert summary_of(out)['warnings'] == [] and done.stderr == '', done.stderr


# --- A2: a class missing from a split ------------------------------------------------------


def test_a_class_missing_from_a_hash_split_warns_naming_the_split_and_classes(tmp_path):
  """36 images hash-split, the test split's all cats (the labels are chosen from the
  hash split each URI gets, which is stable)."""
  data = str(tmp_path / 'data')
  names = [f'img{i}.jpg' for i in range(36)]
  images(data, names)
  split = {n: splits_lib.hash_split(n, splits_lib.DEFAULT_BUCKETS) for n in names}
  assert 'test' in split.values()
  label = {n: 'cat' if split[n] == 'test' else ('dog', 'bird')[i % 2]
           for i, n in enumerate(names)}
  manifest = write_text(os.path.join(data, 'm.csv'),
                        ''.join(f'{n},{label[n]}\n' for n in names))
  out = str(tmp_path / 'out')
  done = run_cli('convert', manifest, out, '-q')
  assert done.returncode == 0, done.stderr[-3000:]
  tests = sum(s == 'test' for s in split.values())
  warning = warning_lines(done.stderr, 'Split test has no image of')
  assert len(warning) == 1, done.stderr
  assert (f'Split test has no image of 2 of the 3 classes: bird, dog (its {tests} records '
          f'hold {tests} cat)') in warning[0]
  assert 'ML_USE' in warning[0]
  assert any('Split test has no image of' in w for w in summary_of(out)['warnings'])


def test_splits_holding_every_class_do_not_warn(tmp_path):
  data = str(tmp_path / 'data')
  names = [f'img{i}.jpg' for i in range(8)]
  images(data, names)
  manifest = write_text(os.path.join(data, 'm.csv'), ''.join(
      f'{("TRAIN", "VALIDATION", "TEST", "TRAIN")[i // 2]},{n},{("cat", "dog")[i % 2]}\n'
      for i, n in enumerate(names)))
  out = str(tmp_path / 'out')
  done = run_cli('convert', manifest, out, '-q')
  assert done.returncode == 0 and done.stderr == '', done.stderr
  assert summary_of(out)['warnings'] == []


# --- A3: a split asked for that got no record ----------------------------------------------


@pytest.mark.parametrize('beam', [False, True], ids=['local', 'beam'])
def test_a_split_asked_for_that_gets_no_record_warns(tmp_path, beam):
  """`--splits train=8,val=1` on a manifest whose rows all have an ML_USE: they go to
  train, eval and test, and val stays empty."""
  data = str(tmp_path / 'data')
  names = [f'img{i}.jpg' for i in range(12)]
  images(data, names)
  manifest = write_text(os.path.join(data, 'm.csv'), ''.join(
      f'{("TRAIN", "VALIDATION", "TEST")[i % 3]},{n},{("cat", "dog")[i // 3 % 2]}\n'
      for i, n in enumerate(names)))
  out = str(tmp_path / 'out')
  extra = ['--beam-arg=--direct_num_workers=1'] if beam else []
  done = run_cli('convert', manifest, out, '-q', '--splits', 'train=8,val=1', *extra)
  assert done.returncode == 0, done.stderr[-3000:]
  # val got no record: not written (no folder), as the CLI and the warning say.
  assert '  val: no records (not written)\n' in done.stdout
  assert sorted(n for n in os.listdir(out) if n.startswith('Split-')) == [
      'Split-eval', 'Split-test', 'Split-train']
  warning = warning_lines(done.stderr, 'No record went to split')
  assert len(warning) == 1, done.stderr
  assert ('No record went to split val of --splits (splits) train=8,val=1: it is not '
          'written.') in warning[0]
  assert 'VALIDATION: eval' in warning[0]
  assert summary_of(out)['warnings'] == [warning[0][warning[0].index('No record'):]]


def test_a_hash_bucket_split_no_row_fell_in_warns_and_default_buckets_do_not(tmp_path):
  data = str(tmp_path / 'data')
  buckets = (('train', 8), ('val', 1))
  names = [n for n in (f'img{i}.jpg' for i in range(40))
           if splits_lib.hash_split(n, buckets) == 'train'][:10]
  images(data, names)
  manifest = write_text(os.path.join(data, 'm.csv'),
                        ''.join(f'{n},{("cat", "dog")[i % 2]}\n' for i, n in enumerate(names)))
  result = trc.convert(manifest, str(tmp_path / 'out'), splits={'train': 8, 'val': 1})
  assert result.records_per_split['val'] == 0
  assert [w for w in result.summary['warnings'] if w.startswith('No record went to split val')]
  # The default buckets are not asked for: eval and test empty as every row is TRAIN.
  every = write_text(os.path.join(data, 'train.csv'),
                     ''.join(f'TRAIN,{n},{("cat", "dog")[i % 2]}\n' for i, n in enumerate(names)))
  result = trc.convert(every, str(tmp_path / 'default'))
  assert result.records_per_split['eval'] == 0 and result.summary['warnings'] == []


# --- B1, B2, B4: the refusal of rows that all failed ----------------------------------------


def test_images_relative_to_another_folder_are_refused_naming_image_root(tmp_path):
  data = tmp_path / 'data'
  names = [f'img{i}.jpg' for i in range(36)]
  images(str(data / 'photos'), names)  # the manifest names them relative to photos/
  manifest = write_text(str(data / 'm.csv'),
                        ''.join(f'TRAIN,{n},{("cat", "dog")[i % 2]}\n'
                                for i, n in enumerate(names)))
  done = run_cli('convert', manifest, str(tmp_path / 'out'))
  lines = refusal_lines(done)
  assert lines[0].startswith('error: 36 of 36 manifest rows failed (100.00%: 36 missing)')
  assert '--max-error-ratio' in lines[0] and 'max_error_ratio=' not in done.stderr
  assert lines[3].startswith('  ... and 34 more. The relative paths were looked for under '
                             f'{data}; if the images live elsewhere, pass their folder as '
                             '--image-root'), lines[3]
  # Skipping every row would write nothing: no advice to raise the ratio.
  assert 'raise' not in done.stderr
  assert lines[4] == f'All failed rows: {tmp_path}/out/report/errors.jsonl'
  # As it says: with --image-root, every row converts.
  done = run_cli('convert', manifest, str(tmp_path / 'out'), '--image-root',
                 str(data / 'photos'), '-q')
  assert done.returncode == 0 and 'Wrote 36 records of 36 rows' in done.stdout, done.stderr


def test_every_row_failing_for_other_reasons_is_not_told_to_raise_the_ratio(tmp_path):
  data = tmp_path / 'data'
  for i in range(3):
    write_text(str(data / f'notes{i}.jpg'), 'not an image')
  manifest = write_text(str(data / 'm.csv'),
                        ''.join(f'TRAIN,notes{i}.jpg,cat\n' for i in range(3)))
  lines = refusal_lines(run_cli('convert', manifest, str(tmp_path / 'out')))
  assert lines[3] == '  ... and 1 more. Fix or remove these rows.', lines
  assert not any('--image-root' in l for l in lines)


def test_some_rows_failing_name_the_flag_to_raise_and_allowed_failures_name_it(tmp_path):
  data = tmp_path / 'data'
  images(str(data), ['a.jpg', 'b.jpg', 'c.jpg'])
  manifest = write_text(str(data / 'm.csv'), 'TRAIN,a.jpg,cat\nTRAIN,b.jpg,dog\n'
                        'TRAIN,c.jpg,cat\nTRAIN,gone.jpg,dog\n')
  lines = refusal_lines(run_cli('convert', manifest, str(tmp_path / 'out')))
  assert lines[0].startswith('error: 1 of 4 manifest rows failed (25.00%: 1 missing), more '
                             'than --max-error-ratio (max_error_ratio) 0.0 allows.'), lines
  assert lines[2] == 'Fix or remove these rows, or raise --max-error-ratio ' \
      '(max_error_ratio) to skip them.', lines
  done = run_cli('convert', manifest, str(tmp_path / 'out'), '--max-error-ratio', '0.5')
  assert done.returncode == 0, done.stderr
  allowed = warning_lines(done.stderr, '1 of 4 rows failed')
  assert allowed and 'allowed by --max-error-ratio (max_error_ratio) 0.5' in allowed[0], \
      done.stderr


# --- B3: a label,image_uri file ----------------------------------------------------------


def test_a_label_first_csv_is_refused_in_one_line_naming_the_layout(tmp_path):
  data = tmp_path / 'data'
  names = [f'img{i}.jpg' for i in range(36)]
  images(str(data), names)
  manifest = write_text(str(data / 'm.csv'),
                        ''.join(f'{("cat", "dog")[i % 2]},{n}\n' for i, n in enumerate(names)))
  done = run_cli('convert', manifest, str(tmp_path / 'out'))
  assert done.returncode == 1, done.stdout
  assert done.stderr.count('\n') == 1, done.stderr
  assert 'unknown ML_USE' not in done.stderr
  assert (f'error: {manifest}: the file has no header, and its first column holds labels '
          '(cat, dog) and the second image paths (img0.jpg, img1.jpg, img2.jpg): AutoML\'s '
          'order is [ML_USE,]IMAGE_URI,LABEL') in done.stderr
  assert 'e.g. "label,image_uri"' in done.stderr
  assert not (tmp_path / 'out').exists()
  # As it says: with that header, it converts.
  write_text(manifest, 'label,image_uri\n' + open(manifest, encoding='utf-8').read())
  done = run_cli('convert', manifest, str(tmp_path / 'out'), '-q')
  assert done.returncode == 0 and 'Wrote 36 records of 36 rows' in done.stdout, done.stderr


def test_ml_use_typos_still_fail_row_by_row(tmp_path):
  """A first column of ML_USE values, one of them mistyped: that row fails alone."""
  data = tmp_path / 'data'
  images(str(data), ['a.jpg', 'b.jpg'])
  manifest = write_text(str(data / 'm.csv'), 'TRAIN,a.jpg,cat\nTRIAN,b.jpg,dog\n')
  lines = refusal_lines(run_cli('convert', manifest, str(tmp_path / 'out')))
  assert '1 unknown_split' in lines[0] and "unknown ML_USE value 'TRIAN'" in lines[1], lines


# --- C: the README's load_dataset example shuffles -----------------------------------------


def _readme_load_dataset_call() -> str:
  text = open(os.path.join(ROOT, 'README.md'), encoding='utf-8').read()
  for block in re.findall(r'```python\n(.*?)```', text, re.S):
    for node in ast.parse(block).body:
      if isinstance(node, ast.Assign) and 'load_dataset' in ast.get_source_segment(block,
                                                                                 node.value):
        return ast.get_source_segment(block, node)
  raise AssertionError('no load_dataset call in the README')


def test_the_readmes_load_dataset_example_shuffles(tmp_path, monkeypatch):
  """Its call, on records written in manifest order (32 cats, then 32 dogs): the first
  batches are not all cats."""
  call = _readme_load_dataset_call()
  data = tmp_path / 'data'
  names = [f'img{i}.jpg' for i in range(64)]
  images(str(data), names)
  manifest = write_text(str(data / 'm.csv'), ''.join(
      f'TRAIN,{n},{"cat" if i < 32 else "dog"}\n' for i, n in enumerate(names)))
  monkeypatch.chdir(tmp_path)
  trc.convert(manifest, 'out')
  scope = {'trc': trc}
  exec(call, scope)  # pylint: disable=exec-used
  labels = [int(l) for _, batch in scope['ds'] for l in batch.numpy()]
  assert sorted(labels) == [0] * 32 + [1] * 32
  assert labels[:32] != [0] * 32, labels  # not manifest order
