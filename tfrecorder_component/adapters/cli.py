"""The `tfrecorder-component` command: convert, validate and inspect without a pipeline.

    tfrecorder-component convert SOURCE OUTPUT_DIR [options]
    tfrecorder-component validate SOURCE [--report-dir DIR]
    tfrecorder-component inspect OUTPUT_DIR [--split NAME] [--contact-sheet sheet.png]
    tfrecorder-component --version

SOURCE is a manifest file (any supported format), a folder of manifests, or an image
folder laid out as `<split>/<label>/<image>` or `<label>/<image>`.

Exit status: 0 done; 1 the data failed (more failed rows than --max-error-ratio allows,
a manifest that cannot be read as given, rows that `validate` found failing); 2 what was
asked cannot be done (a usage error, an unknown option value, a missing source, an
output folder in use, a disk full or a folder that cannot be written); 130 interrupted
(Ctrl-C), 143 terminated (SIGTERM): what the run had written is removed.

The bare command prints the top-level help (each command, one line) on stderr and exits 2,
as any usage error; a mistyped option or command is named with the closest one. Log
records reach the terminal as `warning: ...` lines (the command's handler only).

Length: the command's parser, its three commands and what each prints; the terminal's
formatting is `console`'s.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from typing import List, Optional, Sequence

from tfrecorder_component import extras as extras_lib
from tfrecorder_component.adapters.console import (WORKER_WARNINGS, EscapingStream,
                                                   quiet_third_party_notices, refusal)
from tfrecorder_component.record import labels as labels_lib
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component import option_table
from tfrecorder_component.steps import policy
from tfrecorder_component.errors import ManifestError, UsageError, closest
from tfrecorder_component.manifest.registry import MANIFEST_FORMATS

PROGRESS_EVERY_S = 10.0
ERRORS_PRINTED = 20


SOURCE_HELP = ('a manifest file of any format --format names, a folder of them, a dataset '
               'folder as an annotation tool exports it (a VOC or COCO root, a YOLO '
               'data.yaml), or an image folder (<label>/<image> or <split>/<label>/<image>)')


def _splits(text: str):
  """`train=8,eval=1,test=1` -> [('train', 8), ...]."""
  pairs = []
  for part in text.split(','):
    name, _, buckets = part.partition('=')
    if not name.strip() or not buckets.strip().isdigit() or int(buckets) < 1:
      raise argparse.ArgumentTypeError(
          f'expected NAME=BUCKETS[,NAME=BUCKETS...] with whole numbers, e.g. '
          f'train=8,eval=1,test=1; got {text!r}')
    pairs.append((name.strip(), int(buckets)))
  return pairs


def _seconds(text: str) -> float:
  try:
    value = float(text)
  except ValueError:
    value = 0.0
  if not value > 0:
    raise argparse.ArgumentTypeError(f'expected a number of seconds above 0, got {text!r}')
  return value


def _progress_every(args) -> Optional[float]:
  """`progress_every_s` for the command: None (no progress on stderr) with --quiet."""
  return None if args.quiet else args.progress_every


def _json_object(text: str) -> dict:
  try:
    value = json.loads(text)
  except json.JSONDecodeError as e:
    raise argparse.ArgumentTypeError(f'not JSON ({e}): {text!r}') from None
  if not isinstance(value, dict):
    raise argparse.ArgumentTypeError(f'expected a JSON object, got {text!r}')
  return value


def _columns(text: str):
  """`image=Path,label=ClassId,split=data set` -> (('image', 'Path'), ...)."""
  from tfrecorder_component.manifest.columns import parse_columns  # pylint: disable=g-import-not-at-top
  try:
    return parse_columns(text)
  except UsageError as e:
    raise argparse.ArgumentTypeError(str(e)) from None


# The parsers the option table's `type`s name (`option_table.Option.cli`).
ARGUMENT_TYPES = {'int': int, 'float': float, 'splits': _splits, 'json_object': _json_object,
                  'columns': _columns}


def _conversion_options(parser: argparse.ArgumentParser, writes: bool = True) -> None:
  """The options of reading and converting a source, made from `option_table.OPTIONS`;
  with `writes`, those of writing records too (validate writes none). An option not
  given is left out of the namespace, so that `convert()` takes its default."""
  groups = {}
  for option in option_table.taken_by(option_table.CLI, writes):
    kwargs = dict(option.cli)
    if 'type' in kwargs:
      kwargs['type'] = ARGUMENT_TYPES[kwargs['type']]
    where = parser
    if option.group:
      if option.group not in groups:
        groups[option.group] = parser.add_mutually_exclusive_group()
      where = groups[option.group]
    text = option.help.replace('%(default)s', str(option.default))
    if '{formats}' in text:
      text = text.format(formats=', '.join(MANIFEST_FORMATS))
    where.add_argument(option.flag, dest=option.name, default=argparse.SUPPRESS, help=text,
                       **kwargs)
  parser.add_argument('-q', '--quiet', action='store_true',
                      help='show no progress on stderr (errors still print)')
  parser.add_argument('--progress-every', type=_seconds, default=PROGRESS_EVERY_S,
                      metavar='SECONDS', help='where stderr is not a terminal (CI, logs): a '
                      'progress line at most this often (default: %(default)s); a terminal '
                      'gets a live bar')


def _options(args) -> dict:
  """{option name: value} of the options given on the command line."""
  given = {o.name: getattr(args, o.name) for o in option_table.OPTIONS
           if o.flag and hasattr(args, o.name)}
  for name in ('layouts', 'confine_to'):  # repeatable, and comma-separated
    if name in given:
      given[name] = [n.strip() for a in given[name] for n in a.split(',') if n.strip()]
  if 'image_transform' in given:
    from tfrecorder_component.images.transform import ImageTransform  # pylint: disable=g-import-not-at-top
    given['image_transform'] = ImageTransform.from_json(given['image_transform'])
  return given


def _print_errors(report_dir: str, failed: int, show_path: bool = True) -> None:
  for line in policy.failed_rows_lines(output_paths.errors_path(report_dir), failed,
                                       ERRORS_PRINTED):
    print(line)
  if show_path:
    print(f'All failed rows: {output_paths.errors_path(report_dir)}')


def _print_label_notes(summary) -> None:
  """What became of the run's labels, where anything is worth saying."""
  for line in labels_lib.label_notes(summary):
    print(line)


def cmd_convert(args) -> int:
  """`convert`: runs `convert()` and prints the records written per split and layout,
  the failed rows, what became of the labels and boxes, and the report page's path.

  Args:
    args: The parsed command line (`build_parser`'s namespace): `source`, `output_dir`,
      `quiet`, `progress_every` and the conversion options given (those not given are
      absent, so that `convert()` takes its defaults).

  Returns:
    0; a run that fails raises, and `main` turns the exception into the exit status.
  """
  from tfrecorder_component.adapters.conversion import convert  # pylint: disable=g-import-not-at-top
  result = convert(args.source, args.output_dir, progress_every_s=_progress_every(args),
                   **_options(args))
  print(f'Wrote {result.records_written:,} records of {result.rows_read:,} rows to '
        f'{result.output_dir}')
  for split, count in result.records_per_split.items():
    if split in result.split_dirs:
      print(f'  {split}: {count:,} records in {result.split_dirs[split]}')
    else:
      print(f'  {split}: no records (not written)')
  for name, written in (result.summary.get('layouts') or {}).items():
    print(f'  layout {name}: {os.path.join(result.output_dir, written["folder"])}')
  if result.rows_failed:
    print(f'{result.rows_failed:,} rows failed: {result.errors_per_reason}')
    _print_errors(result.report_dir, result.rows_failed)
  _print_label_notes(result.summary)
  _print_box_issues(result.summary, result.report_dir)
  print(f'Report: {os.path.join(result.report_dir, output_paths.REPORT_PAGE)}')
  return 0


def _print_box_issues(summary: dict, report_dir: str) -> None:
  """Detection: boxes written, and the dropped and clipped ones (with masks, keypoints
  hidden) by reason."""
  issues = summary.get('box_issues') or {}
  if not (summary.get('objects_written') or issues):
    return
  print(f'Boxes: {summary.get("objects_written", 0):,} written')
  for action in ('dropped', 'clipped', 'hidden'):
    reasons = {k.split(':', 1)[1]: n for k, n in issues.items() if k.startswith(action + ':')}
    if reasons:
      listed = ', '.join(f'{n:,} {reason}' for reason, n in reasons.items() if reason != action)
      print(f'  {sum(reasons.values()):,} {action}' + (f' ({listed})' if listed else ''))
  if issues:
    print(f'  every one: {os.path.join(report_dir, "box_issues.jsonl")}')


def _earlier_report(report_dir: str) -> Sequence[str]:
  """The names in existing folder `report_dir` when it is empty or an earlier report
  (`output.folder.earlier_report`), which `validate` replaces.

  Args:
    report_dir: The folder `--report-dir` names, which exists.

  Raises:
    UsageError: before anything is read or removed, for a file, or a folder that holds
      anything else: a folder of the user's is never emptied.
  """
  from tfrecorder_component.output import folder  # pylint: disable=g-import-not-at-top
  if not os.path.isdir(report_dir):
    raise UsageError(f'--report-dir {report_dir} is a file, not a folder')
  names = sorted(os.listdir(report_dir))
  if names and not folder.earlier_report(report_dir):
    shown = [name for name in names if name not in output_paths.REPORT_NAMES] or names
    raise UsageError(f'--report-dir {report_dir} holds files that are no earlier report '
                     f'({", ".join(shown[:3])}{", ..." if len(shown) > 3 else ""}): name a '
                     "new or empty folder, or an earlier report's")
  return names


def _remove_report_files(report_dir: str, names: Sequence[str] = (), made: bool = False
                         ) -> None:
  """Removes the report files `names` from `report_dir` (every report name where `made`),
  and the folder itself only where this run `made` it.

  Args:
    report_dir: The report folder.
    names: Names in it to remove, all of them report names (`_earlier_report`).
    made: Whether this run made the folder: then it goes, with what the run wrote.
  """
  if made:
    shutil.rmtree(report_dir, ignore_errors=True)
    return
  for name in names or output_paths.REPORT_NAMES:
    path = os.path.join(report_dir, name)
    if os.path.isdir(path) and not os.path.islink(path):
      shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
      os.remove(path)


def cmd_validate(args) -> int:
  """`validate`: runs `validate()` into the report folder and prints the rows read, valid
  and failed, the failed rows and what became of the labels.

  Args:
    args: The parsed command line (`build_parser`'s namespace): `source`, `report_dir`
      (new, empty, or an earlier report, whose files are replaced: `_earlier_report`;
      None: the report goes to a temporary folder, removed at the end, so nothing is
      written), `no_report` (the same, whatever `report_dir` says), `quiet`,
      `progress_every` and the reading options given.

  Returns:
    1 if any row failed or no row was read, else 0.
  """
  from tfrecorder_component.adapters.conversion import validate  # pylint: disable=g-import-not-at-top
  kept = args.report_dir is not None and not args.no_report
  report_dir = (os.path.abspath(args.report_dir) if kept else
                tempfile.mkdtemp(prefix='tfrecorder-validate-'))
  made = not kept or not os.path.lexists(report_dir)
  if not made:
    _remove_report_files(report_dir, _earlier_report(report_dir))
  from tfrecorder_component.output import interrupt  # pylint: disable=g-import-not-at-top
  key = interrupt.on_interrupt(lambda: _remove_report_files(report_dir, made=made) or '')
  try:
    summary = validate(args.source, report_dir, progress_every_s=_progress_every(args),
                       **_options(args))
    rows, failed = summary['rows_read'], summary['rows_failed']
    print(f'{rows:,} rows read, {rows - failed:,} valid, {failed:,} failed')
    if failed:
      print(f'Failed rows by reason: {summary["errors_per_reason"]}')
      _print_errors(report_dir, failed, show_path=kept)
      if not kept:
        print('Keep every failed row and the report with --report-dir DIR')
    _print_label_notes(summary)
    if kept:
      print(f'Report: {os.path.join(report_dir, output_paths.REPORT_PAGE)}')
    return 1 if failed or not rows else 0
  finally:
    interrupt.done(key)
    if not kept:
      shutil.rmtree(report_dir, ignore_errors=True)


def cmd_inspect(args) -> int:
  """`inspect`: prints the records per split, the labels per split and the first records
  of an output, and writes a contact sheet where asked.

  Args:
    args: The parsed command line (`build_parser`'s namespace): `output_dir` (an output
      of convert or an Examples artifact), `split` (None: every split; an unknown one
      raises), `records` (how many to print), `contact_sheet` (the PNG path to write, or
      None for none) and `per_label` (images per label on it).

  Returns:
    0.
  """
  from tfrecorder_component.readers import inspection  # pylint: disable=g-import-not-at-top
  inspection.check_split(args.output_dir, args.split)
  info = inspection.inspect_examples(args.output_dir, records=args.records, split=args.split)
  print(f'Records per split: {info["records_per_split"]}')
  for split, labels in info['labels_per_split'].items():
    print(f'  {split}: {labels}')
  for record in info['records']:
    print('  ' + json.dumps(record, ensure_ascii=False))
  if args.contact_sheet:
    inspection.contact_sheet(args.output_dir, args.contact_sheet, per_label=args.per_label,
                             split=args.split)
    print(f'Contact sheet: {args.contact_sheet}')
  return 0


PROG = 'tfrecorder-component'
DISTRIBUTION = 'tfrecorder-component'

_TOP_EPILOG = f"""\
A command's options and examples: {PROG} COMMAND --help, e.g.
  {PROG} convert --help
Guides: docs/guides/cli.md (the command line), docs/guides/formats.md (the
manifest formats and folder layouts it reads)."""

_CSV_LAYOUT = """\
A CSV manifest (AutoML / Vertex AI) is one image a row, split first; a header
row is optional (with one, columns are found by name, Kaggle's, GTSRB's and
fastai's too: filepaths, Path, ClassId, data set, is_valid, ...; --columns names
others, e.g. --columns 'image=photo file,label=kind,split=data set'):
  split,image_uri,label
  TRAIN,images/cat-1.jpg,cat
  VALIDATION,images/dog-7.jpg,dog
  TEST,gs://my-bucket/cat-9.png,cat
  UNASSIGNED,images/dog-2.jpg,dog
split: TRAIN, VALIDATION, TEST, or UNASSIGNED (or no split column): hashed into
--splits. image_uri: a path relative to the manifest's folder (or to
--image-root), or gs://, s3://, ... A row of several labels (label,label,...)
is multi-label. Other formats (COCO, Pascal VOC, YOLO, JSONL, ...) are detected
by their content: see docs/guides/formats.md."""

_CONVERT_EPILOG = f"""\
examples:
  {PROG} convert manifest.csv out
  {PROG} convert photos/ out --splits train=8,eval=1,test=1
  {PROG} convert manifest.csv out --image-root /data/images \\
      --max-error-ratio 0.05
  {PROG} convert annotations.json out-coco --include-masks
  {PROG} convert data.yaml out-yolo --layout parquet
  {PROG} convert span-2.csv out-2 --label-map out --append-new-labels
  {PROG} convert manifest.csv out --overwrite    # replace an earlier output

{_CSV_LAYOUT}"""

_VALIDATE_EPILOG = f"""\
examples:
  {PROG} validate manifest.csv
  {PROG} validate photos/ --no-report
  {PROG} validate manifest.csv --image-root /data/images --report-dir checks

{_CSV_LAYOUT}"""

_INSPECT_EPILOG = f"""\
examples:
  {PROG} inspect out
  {PROG} inspect out --split train --records 5
  {PROG} inspect out --contact-sheet sheet.png --per-label 4"""


def version() -> str:
  """The installed package's version, or the package's own where it is not installed."""
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  try:
    return metadata.version(DISTRIBUTION)
  except metadata.PackageNotFoundError:
    import tfrecorder_component  # pylint: disable=g-import-not-at-top
    return getattr(tfrecorder_component, '__version__', 'unknown')


class _Version(argparse.Action):
  """`--version`: the version, looked up only when asked."""

  def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
               help='print the version and exit'):  # pylint: disable=redefined-builtin
    super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0,
                     help=help)

  def __call__(self, parser, namespace, values, option_string=None):
    print(f'{PROG} {version()}')
    parser.exit()


class _Parser(argparse.ArgumentParser):
  """argparse's parser, whose usage errors quote a one-line usage: a command's full usage
  (two dozen lines for convert) would bury the one line that says what is wrong."""

  def error(self, message: str):
    usage = self.format_usage()
    if usage.count('\n') > 2:
      positionals = ' '.join(a.metavar or a.dest for a in self._get_positional_actions())
      usage = f'usage: {self.prog} [options] {positionals} (--help lists the options)\n'
    self._print_message(usage, sys.stderr)
    self.exit(2, f'{self.prog}: error: {message}\n')


def unrecognized(parser: argparse.ArgumentParser, extras: List[str]) -> None:
  """Exits as argparse does (usage, one error line, status 2) for `extras` that
  `parser` (the command's) does not take, naming the option closest to each mistyped
  one.

  Args:
    parser: The parser of the command given (the top-level parser where there is none):
      its `--` options are the candidates, and its `error` prints the usage and exits.
    extras: The words `parse_known_args` left over, in command-line order; the word
      after a mistyped option that takes a value is taken as its value.
  """
  actions = parser._option_string_actions  # pylint: disable=protected-access
  options = [s for s in actions if s.startswith('--')]
  described = []
  words = iter(extras)
  for extra in words:
    name, equals, _ = extra.partition('=')
    close = closest(name, options) if name.startswith('-') else None
    described.append((extra, close))
    if close and not equals and actions[close].nargs != 0:
      next(words, None)  # the mistyped option's value, not a word of its own
  if len(described) == 1:
    (extra, close), = described
    parser.error(f'unrecognized argument {extra}' +
                 (f'; did you mean {close}?' if close else ''))
  parser.error('unrecognized arguments: ' + ', '.join(
      f'{extra} (did you mean {close}?)' if close else extra for extra, close in described))


def _check_command(parser: argparse.ArgumentParser, commands: dict, argv: List[str]) -> None:
  """A command that is not one exits as argparse does, naming the closest command (what
  argparse itself does only from Python 3.14, where asked)."""
  words = iter(argv)
  for word in words:
    if word == '--':
      word = next(words, None)
    elif word.startswith('-'):
      continue  # the top level's options take no value
    if word is not None and word not in commands:
      close = closest(word, commands)
      parser.error(f'unknown command {word!r}' +
                   (f'; did you mean {close}?' if close else '') +
                   f' (commands: {", ".join(commands)})')
    return


def build_parser():
  """(the command's parser, {command name: its parser})."""
  formatter = argparse.RawDescriptionHelpFormatter
  parser = _Parser(
      prog=PROG, formatter_class=formatter, epilog=_TOP_EPILOG,
      description='Image manifests and image folders to TFRecords of tf.train.Example,\n'
      'without a pipeline: convert them, validate them (writing nothing), inspect an\n'
      'output.')
  parser.add_argument('--version', action=_Version)
  commands = parser.add_subparsers(dest='command', title='commands')
  convert = commands.add_parser(
      'convert', help='convert a manifest or image folder to TFRecords',
      formatter_class=formatter, epilog=_CONVERT_EPILOG,
      description='Convert a manifest (any supported format), a folder of them or an\n'
      'image folder to TFRecords of tf.train.Example in OUTPUT_DIR: Split-<name>/\n'
      'shards as TFX\'s ExampleGen writes them, and a report of the failed rows.')
  convert.add_argument('source', help=SOURCE_HELP)
  convert.add_argument('output_dir', help='the folder to write: new or empty, or an earlier '
                       'output with --overwrite; never an input, or in or around one')
  _conversion_options(convert)
  convert.set_defaults(run=cmd_convert)
  validate = commands.add_parser(
      'validate', help='probe every image, write no records; exit 1 if any row fails',
      formatter_class=formatter, epilog=_VALIDATE_EPILOG,
      description='Read SOURCE as convert would and probe every image (decode check\n'
      'included), writing no record: lists the failed rows and exits 1 if any.')
  validate.add_argument('source', help=SOURCE_HELP)
  validate.add_argument('--report-dir',
                        help='keep the report (errors.jsonl, summary.json, report.html) '
                        'here: a new or empty folder, or an earlier report, which it '
                        'replaces; any other folder is refused (default: none kept, '
                        'nothing written)')
  validate.add_argument('--no-report', action='store_true',
                        help='keep no report, only print the failed rows (the default; '
                        'wins over --report-dir)')
  _conversion_options(validate, writes=False)
  validate.set_defaults(run=cmd_validate)
  inspect = commands.add_parser(
      'inspect', help='counts per split and label, a few records and a contact sheet of '
      'an output', formatter_class=formatter, epilog=_INSPECT_EPILOG,
      description='Counts per split and label, the first records (without their image\n'
      'bytes) and a contact sheet of each label\'s images, of an output of convert or\n'
      'an Examples artifact.')
  inspect.add_argument('output_dir', help='an output folder of convert, or an Examples artifact')
  inspect.add_argument('--records', type=int, default=3,
                       help='records to print (default: %(default)s)')
  inspect.add_argument('--contact-sheet', help='write a PNG of sample images per label here')
  inspect.add_argument('--per-label', type=int, default=8,
                       help='images per label on the contact sheet (default: %(default)s)')
  inspect.add_argument('--split', help='only this split: its counts, records and contact '
                       'sheet (default: every split); an unknown split is an error')
  inspect.set_defaults(run=cmd_inspect)
  return parser, dict(commands.choices)


def main(argv: Optional[List[str]] = None) -> int:
  """The `tfrecorder-component` command, with stdout and stderr escaped by
  `EscapingStream` while it runs.

  Args:
    argv: The command's words, without the program name; None takes `sys.argv[1:]` and
      also installs the Ctrl-C and SIGTERM handling (exit 130 or 143).

  Returns:
    The exit status: 0 done, 1 the data failed, 2 what was asked cannot be done, 130
    interrupted.
  """
  streams = sys.stdout, sys.stderr
  sys.stdout, sys.stderr = EscapingStream(sys.stdout), EscapingStream(sys.stderr)
  try:
    return _main(argv)
  finally:
    sys.stdout, sys.stderr = streams


def _main(argv: Optional[List[str]] = None) -> int:
  """The command; `argv` None (the command line itself) also takes Ctrl-C and SIGTERM
  for the process (`interrupt`): one line, exit 130 or 143, nothing left behind."""
  if argv is None:
    from tfrecorder_component.output import interrupt  # pylint: disable=g-import-not-at-top
    interrupt.install()
  quiet_third_party_notices()
  parser, commands = build_parser()
  argv = sys.argv[1:] if argv is None else list(argv)
  if not argv:  # the bare command: what each command does, and where to read more
    sys.stderr.write(parser.format_help())
    return 2
  _check_command(parser, commands, argv)
  args, extras = parser.parse_known_args(argv)
  if extras:
    unrecognized(commands.get(args.command, parser), extras)
  if args.command is None:  # options only (`tfrecorder-component -q`)
    parser.error('a command is required: ' + ', '.join(commands) +
                 f' (see {parser.prog} --help)')
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  # Beam's worker processes inherit the environment, not filters.
  given = os.environ.get('PYTHONWARNINGS')
  os.environ['PYTHONWARNINGS'] = f'{given},{WORKER_WARNINGS}' if given else WORKER_WARNINGS
  try:
    return args.run(args)
  except (policy.TooManyFailedRows, ManifestError) as e:  # the data failed: exit 1
    print(refusal(str(e)), file=sys.stderr)
    return 1
  except extras_lib.MissingExtra as e:  # a path needs an extra that is not installed: exit 2
    print(refusal(str(e)), file=sys.stderr)
    return 2
  except (ValueError, RuntimeError, OSError) as e:  # what was asked cannot be done: exit 2
    from tfrecorder_component.io.files import describe_os_error  # pylint: disable=g-import-not-at-top
    print(refusal(describe_os_error(e, getattr(args, 'output_dir', None)) or str(e)),
          file=sys.stderr)
    return 2
  except KeyboardInterrupt:  # main() called from Python, without the signal thread
    # A bar still open ends its line (one the run closed was drawn over the `^C`).
    from tfrecorder_component.output import progress  # pylint: disable=g-import-not-at-top
    progress.end_bars()
    print('error: interrupted (Ctrl-C)', file=sys.stderr)
    return 130
  finally:
    if given is None:
      os.environ.pop('PYTHONWARNINGS', None)
    else:
      os.environ['PYTHONWARNINGS'] = given


if __name__ == '__main__':
  sys.exit(main())
