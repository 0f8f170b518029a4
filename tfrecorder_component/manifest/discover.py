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

import csv
import logging
import os
import posixpath
import re
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.errors import ManifestError, UsageError
from tfrecorder_component.manifest import automl_csv, class_folders, downloads, open_images, registry
from tfrecorder_component.manifest.class_folders import csv_field, folder_manifest
from tfrecorder_component.manifest.confine import Confinement
from tfrecorder_component.manifest.confine import message as confine_message
from tfrecorder_component.manifest.registry import MANIFEST_EXTENSIONS
from tfrecorder_component.manifest.rows import ML_USE_TO_SPLIT
from tfrecorder_component.manifest.tree import IMAGE_EXTENSIONS, Tree, is_junk


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


def manifest_files(pattern: str, confine: Optional[Confinement] = None) -> List[str]:
  """Manifest files matching `pattern` (a file or a glob, on any Beam file system), or
  directly inside it when it names a folder. Folders and files without a manifest
  extension (`registry.MANIFEST_EXTENSIONS`, the extensions the formats claim) are
  skipped, so a manifest may sit next to its images; in a folder that holds a data set's own file,
  the other manifest-like files are its parts (`_dataset_parts`).

  Args:
    pattern: a manifest file, a glob, or a folder (a prefix on gs:// or s3://), on any
      Beam file system. Only a folder's direct children are listed.
    confine: the run's roots: a folder's (or a glob's) file that is a symbolic link
      leading out of them is left out, unread (`Tree`); None: none.
  """
  found = files.match(pattern)
  folder = not files.has_glob(pattern) and all(_is_dir(p) for p in found)
  if folder:  # a folder, or a prefix of an object store
    found = files.match(files.join(pattern, '*'))
  found = sorted(p for p in found if p.lower().endswith(MANIFEST_EXTENSIONS) and not _is_dir(p)
                 and not is_junk(posixpath.basename(p.rstrip('/')))
                 and _inside(p, confine, given=p == pattern))
  return _dataset_parts(pattern, found) if folder else found


def _is_dir(path: str) -> bool:
  return '://' not in path and os.path.isdir(path)


def _inside(path: str, confine: Optional[Confinement], given: bool = False) -> bool:
  """Whether a manifest file is read under `confine`: a listed one unless it is a local
  link leading out of the roots (left out, logged); the file the run was given unless
  its path lies inside the roots and its links lead out (ManifestError): outside them,
  it is the caller's own file, not the dataset's."""
  if confine is None or '://' in path:
    return True
  if given:
    if confine.outside(path) or confine.resolve(path) is not None:
      return True
    raise ManifestError(f'{path}: {confine_message("manifest")}')
  if not os.path.islink(path) or confine.resolve(path) is not None:
    return True
  logging.warning('%s: a symbolic link leading outside the folders this run may read '
                  '(confine_to); not read', path)
  return False


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


def find(source: str, scratch_dir: str, image_root: Optional[str] = None,
         confine: Optional[Confinement] = None) -> Found:
  """What the path `source` stands for. Manifests that a layout implies (an image
  folder's list of images, a Pascal VOC list's images that have no annotation file) are
  written into `scratch_dir`, the run's report folder. `image_root`: the one the run
  gives, which wins over the folders a layout implies. Raises UsageError when the path
  does not exist, ManifestError (one line) when it is a layout that is not read.

  A folder's files are manifests only when their content is one (`_root_manifests`):
  READMEs, licences, list files and CSVs that name no image are left alone. A download
  one step away from class folders is read as `downloads` says.

  Args:
    source: a local path or a gs:// or s3:// URI: a manifest file, a folder of
      manifests, a dataset folder or an image folder.
    scratch_dir: the folder (the run's report folder) that manifests the layout
      implies are written into.
    image_root: the image folder the run gives; None: none. Here it only stands in for
      a COCO subset's images where the root holds no images folder for it; the caller
      puts it before `Found.image_roots`.
    confine: the run's roots (`confine_to`): a symbolic link in the folder leading out
      of them is neither listed nor read (`Tree`); None: none.
  """
  if '://' not in source and not os.path.exists(source):
    raise UsageError(f'{source} does not exist')
  folder = '://' in source or os.path.isdir(source)
  if not folder:
    return Found('manifests', manifest_files(source, confine), {}, {}, {})
  tree = Tree(source, confine)
  found = (_voc(tree, scratch_dir) or _coco(tree, image_root)
           or _other_layout(tree, scratch_dir))
  if found:
    return found
  reading = downloads.known(tree, scratch_dir)
  if reading:
    return _found(reading)
  found = _voc_beside_images(tree)
  if found:
    return found
  manifests = manifest_files(source, confine)
  if manifests and all(m.lower().endswith('.xml') for m in manifests):
    return _voc_folder(tree, manifests, scratch_dir)
  manifests, splits, others = _root_manifests(tree, manifests)
  if manifests:
    return Found('manifests', manifests, splits, {}, {})
  by_split = _split_folder_manifests(tree)
  if by_split:
    return Found('split folders of manifests', sorted(by_split), by_split, {}, {})
  reading = downloads.image_tree(tree, scratch_dir)
  if reading and reading.manifest is None:
    return find(reading.root, scratch_dir, image_root, confine)
  if reading:
    return _found(reading)
  if not tree.folders() and not tree.images() and others:
    raise ManifestError(f'{tree.root} holds no images, no class folders and no manifest: '
                        f'{_named(others)} name no image, so they are no manifest; give a '
                        'manifest (a CSV of image_uri and label), or the folder of the images')
  path = posixpath.join(scratch_dir, 'input_manifest.csv')
  files.write_text(path, class_folders.class_folders_csv(tree))
  return Found('class folders of images', [path], {}, {path: tree.root}, {})


def _voc_beside_images(tree: Tree) -> Optional[Found]:
  """`annotations/` of Pascal VOC XMLs beside `images/` (Kaggle's detection sets, as
  LabelImg saves them into a folder of their own): each XML, its image in `images/`;
  None for another folder."""
  folders = {f.lower(): f for f in tree.folders()}
  if set(folders) != {'annotations', 'images'}:
    return None
  xmls = [tree.path(f'{folders["annotations"]}/{n}') for n in tree.names(folders['annotations'])
          if n.lower().endswith('.xml')]
  if not xmls:
    return None
  try:
    with files.open_file(xmls[0]) as f:
      head = f.read(4096).decode('utf-8', 'replace')
  except OSError:
    return None
  if not re.search(r'<annotation[\s>]', head):
    return None
  images = tree.path(folders['images'])
  downloads.LOG.info('%s: read as Pascal VOC XMLs in %s/, their images in %s/', tree.root,
                     folders['annotations'], folders['images'])
  return Found('Pascal VOC XMLs beside an images folder', xmls, {}, {x: images for x in xmls},
               {x: 'pascal_voc' for x in xmls})


def _found(reading: downloads.Reading) -> Found:
  return Found(reading.layout, [reading.manifest], {}, {reading.manifest: reading.root}, {})


def _named(paths: Sequence[str]) -> str:
  names = [posixpath.basename(p) for p in paths]
  return ', '.join(names[:4]) + (f' and {len(names) - 4} more' if len(names) > 4 else '')


# The manifests a dataset root's file names give their split by (GTSRB's Train.csv and
# Test.csv, a Kaggle set's train.csv and test.csv): trainval, their union, by hash.
_SPLIT_FILE = re.compile(r'^(train|training|val|valid|validation|eval|test|trainval)$',
                         re.IGNORECASE)


def _root_manifests(tree: Tree, manifests: List[str]
                    ) -> Tuple[List[str], Dict[str, Optional[str]], List[str]]:
  """The files of a folder read as manifests, the split each file's name imposes, and
  the text files that are no manifest.

  - A .csv, .tsv or .txt file is a manifest only when its content is one
    (`manifest_kind`); the others (READMEs, licences, list files, CSVs of other
    columns) are left alone, logged.
  - Beside class folders, a CSV that names images but no label (Imagenette's
    `noisy_imagenette.csv`) is not read, nor any CSV beside a complete tree of split
    and class folders (a Kaggle set's `sports.csv`): the folders are the labels; each
    is named in a warning (give the file itself to read it).
  - Where some manifests are named by a split (`Train.csv`, `test.csv`), each takes
    that split, and a manifest named by none beside them (GTSRB's `Meta.csv`, a
    `sample_submission.csv`) is not read, in a warning.
  """
  kinds = {m: manifest_kind(m) for m in manifests}
  others = [m for m, kind in kinds.items() if kind is None]
  for path in others:
    logging.info('%s: not a manifest (no image named in its first rows); left alone', path)
  kept = [m for m in manifests if kinds[m] is not None]
  if kept and tree.folders():
    tree_kind = _class_tree(tree)
    for path in [m for m in kept if kinds[m] == 'unlabelled' and tree_kind
                 or tree_kind == 'split' and m.lower().endswith(_TEXT_MANIFESTS)]:
      why = ('names images but no label column' if kinds[path] == 'unlabelled' else
             'lies beside split folders of class folders')
      logging.warning('%s %s; not read: the class folders beside it give the labels (give '
                      'the file itself to convert it)', path, why)
      kept.remove(path)
  named = {m: _SPLIT_FILE.match(posixpath.splitext(posixpath.basename(m))[0]) for m in kept}
  splits: Dict[str, Optional[str]] = {}
  if any(named.values()):
    for path in [m for m in kept if not named[m]]:
      logging.warning('%s: not read: the manifests beside it are named by their split (%s), '
                      'and it by none (give it alone to convert it)', path,
                      ', '.join(posixpath.basename(m) for m in kept if named[m]))
      kept.remove(path)
    for path in kept:
      word = named[path].group(1).upper()
      splits[path] = None if word == 'TRAINVAL' else ML_USE_TO_SPLIT.get(
          'TRAIN' if word == 'TRAINING' else word)
  return kept, splits, others


_TEXT_MANIFESTS = ('.csv', '.tsv', '.txt')


def manifest_kind(path: str) -> Optional[str]:
  """What a dataset root's file is: 'labelled' (a manifest), 'unlabelled' (a CSV whose
  header names an image column and no label column), or None (no manifest: its first
  rows name no image). Files of other extensions than .csv, .tsv and .txt are
  manifests by their extension ('labelled').

  A .csv or .txt is a manifest when a format other than the AutoML classification CSV
  recognises its first characters, or its header names an image column
  (`automl_csv.is_header`), or, without a header, its first row is AutoML's
  `[ML_USE,]IMAGE_URI[,LABEL...]`: comma-separated, its URI field naming an image (an
  image extension or a gs://, s3://, http(s):// URI) with no space around its words.

  Args:
    path: the file's path or URI.
  """
  if not path.lower().endswith(_TEXT_MANIFESTS):
    return 'labelled'
  try:
    with files.open_file(path) as f:
      head = f.read(65536).decode('utf-8-sig', 'replace')
  except OSError:
    return 'labelled'  # read as a manifest, which names the error
  if registry.detect(path, head).name != 'automl_csv':
    return 'labelled'
  lines = [line for line in head.splitlines()[:-1] or head.splitlines()
           if line.strip() and not line.lstrip().startswith('#')]
  if not lines:
    return None
  try:
    fields = next(csv.reader([lines[0]]))
  except (csv.Error, StopIteration):
    return None
  if automl_csv.is_header(fields):
    try:
      first_row = next(csv.reader(lines[1:2]), None)
    except csv.Error:
      first_row = None
    roles = automl_csv.header_roles(fields, first_row=first_row)
    if roles is None:
      return None
    return 'labelled' if roles.get('label') else 'unlabelled'
  first = fields[0].strip()
  uri = fields[1].strip() if first.upper() in ML_USE_TO_SPLIT and len(fields) > 1 else first
  named = (uri.lower().endswith(IMAGE_EXTENSIONS) or re.match(r'(gs|s3|https?)://', uri))
  return 'labelled' if named and not re.search(r'\s', uri) else None


def _class_tree(tree: Tree) -> Optional[str]:
  """'split' when every folder of `tree` is a split folder of class folders holding
  images, 'class' when some folder holds images directly, else None."""
  folders = tree.folders()
  if all(f.upper() in ML_USE_TO_SPLIT for f in folders) and all(
      any(tree.images(f'{f}/{c}') for c in tree.folders(f)) for f in folders):
    return 'split'
  if any(tree.images(f) for f in folders):
    return 'class'
  return None


# Pascal VOC (the VOC devkit's layout; Datumaro's `voc` formats read it the same way):
# the lists of ImageSets/Main name a subset's image ids, one a line; a file whose name
# has an underscore (`aeroplane_train.txt`) is one class's list, not a subset.
_VOC_SUBSETS = 'ImageSets/Main'


def _voc(tree: Tree, scratch_dir: str) -> Optional[Found]:
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


def _voc_folder(tree: Tree, xmls: List[str], scratch_dir: str) -> Found:
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
    lines.setdefault(uri, ','.join([csv_field((split or 'UNASSIGNED').upper()),
                                    csv_field(uri)] + [''] * 9))
  files.write_text(path, ''.join(line + '\n' for line in lines.values()))
  return len(lines)


def _voc_lists(root: Tree) -> List[Tuple[str, Optional[str], List[str]]]:
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


def _coco(tree: Tree, image_root: Optional[str] = None) -> Optional[Found]:
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


def _other_layout(tree: Tree, scratch_dir: str) -> Optional[Found]:
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


def _split_folder_manifests(tree: Tree) -> Dict[str, Optional[str]]:
  """{manifest: split} for a folder whose every subfolder is a split folder (train,
  valid, val, validation, eval, test, in any case) and some hold manifest files (those
  `manifest_kind` takes for one; none beside class folders of images); {} otherwise."""
  folders = tree.folders()
  if not folders or not all(f.upper() in ML_USE_TO_SPLIT for f in folders):
    return {}
  found = {}
  for name in folders:
    if tree.folders(name) and any(tree.images(f'{name}/{c}') for c in tree.folders(name)):
      continue  # class folders: a list beside them is no manifest
    manifests = [m for m in manifest_files(tree.path(name), tree.confine)
                 if manifest_kind(m) is not None]
    found.update((m, ML_USE_TO_SPLIT[name.upper()]) for m in manifests)
  return found
