"""Component, spec and artifact type: what a pipeline author and a compiler see."""
import glob
import gzip
import io
import json
import os
import re

import pytest
from PIL import Image
from tfx import v1 as tfx
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec
from tfx.proto import example_gen_pb2, range_config_pb2
from tfx.types import standard_artifacts
from tfx.utils import proto_utils

from images import encode, make_image, write_image, write_text
from records import by_source_id, feature
from tfrecorder_component import HTML, ConversionReportPage, ImageExampleGen, ImageManifest
from tfrecorder_component.io.tfrecord import read_shard
from tfrecorder_component.adapters.component import executor, spec
from tfrecorder_component.adapters.component.types import ConversionReport
from tfrecorder_component.images.transform import ImageTransform
from tfrecorder_component.record.example import uri_number


@pytest.mark.parametrize('artifact_type', [ImageManifest, ConversionReport])
def test_artifact_types_are_vertex_compatible(artifact_type):
  assert re.fullmatch(r'[a-z][a-z0-9_]*\.[A-Z][A-Za-z0-9]*', artifact_type.TYPE_NAME)
  assert not getattr(artifact_type, 'PROPERTIES', None)


def test_component_with_manifest_channel():
  importer = tfx.dsl.Importer(source_uri='/data/m.csv', artifact_type=ImageManifest)
  gen = ImageExampleGen(manifest=importer.outputs['result'], max_error_ratio=0.1)
  assert gen.inputs['manifest'].type is ImageManifest
  assert gen.outputs['examples'].type is standard_artifacts.Examples
  assert gen.outputs['report'].type is ConversionReport
  assert gen.exec_properties['max_error_ratio'] == 0.1
  assert gen.exec_properties['input_base'] is None
  output_config = proto_utils.json_to_proto(gen.exec_properties['output_config'],
                                            example_gen_pb2.Output())
  assert [s.name for s in output_config.split_config.splits] == [
      'train', 'eval', 'test']
  assert gen.executor_spec.executor_class is executor.Executor
  assert isinstance(gen.executor_spec, executor_spec.BeamExecutorSpec)


def test_component_with_input_base_and_configs():
  input_config = example_gen_pb2.Input(splits=[
      example_gen_pb2.Input.Split(name='train', pattern='span-{SPAN}/train/*'),
      example_gen_pb2.Input.Split(name='eval', pattern='span-{SPAN}/eval/*')])
  gen = ImageExampleGen(input_base='/data', input_config=input_config)
  assert gen.exec_properties['input_base'] == '/data'
  assert proto_utils.json_to_proto(gen.exec_properties['input_config'],
                                   example_gen_pb2.Input()) == input_config
  assert gen.inputs.get('manifest') is None


def test_input_base_makes_a_file_based_example_gen_with_the_same_identity():
  # KubeflowV2DagRunner gives the span driver hook to FileBasedExampleGens only.
  importer = tfx.dsl.Importer(source_uri='/data/m.csv', artifact_type=ImageManifest)
  by_manifest = ImageExampleGen(importer.outputs['result'])
  by_input_base = ImageExampleGen(input_base='/data')
  positional = ImageExampleGen(None, '/data')
  assert not isinstance(by_manifest, FileBasedExampleGen)
  for gen in (by_input_base, positional):
    assert isinstance(gen, FileBasedExampleGen) and isinstance(gen, ImageExampleGen)
    assert gen.id == by_manifest.id == 'ImageExampleGen'
    # The type ML Metadata knows its executions by: ImageExampleGen's class path,
    # whichever input the component reads.
    assert gen.type == by_manifest.type == (
        'tfrecorder_component.adapters.component.component.ImageExampleGen')
    assert gen.executor_spec.executor_class is executor.Executor
    assert gen.spec.__class__ is by_manifest.spec.__class__
    assert set(gen.outputs) == {'examples', 'report'}
  assert by_input_base.with_id('gen2').id == 'gen2'


def test_report_page_is_a_system_html_artifact():
  gen = ImageExampleGen(input_base='/data')
  page = ConversionReportPage(report=gen.outputs['report'])
  assert page.outputs['page'].type is HTML
  from kfp import dsl  # pylint: disable=g-import-not-at-top
  assert HTML.TYPE_NAME == dsl.HTML.schema_title  # KFP's HTML, which the consoles render
  assert page.inputs['report'].type is ConversionReport


@pytest.mark.parametrize('kwargs', [{}, {'input_base': '/d', 'manifest': 'x'}])
def test_component_needs_exactly_one_input(kwargs):
  if 'manifest' in kwargs:
    kwargs['manifest'] = tfx.dsl.Importer(source_uri='/m.csv', artifact_type=ImageManifest
                                          ).outputs['result']
  with pytest.raises(ValueError, match='exactly one'):
    ImageExampleGen(**kwargs)


def test_max_error_ratio_and_format_are_validated():
  with pytest.raises(ValueError, match='max_error_ratio'):
    ImageExampleGen(input_base='/d', max_error_ratio=2.0)
  with pytest.raises(ValueError, match="unknown manifest format 'coco'; one of automl_csv,"):
    ImageExampleGen(input_base='/d', manifest_format='coco')


def test_label_map_and_append_new_labels_reach_the_executor(tmp_path):
  """label_map's ids are kept and, with append_new_labels, a label it lacks takes the next
  id; the Examples artifact names the appended label and the map given."""
  write_image(str(tmp_path / 'in' / 'a.png'), 'PNG', 'RGB', 6, 6, seed=1)
  write_image(str(tmp_path / 'in' / 'b.png'), 'PNG', 'RGB', 6, 6, seed=2)
  write_text(str(tmp_path / 'in' / 'm.csv'), 'TRAIN,a.png,cat\nTRAIN,b.png,aardvark\n')
  label_map = write_text(str(tmp_path / 'map' / 'label_map.pbtxt'),
                         'item { name: "dog" id: 0 }\nitem { name: "cat" id: 1 }\n')
  gen = ImageExampleGen(input_base=str(tmp_path / 'in'), label_map=str(tmp_path / 'map'),
                        append_new_labels=True)
  examples, report = standard_artifacts.Examples(), ConversionReport()
  examples.uri, report.uri = str(tmp_path / 'examples'), str(tmp_path / 'report')
  executor.Executor().Do({}, {'examples': [examples], 'report': [report]},
                         dict(gen.exec_properties))
  from tfrecorder_component import read_label_map  # pylint: disable=g-import-not-at-top
  assert read_label_map(examples.uri) == {'dog': 0, 'cat': 1, 'aardvark': 2}
  records = by_source_id(examples.uri, ['train'])
  assert {uri: feature(ex, 'image/class/label') for uri, (_, ex) in records.items()} == {
      'a.png': [1], 'b.png': [2]}
  assert list(examples.get_json_value_custom_property('labels_appended')) == ['aardvark']
  assert examples.get_string_custom_property('label_map_given') == label_map


def test_class_synset_and_label_order_reach_the_executor(tmp_path):
  """label_order='text' numbers integer class names as text (10 before 2, as Keras's
  image_dataset_from_directory does) and class_synset writes each label again as
  image/class/synset, set on the component and read by its executor."""
  rows = []
  for i, label in enumerate(['2', '10', '1']):
    write_image(str(tmp_path / 'in' / f'{i}.png'), 'PNG', 'RGB', 6, 6, seed=i)
    rows.append(f'TRAIN,{i}.png,{label}\n')
  write_text(str(tmp_path / 'in' / 'm.csv'), ''.join(rows))
  gen = ImageExampleGen(input_base=str(tmp_path / 'in'), label_order='text', class_synset=True)
  examples, report = standard_artifacts.Examples(), ConversionReport()
  examples.uri, report.uri = str(tmp_path / 'examples'), str(tmp_path / 'report')
  executor.Executor().Do({}, {'examples': [examples], 'report': [report]},
                         dict(gen.exec_properties))
  from tfrecorder_component import read_label_map  # pylint: disable=g-import-not-at-top
  assert read_label_map(examples.uri) == {'1': 0, '10': 1, '2': 2}  # as text
  records = by_source_id(examples.uri, ['train'])
  assert {uri: (feature(ex, 'image/class/label'), feature(ex, 'image/class/synset'))
          for uri, (_, ex) in records.items()} == {
              '0.png': ([2], [b'2']), '1.png': ([1], [b'10']), '2.png': ([0], [b'1'])}


def test_class_map_reaches_the_executor(tmp_path):
  """class_map, set on the component, renames and drops classes in what the executor
  writes; a bad one is refused when the component is built."""
  for name in 'abc':
    write_image(str(tmp_path / 'in' / f'{name}.png'), 'PNG', 'RGB', 6, 6, seed=1)
  write_text(str(tmp_path / 'in' / 'm.csv'), 'TRAIN,a.png,cat\nTRAIN,b.png,kitten\n'
             'TRAIN,c.png,blurry\n')
  with pytest.raises(ValueError, match="'cat' must map to a class name"):
    ImageExampleGen(input_base=str(tmp_path / 'in'), class_map={'cat': 1})
  gen = ImageExampleGen(input_base=str(tmp_path / 'in'),
                        class_map={'kitten': 'cat', 'blurry': None})
  examples, report = standard_artifacts.Examples(), ConversionReport()
  examples.uri, report.uri = str(tmp_path / 'examples'), str(tmp_path / 'report')
  executor.Executor().Do({}, {'examples': [examples], 'report': [report]},
                         dict(gen.exec_properties))
  records = by_source_id(examples.uri, ['train'])
  assert {uri: feature(ex, 'image/class/text') for uri, (_, ex) in records.items()} == {
      'a.png': [b'cat'], 'b.png': [b'cat']}
  with open(os.path.join(report.uri, 'summary.json'), encoding='utf-8') as f:
    summary = json.load(f)
  assert summary['class_map'] == {'blurry': None, 'kitten': 'cat'}
  assert summary['rows_left_out'] == {'dropped_class': 1} and summary['rows_failed'] == 0


def test_columns_reach_the_executor(tmp_path):
  """columns, set on the component, names the CSV header's columns the executor reads
  the image, label and split from; a bad one is refused when the component is built."""
  for name in 'ab':
    write_image(str(tmp_path / 'in' / f'{name}.png'), 'PNG', 'RGB', 6, 6, seed=1)
  write_text(str(tmp_path / 'in' / 'm.csv'), 'photo file,kind,data set\n'
             'a.png,cat,train\nb.png,dog,valid\n')
  with pytest.raises(ValueError, match="unknown role 'imag'"):
    ImageExampleGen(input_base=str(tmp_path / 'in'), columns='imag=photo file')
  gen = ImageExampleGen(input_base=str(tmp_path / 'in'),
                        columns={'image': 'photo file', 'label': 'kind'})
  examples, report = standard_artifacts.Examples(), ConversionReport()
  examples.uri, report.uri = str(tmp_path / 'examples'), str(tmp_path / 'report')
  executor.Executor().Do({}, {'examples': [examples], 'report': [report]},
                         dict(gen.exec_properties))
  records = by_source_id(examples.uri, ['train', 'eval', 'test'])
  assert {uri: (split, feature(ex, 'image/class/text')) for uri, (split, ex) in
          records.items()} == {'a.png': ('train', [b'cat']), 'b.png': ('eval', [b'dog'])}


def test_confine_to_reaches_the_executor(tmp_path):
  """confine_to, set on the component ('source': input_base), fails a row whose image
  lies outside input_base as outside_root; a bad root is refused when it is built."""
  write_image(str(tmp_path / 'in' / 'a.png'), 'PNG', 'RGB', 6, 6, seed=1)
  write_image(str(tmp_path / 'outside.png'), 'PNG', 'RGB', 6, 6, seed=2)
  write_text(str(tmp_path / 'in' / 'm.csv'), 'TRAIN,a.png,cat\nTRAIN,../outside.png,cat\n')
  with pytest.raises(ValueError, match='a root is a local folder'):
    ImageExampleGen(input_base=str(tmp_path / 'in'), confine_to='https://host/x')
  gen = ImageExampleGen(input_base=str(tmp_path / 'in'), confine_to='source',
                        max_error_ratio=0.5)
  examples, report = standard_artifacts.Examples(), ConversionReport()
  examples.uri, report.uri = str(tmp_path / 'examples'), str(tmp_path / 'report')
  executor.Executor().Do({}, {'examples': [examples], 'report': [report]},
                         dict(gen.exec_properties))
  assert list(by_source_id(examples.uri, ['train'])) == ['a.png']
  with open(os.path.join(report.uri, 'summary.json'), encoding='utf-8') as f:
    assert json.load(f)['errors_per_reason'] == {'outside_root': 1}


def test_row_time_limit_reaches_the_executor(tmp_path, monkeypatch):
  """row_time_limit, set on the component, fails a row whose read never returns (an
  image on slow://, tests/slowfs.py, held) as too_slow; the other row converts."""
  import slowfs  # pylint: disable=g-import-not-at-top,unused-import  (registers slow://)
  hold = write_text(str(tmp_path / 'hold'), '')
  monkeypatch.setenv('SLOW_FS_HOLD', hold)
  write_image(str(tmp_path / 'in' / 'a.png'), 'PNG', 'RGB', 6, 6, seed=1)
  stuck = str(tmp_path / 'stuck.png')
  write_image(stuck, 'PNG', 'RGB', 6, 6, seed=2)
  write_text(str(tmp_path / 'in' / 'm.csv'), f'TRAIN,a.png,cat\nTRAIN,slow://{stuck},cat\n')
  gen = ImageExampleGen(input_base=str(tmp_path / 'in'), row_time_limit=2,
                        max_error_ratio=0.5)
  examples, report = standard_artifacts.Examples(), ConversionReport()
  examples.uri, report.uri = str(tmp_path / 'examples'), str(tmp_path / 'report')
  executor.Executor().Do({}, {'examples': [examples], 'report': [report]},
                         dict(gen.exec_properties))
  assert list(by_source_id(examples.uri, ['train'])) == ['a.png']
  with open(os.path.join(report.uri, 'summary.json'), encoding='utf-8') as f:
    assert json.load(f)['errors_per_reason'] == {'too_slow': 1}
  with open(os.path.join(report.uri, 'errors.jsonl'), encoding='utf-8') as f:
    assert 'row time limit (2 s, row_time_limit)' in json.loads(f.readline())['message']


def test_workers_reach_the_executor(tmp_path):
  """workers, set on the component, sizes the executor's pool: 3 worker processes for
  200 rows (which call for one), each writing its own shard of the split."""
  for i in range(200):
    write_image(str(tmp_path / 'in' / f'{i}.png'), 'PNG', 'RGB', 6, 6, seed=i)
  write_text(str(tmp_path / 'in' / 'm.csv'), ''.join(f'TRAIN,{i}.png,cat\n' for i in range(200)))
  gen = ImageExampleGen(input_base=str(tmp_path / 'in'), workers=3)
  examples, report = standard_artifacts.Examples(), ConversionReport()
  examples.uri, report.uri = str(tmp_path / 'examples'), str(tmp_path / 'report')
  executor.Executor().Do({}, {'examples': [examples], 'report': [report]},
                         dict(gen.exec_properties))
  assert sorted(os.listdir(os.path.join(examples.uri, 'Split-train'))) == [
      f'data_tfrecord-0000{k}-of-00003.gz' for k in range(3)]
  assert len(by_source_id(examples.uri, ['train'])) == 200
  with pytest.raises(ValueError, match='workers must be a whole number'):
    ImageExampleGen(input_base=str(tmp_path / 'in'), workers=-1)


def test_every_spec_parameter_set_on_the_component_changes_what_the_executor_writes(tmp_path):
  """Each execution parameter of the spec, given to ImageExampleGen with a value other
  than its default, reaches the executor and changes its output: a parameter the
  component dropped, or the executor ignored, fails here. The executor runs on real
  files, with the exec properties the component built, as an orchestrator hands them."""
  data = tmp_path / 'data'
  pics = data / 'pics'  # image_root: the manifests' own folders hold no images
  write_image(str(pics / 'ok.png'), 'PNG', 'RGB', 6, 6, seed=1)
  write_image(str(pics / 'photo.webp'), 'WEBP', 'RGB', 6, 6, seed=2)
  png = encode(make_image('RGB', 6, 6, seed=3), 'PNG')
  (pics / 'no_iend.png').write_bytes(png[:png.index(b'IEND') - 4])  # libpng refuses it
  (pics / 'flat.png').write_bytes(encode(Image.new('RGB', (40, 40)), 'PNG'))  # 1600 pixels
  write_image(str(pics / 'noise.png'), 'PNG', 'RGB', 30, 30, seed=4)  # 900 pixels, > 2 KB
  # JSON lines in a .txt file, which format detection would read as CSV.
  lines = [{'imageGcsUri': name, 'weight': 3} for name in
           ('ok.png', 'photo.webp', 'no_iend.png', 'flat.png', 'noise.png')]
  write_text(str(data / 'in' / 'span-1' / 'm.txt'), ''.join(json.dumps(l) + '\n' for l in lines))
  write_text(str(data / 'in' / 'span-2' / 'm.txt'), '{"imageGcsUri": "ok.png"}\n')  # latest span
  kwargs = {
      'input_base': str(data / 'in'),
      'input_config': example_gen_pb2.Input(splits=[
          example_gen_pb2.Input.Split(name='single_split', pattern='span-{SPAN}/*.txt')]),
      'output_config': example_gen_pb2.Output(split_config=example_gen_pb2.SplitConfig(
          splits=[example_gen_pb2.SplitConfig.Split(name='alpha', hash_buckets=1)])),
      'range_config': range_config_pb2.RangeConfig(static_range=range_config_pb2.StaticRange(
          start_span_number=1, end_span_number=1)),
      'manifest_format': 'vertex_jsonl',
      'max_pixels': 1_000,
      'max_bytes': 2_000,
      'max_error_ratio': 0.5,
      'convert_unsupported': True,
      'compression_level': 9,
      'verify_decode': False,
      'image_root': str(pics),
      'feature_types': {'weight': 'string'},
      'image_transform': {'size': [4, 4]},
      'num_shards': 2,
      'layouts': ['tfrecord'],
      'source_id': 'number',
  }
  # shard_size_mb is the alternative to num_shards (one or the other), and include_masks
  # and include_keypoints read COCO only: their own tests below. concurrent_reads changes
  # how many reads of remote images are in flight, not the records: seen at a storage
  # server in tests/test_object_storage.py. label_map and append_new_labels need labels:
  # test_label_map_and_append_new_labels_reach_the_executor above, class_map
  # test_class_map_reaches_the_executor, class_synset and label_order
  # test_class_synset_and_label_order_reach_the_executor, columns (a CSV's header)
  # test_columns_reach_the_executor, confine_to test_confine_to_reaches_the_executor,
  # row_time_limit test_row_time_limit_reaches_the_executor, workers (a pool of several
  # worker processes, for more rows) test_workers_reach_the_executor.
  missing = set(spec.ImageExampleGenSpec.PARAMETERS) - set(kwargs) - {
      'shard_size_mb', 'include_masks', 'include_keypoints', 'concurrent_reads',
      'label_map', 'append_new_labels', 'class_map', 'class_synset', 'label_order',
      'columns', 'confine_to', 'row_time_limit', 'workers'}
  assert not missing, f'give {sorted(missing)} a non-default value and check its effect'
  gen = ImageExampleGen(**kwargs)
  defaults = ImageExampleGen(input_base=str(data / 'in')).exec_properties
  assert [k for k in kwargs if k != 'input_base'
          and gen.exec_properties[k] == defaults[k]] == []

  examples, report = standard_artifacts.Examples(), ConversionReport()
  examples.uri, report.uri = str(tmp_path / 'examples'), str(tmp_path / 'report')
  executor.Executor().Do({}, {'examples': [examples], 'report': [report]},
                         dict(gen.exec_properties))  # max_error_ratio: 2 of 5 rows may fail

  # range_config: span 1, not the latest; output_config: every unassigned row in 'alpha'.
  assert examples.span == 1
  # source_id: the URIs' numbers (`uri_number`), by which the records are found here.
  uris = {str(uri_number(uri)): uri for uri in ('ok.png', 'photo.webp', 'no_iend.png')}
  records = {uris[number]: value for number, value in by_source_id(
      examples.uri, ['alpha', 'train', 'eval', 'test']).items()}
  # image_root, manifest_format, convert_unsupported (the WebP) and verify_decode (the
  # PNG without IEND is not decoded before it is written) let these three through.
  assert {uri: split for uri, (split, _) in records.items()} == {
      'ok.png': 'alpha', 'photo.webp': 'alpha', 'no_iend.png': 'alpha'}
  for _, example in records.values():
    assert feature(example, 'weight') == [b'3']  # feature_types: not the inferred int
    assert (feature(example, 'image/height'), feature(example, 'image/width')) == ([4], [4])
  with open(os.path.join(report.uri, 'errors.jsonl'), encoding='utf-8') as f:
    errors = {e['uri']: (e['reason'], e['message']) for e in map(json.loads, f)}
  assert errors['flat.png'][0] == 'too_large' and 'max_pixels' in errors['flat.png'][1]
  assert errors['noise.png'][0] == 'too_large' and 'max_bytes=2000' in errors['noise.png'][1]
  assert len(errors) == 2
  # num_shards: 3 records over exactly 2 shards. compression_level: the shards are
  # deflated (level 0, the default, stores them).
  shards = sorted(glob.glob(os.path.join(examples.uri, 'Split-alpha', '*.gz')))
  assert [os.path.basename(s) for s in shards] == [
      'data_tfrecord-00000-of-00002.gz', 'data_tfrecord-00001-of-00002.gz']
  for shard in shards:
    with gzip.open(shard, 'rb') as f:
      assert os.path.getsize(shard) < len(f.read())
  # layouts: the tfrecord layout in the artifact's folder, a file a shard, indexed.
  assert sorted(n for n in os.listdir(os.path.join(examples.uri, 'tfrecord')) if 'alpha' in n) == [
      f'images-alpha.tfrecord-0000{k}-of-00002{suffix}' for k in (0, 1) for suffix in ('', '.idx')]
  with open(os.path.join(examples.uri, 'examples.json'), encoding='utf-8') as f:
    assert list(json.load(f)['layouts']) == ['tfrecord']


@pytest.mark.parametrize('masks,keypoints', [(True, False), (False, True)])
def test_include_masks_and_include_keypoints_reach_the_executor(tmp_path, masks, keypoints):
  """Each flag, set on the component, makes the executor write its keys, and only its."""
  data = tmp_path / 'data'
  write_image(str(data / 'a.png'), 'PNG', 'RGB', 20, 30, seed=1)
  write_text(str(data / 'coco.json'), json.dumps({
      'images': [{'id': 1, 'file_name': 'a.png'}],
      'categories': [{'id': 5, 'name': 'cat', 'keypoints': ['nose']}],
      'annotations': [{'id': 9, 'image_id': 1, 'category_id': 5, 'bbox': [2, 2, 10, 10],
                       'segmentation': [[2, 2, 12, 2, 12, 12, 2, 12]],
                       'keypoints': [6, 5, 2]}]}))
  gen = ImageExampleGen(input_base=str(data), include_masks=masks,
                        include_keypoints=keypoints,
                        output_config=example_gen_pb2.Output(split_config=example_gen_pb2.SplitConfig(
                            splits=[example_gen_pb2.SplitConfig.Split(name='train',
                                                                      hash_buckets=1)])))
  examples, report = standard_artifacts.Examples(), ConversionReport()
  examples.uri, report.uri = str(tmp_path / 'examples'), str(tmp_path / 'report')
  executor.Executor().Do({}, {'examples': [examples], 'report': [report]},
                         dict(gen.exec_properties))
  (_, example), = by_source_id(examples.uri, ['train']).values()
  keys = set(example.features.feature)
  assert ('image/object/mask' in keys) is masks
  assert ('image/object/keypoint/x' in keys) is keypoints
  if masks:
    mask = Image.open(io.BytesIO(feature(example, 'image/object/mask')[0]))
    assert (mask.mode, mask.size, mask.getbbox()) == ('L', (30, 20), (2, 2, 12, 12))
  else:
    assert feature(example, 'image/object/keypoint/x') == [pytest.approx(6 / 30)]
    assert feature(example, 'image/object/keypoint/visibility') == [2]


def test_shard_size_mb_sets_the_number_of_shards_from_the_split_size(tmp_path):
  """Six ~20 KB images over ~0.05 MB shards: three shards of two records each."""
  data = tmp_path / 'data'
  for i in range(6):
    write_image(str(data / f'{i}.png'), 'PNG', 'RGB', 80, 80, seed=i)  # noise: ~19 KB
  write_text(str(data / 'm.csv'), ''.join(f'TRAIN,{i}.png,cat\n' for i in range(6)))
  size = sum(os.path.getsize(data / f'{i}.png') for i in range(6)) / 3 / 2**20
  gen = ImageExampleGen(input_base=str(data), shard_size_mb=size * 1.02)
  examples, report = standard_artifacts.Examples(), ConversionReport()
  examples.uri, report.uri = str(tmp_path / 'examples'), str(tmp_path / 'report')
  executor.Executor().Do({}, {'examples': [examples], 'report': [report]},
                         dict(gen.exec_properties))
  shards = sorted(glob.glob(os.path.join(examples.uri, 'Split-train', '*.gz')))
  assert [os.path.basename(s) for s in shards] == [
      f'data_tfrecord-0000{k}-of-00003.gz' for k in range(3)]
  assert [len(list(read_shard(s))) for s in shards] == [2, 2, 2]
  with pytest.raises(ValueError, match='num_shards or shard_size_mb, not both'):
    ImageExampleGen(input_base=str(data), num_shards=2, shard_size_mb=1.0)


def test_transform_and_feature_types_are_checked_and_stored_as_json():
  gen = ImageExampleGen(input_base='/d', image_transform={'auto_orient': True, 'size': [64, 48],
                                                          'resize_mode': 'fit'},
                        feature_types={'weight': 'float'}, manifest_format='coco_json')
  params = gen.exec_properties
  transform = ImageTransform.from_json(params['image_transform'])
  assert transform == ImageTransform(auto_orient=True, size=(64, 48), resize_mode='fit')
  assert json.loads(params['feature_types']) == {'weight': 'float'}
  assert ImageExampleGen(input_base='/d').exec_properties['image_transform'] is None
  with pytest.raises(ValueError, match='resize_mode'):
    ImageExampleGen(input_base='/d', image_transform={'size': [8, 8], 'resize_mode': 'squash'})
  with pytest.raises(ValueError, match='feature_types'):
    ImageExampleGen(input_base='/d', feature_types={'weight': 'double'})


def test_split_plan_adds_ml_use_splits_to_hash_buckets():
  output = example_gen_pb2.Output(split_config=example_gen_pb2.SplitConfig(splits=[
      example_gen_pb2.SplitConfig.Split(name='train', hash_buckets=3),
      example_gen_pb2.SplitConfig.Split(name='holdout', hash_buckets=1)]))
  props = {'output_config': proto_utils.proto_to_json(output),
           'input_config': proto_utils.proto_to_json(example_gen_pb2.Input(splits=[
               example_gen_pb2.Input.Split(name='single_split', pattern='*')]))}
  buckets, names = executor.split_plan(props)
  assert buckets == (('train', 3), ('holdout', 1))
  assert names == ['train', 'holdout', 'eval', 'test']


def test_direct_runner_executor_builds_no_tfx_package(tmp_path, monkeypatch):
  """TFX's Beam executors build an sdist of TFX (about 50 MB, left in a temporary folder)
  at every start, for remote workers; ImageExampleGen's skips it on the DirectRunner,
  whose workers import from this environment, and keeps it for Dataflow."""
  import tempfile  # pylint: disable=g-import-not-at-top
  from tfx.dsl.components.base import base_beam_executor  # pylint: disable=g-import-not-at-top
  monkeypatch.setenv('TMPDIR', str(tmp_path))
  monkeypatch.setattr(tempfile, 'tempdir', None)

  def started(args):
    return executor.Executor(base_beam_executor.BaseBeamExecutor.Context(
        beam_pipeline_args=list(args), tmp_dir=str(tmp_path / 'run'), unique_id='1'))

  for args in (['--direct_running_mode=in_memory', '--direct_num_workers=1'],
               ['--runner=DirectRunner']):
    assert started(args)._beam_pipeline_args == args
    assert list(tmp_path.iterdir()) == []
  dataflow = started(['--runner=DataflowRunner', '--project=p', '--region=r',
                      '--temp_location=gs://b/t'])._beam_pipeline_args
  assert [a for a in dataflow if a.startswith('--extra_package=')]
  assert glob.glob(str(tmp_path / '*' / 'build' / 'tfx' / 'dist' / 'tfx_ephemeral-*'))
