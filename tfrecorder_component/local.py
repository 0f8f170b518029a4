"""The conversion on this machine's cores, without Beam: the same steps (`steps/`) as
`beam.pipeline.ConvertManifests`, the same bytes out, in a fraction of the fixed cost.

    parse manifests into chunk files -> vocabulary -> N worker processes convert chunks
    (each writes its own shard per split, spills its sorted runs) -> shards named,
    JSON-lines files merged, duplicates found, summary.json and report.html written

Importing Beam takes seconds, building and starting a pipeline and its worker
processes more (each worker imports Beam and this package again): on a small run that
is most of the wall time, and on a large one it delays every core's first row. Here
the workers are forked from this process, which has imported only what converting
needs, so they start in milliseconds; each converts chunks as the others do, taken
from one queue. `run.run_conversion` picks this way for DirectRunner runs whose
manifests and output are local and whose Beam arguments ask nothing of the runner.

Nothing that grows with the rows is held by one process: rows travel as chunk files,
records go straight from a worker to its shard, and the report's JSON-lines files and
the duplicate index are the same external sorts the Beam steps use.
"""
from __future__ import annotations

import heapq
import logging
import multiprocessing
import os
import posixpath
import time
import traceback
import uuid
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from tfrecorder_component import files
from tfrecorder_component import labels as labels_lib
from tfrecorder_component import layout
from tfrecorder_component.options import ConversionOptions, ManifestSource
from tfrecorder_component.steps import duplicates as duplicates_lib
from tfrecorder_component.steps import jsonl
from tfrecorder_component.steps import report
from tfrecorder_component.steps import shards as shards_lib
from tfrecorder_component.layouts import base as layouts_base
from tfrecorder_component.layouts import index as index_lib
from tfrecorder_component.steps.chunks import (CHUNK, ROWS_PER_BATCH, Chunk, merged_item,
                                               pack_chunk, parse_manifest)
from tfrecorder_component.steps.convert import (SAMPLES_PER_LABEL, ChunkConverter,
                                                VocabularyBuilder)
from tfrecorder_component.steps.outputs import BOX_ISSUES, ERRORS, OBJECTS, RECORDS, SAMPLES, STATS
from tfrecorder_component.steps.runs import RunSpiller

__all__ = ['convert_locally']

# Rows a chunk holds at least (a file's rows are cut into at most MAX_CHUNKS_PER_FILE
# chunks): the unit a worker takes from the queue.
CHUNK_ROWS = ROWS_PER_BATCH

def _error_key(e: Dict[str, Any]) -> bytes:
  return jsonl.row_key(e['source'], e['row'])


def _box_issue_key(b: Dict[str, Any]) -> bytes:
  return jsonl.row_key(b['source'], b['row'], b['index'])


def _duplicate_key(d: Dict[str, Any]) -> bytes:
  return bytes.fromhex(d['sha256'])


def _json_lines(report_dir: str, name: str) -> RunSpiller:
  """Sorted runs of the JSON-lines file `name`'s entries (`jsonl.entry`), in the scratch
  folder `jsonl.merge_runs` removes."""
  return RunSpiller(layout.work_dir(report_dir, name), jsonl.RUN_LINES, jsonl.write_run)


class _Worker:
  """What one worker process makes of the chunks it takes: its shard (or temporary
  bundle file) per split, its counts, its sorted runs and its samples, handed back by
  `result()`."""

  def __init__(self, options: ConversionOptions, vocabulary: Dict[str, Any],
               split_dirs: Optional[Mapping[str, str]], report_dir: str,
               first_error_of):
    self._options = options
    self._vocabulary = vocabulary
    self._split_dirs = split_dirs
    self._report_dir = report_dir
    self._first_error_of = first_error_of
    self._converter = ChunkConverter(options)
    self._writers: Dict[str, shards_lib.ShardWriter] = {}
    self._bundles: List[Tuple[str, str, int, int]] = []
    self._counts = report.new_counts()
    self._errors = _json_lines(report_dir, layout.ERRORS)
    self._box_issues = _json_lines(report_dir, layout.BOX_ISSUES)
    self._first_errors: List[Dict[str, Any]] = []
    self._first_box_issues: List[Dict[str, Any]] = []
    self._index = RunSpiller(layout.work_dir(report_dir, layout.DUPLICATE_INDEX_DIR),
                             duplicates_lib.RUN_ENTRIES,
                             lambda path, entries: (path, duplicates_lib.write_run(path, entries)))
    self._samples: Dict[str, List[Tuple[str, bytes]]] = {}

  def convert(self, chunk: Chunk) -> None:
    self._take(self._converter.convert(chunk, self._vocabulary))

  def result(self) -> Dict[str, Any]:
    self._take(self._converter.finish())
    for split in list(self._writers):
      self._close(split)
    for spiller in (self._errors, self._box_issues, self._index):
      spiller.spill()
    return {'bundles': self._bundles, 'counts': self._counts,
            'error_runs': self._errors.runs, 'box_issue_runs': self._box_issues.runs,
            'first_errors': self._first_errors, 'first_box_issues': self._first_box_issues,
            'index_runs': self._index.runs, 'samples': self._samples}

  def _take(self, outputs) -> None:
    for tag, value in outputs:
      if tag == RECORDS:
        self._write(*value)
      elif tag == STATS:
        report.count(self._counts, report.stat_counts(value))
        self._index.add(map(duplicates_lib.entry, value))
      elif tag == ERRORS:
        value = self._first_error_of(value)
        report.count(self._counts, ('errors', value['reason']))
        self._errors.add((jsonl.entry(value, _error_key),))
        self._first_errors = _first(self._first_errors, value, report.error_order)
      elif tag == BOX_ISSUES:
        report.count(self._counts, ('box_issues', f'{value["action"]}:{value["reason"]}'))
        self._box_issues.add((jsonl.entry(value, _box_issue_key),))
        self._first_box_issues = _first(self._first_box_issues, value,
                                        report.box_issue_order)
      elif tag == SAMPLES:
        label, sample = value
        kept = self._samples.setdefault(label, [])
        kept.append(sample)
        if len(kept) > 2 * SAMPLES_PER_LABEL:
          self._samples[label] = heapq.nsmallest(SAMPLES_PER_LABEL, kept)

  def _write(self, split: str, records: List[bytes]) -> None:
    if self._split_dirs is None:  # a validation: no record is kept
      return
    writer = self._writers.get(split)
    if writer is None:
      folder = (self._split_dirs[split] if not self._planned else
                layout.work_dir(self._report_dir, 'bundles', split))
      writer = self._writers[split] = shards_lib.ShardWriter(
          posixpath.join(folder, f'.part-{uuid.uuid4().hex}.gz'),
          self._options.compression_level)
    writer.write(records)
    if self._planned and writer.bytes >= shards_lib.TEMP_FILE_BYTES:
      self._close(split)

  @property
  def _planned(self) -> bool:
    return bool(self._options.num_shards or self._options.shard_size_mb)

  def _close(self, split: str) -> None:
    writer = self._writers.pop(split)
    writer.close()
    self._bundles.append((split, writer.path, writer.records, writer.bytes))


def _first(kept: List[Dict[str, Any]], record: Dict[str, Any], order) -> List[Dict[str, Any]]:
  """`kept` with `record`, keeping the report.FIRST_ERRORS first by `order`."""
  kept.append(record)
  if len(kept) > 2 * report.FIRST_ERRORS:
    kept = heapq.nsmallest(report.FIRST_ERRORS, kept, key=order)
  return kept


# ------------------------------------------------------------------ worker processes
def _work(worker: _Worker, tasks, results) -> None:
  """A worker process: converts the chunks it takes from `tasks` until None, then puts
  ('done', its result) on `results`, or ('failed', (exception, traceback)) at the first
  failure."""
  try:
    while True:
      chunk = tasks.get()
      if chunk is None:
        break
      worker.convert(chunk)
    results.put(('done', worker.result()))
  except BaseException as e:  # pylint: disable=broad-except
    text = traceback.format_exc()
    try:
      results.put(('failed', (e, text)))
    except Exception:  # pylint: disable=broad-except  (an exception that cannot be pickled)
      results.put(('failed', (RuntimeError(str(e)), text)))


def _convert_chunks(chunks: List[Any], make_worker, workers: int) -> List[Any]:
  """The workers' results, every chunk (or other task) converted by one of `workers`
  processes forked from this one (in this process when one is enough)."""
  if workers <= 1 or len(chunks) <= 1:
    worker = make_worker()
    for chunk in chunks:
      worker.convert(chunk)
    return [worker.result()]
  context = multiprocessing.get_context('fork')
  tasks, results = context.Queue(), context.Queue()
  processes = [context.Process(target=_work, args=(make_worker(), tasks, results),
                               name=f'tfrecorder-worker-{i}', daemon=True)
               for i in range(workers)]
  try:
    for p in processes:  # forked before this process starts the queues' threads
      p.start()
    for chunk in chunks:
      tasks.put(chunk)
    for _ in range(workers):
      tasks.put(None)
    done = []
    while len(done) < workers:
      try:
        kind, value = results.get(timeout=1.0)
      except Exception:  # queue.Empty: check that every worker still runs  pylint: disable=broad-except
        dead = [p for p in processes if p.exitcode not in (None, 0)]
        if dead:
          raise RuntimeError(f'a worker process ended with exit code {dead[0].exitcode} '
                             'before finishing its rows') from None
        continue
      if kind == 'failed':
        error, text = value
        raise error from RuntimeError(f'in a worker process:\n{text}')
      done.append(value)
    return done
  finally:
    for p in processes:
      if p.is_alive():
        p.kill()
      p.join()
    tasks.close()
    results.close()


# ------------------------------------------------------------------ the run
def convert_locally(sources: Sequence[ManifestSource], split_dirs: Optional[Mapping[str, str]],
                    label_dir: Optional[str], report_dir: str, options: ConversionOptions,
                    workers: int, first_error_of=lambda e: e) -> None:
  """Runs the conversion of `sources` with `workers` processes: writes what
  `ConvertManifests` writes (see there; `split_dirs` and `label_dir` None: only the
  report). `first_error_of`: applied to each error record (the DataFrame index cited)."""
  start = time.perf_counter()
  chunk_dir = layout.work_dir(report_dir, layout.CHUNK_DIR)
  builder = VocabularyBuilder(options.label_map, options.append_new_labels,
                              options.class_map)
  acc = builder.new()
  chunks: List[Chunk] = []
  objects: Dict[Tuple[str, str], List[Any]] = {}
  for source in sources:
    for tag, value in parse_manifest(source, chunk_dir, options.annotations, CHUNK_ROWS):
      if tag == CHUNK:
        chunks.append(value)
      elif tag == OBJECTS:
        key, row = value
        objects.setdefault(key, []).append(row)
  merged = [merged_item(rows) for rows in objects.values()]
  del objects
  for start in range(0, len(merged), CHUNK_ROWS):
    chunks.append(pack_chunk(merged[start:start + CHUNK_ROWS], chunk_dir))
  del merged
  for chunk in chunks:
    builder.add(acc, chunk)
  vocabulary = builder.vocabulary(acc)
  parsed = time.perf_counter()
  logging.info('Local run: manifests read into %d chunks in %.2f s', len(chunks), parsed - start)

  make_worker = lambda: _Worker(options, vocabulary, split_dirs, report_dir, first_error_of)
  workers = min(workers, len(chunks))
  results = _convert_chunks(chunks, make_worker, workers)
  converted = time.perf_counter()
  logging.info('Local run: rows converted in %.2f s by %d worker process(es)',
               converted - parsed, max(workers, 1))

  counts = report.new_counts()
  for r in results:
    report.add_counts(counts, r['counts'])
  summary = report.summary(counts)
  held = report.held_labels(summary, vocabulary)
  if label_dir is not None:
    labels_lib.write_label_files(label_dir, dict(zip(held['labels'], held['ids'])),
                                 labels_lib.first_label_id(held['task']))
  written_layouts = None
  if split_dirs is not None:
    _name_shards([b for r in results for b in r['bundles']], split_dirs, options)
    if options.layouts:
      written_layouts = _write_layouts(options.layouts, layouts_base.context(
          summary, held, label_dir, list(split_dirs)), split_dirs, workers)

  def merge(name: str, runs: List[str]) -> None:
    jsonl.merge_runs(runs, files.join(report_dir, name + layout.JSON_LINES),
                     layout.work_dir(report_dir, name))

  merge(layout.ERRORS, [p for r in results for p in r['error_runs']])
  merge(layout.BOX_ISSUES, [p for r in results for p in r['box_issue_runs']])
  duplicate_counts = report.new_duplicate_counts()
  groups = _json_lines(report_dir, layout.DUPLICATES)
  index_runs = [run for r in results for run in r['index_runs']]
  for task in duplicates_lib.ranges(index_runs, duplicates_lib.RANGE_BYTES):
    for group in duplicates_lib.merge_range(task):
      report.add_duplicate(duplicate_counts, group)
      groups.add((jsonl.entry(group, _duplicate_key),))
  groups.spill()
  merge(layout.DUPLICATES, groups.runs)

  samples: Dict[str, List[Tuple[str, bytes]]] = {}
  for r in results:
    for label, kept in r['samples'].items():
      samples.setdefault(label, []).extend(kept)
  samples = {label: heapq.nsmallest(SAMPLES_PER_LABEL, kept)
             for label, kept in samples.items()}
  first = lambda key, order: heapq.nsmallest(
      report.FIRST_ERRORS, (e for r in results for e in r[key]), key=order)
  report.write_summary(summary, report_dir, held, report.duplicate_counts(duplicate_counts),
                       samples, first('first_errors', report.error_order),
                       first('first_box_issues', report.box_issue_order), [],
                       layouts=written_layouts)
  if label_dir is not None and split_dirs is not None:
    index_lib.write_index(summary, label_dir, list(split_dirs), held['task'], written_layouts)
  logging.info('Local run: shards named, report written in %.2f s',
               time.perf_counter() - converted)


class _LayoutWorker:
  """What one worker process makes of the TFX shards it takes: each written into every
  extra layout (`layouts.base.write_shard`); its result, what each gave."""

  def __init__(self, names, ctx):
    self._names = names
    self._ctx = ctx
    self._written: List[Tuple[str, int, int]] = []

  def convert(self, job) -> None:
    self._written.append(layouts_base.write_shard(job, self._names, self._ctx))

  def result(self) -> List[Tuple[str, int, int]]:
    return self._written


def _write_layouts(names, ctx, split_dirs, workers: int):
  """Writes the extra layouts from the finished TFX shards, a task per shard on up to
  `workers` processes (as the conversion's: `_convert_chunks`); returns what
  `layouts.base.finish` returns."""
  start = time.perf_counter()
  layouts_base.check_types(names, ctx)
  jobs = layouts_base.shard_jobs(split_dirs)
  results = _convert_chunks(jobs, lambda: _LayoutWorker(names, ctx), min(workers, len(jobs)))
  info = layouts_base.finish(names, ctx, [w for r in results for w in r])
  logging.info('Local run: %s written from %d shard(s) in %.2f s', ', '.join(names), len(jobs),
               time.perf_counter() - start)
  return info


def _name_shards(bundles: List[Tuple[str, str, int, int]], split_dirs: Mapping[str, str],
                 options: ConversionOptions) -> None:
  """Gives the workers' files their shard names: by default each worker's file of a
  split is one shard (an empty split gets one empty shard, as Beam writes it); with
  `num_shards` or `shard_size_mb` the records are spread over exactly that many shards
  (`shards.plan_split_shards`)."""
  if options.num_shards or options.shard_size_mb:
    plan = shards_lib.plan_split_shards(bundles, split_dirs, options.num_shards,
                                        int(options.shard_size_mb * 2**20))
    for shard in plan:
      shards_lib.write_shard(shard, options.compression_level)
    return
  for split, folder in split_dirs.items():
    paths = sorted(path for s, path, _, _ in bundles if s == split)
    if not paths:
      shards_lib.ShardWriter(layout.shard_path(folder, 0, 1), options.compression_level).close()
    for k, path in enumerate(paths):
      os.replace(path, layout.shard_path(folder, k, len(paths)))
