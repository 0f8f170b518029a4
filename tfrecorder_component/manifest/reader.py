"""Reading a manifest file of any registered format (`registry`) into rows, streamed."""
from __future__ import annotations

import dataclasses
import io
import re
import unicodedata
from typing import AbstractSet, Iterator, List, Mapping, NamedTuple, Optional, Sequence

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest import confine, registry
from tfrecorder_component.manifest.class_map import ClassMap, apply_class_map
from tfrecorder_component.manifest.columns import Columns, as_text, parse_columns
from tfrecorder_component.manifest.format_spec import ManifestFormat
from tfrecorder_component.manifest.features import check_feature_types
from tfrecorder_component.manifest.rows import ManifestRow, ParsedItem
from tfrecorder_component.io import files

_SNIFF_CHARS = 65536  # characters (bytes, for a file) that decide the format


def parse_manifest_text(path: str, text: str, fmt: Optional[str] = None,
                        split_override: Optional[str] = None, *,
                        image_root: Optional[str] = None,
                        feature_types: Optional[Mapping[str, str]] = None,
                        annotations: AbstractSet[str] = frozenset(),
                        class_map: ClassMap = (), columns: Columns = (),
                        confine_to: Sequence[str] = ()) -> Iterator[ParsedItem]:
  """Parses one manifest file's text into rows, or RowErrors for rows that fail.

  Args:
    path: the manifest's path: named in errors, its extension (and `text`) telling
      its format when `fmt` is None, its folder the default `image_root`.
    text: the manifest's whole text, or, for a streamed format, its lines as a text file
      opened with newline='' gives them (COCO then reads the file at `path` itself).
    fmt: the format's name (`registry.MANIFEST_FORMATS`); None: detected from `path`
      and the first 65,536 characters of `text` (which must then be a str).
    split_override: the split every row of the file takes, whatever its ML_USE column
      says (from an `input_config` split pattern, or a layout's split folder); None:
      the rows keep their own.
    image_root: the folder relative image URIs and COCO / Pascal VOC file names
      resolve against; None: the manifest's (or annotation file's) folder.
    feature_types: declares the types of extra columns ({name: 'int' | 'float' |
      'string'}); None: all inferred.
    annotations: what to read beyond boxes ('masks', 'keypoints'); a format that has
      none of them is a ManifestError.
    class_map: the run's classes to keep, drop, rename or merge (`class_map.py`), as
      sorted (class, new class or None) pairs; (): none.
    columns: the `columns` option, in any form `columns.parse_columns` takes: the
      header columns a CSV's roles are read from; a format that takes none
      (`ManifestFormat.column_roles`), or none of a role named, is a ManifestError.
    confine_to: the run's roots (`confine`, `source` replaced): a row whose image or mask
      path leaves them, by its text, fails as `outside_root` (its links are checked when
      it is read), and a format that reads other files (`ManifestFormat.reads_files`)
      reads none outside them; (): no confinement.
  """
  declared = check_feature_types(feature_types)
  confinement = confine.confinement(tuple(confine_to))
  spec = registry.by_name(fmt, path) if fmt else registry.detect(path, text[:_SNIFF_CHARS])
  extra = {}
  columns = parse_columns(columns)
  if columns:
    _check_columns(path, spec, columns)
    extra['columns'] = columns
  if annotations:
    missing = sorted(set(annotations) - set(spec.annotations))
    if missing:
      able = sorted(f.name for f in registry.FORMATS if set(missing) <= set(f.annotations))
      raise ManifestError(
          f'{path}: include_{" and include_".join(missing)} asked for, but this manifest '
          f'({spec.name}) has no {" or ".join(missing)}; formats that have them: '
          f'{", ".join(able)}')
    extra['annotations'] = frozenset(annotations)
  if confinement is not None and spec.reads_files:
    extra['confine'] = confinement
  for item in spec.parse(path, text, image_root=image_root, feature_types=declared, **extra):
    outside = _outside(item, confinement) if isinstance(item, ManifestRow) else ''
    if outside:
      item = confine.outside_error(outside, source=path, row=item.row,
                                   uri=_shown(item.image_uri))
    elif isinstance(item, ManifestRow):
      if _has_undecodable_bytes(item):
        item = RowError('bad_row', 'the row is not valid UTF-8 (or, in JSON, holds a lone '
                        'surrogate escape such as \\ud800); save the manifest as UTF-8',
                        source=path, row=item.row, uri=_shown(item.image_uri))
      else:
        item = _checked_labels(item)
        if split_override is not None and isinstance(item, ManifestRow):
          item = dataclasses.replace(item, split=split_override)
        if class_map and isinstance(item, ManifestRow):
          item = apply_class_map(item, class_map)
    yield item


def _outside(row: ManifestRow, confinement: Optional[confine.Confinement]) -> str:
  """What of the row ('image', 'mask') leaves the roots by its path's text; '' (and
  for no confinement)."""
  if confinement is None:
    return ''
  if confinement.outside(row.resolved_uri):
    return 'image'
  if row.resolved_mask_uri is not None and confinement.outside(row.resolved_mask_uri):
    return 'mask'
  return ''


def _check_columns(path: str, spec: ManifestFormat, columns: Columns) -> None:
  """Refuses the `columns` option for a format that takes none, or a role it lacks."""
  able = sorted(f.name for f in registry.FORMATS if f.column_roles)
  if not spec.column_roles:
    raise ManifestError(
        f'{path}: columns ({as_text(columns)}) names the columns of a CSV header, but this '
        f'manifest is {spec.name}, which has no header columns to name; the formats that '
        f'take columns: {", ".join(able)} (leave columns out, or convert the CSV alone)')
  other = sorted({role for role, _ in columns} - set(spec.column_roles))
  if other:
    raise ManifestError(
        f'{path}: columns names {" and ".join(other)}, which this manifest ({spec.name}) has '
        f'no column for; it takes {", ".join(spec.column_roles)}')


def _shown(text: str) -> str:
  """A text holding undecodable bytes or lone surrogates, with them as escapes."""
  try:
    return text.encode('utf-8', 'surrogateescape').decode('utf-8', 'backslashreplace')
  except UnicodeEncodeError:
    return text.encode('utf-8', 'backslashreplace').decode('utf-8')


# A label becomes a line of labels.txt (its id is its line) and a string of
# label_map.pbtxt: line breaks and control characters have no place there.
_NOT_IN_A_LABEL = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029]')


def _checked_labels(row: ManifestRow) -> ParsedItem:
  """`row` with its labels in Unicode NFC (so `café` typed two ways is one class), or
  a `bad_label` RowError for a label holding a line break or a control character. Its
  declared classes are taken the same way, those such a label names left out (their
  annotations fail as `bad_label`)."""
  if row.declared_classes:
    declared = tuple((unicodedata.normalize('NFC', name), i) for name, i in row.declared_classes
                     if not _NOT_IN_A_LABEL.search(name) and not _SURROGATE.search(name))
    if declared != row.declared_classes:
      row = dataclasses.replace(row, declared_classes=declared)
  labels = [*row.labels, *(o.label for o in row.objects or ())]
  if all(label.isascii() and label.isprintable() for label in labels):
    return row  # printable ASCII (0x20 to 0x7e): no control character, NFC as it is
  for label in labels:
    bad = _NOT_IN_A_LABEL.search(label)
    if bad:
      return RowError('bad_label', f'the label {label!r} holds {bad.group()!r}: a label may '
                      'not hold a line break or a control character (labels.txt gives each '
                      'label one line, its id); fix the label', source=row.source,
                      row=row.row, uri=row.image_uri)
  if all(unicodedata.is_normalized('NFC', label) for label in labels):
    return row
  nfc = lambda text: unicodedata.normalize('NFC', text)  # pylint: disable=unnecessary-lambda-assignment
  objects = row.objects if row.objects is None else tuple(
      dataclasses.replace(o, label=nfc(o.label)) for o in row.objects)
  return dataclasses.replace(row, labels=tuple(nfc(l) for l in row.labels), objects=objects)


def _has_undecodable_bytes(row: ManifestRow) -> bool:
  # read_manifest_file decodes with 'surrogateescape': invalid bytes become lone
  # surrogates, so one bad row fails alone instead of the whole manifest; JSON's
  # \ud800 escapes give lone surrogates too.
  texts = [row.image_uri, *row.labels, *(o.label for o in row.objects or ()),
           *(n for o in row.objects or () for n in o.keypoint_names), row.mask_uri or '']
  for name, value in row.features:
    texts.append(name)
    if isinstance(value, str):
      texts.append(value)
  # An ASCII text holds no surrogate; `isascii` is a flag's read.
  return any(not text.isascii() and _SURROGATE.search(text) for text in texts)


_SURROGATE = re.compile('[\ud800-\udfff]')


def iter_manifest_file(path: str, fmt: Optional[str] = None,
                       split_override: Optional[str] = None, *,
                       image_root: Optional[str] = None,
                       feature_types: Optional[Mapping[str, str]] = None,
                       annotations: AbstractSet[str] = frozenset(),
                       class_map: ClassMap = (), columns: Columns = (),
                       confine_to: Sequence[str] = ()) -> 'ManifestItems':
  """Reads one manifest file from any Beam file system; returns its line count (exact
  for a file of at most 64 KiB, else estimated from its size and its first 64 KiB:
  enough to size the chunks it is read in), its items, parsed as they are consumed, and
  its format. A CSV or JSONL manifest is read as it is parsed, so no reader holds it
  whole; a COCO JSON file is streamed by its parser from the path; a Pascal VOC file is one
  document, read whole.

  Args:
    path: the manifest file's path or URI on any Beam file system.
    fmt: the format's name (`registry.MANIFEST_FORMATS`); None: detected from the path's
      extension and the file's first 64 KiB.
    split_override: the split every row of the file takes, whatever its ML_USE column
      says (an `input_config` split, a layout's split folder); None: the rows keep
      their own.
    image_root: the folder relative image URIs resolve against; None: the manifest's
      folder.
    feature_types: declared types of extra columns ({name: 'int' | 'float' |
      'string'}); None: all inferred.
    annotations: what to read beyond boxes ('masks', 'keypoints').
    class_map: the run's class map, as sorted (class, new class or None) pairs; ():
      none.
    columns: the `columns` option's (role, column) pairs (`columns.parse_columns`): a
      CSV header's columns to read; (): found by name.
    confine_to: the run's roots (`parse_manifest_text`); (): no confinement.
  """
  raw = _read(path, _SNIFF_CHARS + 1)
  whole = len(raw) <= _SNIFF_CHARS
  head = raw[:_SNIFF_CHARS]
  sniffed = head.decode('utf-8-sig', errors='surrogateescape')
  spec = registry.by_name(fmt, path) if fmt else registry.detect(path, sniffed)
  if whole:
    lines, text = sniffed.count('\n') + 1, sniffed
  else:
    size = files.size(path)
    lines = -(-size * (head.count(b'\n') + 1) // len(head))
    text = (_streamed_text(path) if spec.streamed else
            _read(path).decode('utf-8-sig', errors='surrogateescape'))
  return ManifestItems(lines, parse_manifest_text(
      path, text, spec.name, split_override, image_root=image_root,
      feature_types=feature_types, annotations=annotations, class_map=class_map,
      columns=columns, confine_to=confine_to), spec)


def _read(path: str, size: int = -1) -> bytes:
  """The first `size` bytes of a manifest file (all of it by default)."""
  try:
    with files.open_file(path) as f:
      return f.read(size)
  except Exception as e:
    raise ManifestError(f'cannot read manifest {path}: {e}') from e


class _streamed_text:  # pylint: disable=invalid-name
  """A manifest's text file, opened when a parser iterates it (and closed after): lines
  decoded as a whole file's text is, newlines kept as they are (for csv)."""

  def __init__(self, path: str):
    self._path = path

  def __iter__(self):
    with files.open_file(self._path) as f:
      with io.TextIOWrapper(f, encoding='utf-8-sig', errors='surrogateescape',
                            newline='') as lines:
        yield from lines


class ManifestItems(NamedTuple):
  """One manifest file being read (`iter_manifest_file`).

  Attributes:
    lines: the file's line count: exact for a file of at most 64 KiB, else estimated
      from its size and its first 64 KiB (to size the chunks it is read in).
    items: its rows and RowErrors, in file order, parsed as they are consumed.
    format: the file's format, as named or detected.
  """
  lines: int
  items: Iterator[ParsedItem]
  format: ManifestFormat


def read_manifest_file(path: str, fmt: Optional[str] = None,
                       split_override: Optional[str] = None, *,
                       image_root: Optional[str] = None,
                       feature_types: Optional[Mapping[str, str]] = None,
                       annotations: AbstractSet[str] = frozenset(),
                       class_map: ClassMap = (), columns: Columns = (),
                       confine_to: Sequence[str] = ()) -> List[ParsedItem]:
  """Reads one manifest file from any Beam file system and parses it, in file order.

  Args:
    path: the manifest file's path or URI.
    fmt: the format's name; None: detected (`iter_manifest_file`).
    split_override: the split every row of the file takes; None: the rows keep their
      own.
    image_root: the folder relative image URIs resolve against; None: the manifest's
      folder.
    feature_types: declared types of extra columns ({name: 'int' | 'float' |
      'string'}); None: all inferred.
    annotations: what to read beyond boxes ('masks', 'keypoints').
    class_map: the run's class map, as sorted (class, new class or None) pairs; ():
      none.
    columns: the `columns` option's (role, column) pairs: a CSV header's columns to
      read; (): found by name.
    confine_to: the run's roots (`parse_manifest_text`); (): no confinement.
  """
  return list(iter_manifest_file(path, fmt, split_override, image_root=image_root,
                                 feature_types=feature_types, annotations=annotations,
                                 class_map=class_map, columns=columns,
                                 confine_to=confine_to).items)
