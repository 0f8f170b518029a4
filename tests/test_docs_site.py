"""The documentation site (mkdocs.yml, docs/): it builds strictly with scripts/docs, headless
Chromium shows its home page and its API reference (rendered from the docstrings by
mkdocstrings), a warning fails the build, and the committed CLI reference is the command's
current --help.

The site's tools live in their own virtual environment (scripts/docs-env: about 15 s the
first time, with uv's cache of the wheels); Chromium is Debian's (scripts/setup-chromium).
"""
from __future__ import annotations

import html.parser
import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI_PAGE = os.path.join(REPO, 'docs', 'reference', 'cli.md')


def _run(command: List[str], **kwargs) -> subprocess.CompletedProcess:
  return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=REPO,
                        **kwargs)


@pytest.fixture(scope='module')
def site(tmp_path_factory) -> str:
  """The site as `scripts/docs build DIR` writes it (strict)."""
  out = str(tmp_path_factory.mktemp('site'))
  done = _run([os.path.join(REPO, 'scripts', 'docs'), 'build', out])
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
  return out


def test_the_site_builds_strictly_with_every_page_and_nothing_fetched(site):
  for page in ('index.html', 'reference/api/index.html', 'reference/cli/index.html',
               'guides/formats/index.html', 'benchmarks/index.html', '404.html'):
    assert os.path.isfile(os.path.join(site, page)), page
  # No page asks the network for anything: no web fonts, no CDN script, stylesheet or image
  # (a <link rel="canonical"> or a plain hyperlink elsewhere is no request).
  tags = re.compile(r'<(script|img|link)\b[^>]*>', re.I)
  remote = re.compile(r'\b(?:src|href)="(?:https?:)?//', re.I)
  for folder, _, names in os.walk(site):
    for name in names:
      if name.endswith('.html'):
        with open(os.path.join(folder, name), encoding='utf-8') as f:
          text = f.read()
        for tag in tags.finditer(text):
          fetched = tag.group(1).lower() != 'link' or re.search(
              r'rel="(?:stylesheet|preconnect|preload|modulepreload|icon)"', tag.group(0))
          assert not (fetched and remote.search(tag.group(0))), (name, tag.group(0))
        assert 'fonts.googleapis' not in text, name


class _Dom(html.parser.HTMLParser):
  """Of a rendered page: its title, the primary nav's link texts, the ids of elements, and
  the text of each `doc-signature` and `doc-contents` block."""

  def __init__(self):
    super().__init__()
    self.title, self.nav, self.ids = '', [], set()
    self.blocks: Dict[str, List[str]] = {'doc-signature': [], 'doc-contents': []}
    self._in_title, self._nav_depth, self._link = False, 0, None
    self._open: List[List] = []  # [class, depth, text parts] of the blocks being read
    self._depth = 0

  def handle_starttag(self, tag, attrs):
    attrs = dict(attrs)
    classes = (attrs.get('class') or '').split()
    if attrs.get('id'):
      self.ids.add(attrs['id'])
    if tag == 'title':
      self._in_title = True
    if tag in ('br', 'img', 'input', 'meta', 'link', 'hr', 'source', 'wbr'):
      return
    self._depth += 1
    if tag == 'nav' and 'md-nav--primary' in classes and not self._nav_depth:
      self._nav_depth = self._depth
    if self._nav_depth and tag == 'a':
      self._link = []
    for name in self.blocks:
      if name in classes:
        self._open.append([name, self._depth, []])

  def handle_endtag(self, tag):
    if tag == 'title':
      self._in_title = False
    if tag in ('br', 'img', 'input', 'meta', 'link', 'hr', 'source', 'wbr'):
      return
    if tag == 'a' and self._link is not None:
      self.nav.append(' '.join(''.join(self._link).split()))
      self._link = None
    if self._nav_depth == self._depth:
      self._nav_depth = 0
    while self._open and self._open[-1][1] == self._depth:
      name, _, parts = self._open.pop()
      self.blocks[name].append(' '.join(''.join(parts).split()))
    self._depth -= 1

  def handle_data(self, data):
    if self._in_title:
      self.title += data
    if self._link is not None:
      self._link.append(data)
    for block in self._open:
      block[2].append(data)


def _chromium_dom(tmp_path, page: str) -> _Dom:
  """The DOM of `page` as headless Chromium has it once the page has loaded."""
  subprocess.run([os.path.join(REPO, 'scripts', 'setup-chromium')], check=True, timeout=900)
  command = ['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
             '--no-first-run', '--disable-background-networking', '--disable-component-update',
             '--disable-sync', f'--user-data-dir={tmp_path / "chrome-profile"}',
             '--dump-dom', f'file://{page}']
  done = subprocess.run(command, capture_output=True, text=True, timeout=120)
  assert done.returncode == 0, done.stderr[-3000:]
  dom = _Dom()
  dom.feed(done.stdout)
  dom.close()
  return dom


NAV = ['Home', 'Getting started', 'The command line', 'Manifest formats', 'Benchmarks',
       'Python API', 'Command line']


def test_chromium_shows_the_home_page_with_the_sites_title_and_nav(site, tmp_path):
  dom = _chromium_dom(tmp_path, os.path.join(site, 'index.html'))
  assert 'tfrecorder-component' in dom.title
  for entry in NAV:
    assert entry in dom.nav, (entry, dom.nav)


def test_chromium_shows_the_api_reference_rendered_from_the_docstrings(site, tmp_path):
  dom = _chromium_dom(tmp_path, os.path.join(site, 'reference', 'api', 'index.html'))
  assert 'Python API' in dom.title and 'tfrecorder-component' in dom.title
  for entry in NAV:
    assert entry in dom.nav, (entry, dom.nav)
  # Each public name has its heading, the anchor other pages link to.
  for name in ('conversion.convert', 'conversion.ConversionResult',
               'component.component.ImageExampleGen', 'dataset.load_dataset',
               'readers.RecordDataset', 'readers.iter_records',
               'component.importer.examples_importer'):
    assert f'tfrecorder_component.{name}' in dom.ids, name
  # convert's signature, as the source has it, and its docstring.
  [convert] = [s for s in dom.blocks['doc-signature'] if s.startswith('convert(')]
  assert re.fullmatch(r'convert\( source, output_dir: str, \*, max_error_ratio: float = 0\.0, '
                      r'overwrite: bool = False, \*\*options, ?\) -> ConversionResult',
                      convert), convert
  from tfrecorder_component import conversion  # pylint: disable=g-import-not-at-top
  summary = conversion.convert.__doc__.splitlines()[0].replace('`', '')
  assert any(block.startswith(summary) for block in dom.blocks['doc-contents']), summary
  # A Google-style docstring's Args: become a parameter table.
  importer = [b for b in dom.blocks['doc-contents'] if b.startswith('A tfx.dsl.Importer')]
  assert importer and 'Parameters: Name Type Description Default output_dir' in importer[0]


def _copy_of_the_docs(tmp_path) -> str:
  """What the build reads (mkdocs.yml, docs/hooks, docs/reference, the package, the benchmark
  results), copied into `tmp_path` with a one-line page for each other page of the nav, so
  that a test can break a page without touching the checkout, whatever the guides say."""
  ignore = shutil.ignore_patterns('__pycache__', '*.pyc')
  shutil.copy(os.path.join(REPO, 'mkdocs.yml'), tmp_path / 'mkdocs.yml')
  for folder in ('tfrecorder_component', os.path.join('benchmarks', 'results'),
                 os.path.join('docs', 'hooks'), os.path.join('docs', 'reference')):
    shutil.copytree(os.path.join(REPO, folder), tmp_path / folder, ignore=ignore)
  with open(os.path.join(REPO, 'mkdocs.yml'), encoding='utf-8') as f:
    pages = re.findall(r'^\s+- [^:\n]+: (\S+\.md)$', f.read(), re.M)
  assert 'index.md' in pages and 'reference/api.md' in pages, pages
  for page in pages:
    path = tmp_path / 'docs' / page
    if not path.exists():
      path.parent.mkdir(parents=True, exist_ok=True)
      path.write_text(f'# {page}\n\n## A section\n', encoding='utf-8')
  return str(tmp_path)


def _mkdocs_build(root: str, out: str) -> subprocess.CompletedProcess:
  """`mkdocs build` of the copy at `root`, without --strict: mkdocs.yml says it."""
  python = _run([os.path.join(REPO, 'scripts', 'docs-env')]).stdout.strip()
  return subprocess.run([python, '-m', 'mkdocs', 'build', '--site-dir', out], cwd=root,
                        capture_output=True, text=True, timeout=600,
                        env={**os.environ, 'NO_MKDOCS_2_WARNING': '1'})


@pytest.mark.parametrize('added, warning', [
    ('[a page](guides/no-such-page.md)', "contains a link 'guides/no-such-page.md'"),
    ('[an anchor](guides/formats.md#a-section-not-there)', "anchor '#a-section-not-there'"),
    ('--8<-- "benchmarks/results/no-such-table.md"', 'no-such-table.md'),
    ('![a figure](../benchmarks/results/no-such.png)', "'../benchmarks/results/no-such.png'"),
])
def test_a_broken_link_anchor_or_include_fails_the_build(tmp_path, added, warning):
  root = _copy_of_the_docs(tmp_path)
  with open(os.path.join(root, 'docs', 'development.md'), 'a', encoding='utf-8') as f:
    f.write(f'\n\n{added}\n')
  done = _mkdocs_build(root, str(tmp_path / 'site'))
  assert done.returncode != 0
  assert warning in done.stderr, done.stderr[-3000:]


def test_repository_files_outside_docs_are_linked_by_their_github_paths(tmp_path):
  """A page names a figure or script outside docs/ relative to itself, as on GitHub; the
  site holds a copy under _repo/ and the link points there."""
  root = _copy_of_the_docs(tmp_path)
  with open(os.path.join(root, 'docs', 'guides', 'report.md'), 'a', encoding='utf-8') as f:
    f.write('\n\n![the peers](../../benchmarks/results/peers.png)\n\n'
            '[the throughput table](../../benchmarks/results/throughput.json#x)\n\n'
            '```text\n![not a link](../../benchmarks/results/peers.png)\n```\n')
  site = tmp_path / 'site'
  done = _mkdocs_build(root, str(site))
  assert done.returncode == 0, done.stderr[-3000:]
  page = (site / 'guides' / 'report' / 'index.html').read_text(encoding='utf-8')
  assert '<img alt="the peers" src="../../_repo/benchmarks/results/peers.png"' in page
  assert 'href="../../_repo/benchmarks/results/throughput.json#x"' in page
  assert '![not a link](../../benchmarks/results/peers.png)' in page  # code: as written
  copied = site / '_repo' / 'benchmarks' / 'results' / 'peers.png'
  with open(os.path.join(REPO, 'benchmarks', 'results', 'peers.png'), 'rb') as f:
    assert copied.read_bytes() == f.read()


def test_the_committed_cli_reference_is_the_commands_current_help(tmp_path):
  fresh = tmp_path / 'cli.md'
  done = _run([sys.executable, os.path.join(REPO, 'scripts', 'cli-reference'), '-o',
               str(fresh)])
  assert done.returncode == 0, done.stderr[-3000:]
  text = fresh.read_text(encoding='utf-8')
  with open(CLI_PAGE, encoding='utf-8') as f:
    assert f.read() == text, 'docs/reference/cli.md is stale: run scripts/cli-reference'
  for command in ('convert', 'validate', 'inspect'):
    assert f'## `tfrecorder-component {command}`' in text
    assert f'usage: tfrecorder-component {command} [-h]' in text
  for option in ('--max-error-ratio', '--layout NAME', '--label-map PATH', '--no-report',
                 '--contact-sheet'):
    assert option in text, option


def test_the_cli_reference_check_names_a_stale_page(tmp_path):
  stale = tmp_path / 'cli.md'
  with open(CLI_PAGE, encoding='utf-8') as f:
    stale.write_text(f.read().replace('--max-error-ratio', '--max-errors'), encoding='utf-8')
  script = os.path.join(REPO, 'scripts', 'cli-reference')
  done = _run([script, '--check', '-o', str(stale)])
  assert done.returncode == 1
  assert '-  --max-errors MAX_ERROR_RATIO' in done.stdout
  assert '+  --max-error-ratio MAX_ERROR_RATIO' in done.stdout
  assert 'is stale: run scripts/cli-reference' in done.stderr
  assert _run([script, '--check']).returncode == 0
