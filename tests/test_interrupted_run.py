"""A run killed in the middle and run again gives a complete artifact; the killed one is
never published in ML Metadata."""
import os
import signal
import subprocess
import sys
import time

from ml_metadata.proto import metadata_store_pb2
from tfx import v1 as tfx
from tfx.orchestration import metadata

import interrupted_run
from images import write_image, write_text
from mlmd_queries import OUTPUT, artifact_ids, node_executions
from records import by_source_id
from tfrecorder_component.adapters.component.mlmd import latest_output

N = 12


def test_killed_run_then_rerun(tmp_path, monkeypatch):
  files = {}
  for i in range(N):
    path = str(tmp_path / 'img' / f'{i}.png')
    files[f'slow://{path}'] = write_image(path, 'PNG', seed=i)
  manifest = write_text(str(tmp_path / 'm.csv'), ''.join(f'TRAIN,{u},l{i % 2}\n'
                                                         for i, u in enumerate(files)))
  root = str(tmp_path / 'tfx')
  marker = str(tmp_path / 'reading')
  env = dict(os.environ, SLOW_FS_SECONDS='5', SLOW_FS_MARKER=marker,
             PYTHONPATH=os.pathsep.join(sys.path))
  proc = subprocess.Popen([sys.executable, interrupted_run.__file__, manifest, root], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True)
  try:
    deadline = time.time() + 240
    while not os.path.exists(marker):  # the executor is reading images
      assert proc.poll() is None, 'the run ended before it could be interrupted'
      assert time.time() < deadline, 'the run never started reading images'
      time.sleep(0.2)
  finally:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

  monkeypatch.setenv('SLOW_FS_SECONDS', '0')
  monkeypatch.delenv('SLOW_FS_MARKER', raising=False)
  interrupted_run.main(manifest, root)

  config = tfx.orchestration.metadata.sqlite_metadata_connection_config(
      os.path.join(root, 'metadata.db'))
  examples = latest_output(config, interrupted_run.NAME, 'ImageExampleGen', 'examples')
  records = by_source_id(examples.uri, ['train'])
  assert sorted(records) == sorted(files)
  with metadata.Metadata(config) as m:
    killed, rerun = node_executions(m, interrupted_run.NAME, 'ImageExampleGen')
    assert killed.last_known_state != metadata_store_pb2.Execution.COMPLETE
    assert artifact_ids(m, killed.id, OUTPUT) == set()
    assert rerun.last_known_state == metadata_store_pb2.Execution.COMPLETE
    live = [a for a in m.store.get_artifacts_by_type('Examples')
            if a.state == metadata_store_pb2.Artifact.LIVE]
    assert [a.id for a in live] == [examples.id]
