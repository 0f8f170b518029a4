"""Looking at converted records: counts per split and label, a few decoded records, and a
contact sheet of sample images per label (what `tfrecorder-component inspect` prints).

A local output is read without Beam (`files`: the command's `inspect` answers in a
fraction of a second); gs://, s3:// and other remote outputs through Beam's file
systems."""
from __future__ import annotations

import glob
import io
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.output import examples_json as index_lib
from tfrecorder_component.io import storage
from tfrecorder_component.io.tfrecord import read_shard
from tfrecorder_component.record.example_proto import Example
from tfrecorder_component.images.thumbnail import (draw_boxes, placeholder, small_image,
                                                      tint_masks)
from tfrecorder_component.feature_keys import (CLASS_TEXT, IMAGE_ENCODED, OBJECT_CLASS_TEXT,
                                               OBJECT_MASK, SEGMENTATION_ENCODED)

TILE = 96
LABEL_WIDTH = 140


def _shards(pattern: str) -> List[str]:
  """The shard files `pattern` (`.../Split-<name or *>/*.gz`) matches, sorted."""
  if files.is_local(pattern):
    return sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
  return sorted(files.match(pattern))


def split_names(examples_dir: str) -> List[str]:
  """The splits under an output folder or Examples artifact (`Split-<name>` folders);
  raises ValueError if there is no such folder or it holds no shard.

  Args:
    examples_dir: An output folder of `convert` or an Examples artifact, finished (its
      `_SUCCESS` written): a local path, or a gs://, s3:// or other URI that Beam's file
      systems read.
  """
  if files.is_local(examples_dir):
    if not os.path.isdir(examples_dir):
      raise ValueError(f'{examples_dir} does not exist' if not os.path.exists(examples_dir)
                       else f'{examples_dir} is not a folder')
  else:
    storage.prepare_file_systems(examples_dir)
  why = output_paths.unfinished(examples_dir, files.exists)
  if why:
    raise ValueError(why)
  folders = output_paths.split_dir(glob.escape(examples_dir) if files.is_local(examples_dir)
                             else examples_dir, '*')
  names = {path.rstrip('/').split('/')[-2][len(output_paths.SPLIT_PREFIX):]
           for path in _shards(files.join(folders, '*.gz'))}
  if not names:
    if files.exists(files.join(examples_dir, index_lib.INDEX_FILE)):  # a finished output
      raise ValueError(f'{examples_dir} holds no records: no row of its run was converted '
                       f'(its report lists why each failed)')
    raise ValueError(f'{examples_dir} holds no Split-*/ shards: give an output folder of '
                     '`convert` or an Examples artifact')
  return sorted(names)


def check_split(examples_dir: str, split: Optional[str]) -> List[str]:
  """The splits to read: `split`, or every split if None; ValueError for an unknown one.

  Args:
    examples_dir: The output folder or Examples artifact, as `split_names` takes it.
    split: A split name (`train`, not `Split-train`); None: every split.
  """
  names = split_names(examples_dir)
  if split is None:
    return names
  if split not in names:
    raise ValueError(f'{examples_dir} has no split {split!r}; its splits: {", ".join(names)}')
  return [split]


def read_records(examples_dir: str, split: str) -> Iterator[bytes]:
  """The serialized records of one split, read from its gzipped TFRecord shards.

  Args:
    examples_dir: The output folder or Examples artifact, as `split_names` takes it.
    split: The split's name; one without shards yields nothing (`check_split` first
      where that should be an error).
  """
  folder = output_paths.split_dir(examples_dir, split)
  if files.is_local(folder):
    folder = glob.escape(folder)
  for path in _shards(files.join(folder, '*.gz')):
    yield from read_shard(path)


def _values(example, key: str) -> list:
  feature = example.features.feature[key]
  kind = feature.WhichOneof('kind')
  return list(getattr(feature, kind).value) if kind else []


def _boxes(example) -> List[Tuple[str, Tuple[float, float, float, float]]]:
  """(class name, normalised xmin, ymin, xmax, ymax) of a detection record's objects."""
  names = [t.decode('utf-8', 'replace') for t in _values(example, OBJECT_CLASS_TEXT)]
  coordinates = [_values(example, f'image/object/bbox/{k}')
                 for k in ('xmin', 'ymin', 'xmax', 'ymax')]
  return [(name, box) for name, box in zip(names, zip(*coordinates))]


def _label(example) -> str:
  texts = _values(example, CLASS_TEXT) or _values(example, OBJECT_CLASS_TEXT)
  return ', '.join(sorted({t.decode('utf-8', 'replace') for t in texts})) or '(none)'


def inspect_examples(examples_dir: str, records: int = 3,
                     split: Optional[str] = None) -> Dict[str, Any]:
  """Counts per split and per label, and the first `records` records (without their
  image bytes), in split order; of `split` alone where given (ValueError for an unknown
  one).

  Args:
    examples_dir: The output folder or Examples artifact, as `split_names` takes it.
    records: How many records to return, across the splits read (0: none).
    split: Only this split; None: every split.
  """
  per_split: Dict[str, int] = {}
  labels: Dict[str, Dict[str, int]] = {}
  shown: List[Dict[str, Any]] = []
  for name in check_split(examples_dir, split):
    counts = labels.setdefault(name, {})
    per_split[name] = 0
    for data in read_records(examples_dir, name):
      example = Example.FromString(data)
      per_split[name] += 1
      label = _label(example)
      counts[label] = counts.get(label, 0) + 1
      if len(shown) < records:
        shown.append({'split': name, **{
            key: [v.decode('utf-8', 'replace') if isinstance(v, bytes) else v
                  for v in _values(example, key)]
            for key in sorted(example.features.feature) if key != IMAGE_ENCODED}})
  return {'records_per_split': per_split,
          'labels_per_split': {s: dict(sorted(c.items())) for s, c in labels.items()},
          'records': shown}


def contact_sheet(examples_dir: str, path: str, per_label: int = 8,
                  split: Optional[str] = 'train') -> str:
  """Writes a PNG with one row per label of up to `per_label` decoded images from
  `split` (or every split if None), and returns `path`.

  Each image is decoded at a bounded cost, as report.html's thumbnails are
  (`thumbnail.small_image`): one whose decode would cost too much (a JPEG of more than
  `thumbnail.MAX_SCANS` scans, a PNG of more than `thumbnail.PIXEL_BUDGET` pixels) is a
  grey tile with the note ('thumbnail skipped: 50,000 scans (more than 100)').

  Args:
    examples_dir: The output folder or Examples artifact, as `split_names` takes it.
    path: The PNG file to write, a local path; its folder is made if missing.
    per_label: Images per label row, at most; an image with several labels shows in
      each of their rows.
    split: The split to take images from (default train); None: every split.
  """
  from PIL import Image, ImageDraw  # pylint: disable=g-import-not-at-top
  splits = check_split(examples_dir, split)
  tiles: Dict[str, List[Image.Image]] = {}
  for name in splits:
    for data in read_records(examples_dir, name):
      example = Example.FromString(data)
      boxes = _boxes(example)
      labels = ([b[0] for b in boxes] if boxes else
                [t.decode('utf-8', 'replace') for t in _values(example, CLASS_TEXT)])
      wanted = [l for l in dict.fromkeys(labels or ['(none)'])
                if len(tiles.get(l, [])) < per_label]
      if not wanted:
        continue
      encoded = _values(example, IMAGE_ENCODED)[0]
      image, note = small_image(encoded, TILE)
      if image is None and not note:  # Pillow cannot decode it: its own error is raised
        Image.open(io.BytesIO(encoded)).convert('RGB')
      if image is None:  # too costly to decode (`thumbnail.skip_note`): the note shows
        image = placeholder(note, TILE)
      else:
        tint_masks(image, list(zip((b[0] for b in boxes), _values(example, OBJECT_MASK))),
                   next(iter(_values(example, SEGMENTATION_ENCODED)), None))
        draw_boxes(image, boxes)
      for label in wanted:  # an image shows under each of its labels
        tiles.setdefault(label, []).append(image)
  if not tiles:
    raise ValueError(f'no records under {examples_dir}')
  sheet = Image.new('RGB', (LABEL_WIDTH + per_label * (TILE + 4), len(tiles) * (TILE + 4)),
                    'white')
  draw = ImageDraw.Draw(sheet)
  for r, (label, images) in enumerate(sorted(tiles.items())):
    top = r * (TILE + 4)
    draw.text((4, top + TILE // 2 - 6), label[:20], fill='black')
    for c, image in enumerate(images):
      sheet.paste(image, (LABEL_WIDTH + c * (TILE + 4) + (TILE - image.width) // 2,
                          top + (TILE - image.height) // 2))
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  sheet.save(path, format='PNG')
  return path
