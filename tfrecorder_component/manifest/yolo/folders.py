"""What the run's warnings and its size estimate need of a YOLO dataset without parsing
it: how many images its splits hold (`count_images`), and where its label files were
looked for (`label_folders`, `objects_from`)."""
from __future__ import annotations

import os
import posixpath
from typing import List, Optional

from tfrecorder_component.io import files
from tfrecorder_component.errors import ManifestError
from tfrecorder_component.manifest.confine import Confinement
from tfrecorder_component.manifest.yolo.darknet import (DARKNET_SPLITS, darknet_keys,
                                                        darknet_labels, darknet_list, darknet_path)
from tfrecorder_component.manifest.yolo.data_yaml import (dataset_root, load_yaml, split_images,
                                                          yaml_splits)
from tfrecorder_component.manifest.yolo.paths import (IMG_FORMATS, Listings, absolute_path,
                                                      folder_path, img2label_path, parent_path,
                                                      read_text)


def count_images(path: str, darknet: bool = False,
                 confine: Optional[Confinement] = None) -> int:
  """About how many images a data.yaml's (or Darknet obj.data's) splits hold, found as
  parse finds them, to size the run before it is parsed; 0 for a file that parse will
  refuse (it says why).

  Args:
    path: The data.yaml's (or obj.data's) path or URI; relative paths in it are taken
      against its own folder (no `image_root`).
    darknet: Whether `path` is a Darknet obj.data, whose split lists are counted by
      their non-blank lines.
    confine: The run's roots, as parse takes them: nothing outside them is listed or
      read (a split there counts 1, its one failed row); None: none.
  """
  try:
    with files.open_file(path) as f:
      text = f.read().decode('utf-8-sig', 'replace')
    base = parent_path(absolute_path(path))
    if darknet:
      data = darknet_keys(path, text)
      total = 0
      for _, keys in DARKNET_SPLITS:
        key = next((k for k in keys if data.get(k)), None)
        found = darknet_path(base, data[key], confine) if key else None
        if found and not found.lower().endswith(IMG_FORMATS):
          total += sum(1 for line in (read_text(found, 'image list') or '').split('\n')
                       if line.strip())
      return total
    data = load_yaml(path, text)
    root = dataset_root(path, data, base, confine)
    listed: Listings = {}
    return sum(len(split_images(path, key, data[key], root, listed, confine)[0])
               for _, key in yaml_splits(data))
  except (ManifestError, OSError, ValueError):
    return 0


def label_folders(path: str, image_root: Optional[str] = None, kind: str = 'yolo',
                  confine: Optional[Confinement] = None) -> List[str]:
  """The folders parse looks in for the label files of the images of `path` (a
  data.yaml; with kind 'darknet', an obj.data), in the order first met: each image's
  path with the last `/images/` made `/labels/` (Darknet: beside the image too), as
  parse finds them; no label file is read. [] for a file parse refuses (it says why).

  Args:
    path: The data.yaml's (or obj.data's) path or URI.
    image_root: The run's `image_root`, which stands in for the file's own folder as
      parse takes it; None: the file's folder.
    kind: 'darknet' for an obj.data; anything else ('yolo') for a data.yaml.
    confine: The run's roots, as parse takes them: nothing outside them is listed or
      read, nor named; None: none.
  """
  try:
    with files.open_file(path) as f:
      text = f.read().decode('utf-8-sig', 'replace')
    base = folder_path(image_root) if image_root else parent_path(absolute_path(path))
    images: List[str] = []
    if kind == 'darknet':
      data = darknet_keys(path, text)
      for _, keys in DARKNET_SPLITS:
        key = next((k for k in keys if data.get(k)), None)
        found = darknet_path(base, data[key], confine) if key else None
        if found is None:
          continue
        listed = ([(found, found)] if found.lower().endswith(IMG_FORMATS)
                  else darknet_list(found, base, confine))
        images.extend(image for image, _ in listed)
      candidates = darknet_labels
    else:
      data = load_yaml(path, text)
      root = dataset_root(path, data, base, confine)
      listed_objects: Listings = {}
      for _, key in yaml_splits(data):
        found, _ = split_images(path, key, data[key], root, listed_objects, confine)
        images.extend(i for i in found if isinstance(i, str))
      candidates = lambda image: (img2label_path(image),)
    if confine is not None:
      images = [i for i in images if not confine.outside(i)]
    return list(dict.fromkeys(parent_path(label) for image in images
                              for label in candidates(image)))
  except (ManifestError, OSError, ValueError):
    return []


def _holds_txt(folder: str) -> bool:
  if not os.path.isdir(folder):
    return False
  with os.scandir(folder) as entries:
    return any(e.name.lower().endswith('.txt') and e.is_file() for e in entries)


def _folder_state(folder: str) -> str:
  """What is wrong with a local label folder, in words ('' when nothing is, or it is
  not local): without a .txt file, or missing, and then which folder in its place holds
  .txt files (DOTA's `labelTxt/` beside `images/`, a misnamed `labels/`)."""
  if not files.is_local(folder):
    return ''
  if os.path.isdir(folder):
    return '' if _holds_txt(folder) else ' (no .txt file in it)'
  missing, ancestor = [], folder
  while ancestor not in ('', '.', '/') and not os.path.isdir(ancestor):
    missing.insert(0, posixpath.basename(ancestor))
    ancestor = parent_path(ancestor)
  elsewhere = ''
  if missing and os.path.isdir(ancestor):
    for name in sorted(os.listdir(ancestor)):
      candidate = posixpath.join(ancestor, name, *missing[1:])
      if not name.startswith('.') and name != missing[0] and _holds_txt(candidate):
        elsewhere = f'; .txt files are in {candidate}'
        break
  return f' (no such folder{elsewhere})'


# Label folders the warning of a run that found no object names; the rest are counted.
FOLDERS_NAMED = 3


def objects_from(path: str, image_root: Optional[str] = None, kind: str = 'yolo',
                 confine: Optional[Confinement] = None) -> str:
  """Where parse looked for the objects of `path`'s images, and what to check, in words:
  the warning of a detection run that found no object names it (`ManifestFormat.
  objects_from`), as Ultralytics warns 'No labels found in <labels folder>'.

  Args:
    path: The data.yaml's (or obj.data's) path or URI.
    image_root: The run's `image_root`, as parse takes it; None: the file's folder.
    kind: 'darknet' for an obj.data; anything else ('yolo') for a data.yaml. The first
      FOLDERS_NAMED label folders are named, with what is wrong with each local one.
    confine: The run's roots: folders outside them are neither named nor looked at;
      None: none.
  """
  folders = label_folders(path, image_root, kind, confine)
  if confine is not None:
    folders = [f for f in folders if confine.resolve(f) is not None]
  named = ', '.join(f + ('' if confine is not None else _folder_state(f))
                    for f in folders[:FOLDERS_NAMED])
  if len(folders) > FOLDERS_NAMED:
    named += f' and {len(folders) - FOLDERS_NAMED:,} more folders'
  rule = ('beside each image, or in the labels/ folder that mirrors its images/ or '
          'JPEGImages/ folder, as Darknet reads them' if kind == 'darknet' else
          'in the labels/ folder that mirrors its images/ folder (the last /images/ of '
          'its path made /labels/), as Ultralytics reads them')
  where = f'in {named}' if named else f'for the images of {path}'
  return (f'the label files of {path} were looked for {where}: an image\'s objects are the '
          f'lines of the .txt of its name {rule}; check that those .txt files are there, a '
          'line an object')
