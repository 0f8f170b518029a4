"""`rows.resolve_uri` against `posixpath.normpath(posixpath.join(base, uri))`, the rule it
follows for relative URIs: its shortcut for URIs of plain segments gives the same path
for any base (relative, absolute, `//`, with `.` and `..` segments) and any URI."""
import posixpath

from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecorder_component.manifest.rows import resolve_uri

SEGMENT = st.sampled_from(['a', 'b', '.', '..', '', '.x', 'x.', '...', 'é', 'c d', '\\'])
PATH = st.lists(SEGMENT, min_size=1, max_size=5).map('/'.join)
BASE = st.one_of(PATH, PATH.map(lambda p: '/' + p), PATH.map(lambda p: '//' + p),
                 st.sampled_from(['/', '//', '.', '..', './', 'a/']))


@settings(max_examples=2000, deadline=None)
@given(BASE, PATH)
def test_relative_uris_resolve_as_normpath_of_the_join(base, uri):
  if not uri or uri.startswith('/'):
    return
  root = (base.rstrip('/') or '/') if base else '.'  # no image_root: the manifest's folder
  assert resolve_uri(uri, 'm.csv', base) == posixpath.normpath(posixpath.join(root, uri))


@settings(max_examples=500, deadline=None)
@given(PATH, PATH)
def test_against_the_manifest_folder(folder, uri):
  if not uri or uri.startswith('/') or not folder:
    return
  manifest = folder + '/m.csv'
  base = manifest.rsplit('/', 1)[0]
  assert resolve_uri(uri, manifest) == posixpath.normpath(posixpath.join(base, uri))
