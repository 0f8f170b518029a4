"""Runs Importer -> ImageExampleGen on LocalDagRunner; used by test_interrupted_run.

    python interrupted_run.py MANIFEST ROOT
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import slowfs  # noqa: F401  pylint: disable=unused-import,g-import-not-at-top
from tfx import v1 as tfx  # pylint: disable=g-import-not-at-top

from tfrecorder_component import ImageExampleGen, ImageManifest  # pylint: disable=g-import-not-at-top

NAME = 'interrupted'


def main(manifest: str, root: str) -> None:
  importer = tfx.dsl.Importer(source_uri=manifest, artifact_type=ImageManifest).with_id('importer')
  gen = ImageExampleGen(manifest=importer.outputs['result'])
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name=NAME, pipeline_root=os.path.join(root, 'root'), components=[importer, gen],
      metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
          os.path.join(root, 'metadata.db')),
      enable_cache=True,
      beam_pipeline_args=['--direct_running_mode=in_memory', '--direct_num_workers=1']))


if __name__ == '__main__':
  main(sys.argv[1], sys.argv[2])
