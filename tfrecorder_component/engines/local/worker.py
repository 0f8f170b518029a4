"""A local worker process's conversion: the rows of the chunks it takes converted by the
steps (`steps.convert_chunks.ChunkConverter`), its records written to its own shard per
split (and that shard in every extra layout), the report's entries spilled as sorted
runs and its part of the run's `run_plan.Tally` kept, all handed back as one
`Converted` (`pool.convert_chunks` gathers one a process)."""
from __future__ import annotations

import dataclasses
import posixpath
import uuid
from typing import Any, Dict, List, Mapping, Optional, Tuple

from tfrecorder_component.io import tfrecord as tfrecord_lib
from tfrecorder_component.io.sorted_runs import RunSpiller
from tfrecorder_component.options import ConversionOptions
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.output.layouts import base as layouts_base
from tfrecorder_component.steps import duplicates as duplicates_lib
from tfrecorder_component.steps import jsonl
from tfrecorder_component.steps import run_plan
from tfrecorder_component.steps import shards as shards_lib
from tfrecorder_component.steps.chunks import Chunk
from tfrecorder_component.steps.convert_chunks import ChunkConverter
from tfrecorder_component.steps.outputs import BOX_ISSUES, ERRORS, RECORDS, STATS

__all__ = ['Converted', 'Worker', 'json_lines']

# The report's JSON-lines files a worker spills the entries of, by their output's tag.
_LINES = {ERRORS: run_plan.ERROR_LINES, BOX_ISSUES: run_plan.BOX_ISSUE_LINES}


def json_lines(report_dir: str, lines: run_plan.JsonLines) -> RunSpiller:
  """Sorted runs of a JSON-lines file's entries (`jsonl.entry`), in the scratch folder
  `jsonl.merge_runs` removes.

  Args:
    report_dir: The run's report folder.
    lines: Which file (`run_plan.ERROR_LINES`, ...).
  """
  return RunSpiller(lines.work_dir(report_dir), jsonl.RUN_LINES, jsonl.write_run)


@dataclasses.dataclass
class Converted:
  """What one worker process hands back: its files (split, path, records, bytes), its
  tally, its sorted runs of errors, box issues and the duplicate index, and the extra
  layouts' files it wrote beside its TFX files.

  Attributes:
    bundles: Its files, (split, path, records, bytes) each.
    tally: Its counts, first errors and box issues, and samples.
    error_runs: Its sorted runs of failed rows.
    box_issue_runs: Its sorted runs of box issues.
    index_runs: Its sorted runs of the duplicate index.
    inline: The extra layouts' files, {TFX file: `InlineShard.close()`}.
  """
  bundles: List[Tuple[str, str, int, int]]
  tally: run_plan.Tally
  error_runs: List[str]
  box_issue_runs: List[str]
  index_runs: List[Any]
  inline: Dict[str, Dict[str, Any]]


class Worker:
  """What one worker process makes of the chunks it takes: its shard (or temporary
  bundle file) per split and, with `layouts_dir`, that shard in every extra layout
  (`layouts.base.InlineShard`), its tally and its sorted runs, handed back by `result()`
  as one `Converted`.

  Args:
    options: The run's options.
    vocabulary: The run's label vocabulary.
    split_dirs: {split: its output folder}; None: bundle files, placed after the run.
    report_dir: The run's report folder (its work folder holds the sorted runs).
    first_error_of: A function of an error record (dict) to the one written (a
      DataFrame's run cites its index).
    layouts_dir: Where the extra layouts are written as the records are (None: from
      the finished TFX shards, after the run: `write.write_layouts`).
  """

  def __init__(self, options: ConversionOptions, vocabulary: Dict[str, Any],
               split_dirs: Optional[Mapping[str, str]], report_dir: str,
               first_error_of, layouts_dir: Optional[str] = None):
    self._options = options
    self._layouts_dir = layouts_dir
    self._inline: Dict[str, layouts_base.InlineShard] = {}
    self._unsigned: Dict[str, List[List[bytes]]] = {}  # a batch's records till its STATS
    self._placed: Dict[str, Dict[str, Any]] = {}  # {TFX file: its InlineShard's close()}
    self._vocabulary = vocabulary
    self._split_dirs = split_dirs
    self._report_dir = report_dir
    self._first_error_of = first_error_of
    self._converter = ChunkConverter(options)
    self._writers: Dict[str, tfrecord_lib.ShardWriter] = {}
    self._bundles: List[Tuple[str, str, int, int]] = []
    self._tally = run_plan.Tally()
    self._lines = {tag: (lines.key, json_lines(report_dir, lines))
                   for tag, lines in _LINES.items()}
    self._index = RunSpiller(output_paths.work_dir(report_dir, output_paths.DUPLICATE_INDEX_DIR),
                             duplicates_lib.RUN_ENTRIES,
                             lambda path, entries: (path, duplicates_lib.write_run(path, entries)))
    # (k, n): this worker is the k-th of the n that `pool.convert_chunks` first forks,
    # and writes shard k of n of every split under its final name, so that on object
    # storage, where a rename is a copy, no shard is renamed when every worker ends well
    # (`write.name_shards`).
    # None: a worker forked to convert again what another's death left (temporary names).
    self.slot: Optional[Tuple[int, int]] = None

  def convert(self, chunk: Chunk, index: int = -1) -> None:
    """Converts one chunk of rows, writing its records.

    Args:
      chunk: The chunk.
      index: Its place among the run's chunks (-1: not known).
    """
    self._take(self._converter.convert(chunk, self._vocabulary, index))

  def watch(self, watch) -> None:
    """Has the process that forked this worker's enforce the row time limit.

    Args:
      watch: Told where each row is as it starts (`pool.RowClock.watch`).
    """
    self._converter.set_watch(watch)

  def result(self) -> Converted:
    self._take(self._converter.finish())
    if self.slot is not None and self._split_dirs is not None and not self._planned:
      for split in self._split_dirs:  # its shard of a split it had no record of: empty
        if split not in self._writers:
          self._open(split)
    for writer in self._writers.values():  # every shard's upload tail at once
      writer.finish()
    for split in list(self._writers):
      self._close(split)
    for _, spiller in self._lines.values():
      spiller.spill()
    self._index.spill()
    return Converted(self._bundles, self._tally, self._lines[ERRORS][1].runs,
                     self._lines[BOX_ISSUES][1].runs, self._index.runs, self._placed)

  def _take(self, outputs) -> None:
    for tag, value in outputs:
      if tag == RECORDS:
        self._write(*value)
        continue
      if tag not in run_plan.TALLIED:  # BATCH: the progress's, counted in the converter
        continue
      if tag == ERRORS:
        value = self._first_error_of(value)
      elif tag == STATS:
        self._write_inline(value)
        self._index.add(duplicates_lib.entries(value))
      self._tally.add(tag, value)
      if tag in self._lines:
        key, spiller = self._lines[tag]
        spiller.add((jsonl.entry(value, key),))

  def _write(self, split: str, records: List[bytes]) -> None:
    if self._split_dirs is None:  # a validation: no record is kept
      return
    writer = self._writers.get(split) or self._open(split)
    writer.write(records)
    if self._layouts_dir is not None:
      self._unsigned.setdefault(split, []).append(records)
    if self._planned and writer.bytes >= shards_lib.TEMP_FILE_BYTES:
      self._close(split)

  def _write_inline(self, stats) -> None:
    """Hands the batch's records, now that their stats (in the same order, split by
    split) have come, to each split's InlineShard."""
    if not self._unsigned:
      return
    signatures: Dict[str, List[str]] = {}
    for stat in stats:
      signatures.setdefault(stat.split, []).append(stat.features)
    for split, batches in self._unsigned.items():
      records = [r for batch in batches for r in batch]
      inline = self._inline.get(split)
      if inline is None:
        inline = self._inline[split] = layouts_base.InlineShard(
            self._options.layouts, self._layouts_dir, split, self._vocabulary['task'],
            dict(zip(self._vocabulary['labels'], self._vocabulary['ids'])))
      inline.write(records, signatures[split])
    self._unsigned = {}

  def _open(self, split: str) -> tfrecord_lib.ShardWriter:
    """A new file for `split`'s records: shard k of n under its final name for the k-th
    worker of the pool's first n (`slot`), else a temporary `.part-` file that
    `write.name_shards` names (in the report's work folder where shards are planned)."""
    if self._planned:
      path = posixpath.join(output_paths.work_dir(self._report_dir, 'bundles', split),
                            f'.part-{uuid.uuid4().hex}.gz')
    elif self.slot is not None:
      path = output_paths.shard_path(self._split_dirs[split], *self.slot)
    else:
      path = posixpath.join(self._split_dirs[split], f'.part-{uuid.uuid4().hex}.gz')
    writer = self._writers[split] = tfrecord_lib.ShardWriter(path, self._options.compression_level)
    return writer

  @property
  def _planned(self) -> bool:
    return bool(self._options.num_shards or self._options.shard_size_mb)

  def _close(self, split: str) -> None:
    writer = self._writers.pop(split)
    writer.close()
    self._bundles.append((split, writer.path, writer.records, writer.bytes))
    inline = self._inline.pop(split, None)
    if inline is not None and self._unsigned.pop(split, None):  # records it never had
      inline.abort()
    elif inline is not None:
      self._placed[writer.path] = inline.close()
