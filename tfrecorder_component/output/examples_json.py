"""`examples.json`, an output's index, written beside its splits last before
`_SUCCESS`: what a reader needs without the report or TFX's metadata. The split names
(what an Examples artifact's `split_names` property holds), the records per split, the
records' features (`example.record_features`), the task, and the layouts written.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Optional, Sequence

from tfrecorder_component.io import files

INDEX_FILE = 'examples.json'


def write_index(summary: Dict[str, Any], output_dir: str, split_names: Sequence[str],
                task: str, layouts: Optional[Dict[str, Dict[str, Any]]] = None) -> None:
  """Writes `examples.json` into `output_dir`, replacing any.

  Args:
    summary: The run's summary (summary.json's contents): its `records_per_split` (a
      split it lacks counts 0) and `features`.
    output_dir: The folder the splits are in (a run's staging folder, until the swap),
      a local path or a URI.
    split_names: The run's output splits, in order; those no record went to are left
      out (they are not written: `engines.run.written_splits`).
    task: 'classification', 'detection' or 'segmentation'.
    layouts: {layout: its metadata} as `layouts.base.finish` returns it; None where no
      extra layout was written.
  """
  per_split = summary.get('records_per_split') or {}
  written = [s for s in split_names if per_split.get(s)]  # as engines.run.written_splits
  index = {
      'split_names': written,
      'records_per_split': {s: per_split[s] for s in written},
      'task': task,
      'features': summary.get('features') or {},
      'layouts': layouts or {},
  }
  files.write_text(files.join(output_dir, INDEX_FILE), json.dumps(index, indent=2))


def read_index(output_dir: str) -> Dict[str, Any]:
  """The contents of `output_dir`'s `examples.json` ({'split_names',
  'records_per_split', 'task', 'features', 'layouts'}).

  Args:
    output_dir: An output folder, a local path or a URI; one without `examples.json`
      raises its file system's error (FileNotFoundError locally).
  """
  with files.open_file(files.join(output_dir, INDEX_FILE)) as f:
    return json.loads(f.read())
