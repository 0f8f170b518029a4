"""What a manifest reader yields, sorted out: its rows and its failed rows' errors
(`read_manifest_file`, `parse_manifest_text`: ManifestRow and RowError items in file
order), the check every reader's items pass, each format's sample file, and the settings
the format tests' property-based tests share."""
from __future__ import annotations

from typing import Iterable, List

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest import ManifestRow, ObjectBox
from tfrecorder_component.manifest.registry import FORMATS

# One small file of each format, listing a.jpg once: each format's declared sample
# (`format_spec.FormatSample`), so that a new format is read here as soon as it is in the
# registry. name: (file name, its text, {other file the format reads beside it: text}).
FORMAT_SAMPLES = {f.name: (f.sample.name, f.sample.text, dict(f.sample.others))
                  for f in FORMATS}
# Formats no file's text can tell apart from another's (they claim no extension: an
# oriented-box dataset looks like a polygon one): only ever named.
ONLY_NAMED = {f.name for f in FORMATS if not f.extensions}

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JSON_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() |
                st.sampled_from(['1', 'a.jpg', 'x', '']))


def check_items(items):
  for item in items:
    assert isinstance(item, (ManifestRow, RowError)), type(item)
    if isinstance(item, ManifestRow):
      assert item.image_uri.strip() == item.image_uri and item.image_uri and item.row >= 1
      assert all(l == l.strip() and l for l in item.labels)
      assert all(isinstance(o, ObjectBox) and o.label for o in item.objects or ())
      assert all(isinstance(v, (int, float, str)) for _, v in item.features)
    else:
      assert item.reason and item.message


def rows_of(items: Iterable) -> List[ManifestRow]:
  """The rows among a reader's items, in order."""
  return [i for i in items if isinstance(i, ManifestRow)]


def errors_of(items: Iterable) -> List[RowError]:
  """The failed rows' errors among a reader's items, in order."""
  return [i for i in items if isinstance(i, RowError)]
