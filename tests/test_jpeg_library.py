"""TensorFlow decodes JPEG with a libjpeg-turbo built into its shared libraries, and the
decode check's JPEG rules (tfrecorder_component/images/formats/jpeg_walk.py) copy that
libjpeg-turbo's decisions: they were written for libjpeg-turbo 2.1.4 (build 20221022),
the one TensorFlow 2.16 and 2.21 embed. libjpeg-turbo's jcmaster.c puts the string
"libjpeg-turbo version 2.1.4 (build 20221022)" into every binary built from it, so that
one can tell the version; this test reads it out of the installed TensorFlow's .so files,
without importing TensorFlow, and fails on a stack whose TensorFlow embeds another
version (or none). It maps each file and lets mmap.find look for the string: about 1 s
for TensorFlow's 1 GB libtensorflow_cc.so.2 in the page cache, 2 s from disk."""
import importlib.util
import mmap
import os
import pathlib
import re

import pytest

RULES_WRITTEN_FOR = '2.1.4'
NEEDLE = b'libjpeg-turbo version '
VERSION = re.compile(rb'libjpeg-turbo version ([0-9][0-9A-Za-z.+~-]{0,40}) \(build ([0-9]+)\)')
SHARED_LIBRARY = re.compile(r'\.so(\.[0-9]+)*$')


def tensorflow_folders():
  """The installed tensorflow package's folders; find_spec imports nothing for a
  top-level package."""
  spec = importlib.util.find_spec('tensorflow')
  if spec is None or not spec.submodule_search_locations:
    pytest.skip('TensorFlow is not installed on this stack')
  return [pathlib.Path(p) for p in spec.submodule_search_locations]


def shared_libraries(folder: pathlib.Path):
  for path in sorted(folder.rglob('*.so*')):
    if SHARED_LIBRARY.search(path.name) and path.is_file() and not path.is_symlink():
      yield path


def libjpeg_turbo_versions(path: pathlib.Path):
  """{(version, build)} of each libjpeg-turbo version string in the file."""
  found = set()
  with open(path, 'rb') as f:
    if os.fstat(f.fileno()).st_size == 0:
      return found
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
      at = data.find(NEEDLE)
      while at >= 0:
        match = VERSION.match(data, at)
        if match:
          found.add((match[1].decode(), match[2].decode()))
        at = data.find(NEEDLE, at + len(NEEDLE))
  return found


def test_tensorflow_embeds_the_libjpeg_turbo_the_jpeg_rules_follow():
  folders = tensorflow_folders()
  found = {}
  for folder in folders:
    for path in shared_libraries(folder):
      for version, build in libjpeg_turbo_versions(path):
        found.setdefault(version, []).append(f'{path.relative_to(folder)} (build {build})')
  where = ', '.join(map(str, folders))
  recheck = (
      f'The decode check\'s JPEG rules (tfrecorder_component/images/formats/jpeg_walk.py) '
      f'follow libjpeg-turbo {RULES_WRITTEN_FOR}: before trusting them on this stack, '
      f'diff libjpeg-turbo {RULES_WRITTEN_FOR} against the new version '
      f'(git diff {RULES_WRITTEN_FOR}..NEW -- jdmarker.c jdinput.c jdmaster.c jdhuff.c '
      f'jdphuff.c jdarith.c jdsample.c jdapimin.c jdapistd.c jerror.h), carry every '
      f'change in what it refuses or warns about into the rules, check TensorFlow\'s '
      f'tensorflow/core/lib/jpeg/jpeg_mem.cc too, run tests/test_decode_check.py on '
      f'the new stack, and then set RULES_WRITTEN_FOR in {os.path.basename(__file__)}.')
  assert found, (
      f'No "libjpeg-turbo version X (build Y)" string in the shared libraries of the '
      f'TensorFlow at {where}: it no longer embeds libjpeg-turbo (or a build stripped the '
      f'message table). Find which JPEG library tf.io.decode_image uses now. ' + recheck)
  assert set(found) == {RULES_WRITTEN_FOR}, (
      f'The TensorFlow at {where} embeds libjpeg-turbo {sorted(found)}: {found}. ' + recheck)
