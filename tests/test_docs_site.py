"""The documentation site (mkdocs.yml, docs/): it builds strictly with scripts/docs, headless
Chromium shows its home page and its API reference (rendered from the docstrings by
mkdocstrings), no page's code is wider than its column at 1280 and 1920 px, a warning
fails the build, and the committed CLI reference is the command's current options.

The site's tools live in their own virtual environment (scripts/docs-env: about 15 s the
first time, with uv's cache of the wheels); Chromium is Debian's (scripts/setup-chromium).
"""
from __future__ import annotations

import argparse
import html
import html.parser
import json
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


def _dump_dom(profile: str, page: str, *flags: str) -> str:
  """The DOM of `page` as headless Chromium has it once the page has loaded."""
  command = ['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
             '--no-first-run', '--disable-background-networking', '--disable-component-update',
             '--disable-sync', f'--user-data-dir={profile}', *flags,
             '--dump-dom', f'file://{page}']
  done = subprocess.run(command, capture_output=True, text=True, timeout=120)
  assert done.returncode == 0, done.stderr[-3000:]
  return done.stdout


def _setup_chromium() -> None:
  subprocess.run([os.path.join(REPO, 'scripts', 'setup-chromium')], check=True, timeout=900)


def _chromium_dom(tmp_path, page: str) -> _Dom:
  """The DOM of `page` as headless Chromium has it once the page has loaded."""
  _setup_chromium()
  dom = _Dom()
  dom.feed(_dump_dom(str(tmp_path / 'chrome-profile'), page))
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
  for name in ('adapters.conversion.convert', 'adapters.conversion.ConversionResult',
               'adapters.component.component.ImageExampleGen', 'readers.dataset.load_dataset',
               'readers.records.RecordDataset', 'readers.records.iter_records',
               'adapters.component.importer.examples_importer'):
    assert f'tfrecorder_component.{name}' in dom.ids, name
  # convert's signature, as the source has it, and its docstring.
  [convert] = [s for s in dom.blocks['doc-signature'] if s.startswith('convert(')]
  assert re.fullmatch(r'convert\( source, output_dir: str, \*, max_error_ratio: float = 0\.0, '
                      r'overwrite: bool = False, \*\*options, ?\) -> ConversionResult',
                      convert), convert
  from tfrecorder_component.adapters import conversion  # pylint: disable=g-import-not-at-top
  summary = conversion.convert.__doc__.splitlines()[0].replace('`', '')
  assert any(block.startswith(summary) for block in dom.blocks['doc-contents']), summary
  # A Google-style docstring's Args: become a parameter table.
  importer = [b for b in dom.blocks['doc-contents'] if b.startswith('A tfx.dsl.Importer')]
  assert importer and 'Parameters: Name Type Description Default output_dir' in importer[0]


def _nav_pages() -> List[str]:
  """The Markdown pages of mkdocs.yml's nav, as `guides/cli.md`."""
  with open(os.path.join(REPO, 'mkdocs.yml'), encoding='utf-8') as f:
    return re.findall(r'^\s+- [^:\n]+: (\S+\.md)$', f.read(), re.M)


WIDTHS = (1280, 1920)  # a laptop's window, a desktop's

# A page that shows each page of the site in a frame of each width (a frame is a window
# of its own size to the page inside: the same layout, media queries and scroll bar) and,
# once they have all loaded, measures in each every code block (`<pre>`, its `<code>`) and
# inline `<code>` of its text column (`article`): those wider than the column, or holding
# more than they show (a scrolled block: scrollWidth past clientWidth), are written into
# the DOM as JSON. An inline code's background may overhang the column by its own
# padding where a line breaks inside it: its text does not.
_CODE_WIDTH_PROBE = r"""<!DOCTYPE html>
<html><body>
FRAMES
<script>
window.addEventListener('load', function () {
  var reports = [];
  document.querySelectorAll('iframe').forEach(function (frame) {
    var doc = frame.contentDocument;
    var column = doc && doc.querySelector('article.md-content__inner');
    var report = {page: frame.dataset.page, width: Number(frame.getAttribute('width')),
                  window: frame.contentWindow.innerWidth, measured: 0, found: []};
    reports.push(report);
    if (!column) return;
    report.column = column.clientWidth;
    var right = column.getBoundingClientRect().right -
        parseFloat(frame.contentWindow.getComputedStyle(column).paddingRight);
    column.querySelectorAll('pre, code').forEach(function (el) {
      report.measured += 1;
      var inline = el.tagName === 'CODE' && !el.closest('pre');
      var slack = 0.5 + (inline ? parseFloat(
          frame.contentWindow.getComputedStyle(el).paddingRight) : 0);
      var past = 0;
      Array.prototype.forEach.call(el.getClientRects(), function (box) {
        past = Math.max(past, box.right - right);
      });
      var hidden = el.scrollWidth - el.clientWidth;
      if (past > slack || hidden > 0) {
        report.found.push({element: inline ? 'code' : el.tagName === 'PRE' ? 'pre' : 'pre code',
                           past_column_px: Math.round(past), hidden_px: hidden,
                           text: el.textContent.replace(/\s+/g, ' ').slice(0, 70)});
      }
    });
  });
  var out = document.createElement('pre');
  out.id = 'code-width-report';
  out.textContent = JSON.stringify(reports);
  document.body.appendChild(out);
});
</script>
</body></html>
"""


def _code_wider_than_its_column(site: str, profile: str) -> List[dict]:
  """For each page of mkdocs.yml's nav in the built `site` at each of WIDTHS, as headless
  Chromium lays it out: {page, width, column (px), measured (elements), found: [...]}."""
  frames = '\n'.join(
      f'<iframe data-page="{page}" width="{width}" height="1000" '
      f'src="{"" if page == "index.md" else page[:-len(".md")] + "/"}index.html"></iframe>'
      for width in WIDTHS for page in _nav_pages())
  # In the site's root, so that each frame's page loads as it would on its own, and its
  # document is the probe's to read (file:// pages are each their own origin otherwise).
  probe = os.path.join(site, '_code_width_probe.html')
  with open(probe, 'w', encoding='utf-8') as f:
    f.write(_CODE_WIDTH_PROBE.replace('FRAMES', frames))
  try:
    dom = _dump_dom(profile, probe, '--allow-file-access-from-files')
  finally:
    os.remove(probe)
  found = re.search(r'<pre id="code-width-report">(.*?)</pre>', dom, re.S)
  assert found, 'the probe wrote no report: ' + dom[-2000:]
  return json.loads(html.unescape(found.group(1)))


def test_no_code_on_any_page_is_wider_than_its_column(site, tmp_path):
  """Code blocks wrap their long lines (docs/stylesheets/extra.css) and inline code
  breaks: at 1280 and 1920 px, on every page of the nav, no code is cut off at the right
  or hidden behind a scroll bar."""
  _setup_chromium()
  reports = _code_wider_than_its_column(site, str(tmp_path / 'chrome-profile'))
  pages = _nav_pages()
  assert 'guides/cli.md' in pages and 'reference/cli.md' in pages, pages
  assert sorted((r['page'], r['width']) for r in reports) == sorted(
      (page, width) for page in pages for width in WIDTHS)
  for report in reports:
    assert report['window'] == report['width'] and report.get('column'), report
  assert sum(r['measured'] for r in reports) > 200, reports
  wide = [r for r in reports if r['found']]
  assert not wide, 'code wider than its column:\n' + '\n'.join(
      f'{r["page"]} at {r["width"]} px (column {r["column"]} px): {json.dumps(found)}'
      for r in wide for found in r['found'])


def _copy_of_the_docs(tmp_path) -> str:
  """What the build reads (mkdocs.yml, docs/hooks, docs/reference, docs/stylesheets, the
  package, the benchmark results), copied into `tmp_path` with a one-line page for each other page of the nav, so
  that a test can break a page without touching the checkout, whatever the guides say."""
  ignore = shutil.ignore_patterns('__pycache__', '*.pyc')
  shutil.copy(os.path.join(REPO, 'mkdocs.yml'), tmp_path / 'mkdocs.yml')
  for folder in ('tfrecorder_component', os.path.join('benchmarks', 'results'),
                 os.path.join('docs', 'hooks'), os.path.join('docs', 'reference'),
                 os.path.join('docs', 'stylesheets')):
    shutil.copytree(os.path.join(REPO, folder), tmp_path / folder, ignore=ignore)
  pages = _nav_pages()
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


def _cli_parsers():
  """{'': the command's parser, 'convert': convert's, ...}, as the command builds them."""
  from tfrecorder_component.adapters import cli  # pylint: disable=g-import-not-at-top
  built = cli.build_parser()
  parser, commands = built if isinstance(built, tuple) else (built, None)
  if commands is None:
    commands = {name: sub for action in parser._actions  # pylint: disable=protected-access
                if isinstance(action, argparse._SubParsersAction)  # pylint: disable=protected-access
                for name, sub in action.choices.items()}
  return {'': parser, **commands}


def _sections(text: str) -> Dict[str, str]:
  """The reference page's `## \`tfrecorder-component COMMAND\`` sections by COMMAND
  ('' for the command itself)."""
  parts = re.split(r'^## `tfrecorder-component ?([a-z-]*)`$', text, flags=re.M)
  return dict(zip(parts[1::2], parts[2::2]))


def test_the_committed_cli_reference_is_the_commands_current_options(tmp_path):
  fresh = tmp_path / 'cli.md'
  done = _run([sys.executable, os.path.join(REPO, 'scripts', 'cli-reference'), '-o',
               str(fresh)])
  assert done.returncode == 0, done.stderr[-3000:]
  text = fresh.read_text(encoding='utf-8')
  with open(CLI_PAGE, encoding='utf-8') as f:
    assert f.read() == text, 'docs/reference/cli.md is stale: run scripts/cli-reference'
  sections = _sections(text)
  parsers = _cli_parsers()
  assert set(sections) == set(parsers) and {'convert', 'validate', 'inspect'} <= set(parsers)
  header = '| Option | Argument | Default | What it does |'
  for command, parser in parsers.items():
    section = sections[command]
    assert f'usage: {parser.prog} ' in section, command
    assert section.count(header) == 1, command  # one table of options a command
    rows = [l for l in section.splitlines() if l.startswith('| `-')]
    # Every option the parser takes is a row of the table: its first cell lists it.
    for action in parser._actions:  # pylint: disable=protected-access
      if action.option_strings and action.help != argparse.SUPPRESS:
        assert any(all(f'`{o}`' in row.split(' | ')[0] for o in action.option_strings)
                   for row in rows), (command, action.option_strings)
    for row in rows:
      assert row.count(' | ') == 3, row  # option, argument, default, what it does
  # No argparse --help text: no column of options beside their help, no `options:`.
  assert not re.search(r'^  -h, --help +show', text, re.M) and '\noptions:\n' not in text
  convert = sections['convert']
  for row in ('| `--max-error-ratio` | `MAX_ERROR_RATIO` | `0` | ',
              '| `--layout` | `NAME` |', '| `--label-map` | `PATH` |',
              '| `--runner` | `RUNNER` | `DirectRunner` | Beam runner',
              '| `--class-map` | `JSON`\\|`PATH` |'):
    assert row in convert, row
  assert '| `--no-report` |' in sections['validate']
  assert '| `--contact-sheet` |' in sections['inspect']


def test_the_cli_reference_renders_a_table_per_command(site):
  with open(os.path.join(site, 'reference', 'cli', 'index.html'), encoding='utf-8') as f:
    page = f.read()
  tables = re.findall(r'<table>.*?</table>', page, re.S)
  options = [t for t in tables if '<th>Argument</th>\n<th>Default</th>' in t]
  assert len(options) == len(_cli_parsers()), len(options)
  assert any('<td><code>--max-error-ratio</code></td>' in t for t in options)
  assert '<td><code>JSON</code>|<code>PATH</code></td>' in page  # a metavar with a pipe
  assert '<pre><span></span><code>' in page.split('Examples')[1]  # the help's examples


def test_the_cli_reference_check_names_a_stale_page(tmp_path):
  stale = tmp_path / 'cli.md'
  with open(CLI_PAGE, encoding='utf-8') as f:
    stale.write_text(f.read().replace('--max-error-ratio', '--max-errors'), encoding='utf-8')
  script = os.path.join(REPO, 'scripts', 'cli-reference')
  done = _run([script, '--check', '-o', str(stale)])
  assert done.returncode == 1
  assert '-| `--max-errors` | `MAX_ERROR_RATIO` |' in done.stdout
  assert '+| `--max-error-ratio` | `MAX_ERROR_RATIO` |' in done.stdout
  assert 'is stale: run scripts/cli-reference' in done.stderr
  assert _run([script, '--check']).returncode == 0


def _cli_reference_script():
  """scripts/cli-reference, loaded as a module."""
  import importlib.machinery  # pylint: disable=g-import-not-at-top
  import importlib.util  # pylint: disable=g-import-not-at-top
  path = os.path.join(REPO, 'scripts', 'cli-reference')
  loader = importlib.machinery.SourceFileLoader('cli_reference', path)
  module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
  loader.exec_module(module)
  return module


def test_the_guides_tables_are_made_from_the_option_table_and_the_registry(tmp_path):
  """The options tables of the Python and component guides and the formats guide's table
  of formats are what scripts/cli-reference makes of the package now; a guide whose table
  lost a row is stale."""
  script = _cli_reference_script()
  names = []
  for path, table in script.GUIDE_TABLES:
    with open(path, encoding='utf-8') as f:
      committed = f.read()
    assert script.guide_text(path, table) == committed, f'{path} is stale: run scripts/cli-reference'
    rows = [l for l in table().splitlines() if l.startswith('| `')]
    stale = tmp_path / os.path.basename(path)
    stale.write_text(committed.replace(rows[-1] + '\n', ''), encoding='utf-8')
    assert script.guide_text(str(stale), table) == committed
    names.append(os.path.basename(path))
  assert names == ['python.md', 'component.md', 'formats.md']


def _docs_text(*parts: str) -> str:
  """The text of the docs page at docs/<parts...>."""
  with open(os.path.join(REPO, 'docs', *parts), encoding='utf-8') as f:
    return f.read()


def _convert_options_table() -> Dict[str, str]:
  """{option: its default cell} of the table of convert()'s options in the Python guide."""
  section = _docs_text('guides', 'python.md').split('\n### Options\n', 1)[1].split('\n## ', 1)[0]
  assert '| Option | Default | What it does |' in section
  return dict(re.findall(r'^\| `(\w+)` \| ([^|]*) \|', section, re.M))


def test_the_python_guide_tables_every_option_of_convert_with_its_default():
  import ast  # pylint: disable=g-import-not-at-top
  from tfrecorder_component import option_table  # pylint: disable=g-import-not-at-top
  # What convert() takes, with the defaults it gives (tests/test_options.py checks that
  # convert() defaults as the option table says).
  taken = option_table.defaults(option_table.API)
  table = _convert_options_table()
  assert sorted(table) == sorted(taken), set(table) ^ set(taken)
  for name, cell in table.items():
    shown = ast.literal_eval(re.fullmatch(r'`([^`]+)`', cell.strip()).group(1))
    default = taken[name]
    assert shown == default or (isinstance(shown, dict) and dict(default) == shown), (
        name, cell, default)


def test_convert_links_the_guides_it_names_and_the_links_resolve(site):
  from tfrecorder_component.adapters import conversion  # pylint: disable=g-import-not-at-top
  doc = conversion.convert.__doc__
  assert 'docs/guides/' not in doc  # a guide is a link, not a path
  assert '](../guides/python.md#options)' in doc
  assert '](../guides/output.md#class-mapping)' in doc
  # On the site, each link from the API reference to a guide lands on a heading there.
  with open(os.path.join(site, 'reference', 'api', 'index.html'), encoding='utf-8') as f:
    links = set(re.findall(r'href="\.\./\.\./(guides/[\w-]+)/#([\w-]+)"', f.read()))
  assert ('guides/python', 'options') in links and ('guides/output', 'class-mapping') in links
  for page, anchor in links:
    with open(os.path.join(site, page, 'index.html'), encoding='utf-8') as f:
      assert f'id="{anchor}"' in f.read(), (page, anchor)


def test_the_docs_lists_of_formats_and_extensions_are_the_registrys():
  """The component guide's `manifest_format` row names every format the registry has and
  no other, and the formats guide's table of formats (which its sentence on a folder's
  files points to) has a row for each, naming every extension a format claims
  (`registry.MANIFEST_EXTENSIONS`, what discovery keeps) and no other. Both are made
  from the registry (scripts/cli-reference), so a format added there is listed."""
  from tfrecorder_component.manifest import registry  # pylint: disable=g-import-not-at-top
  row = re.search(r'^\| `manifest_format` \|.*$', _docs_text('guides', 'component.md'), re.M)
  assert row, 'no manifest_format row in docs/guides/component.md'
  named = re.findall(r'`(\w+)`', row.group(0).split('|')[3])
  assert sorted(named) == sorted(registry.MANIFEST_FORMATS), (
      set(named) ^ set(registry.MANIFEST_FORMATS))
  guide = _docs_text('guides', 'formats.md')
  assert re.search(r'In a folder \(.*?\[the table of formats\]\(#manifests\).*? are read',
                   guide, re.S)
  table = guide.split('\n## Manifests\n', 1)[1].split('\n### ', 1)[0]
  rows = re.findall(r'^\| `(\w+)` \| [^|]+ \| ([^|]+) \|', table, re.M)[1:]  # the header first
  assert [name for name, _ in rows] == [f.name for f in registry.FORMATS]
  extensions = {e for _, cell in rows for e in re.findall(r'`(\.\w+)`', cell)}
  assert extensions == set(registry.MANIFEST_EXTENSIONS), (
      extensions ^ set(registry.MANIFEST_EXTENSIONS))
