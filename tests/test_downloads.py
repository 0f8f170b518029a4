"""The first command a user types after unpacking a famous dataset's download:
`tfrecorder-component convert <the folder> <out>`, on miniature replicas laid out as
the official archives (or Kaggle zips) extract (`dataset_replicas`), read back and
compared with the reference reading, TFDS's own builder's where it runs offline.

Each record is found back by its `image/key/sha256` (every image of a replica has
bytes of its own), so a reading is {split: {(image path under the replica, label)}},
whatever the record's source_id. A dataset without a split of its own (TFDS gives all
of it to train) may be split by hash: there only the images and labels are compared.
Junk that macOS and Windows leave (AppleDouble `._*` files, `__MACOSX/`, `.DS_Store`,
`Thumbs.db`, `desktop.ini`) changes nothing, on disk and on S3 (moto's server).

The real command in subprocesses, as a user runs it (`test_cli_first_hour.run_cli`'s
way)."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import subprocess
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

import dataset_replicas as replicas
from dataset_replicas import Reference
from records import feature, read_split
from runs import CLI

SPLITS = ('train', 'eval', 'test')


def run_cli(*args, **env):
  return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', **env))


@dataclasses.dataclass
class Run:
  """One `convert` and its output read back."""
  args: Sequence[str]
  out: str
  done: subprocess.CompletedProcess
  reading: Dict[str, set] = dataclasses.field(default_factory=dict)
  labels: List[str] = dataclasses.field(default_factory=list)  # labels.txt's lines
  records: List[Tuple[str, str, object]] = dataclasses.field(default_factory=list)
  examples_json: dict = dataclasses.field(default_factory=dict)
  summary: dict = dataclasses.field(default_factory=dict)
  errors: List[dict] = dataclasses.field(default_factory=list)
  problems: List[str] = dataclasses.field(default_factory=list)  # found reading it back

  @property
  def stderr(self) -> str:
    return self.done.stderr

  @property
  def last_line(self) -> str:
    lines = self.done.stderr.strip().splitlines()
    return lines[-1] if lines else ''

  def describe(self) -> str:
    """What happened, in a few lines, for assertion messages."""
    shown = ' '.join(self.args)
    counts = {s: len(v) for s, v in self.reading.items()}
    return (f'\n  $ tfrecorder-component {shown}\n  exit {self.done.returncode}; last stderr '
            f'line: {self.last_line[:500]!r}\n  labels.txt: {self.labels}\n'
            f'  records per split: {counts}; failed rows: {self.summary.get("rows_failed")}'
            f' {self.summary.get("errors_per_reason") or ""}' +
            (f'\n  read back: {self.problems[:5]}' if self.problems else ''))


def _read_output(run: Run, index: Dict[str, str]) -> None:
  """Fills `run` from its output folder: the reading (by sha256 into `index`),
  labels.txt, examples.json, the report's summary and errors. Every record's label id
  is checked against labels.txt, and that no image is written twice (into
  `run.problems`)."""
  out = run.out
  # A failed run keeps its report in <out>/report (a new folder), else beside.
  for report in (os.path.join(out, 'report'), os.path.join(out + '.failed', 'report'),
                 os.path.join(out, 'report.failed')):
    if os.path.exists(os.path.join(report, 'summary.json')):
      with open(os.path.join(report, 'summary.json'), encoding='utf-8') as f:
        run.summary = json.load(f)
      if os.path.exists(os.path.join(report, 'errors.jsonl')):
        with open(os.path.join(report, 'errors.jsonl'), encoding='utf-8') as f:
          run.errors = [json.loads(line) for line in f if line.strip()]
      break
  if not os.path.exists(os.path.join(out, 'examples.json')):
    return
  with open(os.path.join(out, 'examples.json'), encoding='utf-8') as f:
    run.examples_json = json.load(f)
  with open(os.path.join(out, 'labels.txt'), encoding='utf-8') as f:
    run.labels = f.read().splitlines()
  seen = {}
  for split in run.examples_json['split_names']:
    for example in read_split(os.path.join(out, f'Split-{split}')):
      sha = feature(example, 'image/key/sha256')[0].decode()
      source_id = feature(example, 'image/source_id')[0].decode()
      path = index.get(sha, f'<no image of the replica: {source_id}>')
      if sha in seen:
        run.problems.append(f'{path} written twice ({seen[sha]} and {split})')
      seen[sha] = split
      texts = [t.decode() for t in feature(example, 'image/class/text')]
      ids = feature(example, 'image/class/label')
      for text, label_id in zip(texts, ids):
        if not (0 <= label_id < len(run.labels) and run.labels[label_id] == text):
          run.problems.append(f'{path}: label {text!r} has id {label_id}, not its line of '
                              'labels.txt')
      label = texts[0] if len(texts) == 1 else '|'.join(texts) if texts else '<no label>'
      run.reading.setdefault(split, set()).add((path, label))
      run.records.append((split, path, example))


@pytest.fixture(scope='module')
def replica(tmp_path_factory):
  """replica(name, junk=False) -> (Reference, image index): each replica written once
  a module."""
  made = {}

  def get(name: str, junk: bool = False):
    if (name, junk) not in made:
      root = tmp_path_factory.mktemp(name + ('-junk' if junk else ''))
      reference = getattr(replicas, name)(root)
      if junk:
        replicas.add_junk(root)
      made[name, junk] = reference, replicas.image_index(str(root))
    return made[name, junk]
  return get


@pytest.fixture(scope='module')
def convert(replica, tmp_path_factory):
  """convert(name, sub='', junk=False, *options) -> Run of `convert <root>/<sub> OUT`,
  run once a module."""
  runs = {}

  def run(name: str, sub: str = '', junk: bool = False, *options) -> Run:
    key = (name, sub, junk, options)
    if key not in runs:
      reference, index = replica(name, junk)
      source = os.path.join(reference.root, sub) if sub else reference.root
      out = str(tmp_path_factory.mktemp('out') / 'out')
      args = ['convert', source, out, *options]
      runs[key] = Run(args, out, run_cli(*args))
      _read_output(runs[key], index)
    return runs[key]
  return run


def assert_reads_as(run: Run, reference: Reference) -> None:
  """Exit 0, no failed row, the reference's classes in labels.txt, and every image with
  its label in the reference's split (any split, for a dataset split by hash)."""
  returncode = run.done.returncode
  assert returncode == 0, run.describe() + '\n' + run.stderr[-2000:]
  assert not run.problems, run.describe()
  assert run.summary.get('rows_failed') == 0 and not run.errors, (
      run.describe() + f'\n  first errors: {run.errors[:3]}')
  assert {label for label in run.labels if label} == reference.classes, run.describe()
  if reference.hash_split:
    assert set(run.reading) <= set(SPLITS), run.describe()
    found = set().union(*run.reading.values()) if run.reading else set()
    assert found == reference.images, _difference(run, found, reference.images)
  else:
    assert run.reading == {s: v for s, v in reference.splits.items() if v}, _difference(
        run, run.reading, reference.splits)


def _difference(run: Run, found, expected) -> str:
  if isinstance(expected, dict):
    lines = []
    for split in sorted(set(found) | set(expected)):
      extra = sorted(found.get(split, set()) - expected.get(split, set()))
      missing = sorted(expected.get(split, set()) - found.get(split, set()))
      if extra or missing:
        lines.append(f'  {split}: not expected {extra[:6]}; missing {missing[:6]}')
    return run.describe() + '\n' + '\n'.join(lines)
  return (run.describe() + f'\n  not expected {sorted(found - expected)[:6]}; '
          f'missing {sorted(expected - found)[:6]}')


def assert_one_line_refusal(run: Run) -> str:
  """Exit non-zero, no traceback, the message one line: the last, `error: ...`."""
  assert run.done.returncode != 0, run.describe()
  assert 'Traceback' not in run.stderr, run.stderr[-2000:]
  lines = run.stderr.strip().splitlines()
  assert lines and lines[-1].startswith('error: '), run.describe()
  assert sum(line.startswith('error') for line in lines) == 1, run.stderr[-2000:]
  return lines[-1]


def follow_suggestion(line: str, tmp_path) -> Optional[Run]:
  """The command a refusal suggests in backticks, run exactly as printed with OUT a
  fresh folder; None where it suggests none."""
  found = re.search(r'`(tfrecorder-component convert [^`]+)`', line)
  if not found:
    return None
  words = shlex.split(found.group(1))
  assert 'OUT' in words, f'the suggested command names no OUT to replace: {found.group(1)}'
  out = str(tmp_path / 'suggested-out')
  args = [out if w == 'OUT' else w for w in words[1:]]
  return Run(args, out, run_cli(*args))


def warning_lines(run: Run) -> List[str]:
  return [line for line in run.stderr.splitlines() if line.lower().startswith('warning')]


# --- the datasets ---------------------------------------------------------------------------


def test_cats_vs_dogs_is_read_through_petimages(replica, convert):
  reference, _ = replica('cats_vs_dogs')
  run = convert('cats_vs_dogs')
  assert_reads_as(run, reference)
  assert 'PetImages' in run.stderr, run.describe() + '\n' + run.stderr[-1500:]


@pytest.mark.parametrize('sub', ['food-101', ''], ids=['food-101', 'its-parent'])
def test_food101_splits_as_its_meta_lists(replica, convert, sub):
  reference, _ = replica('food101')
  run = convert('food101', sub)
  assert_reads_as(run, reference)


def test_caltech101_classes_are_the_object_category_folders(replica, convert):
  reference, _ = replica('caltech101')
  run = convert('caltech101')
  assert_reads_as(run, reference)
  assert '101_ObjectCategories' in run.stderr, run.describe() + '\n' + run.stderr[-1500:]


def test_oxford_iiit_pet_reads_its_lists(replica, convert):
  reference, _ = replica('oxford_iiit_pet')
  run = convert('oxford_iiit_pet')
  assert_reads_as(run, reference)
  found = {path for images in run.reading.values() for path, _ in images}
  assert f'images/{replicas.PETS_UNLISTED}.jpg' not in found


def test_stanford_dogs_splits_as_its_mat_lists(replica, convert):
  reference, _ = replica('stanford_dogs')
  run = convert('stanford_dogs')
  assert_reads_as(run, reference)


def test_stanford_dogs_kaggle_copy_reads_its_class_folders(replica, convert):
  reference, _ = replica('stanford_dogs_kaggle')
  run = convert('stanford_dogs_kaggle')
  assert_reads_as(run, reference)


def _warns_of(run: Run, folder: str, count: int) -> bool:
  """A warning line naming the folder and its count of images (`3 images`)."""
  return any(re.search(rf'\b{folder}\b', line) and re.search(rf'\b{count} images?\b', line)
             for line in warning_lines(run))


def test_imagenet_kaggle_root_reads_train_and_val_and_warns_of_test(replica, convert):
  reference, _ = replica('imagenet_kaggle')
  run = convert('imagenet_kaggle')
  assert_reads_as(run, reference)
  assert _warns_of(run, 'test', replicas.IMAGENET_TEST), (
      run.describe() + f'\n  warnings: {warning_lines(run)}')


def test_imagenet_cls_loc_data_folder_reads_train_and_warns_of_val_and_test(replica, convert):
  reference, _ = replica('imagenet_kaggle')
  run = convert('imagenet_kaggle', os.path.join('ILSVRC', 'Data', 'CLS-LOC'))
  assert_reads_as(run, reference.only(['train']))
  warnings = warning_lines(run)
  assert _warns_of(run, 'val', len(replicas.IMAGENET_VAL)), (
      run.describe() + f'\n  warnings: {warnings}')
  assert _warns_of(run, 'test', replicas.IMAGENET_TEST), (
      run.describe() + f'\n  warnings: {warnings}')


def test_imagenette_reads_its_folders_not_its_noisy_label_csv(replica, convert):
  reference, _ = replica('imagenette')
  run = convert('imagenette', 'imagenette2-160')
  unlabelled = [path for _, path, ex in run.records if not feature(ex, 'image/class/text')]
  assert not unlabelled, run.describe() + f'\n  records without a label: {unlabelled[:5]}'
  noisy = [k for k in run.examples_json.get('features', {}) if k.startswith('noisy_labels')]
  assert not noisy, run.describe() + f'\n  features: {noisy}'
  assert_reads_as(run, reference)


def test_oxford_flowers102_reads_its_mat_files(replica, convert):
  reference, _ = replica('oxford_flowers102')
  run = convert('oxford_flowers102')
  assert_reads_as(run, reference)
  # TFDS's label: the class number - 1, so labels.txt's line k is the class k + 1.
  assert run.labels == [str(k) for k in range(1, 12)], run.describe()


def test_oxford_flowers102_images_folder_alone_is_refused(replica, convert, tmp_path):
  reference, _ = replica('oxford_flowers102')
  run = convert('oxford_flowers102', 'jpg')
  line = assert_one_line_refusal(run)
  assert os.path.join(reference.root, 'jpg') in line, line
  assert 'class folder' in line.lower(), line
  suggested = follow_suggestion(line, tmp_path)
  if suggested:
    _read_output(suggested, replicas.image_index(reference.root))
    assert_reads_as(suggested, reference)


def test_dtd_reads_its_first_fold_and_is_no_yolo_dataset(replica, convert):
  reference, _ = replica('dtd')
  run = convert('dtd', 'dtd')
  assert 'YOLO' not in run.stderr, run.describe()
  assert_reads_as(run, reference)


def test_eurosat_rgb_reads_its_class_folders(replica, convert):
  reference, _ = replica('eurosat_rgb')
  run = convert('eurosat_rgb')
  assert_reads_as(run, reference)


@pytest.mark.parametrize('sub', ['CUB_200_2011', ''], ids=['CUB_200_2011', 'its-parent'])
def test_cub_200_2011_splits_as_its_train_test_split(replica, convert, sub):
  reference, _ = replica('cub_200_2011')
  run = convert('cub_200_2011', sub)
  assert_reads_as(run, reference)


def test_coco2017_keeps_boxes_and_category_ids(replica, convert):
  """A regression test: COCO roots are read right today."""
  reference, _ = replica('coco2017')
  run = convert('coco2017')
  returncode = run.done.returncode
  assert returncode == 0, run.describe() + '\n' + run.stderr[-2000:]
  assert run.summary.get('rows_failed') == 0 and not run.problems, run.describe()
  found = {}
  for split, path, example in run.records:
    ids = feature(example, 'image/object/class/label')
    names = [t.decode() for t in feature(example, 'image/object/class/text')]
    assert len(feature(example, 'image/object/bbox/xmin')) == len(ids), path
    found[path] = (split, list(zip(ids, names)))
  expected = {path: (split, reference.objects[path])
              for split, images in reference.splits.items() for path, _ in images}
  assert found == expected, run.describe()
  assert run.summary['objects_written'] == sum(len(v) for v in reference.objects.values())


def test_sports100_reads_its_split_folders(replica, convert):
  reference, _ = replica('sports100')
  run = convert('sports100')
  assert_reads_as(run, reference)


def test_gtsrb_reads_train_and_test_csvs_not_meta(replica, convert):
  reference, _ = replica('gtsrb')
  run = convert('gtsrb')
  meta = [path for _, path, _ in run.records if path.startswith('Meta/')]
  assert not meta, run.describe() + f'\n  Meta/ images converted: {meta[:5]}'
  assert_reads_as(run, reference)
  assert run.labels == [str(k) for k in range(11)], run.describe()  # ids by number


def test_tf_flowers_is_read_through_flower_photos(replica, convert):
  reference, _ = replica('tf_flowers')
  run = convert('tf_flowers')
  assert_reads_as(run, reference)


def test_eurosat_multispectral_tiffs_are_refused_or_failed_by_name(replica, convert):
  """13-band uint16 TIFFs are no image a tf.train.Example's image/encoded can hold
  (tf.io.decode_image reads no TIFF): a one-line refusal naming them, or every row
  failed as `unsupported_format` (the reason the report guide gives TIFF), in a failure
  message of at most 5 lines naming the .tif files. (The TIFFs are written by hand,
  tifffile not being installed with the tests; tifffile 2025.5.10 reads them back as
  the [16, 16, 13] uint16 arrays written.)"""
  replica('eurosat_all_bands')
  run = convert('eurosat_all_bands')
  problems = []
  if run.done.returncode == 0:
    problems.append('exit 0')
  if 'Traceback' in run.stderr:
    problems.append('a traceback')
  lines = run.stderr.strip().splitlines()
  errors_at = [i for i, line in enumerate(lines) if line.startswith('error')]
  if not errors_at:
    problems.append('no error line')
  else:
    if len(errors_at) > 1:
      problems.append(f'{len(errors_at)} error lines, not one message: '
                      f'{[lines[i][:80] for i in errors_at]}')
    message = '\n'.join(lines[errors_at[-1]:])
    if len(lines) - errors_at[-1] > 5:
      problems.append('the message is over 5 lines')
    if '.tif' not in message.lower():
      problems.append('the message names no .tif')
  if run.errors:
    reasons = sorted({e['reason'] for e in run.errors})
    if reasons != ['unsupported_format']:
      problems.append(f'rows failed as {reasons}, not unsupported_format: '
                      f'{run.errors[0].get("message")!r}')
    if {e['uri'].rsplit('.', 1)[-1] for e in run.errors} != {'tif'} or len(run.errors) != 4:
      problems.append(f'failed rows {[e["uri"] for e in run.errors]}, not the 4 TIFFs')
  assert not problems, run.describe() + '\n  ' + '; '.join(problems)


# --- junk an operating system leaves ------------------------------------------------------


@pytest.mark.parametrize('name', ['tf_flowers', 'cats_vs_dogs'])
def test_mac_and_windows_junk_changes_nothing(replica, convert, name):
  reference, _ = replica(name)
  run = convert(name, '', True)
  assert_reads_as(run, reference)
  clean = convert(name)
  if clean.done.returncode == 0:
    assert run.reading == clean.reading, run.describe() + clean.describe()
    assert run.labels == clean.labels


def test_mac_and_windows_junk_on_s3_changes_nothing(replica, convert, s3_bucket, tmp_path):
  reference, index = replica('tf_flowers', True)
  s3_bucket.upload_tree(reference.root, 'bkt', 'downloads/tf_flowers')
  out = str(tmp_path / 'out')
  args = ['convert', 's3://bkt/downloads/tf_flowers', out]
  run = Run(args, out, run_cli(*args))
  _read_output(run, index)
  assert_reads_as(run, reference)
  clean = convert('tf_flowers')
  if clean.done.returncode == 0:
    assert run.reading == clean.reading, run.describe() + clean.describe()


# --- the datasets' notes are never read as rows --------------------------------------------


NOTES = ('README.txt', 'license_agreement.txt', 'images.txt', 'classes.txt', 'readme[1].txt',
         'Meta.csv', 'README', 'labels.txt', 'train.txt', 'test.txt', 'sports.csv',
         'attributes.txt', 'bounding_boxes.txt', 'image_class_labels.txt')


@pytest.mark.parametrize('name, sub', [('food101', 'food-101'), ('food101', ''),
                                       ('cub_200_2011', 'CUB_200_2011'), ('cub_200_2011', ''),
                                       ('cats_vs_dogs', ''), ('gtsrb', '')])
def test_a_datasets_notes_are_never_read_as_rows(replica, convert, name, sub):
  replica(name)
  run = convert(name, sub)
  read_as_rows = sorted({os.path.basename(str(e.get('source', ''))) for e in run.errors}
                        & set(NOTES))
  assert not read_as_rows, run.describe() + f'\n  rows failed in {read_as_rows}'
  said = [line for line in run.stderr.splitlines()
          if re.search(r'\brows?\b', line) and any(n in line for n in NOTES)]
  assert not said, run.describe() + f'\n  {said[:3]}'
