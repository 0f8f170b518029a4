"""`record.wire.serialize` against the protobuf runtime: the bytes a run writes are, byte
for byte, what the C++ runtime's `SerializeToString(deterministic=True)` gives for the
same message (`example.build_example`), on every stack (`reference`), on records of every task and on values at the edges of the
encoding: multi-byte varints, negative and extreme int64s, floats rounded to float32
and past its range, NaN, empty lists, keys that sort differently as text and as UTF-8,
a key given twice with one kind and with two."""
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from google.protobuf.internal import api_implementation
from google.protobuf.internal.encoder import _VarintBytes  # pylint: disable=protected-access

from tfrecorder_component.images.probe import ImageInfo
from tfrecorder_component.manifest import ManifestRow, ObjectBox
from tfrecorder_component.record import example_proto, wire
from tfrecorder_component.record.example import DetectedObject, build_example, example_features
from tfrecorder_component.steps.row import feature_signature, signature_of


def reference(features):
  """The bytes of `features` by the protobuf runtime: each map entry as the runtime
  serializes it (a Features message of that entry alone), the entries in the order of
  their keys' UTF-8 bytes. That is the C++ runtime's deterministic serialization, whole
  (checked here where it is the runtime); upb (protobuf 4 and later) orders a key that is
  a prefix of another after it, so there only the entries come from the runtime and the
  whole message is checked to parse to the same Example."""
  example = example_proto.Example()
  for key, (kind, values) in features.items():
    target = getattr(example.features.feature[key], f'{kind}_list')
    target.SetInParent()
    target.value.extend(values)
  whole = example.SerializeToString(deterministic=True)
  if not features:
    return whole
  entries = []
  for key in sorted(features, key=lambda k: k.encode('utf-8')):
    one = example_proto.Features()
    one.feature[key].CopyFrom(example.features.feature[key])
    entries.append(one.SerializeToString(deterministic=True))
  body = b''.join(entries)
  expected = b'\x0a' + _VarintBytes(len(body)) + body
  if api_implementation.Type() == 'cpp':
    assert expected == whole
  else:
    parsed = example_proto.Example()
    parsed.ParseFromString(expected)
    assert parsed == example
  return expected


INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
FLOAT = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                  st.sampled_from([3.4028234663852886e38, 3.4028235e38, 3.4028235677973366e38,
                                   3.402823568137619e38, 2.0 ** 128 - 2.0 ** 103, -1e39, 1e-46,
                                   5e-324, -0.0]),
                  st.integers(-(1 << 200), 1 << 200))
KEY = st.text(st.characters(blacklist_categories=('Cs',)), max_size=8)
VALUES = {'bytes': st.lists(st.binary(max_size=300), max_size=4),
          'int64': st.lists(INT64, max_size=6), 'float': st.lists(FLOAT, max_size=6)}
FEATURES = st.dictionaries(
    KEY, st.sampled_from(sorted(VALUES)).flatmap(
        lambda kind: st.tuples(st.just(kind), VALUES[kind])), max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FEATURES)
def test_any_features_serialize_as_the_protobuf_runtime_serializes_them(features):
  assert wire.serialize(features) == reference(features)


@pytest.mark.parametrize('size', [0, 1, 127, 128, 16383, 16384, 2_097_152, 5_000_000])
def test_images_of_every_varint_length(size):
  data = bytes(range(256)) * (size // 256) + bytes(size % 256)
  features = {'image/encoded': ('bytes', [data]), 'image/height': ('int64', [size])}
  assert wire.serialize(features) == reference(features)


def test_an_int64_out_of_range_is_refused_as_the_runtime_refuses_it():
  for value in (1 << 63, -(1 << 63) - 1):
    with pytest.raises((ValueError, OverflowError)):  # the C++ runtime's, upb's
      reference({'a': ('int64', [value])})
    with pytest.raises(ValueError):
      wire.serialize({'a': ('int64', [value])})


def test_keys_sort_as_their_utf8_bytes():
  """'\\uff01' sorts before '\\U0001f600' as text, after it as UTF-16, and as UTF-8 bytes
  before: the C++ runtime's order is the bytes'; a key before the keys it is a prefix of
  ('a' before 'aa'; '' first), where upb would put it after them."""
  features = {k: ('int64', [i]) for i, k in enumerate(['\U0001f600', '\uff01', 'Z', 'a', 'é', '',
                                                        'aa', 'ab'])}
  assert wire.serialize(features) == reference(features)


def _rows():
  image = bytes(range(256)) * 300
  info = ImageInfo('jpeg', 480, 640, 3)
  box = (0.1, 0.2, 0.5, 0.75)
  objects = [DetectedObject('cat', 1, box, 1234.5, is_crowd=True, mask=b'\x89PNG' * 40,
                            keypoints=((0.2, 0.3, 2), (0.0, 0.0, 0)),
                            keypoint_names=('nose', 'tail'),
                            corners=((0.1, 0.2), (0.5, 0.2), (0.5, 0.75), (0.1, 0.75)),
                            attributes=(('color', 'red'), ('truncated', 'partly'), ('n', 3),
                                        ('score', 0.5))),
             DetectedObject('dog', 2, box, 7, difficult=True, truncated=True, mask=b'\x89PNG',
                            attributes=(('n', 2.5),))]
  classification = ManifestRow('m.csv', 1, 'a/b.jpg', '/d/a/b.jpg', ('cat', 'dog'), 'train',
                               (0, 1), features=(('fold', 3), ('score', 0.25), ('note', 'héllo'),
                                                 ('big', -(1 << 63))))
  return [
      (classification, image, info, None, {}),
      (classification, image, info, None, {'synset': True, 'filename': 'x.png',
                                           'source_id': '42'}),
      (ManifestRow('m.csv', 2, 'c.jpg', '/c.jpg'), image, info, None, {}),
      (ManifestRow('m.json', 3, 'd.jpg', '/d.jpg', objects=(ObjectBox('cat', 0, 0, 1, 1),)),
       image, info, objects, {'masks': True, 'keypoints': True}),
      (ManifestRow('m.json', 4, 'e.jpg', '/e.jpg', objects=()), image, info, [], {}),
      (ManifestRow('m.csv', 5, 'f.png', '/f.png', mask_uri='f_mask.png',
                   resolved_mask_uri='/f_mask.png'), image, ImageInfo('png', 4, 4, 1), None,
       {'class_mask': b'\x89PNG mask'}),
  ]


@pytest.mark.parametrize('case', range(6))
def test_records_of_every_task_serialize_as_build_example_does(case):
  row, data, info, objects, options = _rows()[case]
  if case == 5:
    from tfrecorder_component.manifest import Task  # pylint: disable=g-import-not-at-top
    assert row.task is Task.SEGMENTATION
  features = example_features(row, data, info, objects, **options)
  example = build_example(row, data, info, objects, **options)
  assert wire.serialize(features) == example.SerializeToString(deterministic=True)
  assert signature_of(features) == feature_signature(example)


def test_a_key_given_twice_follows_the_message():
  """Values of one kind are appended to the key's; another kind replaces them, as the
  message's oneof switches."""
  from tfrecorder_component.record import example as example_lib  # pylint: disable=g-import-not-at-top
  features = {}
  example_lib._int64s(features, 'k', [1])  # pylint: disable=protected-access
  example_lib._int64s(features, 'k', [2])  # pylint: disable=protected-access
  example_lib._floats(features, 'j', [1.5])  # pylint: disable=protected-access
  example_lib._bytes(features, 'j', [b'x'])  # pylint: disable=protected-access
  message = example_proto.Example()
  feature = message.features.feature
  feature['k'].int64_list.value.extend([1])
  feature['k'].int64_list.value.extend([2])
  feature['j'].float_list.value.extend([1.5])
  feature['j'].bytes_list.SetInParent()
  feature['j'].bytes_list.value.extend([b'x'])
  assert features == {'k': ('int64', [1, 2]), 'j': ('bytes', [b'x'])}
  assert wire.serialize(features) == message.SerializeToString(deterministic=True)


def test_equal_values_of_other_bytes_are_not_confused():
  """0.0 and -0.0 are equal and hash alike, but their float32 bytes differ."""
  for value in (0.0, -0.0, 0.0, 1, 1.0, True):
    for kind in ('float', 'int64'):
      if kind == 'int64' and isinstance(value, float):
        continue
      features = {'v': (kind, [value])}
      assert wire.serialize(features) == reference(features)


def test_nan_and_infinities_round_trip():
  features = {'f': ('float', [math.nan, math.inf, -math.inf, 1e39, -1e39])}
  assert wire.serialize(features) == reference(features)
