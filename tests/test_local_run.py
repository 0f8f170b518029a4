"""The production path: pipelines compiled with KubeflowV2DagRunner run task by task
as Vertex AI Pipelines and Kubeflow Pipelines run them (`kubeflow.local_run`), with the
package installed as the pipeline image installs it (`scripts/image-env`).

Nothing stands in for the services' executors: every task runs its compiled container
command (TFX's V2 entry point, the example-gen driver hook) with this machine's Python.
"""
import json
import os
import subprocess
import sys

import pytest
import yaml
from tfx import v1 as tfx
from tfx.proto import example_gen_pb2

from images import write_image, write_text
from kubeflow import local_run, runner
from pipelines import demo_data, local_runner
from records import by_source_id, feature
from tfrecorder_component import ImageExampleGen

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE = 'us-docker.pkg.dev/my-project/pipelines/tfrecorder-component:0.1.0'
SPLITS = ['train', 'eval', 'test']
DRIVER = ['python', '-m', 'tfx.orchestration.kubeflow.v2.file_based_example_gen.driver']


@pytest.fixture(scope='module')
def image(tmp_path_factory):
  """(python, WORKDIR) of the stand-in pipeline image: the lock's pins and this package
  installed from a wheel in a fresh virtual environment, `pipelines/` in the WORKDIR."""
  where = tmp_path_factory.mktemp('image')
  done = subprocess.run([os.path.join(REPO, 'scripts', 'image-env'), str(where)],
                        capture_output=True, text=True, timeout=1200, check=False)
  assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
  assert f'from {where}/venv/lib/' in done.stdout  # imported from site-packages
  return str(where / 'venv' / 'bin' / 'python'), str(where / 'app')


def run_spec(spec_path, work, *args):
  """`python -m kubeflow.local_run SPEC --work WORK ARGS`: (process, last-line JSON)."""
  done = subprocess.run([sys.executable, '-m', 'kubeflow.local_run', str(spec_path),
                         '--work', str(work), *args], capture_output=True, text=True,
                        cwd=REPO, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'),
                        timeout=1800, check=False)
  lines = done.stdout.strip().splitlines()
  assert lines, done.stderr[-4000:]
  return done, json.loads(lines[-1])


def executor_of(spec, task):
  label = spec['components'][spec['root']['dag']['tasks'][task]['componentRef']['name']][
      'executorLabel']
  return spec['deploymentSpec']['executors'][label]


def only(outputs, key):
  [artifact] = outputs[key]
  return artifact


def test_spans_resolve_on_the_compiled_pipeline_as_on_vertex_and_kfp(tmp_path, image):
  python, app = image
  base = tmp_path / 'manifests'
  uris = {}
  for span in (2, 10):  # the latest span is the largest number, not the last name
    uris[span] = []
    for i in range(3 + span % 7):
      uri = str(tmp_path / 'images' / f'span{span}_{i}.png')
      write_image(uri, 'PNG', 'RGB', 6 + span, 8, seed=100 * span + i)
      uris[span].append(uri)
    write_text(str(base / f'span-{span}' / 'manifest.csv'), ''.join(
        f'{("TRAIN", "VALIDATION", "TEST")[i % 3]},{u},{("cat", "dog")[i % 2]}\n'
        for i, u in enumerate(uris[span])))
  gen = ImageExampleGen(input_base=str(base), input_config=example_gen_pb2.Input(splits=[
      example_gen_pb2.Input.Split(name='all', pattern='span-{SPAN}/*.csv')]))
  stats = tfx.components.StatisticsGen(examples=gen.outputs['examples'])
  pipeline = tfx.dsl.Pipeline(pipeline_name='spans', pipeline_root=str(tmp_path / 'root'),
                              components=[gen, stats])
  spec = runner.compile_spec(pipeline, IMAGE, str(tmp_path / 'spans.json'))
  assert executor_of(spec, 'ImageExampleGen')['container']['lifecycle']['preCacheCheck'][
      'command'] == DRIVER
  assert 'lifecycle' not in executor_of(spec, 'StatisticsGen')['container']

  # Vertex AI: the driver hook resolves the span before the executor runs.
  done, result = run_spec(tmp_path / 'spans.json', tmp_path / 'work', '--python', python,
                          '--image-path', app)
  assert done.returncode == 0, done.stderr[-4000:]
  assert {t: s['state'] for t, s in result['tasks'].items()} == {
      'ImageExampleGen': 'SUCCEEDED', 'StatisticsGen': 'SUCCEEDED'}
  [run_dir] = os.listdir(tmp_path / 'work')
  with open(tmp_path / 'work' / run_dir / 'ImageExampleGen.log', encoding='utf-8') as f:
    log = f.read()
  assert '--- preCacheCheck' in log and 'Calculated span: 10' in log
  for platform_result in (result, None):
    if platform_result is None:  # Kubeflow Pipelines 2.x runs no hook: the executor resolves
      done, platform_result = run_spec(tmp_path / 'spans.json', tmp_path / 'work-kfp',
                                       '--platform', 'kfp')
      assert done.returncode == 0, done.stderr[-4000:]
    outputs = platform_result['tasks']['ImageExampleGen']['outputs']
    examples = only(outputs, 'examples')
    assert examples['metadata']['span'] == 10
    assert 'num_files:1' in examples['metadata']['input_fingerprint']
    records = by_source_id(examples['uri'], SPLITS)
    assert sorted(records) == sorted(uris[10])  # only the latest span was converted
    assert {split for split, _ in records.values()} == set(SPLITS)
    assert feature(records[uris[10][0]][1], 'image/height') == [16]
    statistics = only(platform_result['tasks']['StatisticsGen']['outputs'], 'statistics')
    assert statistics['metadata']['span'] == 10
    for split in SPLITS:
      assert os.path.getsize(os.path.join(statistics['uri'], f'Split-{split}',
                                          'FeatureStats.pb')) > 0


def test_demo_pipeline_compiled_for_vertex_runs_end_to_end(tmp_path, image):
  python, app = image
  manifest = demo_data.write_digits(str(tmp_path / 'digits'))
  spec_path = tmp_path / 'demo.yaml'
  assert runner.main(['--pipeline-root', str(tmp_path / 'root'), '--manifest-uri', manifest,
                      '--image', IMAGE, '--output', str(spec_path), '--train-steps', '240']) == 0
  spec = local_run.load_spec(str(spec_path))
  page_output = spec['components'][spec['root']['dag']['tasks']['ConversionReportPage'][
      'componentRef']['name']]['outputDefinitions']['artifacts']['page']
  assert yaml.safe_load(page_output['artifactType']['instanceSchema'])['title'] == 'system.HTML'

  done, result = run_spec(spec_path, tmp_path / 'work', '--python', python,
                          '--image-path', app)
  assert done.returncode == 0, done.stderr[-4000:]
  assert result['not_run'] == []
  assert {t: s['state'] for t, s in result['tasks'].items()} == {
      t: 'SUCCEEDED' for t in ('manifest_importer', 'ImageExampleGen', 'ConversionReportPage',
                               'StatisticsGen', 'SchemaGen', 'ExampleValidator', 'Trainer',
                               'Evaluator', 'Pusher')}
  tasks = {t: s['outputs'] for t, s in result['tasks'].items()}
  examples = only(tasks['ImageExampleGen'], 'examples')
  assert json.loads(examples['metadata']['split_names']) == SPLITS
  assert sum(examples['metadata']['record_counts'].values()) == 1797

  assert local_runner.evaluation_accuracy(only(tasks['Evaluator'], 'evaluation')['uri']) >= 0.9
  assert only(tasks['Evaluator'], 'blessing')['metadata']['blessed'] == 1
  pushed = only(tasks['Pusher'], 'pushed_model')['metadata']
  assert pushed['pushed'] == 1
  assert os.path.exists(os.path.join(pushed['pushed_destination'], 'saved_model.pb'))

  # The report as the consoles show it: a system.HTML artifact whose URI is the page.
  page = only(tasks['ConversionReportPage'], 'page')['uri']
  report = only(tasks['ImageExampleGen'], 'report')['uri']
  with open(page, 'rb') as f, open(os.path.join(report, 'report.html'), 'rb') as g:
    html = f.read()
    assert html == g.read()
  assert html.startswith(b'<!DOCTYPE html>') and b'data:image/jpeg' in html


def test_a_failed_task_fails_the_run_and_stops_what_depends_on_it(tmp_path):
  spec_path = tmp_path / 'demo.json'
  assert runner.main(['--pipeline-root', str(tmp_path / 'root'), '--manifest-uri',
                      str(tmp_path / 'missing.csv'), '--image', IMAGE,
                      '--output', str(spec_path)]) == 0
  done, result = run_spec(spec_path, tmp_path / 'work')
  assert done.returncode == 1
  assert result['tasks']['manifest_importer']['state'] == 'SUCCEEDED'
  assert result['tasks']['ImageExampleGen']['state'] == 'FAILED'
  assert sorted(result['not_run']) == sorted([
      'ConversionReportPage', 'StatisticsGen', 'SchemaGen', 'ExampleValidator', 'Trainer',
      'Evaluator', 'Pusher'])
  assert 'ImageExampleGen: FAILED: container exited with 1; log: ' in done.stderr
  assert 'no manifest files' in done.stderr  # the log's tail names the cause
  log = done.stderr.split('; log: ')[1].split('\n')[0]
  assert os.path.exists(log)


# A component as a container command: reads the ExecutorInput ({{$}}), writes an output
# artifact, an output parameter and the executor output, as a KFP component does.
_PRODUCER = '''
import json, os, sys
executor_input = json.loads(sys.argv[1])
outputs = executor_input['outputs']
[data] = outputs['artifacts']['data']['artifacts']
os.makedirs(os.path.dirname(data['uri']), exist_ok=True)
with open(data['uri'], 'w') as f:
  f.write(executor_input['inputs']['parameterValues']['text'])
with open(outputs['parameters']['n']['outputFile'], 'w') as f:
  f.write('3')
with open(outputs['outputFile'], 'w') as f:
  json.dump({'artifacts': {'data': {'artifacts': [{'metadata': {'count': 3}}]}}}, f)
'''
_CONSUMER = '''
import sys
text_path, n, out = sys.argv[1:]
assert open(text_path).read() == 'hello' and n == '3', (text_path, n)
with open(out, 'w') as f:
  f.write('ok')
'''


def _container(script, *args):
  return {'container': {'image': IMAGE, 'command': ['python', '-c', script],
                        'args': list(args)}}


def _component(executor, inputs=None, outputs=None):
  return {'executorLabel': executor, 'inputDefinitions': inputs or {},
          'outputDefinitions': outputs or {}}


def test_placeholders_parameters_conditions_and_exit_handlers(tmp_path):
  artifact = {'artifactType': {'schemaTitle': 'system.Artifact'}}
  consumer = _component('consume', {'artifacts': {'data': artifact},
                                    'parameters': {'n': {'parameterType': 'STRING'}}},
                        {'artifacts': {'result': artifact}})
  use_inputs = {'artifacts': {'data': {'taskOutputArtifact': {
      'producerTask': 'make', 'outputArtifactKey': 'data'}}},
                'parameters': {'n': {'taskOutputParameter': {
                    'producerTask': 'make', 'outputParameterKey': 'n'}}}}
  condition = "inputs.artifacts['data'].artifacts[0].metadata['count']"
  spec = {
      'pipelineInfo': {'name': 'handmade'},
      'root': {
          'inputDefinitions': {'parameters': {'text': {'parameterType': 'STRING',
                                                      'defaultValue': 'bye'}}},
          'dag': {'tasks': {
              'inner': {'componentRef': {'name': 'inner'}, 'taskInfo': {'name': 'inner'}},
              'report': {'componentRef': {'name': 'report'}, 'dependentTasks': ['inner'],
                         'triggerPolicy': {'strategy': 'ALL_UPSTREAM_TASKS_COMPLETED'},
                         'inputs': {'parameters': {'status': {'taskFinalStatus': {
                             'producerTask': 'inner'}}}}},
          }}},
      'components': {
          'inner': {'dag': {'tasks': {
              'make': {'componentRef': {'name': 'make'}, 'inputs': {'parameters': {
                  'text': {'componentInputParameter': 'text'}}}},
              'use': {'componentRef': {'name': 'use'}, 'inputs': use_inputs,
                      'triggerPolicy': {'condition': f'({condition} > 2.0) && !({condition} < 1.0)'}},
              'skip': {'componentRef': {'name': 'use'}, 'inputs': use_inputs,
                       'triggerPolicy': {'condition': f"({condition} == 4.0) || "
                                                      f"({condition} < 1.0)"}},
              'after_skip': {'componentRef': {'name': 'use'}, 'inputs': use_inputs,
                             'dependentTasks': ['skip']},
          }}},
          'make': _component('make', {'parameters': {'text': {'parameterType': 'STRING'}}},
                             {'artifacts': {'data': artifact},
                              'parameters': {'n': {'parameterType': 'STRING'}}}),
          'use': consumer,
          'report': _component('report', {'parameters': {'status': {
              'parameterType': 'STRUCT'}}}, {'artifacts': {'result': artifact}}),
      },
      'deploymentSpec': {'executors': {
          'make': _container(_PRODUCER, '{{$}}'),
          'consume': _container(_CONSUMER, "{{$.inputs.artifacts['data'].path}}",
                                "{{$.inputs.parameters['n']}}",
                                "{{$.outputs.artifacts['result'].uri}}"),
          'report': _container(
              'import json, sys; s = json.loads(sys.argv[1]); '
              'open(sys.argv[2], "w").write(s["state"])',
              "{{$.inputs.parameters['status']}}", "{{$.outputs.artifacts['result'].uri}}"),
      }},
  }
  job = {'pipelineSpec': spec, 'runtimeConfig': {'parameterValues': {'text': 'hello'}}}
  with open(tmp_path / 'job.json', 'w', encoding='utf-8') as f:
    json.dump(job, f)
  done, result = run_spec(tmp_path / 'job.json', tmp_path / 'work', '--pipeline-root',
                          str(tmp_path / 'root'))
  assert done.returncode == 0, done.stderr
  states = {t: s['state'] for t, s in result['tasks'].items()}
  assert states == {'make': 'SUCCEEDED', 'use': 'SUCCEEDED', 'inner': 'SUCCEEDED',
                    'report': 'SUCCEEDED'}
  assert sorted(result['not_run']) == ['after_skip', 'skip']
  data = only(result['tasks']['make']['outputs'], 'data')
  assert data['metadata'] == {'count': 3}  # from the executor output
  assert data['uri'].startswith(str(tmp_path / 'root' / 'handmade' / 'handmade-'))
  assert data['uri'].endswith('/make/data')
  with open(only(result['tasks']['use']['outputs'], 'result')['uri'], encoding='utf-8') as f:
    assert f.read() == 'ok'
  with open(only(result['tasks']['report']['outputs'], 'result')['uri'], encoding='utf-8') as f:
    assert f.read() == 'SUCCEEDED'

  # The pipeline parameter's default applies when the run gives none: `use` then fails.
  del job['runtimeConfig']
  with open(tmp_path / 'job.json', 'w', encoding='utf-8') as f:
    json.dump(job, f)
  done, result = run_spec(tmp_path / 'job.json', tmp_path / 'work2', '--pipeline-root',
                          str(tmp_path / 'root'))
  assert done.returncode == 1
  assert result['tasks']['use']['state'] == 'FAILED'
  assert result['tasks']['inner']['state'] == 'FAILED'
  assert result['tasks']['report']['state'] == 'SUCCEEDED'  # an exit handler runs anyway
  with open(only(result['tasks']['report']['outputs'], 'result')['uri'], encoding='utf-8') as f:
    assert f.read() == 'FAILED'


def test_specs_it_cannot_run_are_refused_with_the_reason(tmp_path):
  with open(tmp_path / 'not_a_spec.json', 'w', encoding='utf-8') as f:
    json.dump({'pipelineInfo': {'name': 'x'}}, f)
  with pytest.raises(local_run.SpecError, match='not a KFP pipeline spec'):
    local_run.load_spec(str(tmp_path / 'not_a_spec.json'))
  cycle = {'a': {'dependentTasks': ['b']}, 'b': {'dependentTasks': ['a']}}
  with pytest.raises(local_run.SpecError, match='cycle'):
    local_run.LocalRun({'pipelineInfo': {'name': 'x'}, 'root': {}}, str(tmp_path))._order(cycle)
