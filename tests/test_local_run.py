"""The production path: pipelines compiled with KubeflowV2DagRunner run task by task
as Vertex AI Pipelines and Kubeflow Pipelines run them (`kubeflow.local_run`), with the
package installed as the pipeline image installs it (`scripts/image-env`).

Nothing stands in for the services' executors: every task runs its compiled container
command (TFX's V2 entry point, the example-gen driver hook) with this machine's Python.
"""
import json
import os
import subprocess

import pytest
import yaml
from ml_metadata.metadata_store import metadata_store
from ml_metadata.proto import metadata_store_pb2
from tfx import v1 as tfx
from tfx.proto import example_gen_pb2

from images import write_image, write_text
from runs import IMAGE, REPO, SPLITS, compile_with_defaults, only, run_spec

from kubeflow import local_run, runner
from pipelines import demo_data, local_runner, tabular
from records import by_source_id, feature
from tfrecorder_component import ImageExampleGen
from tfrecorder_component.adapters.component import mlmd as mlmd_helpers

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


def executor_of(spec, task):
  label = spec['components'][spec['root']['dag']['tasks'][task]['componentRef']['name']][
      'executorLabel']
  return spec['deploymentSpec']['executors'][label]


def states(result):
  """{task: 'ran' | 'cached' | 'FAILED'}."""
  return {t: ('cached' if s['cached'] else 'ran') if s['state'] == 'SUCCEEDED' else s['state']
          for t, s in result['tasks'].items()}


def write_span(tmp_path, span, rows):
  """An image manifest `manifests/span-<span>/manifest.csv` of `rows` new PNGs."""
  uris = []
  for i in range(rows):
    uri = str(tmp_path / 'images' / f'span{span}_{i}.png')
    write_image(uri, 'PNG', 'RGB', 6 + span, 8, seed=100 * span + i)
    uris.append(uri)
  write_text(str(tmp_path / 'manifests' / f'span-{span}' / 'manifest.csv'), ''.join(
      f'{("TRAIN", "VALIDATION", "TEST")[i % 3]},{u},{("cat", "dog")[i % 2]}\n'
      for i, u in enumerate(uris)))
  return uris


def spans_pipeline(tmp_path, **example_gen_args):
  """ImageExampleGen over `manifests/span-{SPAN}/*.csv` -> StatisticsGen."""
  gen = ImageExampleGen(input_base=str(tmp_path / 'manifests'),
                        input_config=example_gen_pb2.Input(splits=[
                            example_gen_pb2.Input.Split(name='all',
                                                        pattern='span-{SPAN}/*.csv')]),
                        **example_gen_args)
  stats = tfx.components.StatisticsGen(examples=gen.outputs['examples'])
  return tfx.dsl.Pipeline(pipeline_name='spans', pipeline_root=str(tmp_path / 'root'),
                          components=[gen, stats], enable_cache=True)


@pytest.mark.parametrize('compiled', ['defaults', 'spec_2_1'])
def test_spans_resolve_on_the_compiled_pipeline_as_on_vertex_and_kfp(tmp_path, image,
                                                                     compiled):
  python, app = image
  uris = {span: write_span(tmp_path, span, 3 + span % 7)
          for span in (2, 10)}  # the latest span is the largest number, not the last name
  pipeline = spans_pipeline(tmp_path)
  if compiled == 'defaults':  # schema 2.0, PipelineJob JSON
    spec_path = tmp_path / 'spans.json'
    spec = compile_with_defaults(pipeline, spec_path)
  else:  # schema 2.1, bare YAML
    spec_path = tmp_path / 'spans.yaml'
    spec = runner.compile_spec(pipeline, IMAGE, str(spec_path))
  assert executor_of(spec, 'ImageExampleGen')['container']['lifecycle']['preCacheCheck'][
      'command'] == DRIVER
  assert 'lifecycle' not in executor_of(spec, 'StatisticsGen')['container']

  # Vertex AI: the driver hook resolves the span before the executor runs.
  done, result = run_spec(spec_path, tmp_path / 'work', '--python', python,
                          '--image-path', app)
  assert done.returncode == 0, done.stderr[-4000:]
  assert {t: s['state'] for t, s in result['tasks'].items()} == {
      'ImageExampleGen': 'SUCCEEDED', 'StatisticsGen': 'SUCCEEDED'}
  with open(tmp_path / 'work' / result['run_id'] / 'ImageExampleGen.log',
            encoding='utf-8') as f:
    log = f.read()
  assert '--- preCacheCheck' in log and 'Calculated span: 10' in log
  for platform_result in (result, None):
    if platform_result is None:  # Kubeflow Pipelines 2.x runs no hook: the executor resolves
      done, platform_result = run_spec(spec_path, tmp_path / 'work-kfp', '--platform', 'kfp')
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


def test_the_cache_reruns_exactly_what_a_new_span_a_changed_manifest_or_parameter_changes(
    tmp_path):
  write_span(tmp_path, 1, 4)
  spec_path = tmp_path / 'spans.json'
  compile_with_defaults(spans_pipeline(tmp_path), spec_path)

  def run(*args, spec=spec_path):
    done, result = run_spec(spec, tmp_path / 'work', *args)
    assert done.returncode == 0, done.stderr[-4000:]
    return result

  def examples(result):
    return only(result['tasks']['ImageExampleGen']['outputs'], 'examples')

  first = run()
  assert states(first) == {'ImageExampleGen': 'ran', 'StatisticsGen': 'ran'}
  second = run()  # unchanged: both from the cache, the same artifacts
  assert states(second) == {'ImageExampleGen': 'cached', 'StatisticsGen': 'cached'}
  assert second['tasks'] == {t: {**first['tasks'][t], 'cached': True,
                                 'execution_id': second['tasks'][t]['execution_id']}
                             for t in first['tasks']}
  store = local_run.Store(second['metadata'], 'spans', 'reader').store
  for task in first['tasks']:
    [cached] = store.get_executions_by_id([second['tasks'][task]['execution_id']])
    assert cached.last_known_state == metadata_store_pb2.Execution.CACHED
    assert cached.custom_properties['cached_execution_id'].int_value == (
        first['tasks'][task]['execution_id'])
  assert not os.path.exists(tmp_path / 'work' / second['run_id'] / 'StatisticsGen.log')

  write_span(tmp_path, 2, 5)  # a new span: the hook's span and fingerprint change
  third = run()
  assert states(third) == {'ImageExampleGen': 'ran', 'StatisticsGen': 'ran'}
  assert examples(third)['metadata']['span'] == 2
  assert sum(examples(third)['metadata']['record_counts'].values()) == 5

  manifest = tmp_path / 'manifests' / 'span-2' / 'manifest.csv'
  lines = manifest.read_text(encoding='utf-8').splitlines(keepends=True)
  manifest.write_text(''.join(lines[:-1]), encoding='utf-8')  # changed in place
  fourth = run()
  assert states(fourth) == {'ImageExampleGen': 'ran', 'StatisticsGen': 'ran'}
  assert sum(examples(fourth)['metadata']['record_counts'].values()) == 4
  assert states(run()) == {'ImageExampleGen': 'cached', 'StatisticsGen': 'cached'}
  assert states(run('--no-cache')) == {'ImageExampleGen': 'ran', 'StatisticsGen': 'ran'}

  changed = tmp_path / 'spans-changed.json'  # a changed parameter of ImageExampleGen
  compile_with_defaults(spans_pipeline(tmp_path, concurrent_reads=8), changed)
  assert states(run(spec=changed)) == {'ImageExampleGen': 'ran', 'StatisticsGen': 'ran'}

  with open(spec_path, encoding='utf-8') as f:  # a task's own enableCache: false
    job = json.load(f)
  job['pipelineSpec']['root']['dag']['tasks']['StatisticsGen']['cachingOptions'] = {
      'enableCache': False}
  with open(tmp_path / 'no-stats-cache.json', 'w', encoding='utf-8') as f:
    json.dump(job, f)
  assert states(run(spec=tmp_path / 'no-stats-cache.json')) == {
      'ImageExampleGen': 'cached', 'StatisticsGen': 'ran'}


def test_a_tfx_only_pipeline_compiled_with_defaults_evaluates_against_the_last_blessed_model(
    tmp_path, image):
  """TFX's template shape: CsvExampleGen({SPAN}) -> ... -> Evaluator with a
  LatestBlessedModelStrategy baseline -> Pusher. The first run has no baseline; after a
  new span, the second run's Evaluator compares its new model with the first's."""
  python, app = image
  data, work = str(tmp_path / 'data'), tmp_path / 'work'
  tabular.write_span(data, 1)
  spec_path = tmp_path / 'tabular.json'
  spec = compile_with_defaults(tabular.create_pipeline(
      'tabular', str(tmp_path / 'root'), data, str(tmp_path / 'serving')), spec_path)
  blessing_resolver = f'{tabular.RESOLVER_ID}-model-blessing-resolver'
  model_resolver = f'{tabular.RESOLVER_ID}-model-resolver'
  assert 'resolver' in executor_of(spec, model_resolver)

  def run():
    done, result = run_spec(spec_path, work, '--python', python, '--image-path', app)
    assert done.returncode == 0, done.stderr[-4000:]
    assert result['not_run'] == []
    return result, {t: s['outputs'] for t, s in result['tasks'].items()}

  def executor_input(result, task):
    with open(work / result['run_id'] / f'{task}.executor_input.json', encoding='utf-8') as f:
      return json.load(f)

  first, outputs = run()
  assert states(first) == {t: 'ran' for t in first['tasks']}
  assert outputs[blessing_resolver] == {'model_blessing': []}
  assert outputs[model_resolver] == {'model': []}
  assert executor_input(first, 'Evaluator')['inputs']['artifacts']['baseline_model'] == {
      'artifacts': []}
  examples = only(outputs['CsvExampleGen'], 'examples')['metadata']
  assert examples['custom:span'] == 1  # from the driver hook's ExecutorOutput, as on Vertex
  assert 'num_files:1' in examples['input_fingerprint']
  blessing = only(outputs['Evaluator'], 'blessing')['metadata']
  assert blessing['blessed'] == 1 and 'baseline_model_id' not in blessing
  assert only(outputs['Pusher'], 'pushed_model')['metadata']['pushed'] == 1
  first_model = only(outputs['Trainer'], 'model')['uri']

  tabular.write_span(data, 2)
  second, outputs = run()
  assert states(second) == {t: 'ran' for t in second['tasks']}  # all downstream of the span
  assert 'span-2' in executor_input(second, 'CsvExampleGen')['inputs']['parameters'][
      'input_config']['stringValue']
  assert only(outputs[model_resolver], 'model')['uri'] == first_model
  [baseline] = executor_input(second, 'Evaluator')['inputs']['artifacts']['baseline_model'][
      'artifacts']
  assert baseline['uri'] == first_model
  assert only(outputs['Trainer'], 'model')['uri'] != first_model
  blessing = only(outputs['Evaluator'], 'blessing')['metadata']
  assert blessing['baseline_model_id'] == baseline['name']

  # The same answers from the store, read as TFX artifacts.
  config = local_run.connection_config(second['metadata'])
  models = mlmd_helpers.outputs_of(config, 'tabular', 'Trainer', 'model')
  assert [m.uri for m in models] == [first_model, only(outputs['Trainer'], 'model')['uri']]
  last_blessing = mlmd_helpers.latest_output(config, 'tabular', 'Evaluator', 'blessing')
  assert last_blessing.get_string_custom_property('baseline_model_id') == (
      local_run.store.artifact_name(models[0].id))
  assert [e.get_custom_property('span') for e in mlmd_helpers.outputs_of(
      config, 'tabular', 'CsvExampleGen', 'examples')] == [1, 2]


def lineage(store, artifact_id, *steps):
  """Follows `steps` of (consuming task, its output key) from an artifact through the
  store's INPUT and OUTPUT events; returns the schema titles along the way."""
  titles = {t.id: t.name for t in store.get_artifact_types()}
  [artifact] = store.get_artifacts_by_id([artifact_id])
  found = [titles[artifact.type_id]]
  for task, key in steps:
    consumers = {e.execution_id for e in store.get_events_by_artifact_ids([artifact.id])
                 if e.type == metadata_store_pb2.Event.INPUT}
    [execution] = [e for e in store.get_executions_by_id(sorted(consumers))
                   if e.custom_properties['task_name'].string_value == task]
    assert execution.last_known_state == metadata_store_pb2.Execution.COMPLETE
    [output] = [e.artifact_id for e in store.get_events_by_execution_ids([execution.id])
                if e.type == metadata_store_pb2.Event.OUTPUT and e.path.steps[0].key == key]
    [artifact] = store.get_artifacts_by_id([output])
    assert artifact.state == metadata_store_pb2.Artifact.LIVE
    found.append(titles[artifact.type_id])
  return found


def test_demo_pipeline_compiled_for_vertex_runs_end_to_end_then_from_the_cache(tmp_path,
                                                                               image):
  python, app = image
  manifest = demo_data.write_digits(str(tmp_path / 'digits'))
  spec_path = tmp_path / 'demo.json'
  spec = compile_with_defaults(runner.build_pipeline(runner.parse_args([
      '--pipeline-root', str(tmp_path / 'root'), '--manifest-uri', manifest,
      '--image', IMAGE, '--train-steps', '240'])), spec_path)
  page_output = spec['components'][spec['root']['dag']['tasks']['ConversionReportPage'][
      'componentRef']['name']]['outputDefinitions']['artifacts']['page']
  assert yaml.safe_load(page_output['artifactType']['instanceSchema'])['title'] == 'system.HTML'

  done, result = run_spec(spec_path, tmp_path / 'work', '--python', python,
                          '--image-path', app)
  assert done.returncode == 0, done.stderr[-4000:]
  assert result['not_run'] == []
  assert states(result) == {
      t: 'ran' for t in ('manifest_importer', 'ImageExampleGen', 'ConversionReportPage',
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

  # The lineage, read back with ml-metadata's own API.
  store = metadata_store.MetadataStore(local_run.connection_config(result['metadata']))
  [manifest_artifact] = [e.artifact_id for e in store.get_events_by_execution_ids(
      [result['tasks']['manifest_importer']['execution_id']])]
  assert lineage(store, manifest_artifact, ('ImageExampleGen', 'examples'),
                 ('StatisticsGen', 'statistics'), ('SchemaGen', 'schema'),
                 ('Trainer', 'model'), ('Evaluator', 'blessing'),
                 ('Pusher', 'pushed_model')) == [
      'tfrecorder_component.ImageManifest', 'tfx.Examples',
      'tfx.ExampleStatistics', 'tfx.Schema', 'tfx.Model', 'tfx.ModelBlessing',
      'tfx.PushedModel']
  run_context = store.get_context_by_type_and_name('system.PipelineRun', result['run_id'])
  assert {e.custom_properties['task_name'].string_value
          for e in store.get_executions_by_context(run_context.id)} == set(result['tasks'])
  read_back = mlmd_helpers.latest_output(local_run.connection_config(result['metadata']),
                                         'tfrecorder-demo', 'ImageExampleGen', 'examples')
  assert read_back.uri == examples['uri'] and read_back.split_names == json.dumps(SPLITS)

  # Unchanged, a second run takes every container task from the cache, starting none.
  again_done, again = run_spec(spec_path, tmp_path / 'work', '--python', python,
                               '--image-path', app)
  assert again_done.returncode == 0, again_done.stderr[-4000:]
  assert states(again) == {**{t: 'cached' for t in result['tasks']}, 'manifest_importer': 'ran'}
  assert again['tasks']['Pusher']['outputs'] == result['tasks']['Pusher']['outputs']
  assert not [f for f in os.listdir(tmp_path / 'work' / again['run_id']) if f.endswith('.log')]
  assert 'Pusher: SUCCEEDED (cached: outputs of execution ' in again_done.stderr

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


def test_a_latest_artifact_resolver_answers_with_the_newest_live_artifact(tmp_path):
  """LatestArtifactStrategy compiles to one query, `schema_title="tfx.Examples" AND
  state=LIVE`: the newest such artifact of the pipeline, whichever run made it."""

  def compile_and_run(uri):
    importer = tfx.dsl.Importer(source_uri=uri, artifact_type=tfx.types.standard_artifacts.Examples
                                ).with_id('examples_importer')
    latest = tfx.dsl.Resolver(strategy_class=tfx.dsl.experimental.LatestArtifactStrategy,
                              examples=tfx.dsl.Channel(type=tfx.types.standard_artifacts.Examples)
                              ).with_id('latest_examples')
    pipeline = tfx.dsl.Pipeline(pipeline_name='latest', pipeline_root=str(tmp_path / 'root'),
                                components=[importer, latest])
    spec = compile_with_defaults(pipeline, tmp_path / 'latest.json')
    assert executor_of(spec, 'latest_examples')['resolver']['outputArtifactQueries'][
        'examples']['filter'] == 'schema_title="tfx.Examples" AND state=LIVE'
    done, result = run_spec(tmp_path / 'latest.json', tmp_path / 'work')
    assert done.returncode == 0, done.stderr[-4000:]
    return [a['uri'] for a in result['tasks']['latest_examples']['outputs']['examples']]

  first, second = str(tmp_path / 'first'), str(tmp_path / 'second')
  assert compile_and_run(first) == [first]
  assert compile_and_run(second) == [second]
  assert compile_and_run(first) == [second]  # `first` is reused, `second` is newer


@pytest.mark.parametrize('spec_2_1', [False, True])
def test_pipeline_parameters_and_constants_in_the_form_of_each_schema(tmp_path, spec_2_1):
  """A RuntimeParameter compiled by TFX (its value in the PipelineJob's runtimeConfig:
  2.0 `parameters` typed, 2.1 `parameterValues`), overridden by --param, and the
  ExecutorInput in the schema's form."""
  gen = tfx.components.CsvExampleGen(input_base=tfx.dsl.experimental.RuntimeParameter(
      name='data_root', ptype=str))
  pipeline = tfx.dsl.Pipeline(pipeline_name='params', pipeline_root=str(tmp_path / 'root'),
                              components=[gen])
  config = tfx.orchestration.experimental.KubeflowV2DagRunnerConfig(
      default_image=IMAGE, **({'use_pipeline_spec_2_1': True} if spec_2_1 else {}))
  tfx.orchestration.experimental.KubeflowV2DagRunner(
      config=config, output_dir=str(tmp_path), output_filename='params.json').run(
          pipeline, parameter_values={'data_root': '/compiled'})
  spec = local_run.load_spec(str(tmp_path / 'params.json'))
  assert spec['schemaVersion'] == ('2.1.0' if spec_2_1 else '2.0.0')
  task = spec['root']['dag']['tasks']['CsvExampleGen']
  component = spec['components']['CsvExampleGen']
  for given, expected in (({}, '/compiled'), ({'data_root': '/given'}, '/given')):
    run = local_run.LocalRun(spec, str(tmp_path / 'work'), parameters=given)
    inputs = run._inputs(task, component)  # pylint: disable=protected-access
    assert inputs['parameterValues']['input_base'] == expected
    assert inputs['parameterValues']['output_data_format'] == 6  # a compiled int constant
    executor_input = local_run.launcher.executor_input(
        inputs, {}, [], str(tmp_path), typed_parameters=not spec_2_1,
        declared=component['inputDefinitions']['parameters'])
    if spec_2_1:
      assert executor_input['inputs']['parameterValues']['output_data_format'] == 6
    else:
      assert executor_input['inputs']['parameters']['output_data_format'] == {'intValue': '6'}
      assert executor_input['inputs']['parameters']['input_base'] == {'stringValue': expected}
  del spec['_runtimeConfig']['parameters' if not spec_2_1 else 'parameterValues']
  with pytest.raises(local_run.SpecError, match='give --param data_root=VALUE'):
    run = local_run.LocalRun(spec, str(tmp_path / 'work'))
    run._inputs(task, component)  # pylint: disable=protected-access


def test_specs_it_cannot_run_are_refused_with_the_reason(tmp_path):
  with open(tmp_path / 'not_a_spec.json', 'w', encoding='utf-8') as f:
    json.dump({'pipelineInfo': {'name': 'x'}}, f)
  with pytest.raises(local_run.SpecError, match='not a KFP pipeline spec'):
    local_run.load_spec(str(tmp_path / 'not_a_spec.json'))
  cycle = {'a': {'dependentTasks': ['b']}, 'b': {'dependentTasks': ['a']}}
  with pytest.raises(local_run.SpecError, match='cycle'):
    local_run.LocalRun({'pipelineInfo': {'name': 'x'}, 'root': {}}, str(tmp_path))._order(cycle)
  store = local_run.Store(str(tmp_path / 'metadata.sqlite'), 'x', 'run')
  with pytest.raises(local_run.SpecError, match="cannot read 'create_time>1'"):
    store.query('schema_title="tfx.Model" AND create_time>1')
  with pytest.raises(local_run.SpecError, match="field 'display_name' is not supported"):
    store.query('display_name="model"')
