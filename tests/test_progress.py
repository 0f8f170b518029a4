"""The run's progress as the user sees it: the real command in a real pseudo-terminal
(one live bar across two worker processes), through a pipe (plain lines at most once an
interval), with --quiet (nothing but errors); and Beam's metrics counters of a real
pipeline."""
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions

from images import write_image, write_text
from terminal import read_terminal
from tfrecorder_component.engines.beam.pipeline import ConvertManifests
from tfrecorder_component.options import ConversionOptions, ManifestSource
from tfrecorder_component.engines.run import LOCAL_WORKERS_ENV

ROWS = 160
COMMAND = [sys.executable, '-m', 'tfrecorder_component.adapters.cli']
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _dataset(root: str, rows: int = ROWS, side: int = 256, bad: bool = True):
  """A manifest of `rows` rows, every 16th row's image missing and every 16th (offset)
  a JPEG that is not one; returns (manifest, rows that fail)."""
  lines, failed = [], 0
  for i in range(rows):
    if bad and i % 16 == 3:
      lines.append(f'TRAIN,img/missing-{i}.jpg,cat')
      failed += 1
    elif bad and i % 16 == 9:
      write_text(os.path.join(root, f'img/corrupt-{i}.jpg'), 'not a JPEG at all')
      lines.append(f'TRAIN,img/corrupt-{i}.jpg,dog')
      failed += 1
    else:
      write_image(os.path.join(root, f'img/{i}.jpg'), 'JPEG', 'RGB', side, side)
      lines.append(f'TRAIN,img/{i}.jpg,{"cat" if i % 2 else "dog"}')
  return write_text(os.path.join(root, 'manifest.csv'), '\n'.join(lines) + '\n'), failed


@pytest.fixture(scope='module')
def dataset(tmp_path_factory):
  root = str(tmp_path_factory.mktemp('progress-data'))
  return _dataset(root)


def _env(workers: int = 2) -> dict:
  env = dict(os.environ, PYTHONPATH=REPO, COLUMNS='120')
  env[LOCAL_WORKERS_ENV] = str(workers)
  env.pop('TERM', None)
  return env


def _run_in_pty(args, env, timeout: float = 120.0, columns: int = 120):
  """(exit status, everything the terminal received) of the command run with stdout and
  stderr on a pseudo-terminal `columns` wide (0: a size nobody set, as under `script`)."""
  master, slave = pty.openpty()
  if columns:
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 40, columns, 0, 0))
  proc = subprocess.Popen(COMMAND + args, stdin=subprocess.DEVNULL, stdout=slave,
                          stderr=slave, env=env, cwd=REPO)
  os.close(slave)
  try:
    out = read_terminal(master, proc, timeout)
  finally:
    os.close(master)
    rc = proc.wait(timeout=30)
  return rc, out.decode('utf-8', 'replace')


# A tqdm bar with a total:
#   "converting:  45%|####5     | 72/160 [00:01<00:01, 50.1 rows/s, 9 failed]"
BAR = re.compile(r'(?P<stage>[a-z ()]+):\s+(?P<pct>\d+)%\|[^|]*\| (?P<n>\d+)/(?P<total>\d+) '
                 r'\[(?P<elapsed>[\d:]+)<(?P<eta>[\d:?]+), +(?P<rate>[\d.?]+) rows/s, '
                 r'(?P<failed>\d+) failed\]')


def test_a_terminal_gets_one_live_bar_across_the_workers_to_100_percent(tmp_path, dataset):
  manifest, failed = dataset
  rc, out = _run_in_pty(['convert', manifest, str(tmp_path / 'out'), '--max-error-ratio', '0.5'],
                        _env(workers=2))
  assert rc == 0, out
  assert f'Wrote {ROWS - failed:,} records of {ROWS:,} rows' in out
  draws = [m.groupdict() for m in BAR.finditer(out)]
  assert draws, out
  # One bar, redrawn in place: every draw but the last ends in a carriage return.
  assert '\r' in out and '\x1b[A' not in out  # never a second bar line (two workers)
  converting = [d for d in draws if d['stage'] == 'converting']
  assert converting and all(int(d['total']) == ROWS for d in converting), draws
  # From the first row on: drawn before the conversion was done, then at 100%.
  assert int(converting[0]['n']) < ROWS
  done = [d for d in draws if d['pct'] == '100']
  assert done, draws
  final = done[-1]
  assert (int(final['n']), int(final['total']), int(final['failed'])) == (ROWS, ROWS, failed)
  assert final['stage'] == 'done'
  assert float(final['rate']) > 0 and re.fullmatch(r'\d\d:\d\d', final['eta'])
  # The failed count grows as the workers fail rows, never past the run's.
  counts = [int(d['failed']) for d in draws if d['stage'] == 'converting']
  assert counts == sorted(counts) and counts[-1] <= failed
  # The later stages: the report is written, the output published.
  stages = [d['stage'] for d in draws]
  assert 'writing the report' in stages and 'publishing' in stages, stages


def _lines_of_a_pipe(args, env, timeout: float = 180.0):
  proc = subprocess.run(COMMAND + args, env=env, cwd=REPO, capture_output=True, text=True,
                        timeout=timeout, check=False)
  return proc.returncode, proc.stdout, proc.stderr


STAMP = re.compile(r'\[(\d+):(\d\d):(\d\d)\.(\d)\] (.*)')


def _stamp(line: str):
  m = STAMP.fullmatch(line)
  assert m, line
  h, mi, s, tenth, text = m.groups()
  return int(h) * 3600 + int(mi) * 60 + int(s) + int(tenth) / 10, text


def test_without_a_terminal_plain_lines_come_at_most_once_an_interval(tmp_path):
  # Larger images and enough of them that the run lasts several intervals (the decode
  # check of a JPEG reads no pixel: 480 such images convert in half a second).
  manifest, failed = _dataset(str(tmp_path / 'data'), rows=960, side=800)
  every = 0.2
  rc, stdout, stderr = _lines_of_a_pipe(
      ['convert', manifest, str(tmp_path / 'out'), '--max-error-ratio', '0.5',
       '--progress-every', str(every)], _env(workers=2))
  assert rc == 0, stderr
  assert '\r' not in stderr and '\x1b' not in stderr
  lines = [l for l in stderr.splitlines() if not l.startswith('warning: ')]
  stamped = [_stamp(l) for l in lines]
  *periodic, (_, last) = stamped
  assert last.startswith(f'done: 960 rows, {failed} failed, ') and last.endswith(' rows/s'), last
  assert len(periodic) >= 3, stderr  # the run lasted several intervals
  times = [t for t, _ in periodic]
  # At most one line an interval (stamps are in tenths: one tenth of rounding).
  assert all(b - a >= every - 0.1 for a, b in zip(times, times[1:])), stderr
  converting = [text for _, text in periodic if text.startswith('converting: ')]
  assert converting, stderr
  pattern = re.compile(r'converting: (\d+)/960 rows \((\d+)%\), ([\d,.]+) rows/s, '
                       r'ETA \d+:\d\d:\d\d, (\d+) failed')
  assert all(pattern.fullmatch(text) for text in converting), converting
  assert periodic[0][0] >= every - 0.1  # the first once an interval has passed


def test_without_a_terminal_a_short_run_prints_nothing_but_its_result_or_error(tmp_path):
  manifest, _ = _dataset(str(tmp_path / 'good'), rows=40, side=32, bad=False)
  rc, stdout, stderr = _lines_of_a_pipe(['convert', manifest, str(tmp_path / 'out')], _env(2))
  assert rc == 0 and stderr == '' and 'Wrote 40 records of 40 rows' in stdout, stderr
  write_text(str(tmp_path / 'coco.json'), '{"images": 3}')
  rc, stdout, stderr = _lines_of_a_pipe(['convert', str(tmp_path / 'coco.json'),
                                         str(tmp_path / 'out2')], _env(2))
  assert rc == 1 and len(stderr.splitlines()) == 1 and stderr.startswith('error: '), stderr


def test_quiet_prints_nothing_on_stderr_but_errors(tmp_path):
  manifest, _ = _dataset(str(tmp_path / 'good'), rows=40, side=32, bad=False)
  rc, stdout, stderr = _lines_of_a_pipe(['convert', manifest, str(tmp_path / 'out'), '-q'],
                                        _env(workers=2))
  assert rc == 0, stderr
  assert stderr == ''
  assert 'Wrote 40 records of 40 rows' in stdout
  # In a terminal too: no bar, only the result.
  rc, out = _run_in_pty(['convert', manifest, str(tmp_path / 'out2'), '--quiet'], _env(2))
  assert rc == 0 and '%|' not in out and '\r\n' in out and 'Wrote 40 records' in out, out
  # A run that fails: its error, nothing else.
  bad, failed = _dataset(str(tmp_path / 'bad'), rows=40, side=32)
  rc, stdout, stderr = _lines_of_a_pipe(['validate', bad, '--no-report', '-q'], _env(2))
  assert rc == 1
  assert stderr == '' and f'{failed} failed' in stdout
  rc, stdout, stderr = _lines_of_a_pipe(['convert', bad, str(tmp_path / 'out3'), '-q'], _env(2))
  assert rc == 1
  assert stderr.startswith(f'error: {failed} of 40 manifest rows failed'), stderr
  assert not re.search(r'^\[\d+:\d\d:\d\d\.\d\]|%\||\r', stderr, re.M), stderr


def test_a_beam_run_on_the_command_line_shows_its_stage_and_final_counts(tmp_path, dataset):
  """On Beam the total is not known to the command: the bar counts rows (live here: the
  in-memory DirectRunner converts in the command's process) and ends on the run's counts."""
  manifest, failed = dataset
  rc, out = _run_in_pty(['convert', manifest, str(tmp_path / 'out'), '--max-error-ratio', '0.5',
                         '--beam-arg=--direct_num_workers=1'], _env(1))
  assert rc == 0, out
  draws = re.findall(r'([A-Za-z ()]+): (\d+) rows \[[\d:]+, +[\d.?]+ rows/s(?:, (\d+) failed)?\]',
                     out)
  stages = [stage for stage, _, _ in draws]
  assert stages[0] == 'converting (Beam pipeline)' and 'publishing' in stages, draws
  assert draws[-1] == ('done', str(ROWS), str(failed)), draws


def test_beam_metrics_count_rows_done_and_failed(tmp_path):
  """The counters Dataflow's job page and `PipelineResult.metrics()` show: rows (those
  that failed to parse included), rows_failed, and the images' own."""
  root = str(tmp_path / 'data')
  for name in ('a', 'b', 'c', 'd'):
    write_image(os.path.join(root, f'{name}.jpg'), 'JPEG', 'RGB', 16, 16)
  write_text(os.path.join(root, 'corrupt.jpg'), 'not an image')
  huge = 'x' * 200_000  # a field over the CSV size limit: the row fails to parse
  manifest = write_text(os.path.join(root, 'm.csv'), (
      'TRAIN,a.jpg,cat\nTRAIN,b.jpg,dog\nTEST,c.jpg,cat\nTRAIN,missing.jpg,cat\n'
      f'TRAIN,d.jpg,"{huge}",x\nTRAIN,corrupt.jpg,dog\nEVAL,d.jpg,dog\n'))
  out, report = str(tmp_path / 'out'), str(tmp_path / 'report')
  p = beam.Pipeline(options=PipelineOptions(['--direct_num_workers=1']))
  _ = p | ConvertManifests([ManifestSource(manifest)],
                           {s: os.path.join(out, f'Split-{s}') for s in ('train', 'eval', 'test')},
                           out, report, ConversionOptions())
  result = p.run()
  result.wait_until_finish()
  counters = {c.key.metric.name: c.committed for c in result.metrics().query(
      MetricsFilter().with_namespace('tfrecorder_component'))['counters']}
  assert counters['rows'] == 7, counters
  assert counters['rows_failed'] == 3, counters
  assert counters['images_loaded'] == 4, counters
  assert counters['images_failed'] == 2, counters
  assert counters['image_bytes_read'] > 0, counters


def test_convert_and_the_component_log_the_stages_and_final_counts(tmp_path, caplog):
  """convert() prints nothing by default; what it says goes to logging at INFO, which is
  what the TFX component's executor (the same run_conversion) writes to its logs."""
  import tfrecorder_component as trc  # pylint: disable=g-import-not-at-top
  manifest, failed = _dataset(str(tmp_path / 'data'), rows=48, side=32)
  caplog.set_level('INFO')
  trc.convert(manifest, str(tmp_path / 'out'), max_error_ratio=0.5)
  said = [r.getMessage() for r in caplog.records if r.getMessage().startswith('Conversion: ')]
  assert 'Conversion: converting (48 rows)' in said, said
  assert 'Conversion: publishing' in said, said
  assert re.fullmatch(rf'Conversion: \[[\d:.]+\] done: 48 rows, {failed} failed, [\d,.]+ rows/s',
                      said[-1]), said


def test_a_terminal_of_no_reported_width_gets_a_bar_of_80_columns(tmp_path, dataset):
  manifest, failed = dataset
  env = dict(_env(workers=2))
  env.pop('COLUMNS', None)
  rc, out = _run_in_pty(['convert', manifest, str(tmp_path / 'out'), '--max-error-ratio', '0.5'],
                        env, columns=0)
  assert rc == 0, out
  done = [m for m in BAR.finditer(out) if m['stage'] == 'done']
  assert done and int(done[-1]['n']) == ROWS and int(done[-1]['failed']) == failed, out
  assert len(done[-1].group(0)) <= 80
