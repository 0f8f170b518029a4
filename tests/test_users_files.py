"""Nothing of the user's is deleted or changed, whatever output folder a run is given:
an output that is, holds or lies inside an input is refused before anything is read,
and `--overwrite` replaces an earlier output of this tool and nothing else. Real
folders and the real command, every file compared byte for byte before and after."""
import json
import os
import pathlib
import subprocess

import pandas
import pytest

from images import write_image, write_text
from runs import CLI, tree
import tfrecorder_component as trc
from tfrecorder_component.errors import UsageError


def project(folder):
  """A user's folder: class folders of PNGs under photos/, a manifest naming them, a
  label map and notes of their own."""
  rows = []
  for i in range(6):
    label = ('cat', 'dog')[i % 2]
    write_image(os.path.join(folder, 'photos', label, f'{i}.png'), 'PNG', seed=i)
    rows.append(f'TRAIN,photos/{label}/{i}.png,{label}\n')
  write_text(os.path.join(folder, 'm.csv'), ''.join(rows))
  write_text(os.path.join(folder, 'labels.txt'), 'cat\ndog\n')
  write_text(os.path.join(folder, 'notes.txt'), 'where the photos came from\n')
  return folder


def cli(*args, cwd):
  return subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))


@pytest.mark.parametrize('args, said', [
    (['m.csv', '.', '--overwrite'], 'holds the manifest {}/m.csv'),
    (['m.csv', '.'], 'holds the manifest {}/m.csv'),
    (['photos', 'photos', '--overwrite'], 'is the input folder {}/photos'),
    (['photos', 'photos/out'], 'lies inside the input folder {}/photos'),
    (['photos', 'link', '--overwrite'], 'is the input folder {}/photos'),
    (['m.csv', 'out', '--image-root', '.'], 'lies inside the image root {}'),
    (['m.csv', 'photos/cat', '--overwrite', '--image-root', 'photos'],
     'lies inside the image root {}/photos'),
    (['m.csv', '..', '--overwrite'], 'holds the manifest {}/m.csv'),
])
def test_an_output_that_is_holds_or_lies_inside_an_input_is_refused(tmp_path, args, said):
  """`convert m.csv . --overwrite` in the inputs' folder, an image folder converted into
  itself (or through a link to it) or into a folder inside it: one line, exit 2, and
  every file of the user's as it was, nothing created."""
  folder = project(str(tmp_path / 'project'))
  os.symlink('photos', os.path.join(folder, 'link'))
  before = tree(str(tmp_path))
  done = cli('convert', *args, cwd=folder)
  assert done.returncode == 2, (done.stdout, done.stderr)
  out = os.path.normpath(os.path.join(folder, args[1]))
  assert done.stderr.strip().splitlines() == [
      f'error: the output folder {out} {said.format(folder)}: convert into a folder outside '
      'the inputs (nothing was written)']
  assert tree(str(tmp_path)) == before


def test_label_and_class_maps_are_inputs_for_convert_and_the_accessor(tmp_path):
  folder = project(str(tmp_path / 'project'))
  write_text(os.path.join(folder, 'maps', 'label_map.pbtxt'), 'item { name: "cat" id: 1 }\n')
  write_text(os.path.join(folder, 'maps', 'classes.json'), '{"dog": "animal"}')
  before = tree(folder)
  manifest = os.path.join(folder, 'm.csv')
  with pytest.raises(UsageError, match='the output folder .*/maps holds the label map'):
    trc.convert(manifest, os.path.join(folder, 'maps'), overwrite=True,
                label_map=os.path.join(folder, 'maps', 'label_map.pbtxt'))
  with pytest.raises(UsageError, match='the output folder .*/maps holds the class map'):
    trc.convert(manifest, os.path.join(folder, 'maps'), overwrite=True,
                class_map=os.path.join(folder, 'maps', 'classes.json'))
  with pytest.raises(UsageError, match='the output folder .*/out lies inside the image root'):
    trc.convert(pathlib.Path(manifest), pathlib.Path(folder) / 'out',
                image_root=pathlib.Path(folder))  # paths as pathlib gives them
  frame = pandas.DataFrame({'image_uri': ['photos/cat/0.png'], 'label': ['cat']})
  with pytest.raises(UsageError, match='the output folder .*/out lies inside the image root'):
    frame.tensorflow.to_tfrecord(output_dir=os.path.join(folder, 'out'), image_root=folder)
  assert tree(folder) == before


def test_overwrite_replaces_an_earlier_output_and_keeps_the_users_files_in_it(tmp_path):
  """An output the user added files to (notes, a notebook, a folder of their own) is
  replaced by `--overwrite`: every file of the earlier run goes (a split the new run
  does not write included), every file of the user's stays as it was."""
  folder = project(str(tmp_path / 'project'))
  # Rows without a split, all hashed into the one bucket holdout: the first run writes
  # Split-holdout only (a split no record went to is not written), which m.csv's TRAIN
  # rows do not give.
  write_text(os.path.join(folder, 'first.csv'),
             ',photos/cat/0.png,cat\n,photos/dog/1.png,dog\n,photos/cat/2.png,cat\n')
  first = cli('convert', 'first.csv', 'out', '--splits', 'holdout=1', cwd=folder)
  assert first.returncode == 0, first.stderr
  out = os.path.join(folder, 'out')
  assert sorted(n for n in os.listdir(out) if n.startswith('Split-')) == ['Split-holdout']
  write_text(os.path.join(out, 'NOTES.md'), '# what this dataset is\n')
  write_text(os.path.join(out, 'analysis.ipynb'), json.dumps({'cells': []}))
  write_text(os.path.join(out, 'figures', 'labels.png'), 'not really a png')
  mine = {p: h for p, h in tree(out).items()
          if p.split('/')[0] in ('NOTES.md', 'analysis.ipynb', 'figures')}
  assert len(mine) == 4
  refused = cli('convert', 'm.csv', 'out', cwd=folder)
  assert refused.returncode == 2
  assert refused.stderr.strip().splitlines() == [
      f'error: {out} holds an earlier output and files this tool did not write '
      '(NOTES.md, analysis.ipynb, figures), which stay: pass overwrite=True (--overwrite) '
      'to replace it, or convert into a new or empty folder']
  done = cli('convert', 'm.csv', 'out', '--overwrite', cwd=folder)
  assert done.returncode == 0, done.stderr
  after = tree(out)
  assert {p: h for p, h in after.items() if p in mine} == mine
  assert not os.path.exists(os.path.join(out, 'Split-holdout'))
  # m.csv's rows are all TRAIN: eval and test got no record and are not written.
  assert sorted(n for n in os.listdir(out) if n not in ('NOTES.md', 'analysis.ipynb', 'figures')) \
      == ['Split-train', '_SUCCESS', 'examples.json',
          'label_map.csv', 'label_map.pbtxt', 'labels.txt', 'report']
  assert trc.load_dataset(out, 'train') is not None


def test_overwrite_refuses_a_folder_that_is_no_output_and_changes_nothing(tmp_path):
  """A folder of the user's own files, no output of this tool, is refused with and
  without `--overwrite`, naming what it holds; without it the message does not point at
  `--overwrite`. A `report` folder of the user's is no earlier output either."""
  folder = project(str(tmp_path / 'project'))
  mine = os.path.join(str(tmp_path), 'mine')
  write_text(os.path.join(mine, 'a.txt'), 'mine')
  write_text(os.path.join(mine, 'report', 'q3.pdf'), 'mine too')
  before = tree(str(tmp_path))
  plain = cli('convert', 'm.csv', mine, cwd=folder)
  assert plain.returncode == 2
  assert plain.stderr.strip().splitlines() == [
      f'error: {mine} is not empty (it holds a.txt, report): convert into a new or empty '
      'folder']
  forced = cli('convert', 'm.csv', mine, '--overwrite', cwd=folder)
  assert forced.returncode == 2
  assert forced.stderr.strip().splitlines() == [
      f'error: {mine} is not an output of this tool (it holds a.txt, report): overwrite '
      'replaces only an earlier output, so nothing there was changed; convert into a new '
      'or empty folder']
  assert tree(str(tmp_path)) == before


def test_files_named_like_an_outputs_do_not_make_an_output(tmp_path):
  """A folder holding a `_SUCCESS` (as Hadoop and Spark write), an `examples.json`,
  `labels.txt` and a `parquet` folder of the user's own is no output of this tool:
  `--overwrite` refuses it and nothing in it changes."""
  folder = project(str(tmp_path / 'project'))
  mine = os.path.join(str(tmp_path), 'mine')
  write_text(os.path.join(mine, '_SUCCESS'), '')
  write_text(os.path.join(mine, 'examples.json'), '[{"text": "an example of mine"}]')
  write_text(os.path.join(mine, 'labels.txt'), 'a\nb\n')
  write_text(os.path.join(mine, 'parquet', 'part-0.parquet'), 'not really parquet')
  write_text(os.path.join(mine, 'report', 'summary.json'), '{"quarter": 3}')
  before = tree(str(tmp_path))
  forced = cli('convert', 'm.csv', mine, '--overwrite', cwd=folder)
  assert forced.returncode == 2
  assert forced.stderr.strip().splitlines() == [
      f'error: {mine} is not an output of this tool (it holds _SUCCESS, examples.json, '
      'labels.txt, parquet, report): overwrite replaces only an earlier output, so nothing '
      'there was changed; convert into a new or empty folder']
  assert tree(str(tmp_path)) == before


def test_a_failed_runs_report_does_not_replace_a_folder_of_the_users(tmp_path):
  """A failed overwrite keeps its report beside the output, in `<output>.failed`, unless
  a folder of the user's has that name: then it is kept inside the old output, and the
  user's folder is left as it was (a later successful run does not remove it either)."""
  folder = project(str(tmp_path / 'project'))
  assert cli('convert', 'm.csv', 'out', cwd=folder).returncode == 0
  write_text(os.path.join(folder, 'out.failed', 'mine.txt'), 'not a report')
  write_text(os.path.join(folder, 'bad.csv'), 'TRAIN,photos/cat/0.png,cat\nTRAIN,gone.png,cat\n')
  before = tree(os.path.join(folder, 'out.failed'))
  failed = cli('convert', 'bad.csv', 'out', '--overwrite', cwd=folder)
  assert failed.returncode == 1
  assert os.path.isfile(os.path.join(folder, 'out', 'report.failed', 'errors.jsonl'))
  assert tree(os.path.join(folder, 'out.failed')) == before
  assert cli('convert', 'm.csv', 'out', '--overwrite', cwd=folder).returncode == 0
  assert tree(os.path.join(folder, 'out.failed')) == before
  assert not os.path.exists(os.path.join(folder, 'out', 'report.failed'))


@pytest.mark.parametrize('report_dir, named', [
    ('.', 'half, labels.txt, m.csv, ...'),       # the project itself
    ('photos', 'cat, dog'),                      # the images
    ('mine', 'summary.txt'),                     # a folder of the user's own
    ('half', 'report.html'),                     # report-like names, no summary.json
    ('theirs', 'report.html, summary.json'),     # a summary.json that is not this tool's
])
def test_validate_replaces_an_earlier_report_and_never_a_folder_of_the_users(
    tmp_path, report_dir, named):
  """`validate --report-dir` empties an earlier report to write the new one; any other
  folder is refused in one line, exit 2, before anything is read or removed."""
  folder = project(str(tmp_path / 'project'))
  write_text(os.path.join(folder, 'mine', 'summary.txt'), 'my own summary\n')
  write_text(os.path.join(folder, 'half', 'report.html'), '<p>my page</p>\n')
  write_text(os.path.join(folder, 'theirs', 'summary.json'), '{"notes": "mine"}\n')
  write_text(os.path.join(folder, 'theirs', 'report.html'), '<p>my page</p>\n')
  before = tree(folder)
  refused = cli('validate', 'm.csv', '--report-dir', report_dir, cwd=folder)
  assert refused.returncode == 2, refused.stderr
  assert refused.stdout == ''
  assert refused.stderr.splitlines() == [
      f'error: --report-dir {os.path.realpath(os.path.join(folder, report_dir))} holds files '
      f'that are no earlier report ({named}): name a new or empty folder, or an earlier '
      "report's"]
  assert tree(folder) == before
  # An earlier report is replaced (a file of an older version of it removed), an empty
  # folder of the user's filled and kept.
  for name in ('report', 'empty'):
    os.makedirs(os.path.join(folder, name), exist_ok=True)
    assert cli('validate', 'm.csv', '--report-dir', name, cwd=folder).returncode == 0
  write_text(os.path.join(folder, 'report', 'box_issues.jsonl'), '{"stale": true}\n')
  assert cli('validate', 'm.csv', '--report-dir', 'report', cwd=folder).returncode == 0
  assert open(os.path.join(folder, 'report', 'box_issues.jsonl')).read() == ''
  assert sorted(os.listdir(os.path.join(folder, 'report'))) == sorted(
      os.listdir(os.path.join(folder, 'empty'))) == [
          'box_issues.jsonl', 'duplicates.jsonl', 'errors.jsonl', 'report.html',
          'summary.json']


def test_dataflow_with_a_local_input_is_refused_before_any_job(tmp_path):
  """DataflowRunner's workers reach only gs://: a local manifest, image root or output
  is refused in one line, before the output folder is made or Beam is imported."""
  folder = project(str(tmp_path / 'project'))
  flags = ['--runner', 'DataflowRunner', '--project', 'p', '--region', 'r',
           '--temp-location', 'gs://bucket/tmp']
  done = cli('convert', 'm.csv', 'gs://bucket/out', *flags, cwd=folder)
  assert done.returncode == 2
  assert done.stderr.strip().splitlines() == [
      f'error: DataflowRunner cannot read or write the local manifest m.csv: its workers '
      'reach only gs:// (copy it there, or run on this machine without --runner '
      'DataflowRunner)']
  done = cli('convert', 'gs://bucket/m.csv', 'out', *flags, cwd=folder)
  assert done.returncode == 2 and 'the local output folder' in done.stderr
  done = cli('convert', 'gs://bucket/m.csv', 'gs://bucket/out', '--image-root', 'photos',
             *flags, cwd=folder)
  assert done.returncode == 2 and 'the local image root photos' in done.stderr
  assert not os.path.exists(os.path.join(folder, 'out'))


def test_the_component_refuses_an_artifact_inside_its_inputs(tmp_path):
  """The component's outputs (their URIs are the orchestrator's) may not lie inside its
  input base or image root either: the next run would read the records' folder as
  input. Refused before a row is read; the user's files stay as they were."""
  from tfx.types import standard_artifacts  # pylint: disable=g-import-not-at-top
  from tfrecorder_component import ImageExampleGen  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.adapters.component import executor  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.adapters.component.types import ConversionReport  # pylint: disable=g-import-not-at-top
  folder = project(str(tmp_path / 'project'))
  before = tree(folder)
  for gen, inside in ((ImageExampleGen(input_base=folder), 'input base'),
                      (ImageExampleGen(input_base=str(tmp_path / 'elsewhere'),
                                       image_root=folder), 'image root')):
    examples, report = standard_artifacts.Examples(), ConversionReport()
    examples.uri = os.path.join(folder, 'pipeline', 'examples', '1')
    report.uri = str(tmp_path / 'report')
    with pytest.raises(UsageError, match=f'the output folder {examples.uri} lies inside the '
                       f'{inside} {folder}: '):
      executor.Executor().Do({}, {'examples': [examples], 'report': [report]},
                             dict(gen.exec_properties))
  assert tree(folder) == before
