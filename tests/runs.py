"""How the tests run a conversion, shared by the test modules that need one: Beam's
`ConvertManifests` in this process, the command line, a TFX pipeline on LocalDagRunner
with SQLite ML Metadata, a compiled Vertex AI pipeline run task by task
(`kubeflow.local_run`), and what a run leaves in its output folder. Beam, TFX and the
compiler are imported by the helpers that use them, not by the tests that do not."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

from tfrecorder_component.options import ConversionOptions

SPLITS = ['train', 'eval', 'test']
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(os.path.dirname(sys.executable), 'tfrecorder-component')
REFUSAL_LINES = 5  # the most lines of a refusal on stderr
# LocalDagRunner's Beam: one worker in this process, as the pipeline tests need
BEAM_ARGS = ['--direct_running_mode=in_memory', '--direct_num_workers=1']
IMAGE = 'us-docker.pkg.dev/my-project/pipelines/tfrecorder-component:0.1.0'


def convert(tmp_path, sources, options=ConversionOptions(), pipeline_args=None):
  """`ConvertManifests` of `sources` in a Beam pipeline of this process, into
  tmp_path/out (a Split-<name> folder for each of SPLITS) and tmp_path/report:
  (output folder, summary.json, errors.jsonl's records)."""
  import apache_beam as beam  # pylint: disable=g-import-not-at-top
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.engines.beam.pipeline import ConvertManifests  # pylint: disable=g-import-not-at-top
  out = str(tmp_path / 'out')
  report = str(tmp_path / 'report')
  with beam.Pipeline(options=PipelineOptions(pipeline_args or [])) as p:
    _ = p | ConvertManifests(sources, {s: os.path.join(out, f'Split-{s}') for s in SPLITS},
                             out, report, options)
  with open(os.path.join(report, 'summary.json')) as f:
    summary = json.load(f)
  with open(os.path.join(report, 'errors.jsonl')) as f:
    errors = [json.loads(l) for l in f]
  return out, summary, errors


def run_cli(*args, timeout=300):
  """The installed `tfrecorder-component` command with `args`: its finished process."""
  return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))


def summary_of(output_dir):
  """The run's summary.json, in `output_dir`/report."""
  with open(os.path.join(output_dir, 'report', 'summary.json'), encoding='utf-8') as f:
    return json.load(f)


def refusal_lines(done):
  """The lines of a refusal (`done`, a finished CLI process), asserted to be one: exit
  status 1, no traceback, `error: ` first, at most REFUSAL_LINES lines."""
  assert done.returncode == 1, (done.returncode, done.stdout, done.stderr[-3000:])
  assert 'Traceback' not in done.stderr
  lines = done.stderr.strip().splitlines()
  assert lines[0].startswith('error: ') and len(lines) <= REFUSAL_LINES, done.stderr
  return lines


def tree(folder):
  """{relative path: sha256} of every file under `folder`, the report's run-dependent
  files (summary.json's timings, the page) left out; folders too, as None."""
  found = {}
  for d, dirs, names in os.walk(folder):
    for name in dirs:
      found[os.path.relpath(os.path.join(d, name), folder)] = None
    for name in names:
      rel = os.path.relpath(os.path.join(d, name), folder)
      if rel in ('report/summary.json', 'report/report.html'):
        found[rel] = 'run-dependent'
        continue
      with open(os.path.join(d, name), 'rb') as f:
        found[rel] = hashlib.sha256(f.read()).hexdigest()
  return found


def run(components, root, name):
  """A TFX pipeline of `components` named `name` on LocalDagRunner, its root and its
  SQLite ML Metadata under `root`, cache on: the metadata connection config."""
  from tfx import v1 as tfx  # pylint: disable=g-import-not-at-top
  config = tfx.orchestration.metadata.sqlite_metadata_connection_config(
      os.path.join(root, 'metadata.db'))
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name=name, pipeline_root=os.path.join(root, 'root'), components=components,
      metadata_connection_config=config, enable_cache=True, beam_pipeline_args=BEAM_ARGS))
  return config


def run_spec(spec_path, work, *args):
  """`python -m kubeflow.local_run SPEC --work WORK ARGS`: (process, last-line JSON)."""
  done = subprocess.run([sys.executable, '-m', 'kubeflow.local_run', str(spec_path),
                         '--work', str(work), *args], capture_output=True, text=True,
                        cwd=REPO, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'),
                        timeout=1800, check=False)
  lines = done.stdout.strip().splitlines()
  assert lines, done.stderr[-4000:]
  return done, json.loads(lines[-1])


def only(outputs, key):
  """The one artifact of `outputs`[key] (a task's outputs), asserted to be one."""
  [artifact] = outputs[key]
  return artifact


def compile_with_defaults(pipeline, path):
  """As TFX's tutorials compile for Vertex AI: `KubeflowV2DagRunnerConfig(default_image=)`
  and nothing else, so pipeline-spec schema 2.0, written as a PipelineJob JSON at
  `path`; the spec as `kubeflow.local_run` loads it."""
  from tfx import v1 as tfx  # pylint: disable=g-import-not-at-top
  from kubeflow import local_run  # pylint: disable=g-import-not-at-top
  config = tfx.orchestration.experimental.KubeflowV2DagRunnerConfig(default_image=IMAGE)
  tfx.orchestration.experimental.KubeflowV2DagRunner(
      config=config, output_dir=str(path.parent), output_filename=path.name).run(pipeline)
  with open(path, encoding='utf-8') as f:
    job = json.load(f)
  assert job['pipelineSpec']['schemaVersion'] == '2.0.0'
  return local_run.load_spec(str(path))


def run_executor(tmp_path, manifest_uri):
  """ImageExampleGen's executor alone (`Executor().Do`) on the manifest at
  `manifest_uri`, with the component's default configs and no error allowed; the
  Examples and report artifacts under tmp_path."""
  # pylint: disable=g-import-not-at-top
  from tfx.components.example_gen import utils as example_gen_utils
  from tfx.types import standard_artifacts
  from tfx.utils import proto_utils
  from tfrecorder_component import ImageManifest
  from tfrecorder_component.adapters.component import executor as executor_lib
  from tfrecorder_component.adapters.component.component import default_output_config
  from tfrecorder_component.adapters.component.types import ConversionReport
  # pylint: enable=g-import-not-at-top
  manifest = ImageManifest()
  manifest.uri = manifest_uri
  examples, report = standard_artifacts.Examples(), ConversionReport()
  examples.uri, report.uri = str(tmp_path / 'examples'), str(tmp_path / 'report')
  props = {
      'input_config': proto_utils.proto_to_json(example_gen_utils.make_default_input_config()),
      'output_config': proto_utils.proto_to_json(default_output_config()),
      'max_pixels': 10**8, 'max_bytes': 10**6, 'max_error_ratio': 0.0,
      'convert_unsupported': 0, 'compression_level': 0, 'verify_decode': 1,
  }
  executor_lib.Executor().Do({'manifest': [manifest]},
                             {'examples': [examples], 'report': [report]}, props)
