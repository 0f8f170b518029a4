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
"""
from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import warnings
from typing import List, Optional

from tfrecorder_component import extras as extras_lib
from tfrecorder_component import labels as labels_lib
from tfrecorder_component import layout
from tfrecorder_component import policy
from tfrecorder_component.errors import ManifestError
from tfrecorder_component.manifest.registry import MANIFEST_FORMATS

PROGRESS_EVERY_S = 10.0
ERRORS_PRINTED = 20


SOURCE_HELP = ('a manifest file (CSV, JSONL, COCO JSON, Pascal VOC XML), a folder of them, '
               'or an image folder (<label>/<image> or <split>/<label>/<image>)')


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


def _conversion_options(parser: argparse.ArgumentParser, writes: bool = True) -> None:
  """The options of reading and converting a source; with `writes`, those of writing
  records too (validate writes none)."""
  parser.add_argument('--format', dest='manifest_format',
                      help='manifest format, one of: ' + ', '.join(MANIFEST_FORMATS) +
                      ' (default: detected per file; yolo_obb is only ever named)')
  parser.add_argument('--image-root',
                      help='folder or gs:// prefix that relative image URIs, COCO file_names '
                      'and Pascal VOC filenames are relative to (default: the manifest\'s '
                      'folder)')
  parser.add_argument('--splits', type=_splits,
                      help='hash buckets for rows without ML_USE (default: '
                      'train=8,eval=1,test=1)')
  parser.add_argument('--feature-types', type=_json_object,
                      help='types of extra manifest columns as JSON, e.g. '
                      '\'{"weight": "float"}\' (default: inferred per file)')
  parser.add_argument('--max-pixels', type=int,
                      help='refuse images whose header claims more pixels (default: '
                      '178,956,970)')
  parser.add_argument('--max-bytes', type=int,
                      help='refuse image files larger than this (default: 64 MiB)')
  if writes:
    parser.add_argument('--compression-level', type=int, choices=range(10), metavar='0-9',
                        help='gzip level of the shards (default 0, stored: encoded images '
                        'do not compress)')
  parser.add_argument('--no-verify-decode', dest='verify_decode', action='store_false',
                      help='probe headers only, do not decode every image')
  parser.add_argument('--convert-unsupported', action='store_true',
                      help='re-encode WebP, TIFF, ... as PNG instead of failing them')
  parser.add_argument('--include-masks', action='store_true',
                      help='COCO, YOLO segmentation, LabelMe, CVAT, Label Studio: write each '
                      'object\'s mask (polygons or RLE) as a PNG in image/object/mask')
  parser.add_argument('--include-keypoints', action='store_true',
                      help='COCO, YOLO pose, CVAT points: write each object\'s keypoints in '
                      'image/object/keypoint/*')
  parser.add_argument('--concurrent-reads', type=int, metavar='N',
                      help='reads in flight per worker for images on gs://, s3:// and other '
                      'remote storage (default 64; local files are read in line)')
  parser.add_argument('--label-map', metavar='PATH',
                      help='keep the ids of this label map: a label_map.pbtxt, a labels.txt '
                      'or an earlier output folder; a label it lacks fails its rows')
  parser.add_argument('--append-new-labels', action='store_true',
                      help='with --label-map: give labels it lacks the next free ids '
                      '(continuous training: every earlier id stays)')
  parser.add_argument('--class-map', metavar='JSON|PATH',
                      help='classes to keep, drop, rename or merge: a JSON object or a '
                      '.json / .yaml file of one, e.g. \'{"car": "vehicle", "truck": '
                      '"vehicle", "blurry": null}\'; "*": null drops every class not listed')
  parser.add_argument('--transform', help='image transform as JSON, e.g. '
                      '\'{"longest_side": 512, "encode": "jpeg"}\'')
  parser.add_argument('--runner', default='DirectRunner',
                      help='Beam runner (default: %(default)s; on local files with no '
                      '--beam-arg, without Beam: a worker process per 1,000 rows, up to one '
                      'a core; DataflowRunner needs --project, --region and --temp-location)')
  parser.add_argument('--project', help='Google Cloud project (Dataflow)')
  parser.add_argument('--region', help='Google Cloud region (Dataflow)')
  parser.add_argument('--temp-location', help='gs:// folder for Dataflow\'s temporary files')
  parser.add_argument('--beam-arg', dest='beam_args', action='append', default=[],
                      help='an extra Beam argument (repeatable), e.g. '
                      '--beam-arg=--direct_num_workers=0')
  parser.add_argument('-q', '--quiet', action='store_true',
                      help='show no progress on stderr (errors still print)')
  parser.add_argument('--progress-every', type=_seconds, default=PROGRESS_EVERY_S,
                      metavar='SECONDS', help='where stderr is not a terminal (CI, logs): a '
                      'progress line at most this often (default: %(default)s); a terminal '
                      'gets a live bar')


def _options(args) -> dict:
  from tfrecorder_component.images.transform import ImageTransform  # pylint: disable=g-import-not-at-top
  given = {name: getattr(args, name, None) for name in (
      'splits', 'feature_types', 'max_pixels', 'max_bytes', 'compression_level', 'num_shards',
      'shard_size_mb', 'concurrent_reads', 'label_map', 'class_map')
           if getattr(args, name, None) is not None}
  return dict(manifest_format=args.manifest_format, image_root=args.image_root,
              verify_decode=args.verify_decode, convert_unsupported=args.convert_unsupported,
              include_masks=args.include_masks, include_keypoints=args.include_keypoints,
              append_new_labels=args.append_new_labels,
              image_transform=ImageTransform.from_json(args.transform),
              runner=args.runner, project=args.project, region=args.region,
              temp_location=args.temp_location, beam_args=args.beam_args,
              **({'layouts': [n for a in args.layouts for n in a.split(',') if n]}
                 if getattr(args, 'layouts', None) else {}), **given)


def _print_errors(report_dir: str, failed: int, show_path: bool = True) -> None:
  for line in policy.failed_rows_lines(layout.errors_path(report_dir), failed,
                                       ERRORS_PRINTED):
    print(line)
  if show_path:
    print(f'All failed rows: {layout.errors_path(report_dir)}')


def _print_label_notes(summary) -> None:
  """What became of the run's labels, where anything is worth saying."""
  for line in labels_lib.label_notes(summary):
    print(line)


def cmd_convert(args) -> int:
  from tfrecorder_component.conversion import convert  # pylint: disable=g-import-not-at-top
  result = convert(args.source, args.output_dir, max_error_ratio=args.max_error_ratio,
                   overwrite=args.overwrite, progress_every_s=_progress_every(args),
                   **_options(args))
  print(f'Wrote {result.records_written:,} records of {result.rows_read:,} rows to '
        f'{result.output_dir}')
  for split, count in result.records_per_split.items():
    print(f'  {split}: {count:,} records in {result.split_dirs[split]}')
  for name, written in (result.summary.get('layouts') or {}).items():
    print(f'  layout {name}: {os.path.join(result.output_dir, written["folder"])}')
  if result.rows_failed:
    print(f'{result.rows_failed:,} rows failed: {result.errors_per_reason}')
    _print_errors(result.report_dir, result.rows_failed)
  _print_label_notes(result.summary)
  _print_box_issues(result.summary, result.report_dir)
  print(f'Report: {os.path.join(result.report_dir, layout.REPORT_PAGE)}')
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


def cmd_validate(args) -> int:
  from tfrecorder_component.conversion import validate  # pylint: disable=g-import-not-at-top
  report_dir = tempfile.mkdtemp(prefix='tfrecorder-validate-') if args.no_report else (
      os.path.abspath(args.report_dir))
  if not args.no_report and os.path.isdir(report_dir):
    shutil.rmtree(report_dir)  # the report of an earlier validation: replaced
  from tfrecorder_component import interrupt  # pylint: disable=g-import-not-at-top
  key = interrupt.on_interrupt(lambda: shutil.rmtree(report_dir, ignore_errors=True) or '')
  try:
    summary = validate(args.source, report_dir, progress_every_s=_progress_every(args),
                       **_options(args))
    rows, failed = summary['rows_read'], summary['rows_failed']
    print(f'{rows:,} rows read, {rows - failed:,} valid, {failed:,} failed')
    if failed:
      print(f'Failed rows by reason: {summary["errors_per_reason"]}')
      _print_errors(report_dir, failed, show_path=not args.no_report)
    _print_label_notes(summary)
    if not args.no_report:
      print(f'Report: {os.path.join(report_dir, layout.REPORT_PAGE)}')
    return 1 if failed or not rows else 0
  finally:
    interrupt.done(key)
    if args.no_report:
      shutil.rmtree(report_dir, ignore_errors=True)


def cmd_inspect(args) -> int:
  from tfrecorder_component import inspection  # pylint: disable=g-import-not-at-top
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


# What each worker process of a multi-process DirectRunner run logs at start, through the
# runner: nothing the user can act on.
_WORKER_NOTICES = ('No semi_persistent_directory found', 'Discarding unparseable args')
_WORKER_WARNINGS = 'ignore::FutureWarning:google.api_core._python_version_support'


class _DropNoticesTheCommandReplaces(logging.Filter):
  """Beam without its GCP extra logs, when imported, that BigQuery's client is missing
  (the command never uses BigQuery); its worker processes log start-up notices; and
  Beam logs a traceback for the manifest or file system error (a full disk) that the
  command then states in one line."""

  def filter(self, record: logging.LogRecord) -> bool:
    try:
      message = record.getMessage()
    except Exception:  # pylint: disable=broad-except
      return True  # a malformed log call is its own caller's to find
    if message.startswith('apitools not found, and bigquery client'):
      return False
    if record.name.endswith('local_job_service') and any(
        notice in message for notice in _WORKER_NOTICES):
      return False
    error = record.exc_info[1] if record.exc_info else None
    if isinstance(error, OSError):  # a full disk, a folder that cannot be written
      from tfrecorder_component.files import describe_os_error  # pylint: disable=g-import-not-at-top
      return describe_os_error(error) is None
    return not isinstance(error, ManifestError)


class _CommandFormatter(logging.Formatter):
  """Log records as the command's own lines: `warning: <message>` (`error: ...`), as its
  refusals read, not `WARNING:root:<message>`; below WARNING (shown only where a
  library's logger is set lower) the message alone. Only the command's handler: a
  program calling `convert()` keeps its own logging."""

  def formatMessage(self, record: logging.LogRecord) -> str:
    if record.levelno >= logging.ERROR:
      return f'error: {record.message}'
    if record.levelno >= logging.WARNING:
      return f'warning: {record.message}'
    return record.message


def _quiet_third_party_notices() -> None:
  """The command owns its process: notices about other libraries' own support (Google
  clients on the interpreter's age, Beam's BigQuery client) do not reach the user."""
  warnings.filterwarnings('ignore', category=FutureWarning,
                          module='google.api_core._python_version_support')
  root = logging.getLogger()
  if not root.handlers:
    handler = logging.StreamHandler()
    handler.setFormatter(_CommandFormatter())
    root.addHandler(handler)
  for handler in root.handlers:
    if not any(isinstance(f, _DropNoticesTheCommandReplaces) for f in handler.filters):
      handler.addFilter(_DropNoticesTheCommandReplaces())


# C0 and C1 control characters but line feed and tab, as escapes: a manifest's labels,
# URIs and messages reach the terminal, and must not move the cursor, retitle the window
# or erase a line.
_ESCAPED = {c: f'\\x{c:02x}' for c in [*range(0x20), *range(0x7f, 0xa0)] if c not in (9, 10)}


class _EscapingStream:
  """A text stream that writes control characters as escapes (see `_ESCAPED`).
  `unescaped`: the stream itself, for the progress bar's own carriage returns
  (`progress.Progress`), which writes nothing from the manifest."""

  def __init__(self, stream):
    self._stream = stream
    self.unescaped = stream

  def write(self, text: str) -> int:
    return self._stream.write(text.translate(_ESCAPED))

  def __getattr__(self, name):
    return getattr(self._stream, name)


def _without_traceback(lines: List[str]) -> List[str]:
  """`lines` less any Python traceback they quote (a Beam worker's error carries its
  own): its frames go, the exception's own line stays."""
  out, inside = [], False
  for line in lines:
    if line.startswith('Traceback (most recent call last)'):
      inside = True
    elif inside and (line[:1].isspace() or line.startswith(
        ('During handling of the above', 'The above exception'))):
      pass
    else:
      inside = False
      out.append(line)
  return out


def refusal(text: str) -> str:
  """`error: <text>` as the command prints why it stopped: at most
  `policy.REFUSAL_LINES` lines, whatever the number of failed rows or the message an
  error brings (lines past the limit joined into the last one, cut to ERROR_LINE_CHARS),
  without a traceback or where in the Beam pipeline it happened, which say nothing to
  the user."""
  text = re.sub(r" \[while running '[^']*'\]", '', text)
  lines = _without_traceback([l.rstrip() for l in text.strip().splitlines() if l.strip()])
  lines = lines or ['the conversion stopped']
  limit = policy.REFUSAL_LINES
  if len(lines) > limit:
    rest = ' '.join(l.strip() for l in lines[limit - 1:])
    cut = policy.ERROR_LINE_CHARS * 2
    lines = lines[:limit - 1] + [rest if len(rest) <= cut else rest[:cut - 3] + '...']
  return 'error: ' + '\n'.join(lines)


PROG = 'tfrecorder-component'
DISTRIBUTION = 'tfrecorder-component'

_TOP_EPILOG = f"""\
A command's options and examples: {PROG} COMMAND --help, e.g.
  {PROG} convert --help
Guides: docs/guides/cli.md (the command line), docs/guides/formats.md (the
manifest formats and folder layouts it reads)."""

_CSV_LAYOUT = """\
A CSV manifest (AutoML / Vertex AI) is one image a row, split first; a header
row is optional (with one, columns are found by name):
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


def _did_you_mean(word: str, choices) -> Optional[str]:
  """The choice closest to `word`, if one is close."""
  found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
  return found[0] if found else None


def unrecognized(parser: argparse.ArgumentParser, extras: List[str]) -> None:
  """Exits as argparse does (usage, one error line, status 2) for `extras` that
  `parser` (the command's) does not take, naming the option closest to each mistyped
  one."""
  actions = parser._option_string_actions  # pylint: disable=protected-access
  options = [s for s in actions if s.startswith('--')]
  described = []
  words = iter(extras)
  for extra in words:
    name, equals, _ = extra.partition('=')
    close = _did_you_mean(name, options) if name.startswith('-') else None
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
      close = _did_you_mean(word, commands)
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
  convert.add_argument('--overwrite', action='store_true',
                       help='replace an earlier output of this tool in OUTPUT_DIR (by default '
                       'it must be new or empty); files of yours there stay, a folder that is '
                       'no output is refused, and the old output stays until the new one is '
                       'complete')
  convert.add_argument('--max-error-ratio', type=float, default=0.0,
                       help='fraction of rows that may fail (default 0: any failure fails)')
  shards = convert.add_mutually_exclusive_group()
  shards.add_argument('--num-shards', type=int, metavar='N',
                      help='write exactly N shards per split, records spread evenly '
                      '(default: the runner decides, one shard per bundle)')
  shards.add_argument('--shard-size-mb', type=float, metavar='MB',
                      help='write shards of about MB megabytes each (TensorFlow suggests '
                      '100 MB or more, and at least as many shards as parallel readers)')
  convert.add_argument('--layout', dest='layouts', action='append', default=[],
                       metavar='NAME', help='also write the records in this layout beside '
                       'TFX\'s GZIP shards (repeatable, or comma-separated): tfrecord '
                       '(uncompressed + .idx: DALI, PyTorch), tfds (tfds.builder_from_directory), '
                       'array_record (Grain), parquet (pandas, Hugging Face datasets)')
  _conversion_options(convert)
  convert.set_defaults(run=cmd_convert)
  validate = commands.add_parser(
      'validate', help='probe every image, write no records; exit 1 if any row fails',
      formatter_class=formatter, epilog=_VALIDATE_EPILOG,
      description='Read SOURCE as convert would and probe every image (decode check\n'
      'included), writing no record: lists the failed rows and exits 1 if any.')
  validate.add_argument('source', help=SOURCE_HELP)
  validate.add_argument('--report-dir', default='tfrecorder-validation',
                        help='where the report goes (errors.jsonl, summary.json, '
                        'report.html), replacing an earlier one (default: %(default)s)')
  validate.add_argument('--no-report', action='store_true',
                        help='keep no report, only print the failed rows')
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
  streams = sys.stdout, sys.stderr
  sys.stdout, sys.stderr = _EscapingStream(sys.stdout), _EscapingStream(sys.stderr)
  try:
    return _main(argv)
  finally:
    sys.stdout, sys.stderr = streams


def _main(argv: Optional[List[str]] = None) -> int:
  """The command; `argv` None (the command line itself) also takes Ctrl-C and SIGTERM
  for the process (`interrupt`): one line, exit 130 or 143, nothing left behind."""
  if argv is None:
    from tfrecorder_component import interrupt  # pylint: disable=g-import-not-at-top
    interrupt.install()
  _quiet_third_party_notices()
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
  os.environ['PYTHONWARNINGS'] = f'{given},{_WORKER_WARNINGS}' if given else _WORKER_WARNINGS
  try:
    return args.run(args)
  except (policy.TooManyFailedRows, ManifestError) as e:  # the data failed: exit 1
    print(refusal(str(e)), file=sys.stderr)
    return 1
  except extras_lib.MissingExtra as e:  # a path needs an extra that is not installed: exit 2
    print(refusal(str(e)), file=sys.stderr)
    return 2
  except (ValueError, RuntimeError, OSError) as e:  # what was asked cannot be done: exit 2
    from tfrecorder_component.files import describe_os_error  # pylint: disable=g-import-not-at-top
    print(refusal(describe_os_error(e, getattr(args, 'output_dir', None)) or str(e)),
          file=sys.stderr)
    return 2
  except KeyboardInterrupt:  # main() called from Python, without the signal thread
    # A bar still open ends its line (one the run closed was drawn over the `^C`).
    from tfrecorder_component import progress  # pylint: disable=g-import-not-at-top
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
