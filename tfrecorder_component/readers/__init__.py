"""Reading a conversion's output back: the records as numpy values without TensorFlow
(`records`, whose public names are importable from here as before), as a
`tf.data.Dataset` (`dataset`, which imports TensorFlow), and the `inspect` command's look
at them (`inspection`)."""
from tfrecorder_component.readers.records import (Record, RecordDataset, collate_detection,
                                                  decode_image, iter_records, read_index)

__all__ = ['Record', 'RecordDataset', 'collate_detection', 'decode_image', 'iter_records',
           'read_index']
