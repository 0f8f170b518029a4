"""The pandas accessor: `df.tensorflow.to_tfrecord(output_dir=...)`, as TFRecorder spelled it.

Registered when `tfrecorder_component` is imported.
"""
from __future__ import annotations

import pandas as pd


@pd.api.extensions.register_dataframe_accessor('tensorflow')
class TensorflowAccessor:
  """`df.tensorflow.to_tfrecord(output_dir, **options)` converts a DataFrame in AutoML
  columns (`split`, `image_uri`, `label`, extra columns as features); the options and
  the result are those of `tfrecorder_component.convert`."""

  def __init__(self, df: pd.DataFrame):
    self._df = df

  def to_tfrecord(self, output_dir: str, **options):
    from tfrecorder_component.adapters.conversion import convert  # pylint: disable=g-import-not-at-top
    return convert(self._df, output_dir, **options)
