"""Conversion outside a pipeline: a DataFrame, a manifest or an image folder to TFRecords.

    import tfrecorder_component as trc
    result = trc.convert(df, '/tmp/out')            # or a manifest path, or a folder
    df.tensorflow.to_tfrecord(output_dir='/tmp/out')  # the same, as TFRecorder spelled it

Runs the component's own steps (`run.run_conversion`: on this machine's cores without
Beam, or Beam's `ConvertManifests` for another runner) and writes the same layout as
ImageExampleGen's `examples` output (`Split-<name>/data_tfrecord-*.gz`, `labels.txt`,
`label_map.pbtxt`), with the report in `<output_dir>/report/`.
"""
from __future__ import annotations

import dataclasses
import os
import posixpath
from typing import Any, Dict, Optional, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component import option_table
from tfrecorder_component.steps import policy
from tfrecorder_component.engines import run
from tfrecorder_component.manifest import sources as sources_lib
from tfrecorder_component.record import splits as splits_lib
from tfrecorder_component.errors import ManifestError, UsageError, closest
from tfrecorder_component.manifest import confine
from tfrecorder_component.options import ConversionOptions, ManifestSource, check_options
from tfrecorder_component.output.folder import (OutputSwap, local_folder, output_folder,
                                                refuse_overlap)
from tfrecorder_component.output.progress import Progress


@dataclasses.dataclass(frozen=True)
class ConversionResult:
  """What `convert` wrote: counts from the report and where everything is.

  Attributes:
    output_dir: The output folder.
    split_dirs: {split: its folder of shards}, for the splits written: a split no
      record went to has no folder (`engines.run.written_splits`).
    records_per_split: {split: records written}, every split the run could write (0
      for one left out).
    records_per_label: {label: records holding it}.
    rows_read: Manifest rows read.
    rows_failed: Rows that failed (listed in `report_dir`'s errors.jsonl).
    errors_per_reason: {reason: failed rows}.
    report_dir: The report's folder (summary.json, errors.jsonl, report.html).
    manifests: The manifest files read.
    summary: summary.json's contents.
  """
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


def check_names(names, where: str = option_table.API, writes: bool = True) -> None:
  """Raises TypeError, as Python does for an unknown keyword, for a name in `names` that
  is no option taken `where` (`option_table.OPTIONS`), naming the closest one.

  Args:
    names: The option names given (the keywords of `convert()` or `validate()`, a dict's
      keys will do).
    where: Where the options are taken: `option_table.API` (the default), CLI or
      COMPONENT.
    writes: False to know only the options of a run that writes no records (what
      `validate` takes).
  """
  known = {o.name for o in option_table.taken_by(where, writes)}
  for name in names:
    if name not in known:
      close = closest(name, known)
      raise TypeError(f'unexpected option {name!r}' +
                      (f'; did you mean {close!r}?' if close else '') +
                      f' (options: {", ".join(sorted(known))})')


def _conversion(source, report_dir: str, writes: bool = True, **given):
  """(manifests, options, Beam arguments, ManifestSources) of a conversion, every option
  checked before anything runs; `given`: options by name, the others at their defaults
  (`option_table.OPTIONS`)."""
  check_names(given, writes=writes)
  values = dict(option_table.defaults(writes=writes), **given)
  checked = check_options(values)
  manifest_format, image_root = checked['manifest_format'], checked['image_root']
  declared = tuple(sorted(checked['feature_types'].items()))
  columns = checked['columns']
  options = ConversionOptions.from_options(values)
  dataframe = hasattr(source, 'to_csv') and hasattr(source, 'columns')
  options = confined_options(options, [] if dataframe else [os.fspath(source)], image_root)
  args = run.beam_pipeline_args(values['runner'], values['project'], values['region'],
                                values['temp_location'], values['beam_args'])
  found = sources_lib.manifests_for(source, report_dir, image_root, columns,
                                    options.confine_to)
  taken = ([columns] * len(found.paths) if dataframe else sources_lib.columns_by_manifest(
      found.paths, report_dir, columns, os.fspath(source)))
  # Absolute before any runner sees them: a Beam worker's working folder is not ours.
  given_root = files.absolute(os.fspath(image_root)) if image_root else None
  sources = []
  for m, columns_of_m in zip(found.paths, taken):
    # A root given to the run wins over the one the layout implies (VOC's JPEGImages/).
    root = given_root or found.image_roots.get(m) or found.image_root
    sources.append(ManifestSource(
        files.absolute(m), found.formats.get(m, manifest_format), found.splits.get(m),
        files.absolute(root) if root else None, declared, found.row_index,
        options.class_map, columns_of_m, options.confine_to))
  manifests = [s.path for s in sources]
  return manifests, options, args, sources


def confined_options(options: ConversionOptions, sources, image_root=None
                     ) -> ConversionOptions:
  """`options` with `confine_to`'s `source` replaced by the folders of `sources`
  (`confine.with_source`); UsageError where `image_root` lies outside the roots (every
  image under it would fail as `outside_root`).

  Args:
    options: the run's options.
    sources: the run's source paths ([] for a DataFrame, which `source` cannot name).
    image_root: the run's image_root option; None: none.
  """
  roots = confine.with_source(options.confine_to, sources)
  if roots != options.confine_to:
    options = dataclasses.replace(options, confine_to=roots)
  confinement = options.confinement
  if confinement is not None and image_root and confinement.outside(
      files.absolute(os.fspath(image_root))):
    raise UsageError(f'image_root {os.fspath(image_root)} lies outside confine_to '
                     f'({", ".join(roots)}): every image under it would fail as '
                     'outside_root; add it to confine_to')
  return options


def _pipeline(args):
  """A Beam pipeline of `args`, for runs that go to Beam."""
  import apache_beam as beam  # pylint: disable=g-import-not-at-top
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
  return beam.Pipeline(options=PipelineOptions(args))


def convert(source, output_dir: str, *, max_error_ratio: float = 0.0, overwrite: bool = False,
            **options) -> ConversionResult:
  """Converts `source` into split TFRecords of tf.train.Example under `output_dir`.

  The output folder is locked, written into a staging folder inside it, and its files
  moved in only when the run succeeds, `_SUCCESS` last: it never holds two runs' files,
  and what is not finished has no `_SUCCESS`. What a killed run left there is removed
  by the next run. Failed rows are in `<output_dir>/report/errors.jsonl`.

  Args:
    source: A pandas DataFrame in AutoML columns (`split`, `image_uri`, `label`, extra
      columns as features), a manifest file of any supported format, a folder of
      manifests, a dataset folder as an annotation tool exports it (a VOC or COCO root,
      a YOLO data.yaml), or an image folder laid out as `<split>/<label>/<image>` or
      `<label>/<image>`.
    output_dir: The folder to write: new or empty unless `overwrite`. It may not be,
      hold or lie inside an input (the manifest, the image folder or `image_root`, a
      label or class map file). A mount point, a symbolic link or a folder in a parent
      you cannot write are fine.
    max_error_ratio: Fraction of the rows that may fail; more raise
      `TooManyFailedRows`, naming the first failed rows and where the report was kept,
      and leave no records. Default 0: any failed row does.
    overwrite: Replace an earlier output of this tool in `output_dir`, and only that:
      files of yours in it stay, a folder that is no output is refused, and the old
      output stays until the new one is complete.
    **options: The conversion's options, each a keyword
      ([the Python guide](../guides/python.md#options) has them in a table;
      `option_table.OPTIONS` declares them): `splits` (hash buckets for rows without a
      split, default train 8, eval 1, test 1, as a dict or pairs), ImageExampleGen's
      `manifest_format`, `image_root`, `feature_types`, `columns` (a CSV header's
      image, label and split columns, where the names the reader knows miss: a dict
      such as `{'image': 'filepaths', 'label': 'labels', 'split': 'data set'}` or the
      command's text `'image=filepaths,label=labels,split=data set'`), `image_transform`,
      `verify_decode`, `convert_unsupported`, `compression_level`, `max_pixels`,
      `max_bytes`, `num_shards`, `shard_size_mb`, `include_masks`,
      `include_keypoints`, `class_synset` (classification: the labels again as
      `image/class/synset`, ImageNet's key), `source_id` ('auto', 'uri' or 'number': what
      `image/source_id` holds), `concurrent_reads`, `label_map` (ids to keep: a
      label_map.pbtxt, label_map.csv or labels.txt path, an earlier output folder, a
      {label: id} dict or a list of labels in id order), `append_new_labels`,
      `label_order` ('auto' or 'text': the order assigned ids follow), `class_map` (classes to
      keep, drop, rename or merge; see
      [class mapping](../guides/output.md#class-mapping)), `layouts` ('tfrecord',
      'tfds', 'array_record', 'parquet'), `confine_to` (folders every file read for a
      row must lie inside, links followed, or 'source': the source's own folder; see
      [untrusted input](../guides/untrusted-input.md)); Beam's `runner` (default
      DirectRunner: on local files and with no `beam_args`, the run goes without Beam, a
      worker process per 1,000 rows up to one a core), `project`, `region`,
      `temp_location`, `beam_args`; and `progress_every_s` (the run's progress on stderr: a live bar in
      a terminal, else a line every this many seconds; None: only `logging` INFO
      lines).

  Returns:
    A ConversionResult: the counts of the report and where the splits and the report
    are.

  Raises:
    TypeError: An option that is none of these (the closest one is named).
    UsageError: An option value or an output folder that cannot be used (a ValueError).
    ManifestError: A manifest that cannot be read as given.
    TooManyFailedRows: More failed rows than `max_error_ratio` allows.
    MissingExtra: A path that needs an extra that is not installed (an ImportError).
  """
  check_names(options)
  check_options({'max_error_ratio': max_error_ratio})  # the others in `_conversion`
  output_dir = output_folder(os.fspath(output_dir))
  inputs = sources_lib.input_paths(source, options.get('image_root'), options.get('label_map'),
                                   options.get('class_map'))
  refuse_overlap(output_dir, inputs)
  launch_args = run.beam_pipeline_args(options.get('runner', 'DirectRunner'),
                                       options.get('project'), options.get('region'),
                                       options.get('temp_location'),
                                       options.get('beam_args', ()))
  run.refuse_local_paths(
      launch_args,
      [(what, path) for what, path in inputs if what not in sources_lib.READ_BY_THE_LAUNCHER],
      output_dir)
  run.check_workers(launch_args, options.get('workers', 0))  # before the output is locked
  swap = OutputSwap(output_dir, overwrite)
  progress, published = None, False
  try:
    try:
      work_report = local_folder(posixpath.join(swap.work, output_paths.REPORT_DIR))
      manifests, conversion_options, beam_args, sources = _conversion(source, work_report,
                                                                      **options)
      if not (hasattr(source, 'to_csv') and hasattr(source, 'columns')):
        # The image folders a dataset's layout implies (a VOC root's JPEGImages/) are
        # inputs too (a DataFrame's image root is the working folder, not an input).
        refuse_overlap(output_dir, sorted({('image folder', s.image_root) for s in sources
                                           if s.image_root}))
      progress = Progress.for_run(conversion_options.progress_every_s)
      split_names = splits_lib.output_split_names(conversion_options.buckets)
      summary = run.run_conversion(beam_args, _pipeline, sources,
                                   output_paths.split_dirs(swap.work, split_names), swap.work,
                                   work_report, conversion_options, progress)
    except OSError as e:
      swap.abandon()
      named = _named_os_error(e, output_dir)
      if named is None:
        raise
      raise named from e
    except BaseException:
      swap.abandon()
      raise
    try:
      policy.apply_error_policy(summary, max_error_ratio, manifests, swap.keep_failed_report)
    except ManifestError:  # no row was read: nothing of the run is worth keeping
      swap.abandon()
      raise
    progress.stage('publishing')
    swap.commit()
    published = True
  finally:
    if progress is not None:
      progress.close('done' if published else 'stopped')
  return ConversionResult(
      output_dir=output_dir, split_dirs=output_paths.split_dirs(
          output_dir, run.written_splits(split_names, summary['records_per_split'])),
      records_per_split={n: summary['records_per_split'].get(n, 0) for n in split_names},
      records_per_label=summary['records_per_label'], rows_read=summary['rows_read'],
      rows_failed=summary['rows_failed'], errors_per_reason=summary['errors_per_reason'],
      report_dir=posixpath.join(output_dir, output_paths.REPORT_DIR), manifests=tuple(manifests),
      summary=summary)


def _named_os_error(error: OSError, output_dir: str) -> Optional[OSError]:
  """An OSError of the same errno whose message names the place (the temporary folder
  or the output folder), for one that names none (a scratch file's full disk); None
  where `error` names its path, or no line can be made."""
  if error.filename:
    return None
  from tfrecorder_component.io.files import describe_os_error  # pylint: disable=g-import-not-at-top
  line = describe_os_error(error, output_dir)
  return OSError(error.errno, line) if line else None


def validate(source, report_dir: str, **options) -> Dict[str, Any]:
  """Reads every row of `source` and probes (by default decodes) every image, exactly as
  `convert` does, writing no records.

  Args:
    source: What `convert` takes.
    report_dir: Where `summary.json`, `errors.jsonl` and `report.html` go.
    **options: `convert`'s options but those of writing records (`num_shards`,
      `shard_size_mb`, `layouts`, `compression_level`).

  Returns:
    The run's summary (`summary.json`'s contents); failed rows never raise.
  """
  report_dir = local_folder(report_dir)
  _, conversion_options, beam_args, sources = _conversion(source, report_dir, writes=False,
                                                          **options)
  return run.run_conversion(beam_args, _pipeline, sources, None, None, report_dir,
                            conversion_options)
