"""max_error_ratio and the report artifact, through real TFX runs and the executor."""
import json
import os
import re

import pytest
from ml_metadata.proto import metadata_store_pb2
from tfx import v1 as tfx
from tfx.orchestration import metadata

from baddata import make
from images import write_text
from mlmd_queries import OUTPUT, artifact_ids, node_executions
from runs import run, run_executor
from tfrecorder_component import ImageExampleGen, ImageManifest
from tfrecorder_component.adapters.component.types import ConversionReport
from tfrecorder_component.errors import ManifestError
from tfrecorder_component.adapters.component.mlmd import latest_output

MAX_BYTES = 50_000


def components(manifest, ratio):
  importer = tfx.dsl.Importer(source_uri=manifest, artifact_type=ImageManifest).with_id('importer')
  gen = ImageExampleGen(manifest=importer.outputs['result'], max_error_ratio=ratio,
                        max_bytes=MAX_BYTES)
  return [importer, gen]


def test_bad_rows_within_the_ratio_are_reported(tmp_path):
  manifest, *_ , bad, bad_rows = make(str(tmp_path / 'data'), MAX_BYTES)
  config = run(components(manifest, 0.6), str(tmp_path / 'tfx'), 'tolerant')
  report = latest_output(config, 'tolerant', 'ImageExampleGen', 'report')
  examples = latest_output(config, 'tolerant', 'ImageExampleGen', 'examples')
  with open(os.path.join(report.uri, 'errors.jsonl')) as f:
    errors = [json.loads(l) for l in f]
  with open(os.path.join(report.uri, 'summary.json')) as f:
    summary = json.load(f)
  assert {e['uri']: e['reason'] for e in errors if e['uri'] in bad} == bad
  assert len(errors) == 15 and summary['rows_read'] == 27 and summary['records_written'] == 12
  for artifact in (examples, report):
    assert artifact.get_int_custom_property('rows_read') == 27
    assert artifact.get_int_custom_property('rows_failed') == 15
    assert artifact.get_int_custom_property('cross_split_duplicates') == 1
  assert sum(int(v) for v in examples.get_json_value_custom_property(
      'record_counts').values()) == 12


def test_zero_ratio_fails_the_run_and_publishes_nothing(tmp_path):
  manifest, *_ = make(str(tmp_path / 'data'), MAX_BYTES)
  with pytest.raises(Exception) as failure:
    run(components(manifest, 0.0), str(tmp_path / 'tfx'), 'strict')
  text = str(failure.value)
  assert '15 of 27 manifest rows failed' in text
  assert 'img/' in text and 'errors.jsonl' in text
  # The report it names stays, though the failed execution's outputs are removed.
  errors_path = re.search(r'All failed rows: (\S+)', text).group(1)
  assert errors_path.endswith('.failed/errors.jsonl')
  with open(errors_path, encoding='utf-8') as f:
    assert len(f.readlines()) == 15
  config = tfx.orchestration.metadata.sqlite_metadata_connection_config(
      str(tmp_path / 'tfx' / 'metadata.db'))
  with metadata.Metadata(config) as m:
    [execution] = node_executions(m, 'strict', 'ImageExampleGen')
    assert execution.last_known_state == metadata_store_pb2.Execution.FAILED
    assert artifact_ids(m, execution.id, OUTPUT) == set()
    live = [a for t in ('Examples', ConversionReport.TYPE_NAME)
            for a in m.store.get_artifacts_by_type(t)
            if a.state == metadata_store_pb2.Artifact.LIVE]
    assert live == []


def test_empty_manifest_is_an_error_not_an_empty_artifact(tmp_path):
  path = write_text(str(tmp_path / 'm.csv'), '\ufeffsplit,image_uri,label\n\n')
  with pytest.raises(ManifestError, match='no rows'):
    run_executor(tmp_path, path)


def test_missing_manifest_is_an_error(tmp_path):
  with pytest.raises(ManifestError, match='no manifest files'):
    run_executor(tmp_path, str(tmp_path / 'absent.csv'))


def test_failed_rows_are_shown_in_manifest_and_row_order(tmp_path):
  from tfrecorder_component.steps import policy  # pylint: disable=g-import-not-at-top
  rows = [('b.csv', 2), ('a.csv', 10), ('a.csv', 2), ('b.csv', 1), ('a.csv', 3)]
  path = write_text(str(tmp_path / 'errors.jsonl'), ''.join(
      json.dumps({'source': s, 'row': r, 'uri': f'{r}.jpg', 'reason': 'missing',
                  'message': 'm'}) + '\n' for s, r in rows))
  assert [(e['source'], e['row']) for e in policy.read_errors(path, 4)] == [
      ('a.csv', 2), ('a.csv', 3), ('a.csv', 10), ('b.csv', 1)]


def test_messages_name_no_in_memory_objects():
  from tfrecorder_component.images import probe as image  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.errors import RowError  # pylint: disable=g-import-not-at-top
  with pytest.raises(RowError) as e:
    image.probe_image(b'plain text, not an image', 10**8)
  assert e.value.message == ('not a recognised image (UnidentifiedImageError: cannot '
                             'identify image file)')
