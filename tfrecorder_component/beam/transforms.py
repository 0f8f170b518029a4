r"""Composite PTransforms, one job each; failures leave through a tagged `errors` output.

    manifests -> ReadManifestRows -> ConvertBatches -----------------------> WriteSplits
                   |        \-> LabelVocabulary -/ (side input)   |   \
                   |                                              |    +-> stats -> summary,
                   +--------------------- errors -----------------+            FindDuplicates

Rows are parsed as they are read and travel in chunks (at most MAX_CHUNKS_PER_FILE per
manifest file, each one compressed blob; see `Chunk`); everything per row happens inside
one DoFn, which emits records in batches of ROWS_PER_BATCH.

By construction: manifest rows = records written + error rows (errors.jsonl).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import pickle
import sys
import time
import zlib
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from tfrecorder_component.images import boxes as boxes_lib
from tfrecorder_component import example_proto as tf_example
from tfrecorder_component import files
from tfrecorder_component.images import probe as image_lib
from tfrecorder_component import labels as labels_lib
from tfrecorder_component import report_html
from tfrecorder_component.images import thumbnail as thumbnail_lib
from tfrecorder_component.images import transform as transform_lib
from tfrecorder_component import splits as splits_lib
from tfrecorder_component.beam import sink as sink_lib
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.example import DetectedObject, build_example
from tfrecorder_component.manifest import ManifestRow, iter_manifest_file

ERRORS = 'errors'
STATS = 'stats'
BOX_ISSUES = 'box_issues'
SAMPLES = 'samples'
SAMPLES_PER_LABEL = 8  # thumbnails per label on report.html's contact sheet
FIRST_ERRORS = 50     # failed rows listed on report.html
OBJECTS = 'objects'
METRICS_NAMESPACE = 'tfrecorder_component'
TFRECORD_FILE_NAME = 'data_tfrecord'  # as TFX ExampleGen writes it: Split-<name>/data_tfrecord-*.gz


@dataclasses.dataclass(frozen=True)
class ManifestSource:
  """One manifest file to read, with an optional split that every row takes.

  `image_root`: the folder COCO `file_name`s and Pascal VOC `filename`s are resolved
  against (default: the annotation file's folder). `feature_types`: (column, 'int' |
  'float' | 'string') pairs declaring the types of extra manifest columns.
  """
  path: str
  format: Optional[str] = None
  split: Optional[str] = None
  image_root: Optional[str] = None
  feature_types: Tuple[Tuple[str, str], ...] = ()
  # (row, DataFrame index label) of a manifest written from a DataFrame: its failed rows
  # are cited by the index the user knows (`index` in errors.jsonl).
  row_index: Tuple[Tuple[int, Any], ...] = ()


class _CiteIndex:
  """Adds the DataFrame `index` to the errors of rows of manifests written from one."""

  def __init__(self, sources: Sequence[ManifestSource]):
    self._index = {s.path: dict(s.row_index) for s in sources if s.row_index}

  def __call__(self, error: Dict[str, Any]) -> Dict[str, Any]:
    index = self._index.get(error['source'], {}).get(error['row'])
    return error if index is None else dict(error, index=index)


def error_record(error: RowError, row: Optional[ManifestRow] = None) -> Dict[str, Any]:
  """The dead-letter form of a failed row, as written to errors.jsonl."""
  return {
      'source': row.source if row else error.source,
      'row': row.row if row else error.row,
      'uri': row.image_uri if row else error.uri,
      'reason': error.reason,
      'message': error.message,
  }


ROWS_PER_BATCH = 64
MAX_CHUNKS_PER_FILE = 64

# A chunk of rows: (labels of its rows, task, rows). The rows are one zlib-compressed
# pickle of plain tuples: the DirectRunner holds every element of a shuffle decoded in
# memory, where a blob stays one bytes object (8 bytes a row for the benchmark's
# manifest, against some 500 for rows as Python objects). The labels let the vocabulary
# be built without opening the rows.
Chunk = Tuple[Tuple[str, ...], str, bytes]


def pack_chunk(rows: Sequence[ManifestRow]) -> Chunk:
  """Rows of one task (all classification or all detection) as a Chunk."""
  labels = set()
  for r in rows:
    labels.update(r.labels)
    labels.update(o.label for o in r.objects or ())
  task = 'classification' if rows[0].objects is None else 'detection'
  packed = [(r.source, r.row, r.image_uri, r.resolved_uri, r.labels, r.split, r.objects,
             r.features) for r in rows]
  return (tuple(sorted(labels)), task,
          zlib.compress(pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL), 1))


def unpack_chunk(chunk: Chunk) -> List[ManifestRow]:
  return [ManifestRow(source=t[0], row=t[1], image_uri=t[2], resolved_uri=t[3],
                      labels=t[4], split=t[5], objects=t[6], features=t[7])
          for t in pickle.loads(zlib.decompress(chunk[2]))]


class _ParseManifest(beam.DoFn):
  """Streams a manifest file's rows out in chunks as they are parsed: at most
  `max_chunks` per file (sized from the file's line count), of at least `rows_per_batch`
  rows. No file is held parsed in memory."""

  def __init__(self, rows_per_batch: int, max_chunks: int):
    self._rows_per_batch = rows_per_batch
    self._max_chunks = max_chunks

  def process(self, source: ManifestSource):
    lines, items = iter_manifest_file(source.path, source.format, source.split,
                                      image_root=source.image_root,
                                      feature_types=dict(source.feature_types) or None)
    size = max(self._rows_per_batch, -(-lines // self._max_chunks))
    chunk: List[ManifestRow] = []
    for item in items:
      if isinstance(item, RowError):
        yield beam.pvalue.TaggedOutput(ERRORS, error_record(item))
      elif item.objects is not None:  # detection: rows of one image are grouped first
        yield beam.pvalue.TaggedOutput(OBJECTS, ((item.source, item.image_uri), item))
      else:
        chunk.append(item)
        if len(chunk) == size:
          yield pack_chunk(chunk)
          chunk = []
    if chunk:
      yield pack_chunk(chunk)


class ReadManifestRows(beam.PTransform):
  """Parses manifest files into Chunks of rows (main) and error rows (`errors`).

  Each file is parsed by one worker so rows keep their positions; the chunks are then
  redistributed so image loading fans out across all workers. A file becomes at most
  `max_chunks` chunks (of at least `rows_per_batch` rows): the DirectRunner buffers
  every element that crosses a stage boundary, and a few compressed blobs cost far less
  than one element per row. Detection rows are first merged per image.
  """

  def __init__(self, sources: Sequence[ManifestSource], rows_per_batch: int = ROWS_PER_BATCH,
               max_chunks: int = MAX_CHUNKS_PER_FILE):
    super().__init__()
    self._sources = list(sources)
    self._rows_per_batch = rows_per_batch
    self._max_chunks = max_chunks

  def expand(self, pbegin):
    parsed = (pbegin
              | 'ListManifests' >> beam.Create(self._sources)
              | 'Parse' >> beam.ParDo(_ParseManifest(self._rows_per_batch, self._max_chunks)
                                      ).with_outputs(ERRORS, OBJECTS, main='rows'))
    images = (parsed[OBJECTS]
              | 'GroupObjects' >> beam.CombinePerKey(_MergeObjectsFn())
              | 'ImageRows' >> beam.ParDo(_CheckMerged()).with_outputs(ERRORS, main='rows'))
    image_chunks = (images.rows
                    | 'BatchImages' >> beam.BatchElements(
                        min_batch_size=self._rows_per_batch, max_batch_size=self._rows_per_batch)
                    | 'PackImages' >> beam.Map(pack_chunk))
    chunks = ((parsed.rows, image_chunks)
              | 'AllChunks' >> beam.Flatten()
              | 'Redistribute' >> beam.Reshuffle())
    errors = (parsed[ERRORS], images[ERRORS]) | 'ParseErrors' >> beam.Flatten()
    return {'chunks': chunks, ERRORS: errors}


class _MergeObjectsFn(beam.CombineFn):
  """Merges the rows of one detection image (one row per box in AutoML CSV, one per
  annotation in COCO) into one row. A Beam combine, so the grouping scales with the
  runner. Objects are ordered by manifest row, then by value: the same record
  whatever order the rows arrive in.
  """

  def create_accumulator(self):
    return []

  def add_input(self, acc, row: ManifestRow):
    acc.append(row)
    return acc

  def merge_accumulators(self, accumulators):
    return [row for acc in accumulators for row in acc]

  def extract_output(self, acc):
    if len(acc) == 1:
      return acc[0]
    rows = sorted(acc, key=lambda r: (r.row, r.split or ''))
    if len({r.split for r in rows}) > 1:  # returned as a list: _CheckMerged reports it
      return rows
    objects = sorted(((r.row, o, i) for r in rows for i, o in enumerate(r.objects)),
                     key=lambda t: (t[0], repr(dataclasses.astuple(t[1])), t[2]))
    boxes = tuple(o for _, o, _ in objects)
    return dataclasses.replace(
        rows[0], objects=boxes, labels=tuple(dict.fromkeys(o.label for o in boxes)),
        features=tuple(sorted(dict(f for r in rows for f in r.features).items())))


class _CheckMerged(beam.DoFn):
  """Passes merged image rows on; an image whose rows disagree on the split fails."""

  def process(self, kv):
    (source, uri), merged = kv
    if isinstance(merged, ManifestRow):
      yield merged
      return
    rows = ', '.join(f'{r.row} ({r.split or "unassigned"})' for r in merged)
    yield beam.pvalue.TaggedOutput(ERRORS, error_record(RowError(
        'conflicting_split', f'the rows of this image give different ML_USE values: rows '
        f'{rows}; give every row of an image the same ML_USE', source=source,
        row=merged[0].row, uri=uri)))


class RecordStat(NamedTuple):
  """What the report needs of a written record, without its bytes."""
  split: str
  labels: Tuple[str, ...]
  sha256: str
  uri: str
  objects: Tuple[str, ...] = ()  # detection: the label of each object written
  image_format: str = ''
  size_bucket: str = ''  # report_html.size_bucket of the stored image


def load_image(row: ManifestRow, options: 'ConversionOptions'
               ) -> Tuple[bytes, image_lib.ImageInfo, bool]:
  """Reads a row's image, probes its header and (by default) proves it decodes.

  Returns (bytes, info, converted); raises RowError naming the reason.
  """
  data = files.read_bytes(row.resolved_uri, max_bytes=options.max_bytes)
  try:
    return data, image_lib.probe_image(data, options.max_pixels,
                                       decode=options.verify_decode), False
  except RowError as e:
    if e.reason != 'unsupported_format' or not options.convert_unsupported:
      raise
  data = image_lib.convert_to_png(data)
  return data, image_lib.probe_image(data, options.max_pixels,
                                     decode=options.verify_decode), True


class _ConvertBatch(beam.DoFn):
  """A Chunk of rows in; per split, batches of serialized Examples out.

  For each row: label ids from the vocabulary, read, probe and decode check, boxes
  checked (see `boxes`), optional image transform, split, Example. Side outputs: one
  error record per failed row (`errors`), one list of RecordStats per batch (`stats`),
  one record per dropped or clipped box (`box_issues`).
  """

  def __init__(self, options: 'ConversionOptions'):
    self._options = options
    self._ids: Tuple[Any, Dict[str, int]] = (None, {})
    self._sampled: Dict[str, int] = {}
    self._loaded = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_loaded')
    self._converted = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_converted')
    self._failed = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'images_failed')
    self._bytes = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'image_bytes_read')

  def _samples(self, labels: Tuple[str, ...], uri: str, data: bytes, objects):
    """(label, (uri, thumbnail)) for each of the record's labels (or '(none)') of which
    this DoFn instance has seen fewer than SAMPLES_PER_LABEL records, so every label
    appears on the contact sheet; detection thumbnails show the boxes with their class
    names. The contact sheet costs a few decodes, never a second read."""
    wanted = [label for label in (labels or ('(none)',))
              if self._sampled.get(label, 0) < SAMPLES_PER_LABEL]
    if not wanted:
      return []
    for label in wanted:
      self._sampled[label] = self._sampled.get(label, 0) + 1
    thumbnail = thumbnail_lib.thumbnail(data, [(o.label, o.box) for o in objects or ()])
    return [] if thumbnail is None else [(label, (uri, thumbnail)) for label in wanted]

  def _label_ids(self, vocabulary: Dict[str, Any]) -> Dict[str, int]:
    if self._ids[0] is not vocabulary:  # the side input is the same object per bundle
      first = first_label_id(vocabulary['task'])
      self._ids = (vocabulary, {label: i for i, label in enumerate(vocabulary['labels'],
                                                                   start=first)})
    return self._ids[1]

  def process(self, chunk: Chunk, vocabulary: Dict[str, Any]):
    rows = unpack_chunk(chunk)
    for start in range(0, len(rows), ROWS_PER_BATCH):
      yield from self._convert(rows[start:start + ROWS_PER_BATCH], vocabulary)

  def _convert(self, batch: List[ManifestRow], vocabulary: Dict[str, Any]):
    ids = self._label_ids(vocabulary)
    buckets = self._options.buckets
    records: Dict[str, List[bytes]] = {}
    stats: List[RecordStat] = []
    loaded = converted = nbytes = 0
    for row in batch:
      try:
        data, info, was_converted = load_image(row, self._options)
        nbytes += len(data)
        data, info, objects, issues = _objects_and_transform(row, data, info, ids,
                                                             self._options)
      except RowError as e:
        self._failed.inc()
        yield beam.pvalue.TaggedOutput(ERRORS, error_record(e, row))
        continue
      for issue in issues:
        yield beam.pvalue.TaggedOutput(BOX_ISSUES, dict(
            source=row.source, row=row.row, uri=row.image_uri, **issue.as_dict()))
      loaded += 1
      converted += was_converted
      if objects is None:
        row = dataclasses.replace(row, label_ids=tuple(ids[l] for l in row.labels))
      split = row.split or splits_lib.hash_split(row.image_uri, buckets)
      example = build_example(row, data, info, objects)
      sha256 = example.features.feature['image/key/sha256'].bytes_list.value[0].decode()
      # deterministic: byte-reproducible records
      records.setdefault(split, []).append(example.SerializeToString(deterministic=True))
      names = () if objects is None else tuple(o.label for o in objects)
      labels = row.labels if objects is None else tuple(dict.fromkeys(names))
      stats.append(RecordStat(split, labels, sha256, row.image_uri, names, info.format,
                              report_html.size_bucket(info.width, info.height)))
      for sample in self._samples(labels, row.image_uri, data, objects):
        yield beam.pvalue.TaggedOutput(SAMPLES, sample)
    self._loaded.inc(loaded)
    self._converted.inc(converted)
    self._bytes.inc(nbytes)
    if self._options.progress_every_s:
      _PROGRESS.add(len(batch), len(batch) - loaded, self._options.progress_every_s)
    for split, serialized in records.items():
      yield split, serialized
    if stats:
      yield beam.pvalue.TaggedOutput(STATS, stats)


class _Progress:
  """Rows done, rate and failures of this worker process, printed at most every few
  seconds (each worker of a multi-process run reports its own share)."""

  def __init__(self):
    self._start = self._last = None
    self._rows = self._failed = 0

  def add(self, rows: int, failed: int, every_s: float) -> None:
    now = time.monotonic()
    if self._start is None:
      self._start = self._last = now
    self._rows += rows
    self._failed += failed
    if now - self._last >= every_s:
      self._last = now
      rate = self._rows / max(now - self._start, 1e-9)
      print(f'[{os.getpid()}] {self._rows:,} rows done, {rate:,.0f} rows/s, '
            f'{self._failed:,} failed', file=sys.stderr, flush=True)


_PROGRESS = _Progress()


def _objects_and_transform(row: ManifestRow, data: bytes, info: image_lib.ImageInfo,
                           ids: Dict[str, int], options: 'ConversionOptions'):
  """Checks the row's boxes against the stored image, then applies the image transform
  (boxes move with the pixels). Returns (bytes, info, objects or None, box issues)."""
  kept, issues = ([], []) if row.objects is None else boxes_lib.normalize_boxes(
      row.objects, info.width, info.height)
  scale = (1.0, 1.0)
  transform = options.transform
  if transform is not None and not transform.is_identity:
    result = transform_lib.apply_transform(data, transform, [box for _, _, box in kept])
    if result.changed:
      data, scale = result.data, result.scale
      info = image_lib.probe_image(data, options.max_pixels)
      for (index, obj, _), box in zip(kept, result.boxes):
        if box is None:
          issues.append(boxes_lib.BoxIssue(index, obj.label,
                                           (obj.xmin, obj.ymin, obj.xmax, obj.ymax),
                                           'dropped', 'outside_after_transform'))
      kept = [(index, obj, box) for (index, obj, _), box in zip(kept, result.boxes)
              if box is not None]
  if row.objects is None:
    return data, info, None, issues
  objects = [DetectedObject(
      label=obj.label, class_id=ids[obj.label], box=box,
      area=(obj.area * scale[0] * scale[1] if obj.area is not None
            else boxes_lib.pixel_area(box, info.width, info.height)),
      is_crowd=obj.is_crowd, difficult=obj.difficult, truncated=obj.truncated)
             for _, obj, box in kept]
  return data, info, objects, issues


class ConvertBatches(beam.PTransform):
  """Chunks of rows -> (split, [serialized tf.train.Example]) pairs.

  Outputs: `records` (main), `errors` (one dict per failed row) and `stats` (a list of
  RecordStat per batch). Label ids come from `vocabulary`, a singleton side input, and
  are set on rows before any image is read: no image bytes wait for the vocabulary.
  """

  def __init__(self, vocabulary, options: 'ConversionOptions'):
    super().__init__()
    self._vocabulary = vocabulary
    self._options = options

  def expand(self, chunks):
    return chunks | beam.ParDo(_ConvertBatch(self._options),
                                vocabulary=self._vocabulary).with_outputs(
                                    ERRORS, STATS, BOX_ISSUES, SAMPLES, main='records')


def first_label_id(task: str) -> int:
  """Class ids start at 0 for classification, at 1 for detection (0 is background)."""
  return 1 if task == 'detection' else 0


class _LabelSetFn(beam.CombineFn):
  """The sorted set of labels of Chunks of rows, and the task: classification or
  detection (a run converts one or the other)."""

  def create_accumulator(self):
    return set(), set()

  def add_input(self, acc, chunk: Chunk):
    labels, task, _ = chunk
    acc[0].update(labels)
    acc[1].add(task)
    return acc

  def merge_accumulators(self, accumulators):
    accumulators = list(accumulators)
    return (set().union(*(a[0] for a in accumulators)),
            set().union(*(a[1] for a in accumulators)))

  def extract_output(self, acc):
    labels, tasks = acc
    if len(tasks) > 1:
      raise ManifestError('the manifests mix classification and detection rows; convert '
                          'them in separate runs')
    return {'labels': labels_lib.vocabulary_order(labels),
            'task': next(iter(tasks), 'classification')}


class LabelVocabulary(beam.PTransform):
  """{'labels': the vocabulary in id order (`labels.vocabulary_order`), 'task': ...} of
  Chunks of rows, one element."""

  def expand(self, chunks):
    return chunks | beam.CombineGlobally(_LabelSetFn())


class WriteSplits(beam.PTransform):
  """Writes (split, [serialized]) pairs as gzipped TFRecord shards, one folder a split."""

  def __init__(self, split_dirs: Mapping[str, str],
               compression_level: int = sink_lib.DEFAULT_COMPRESSION_LEVEL):
    super().__init__()
    self._split_dirs = dict(split_dirs)
    self._level = compression_level

  def expand(self, records):
    """Returns the paths of the shards written, once every split is written."""
    names = list(self._split_dirs)
    parts = records | 'BySplit' >> beam.Partition(lambda kv, n: names.index(kv[0]), len(names))
    return [part
            | f'Values[{name}]' >> beam.Values()
            | f'Write[{name}]' >> beam.io.Write(sink_lib.GzipTFRecordSink(
                FileSystems.join(self._split_dirs[name], TFRECORD_FILE_NAME), self._level,
                batched=True))
            for name, part in zip(names, parts)] | 'Shards' >> beam.Flatten()


def _stat_counts(stats: List[RecordStat]) -> Dict[str, Dict[str, int]]:
  """A batch's RecordStats as counts per split, label and object label: a few small
  dicts cross to the summary instead of a stat per record."""
  counts: Dict[str, Dict[str, int]] = {k: {} for k in _STAT_KINDS}

  def add(kind: str, key: str) -> None:
    counts[kind][key] = counts[kind].get(key, 0) + 1

  for stat in stats:
    add('records', stat.split)
    for label in stat.labels:
      add('labels', label)
      add('split_labels', f'{stat.split}\t{label}')
    for label in stat.objects:
      add('objects', label)
    add('formats', stat.image_format)
    add('sizes', stat.size_bucket)
  return counts


_STAT_KINDS = ('records', 'labels', 'split_labels', 'objects', 'formats', 'sizes')


def _add_counts(acc: Dict[str, Dict[str, int]], counts: Dict[str, Dict[str, int]]):
  """Adds `counts` ({kind: {key: n}}) into `acc`, in place; returns `acc`."""
  for kind, values in counts.items():
    target = acc[kind]
    for key, n in values.items():
      target[key] = target.get(key, 0) + n
  return acc


class _SummaryFn(beam.CombineFn):
  """Counts records per split and per label (from `_stat_counts`), errors per reason."""

  def create_accumulator(self):
    return {k: {} for k in (*_STAT_KINDS, 'errors', 'box_issues')}

  def add_input(self, acc, element):
    if isinstance(element, tuple):  # ('errors' | 'box_issues', reason)
      kind, key = element
      acc[kind][key] = acc[kind].get(key, 0) + 1
      return acc
    return _add_counts(acc, element)

  def merge_accumulators(self, accumulators):
    accumulators = iter(accumulators)
    out = next(accumulators)
    for acc in accumulators:
      _add_counts(out, acc)
    return out

  def extract_output(self, acc):
    records = sum(acc['records'].values())
    errors = sum(acc['errors'].values())
    per_split: Dict[str, Dict[str, int]] = {}
    for key, n in sorted(acc['split_labels'].items()):
      split, label = key.split('\t', 1)
      per_split.setdefault(split, {})[label] = n
    return {
        'rows_read': records + errors,
        'records_written': records,
        'rows_failed': errors,
        'records_per_split': dict(sorted(acc['records'].items())),
        'records_per_label': dict(sorted(acc['labels'].items())),
        'errors_per_reason': dict(sorted(acc['errors'].items())),
        'objects_written': sum(acc['objects'].values()),
        'objects_per_label': dict(sorted(acc['objects'].items())),
        'box_issues': dict(sorted(acc['box_issues'].items())),
        'labels_per_split': per_split,
        'image_formats': dict(sorted(acc['formats'].items())),
        'image_sizes': dict(sorted(acc['sizes'].items())),
    }


DUPLICATE_KEY_SHARDS = 16  # hex digits of the hash; lets a distributed runner spread the work


class _ContentIndexFn(beam.CombineFn):
  """Content index of RecordStat lists; outputs the repeated hashes only.

  Keeps every record of its key shard as raw digest -> (uri, split, uri, split, ...), a
  flat tuple (about 180 bytes a record, half of hex keys and lists of pairs): duplicates
  cannot be found with less, and the runner combines partial indexes per bundle.
  """

  def create_accumulator(self):
    return {}

  def add_input(self, acc, stats):
    for stat in stats:
      digest = bytes.fromhex(stat.sha256)
      acc[digest] = acc.get(digest, ()) + (stat.uri, stat.split)
    return acc

  def merge_accumulators(self, accumulators):
    accumulators = iter(accumulators)
    out = next(accumulators)
    for acc in accumulators:
      for digest, members in acc.items():
        out[digest] = out.get(digest, ()) + members
    return out

  def extract_output(self, acc):
    return [_describe_duplicate(digest.hex(), list(zip(members[0::2], members[1::2])))
            for digest, members in acc.items() if len(members) > 2]


def _by_shard(stats: List[RecordStat]):
  shards: Dict[str, List[RecordStat]] = {}
  for stat in stats:
    shards.setdefault(stat.sha256[0], []).append(stat)
  return shards.items()


class FindDuplicates(beam.PTransform):
  """Finds records with equal content hashes; emits one dict per hash seen more than once.

  Catches the same image listed twice and identical bytes under different names, and
  flags groups that span splits (test data leaking into training). Input: RecordStat
  lists.
  """

  def expand(self, stats):
    return (stats
            | 'ByHashPrefix' >> beam.FlatMap(_by_shard)
            | 'Index' >> beam.CombinePerKey(_ContentIndexFn())
            | 'Repeated' >> beam.FlatMap(lambda kv: kv[1]))


def _describe_duplicate(sha256: str, members) -> Dict[str, Any]:
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
  transform: Optional[transform_lib.ImageTransform] = None  # None: bytes pass through
  progress_every_s: Optional[float] = None  # report rows done, rate and errors on stderr


class ConvertManifests(beam.PTransform):
  """The whole conversion: manifests in; split TFRecords, label files and a report out.

  Writes `Split-<name>/data_tfrecord-*.gz` under `split_dirs`, `labels.txt` and
  `label_map.pbtxt` into `label_dir`, and `summary.json`, `errors.jsonl` and
  `duplicates.jsonl` into `report_dir`. With `split_dirs` and `label_dir` None it
  writes only the report: every row is read, probed and built, and no record is kept
  (what `tfrecorder-component validate` runs).
  """

  def __init__(self, sources: Sequence[ManifestSource],
               split_dirs: Optional[Mapping[str, str]], label_dir: Optional[str],
               report_dir: str,
               options: ConversionOptions = ConversionOptions()):
    super().__init__()
    self._sources = sources
    self._split_dirs = split_dirs
    self._label_dir = label_dir
    self._report_dir = report_dir
    self._options = options

  def expand(self, pbegin):
    manifest = pbegin | 'ReadManifestRows' >> ReadManifestRows(self._sources)
    vocabulary = manifest['chunks'] | 'LabelVocabulary' >> LabelVocabulary()
    converted = manifest['chunks'] | 'Convert' >> ConvertBatches(
        beam.pvalue.AsSingleton(vocabulary), self._options)

    errors = (manifest[ERRORS], converted[ERRORS]) | 'AllErrors' >> beam.Flatten()
    if any(s.row_index for s in self._sources):
      errors = errors | 'CiteDataFrameIndex' >> beam.Map(_CiteIndex(self._sources))
    _ = errors | 'WriteErrors' >> _WriteJsonLines(self._report_dir, 'errors')
    duplicates = converted[STATS] | 'FindDuplicates' >> FindDuplicates()
    _ = duplicates | 'WriteDuplicates' >> _WriteJsonLines(self._report_dir, 'duplicates')
    duplicate_counts = (duplicates
                        | 'CollectDuplicates' >> beam.combiners.ToList()
                        | 'CountDuplicates' >> beam.Map(_duplicate_counts))
    _ = (converted[BOX_ISSUES]
         | 'WriteBoxIssues' >> _WriteJsonLines(self._report_dir, 'box_issues'))
    summary = ((converted[STATS] | 'CountStats' >> beam.Map(_stat_counts),
          errors | 'ErrorReasons' >> beam.Map(lambda e: ('errors', e['reason'])),
          converted[BOX_ISSUES] | 'BoxIssueReasons' >> beam.Map(
              lambda b: ('box_issues', f'{b["action"]}:{b["reason"]}')))
         | 'AllStats' >> beam.Flatten()
         | 'Summarize' >> beam.CombineGlobally(_SummaryFn()))
    held = summary | 'HeldLabels' >> beam.Map(_held_labels, beam.pvalue.AsSingleton(vocabulary))
    if self._label_dir is not None:
      _ = held | 'WriteLabelFiles' >> beam.Map(_WriteLabels(self._label_dir))
    if self._split_dirs is not None:
      _ = (converted.records
           | 'WriteSplits' >> WriteSplits(self._split_dirs, self._options.compression_level)
           | 'RenumberLabels' >> beam.Map(_RenumberLabels(self._options.compression_level),
                                          beam.pvalue.AsSingleton(held)))
    _ = (summary
         | 'WriteSummary' >> beam.Map(
             _write_summary, self._report_dir, held=beam.pvalue.AsSingleton(held),
             duplicates=beam.pvalue.AsSingleton(duplicate_counts),
             samples=beam.pvalue.AsDict(
                 converted[SAMPLES]
                 | 'SamplesPerLabel' >> beam.combiners.Top.SmallestPerKey(SAMPLES_PER_LABEL)),
             errors=beam.pvalue.AsSingleton(
                 errors | 'FirstErrors' >> beam.combiners.Top.Of(
                     FIRST_ERRORS, key=lambda e: (e['source'], e['row'] or 0), reverse=True)),
             box_issues=beam.pvalue.AsSingleton(
                 converted[BOX_ISSUES] | 'FirstBoxIssues' >> beam.combiners.Top.Of(
                     FIRST_ERRORS, key=lambda b: (b['source'], b['row'] or 0), reverse=True))))
    return beam.pvalue.PDone(pbegin.pipeline)


def _held_labels(summary: Dict[str, Any], vocabulary: Dict[str, Any]) -> Dict[str, Any]:
  """The vocabulary of the records written (`labels.held_vocabulary`): 'labels' in id
  order, 'task', 'left_out' (labels no record holds) and 'ids' {id set before the run:
  id now}, empty unless a label was left out."""
  task, counts = vocabulary['task'], summary['records_per_label']
  held, ids = labels_lib.held_vocabulary(vocabulary['labels'], first_label_id(task), counts)
  return {'labels': held, 'task': task, 'ids': ids,
          'left_out': [l for l in vocabulary['labels'] if not counts.get(l)]}


class _RenumberLabels:
  """Gives a shard's records the ids of the held vocabulary, when a label was left out."""

  def __init__(self, compression_level: int):
    self._level = compression_level

  def __call__(self, shard: str, held: Dict[str, Any]) -> None:
    if held['ids']:
      key = ('image/object/class/label' if held['task'] == 'detection'
             else 'image/class/label')
      sink_lib.rewrite_shard(shard, functools.partial(_renumber, key=key, ids=held['ids']),
                             self._level)


def _renumber(record: bytes, key: str, ids: Dict[int, int]) -> bytes:
  example = tf_example.Example.FromString(record)
  values = example.features.feature[key].int64_list.value
  values[:] = [ids[v] for v in values]
  return example.SerializeToString(deterministic=True)


def _write_summary(summary: Dict[str, Any], report_dir: str, held: Dict[str, Any],
                   duplicates: Dict[str, Any], samples: Dict[str, List[Tuple[str, bytes]]],
                   errors: List[Dict[str, Any]], box_issues: List[Dict[str, Any]]) -> None:
  """summary.json, and report.html: the same counts with a contact sheet and the first
  failed rows, for people."""
  summary = dict(summary, vocabulary=held['labels'], labels_left_out=held['left_out'],
                 duplicates=duplicates)
  files.write_text(FileSystems.join(report_dir, 'summary.json'),
                   json.dumps(summary, indent=2, ensure_ascii=False))
  files.write_text(FileSystems.join(report_dir, 'report.html'),
                   report_html.render(summary, samples, errors, box_issues=box_issues))


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

  def __call__(self, held: Dict[str, Any]) -> None:
    labels_lib.write_label_files(self._directory, held['labels'], first_label_id(held['task']))
