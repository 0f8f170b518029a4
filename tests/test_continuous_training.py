"""Continuous training over spans (`pipelines/continuous.py`): each span's ImageExampleGen
takes the previous Examples' label map through its `label_map_examples` input, so a
class added in span 2 (sorting first) and one lost in span 3 move no id, and the
Trainer's 3-span window reads every record with its class's id. On LocalDagRunner with
SQLite ML Metadata, and compiled for Vertex AI, run task by task (`kubeflow.local_run`)."""
import json
import os

from tfx import v1 as tfx

from images import write_image, write_text
from runs import compile_with_defaults, only, run_spec
import tfrecorder_component as trc
from tfrecorder_component.readers import dataset
from tfrecorder_component.adapters.component import mlmd as mlmd_helpers
from pipelines import continuous

TRAINER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ct_trainer.py')
SPANS = {1: ['cat', 'dog', 'emu'], 2: ['aardvark', 'cat', 'dog', 'emu'],
         3: ['aardvark', 'cat', 'emu']}  # aardvark added in span 2, dog lost in span 3
PER_LABEL = 4


def write_span(base, span):
  """`base/span-<span>/manifest.csv`: PER_LABEL new PNGs per label of SPANS[span], one
  of them VALIDATION."""
  rows = []
  for label in SPANS[span]:
    for k in range(PER_LABEL):
      uri = os.path.join(base, 'images', f'{span}-{label}-{k}.png')
      write_image(uri, 'PNG', height=6 + k, width=8, seed=span * 100 + k)
      rows.append(f'{"VALIDATION" if k == 0 else "TRAIN"},{uri},{label}')
  write_text(os.path.join(base, 'manifests', f'span-{span}', 'manifest.csv'),
             '\n'.join(rows) + '\n')


def wrong_ids(uris):
  """Records of `uris` (every split) whose id is not their class text's id in the
  window's label map (their maps merged; load_dataset refuses maps that disagree)."""
  ids = dataset.label_map([os.path.join(u, 'Split-train') for u in uris])
  wrong, records = [], 0
  for uri in uris:
    for split in ('train', 'eval'):
      for ex in dataset_records(os.path.join(uri, f'Split-{split}')):
        records += 1
        text = ex.features.feature['image/class/text'].bytes_list.value[0].decode()
        if ids[text] != ex.features.feature['image/class/label'].int64_list.value[0]:
          wrong.append(text)
  return ids, records, wrong


def dataset_records(folder):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  files = sorted(tf.io.gfile.glob(os.path.join(folder, '*')))
  return [tf.train.Example.FromString(r.numpy())
          for r in tf.data.TFRecordDataset(files, compression_type='GZIP')]


EXPECTED = {'cat': 0, 'dog': 1, 'emu': 2, 'aardvark': 3}


def test_three_spans_on_local_dag_runner_keep_every_id(tmp_path):
  config = tfx.orchestration.metadata.sqlite_metadata_connection_config(
      str(tmp_path / 'metadata.db'))
  pipeline = continuous.create_pipeline(
      'continuous', str(tmp_path / 'root'), str(tmp_path / 'manifests'),
      module_file=TRAINER, metadata_connection_config=config)
  for span in (1, 2, 3):
    write_span(str(tmp_path), span)
    tfx.orchestration.LocalDagRunner().run(pipeline)

  examples = mlmd_helpers.outputs_of(config, 'continuous', 'ImageExampleGen', 'examples')
  assert [e.span for e in examples] == [1, 2, 3]
  assert [trc.read_label_map(e.uri) for e in examples] == [
      {'cat': 0, 'dog': 1, 'emu': 2}, EXPECTED, EXPECTED]
  third = examples[-1]
  assert list(third.get_json_value_custom_property('labels_appended')) == []
  assert list(third.get_json_value_custom_property('labels_left_out')) == []
  assert list(examples[1].get_json_value_custom_property('labels_appended')) == ['aardvark']
  assert third.get_string_custom_property('label_map_given') == os.path.join(
      examples[1].uri, 'label_map.pbtxt')

  [model] = mlmd_helpers.outputs_of(config, 'continuous', 'Trainer', 'model')[-1:]
  with open(os.path.join(model.uri, 'Format-Serving', 'ids.json')) as f:
    seen = json.load(f)
  assert len(seen['train_files']) == 3  # the window: spans 1, 2 and 3
  assert seen['label_map'] == EXPECTED
  train_rows = sum(len(labels) * (PER_LABEL - 1) for labels in SPANS.values())
  assert seen['records'] == seen['read'] == train_rows
  assert seen['wrong'] == []
  ids, records, wrong = wrong_ids([e.uri for e in examples])
  assert (ids, records, wrong) == (EXPECTED, train_rows + len(SPANS[1]) + len(SPANS[2])
                                   + len(SPANS[3]), [])


def test_three_spans_compiled_for_vertex_keep_every_id(tmp_path):
  spec_path = tmp_path / 'continuous.json'
  compile_with_defaults(continuous.create_pipeline(
      'continuous', str(tmp_path / 'root'), str(tmp_path / 'manifests'), for_vertex=True),
      spec_path)
  uris = []
  for span in (1, 2, 3):
    write_span(str(tmp_path), span)
    done, result = run_spec(spec_path, tmp_path / 'work')
    assert done.returncode == 0, done.stderr[-4000:]
    assert {t: s['state'] for t, s in result['tasks'].items()} == dict.fromkeys(
        ['latest_examples', 'ImageExampleGen', 'StatisticsGen', 'SchemaGen',
         'ExampleValidator'], 'SUCCEEDED')
    examples = only(result['tasks']['ImageExampleGen']['outputs'], 'examples')
    assert examples['metadata']['span'] == span
    uris.append(examples['uri'])
  assert [trc.read_label_map(u) for u in uris] == [
      {'cat': 0, 'dog': 1, 'emu': 2}, EXPECTED, EXPECTED]
  ids, records, wrong = wrong_ids(uris)
  assert ids == EXPECTED and wrong == []
  assert records == sum(len(labels) * PER_LABEL for labels in SPANS.values())
