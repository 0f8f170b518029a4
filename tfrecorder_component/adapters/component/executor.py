"""ImageExampleGen's executor: turns artifacts and exec properties into a conversion.

The work is the core's (`run.run_conversion`: on this machine's cores without Beam, or
Beam's `ConvertManifests`); this module only reads the options back from the execution
properties (`properties`), finds the manifest files, runs the conversion, applies the
error policy and writes the artifact properties that ExampleGen promises downstream
components.
"""
import copy
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from absl import logging
from tfx import types
from tfx.components.example_gen import input_processor
from tfx.components.example_gen import utils as example_gen_utils
from tfx.components.util import examples_utils
from tfx.dsl.components.base import base_beam_executor
from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2, range_config_pb2
from tfx.types import artifact_utils
from tfx.utils import io_utils, proto_utils

from tfrecorder_component.io import files
from tfrecorder_component.record import labels as labels_lib
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.output import folder as output_folder
from tfrecorder_component.steps import policy
from tfrecorder_component.engines import run
from tfrecorder_component.record import splits as splits_lib
from tfrecorder_component.options import ConversionOptions, ManifestSource
from tfrecorder_component.adapters.component import properties
from tfrecorder_component.adapters.component import spec
from tfrecorder_component.errors import ManifestError, UsageError
from tfrecorder_component.manifest import MANIFEST_EXTENSIONS
from tfrecorder_component.manifest import confine, discover
from tfrecorder_component.adapters.conversion import confined_options
from tfrecorder_component.manifest.discover import manifest_files
from tfrecorder_component.manifest.class_map import parse_class_map
from tfrecorder_component.manifest.columns import parse_columns
from tfrecorder_component.manifest.sources import READ_BY_THE_LAUNCHER, columns_by_manifest

def _source_paths(input_dict, exec_properties) -> List[str]:
  """What the execution reads, as `confine_to`'s `source` names it: each manifest
  artifact's URI, else `input_base`."""
  artifacts = input_dict.get(spec.MANIFEST_KEY) or []
  return ([a.uri for a in artifacts] if artifacts else
          [p for p in [exec_properties.get(spec.INPUT_BASE_KEY)] if p])


def _sources(input_dict, exec_properties, values, report_dir: str,
             confine_to: Optional[Sequence[str]] = None) -> List[ManifestSource]:
  """The manifests of the execution (`values`: its options, `properties.from_properties`).
  A manifest artifact is read as `convert()` reads a path (`discover.find`: a manifest, a
  folder of them, a dataset folder such as a VOC or COCO root, an image folder),
  manifests it implies written into `report_dir`. `confine_to`: the run's roots,
  `source` replaced (None: from `values`); a link leading out of them is not read."""
  if confine_to is None:
    confine_to = confine.with_source(confine.parse_roots(values.get('confine_to')),
                                     _source_paths(input_dict, exec_properties))
  confinement = confine.confinement(tuple(confine_to))
  fmt = values['manifest_format']
  image_root = values['image_root']
  # Absolute before any runner sees them: a Beam worker's working folder is not ours.
  image_root = files.absolute(image_root) if image_root else None
  feature_types = tuple(sorted((values['feature_types'] or {}).items()))
  class_map = parse_class_map(values['class_map'])
  columns = parse_columns(values['columns'])

  def source(path: str, split=None) -> ManifestSource:
    return ManifestSource(files.absolute(path), fmt, split, image_root, feature_types,
                          class_map=class_map, columns=columns, confine_to=tuple(confine_to))

  artifacts = input_dict.get(spec.MANIFEST_KEY) or []
  if artifacts:
    sources = []
    for i, artifact in enumerate(artifacts):
      scratch = report_dir if len(artifacts) == 1 else os.path.join(report_dir, f'input-{i}')
      try:
        found = discover.find(artifact.uri, scratch, image_root, confinement)
      except UsageError as e:
        raise ManifestError(f'no manifest files ({", ".join(MANIFEST_EXTENSIONS)}) found at '
                            f'{artifact.uri}: {e}') from None
      taken = columns_by_manifest(found.paths, scratch, columns, artifact.uri)
      for path, columns_of_path in zip(found.paths, taken):
        root = image_root or found.image_roots.get(path)
        sources.append(ManifestSource(
            files.absolute(path), found.formats.get(path, fmt), found.splits.get(path),
            files.absolute(root) if root else None, feature_types, class_map=class_map,
            columns=columns_of_path, confine_to=tuple(confine_to)))
    return sources
  input_config = _input_config(exec_properties)
  input_base = exec_properties[spec.INPUT_BASE_KEY]
  many = len(input_config.splits) > 1
  sources = []
  for split in input_config.splits:
    paths = manifest_files(os.path.join(input_base, split.pattern), confinement)
    if not paths:
      raise ManifestError(f'no manifest files match {split.pattern!r} under {input_base} '
                          f'(split {split.name!r})')
    sources.extend(source(p, split.name if many else None) for p in paths)
  return sources


def _inputs(input_dict, exec_properties) -> List[Tuple[str, str]]:
  """(what, path) of the execution's file inputs, which its outputs may not overlap
  (`output_folder.refuse_overlap`)."""
  found = [('manifest', a.uri) for a in input_dict.get(spec.MANIFEST_KEY) or ()]
  found.append(('input base', exec_properties.get(spec.INPUT_BASE_KEY)))
  found.append(('image root', exec_properties.get('image_root')))
  found.append(('label map', exec_properties.get('label_map')))
  class_map = exec_properties.get('class_map') or ''
  if not class_map.lstrip().startswith(('{', '[')):
    found.append(('class map', class_map))
  return [(what, path) for what, path in found if path]


def _input_config(exec_properties) -> example_gen_pb2.Input:
  config = example_gen_pb2.Input()
  proto_utils.json_to_proto(exec_properties[spec.INPUT_CONFIG_KEY], config)
  return config


def resolve_spans(exec_properties: Dict[str, Any]) -> Dict[str, Any]:
  """`exec_properties` with `{SPAN}` / `{VERSION}` resolved, where no driver did it.

  LocalDagRunner runs the component's driver and Vertex AI runs TFX's example-gen
  driver (the `preCacheCheck` hook) before the executor; both leave `span` in the
  exec properties. Kubeflow Pipelines 2.x runs no such hook, so the executor resolves
  the latest span and version itself with the same input processor (there the span is
  not part of the cache key: see docs/guides/component.md).

  Args:
    exec_properties: The execution's properties as the executor receives them:
      `input_base` (none with a manifest channel: returned as it is), `input_config`
      and `range_config` as JSON protos, and `span` where a driver already resolved it
      (then returned as it is). Not changed: the result is a new dict.
  """
  if not exec_properties.get(spec.INPUT_BASE_KEY) or exec_properties.get(
      example_gen_utils.SPAN_PROPERTY_NAME) is not None:
    return exec_properties
  input_config = _input_config(exec_properties)
  range_config = None
  if exec_properties.get(spec.RANGE_CONFIG_KEY):
    range_config = range_config_pb2.RangeConfig()
    proto_utils.json_to_proto(exec_properties[spec.RANGE_CONFIG_KEY], range_config)
  processor = input_processor.FileBasedInputProcessor(
      exec_properties[spec.INPUT_BASE_KEY], input_config.splits, range_config)
  span, version = processor.resolve_span_and_version()
  for split in input_config.splits:
    split.pattern = processor.get_pattern_for_span_version(split.pattern, span, version)
  logging.info('Resolved span %s, version %s (no driver ran).', span, version)
  return {**exec_properties,
          example_gen_utils.SPAN_PROPERTY_NAME: span,
          example_gen_utils.VERSION_PROPERTY_NAME: version,
          example_gen_utils.FINGERPRINT_PROPERTY_NAME: processor.get_input_fingerprint(
              span, version),
          spec.INPUT_CONFIG_KEY: proto_utils.proto_to_json(input_config)}


def split_plan(exec_properties):
  """(hash buckets, split names) for a run.

  Args:
    exec_properties: The execution's properties: `output_config` (a JSON Output proto,
      whose split_config gives the ((name, hash buckets), ...); none: the default
      buckets) and, where `input_base` is set with more than one input split,
      `input_config`, whose split names are then the output's.
  """
  output_config = example_gen_pb2.Output()
  proto_utils.json_to_proto(exec_properties[spec.OUTPUT_CONFIG_KEY], output_config)
  buckets = tuple((s.name, s.hash_buckets) for s in output_config.split_config.splits) \
      or splits_lib.DEFAULT_BUCKETS
  input_splits = _input_config(exec_properties).splits
  if exec_properties.get(spec.INPUT_BASE_KEY) and len(input_splits) > 1:
    return buckets, [s.name for s in input_splits]
  return buckets, splits_lib.output_split_names(buckets)


def keep_failed_report(report_dir: str) -> str:
  """Copies a failed execution's report to `<report URI>.failed` and returns that folder.

  The orchestrator removes a failed execution's outputs (LocalDagRunner does), so the
  report the error message names is kept beside its artifact's URI, where it stays.

  Args:
    report_dir: The report artifact's URI (a local folder or a remote one such as
      gs://); its files, not its subfolders, are copied, replacing an earlier copy.
  """
  kept = report_dir.rstrip('/') + '.failed'
  if fileio.exists(kept):
    fileio.rmtree(kept)
  fileio.makedirs(kept)
  for name in fileio.listdir(report_dir):
    source = os.path.join(report_dir, name)
    if not fileio.isdir(source):
      fileio.copy(source, os.path.join(kept, name), overwrite=True)
  return kept


def _fingerprint(sources: List[ManifestSource]) -> str:
  return '\n'.join(file_fingerprint(s.split or 'single_split', s.path) for s in sources)


def file_fingerprint(split: str, path: str) -> str:
  """TFX's `io_utils.generate_fingerprint` of one manifest file; on remote storage read
  through Beam's file systems (TensorFlow's gs:// client has a fixed endpoint, so it
  cannot see a storage emulator), in the same form.

  Args:
    split: The split name the fingerprint names (`single_split` for a manifest that
      holds every split).
    path: The manifest file: a local path, or a remote URI matched (as a pattern)
      through Beam's file systems.
  """
  if '://' not in path:
    return io_utils.generate_fingerprint(split, path)
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
  found = FileSystems.match([path])[0].metadata_list
  mtimes = [int(m.last_updated_in_seconds) for m in found]
  xor = 0
  for mtime in mtimes:
    xor ^= mtime
  return (f'split:{split},num_files:{len(found)},'
          f'total_bytes:{sum(m.size_in_bytes for m in found)},xor_checksum:{xor},'
          f'sum_checksum:{sum(mtimes)}')


def _label_map_options(input_dict: Dict[str, List[types.Artifact]],
                       values: Dict[str, Any]) -> Dict[str, Any]:
  """The options label_map and append_new_labels: the `label_map_examples` input's map
  (new labels appended, unless a `label_map` is given without `append_new_labels`),
  else the `label_map` property's."""
  path = values['label_map']
  append = values['append_new_labels']
  earlier = input_dict.get(spec.LABEL_MAP_EXAMPLES_KEY) or []
  if earlier:
    uri = max(earlier, key=lambda a: a.id).uri  # a resolver's latest
    logging.info('Keeping the label ids of %s.', uri)
    return {'label_map': labels_lib.given_label_map(uri),
            'append_new_labels': append or not path}
  return {'label_map': labels_lib.given_label_map(path), 'append_new_labels': append}


def conversion_options(input_dict: Dict[str, List[types.Artifact]],
                       exec_properties: Dict[str, Any]) -> Tuple[Dict[str, Any],
                                                                 ConversionOptions]:
  """({option name: value}, ConversionOptions) of an execution: its options read back
  from `exec_properties` (`properties.from_properties`), the splits from its
  `output_config`, the label map from `label_map_examples` where given; made as
  `convert()` makes them (`ConversionOptions.from_options`).

  Args:
    input_dict: The execution's input artifacts by key; an Examples in
      `label_map_examples` (the latest by id, where several) gives the label ids kept.
    exec_properties: The execution's properties: the options as `properties` writes
      them, and `output_config` (a JSON Output proto) for the splits.
  """
  values = properties.from_properties(exec_properties)
  values.update(_label_map_options(input_dict, values))
  values['splits'] = split_plan(exec_properties)[0]
  return values, ConversionOptions.from_options(values)


class Executor(base_beam_executor.BaseBeamExecutor):
  """Runs the conversion (`run.run_conversion`: Beam's `ConvertManifests`, or the local
  run on this machine's cores) and writes the Examples artifact's properties.

  Args:
    context: TFX's Beam executor context, or None. Where its `beam_pipeline_args` run
      in this process (the DirectRunner), they are kept for the run but hidden from
      TFX's base class, which would otherwise package TFX's source for remote workers.
  """

  def __init__(self, context=None):
    args = getattr(context, 'beam_pipeline_args', None)
    if not args or not run.runs_in_process(args):
      super().__init__(context)
      return
    # TFX's Beam executors package TFX's own installed source (about 50 MB) into an sdist
    # in a new temporary folder at every start, for remote workers, and never remove it.
    # The DirectRunner's workers import from this environment: none is needed.
    bare = copy.copy(context)
    bare.beam_pipeline_args = []
    super().__init__(bare)
    self._beam_pipeline_args = list(args)

  def _pipeline(self, args):
    """A Beam pipeline of `args` (the pipeline's Beam arguments completed by
    `run.with_default_parallelism`), made as TFX makes it."""
    given = self._beam_pipeline_args
    self._beam_pipeline_args = list(args)
    try:
      return self._make_beam_pipeline()
    finally:
      self._beam_pipeline_args = given  # this run's choice, not the next one's

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Converts the execution's manifests into the Examples artifact's split folders and
    the report artifact, applies `max_error_ratio`, and sets both artifacts' properties
    (span, version, fingerprint, record counts, label and duplicate counts); the
    Examples artifact's `_SUCCESS` is written last.

    Args:
      input_dict: The input artifacts by key: `manifest` (ImageManifest artifacts whose
        URIs are read as `convert()` reads a path; none: the manifests under
        `input_base`) and `label_map_examples` (an earlier Examples whose label ids are
        kept).
      output_dict: The output artifacts by key: one `examples` (Examples) and one
        `report` (ConversionReport), whose URIs are written.
      exec_properties: The execution's properties: `input_base`, `input_config`,
        `output_config`, `range_config` (protos as JSON), the span, version and
        fingerprint a driver resolved, and the conversion's options as `properties`
        writes them.
    """
    self._log_startup(input_dict, output_dict, exec_properties)
    exec_properties = resolve_spans(exec_properties)
    examples = artifact_utils.get_single_instance(output_dict[spec.EXAMPLES_KEY])
    report = artifact_utils.get_single_instance(output_dict[spec.REPORT_KEY])
    inputs = _inputs(input_dict, exec_properties)
    for uri in (examples.uri, report.uri):
      output_folder.refuse_overlap(uri, inputs)
    run.refuse_local_paths(self._beam_pipeline_args,
                           [(w, p) for w, p in inputs if w not in READ_BY_THE_LAUNCHER],
                           examples.uri, report.uri)
    report_dir = report.uri
    fileio.makedirs(report_dir)
    values, options = conversion_options(input_dict, exec_properties)
    options = confined_options(options, _source_paths(input_dict, exec_properties),
                               values['image_root'])
    sources = _sources(input_dict, exec_properties, values, report_dir, options.confine_to)
    split_names = split_plan(exec_properties)[1]
    split_dirs = {name: output_paths.split_dir(examples.uri, name) for name in split_names}

    logging.info('Converting %d manifest file(s) into splits %s.', len(sources), split_names)
    summary = run.run_conversion(self._beam_pipeline_args, self._pipeline, sources,
                                 split_dirs, examples.uri, report_dir, options)
    policy.apply_error_policy(summary, values['max_error_ratio'],
                              [s.path for s in sources], lambda: keep_failed_report(report_dir))

    examples.span = int(exec_properties.get(example_gen_utils.SPAN_PROPERTY_NAME) or 0)
    examples.version = int(exec_properties.get(example_gen_utils.VERSION_PROPERTY_NAME) or 0)
    examples.set_string_custom_property(
        example_gen_utils.FINGERPRINT_PROPERTY_NAME,
        exec_properties.get(example_gen_utils.FINGERPRINT_PROPERTY_NAME) or _fingerprint(sources))
    examples_utils.set_payload_format(examples, example_gen_pb2.FORMAT_TF_EXAMPLE)
    examples_utils.set_file_format(examples, 'tfrecords_gzip')
    # Only the splits records went to (`run.written_splits`): an empty one would make
    # SchemaGen deprecate every feature.
    written = run.written_splits(split_names, summary['records_per_split'])
    examples.split_names = artifact_utils.encode_split_names(written)
    left_out = [name for name in split_names if name not in written]
    if left_out:
      logging.info('No record went to split(s) %s: not written, not in split_names.',
                   ', '.join(left_out))
    counts = {name: summary['records_per_split'][name] for name in written}
    duplicates = summary['duplicates']
    for artifact in (examples, report):
      artifact.set_json_value_custom_property('record_counts', counts)
      artifact.set_int_custom_property('rows_read', summary['rows_read'])
      artifact.set_int_custom_property('rows_failed', summary['rows_failed'])
      artifact.set_int_custom_property('num_labels', len(summary['vocabulary']))
      artifact.set_int_custom_property('duplicate_groups', duplicates['groups'])
      artifact.set_int_custom_property('cross_split_duplicates', duplicates['cross_split_groups'])
    report.set_json_value_custom_property('errors_per_reason', summary['errors_per_reason'])
    for artifact in (examples, report):
      artifact.set_json_value_custom_property('labels_left_out', summary['labels_left_out'])
      artifact.set_json_value_custom_property('labels_appended', summary['labels_appended'])
      if summary['label_map_given']:
        artifact.set_string_custom_property('label_map_given', summary['label_map_given'])
    for line in labels_lib.label_notes(summary):
      logging.warning('%s', line)
    if summary['objects_written'] or summary['box_issues']:
      examples.set_int_custom_property('objects_written', summary['objects_written'])
      report.set_json_value_custom_property('box_issues', summary['box_issues'])
    if duplicates['cross_split_groups']:
      logging.warning('%d image(s) appear in more than one split (test data leaking into '
                      'training); see %s.', duplicates['cross_split_groups'],
                      os.path.join(report_dir, output_paths.DUPLICATES_FILE + output_paths.JSON_LINES))
    # Last, as convert() does: load_dataset and inspect read only a finished output.
    files.write_text(os.path.join(examples.uri, output_paths.SUCCESS_MARKER), '')
    logging.info('ImageExampleGen wrote %s records per split.', counts)
