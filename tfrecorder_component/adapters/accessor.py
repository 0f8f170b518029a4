"""The pandas accessor: `df.tensorflow.to_tfrecord(output_dir=...)`, as TFRecorder spelled it.

Registered when `tfrecorder_component` and pandas are both imported, in either order
(`pandas_hook`).
"""
from __future__ import annotations

import pandas as pd


@pd.api.extensions.register_dataframe_accessor('tensorflow')
class TensorflowAccessor:
  """`df.tensorflow.to_tfrecord(output_dir, **options)` converts a DataFrame in AutoML
  columns (`split`, `image_uri`, `label`, extra columns as features); the options and
  the result are those of `tfrecorder_component.convert`.

  Args:
    df: The DataFrame the accessor is registered on (pandas passes it): the rows to
      convert.
  """

  def __init__(self, df: pd.DataFrame):
    self._df = df

  def to_tfrecord(self, output_dir: str, **options):
    """Converts the DataFrame into split TFRecords under `output_dir`; returns the
    `ConversionResult` of `tfrecorder_component.convert`.

    Args:
      output_dir: The folder to write, as `convert`'s `output_dir`: new or empty unless
        `overwrite=True` is among the options.
      options: `convert`'s keywords (`max_error_ratio`, `overwrite` and the
        conversion's options), passed on unchanged.
    """
    from tfrecorder_component.adapters.conversion import convert  # pylint: disable=g-import-not-at-top
    return convert(self._df, output_dir, **options)
