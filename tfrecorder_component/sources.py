"""What a `convert()` source stands for: manifest files, or a manifest written for a
DataFrame (its index kept for error reports) or for an image folder."""
from __future__ import annotations

import os
import posixpath
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from tfrecorder_component import files
from tfrecorder_component.errors import ManifestError, UsageError
from tfrecorder_component.manifest import MANIFEST_EXTENSIONS, ML_USE_TO_SPLIT

IMAGE_EXTENSIONS = ('.jpg', '.jpeg', '.png', '.gif', '.bmp', '.webp', '.tif', '.tiff')
# What annotation tools and benchmark suites name a dataset's parts, never its classes
# (compared in lower case): an image folder whose class folders carry these names is a
# dataset of another layout, refused (`_refusal`) rather than read as classes.
_PART_FOLDERS = frozenset((
    'jpegimages', 'annotations', 'imagesets', 'segmentationclass', 'segmentationobject',
    'images', 'labels', 'labeltxt', 'image_2', 'label_2', 'calib', 'velodyne',
    'obj_train_data'))
# Files that annotate images: a class folder holding some of these and no image is a
# folder of annotations, not a class.
_ANNOTATION_EXTENSIONS = ('.xml', '.json', '.txt', '.csv', '.yaml', '.yml', '.jsonl')


def folder_manifest(root: str) -> str:
  """A manifest (CSV text) for a folder laid out as `<split>/<label>/<image>` (split
  folders named train, validation, eval or test, in any case) or `<label>/<image>`;
  image URIs are relative to `root`, a local folder or a prefix on any Beam file system
  (gs://, s3://). Raises ManifestError if the folder holds neither, or is laid out as a
  dataset of another kind (`_refusal`): folders named as a dataset's parts (Pascal VOC's
  JPEGImages/, YOLO's images/ and labels/, KITTI's image_2/, ...), a class folder of
  annotation files, or images in a folder inside a class folder, which are never read
  as classes or left out."""
  if '://' in root:
    return _remote_folder_manifest(root.rstrip('/'))
  root = os.path.abspath(root)
  entries = sorted(e for e in os.listdir(root) if os.path.isdir(os.path.join(root, e)))
  if not entries:
    raise ManifestError(f'{root} holds no manifest ({", ".join(MANIFEST_EXTENSIONS)}) and '
                        'no label folders: lay images out as <label>/<image> or '
                        '<split>/<label>/<image>')
  by_split = all(e.upper() in ML_USE_TO_SPLIT and e for e in entries)
  folders = ([posixpath.join(entry, label) for entry in entries
              for label in sorted(os.listdir(os.path.join(root, entry)))
              if os.path.isdir(os.path.join(root, entry, label))] if by_split else entries)
  listing = {}
  for relative in folders:
    with os.scandir(os.path.join(root, relative)) as found:
      entries_in = sorted(found, key=lambda e: e.name)
    listing[relative] = (  # a file: anything but a folder (a dangling link, a FIFO)
        [e.name for e in entries_in if not e.is_dir()],
        [e.name for e in entries_in if e.is_dir() and not e.name.startswith('.') and
         _holds_images(e.path)])
  refused = _refusal(root, listing)
  if refused:
    raise ManifestError(refused)
  lines = ['split,image_uri,label']
  for relative in folders:
    split, label = relative.split('/') if by_split else ('', relative)
    # A dangling link or a FIFO named as an image fails its row with the reason.
    for name in listing[relative][0]:
      if name.lower().endswith(IMAGE_EXTENSIONS):
        lines.append(','.join(_csv_field(v) for v in
                              (split.upper(), posixpath.join(relative, name), label)))
  if len(lines) == 1:
    raise ManifestError(f'no images ({", ".join(IMAGE_EXTENSIONS)}) found under {root}')
  return '\n'.join(lines) + '\n'


def _holds_images(folder: str) -> bool:
  """Whether a local folder holds an image at any depth (hidden folders skipped)."""
  for _, subfolders, names in os.walk(folder):
    subfolders[:] = [d for d in subfolders if not d.startswith('.')]
    if any(n.lower().endswith(IMAGE_EXTENSIONS) for n in names):
      return True
  return False


def _refusal(root: str, listing: Dict[str, Tuple[Sequence[str], Sequence[str]]]
             ) -> Optional[str]:
  """Why an image folder cannot be read as class folders, in one line, or None.
  `listing`: {class folder (`<label>` or `<split>/<label>`): (the names of its files,
  its subfolders that hold images)}."""
  classes = {relative.rsplit('/', 1)[-1] for relative in listing}
  parts = sorted(c for c in classes if c.lower() in _PART_FOLDERS)
  if parts:
    return _layout_refusal(root, {c.lower() for c in classes}, parts)
  for relative, (names, nested) in listing.items():
    if nested:
      return (f'{root}/{relative}/{nested[0]} holds images inside the class folder '
              f'{relative}: class folders inside class folders are not read; lay images '
              'out as <label>/<image> or <split>/<label>/<image>, or list them in a manifest')
    notes = [n for n in names if n.lower().endswith(_ANNOTATION_EXTENSIONS)]
    if notes and not any(n.lower().endswith(IMAGE_EXTENSIONS) for n in names):
      return (f'{root}/{relative} holds annotation files ({notes[0]}, ...) and no image, '
              'so it is no class folder: convert the annotation files (give their file or '
              'folder), not the folder above them')
  return None


def _layout_refusal(root: str, names: Iterable[str], parts: List[str]) -> str:
  """The one-line refusal of an image folder whose class folders `parts` are named as a
  dataset's parts; `names`: all its class folders' names, in lower case."""
  names = set(names)
  found = ', '.join(f'{p}/' for p in parts)

  def layout(kind: str, advice: str) -> str:
    return f'{root} holds {found}: {kind}, not class folders; {advice}'

  if names & {'jpegimages', 'imagesets', 'segmentationclass', 'segmentationobject'}:
    if 'annotations' in names and 'jpegimages' in names:
      return layout('a Pascal VOC dataset', 'convert its boxes with `tfrecorder-component '
                    f'convert {root}/Annotations OUT --image-root {root}/JPEGImages`')
    return layout('a Pascal VOC dataset without Annotations/ (its boxes)', 'convert a '
                  'manifest of its images and labels instead')
  if names & {'image_2', 'label_2', 'calib', 'velodyne'}:
    return layout('a KITTI dataset, which is not read', 'convert its labels to a supported '
                  'format (see the formats guide) or write a manifest')
  if 'labeltxt' in names:
    return layout('a DOTA dataset (or a Roboflow YOLO-OBB export in its layout), which is '
                  'not read', 'convert its labels to YOLO-OBB with a data.yaml, or write a '
                  'manifest')
  if 'labels' in names or 'obj_train_data' in names:
    return layout('a YOLO dataset', 'convert its data.yaml (Ultralytics) or obj.data '
                  '(Darknet), writing one that names its image folders and classes if it '
                  'has none')
  if 'annotations' in names and 'images' in names:
    return layout('a COCO-style dataset', 'convert its annotation file, for example '
                  f'`tfrecorder-component convert {root}/annotations/instances_train.json OUT '
                  f'--image-root {root}/images/train`')
  return (f'{root} holds {found}, which name a dataset\'s parts, not classes; convert its '
          'annotation file, or write a manifest naming each image\'s label')


def _remote_folder_manifest(root: str) -> str:
  """folder_manifest of a prefix on an object store, from one listing of it."""
  paths = [path.split('/') for path in files.list_objects(root)]
  if not paths:
    raise UsageError(f'{root} does not exist: no object and no folder of that name')
  tops = sorted({parts[0] for parts in paths if len(parts) > 1})
  if not tops:
    raise ManifestError(f'{root} holds no manifest ({", ".join(MANIFEST_EXTENSIONS)}) and '
                        'no label folders: lay images out as <label>/<image> or '
                        '<split>/<label>/<image>')
  by_split = all(e.upper() in ML_USE_TO_SPLIT for e in tops)
  depth = 2 if by_split else 1  # the parts of a path that name its class folder
  listing: Dict[str, Tuple[List[str], List[str]]] = {}
  for parts in sorted(paths):
    if len(parts) <= depth:  # a file beside the class (or split) folders
      continue
    names, nested = listing.setdefault('/'.join(parts[:depth]), ([], []))
    if len(parts) == depth + 1:
      names.append(parts[-1])
    elif (not any(p.startswith('.') for p in parts[depth:-1])  # hidden folders skipped
          and parts[-1].lower().endswith(IMAGE_EXTENSIONS) and parts[depth] not in nested):
      nested.append(parts[depth])
  refused = _refusal(root, listing)
  if refused:
    raise ManifestError(refused)
  lines = ['split,image_uri,label']
  for relative, (names, _) in sorted(listing.items()):
    split, label = relative.split('/') if by_split else ('', relative)
    for name in names:
      if name.lower().endswith(IMAGE_EXTENSIONS):
        lines.append(','.join(_csv_field(v) for v in
                              (split.upper(), posixpath.join(relative, name), label)))
  if len(lines) == 1:
    raise ManifestError(f'no images ({", ".join(IMAGE_EXTENSIONS)}) found under {root}')
  return '\n'.join(lines) + '\n'


def _has_label_folders(root: str) -> bool:
  """Whether a folder has a subfolder holding images, or split folders of them."""
  for entry in os.scandir(root):
    if entry.is_dir():
      for inner in os.scandir(entry.path):
        if (inner.is_file() and inner.name.lower().endswith(IMAGE_EXTENSIONS)) or (
            inner.is_dir() and entry.name.upper() in ML_USE_TO_SPLIT):
          return True
  return False


def _split_folder_manifests(root: str) -> Dict[str, Optional[str]]:
  """{manifest: split} for a local folder whose every subfolder is a split folder (train,
  valid, val, validation, eval, test, in any case) and some hold manifest files (a .txt
  beside label folders is no manifest); {} otherwise."""
  folders = [e for e in sorted(os.scandir(root), key=lambda e: e.name) if e.is_dir()]
  if not folders or not all(e.name.upper() in ML_USE_TO_SPLIT for e in folders):
    return {}
  found = {}
  for entry in folders:
    manifests = files.list_manifest_files(entry.path)
    if manifests and all(m.lower().endswith('.txt') for m in manifests) and (
        _has_label_folders(root)):
      continue
    found.update((m, ML_USE_TO_SPLIT[entry.name.upper()]) for m in manifests)
  return found


def _csv_field(value: str) -> str:
  if any(c in value for c in ',"\n\r'):
    return '"' + value.replace('"', '""') + '"'
  return value


def dataframe_manifest(df) -> str:
  """A DataFrame in AutoML columns (`split`, `image_uri`, `label` and any extra columns,
  which become typed features) as CSV text, URIs as written."""
  columns = [str(c) for c in df.columns]
  from tfrecorder_component.manifest import automl_csv  # pylint: disable=g-import-not-at-top
  if not any(c.strip().lower() in automl_csv.URI_COLUMNS for c in columns):
    raise ManifestError(f'the DataFrame needs an image URI column (one of '
                        f'{", ".join(automl_csv.URI_COLUMNS)}); it has {columns}')
  return _labels_spread(df, automl_csv.is_label_column).to_csv(index=False)


def _labels_spread(df, is_label_column):
  """A label column whose cells are lists (a multi-label DataFrame) becomes one column
  per label position, each a label column, so every label is read as one."""
  import pandas as pd  # pylint: disable=g-import-not-at-top
  listy = (list, tuple, set)
  for column in list(df.columns):
    name = str(column)
    if not is_label_column(name.strip().lower()):
      continue
    cells = df[column]
    if not cells.map(lambda v: isinstance(v, listy)).any():
      continue
    lists = cells.map(lambda v: sorted(v) if isinstance(v, set) else list(v)
                      if isinstance(v, listy) else ([] if pd.isna(v) else [v]))
    width = max(1, max(len(l) for l in lists))
    names = [name] + [f'{name}_{i}' if name.lower().startswith('label') else f'label_{name}_{i}'
                      for i in range(2, width + 1)]
    spread = pd.DataFrame([l + [None] * (width - len(l)) for l in lists], index=df.index,
                          columns=names)
    df = df.drop(columns=[column]).join(spread)
  return df


def dataframe_row_index(df) -> Tuple[Tuple[int, Any], ...]:
  """(row of `dataframe_manifest`'s CSV, index label) for each DataFrame row: the line
  where the row ends, as the CSV reader counts lines (a cell may hold line breaks)."""
  line, out = 1, []  # line 1 is the header
  for label, values in zip(df.index, df.itertuples(index=False, name=None)):
    breaks = sum(v.count('\r') + v.count('\n') - v.count('\r\n')
                 for v in values if isinstance(v, str))
    line += 1 + breaks
    out.append((line, label.item() if hasattr(label, 'item') else
                label if isinstance(label, (int, str)) else str(label)))
  return tuple(out)


# Inputs `input_paths` names that the launching process reads itself (never a worker).
READ_BY_THE_LAUNCHER = ('label map', 'class map')


def input_paths(source, image_root=None, label_map=None,
                class_map=None) -> List[Tuple[str, str]]:
  """(what, path) of each input of a `convert()` that is a file or folder: the source
  (a manifest, or a folder of manifests or images; a DataFrame has none), the image
  root, a label map or class map given as a path. The output may not overlap any."""
  found = []
  if not (hasattr(source, 'to_csv') and hasattr(source, 'columns')):
    path = os.fspath(source)
    found.append(('manifest' if '://' not in path and os.path.isfile(path) else
                  'input folder' if '://' not in path else 'input', path))
  if image_root:
    found.append(('image root', os.fspath(image_root)))
  if isinstance(label_map, (str, os.PathLike)) or hasattr(label_map, 'uri'):
    found.append(('label map', os.fspath(getattr(label_map, 'uri', label_map))))
  if isinstance(class_map, (str, os.PathLike)) and not str(class_map).lstrip().startswith(
      ('{', '[')):
    found.append(('class map', os.fspath(class_map)))
  return found


class Manifests(NamedTuple):
  """What a `convert()` source stands for (`manifests_for`)."""
  paths: List[str]
  image_root: Optional[str]  # None: each manifest's own folder
  row_index: Tuple[Tuple[int, Any], ...]  # a DataFrame's (row, index label) pairs
  # {path: the split every row of it takes (None: unassigned)}, from split folders
  splits: Dict[str, Optional[str]]


def manifests_for(source, report_dir: str) -> Manifests:
  """The manifest files a source stands for, the folder its relative image URIs resolve
  against (None: each manifest's own folder), for a DataFrame its rows' index labels, and
  the split of manifests found in split folders (`<split>/<manifests>`, as Roboflow's
  exports lay out train/, valid/ and test/). For a DataFrame (URIs relative to the
  working directory, as a notebook means them) or an image folder, a manifest is written
  into `report_dir`."""
  if hasattr(source, 'to_csv') and hasattr(source, 'columns'):
    path = posixpath.join(report_dir, 'input_manifest.csv')
    files.write_text(path, dataframe_manifest(source))
    return Manifests([path], os.getcwd(), dataframe_row_index(source), {})
  source = os.fspath(source)
  if '://' not in source and not os.path.exists(source):
    raise UsageError(f'{source} does not exist')
  manifests = files.list_manifest_files(source)
  if manifests and os.path.isdir(source) and all(
      m.lower().endswith('.txt') for m in manifests) and _has_label_folders(source):
    manifests = []  # a README.txt beside <label>/ folders is no manifest
  if manifests:
    return Manifests(manifests, None, (), {})
  by_split = _split_folder_manifests(source) if os.path.isdir(source) else {}
  if by_split:
    return Manifests(sorted(by_split), None, (), by_split)
  if os.path.isdir(source) or '://' in source:  # an image folder, or a prefix of one
    path = posixpath.join(report_dir, 'input_manifest.csv')
    files.write_text(path, folder_manifest(source))
    return Manifests([path], (source.rstrip('/') if '://' in source else
                              os.path.abspath(source)), (), {})
  raise UsageError(f'{source}: not a manifest file ({", ".join(MANIFEST_EXTENSIONS)}), '
                   'a folder of manifests, or an image folder')
