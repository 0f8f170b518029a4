"""The conversion on this machine's cores, without Beam: the same steps (`steps/`) as
`beam.pipeline.ConvertManifests`, the same bytes out, in a fraction of the fixed cost.

    read.read_manifests: manifests into chunk files -> vocabulary
    -> pool.convert_chunks: N worker processes (`worker.Worker`) convert chunks, each
       writing its own shard per split and its shard of every extra layout, spilling
       its sorted runs and keeping its `run_plan.Tally`
    -> `steps.run_plan`'s order: label files; shards named and the layouts finished
       (`write`); JSON-lines files merged, duplicates found; summary.json, report.html
       and examples.json

Importing Beam takes seconds, building and starting a pipeline and its worker
processes more (each worker imports Beam and this package again): on a small run that
is most of the wall time, and on a large one it delays every core's first row. Here
the workers are forked from this process, which has imported only what converting
needs, so they start in milliseconds; each converts chunks as the others do, taken
from one queue. `engines.run.run_conversion` picks this way for DirectRunner runs whose
manifests and outputs are local or on gs:// or s3:// (shards uploaded as the workers
write them, the rest staged on local disk: `staging`) and whose Beam arguments ask
nothing of the runner.

Nothing that grows with the rows is held by one process: rows travel as chunk files,
records go straight from a worker to its shard, and the report's JSON-lines files and
the duplicate index are the same external sorts the Beam steps use.
"""
from __future__ import annotations

import logging
import time
from typing import List, Mapping, Optional, Sequence

from tfrecorder_component.engines.local import pool
from tfrecorder_component.engines.local import read as read_lib
from tfrecorder_component.engines.local import worker as worker_lib
from tfrecorder_component.engines.local import write
from tfrecorder_component.io import files
from tfrecorder_component.options import ConversionOptions, ManifestSource
from tfrecorder_component.output import layouts as layouts_registry
from tfrecorder_component.output import progress as progress_lib
from tfrecorder_component.output.layouts import base as layouts_base
from tfrecorder_component.steps import duplicates as duplicates_lib
from tfrecorder_component.steps import jsonl
from tfrecorder_component.steps import report
from tfrecorder_component.steps import run_plan

__all__ = ['convert_locally']


def convert_locally(sources: Sequence[ManifestSource], split_dirs: Optional[Mapping[str, str]],
                    label_dir: Optional[str], report_dir: str, options: ConversionOptions,
                    workers: int, first_error_of=lambda e: e,
                    progress: Optional[progress_lib.Progress] = None) -> None:
  """Runs the conversion of `sources` with `workers` processes: writes what
  `ConvertManifests` writes (see there; `split_dirs` and `label_dir` None: only the
  report). `first_error_of`: applied to each error record (the DataFrame index cited).
  `progress`: told each stage, and the rows read, then done and failed, as they go
  (the caller closes it).

  Args:
    first_error_of: A function of an error record (dict) to the one written (a
      `report.CiteIndex` for manifests written from a DataFrame); the default returns
      it as it is.
    label_dir: The folder (local, or on object storage) for the label files, the extra
      layouts and the output's index; None: none are written.
    options: The run's options.
    progress: The run's progress, told the stages and counts; None: none is shown.
    report_dir: The report's folder; its `.work` subfolder holds the chunks and sorted
      runs (the caller removes it).
    sources: The manifest files to read, in order.
    split_dirs: {split name: its folder of shards} (local, gs:// or s3://), every split
      the run writes; None: no records are written.
    workers: Worker processes to fork (`engines.run.local_workers`); at most one per chunk of
      rows is used.
  """
  progress = progress or progress_lib.Progress('off')
  start = time.perf_counter()
  chunks, read, vocabulary = read_lib.read_manifests(sources, report_dir, options, workers,
                                                     progress)
  parsed = time.perf_counter()
  logging.info('Local run: manifests read into %d chunks in %.2f s', len(chunks), parsed - start)

  # The extra layouts are written by the workers as they write the TFX files, where
  # those files become the shards as they are (not planned) on this machine's disk.
  inline = (options.layouts and split_dirs is not None and label_dir is not None
            and not (options.num_shards or options.shard_size_mb) and files.is_local(label_dir))
  make_worker = lambda: worker_lib.Worker(options, vocabulary, split_dirs, report_dir,
                                          first_error_of, label_dir if inline else None)
  workers = min(workers, len(chunks))
  progress.stage('converting', total=read)
  counts = progress_lib.SharedCounts(workers)
  # Meanwhile this process loads what the layouts' metadata needs (TFDS, half a second).
  results = pool.convert_chunks(chunks, make_worker, workers, counts,
                                lambda: progress.update(*counts.totals()),
                                (lambda: layouts_base.prepare(options.layouts))
                                if options.layouts else None, True, options.row_time_limit)
  progress.update(*counts.totals())
  converted = time.perf_counter()
  logging.info('Local run: rows converted in %.2f s by %d worker process(es)',
               converted - parsed, max(workers, 1))
  _write_outputs(results, vocabulary, run_plan.RunOutputs(
      sources, split_dirs, label_dir, report_dir, options), workers, progress)
  logging.info('Local run: shards named, report written in %.2f s',
               time.perf_counter() - converted)


def _write_outputs(results: List[worker_lib.Converted], vocabulary,
                   outputs: run_plan.RunOutputs, workers: int,
                   progress: progress_lib.Progress) -> None:
  """What follows the workers' conversion, in `run_plan`'s order, from their `results`:
  the label files, the shards named, the extra layouts, the report's error, box-issue
  and duplicate files, summary.json and report.html, and the output's index."""
  tally = run_plan.Tally().merge(r.tally for r in results)
  summarized = run_plan.summarize(tally, vocabulary)
  split_dirs, label_dir, report_dir = outputs.split_dirs, outputs.label_dir, outputs.report_dir
  if label_dir is not None:
    run_plan.write_label_files(label_dir, summarized.held)
  layouts = outputs.options.layouts
  written_layouts = None
  if split_dirs is not None:
    progress.stage('writing shards')
    shards = write.name_shards([b for r in results for b in r.bundles], split_dirs,
                               outputs.options)
    if layouts:
      progress.stage('writing layouts')
      placed = {path: shard for r in results for path, shard in r.inline.items()}
      written_layouts = write.write_layouts(
          layouts, run_plan.layout_context(outputs, summarized), shards, placed, workers)
    # A worker that crashed (`pool.convert_chunks`) left its unfinished files.
    write.remove_parts([*split_dirs.values(), *(
        files.join(label_dir, layouts_registry.module(n).FOLDER)
        for n in (layouts if label_dir is not None else ()))])

  def merge(lines: run_plan.JsonLines, runs: List[str]) -> None:
    jsonl.merge_runs(runs, lines.path(report_dir), lines.work_dir(report_dir))

  progress.stage('writing the report')
  merge(run_plan.ERROR_LINES, [p for r in results for p in r.error_runs])
  merge(run_plan.BOX_ISSUE_LINES, [p for r in results for p in r.box_issue_runs])
  duplicate_counts = report.new_duplicate_counts()
  groups = worker_lib.json_lines(report_dir, run_plan.DUPLICATE_LINES)
  index_runs = [run for r in results for run in r.index_runs]
  for task in duplicates_lib.ranges(index_runs, duplicates_lib.RANGE_BYTES):
    for group in duplicates_lib.merge_range(task):
      report.add_duplicate(duplicate_counts, group)
      if run_plan.DUPLICATE_LINES.keep(group):
        groups.add((jsonl.entry(group, run_plan.DUPLICATE_LINES.key),))
  groups.spill()
  merge(run_plan.DUPLICATE_LINES, groups.runs)
  run_plan.finish(outputs, summarized, tally, report.duplicate_counts(duplicate_counts),
                  written_layouts)
