"""Compiles the demo pipeline for Vertex AI Pipelines and Kubeflow Pipelines 2.x, and
optionally submits it.

    python -m kubeflow.runner --pipeline-root gs://BUCKET/tfx \\
        --manifest-uri gs://BUCKET/digits/manifest.csv \\
        --image REGION-docker.pkg.dev/PROJECT/REPO/tfrecorder-component:0.1.0 \\
        [--output tfrecorder_demo.yaml] [--dataflow --project P --region R \\
         --temp-location gs://BUCKET/tmp] [--submit vertex|kfp [--dry-run]]

The pipeline is the one `pipelines/pipeline.py` defines (the same that LocalDagRunner
runs), compiled with TFX's `KubeflowV2DagRunner` into a KFP pipeline spec (schema 2.1,
with the pipeline root as `defaultPipelineRoot`), written as JSON or YAML by the
output's extension: both Vertex AI Pipelines and Kubeflow Pipelines 2.x take it.

`--dataflow` runs ImageExampleGen and StatisticsGen on Dataflow: their containers start
Dataflow jobs whose workers get this package from `--worker-image` (a custom SDK
container) or, by default, from the image's `setup.py` (`--setup_file`).

Nothing here reaches Google Cloud unless `--submit` is given without `--dry-run`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional

from tfrecorder_component.engines import run

PIPELINE_NAME = 'tfrecorder-demo'
# Where the Dockerfile puts the package's source inside the pipeline image.
IMAGE_PROJECT_DIR = '/tfrecorder'
IMAGE_SETUP_FILE = f'{IMAGE_PROJECT_DIR}/src/setup.py'
# Inside a pipeline container, components that stay on the DirectRunner use the
# container's cores.
CONTAINER_BEAM_ARGS = ['--direct_running_mode=multi_processing', '--direct_num_workers=0']


def dataflow_args(project: str, region: str, temp_location: str, *,
                  worker_image: Optional[str] = None, setup_file: str = IMAGE_SETUP_FILE,
                  **options) -> List[str]:
  """`tfrecorder_component.engines.run.dataflow_args` for the pipeline image: without a
  `worker_image`, workers build the package from the image's own setup.py."""
  return run.dataflow_args(project, region, temp_location, worker_image=worker_image,
                           setup_file=setup_file, **options)


def build_pipeline(args: argparse.Namespace):
  """The demo pipeline with container paths and, with --dataflow, Dataflow arguments."""
  from pipelines import pipeline as demo  # pylint: disable=g-import-not-at-top
  heavy = None
  if args.dataflow:
    heavy = dataflow_args(args.project, args.region, args.temp_location,
                          worker_image=args.worker_image,
                          max_num_workers=args.max_num_workers,
                          service_account=args.service_account,
                          machine_type=args.machine_type)
  root = args.pipeline_root.rstrip('/')
  return demo.create_pipeline(
      args.pipeline_name, root, args.manifest_uri,
      args.serving_model_dir or f'{root}/serving_model',
      beam_pipeline_args=list(CONTAINER_BEAM_ARGS), heavy_beam_pipeline_args=heavy,
      module_file=None, run_fn=demo.TRAINER_RUN_FN, train_steps=args.train_steps,
      min_accuracy=args.min_accuracy)


def compile_spec(pipeline, image: str, output: str) -> Dict[str, Any]:
  """Compiles `pipeline` with KubeflowV2DagRunner and writes the KFP pipeline spec to
  `output` (`.json`, or `.yaml` / `.yml`). Returns the spec as a dict."""
  from tfx import v1 as tfx  # pylint: disable=g-import-not-at-top
  config = tfx.orchestration.experimental.KubeflowV2DagRunnerConfig(
      default_image=image, use_pipeline_spec_2_1=True)
  runner = tfx.orchestration.experimental.KubeflowV2DagRunner(config=config)
  job = runner.run(pipeline, write_out=False)
  spec = dict(job['pipelineSpec'])
  spec['defaultPipelineRoot'] = pipeline.pipeline_info.pipeline_root
  os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
  with open(output, 'w', encoding='utf-8') as f:
    if output.endswith(('.yaml', '.yml')):
      import yaml  # pylint: disable=g-import-not-at-top
      yaml.safe_dump(spec, f, sort_keys=False)
    else:
      json.dump(spec, f, indent=2, sort_keys=True)
  return spec


def vertex_submission(args: argparse.Namespace) -> Dict[str, Any]:
  """What `submit_vertex` passes to `aiplatform.PipelineJob`, and to `submit`."""
  if not (args.project and args.region):
    raise ValueError('submitting to Vertex AI needs --project and --region')
  return {
      'init': {'project': args.project, 'location': args.region},
      'job': {'display_name': args.pipeline_name, 'template_path': os.path.abspath(args.output),
              'pipeline_root': args.pipeline_root, 'enable_caching': args.enable_caching},
      'submit': {'service_account': args.service_account},
  }


def submit_vertex(args: argparse.Namespace) -> str:
  """Starts a Vertex AI PipelineJob from the compiled spec; returns its resource name."""
  from google.cloud import aiplatform  # pylint: disable=g-import-not-at-top
  call = vertex_submission(args)
  aiplatform.init(**call['init'])
  job = aiplatform.PipelineJob(**call['job'])
  job.submit(**call['submit'])
  return job.resource_name


def kfp_submission(args: argparse.Namespace) -> Dict[str, Any]:
  """What `submit_kfp` passes to `kfp.Client` and `create_run_from_pipeline_package`."""
  if not args.kfp_endpoint:
    raise ValueError('submitting to Kubeflow Pipelines needs --kfp-endpoint')
  return {
      'client': {'host': args.kfp_endpoint},
      'run': {'pipeline_file': os.path.abspath(args.output), 'arguments': {},
              'run_name': args.pipeline_name, 'experiment_name': args.kfp_experiment,
              'enable_caching': args.enable_caching},
  }


def submit_kfp(args: argparse.Namespace) -> str:
  """Starts a run on a Kubeflow Pipelines 2.x endpoint; returns the run id."""
  import kfp  # pylint: disable=g-import-not-at-top
  call = kfp_submission(args)
  client = kfp.Client(**call['client'])
  return client.create_run_from_pipeline_package(**call['run']).run_id


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--pipeline-root', required=True,
                      help='where the pipeline writes its artifacts, e.g. gs://BUCKET/tfx')
  parser.add_argument('--manifest-uri', required=True,
                      help='the image manifest (file or folder) the pipeline converts')
  parser.add_argument('--image', required=True,
                      help='the pipeline image built from kubeflow/Dockerfile')
  parser.add_argument('--output', default=f'{PIPELINE_NAME}.json',
                      help='the pipeline spec to write (.json or .yaml)')
  parser.add_argument('--pipeline-name', default=PIPELINE_NAME)
  parser.add_argument('--serving-model-dir', help='default: <pipeline root>/serving_model')
  parser.add_argument('--train-steps', type=int, default=400)
  parser.add_argument('--min-accuracy', type=float, default=0.9)
  parser.add_argument('--project', help='Google Cloud project (Vertex AI, Dataflow)')
  parser.add_argument('--region', help='Google Cloud region (Vertex AI, Dataflow)')
  parser.add_argument('--service-account',
                      help='service account the Vertex AI job and Dataflow workers run as')
  parser.add_argument('--dataflow', action='store_true',
                      help='run ImageExampleGen and StatisticsGen on Dataflow')
  parser.add_argument('--temp-location', help='gs:// folder for Dataflow temporary files')
  parser.add_argument('--worker-image',
                      help='Dataflow SDK container image with this package (default: '
                      'workers install it from the image\'s setup.py)')
  parser.add_argument('--max-num-workers', type=int)
  parser.add_argument('--machine-type')
  parser.add_argument('--submit', choices=('vertex', 'kfp'),
                      help='submit the compiled spec to Vertex AI or a Kubeflow endpoint')
  parser.add_argument('--kfp-endpoint', help='Kubeflow Pipelines API endpoint (--submit kfp)')
  parser.add_argument('--kfp-experiment', default=PIPELINE_NAME)
  parser.add_argument('--no-cache', dest='enable_caching', action='store_false')
  parser.add_argument('--dry-run', action='store_true',
                      help='print what would be submitted instead of submitting')
  return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
  args = parse_args(argv)
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  spec = compile_spec(build_pipeline(args), args.image, args.output)
  tasks = sorted(spec['root']['dag']['tasks'])
  print(f'Compiled {len(tasks)} tasks ({", ".join(tasks)}) to {args.output}')
  if not args.submit:
    return 0
  call = vertex_submission(args) if args.submit == 'vertex' else kfp_submission(args)
  if args.dry_run:
    print(f'Dry run: would submit to {args.submit}:')
    print(json.dumps(call, indent=2))
    return 0
  submitted = submit_vertex(args) if args.submit == 'vertex' else submit_kfp(args)
  print(f'Submitted to {args.submit}: {submitted}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
