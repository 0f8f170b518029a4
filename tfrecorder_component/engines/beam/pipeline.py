r"""The whole conversion as one PTransform, `ConvertManifests`; failed rows leave through
ConvertBatches' tagged `errors` output (those that failed to parse ride in the chunks).

    manifests -> ReadManifestRows -> ConvertBatches -> WriteSplits
                            \-> LabelVocabulary -/ (side input)  |  \
                                                                 |   +-> stats -> Summarize,
                                                      errors  <--+             FindDuplicates

What follows is `steps.run_plan`'s, as the local engine's: Summarize combines the run's
`Tally`, then the label files, the layouts (WriteLayouts, from the finished shards), the
JSON-lines files and `run_plan.finish` (WriteReport).

Label ids are fixed by LabelVocabulary before any image is read (`labels.assign_ids`) and
never renumbered.

By construction: manifest rows = records written + error rows (errors.jsonl). Nothing
that grows with the rows crosses a stage boundary: chunks are paths, counts are combined
where they are made, and the report's JSON-lines files and the duplicate index are
external sorts.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import apache_beam as beam

from tfrecorder_component.io import files
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.engines.beam import report
from tfrecorder_component.engines.beam import write
from tfrecorder_component.engines.beam.convert_batches import ConvertBatches
from tfrecorder_component.engines.beam.vocabulary import LabelVocabulary
from tfrecorder_component.steps.outputs import BOX_ISSUES, ERRORS, SAMPLES, STATS
from tfrecorder_component.engines.beam.read import ReadManifestRows
from tfrecorder_component.steps import report as report_lib
from tfrecorder_component.steps import run_plan
from tfrecorder_component.options import ConversionOptions, ManifestSource

__all__ = ['ConvertManifests']


class ConvertManifests(beam.PTransform):
  """The whole conversion: manifests in; split TFRecords, label files and a report out.

  Writes `Split-<name>/data_tfrecord-*.gz` under `split_dirs`, `labels.txt`,
  `label_map.pbtxt` and `label_map.csv` into `label_dir`, and `summary.json`, `errors.jsonl` and
  `duplicates.jsonl` into `report_dir`; its scratch files (the rows' chunks, the
  duplicate index) go into `report_dir/.work`, removed once the report is written. With
  `split_dirs` and `label_dir` None it writes only the report: every row is read,
  probed and built, and no record is kept (what `tfrecorder-component validate` runs).

  Args:
    sources: The manifest files to read, with their format, split, image root and
      feature types.
    split_dirs: {split name: its folder of shards}, every split the run writes (empty
      ones included); None: no records are written.
    label_dir: The folder for the label files, and for the extra layouts and the
      output's index; None: none are written.
    report_dir: The report's folder; its `.work` subfolder holds the scratch files.
    options: The run's options (the default: every option at its default).
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
    """Builds the conversion on the pipeline; returns PDone (everything goes to files).

    Args:
      pbegin: The pipeline's begin (`p | ConvertManifests(...)`).
    """
    chunk_dir = output_paths.work_dir(self._report_dir, output_paths.CHUNK_DIR)
    chunks = pbegin | 'ReadManifestRows' >> ReadManifestRows(
        self._sources, chunk_dir, annotations=self._options.annotations)
    vocabulary = chunks | 'LabelVocabulary' >> LabelVocabulary(
        self._options.label_map, self._options.append_new_labels, self._options.class_map,
        self._options.label_order)
    converted = chunks | 'Convert' >> ConvertBatches(
        beam.pvalue.AsSingleton(vocabulary), self._options)
    errors = converted[ERRORS]  # every failed row, from the manifest or its image
    if any(s.row_index for s in self._sources):
      errors = errors | 'CiteDataFrameIndex' >> beam.Map(report_lib.CiteIndex(self._sources))
    outputs = run_plan.RunOutputs(self._sources, self._split_dirs, self._label_dir,
                                  self._report_dir, self._options)
    tally = ((converted[STATS], errors, converted[BOX_ISSUES], converted[SAMPLES])
             | 'Summarize' >> report.Summarize())
    summarized = tally | 'HeldLabels' >> beam.Map(run_plan.summarize,
                                                  beam.pvalue.AsSingleton(vocabulary))
    if self._label_dir is not None:
      _ = (summarized | 'Held' >> beam.Map(lambda s: s.held)
           | 'WriteLabelFiles' >> write.WriteLabelFiles(self._label_dir))
    layouts_written = pbegin.pipeline | 'NoLayouts' >> beam.Create([])
    if self._split_dirs is not None:
      shards = converted.records | 'WriteSplits' >> write.WriteSplits(
          self._split_dirs, self._options.compression_level,
          num_shards=self._options.num_shards,
          shard_bytes=int(self._options.shard_size_mb * 2**20))
      if self._options.layouts:
        layouts_written = shards | 'WriteLayouts' >> write.WriteLayouts(outputs, summarized)
    written = ({'tally': tally, 'summarized': summarized, 'errors': errors,
                'stats': converted[STATS], 'box_issues': converted[BOX_ISSUES],
                'layouts': layouts_written}
               | 'WriteReport' >> report.WriteReport(outputs))
    # The summary is written once every row is converted and every duplicate found.
    _ = written | 'RemoveWork' >> beam.Map(lambda _, work: files.remove(work),
                                           output_paths.work_dir(self._report_dir))
    return beam.pvalue.PDone(pbegin.pipeline)
