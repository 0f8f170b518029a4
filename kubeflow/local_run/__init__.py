"""Runs a compiled KFP v2 pipeline spec on this machine, task by task, the way Vertex AI
Pipelines (and, with `--platform kfp`, Kubeflow Pipelines 2.x) run it, with an ML
Metadata store, resolvers and caching.

    python -m kubeflow.local_run SPEC --work DIR [--metadata PATH] [--no-cache]
        [--pipeline-root ROOT] [--python PYTHON] [--image-path DIR]
        [--param NAME=VALUE ...] [--platform vertex|kfp] [--run-id ID]

SPEC is what `KubeflowV2DagRunner` compiles, with its defaults (pipeline-spec schema
2.0, typed parameters) or `use_pipeline_spec_2_1=True`, from TFX 1.16 to 1.21: a bare
PipelineSpec or a PipelineJob with `pipelineSpec` and `runtimeConfig`, JSON or YAML.

Rooms, as KFP's own backend splits them:
- `spec`: reading the spec, its parameter forms and artifact types, CEL conditions;
- `launcher`: one container task's ExecutorInput, placeholders, processes and executor
  output (backend/src/v2/component/launcher_v2.go);
- `store`: the ML Metadata store (contexts, executions, artifacts, events), resolver
  queries and cache look-ups;
- `orchestrator`: the DAG, importers, resolvers, driver hooks and the cache;
- `cli`: the command line.

The last line on stdout is one JSON object: `{"run_id": ..., "metadata": PATH,
"tasks": {"<task>": {"state": "SUCCEEDED" | "FAILED", "cached": bool, "execution_id":
N, "outputs": {"<key>": [{"uri": ..., "metadata": {...}}]}}}, "not_run": [...]}`.
"""
from kubeflow.local_run import launcher, spec, store
from kubeflow.local_run.cli import main
from kubeflow.local_run.launcher import local_path
from kubeflow.local_run.orchestrator import FAILED, PROJECT_DIR, SUCCEEDED, LocalRun, cache_key
from kubeflow.local_run.spec import SpecError, load_spec
from kubeflow.local_run.store import Store, connection_config

__all__ = ['FAILED', 'launcher', 'spec', 'store', 'PROJECT_DIR', 'SUCCEEDED', 'LocalRun',
           'SpecError', 'Store',
           'cache_key', 'connection_config', 'load_spec', 'local_path', 'main']
