"""What a source path is, in one place: a manifest file, a folder of manifests, a
dataset folder laid out as an annotation tool or benchmark suite exports it, or an
image folder of class folders; and, for each manifest, the split its rows take, the
folder its relative image URIs resolve against, and its format where the layout fixes
it. `sources.manifests_for` asks `find` once for each source; the TFX component's
executor lists its input folders with `manifest_files`.

Layouts read as they are (the formats guide lists them, and what is refused):
- Pascal VOC devkit roots (`Annotations/`, `JPEGImages/`, `ImageSets/Main/`), or their
  `Annotations/` folder: each XML, its image in `JPEGImages/`, its split from the
  `ImageSets/Main/<subset>.txt` list that names it, as the devkit and Datumaro read them.
- COCO roots (`annotations/instances_<subset>.json` beside `images/<subset>/`, or
  `<subset>/` as the COCO site's archives unpack): each subset's instances file (else its
  person keypoints), its images in that subset's folder, its split from the subset name.
- Split folders of manifests (Roboflow's train/, valid/, test/); a data set's own file
  (YOLO's data.yaml, Darknet's obj.data) or Open Images annotation CSVs beside their
  parts; class folders of images (`<label>/<image>`, `<split>/<label>/<image>`).
Folders named as another layout's parts (KITTI's image_2/, DOTA's labelTxt/, YOLO's
images/ and labels/ without a data.yaml, ...) are refused in one line naming the layout.

Length: every dataset layout a source path is recognised as (VOC, COCO, Datumaro YOLO,
class folders) and the refusals of those it does not read, one look at the folder for
all.
"""
from __future__ import annotations

import logging
import os
import posixpath
import re
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.errors import ManifestError, UsageError
from tfrecorder_component.manifest import open_images
from tfrecorder_component.manifest.registry import MANIFEST_EXTENSIONS
from tfrecorder_component.manifest.rows import ML_USE_TO_SPLIT


class Found(NamedTuple):
  """What a source path stands for (`find`).

  Attributes:
    layout: what the path was read as, in words, for the log ('manifests', 'class
      folders of images', ...).
    paths: the manifest files to read, including those written into the scratch folder.
    splits: {path: the TFX split every row of it takes}. None, as for a path not
      listed, imposes none: its rows keep the split they give, else are hash split.
    image_roots: {path: the folder its relative image URIs resolve against}; a path not
      listed resolves against its own folder. An image_root the run gives wins over both.
    formats: {path: its format name}, for the manifests whose format the layout fixes,
      whatever format the run names.
  """
  layout: str  # what it was read as, in words, for the log
  paths: List[str]  # the manifest files to read
  # {path: the split every row of it takes (None: unassigned, split by hash)}
  splits: Dict[str, Optional[str]]
  # {path: the folder its relative image URIs resolve against}; absent: its own folder
  image_roots: Dict[str, str]
  # {path: its format}, for manifests the layout writes (whatever format a run names)
  formats: Dict[str, str]


def manifest_files(pattern: str) -> List[str]:
  """Manifest files matching `pattern` (a file or a glob, on any Beam file system), or
  directly inside it when it names a folder. Folders and files without a manifest
  extension (.csv, .jsonl, .txt, .json for COCO, .xml for Pascal VOC) are skipped, so a
  manifest may sit next to its images; in a folder that holds a data set's own file,
  the other manifest-like files are its parts (`_dataset_parts`).

  Args:
    pattern: a manifest file, a glob, or a folder (a prefix on gs:// or s3://), on any
      Beam file system. Only a folder's direct children are listed.
  """
  found = files.match(pattern)
  folder = not files.has_glob(pattern) and all(_is_dir(p) for p in found)
  if folder:  # a folder, or a prefix of an object store
    found = files.match(files.join(pattern, '*'))
  found = sorted(p for p in found if p.lower().endswith(MANIFEST_EXTENSIONS) and not _is_dir(p))
  return _dataset_parts(pattern, found) if folder else found


def _is_dir(path: str) -> bool:
  return '://' not in path and os.path.isdir(path)


# Files that describe a whole data set (YOLO's data.yaml, Darknet's obj.data).
DATASET_FILES = ('.yaml', '.yml', '.data')
# The class list Datumaro writes beside a dataset it exports (`dataset_meta.json`).
DATUMARO_META = 'dataset_meta.json'


def _dataset_parts(folder: str, found: List[str]) -> List[str]:
  """The manifests of a folder that holds a data set's own files, beside which the
  other manifest-like files are its parts, not manifests: a data.yaml or obj.data (its
  README.txt, image lists), or Open Images annotation CSVs (their class descriptions,
  hierarchy JSON, rotation lists). Each file left out is logged."""
  meta = [p for p in found if posixpath.basename(p) == DATUMARO_META]
  for path in meta:
    logging.info('%s: Datumaro\'s class list, read as a part of the data set beside it, '
                 'not as a manifest', path)
  found = [p for p in found if p not in meta]
  kept = [p for p in found if p.lower().endswith(DATASET_FILES)]
  if not kept:
    kept = [p for p in found if p.lower().endswith('.csv') and _is_open_images(p)]
  if not kept:
    return found
  for path in sorted(set(found) - set(kept)):
    logging.info('%s: read as a part of the data set beside it (%s), not as a manifest',
                 path, posixpath.basename(kept[0]))
  return kept


def _is_open_images(path: str) -> bool:
  """Whether a CSV starts with an Open Images annotation header."""
  try:
    with files.open_file(path) as f:
      head = f.read(4096).decode('utf-8-sig', 'replace')
  except OSError:
    return False
  return open_images.FORMAT.sniff(head)


def find(source: str, scratch_dir: str, image_root: Optional[str] = None) -> Found:
  """What the path `source` stands for. Manifests that a layout implies (an image
  folder's list of images, a Pascal VOC list's images that have no annotation file) are
  written into `scratch_dir`, the run's report folder. `image_root`: the one the run
  gives, which wins over the folders a layout implies. Raises UsageError when the path
  does not exist, ManifestError (one line) when it is a layout that is not read.

  Args:
    source: a local path or a gs:// or s3:// URI: a manifest file, a folder of
      manifests, a dataset folder or an image folder.
    scratch_dir: the folder (the run's report folder) that manifests the layout
      implies are written into.
    image_root: the image folder the run gives; None: none. Here it only stands in for
      a COCO subset's images where the root holds no images folder for it; the caller
      puts it before `Found.image_roots`.
  """
  if '://' not in source and not os.path.exists(source):
    raise UsageError(f'{source} does not exist')
  folder = '://' in source or os.path.isdir(source)
  if folder:
    tree = _Tree(source)
    found = (_voc(tree, scratch_dir) or _coco(tree, image_root)
             or _other_layout(tree, scratch_dir))
    if found:
      return found
  manifests = manifest_files(source)
  if manifests and folder and '://' not in source and all(
      m.lower().endswith('.txt') for m in manifests) and _has_label_folders(source):
    manifests = []  # a README.txt beside <label>/ folders is no manifest
  if manifests and folder and all(m.lower().endswith('.xml') for m in manifests):
    return _voc_folder(tree, manifests, scratch_dir)
  if manifests:
    return Found('manifests', manifests, {}, {}, {})
  by_split = _split_folder_manifests(source) if folder and '://' not in source else {}
  if by_split:
    return Found('split folders of manifests', sorted(by_split), by_split, {}, {})
  if folder:  # an image folder, or a prefix of one
    path = posixpath.join(scratch_dir, 'input_manifest.csv')
    files.write_text(path, folder_manifest(source))
    root = source.rstrip('/') if '://' in source else os.path.abspath(source)
    return Found('class folders of images', [path], {}, {path: root}, {})
  raise UsageError(f'{source}: not a manifest file ({", ".join(MANIFEST_EXTENSIONS)}), '
                   'a folder of manifests, or an image folder')


class _Tree:
  """The names in the folders of a local folder or an object-store prefix, listed
  as they are asked for (local) or from one listing (gs://, s3://)."""

  def __init__(self, root: str):
    self.root = root.rstrip('/') if '://' in root else os.path.abspath(root)
    self._remote: Optional[Dict[str, Tuple[List[str], List[str]]]] = None

  def _listing(self) -> Dict[str, Tuple[List[str], List[str]]]:
    if self._remote is None:
      self._remote = {}
      for path in files.list_objects(self.root):
        parts = path.split('/')
        for depth in range(len(parts)):
          names, folders = self._remote.setdefault('/'.join(parts[:depth]), ([], []))
          if depth == len(parts) - 1:
            names.append(parts[-1])
          elif parts[depth] not in folders:
            folders.append(parts[depth])
    return self._remote

  def names(self, relative: str = '') -> List[str]:
    """The files directly in a folder (sorted; [] if there is none)."""
    if '://' in self.root:
      return sorted(self._listing().get(relative, ([], []))[0])
    try:
      with os.scandir(self.path(relative)) as found:
        return sorted(e.name for e in found if not e.is_dir())
    except (FileNotFoundError, NotADirectoryError):
      return []

  def folders(self, relative: str = '') -> List[str]:
    """The folders directly in a folder (sorted; [] if there is none)."""
    if '://' in self.root:
      return sorted(self._listing().get(relative, ([], []))[1])
    try:
      with os.scandir(self.path(relative)) as found:
        return sorted(e.name for e in found if e.is_dir())
    except (FileNotFoundError, NotADirectoryError):
      return []

  def path(self, relative: str) -> str:
    return posixpath.join(self.root, relative) if relative else self.root

  def parent(self) -> Optional['_Tree']:
    """The tree of the folder above (None for a bucket or the file system's root). Asked
    only of a folder named as a dataset's part (`Annotations/`), whose parent is the
    dataset's root."""
    if '://' in self.root:
      scheme, rest = self.root.split('://', 1)
      return _Tree(f'{scheme}://{rest.rsplit("/", 1)[0]}') if '/' in rest else None
    if os.path.dirname(self.root) == self.root:
      return None
    return _Tree(os.path.dirname(self.root))


# Pascal VOC (the VOC devkit's layout; Datumaro's `voc` formats read it the same way):
# the lists of ImageSets/Main name a subset's image ids, one a line; a file whose name
# has an underscore (`aeroplane_train.txt`) is one class's list, not a subset.
_VOC_SUBSETS = 'ImageSets/Main'


def _voc(tree: _Tree, scratch_dir: str) -> Optional[Found]:
  """A Pascal VOC devkit root (`Annotations/` of XMLs beside `JPEGImages/` or
  `ImageSets/`), or its `Annotations/` folder, read as the devkit reads it; None if the
  folder is neither."""
  root = tree
  if posixpath.basename(tree.root) == 'Annotations' and tree.parent() is not None:
    root = tree.parent()
  folders = set(root.folders())
  if 'Annotations' not in folders or not folders & {'JPEGImages', 'ImageSets'}:
    return None
  xmls = [n for n in root.names('Annotations') if n.lower().endswith('.xml')]
  if not xmls:
    return None
  annotations = root.path('Annotations')
  images = root.path('JPEGImages')
  paths = {posixpath.splitext(n)[0]: posixpath.join(annotations, n) for n in xmls}
  lists = _voc_lists(root)
  if not lists:  # no split lists: every annotation, split by hash
    chosen = sorted(paths.values())
    return Found('a Pascal VOC dataset', chosen, {}, {p: images for p in chosen}, {})
  splits: Dict[str, Optional[str]] = {}
  unannotated: List[Tuple[Optional[str], str]] = []
  image_names = {posixpath.splitext(n)[0]: n for n in reversed(root.names('JPEGImages'))
                 if n.lower().endswith(IMAGE_EXTENSIONS)}
  twice = []
  for subset, split, ids in lists:
    for item in ids:
      if item in paths:
        if paths[item] in splits and splits[paths[item]] != split:
          twice.append(item)
        splits.setdefault(paths[item], split)
      elif item in image_names:
        unannotated.append((split, posixpath.join(images, image_names[item])))
      else:
        unannotated.append((split, posixpath.join(images, item + '.jpg')))
  if twice:
    logging.warning('%s/%s: %d images are in the lists of two splits (%s, ...); each is '
                    'converted once, in the first list\'s split (train, val, test)',
                    root.root, _VOC_SUBSETS, len(twice), twice[0])
  left = sorted(set(paths.values()) - set(splits))
  if left:
    logging.warning('%s: %d annotation files are in no list of %s/%s (%s, ...) and are not '
                    'converted, as the VOC devkit reads the lists', annotations, len(left),
                    root.root, _VOC_SUBSETS, posixpath.basename(left[0]))
  chosen = sorted(splits)
  roots = {p: images for p in chosen}
  formats: Dict[str, str] = {}
  if unannotated:
    # Listed images without an annotation file are images without objects (the devkit's
    # test lists before their annotations are released): written as an AutoML
    # detection CSV, whose `ML_USE,URI,,,,,,,,,` row is an image without objects.
    path = posixpath.join(scratch_dir, 'voc_images_without_annotations.csv')
    count = _images_without_objects(path, unannotated)
    logging.warning('%s: %d listed images have no annotation file; converted as images '
                    'without objects', annotations, count)
    chosen.append(path)
    formats[path] = 'automl_detection_csv'
  return Found('a Pascal VOC dataset', chosen, splits, roots, formats)


def _voc_folder(tree: _Tree, xmls: List[str], scratch_dir: str) -> Found:
  """A folder of Pascal VOC XMLs beside their images (LabelImg's and Kaggle's layout):
  each XML, and each image beside them without an XML of its name, as an image without
  objects, as Datumaro's relaxed VOC reader and Ultralytics (a background image) take an
  image without a label file."""
  try:
    with files.open_file(xmls[0]) as f:
      head = f.read(4096).decode('utf-8', 'replace')
  except OSError:
    head = ''
  if not re.search(r'<annotation[\s>]', head):  # CVAT's <annotations>: one file, many images
    return Found('manifests', xmls, {}, {}, {})
  stems = {posixpath.splitext(posixpath.basename(x))[0] for x in xmls}
  images = [n for n in tree.names() if n.lower().endswith(IMAGE_EXTENSIONS)
            and posixpath.splitext(n)[0] not in stems]
  if images:  # an XML may name an image of another name in its <filename>
    named = set()
    for xml in xmls:
      try:
        with files.open_file(xml) as f:
          found = re.search(rb'<filename>\s*([^<]*?)\s*</filename>', f.read(65536))
      except OSError:
        continue
      if found:
        named.add(posixpath.basename(found.group(1).decode('utf-8', 'replace')))
    images = [n for n in images if n not in named]
  if not images:
    return Found('manifests', xmls, {}, {}, {})
  path = posixpath.join(scratch_dir, 'images_without_annotations.csv')
  _images_without_objects(path, [(None, tree.path(n)) for n in images])
  logging.warning('%s: %d images have no annotation file of their name (%s, ...); converted '
                  'as images without objects', tree.root, len(images), images[0])
  return Found('Pascal VOC files beside their images', xmls + [path], {}, {},
               {path: 'automl_detection_csv'})


def _images_without_objects(path: str, images: Sequence[Tuple[Optional[str], str]]) -> int:
  """Writes `path`, an AutoML detection CSV of images without objects (its row
  `ML_USE,URI,,,,,,,,,`), from (split or None, URI) pairs, each URI once; how many."""
  lines: Dict[str, str] = {}
  for split, uri in images:  # an image listed twice: its first split
    lines.setdefault(uri, ','.join([_csv_field((split or 'UNASSIGNED').upper()),
                                    _csv_field(uri)] + [''] * 9))
  files.write_text(path, ''.join(line + '\n' for line in lines.values()))
  return len(lines)


def _voc_lists(root: _Tree) -> List[Tuple[str, Optional[str], List[str]]]:
  """(subset, split, image ids) of each subset list of ImageSets/Main, train first,
  then val, test and others; `trainval` only when there is no train or val list (it is
  their union), as unassigned (split by hash)."""
  names = [n[:-4] for n in root.names(_VOC_SUBSETS) if n.endswith('.txt') and '_' not in n]
  if {'train', 'val'} & set(names):
    names = [n for n in names if n != 'trainval']
  order = {'train': 0, 'val': 1, 'test': 2}
  lists = []
  for subset in sorted(names, key=lambda n: (order.get(n, 3), n)):
    split = ML_USE_TO_SPLIT.get(subset.upper())
    if subset.upper() not in ML_USE_TO_SPLIT and subset != 'trainval':
      logging.warning('%s/%s/%s.txt: a subset of no split of this tool (train, val, test); '
                      'its images are split by hash', root.root, _VOC_SUBSETS, subset)
    text = files.read_bytes(root.path(f'{_VOC_SUBSETS}/{subset}.txt')).decode('utf-8-sig')
    ids = [line.split()[0] for line in text.splitlines()
           if line.strip() and not line.lstrip().startswith('#')]
    lists.append((subset, split, ids))
  return lists


# COCO's annotation files are `<task>_<subset>.json` (instances_train2017.json); the
# tasks with boxes, the one read first when a subset has both.
_COCO_TASKS = ('instances', 'person_keypoints')
# Every task the COCO site names its files by; another name in annotations/ (LabelMe's
# frame_001.json) is no COCO root's.
_COCO_FILE = re.compile(
    r'^(instances|person_keypoints|captions|image_info|labels|panoptic|stuff)_(.+)\.json$')


def _coco(tree: _Tree, image_root: Optional[str] = None) -> Optional[Found]:
  """A COCO root (`annotations/<task>_<subset>.json` beside `images/<subset>/` or
  `<subset>/`), or its `annotations/` folder; None if the folder is neither."""
  root = tree
  if posixpath.basename(tree.root) == 'annotations' and tree.parent() is not None:
    root = tree.parent()
  if 'annotations' not in root.folders():
    return None
  by_subset: Dict[str, Dict[str, str]] = {}
  for name in root.names('annotations'):
    match = _COCO_FILE.match(name)
    if match:
      by_subset.setdefault(match.group(2), {})[match.group(1)] = name
  if not by_subset:
    return None
  folders = set(root.folders())
  image_folders = set(root.folders('images'))
  chosen, splits, roots, others = [], {}, {}, []
  for subset, tasks in sorted(by_subset.items()):
    task = next((t for t in _COCO_TASKS if t in tasks), None)
    if task is None:
      others.extend(tasks.values())
      continue
    if subset in image_folders:
      images = root.path(f'images/{subset}')
    elif subset in folders:
      images = root.path(subset)
    elif 'images' in folders:
      images = root.path('images')
    elif image_root:
      images = image_root
    else:
      raise ManifestError(f'{root.root} is a COCO dataset whose {subset!r} images are in '
                          f'none of images/{subset}/, {subset}/ or images/; convert '
                          f'annotations/{tasks[task]} with --image-root naming their folder')
    path = root.path(f'annotations/{tasks[task]}')
    chosen.append(path)
    roots[path] = images
    splits[path] = ML_USE_TO_SPLIT.get(re.sub(r'\d+$', '', subset).upper())
    for other in sorted(set(tasks.values()) - {tasks[task]}):
      others.append(other)
  if not chosen:
    raise ManifestError(f'{root.root}/annotations holds COCO annotations without boxes '
                        f'({", ".join(sorted(others)[:3])}), which are not converted; '
                        'instances_<subset>.json or person_keypoints_<subset>.json are')
  for name in sorted(others):
    logging.info('%s/annotations/%s: not read (a COCO root is read from its instances '
                 'files, else its person keypoints)', root.root, name)
  return Found('a COCO dataset', chosen, splits, roots, {})


IMAGE_EXTENSIONS = ('.jpg', '.jpeg', '.png', '.gif', '.bmp', '.webp', '.tif', '.tiff')
# What annotation tools and benchmark suites name a dataset's parts, never its classes
# (compared in lower case): an image folder whose class folders carry these names is a
# dataset of another layout, refused (`_refusal`) rather than read as classes.
_PART_FOLDERS = frozenset((
    'jpegimages', 'annotations', 'imagesets', 'segmentationclass', 'segmentationobject',
    'images', 'labels', 'labeltxt', 'image_2', 'label_2', 'calib', 'velodyne',
    'obj_train_data',
    # SYNTHIA's views of each frame
    'rgb', 'gt', 'depth', 'semseg', 'rgbleft', 'gtleft', 'depthleft', 'rgbright', 'gtright',
    'depthright',
    # CamVid's masks beside its images (train/ and trainannot/, ...)
    'trainannot', 'valannot', 'testannot',
    # super-resolution pairs; Market-1501's re-identification crops
    'hr', 'lr', 'upsampled', 'bounding_box_train', 'bounding_box_test', 'query'))
# Part names that only together name a layout: SYNTHIA's views, super-resolution pairs,
# Market-1501's folders.
_LAYOUT_GROUPS = (
    frozenset(('rgb', 'gt', 'depth', 'semseg', 'rgbleft', 'gtleft', 'depthleft', 'rgbright',
               'gtright', 'depthright')),
    frozenset(('hr', 'lr', 'upsampled')),
    frozenset(('bounding_box_train', 'bounding_box_test', 'query')))
# Annotation files that, beside a class folder's images, make it a dataset's folder
# (a VoTT or MPII export, a dataset per folder), not a class: notes (.txt) are allowed.
_DATASET_ANNOTATIONS = ('.xml', '.json', '.csv', '.yaml', '.yml', '.jsonl')
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
  as classes or left out.

  Args:
    root: the image folder: a local path (made absolute) or a gs:// or s3:// prefix,
      listed once.
  """
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
  # A dangling link or a FIFO named as an image fails its row with the reason.
  return _class_folders_csv(root, listing, by_split)


def _class_folders_csv(root: str, listing: Dict[str, Tuple[Sequence[str], Sequence[str]]],
                       by_split: bool) -> str:
  """The manifest of class folders (`listing` as `_refusal` takes it, in the order to
  write), or ManifestError: a layout `_refusal` names, or no image."""
  refused = _refusal(root, listing)
  if refused:
    raise ManifestError(refused)
  lines = ['split,image_uri,label']
  for relative, (names, _) in listing.items():
    split, label = relative.split('/') if by_split else ('', relative)
    for name in names:
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
  lower = {c.lower() for c in classes}
  # A layout known by several folders needs two of them: one alone may be a class
  # (`depth/`, `hr/`, `query/`).
  single = {name for group in _LAYOUT_GROUPS if len(lower & group) < 2 for name in group}
  parts = sorted(c for c in classes if c.lower() in _PART_FOLDERS - single)
  if parts:
    return _layout_refusal(root, {c.lower() for c in classes}, parts)
  for relative, (names, nested) in listing.items():
    names = [n for n in names if not n.startswith('.')]  # hidden files: not the user's data
    if nested:
      return (f'{root}/{relative}/{nested[0]} holds images inside the class folder '
              f'{relative}: class folders inside class folders are not read; lay images '
              'out as <label>/<image> or <split>/<label>/<image>, or list them in a manifest')
    notes = [n for n in names if n.lower().endswith(_ANNOTATION_EXTENSIONS)]
    images = [n for n in names if n.lower().endswith(IMAGE_EXTENSIONS)]
    if notes and not images:
      return (f'{root}/{relative} holds annotation files ({notes[0]}, ...) and no image, '
              'so it is no class folder: convert the annotation files (give their file or '
              'folder), not the folder above them')
    masks = [n for n in images if n.lower().endswith('_seg.png')]
    if masks:
      return (f'{root}/{relative} holds {masks[0]} beside its images: an ADE20K dataset '
              '(segmentation masks named <image>_seg.png), which is not read; write a '
              'segmentation CSV of its images and masks (see the formats guide)')
    annotations = [n for n in notes if n.lower().endswith(_DATASET_ANNOTATIONS)]
    if annotations:
      return (f'{root}/{relative} holds {annotations[0]} beside its images: a dataset\'s '
              'folder, not a class folder; convert the annotation file, or move it out if '
              'the images are one class')
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
  if names & {'rgb', 'gt', 'depth', 'semseg', 'rgbleft', 'gtleft', 'depthleft', 'rgbright',
               'gtright', 'depthright'}:
    return layout('a SYNTHIA dataset (views of each frame), which is not read', 'write a '
                  'segmentation CSV of its RGB images and label masks, or a manifest')
  if names & {'trainannot', 'valannot', 'testannot'}:
    return layout('a CamVid dataset (masks in <split>annot/), which is not read', 'write a '
                  'segmentation CSV of its images and masks (see the formats guide)')
  if names & {'hr', 'lr', 'upsampled'}:
    return layout('a super-resolution dataset (image pairs), which is not read', 'write a '
                  'manifest of the images to convert')
  if names & {'bounding_box_train', 'bounding_box_test', 'query'}:
    return layout('a Market-1501 re-identification dataset, which is not read', 'write a '
                  'manifest naming each crop\'s identity as its label')
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
    given = {p.lower(): p for p in parts}
    return layout('a dataset of annotation files and images', 'convert its annotations '
                  f'(give {root}/{given.get("annotations", "annotations")} or one of its '
                  f'files) with --image-root {root}/{given.get("images", "images")}')
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
  return _class_folders_csv(root, dict(sorted(listing.items())), by_split)


def _other_layout(tree: _Tree, scratch_dir: str) -> Optional[Found]:
  """Datumaro's YOLO layout (`obj.names` beside `images/<subset>/` and
  `labels/<subset>/`), read as Ultralytics reads the same folders, through a data.yaml
  written into `scratch_dir`; None if the folder is not it. Raises ManifestError (one
  line) for layouts recognised and not read: YOLO with `Images/` and `Annotations/`
  (Datumaro's other YOLO layout, whose labels Ultralytics' rule does not find), WIDER
  FACE, an Open Images root."""
  folders = {f.lower(): f for f in tree.folders()}
  names = tree.names()
  if any(n.lower().endswith(('.yaml', '.yml')) for n in names):
    return None  # the dataset's own data.yaml says what it is
  if 'obj.names' in names and 'images' in folders and 'labels' in folders:
    subsets = tree.folders(folders['images'])
    text = files.read_bytes(tree.path('obj.names')).decode('utf-8-sig')
    classes = [line.strip() for line in text.splitlines() if line.strip()]
    if subsets and classes:
      import json  # pylint: disable=g-import-not-at-top
      lines = [f'path: {json.dumps(tree.root)}']
      for subset in subsets:
        split = ML_USE_TO_SPLIT.get(subset.upper())
        key = {'train': 'train', 'eval': 'val', 'test': 'test'}.get(split or '')
        if key is None:
          raise ManifestError(f'{tree.root} is a YOLO dataset (Datumaro\'s layout) whose '
                              f'images/{subset}/ is no split (train, val, test); write a '
                              'data.yaml naming its image folders and classes')
        if any(line.startswith(f'{key}:') for line in lines):
          raise ManifestError(f'{tree.root} is a YOLO dataset (Datumaro\'s layout) with two '
                              f'{key} folders in images/; write a data.yaml naming the one '
                              'to read')
        lines.append(f'{key}: {json.dumps(folders["images"] + "/" + subset)}')
      lines.append('names: ' + json.dumps(classes))
      path = posixpath.join(scratch_dir, 'data.yaml')
      files.write_text(path, '\n'.join(lines) + '\n')
      return Found("a YOLO dataset in Datumaro's layout (obj.names, images/, labels/)",
                   [path], {}, {}, {path: 'yolo'})
  if 'obj.names' in names and {'images', 'annotations'} <= set(folders):
    raise ManifestError(f'{tree.root} holds obj.names, {folders["images"]}/ and '
                        f'{folders["annotations"]}/: a YOLO dataset in Datumaro\'s layout, '
                        'which is not read (Ultralytics finds labels under labels/); move '
                        'the label files to labels/ beside images/ and write a data.yaml')
  if 'wider_face_split' in folders:
    raise ManifestError(f'{tree.root} holds wider_face_split/: a WIDER FACE dataset, which '
                        'is not read; convert its boxes to a supported format (see the '
                        'formats guide) or write a manifest')
  if 'annotations' in folders:
    csvs = [n for n in tree.names(folders['annotations']) if n.lower().endswith('.csv')]
    boxes = [n for n in csvs if 'bbox' in n.lower()]
    if csvs and any('class-descriptions' in n.lower() or 'class_descriptions' in n.lower()
                    for n in csvs):
      advice = (f'convert its box files, for example `tfrecorder-component convert '
                f'{tree.root}/{folders["annotations"]}/{boxes[0]} OUT`' if boxes else
                'convert its image-level label files one run each')
      raise ManifestError(f'{tree.root} holds {folders["annotations"]}/ of Open Images CSVs: '
                          f'an Open Images dataset, whose folder is not read whole; {advice}')
  return None


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
    manifests = manifest_files(entry.path)
    if manifests and all(m.lower().endswith('.txt') for m in manifests) and (
        _has_label_folders(root)):
      continue
    found.update((m, ML_USE_TO_SPLIT[entry.name.upper()]) for m in manifests)
  return found


def _csv_field(value: str) -> str:
  if any(c in value for c in ',"\n\r'):
    return '"' + value.replace('"', '""') + '"'
  return value
