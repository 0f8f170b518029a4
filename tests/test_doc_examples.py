"""Runs every code example of README.md and docs/ (not docs/reference/, which is generated)
against small real data, so a renamed option or a wrong path fails here, not for a user.

Each fenced ```python, ```bash, ```sh or ```console block is one example. It runs in a fresh
folder holding the data the examples name (`manifest.csv`, `images/`, `photos/`,
`annotations.json`, `voc/`, `data.yaml`, ...): Python blocks with the project's
interpreter, shell blocks with `bash -e` and the interpreter's bin folder (the
`tfrecorder-component` command) first on PATH. A block that cannot run here (Vertex AI,
Dataflow, a real bucket, pip from PyPI, scripts that take minutes) carries
`<!-- not run: <reason> -->` on the line above its fence; `<!-- continues -->` there runs a
block after the previous run block of its page, in the same folder, consecutive Python
blocks in one process (so names carry over). `<!-- in: NAME -->` (or `<!-- continues;
in: NAME -->`) runs a Python block with another environment's interpreter, the one
`scripts/NAME-env` prints (`consumers`: TF Model Garden, Keras, TFDS 4.9.6, the
`tfrecord` package; `oracles`: Hugging Face `datasets` ...), never the product's: the
programs a user feeds the output to, each in an environment of its own. Blocks of other
languages (```text output, ```yaml ...) are not run; a fence without a language fails
`test_every_block_is_marked`, so no example escapes by being untagged.
"""
from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

import pytest

from consumer_envs import env_python
from images import write_image, write_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_VENV_BIN = os.path.join(ROOT, '.venv', 'bin')
BIN = _VENV_BIN if os.path.exists(os.path.join(_VENV_BIN, 'python')) else os.path.dirname(
    sys.executable)
PYTHON = os.path.join(BIN, 'python')
RUN_LANGUAGES = ('python', 'bash', 'sh', 'console')
TIMEOUT_S = 600

# Blocks that cannot carry a marker: the README must open with its title and this block,
# byte for byte, so nothing may stand between them.
UNMARKED_NOT_RUN = {
    ('README.md', 'scripts/demo   # set up .venv'):
        'scripts/demo and scripts/test set up .venv and take minutes',
}

_FENCE = re.compile(r'^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[^\s`]*)')
_NOT_RUN = re.compile(r'^\s*<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$')
_CONTINUES = re.compile(r'^\s*<!--\s*continues\s*(;\s*in:\s*[\w-]+\s*)?-->\s*$')
_IN = re.compile(r'^\s*<!--\s*(continues\s*;\s*)?in:\s*(?P<env>[\w-]+)\s*-->\s*$')


@dataclasses.dataclass
class Block:
  """One fenced block of a page: where it is, its language, its code and its marker."""
  page: str          # relative to the repository root
  line: int          # 1-based line of the opening fence
  lang: str
  code: str
  not_run: Optional[str] = None   # the reason, for a block marked not run
  continues: bool = False
  env: Optional[str] = None       # `in: NAME`: run with scripts/NAME-env's python


def pages() -> List[str]:
  """README.md and every page under docs/ but the generated reference."""
  found = ['README.md'] + sorted(
      os.path.relpath(p, ROOT)
      for p in glob.glob(os.path.join(ROOT, 'docs', '**', '*.md'), recursive=True))
  return [p for p in found if not p.startswith(os.path.join('docs', 'reference') + os.sep)]


def parse_blocks(page: str) -> List[Block]:
  """The fenced blocks of `page`, each with the marker on the nearest non-blank line above."""
  with open(os.path.join(ROOT, page), encoding='utf-8') as f:
    lines = f.read().split('\n')
  blocks, i = [], 0
  while i < len(lines):
    match = _FENCE.match(lines[i])
    if not match:
      i += 1
      continue
    indent, fence, lang = match.group('indent'), match.group('fence'), match.group('lang')
    start, body = i, []
    i += 1
    while i < len(lines) and not (lines[i].strip().startswith(fence)
                                  and lines[i].strip().strip(fence[0]) == ''):
      text = lines[i]
      body.append(text[len(indent):] if text.startswith(indent) else text.lstrip())
      i += 1
    i += 1
    above = start - 1
    while above >= 0 and not lines[above].strip():
      above -= 1
    marker = lines[above] if above >= 0 else ''
    block = Block(page, start + 1, lang.lower(), '\n'.join(body) + '\n')
    not_run = _NOT_RUN.match(marker)
    if not_run:
      block.not_run = not_run.group('reason')
    block.continues = bool(_CONTINUES.match(marker))
    env = _IN.match(marker)
    if env:
      block.env = env.group('env')
    for (where, first), reason in UNMARKED_NOT_RUN.items():
      if page == where and block.code.startswith(first):
        block.not_run = reason
    blocks.append(block)
  return blocks


def chains() -> List[List[Block]]:
  """The examples to run: each a block and the blocks that continue it."""
  found = []
  for page in pages():
    last: Optional[List[Block]] = None
    for block in parse_blocks(page):
      if block.lang not in RUN_LANGUAGES or block.not_run is not None:
        continue
      if block.continues and last is not None:
        last.append(block)
      else:
        last = [block]
        found.append(last)
  return found


def chain_id(chain: List[Block]) -> str:
  return f'{chain[0].page}:' + '+'.join(str(b.line) for b in chain)


def test_every_block_is_marked():
  """Every block is run, marked not run with a reason, or of a language never run; a
  `continues` block has a block before it to continue; markers sit above code blocks."""
  problems = []
  for page in pages():
    seen_run = False
    for block in parse_blocks(page):
      where = f'{block.page}:{block.line}'
      if not block.lang:
        problems.append(f'{where}: a fence without a language: tag it (python, bash, text ...)')
      if block.not_run is not None and not block.not_run:
        problems.append(f'{where}: "not run" without a reason')
      if block.not_run is not None and block.continues:
        problems.append(f'{where}: both "not run" and "continues"')
      if block.env is not None and (block.lang != 'python' or not os.path.exists(
          os.path.join(ROOT, 'scripts', f'{block.env}-env'))):
        problems.append(f'{where}: "in: {block.env}" needs a python block and '
                        f'scripts/{block.env}-env')
      if block.continues and not seen_run:
        problems.append(f'{where}: "continues" with no run block before it on the page')
      if block.lang in RUN_LANGUAGES and block.not_run is None:
        seen_run = True
  assert not problems, '\n'.join(problems)
  assert chains(), 'no example found: are README.md and docs/ there?'


# The data the examples name. Small but real: images decode, every manifest parses.

_MANIFEST = '''TRAIN,images/cat-1.jpg,cat
TRAIN,images/cat-2.jpg,cat
TRAIN,images/dog-1.jpg,dog
TRAIN,images/dog-2.png,dog
VALIDATION,images/cat-3.png,cat
VALIDATION,images/dog-3.jpg,dog
TEST,images/cat-4.jpg,cat
TEST,images/dog-4.png,dog
'''
_SPAN_2 = '''TRAIN,images/bird-1.jpg,bird
TRAIN,images/cat-1.jpg,cat
VALIDATION,images/bird-2.png,bird
TEST,images/dog-1.jpg,dog
'''
_NEW_PHOTOS = '''TRAIN,images/cat-1.jpg,cat
TRAIN,images/dog-1.jpg,dog
TRAIN,images/cat-9.jpg,cat
TRAIN,images/notes.jpg,dog
'''
_HEIGHT, _WIDTH = 48, 64


def _coco(image_names: List[str]) -> Dict:
  """A COCO detection file over `image_names`: two objects an image, with polygons and
  keypoints, so --include-masks and --include-keypoints have something to write."""
  images, annotations = [], []
  for i, name in enumerate(image_names, 1):
    images.append({'id': i, 'file_name': name, 'height': _HEIGHT, 'width': _WIDTH})
    for j, (x, y, w, h) in enumerate([(4, 6, 20, 16), (30, 20, 24, 20)]):
      annotations.append({
          'id': 10 * i + j, 'image_id': i, 'category_id': 1 + j, 'bbox': [x, y, w, h],
          'area': w * h, 'iscrowd': 0,
          'segmentation': [[x, y, x + w, y, x + w, y + h, x, y + h]],
          'keypoints': [x + 2, y + 2, 2, x + w - 2, y + h - 2, 2], 'num_keypoints': 2})
  categories = [{'id': 1, 'name': 'cat', 'keypoints': ['nose', 'tail']},
                {'id': 2, 'name': 'dog', 'keypoints': ['nose', 'tail']}]
  return {'images': images, 'annotations': annotations, 'categories': categories}


def _voc(filename: str, objects: List[Tuple[str, int, int, int, int]]) -> str:
  parts = [f'<annotation><filename>{filename}</filename><size><width>{_WIDTH}</width>'
           f'<height>{_HEIGHT}</height><depth>3</depth></size>']
  for name, xmin, ymin, xmax, ymax in objects:
    parts.append(f'<object><name>{name}</name><difficult>0</difficult><truncated>0</truncated>'
                 f'<bndbox><xmin>{xmin}</xmin><ymin>{ymin}</ymin><xmax>{xmax}</xmax>'
                 f'<ymax>{ymax}</ymax></bndbox></object>')
  return ''.join(parts) + '</annotation>\n'


def write_fixture(folder: str) -> None:
  """Writes the examples' data into `folder`."""
  def image(path: str, seed: int) -> None:
    fmt = 'PNG' if path.endswith('.png') else 'JPEG'
    write_image(os.path.join(folder, path), fmt, height=_HEIGHT, width=_WIDTH, seed=seed)

  names = ['cat-1.jpg', 'cat-2.jpg', 'cat-3.png', 'cat-4.jpg', 'dog-1.jpg', 'dog-2.png',
           'dog-3.jpg', 'dog-4.png', 'bird-1.jpg', 'bird-2.png']
  for seed, name in enumerate(names):
    image(f'images/{name}', seed)
  write_text(os.path.join(folder, 'images', 'notes.jpg'), 'not an image\n')
  write_text(os.path.join(folder, 'manifest.csv'), _MANIFEST)
  # Most users' manifests: TRAIN and VALIDATION rows, no TEST.
  write_text(os.path.join(folder, 'train-val.csv'),
             ''.join(l + '\n' for l in _MANIFEST.splitlines() if not l.startswith('TEST')))
  # What scripts/demo leaves in the clone (pipelines/demo_data.py), a few digits of it.
  digits = ['split,image_uri,label']
  for seed, (split, label) in enumerate([('TRAIN', 'zero'), ('TRAIN', 'one'),
                                         ('VALIDATION', 'zero'), ('TEST', 'one'),
                                         ('UNASSIGNED', 'zero'), ('UNASSIGNED', 'one')]):
    image(f'tfx_home/data/digits/images/{label}/digit_{seed:04d}.png', 40 + seed)
    digits.append(f'{split},images/{label}/digit_{seed:04d}.png,{label}')
  write_text(os.path.join(folder, 'tfx_home', 'data', 'digits', 'manifest.csv'),
             '\n'.join(digits) + '\n')
  write_text(os.path.join(folder, 'span-2.csv'), _SPAN_2)
  # Kaggle's 100 Sports CSV, and a header of names of its own (formats.md's `columns`).
  sports = ['class id,filepaths,labels,data set']
  for seed, (class_id, label, split) in enumerate([
      (0, 'air hockey', 'train'), (1, 'archery', 'train'), (0, 'air hockey', 'valid'),
      (1, 'archery', 'test')]):
    image(f'{split}/{label}/{seed}.jpg', 60 + seed)
    sports.append(f'{class_id},{split}/{label}/{seed}.jpg,{label},{split}')
  write_text(os.path.join(folder, 'sports.csv'), '\n'.join(sports) + '\n')
  write_text(os.path.join(folder, 'photos.csv'), 'photo file,kind,data set\n'
             'images/cat-1.jpg,cat,train\nimages/dog-1.jpg,dog,valid\n'
             'images/cat-2.jpg,cat,test\n')
  write_text(os.path.join(folder, 'new-photos.csv'), _NEW_PHOTOS)
  for seed, label in enumerate(['cat', 'cat', 'cat', 'dog', 'dog', 'dog']):
    image(f'photos/{label}/{label}-{seed}.{"jpg" if label == "cat" else "png"}', 20 + seed)
  write_text(os.path.join(folder, 'annotations.json'),
             json.dumps(_coco([f'images/{n}' for n in names[:8]]), indent=1))
  for seed, (stem, objects) in enumerate([
      ('street-1', [('cat', 4, 6, 24, 22), ('dog', 30, 20, 54, 40)]),
      ('street-2', [('dog', 10, 10, 40, 30)]),
      ('street-3', [('cat', 2, 2, 30, 30)])]):
    image(f'voc/{stem}.jpg', 40 + seed)
    write_text(os.path.join(folder, 'voc', f'{stem}.xml'), _voc(f'{stem}.jpg', objects))
  write_text(os.path.join(folder, 'data.yaml'),
             'path: yolo\ntrain: images/train\nval: images/val\n'
             'names: [car, truck, person, blurry]\n')
  for seed, (split, stem, lines) in enumerate([
      ('train', 'road-1', ['0 0.30 0.40 0.20 0.20', '1 0.70 0.50 0.30 0.30',
                           '2 0.50 0.80 0.10 0.30']),
      ('train', 'road-2', ['2 0.40 0.50 0.20 0.40', '3 0.80 0.20 0.20 0.20']),
      ('val', 'road-3', ['0 0.50 0.50 0.40 0.40', '2 0.20 0.30 0.10 0.20'])]):
    image(f'yolo/images/{split}/{stem}.jpg', 50 + seed)
    write_text(os.path.join(folder, 'yolo', 'labels', split, f'{stem}.txt'),
               '\n'.join(lines) + '\n')
  for span in (1, 2):
    for split, ml_use in (('train', 'TRAIN'), ('eval', 'VALIDATION')):
      write_text(os.path.join(folder, 'manifests', f'span-{span}', split, 'part-0.csv'),
                 f'{ml_use},../../../images/cat-{span}.jpg,cat\n'
                 f'{ml_use},../../../images/dog-{span}.jpg,dog\n')


@pytest.fixture(scope='session')
def fixture_data(tmp_path_factory) -> str:
  folder = str(tmp_path_factory.mktemp('doc-data'))
  write_fixture(folder)
  return folder


def _segments(chain: List[Block]) -> List[Tuple[str, str, Optional[str]]]:
  """(language, code, environment) to run in order: consecutive Python blocks of one
  environment joined into one process."""
  segments: List[Tuple[str, str, Optional[str]]] = []
  for block in chain:
    lang = 'python' if block.lang == 'python' else 'bash'
    code = block.code
    if block.lang == 'console':
      code = '\n'.join(l[2:] for l in code.split('\n') if l.startswith('$ ')) + '\n'
    code = f'# {block.page}:{block.line}\n{code}'
    if segments and segments[-1][0] == 'python' == lang and segments[-1][2] == block.env:
      segments[-1] = ('python', segments[-1][1] + '\n' + code, block.env)
    else:
      segments.append((lang, code, block.env))
  return segments


@pytest.mark.parametrize('chain', chains(), ids=chain_id)
def test_example_runs(chain: List[Block], fixture_data: str, tmp_path):
  """The example runs to exit 0 in a fresh copy of the data."""
  work = str(tmp_path / 'work')
  shutil.copytree(fixture_data, work)
  env = dict(os.environ)
  env['PATH'] = BIN + os.pathsep + env.get('PATH', '')
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  env['PYTHONDONTWRITEBYTECODE'] = '1'
  env['PYTHONPATH'] = ''   # the examples see the installed package only, as a user does
  env['HF_HOME'] = str(tmp_path / 'huggingface')  # no cache shared with other runs
  for n, (lang, code, env_name) in enumerate(_segments(chain)):
    script = str(tmp_path / f'example-{n}.{"py" if lang == "python" else "sh"}')
    with open(script, 'w', encoding='utf-8') as f:
      f.write(code)
    python = env_python(env_name) if env_name else PYTHON
    command = [python, script] if lang == 'python' else ['bash', '-e', script]
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
      pytest.fail(f'{chain_id(chain)}: exit {done.returncode}\n--- code\n{code}\n'
                  f'--- stdout (last 3,000)\n{done.stdout[-3000:]}\n'
                  f'--- stderr (last 6,000)\n{done.stderr[-6000:]}', pytrace=False)
