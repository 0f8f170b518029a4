"""Component, spec and artifact type: what a pipeline author and a compiler see."""
import json
import re

import pytest
from tfx import v1 as tfx
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec
from tfx.proto import example_gen_pb2
from tfx.types import standard_artifacts
from tfx.utils import proto_utils

from tfrecorder_component import HTML, ConversionReportPage, ImageExampleGen, ImageManifest
from tfrecorder_component.component import executor, spec
from tfrecorder_component.component.types import ConversionReport
from tfrecorder_component.transform import ImageTransform


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
    assert gen.type == by_manifest.type == 'tfrecorder_component.component.component.ImageExampleGen'
    assert gen.executor_spec.executor_class is executor.Executor
    assert gen.spec.__class__ is by_manifest.spec.__class__
    assert set(gen.outputs) == {'examples', 'report'}
  assert by_input_base.with_id('gen2').id == 'gen2'


def test_report_page_is_a_system_html_artifact():
  gen = ImageExampleGen(input_base='/data')
  page = ConversionReportPage(report=gen.outputs['report'])
  assert page.outputs['page'].type is HTML
  assert HTML.TYPE_NAME == 'system.HTML'  # the type the pipeline consoles render
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
  with pytest.raises(ValueError, match='manifest_format'):
    ImageExampleGen(input_base='/d', manifest_format='coco')


def test_spec_parameters():
  assert set(spec.ImageExampleGenSpec.PARAMETERS) == {
      'input_base', 'input_config', 'output_config', 'range_config', 'manifest_format',
      'max_pixels', 'max_bytes', 'max_error_ratio', 'convert_unsupported', 'compression_level',
      'verify_decode', 'image_root', 'feature_types', 'image_transform'}
  assert set(spec.ImageExampleGenSpec.OUTPUTS) == {'examples', 'report'}


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
