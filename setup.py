"""Package definition for tfrecorder-component.

- `pip install tfrecorder-component`: the conversion core on Python 3.10 to 3.13: the
  CLI, `convert()`, `validate`, `inspect`, the manifest formats and the Beam-free engine
  that converts, validates and inspects local files on this machine's cores. Pillow,
  numpy, protobuf, google-crc32c, pycocotools, PyYAML and tqdm only (under 100 MB).
- Extras (`tfrecorder_component/extras.py` names the one a path needs when it is
  missing): `[beam]` another runner or Beam arguments; `[gcp]` gs:// and Dataflow;
  `[aws]` s3://; `[pandas]` DataFrames and the `df.tensorflow` accessor; `[parquet]`,
  `[tfds]`, `[array_record]` those output layouts.
- `pip install "tfrecorder-component[tfx]"`: the TFX component (TFX 1.16 to 1.21, the
  two tested ends, with what KubeflowV2DagRunner needs where TFX offers it), TensorFlow
  (`load_dataset`), Beam with [gcp], and pandas.

Ranges are kept loose (known to work) so the package installs into an existing TFX
image; the exact, tested sets are the lock files in requirements/.
"""
import os

from setuptools import find_packages, setup

BEAM = 'apache-beam>=2.59,<2.78'
BEAM_WITH = BEAM.replace('apache-beam', 'apache-beam[{}]')
PANDAS = 'pandas>=1.5'

setup(
    name='tfrecorder-component',
    version='0.1.0',
    description='TFX ExampleGen-style component that turns image manifests into TFRecords '
                'of tf.train.Example',
    long_description=(open('README.md', encoding='utf-8').read()
                      if os.path.exists('README.md') else ''),
    long_description_content_type='text/markdown',
    python_requires='>=3.10,<3.14',
    packages=find_packages(include=['tfrecorder_component', 'tfrecorder_component.*']),
    install_requires=[
        'pillow>=10',
        'numpy>=1.22',
        'protobuf>=3.20.3,<7',
        'google-crc32c>=1.5',
        'zlib-ng>=0.5',  # the CRC-32 of level-0 gzip shards, at SIMD speed
        'pycocotools>=2.0.7',  # COCO instance masks (include_masks)
        'pyyaml>=5.4',  # YOLO's data.yaml, class maps in YAML
        'tqdm>=4.66',  # the command's progress bar
    ],
    extras_require={
        # Beam itself: another runner, Beam arguments, `tfrecorder_component.engines.beam`.
        'beam': [BEAM],
        # gs:// (Beam's GCS file system; images read with pyarrow's client, which Beam
        # brings) and the DataflowRunner.
        'gcp': [BEAM_WITH.format('gcp')],
        # s3:// and S3-compatible stores (MinIO): Beam's S3 file system (boto3).
        'aws': [BEAM_WITH.format('aws')],
        # DataFrames: `convert(df, ...)` and the `df.tensorflow` accessor.
        'pandas': [PANDAS],
        # The extra output layouts' writers (`--layout parquet|tfds|array_record`).
        'parquet': ['pyarrow>=12'],
        'tfds': ['tensorflow-datasets>=4.9,<5'],
        'array_record': ['array-record>=0.5'],
        # tfx[kfp] brings kfp where TFX offers it (TFX 1.21: Python < 3.12).
        'tfx': ['tfx[kfp]>=1.16,<1.22', BEAM_WITH.format('gcp'), PANDAS],
    },
    entry_points={'console_scripts': [
        'tfrecorder-component=tfrecorder_component.adapters.cli:main']},
    license='Apache-2.0',
    classifiers=[f'Programming Language :: Python :: 3.{minor}' for minor in (10, 11, 12, 13)],
)
