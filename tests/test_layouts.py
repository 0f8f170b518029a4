"""Output layouts beside TFX's shards (`tfrecorder_component/output/layouts`): the registry, the
run over the finished shards (local worker processes and Beam), the `tfrecord` layout
(uncompressed shards + `.idx`) and `examples.json`, the output's index. Each other
layout has its own test file, read back by its loader."""
import glob
import json
import os
import struct

import pandas as pd
import pytest
import tensorflow as tf

import tfrecorder_component as trc
from images import write_image
from tfrecorder_component.adapters.cli import main
from tfrecorder_component.errors import UsageError
from tfrecorder_component.output.layouts import base, check_layouts


def _frame(path, offset, size):
  """The record framed at `offset` (`size` bytes with length and CRCs) of a shard."""
  with open(path, 'rb') as f:
    f.seek(offset)
    data = f.read(size)
  length, = struct.unpack('<Q', data[:8])
  assert size == length + 16
  return data[12:12 + length]


def _rows(tmp_path, n=30):
  rows = []
  for i in range(n):
    path = str(tmp_path / 'images' / f'{i}.jpg')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_image(path, height=10 + i % 4, width=12)
    rows.append({'split': ['TRAIN', 'VALIDATION'][i % 3 == 0], 'image_uri': path,
                 'label': ['cat', 'dog', 'bird'][i % 3], 'weight': float(i)})
  return pd.DataFrame(rows)


def _tfx_records(split_dir):
  shards = sorted(glob.glob(os.path.join(split_dir, 'data_tfrecord-*.gz')))
  return [[r.numpy() for r in tf.data.TFRecordDataset(s, compression_type='GZIP')]
          for s in shards]


@pytest.mark.parametrize('beam_args', [(), ('--direct_num_workers=1',)], ids=['local', 'beam'])
def test_tfrecord_layout_holds_each_tfx_shard_uncompressed_with_its_index(tmp_path, beam_args):
  out = tmp_path / 'out'
  trc.convert(_rows(tmp_path), str(out), layouts=['tfrecord'], num_shards=2,
              beam_args=beam_args)
  index = json.loads((out / 'examples.json').read_text())
  assert index['layouts']['tfrecord']['folder'] == 'tfrecord'
  assert index['split_names'] == ['train', 'eval']
  for split in ('train', 'eval'):
    tfx = _tfx_records(str(out / f'Split-{split}'))
    assert len(tfx) == 2
    names = index['layouts']['tfrecord']['files'][split]
    assert names == [f'images-{split}.tfrecord-{k:05d}-of-00002' for k in range(2)]
    for k, name in enumerate(names):
      path = str(out / 'tfrecord' / name)
      read = [r.numpy() for r in tf.data.TFRecordDataset(path)]  # uncompressed
      assert read == tfx[k]  # shard k: TFX shard k's records, in order
      lines = (out / 'tfrecord' / (name + '.idx')).read_text().splitlines()
      assert [_frame(path, *map(int, line.split())) for line in lines] == tfx[k]
      assert sum(int(line.split()[1]) for line in lines) == os.path.getsize(path)
  assert sum(len(s) for s in _tfx_records(str(out / 'Split-train'))) == 20
  # No record went to test: its TFX folder is not written (not even --num-shards' empty
  # shards), while the layout keeps its own rule, written from those shards in the run:
  # as many empty shards, each with an empty index.
  assert sorted(n for n in os.listdir(out) if n.startswith('Split-')) == [
      'Split-eval', 'Split-train']
  names = index['layouts']['tfrecord']['files']['test']
  assert names == [f'images-test.tfrecord-{k:05d}-of-00002' for k in range(2)]
  for name in names:
    assert (out / 'tfrecord' / name).read_bytes() == b''
    assert (out / 'tfrecord' / (name + '.idx')).read_text() == ''


def test_layouts_leave_the_tfx_shards_byte_identical(tmp_path):
  rows = _rows(tmp_path)
  trc.convert(rows, str(tmp_path / 'plain'))
  trc.convert(rows, str(tmp_path / 'more'), layouts=['tfrecord'])
  plain = sorted(glob.glob(str(tmp_path / 'plain' / 'Split-*' / '*.gz')))
  assert plain and [open(p, 'rb').read() for p in plain] == [
      open(p.replace('/plain/', '/more/'), 'rb').read() for p in plain]


def test_examples_json_indexes_splits_counts_and_the_records_features(tmp_path):
  out = tmp_path / 'out'
  result = trc.convert(_rows(tmp_path), str(out), splits={'zeta': 1})
  index = json.loads((out / 'examples.json').read_text())
  # The output's splits, in order: zeta and test got no record and are not written.
  assert index['split_names'] == ['train', 'eval']
  assert index['records_per_split'] == {'train': 20, 'eval': 10}
  assert result.records_per_split == {'zeta': 0, 'train': 20, 'eval': 10, 'test': 0}
  assert result.split_dirs == {s: str(out / f'Split-{s}') for s in ('train', 'eval')}
  assert sorted(n for n in os.listdir(out) if n.startswith('Split-')) == [
      'Split-eval', 'Split-train']
  assert index['task'] == 'classification' and index['layouts'] == {}
  features = index['features']
  assert features == result.summary['features']
  assert features['image/encoded'] == {'type': 'bytes', 'records': 30, 'scalar': True}
  assert features['image/height'] == {'type': 'int64', 'records': 30, 'scalar': True}
  assert features['weight'] == {'type': 'float', 'records': 30, 'scalar': True}
  assert features['image/class/label'] == {'type': 'int64', 'records': 30, 'scalar': True}
  ex = tf.train.Example.FromString(_tfx_records(str(out / 'Split-train'))[0][0])
  assert sorted(features) == sorted(ex.features.feature)


def test_examples_json_tells_list_features_of_detection_records(tmp_path):
  images = tmp_path / 'images'
  images.mkdir()
  coco = {'images': [], 'annotations': [],
          'categories': [{'id': 1, 'name': 'cat'}, {'id': 2, 'name': 'dog'}]}
  for i in range(4):
    write_image(str(images / f'{i}.jpg'), height=20, width=20)
    coco['images'].append({'id': i, 'file_name': f'{i}.jpg', 'width': 20, 'height': 20})
    for j in range(i):  # 0, 1, 2, 3 objects
      coco['annotations'].append({'id': 10 * i + j, 'image_id': i, 'category_id': 1 + j % 2,
                                  'bbox': [1, 1, 5, 5], 'area': 25, 'iscrowd': 0})
  (images / 'coco.json').write_text(json.dumps(coco))
  out = tmp_path / 'out'
  trc.convert(str(images / 'coco.json'), str(out), layouts=['tfrecord'])
  features = json.loads((out / 'examples.json').read_text())['features']
  assert features['image/object/bbox/xmin'] == {'type': 'float', 'records': 4, 'scalar': False}
  assert features['image/object/class/label']['scalar'] is False
  assert features['image/encoded']['scalar'] is True
  assert json.loads((out / 'examples.json').read_text())['task'] == 'detection'


def test_a_layout_is_chosen_by_name_with_what_it_needs(tmp_path, capsys):
  assert check_layouts(['tfrecord']) == ('tfrecord',)
  assert check_layouts('tfrecord,tfrecord') == ('tfrecord',)
  with pytest.raises(UsageError, match="unknown output layout 'tfrecords'; one of tfrecord"):
    check_layouts(['tfrecords'])
  with pytest.raises(UsageError, match='unknown output layout'):
    trc.convert(_rows(tmp_path, 3), str(tmp_path / 'out'), layouts=['csv'])
  assert not (tmp_path / 'out' / '_SUCCESS').exists()
  src = tmp_path / 'rows.csv'
  _rows(tmp_path, 3).to_csv(src, index=False)
  assert main(['convert', str(src), str(tmp_path / 'cli'), '--layout', 'nope']) == 2
  assert "unknown output layout 'nope'" in capsys.readouterr().err
  capsys.readouterr()
  assert main(['convert', str(src), str(tmp_path / 'cli'), '--layout', 'tfrecord']) == 0
  assert f'  layout tfrecord: {tmp_path / "cli" / "tfrecord"}\n' in capsys.readouterr().out
  assert glob.glob(str(tmp_path / 'cli' / 'tfrecord' / '*.idx'))


def test_a_layout_with_typed_columns_refuses_a_key_of_two_types():
  ctx = base.LayoutContext('/out', ('train',), {
      'a': {'type': 'bytes|int64', 'records': 2, 'scalar': True},
      'b': {'type': 'float', 'records': 2, 'scalar': True}}, {}, 'classification')
  base.check_types(['tfrecord'], ctx)  # raw records: any types
  with pytest.raises(UsageError, match=r'the parquet layout needs one type a feature, but a '
                     r'is bytes\|int64: declare'):
    base.check_types(['parquet'], ctx)


def test_label_names_by_id_from_zero_for_every_task():
  ctx = lambda task, ids: base.LayoutContext('/o', (), {}, ids, task)
  assert ctx('classification', {'cat': 0, 'dog': 1}).label_names() == ['cat', 'dog']
  assert ctx('detection', {'cat': 1, 'dog': 3}).label_names() == ['cat', 'unused_2', 'dog']


def test_layouts_written_by_several_worker_processes_match_one_and_a_failure_is_told(tmp_path):
  """The local run writes the layouts on its worker processes, a shard a task: the same
  files as one process; a shard that cannot be read fails the run with its cause."""
  from tfrecorder_component.engines.local import write  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.output import examples_json as index_lib  # pylint: disable=g-import-not-at-top
  out = tmp_path / 'out'
  trc.convert(_rows(tmp_path), str(out), layouts=['tfrecord'], num_shards=3)
  one = {p: open(p, 'rb').read() for p in glob.glob(str(out / 'tfrecord' / '*'))}
  index = index_lib.read_index(str(out))
  summary = json.loads((out / 'report' / 'summary.json').read_text())
  ctx = base.LayoutContext(str(out), tuple(index['split_names']), summary['features'],
                           summary['label_ids'], 'classification')
  split_dirs = {s: str(out / f'Split-{s}') for s in index['split_names']}
  shards = [(*job, None, -1) for job in base.shard_jobs(split_dirs)]
  # test got no record: its TFX shards are gone after the run (not written), and its
  # layout files, written from them in the run, are 3 empty shards and indexes. The
  # written splits' files are written again from their TFX shards.
  assert index['split_names'] == ['train', 'eval']
  empty = {p: b for p, b in one.items() if '/images-test.' in p}
  assert sorted(os.path.basename(p) for p in empty) == sorted(
      f'images-test.tfrecord-{k:05d}-of-00003{idx}' for k in range(3) for idx in ('', '.idx'))
  assert set(empty.values()) == {b''}
  for path in one:
    if path not in empty:
      os.remove(path)
  info = write.write_layouts(('tfrecord',), ctx, shards, {}, 2)
  written = index['layouts']['tfrecord']
  assert info == {'tfrecord': {**written, 'files': {
      s: written['files'][s] for s in ('train', 'eval')}}}
  assert {p: open(p, 'rb').read() for p in glob.glob(str(out / 'tfrecord' / '*'))} == one
  shard = sorted(glob.glob(str(out / 'Split-train' / '*.gz')))[1]
  with open(shard, 'r+b') as f:
    f.truncate(os.path.getsize(shard) // 2)
  with pytest.raises(EOFError):
    write.write_layouts(('tfrecord',), ctx, shards, {}, 2)


def _available_layouts():
  names = []
  for name in ('tfrecord', 'tfds', 'array_record', 'parquet'):
    try:
      check_layouts([name])
      names.append(name)
    except UsageError:
      pass
  return names


def _layout_files(out):
  return {os.path.relpath(p, out): open(p, 'rb').read()
          for name in ('tfrecord', 'tfds', 'array_record', 'parquet')
          for p in glob.glob(str(out / name / '**'), recursive=True) if os.path.isfile(p)}


@pytest.mark.parametrize('second_label_at', [None, 100])
def test_layouts_written_as_records_are_converted_equal_those_written_from_the_shards(
    tmp_path, caplog, second_label_at):
  """The local run writes the layouts as it converts, each typed layout (tfds, parquet)
  with the record keys of its shard's first records. Its files are the bytes the run
  over the finished TFX shards writes; a shard whose records change those keys on the
  way (a second label from row 100 makes `image/class/label` a list column) is written
  again from its TFX shard."""
  from tfrecorder_component.engines.local import write  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.output import examples_json as index_lib  # pylint: disable=g-import-not-at-top
  names = _available_layouts()
  assert 'parquet' in names and 'tfrecord' in names
  lines = []
  for i in range(150):
    path = str(tmp_path / 'images' / f'{i}.jpg')
    write_image(path, height=10 + i % 4, width=12)
    labels = ['cat', 'dog'][i % 2] + (',bird' if i == second_label_at else '')
    lines.append(f'{"TRAIN" if i % 5 else "TEST"},{path},{labels}')
  manifest = tmp_path / 'manifest.csv'
  manifest.write_text('\n'.join(lines) + '\n')
  out = tmp_path / 'out'
  caplog.set_level('INFO')
  trc.convert(str(manifest), str(out), layouts=names)
  inline = _layout_files(out)
  # The empty eval split's shard; with a second label, the parquet files of the test
  # shard (whose records change on the way) and of the train shard (whose records all
  # hold one label, where the run's column is a list).
  rewritten = 1 if second_label_at is None else 3
  assert f'written ({rewritten} of 3 shard(s) from the TFX shards)' in caplog.text
  assert not glob.glob(str(out / '*' / '.part-*'))
  index = index_lib.read_index(str(out))
  summary = json.loads((out / 'report' / 'summary.json').read_text())
  assert summary['features']['image/class/label']['scalar'] == (second_label_at is None)
  ctx = base.LayoutContext(str(out), tuple(index['split_names']), summary['features'],
                           summary['label_ids'], 'classification')
  split_dirs = {s: str(out / f'Split-{s}') for s in index['split_names']}
  # eval got no record: its TFX folder is gone after the run (not written), and each
  # layout's eval files (tfds leaves an empty split out) stay as the run wrote them.
  assert index['split_names'] == ['train', 'test'] and not (out / 'Split-eval').exists()
  empty = {f'{written["folder"]}/{n}{suffix}' for written in index['layouts'].values()
           for n in written['files'].get('eval', ())
           for suffix in ('', written.get('index_suffix')) if suffix is not None}
  assert 'eval' not in index['layouts'].get('tfds', {}).get('files', {})
  assert empty == {path for name, path in (
      ('tfrecord', 'tfrecord/images-eval.tfrecord-00000-of-00001'),
      ('tfrecord', 'tfrecord/images-eval.tfrecord-00000-of-00001.idx'),
      ('array_record', 'array_record/eval.array_record-00000-of-00001'),
      ('parquet', 'parquet/eval-00000-of-00001.parquet')) if name in names}
  assert empty <= set(inline)
  for path in inline:
    if path not in empty and not path.endswith('.json') and not path.endswith('README.md'):
      os.remove(out / path)
  shards = [(*job, None, -1) for job in base.shard_jobs(split_dirs)]
  write.write_layouts(tuple(names), ctx, shards, {}, 1)
  assert _layout_files(out) == inline
