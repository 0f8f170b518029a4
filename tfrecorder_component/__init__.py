"""tfrecorder-component: image manifests to TFRecords of tf.train.Example, as a TFX component.

Public API (imported lazily, so `import tfrecorder_component` does not load TFX or
TensorFlow until a name is used):

- `ImageExampleGen`: the TFX component.
- `ImageManifest`, `ConversionReport`: the artifact types of its `manifest` input and
  `report` output.
- `ConversionReportPage`: publishes the report's page as a `system.HTML` artifact
  (`HTML`), which Vertex AI Pipelines and the Kubeflow Pipelines UI show inline.
- `read_label_map(examples_uri)`: {label: id} of an Examples artifact.
- `convert(source, output_dir, ...)`: a DataFrame, manifest or image folder to TFRecords
  without a pipeline; `df.tensorflow.to_tfrecord(output_dir, ...)` is the same call as a
  pandas accessor (the [pandas] extra), registered when pandas is imported, before or
  after this package, which does not import pandas itself (0.4-0.9 s); not in the
  `tfrecorder-component` command, which takes no DataFrame.
- `load_dataset(examples, split, batch_size, image_size, ...)`: a `tf.data.Dataset` of
  (image, label) batches for Keras or a Trainer's `run_fn`.
- `feature_spec(examples)`, `parse_fn(examples)`: the records' tf.io feature spec (from
  the output's `examples.json`) and a parse function, for a tf.data pipeline of one's own.
- `iter_records(output_dir, split, ...)`, `RecordDataset`, `collate_detection`: the
  records as numpy values without TensorFlow, split across ranks and DataLoader workers
  with each record read once (`readers`).
- `examples_importer(output_dir)`: a `tfx.dsl.Importer` of a `convert()` output as
  `Examples`, with ExampleGen's properties (`split_names` from its `examples.json`).
"""
import importlib
import os
import sys

_COMMAND = os.path.basename(sys.argv[0] if sys.argv else '') == 'tfrecorder-component'
if _COMMAND:
  # The command takes Ctrl-C and SIGTERM before any library starts a thread (numpy's
  # BLAS starts some when it is imported): see `interrupt`.
  from tfrecorder_component.output import interrupt as _interrupt
  _interrupt.install()

__version__ = '0.1.0'

_EXPORTS = {
    'ImageExampleGen': 'tfrecorder_component.adapters.component.component',
    'ImageManifest': 'tfrecorder_component.adapters.component.types',
    'ConversionReport': 'tfrecorder_component.adapters.component.types',
    'ConversionReportPage': 'tfrecorder_component.adapters.component.report_page',
    'HTML': 'tfrecorder_component.adapters.component.types',
    'read_label_map': 'tfrecorder_component.record.labels',
    'convert': 'tfrecorder_component.adapters.conversion',
    'ConversionResult': 'tfrecorder_component.adapters.conversion',
    'load_dataset': 'tfrecorder_component.readers.dataset',
    'examples_importer': 'tfrecorder_component.adapters.component.importer',
    'feature_spec': 'tfrecorder_component.readers.dataset',
    'parse_fn': 'tfrecorder_component.readers.dataset',
    'iter_records': 'tfrecorder_component.readers.records',
    'RecordDataset': 'tfrecorder_component.readers.records',
    'collate_detection': 'tfrecorder_component.readers.records',
}
__all__ = sorted(_EXPORTS)


if not _COMMAND:  # df.tensorflow, registered when pandas (the [pandas] extra) is imported
  from tfrecorder_component.adapters import pandas_hook as _pandas_hook  # noqa: E402
  _pandas_hook.install()


def __getattr__(name):
  if name in _EXPORTS:
    try:
      module = importlib.import_module(_EXPORTS[name])
    except ModuleNotFoundError as e:
      from tfrecorder_component import extras  # pylint: disable=g-import-not-at-top
      raise extras.for_public_name(e, name) from None
    return getattr(module, name)
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__():
  return __all__
