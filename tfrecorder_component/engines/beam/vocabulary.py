"""The run's label vocabulary in Beam: one combine over every chunk's labels, tasks and
source ids (`steps.vocabulary.VocabularyBuilder`), a side input of the conversion."""
from __future__ import annotations

from typing import Any, Dict, Optional

import apache_beam as beam

from tfrecorder_component.record import labels as labels_lib
from tfrecorder_component.steps.chunks import Chunk
from tfrecorder_component.steps.vocabulary import VocabularyBuilder

__all__ = ['LabelVocabulary']


class _LabelSetFn(beam.CombineFn):
  """The vocabulary of Chunks of rows (`steps.vocabulary.VocabularyBuilder`)."""

  def __init__(self, given: Optional[labels_lib.GivenLabelMap] = None,
               append_new_labels: bool = False, class_map=(), label_order: str = 'auto'):
    self._builder = VocabularyBuilder(given, append_new_labels, class_map, label_order)

  def create_accumulator(self):
    return self._builder.new()

  def add_input(self, acc, chunk: Chunk):
    return self._builder.add(acc, chunk)

  def merge_accumulators(self, accumulators):
    return self._builder.merge(accumulators)

  def extract_output(self, acc):
    return self._builder.vocabulary(acc)


class LabelVocabulary(beam.PTransform):
  """The run's vocabulary, one element: {'labels': in id order, 'ids': theirs, 'task',
  'seen': the rows' labels, 'appended' / 'unknown': labels a given label map lacks
  (given new ids / failing their rows), 'conflicts': source ids not kept, one line each,
  'given': where the given label map was read from, or None}. See `labels.assign_ids`.

  Args:
    given: The label map given to the run, whose ids are kept; None: every label gets an
      id from the task's first one (or its source's id, as COCO's categories).
    append_new_labels: With `given`, give the labels it lacks new ids after its own;
      False: they are `unknown` and their rows fail.
    class_map: The run's class map as (class, new class or None) pairs, already applied
      to the rows; only described in the vocabulary (`class_map`), for the report.
    label_order: The order assigned ids follow (`labels.vocabulary_order`): 'auto' or
      'text'.
  """

  def __init__(self, given: Optional[labels_lib.GivenLabelMap] = None,
               append_new_labels: bool = False, class_map=(), label_order: str = 'auto'):
    super().__init__()
    self._given = given
    self._append = append_new_labels
    self._class_map = class_map
    self._order = label_order

  def expand(self, chunks):
    """The vocabulary, a PCollection of one dict.

    Args:
      chunks: The PCollection of Chunks of rows (`ReadManifestRows`' output); their
        labels, tasks and source ids are combined.
    """
    return chunks | beam.CombineGlobally(_LabelSetFn(self._given, self._append,
                                                     self._class_map, self._order)
                                         ).with_input_types(Chunk).with_output_types(
                                             Dict[str, Any])
