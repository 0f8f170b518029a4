"""A Beam FileSystem for the `slow://` scheme: local files, read slowly.

It lets a test kill a pipeline while ImageExampleGen is in the middle of reading
images. `slow:///abs/path` reads `/abs/path`; each open() sleeps SLOW_FS_SECONDS
(environment variable, default 0) and the first one touches SLOW_FS_MARKER if set;
while the file SLOW_FS_HOLD names exists, every open() waits.
"""
import os
import time

from apache_beam.io.filesystem import FileSystem


class SlowFileSystem(FileSystem):

  @classmethod
  def scheme(cls):
    return 'slow'

  def open(self, path, mime_type='application/octet-stream', compression_type=None):
    marker = os.environ.get('SLOW_FS_MARKER')
    if marker and not os.path.exists(marker):
      open(marker, 'w').close()
    time.sleep(float(os.environ.get('SLOW_FS_SECONDS', '0')))
    hold = os.environ.get('SLOW_FS_HOLD')
    while hold and os.path.exists(hold):
      time.sleep(0.05)
    return open(path[len('slow://'):], 'rb')

  def _unsupported(self, *args, **kwargs):
    raise NotImplementedError

  join = split = mkdirs = has_dirs = _list = create = copy = rename = exists = size = \
      last_updated = checksum = delete = metadata = _unsupported
