"""The demo pipeline end to end: lineage through ML Metadata, accuracy, and caching."""
import os

import tensorflow_data_validation as tfdv

from tfx import v1 as tfx
from tfx.orchestration import metadata
from tfx.orchestration.portable.mlmd import execution_lib

from mlmd_queries import INPUT, OUTPUT, artifact_ids, node_executions, output_of_type
from pipelines import demo_data, local_runner, pipeline
from tfrecorder_component.adapters.component.mlmd import latest_output

NAME = 'demo_test'


def test_demo_pipeline_lineage_accuracy_and_cache(tmp_path):
  manifest = demo_data.write_digits(str(tmp_path / 'digits'))
  config = tfx.orchestration.metadata.sqlite_metadata_connection_config(
      str(tmp_path / 'metadata.db'))
  definition = lambda: pipeline.create_pipeline(  # pylint: disable=unnecessary-lambda-assignment
      NAME, str(tmp_path / 'root'), manifest, str(tmp_path / 'serving'),
      metadata_connection_config=config, train_steps=240, epochs=4)
  tfx.orchestration.LocalDagRunner().run(definition())

  with metadata.Metadata(config) as m:
    [gen] = node_executions(m, NAME, 'ImageExampleGen')
    outputs = artifact_ids(m, gen.id, OUTPUT)
    examples_id = output_of_type(m, gen.id, 'Examples')
    for consumer in ('StatisticsGen', 'Trainer', 'Evaluator'):
      [execution] = node_executions(m, NAME, consumer)
      assert examples_id in artifact_ids(m, execution.id, INPUT), consumer
      assert execution.last_known_state == execution.COMPLETE

  # Semantic-domain statistics mark the image feature (TFDV needs >= 100 images for it).
  schema = latest_output(config, NAME, 'SchemaGen', 'schema')
  inferred = tfdv.load_schema_text(os.path.join(schema.uri, 'schema.pbtxt'))
  assert tfdv.get_feature(inferred, 'image/encoded').HasField('image_domain')

  # The report page: a system.HTML artifact whose URI is report.html's copy.
  page = latest_output(config, NAME, 'ConversionReportPage', 'page')
  report = latest_output(config, NAME, 'ImageExampleGen', 'report')
  assert page.type_name == 'system.HTML'
  with open(page.uri, 'rb') as f, open(os.path.join(report.uri, 'report.html'), 'rb') as g:
    assert f.read() == g.read()

  accuracy = local_runner.eval_accuracy(config, NAME)
  assert accuracy >= 0.9
  assert os.listdir(tmp_path / 'serving')  # blessed and pushed

  tfx.orchestration.LocalDagRunner().run(definition())  # same manifest: served from cache
  with metadata.Metadata(config) as m:
    first, second = node_executions(m, NAME, 'ImageExampleGen')
    assert first.id == gen.id
    assert second.last_known_state == second.CACHED
    assert artifact_ids(m, second.id, OUTPUT) == outputs
    assert execution_lib.is_execution_successful(second)


def test_the_demo_command_is_quiet_and_says_where_things_are_and_what_next(tmp_path):
  """`python -m pipelines.local_runner` (what scripts/demo runs): a line as each
  component ends, then at most 25 lines that name the conversion report (which exists),
  the records, ML Metadata, and the command to try on one's own images; TensorFlow's,
  TFX's and setuptools' chatter goes to the log file it names, not the console."""
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  home = tmp_path / 'home'
  done = subprocess.run(
      [sys.executable, '-m', 'pipelines.local_runner', '--home', str(home), '--train-steps',
       '20', '--min-accuracy', '0'], capture_output=True, text=True, timeout=900,
      cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  assert done.returncode == 0, done.stdout + done.stderr
  lines = (done.stdout + done.stderr).strip().splitlines()
  progress = [l for l in lines if l.lstrip().startswith('[') and ' done (' in l]
  assert len(progress) == 9 and progress[-1].strip().startswith('[9/9] Pusher done')
  assert len(lines) - len(progress) <= 25, '\n'.join(lines)
  text = '\n'.join(lines)
  for noise in ('cuFFT', 'bdist_wheel', 'property_predicate', 'SetuptoolsDeprecation',
                'Epoch 1/'):
    assert noise not in text, noise
    assert noise in (home / 'demo.log').read_text() or noise in ('cuFFT',), noise
  report = next(l.split()[-1] for l in lines if l.strip().startswith('report:'))
  assert report.endswith('report.html') and os.path.exists(report)
  assert any('tfrecorder-component convert' in l for l in lines[-2:])
