"""Reading a conversion's output back: the records as numpy values without TensorFlow
(`records`, whose names, `TorchRecordDataset` included, import from here as they did
when it was the module `tfrecorder_component.readers`), as a `tf.data.Dataset`
(`dataset`, which imports TensorFlow), and the `inspect` command's look at them
(`inspection`)."""
from tfrecorder_component.readers.records import (Record, RecordDataset, collate_detection,
                                                  decode_image, iter_records, read_index)

__all__ = ['Record', 'RecordDataset', 'collate_detection', 'decode_image', 'iter_records',
           'read_index']


def __getattr__(name: str):
  """Any other name of `records` (`TorchRecordDataset`, made when first asked for).

  Args:
    name: the name asked for.
  """
  from tfrecorder_component.readers import records  # pylint: disable=g-import-not-at-top,reimported
  return getattr(records, name)
