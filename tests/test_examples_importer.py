"""examples_importer: an output of `convert()` brought into a TFX pipeline as `Examples`,
run on LocalDagRunner with the embedded SQLite ML Metadata store, read at definition time
from local disk and from gs:// (fake-gcs-server on loopback), compiled for Vertex AI."""
import json
import os
import shutil

import pandas
import pytest
import tensorflow_data_validation as tfdv
from tfx import v1 as tfx
from tfx.types import artifact_utils

from images import write_image
from runs import run  # LocalDagRunner on SQLite, as the other pipeline tests
import tfrecorder_component as trc
from tfrecorder_component.adapters.component.importer import examples_importer
from tfrecorder_component.adapters.component.mlmd import latest_output

# convert's splits written here: no record went to test, so it is not written.
SPLITS = ['train', 'eval']


def convert(root, out, train, evaluate, overwrite=False):
  """`train` + `evaluate` small JPEGs (split column TRAIN / VALIDATION) converted to `out`."""
  rows = []
  for i in range(train + evaluate):
    path = os.path.join(root, f'{train}-{evaluate}', f'img{i}.jpg')
    write_image(path, 'JPEG', height=8 + i % 3, width=10, seed=i)
    rows.append({'split': 'TRAIN' if i < train else 'VALIDATION', 'image_uri': path,
                 'label': ('cat', 'dog')[i % 2]})
  result = trc.convert(pandas.DataFrame(rows), out, overwrite=overwrite)
  assert result.records_per_split == {'train': train, 'eval': evaluate, 'test': 0}
  assert list(result.split_dirs) == SPLITS
  assert sorted(n for n in os.listdir(out) if n.startswith('Split-')) == [
      'Split-eval', 'Split-train']
  return out


@pytest.fixture(scope='module')
def output(tmp_path_factory):
  root = str(tmp_path_factory.mktemp('converted'))
  return convert(root, os.path.join(root, 'out'), 20, 10)


def test_statistics_gen_and_schema_gen_take_the_imported_output(tmp_path, monkeypatch):
  data = str(tmp_path / 'data')
  convert(data, str(tmp_path / 'out'), 20, 10)
  monkeypatch.chdir(tmp_path)
  importer = examples_importer('out/').with_id('examples')  # relative: made absolute
  stats = tfx.components.StatisticsGen(examples=importer.outputs['result'])
  schema = tfx.components.SchemaGen(statistics=stats.outputs['statistics'])
  pipeline = str(tmp_path / 'tfx')
  config = run([importer, stats, schema], pipeline, 'imported')

  examples = latest_output(config, 'imported', 'examples', 'result')
  assert examples.uri == str(tmp_path / 'out')
  assert examples.split_names == artifact_utils.encode_split_names(SPLITS)
  assert artifact_utils.decode_split_names(examples.split_names) == SPLITS
  assert (examples.span, examples.version) == (0, 0)
  assert examples.get_string_custom_property('payload_format') == 'FORMAT_TF_EXAMPLE'
  assert examples.get_string_custom_property('file_format') == 'tfrecords_gzip'
  statistics = latest_output(config, 'imported', 'StatisticsGen', 'statistics')
  assert artifact_utils.decode_split_names(statistics.split_names) == SPLITS
  for split, count in zip(SPLITS, (20, 10)):
    found = tfdv.load_stats_binary(os.path.join(
        artifact_utils.get_split_uri([statistics], split), 'FeatureStats.pb'))
    [dataset] = found.datasets
    assert dataset.num_examples == count, split
    label = tfdv.get_feature_stats(dataset, tfdv.FeaturePath(['image/class/label']))
    assert label.num_stats.min == 0 and label.num_stats.max == 1
  assert not os.path.exists(os.path.join(statistics.uri, 'Split-test'))
  schema_artifact = latest_output(config, 'imported', 'SchemaGen', 'schema')
  inferred = tfdv.load_schema_text(os.path.join(schema_artifact.uri, 'schema.pbtxt'))
  # No empty split's statistics merged in: no feature deprecated.
  assert [f.name for f in inferred.feature if f.lifecycle_stage] == []
  assert tfdv.get_feature(inferred, 'image/class/label').type == 2  # INT
  assert tfdv.get_feature(inferred, 'image/encoded').type == 1  # BYTES

  # The same folder imported again is the same artifact (TFX's Importer reuses it); the
  # folder converted again with other records is a new one, so nothing downstream reuses
  # results cached for the old records. An Importer alone runs in about a second.
  again = examples_importer(str(tmp_path / 'out')).with_id('examples')
  run([again], pipeline, 'imported')
  assert latest_output(config, 'imported', 'examples', 'result').id == examples.id
  convert(data, str(tmp_path / 'out'), 12, 6, overwrite=True)
  changed = examples_importer(str(tmp_path / 'out')).with_id('examples')
  run([changed], pipeline, 'imported')
  new = latest_output(config, 'imported', 'examples', 'result')
  assert new.id != examples.id and new.uri == examples.uri
  assert new.split_names == examples.split_names


def test_properties_are_the_outputs_index(output):
  importer = examples_importer(output, span=3, version=2, custom_properties={'source': 'x'})
  channel = importer.outputs['result']
  assert channel.type is tfx.types.standard_artifacts.Examples
  assert importer.exec_properties['artifact_uri'] == output
  assert not importer.exec_properties['reimport']
  with open(os.path.join(output, 'examples.json'), encoding='utf-8') as f:
    index = json.load(f)
  assert channel.additional_properties == {
      'split_names': json.dumps(index['split_names']), 'span': 3, 'version': 2}
  custom = channel.additional_custom_properties
  assert custom['source'] == 'x'
  lines = custom['input_fingerprint'].splitlines()
  assert [line.split(',')[:2] for line in lines] == [[f'split:{s}', 'num_files:1']
                                                     for s in SPLITS]
  assert examples_importer(output, reimport=True).exec_properties['reimport']
  with pytest.raises(ValueError, match='may not replace payload_format'):
    examples_importer(output, custom_properties={'payload_format': 'FORMAT_PROTO'})


def test_split_names_keep_the_outputs_order(tmp_path):
  data = str(tmp_path / 'data')
  os.makedirs(data)
  rows = []
  for i in range(12):
    path = os.path.join(data, f'{i}.png')
    write_image(path, 'PNG', height=6, width=6, seed=i)
    rows.append({'split': '', 'image_uri': path, 'label': 'ab'[i % 2]})
  out = str(tmp_path / 'out')
  trc.convert(pandas.DataFrame(rows), out, splits={'zeta': 1, 'alpha': 1})
  properties = examples_importer(out).outputs['result'].additional_properties
  # ExampleGen's order (hash-bucket splits, then train/eval/test for the split column),
  # not sorted: an Examples artifact's split_names as ImageExampleGen writes them.
  # train, eval and test (no row has a split) got no record: not written.
  assert json.loads(properties['split_names']) == ['zeta', 'alpha']


def test_a_folder_that_is_not_a_finished_output_is_refused(output, tmp_path):
  missing = str(tmp_path / 'nothing')
  with pytest.raises(ValueError, match=f'cannot import {missing} as Examples: '
                     f'{missing} does not exist'):
    examples_importer(missing)
  unfinished = str(tmp_path / 'unfinished')
  shutil.copytree(output, unfinished)
  os.remove(os.path.join(unfinished, '_SUCCESS'))
  with pytest.raises(ValueError, match=f'{unfinished} is not a finished output '
                     r'\(no _SUCCESS\)'):
    examples_importer(unfinished)
  empty = str(tmp_path / 'empty')
  os.makedirs(empty)
  with pytest.raises(ValueError, match=f'{empty} is not an output of convert'):
    examples_importer(empty)
  # test got no record and is not written: naming it is refused.
  with pytest.raises(ValueError, match=r"holds splits \['train', 'eval'\], not the "
                     r"split_names given \(\['train', 'eval', 'test'\]\)"):
    examples_importer(output, split_names=['train', 'eval', 'test'])


def test_an_output_without_examples_json_needs_its_split_names(output, tmp_path):
  older = str(tmp_path / 'older')
  shutil.copytree(output, older)
  os.remove(os.path.join(older, 'examples.json'))
  with pytest.raises(ValueError, match=f'{older} as Examples: it has no examples.json'):
    examples_importer(older)
  with pytest.raises(ValueError, match=r"no shards for split\(s\) \['validation'\]"):
    examples_importer(older, split_names=['train', 'validation'])
  with pytest.raises(ValueError, match=r"no shards for split\(s\) \['test'\]"):  # not written
    examples_importer(older, split_names=['train', 'eval', 'test'])
  channel = examples_importer(older, split_names=['eval', 'train']).outputs['result']
  assert channel.additional_properties['split_names'] == '["eval", "train"]'


def test_defined_and_compiled_for_vertex_before_the_conversion(output, tmp_path):
  later = str(tmp_path / 'later')  # not written yet: the split names are given
  importer = examples_importer(later, split_names=SPLITS).with_id('examples')
  assert importer.outputs['result'].additional_properties['split_names'] == json.dumps(SPLITS)
  assert 'input_fingerprint' not in importer.outputs['result'].additional_custom_properties
  stats = tfx.components.StatisticsGen(examples=importer.outputs['result'])
  path = tmp_path / 'spec.json'
  tfx.orchestration.experimental.KubeflowV2DagRunner(
      config=tfx.orchestration.experimental.KubeflowV2DagRunnerConfig(
          default_image='example.com/image:1'),
      output_dir=str(tmp_path), output_filename=path.name).run(tfx.dsl.Pipeline(
          pipeline_name='vertex', pipeline_root='gs://bucket/root',
          components=[importer, stats]))
  with open(path, encoding='utf-8') as f:
    spec = json.load(f)['pipelineSpec']
  [spec_of_importer] = [e['importer'] for e in spec['deploymentSpec']['executors'].values()
                        if 'importer' in e]
  assert spec_of_importer['artifactUri']['constantValue']['stringValue'] == later
  assert spec_of_importer['metadata']['split_names'] == json.dumps(SPLITS)
  assert spec_of_importer['metadata']['payload_format'] == 'FORMAT_TF_EXAMPLE'


def test_an_output_on_gcs_is_read_at_definition_time(output, monkeypatch):
  pytest.importorskip('apache_beam.io.gcp.gcsio')
  storage_servers = pytest.importorskip('storage_servers')
  with storage_servers.GcsServer() as server:
    server.create_bucket('bkt')
    server.upload_tree(output, 'bkt', 'datasets/out')
    monkeypatch.setenv('STORAGE_EMULATOR_HOST', server.url)
    channel = examples_importer('gs://bkt/datasets/out/').outputs['result']
    local = examples_importer(output).outputs['result']
    assert channel.additional_properties == local.additional_properties
    fingerprint = channel.additional_custom_properties['input_fingerprint']
    sizes = [line.split(',')[2] for line in fingerprint.splitlines()]
    assert sizes == [line.split(',')[2] for line in
                     local.additional_custom_properties['input_fingerprint'].splitlines()]
    with pytest.raises(ValueError, match='gs://bkt/datasets/nothing is not an output'):
      examples_importer('gs://bkt/datasets/nothing')
