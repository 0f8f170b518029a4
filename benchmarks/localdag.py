"""What most users run first: Importer -> ImageExampleGen on LocalDagRunner with the
default settings (no Beam arguments) and the embedded SQLite ML Metadata store.

    python -m benchmarks.localdag MANIFEST PIPELINE_ROOT

Prints one JSON line: import_s (TFX and the package), run_s (LocalDagRunner.run) and
records (summary.json's records_written).
"""
from __future__ import annotations

import glob
import json
import os
import sys
import time


def main(manifest: str, root: str) -> dict:
  t0 = time.perf_counter()
  from tfx import v1 as tfx  # pylint: disable=g-import-not-at-top
  from tfrecorder_component import ImageExampleGen, ImageManifest  # pylint: disable=g-import-not-at-top
  t1 = time.perf_counter()
  importer = tfx.dsl.Importer(source_uri=manifest,
                              artifact_type=ImageManifest).with_id('manifest')
  gen = ImageExampleGen(manifest=importer.outputs['result'])
  pipeline = tfx.dsl.Pipeline(
      pipeline_name='benchmark', pipeline_root=os.path.join(root, 'pipeline'),
      components=[importer, gen], enable_cache=False,
      metadata_connection_config=tfx.orchestration.metadata
      .sqlite_metadata_connection_config(os.path.join(root, 'metadata.sqlite')))
  tfx.orchestration.LocalDagRunner().run(pipeline)
  t2 = time.perf_counter()
  summaries = glob.glob(os.path.join(root, 'pipeline', '**', 'summary.json'), recursive=True)
  if len(summaries) != 1:
    raise RuntimeError(f'expected one summary.json under {root}, found {summaries}')
  with open(summaries[0]) as f:
    records = json.load(f)['records_written']
  return {'import_s': t1 - t0, 'run_s': t2 - t1, 'records': records}


if __name__ == '__main__':
  print(json.dumps(main(*sys.argv[1:3])))
