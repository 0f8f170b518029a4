"""`python -m kubeflow.local_run`: the command line."""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from kubeflow.local_run.orchestrator import FAILED, PROJECT_DIR, LocalRun
from kubeflow.local_run.spec import load_spec


def _parameter(text: str):
  name, _, value = text.partition('=')
  if not name or not _:
    raise argparse.ArgumentTypeError(f'expected NAME=VALUE, got {text!r}')
  try:
    return name, json.loads(value)
  except json.JSONDecodeError:
    return name, value


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      prog='python -m kubeflow.local_run',
      description='Runs a pipeline spec compiled by KubeflowV2DagRunner on this machine, '
      'as Vertex AI Pipelines runs it: ML Metadata, resolvers and caching.')
  parser.add_argument('spec', help='pipeline spec compiled by KubeflowV2DagRunner (.json/.yaml)')
  parser.add_argument('--work', required=True,
                      help='folder for task logs and inputs, and the default ML Metadata store')
  parser.add_argument('--metadata', metavar='PATH',
                      help='ML Metadata SQLite file (default: WORK/metadata.sqlite); runs '
                      'sharing it share lineage, resolver answers and the cache')
  parser.add_argument('--no-cache', dest='cache', action='store_false',
                      help='run every task, as PipelineJob(enable_caching=False)')
  parser.add_argument('--pipeline-root',
                      help="where artifacts go (default: the spec's defaultPipelineRoot)")
  parser.add_argument('--python', default=sys.executable,
                      help="the interpreter that plays the image's `python`")
  parser.add_argument('--image-path', default=PROJECT_DIR,
                      help="the image's WORKDIR and PYTHONPATH (default: this checkout)")
  parser.add_argument('--param', action='append', type=_parameter, default=[],
                      metavar='NAME=VALUE', help='a pipeline parameter (JSON or text)')
  parser.add_argument('--platform', choices=('vertex', 'kfp'), default='vertex',
                      help='vertex runs preCacheCheck hooks; kfp (KFP 2.x) does not')
  parser.add_argument('--run-id')
  args = parser.parse_args(argv)
  spec = load_spec(args.spec)
  run = LocalRun(spec, args.work, pipeline_root=args.pipeline_root, python=args.python,
                 image_path=args.image_path, parameters=dict(args.param),
                 platform=args.platform, run_id=args.run_id, metadata=args.metadata,
                 cache=args.cache)
  result = run.run()
  print(json.dumps(result, sort_keys=True))
  return 1 if any(t['state'] == FAILED for t in result['tasks'].values()) else 0
