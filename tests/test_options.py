"""Every option is declared once (`option_table.OPTIONS`), and the four places that take
one agree with it and with each other: the command's flags, `convert()`, the
component's spec and constructor, and the `ConversionOptions` its executor reads back
from the execution properties. Each is checked as it is used (a parsed command line, a
built component's properties), at the defaults and at a value other than each default.
"""
import inspect
import json
import os
import shutil
import subprocess
import sys

import pytest
from tfx.types import channel

from images import write_image, write_text
from tfrecorder_component.adapters import cli, conversion
from tfrecorder_component import option_table
from tfrecorder_component.adapters.component import component as component_lib
from tfrecorder_component.adapters.component import executor, properties, spec, types
from tfrecorder_component.options import ConversionOptions

COMPONENT_OPTIONS = option_table.taken_by(option_table.COMPONENT)


@pytest.fixture
def labels_txt(tmp_path):
  return write_text(str(tmp_path / 'labels.txt'), 'cat\ndog\n')


def other_values(labels_txt: str) -> dict:
  """A value other than its default for each option the component takes."""
  return dict(
      max_error_ratio=0.25, num_shards=3, layouts=['parquet'], manifest_format='coco_json',
      image_root='/data/images', feature_types={'weight': 'float'}, max_pixels=1000,
      columns={'image': 'Path', 'label': 'ClassId', 'split': 'data set'},
      max_bytes=2000, compression_level=6, verify_decode=False, convert_unsupported=True,
      include_masks=True, include_keypoints=True, source_id='number', concurrent_reads=8, workers=3,
      label_map=labels_txt,
      append_new_labels=True, class_map={'car': 'vehicle', '*': None},
      image_transform={'size': [8, 8], 'encode': 'png'}, class_synset=True,
      label_order='text', confine_to=['/data'], row_time_limit=5.5)


def test_other_values_cover_every_component_option_but_one_of_the_shard_pair(labels_txt):
  # shard_size_mb excludes num_shards: test_shard_size_round_trips checks it alone.
  assert set(other_values(labels_txt)) == {o.name for o in COMPONENT_OPTIONS} - {'shard_size_mb'}
  for name, value in other_values(labels_txt).items():
    assert value != option_table.BY_NAME[name].default, name


def _component(**options):
  manifest = channel.Channel(type=types.ImageManifest)
  return component_lib.ImageExampleGen(manifest=manifest, **options)


def _executor_options(component):
  """What the executor makes of a built component's execution properties."""
  exec_properties = dict(component.exec_properties)
  return executor.conversion_options({}, exec_properties)


def _convert_options(tmp_path, **options):
  """What `convert()` makes of `options` (its own `_conversion`, before any run)."""
  manifest = write_text(str(tmp_path / 'm.csv'), 'TRAIN,a.png,cat\n')
  write_image(str(tmp_path / 'a.png'), 'PNG')
  report = tmp_path / 'report'
  os.makedirs(report, exist_ok=True)
  options.pop('max_error_ratio', None)  # convert()'s own keyword, not a conversion option
  return conversion._conversion(manifest, str(report), **options)[1]  # pylint: disable=protected-access


def test_the_command_has_a_flag_for_each_option_it_takes_and_sets_none_unless_given():
  _, commands = cli.build_parser()
  for command, writes in (('convert', True), ('validate', False)):
    parser = commands[command]
    dests = {a.dest: a for a in parser._actions}  # pylint: disable=protected-access
    taken = option_table.taken_by(option_table.CLI, writes)
    for option in taken:
      assert option.name in dests, (command, option.name)
      assert option.flag in dests[option.name].option_strings, (command, option.name)
    others = {o.name for o in option_table.OPTIONS} - {o.name for o in taken}
    assert not others & set(dests), (command, others & set(dests))
    args = ['m.csv', 'out'] if command == 'convert' else ['m.csv']
    # Nothing given: no option reaches convert(), which takes the table's defaults.
    assert cli._options(parser.parse_args(args)) == {}  # pylint: disable=protected-access


def test_the_command_line_gives_convert_the_values_the_table_names():
  parser = cli.build_parser()[1]['convert']
  given = cli._options(parser.parse_args([  # pylint: disable=protected-access
      'm.csv', 'out', '--max-pixels', '1000', '--no-verify-decode', '--include-masks',
      '--layout', 'tfrecord,parquet', '--layout', 'tfds', '--splits', 'train=3,test=1',
      '--transform', '{"size": [8, 8]}', '--class-map', '{"a": "b"}', '--overwrite',
      '--max-error-ratio', '0.5', '--format', 'yolo', '--beam-arg=--x=1',
      '--columns', 'image=Path,split=data set']))
  assert given['max_pixels'] == 1000 and given['verify_decode'] is False
  assert given['include_masks'] is True and given['overwrite'] is True
  assert given['layouts'] == ['tfrecord', 'parquet', 'tfds']
  assert given['splits'] == [('train', 3), ('test', 1)]
  assert given['image_transform'].size == (8, 8)
  assert given['max_error_ratio'] == 0.5 and given['manifest_format'] == 'yolo'
  assert given['beam_args'] == ['--x=1'] and given['class_map'] == '{"a": "b"}'
  assert given['columns'] == (('image', 'Path'), ('split', 'data set'))
  conversion.check_names(set(given) - {'max_error_ratio', 'overwrite'})


def test_convert_and_the_component_constructor_default_as_the_table_says():
  signature = inspect.signature(conversion.convert).parameters
  for name in ('max_error_ratio', 'overwrite'):
    assert signature[name].default == option_table.BY_NAME[name].default
  constructor = inspect.signature(component_lib.ImageExampleGen.__init__).parameters
  for option in COMPONENT_OPTIONS:
    default = constructor[option.name].default
    # None and an empty list are the same "none" for list and map options.
    assert properties.to_property(option, default) == properties.to_property(
        option, option.default), option.name
  assert ConversionOptions.from_options({}) == ConversionOptions()


def test_the_spec_declares_each_component_option_with_its_type():
  parameters = spec.ImageExampleGenSpec.PARAMETERS
  for option in COMPONENT_OPTIONS:
    assert parameters[option.name].type is option.exec_type, option.name
    assert parameters[option.name].optional == option.exec_optional, option.name
  built = _component().exec_properties
  assert {o.name for o in COMPONENT_OPTIONS} <= set(built)
  for name in set(parameters) - {o.name for o in COMPONENT_OPTIONS}:
    assert name in (spec.INPUT_BASE_KEY, spec.INPUT_CONFIG_KEY, spec.OUTPUT_CONFIG_KEY,
                    spec.RANGE_CONFIG_KEY), name
  # The component's splits are its output_config: the table's default buckets.
  output_config = json.loads(built[spec.OUTPUT_CONFIG_KEY])
  assert tuple((s['name'], s['hash_buckets']) for s in output_config['split_config'][
      'splits']) == option_table.DEFAULT_BUCKETS


def test_the_executor_reads_back_what_convert_makes_at_the_defaults(tmp_path):
  values, options = _executor_options(_component())
  assert options == _convert_options(tmp_path)
  assert values['max_error_ratio'] == option_table.BY_NAME['max_error_ratio'].default
  assert values['manifest_format'] is None and values['image_root'] is None


def test_the_executor_reads_back_what_convert_makes_of_other_values(tmp_path, labels_txt):
  given = other_values(labels_txt)
  values, options = _executor_options(_component(**given))
  assert options == _convert_options(tmp_path, **given)
  for name in ('max_error_ratio', 'manifest_format', 'image_root', 'feature_types', 'columns'):
    assert values[name] == given[name], name


def test_shard_size_round_trips(tmp_path):
  values, options = _executor_options(_component(shard_size_mb=12.5))
  assert options == _convert_options(tmp_path, shard_size_mb=12.5)
  assert options.shard_size_mb == 12.5 and values['shard_size_mb'] == 12.5


def test_a_misspelt_option_is_refused_naming_the_closest(tmp_path):
  with pytest.raises(TypeError, match="unexpected option 'max_pixel'; did you mean 'max_pixels'"):
    conversion.convert(str(tmp_path / 'm.csv'), str(tmp_path / 'out'), max_pixel=5)
  assert not os.path.exists(tmp_path / 'out')
  with pytest.raises(TypeError, match="'num_shards'"):  # validate writes no shards
    conversion.validate(str(tmp_path / 'm.csv'), str(tmp_path / 'report'), num_shards=2)


def test_a_value_of_another_type_is_refused_not_coerced():
  # A label map as a dict is convert()'s; the component takes a path, and its spec says so.
  with pytest.raises(TypeError, match="Expected type <class 'str'> for parameter 'label_map'"):
    _component(label_map={'cat': 0})
  # A number's bounds are checked first, as convert() checks them (`options.check_option`).
  for name, value in (('max_pixels', 'many'), ('max_pixels', 2.5), ('workers', True)):
    with pytest.raises(ValueError, match=f"{name} must be a whole number, .* got {value!r}"):
      _component(**{name: value})
    with pytest.raises(ValueError, match=f"{name} must be a whole number"):
      conversion.convert('unused.csv', 'unused', **{name: value})
  for ratio in (-0.1, 1.5, float('nan'), '0.1'):  # convert()'s own keyword, checked first
    with pytest.raises(ValueError, match=r'max_error_ratio must be a number, from 0 to 1'):
      conversion.convert('unused.csv', 'unused', max_error_ratio=ratio)


_ADDED_OPTION = '''
    Option('min_side', 0,
           'refuse images whose shorter side is under N pixels',
           '--min-side', dict(type='int', metavar='N'), exec_type=int, bounds=(0, None),
           doc='refuse images whose shorter side is under this many pixels',
           component_default='`0`: any size'),
'''

_CHECK_ADDED_OPTION = '''
import inspect, json
from tfrecorder_component import option_table
from tfrecorder_component.adapters import cli, conversion
from tfrecorder_component.adapters.component import component, properties, spec
from tfrecorder_component.manifest import MANIFEST_FORMATS
from tfx.types.channel import Channel
from tfrecorder_component.adapters.component import types

found = {}
parser = cli.build_parser()
parser = parser[0] if isinstance(parser, tuple) else parser
args = parser.parse_args(['convert', 'm.csv', 'out', '--min-side', '5'])
found['cli'] = cli._options(args).get('min_side')
conversion.check_names({'min_side': 5})
try:
  conversion.convert('m.csv', 'out', min_side=-1)
except ValueError as e:
  found['convert_refuses'] = str(e)
found['signature'] = repr(inspect.signature(component.ImageExampleGen.__init__)
                          .parameters['min_side'])
found['docstring'] = 'min_side: Refuse images' in component.ImageExampleGen.__init__.__doc__
found['spec'] = 'min_side' in spec.ImageExampleGenSpec.PARAMETERS
built = component.ImageExampleGen(
    manifest=Channel(type=types.ImageManifest), min_side=3)
found['property'] = built.exec_properties['min_side']
found['read_back'] = properties.from_properties(built.exec_properties)['min_side']
try:
  component.ImageExampleGen(manifest=Channel(type=types.ImageManifest), min_side=-2)
except ValueError as e:
  found['component_refuses'] = str(e)
found['python_guide'] = [r for r in option_table.docs_rows(option_table.API, MANIFEST_FORMATS)
                         if '`min_side`' in r]
found['component_guide'] = [r for r in component.docs_table().splitlines() if '`min_side`' in r]
print(json.dumps(found))
'''


def test_an_option_added_to_the_table_reaches_every_path_and_both_guides(tmp_path):
  """Adding an option is one entry in `option_table.OPTIONS`: in a scratch copy of the
  package with one entry added and nothing else changed, the command's flag, convert()'s
  keyword and its bounds check, the component's signature, docstring, spec, execution
  property and the executor's reading of it, and both guides' tables all have it."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  shutil.copytree(os.path.join(root, 'tfrecorder_component'),
                  str(tmp_path / 'tfrecorder_component'),
                  ignore=shutil.ignore_patterns('__pycache__'))
  table = tmp_path / 'tfrecorder_component' / 'option_table.py'
  text = table.read_text(encoding='utf-8')
  end = text.index('\n)\n\nBY_NAME')
  table.write_text(text[:end] + _ADDED_OPTION.rstrip('\n') + text[end:], encoding='utf-8')
  done = subprocess.run([sys.executable, '-c', _CHECK_ADDED_OPTION], cwd=str(tmp_path),
                        env=dict(os.environ, PYTHONPATH=str(tmp_path)), capture_output=True,
                        text=True, timeout=300, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  found = json.loads(done.stdout.strip().splitlines()[-1])
  assert found['cli'] == 5
  assert 'min_side must be a whole number, 0 or more, got -1' in found['convert_refuses']
  assert found['signature'] == '<Parameter "min_side: int = 0">'
  assert found['docstring'] and found['spec']
  assert found['property'] == 3 and found['read_back'] == 3
  assert 'min_side must be a whole number' in found['component_refuses']
  assert found['python_guide'] == [
      '| `min_side` | `0` | refuse images whose shorter side is under this many pixels |']
  assert found['component_guide'] == [
      '| `min_side` | `0`: any size | refuse images whose shorter side is under this many '
      'pixels |']
