"""The run's label vocabulary, gathered from the chunks' labels, tasks and source ids
before any image is read (`labels.assign_ids`); both engines combine it with
`VocabularyBuilder` (the local run in its parent, Beam as a CombineFn)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from tfrecorder_component.errors import ManifestError
from tfrecorder_component.manifest import Task
from tfrecorder_component.manifest.class_map import ClassMap
from tfrecorder_component.manifest.class_map import describe as describe_class_map
from tfrecorder_component.record import labels as labels_lib
from tfrecorder_component.steps.chunks import Chunk

__all__ = ['VocabularyBuilder']


class VocabularyBuilder:
  """The run's vocabulary from Chunks of rows (`labels.assign_ids`) and their task:
  classification, detection or segmentation (a run converts one of them). Its
  accumulator is (labels, tasks, (label, source id) pairs), three sets.

  Args:
    given: the label map given to the run, whose ids are kept; None: ids are assigned
      from the rows' labels.
    append_new_labels: with `given`, give labels it lacks the next free ids instead of
      failing their rows.
    class_map: the run's class map (`manifest.class_map`), only shown in the vocabulary
      (`class_map`); the rows' labels are already mapped.
    label_order: the order assigned ids follow (`labels.vocabulary_order`): 'auto' or
      'text'.
  """

  def __init__(self, given: Optional[labels_lib.GivenLabelMap] = None,
               append_new_labels: bool = False, class_map: ClassMap = (),
               label_order: str = 'auto'):
    self._given = given
    self._append = append_new_labels
    self._class_map = class_map
    self._order = label_order

  @staticmethod
  def new() -> Tuple[set, set, set]:
    return set(), set(), set()

  @staticmethod
  def add(acc, chunk: Chunk):
    """Adds a chunk's labels, tasks and source ids to `acc`; returns it.

    Args:
      acc: an accumulator, as `new` makes it; updated in place.
      chunk: the Chunk whose labels, tasks and (label, source id) pairs are added (its
        rows are not read).
    """
    labels, tasks, _, source_ids, _ = chunk
    acc[0].update(labels)
    acc[1].update(t for t in tasks.split(',') if t)  # '': only failed rows
    acc[2].update(source_ids)
    return acc

  @staticmethod
  def merge(accumulators):
    """One accumulator holding the union of each set of `accumulators`.

    Args:
      accumulators: accumulators as `new` and `add` make them (any iterable).
    """
    accumulators = list(accumulators)
    return tuple(set().union(*(a[k] for a in accumulators)) for k in range(3))

  def vocabulary(self, acc) -> Dict[str, Any]:
    """{'labels': in id order, 'ids': theirs, 'task', 'seen': the rows' labels and the
    declared ones kept, 'declared': classes a source declares that no row holds (COCO
    categories of no annotation) kept with their ids, 'appended' / 'unknown': labels a
    given label map lacks (given new ids / failing their rows), 'conflicts': source ids
    not kept, one line each, 'given': where the given label map was read from, or None,
    'class_map': the run's class map, or None}.

    Args:
      acc: the merged accumulator of every chunk of the run.

    Raises:
      ManifestError: the chunks' rows mix tasks.
    """
    labels, tasks, source_pairs = acc
    if len(tasks) > 1:
      raise ManifestError(f'the manifests mix {" and ".join(sorted(tasks))} rows; convert '
                          'them in separate runs')
    task = next(iter(tasks), Task.CLASSIFICATION.value)
    source_ids: Dict[str, List[int]] = {}
    declared: Dict[str, int] = {}  # classes a source declares that no row holds
    for label, i in sorted(source_pairs):
      if label in labels:
        source_ids.setdefault(label, []).append(i)
      else:
        declared.setdefault(label, i)
    vocabulary = labels_lib.assign_ids(labels, labels_lib.first_label_id(task), self._given,
                                       self._append, source_ids, declared,
                                       order=self._order)
    return {'labels': list(vocabulary.ids), 'ids': list(vocabulary.ids.values()),
            'task': task,
            'seen': labels_lib.vocabulary_order(labels | set(vocabulary.declared), self._order),
            'declared': list(vocabulary.declared),
            'appended': list(vocabulary.appended), 'unknown': list(vocabulary.unknown),
            'conflicts': list(vocabulary.conflicts),
            'given': self._given.source if self._given else None,
            'class_map': describe_class_map(self._class_map)}
