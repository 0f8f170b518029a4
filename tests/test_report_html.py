"""report.html, rendered by headless Chromium (Debian's package, installed by
scripts/setup-chromium when this test runs): it shows its tables and its images."""
import html.parser
import os
import subprocess

import numpy as np
from PIL import Image

from images import write_text
import tfrecorder_component as trc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RED, BLUE = (220, 30, 30), (30, 30, 220)


def chromium(tmp_path, *args):
  subprocess.run([os.path.join(REPO, 'scripts', 'setup-chromium')], check=True, timeout=900)
  command = ['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
             '--no-first-run', '--disable-background-networking', '--disable-component-update',
             '--disable-sync', f'--user-data-dir={tmp_path / "chrome-profile"}', *args]
  done = subprocess.run(command, capture_output=True, text=True, timeout=120)
  assert done.returncode == 0, done.stderr[-3000:]
  return done.stdout


class _Tables(html.parser.HTMLParser):
  """{table class: [[cell text, ...], ...]} and the <img> sources of a page."""

  def __init__(self):
    super().__init__()
    self.tables, self.images, self._table, self._cell = {}, [], None, None

  def handle_starttag(self, tag, attrs):
    attrs = dict(attrs)
    if tag == 'table':
      self._table = self.tables.setdefault(attrs.get('class') or '', [])
    elif tag == 'tr' and self._table is not None:
      self._table.append([])
    elif tag in ('td', 'th'):
      self._cell = []
    elif tag == 'img':
      self.images.append(attrs.get('src', ''))

  def handle_data(self, data):
    if self._cell is not None:
      self._cell.append(data)

  def handle_endtag(self, tag):
    if tag in ('td', 'th') and self._cell is not None:
      self._table[-1].append(''.join(self._cell).strip())
      self._cell = None
    elif tag == 'table':
      self._table = None


def test_report_html_shows_tables_and_images_in_headless_chromium(tmp_path):
  data = tmp_path / 'data'
  rows = []
  for i in range(6):
    label, colour = ('cat', RED) if i % 2 else ('dog', BLUE)
    path = data / f'{label}{i}.png'
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new('RGB', (40, 30), colour).save(path)
    rows.append(f'TRAIN,{path.name},{label}')
  rows.append('TRAIN,missing.png,cat')
  manifest = write_text(str(data / 'manifest.csv'), '\n'.join(rows) + '\n')
  result = trc.convert(manifest, str(tmp_path / 'out'), max_error_ratio=0.5)
  page = os.path.join(result.report_dir, 'report.html')

  parsed = _Tables()
  parsed.feed(chromium(tmp_path, '--dump-dom', f'file://{page}'))
  tables = parsed.tables
  assert tables['totals'][1] == ['7', '6', '1']
  assert ['train', '6'] in tables['splits']
  assert tables['labels'][1:] == [['cat', '0', '3', '3'], ['dog', '1', '3', '3']]  # label, id, ...
  assert tables['formats'][1:] == [['png', '6', '']]
  assert tables['sizes'][1:] == [['< 64 px', '6', '']]
  [error] = tables['errors'][1:]
  assert error[:4] == [manifest, '7', 'missing.png', 'missing']  # line 7 (no header)
  assert len(parsed.images) == 6
  assert all(src.startswith('data:image/jpeg;base64,') for src in parsed.images)

  shot = tmp_path / 'shot.png'
  chromium(tmp_path, f'--screenshot={shot}', '--window-size=1200,2400', f'file://{page}')
  pixels = np.asarray(Image.open(shot).convert('RGB')).astype(int)

  def near(colour):
    return int((np.abs(pixels - np.array(colour)).max(axis=-1) < 40).sum())

  # Three 40x30 thumbnails per label, each shown 96 px wide: at least 3 x 96 x 60 px of
  # each colour are on screen, decoded from the data URIs.
  assert near(RED) >= 3 * 96 * 60
  assert near(BLUE) >= 3 * 96 * 60
