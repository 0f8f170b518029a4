"""Outside a pipeline: `convert`, the pandas accessor, the CLI and `load_dataset`, on real
image files and real Beam runs."""
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from PIL import Image

from images import write_image, write_text
from runs import CLI
from records import by_source_id, feature
import tfrecord_digest
import tfrecorder_component as trc
from tfrecorder_component.engines import run
from tfrecorder_component.io.tfrecord import read_shard
from tfrecorder_component.images import thumbnail

COLOURS = {'cat': (220, 30, 30), 'dog': (30, 30, 220)}


def solid(path: str, colour, size=(20, 14)) -> bytes:
  os.makedirs(os.path.dirname(path), exist_ok=True)
  Image.new('RGB', size, colour).save(path, 'PNG')
  with open(path, 'rb') as f:
    return f.read()


def shards(output_dir: str):
  return {os.path.relpath(p, output_dir): p
          for p in glob.glob(os.path.join(output_dir, 'Split-*', '*.gz'))}


def test_a_dataframe_converts_with_one_call_into_the_components_layout(tmp_path, monkeypatch):
  data = tmp_path / 'data'
  uris = [f'images/{i:02d}.{"jpg" if i % 2 else "png"}' for i in range(10)]
  for i, uri in enumerate(uris):
    write_image(str(data / uri), 'JPEG' if i % 2 else 'PNG', 'RGB', 10 + i, 12, seed=i)
  df = pd.DataFrame({'split': ['TRAIN', 'VALIDATION', 'TEST', 'UNASSIGNED', ''] * 2,
                     'image_uri': uris, 'label': ['cat', 'dog'] * 5,
                     'weight': [0.5 * i for i in range(10)]})
  monkeypatch.chdir(data)  # relative image paths are relative to the working directory

  result = df.tensorflow.to_tfrecord(output_dir=str(tmp_path / 'from_df'))

  assert result.rows_read == 10 and result.rows_failed == 0
  assert result.records_written == 10
  assert set(result.split_dirs) == {'train', 'eval', 'test'}
  assert result.records_per_label == {'cat': 5, 'dog': 5}
  out = tmp_path / 'from_df'
  assert (out / 'labels.txt').read_text() == 'cat\ndog\n'
  assert (out / 'label_map.pbtxt').exists() and (out / 'report' / 'summary.json').exists()
  records = by_source_id(str(out), ['train', 'eval', 'test'])
  assert set(records) == set(uris)  # source ids as written in the DataFrame
  for i, uri in enumerate(uris):
    example = records[uri][1]
    assert feature(example, 'image/encoded') == [(data / uri).read_bytes()]
    assert feature(example, 'image/class/label') == [i % 2]
    assert feature(example, 'weight') == pytest.approx([0.5 * i])

  # The same rows as a manifest file next to the images: byte-identical shards.
  write_text(str(data / 'manifest.csv'), df.to_csv(index=False))
  again = trc.convert(str(data / 'manifest.csv'), str(tmp_path / 'from_csv'))
  assert again.records_per_split == result.records_per_split
  a, b = shards(str(out)), shards(str(tmp_path / 'from_csv'))
  assert a.keys() == b.keys()
  for name in a:
    with open(a[name], 'rb') as fa, open(b[name], 'rb') as fb:
      assert fa.read() == fb.read(), name


def test_a_dataframe_without_an_image_column_is_a_clear_error(tmp_path):
  with pytest.raises(ValueError, match='needs an image URI column'):
    pd.DataFrame({'picture': ['a.jpg'], 'label': ['x']}).tensorflow.to_tfrecord(
        output_dir=str(tmp_path / 'out'))


@pytest.mark.parametrize('pandas_after', ['import pandas as pd',
                                          'from pandas import DataFrame; import pandas as pd',
                                          'import pandas.core.frame; import pandas as pd'])
def test_the_accessor_is_registered_when_pandas_is_imported_after_the_package(tmp_path,
                                                                            pandas_after):
  """`import tfrecorder_component` does not import pandas (half a second or more); the
  accessor is registered when pandas is imported afterwards, however it is imported,
  and converts; warnings are errors, so a failed registration fails the test."""
  solid(str(tmp_path / 'a.png'), COLOURS['cat'])
  code = f"""
import sys, tfrecorder_component
assert 'pandas' not in sys.modules, 'the package imported pandas'
{pandas_after}
df = pd.DataFrame({{'image_uri': [{str(tmp_path / 'a.png')!r}], 'label': ['cat']}})
print(df.tensorflow.to_tfrecord({str(tmp_path / 'out')!r}).records_written)
print(type(sys.meta_path[0]).__name__)
"""
  done = subprocess.run([sys.executable, '-W', 'error', '-c', code], capture_output=True,
                        text=True, cwd=str(tmp_path), check=False)
  assert done.returncode == 0, done.stderr
  written, first_finder = done.stdout.split()
  assert written == '1'
  assert first_finder != '_WhenPandasLoads'  # removed once pandas is imported


@pytest.mark.parametrize('by_split', [True, False])
def test_image_folders_by_label_and_by_split(tmp_path, by_split):
  root = tmp_path / 'photos'
  expected = {}
  for i in range(6):
    label = ('cat', 'dog')[i % 2]
    split = ('train', 'Validation', 'test')[i % 3]
    rel = f'{split}/{label}/{i}.png' if by_split else f'{label}/{i}.png'
    solid(str(root / rel), COLOURS[label])
    expected[rel] = (label, {'train': 'train', 'Validation': 'eval',
                                         'test': 'test'}[split] if by_split else None)
  (root / 'notes.md').write_text('not an image')  # skipped: not in a label folder
  result = trc.convert(str(root), str(tmp_path / 'out'), splits={'train': 1})
  assert result.records_written == 6 and result.rows_failed == 0
  records = by_source_id(str(tmp_path / 'out'), list(result.split_dirs))
  assert set(records) == set(expected)
  for uri, (label, split) in expected.items():
    assert records[uri][0] == (split or 'train')
    assert feature(records[uri][1], 'image/class/text') == [label.encode()]


def run_cli(*args, cwd=None):
  return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=600,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))


def test_validate_lists_bad_rows_and_exits_non_zero(tmp_path):
  data = tmp_path / 'data'
  solid(str(data / 'good.png'), COLOURS['cat'])
  write_text(str(data / 'text.png'), 'not an image')
  manifest = write_text(str(data / 'manifest.csv'),
                        'split,image_uri,label\nTRAIN,good.png,cat\nTRAIN,missing.png,cat\n'
                        'TEST,text.png,dog\nBOGUS,good.png,cat\n')
  report = tmp_path / 'report'
  done = run_cli('validate', manifest, '--report-dir', str(report))
  assert done.returncode == 1, done.stderr[-3000:]
  out = done.stdout
  assert '4 rows read, 1 valid, 3 failed' in out
  assert f"{manifest} row 3: 'missing.png': missing:" in out
  assert f"{manifest} row 4: 'text.png': not_an_image:" in out
  assert f"{manifest} row 5: 'good.png': unknown_split:" in out
  assert sorted(os.listdir(report)) == ['box_issues.jsonl', 'duplicates.jsonl',
                                        'errors.jsonl', 'report.html', 'summary.json']
  assert not glob.glob(str(tmp_path / '**' / 'Split-*'), recursive=True)  # no records

  clean = write_text(str(data / 'clean.csv'), 'TRAIN,good.png,cat\n')
  done = run_cli('validate', clean, cwd=str(tmp_path))
  assert done.returncode == 0, done.stdout + done.stderr[-3000:]
  assert '1 rows read, 1 valid, 0 failed' in done.stdout

  # Without --report-dir nothing is written (the working folder is as it was, no
  # temporary folder is left) and no path is named; --no-report is the same.
  import tempfile  # pylint: disable=g-import-not-at-top
  before = sorted(os.listdir(tmp_path))
  left = set(glob.glob(os.path.join(tempfile.gettempdir(), 'tfrecorder-validate-*')))
  for extra in ((), ('--no-report',)):
    done = run_cli('validate', manifest, *extra, cwd=str(tmp_path))
    assert done.returncode == 1
    assert 'All failed rows' not in done.stdout
    assert 'Keep every failed row and the report with --report-dir DIR' in done.stdout
    assert "row 3: 'missing.png': missing:" in done.stdout
    assert sorted(os.listdir(tmp_path)) == before
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), 'tfrecorder-validate-*'))) == left


@pytest.mark.parametrize('args, message', [
    (['--transform', '{"sise": [3, 3]}'],
     "unknown image transform field 'sise' (did you mean 'size'?)"),
    (['--transform', '{"size": [3'], 'the image transform is not JSON'),
    (['--format', 'cocoo'], "unknown manifest format 'cocoo'; one of automl_csv,"),
    (['--runner', 'DataflowRunner'], 'DataflowRunner needs project, region, temp_location'),
])
def test_cli_option_mistakes_are_one_line_before_any_run(tmp_path, args, message):
  solid(str(tmp_path / 'a.png'), COLOURS['cat'])
  manifest = write_text(str(tmp_path / 'm.csv'), 'TRAIN,a.png,cat\n')
  done = run_cli('convert', manifest, str(tmp_path / 'out'), *args)
  assert done.returncode == 2 and done.stderr.startswith(f'error: {message}'), done.stderr
  assert done.stderr.count('\n') == 1, done.stderr
  assert not os.path.exists(tmp_path / 'out')
  assert [n for n in os.listdir(tmp_path) if n.startswith('.')] == []  # no partial folder


def test_cli_source_and_output_mistakes_are_one_line(tmp_path):
  solid(str(tmp_path / 'a.png'), COLOURS['cat'])
  manifest = write_text(str(tmp_path / 'm.csv'), 'TRAIN,a.png,cat\n')
  not_coco = write_text(str(tmp_path / 'data.json'), '{"a": 1}')
  for args, code, message in (
      (['convert', str(tmp_path / 'absent.csv'), str(tmp_path / 'o1')], 2,
       f'error: {tmp_path}/absent.csv does not exist\n'),
      (['convert', manifest, manifest], 2,
       f'error: {manifest} is a file; the output must be a folder\n'),
      (['convert', not_coco, str(tmp_path / 'o2')], 1,
       f'error: {not_coco}: a COCO JSON file is an object with an "images" list\n'),
      (['inspect', str(tmp_path / 'absent')], 2, f'error: {tmp_path}/absent does not exist\n'),
  ):
    done = run_cli(*args)
    assert (done.returncode, done.stderr) == (code, message), args
  out = tmp_path / 'o3'
  assert run_cli('convert', manifest, str(out)).returncode == 0
  done = run_cli('inspect', str(out), '--split', 'holdout')
  assert (done.returncode, done.stderr) == (
      2, f"error: {out} has no split 'holdout'; its splits: train\n")
  # eval and test got no record: they are not written, and inspect does not offer them.
  done = run_cli('inspect', str(out), '--split', 'test')
  assert (done.returncode, done.stderr) == (
      2, f"error: {out} has no split 'test'; its splits: train\n")


def test_a_used_output_folder_is_refused_or_replaced_whole(tmp_path):
  data = tmp_path / 'data'
  for name in ('a', 'b', 'c', 'd'):
    solid(str(data / f'{name}.png'), COLOURS['cat'])
  first = write_text(str(data / 'first.csv'),
                     'split,image_uri,label\nTRAIN,a.png,cat\nTRAIN,b.png,cat\n')
  out = tmp_path / 'out'
  first_result = trc.convert(first, str(out), splits={'train': 1, 'holdout': 1})
  # No record went to holdout: it is not written (only train is).
  assert first_result.records_per_split == {'train': 2, 'holdout': 0, 'eval': 0, 'test': 0}
  assert list(first_result.split_dirs) == ['train']
  assert sorted(n for n in os.listdir(out) if n.startswith('Split-')) == ['Split-train']
  assert json.loads((out / 'examples.json').read_text())['split_names'] == ['train']
  before = {p: open(p, 'rb').read() for p in glob.glob(str(out / '**' / '*'), recursive=True)
            if os.path.isfile(p)}
  second = write_text(str(data / 'second.csv'), 'split,image_uri,label\nTEST,c.png,dog\n')
  with pytest.raises(ValueError, match=f'{out} holds an earlier output: pass overwrite=True'):
    trc.convert(second, str(out))

  # A failing overwrite leaves the old output as it was and keeps its report beside it.
  bad = write_text(str(data / 'bad.csv'), 'split,image_uri,label\nTEST,missing.png,dog\n')
  with pytest.raises(RuntimeError) as failure:
    trc.convert(bad, str(out), overwrite=True)
  kept = f'{out}.failed/report/errors.jsonl'
  assert f'All failed rows: {kept}' in str(failure.value)
  assert json.loads(open(kept, encoding='utf-8').readline())['reason'] == 'missing'
  after = {p: open(p, 'rb').read() for p in glob.glob(str(out / '**' / '*'), recursive=True)
           if os.path.isfile(p)}
  assert after == before

  # A successful overwrite replaces everything: no split of the old run is left.
  # The old Split-train is gone; the new run's empty train and eval are not written.
  result = trc.convert(second, str(out), overwrite=True)
  assert sorted(os.listdir(out)) == ['Split-test', '_SUCCESS',
                                     'examples.json', 'label_map.csv', 'label_map.pbtxt',
                                     'labels.txt', 'report']
  assert result.records_per_split == {'train': 0, 'eval': 0, 'test': 1}
  assert list(result.split_dirs) == ['test']
  index = json.loads((out / 'examples.json').read_text())
  assert (index['split_names'], index['records_per_split']) == (['test'], {'test': 1})
  assert sorted(os.listdir(tmp_path)) == ['data', 'out']  # no partial, old or failed folder

  # A failed run into a new folder leaves its report there, and no record.
  with pytest.raises(RuntimeError, match=f'All failed rows: {tmp_path}/new/report/errors.jsonl'):
    trc.convert(bad, str(tmp_path / 'new'))
  assert os.listdir(tmp_path / 'new') == ['report']
  # Only a failed run's report there: the next run takes the folder without overwrite.
  trc.convert(second, str(tmp_path / 'new'))
  assert sorted(os.listdir(tmp_path / 'new')) == [
      'Split-test', '_SUCCESS', 'examples.json',
      'label_map.csv', 'label_map.pbtxt', 'labels.txt', 'report']
  assert (tmp_path / 'new' / 'report' / 'errors.jsonl').read_text() == ''  # the new report
  with pytest.raises(ValueError, match='is a file; the output must be a folder'):
    trc.convert(second, first)
  empty = write_text(str(data / 'empty.csv'), 'split,image_uri,label\n')
  with pytest.raises(ValueError, match='the manifest has no rows'):
    trc.convert(empty, str(tmp_path / 'none'))
  assert sorted(os.listdir(tmp_path)) == ['data', 'new', 'out']  # no partial folder left


def test_a_run_that_fails_after_indexing_leaves_no_scratch_files(tmp_path, monkeypatch):
  """The rows' chunks and the duplicate index's sorted runs are written beside the report
  (report/.work); a run that fails while merging the runs (both on disk) still removes
  them, and so does one that ends."""
  data = tmp_path / 'data'
  for i in range(3):
    write_image(str(data / f'{i}.png'), 'PNG', 'RGB', 5, 5, seed=i)
  manifest = write_text(str(data / 'm.csv'), ''.join(f'TRAIN,{i}.png,cat\n' for i in range(3)))
  from tfrecorder_component.steps import duplicates  # pylint: disable=g-import-not-at-top
  seen = []

  def failing_slice(path, first, end):
    seen.append((os.listdir(os.path.dirname(path)),
                 os.listdir(os.path.join(os.path.dirname(os.path.dirname(path)), 'chunks'))))
    raise OSError('the disk went away')

  monkeypatch.setattr(duplicates, 'read_slice', failing_slice)
  with pytest.raises(Exception, match='the disk went away'):
    trc.convert(manifest, str(tmp_path / 'out'))
  runs, chunks = seen[0]  # the runs and chunks were on disk when it failed
  assert runs[0].startswith('run-') and chunks[0].startswith('chunk-')
  everything = [os.path.join(d, n) for d, dirs, names in os.walk(tmp_path) for n in dirs + names]
  assert [p for p in everything if '/.work' in p or '/run-' in p or '/chunk-' in p] == []
  monkeypatch.undo()
  trc.convert(manifest, str(tmp_path / 'again'))
  assert sorted(os.listdir(tmp_path / 'again' / 'report')) == [
      'box_issues.jsonl', 'duplicates.jsonl', 'errors.jsonl', 'report.html', 'summary.json']


def test_a_failed_dataframe_conversion_cites_a_manifest_that_exists(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  solid(str(tmp_path / 'a.png'), COLOURS['cat'])
  df = pd.DataFrame({'image_uri': ['a.png', 'missing.png', 'gone.png'],
                     'label': ['cat', 'dog\non two lines', 'dog']}, index=['p1', 'p2', 'p3'])
  with pytest.raises(RuntimeError) as failure:
    trc.convert(df, 'out')
  # Failed rows are cited by the DataFrame's index, not the generated manifest's lines;
  # a label over two lines is refused (labels.txt gives each label one line).
  assert "DataFrame index 'p2': 'missing.png': bad_label:" in str(failure.value)
  assert "DataFrame index 'p3': 'gone.png': missing:" in str(failure.value)
  errors_path = str(failure.value).split('All failed rows: ')[1].split('\n')[0]
  errors = sorted((json.loads(line) for line in open(errors_path, encoding='utf-8')),
                  key=lambda e: e['row'])
  assert [(e['index'], e['row'], e['uri']) for e in errors] == [
      ('p2', 4, 'missing.png'), ('p3', 5, 'gone.png')]  # p2's row ends on line 4
  assert os.path.exists(errors[0]['source'])  # the generated manifest, where the report is
  assert errors[0]['source'] == str(tmp_path / 'out' / 'report' / 'input_manifest.csv')
  page = (tmp_path / 'out' / 'report' / 'report.html').read_text(encoding='utf-8')
  assert '<td>DataFrame</td><td>index &#x27;p2&#x27;</td>' in page


def test_cli_refuses_columns_out_of_order_in_one_line(tmp_path):
  data = tmp_path / 'data'
  for name in ('a', 'b', 'c'):
    solid(str(data / f'{name}.png'), COLOURS['cat'])
  manifest = write_text(str(data / 'manifest.csv'), ''.join(
      f'{data / name}.png,{ml_use},cat\n'
      for name, ml_use in (('a', 'TRAIN'), ('b', 'TEST'), ('c', 'VALIDATION'))))
  done = run_cli('convert', manifest, str(tmp_path / 'out'))
  assert done.returncode == 1  # the data failed
  assert done.stderr.count('\n') == 1, done.stderr  # no traceback
  assert done.stderr.startswith(f'error: {manifest}: the file has no header')
  assert '"image_uri,split,label"' in done.stderr
  assert not glob.glob(str(tmp_path / 'out' / 'Split-*' / '*'))  # no record written


def test_cli_convert_then_inspect_writes_a_contact_sheet(tmp_path):
  root = tmp_path / 'photos'
  for i in range(5):
    solid(str(root / 'cat' / f'{i}.png'), COLOURS['cat'])
    solid(str(root / 'dog' / f'{i}.png'), COLOURS['dog'])
  out = tmp_path / 'out'
  done = run_cli('convert', str(root), str(out))
  assert done.returncode == 0, done.stderr[-3000:]
  assert 'Wrote 10 records of 10 rows' in done.stdout

  sheet = tmp_path / 'sheet.png'
  done = run_cli('inspect', str(out), '--contact-sheet', str(sheet), '--per-label', '4')
  assert done.returncode == 0, done.stderr[-3000:]
  assert 'Records per split:' in done.stdout and "'cat': 5" in done.stdout
  records = [json.loads(line.strip()) for line in done.stdout.splitlines()
             if line.strip().startswith('{')]
  assert len(records) == 3 and all('image/encoded' not in r for r in records)
  image = np.asarray(Image.open(sheet).convert('RGB'))
  tile, left = 96 + 4, 140
  assert image.shape == (2 * tile, left + 4 * tile, 3)
  # Row 0 is cat (red), row 1 dog (blue): the centre of every tile shows the image.
  for row, colour in enumerate((COLOURS['cat'], COLOURS['dog'])):
    for col in range(4):
      centre = image[row * tile + 48, left + col * tile + 48]
      assert tuple(centre) == colour


def test_load_dataset_reads_multi_label_unlabelled_and_detection_records(tmp_path):
  for i in range(4):
    solid(str(tmp_path / f'{i}.png'), COLOURS['cat'], size=(10, 8))
  multi = write_text(str(tmp_path / 'multi.csv'), 'TRAIN,0.png,cat,dog\nTRAIN,1.png,dog\n'
                     'TRAIN,2.png\nTRAIN,3.png,cat\n')
  trc.convert(multi, str(tmp_path / 'multi'))

  def one_batch(out, **kwargs):
    images, labels = next(iter(trc.load_dataset(str(tmp_path / out), 'train', batch_size=4,
                                                image_size=(4, 4), **kwargs)))
    assert images.shape == (4, 4, 4, 3)
    return labels

  hot = one_batch('multi')  # auto: a record with two labels makes it multi-hot
  assert hot.numpy().tolist() == [[1, 1], [0, 1], [0, 0], [1, 0]]
  assert one_batch('multi', labels='ragged').to_list() == [[0, 1], [1], [], [0]]
  with pytest.raises(tf.errors.InvalidArgumentError, match='several labels: load it with labels=multi_hot or labels=ragged'):
    one_batch('multi', labels='id')

  single = write_text(str(tmp_path / 'single.csv'), 'TRAIN,0.png,cat\nTRAIN,1.png,dog\n'
                      'TRAIN,2.png\nTRAIN,3.png,cat\n')
  trc.convert(single, str(tmp_path / 'single'))
  assert one_batch('single').numpy().tolist() == [0, 1, -1, 0]  # -1: no label

  boxes = write_text(str(tmp_path / 'boxes.csv'), 'TRAIN,0.png,cat,0.1,0.2,,,0.5,0.6,,\n'
                     'TRAIN,0.png,dog,0.2,0.2,,,0.4,0.4,,\nTRAIN,1.png,,,,,,,,,\n'
                     'TRAIN,2.png,dog,0,0,,,1,1,,\nTRAIN,3.png,,,,,,,,,\n')
  trc.convert(boxes, str(tmp_path / 'boxes'))
  objects = one_batch('boxes')  # auto: detection records
  assert np.allclose(objects['boxes'].to_list()[0], [[0.2, 0.1, 0.6, 0.5], [0.2, 0.2, 0.4, 0.4]])
  assert objects['boxes'].to_list()[1] == []
  assert objects['classes'].to_list() == [[1, 2], [], [2], []]  # 1-based, as the label map
  with pytest.raises(ValueError, match='labels must be one of auto, id, multi_hot'):
    one_batch('boxes', labels='onehot')


def test_load_dataset_feeds_keras_fit(tmp_path):
  root = tmp_path / 'photos'
  rng = np.random.default_rng(0)
  rows = []
  for i in range(48):
    label = ('cat', 'dog')[i % 2]
    noisy = tuple(int(np.clip(c + rng.integers(-20, 20), 0, 255)) for c in COLOURS[label])
    path = str(root / f'{i}.png')
    solid(path, noisy, size=(12 + i % 5, 10))
    rows.append(('TRAIN', path, label))
  df = pd.DataFrame(rows, columns=['split', 'image_uri', 'label'])
  df.tensorflow.to_tfrecord(output_dir=str(tmp_path / 'out'))

  ds = trc.load_dataset(str(tmp_path / 'out'), 'train', batch_size=8, image_size=(16, 16),
                        shuffle_buffer=64, cache=True)
  images, labels = next(iter(ds))
  assert images.shape == (8, 16, 16, 3) and images.dtype == tf.float32
  assert labels.dtype == tf.int64
  assert 0.0 <= float(tf.reduce_min(images)) and float(tf.reduce_max(images)) <= 1.0

  tf.keras.utils.set_random_seed(0)
  model = tf.keras.Sequential([tf.keras.Input((16, 16, 3)),
                               tf.keras.layers.GlobalAveragePooling2D(),
                               tf.keras.layers.Dense(2, activation='softmax')])
  model.compile(optimizer=tf.keras.optimizers.Adam(0.1),
                loss='sparse_categorical_crossentropy', metrics=['accuracy'])
  history = model.fit(ds, epochs=15, verbose=0)
  assert history.history['accuracy'][-1] == 1.0
  assert history.history['loss'][-1] < history.history['loss'][0]


def test_a_cached_shuffled_dataset_comes_in_another_order_each_epoch_in_every_label_mode(
    tmp_path):
  """Cached after a shuffle, every epoch would repeat the first one's order; the cache
  holds the decoded records and the shuffle follows it. Same elements, same structure
  as without the cache, whatever the label part is; with drop_remainder, no record is
  left out of every epoch."""
  for i in range(24):
    solid(str(tmp_path / f'{i}.png'), (10 * i, 0, 0), size=(6, 5))
  write_text(str(tmp_path / 'single.csv'), ''.join(
      f'TRAIN,{i}.png,{("cat", "dog")[i % 2]}\n' for i in range(24)))
  write_text(str(tmp_path / 'multi.csv'), ''.join(
      f'TRAIN,{i}.png,cat{",dog" if i % 3 == 0 else ""}\n' for i in range(24)))
  write_text(str(tmp_path / 'boxes.csv'), ''.join(
      f'TRAIN,{i}.png,cat,0.1,0.2,,,0.5,0.6,,\n' + (f'TRAIN,{i}.png,dog,0,0,,,1,1,,\n' * (i % 3))
      for i in range(24)))
  for name in ('single', 'multi', 'boxes'):
    trc.convert(str(tmp_path / f'{name}.csv'), str(tmp_path / name))
  for name, labels in (('single', 'id'), ('multi', 'multi_hot'), ('multi', 'ragged'),
                       ('boxes', 'boxes')):
    load = lambda **kw: trc.load_dataset(str(tmp_path / name), 'train', batch_size=5,
                                         image_size=(4, 4), labels=labels, **kw)
    plain, cached = load(), load(shuffle_buffer=24, cache=True)
    assert cached.element_spec == plain.element_spec, (labels, cached.element_spec)
    # An image's red channel (10 * i / 255, resized alike) names its record.
    epochs = [[round(float(r) * 25.5) for images, _ in cached for r in images[:, 0, 0, 0]]
              for _ in range(3)]
    assert all(sorted(e) == list(range(24)) for e in epochs), (labels, epochs)
    assert len({tuple(e) for e in epochs}) == 3, (labels, epochs)
  # drop_remainder drops the last partial batch of each epoch, a different one each time:
  # every record is in some epoch (missed by all 10: (4/24)**10 a record).
  dropping = trc.load_dataset(str(tmp_path / 'single'), 'train', batch_size=5,
                              image_size=(4, 4), shuffle_buffer=24, cache=True,
                              drop_remainder=True)
  epochs = [[[round(float(r) * 25.5) for r in images[:, 0, 0, 0]] for images, _ in dropping]
            for _ in range(10)]
  assert all([len(b) for b in e] == [5] * 4 and len(set(sum(e, []))) == 20 for e in epochs)
  assert {i for e in epochs for b in e for i in b} == set(range(24))


def test_detection_problems_show_in_the_summary_the_report_and_the_contact_sheets(tmp_path):
  from PIL import Image  # pylint: disable=g-import-not-at-top
  for name in ('a', 'b'):
    solid(str(tmp_path / f'{name}.png'), (128, 128, 128), size=(80, 60))
  manifest = write_text(str(tmp_path / 'boxes.csv'), ''.join(
      f'TRAIN,{uri},{label},{box},,\n' for uri, label, box in (
          ('a.png', 'cat', '0.25,0.25,,,0.75,0.75'),
          ('a.png', 'dog', '-0.2,0.1,,,0.5,0.5'),     # clipped at the left edge
          ('b.png', 'fox', '0.5,0.5,,,0.5,0.9'),      # empty: dropped
          ('b.png', 'dog', '1.2,1.2,,,1.5,1.5'))))    # outside the image: dropped
  out = tmp_path / 'out'
  done = run_cli('convert', manifest, str(out))
  assert done.returncode == 0, done.stderr[-3000:]
  assert ('Boxes: 2 written\n  2 dropped (1 empty, 1 outside_image)\n  1 clipped\n'
          f'  every one: {out}/report/box_issues.jsonl\n') in done.stdout
  assert len((out / 'report' / 'box_issues.jsonl').read_text().splitlines()) == 3

  page = (out / 'report' / 'report.html').read_text(encoding='utf-8')
  issues = page[page.index('<h2>Box issues</h2>'):page.index('<h2>Failed rows</h2>')]
  assert '2 boxes written; 3 dropped or clipped' in issues
  assert issues.count('<td>b.png</td>') == 2 and 'outside_image' in issues
  sheet = page[page.index('<table class="sheet">'):]
  sheet = sheet[:sheet.index('</table>')]
  # Every label of the records has a row: an image shows under each of its classes.
  assert [row.split('</td>')[0] for row in sheet.split('<tr><td>')[1:]] == [
      '(none)', 'cat', 'dog']

  done = run_cli('inspect', str(out), '--contact-sheet', str(tmp_path / 'sheet.png'))
  assert done.returncode == 0, done.stderr[-3000:]
  with Image.open(tmp_path / 'sheet.png') as im:
    image = im.convert('RGB')
  assert image.height == 3 * (96 + 4)  # rows: (none), cat, dog
  left, top = 140 + (96 - 80) // 2, 100 + (96 - 60) // 2  # a.png in the 'cat' row
  cat, dog = thumbnail.box_colour('cat'), thumbnail.box_colour('dog')
  assert cat != dog
  assert image.getpixel((left + round(0.25 * 79), top + 40)) == cat  # cat's box, left edge
  assert image.getpixel((left, top + 20)) == dog  # dog's box, clipped to x=0
  assert image.getpixel((left + 30, top + 38)) == (128, 128, 128)  # inside: the image


def test_dataframe_label_lists_integer_labels_and_a_readme_beside_label_folders(tmp_path,
                                                                              monkeypatch):
  monkeypatch.chdir(tmp_path)
  for name in ('a', 'b', 'c'):
    solid(str(tmp_path / f'{name}.png'), COLOURS['cat'])
  df = pd.DataFrame({'image_uri': ['a.png', 'b.png', 'c.png'],
                     'label': [['cat', 'dog'], ['dog'], []]})
  records = by_source_id(str(trc.convert(df, 'lists').output_dir), ['train', 'eval', 'test'])
  assert {uri: feature(ex, 'image/class/text') for uri, (_, ex) in records.items()} == {
      'a.png': [b'cat', b'dog'], 'b.png': [b'dog'], 'c.png': []}

  numbers = pd.DataFrame({'image_uri': ['a.png', 'b.png', 'c.png'], 'label': [10, 2, 1]})
  trc.convert(numbers, 'numbers')
  assert trc.read_label_map(str(tmp_path / 'numbers')) == {'1': 0, '2': 1, '10': 2}

  for label in ('cat', 'dog'):
    solid(str(tmp_path / 'photos' / label / f'{label}.png'), COLOURS[label])
  write_text(str(tmp_path / 'photos' / 'README.txt'), 'Photos of pets.\n')
  result = trc.convert(str(tmp_path / 'photos'), 'photos_out')
  assert result.records_per_label == {'cat': 1, 'dog': 1}


def test_cli_takes_splits_feature_types_limits_and_compression(tmp_path):
  for name in ('a', 'b'):
    solid(str(tmp_path / f'{name}.png'), COLOURS['cat'], size=(30, 20))
  manifest = write_text(str(tmp_path / 'm.csv'), 'image_uri,label,weight\na.png,cat,1\n'
                        'b.png,dog,2\n')
  out = tmp_path / 'out'
  done = run_cli('convert', manifest, str(out), '--splits', 'train=1,holdout=1',
                 '--feature-types', '{"weight": "float"}', '--compression-level', '6',
                 '--max-pixels', '700', '--max-bytes', '100000')
  assert done.returncode == 0, done.stderr[-3000:]
  assert '  holdout: ' in done.stdout
  records = by_source_id(str(out), ['train', 'holdout', 'eval', 'test'])
  assert feature(records['a.png'][1], 'weight') == [1.0]  # a float feature, as declared
  done = run_cli('convert', manifest, str(tmp_path / 'small'), '--max-pixels', '500')
  assert done.returncode == 1 and 'too_large' in done.stderr  # 30 x 20 = 600 pixels
  done = run_cli('convert', manifest, str(tmp_path / 'o'), '--compression-level', '12')
  assert done.returncode == 2 and 'invalid choice' in done.stderr


def test_cli_num_shards_spreads_the_same_records_over_that_many_shards(tmp_path):
  data = tmp_path / 'data'
  rows = []
  for i in range(10):
    solid(str(data / f'{i}.png'), COLOURS['cat' if i % 2 else 'dog'], size=(8 + i, 8))
    rows.append(f'TRAIN,{i}.png,{"cat" if i % 2 else "dog"}')
  manifest = write_text(str(data / 'm.csv'), '\n'.join(rows) + '\n')
  run = run_cli('convert', manifest, str(tmp_path / 'four'), '--num-shards', '4')
  assert run.returncode == 0, run.stderr
  train = sorted(os.listdir(tmp_path / 'four' / 'Split-train'))
  assert train == [f'data_tfrecord-0000{k}-of-00004.gz' for k in range(4)]
  sizes = [len(list(read_shard(str(tmp_path / 'four' / 'Split-train' / n)))) for n in train]
  assert sizes == [2, 3, 2, 3]  # 10 records: [k*10//4, (k+1)*10//4)
  # eval and test got no record: not written, even with --num-shards (no empty shards).
  assert sorted(n for n in os.listdir(tmp_path / 'four') if n.startswith('Split-')) == [
      'Split-train']
  index = json.loads((tmp_path / 'four' / 'examples.json').read_text())
  assert (index['split_names'], index['records_per_split']) == (['train'], {'train': 10})
  assert run.stdout.splitlines()[1:4] == [
      f'  train: 10 records in {tmp_path}/four/Split-train',
      '  eval: no records (not written)', '  test: no records (not written)']
  trc.convert(manifest, str(tmp_path / 'default'))
  assert tfrecord_digest.digest(str(tmp_path / 'four')) == tfrecord_digest.digest(
      str(tmp_path / 'default'))
  both = run_cli('convert', manifest, str(tmp_path / 'x'), '--num-shards', '2',
                 '--shard-size-mb', '100')
  assert both.returncode == 2 and 'not allowed with argument' in both.stderr


def test_the_direct_runner_uses_every_core_from_enough_rows_unless_told(tmp_path, monkeypatch):
  small = write_text(str(tmp_path / 'small.csv'), 'TRAIN,a.png,cat\n' * 10)
  large = write_text(str(tmp_path / 'large.csv'), 'TRAIN,a.png,cat\n' * run.PARALLEL_FROM_ROWS)
  monkeypatch.setattr(run, 'cores', lambda: 4)
  processes = ['--direct_running_mode=multi_processing', '--direct_num_workers=4']
  assert run.with_default_parallelism([], [large]) == processes
  assert run.with_default_parallelism([], [small]) == list(run.DEFAULT_DIRECT_ARGS)
  told = ['--direct_num_workers=2']
  assert run.with_default_parallelism(told, [large]) == told  # the user's choice stands
  dataflow = ['--runner=DataflowRunner', '--project=p']
  assert run.with_default_parallelism(dataflow, [large]) == dataflow
  monkeypatch.setattr(run, 'cores', lambda: 1)
  assert run.with_default_parallelism([], [large]) == list(run.DEFAULT_DIRECT_ARGS)


def test_a_run_on_every_core_writes_the_same_records(tmp_path, monkeypatch):
  data = tmp_path / 'data'
  for i in range(6):
    solid(str(data / f'{i}.png'), COLOURS['cat' if i % 2 else 'dog'], size=(8 + i, 8))
  manifest = write_text(str(data / 'm.csv'), ''.join(
      f'TRAIN,{i}.png,{"cat" if i % 2 else "dog"}\n' for i in range(6)))
  trc.convert(manifest, str(tmp_path / 'one'), beam_args=None)  # None: no arguments
  monkeypatch.setattr(run, 'PARALLEL_FROM_ROWS', 1)
  monkeypatch.setattr(run, 'cores', lambda: 2)
  trc.convert(manifest, str(tmp_path / 'two'))
  assert tfrecord_digest.digest(str(tmp_path / 'two')) == tfrecord_digest.digest(
      str(tmp_path / 'one'))


def test_cli_on_worker_processes_prints_no_notices(tmp_path):
  """Every core means worker processes: their start-up notices and the Google clients'
  FutureWarnings stay out of the user's terminal."""
  for i in range(4):
    solid(str(tmp_path / f'{i}.png'), COLOURS['cat'], size=(8 + i, 8))
  manifest = write_text(str(tmp_path / 'm.csv'), ''.join(f'TRAIN,{i}.png,cat\n' for i in range(4)))
  run = run_cli('convert', manifest, str(tmp_path / 'out'),
                '--beam-arg=--direct_running_mode=multi_processing',
                '--beam-arg=--direct_num_workers=2')
  assert run.returncode == 0, run.stderr
  assert 'Wrote 4 records' in run.stdout
  # Nothing but the run's own progress lines (a line every 10 s: Beam's worker processes
  # take that long to start here).
  assert all(re.fullmatch(r'\[\d+:\d\d:\d\d\.\d\] .*', line)
             for line in run.stderr.splitlines()), run.stderr


def test_estimate_rows_counts_lines_and_coco_images_across_read_pieces(tmp_path):
  mark = '"file_name"'
  # The 1 MB read boundary falls inside a mark.
  coco = '{"images": [' + ' ' * (2**20 - 15) + ','.join(
      f'{{{mark}: "{i}.jpg"}}' for i in range(3)) + ']}'
  coco_path = write_text(str(tmp_path / 'c.json'), coco)
  assert coco.index(mark) < 2**20 < coco.index(mark) + len(mark)
  csv_path = write_text(str(tmp_path / 'm.csv'), 'TRAIN,a.png,cat\n' * 5)
  voc = write_text(str(tmp_path / 'a.xml'), '<annotation/>')
  assert run.estimate_rows([coco_path, csv_path, voc]) == 3 + 5 + 1
  assert run.estimate_rows([csv_path], enough=2) >= 2


def test_estimate_rows_counts_each_format_s_own_rows(tmp_path):
  """Each format counts its rows as they are (`ManifestFormat.rows`), so that the run is
  sized for them: a YOLO data.yaml by the images its splits hold, a CVAT file by its
  <image> elements, a LabelMe file as one image, a Create ML list by its entries."""
  import format_datasets  # pylint: disable=g-import-not-at-top
  yolo = format_datasets.write_yolo(str(tmp_path / 'yolo'))
  cvat = format_datasets.write_cvat(str(tmp_path / 'cvat'))
  labelme = format_datasets.write_labelme(str(tmp_path / 'labelme'))
  createml = write_text(str(tmp_path / 'ml.json'), json.dumps(
      [{'image': f'{i}.jpg', 'annotations': [{'label': 'cat', 'coordinates': {
          'x': 5, 'y': 5, 'width': 4, 'height': 4}}]} for i in range(4)]))
  assert run.estimate_rows([yolo]) == len(format_datasets.IMAGES)
  assert run.estimate_rows([cvat]) == len(format_datasets.IMAGES)
  assert run.estimate_rows([str(tmp_path / 'labelme' / 'train' / 'a.json')]) == 1
  assert run.estimate_rows([createml]) == 4
  assert labelme
