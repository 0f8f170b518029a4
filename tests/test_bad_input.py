"""Every manifest row accounted for: good rows become decodable records, bad rows errors."""
import collections
import json
import os

import pytest
import tensorflow as tf

from baddata import make
from records import by_source_id, feature, read_split
from runs import SPLITS, convert
from tfrecorder_component.options import ConversionOptions, ManifestSource

MAX_BYTES = 50_000


@pytest.fixture(scope='module')
def converted(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('bad')
  manifest, good, expected_split, bad, bad_rows = make(str(tmp / 'data'), MAX_BYTES)
  out, summary, errors = convert(tmp, [ManifestSource(manifest)],
                                 ConversionOptions(max_bytes=MAX_BYTES))
  with open(os.path.join(tmp, 'report', 'duplicates.jsonl')) as f:
    duplicates = [json.loads(l) for l in f]
  return manifest, good, expected_split, bad, bad_rows, out, summary, errors, duplicates


def test_every_row_is_a_record_or_an_error(converted):
  manifest, good, _, bad, bad_rows, out, summary, errors, _ = converted
  records = [ex for split in SPLITS for ex in read_split(
      os.path.join(out, f'Split-{split}'))]
  assert summary['rows_read'] == 27
  assert summary['rows_read'] == len(records) + len(errors)
  assert summary['records_written'] == len(records) == 12
  assert summary['rows_failed'] == len(errors) == 15
  assert sum(summary['errors_per_reason'].values()) == len(errors)
  image_errors = {e['uri']: e['reason'] for e in errors if e['uri'] in bad}
  assert image_errors == bad
  assert {(e['row'], e['reason']) for e in errors if e['uri'] not in bad} == bad_rows
  for e in errors:
    assert e['source'] == manifest and e['message'] and isinstance(e['row'], int)


def test_every_record_decodes_to_what_it_claims(converted):
  _, good, expected_split, _, _, out, _, _, _ = converted
  for split in SPLITS:
    for ex in read_split(os.path.join(out, f'Split-{split}')):
      uri = feature(ex, 'image/source_id')[0].decode()
      data = feature(ex, 'image/encoded')[0]
      assert data == good[uri]
      shape = tf.io.decode_image(data, expand_animations=False).shape
      assert tuple(feature(ex, k)[0] for k in ('image/height', 'image/width',
                                                'image/channels')) == tuple(shape), uri
      if uri in expected_split:
        assert split == expected_split[uri], uri


def test_specific_images(converted):
  _, _, _, _, _, out, summary, _, _ = converted
  records = collections.defaultdict(list)
  for split in SPLITS:
    for ex in read_split(os.path.join(out, f'Split-{split}')):
      records[feature(ex, 'image/source_id')[0].decode()].append(ex)
  fmt = lambda uri: feature(records[uri][0], 'image/format')[0]  # pylint: disable=unnecessary-lambda-assignment
  dims = lambda uri: tuple(feature(records[uri][0], k)[0] for k in (  # pylint: disable=unnecessary-lambda-assignment
      'image/height', 'image/width', 'image/channels'))
  assert fmt('img/png_named.jpg') == b'png'          # format from the bytes, not the name
  assert dims('img/cmyk.jpg') == (10, 12, 3)         # TensorFlow decodes CMYK to RGB
  assert dims('img/deep16.png') == (9, 7, 1)
  assert dims('img/bilevel.png') == (8, 8, 1)
  assert dims('img/palette.png') == (8, 8, 3)
  assert dims('img/rotated.jpg') == (20, 40, 3)      # stored pixels, EXIF not applied
  anim = feature(records['img/anim.gif'][0], 'image/encoded')[0]
  assert tuple(tf.io.decode_image(anim).shape) == (3, 10, 14, 3)  # every frame kept
  assert feature(records['img/ok.jpg'][0], 'image/class/text') == [b'cat']  # stripped
  assert len(records['img/dup.png']) == 2 and len(records['img/leak.png']) == 2
  assert summary['records_per_label'] == {'cat': 6, 'dog': 6}


def test_duplicates_and_split_leaks_are_reported(converted):
  *_, summary, _, duplicates = converted
  by_uri = {tuple(d['uris']): d for d in duplicates}
  assert set(by_uri) == {('img/dup.png', 'img/dup.png'), ('img/leak.png', 'img/leak.png')}
  assert not by_uri[('img/dup.png', 'img/dup.png')]['cross_split']
  assert by_uri[('img/leak.png', 'img/leak.png')]['cross_split']
  assert sorted(by_uri[('img/leak.png', 'img/leak.png')]['splits']) == ['test', 'train']
  assert summary['duplicates']['groups'] == 2
  assert summary['duplicates']['cross_split_groups'] == 1
  assert summary['duplicates']['extra_records'] == 2


def test_unsupported_formats_convert_to_png_when_asked(tmp_path):
  from images import write_image, write_text
  d = tmp_path / 'data'
  write_image(str(d / 'a.webp'), 'WEBP', 'RGB', 9, 11, seed=1, lossless=True)
  write_image(str(d / 'b.tiff'), 'TIFF', 'RGBA', 5, 4, seed=2)
  manifest = write_text(str(d / 'm.csv'), 'TRAIN,a.webp,x\nTRAIN,b.tiff,y\n')
  out, summary, errors = convert(tmp_path, [ManifestSource(manifest)],
                                 ConversionOptions(convert_unsupported=True))
  assert errors == [] and summary['records_written'] == 2
  records = by_source_id(out, SPLITS)
  for uri, shape in (('a.webp', (9, 11, 3)), ('b.tiff', (5, 4, 4))):
    ex = records[uri][1]
    assert feature(ex, 'image/format') == [b'png']
    data = feature(ex, 'image/encoded')[0]
    assert tuple(tf.io.decode_image(data).shape) == shape
