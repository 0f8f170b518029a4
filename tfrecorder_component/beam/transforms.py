"""Composite PTransforms, one job each; failures leave through a tagged `errors` output.

    manifests -> ReadManifestRows -> AssignLabelIds -> LoadImages -> ToExamples -> WriteSplits
                       |     \-> LabelVocabulary -/       |             |
                       |                                   |             +-> stats -> summary,
                       +------------- errors --------------+                 FindDuplicates

By construction: manifest rows = records written + error rows (errors.jsonl).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from tfrecorder_component import files
from tfrecorder_component import image as image_lib
from tfrecorder_component import splits as splits_lib
from tfrecorder_component.beam import sink as sink_lib
from tfrecorder_component.errors import RowError
from tfrecorder_component.example import build_example
from tfrecorder_component.manifest import ManifestRow, read_manifest_file

ERRORS = 'errors'
STATS = 'stats'
METRICS_NAMESPACE = 'tfrecorder_component'
TFRECORD_FILE_NAME = 'data_tfrecord'  # as TFX ExampleGen writes it: Split-<name>/data_tfrecord-*.gz


@dataclasses.dataclass(frozen=True)
class ManifestSource:
  """One manifest file to read, with an optional split that every row takes."""
  path: str
  format: Optional[str] = None
  split: Optional[str] = None


def error_record(error: RowError, row: Optional[ManifestRow] = None) -> Dict[str, Any]:
  """The dead-letter form of a failed row, as written to errors.jsonl."""
  return {
      'source': row.source if row else error.source,
      'row': row.row if row else error.row,
      'uri': row.image_uri if row else error.uri,
      'reason': error.reason,
      'message': error.message,
  }


class _ParseManifest(beam.DoFn):

  def process(self, source: ManifestSource):
    for item in read_manifest_file(source.path, source.format, source.split):
      if isinstance(item, RowError):
        yield beam.pvalue.TaggedOutput(ERRORS, error_record(item))
      else:
        yield item


class ReadManifestRows(beam.PTransform):
  """Parses manifest files into ManifestRows (main) and error rows (`errors`).

  Each file is parsed by one worker so rows keep their positions; the rows are then
  redistributed so image loading fans out across all workers.
  """

  def __init__(self, sources: Sequence[ManifestSource]):
    super().__init__()
    self._sources = list(sources)

  def expand(self, pbegin):
    parsed = (pbegin
              | 'ListManifests' >> beam.Create(self._sources)
              | 'Parse' >> beam.ParDo(_ParseManifest()).with_outputs(ERRORS, main='rows'))
    rows = parsed.rows | 'Redistribute' >> beam.Reshuffle()
    return {'rows': rows, ERRORS: parsed[ERRORS]}


class _LoadImage(beam.DoFn):

  def __init__(self, options: 'ConversionOptions'):
    self._options = options
    self._loaded = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_loaded')
    self._converted = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_converted')
    self._failed = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_failed')
    self._bytes = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'image_bytes_read')

  def _load(self, row: ManifestRow):
    options = self._options
    data = files.read_bytes(row.resolved_uri, max_bytes=options.max_bytes)
    self._bytes.inc(len(data))
    try:
      info = image_lib.probe_image(data, options.max_pixels, decode=options.verify_decode)
    except RowError as e:
      if e.reason != 'unsupported_format' or not options.convert_unsupported:
        raise
      data = image_lib.convert_to_png(data)
      info = image_lib.probe_image(data, options.max_pixels, decode=options.verify_decode)
      self._converted.inc()
    return data, info

  def process(self, row: ManifestRow):
    try:
      data, info = self._load(row)
    except RowError as e:
      self._failed.inc()
      yield beam.pvalue.TaggedOutput(ERRORS, error_record(e, row))
      return
    self._loaded.inc()
    yield row, data, info


class LoadImages(beam.PTransform):
  """Reads each row's image, probes its header and proves it decodes: (row, bytes, info)."""

  def __init__(self, options: 'ConversionOptions'):
    super().__init__()
    self._options = options

  def expand(self, rows):
    return rows | beam.ParDo(_LoadImage(self._options)).with_outputs(ERRORS, main='images')


class _AssignLabelIds(beam.DoFn):

  def __init__(self):
    self._ids: Tuple[Any, Dict[str, int]] = (None, {})

  def process(self, row: ManifestRow, vocabulary: List[str]):
    if self._ids[0] is not vocabulary:  # the side input is the same object per bundle
      self._ids = (vocabulary, {label: i for i, label in enumerate(vocabulary)})
    ids = self._ids[1]
    yield dataclasses.replace(row, label_ids=tuple(ids[l] for l in row.labels))


class AssignLabelIds(beam.PTransform):
  """Sets each row's label ids from the vocabulary, before any image is read.

  The vocabulary is a side input that needs every row; applying it to rows rather than
  to loaded images means no image bytes wait for it (no materialization, no second
  pass over the bytes).
  """

  def __init__(self, vocabulary):
    super().__init__()
    self._vocabulary = vocabulary

  def expand(self, rows):
    return rows | beam.ParDo(_AssignLabelIds(), vocabulary=self._vocabulary)


class _ToExample(beam.DoFn):

  def __init__(self, buckets: Sequence[Tuple[str, int]]):
    self._buckets = tuple(buckets)

  def process(self, element):
    row, data, info = element
    split = row.split or splits_lib.hash_split(row.image_uri, self._buckets)
    example = build_example(row, data, info)
    sha256 = example.features.feature['image/key/sha256'].bytes_list.value[0].decode()
    yield beam.pvalue.TaggedOutput(STATS, RecordStat(split, row.labels, sha256, row.image_uri))
    yield split, example.SerializeToString(deterministic=True)  # byte-reproducible records


class RecordStat(NamedTuple):
  """What the report needs of a written record, without its bytes."""
  split: str
  labels: Tuple[str, ...]
  sha256: str
  uri: str


class ToExamples(beam.PTransform):
  """Builds serialized tf.train.Examples keyed by split; also emits a RecordStat each."""

  def __init__(self, buckets: Sequence[Tuple[str, int]]):
    super().__init__()
    self._buckets = buckets

  def expand(self, images):
    return images | beam.ParDo(_ToExample(self._buckets)).with_outputs(STATS, main='records')


class LabelVocabulary(beam.PTransform):
  """The sorted set of labels in the manifest rows, as a one-element PCollection."""

  def expand(self, rows):
    return (rows
            | 'Labels' >> beam.FlatMap(lambda row: row.labels)
            | 'Distinct' >> beam.Distinct()
            | 'Sorted' >> beam.combiners.ToList()
            | 'Sort' >> beam.Map(sorted))


class WriteSplits(beam.PTransform):
  """Writes (split, serialized) pairs as gzipped TFRecord shards, one folder a split."""

  def __init__(self, split_dirs: Mapping[str, str],
               compression_level: int = sink_lib.DEFAULT_COMPRESSION_LEVEL):
    super().__init__()
    self._split_dirs = dict(split_dirs)
    self._level = compression_level

  def expand(self, records):
    names = list(self._split_dirs)
    parts = records | 'BySplit' >> beam.Partition(lambda kv, n: names.index(kv[0]), len(names))
    for name, part in zip(names, parts):
      _ = (part
           | f'Values[{name}]' >> beam.Values()
           | f'Write[{name}]' >> beam.io.Write(sink_lib.GzipTFRecordSink(
               FileSystems.join(self._split_dirs[name], TFRECORD_FILE_NAME), self._level)))
    return beam.pvalue.PDone(records.pipeline)


class _SummaryFn(beam.CombineFn):
  """Counts records per split and per label, and errors per reason."""

  def create_accumulator(self):
    return {'records': {}, 'labels': {}, 'errors': {}}

  def add_input(self, acc, element):
    kind, key, labels = element
    acc[kind][key] = acc[kind].get(key, 0) + 1
    for label in labels:
      acc['labels'][label] = acc['labels'].get(label, 0) + 1
    return acc

  def merge_accumulators(self, accumulators):
    out = self.create_accumulator()
    for acc in accumulators:
      for kind, counts in acc.items():
        for k, v in counts.items():
          out[kind][k] = out[kind].get(k, 0) + v
    return out

  def extract_output(self, acc):
    records = sum(acc['records'].values())
    errors = sum(acc['errors'].values())
    return {
        'rows_read': records + errors,
        'records_written': records,
        'rows_failed': errors,
        'records_per_split': dict(sorted(acc['records'].items())),
        'records_per_label': dict(sorted(acc['labels'].items())),
        'errors_per_reason': dict(sorted(acc['errors'].items())),
    }


class FindDuplicates(beam.PTransform):
  """Groups records by content hash; emits one dict per hash written more than once.

  Catches the same image listed twice and identical bytes under different names, and
  flags groups that span splits (test data leaking into training).
  """

  def expand(self, stats):
    return (stats
            | 'BySha256' >> beam.Map(lambda s: (s.sha256, (s.uri, s.split)))
            | 'Group' >> beam.GroupByKey()
            | 'Repeated' >> beam.Filter(lambda kv: len(kv[1]) > 1)
            | 'Describe' >> beam.Map(_describe_duplicate))


def _describe_duplicate(kv) -> Dict[str, Any]:
  sha256, members = kv
  members = sorted(members)
  splits = sorted({split for _, split in members})
  return {'sha256': sha256, 'uris': [u for u, _ in members],
          'splits': [s for _, s in members], 'cross_split': len(splits) > 1}


def _duplicate_counts(groups: List[Dict[str, Any]]) -> Dict[str, Any]:
  groups = sorted(groups, key=lambda g: g['uris'])
  return {
      'groups': len(groups),
      'extra_records': sum(len(g['uris']) - 1 for g in groups),
      'cross_split_groups': sum(1 for g in groups if g['cross_split']),
      'first': groups[:10],
  }


@dataclasses.dataclass(frozen=True)
class ConversionOptions:
  """What a conversion does beyond reading manifests and writing splits."""
  buckets: Tuple[Tuple[str, int], ...] = splits_lib.DEFAULT_BUCKETS
  max_pixels: int = image_lib.DEFAULT_MAX_PIXELS
  max_bytes: int = files.DEFAULT_MAX_BYTES
  verify_decode: bool = True         # decode every image so no undecodable record is written
  convert_unsupported: bool = False  # re-encode WebP, TIFF, ... as PNG instead of failing
  compression_level: int = sink_lib.DEFAULT_COMPRESSION_LEVEL  # gzip level of the shards


class ConvertManifests(beam.PTransform):
  """The whole conversion: manifests in; split TFRecords, label files and a report out.

  Writes `Split-<name>/data_tfrecord-*.gz` under `split_dirs`, `labels.txt` and
  `label_map.pbtxt` into `label_dir`, and `summary.json`, `errors.jsonl` and
  `duplicates.jsonl` into `report_dir`.
  """

  def __init__(self, sources: Sequence[ManifestSource], split_dirs: Mapping[str, str],
               label_dir: str, report_dir: str,
               options: ConversionOptions = ConversionOptions()):
    super().__init__()
    self._sources = sources
    self._split_dirs = split_dirs
    self._label_dir = label_dir
    self._report_dir = report_dir
    self._options = options

  def expand(self, pbegin):
    manifest = pbegin | 'ReadManifestRows' >> ReadManifestRows(self._sources)
    vocabulary = manifest['rows'] | 'LabelVocabulary' >> LabelVocabulary()
    _ = vocabulary | 'WriteLabelFiles' >> beam.Map(_WriteLabels(self._label_dir))
    rows = manifest['rows'] | 'AssignLabelIds' >> AssignLabelIds(
        beam.pvalue.AsSingleton(vocabulary))
    images = rows | 'LoadImages' >> LoadImages(self._options)
    examples = images.images | 'ToExamples' >> ToExamples(self._options.buckets)
    _ = examples.records | 'WriteSplits' >> WriteSplits(self._split_dirs,
                                                        self._options.compression_level)

    errors = (manifest[ERRORS], images[ERRORS]) | 'AllErrors' >> beam.Flatten()
    _ = errors | 'WriteErrors' >> _WriteJsonLines(self._report_dir, 'errors')
    duplicates = examples[STATS] | 'FindDuplicates' >> FindDuplicates()
    _ = duplicates | 'WriteDuplicates' >> _WriteJsonLines(self._report_dir, 'duplicates')
    duplicate_counts = (duplicates
                        | 'CollectDuplicates' >> beam.combiners.ToList()
                        | 'CountDuplicates' >> beam.Map(_duplicate_counts))
    summary_inputs = (
        (examples[STATS] | 'RecordStats' >> beam.Map(lambda s: ('records', s.split, s.labels)),
         errors | 'ErrorStats' >> beam.Map(lambda e: ('errors', e['reason'], ())))
        | 'AllStats' >> beam.Flatten())
    _ = (summary_inputs
         | 'Summarize' >> beam.CombineGlobally(_SummaryFn())
         | 'WriteSummary' >> beam.Map(
             _write_summary, FileSystems.join(self._report_dir, 'summary.json'),
             duplicates=beam.pvalue.AsSingleton(duplicate_counts)))
    return beam.pvalue.PDone(pbegin.pipeline)


def _write_summary(summary: Dict[str, Any], path: str, duplicates: Dict[str, Any]) -> None:
  files.write_text(path, json.dumps(dict(summary, duplicates=duplicates), indent=2,
                               ensure_ascii=False))


class _WriteJsonLines(beam.PTransform):
  """Writes dicts as one JSON object a line into `<directory>/<name>.jsonl`."""

  def __init__(self, directory: str, name: str):
    super().__init__()
    self._path = FileSystems.join(directory, name)

  def expand(self, dicts):
    return (dicts
            | 'ToJson' >> beam.Map(lambda d: json.dumps(d, ensure_ascii=False, sort_keys=True))
            | 'Write' >> beam.io.WriteToText(self._path, file_name_suffix='.jsonl',
                                              shard_name_template=''))


class _WriteLabels:

  def __init__(self, directory: str):
    self._directory = directory

  def __call__(self, vocabulary: List[str]) -> None:
    from tfrecorder_component import labels as labels_lib  # pylint: disable=g-import-not-at-top
    labels_lib.write_label_files(self._directory, vocabulary)
