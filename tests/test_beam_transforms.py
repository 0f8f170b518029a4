"""Unit tests of the Beam transforms, one transform a test, on real manifests and images.

Each test feeds one transform of `tfrecorder_component.engines.beam` small real inputs written
into tmp_path and checks its outputs inside the pipeline with Beam's `assert_that`, as
TFX tests its ExampleGen executors; the last tests run `steps.row.convert_row` without Beam.
"""
import hashlib
import json
import os
import random
from typing import Dict

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import BeamAssertException, assert_that, equal_to

from images import write_image, write_text
from tfrecorder_component.record import example_proto
from tfrecorder_component.record import labels as labels_lib
from tfrecorder_component.steps import row as row_lib
from tfrecorder_component.steps import duplicates
from tfrecorder_component.steps import report as report_lib
from tfrecorder_component.steps.outputs import BOX_ISSUES, ERRORS
from tfrecorder_component.engines.beam import jsonl
from tfrecorder_component.engines.beam import report
from tfrecorder_component.io import sorted_runs
from tfrecorder_component.io import tfrecord
from tfrecorder_component.steps.chunks import pack_chunk, unpack_chunk
from tfrecorder_component.engines.beam.convert_batches import ConvertBatches
from tfrecorder_component.engines.beam.vocabulary import LabelVocabulary
from tfrecorder_component.engines.beam.duplicates import FindDuplicates
from tfrecorder_component.engines.beam.read import ReadManifestRows
from tfrecorder_component.engines.beam.report import Summarize
from tfrecorder_component.engines.beam import write as write_lib
from tfrecorder_component.engines.beam.write import WriteLabelFiles, WriteSplits
from tfrecorder_component.errors import RowError
from tfrecorder_component.steps.shards import plan_shards
from tfrecorder_component.images.boxes import BoxIssue
from tfrecorder_component.manifest import ManifestRow, ObjectBox
from tfrecorder_component.options import ConversionOptions, ManifestSource
from tfrecorder_component.steps.row import RecordStat
from tfrecorder_component.images.geometry import size_bucket
from tfrecorder_component.record.splits import hash_split

OPTIONS = ConversionOptions()
SPLIT_NAMES = ('train', 'eval', 'test')


def row(d, uri, labels=(), split='train', objects=None, number=1):
  """A ManifestRow of an image under folder `d`, as a manifest in `d` would give it."""
  return ManifestRow(source=os.path.join(d, 'm.csv'), row=number, image_uri=uri,
                     resolved_uri=os.path.join(d, uri), labels=tuple(labels), split=split,
                     objects=objects)


def chunk_of(d, *rows):
  """A Chunk of `rows`, written under folder `d` as ReadManifestRows writes them."""
  return pack_chunk(list(rows), os.path.join(d, 'chunks'))


def matches(expected):
  """A matcher: exactly one element per expected dict, holding at least its items."""
  def check(actual):
    left = list(actual)
    for e in expected:  # each expected dict takes the first element left that holds it
      held = next((i for i, a in enumerate(left)
                   if all(k in a and a[k] == v for k, v in e.items())), None)
      if held is None:
        break
      del left[held]
    else:
      if not left:
        return
    raise BeamAssertException(f'expected elements holding {expected}, got {actual}')
  return check


def features(serialized):
  """(source id, class labels, class texts, object labels, object texts) of a record."""
  f = example_proto.Example.FromString(serialized).features.feature
  return (f['image/source_id'].bytes_list.value[0].decode(),
          list(f['image/class/label'].int64_list.value),
          [t.decode() for t in f['image/class/text'].bytes_list.value],
          list(f['image/object/class/label'].int64_list.value),
          [t.decode() for t in f['image/object/class/text'].bytes_list.value])


def classes(serialized):
  """(source id, class labels, class texts) of a record; no slice, which Beam's type
  inference misreads as the whole tuple."""
  source_id, labels, texts, _, _ = features(serialized)
  return source_id, labels, texts


def rows_of(items):
  """The fields of the rows among a chunk's items."""
  return (items | 'Rows' >> beam.Filter(lambda i: isinstance(i, ManifestRow))
          | 'Fields' >> beam.Map(lambda r: (r.source, r.row, r.image_uri, r.resolved_uri,
                                            r.labels, r.split, r.objects)))


def errors_of(items):
  """The error records among a chunk's items."""
  return items | 'Errors' >> beam.Filter(lambda i: isinstance(i, dict))


# --- ReadManifestRows -----------------------------------------------------------------

def test_read_manifest_rows_keeps_good_rows_and_reports_the_bad_one(tmp_path):
  d = str(tmp_path)
  manifest = write_text(os.path.join(d, 'm.csv'), 'ml_use,image_uri,label\n'
                        'TRAIN,a.jpg,cat\nTEST,b.png,dog\nTRAIN,c.jpg,cat,extra\n,d.jpg,10\n')
  with BeamTestPipeline() as p:
    chunks = p | ReadManifestRows([ManifestSource(manifest)], os.path.join(d, 'chunks'))
    items = chunks | beam.FlatMap(unpack_chunk)
    assert_that(rows_of(items), equal_to([
        (manifest, 2, 'a.jpg', os.path.join(d, 'a.jpg'), ('cat',), 'train', None),
        (manifest, 3, 'b.png', os.path.join(d, 'b.png'), ('dog',), 'test', None),
        (manifest, 5, 'd.jpg', os.path.join(d, 'd.jpg'), ('10',), None, None)]), label='rows')
    assert_that(chunks | beam.Map(lambda c: (c[0], c[1])),
                equal_to([(('10', 'cat', 'dog'), 'classification')]), label='chunk_header')
    assert_that(errors_of(items), matches([
        {'source': manifest, 'row': 4, 'uri': 'c.jpg', 'reason': 'bad_row'}]), label='errors')


def test_read_manifest_rows_merges_detection_rows_per_image(tmp_path):
  """Rows of one image merge into one row, objects in manifest row order; rows of one
  image with different ML_USE values are one conflicting_split error and no row."""
  d = str(tmp_path)
  manifest = write_text(os.path.join(d, 'boxes.csv'), (
      'TRAIN,img.jpg,dog,0.5,0.5,,,0.9,0.9,,\n'
      'TRAIN,other.jpg,cat,0.1,0.1,,,0.2,0.2,,\n'
      'TRAIN,img.jpg,cat,0.1,0.1,,,0.4,0.4,,\n'
      'TRAIN,x.jpg,cat,0.1,0.1,,,0.4,0.4,,\n'
      'TEST,x.jpg,cat,0.2,0.2,,,0.4,0.4,,\n'))
  dog, cat = ObjectBox('dog', 0.5, 0.5, 0.9, 0.9), ObjectBox('cat', 0.1, 0.1, 0.4, 0.4)
  with BeamTestPipeline() as p:
    items = (p | ReadManifestRows([ManifestSource(manifest, format='automl_detection_csv')],
                                  os.path.join(d, 'chunks'))
             | beam.FlatMap(unpack_chunk))
    assert_that(rows_of(items), equal_to([
        (manifest, 1, 'img.jpg', os.path.join(d, 'img.jpg'), ('dog', 'cat'), 'train',
         (dog, cat)),
        (manifest, 2, 'other.jpg', os.path.join(d, 'other.jpg'), ('cat',), 'train',
         (ObjectBox('cat', 0.1, 0.1, 0.2, 0.2),))]), label='rows')
    assert_that(errors_of(items), matches([
        {'source': manifest, 'row': 4, 'uri': 'x.jpg', 'reason': 'conflicting_split'}]),
                label='errors')


# --- LabelVocabulary ------------------------------------------------------------------

def test_label_vocabulary_orders_integer_labels_numerically_else_as_text(tmp_path):
  d = str(tmp_path)
  integers = [chunk_of(d, row(d, 'a.jpg', ['10']), row(d, 'b.jpg', ['2'])),
              chunk_of(d, row(d, 'c.jpg', ['3', '10']))]
  mixed = [chunk_of(d, row(d, 'a.jpg', ['10'])), chunk_of(d, row(d, 'b.jpg', ['2', 'cat']))]
  failed = {'source': 'm.csv', 'row': 9, 'uri': 'x.jpg', 'reason': 'bad_row', 'message': ''}
  with_failed = [chunk_of(d, failed), chunk_of(d, row(d, 'a.jpg', ['cat']), failed)]
  boxes = [chunk_of(d, row(d, 'a.jpg', objects=(ObjectBox('zebra', 0, 0, 1, 1),
                                                 ObjectBox('ant', 0, 0, 1, 1))))]
  with BeamTestPipeline() as p:
    for name, chunks, expected, order in (
        ('integers', integers, {'labels': ['2', '3', '10'], 'task': 'classification'}, 'auto'),
        # label_order='text': as Keras and TFDS number class folders
        ('as text', integers, {'labels': ['10', '2', '3'], 'task': 'classification'}, 'text'),
        ('mixed', mixed, {'labels': ['10', '2', 'cat'], 'task': 'classification'}, 'auto'),
        ('boxes', boxes, {'labels': ['ant', 'zebra'], 'task': 'detection'}, 'auto'),
        ('failed rows', with_failed, {'labels': ['cat'], 'task': 'classification'}, 'auto'),
        ('empty', [], {'labels': [], 'task': 'classification'}, 'auto')):
      vocabulary = (p | f'Create[{name}]' >> beam.Create(chunks)
                    | f'Vocabulary[{name}]' >> LabelVocabulary(label_order=order)
                    | f'Ids[{name}]' >> beam.Map(lambda v: {k: v[k] for k in ('labels', 'task')}))
      assert_that(vocabulary, equal_to([expected]), label=name)


def test_label_vocabulary_keeps_given_and_source_ids(tmp_path):
  """A given map's ids stay (new labels appended after, or failing their rows when the
  map is closed); COCO category ids stay, moved up by one for a source numbering from 0
  in detection."""
  d = str(tmp_path)
  span2 = [chunk_of(d, row(d, 'a.jpg', ['cat']), row(d, 'b.jpg', ['aardvark']))]
  given = labels_lib.GivenLabelMap('span1', (('cat', 0), ('dog', 1), ('emu', 2)))
  box = lambda label, i: ObjectBox(label, 0, 0, 1, 1, source_id=i)
  coco = [chunk_of(d, row(d, 'a.jpg', objects=(box('person', 1), box('car', 3)))),
          chunk_of(d, row(d, 'b.jpg', objects=(box('zebra', 24),)))]
  from_zero = [chunk_of(d, row(d, 'a.jpg', objects=(box('bg-thing', 0), box('car', 2))))]
  with BeamTestPipeline() as p:
    for name, chunks, vocabulary, expected in (
        ('appended', span2, LabelVocabulary(given, append_new_labels=True),
         {'labels': ['cat', 'dog', 'emu', 'aardvark'], 'ids': [0, 1, 2, 3],
          'appended': ['aardvark'], 'unknown': []}),
        ('closed', span2, LabelVocabulary(given),
         {'labels': ['cat', 'dog', 'emu'], 'ids': [0, 1, 2], 'appended': [],
          'unknown': ['aardvark']}),
        ('coco', coco, LabelVocabulary(),
         {'labels': ['person', 'car', 'zebra'], 'ids': [1, 3, 24], 'appended': [],
          'unknown': []}),
        ('from zero', from_zero, LabelVocabulary(),
         {'labels': ['bg-thing', 'car'], 'ids': [1, 3], 'appended': [], 'unknown': []})):
      out = (p | f'Create[{name}]' >> beam.Create(chunks) | f'Vocabulary[{name}]' >> vocabulary
             | f'Ids[{name}]' >> beam.Map(lambda v: {k: v[k] for k in ('labels', 'ids',
                                                                       'appended', 'unknown')}))
      assert_that(out, equal_to([expected]), label=name)


def test_label_vocabulary_refuses_classification_and_detection_together(tmp_path):
  d = str(tmp_path)
  chunks = [chunk_of(d, row(d, 'a.jpg', ['cat'])),
            chunk_of(d, row(d, 'b.jpg', objects=(ObjectBox('dog', 0, 0, 1, 1),)))]
  with pytest.raises(Exception, match='mix classification and detection'):
    with BeamTestPipeline() as p:
      _ = p | beam.Create(chunks) | LabelVocabulary()


# --- ConvertBatches -------------------------------------------------------------------

def convert(chunks, vocabulary):
  """Runs ConvertBatches; returns the pipeline's outputs checked by the caller's asserts."""
  p = BeamTestPipeline()
  out = (p | 'Chunks' >> beam.Create(chunks)) | ConvertBatches(
      beam.pvalue.AsSingleton(p | 'Vocabulary' >> beam.Create([vocabulary])), OPTIONS)
  return p, out


def test_convert_batches_classification_records_errors_and_stats(tmp_path):
  d = str(tmp_path)
  data = {name: write_image(os.path.join(d, name), fmt, seed=seed)
          for name, fmt, seed in (('a.jpg', 'JPEG', 1), ('b.png', 'PNG', 2), ('u.jpg', 'JPEG', 3))}
  u_split = hash_split('u.jpg', OPTIONS.buckets)
  unparsed = {'source': os.path.join(d, 'm.csv'), 'row': 5, 'uri': 'x.jpg',
              'reason': 'bad_row', 'message': 'a row that failed to parse rides in the chunk'}
  chunk = chunk_of(d, row(d, 'a.jpg', ['cat'], number=1),
                   row(d, 'b.png', ['dog', 'cat'], 'test', number=2),
                   row(d, 'gone.jpg', ['cat'], number=3), unparsed,
                   row(d, 'u.jpg', ['dog'], None, number=4))
  p, out = convert([chunk], {'labels': ['cat', 'dog'], 'ids': [0, 1], 'task': 'classification'})
  assert_that(out.records | beam.FlatMap(lambda kv: [(kv[0], classes(r)) for r in kv[1]]),
              equal_to([('train', ('a.jpg', [0], ['cat'])),
                        ('test', ('b.png', [1, 0], ['dog', 'cat'])),
                        (u_split, ('u.jpg', [1], ['dog']))]), label='records')
  assert_that(out['errors'], matches([{'source': os.path.join(d, 'm.csv'), 'row': 3,
                                       'uri': 'gone.jpg', 'reason': 'missing'}, unparsed]),
              label='errors')
  sha = {k: hashlib.sha256(v).hexdigest() for k, v in data.items()}
  assert_that(out['stats'] | beam.FlatMap(lambda s: [(t.split, t.labels, t.uri, t.sha256)
                                                     for t in s]),
              equal_to([('train', ('cat',), 'a.jpg', sha['a.jpg']),
                        ('test', ('dog', 'cat'), 'b.png', sha['b.png']),
                        (u_split, ('dog',), 'u.jpg', sha['u.jpg'])]), label='stats')
  assert_that(out['box_issues'], equal_to([]), label='box_issues')
  p.run().wait_until_finish()


def test_convert_batches_detection_reports_dropped_boxes(tmp_path):
  d = str(tmp_path)
  write_image(os.path.join(d, 'a.jpg'), height=12, width=16)
  objects = (ObjectBox('dog', 0.1, 0.1, 0.5, 0.5), ObjectBox('cat', 0.3, 0.1, 0.3, 0.9))
  p, out = convert([chunk_of(d, row(d, 'a.jpg', ['dog', 'cat'], objects=objects, number=7))],
                   {'labels': ['cat', 'dog'], 'ids': [1, 2], 'task': 'detection'})
  assert_that(out.records | beam.FlatMap(lambda kv: [(kv[0], features(r)) for r in kv[1]]),
              equal_to([('train', ('a.jpg', [], [], [2], ['dog']))]), label='records')
  assert_that(out['box_issues'], equal_to([{
      'source': os.path.join(d, 'm.csv'), 'row': 7, 'uri': 'a.jpg', 'index': 1, 'label': 'cat',
      'box': [0.3, 0.1, 0.3, 0.9], 'action': 'dropped', 'reason': 'empty'}]), label='issues')
  assert_that(out['stats'] | beam.FlatMap(lambda s: [(t.labels, t.objects) for t in s]),
              equal_to([(('dog',), ('dog',))]), label='stats')
  assert_that(out['errors'], equal_to([]), label='errors')
  p.run().wait_until_finish()


# --- Summarize and FindDuplicates -----------------------------------------------------

def stat(split, labels, sha, uri, objects=()):
  keys = ['image/encoded\tbytes\t1', 'image/class/label\tint64\t' + '1n'[len(labels) > 1]]
  if objects:
    keys.append('image/object/bbox/xmin\tfloat\tn')
  return RecordStat(split, tuple(labels), sha, uri, tuple(objects), 'jpeg', '< 64 px',
                    '\n'.join(sorted(keys)))


def test_summarize_counts_records_labels_errors_and_box_issues():
  """The four outputs, each combined where it is made, give one Tally: its counts, the
  summary's; the first failed rows and box issues by (source, row[, box]), whichever
  bundle saw them; the first samples of each label by uri."""
  stats = [[stat('train', ['cat'], 'a' * 64, 'a.jpg'), stat('test', ['cat', 'dog'], 'b' * 64,
                                                              'b.jpg')],
           [stat('train', ['dog'], 'c' * 64, 'c.jpg', objects=['dog', 'dog'])]]
  errors = [{'source': 'm.csv', 'row': 9, 'reason': 'missing'},
            {'source': 'm.csv', 'row': 2, 'reason': 'bad_row'},
            {'source': 'a.csv', 'row': 5, 'reason': 'missing'}]
  issues = [{'source': 'm.csv', 'row': 3, 'index': 1, 'action': 'dropped', 'reason': 'empty'},
            {'source': 'm.csv', 'row': 3, 'index': 0, 'action': 'clipped', 'reason': 'clipped'},
            {'source': 'm.csv', 'row': 1, 'index': 4, 'action': 'dropped', 'reason': 'empty'}]
  samples = [('cat', ('b.jpg', b'B')), ('dog', ('c.jpg', b'C')), ('cat', ('a.jpg', b'A'))]
  with BeamTestPipeline() as p:
    tally = ((p | 'Stats' >> beam.Create(stats), p | 'Errors' >> beam.Create(errors),
              p | 'Issues' >> beam.Create(issues), p | 'Samples' >> beam.Create(samples))
             | Summarize())
    found = tally | beam.Map(lambda t: (report_lib.summary(t.counts), t.first(ERRORS),
                                        t.first(BOX_ISSUES), t.first_samples()))
    assert_that(found, equal_to([({
        'rows_read': 6, 'records_written': 3, 'rows_failed': 3, 'rows_left_out': {},
        'records_per_split': {'test': 1, 'train': 2},
        'records_per_label': {'cat': 2, 'dog': 2},
        'errors_per_reason': {'bad_row': 1, 'missing': 2},
        'objects_written': 2, 'objects_per_label': {'dog': 2},
        'box_issues': {'clipped:clipped': 1, 'dropped:empty': 2},
        'labels_per_split': {'test': {'cat': 1, 'dog': 1}, 'train': {'cat': 1, 'dog': 1}},
        'image_formats': {'jpeg': 3}, 'image_sizes': {'< 64 px': 3},
        'records_split_by_hash': 0,
        # the records' keys: in every record or not, with one value in every record or not
        'features': {
            'image/class/label': {'type': 'int64', 'records': 3, 'scalar': False},
            'image/encoded': {'type': 'bytes', 'records': 3, 'scalar': True},
            'image/object/bbox/xmin': {'type': 'float', 'records': 1, 'scalar': False}},
    }, [errors[2], errors[1], errors[0]], [issues[2], issues[1], issues[0]],
        {'cat': [('a.jpg', b'A'), ('b.jpg', b'B')], 'dog': [('c.jpg', b'C')]})]))


# --- WriteSortedJsonLines -------------------------------------------------------------

def test_sorted_json_lines_are_in_row_order_across_many_runs_and_bundles(tmp_path):
  """3,000 error records in shuffled order, runs of 50 lines: the file lists them by
  (source, row), rows without a number first, sources as text (b.csv after a.csv and
  before ab.csv), equal keys by line; the runs are removed; no record, an empty file."""
  rng = random.Random(7)
  records = [{'source': rng.choice(['a.csv', 'b.csv', 'ab.csv', 'dossier/é.csv']),
              'row': rng.choice([None, rng.randrange(100000)]), 'uri': f'{i}.jpg',
              'reason': 'missing', 'message': '猫'} for i in range(3000)]
  path, empty = str(tmp_path / 'errors.jsonl'), str(tmp_path / 'none.jsonl')
  with BeamTestPipeline() as p:
    key = lambda e: jsonl.row_key(e['source'], e['row'])
    _ = (p | 'Records' >> beam.Create(records) | 'Spread' >> beam.Reshuffle()
         | 'Write' >> jsonl.WriteSortedJsonLines(path, key, str(tmp_path / 'runs'), run_lines=50))
    _ = (p | 'NoRecords' >> beam.Create([]) | 'WriteNone' >> jsonl.WriteSortedJsonLines(
        empty, key, str(tmp_path / 'no-runs')))
  lines = [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in records]
  expected = sorted(lines, key=lambda l: (json.loads(l)['source'].encode(),
                                          -1 if json.loads(l)['row'] is None else
                                          json.loads(l)['row'], l.encode()))
  with open(path, encoding='utf-8') as f:
    assert f.read() == ''.join(l + '\n' for l in expected)
  assert open(empty, encoding='utf-8').read() == ''
  assert not os.path.exists(tmp_path / 'runs') and not os.path.exists(tmp_path / 'no-runs')


def test_find_duplicates_groups_equal_hashes_and_flags_cross_split(tmp_path):
  same, inside, unique = 'ab' * 32, '0f' * 32, ['cd' * 32, 'ce' * 32, '12' * 32]
  stats = [[stat('train', ['cat'], same, 'a.jpg'), stat('train', [], inside, 'x.jpg'),
            stat('train', [], unique[0], 'u0.jpg')],
           [stat('test', ['cat'], same, 'copy.jpg'), stat('train', [], inside, 'y.jpg'),
            stat('eval', [], unique[1], 'u1.jpg'), stat('test', [], unique[2], 'u2.jpg')],
           [stat('valid-ation', ['cat'], same, 'dossier/élan 猫.jpg')]]
  with BeamTestPipeline() as p:
    groups = (p | 'Stats' >> beam.Create(stats)
              | 'Dups' >> FindDuplicates(str(tmp_path / 'index')))
    assert_that(groups, equal_to([
        {'sha256': same, 'uris': ['a.jpg', 'copy.jpg', 'dossier/élan 猫.jpg'],
         'splits': ['train', 'test', 'valid-ation'], 'cross_split': True},
        {'sha256': inside, 'uris': ['x.jpg', 'y.jpg'], 'splits': ['train', 'train'],
         'cross_split': False}]), label='groups')
    none = (p | 'Unique' >> beam.Create([[stat('train', [], h, f'{h[:2]}.jpg')] for h in unique])
            | 'NoDups' >> FindDuplicates(str(tmp_path / 'none')))
    assert_that(none, equal_to([]), label='unique')
  assert not os.path.exists(tmp_path / 'index') and not os.path.exists(tmp_path / 'none')


def test_find_duplicates_merges_many_sorted_runs_over_many_hash_ranges(tmp_path):
  """Runs of 7 entries, merge ranges of about 300 bytes: 3,000 records spill about 430
  runs and merge in 256 ranges; the groups are those a dict of every hash finds."""
  rng = random.Random(5)
  digests = [f'{rng.getrandbits(256):064x}' for _ in range(2000)]
  records = [(digests[rng.randrange(len(digests))], f'img/{i}.jpg', ('train', 'test')[i % 2])
             for i in range(3000)]
  expected: Dict[str, list] = {}
  for sha, uri, split in records:
    expected.setdefault(sha, []).append((uri, split))
  with BeamTestPipeline() as p:
    groups = (p | beam.Create([[stat(split, [], sha, uri) for sha, uri, split in
                                records[i:i + 40]] for i in range(0, len(records), 40)])
              | FindDuplicates(str(tmp_path / 'index'), run_entries=7, range_bytes=300))
    assert_that(groups, equal_to([duplicates.describe(sha, members)
                                  for sha, members in expected.items() if len(members) > 1]))
  assert not os.path.exists(tmp_path / 'index')


def test_duplicate_counts_keep_the_first_groups_by_uri_not_every_group():
  """summary.json's duplicate counts over 500 groups: the counts of all, and the ten
  groups first by URI, kept while combining (at most twice ten a bundle)."""
  rng = random.Random(3)
  groups = [{'sha256': f'{rng.getrandbits(256):064x}',
             'uris': sorted(f'img/{rng.randrange(10**6)}.jpg' for _ in range(rng.randint(2, 4))),
             'cross_split': rng.random() < 0.3} for _ in range(500)]
  with BeamTestPipeline() as p:
    counts = (p | beam.Create(groups) | beam.Reshuffle()
              | beam.CombineGlobally(report._DuplicateCountsFn()))  # pylint: disable=protected-access
    assert_that(counts, equal_to([{
        'groups': 500, 'extra_records': sum(len(g['uris']) - 1 for g in groups),
        'cross_split_groups': sum(g['cross_split'] for g in groups),
        'first': sorted(groups, key=lambda g: g['uris'])[:10],
        'source_id_groups': 0, 'source_id_groups_in_a_split': 0, 'first_source_ids': []}]))


def test_a_run_file_lists_its_buckets_and_reads_any_slice_across_blocks(tmp_path,
                                                                       monkeypatch):
  monkeypatch.setattr(sorted_runs, 'BLOCK_BYTES', 50)  # entries straddle the blocks
  entries = [duplicates.entry(stat('train', [], f'{b:02x}' + f'{k:02x}' * 31, f'u{b}-{k}.jpg'))
             for b in (0, 0, 7, 200, 255) for k in range(2)]
  path = str(tmp_path / 'run')
  duplicates.write_run(path, list(reversed(entries)))
  assert list(duplicates.read_slice(path, 0, 256)) == sorted(entries)
  assert list(duplicates.read_slice(path, 1, 200)) == sorted(e for e in entries if e[0] == 7)
  assert list(duplicates.read_slice(path, 255, 256)) == sorted(
      e for e in entries if e[0] == 255)
  assert list(duplicates.read_slice(path, 8, 200)) == []


# --- WriteSplits, RenumberLabels, WriteLabelFiles -------------------------------------

def classification_record(d, name, label, label_id, seed):
  write_image(os.path.join(d, name), seed=seed)
  return row_lib.convert_row(row(d, name, [label]), {label: label_id}, OPTIONS).record


def write_splits(tmp_path, records):
  split_dirs = {s: str(tmp_path / 'out' / f'Split-{s}') for s in SPLIT_NAMES}

  def exist(paths):
    if len(paths) != 3 or not all(os.path.isfile(path) for path in paths):
      raise BeamAssertException(f'expected one existing shard a split, got {paths}')

  with BeamTestPipeline() as p:
    assert_that(p | beam.Create(records) | WriteSplits(split_dirs), exist)
  return {s: [r for path in sorted(os.listdir(d)) for r in tfrecord.read_shard(os.path.join(d, path))]
          for s, d in split_dirs.items()}, split_dirs


def test_write_splits_writes_each_split_into_its_folder(tmp_path):
  d = str(tmp_path)
  a, b, c = (classification_record(d, f'{n}.jpg', 'dog', 1, seed) for seed, n in enumerate('abc'))
  written, _ = write_splits(tmp_path, [('train', [a, b]), ('test', [c])])
  assert written == {'train': [a, b], 'eval': [], 'test': [c]}


def test_plan_shards_spreads_records_evenly_in_order():
  """Shard k takes records [k*n//N, (k+1)*n//N) of the bundles in path order."""
  bundles = [('b', 3, 300), ('a', 4, 400), ('c', 0, 0)]  # 7 records, sorted by path: a, b
  assert plan_shards(bundles, num_shards=3) == [
      [('a', 0, 2)], [('a', 2, 4)], [('b', 0, 3)]]
  assert plan_shards(bundles, num_shards=2) == [[('a', 0, 3)], [('a', 3, 4), ('b', 0, 3)]]
  # By size: 700 bytes over 250-byte shards is 3 shards; never fewer than one.
  assert len(plan_shards(bundles, shard_bytes=250)) == 3
  assert plan_shards([], shard_bytes=250) == [[]]
  assert plan_shards([], num_shards=2) == [[], []]  # an empty split still has its shards


def test_write_splits_with_num_shards_spreads_records_and_leaves_no_temporary_files(tmp_path):
  d = str(tmp_path)
  records = [classification_record(d, f'{i}.jpg', 'dog', 1, i) for i in range(7)]
  split_dirs = {s: str(tmp_path / 'out' / f'Split-{s}') for s in SPLIT_NAMES}
  with BeamTestPipeline() as p:
    written = (p | beam.Create([('train', records[:3]), ('train', records[3:]),
                                ('test', records[:1])])
               | WriteSplits(split_dirs, num_shards=3))
    assert_that(written | beam.Map(os.path.basename), equal_to(
        [f'data_tfrecord-0000{k}-of-00003.gz' for k in range(3)] * 3))
  counts = {s: [len(list(tfrecord.read_shard(os.path.join(d, n)))) for n in sorted(os.listdir(d))]
            for s, d in split_dirs.items()}
  assert counts == {'train': [2, 2, 3], 'eval': [0, 0, 0], 'test': [0, 0, 1]}
  train = [r for n in sorted(os.listdir(split_dirs['train']))
           for r in tfrecord.read_shard(os.path.join(split_dirs['train'], n))]
  assert sorted(train) == sorted(records)
  assert sorted(os.listdir(tmp_path / 'out')) == [f'Split-{s}' for s in sorted(SPLIT_NAMES)]


def test_write_label_files_writes_the_vocabulary_one_line_per_id(tmp_path):
  """labels.txt line k is id first + k, an empty line an id no label has (a COCO map
  with gaps), so TextFileInitializer's line numbers are ids."""
  with BeamTestPipeline() as p:
    _ = (p | beam.Create([{'labels': ['dog', 'cat'], 'ids': [1, 3], 'task': 'detection'}])
         | WriteLabelFiles(str(tmp_path)))
  assert (tmp_path / 'labels.txt').read_text() == 'dog\n\ncat\n'
  assert (tmp_path / 'label_map.pbtxt').read_text() == (
      'item {\n  name: "dog"\n  id: 1\n}\nitem {\n  name: "cat"\n  id: 3\n}\n')


# --- steps.row.convert_row, without Beam -----------------------------------------------

def test_convert_row_classification(tmp_path):
  d = str(tmp_path)
  data = write_image(os.path.join(d, 'a.jpg'), height=12, width=16)
  out = row_lib.convert_row(row(d, 'a.jpg', ['dog'], 'eval'), {'cat': 0, 'dog': 1}, OPTIONS)
  assert out.split == 'eval' and out.box_issues == [] and out.objects is None
  assert out.stat == RecordStat('eval', ('dog',), hashlib.sha256(data).hexdigest(), 'a.jpg', (),
                                'jpeg', size_bucket(16, 12), '\n'.join([
                                    'image/channels\tint64\t1', 'image/class/label\tint64\t1',
                                    'image/class/text\tbytes\t1', 'image/encoded\tbytes\t1',
                                    'image/filename\tbytes\t1', 'image/format\tbytes\t1',
                                    'image/height\tint64\t1', 'image/key/sha256\tbytes\t1',
                                    'image/source_id\tbytes\t1', 'image/width\tint64\t1']))
  assert classes(out.record) == ('a.jpg', [1], ['dog'])
  assert (out.data, out.bytes_read, out.converted) == (data, len(data), False)


def test_convert_row_detection_drops_a_zero_width_box(tmp_path):
  d = str(tmp_path)
  write_image(os.path.join(d, 'a.jpg'))
  objects = (ObjectBox('cat', 0.3, 0.1, 0.3, 0.9), ObjectBox('dog', 0.1, 0.2, 0.5, 0.6))
  out = row_lib.convert_row(row(d, 'a.jpg', ['cat', 'dog'], objects=objects),
                               {'cat': 1, 'dog': 2}, OPTIONS)
  assert out.box_issues == [BoxIssue(0, 'cat', (0.3, 0.1, 0.3, 0.9), 'dropped', 'empty')]
  assert [(o.label, o.class_id) for o in out.objects] == [('dog', 2)]
  assert out.objects[0].box == pytest.approx((0.1, 0.2, 0.5, 0.6))
  assert (out.stat.labels, out.stat.objects) == (('dog',), ('dog',))
  assert features(out.record) == ('a.jpg', [], [], [2], ['dog'])


def test_convert_row_missing_image_raises_row_error(tmp_path):
  with pytest.raises(RowError) as e:
    row_lib.convert_row(row(str(tmp_path), 'gone.jpg', ['cat']), {'cat': 0}, OPTIONS)
  assert e.value.reason == 'missing'


def test_write_splits_spreads_records_over_many_temporary_files(tmp_path, monkeypatch):
  """Each batch in its own temporary file: the shards still take records evenly."""
  monkeypatch.setattr(write_lib, 'TEMP_FILE_BYTES', 1)
  d = str(tmp_path)
  records = [classification_record(d, f'{i}.jpg', 'dog', 1, i) for i in range(7)]
  split_dirs = {s: str(tmp_path / 'out' / f'Split-{s}') for s in SPLIT_NAMES}
  with BeamTestPipeline() as p:
    _ = (p | beam.Create([('train', records[i:i + 2]) for i in range(0, 7, 2)])
         | WriteSplits(split_dirs, num_shards=3))
  train = [list(tfrecord.read_shard(os.path.join(split_dirs['train'], n)))
           for n in sorted(os.listdir(split_dirs['train']))]
  assert [len(s) for s in train] == [2, 2, 3]
  assert sorted(r for s in train for r in s) == sorted(records)
