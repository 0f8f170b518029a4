"""Issue 53, the command line as a new user meets it in the first hour: `--version`; the
closest option or command to a mistyped one; the bare command saying what each command
does; examples (and the CSV layout) in each command's help; `inspect --split` for the
printed records too, and `inspect` of a local output without Beam; warnings as
`warning: ...` lines, not `WARNING:root:...`; and after Ctrl-C in a terminal the error
line starting a line of its own, not after the progress bar and the terminal's `^C`.

The real command in subprocesses (a pseudo-terminal for Ctrl-C), as a user runs it."""
import fcntl
import importlib.metadata
import json
import os
import pty
import re
import shlex
import subprocess
import sys
import termios
import time

import pytest

from images import write_image, write_text
from runs import CLI
from terminal import read_terminal
from tfrecorder_component.adapters import cli

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
COMMANDS = ('convert', 'validate', 'inspect')
HEAVY = 'sorted(m for m in ("tensorflow", "tfx", "apache_beam") if m in sys.modules)'


def run_cli(*args, **env):
  return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', **env))


def python(code, *args):
  return subprocess.run([sys.executable, '-c', code, *args], capture_output=True, text=True,
                        timeout=300, cwd=REPO,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=REPO))


@pytest.fixture(scope='module')
def output(tmp_path_factory):
  """An output of convert: 4 train records (cat, dog), 2 test records (bird), no eval
  (a split no record went to: not written)."""
  root = tmp_path_factory.mktemp('first-hour')
  rows = []
  for i in range(6):
    write_image(str(root / 'img' / f'{i}.png'), 'PNG', seed=i)
    split, label = ('TRAIN', ('cat', 'dog')[i % 2]) if i < 4 else ('TEST', 'bird')
    rows.append(f'{split},img/{i}.png,{label}\n')
  manifest = write_text(str(root / 'm.csv'), ''.join(rows))
  out = str(root / 'out')
  done = run_cli('convert', manifest, out, '-q')
  assert done.returncode == 0, done.stderr[-3000:]
  return out


# --- --version --------------------------------------------------------------------------


def test_version_prints_the_installed_version_without_loading_tensorflow_or_beam():
  done = run_cli('--version')
  expected = importlib.metadata.version('tfrecorder-component')
  assert (done.returncode, done.stdout, done.stderr) == (
      0, f'tfrecorder-component {expected}\n', '')
  done = python('import sys\nfrom tfrecorder_component.adapters import cli\n'
                'try:\n  cli.main(["--version"])\nexcept SystemExit as e:\n  print(e.code)\n'
                f'print({HEAVY})')
  assert done.stdout.splitlines()[-2:] == ['0', '[]'], done.stderr


def test_version_without_the_package_installed_is_the_packages_own(monkeypatch):
  import tfrecorder_component  # pylint: disable=g-import-not-at-top

  def not_installed(name):
    raise importlib.metadata.PackageNotFoundError(name)
  monkeypatch.setattr(importlib.metadata, 'version', not_installed)
  assert cli.version() == tfrecorder_component.__version__


# --- mistyped options and commands --------------------------------------------------------


@pytest.mark.parametrize('args, said', [
    (['convert', 'a.csv', 'out', '--overwirte'],
     'unrecognized argument --overwirte; did you mean --overwrite?'),
    (['convert', 'a.csv', 'out', '--max-eror-ratio', '0.5'],
     'unrecognized argument --max-eror-ratio; did you mean --max-error-ratio?'),
    (['validate', 'a.csv', '--no-reprot'],
     'unrecognized argument --no-reprot; did you mean --no-report?'),
    (['inspect', 'out', '--recrods=2'],
     'unrecognized argument --recrods=2; did you mean --records?'),
    (['--verison'], 'unrecognized argument --verison; did you mean --version?'),
    (['convrt', 'a.csv', 'out'],
     "unknown command 'convrt'; did you mean convert? (commands: convert, validate, inspect)"),
    (['inpsect', 'out'],
     "unknown command 'inpsect'; did you mean inspect? (commands: convert, validate, inspect)"),
])
def test_a_mistyped_option_or_command_is_named_with_the_closest_one(args, said):
  done = run_cli(*args)
  assert done.returncode == 2, done.stderr
  lines = done.stderr.splitlines()
  assert lines[-1].endswith(f'error: {said}'), done.stderr
  # The error is not buried under the command's two dozen lines of usage.
  assert len(lines) == 2 and lines[0].startswith('usage: tfrecorder-component'), done.stderr


def test_an_option_with_no_close_match_is_named_alone():
  done = run_cli('convert', 'a.csv', 'out', '--zzz')
  assert done.returncode == 2
  assert done.stderr.splitlines()[-1].endswith('error: unrecognized argument --zzz')


# --- the bare command and each command's help ---------------------------------------------


def test_the_bare_command_says_what_each_command_does_and_where_to_read_more():
  done = run_cli()
  assert done.returncode == 2 and done.stdout == ''  # a usage error, as argparse's own
  assert 'the following arguments are required' not in done.stderr
  for command in COMMANDS:
    described = [l for l in done.stderr.splitlines() if l.strip().startswith(command + ' ')]
    assert described and len(described[0].split()) > 3, (command, done.stderr)
  assert 'tfrecorder-component COMMAND --help' in done.stderr
  assert '--version' in done.stderr


@pytest.mark.parametrize('command', COMMANDS)
def test_each_commands_help_shows_examples_that_parse(command):
  done = run_cli(command, '--help')
  assert done.returncode == 0, done.stderr
  assert '\nexamples:\n' in done.stdout, done.stdout
  shown = done.stdout.split('\nexamples:\n', 1)[1].replace('\\\n', ' ')  # continued lines
  examples = [l.strip() for l in shown.splitlines()
              if l.strip().startswith(f'tfrecorder-component {command} ')]
  assert len(examples) >= 3, done.stdout
  parser, _ = cli.build_parser()
  for example in examples:  # every option an example shows is one the command takes
    args, extras = parser.parse_known_args(shlex.split(example, comments=True)[1:])
    assert args.command == command and extras == [], example


@pytest.mark.parametrize('command', ['convert', 'validate'])
def test_the_help_of_the_commands_reading_a_manifest_shows_the_csv_layout(command):
  done = run_cli(command, '--help')
  assert '\n  split,image_uri,label\n  TRAIN,' in done.stdout, done.stdout


# --- inspect ------------------------------------------------------------------------------


def _records(stdout):
  return [json.loads(l) for l in stdout.splitlines() if l.strip().startswith('{')]


def test_inspect_split_applies_to_the_printed_records_and_counts(output):
  done = run_cli('inspect', output, '--split', 'test', '--records', '5')
  assert done.returncode == 0, done.stderr
  records = _records(done.stdout)
  assert len(records) == 2 and {r['split'] for r in records} == {'test'}, done.stdout
  assert {r['image/class/text'][0] for r in records} == {'bird'}
  assert "Records per split: {'test': 2}" in done.stdout
  assert 'train' not in done.stdout.split('{"split"')[0]
  # Without --split: every split, records in split order.
  done = run_cli('inspect', output, '--records', '5')
  # eval got no record: not written, so neither counted nor offered.
  assert "Records per split: {'test': 2, 'train': 4}" in done.stdout
  assert [r['split'] for r in _records(done.stdout)] == ['test'] * 2 + ['train'] * 3
  done = run_cli('inspect', output, '--split', 'eval')
  assert (done.returncode, done.stderr) == (
      2, f"error: {output} has no split 'eval'; its splits: test, train\n")


def test_inspect_of_a_local_output_does_not_import_beam(output, tmp_path):
  sheet = str(tmp_path / 'sheet.png')
  done = python('import sys\nfrom tfrecorder_component.adapters import cli\n'
                'code = cli.main(sys.argv[1:])\n'
                'print(code, "apache_beam" in sys.modules)',
                'inspect', output, '--split', 'train', '--contact-sheet', sheet)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.splitlines()[-1] == '0 False', done.stdout
  assert "train: {'cat': 2, 'dog': 2}" in done.stdout
  assert os.path.getsize(sheet) > 0


# --- warnings -----------------------------------------------------------------------------


def _coco_without_objects(root):
  for i in range(2):
    write_image(os.path.join(root, f'{i}.jpg'), height=32, width=32, seed=i)
  return write_text(os.path.join(root, 'instances.json'), json.dumps({
      'images': [{'id': i + 1, 'file_name': f'{i}.jpg', 'width': 32, 'height': 32}
                 for i in range(2)],
      'annotations': [], 'categories': [{'id': 1, 'name': 'cat'}]}))


def test_the_command_prints_warnings_as_warning_lines(tmp_path):
  coco = _coco_without_objects(str(tmp_path / 'coco'))
  done = run_cli('convert', coco, str(tmp_path / 'out'), '-q')
  assert done.returncode == 0, done.stderr[-3000:]
  assert 'WARNING' not in done.stderr and ':root:' not in done.stderr, done.stderr
  # (2 images split by hash leave a split empty: that warning too)
  [warning] = [line for line in done.stderr.splitlines()
               if not line.startswith('warning: No record went to split')]
  assert warning.startswith('warning: No object in any of the 2 detection records'), warning


def test_convert_from_python_keeps_the_programs_own_logging(tmp_path):
  coco = _coco_without_objects(str(tmp_path / 'coco'))
  done = python('import logging, sys\nlogging.basicConfig()\n'
                'import tfrecorder_component as trc\n'
                'from tfrecorder_component.adapters import cli\n'
                'trc.convert(sys.argv[1], sys.argv[2])', coco, str(tmp_path / 'out'))
  assert done.returncode == 0, done.stderr[-3000:]
  assert re.search(r'^WARNING:[\w.]+:No object in any of the 2', done.stderr, re.M), done.stderr


# --- Ctrl-C in a terminal -----------------------------------------------------------------


def _ctrl_c_in_a_terminal(args, env, ready, timeout=180.0):
  """(exit status, what the terminal showed) of the command run on a pseudo-terminal that
  is its controlling terminal, Ctrl-C typed there once `ready(output so far)`."""
  master, slave = pty.openpty()
  fcntl.ioctl(slave, termios.TIOCSWINSZ, b'\x28\x00\x78\x00\x00\x00\x00\x00')  # 40 x 120
  proc = subprocess.Popen(
      [CLI, *args], stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO,
      start_new_session=True,
      # The terminal becomes the session's: Ctrl-C there signals its foreground group.
      preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
  os.close(slave)
  typed = False

  def type_ctrl_c(out: bytes) -> None:
    nonlocal typed
    if not typed and ready(out.decode('utf-8', 'replace')):
      time.sleep(0.5)  # a redraw or two of the bar
      os.write(master, b'\x03')
      typed = True

  out = b''
  try:
    out = read_terminal(master, proc, timeout, type_ctrl_c, poll_s=0.2)
  finally:
    os.close(master)
    if proc.poll() is None:
      proc.kill()
    rc = proc.wait(timeout=30)
  assert typed, out
  return rc, out.decode('utf-8', 'replace')


@pytest.mark.parametrize('quiet', [False, True], ids=['bar', 'quiet'])
def test_after_ctrl_c_the_error_line_starts_a_line_of_its_own(tmp_path, quiet):
  data = tmp_path / 'data'
  rows = []
  for i in range(4):
    write_image(str(data / f'{i}.png'), 'PNG', seed=i)
    rows.append(f'TRAIN,slow://{data}/{i}.png,l{i % 2}\n')
  manifest = write_text(str(data / 'm.csv'), ''.join(rows))
  hold, marker = str(tmp_path / 'hold'), str(tmp_path / 'reading')
  write_text(hold, '')  # every image read waits while it exists: the run waits for Ctrl-C
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', SLOW_FS_HOLD=hold, SLOW_FS_MARKER=marker,
             PYTHONPATH=os.pathsep.join([os.path.join(TESTS, 'slowfs_site'), TESTS]
                                        + sys.path))
  env.pop('TERM', None)
  out = str(tmp_path / 'out')

  def ready(shown):
    return os.path.exists(marker) and (quiet or '|' in shown)

  rc, shown = _ctrl_c_in_a_terminal(['convert', str(manifest), out, *(['-q'] if quiet else [])],
                                    env, ready)
  assert rc == 130, shown
  assert '^C' in shown, shown
  before, said, _ = shown.partition('error: interrupted (Ctrl-C)')
  assert said, shown
  # The bar's line (and the `^C` after it) ended: the error is at the start of a line,
  # after exactly one line break (no blank line).
  assert before.endswith('\n') and not before.endswith('\n\r\n'), repr(shown[-400:])
  last_line = before.rstrip('\r\n').rsplit('\n', 1)[-1]
  assert last_line.endswith('^C'), repr(last_line)
  if not quiet:
    assert re.search(r'\d+/4 |rows', last_line), repr(last_line)  # the bar, left where it was
  assert not os.path.exists(out)


def test_validate_lists_no_option_that_only_writing_uses(capsys):
  """validate writes no shard: its help has no --compression-level, convert's has."""
  from tfrecorder_component.adapters import cli as cli_lib  # pylint: disable=g-import-not-at-top
  helps = {}
  for command in ('validate', 'convert'):
    with pytest.raises(SystemExit):
      cli_lib.main([command, '--help'])
    helps[command] = capsys.readouterr().out
  assert '--compression-level' not in helps['validate']
  assert '--compression-level' in helps['convert']
