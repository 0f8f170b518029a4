"""A peer of the benchmark: the AutoML CSV's images as a TFDS dataset, as a user writes it.

    PEERS_PYTHON benchmarks/peers/tfds_images.py MANIFEST OUT

A `tfds.core.GeneratorBasedBuilder` with default TFDS settings: one process, no Beam,
TFDS's own shuffling, shard sizing and TFRecord writer. `_generate_examples` yields each
image's path and TFDS reads the bytes (no decode, no re-encode). The manifest
(`[ML_USE,]IMAGE_URI,LABEL`, URIs relative to its folder) comes in through the builder
config; rows with an empty or UNASSIGNED ML_USE go to `train`. The shards land in
OUT/manifest_images/default/1.0.0/manifest_images-<split>.tfrecord-NNNNN-of-NNNNN.

TFDS looks up every dataset in its public bucket (gs://tfds-data) before preparing it;
the lookup is turned off here, as on any machine without access to Google Cloud.
Importable (with this folder on sys.path): `tfds_images.ManifestImages`.
"""
from __future__ import annotations

import csv
import dataclasses
import os
import sys

import tensorflow_datasets as tfds
from tensorflow_datasets.core.utils import gcs_utils

gcs_utils._is_gcs_disabled = True  # pylint: disable=protected-access
SPLITS = {'': 'train', 'unassigned': 'train', 'training': 'train', 'validation': 'validation',
          'test': 'test'}


def read_manifest(path: str) -> list:
  """(split, absolute image path, label) of every row of an AutoML CSV."""
  root = os.path.dirname(os.path.abspath(path))
  with open(path, newline='') as f:
    return [(SPLITS.get(split.lower(), split.lower()), os.path.join(root, uri), label)
            for split, uri, label in csv.reader(f)]


@dataclasses.dataclass(eq=False)
class ManifestConfig(tfds.core.BuilderConfig):
  manifest: str = ''


class ManifestImages(tfds.core.GeneratorBasedBuilder):
  """Images and their class labels from an AutoML Vision CSV."""

  VERSION = tfds.core.Version('1.0.0')

  def _info(self) -> tfds.core.DatasetInfo:
    labels = sorted({label for _, _, label in read_manifest(self.builder_config.manifest)})
    return tfds.core.DatasetInfo(
        builder=self,
        features=tfds.features.FeaturesDict({
            'image': tfds.features.Image(encoding_format='jpeg'),
            'label': tfds.features.ClassLabel(names=labels),
        }),
        supervised_keys=('image', 'label'))

  def _split_generators(self, dl_manager):
    rows = read_manifest(self.builder_config.manifest)
    return {split: self._generate_examples([r for r in rows if r[0] == split])
            for split in sorted({r[0] for r in rows})}

  def _generate_examples(self, rows):
    for _, path, label in rows:
      yield path, {'image': path, 'label': label}


def main(manifest: str, out: str) -> int:
  config = ManifestConfig(name='default', manifest=os.path.abspath(manifest))
  builder = ManifestImages(data_dir=out, config=config)
  builder.download_and_prepare()
  splits = builder.info.splits
  print(sum(splits[s].num_examples for s in splits), 'records')
  return 0


if __name__ == '__main__':
  sys.exit(main(*sys.argv[1:3]))
