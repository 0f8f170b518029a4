"""Composite PTransforms, one job each; failures leave through a tagged `errors` output.

    manifests -> ReadManifestRows -> LoadImages -> ToExamples -> WriteSplits
                       |                 |            |
                       +----- errors ----+------------+--> error rows (dicts)

By construction: manifest rows = records written + error rows.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from tfrecorder_component import image as image_lib
from tfrecorder_component import splits as splits_lib
from tfrecorder_component.errors import RowError
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


def read_image_bytes(uri: str) -> bytes:
  """Reads a file from any Beam file system, with errors a person can act on."""
  try:
    with FileSystems.open(uri, compression_type='uncompressed') as f:
      return f.read()
  except (FileNotFoundError, IsADirectoryError) as e:
    raise RowError('missing', f'cannot open the image: {e}') from None
  except Exception as e:  # File systems raise their own types (BeamIOError, GCS errors).
    text = str(e)
    if 'No such file' in text or 'Not found' in text or 'not found' in text:
      raise RowError('missing', f'the image does not exist ({text})') from None
    if 'Is a directory' in text:
      raise RowError('missing', 'the URI names a directory, not an image file') from None
    raise RowError('unreadable', f'cannot read the image: {type(e).__name__}: {text}') from None


class _LoadImage(beam.DoFn):

  def __init__(self, max_pixels: int):
    self._max_pixels = max_pixels
    self._loaded = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_loaded')
    self._bytes = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'image_bytes_read')

  def process(self, row: ManifestRow):
    try:
      data = read_image_bytes(row.resolved_uri)
      info = image_lib.probe_image(data, self._max_pixels)
    except RowError as e:
      yield beam.pvalue.TaggedOutput(ERRORS, error_record(e, row))
      return
    self._loaded.inc()
    self._bytes.inc(len(data))
    yield row, data, info


class LoadImages(beam.PTransform):
  """Reads each row's image bytes and probes its header: (row, bytes, ImageInfo)."""

  def __init__(self, max_pixels: int = image_lib.DEFAULT_MAX_PIXELS):
    super().__init__()
    self._max_pixels = max_pixels

  def expand(self, rows):
    return rows | beam.ParDo(_LoadImage(self._max_pixels)).with_outputs(ERRORS, main='images')


class _ToExample(beam.DoFn):

  def __init__(self, buckets: Sequence[Tuple[str, int]]):
    self._buckets = tuple(buckets)

  def process(self, element, vocabulary: List[str]):
    from tfrecorder_component.example import build_example  # pylint: disable=g-import-not-at-top
    row, data, info = element
    label_ids = {label: i for i, label in enumerate(vocabulary)}
    split = row.split or splits_lib.hash_split(row.image_uri, self._buckets)
    example = build_example(row, data, info, label_ids)
    yield beam.pvalue.TaggedOutput(STATS, (split, row.labels))
    yield split, example.SerializeToString()


class ToExamples(beam.PTransform):
  """Builds serialized tf.train.Examples keyed by split; also emits (split, labels) stats."""

  def __init__(self, vocabulary, buckets: Sequence[Tuple[str, int]]):
    super().__init__()
    self._vocabulary = vocabulary
    self._buckets = buckets

  def expand(self, images):
    return images | beam.ParDo(_ToExample(self._buckets), vocabulary=self._vocabulary
                               ).with_outputs(STATS, main='records')


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

  def __init__(self, split_dirs: Mapping[str, str]):
    super().__init__()
    self._split_dirs = dict(split_dirs)

  def expand(self, records):
    names = list(self._split_dirs)
    parts = records | 'BySplit' >> beam.Partition(lambda kv, n: names.index(kv[0]), len(names))
    for name, part in zip(names, parts):
      _ = (part
           | f'Values[{name}]' >> beam.Values()
           | f'Write[{name}]' >> beam.io.WriteToTFRecord(
               FileSystems.join(self._split_dirs[name], TFRECORD_FILE_NAME),
               file_name_suffix='.gz'))
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


def _write_text(path: str, text: str) -> None:
  with FileSystems.create(path) as f:
    f.write(text.encode('utf-8'))


@dataclasses.dataclass(frozen=True)
class ConversionOptions:
  """What a conversion does beyond reading manifests and writing splits."""
  buckets: Tuple[Tuple[str, int], ...] = splits_lib.DEFAULT_BUCKETS
  max_pixels: int = image_lib.DEFAULT_MAX_PIXELS


class ConvertManifests(beam.PTransform):
  """The whole conversion: manifests in; split TFRecords, label files, summary, errors out.

  Writes `Split-<name>/data_tfrecord-*.gz` under `split_dirs`, `labels.txt` and
  `label_map.pbtxt` into `label_dir`, and `summary.json` and `errors.jsonl` into
  `report_dir`.
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
    images = manifest['rows'] | 'LoadImages' >> LoadImages(self._options.max_pixels)
    examples = images.images | 'ToExamples' >> ToExamples(
        beam.pvalue.AsSingleton(vocabulary), self._options.buckets)
    _ = examples.records | 'WriteSplits' >> WriteSplits(self._split_dirs)

    errors = ((manifest[ERRORS], images[ERRORS]) | 'AllErrors' >> beam.Flatten())
    _ = (errors
         | 'ErrorsToJson' >> beam.Map(lambda e: json.dumps(e, ensure_ascii=False, sort_keys=True))
         | 'WriteErrors' >> beam.io.WriteToText(
             FileSystems.join(self._report_dir, 'errors'), file_name_suffix='.jsonl',
             shard_name_template=''))
    summary_inputs = (
        (examples[STATS] | 'RecordStats' >> beam.Map(lambda s: ('records', s[0], s[1])),
         errors | 'ErrorStats' >> beam.Map(lambda e: ('errors', e['reason'], ())))
        | 'AllStats' >> beam.Flatten())
    _ = (summary_inputs
         | 'Summarize' >> beam.CombineGlobally(_SummaryFn())
         | 'WriteSummary' >> beam.Map(
             lambda s, path: _write_text(path, json.dumps(s, indent=2, ensure_ascii=False)),
             FileSystems.join(self._report_dir, 'summary.json')))
    return beam.pvalue.PDone(pbegin.pipeline)


class _WriteLabels:

  def __init__(self, directory: str):
    self._directory = directory

  def __call__(self, vocabulary: List[str]) -> None:
    from tfrecorder_component import labels as labels_lib  # pylint: disable=g-import-not-at-top
    labels_lib.write_label_files(self._directory, vocabulary)
