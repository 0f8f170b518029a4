"""Vertex AI / Kubeflow Pipelines: the compiled spec, and ImageExampleGen run through the
container entry point that both services run, on local files.

Nothing here reaches Google Cloud. Where a test replaces `aiplatform.PipelineJob` or
`kfp.Client`, it is because the remote service cannot be reached from the tests.
"""
import inspect
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from images import write_image, write_text
from kubeflow import runner
from records import by_source_id, feature
from tfrecorder_component.record.splits import DEFAULT_BUCKETS, hash_split

IMAGE = 'us-docker.pkg.dev/my-project/pipelines/tfrecorder-component:0.1.0'
EXECUTOR = 'tfrecorder_component.adapters.component.executor.Executor'
VERTEX_TYPE_NAME = re.compile(r'^[a-z][a-z0-9-_]{2,20}[.][A-Z][a-zA-Z0-9-_]{2,49}$')
DATAFLOW = ['--dataflow', '--project', 'my-project', '--region', 'europe-west4',
            '--temp-location', 'gs://my-bucket/tmp', '--max-num-workers', '8']


def compile_args(tmp_path, output, *extra):
  return ['--pipeline-root', 'gs://my-bucket/tfx', '--manifest-uri',
          'gs://my-bucket/digits/manifest.csv', '--image', IMAGE,
          '--output', str(tmp_path / output), *extra]


@pytest.fixture(scope='module')
def dataflow_spec(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('spec')
  assert runner.main(compile_args(tmp, 'pipeline.yaml', *DATAFLOW)) == 0
  with open(tmp / 'pipeline.yaml', encoding='utf-8') as f:
    return yaml.safe_load(f)


def executor_of(spec, task):
  label = spec['components'][spec['root']['dag']['tasks'][task]['componentRef']['name']][
      'executorLabel']
  return spec['deploymentSpec']['executors'][label]


def schema_title(artifact_spec):
  artifact_type = artifact_spec['artifactType']
  if 'schemaTitle' in artifact_type:
    return artifact_type['schemaTitle']
  return yaml.safe_load(artifact_type['instanceSchema'])['title']


def test_spec_names_our_executor_image_and_parameters(dataflow_spec):
  spec = dataflow_spec
  assert spec['schemaVersion'] == '2.1.0'
  assert spec['defaultPipelineRoot'] == 'gs://my-bucket/tfx'
  assert spec['pipelineInfo']['name'] == 'tfrecorder-demo'
  assert set(spec['root']['dag']['tasks']) == {
      'manifest_importer', 'ImageExampleGen', 'ConversionReportPage', 'StatisticsGen',
      'SchemaGen', 'ExampleValidator', 'Trainer', 'Evaluator', 'Pusher'}

  container = executor_of(spec, 'ImageExampleGen')['container']
  assert container['image'] == IMAGE
  assert container['command'] == [
      'python', '-m', 'tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor']
  args = container['args']
  assert args[args.index('--executor_class_path') + 1] == EXECUTOR
  assert args[args.index('--json_serialized_invocation_args') + 1] == '{{$}}'

  task = spec['root']['dag']['tasks']['ImageExampleGen']
  params = {k: v['runtimeValue']['constant'] for k, v in task['inputs']['parameters'].items()}
  assert params['max_pixels'] == 178_956_970 and params['verify_decode'] == 1
  assert params['compression_level'] == 0 and params['max_error_ratio'] == 0.0
  splits = json.loads(params['output_config'])['split_config']['splits']
  assert [(s['name'], s['hash_buckets']) for s in splits] == [('train', 8), ('eval', 1),
                                                              ('test', 1)]
  trainer = spec['root']['dag']['tasks']['Trainer']['inputs']['parameters']
  assert trainer['run_fn']['runtimeValue']['constant'] == 'pipelines.trainer_module.run_fn'
  assert 'module_file' not in trainer  # nothing to upload when the spec compiles

  importer = executor_of(spec, 'manifest_importer')['importer']
  assert importer['artifactUri']['constant'] == 'gs://my-bucket/digits/manifest.csv'
  assert yaml.safe_load(importer['typeSchema']['instanceSchema'])['title'] == (
      'tfrecorder_component.ImageManifest')


def test_custom_artifact_types_are_in_the_form_vertex_accepts(dataflow_spec):
  component = dataflow_spec['components'][
      dataflow_spec['root']['dag']['tasks']['ImageExampleGen']['componentRef']['name']]
  inputs = component['inputDefinitions']['artifacts']
  outputs = component['outputDefinitions']['artifacts']
  assert schema_title(inputs['manifest']) == 'tfrecorder_component.ImageManifest'
  assert schema_title(outputs['report']) == 'tfrecorder_component.ConversionReport'
  assert schema_title(outputs['examples']) == 'tfx.Examples'
  for artifact_spec in (inputs['manifest'], outputs['report']):
    schema = yaml.safe_load(artifact_spec['artifactType']['instanceSchema'])
    assert VERTEX_TYPE_NAME.match(schema['title'])
    assert not schema.get('properties')  # Vertex refuses custom types with PROPERTIES
  # The entry point imports a custom type by its title: the title is a class path.
  from tfx.utils import import_utils  # pylint: disable=g-import-not-at-top
  from tfrecorder_component import ConversionReport, ImageManifest  # pylint: disable=g-import-not-at-top
  assert import_utils.import_class_by_path(schema_title(inputs['manifest'])) is ImageManifest
  assert import_utils.import_class_by_path(schema_title(outputs['report'])) is ConversionReport


def test_dataflow_args_go_to_the_heavy_components_only(dataflow_spec):
  expected = ['--runner=DataflowRunner', '--project=my-project', '--region=europe-west4',
              '--temp_location=gs://my-bucket/tmp', '--setup_file=/tfrecorder/src/setup.py',
              '--max_num_workers=8']
  for task in ('ImageExampleGen', 'StatisticsGen'):
    args = executor_of(dataflow_spec, task)['container']['args']
    assert args[-len(expected):] == expected, task
    assert args[args.index('--runner=DataflowRunner') - 2:][:2] == runner.CONTAINER_BEAM_ARGS
  for task in ('ExampleValidator', 'Evaluator'):
    args = executor_of(dataflow_spec, task)['container']['args']
    assert '--runner=DataflowRunner' not in args
    assert args[-2:] == runner.CONTAINER_BEAM_ARGS


def test_dataflow_args_with_a_worker_image_and_bad_options():
  args = runner.dataflow_args('p', 'r', 'gs://b/tmp', worker_image=IMAGE)
  assert f'--sdk_container_image={IMAGE}' in args
  assert not any(a.startswith('--setup_file') for a in args)
  with pytest.raises(ValueError, match='--temp-location must be a gs:// path'):
    runner.dataflow_args('p', 'r', '/tmp/x')
  with pytest.raises(ValueError, match='needs --project'):
    runner.dataflow_args('', 'r', 'gs://b/tmp')


def test_json_output_and_dry_runs_print_the_submission(tmp_path, capsys):
  assert runner.main(compile_args(tmp_path, 'spec.json', '--submit', 'vertex', '--project',
                                  'my-project', '--region', 'us-central1', '--dry-run')) == 0
  with open(tmp_path / 'spec.json', encoding='utf-8') as f:
    spec = json.load(f)
  assert spec['defaultPipelineRoot'] == 'gs://my-bucket/tfx'
  out = capsys.readouterr().out
  call = json.loads(out[out.index('{'):])
  assert call['job']['template_path'] == str(tmp_path / 'spec.json')
  assert call['job']['pipeline_root'] == 'gs://my-bucket/tfx'
  assert call['init'] == {'project': 'my-project', 'location': 'us-central1'}

  assert runner.main(compile_args(tmp_path, 'spec.json', '--submit', 'kfp', '--kfp-endpoint',
                                  'https://kfp.example.com', '--dry-run')) == 0
  out = capsys.readouterr().out
  call = json.loads(out[out.index('{'):])
  assert call['client'] == {'host': 'https://kfp.example.com'}
  assert call['run']['pipeline_file'] == str(tmp_path / 'spec.json')
  with pytest.raises(ValueError, match='needs --kfp-endpoint'):
    runner.main(compile_args(tmp_path, 'spec.json', '--submit', 'kfp'))


def sdk_recorder(calls, name, real, returns=None):
  """A stand-in for `real`, a function or method of a remote service's SDK: it binds
  each call to `real`'s signature, so a keyword the SDK does not take (misspelled, or
  removed in a newer release) raises TypeError as the SDK would, then records the call
  as `(name, {parameter: value})` and returns `returns`."""
  signature = inspect.signature(real)
  # With **kwargs in the real signature any keyword would bind, and the check be void.
  assert all(p.kind is not p.VAR_KEYWORD for p in signature.parameters.values()), real

  def record(*args, **kwargs):
    bound = signature.bind(*args, **kwargs).arguments
    calls.append((name, {k: v for k, v in bound.items() if k != 'self'}))
    return returns

  return record


def test_submit_calls_the_vertex_and_kfp_clients(tmp_path, monkeypatch):
  # Vertex AI and a Kubeflow endpoint cannot be reached from the tests: their client
  # classes are replaced by recorders, which check what the helpers hand them against
  # the signatures of the installed SDK's methods (see `sdk_recorder`).
  from google.cloud import aiplatform  # pylint: disable=g-import-not-at-top
  import kfp  # pylint: disable=g-import-not-at-top
  calls = []
  run = type('Run', (), {'run_id': 'run-1'})()

  class FakePipelineJob:
    resource_name = 'projects/p/locations/r/pipelineJobs/1'
    __init__ = sdk_recorder(calls, 'job', aiplatform.PipelineJob.__init__)
    submit = sdk_recorder(calls, 'submit', aiplatform.PipelineJob.submit)

  class FakeClient:
    __init__ = sdk_recorder(calls, 'client', kfp.Client.__init__)
    create_run_from_pipeline_package = sdk_recorder(
        calls, 'run', kfp.Client.create_run_from_pipeline_package, run)

  monkeypatch.setattr(aiplatform, 'init', sdk_recorder(calls, 'init', aiplatform.init))
  monkeypatch.setattr(aiplatform, 'PipelineJob', FakePipelineJob)
  monkeypatch.setattr(kfp, 'Client', FakeClient)
  args = runner.parse_args(compile_args(tmp_path, 'spec.json', '--project', 'p', '--region',
                                        'r', '--service-account', 'sa@p.iam.gserviceaccount.com',
                                        '--kfp-endpoint', 'https://kfp'))
  assert runner.submit_vertex(args) == FakePipelineJob.resource_name
  assert runner.submit_kfp(args) == 'run-1'
  assert calls == [
      ('init', {'project': 'p', 'location': 'r'}),
      ('job', {'display_name': 'tfrecorder-demo', 'template_path': str(tmp_path / 'spec.json'),
               'pipeline_root': 'gs://my-bucket/tfx', 'enable_caching': True}),
      ('submit', {'service_account': 'sa@p.iam.gserviceaccount.com'}),
      ('client', {'host': 'https://kfp'}),
      ('run', {'pipeline_file': str(tmp_path / 'spec.json'), 'arguments': {},
               'run_name': 'tfrecorder-demo', 'experiment_name': 'tfrecorder-demo',
               'enable_caching': True})]


def executor_input(spec, task, inputs, outputs, output_file):
  """The ExecutorInput that Vertex AI / KFP hand the container for `task`, built from
  the compiled spec: artifacts with the compiled type schemas, the task's constant
  parameters, and local URIs."""
  component = spec['components'][spec['root']['dag']['tasks'][task]['componentRef']['name']]
  params = spec['root']['dag']['tasks'][task]['inputs']['parameters']

  def artifacts(definitions, uris):
    return {name: {'artifacts': [{
        'name': f'projects/1/locations/r/metadataStores/default/artifacts/{name}',
        'type': definitions[name]['artifactType'], 'uri': uri, 'metadata': {}}]}
            for name, uri in uris.items()}

  return {
      'inputs': {
          'artifacts': artifacts(component['inputDefinitions']['artifacts'], inputs),
          'parameterValues': {k: v['runtimeValue']['constant'] for k, v in params.items()},
      },
      'outputs': {
          'artifacts': artifacts(component['outputDefinitions']['artifacts'], outputs),
          'outputFile': output_file,
      },
  }


def test_image_example_gen_through_the_kubeflow_v2_container_entry_point(tmp_path):
  data = tmp_path / 'data'
  uris = [f'images/{i}.{"jpg" if i % 2 else "png"}' for i in range(12)]
  for i, uri in enumerate(uris):
    write_image(str(data / uri), 'JPEG' if i % 2 else 'PNG', 'RGB', 8 + i, 10, seed=i)
  ml_use = lambda i: ('TRAIN', 'VALIDATION', 'TEST', '')[i % 4]
  manifest = write_text(str(data / 'manifest.csv'), 'split,image_uri,label\n' + ''.join(
      f'{ml_use(i)},{u},{("cat", "dog")[i % 2]}\n' for i, u in enumerate(uris)))
  spec_path = tmp_path / 'spec.json'
  assert runner.main(['--pipeline-root', str(tmp_path / 'root'), '--manifest-uri', manifest,
                      '--image', IMAGE, '--output', str(spec_path)]) == 0
  with open(spec_path, encoding='utf-8') as f:
    spec = json.load(f)

  task_root = tmp_path / 'root' / 'ImageExampleGen_1234'
  invocation = executor_input(
      spec, 'ImageExampleGen', {'manifest': manifest},
      {'examples': str(task_root / 'examples'), 'report': str(task_root / 'report')},
      str(task_root / 'executor_output.json'))
  container = executor_of(spec, 'ImageExampleGen')['container']
  args = [json.dumps(invocation) if a == '{{$}}' else a for a in container['args']]
  # The image's command, with this interpreter for `python`.
  command = [sys.executable, *container['command'][1:], *args]
  done = subprocess.run(command, capture_output=True, text=True, cwd=str(tmp_path),
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'), timeout=600)
  assert done.returncode == 0, done.stderr[-4000:]

  expected = {u: {'TRAIN': 'train', 'VALIDATION': 'eval', 'TEST': 'test'}.get(ml_use(i))
              or hash_split(u, DEFAULT_BUCKETS) for i, u in enumerate(uris)}
  split_names = sorted(set(expected.values()) | {'train', 'eval', 'test'})
  records = by_source_id(str(task_root / 'examples'), split_names)
  assert {uri: split for uri, (split, _) in records.items()} == expected
  for i, uri in enumerate(uris):
    example = records[uri][1]
    with open(data / uri, 'rb') as f:
      assert feature(example, 'image/encoded') == [f.read()]
    assert feature(example, 'image/height') == [8 + i]
    assert feature(example, 'image/class/text') == [('cat', 'dog')[i % 2].encode()]

  with open(task_root / 'executor_output.json', encoding='utf-8') as f:
    output = json.load(f)
  [examples] = output['artifacts']['examples']['artifacts']
  assert examples['uri'] == str(task_root / 'examples')
  assert examples['name'].endswith('/artifacts/examples')
  assert json.loads(examples['metadata']['split_names']) == ['train', 'eval', 'test']
  counts = examples['metadata']['record_counts']
  assert {k: int(v) for k, v in counts.items()} == {
      s: sum(1 for v in expected.values() if v == s) for s in ('train', 'eval', 'test')}
  [report] = output['artifacts']['report']['artifacts']
  with open(os.path.join(report['uri'], 'summary.json'), encoding='utf-8') as f:
    assert json.load(f)['records_written'] == len(uris)


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Run by a worker-like interpreter: the conversion's DoFns and CombineFns, unpickled from
# the job graph with only the package that setup.py built (not this checkout) importable.
_UNPICKLE_AS_A_WORKER = '''
import sys
from apache_beam.internal import pickler
from apache_beam.portability import common_urns
from apache_beam.portability.api import beam_runner_api_pb2
import tfrecorder_component
assert tfrecorder_component.__file__.startswith(sys.argv[2]), tfrecorder_component.__file__
proto = beam_runner_api_pb2.Pipeline.FromString(open(sys.argv[1], 'rb').read())
loaded = []
for transform in proto.components.transforms.values():
  urn, payload = transform.spec.urn, transform.spec.payload
  if urn == common_urns.primitives.PAR_DO.urn:
    fn = beam_runner_api_pb2.ParDoPayload.FromString(payload).do_fn
  elif urn in (common_urns.composites.COMBINE_PER_KEY.urn,
               common_urns.composites.COMBINE_GLOBALLY.urn):
    fn = beam_runner_api_pb2.CombinePayload.FromString(payload).combine_fn
  else:
    continue
  if fn.urn == 'beam:dofn:pickled_python_info:v1' or fn.urn.endswith('pickled_python:v1'):
    loaded.append(repr(pickler.loads(fn.payload)))
modules = sorted(m for m in sys.modules if m.startswith('tfrecorder_component'))
print(len(loaded), ' '.join(modules))
'''


def test_dataflow_dry_run_builds_the_job_graph_and_its_package_is_complete(tmp_path,
                                                                          monkeypatch):
  import tarfile  # pylint: disable=g-import-not-at-top
  import apache_beam as beam  # pylint: disable=g-import-not-at-top
  from apache_beam.options.pipeline_options import GoogleCloudOptions, PipelineOptions  # pylint: disable=g-import-not-at-top
  from apache_beam.portability.api import beam_runner_api_pb2  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.engines.beam.pipeline import ConvertManifests  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.options import ConversionOptions, ManifestSource  # pylint: disable=g-import-not-at-top
  from apache_beam.io.gcp import gcsio  # pylint: disable=g-import-not-at-top
  # Validating the options asks Cloud Storage whether the temp bucket has a soft-delete
  # policy; the service cannot be reached from the tests, so the answer is "no".
  monkeypatch.setattr(gcsio.GcsIO, 'is_soft_delete_enabled', lambda self, path: False)
  # The arguments the pipeline image gives ImageExampleGen, with this checkout's
  # setup.py; --dry_run builds and checks the job but submits nothing, and needs no
  # credentials (--no_auth).
  args = runner.dataflow_args('my-project', 'europe-west4', 'gs://my-bucket/tmp',
                              setup_file=os.path.join(REPO, 'setup.py'))
  options = PipelineOptions(args + ['--dry_run=True', '--no_auth',
                                    '--job_name=tfrecorder-dry-run'])
  p = beam.Pipeline(options=options)
  splits = {s: f'gs://my-bucket/out/Split-{s}' for s in ('train', 'eval', 'test')}
  _ = p | ConvertManifests([ManifestSource('gs://my-bucket/digits/manifest.csv')], splits,
                           'gs://my-bucket/out', 'gs://my-bucket/out/report',
                           ConversionOptions(num_shards=64))
  result = p.run()
  job = result.job
  assert job.proto.name == 'tfrecorder-dry-run'
  assert job.proto.type.name == 'JOB_TYPE_BATCH'
  cloud = job.options.view_as(GoogleCloudOptions)
  assert (cloud.project, cloud.region) == ('my-project', 'europe-west4')
  assert cloud.temp_location.startswith('gs://my-bucket/tmp/tfrecorder-dry-run.')
  names = {t.unique_name for t in job.proto_pipeline.components.transforms.values()}
  for step in ('ConvertManifests/ReadManifestRows/Parse', 'ConvertManifests/Convert',
               'ConvertManifests/WriteSplits/WriteBundles',
               'ConvertManifests/WriteSplits/WriteShards', 'ConvertManifests/WriteLabelFiles',
               'ConvertManifests/WriteReport/FindDuplicates/MergeRange',
               'ConvertManifests/Summarize'):
    assert any(n == step or n.startswith(step + '/') for n in names), step

  # The package Beam built from setup.py, staged for the workers to install.
  staged = {}
  for env in job.proto_pipeline.components.environments.values():
    for dep in env.dependencies:
      role = beam_runner_api_pb2.ArtifactStagingToRolePayload.FromString(dep.role_payload)
      path = beam_runner_api_pb2.ArtifactFilePayload.FromString(dep.type_payload).path
      staged[role.staged_name] = path
  assert 'workflow.tar.gz' in staged, sorted(staged)
  with tarfile.open(staged['workflow.tar.gz']) as tar:
    members = {m.split('/', 1)[1] for m in tar.getnames() if '/' in m}
    tar.extractall(tmp_path / 'sdist')
  sources = {os.path.relpath(os.path.join(d, f), REPO)
             for d, _, fs in os.walk(os.path.join(REPO, 'tfrecorder_component'))
             for f in fs if f.endswith('.py')}
  assert sources and sources <= members, sorted(sources - members)

  [root] = os.listdir(tmp_path / 'sdist')
  package_root = str(tmp_path / 'sdist' / root)
  pipeline_file = tmp_path / 'pipeline.pb'
  pipeline_file.write_bytes(job.proto_pipeline.SerializeToString())
  done = subprocess.run([sys.executable, '-c', _UNPICKLE_AS_A_WORKER, str(pipeline_file),
                         package_root], capture_output=True, text=True, cwd=str(tmp_path),
                        env=dict(os.environ, PYTHONPATH=package_root), timeout=300)
  assert done.returncode == 0, done.stderr[-3000:]
  count, *modules = done.stdout.split()
  assert int(count) >= 10
  assert 'tfrecorder_component.engines.beam.convert_batches' in modules
  assert 'tfrecorder_component.engines.beam.sink' in modules
