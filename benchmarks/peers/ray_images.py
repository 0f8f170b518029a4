"""A peer of the benchmark: the AutoML CSV's images into TFRecords with Ray Data.

    PEERS_PYTHON benchmarks/peers/ray_images.py MANIFEST OUT

As a user writes it: `ray.init(num_cpus=2)`, `ray.data.read_csv` of the manifest (no
header: AutoML's `ML_USE,IMAGE_URI,LABEL`, URIs relative to its folder), the label names
collected for their ids, `map_batches` that reads each image's bytes and builds the
columns (image bytes, label string, label id), then `write_tfrecords(OUT)`, which turns
each row into a tf.train.Example (OUT/*.tfrecords, uncompressed). No decode check.
"""
from __future__ import annotations

import os
import sys

import pyarrow.csv
import ray


def main(manifest: str, out: str) -> int:
  ray.init(num_cpus=2)
  root = os.path.dirname(os.path.abspath(manifest))
  ds = ray.data.read_csv(
      manifest, read_options=pyarrow.csv.ReadOptions(column_names=['split', 'uri', 'label']),
      convert_options=pyarrow.csv.ConvertOptions(column_types={'split': pyarrow.string()}))
  ids = {label: i for i, label in enumerate(sorted(ds.unique('label')))}

  def load(batch):
    images = []
    for uri in batch['uri']:
      with open(os.path.join(root, uri), 'rb') as f:
        images.append(f.read())
    return {'image/encoded': images, 'image/filename': list(batch['uri']),
            'image/class/text': list(batch['label']),
            'image/class/label': [ids[label] for label in batch['label']]}

  ds.map_batches(load).write_tfrecords(out)
  ray.shutdown()
  print(sum(1 for _ in os.scandir(out)), 'files')
  return 0


if __name__ == '__main__':
  sys.exit(main(*sys.argv[1:3]))
