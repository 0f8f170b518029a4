"""What a manifest format module declares (`FORMAT = ManifestFormat(...)`); the registry
of them is `registry.FORMATS`."""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator, Optional, Tuple, Union

from tfrecorder_component.manifest.rows import ParsedItem

# parse(path, text, *, image_root, feature_types[, annotations][, columns]) -> rows and
# RowErrors, `text` a str, or a text file for a `streamed` format;
# in file order; `annotations` (a frozenset of ANNOTATIONS) is passed only when asked for,
# and only to a format that declares it can read them; `columns` (the `columns` option's
# (role, column) pairs) likewise, only to a format with `column_roles`; `confine` (the
# run's `confine.Confinement`) only where the run has one, to a format that `reads_files`.
Parser = Callable[..., Iterator[ParsedItem]]


@dataclasses.dataclass(frozen=True)
class FormatSample:
  """The smallest file of a format, listing one image, `a.jpg`, beside it: what the
  tests read of every format (named and detected), and the seed every format is fuzzed
  from (tests/test_fuzz_formats.py).

  Attributes:
    name: the file's name.
    text: its text.
    others: (path relative to the file's folder, text) of each other file the format
      reads beside it (YOLO's label files, Darknet's lists).
  """
  name: str
  text: str
  others: Tuple[Tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class ManifestFormat:
  """One manifest format: its name, the files it claims, and how they are read.

  Attributes:
    name: the format's name, as `manifest_format` takes it ('coco_json', ...).
    extensions: the file extensions it claims, lower case, with the dot.
    sniff: whether a file's first characters (up to 64 KiB, leading BOM and blanks
      stripped) are this format; asked where the extension alone does not decide.
    parse: the parser: `parse(path, text, *, image_root, feature_types[,
      annotations])` yielding rows and RowErrors in file order (see `Parser`).
    one_row_an_image: True when parse yields one row an image, so nothing is left to
      merge across rows.
    one_row_a_box: True when each row is one box of an image: a row that fails fails
      its image whole.
    annotations: what beyond boxes the format can read when asked ('masks',
      'keypoints'); a conversion asking for another is refused.
    rows: how a file's rows are counted before it is parsed: the bytes that begin each
      row, a count per file, or a function of the file's path.
    streamed: True when parse also takes its text as a stream of lines (a text file),
      so the file is never held whole.
    objects_from: for a format whose objects lie outside the file (YOLO's label
      files), a function of the file's path and the run's image_root naming where, in
      words, for the warning of a run that found no object; None: the file holds them.
    column_roles: the roles (`columns.ROLES`) whose header columns the `columns` option
      may name for this format (a CSV's); (): the format takes no `columns`.
    part_context: for a format whose file may be parsed in byte ranges of whole lines
      (`manifest.parts.plan_parts`): a function of (path, the file's first lines, as an iterable,
      the `columns` option) giving how many of those lines set the parser's state for
      the rest of the file (a header, the rows it checks before reading any), so that a
      range read after them is read as the whole file's parse reads it; None, from
      this function or for the format: the file is parsed whole.
    title: what the format is, in words, as the formats guide names it.
    sample: the smallest file of the format (`FormatSample`).
    sniff_rank: where it is asked, among the formats that claim a file, whether the
      file is its own (`registry.detect`): lowest first; the one of the highest rank is
      the one such a file falls back to. A file no extension claims is asked of every
      format in this order.
    reads_files: True when parse reads, lists or looks for files other than its own
      (YOLO's image lists, split folders and label files, Darknet's names file, Open
      Images' class descriptions, CVAT's images folder): it takes `confine`, the run's
      `confine.Confinement` where the run has one, and touches nothing outside it.
  """
  name: str
  extensions: Tuple[str, ...]    # lower case, with the dot
  sniff: Callable[[str], bool]   # whether a file's first characters are this format
  parse: Parser
  # True when parse yields one row an image (a COCO file joins its annotations itself,
  # a Pascal VOC file is one image): nothing is left to merge across rows.
  one_row_an_image: bool = False
  # True when each row is one box of an image (the detection CSVs): a row that fails
  # fails its image whole, since the image without that box would teach it as background.
  one_row_a_box: bool = False
  # What beyond boxes the format can read when asked (COCO: 'masks', 'keypoints').
  annotations: Tuple[str, ...] = ()
  # How a file's rows are counted before it is parsed (to size the run: worker processes,
  # chunks): the bytes that begin each row (a line; COCO's "file_name"; CVAT's <image),
  # a count per file (1: one file an image), or a function of the file's path (YOLO's
  # data.yaml: the images its splits hold).
  rows: Union[bytes, int, Callable[[str], int]] = b'\n'
  # True when parse takes its text as a stream of lines (a text file) as well as a str:
  # such a file is read as it is parsed, never held whole (CSV, JSONL).
  streamed: bool = False
  # Where parse reads the objects of a file's images, and what to check, in words, for
  # the warning of a detection run whose records hold no object at all
  # (`steps.warnings.no_object_warning`): a function of the file's path and the run's
  # image_root (YOLO: the label folders its images' label files were looked for in).
  # None: the file itself holds them.
  objects_from: Optional[Callable[..., str]] = None
  # The roles the `columns` option may name for this format (image, label, split,
  # mask); (): it takes no `columns`, and a run that gives it one is refused.
  column_roles: Tuple[str, ...] = ()
  # True when parse reads or looks for files other than its own (YOLO's lists and label
  # files, CVAT's images folder): it takes `confine` where the run is confined.
  reads_files: bool = False
  # How many of a file's first lines (path, lines, columns) -> Optional[int] set the
  # parser's state, where the file may be parsed in ranges after them (AutoML CSV).
  part_context: Optional[Callable[..., Optional[int]]] = None
  title: str = ''
  sample: Optional[FormatSample] = None
  # The order formats are sniffed in where several claim a file, lowest first; the
  # highest of them is the fallback (`registry.detect`).
  sniff_rank: int = 0


ANNOTATIONS = ('masks', 'keypoints')  # what a conversion may ask for beyond boxes
