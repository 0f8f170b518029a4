"""Conversion outside a pipeline: a DataFrame, a manifest or an image folder to TFRecords.

    import tfrecorder_component as trc
    result = trc.convert(df, '/tmp/out')            # or a manifest path, or a folder
    df.tensorflow.to_tfrecord(output_dir='/tmp/out')  # the same, as TFRecorder spelled it

Runs the component's own Beam transform (`ConvertManifests`) and writes the same layout
as ImageExampleGen's `examples` output (`Split-<name>/data_tfrecord-*.gz`, `labels.txt`,
`label_map.pbtxt`), with the report in `<output_dir>/report/`.
"""
from __future__ import annotations

import dataclasses
import json
import os
import posixpath
import shutil
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from tfrecorder_component import files
from tfrecorder_component.images import probe as image_lib
from tfrecorder_component import policy
from tfrecorder_component import splits as splits_lib
from tfrecorder_component.images import transform as transform_lib
from tfrecorder_component.beam import sink
from tfrecorder_component.errors import ManifestError, UsageError
from tfrecorder_component.files import MANIFEST_EXTENSIONS
from tfrecorder_component.manifest import MANIFEST_FORMATS, ML_USE_TO_SPLIT, check_feature_types

IMAGE_EXTENSIONS = ('.jpg', '.jpeg', '.png', '.gif', '.bmp', '.webp', '.tif', '.tiff')
# The local default: the in-memory DirectRunner starts in seconds. For large local runs
# pass beam_args=['--direct_running_mode=multi_processing', '--direct_num_workers=0'].
DEFAULT_DIRECT_ARGS = ('--direct_running_mode=in_memory', '--direct_num_workers=1')


@dataclasses.dataclass(frozen=True)
class ConversionResult:
  """What `convert` wrote: counts from the report and where everything is."""
  output_dir: str
  split_dirs: Dict[str, str]
  records_per_split: Dict[str, int]
  records_per_label: Dict[str, int]
  rows_read: int
  rows_failed: int
  errors_per_reason: Dict[str, int]
  report_dir: str
  manifests: Tuple[str, ...]
  summary: Dict[str, Any] = dataclasses.field(repr=False, default_factory=dict)

  @property
  def records_written(self) -> int:
    return sum(self.records_per_split.values())


def beam_pipeline_args(runner: str = 'DirectRunner', project: Optional[str] = None,
                       region: Optional[str] = None, temp_location: Optional[str] = None,
                       beam_args: Sequence[str] = ()) -> List[str]:
  """Beam arguments for `runner`; DataflowRunner needs project, region and a gs://
  temp_location, and gets this package onto its workers from the installed setup.py's
  source tree when `beam_args` does not say otherwise."""
  args = [f'--runner={runner}']
  if runner in ('DirectRunner', 'direct'):
    args += list(DEFAULT_DIRECT_ARGS)
  elif runner in ('DataflowRunner', 'dataflow'):
    missing = [n for n, v in (('project', project), ('region', region),
                              ('temp_location', temp_location)) if not v]
    if missing:
      raise ValueError(f'DataflowRunner needs {", ".join(missing)}')
  for name, value in (('project', project), ('region', region),
                      ('temp_location', temp_location)):
    if value:
      args.append(f'--{name}={value}')
  return args + list(beam_args)


def folder_manifest(root: str) -> str:
  """A manifest (CSV text) for a folder laid out as `<split>/<label>/<image>` (split
  folders named train, validation, eval or test, in any case) or `<label>/<image>`;
  image URIs are relative to `root`. Raises ManifestError if the folder holds neither."""
  root = os.path.abspath(root)
  entries = sorted(e for e in os.listdir(root) if os.path.isdir(os.path.join(root, e)))
  if not entries:
    raise ManifestError(f'{root} holds no manifest ({", ".join(MANIFEST_EXTENSIONS)}) and '
                        'no label folders: lay images out as <label>/<image> or '
                        '<split>/<label>/<image>')
  by_split = all(e.upper() in ML_USE_TO_SPLIT and e for e in entries)
  lines = ['split,image_uri,label']

  def add(relative: str, split: str, label: str) -> None:
    for name in sorted(os.listdir(os.path.join(root, relative))):
      path = posixpath.join(relative, name)
      if os.path.isfile(os.path.join(root, path)) and name.lower().endswith(IMAGE_EXTENSIONS):
        lines.append(','.join(_csv_field(v) for v in (split, path, label)))

  for entry in entries:
    if by_split:
      for label in sorted(os.listdir(os.path.join(root, entry))):
        if os.path.isdir(os.path.join(root, entry, label)):
          add(posixpath.join(entry, label), entry.upper(), label)
    else:
      add(entry, '', entry)
  if len(lines) == 1:
    raise ManifestError(f'no images ({", ".join(IMAGE_EXTENSIONS)}) found under {root}')
  return '\n'.join(lines) + '\n'


def _has_label_folders(root: str) -> bool:
  """Whether a folder has a subfolder holding images, or split folders of them."""
  for entry in os.scandir(root):
    if entry.is_dir():
      for inner in os.scandir(entry.path):
        if (inner.is_file() and inner.name.lower().endswith(IMAGE_EXTENSIONS)) or (
            inner.is_dir() and entry.name.upper() in ML_USE_TO_SPLIT):
          return True
  return False


def _csv_field(value: str) -> str:
  if any(c in value for c in ',"\n\r'):
    return '"' + value.replace('"', '""') + '"'
  return value


def dataframe_manifest(df) -> str:
  """A DataFrame in AutoML columns (`split`, `image_uri`, `label` and any extra columns,
  which become typed features) as CSV text, URIs as written."""
  columns = [str(c) for c in df.columns]
  from tfrecorder_component.manifest import automl_csv  # pylint: disable=g-import-not-at-top
  if not any(c.strip().lower() in automl_csv.URI_COLUMNS for c in columns):
    raise ManifestError(f'the DataFrame needs an image URI column (one of '
                        f'{", ".join(automl_csv.URI_COLUMNS)}); it has {columns}')
  return _labels_spread(df, automl_csv.is_label_column).to_csv(index=False)


def _labels_spread(df, is_label_column):
  """A label column whose cells are lists (a multi-label DataFrame) becomes one column
  per label position, each a label column, so every label is read as one."""
  import pandas as pd  # pylint: disable=g-import-not-at-top
  listy = (list, tuple, set)
  for column in list(df.columns):
    name = str(column)
    if not is_label_column(name.strip().lower()):
      continue
    cells = df[column]
    if not cells.map(lambda v: isinstance(v, listy)).any():
      continue
    lists = cells.map(lambda v: sorted(v) if isinstance(v, set) else list(v)
                      if isinstance(v, listy) else ([] if pd.isna(v) else [v]))
    width = max(1, max(len(l) for l in lists))
    names = [name] + [f'{name}_{i}' if name.lower().startswith('label') else f'label_{name}_{i}'
                      for i in range(2, width + 1)]
    spread = pd.DataFrame([l + [None] * (width - len(l)) for l in lists], index=df.index,
                          columns=names)
    df = df.drop(columns=[column]).join(spread)
  return df


def dataframe_row_index(df) -> Tuple[Tuple[int, Any], ...]:
  """(row of `dataframe_manifest`'s CSV, index label) for each DataFrame row: the line
  where the row ends, as the CSV reader counts lines (a cell may hold line breaks)."""
  line, out = 1, []  # line 1 is the header
  for label, values in zip(df.index, df.itertuples(index=False, name=None)):
    breaks = sum(v.count('\r') + v.count('\n') - v.count('\r\n')
                 for v in values if isinstance(v, str))
    line += 1 + breaks
    out.append((line, label.item() if hasattr(label, 'item') else
                label if isinstance(label, (int, str)) else str(label)))
  return tuple(out)


def _manifests_for(source, report_dir: str
                   ) -> Tuple[List[str], Optional[str], Tuple[Tuple[int, Any], ...]]:
  """The manifest files a source stands for, the folder its relative image URIs resolve
  against (None: each manifest's own folder) and, for a DataFrame, its rows' index
  labels. For a DataFrame (URIs relative to the working directory, as a notebook means
  them) or an image folder, a manifest is written into `report_dir`."""
  if hasattr(source, 'to_csv') and hasattr(source, 'columns'):
    path = posixpath.join(report_dir, 'input_manifest.csv')
    files.write_text(path, dataframe_manifest(source))
    return [path], os.getcwd(), dataframe_row_index(source)
  source = os.fspath(source)
  if '://' not in source and not os.path.exists(source):
    raise UsageError(f'{source} does not exist')
  manifests = files.list_manifest_files(source)
  if manifests and os.path.isdir(source) and all(
      m.lower().endswith('.txt') for m in manifests) and _has_label_folders(source):
    manifests = []  # a README.txt beside <label>/ folders is no manifest
  if manifests:
    return manifests, None, ()
  if os.path.isdir(source):
    path = posixpath.join(report_dir, 'input_manifest.csv')
    files.write_text(path, folder_manifest(source))
    return [path], os.path.abspath(source), ()
  raise UsageError(f'{source}: not a manifest file ({", ".join(MANIFEST_EXTENSIONS)}), '
                   'a folder of manifests, or an image folder')


def _conversion(source, report_dir: str, *, manifest_format=None,
                splits=splits_lib.DEFAULT_BUCKETS, image_root=None, feature_types=None,
                image_transform=None, verify_decode=True, convert_unsupported=False,
                compression_level=sink.DEFAULT_COMPRESSION_LEVEL,
                max_pixels=image_lib.DEFAULT_MAX_PIXELS, max_bytes=files.DEFAULT_MAX_BYTES,
                progress_every_s=None, runner='DirectRunner', project=None, region=None,
                temp_location=None, beam_args=()):
  """(manifests, buckets, options, Beam args, ManifestSources) of a conversion."""
  from tfrecorder_component.beam.transforms import ConversionOptions, ManifestSource  # pylint: disable=g-import-not-at-top
  if manifest_format not in (None, *MANIFEST_FORMATS):
    raise UsageError(f'unknown manifest format {manifest_format!r}; one of '
                     f'{", ".join(MANIFEST_FORMATS)}')
  buckets = tuple(splits.items()) if isinstance(splits, Mapping) else tuple(map(tuple, splits))
  if isinstance(image_transform, dict):
    image_transform = transform_lib.ImageTransform.from_dict(image_transform)
  declared = tuple(sorted(check_feature_types(feature_types).items()))
  manifests, root, row_index = _manifests_for(source, report_dir)
  image_root = image_root or root
  options = ConversionOptions(
      buckets=buckets, max_pixels=max_pixels, max_bytes=max_bytes,
      verify_decode=verify_decode, convert_unsupported=convert_unsupported,
      compression_level=compression_level, transform=image_transform,
      progress_every_s=progress_every_s)
  sources = [ManifestSource(m, manifest_format, None, image_root, declared, row_index)
             for m in manifests]
  return manifests, buckets, options, beam_pipeline_args(runner, project, region,
                                                         temp_location, beam_args), sources


def _run(args: List[str], transform) -> None:
  import apache_beam as beam  # pylint: disable=g-import-not-at-top
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
  with beam.Pipeline(options=PipelineOptions(args)) as p:
    _ = p | 'ConvertManifests' >> transform


def _summary(report_dir: str) -> Dict[str, Any]:
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  with FileSystems.open(posixpath.join(report_dir, 'summary.json')) as f:
    return json.loads(f.read())


def _folder(path: str) -> str:
  """`path` made absolute if local (and created), else without a trailing slash."""
  if '://' in path:
    return path.rstrip('/')
  path = os.path.abspath(path)
  os.makedirs(path, exist_ok=True)
  return path


def _output_folder(output_dir: str, overwrite: bool) -> str:
  """`output_dir`, absolute if local, after checking it can take a conversion: not a
  file, and empty or absent unless `overwrite`."""
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  if '://' in output_dir:
    output_dir = output_dir.rstrip('/')
    used = FileSystems.exists(output_dir + '/') and bool(
        FileSystems.match([output_dir + '/**'])[0].metadata_list)
  else:
    output_dir = os.path.abspath(output_dir)
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
      raise UsageError(f'{output_dir} is a file; the output must be a folder')
    used = os.path.isdir(output_dir) and bool(os.listdir(output_dir))
  if used and not overwrite:
    raise UsageError(f'{output_dir} is not empty: convert into a new or empty folder, or '
                     'pass overwrite=True (--overwrite) to replace what is there')
  return output_dir


def _remove(path: str) -> None:
  if '://' in path:
    from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
    if FileSystems.exists(path + '/'):
      FileSystems.delete([path + '/'])
  elif os.path.lexists(path):
    shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


class _OutputSwap:
  """Writes a conversion next to `output_dir` and moves it in only when it succeeded, so
  the folder never mixes two runs nor looks complete when it is not.

  Local: the run writes into a hidden sibling, `.<name>.partial-*`; on success it
  replaces `output_dir` (an old output is renamed away, then deleted). On failure no
  record remains; the run's report is kept at `<output_dir>/report` if `output_dir` was
  empty or absent, else (an old output stays as it was) at `<output_dir>.failed/report`.
  Remote (gs://...): renaming a folder is a copy there, so the run writes in place,
  after `overwrite` deleted the old output; a failed run's shards are deleted.
  """

  def __init__(self, output_dir: str):
    self.output_dir = output_dir
    self.local = '://' not in output_dir
    if self.local:
      parent, name = os.path.split(output_dir)
      os.makedirs(parent, exist_ok=True)
      self.work = tempfile.mkdtemp(prefix=f'.{name}.partial-', dir=parent)
    else:
      _remove(output_dir)
      self.work = output_dir

  def failed_report_dir(self) -> str:
    """Where the report of a failed run is kept (see the class)."""
    if not self.local:
      return posixpath.join(self.output_dir, 'report')
    if os.path.isdir(self.output_dir) and os.listdir(self.output_dir):
      return os.path.join(self.output_dir + '.failed', 'report')
    return os.path.join(self.output_dir, 'report')

  @staticmethod
  def _retarget(report: str, old: str, new: str) -> None:
    """Rewrites the report's mentions of `old` (the run's own folder: a DataFrame's or
    image folder's generated manifest is cited from there) to `new`, where it will be."""
    for name in os.listdir(report):
      if name.endswith(('.json', '.jsonl', '.html')):
        path = os.path.join(report, name)
        with open(path, encoding='utf-8') as f:
          text = f.read()
        if old in text:
          with open(path, 'w', encoding='utf-8') as f:
            f.write(text.replace(old, new))

  def keep_failed_report(self) -> str:
    """Removes the failed run's records and keeps its report; returns where."""
    kept = self.failed_report_dir()
    report = posixpath.join(self.work, 'report')
    if self.local:
      _remove(os.path.dirname(kept) if kept.endswith('.failed/report') else kept)
      os.makedirs(os.path.dirname(kept), exist_ok=True)
      if os.path.isdir(report):
        self._retarget(report, report, kept)
        os.replace(report, kept)
      shutil.rmtree(self.work, ignore_errors=True)
    else:
      from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
      others = [m.path for m in FileSystems.match([self.work + '/**'])[0].metadata_list
                if not m.path.startswith(report + '/')]
      if others:
        FileSystems.delete(others)
    return kept

  def commit(self) -> None:
    if not self.local:
      return
    self._retarget(os.path.join(self.work, 'report'), self.work, self.output_dir)
    old = None
    if os.path.lexists(self.output_dir):
      old = tempfile.mkdtemp(prefix=f'.{os.path.basename(self.output_dir)}.old-',
                             dir=os.path.dirname(self.output_dir))
      os.replace(self.output_dir, os.path.join(old, 'output'))
    os.replace(self.work, self.output_dir)
    if old:
      shutil.rmtree(old, ignore_errors=True)
    _remove(self.output_dir + '.failed')  # an earlier failure's report is out of date

  def abandon(self) -> None:
    """After a crash (no summary): nothing of the run is worth keeping."""
    if self.local:
      shutil.rmtree(self.work, ignore_errors=True)


def convert(source, output_dir: str, *, max_error_ratio: float = 0.0, overwrite: bool = False,
            **options) -> ConversionResult:
  """Converts `source` into split TFRecords of tf.train.Example under `output_dir`.

  `source`: a pandas DataFrame in AutoML columns (`split`, `image_uri`, `label`, extra
  columns as features), a manifest file of any supported format, a folder of manifests,
  or an image folder laid out as `<split>/<label>/<image>` or `<label>/<image>`.

  `output_dir` must be new or empty unless `overwrite=True`; the run is written beside
  it and moved in only when it succeeds, so the folder never holds two runs' files.

  Options (all keyword): `splits` (hash buckets for rows without a split, default
  train 8, eval 1, test 1, as a dict or pairs), and ImageExampleGen's `manifest_format`,
  `image_root`, `feature_types`, `image_transform`, `verify_decode`,
  `convert_unsupported`, `compression_level`, `max_pixels`, `max_bytes`; Beam's
  `runner` (default DirectRunner, in-memory), `project`, `region`, `temp_location` and
  extra `beam_args`; `progress_every_s` to print rows done, rate and failures.

  Failed rows are in `<output_dir>/report/errors.jsonl`; more than `max_error_ratio` of
  them (default 0: any) raise, naming the first ones and where the report was kept (no
  records are left then).
  """
  from tfrecorder_component.beam.transforms import ConvertManifests  # pylint: disable=g-import-not-at-top
  output_dir = _output_folder(output_dir, overwrite)
  swap = _OutputSwap(output_dir)
  work_report = _folder(posixpath.join(swap.work, 'report'))
  try:
    manifests, buckets, conversion_options, args, sources = _conversion(source, work_report,
                                                                       **options)
    split_names = splits_lib.output_split_names(buckets)
    _run(args, ConvertManifests(
        sources, {name: posixpath.join(swap.work, f'Split-{name}') for name in split_names},
        swap.work, work_report, conversion_options))
    summary = _summary(work_report)
  except BaseException:
    swap.abandon()
    raise
  try:
    policy.apply_error_policy(summary, max_error_ratio, manifests, swap.keep_failed_report)
  except ManifestError:  # no row was read: nothing of the run is worth keeping
    swap.abandon()
    raise
  swap.commit()
  report_dir = posixpath.join(output_dir, 'report')
  return ConversionResult(
      output_dir=output_dir,
      split_dirs={name: posixpath.join(output_dir, f'Split-{name}') for name in split_names},
      records_per_split={n: summary['records_per_split'].get(n, 0) for n in split_names},
      records_per_label=summary['records_per_label'], rows_read=summary['rows_read'],
      rows_failed=summary['rows_failed'], errors_per_reason=summary['errors_per_reason'],
      report_dir=report_dir, manifests=tuple(manifests), summary=summary)


def validate(source, report_dir: str, **options) -> Dict[str, Any]:
  """Reads every row of `source` and probes (by default decodes) every image, exactly as
  `convert` does, writing no records: `summary.json` and `errors.jsonl` go to
  `report_dir`. Returns the summary; it never raises for failed rows."""
  from tfrecorder_component.beam.transforms import ConvertManifests  # pylint: disable=g-import-not-at-top
  report_dir = _folder(report_dir)
  _, _, conversion_options, args, sources = _conversion(source, report_dir, **options)
  _run(args, ConvertManifests(sources, None, None, report_dir, conversion_options))
  return _summary(report_dir)
