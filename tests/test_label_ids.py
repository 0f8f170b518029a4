"""Label ids that keep their meaning: across runs and spans (a given label map, new labels
appended after its ids), when a label's rows all fail (it keeps its place), and where
data written with several label maps is read together (`load_dataset`)."""
import json
import os
import subprocess

import pytest

from images import write_image, write_text
from runs import CLI
from records import by_source_id, feature
import tfrecorder_component as trc
from tfrecorder_component.errors import UsageError
from tfrecorder_component.steps.policy import TooManyFailedRows

SPLITS = ['train', 'eval', 'test']


def run_cli(*args):
  return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=600,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))


def span(folder, labels, missing=()):
  """A CSV of 2 images per label (seeded apart), every row TRAIN; `missing` labels'
  images do not exist."""
  rows = ['split,image_uri,label']
  for label in labels:
    for k in range(2):
      name = f'{label}{k}.png'
      if label not in missing:
        write_image(os.path.join(folder, name), 'PNG', seed=hash((label, k)) % 1000)
      rows.append(f'TRAIN,{name},{label}')
  return write_text(os.path.join(folder, 'manifest.csv'), '\n'.join(rows) + '\n')


def ids_of(out):
  """{label text: the ids the records give it} over every split."""
  got = {}
  for _, example in by_source_id(str(out), SPLITS).values():
    for text, i in zip(feature(example, 'image/class/text'),
                       feature(example, 'image/class/label')):
      got.setdefault(text.decode(), set()).add(i)
  return got


def test_span_two_keeps_span_one_ids_and_appends_a_class_that_sorts_first(tmp_path):
  """Span 2 adds 'aardvark' (it sorts first) and has no 'dog': with span 1's output as
  its label map, every span-1 id stays, aardvark takes the next id, dog keeps its place,
  and the run says so. Without a map the ids would move (aardvark 0, cat 1, emu 2)."""
  one = span(str(tmp_path / 'span-1'), ['cat', 'dog', 'emu'])
  two = span(str(tmp_path / 'span-2'), ['aardvark', 'cat', 'emu'])
  assert run_cli('convert', one, str(tmp_path / 'out-1')).returncode == 0
  first = trc.read_label_map(str(tmp_path / 'out-1'))
  assert first == {'cat': 0, 'dog': 1, 'emu': 2}

  done = run_cli('convert', two, str(tmp_path / 'out-2'), '--label-map',
                 str(tmp_path / 'out-1'), '--append-new-labels')
  assert done.returncode == 0, done.stderr[-2000:]
  assert (f"Labels new to the label map {tmp_path / 'out-1' / 'label_map.pbtxt'}, appended: "
          "'aardvark' (id 3)") in done.stdout
  second = trc.read_label_map(str(tmp_path / 'out-2'))
  assert second == {'cat': 0, 'dog': 1, 'emu': 2, 'aardvark': 3}
  assert (tmp_path / 'out-2' / 'labels.txt').read_text() == 'cat\ndog\nemu\naardvark\n'
  assert ids_of(tmp_path / 'out-2') == {'aardvark': {3}, 'cat': {0}, 'emu': {2}}
  summary = json.loads((tmp_path / 'out-2' / 'report' / 'summary.json').read_text())
  assert summary['labels_appended'] == ['aardvark'] and summary['labels_left_out'] == []

  fresh = trc.convert(two, str(tmp_path / 'no-map'))  # what the map prevents
  assert trc.read_label_map(fresh.output_dir) == {'aardvark': 0, 'cat': 1, 'emu': 2}


def test_a_closed_label_map_fails_rows_of_labels_it_lacks(tmp_path):
  """--label-map without --append-new-labels: the map is the whole vocabulary; the
  aardvark rows fail with `unknown_label`, naming the label; the files are the map's."""
  two = span(str(tmp_path / 'span-2'), ['aardvark', 'cat', 'emu'])
  label_map = write_text(str(tmp_path / 'label_map.pbtxt'),
                         'item { name: "cat" id: 0 }\nitem {\n  id: 1\n  name: \'dog\'\n}\n'
                         '# a comment\nitem { name: "emu" id: 2 display_name: "Emu" }\n')
  done = run_cli('convert', two, str(tmp_path / 'out'), '--label-map', label_map,
                 '--max-error-ratio', '0.5')
  assert done.returncode == 0, done.stderr[-2000:]
  assert f"Labels not in the label map {label_map} (their rows failed, unknown_label): " \
         "'aardvark'" in done.stdout
  errors = [json.loads(l) for l in open(tmp_path / 'out' / 'report' / 'errors.jsonl')]
  assert [(e['row'], e['reason']) for e in errors] == [(2, 'unknown_label'), (3, 'unknown_label')]
  assert "'aardvark' is not in the given label map" in errors[0]['message']
  assert trc.read_label_map(str(tmp_path / 'out')) == {'cat': 0, 'dog': 1, 'emu': 2}
  assert ids_of(tmp_path / 'out') == {'cat': {0}, 'emu': {2}}

  # A labels.txt: line k is id k (classification); an empty line an id no label has.
  labels_txt = write_text(str(tmp_path / 'labels.txt'), 'emu\n\ncat\naardvark\n')
  result = trc.convert(two, str(tmp_path / 'txt'), label_map=labels_txt)
  assert trc.read_label_map(result.output_dir) == {'emu': 0, 'cat': 2, 'aardvark': 3}
  assert (tmp_path / 'txt' / 'labels.txt').read_text() == 'emu\n\ncat\naardvark\n'
  assert ids_of(tmp_path / 'txt') == {'aardvark': {3}, 'cat': {2}, 'emu': {0}}

  # A dict from Python, closed: the same refusal, through the error policy.
  with pytest.raises(TooManyFailedRows, match="row 2: 'aardvark0.png': unknown_label"):
    trc.convert(two, str(tmp_path / 'dict'), label_map={'cat': 5, 'emu': 6})


def test_a_malformed_or_missing_label_map_stops_before_any_row_is_read(tmp_path):
  two = span(str(tmp_path / 'span-2'), ['cat'])
  for name, text, message in (
      ('twice.pbtxt', 'item { name: "a" id: 1 }\nitem { name: "b" id: 1 }\n',
       'twice.pbtxt: item 2: id 1 is given twice'),
      ('no_id.pbtxt', 'item { name: "a" }\n', 'no_id.pbtxt: item 1 needs a quoted name and a '
       'whole-number id'),
      ('open.pbtxt', 'item { name: "a" id: 1\n', 'open.pbtxt: an `item {` is not closed')):
    path = write_text(str(tmp_path / name), text)
    done = run_cli('convert', two, str(tmp_path / 'out'), '--label-map', path)
    assert done.returncode == 2 and message in done.stderr, done.stderr[-2000:]
    assert 'Traceback' not in done.stderr and not (tmp_path / 'out').exists()
  done = run_cli('convert', two, str(tmp_path / 'out'), '--label-map', str(tmp_path / 'none'))
  assert done.returncode == 2 and f'no label map at {tmp_path / "none"}' in done.stderr
  with pytest.raises(UsageError, match='one id to several labels'):
    trc.convert(two, str(tmp_path / 'out'), label_map={'a': 1, 'b': 1})


def test_a_label_whose_every_row_failed_keeps_its_id(tmp_path):
  """'ant' sorts first and none of its images exists: it keeps id 0 (labels.txt line 0),
  cat and dog keep 1 and 2, and the run names it; records are those of a run of the
  same manifest whose ant images exist."""
  data = str(tmp_path / 'data')
  with_ant = span(data, ['ant', 'cat', 'dog'], missing=['ant'])
  done = run_cli('convert', with_ant, str(tmp_path / 'out'), '--max-error-ratio', '0.5')
  assert done.returncode == 0, done.stderr[-2000:]
  assert "Labels with no record (each keeps its id in label_map.pbtxt): 'ant'" in done.stdout
  assert (tmp_path / 'out' / 'labels.txt').read_text() == 'ant\ncat\ndog\n'
  assert trc.read_label_map(str(tmp_path / 'out')) == {'ant': 0, 'cat': 1, 'dog': 2}
  assert ids_of(tmp_path / 'out') == {'cat': {1}, 'dog': {2}}
  summary = json.loads((tmp_path / 'out' / 'report' / 'summary.json').read_text())
  assert summary['labels_left_out'] == ['ant']
  assert summary['label_ids'] == {'ant': 0, 'cat': 1, 'dog': 2}
  assert "keeps its id" in (tmp_path / 'out' / 'report' / 'report.html').read_text()


def test_load_dataset_refuses_outputs_whose_label_maps_disagree(tmp_path):
  """A window of spans read together: maps that extend one another are merged (every
  record keeps its meaning); maps that give a label two ids are refused in one line."""
  one = span(str(tmp_path / 'span-1'), ['cat', 'dog'])
  two = span(str(tmp_path / 'span-2'), ['aardvark', 'cat'])
  trc.convert(one, str(tmp_path / 'one'), splits={'train': 1})
  trc.convert(two, str(tmp_path / 'kept'), splits={'train': 1}, label_map=str(tmp_path / 'one'),
              append_new_labels=True)
  trc.convert(two, str(tmp_path / 'moved'), splits={'train': 1})
  train = lambda *names: [str(tmp_path / n / 'Split-train') for n in names]
  from tfrecorder_component.readers import dataset
  assert dataset.label_map(train('one', 'kept')) == {'cat': 0, 'dog': 1, 'aardvark': 2}
  batches = list(trc.load_dataset(train('one', 'kept'), batch_size=8, image_size=(8, 8)))
  assert sorted(int(i) for _, ids in batches for i in ids) == [0, 0, 0, 0, 1, 1, 2, 2]
  with pytest.raises(ValueError, match=r"the label maps disagree: id 0 is 'cat' in .*one and "
                     r"'aardvark' in .*moved; convert with one label map"):
    trc.load_dataset(train('one', 'moved'), batch_size=8)
