"""Package definition for tfrecorder-component.

Two installs:
- `pip install tfrecorder-component`: the conversion core (CLI, `convert()`, the pandas
  accessor, the manifests, the Beam transforms) on Python 3.10 to 3.13, with Beam,
  Pillow, pandas, protobuf, google-crc32c and pycocotools only.
- `pip install "tfrecorder-component[gcp]"` / `[aws]`: Beam's Cloud Storage / S3 file
  systems for manifests and outputs there.
- `pip install "tfrecorder-component[tfx]"`: adds the TFX component (TFX 1.16 to 1.21,
  the two tested ends, with what KubeflowV2DagRunner needs where TFX offers it) and
  TensorFlow, which `load_dataset` reads with.

Ranges are kept loose (known to work) so the package installs into an existing TFX
image; the exact, tested sets are the lock files in requirements/.
"""
import os

from setuptools import find_packages, setup

BEAM = 'apache-beam>=2.59,<2.78'

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
        BEAM,
        'pillow>=10',
        'pandas>=1.5',
        'protobuf>=3.20.3,<7',
        'google-crc32c>=1.5',
        'pycocotools>=2.0.7',  # COCO instance masks (include_masks)
        'pyyaml>=5.4',  # YOLO's data.yaml, class maps in YAML
        'tqdm>=4.66',  # the command's progress bar
    ],
    extras_require={
        # tfx[kfp] brings kfp where TFX offers it (TFX 1.21: Python < 3.12).
        'tfx': ['tfx[kfp]>=1.16,<1.22', BEAM.replace('apache-beam', 'apache-beam[gcp]')],
        # Cloud Storage and Dataflow for the core alone.
        'gcp': [BEAM.replace('apache-beam', 'apache-beam[gcp]')],
        # S3 and S3-compatible stores (MinIO) for manifests and outputs: Beam's S3 file
        # system (boto3). Images on s3:// are read with pyarrow, which Beam brings.
        'aws': [BEAM.replace('apache-beam', 'apache-beam[aws]')],
        # The extra output layouts' writers (`--layout tfds`, `--layout array_record`);
        # `tfrecord` and `parquet` need nothing more (pyarrow comes with Beam).
        'tfds': ['tensorflow-datasets>=4.9,<5'],
        'array_record': ['array-record>=0.5'],
    },
    entry_points={'console_scripts': ['tfrecorder-component=tfrecorder_component.cli:main']},
    license='Apache-2.0',
    classifiers=[f'Programming Language :: Python :: 3.{minor}' for minor in (10, 11, 12, 13)],
)
