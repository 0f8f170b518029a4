"""The conversion as Beam transforms, one job each, knowing nothing of TFX:

    read.py      ReadManifestRows: manifest files -> chunks of rows
    vocabulary.py  LabelVocabulary: the run's label ids, a side input
    convert_batches.py  ConvertBatches: chunks -> records per split
    write.py     WriteSplits, WriteLabelFiles
    report.py    Summarize, WriteReport
    duplicates.py  FindDuplicates: the duplicate index, an external sort
    jsonl.py     WriteSortedJsonLines: the report's JSON-lines files, an external sort
    sorted_runs.py  reading an external sort's run files a block at a time
    pipeline.py  ConvertManifests: the steps above wired into one transform
    sink.py      the gzipped TFRecord sink

Every process that runs these transforms imports this package: with a storage emulator
set (STORAGE_EMULATOR_HOST), Beam's GCS client there connects anonymously at once
instead of retrying credential discovery for about 21 s (`storage`).
"""
try:
  import apache_beam as _beam  # pylint: disable=unused-import
except ModuleNotFoundError as _e:
  from tfrecorder_component import extras as _extras
  raise _extras.for_missing_module(_e, 'tfrecorder_component.engines.beam') from None

from tfrecorder_component.io import storage as _storage

_storage.prepare_file_systems()
