"""The one way a conversion runs, for the component's executor and for `convert()`:
Beam arguments for a runner, the conversion run either by Beam (`ConvertManifests` in a
pipeline) or, for a DirectRunner run on local, gs:// or s3:// files that asks nothing
else of Beam, by this machine's cores without Beam (`local.pipeline.convert_locally`: the same
steps, the same bytes, seconds less to start; on object storage the workers upload their
shards as they write them, and the label files and report are staged on local disk,
then uploaded: `staging`), and the summary read back (the error policy is
`policy.apply_error_policy`).

Length: one run from the Beam arguments to the summary read back, with the rule for when a
run needs Beam beside the choice of engine it decides.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from tfrecorder_component import extras
from tfrecorder_component.io import files
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.io import storage
from tfrecorder_component.errors import UsageError
from tfrecorder_component.options import ConversionOptions, ManifestSource
from tfrecorder_component.output.progress import Progress

# Small runs on Beam: the in-memory DirectRunner starts in about a second; worker
# processes cost some 5 s to start, which a larger run earns back on every core.
DEFAULT_DIRECT_ARGS = ('--direct_running_mode=in_memory', '--direct_num_workers=1')
# From this many manifest rows, a Beam DirectRunner run with no direct-runner flags uses
# every core. On 2 cores (benchmarks, whole runs, 256x256 JPEGs): 3,000 rows 5.5 s in
# memory against 7.0 s in processes, 10,000 rows 10.0 s against 9.4 s, 20,000 rows 16.8 s
# against 12.8 s.
PARALLEL_FROM_ROWS = 8_000
# A local run (no Beam) forks one worker process for about this many manifest rows, up
# to one a core: a fork costs milliseconds, and each worker writes its own shard of
# each split, so a small run stays one shard a split.
LOCAL_ROWS_PER_WORKER = 1_000
# The environment variable that sets how many worker processes a local run takes (a
# whole number, 1 or more), whatever its rows; still at most one per chunk of rows.
LOCAL_WORKERS_ENV = 'TFRECORDER_LOCAL_WORKERS'
_DIRECT_FLAGS = ('--direct_running_mode', '--direct_num_workers')
# Beam arguments that tell Dataflow how its workers get this package.
_PACKAGE_ARGS = ('--setup_file', '--sdk_container_image', '--extra_package', '--requirements_file')
# setup.py of a source checkout this package runs from (absent when installed from a wheel).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # engines/..
SOURCE_SETUP_FILE = os.path.join(os.path.dirname(_PACKAGE_DIR), 'setup.py')


def dataflow_args(project: str, region: str, temp_location: str, *,
                  worker_image: Optional[str] = None, setup_file: Optional[str] = None,
                  max_num_workers: Optional[int] = None,
                  service_account: Optional[str] = None,
                  machine_type: Optional[str] = None) -> List[str]:
  """Beam arguments that run a conversion on Dataflow.

  Workers get this package either from `worker_image` (an SDK container image that has
  it installed, such as the pipeline image) or from `setup_file`, which Beam builds into
  a source package and installs on every worker.

  Args:
    machine_type: The workers' Compute Engine machine type (`--machine_type`); None:
      Dataflow's default.
    max_num_workers: The most workers Dataflow's autoscaling may start; None or 0:
      Dataflow's default.
    project: The Google Cloud project the job runs in; required.
    region: The Dataflow region (`us-central1`, ...); required.
    service_account: The email of the service account the workers run as; None: the
      project's default one.
    setup_file: A setup.py that Beam builds and installs on every worker; used only
      without `worker_image`.
    temp_location: A gs:// folder for Dataflow's temporary and staged files; required.
    worker_image: An SDK container image with this package installed
      (`--sdk_container_image`); None: `setup_file` ships the package, if given.

  Raises:
    UsageError: `project`, `region` or `temp_location` is missing, or `temp_location` is
      not a gs:// path.
  """
  for name, value in (('project', project), ('region', region),
                      ('temp_location', temp_location)):
    if not value:
      raise UsageError(f'Dataflow needs --{name.replace("_", "-")}')
  if not temp_location.startswith('gs://'):
    raise UsageError(f'--temp-location must be a gs:// path for Dataflow, got '
                     f'{temp_location!r}')
  args = ['--runner=DataflowRunner', f'--project={project}', f'--region={region}',
          f'--temp_location={temp_location}']
  if worker_image:
    args.append(f'--sdk_container_image={worker_image}')
  elif setup_file:
    args.append(f'--setup_file={setup_file}')
  if max_num_workers:
    args.append(f'--max_num_workers={max_num_workers}')
  if service_account:
    args.append(f'--service_account_email={service_account}')
  if machine_type:
    args.append(f'--machine_type={machine_type}')
  return args


def beam_pipeline_args(runner: str = 'DirectRunner', project: Optional[str] = None,
                       region: Optional[str] = None, temp_location: Optional[str] = None,
                       beam_args: Optional[Sequence[str]] = ()) -> List[str]:
  """Beam arguments for `runner`, then `beam_args` (None: none). DataflowRunner needs
  project, region and a gs:// temp_location; its workers get this package from the
  source checkout's setup.py, unless `beam_args` say how (`--sdk_container_image`,
  `--extra_package`).

  Args:
    beam_args: Further Beam arguments, appended after the runner's; they may say how
      Dataflow's workers get the package (`--setup_file`, `--sdk_container_image`,
      `--extra_package`, `--requirements_file`). None: none.
    project: The Google Cloud project (`--project`); None: not passed.
    region: The Google Cloud region (`--region`); None: not passed.
    runner: Beam's runner name; DataflowRunner (or `dataflow`) gets `dataflow_args`.
    temp_location: A folder for Beam's temporary files (`--temp_location`), a gs:// one
      for Dataflow; None: not passed.

  Raises:
    UsageError: For Dataflow, `project`, `region` or `temp_location` is missing, or
      nothing ships this package to its workers (no such argument, and no setup.py).
  """
  beam_args = list(beam_args or ())
  if runner in ('DataflowRunner', 'dataflow'):
    missing = [n for n, v in (('project', project), ('region', region),
                              ('temp_location', temp_location)) if not v]
    if missing:
      raise UsageError(f'DataflowRunner needs {", ".join(missing)}')
    given = any(a.split('=', 1)[0] in _PACKAGE_ARGS for a in beam_args)
    if not given and not os.path.exists(SOURCE_SETUP_FILE):
      raise UsageError('Dataflow workers need this package: pass '
                       '--beam-arg=--sdk_container_image=IMAGE (an image that has it '
                       'installed) or --beam-arg=--extra_package=WHEEL')
    return dataflow_args(project, region, temp_location,
                         setup_file=None if given else SOURCE_SETUP_FILE) + beam_args
  args = [f'--runner={runner}']
  for name, value in (('project', project), ('region', region),
                      ('temp_location', temp_location)):
    if value:
      args.append(f'--{name}={value}')
  return args + beam_args


def cores() -> int:
  """The cores this process may use: its CPU affinity, capped by a container's CPU quota
  (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us`), as a Kubernetes pod's limit sets it."""
  try:
    n = len(os.sched_getaffinity(0))
  except AttributeError:  # not Linux
    n = os.cpu_count() or 1
  quota = _cgroup_cpu_quota()
  return max(1, min(n, quota)) if quota else n


def _cgroup_cpu_quota() -> Optional[int]:
  for path, parse in (('/sys/fs/cgroup/cpu.max', lambda t: t.split()),
                      ('/sys/fs/cgroup/cpu/cpu.cfs_quota_us', None)):
    try:
      with open(path) as f:
        text = f.read()
      if parse:
        quota, period = parse(text)
      else:
        quota = text.strip()
        with open('/sys/fs/cgroup/cpu/cpu.cfs_period_us') as f:
          period = f.read().strip()
      if quota in ('max', '-1'):
        return None
      return -(-int(quota) // int(period))
    except (OSError, ValueError):
      continue
  return None


def estimate_rows(manifests: Sequence[str], enough: Optional[int] = None,
                  confine_to: Sequence[str] = ()) -> int:
  """About how many rows the manifest files hold, as each one's format counts them
  (`ManifestFormat.rows`): lines (CSV, JSONL), the marks that begin a row (COCO's images,
  CVAT's <image> elements), one a file (Pascal VOC, LabelMe), or the images a YOLO
  data.yaml's splits hold; read from any Beam file system in 1 MB pieces; stops counting
  once past `enough`.

  Args:
    enough: Stop counting once this many rows are counted (the count is then a lower
      bound); None: count every row.
    manifests: The manifest files' paths, on any Beam file system.
    confine_to: The run's roots (`ConversionOptions.confine_to`): a format that counts
      by reading other files (YOLO's lists) reads none outside them.
  """
  from tfrecorder_component.manifest import confine, registry  # pylint: disable=g-import-not-at-top
  confinement = confine.confinement(tuple(confine_to))
  rows = 0
  for path in manifests:
    if enough is not None and rows >= enough:
      break
    with files.open_file(path) as f:
      head = f.read(2**16)
    spec = registry.detect(path, head.decode('utf-8-sig', 'replace'))
    count = spec.rows
    if not isinstance(count, bytes):
      rows += count if isinstance(count, int) else (
          count(path, confine=confinement) if confinement and spec.reads_files else count(path))
      continue
    tail = b''
    with files.open_file(path) as f:
      while enough is None or rows < enough:
        piece = f.read(2**20)
        if not piece:
          break
        data = tail + piece
        rows += data.count(count)
        # A mark cut by the piece's end is whole in tail + next piece; the tail is too
        # short to hold a whole one, so none is counted twice.
        tail = data[-(len(count) - 1):] if len(count) > 1 else b''
  return rows


def _runner(args: Sequence[str]) -> str:
  runner = 'DirectRunner'
  for i, arg in enumerate(args):
    if arg.startswith('--runner='):
      runner = arg.split('=', 1)[1]
    elif arg == '--runner' and i + 1 < len(args):
      runner = args[i + 1]
  return runner


def refuse_local_paths(beam_args: Sequence[str], inputs: Sequence[Tuple[str, str]],
                       *outputs: str) -> None:
  """Refuses (UsageError, one line) a Dataflow run with a local input ((what, path)) or
  output, before any job is created: Dataflow's workers see none of this machine's
  files, and the job would fail only once they had started.

  Args:
    beam_args: The run's Beam arguments; only a DataflowRunner run is checked.
    inputs: (what, path) of each input file or folder (`what` names it in the error,
      as `manifest` or `image root`); an empty path is skipped.
    outputs: The output folders' paths (`convert()`'s output folder; the component's
      Examples and report artifact URIs).
  """
  if _runner(beam_args) not in ('DataflowRunner', 'dataflow'):
    return
  for what, path in [*inputs, *(('output folder', o) for o in outputs)]:
    if path and files.is_local(os.fspath(path)):
      raise UsageError(f'DataflowRunner cannot read or write the local {what} {path}: its '
                       'workers reach only gs:// (copy it there, or run on this machine '
                       'without --runner DataflowRunner)')


def runs_in_process(beam_args: Sequence[str]) -> bool:
  """Whether Beam runs `beam_args`' pipeline on this machine, from this process's Python
  environment (the DirectRunner), so that no worker needs this package shipped to it.

  Args:
    beam_args: The Beam arguments; their `--runner` (DirectRunner where none) decides.
  """
  return _runner(beam_args) in ('DirectRunner', 'direct')


# Beam arguments that ask nothing of a DirectRunner run: where Google Cloud's project,
# region and temporary files are, how remote workers would get this package, Dataflow's
# own settings. TFX pipelines pass them to every component alike (BigQuery reads need a
# project and a temp_location even on the DirectRunner); the run goes without Beam all
# the same.
_NOTHING_FOR_DIRECT = ('--project', '--region', '--temp_location', '--staging_location',
                       '--job_name', '--labels', '--service_account_email', '--machine_type',
                       '--worker_machine_type', '--max_num_workers', '--num_workers',
                       '--network', '--subnetwork', '--experiments', '--save_main_session',
                       '--pickle_library', *_PACKAGE_ARGS, '--extra_packages')


def _asks_beam(args: Sequence[str]) -> bool:
  """Whether Beam arguments other than the runner ask something of Beam itself: any
  argument not in _NOTHING_FOR_DIRECT (a `--direct_num_workers`, an option of another
  runner, a flag this does not know)."""
  skip = False
  for i, arg in enumerate(args):
    if skip:
      skip = False
      continue
    name = arg.split('=', 1)[0]
    if name == '--runner' or name in _NOTHING_FOR_DIRECT:
      # `--name value`: the value is the next argument.
      skip = '=' not in arg and i + 1 < len(args) and not args[i + 1].startswith('--')
      continue
    return True
  return False


def _reachable_without_beam(path: str) -> bool:
  """Whether the run without Beam reads or writes `path` itself: a local path, or an
  object on gs:// or s3:// (its Arrow clients; outputs staged, `staging`)."""
  return files.is_local(path) or storage.is_object_store(path)


def local_workers(beam_args: Sequence[str], manifests: Sequence[str],
                  outputs: Sequence[str], confine_to: Sequence[str] = (),
                  workers: int = 0) -> int:
  """How many worker processes a run without Beam takes (`local.pipeline.convert_locally`), or 0
  when the run goes to Beam. A run stays on this machine and goes without Beam when its
  runner is the DirectRunner (Beam's default), its Beam arguments ask nothing else of
  Beam (`_NOTHING_FOR_DIRECT`: a TFX pipeline's `--project` or `--temp_location` do
  not), and its manifests and outputs (split, label and report folders) are local or on
  gs:// or s3:// (a Vertex AI or Kubeflow run's); it takes a worker per
  LOCAL_ROWS_PER_WORKER rows, up to every core. A `--direct_num_workers` or
  `--direct_running_mode`, an option of another runner, or a file system only Beam
  reaches (hdfs://) gets Beam. `workers` (the `workers` option), where above 0, is the
  number of workers, else LOCAL_WORKERS_ENV where set.

  Args:
    beam_args: The run's Beam arguments; None or empty: the DirectRunner, nothing else.
    manifests: The manifest files' paths; their rows (`estimate_rows`) size the pool.
    outputs: The folders the run writes: the report's, the split folders, the label
      folder.
    confine_to: The run's roots, which counting the rows reads nothing outside of.
    workers: The `workers` option: the number of workers; 0: LOCAL_WORKERS_ENV's, else
      as many as the rows call for.

  Raises:
    UsageError: LOCAL_WORKERS_ENV is set to anything but a whole number, 1 or more.
  """
  args = list(beam_args or ())
  if _runner(args) not in ('DirectRunner', 'direct'):
    return 0
  if _asks_beam(args) or not all(_reachable_without_beam(p) for p in (*manifests, *outputs)):
    return 0
  if workers:
    return workers
  forced = os.environ.get(LOCAL_WORKERS_ENV, '').strip()
  if forced:
    if not forced.isdigit() or int(forced) < 1:
      raise UsageError(f'{LOCAL_WORKERS_ENV} must be a whole number, 1 or more, got {forced!r}')
    return int(forced)
  rows = estimate_rows(manifests, LOCAL_ROWS_PER_WORKER * cores(), confine_to)
  return max(1, min(cores(), rows // LOCAL_ROWS_PER_WORKER))


def with_default_parallelism(beam_args: Sequence[str], manifests: Sequence[str],
                             confine_to: Sequence[str] = (), workers: int = 0) -> List[str]:
  """`beam_args`, plus how the DirectRunner runs when they say nothing of it: `workers`
  worker processes where given (one: in memory), else every core in worker processes
  from PARALLEL_FROM_ROWS manifest rows, else one worker in memory. Other runners, and
  any `--direct_running_mode` or `--direct_num_workers` given, are left as they are
  (`check_workers` refuses them beside `workers`).

  Args:
    beam_args: The run's Beam arguments (not changed: the result is a new list).
    manifests: The manifest files' paths, whose rows (`estimate_rows`, counted up to
      PARALLEL_FROM_ROWS) decide.
    confine_to: The run's roots, which counting the rows reads nothing outside of.
    workers: The `workers` option; 0: not given.
  """
  args = list(beam_args)
  if _runner(args) not in ('DirectRunner', 'direct') or any(
      a.split('=', 1)[0] in _DIRECT_FLAGS for a in args):
    return args
  if workers > 1:
    return args + ['--direct_running_mode=multi_processing', f'--direct_num_workers={workers}']
  if workers == 1:
    return args + list(DEFAULT_DIRECT_ARGS)
  n = cores()
  if n > 1 and estimate_rows(manifests, PARALLEL_FROM_ROWS, confine_to) >= PARALLEL_FROM_ROWS:
    return args + ['--direct_running_mode=multi_processing', f'--direct_num_workers={n}']
  return args + list(DEFAULT_DIRECT_ARGS)


def check_workers(beam_args: Sequence[str], workers: int) -> None:
  """Refuses the `workers` option where the Beam arguments decide the workers
  themselves: another runner than the DirectRunner (Dataflow's are its
  `--max_num_workers`), or a `--direct_num_workers` or `--direct_running_mode` given.

  Args:
    beam_args: The run's Beam arguments.
    workers: The `workers` option; 0 (not given) is never refused.

  Raises:
    UsageError: `workers` is given where the Beam arguments decide.
  """
  if not workers:
    return
  args = list(beam_args or ())
  runner = _runner(args)
  if runner not in ('DirectRunner', 'direct'):
    raise UsageError(f'workers={workers} sets the worker processes of a run on this machine; '
                     f'the {runner} sizes its own workers (Dataflow: the Beam argument '
                     f'--max_num_workers): leave workers at 0')
  given = sorted({a.split('=', 1)[0] for a in args} & set(_DIRECT_FLAGS))
  if given:
    raise UsageError(f'workers={workers} and the Beam argument {" and ".join(given)} both '
                     f'set the DirectRunner\'s workers: give one of them')


def run_conversion(beam_args: Sequence[str], make_pipeline: Callable[[List[str]], Any],
                   sources: Sequence[ManifestSource],
                   split_dirs: Optional[Mapping[str, str]], label_dir: Optional[str],
                   report_dir: str, options: ConversionOptions,
                   progress: Optional[Progress] = None) -> Dict[str, Any]:
  """Runs the conversion and returns the run's summary.json: without Beam where
  `local_workers` allows, else `ConvertManifests` in the pipeline that
  `make_pipeline(args)` makes (a `beam.Pipeline`, not yet entered) of `beam_args`
  completed by `with_default_parallelism`. With `split_dirs` and `label_dir` None, only
  the report is written (a validation).

  `progress`: told the stages and counts, left open for the caller's own stages; None:
  one made here (`Progress.for_run(options.progress_every_s)`: logging lines unless an
  interval is given) and closed with the final counts.

  Args:
    beam_args: The Beam arguments (`beam_pipeline_args`); they decide whether the run
      goes to Beam (`local_workers`).
    label_dir: The folder for the label files, the extra layouts and the output's index
      (the output folder, or the Examples artifact's URI); None: none are written.
    make_pipeline: Makes the Beam pipeline from the completed Beam arguments; called
      only when the run goes to Beam.
    options: The run's options; its `progress_every_s` sets the progress made here.
    progress: The caller's progress, left open; None: one made and closed here.
    report_dir: The report's folder; its `.work` subfolder is removed however the run
      ends.
    sources: The manifest files to read.
    split_dirs: {split name: its folder of shards}; None: no records are written.
  """
  if progress is not None:
    return _run_conversion(beam_args, make_pipeline, sources, split_dirs, label_dir,
                           report_dir, options, progress)
  progress, outcome = Progress.for_run(options.progress_every_s), 'stopped'
  try:
    summary = _run_conversion(beam_args, make_pipeline, sources, split_dirs, label_dir,
                              report_dir, options, progress)
    outcome = 'done'
  finally:
    progress.close(outcome)
  return summary


def written_splits(split_names: Sequence[str], records_per_split: Mapping[str, int]
                   ) -> List[str]:
  """The splits of `split_names` that a run writes: those at least one record went to.

  A split no row went to (the `test` of a manifest of TRAIN and VALIDATION rows, a hash
  bucket none fell in) is left out of the output: no `Split-<name>` folder, not in
  `examples.json`'s nor the Examples artifact's `split_names`. SchemaGen, with its
  defaults, would otherwise merge the empty split's statistics into the schema and mark
  every feature deprecated, and Transform would then find no `image/encoded`.

  Args:
    split_names: The splits the run may write, in order.
    records_per_split: {split: records written}; a split it lacks has none.
  """
  return [name for name in split_names if records_per_split.get(name)]


def leave_out_empty_splits(split_dirs: Mapping[str, str],
                           records_per_split: Mapping[str, int]) -> None:
  """Removes what a run wrote for each split no record went to (`written_splits`): the
  one empty shard both engines write there (as Beam writes an empty PCollection), then
  the folder, if nothing else is in it (`local.write.remove_parts`: shards and the run's
  `.part-` temporaries only). Only the run's own split folders are given (the output's
  staging folder, an Examples artifact's URI).

  Args:
    split_dirs: {split: its folder}, local or on object storage.
    records_per_split: {split: records written}.
  """
  from tfrecorder_component.engines.local.write import remove_parts  # pylint: disable=g-import-not-at-top
  empty = [folder for name, folder in split_dirs.items() if not records_per_split.get(name)]
  remove_parts(empty, shards=True)
  for folder in empty:
    if files.is_local(folder) and os.path.isdir(folder) and not os.listdir(folder):
      os.rmdir(folder)


def _convert_without_beam(sources, split_dirs, label_dir, report_dir,
                          options: ConversionOptions, workers: int, progress: Progress) -> None:
  """`local.pipeline.convert_locally` into local folders; its scratch folder removed however it
  ends."""
  from tfrecorder_component.engines.local import pipeline as local  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.engines.local import write  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.steps.report import CiteIndex  # pylint: disable=g-import-not-at-top
  try:
    local.convert_locally(sources, split_dirs, label_dir, report_dir, options, workers,
                          CiteIndex(sources) if any(s.row_index for s in sources)
                          else lambda e: e, progress=progress)
  except BaseException:  # the shards its workers uploaded to object storage go too
    write.remove_parts([d for d in (split_dirs or {}).values() if not files.is_local(d)],
                       shards=True)
    raise
  finally:  # a failed run leaves no chunks or sorted runs behind, nor a finished one
    files.remove(output_paths.work_dir(report_dir))


def _require_beam(beam_args: Sequence[str]) -> None:
  """A run that goes to Beam (`local_workers` 0) needs Beam installed: the [beam] extra,
  or [gcp] for the DataflowRunner."""
  runner = _runner(list(beam_args or ()))
  if runner in ('DataflowRunner', 'dataflow'):
    extras.require('gcp', 'the DataflowRunner')
  elif runner in ('DirectRunner', 'direct'):
    extras.require('beam', "a run on Beam's DirectRunner (which the Beam arguments ask for)")
  else:
    extras.require('beam', f'the {runner}')


def _run_conversion(beam_args, make_pipeline, sources, split_dirs, label_dir, report_dir,
                    options: ConversionOptions, progress: Progress) -> Dict[str, Any]:
  manifests = [s.path for s in sources]
  outputs = [report_dir, *(split_dirs or {}).values(), *([label_dir] if label_dir else [])]
  storage.prepare_file_systems(report_dir, *manifests)
  check_workers(beam_args, options.workers)
  workers = local_workers(beam_args, manifests, outputs, options.confine_to, options.workers)
  if workers:
    from tfrecorder_component.io import staging  # pylint: disable=g-import-not-at-top
    # On object storage, the workers upload their shards as they write them; the label
    # files, layouts and report are written on this machine's disk, then uploaded.
    with staging.Staging([report_dir, *([label_dir] if label_dir else [])]) as staged:
      _convert_without_beam(sources, split_dirs, staged.path(label_dir),
                            staged.path(report_dir), options, workers, progress)
      if staged.staged:
        progress.stage('uploading')
        staged.publish()
  else:
    _require_beam(beam_args)
    try:
      progress.stage('converting (Beam pipeline)', counted=True)
      from tfrecorder_component.engines.beam.pipeline import ConvertManifests  # pylint: disable=g-import-not-at-top
      # Rows converted in this process (the in-memory DirectRunner) are counted as they
      # go; Beam's metrics are read only once a DirectRunner pipeline has finished.
      with progress.live():
        with make_pipeline(with_default_parallelism(beam_args or (), manifests,
                                                    options.confine_to,
                                                    options.workers)) as p:
          _ = p | 'ConvertManifests' >> ConvertManifests(sources, split_dirs, label_dir,
                                                         report_dir, options)
    finally:  # a failed run leaves no chunks or sorted runs behind, nor a finished one
      files.remove(output_paths.work_dir(report_dir))
  summary = output_paths.read_summary(report_dir)
  if split_dirs:
    leave_out_empty_splits(split_dirs, summary['records_per_split'])
  progress.update(summary['rows_read'], summary['rows_failed'])  # the exact final counts
  for warning in summary.get('warnings') or ():  # both engines' (`steps.report`)
    logging.warning('%s', warning)
  return summary
