"""Package definition for tfrecorder-component.

Runtime requirements are kept loose here (ranges known to work) so the package can
be installed into an existing TFX image; the exact, tested set is pinned in
requirements/requirements.lock.
"""
from setuptools import find_packages, setup

setup(
    name="tfrecorder-component",
    version="0.1.0",
    description="TFX ExampleGen-style component that turns image manifests into TFRecords of tf.train.Example",
    long_description=open("README.md", encoding="utf-8").read() if __import__("os").path.exists("README.md") else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.9,<3.11",
    packages=find_packages(include=["tfrecorder_component", "tfrecorder_component.*"]),
    install_requires=[
        "tfx>=1.16,<1.17",
        "apache-beam[gcp]>=2.59,<2.60",
        "pillow>=10",
        "pandas>=1.5",
        "google-crc32c>=1.5",
    ],
    entry_points={"console_scripts": ["tfrecorder-component=tfrecorder_component.cli:main"]},
    license="Apache-2.0",
)
