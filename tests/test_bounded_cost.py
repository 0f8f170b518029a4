"""Every row at a bounded cost, the report included (issue 65).

- A thumbnail (report.html's, `inspect --contact-sheet`'s) is decoded at a bounded
  cost: a JPEG of more than 100 scans (counted from its markers, libjpeg-turbo's
  `djpeg -maxscans`) and a PNG of more than 25 M pixels are skipped with a note beside
  where the image would be; a large baseline JPEG is decoded at 1/8 scale. Measured on
  the command: a 606 KB progressive JPEG of 50,000 empty scans and a 657 KB
  13000x13000 RGBA PNG beside good rows, the whole run under 20 s and its largest
  process under 700 MB (it took ~42 s and 1.36 GB before).
- A row that takes longer than `row_time_limit` fails as `too_slow`, with its cost in
  seconds: without Beam its worker process is killed (a row stuck in C code, a read
  that never returns, is stopped too) and the other rows are converted without it; in
  one process (Beam) the row is interrupted where it returns to Python.
- The external sort reads an entry spanning many blocks in linear time.
"""
import io
import json
import os
import struct
import subprocess
import sys
import time

import pytest

from images import write_image, write_text
from runs import CLI
from tfrecord_digest import digest
import tfrecorder_component as trc
from tfrecorder_component.engines.local import read as local_read
from tfrecorder_component.engines import run
from tfrecorder_component.images import thumbnail
from tfrecorder_component.images.formats import jpeg_walk
from tfrecorder_component.io import sorted_runs
from tfrecorder_component.options import ConversionOptions
from tfrecorder_component.steps import convert_chunks as convert_lib
from tfrecorder_component.steps import row as row_lib
from tfrecorder_component.steps.chunks import CHUNK
from tfrecorder_component.steps.outputs import ERRORS
from tfrecorder_component.steps.vocabulary import VocabularyBuilder

TESTS = os.path.dirname(os.path.abspath(__file__))
GOOD = 20


# ------------------------------------------------------------------ hostile images
def many_scans_jpeg(scans: int = 50_000, size=(4000, 3000)) -> bytes:
  """A progressive JPEG from Pillow, its last scan followed by `scans` AC scans of the
  luma component with no entropy-coded data: TensorFlow's libjpeg decodes it (each one
  a warning, premature end of data), every one going over every block again."""
  from PIL import Image  # pylint: disable=g-import-not-at-top
  out = io.BytesIO()
  Image.new('RGB', size, (120, 80, 200)).save(out, 'JPEG', progressive=True, quality=50)
  data = out.getvalue()
  body = bytes([1, 1, 0x00, 1, 63, 0x00])  # Y, tables 0/0, Ss=1 Se=63 Ah=Al=0
  empty = b'\xff\xda' + struct.pack('>H', len(body) + 2) + body
  return data[:-2] + empty * scans + b'\xff\xd9'


def solid_png(side: int = 13000) -> bytes:
  """A side x side RGBA PNG of one colour, written row by row (no image in memory):
  ~650 KB for 13000 px, 676 MB decoded."""
  import zlib  # pylint: disable=g-import-not-at-top
  compress = zlib.compressobj(9)
  first = b'\x00' + bytes((10, 200, 30, 255)) * side  # filter None
  same = b'\x02' + bytes(4 * side)                      # filter Up: the row above again
  parts = [compress.compress(first)]
  parts += [compress.compress(same) for _ in range(side - 1)]
  parts.append(compress.flush())

  def chunk(kind: bytes, body: bytes) -> bytes:
    return (struct.pack('>I', len(body)) + kind + body
            + struct.pack('>I', zlib.crc32(kind + body)))
  return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', side, side, 8, 6, 0, 0, 0))
          + chunk(b'IDAT', b''.join(parts)) + chunk(b'IEND', b''))


def test_scans_are_counted_from_the_markers():
  from PIL import Image  # pylint: disable=g-import-not-at-top
  for progressive, scans in ((False, 1), (True, 10)):
    out = io.BytesIO()
    Image.new('RGB', (64, 48), (1, 2, 3)).save(out, 'JPEG', progressive=progressive)
    assert jpeg_walk.scan_count(out.getvalue()) == scans
  hostile = many_scans_jpeg(500, (64, 48))
  assert jpeg_walk.scan_count(hostile) == 510
  assert jpeg_walk.scan_count(hostile, stop=100) == 101
  # An APPn segment holding FF DA bytes (an EXIF thumbnail's scan) is skipped by length.
  out = io.BytesIO()
  Image.new('RGB', (64, 48)).save(out, 'JPEG', exif=b'Exif\x00\x00' + b'\xff\xda' * 40)
  assert jpeg_walk.scan_count(out.getvalue()) == 1


def test_tensorflow_decodes_a_jpeg_of_many_empty_scans():
  """The crafted JPEG is one TensorFlow decodes (so its record is written): each empty
  scan is a warning of libjpeg's, not an error. 300 scans of 320x240 here; the 50,000
  of 4000x3000 take TensorFlow minutes."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  assert tuple(tf.io.decode_image(many_scans_jpeg(300, (320, 240))).shape) == (240, 320, 3)


def test_thumbnails_past_the_budget_are_skipped_with_a_note():
  started = time.perf_counter()
  assert thumbnail.make(many_scans_jpeg()) == (
      None, 'thumbnail skipped: 50,010 scans (more than 100)')
  assert thumbnail.make(solid_png()) == (
      None, 'thumbnail skipped: 13000x13000, 169,000,000 pixels (more than 25,000,000)')
  assert time.perf_counter() - started < 10  # making the images included
  from PIL import Image  # pylint: disable=g-import-not-at-top
  # Within the budget, or a baseline JPEG of any size (decoded at 1/8 scale), it is made.
  out = io.BytesIO()
  Image.new('RGB', (12000, 9000), (9, 9, 9)).save(out, 'JPEG')
  small, note = thumbnail.make(out.getvalue())
  assert note == '' and Image.open(io.BytesIO(small)).size == (96, 72)
  out = io.BytesIO()
  Image.new('RGB', (6000, 4500), (9, 9, 9)).save(out, 'JPEG', progressive=True)
  assert thumbnail.make(out.getvalue()) == (
      None, 'thumbnail skipped: 6000x4500, a 10-scan JPEG, 27,000,000 pixels (more than '
      '25,000,000)')
  assert thumbnail.make(many_scans_jpeg(90, (64, 48)))[1] == ''  # 100 scans: made
  assert thumbnail.make(b'not an image') == (None, '')


def dataset(folder, extra=(), label='odd'):
  """GOOD small JPEGs of two labels, cat and dog, the `extra` files among them, with
  `label` ((name, bytes) pairs, or (name, URI) of a file written already), and a
  manifest naming them all (the extra ones at every fifth row)."""
  rows = []
  for i in range(GOOD):
    write_image(os.path.join(folder, 'img', f'{i:02d}.jpg'), 'JPEG', seed=i, height=24, width=32)
    rows.append(f'TRAIN,img/{i:02d}.jpg,{("cat", "dog")[i % 2]}\n')
  for k, (name, data) in enumerate(extra):
    path = os.path.join(folder, 'img', name)
    if isinstance(data, bytes):
      with open(path, 'wb') as f:
        f.write(data)
    rows.insert(5 * (k + 1), f'TRAIN,{data if isinstance(data, str) else "img/" + name},{label}\n')
  return write_text(os.path.join(folder, 'm.csv'), ''.join(rows))


# The command in a process of its own, which prints the largest resident set of the
# command's whole process tree (every forked worker is waited for): RUSAGE_CHILDREN.
MEASURED = '''
import resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.stdout.write(done.stdout)
sys.stderr.write(done.stderr)
sys.exit(done.returncode)
'''


def measured(*args, env=None):
  """(seconds, largest process's peak RSS in MB, stdout) of the command."""
  done = subprocess.run([sys.executable, '-c', MEASURED, CLI, *args], capture_output=True,
                        text=True, timeout=600,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', **(env or {})))
  assert done.returncode == 0, done.stderr[-3000:]
  first, _, stdout = done.stdout.partition('\n')
  seconds, kilobytes = first.split()
  return float(seconds), int(kilobytes) / 1024, stdout


def test_hostile_images_beside_good_rows_cost_bounded_time_and_memory(tmp_path):
  """The command on 20 good JPEGs, the 50,000-scan JPEG and the 13000x13000 PNG (one
  worker, and a worker a core): every row is written (TensorFlow decodes both: the
  decode check says so from their markers and chunks), the two thumbnails are skipped
  with their notes on report.html, and the run takes under 20 s with no process over
  700 MB (before: ~42 s, 1.36 GB). `inspect --contact-sheet` on it likewise."""
  manifest = dataset(str(tmp_path / 'data'), [('scans.jpg', many_scans_jpeg()),
                                             ('huge.png', solid_png())])
  assert 600_000 < os.path.getsize(tmp_path / 'data' / 'img' / 'scans.jpg') < 620_000
  assert os.path.getsize(tmp_path / 'data' / 'img' / 'huge.png') < 1_000_000
  for workers in ('1', '2'):
    out = str(tmp_path / f'out{workers}')
    seconds, peak_mb, stdout = measured('convert', manifest, out,
                                        env={run.LOCAL_WORKERS_ENV: workers})
    print(f'convert on {workers} worker(s): {seconds:.1f} s, largest process {peak_mb:.0f} MB')
    assert f'Wrote {GOOD + 2} records of {GOOD + 2} rows' in stdout
    assert seconds < 20, seconds
    assert peak_mb < 700, peak_mb
    with open(os.path.join(out, 'report', 'report.html'), encoding='utf-8') as f:
      page = f.read()
    assert ('img/scans.jpg: thumbnail skipped: 50,010 scans (more than 100)</span>'
            in page)
    assert ('img/huge.png: thumbnail skipped: 13000x13000, 169,000,000 pixels (more than '
            '25,000,000)</span>' in page)
    assert page.count('<img ') == 2 * convert_lib.SAMPLES_PER_LABEL  # cat's, dog's
  sheet = str(tmp_path / 'sheet.png')
  seconds, peak_mb, stdout = measured('inspect', out, '--contact-sheet', sheet)
  print(f'inspect --contact-sheet: {seconds:.1f} s, largest process {peak_mb:.0f} MB')
  assert f'Contact sheet: {sheet}' in stdout
  assert seconds < 20 and peak_mb < 700, (seconds, peak_mb)
  from PIL import Image  # pylint: disable=g-import-not-at-top
  with Image.open(sheet) as im:
    assert im.height == 3 * (96 + 4)  # cat, dog, odd: the odd row two placeholder tiles


def test_the_contact_sheet_draws_a_skipped_image_as_its_note(tmp_path):
  from tfrecorder_component.readers import inspection  # pylint: disable=g-import-not-at-top
  from PIL import Image  # pylint: disable=g-import-not-at-top
  manifest = dataset(str(tmp_path / 'data'), [('scans.jpg', many_scans_jpeg(200, (640, 480)))])
  out = trc.convert(manifest, str(tmp_path / 'out')).output_dir
  sheet = inspection.contact_sheet(out, str(tmp_path / 'sheet.png'), per_label=2)
  with Image.open(sheet) as im:
    tile = im.crop((inspection.LABEL_WIDTH, 2 * 100, inspection.LABEL_WIDTH + 96, 2 * 100 + 96))
    colours = {c for _, c in tile.getcolors(96 * 96)}
  assert (230, 230, 230) in colours  # a grey tile
  assert any(r > 120 and g < 80 and b < 80 for r, g, b in colours)  # the note, in red


# ------------------------------------------------------------------ too_slow
def slow_convert_row(monkeypatch):
  """convert_row, in this process and the workers forked from it, stuck in C code
  (`time.sleep`, which only a signal ends) on a row whose image is named slow*.jpg."""
  convert_row = row_lib.convert_row

  def slow(row, *args, **kwargs):
    if os.path.basename(row.image_uri).startswith('slow'):
      time.sleep(3600)
    return convert_row(row, *args, **kwargs)
  monkeypatch.setattr(row_lib, 'convert_row', slow)


def errors(out):
  with open(os.path.join(out, 'report', 'errors.jsonl'), encoding='utf-8') as f:
    return [json.loads(line) for line in f]


@pytest.mark.parametrize('workers', [1, 2])
def test_a_row_past_the_time_limit_fails_as_too_slow(tmp_path, monkeypatch, workers):
  """Two rows stuck in C code (in different chunks) among good ones, a 1 s limit: each
  fails as too_slow with the seconds it ran, every other row is written exactly as a
  run without them writes it, and the run takes seconds, not an hour."""
  bad = [('slow1.jpg', b'x'), ('slow2.jpg', b'y')]
  manifest = dataset(str(tmp_path / 'data'), bad, label='cat')
  with open(manifest, encoding='utf-8') as f:
    clean = write_text(str(tmp_path / 'data' / 'clean.csv'),
                       ''.join(l for l in f if 'slow' not in l))
  slow_convert_row(monkeypatch)
  monkeypatch.setenv(run.LOCAL_WORKERS_ENV, str(workers))
  monkeypatch.setattr(local_read, 'CHUNK_ROWS', 8)  # 3 chunks: the workers share them
  out = str(tmp_path / 'out')
  started = time.perf_counter()
  result = trc.convert(manifest, out, max_error_ratio=0.2, row_time_limit=1)
  assert time.perf_counter() - started < 60
  assert (result.rows_read, result.records_written) == (GOOD + 2, GOOD)
  assert result.errors_per_reason == {'too_slow': 2}
  for error in errors(out):
    assert error['reason'] == 'too_slow'
    start, _, seconds = error['message'].rpartition(' after ')
    assert start == ('converting it took longer than the row time limit (1 s, '
                     'row_time_limit): its worker process was stopped')
    assert 1 <= float(seconds[:-2]) < 10, seconds
  assert sorted(e['uri'] for e in errors(out)) == ['img/slow1.jpg', 'img/slow2.jpg']
  left = [n for d, _, names in os.walk(out) for n in names if n.startswith('.part-')]
  assert left == []
  assert digest(out) == digest(trc.convert(clean, str(tmp_path / 'clean')).output_dir)


def test_a_stuck_remote_read_fails_as_too_slow_on_the_command(tmp_path):
  """The command, an image on a file server that never answers (slow://, tests/slowfs.py,
  held) among local ones, --row-time-limit 2: the read's row fails as too_slow and the
  run ends."""
  hold = write_text(str(tmp_path / 'hold'), '')
  stuck = str(tmp_path / 'data' / 'img' / 'stuck.jpg')
  write_image(stuck, 'JPEG', seed=99)
  manifest = dataset(str(tmp_path / 'data'), [('stuck.jpg', f'slow://{stuck}')])
  out = str(tmp_path / 'out')
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', SLOW_FS_HOLD=hold,
             PYTHONPATH=os.pathsep.join([os.path.join(TESTS, 'slowfs_site'), TESTS]
                                        + sys.path))
  started = time.perf_counter()
  done = subprocess.run([CLI, 'convert', manifest, out, '--row-time-limit', '2',
                         '--max-error-ratio', '0.1'], capture_output=True, text=True,
                        timeout=300, env=env)
  assert done.returncode == 0, done.stderr[-3000:]
  assert time.perf_counter() - started < 120
  assert f'Wrote {GOOD} records of {GOOD + 1} rows' in done.stdout
  (error,) = errors(out)
  assert (error['uri'], error['reason']) == (f'slow://{stuck}', 'too_slow')
  assert 'row time limit (2 s, row_time_limit)' in error['message']


def test_in_one_process_a_row_is_interrupted_where_it_returns_to_python(tmp_path, monkeypatch):
  """Without a process to kill (Beam, or no fork), `RowDeadline` raises in the
  converting thread: a row looping in Python fails as too_slow, the next one converts."""
  manifest = dataset(str(tmp_path / 'data'))
  convert_row = row_lib.convert_row

  def looping(row, *args, **kwargs):
    if row.image_uri.endswith('00.jpg'):
      while True:
        pass
    return convert_row(row, *args, **kwargs)
  monkeypatch.setattr(row_lib, 'convert_row', looping)
  from tfrecorder_component.steps.chunks import parse_manifest  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.options import ManifestSource  # pylint: disable=g-import-not-at-top
  chunks = [v for tag, v in parse_manifest(ManifestSource(manifest), str(tmp_path / 'chunks'),
                                           frozenset(), 1000) if tag == CHUNK]
  options = ConversionOptions(row_time_limit=0.5)
  builder = VocabularyBuilder()
  acc = builder.new()
  for chunk in chunks:
    builder.add(acc, chunk)
  converter = convert_lib.ChunkConverter(options)
  started = time.perf_counter()
  outputs = [o for chunk in chunks for o in converter.convert(chunk, builder.vocabulary(acc))]
  outputs += list(converter.finish())
  assert time.perf_counter() - started < 10
  (error,) = [v for tag, v in outputs if tag == ERRORS]
  assert (error['uri'], error['reason']) == ('img/00.jpg', 'too_slow')
  assert error['message'].startswith('converting it took longer than the row time limit '
                                     '(0.5 s, row_time_limit): it was stopped after 0.')
  assert sum(len(v[1]) for tag, v in outputs if tag == 'records') == GOOD - 1


def test_on_beam_a_row_past_the_time_limit_fails_as_too_slow(tmp_path, monkeypatch):
  """The Beam step (in-memory DirectRunner, so the patch reaches its DoFn): a row that
  loops in Python fails as too_slow, the others are written."""
  manifest = dataset(str(tmp_path / 'data'), [('slow.jpg', b'x')], label='cat')
  convert_row = row_lib.convert_row

  def looping(row, *args, **kwargs):
    while os.path.basename(row.image_uri) == 'slow.jpg':
      pass
    return convert_row(row, *args, **kwargs)
  monkeypatch.setattr(row_lib, 'convert_row', looping)
  out = str(tmp_path / 'out')
  result = trc.convert(manifest, out, max_error_ratio=0.1, row_time_limit=1,
                       beam_args=['--direct_running_mode=in_memory'])
  assert (result.records_written, result.errors_per_reason) == (GOOD, {'too_slow': 1})
  (error,) = errors(out)
  assert error['message'].startswith('converting it took longer than the row time limit '
                                     '(1 s, row_time_limit): it was stopped after 1.')


def test_the_time_limit_option_is_checked():
  with pytest.raises(ValueError, match='row_time_limit must be a number of seconds'):
    ConversionOptions(row_time_limit=-1)
  assert ConversionOptions().row_time_limit == 60
  assert ConversionOptions(row_time_limit=0).row_time_limit == 0  # no limit


# ------------------------------------------------------------------ linear reads
def test_read_entries_reads_an_entry_spanning_many_blocks(tmp_path, monkeypatch):
  """Entries of a 4-byte length and a body, one of them 200 blocks long among small
  ones, read back whole and in order, with a length slice, and in linear time (an
  entry 4x longer takes at most ~6x as long, not 16x)."""
  monkeypatch.setattr(sorted_runs, 'BLOCK_BYTES', 1024)
  size = lambda buffer, at: 4 + struct.unpack_from('>I', buffer, at)[0]
  bodies = [b'a' * 3, bytes(range(256)) * 800, b'', b'z' * 1023, b'q' * 1025]
  path = str(tmp_path / 'run')
  with open(path, 'wb') as f:
    f.write(b''.join(struct.pack('>I', len(b)) + b for b in bodies))
  with open(path, 'rb') as f:
    read = list(sorted_runs.read_entries(f, size, 4, path))
  assert read == [struct.pack('>I', len(b)) + b for b in bodies]
  assert all(type(e) is bytes for e in read)  # pylint: disable=unidiomatic-typecheck
  with open(path, 'rb') as f:
    f.seek(7)  # past the first entry; the slice ends with the long one
    assert list(sorted_runs.read_entries(f, size, 4, path, 4 + 256 * 800)) == [read[1]]
  with open(path, 'rb') as f:
    with pytest.raises(ValueError, match='ends early'):
      list(sorted_runs.read_entries(f, size, 4, path, 7 + 1000))
  with open(path, 'wb') as f:
    f.write(struct.pack('>I', 5000) + b'x' * 4000)
  with open(path, 'rb') as f:
    with pytest.raises(ValueError, match='ends early'):
      list(sorted_runs.read_entries(f, size, 4, path))

  def seconds(n):
    with open(path, 'wb') as f:
      f.write(struct.pack('>I', n) + b'x' * n)
    best = float('inf')
    for _ in range(3):
      with open(path, 'rb') as f:
        started = time.perf_counter()
        (entry,) = sorted_runs.read_entries(f, size, 4, path)
        best = min(best, time.perf_counter() - started)
      assert len(entry) == n + 4
    return best
  assert seconds(32 << 20) < 8 * seconds(8 << 20)  # 32,768 blocks of 1 KiB: linear
