"""Local stand-ins for a run's label and report folders on object storage (gs://, s3://),
for the engine without Beam (`engines.local.pipeline.convert_locally`) on a machine whose outputs
live in a bucket, as every Vertex AI and Kubeflow run's do.

The shards do not come here: the workers upload them as they write them
(`storage.ObjectWriter`). What the run writes beside them (the label files, the extra
layouts' files, the report, and the report's scratch files: chunks, sorted runs) is
written into a scratch folder on this machine's disk (`TMPDIR`, else /tmp), where each
remote folder has its own place (`<scratch>/<scheme>/<bucket>/<path>`, so folders that
nest in the bucket nest here too); the scratch files never leave the machine. Once the
run has written everything, `publish` uploads each file to its place in the bucket,
UPLOADS_IN_FLIGHT at once, through this process's one Arrow client per scheme; a run
that fails uploads nothing. The caller writes `_SUCCESS` after (`convert()`'s
`output.folder`, the component's executor), so an output is finished only once every file
is in place.

Why not write these to the bucket as the run goes: the layouts' files take their names
only once every worker has finished, and the report is a handful of files written once
each, where Beam's file system would build a storage client for every call and round-
trip scratch files through the bucket.
"""
from __future__ import annotations

import concurrent.futures
import logging
import os
import shutil
import tempfile
import time
from typing import Dict, List, Mapping, Optional, Tuple

from tfrecorder_component.io import storage
from tfrecorder_component.io import files

__all__ = ['Staging', 'UPLOADS_IN_FLIGHT']

# Files uploaded at once: each waits mostly on the network (Arrow's clients release the
# GIL), and a run's files are few and large (shards) or many and small (the report).
UPLOADS_IN_FLIGHT = 16
# The piece a file is copied to its upload stream in.
_PIECE = 8 << 20


class Staging:
  """The local stand-ins of a run's remote outputs: `path(p)` is where the run writes what
  goes to `p` (a local `p` is itself), `publish()` uploads what was written there, and
  `close()` (or leaving the `with` block) removes the scratch folder.

  Args:
    outputs: The run's folders written beside its shards (the report folder, the label
      folder): local paths or URIs. A scratch folder is made (`root`) only when one of
      them is on gs:// or s3://.
  """

  def __init__(self, outputs: List[str]):
    self._remote = any(storage.is_object_store(p) for p in outputs)
    self.root: Optional[str] = (tempfile.mkdtemp(prefix='tfrecorder-stage-')
                                if self._remote else None)

  @property
  def staged(self) -> bool:
    """Whether any output is remote (and so written here first)."""
    return self._remote

  def path(self, uri: Optional[str]) -> Optional[str]:
    """Where the run writes what goes to `uri` (None stays None).

    Args:
      uri: A path or URI the run writes. A gs:// or s3:// one maps to
        `<root>/<scheme>/<bucket>/<path>`; any other is returned as it is.
    """
    if uri is None or not storage.is_object_store(uri):
      return uri
    scheme, rest = uri.split('://', 1)
    return os.path.join(self.root, scheme, *[p for p in rest.split('/') if p])

  def paths(self, uris: Optional[Mapping[str, str]]) -> Optional[Dict[str, str]]:
    """`path` of each value of `uris`, under the same keys (None stays None).

    Args:
      uris: {name: path or URI} of what the run writes, or None.
    """
    return None if uris is None else {k: self.path(v) for k, v in uris.items()}

  def _uploads(self) -> List[Tuple[str, str]]:
    """(local file, its URI) of every file written under the scratch folder."""
    pairs = []
    for scheme in sorted(os.listdir(self.root)):
      top = os.path.join(self.root, scheme)
      for folder, _, names in os.walk(top):
        for name in names:
          local = os.path.join(folder, name)
          pairs.append((local, f'{scheme}://' + os.path.relpath(local, top).replace(os.sep, '/')))
    return pairs

  def publish(self) -> None:
    """Uploads every file the run wrote here to its place on object storage,
    UPLOADS_IN_FLIGHT at a time; raises the first upload's failure, once all have ended."""
    if not self._remote:
      return
    start = time.perf_counter()
    pairs = self._uploads()
    with concurrent.futures.ThreadPoolExecutor(min(UPLOADS_IN_FLIGHT, max(1, len(pairs))),
                                               thread_name_prefix='tfrecorder-upload') as pool:
      futures = [pool.submit(upload, local, uri) for local, uri in pairs]
    for future in futures:
      future.result()
    logging.info('Uploaded %d file(s), %.1f MB, in %.2f s', len(pairs),
                 sum(os.path.getsize(p) for p, _ in pairs) / 1e6, time.perf_counter() - start)

  def close(self) -> None:
    if self.root is not None:
      shutil.rmtree(self.root, ignore_errors=True)
      self.root = None

  def __enter__(self) -> 'Staging':
    return self

  def __exit__(self, *exc) -> None:
    self.close()


def upload(local: str, uri: str) -> None:
  """Writes the local file `local` as the object `uri`, as every remote file is written
  (`files.create_file`: this process's Arrow client of its scheme, else Beam's file
  system).

  Args:
    local: The local file to copy, read 8 MiB at a time.
    uri: The object it becomes (gs:// or s3://); one already there is replaced.
  """
  with open(local, 'rb') as source, files.create_file(uri) as target:
    shutil.copyfileobj(source, target, _PIECE)
