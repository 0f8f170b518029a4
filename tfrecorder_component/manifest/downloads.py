"""Datasets as their archives and Kaggle zips extract: the famous layouts read as their
own readers read them, and the layouts one step away from class folders found.

Each reading below follows the dataset's reference reader, the TFDS builder named
beside it (`tensorflow_datasets/image_classification/<name>.py`, `_split_generators`
and `_generate_examples`), or the dataset's README where TFDS has none:
- ImageNet as Kaggle ships it (`LOC_synset_mapping.txt`, `LOC_val_solution.csv`,
  `ILSVRC/Data/CLS-LOC/{train,val,test}/`; TFDS `imagenet2012`): train from its wnid
  folders, val labelled by the first word of each `PredictionString`, test (no labels
  published) named in a warning with its count.
- Oxford-IIIT Pet (`images/`, `annotations/trainval.txt`, `test.txt`; TFDS
  `oxford_iiit_pet`): the lists' images, labelled by their breed (the name before the
  last `_`), trainval as train.
- Oxford Flowers-102 (`jpg/`, `imagelabels.mat`, `setid.mat`; TFDS `oxford_flowers102`):
  labels and splits from the MATLAB files, read with scipy.
- CUB-200-2011 (`images/<class>/`, `images.txt`, `train_test_split.txt`; TFDS
  `caltech_birds2011`): splits from the split file through the image ids.
- Stanford Dogs (`Images/<class>/`, `train_list.mat`, `test_list.mat`; TFDS
  `stanford_dogs`): splits from the MATLAB lists.
Then, for any dataset (`image_tree`): a root holding one folder (a zip's root folder)
is read through it; a root holding one image-class tree beside folders of metadata
(Caltech-101's `101_ObjectCategories/` beside `Annotations/`, Food-101's and DTD's
`images/`) is read from that tree, its splits from the split lists in the usual places
(`meta/`, `labels/`, `annotations/`, `ImageSets/`, `lists/`, `splits/`: `train*.txt`,
`val*.txt`, `test*.txt`, `trainval.txt`) that name its images (Food-101's `meta/`,
TFDS `food101`; DTD's `labels/`, partition 1 as TFDS `dtd` reads it).

How each folder was read is said on the `tfrecorder_component.layout` logger (the
command shows it); what is left out is a warning.
"""
from __future__ import annotations

import csv
import io
import logging
import posixpath
import re
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.io import files
from tfrecorder_component.manifest import class_folders
from tfrecorder_component.manifest.rows import ML_USE_TO_SPLIT
from tfrecorder_component.manifest.tree import Tree, is_image_name

LOG = logging.getLogger('tfrecorder_component.layout')


class Reading(NamedTuple):
  """A download's reading: a manifest written, or a folder to read instead.

  Attributes:
    layout: what the folder was read as, in words.
    manifest: the classification CSV written (`split,image_uri,label`, URIs relative to
      `root`); None when `root` is a folder to read in place of the source.
    root: the folder the manifest's URIs resolve against, or the folder to read.
  """
  layout: str
  manifest: Optional[str]
  root: str


def _write(scratch_dir: str, name: str, rows: Sequence[Tuple[str, str, str]]) -> str:
  path = posixpath.join(scratch_dir, name)
  lines = ['split,image_uri,label']
  lines.extend(','.join(class_folders.csv_field(v) for v in row) for row in rows)
  files.write_text(path, '\n'.join(lines) + '\n')
  return path


def _text(tree: Tree, relative: str) -> str:
  return files.read_bytes(tree.path(relative)).decode('utf-8-sig', 'replace')


def _loadmat(tree: Tree, relative: str, dataset: str):
  """A MATLAB file's variables (scipy.io.loadmat), or ManifestError naming what to do."""
  try:
    from scipy import io as scipy_io  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ManifestError(
        f'{tree.root} is {dataset}, whose labels or splits are in {relative}, a MATLAB '
        'file read with scipy, which is not installed: `pip install scipy`, then run the '
        'command again') from e
  try:  # a regular file only: a FIFO or a device named as one would block or never end
    data = files.read_bytes(tree.path(relative), 1 << 30)
  except RowError as e:
    raise ManifestError(f'{tree.path(relative)}: cannot read it: {e.message}') from None
  return scipy_io.loadmat(io.BytesIO(data))


def known(tree: Tree, scratch_dir: str) -> Optional[Reading]:
  """The famous download `tree` is, read as its reference reader reads it (see the
  module), or None.

  Args:
    tree: the source folder.
    scratch_dir: the run's report folder, where the manifest of the reading is written.
  """
  names = set(tree.names())
  folders = set(tree.folders())
  if 'LOC_synset_mapping.txt' in names and 'ILSVRC' in folders:
    return _imagenet_kaggle(tree, scratch_dir)
  if {'images', 'annotations'} <= folders and {'trainval.txt', 'test.txt'} <= set(
      tree.names('annotations')) and tree.images('images'):
    return _oxford_pets(tree, scratch_dir)
  if {'imagelabels.mat', 'setid.mat'} <= names and 'jpg' in folders:
    return _flowers102(tree, scratch_dir)
  if {'images.txt', 'train_test_split.txt'} <= names and 'images' in folders:
    return _cub(tree, scratch_dir)
  if {'train_list.mat', 'test_list.mat'} <= names and 'Images' in folders:
    return _stanford_dogs(tree, scratch_dir)
  return None


def _imagenet_kaggle(tree: Tree, scratch_dir: str) -> Reading:
  data = 'ILSVRC/Data/CLS-LOC'
  rows: List[Tuple[str, str, str]] = []
  for wnid in tree.folders(f'{data}/train'):
    rows.extend(('TRAIN', f'{data}/train/{wnid}/{n}', wnid)
                for n in tree.images(f'{data}/train/{wnid}'))
  val = set(tree.images(f'{data}/val'))
  if 'LOC_val_solution.csv' in tree.names():
    by_stem = {posixpath.splitext(n)[0]: n for n in val}
    reader = csv.reader(io.StringIO(_text(tree, 'LOC_val_solution.csv')))
    next(reader, None)  # ImageId,PredictionString
    labelled = set()
    for fields in reader:
      if len(fields) < 2 or not fields[1].split():
        continue
      name = by_stem.get(fields[0].strip(), fields[0].strip() + '.JPEG')
      labelled.add(name)
      rows.append(('VALIDATION', f'{data}/val/{name}', fields[1].split()[0]))
    if val - labelled:
      logging.warning('%s/%s/val: %d images have no row in LOC_val_solution.csv and are not '
                      'converted', tree.root, data, len(val - labelled))
  elif val:
    logging.warning('%s/%s/val: %d images without labels (no LOC_val_solution.csv beside '
                    'them) are not converted', tree.root, data, len(val))
  test = tree.images(f'{data}/test')
  if test:
    logging.warning('%s/%s/test: %d images without labels (ImageNet publishes none for its '
                    'test set) are not converted', tree.root, data, len(test))
  LOG.info('%s: read as ImageNet as Kaggle ships it (train/ class folders, val/ labelled '
           'by LOC_val_solution.csv)', tree.root)
  return Reading('ImageNet (Kaggle)', _write(scratch_dir, 'imagenet_kaggle.csv', rows),
                 tree.root)


def _list_lines(text: str) -> List[str]:
  return [line.strip() for line in text.splitlines()
          if line.strip() and not line.lstrip().startswith('#')]


def _oxford_pets(tree: Tree, scratch_dir: str) -> Reading:
  by_stem = {posixpath.splitext(n)[0]: n for n in reversed(tree.images('images'))}
  rows, listed = [], set()
  for name, split in (('trainval.txt', 'TRAIN'), ('test.txt', 'TEST')):
    for line in _list_lines(_text(tree, f'annotations/{name}')):
      stem = line.split()[0]
      listed.add(stem)
      rows.append((split, f'images/{by_stem.get(stem, stem + ".jpg")}',
                   stem.rsplit('_', 1)[0]))
  left = sorted(set(by_stem) - listed)
  if left:
    logging.warning('%s/images: %d images are in neither annotations/trainval.txt nor '
                    'test.txt (%s, ...) and are not converted, as the dataset\'s lists read '
                    'it', tree.root, len(left), by_stem[left[0]])
  LOG.info('%s: read as Oxford-IIIT Pet (images/ labelled by breed, splits from '
           'annotations/trainval.txt and test.txt; its head boxes and trimaps are not read)',
           tree.root)
  return Reading('Oxford-IIIT Pet', _write(scratch_dir, 'oxford_iiit_pet.csv', rows),
                 tree.root)


def _flowers102(tree: Tree, scratch_dir: str) -> Reading:
  dataset = 'an Oxford Flowers-102 download'
  labels = [int(v) for v in _loadmat(tree, 'imagelabels.mat', dataset)['labels'].ravel()]
  sets = _loadmat(tree, 'setid.mat', dataset)
  images = set(tree.images('jpg'))
  rows = []
  for key, split in (('trnid', 'TRAIN'), ('valid', 'VALIDATION'), ('tstid', 'TEST')):
    for number in sets[key].ravel():
      number = int(number)
      name = f'image_{number:05d}.jpg'
      if 1 <= number <= len(labels):
        rows.append((split, f'jpg/{name}', str(labels[number - 1])))
        images.discard(name)
  if images:
    logging.warning('%s/jpg: %d images are in no set of setid.mat and are not converted',
                    tree.root, len(images))
  LOG.info('%s: read as Oxford Flowers-102 (labels from imagelabels.mat, the class numbers '
           '1 to 102; splits from setid.mat)', tree.root)
  return Reading('Oxford Flowers-102', _write(scratch_dir, 'oxford_flowers102.csv', rows),
                 tree.root)


def _cub(tree: Tree, scratch_dir: str) -> Reading:
  paths = {}
  for line in _list_lines(_text(tree, 'images.txt')):
    number, _, path = line.partition(' ')
    paths[number] = path.strip()
  rows = []
  for line in _list_lines(_text(tree, 'train_test_split.txt')):
    number, _, training = line.partition(' ')
    path = paths.get(number)
    if path:
      rows.append(('TRAIN' if training.strip() == '1' else 'TEST', f'images/{path}',
                   path.split('/')[0]))
  LOG.info('%s: read as CUB-200-2011 (images/ class folders, splits from '
           'train_test_split.txt; its boxes, parts and attributes are not read)', tree.root)
  return Reading('CUB-200-2011', _write(scratch_dir, 'cub_200_2011.csv', rows), tree.root)


def _mat_paths(value) -> List[str]:
  """The strings of a MATLAB cell array of strings, as scipy.io.loadmat gives it."""
  out = []
  for item in value.ravel():
    while hasattr(item, 'ravel') and getattr(item, 'dtype', None) is not None and (
        item.dtype == object or item.size == 1) and not isinstance(item, str):
      flat = item.ravel()
      if not len(flat):
        break
      item = flat[0]
      if isinstance(item, str):
        break
    out.append(str(item))
  return out


def _stanford_dogs(tree: Tree, scratch_dir: str) -> Reading:
  dataset = 'a Stanford Dogs download'
  rows = []
  for name, split in (('train_list.mat', 'TRAIN'), ('test_list.mat', 'TEST')):
    for path in _mat_paths(_loadmat(tree, name, dataset)['file_list']):
      rows.append((split, f'Images/{path}', path.split('/')[0]))
  LOG.info('%s: read as Stanford Dogs (Images/ class folders, splits from train_list.mat '
           'and test_list.mat; its boxes in Annotation/ are not read)', tree.root)
  return Reading('Stanford Dogs', _write(scratch_dir, 'stanford_dogs.csv', rows), tree.root)


# Where datasets keep the lists that split their images (Food-101's meta/, DTD's
# labels/, Oxford Pets' annotations/, Pascal VOC's ImageSets/).
_LIST_FOLDERS = ('', 'meta', 'labels', 'annotations', 'ImageSets', 'lists', 'splits')
_LIST_NAME = re.compile(r'^(train|training|val|valid|validation|test|trainval)(\d*)\.txt$',
                        re.IGNORECASE)


def image_tree(tree: Tree, scratch_dir: str) -> Optional[Reading]:
  """A root one step away from class folders (see the module), or None.

  Args:
    tree: the source folder, holding no manifest and no dataset file.
    scratch_dir: where the manifest of a tree read with split lists is written.
  """
  folders = tree.folders()
  if tree.images() or not folders:
    return None
  if len(folders) == 1:
    if folders[0].upper() in ML_USE_TO_SPLIT:
      return None  # <split>/<label>/: class folders of one split
    LOG.info('%s: holds one folder, %s/; read through it', tree.root, folders[0])
    return Reading('a folder holding one folder', None, tree.path(folders[0]))
  with_images = [f for f in folders if tree.holds_images(f, depth=None)]
  if len(with_images) != 1 or tree.images(with_images[0]):
    return None  # class folders (read as such), or flat images beside their labels
  chosen = with_images[0]
  if _yolo_labels(tree, chosen, folders):
    return None
  while len(tree.folders(chosen)) == 1 and not tree.images(chosen) and (
      tree.folders(chosen)[0].upper() not in ML_USE_TO_SPLIT):
    chosen = f'{chosen}/{tree.folders(chosen)[0]}'  # Kaggle's images/Images/
  others = ', '.join(f'{f}/' for f in folders if f != with_images[0])
  lists = _split_lists(tree, chosen)
  if not lists:
    LOG.info('%s: read the class folders of %s/ (beside %s, which hold no image)', tree.root,
             chosen, others)
    return Reading(f'class folders in {chosen}/', None, tree.path(chosen))
  text = class_folders.class_folders_csv(tree.sub(chosen))
  rows, left = [], 0
  for fields in list(csv.reader(io.StringIO(text)))[1:]:
    uri = fields[1]
    split = lists.get(uri) or lists.get(posixpath.splitext(uri)[0])
    if split is None:
      left += 1
    else:
      rows.append((split, f'{chosen}/{uri}', fields[2]))
  if left:
    logging.warning('%s/%s: %d images are in no split list and are not converted, as the '
                    'dataset\'s lists read it', tree.root, chosen, left)
  LOG.info('%s: read the class folders of %s/, split by the lists %s', tree.root, chosen,
           ', '.join(sorted(set(lists.sources))))
  return Reading(f'class folders in {chosen}/ with split lists',
                 _write(scratch_dir, 'split_lists.csv', rows), tree.root)


def _yolo_labels(tree: Tree, chosen: str, folders: Sequence[str]) -> bool:
  """Whether a `labels/` folder beside the image tree holds YOLO label files (one .txt
  an image, of the image's name), which `discover` refuses as a YOLO dataset."""
  labels = next((f for f in folders if f.lower() == 'labels'), None)
  if labels is None:
    return False
  stems = set()
  for folder in [labels, *(f'{labels}/{s}' for s in tree.folders(labels))]:
    stems.update(posixpath.splitext(n)[0] for n in tree.names(folder) if n.endswith('.txt'))
  images = set()
  for folder in [chosen, *(f'{chosen}/{s}' for s in tree.folders(chosen))]:
    images.update(posixpath.splitext(n)[0] for n in tree.images(folder))
  return bool(stems & images) or bool(tree.folders(labels))


class _Lists(dict):
  """{image path relative to the tree, with and without extension: split}; `sources`:
  the lists read."""
  sources: List[str]


def _split_lists(tree: Tree, chosen: str) -> _Lists:
  """The splits the lists beside an image tree give its images (see the module); a list
  counts when 90% of its lines name an image of the tree. Numbered partitions
  (`train1.txt` ... `train10.txt`): the first, as TFDS's dtd reads it."""
  images = set()
  for label in tree.folders(chosen):
    images.update(f'{label}/{n}' for n in tree.images(f'{chosen}/{label}'))
  known = images | {posixpath.splitext(p)[0] for p in images}
  found: Dict[Tuple[str, str, str], List[str]] = {}  # (partition, kind, list) -> images
  for folder in _LIST_FOLDERS:
    if folder and folder not in tree.folders():
      continue
    for name in tree.names(folder):
      match = _LIST_NAME.match(name)
      if not match:
        continue
      relative = f'{folder}/{name}' if folder else name
      lines = _list_lines(_text(tree, relative))
      named = [l if l in known else l.split()[0] for l in lines]
      if lines and sum(n in known for n in named) >= 0.9 * len(lines):
        found[(match.group(2), match.group(1).lower(), relative)] = named
  lists = _Lists()
  lists.sources = []
  if not found:
    return lists
  partitions = sorted({p for p, _, _ in found}, key=lambda p: (p not in ('', '1'), p))
  if len(partitions) > 1:
    logging.warning('%s: the split lists hold %d partitions (%s); partition %s is read',
                    tree.root, len(partitions),
                    ', '.join(p or '(unnumbered)' for p in partitions),
                    partitions[0] or '(unnumbered)')
  chosen_lists = sorted((key for key in found if key[0] == partitions[0]),
                        key=lambda key: (_ORDER[key[1]], key[2]))
  kinds = {kind for _, kind, _ in chosen_lists}
  for key in chosen_lists:
    kind = key[1]
    if kind == 'trainval' and kinds & {'train', 'training', 'val', 'valid', 'validation'}:
      continue  # the union of the train and val lists beside it
    lists.sources.append(key[2])
    split = _SPLIT_OF_LIST[kind]
    for image in found[key]:
      lists.setdefault(image, split)
  return lists


# A split list's split: trainval (the union of train and val) is train where it comes
# without them, as TFDS's oxford_iiit_pet and Pascal VOC's test-time use read it.
_SPLIT_OF_LIST = {'train': 'TRAIN', 'training': 'TRAIN', 'trainval': 'TRAIN',
                  'val': 'VALIDATION', 'valid': 'VALIDATION', 'validation': 'VALIDATION',
                  'test': 'TEST'}
_ORDER = {'train': 0, 'training': 0, 'trainval': 1, 'val': 2, 'valid': 2, 'validation': 2,
          'test': 3}
