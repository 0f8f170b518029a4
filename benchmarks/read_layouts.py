"""One loader reading one layout of a conversion's `train` split, in a fresh process:
what the `readers` part (benchmarks/readers.py) times. Runs in the loader's own
environment (the product's venv, the reference readers' for Hugging Face `datasets`,
scripts/dali-env for DALI); prints one JSON line.

    python benchmarks/read_layouts.py READER OUTPUT_DIR --limit N [--decode]

Each reader yields the image bytes (decoded to uint8 pixels with --decode) and the label
of the first N records. `setup_s` is from the process's start to the reader's first
record (imports, opening, the first batch); `read_s` and `cpu_s` (every thread of the
process) cover the records after it.
"""
from __future__ import annotations

import argparse
import glob
import io
import json
import os
import resource
import sys
import time

START = time.perf_counter()
IMAGE, LABEL = 'image/encoded', 'image/class/label'


def _cpu() -> float:
  usage = resource.getrusage(resource.RUSAGE_SELF)
  return usage.ru_utime + usage.ru_stime


def _pil(data: bytes):
  import numpy as np  # pylint: disable=g-import-not-at-top
  from PIL import Image  # pylint: disable=g-import-not-at-top
  with Image.open(io.BytesIO(data)) as im:
    return np.asarray(im.convert('RGB'))


def _files(out: str, folder: str, pattern: str):
  found = sorted(glob.glob(os.path.join(out, folder, pattern)))
  assert found, f'no {pattern} in {out}/{folder}'
  return found


def tf_data(out, decode, gzip=True):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  files = (_files(out, 'Split-train', '*.gz') if gzip else
           [f for f in _files(out, 'tfrecord', 'images-train.tfrecord-*') if not f.endswith('.idx')])
  spec = {IMAGE: tf.io.FixedLenFeature([], tf.string),
          LABEL: tf.io.FixedLenFeature([], tf.int64)}
  ds = tf.data.TFRecordDataset(files, compression_type='GZIP' if gzip else None,
                               num_parallel_reads=tf.data.AUTOTUNE)
  ds = ds.map(lambda s: tf.io.parse_single_example(s, spec), num_parallel_calls=tf.data.AUTOTUNE)
  if decode:
    ds = ds.map(lambda f: (tf.io.decode_jpeg(f[IMAGE], channels=3), f[LABEL]),
                num_parallel_calls=tf.data.AUTOTUNE)
  else:
    ds = ds.map(lambda f: (f[IMAGE], f[LABEL]))
  for image, label in ds.prefetch(tf.data.AUTOTUNE).as_numpy_iterator():
    yield image, label


def tfrecord_package(out, decode):
  from tfrecord.reader import tfrecord_loader  # pylint: disable=g-import-not-at-top
  for path in [f for f in _files(out, 'tfrecord', 'images-train.tfrecord-*')
               if not f.endswith('.idx')]:
    for r in tfrecord_loader(path, path + '.idx', {IMAGE: 'byte', LABEL: 'int'}):
      data = bytes(r[IMAGE])
      yield (_pil(data) if decode else data), int(r[LABEL][0])


def ours(out, decode):
  from tfrecorder_component.readers.records import iter_records  # pylint: disable=g-import-not-at-top
  for r in iter_records(out, 'train', keys=[IMAGE, LABEL], decode_images=decode):
    yield (r['image'] if decode else r[IMAGE]), r[LABEL]


def tfds_builder(out, decode):
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  builder = tfds.builder_from_directory(os.path.join(out, 'tfds'))
  decoders = None if decode else {'image': tfds.decode.SkipDecoding()}
  ds = builder.as_dataset(split='train', decoders=decoders, shuffle_files=False)
  for r in tfds.as_numpy(ds):
    yield r['image'], r['label']


def grain_array_record(out, decode):
  import grain.python as grain  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.record import example_proto  # pylint: disable=g-import-not-at-top
  source = grain.ArrayRecordDataSource(_files(out, 'array_record', 'train.array_record-*'))
  for i in range(len(source)):
    feature = example_proto.Example.FromString(source[i]).features.feature
    data = feature[IMAGE].bytes_list.value[0]
    yield (_pil(data) if decode else data), feature[LABEL].int64_list.value[0]


def pyarrow_parquet(out, decode):
  import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
  for path in _files(out, 'parquet', 'train-*.parquet'):
    for batch in pq.ParquetFile(path).iter_batches(batch_size=256, columns=[IMAGE, LABEL]):
      for data, label in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
        yield (_pil(data) if decode else data), label


def hf_datasets(out, decode):
  import datasets  # pylint: disable=g-import-not-at-top
  ds = datasets.load_dataset(os.path.join(out, 'parquet'), split='train',
                             cache_dir=os.path.join(out, '.hf-cache'))
  for r in ds.select_columns([IMAGE, LABEL]).iter(batch_size=256):
    for data, label in zip(r[IMAGE], r[LABEL]):
      yield (_pil(data) if decode else data), label


def dali(out, decode):
  from nvidia.dali import fn, pipeline_def  # pylint: disable=g-import-not-at-top
  import nvidia.dali.tfrecord as tfrec  # pylint: disable=g-import-not-at-top
  files = [f for f in _files(out, 'tfrecord', 'images-train.tfrecord-*')
           if not f.endswith('.idx')]
  batch = 64

  @pipeline_def(batch_size=batch, num_threads=os.cpu_count(), device_id=None,
                prefetch_queue_depth=2)
  def pipe():
    r = fn.readers.tfrecord(path=files, index_path=[f + '.idx' for f in files], features={
        IMAGE: tfrec.FixedLenFeature((), tfrec.string, ''),
        LABEL: tfrec.FixedLenFeature([1], tfrec.int64, -1)}, name='reader',
        random_shuffle=False, pad_last_batch=True)
    image = fn.decoders.image(r[IMAGE], device='cpu') if decode else r[IMAGE]
    return image, r[LABEL]

  p = pipe()
  p.build()
  total = p.epoch_size('reader')
  for _ in range(-(-total // batch)):
    images, labels = p.run()
    for i in range(len(images)):
      yield images.at(i), labels.at(i)


READERS = {
    'tf_data_gzip': tf_data,
    'tf_data_tfrecord': lambda out, decode: tf_data(out, decode, gzip=False),
    'tfrecord_package': tfrecord_package,
    'ours_iterator': ours,
    'tfds': tfds_builder,
    'grain': grain_array_record,
    'pyarrow': pyarrow_parquet,
    'hf_datasets': hf_datasets,
    'dali': dali,
}


def main() -> None:
  parser = argparse.ArgumentParser()
  parser.add_argument('reader', choices=sorted(READERS))
  parser.add_argument('output_dir')
  parser.add_argument('--limit', type=int, default=0)
  parser.add_argument('--decode', action='store_true')
  args = parser.parse_args()
  records = READERS[args.reader](args.output_dir, args.decode)
  n, first_wall, first_cpu = 0, None, None
  for image, _ in records:
    if first_wall is None:
      first_wall, first_cpu = time.perf_counter(), _cpu()
    n += 1
    if args.decode:
      assert image.ndim == 3 and image.shape[-1] == 3, image.shape
    if args.limit and n >= args.limit:
      break
  end = time.perf_counter()
  print(json.dumps({'reader': args.reader, 'decode': args.decode, 'records': n,
                    'setup_s': first_wall - START, 'read_s': end - first_wall,
                    'cpu_s': _cpu() - first_cpu}))
  sys.stdout.flush()
  os._exit(0)  # pylint: disable=protected-access  (loaders' threads need not wind down)


if __name__ == '__main__':
  main()
