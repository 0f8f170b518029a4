"""The core Beam conversion on real files, run by real Beam pipelines."""
import json
import os

import apache_beam as beam
import pytest
import tensorflow as tf

from images import write_image, write_text
from runs import SPLITS, convert
from records import by_source_id, feature
from tfrecorder_component.engines.beam.pipeline import ConvertManifests
from tfrecorder_component.options import ConversionOptions, ManifestSource
from tfrecorder_component.record.labels import read_label_map
from tfrecorder_component.record.splits import hash_split


@pytest.fixture
def mixed(tmp_path):
  """A manifest of mixed formats, colour modes, odd paths and ML_USE spellings."""
  d = tmp_path / 'data'
  files = {
      'img/a.jpg': write_image(str(d / 'img/a.jpg'), 'JPEG', 'RGB', 20, 30, seed=1),
      'img/grey.jpg': write_image(str(d / 'img/grey.jpg'), 'JPEG', 'L', 11, 7, seed=2),
      'img/with space, comma.png': write_image(str(d / 'img/with space, comma.png'), 'PNG', 'RGBA',
                                               9, 9, seed=3),
      'img/ünïcødé.png': write_image(str(d / 'img/ünïcødé.png'), 'PNG', 'L', 5, 6, seed=4),
      'img/palette.png': write_image(str(d / 'img/palette.png'), 'PNG', 'P', 8, 8, seed=5),
      'img/anim.gif': write_image(str(d / 'img/anim.gif'), 'GIF', 'P', 10, 12, seed=6),
      'img/pic.bmp': write_image(str(d / 'img/pic.bmp'), 'BMP', 'RGB', 7, 13, seed=7),
      'img/u1.jpg': write_image(str(d / 'img/u1.jpg'), 'JPEG', 'RGB', 8, 8, seed=8),
      'img/u2.png': write_image(str(d / 'img/u2.png'), 'PNG', 'RGB', 8, 8, seed=9),
  }
  manifest = write_text(str(d / 'manifest.csv'), (
      'TRAIN,img/a.jpg,cat\n'
      'train,img/grey.jpg,dog\n'
      'Validation,"img/with space, comma.png",bird\n'
      'TEST,img/ünïcødé.png,cat\n'
      'validate,img/palette.png, dog \n'
      'test,img/anim.gif,cat,bird\n'
      'TRAINING,img/pic.bmp,bird\n'
      'UNASSIGNED,img/u1.jpg,cat\n'
      ',img/u2.png,dog\n'))
  expected_split = {'img/a.jpg': 'train', 'img/grey.jpg': 'train',
                    'img/with space, comma.png': 'eval', 'img/ünïcødé.png': 'test',
                    'img/palette.png': 'eval', 'img/anim.gif': 'test', 'img/pic.bmp': 'train',
                    'img/u1.jpg': hash_split('img/u1.jpg', ConversionOptions().buckets),
                    'img/u2.png': hash_split('img/u2.png', ConversionOptions().buckets)}
  return manifest, files, expected_split


def test_mixed_manifest_becomes_exact_records(tmp_path, mixed):
  manifest, files, expected_split = mixed
  out, summary, errors = convert(tmp_path, [ManifestSource(manifest)])
  assert errors == []
  records = by_source_id(out, SPLITS)
  assert sorted(records) == sorted(files)
  labels = read_label_map(out)
  assert labels == {'bird': 0, 'cat': 1, 'dog': 2}
  for uri, (split, ex) in records.items():
    data = feature(ex, 'image/encoded')[0]
    assert data == files[uri], uri
    decoded = tf.io.decode_image(data, expand_animations=False)
    assert (feature(ex, 'image/height')[0], feature(ex, 'image/width')[0],
            feature(ex, 'image/channels')[0]) == tuple(decoded.shape), uri
    assert split == expected_split[uri], uri
    texts = [t.decode() for t in feature(ex, 'image/class/text')]
    assert feature(ex, 'image/class/label') == [labels[t] for t in texts]
    assert feature(ex, 'image/filename')[0].decode() == os.path.basename(uri)
    assert feature(ex, 'image/key/sha256')[0].decode() == __import__('hashlib').sha256(
        data).hexdigest()
  assert [t.decode() for t in feature(records['img/anim.gif'][1], 'image/class/text')] == [
      'cat', 'bird']
  assert feature(records['img/palette.png'][1], 'image/class/text') == [b'dog']
  assert feature(records['img/pic.bmp'][1], 'image/format') == [b'bmp']
  assert summary['rows_read'] == 9 and summary['records_written'] == 9
  assert sum(summary['records_per_split'].values()) == 9
  with open(os.path.join(out, 'label_map.pbtxt')) as f:
    assert 'name: "bird"\n  id: 0' in f.read()


def test_failed_rows_are_reported_not_lost(tmp_path):
  d = tmp_path / 'data'
  write_image(str(d / 'ok.jpg'))
  write_text(str(d / 'text.jpg'), 'not an image')
  write_text(str(d / 'empty.png'), '')
  os.makedirs(d / 'adir.jpg')
  manifest = write_text(str(d / 'm.csv'), 'TRAIN,ok.jpg,a\nTRAIN,gone.jpg,a\nTRAIN,text.jpg,a\n'
                        'TEST,empty.png,b\nTRAIN,adir.jpg,a\nBOGUS,ok.jpg,a\n')
  out, summary, errors = convert(tmp_path, [ManifestSource(manifest)])
  got = sorted((e['row'], e['uri'], e['reason']) for e in errors)
  assert got == [(2, 'gone.jpg', 'missing'), (3, 'text.jpg', 'not_an_image'),
                 (4, 'empty.png', 'empty'), (5, 'adir.jpg', 'not_a_file'),
                 (6, 'ok.jpg', 'unknown_split')]
  assert all(e['source'] == manifest and e['message'] for e in errors)
  assert summary['rows_read'] == 6 == summary['records_written'] + len(errors)
  assert list(by_source_id(out, ['train'])) == ['ok.jpg']


def test_splits_and_label_ids_are_identical_across_runs_and_runners(tmp_path, mixed):
  manifest, _, _ = mixed
  a, _, _ = convert(tmp_path / 'a', [ManifestSource(manifest)])
  b, _, _ = convert(tmp_path / 'b', [ManifestSource(manifest)], pipeline_args=[
      '--direct_running_mode=multi_processing', '--direct_num_workers=2'])
  ra, rb = by_source_id(a, SPLITS), by_source_id(b, SPLITS)
  assert {k: (s, feature(e, 'image/class/label')) for k, (s, e) in ra.items()} == \
         {k: (s, feature(e, 'image/class/label')) for k, (s, e) in rb.items()}


def test_split_override_and_jsonl_source(tmp_path):
  d = tmp_path / 'data'
  write_image(str(d / 'a.png'), 'PNG')
  manifest = write_text(str(d / 'm.jsonl'), json.dumps({
      'imageGcsUri': 'a.png', 'classificationAnnotation': {'displayName': 'x'},
      'dataItemResourceLabels': {'aiplatform.googleapis.com/ml_use': 'training'}}) + '\n')
  out, summary, _ = convert(tmp_path, [ManifestSource(manifest, split='test')])
  assert summary['records_per_split'] == {'test': 1}
  assert list(by_source_id(out, ['test'])) == ['a.png']
  # The transform writes an empty shard for each split no row went to (as Beam writes an
  # empty PCollection), which readers accept; the run then leaves those splits out.
  assert by_source_id(out, ['train', 'eval']) == {}
  for split in ('train', 'eval'):
    names = os.listdir(os.path.join(out, f'Split-{split}'))
    assert len(names) == 1 and names[0].startswith('data_tfrecord-'), names
  from tfrecorder_component.engines import run  # pylint: disable=g-import-not-at-top
  run.leave_out_empty_splits({s: os.path.join(out, f'Split-{s}') for s in SPLITS},
                             summary['records_per_split'])
  assert sorted(n for n in os.listdir(out) if n.startswith('Split-')) == ['Split-test']
  assert list(by_source_id(out, ['test'])) == ['a.png']


def test_multi_label_rows_and_extra_columns_become_typed_features(tmp_path):
  d = tmp_path / 'data'
  write_image(str(d / 'a.jpg'), seed=1)
  write_image(str(d / 'b.jpg'), seed=2)
  manifest = write_text(str(d / 'm.csv'),
                        'ml_use,image_uri,label_1,label_2,weight,count,photographer,zip\n'
                        'TRAIN,a.jpg,cat,dog,0.5,3,Ann,01234\n'
                        'TRAIN,b.jpg,dog,,2,,Bob,99999\n')
  options = ManifestSource(manifest, feature_types=(('zip', 'string'),))
  out, summary, errors = convert(tmp_path, [options])
  assert errors == []
  records = by_source_id(out, ['train'])
  a, b = records['a.jpg'][1], records['b.jpg'][1]
  assert feature(a, 'image/class/text') == [b'cat', b'dog']
  assert feature(a, 'image/class/label') == [0, 1] and feature(b, 'image/class/label') == [1]
  assert feature(a, 'weight') == [0.5] and feature(b, 'weight') == [2.0]  # inferred float
  assert a.features.feature['weight'].WhichOneof('kind') == 'float_list'
  assert feature(a, 'count') == [3] and 'count' not in b.features.feature  # empty: left out
  assert a.features.feature['count'].WhichOneof('kind') == 'int64_list'
  assert feature(a, 'photographer') == [b'Ann']
  assert feature(a, 'zip') == [b'01234']  # declared string: the leading zero stays
  assert summary['records_per_label'] == {'cat': 1, 'dog': 2}


def test_records_are_written_in_the_stage_that_converts_them(tmp_path):
  """Nothing that grows with the images leaves the Convert stage: the record batches
  are written by the shard writers fused with the conversion (as the engine without
  Beam writes them in the worker that made them), and the stats, errors and box issues
  are counted and spilled there; only combined counts and run files' paths cross the
  runner. A side input or a shuffle between them would make every image's bytes cross
  the runner (gRPC on the multi-process DirectRunner), a per-image CPU cost."""
  from apache_beam.runners.portability.fn_api_runner import fn_runner  # pylint: disable=g-import-not-at-top
  manifest = write_text(str(tmp_path / 'm.csv'), 'TRAIN,a.jpg,cat\n')
  p = beam.Pipeline()
  out = str(tmp_path / 'out')
  _ = p | ConvertManifests([ManifestSource(manifest)],
                           {s: os.path.join(out, f'Split-{s}') for s in SPLITS}, out,
                           str(tmp_path / 'report'))
  _, stages = fn_runner.FnApiRunner().create_stages(p.to_runner_api())
  convert = [s for s in stages if any(t.unique_name.startswith('ConvertManifests/Convert/')
                                      for t in s.transforms)]
  assert len(convert) == 1
  names = {t.unique_name for t in convert[0].transforms}
  for step in [f'ConvertManifests/WriteSplits/Write[{s}]/WriteImpl/WriteBundles' for s in SPLITS] + [
      f'ConvertManifests/Summarize/{tally}/CombinePerKey/Precombine'
      for tally in ('CountStats', 'CountErrors', 'CountBoxIssues', 'FirstSamples')] + [
      'ConvertManifests/WriteReport/FindDuplicates/SpillSortedRuns',
      'ConvertManifests/WriteReport/WriteErrors/SpillSortedRuns',
      'ConvertManifests/WriteReport/WriteBoxIssues/SpillSortedRuns']:
    assert step in names, step
