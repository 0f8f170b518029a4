"""The same detection dataset in the YOLO (data.yaml), LabelMe and CVAT layouts, converted
the three ways users take (the CLI with the format detected, `convert()`, and
ImageExampleGen on LocalDagRunner): every box within 1e-4 of the annotation, classes and
splits right, images without objects kept with none."""
from __future__ import annotations

import os

import pytest

import format_datasets as fd
from tfrecorder_component import convert
from tfrecorder_component.adapters.cli import main

WRITERS = {'yolo': fd.write_yolo, 'labelme': fd.write_labelme, 'cvat': fd.write_cvat}


@pytest.mark.parametrize('fmt', sorted(WRITERS))
def test_cli_detects_the_format_and_writes_every_box(tmp_path, fmt):
  source = WRITERS[fmt](str(tmp_path / 'data'))
  out = str(tmp_path / 'out')
  assert main(['convert', source, out]) == 0
  fd.assert_matches(fd.read_back(out), fd.expected())
  with open(os.path.join(out, 'labels.txt'), encoding='utf-8') as f:
    assert f.read().splitlines() == list(fd.NAMES)


@pytest.mark.parametrize('fmt', sorted(WRITERS))
def test_convert_from_the_dataset_folder(tmp_path, fmt):
  WRITERS[fmt](str(tmp_path / 'data'))
  result = convert(str(tmp_path / 'data'), str(tmp_path / 'out'))
  assert result.rows_failed == 0 and result.records_per_split['train'] == 3
  fd.assert_matches(fd.read_back(str(tmp_path / 'out')), fd.expected())


def test_image_example_gen_on_local_dag_runner_reads_all_three(tmp_path):
  from tfx import v1 as tfx  # pylint: disable=g-import-not-at-top
  from tfx.proto import example_gen_pb2  # pylint: disable=g-import-not-at-top
  from tfrecorder_component import ImageExampleGen  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.adapters.component.mlmd import latest_output  # pylint: disable=g-import-not-at-top
  roots = {fmt: str(tmp_path / fmt) for fmt in WRITERS}
  for fmt, root in roots.items():
    WRITERS[fmt](root)
  labelme_splits = example_gen_pb2.Input(splits=[
      example_gen_pb2.Input.Split(name='train', pattern='train/*.json'),
      example_gen_pb2.Input.Split(name='eval', pattern='val/*.json')])
  gens = [ImageExampleGen(input_base=roots['yolo']).with_id('yolo'),
          ImageExampleGen(input_base=roots['labelme'], input_config=labelme_splits
                          ).with_id('labelme'),
          ImageExampleGen(input_base=roots['cvat']).with_id('cvat')]
  config = tfx.orchestration.metadata.sqlite_metadata_connection_config(
      str(tmp_path / 'metadata.db'))
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name='formats', pipeline_root=str(tmp_path / 'root'), components=gens,
      metadata_connection_config=config))
  for fmt in WRITERS:
    examples = latest_output(config, 'formats', fmt, 'examples')
    splits = eval(examples.split_names)  # pylint: disable=eval-used
    assert {'train', 'eval'} <= set(splits), (fmt, splits)
    fd.assert_matches(fd.read_back(examples.uri, splits), fd.expected())
