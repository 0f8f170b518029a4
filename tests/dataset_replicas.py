"""Miniature replicas of famous image-dataset downloads, laid out as their official
archives (or Kaggle zips) extract, and the reading each should give.

One function a dataset, `<dataset>(root) -> Reference`: it writes the replica under
`root` (the folder the download was extracted into) and returns the reference reading,
`{split: {(image path relative to root, label)}}` in our split names (`train`, `eval`
for a validation split, `test`). Where the TFDS builder installed with the tests can be
driven offline, the reference is what its `_generate_examples` yields on the replica,
given the paths its `_split_generators` would pass (through `_Downloads`, a stand-in
for TFDS's DownloadManager whose every URL is already downloaded and extracted into the
replica); elsewhere it is hard-coded from the dataset's own files, and `Reference.source`
says which.

Images are small real photos: crops of scikit-learn's `china.jpg` and `flower.jpg`,
each crop a different one, so every image file of a replica has bytes of its own and a
record is found back by its `image/key/sha256` (`image_index`).
"""
# Driving the TFDS builders means calling their protected methods.
# pylint: disable=protected-access
from __future__ import annotations

import collections
import csv
import dataclasses
import functools
import hashlib
import importlib.util
import io
import itertools
import json
import os
import shutil
import struct
import tempfile
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

import numpy as np
from PIL import Image

Reading = Dict[str, Set[Tuple[str, str]]]  # {split: {(path relative to root, label)}}
IMAGE_EXTENSIONS = ('.jpg', '.jpeg', '.png', '.tif', '.tiff', '.bmp', '.gif')
# TFDS's split names -> ours (a builder naming its test list "validation" is mapped by
# the function reading it).
TFDS_SPLITS = {'train': 'train', 'validation': 'eval', 'test': 'test'}


@dataclasses.dataclass
class Reference:
  """The reading a replica should give.

  Attributes:
    root: the replica's top folder (the download extracted).
    splits: {split: {(image path relative to root, label)}}: every image to convert.
    hash_split: the dataset defines no split (TFDS gives every image to train): the
      images may go to any of train, eval and test, by hash.
    source: where the reference comes from ('tfds <builder>', else 'hard-coded: ...').
    unread: {image folder: how many images it holds} for folders the reading leaves
      out with a warning (ImageNet's unlabelled test/).
    objects: detection only: {image path: [(category id, category name), ...]} in
      annotation order.
  """
  root: str
  splits: Reading
  hash_split: bool = False
  source: str = ''
  unread: Dict[str, int] = dataclasses.field(default_factory=dict)
  objects: Optional[Dict[str, List[Tuple[int, str]]]] = None

  @property
  def images(self) -> Set[Tuple[str, str]]:
    return set().union(*self.splits.values()) if self.splits else set()

  @property
  def classes(self) -> Set[str]:
    return {label for _, label in self.images}

  def only(self, splits) -> 'Reference':
    """The same reference with only `splits` read (others unread)."""
    return dataclasses.replace(self, splits={s: v for s, v in self.splits.items()
                                             if s in splits})


# --- images ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _photo_source(name: str) -> Image.Image:
  spec = importlib.util.find_spec('sklearn')  # found without importing scikit-learn
  folder = os.path.join(spec.submodule_search_locations[0], 'datasets', 'images')
  with Image.open(os.path.join(folder, name)) as im:
    im = im.convert('RGB')
  im.info = {}  # no ICC profile (nor anything else of the file) carried into the crops
  return im


def photo(n: int, size: Tuple[int, int] = (32, 24)) -> Image.Image:
  """Crop number `n` of a real photo (china.jpg or flower.jpg), resized to `size`
  (width, height): a different crop for each n."""
  src = _photo_source(('china.jpg', 'flower.jpg')[n % 2])
  w, h = src.size
  cw = 120 + (n * 37) % 300
  ch = min(h - 1, cw * 3 // 4)
  x = (n * 53) % (w - cw)
  y = (n * 29) % (h - ch)
  return src.crop((x, y, x + cw, y + ch)).resize(size, Image.LANCZOS)


def _makedirs_for(path: str) -> None:
  os.makedirs(os.path.dirname(path), exist_ok=True)


def jpeg(path: str, n: int, size: Tuple[int, int] = (32, 24)) -> str:
  _makedirs_for(path)
  photo(n, size).save(path, 'JPEG', quality=90)  # JFIF, as cameras and TFDS expect
  return path


def png(path: str, n: int, size: Tuple[int, int] = (32, 24), mode: str = 'RGB') -> str:
  _makedirs_for(path)
  photo(n, size).convert(mode).save(path, 'PNG')
  return path


def text(path: str, content: str) -> str:
  _makedirs_for(path)
  with open(path, 'w', encoding='utf-8', newline='') as f:
    f.write(content)
  return path


def data(path: str, content: bytes) -> str:
  _makedirs_for(path)
  with open(path, 'wb') as f:
    f.write(content)
  return path


def savemat(path: str, variables: dict) -> str:
  import scipy.io  # pylint: disable=g-import-not-at-top
  _makedirs_for(path)
  scipy.io.savemat(path, variables)
  return path


def cell(strings) -> np.ndarray:
  """A MATLAB cell array (N x 1) of strings, as savemat writes an object array."""
  out = np.empty((len(strings), 1), dtype=object)
  for i, s in enumerate(strings):
    out[i, 0] = s
  return out


def _csv(path: str, header: List[str], rows: List[list]) -> str:
  buf = io.StringIO()
  writer = csv.writer(buf, lineterminator='\n')
  writer.writerow(header)
  writer.writerows(rows)
  return text(path, buf.getvalue())


def image_index(root: str) -> Dict[str, str]:
  """{sha256 of the file's bytes: path relative to root} of every image file under
  root (AppleDouble `._*` files and __MACOSX/ left out); fails on two images alike."""
  out = {}
  for folder, dirs, names in os.walk(root):
    dirs[:] = [d for d in dirs if d != '__MACOSX']
    for name in names:
      if name.startswith('._') or not name.lower().endswith(IMAGE_EXTENSIONS):
        continue
      path = os.path.join(folder, name)
      with open(path, 'rb') as f:
        sha = hashlib.sha256(f.read()).hexdigest()
      rel = os.path.relpath(path, root).replace(os.sep, '/')
      assert sha not in out, f'{rel} and {out[sha]} have the same bytes'
      out[sha] = rel
  return out


def _rel(root: str, path: str) -> str:
  return os.path.relpath(str(path), str(root)).replace(os.sep, '/')


# --- driving TFDS builders offline -------------------------------------------------------


class _Downloads:
  """Stands for TFDS's DownloadManager on a replica: every URL is already downloaded
  and extracted, to `paths[url]` (a URL not listed: the replica's root), and
  `iter_archive` of a folder yields its files as an archive's members (path relative
  to the folder, an open file)."""

  def __init__(self, root: str, paths: Optional[Dict[str, str]] = None):
    self.root = str(root)
    self.paths = paths or {}

  def _one(self, url):
    return self.paths.get(url, self.root)

  def download(self, urls):
    if isinstance(urls, dict):
      return {k: self._one(v) for k, v in urls.items()}
    if isinstance(urls, (list, tuple)):
      return [self._one(u) for u in urls]
    return self._one(urls)

  download_and_extract = extract = download

  @staticmethod
  def iter_archive(path: str) -> Iterator[Tuple[str, io.BufferedReader]]:
    for folder, dirs, names in os.walk(str(path)):
      dirs.sort()
      for name in sorted(names):
        full = os.path.join(folder, name)
        with open(full, 'rb') as fobj:
          yield _rel(path, full), fobj


def _builder(name: str, config: Optional[str] = None):
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  kwargs = {'config': config} if config else {}
  return tfds.builder_cls(name)(data_dir=tempfile.mkdtemp(prefix='tfds-'), **kwargs)


def _split_generators(builder, downloads: _Downloads) -> Dict[str, Iterator]:
  """{TFDS split name: the examples its _generate_examples yields}, through the
  builder's own _split_generators."""
  generators = builder._split_generators(downloads)
  if isinstance(generators, dict):
    return {str(k): v for k, v in generators.items()}
  return {str(g.name): builder._generate_examples(**g.gen_kwargs)
          for g in generators}


def _tfds_reading(builder, downloads: _Downloads, read: Callable[[str, dict], Tuple[str, str]],
                  splits: Optional[Dict[str, str]] = None) -> Reading:
  """{our split: {read(key, example)}} of every example the builder yields."""
  splits = splits or TFDS_SPLITS
  out = {}
  for tfds_split, examples in _split_generators(builder, downloads).items():
    out[splits[tfds_split]] = {read(key, example) for key, example in examples}
  return out


# --- 1. Cats vs Dogs ----------------------------------------------------------------------


def cats_vs_dogs(root) -> Reference:
  """kagglecatsanddogs_5340.zip as it extracts: PetImages/{Cat,Dog}/<n>.jpg, the
  readme and the licence (a .docx) beside. No split of its own; TFDS's cats_vs_dogs
  gives every image to train."""
  root = str(root)
  n = itertools.count(1)
  for label in ('Cat', 'Dog'):
    for i in (0, 1, 2, 10):
      jpeg(os.path.join(root, 'PetImages', label, f'{i}.jpg'), next(n))
  text(os.path.join(root, 'readme[1].txt'),
       'Thank you for your interest in the Microsoft Cats and Dogs Dataset.\r\n')
  data(os.path.join(root, 'MSR-LA - 3467.docx'), b'PK\x03\x04' + bytes(300))
  for label in ('Cat', 'Dog'):  # the zip holds Windows' thumbnail caches too
    data(os.path.join(root, 'PetImages', label, 'Thumbs.db'), THUMBS_DB)
  builder = _builder('cats_vs_dogs')
  reading = collections.defaultdict(set)
  # TFDS's builder expects 1,738 corrupt images in the real zip and raises at the end
  # when it found another number: every image is yielded before that.
  examples = builder._generate_examples(_Downloads.iter_archive(root))
  try:
    for key, example in examples:
      folder = key.replace('\\', '/').split('/')[1]
      assert folder.lower() == example['label'], (key, example['label'])
      reading['train'].add((key.replace('\\', '/'), folder))
  except ValueError as e:
    assert 'corrupt images' in str(e), e
  return Reference(root, dict(reading), hash_split=True, source='tfds cats_vs_dogs')


# --- 2. Food-101 --------------------------------------------------------------------------


FOOD = {'apple_pie': 'Apple pie', 'baby_back_ribs': 'Baby back ribs', 'baklava': 'Baklava'}


def food101(root) -> Reference:
  """food-101.tar.gz extracted: food-101/images/<class>/<id>.jpg, meta/ with the
  class lists and the train/test lists (.txt and .json), the README and licence.
  TFDS's food101 reads meta/train.json as train and meta/test.json as its
  "validation"; ours is `test`, as the file names it."""
  root = str(root)
  top = os.path.join(root, 'food-101')
  n = itertools.count(1)
  lists = {'train': collections.defaultdict(list), 'test': collections.defaultdict(list)}
  image_id = 1005649
  for c in FOOD:
    for i in range(4):
      image_id += 9173
      jpeg(os.path.join(top, 'images', c, f'{image_id}.jpg'), next(n))
      lists['train' if i < 3 else 'test'][c].append(f'{c}/{image_id}')
  meta = os.path.join(top, 'meta')
  text(os.path.join(meta, 'classes.txt'), ''.join(f'{c}\n' for c in FOOD))
  text(os.path.join(meta, 'labels.txt'), ''.join(f'{name}\n' for name in FOOD.values()))
  for split, per_class in lists.items():
    text(os.path.join(meta, f'{split}.txt'),
         ''.join(f'{name}\n' for names in per_class.values() for name in names))
    text(os.path.join(meta, f'{split}.json'), json.dumps(per_class))
  text(os.path.join(top, 'README.txt'),
       'Structure:\n----------\npec/\n    images/\n        <class_name>/\n'
       '            <image_id>.jpg\n    meta/\n        classes.txt\n        labels.txt\n'
       '        test.json\n        test.txt\n        train.json\n        train.txt\n\n'
       'All images can be found in the "images" folder and are organized per class.\n')
  text(os.path.join(top, 'license_agreement.txt'),
       'Food-101 data set. The images are not owned by the ETH Zurich; use them for\n'
       'non-commercial research purposes only.\n')

  def read(key, example):
    return _rel(root, example['image']), example['label']
  reading = _tfds_reading(_builder('food101'), _Downloads(root), read,
                          splits={'train': 'train', 'validation': 'test'})
  return Reference(root, reading, source='tfds food101')


# --- 3. Caltech-101 -----------------------------------------------------------------------


def caltech101(root) -> Reference:
  """caltech-101.zip with its two tars extracted beside: 101_ObjectCategories/<class>/
  image_<n>.jpg (BACKGROUND_Google and Faces among the classes) and Annotations/
  (the box files, as the archive names their folders: Faces_2, not Faces; no
  BACKGROUND_Google). TFDS's caltech101 takes 30 random images a class for train and
  lowercases the folder names; the replica's classes are smaller than 30, so the
  reference is every image (its builder run with 1 train image a class, train and test
  together: all images), labelled by its folder as written."""
  root = str(root)
  n = itertools.count(1)
  classes = ('BACKGROUND_Google', 'Faces', 'accordion', 'airplanes')
  for c in classes:
    for i in range(1, 4):
      jpeg(os.path.join(root, '101_ObjectCategories', c, f'image_{i:04d}.jpg'), next(n))
  for folder in ('Faces_2', 'accordion', 'Airplanes_Side_2'):
    for i in range(1, 4):
      data(os.path.join(root, 'Annotations', folder, f'annotation_{i:04d}.mat'),
           b'MATLAB 5.0 MAT-file, Platform: GLNXA64' + bytes(90))
  text(os.path.join(root, 'show_annotation.m'),
       'function show_annotation(imgfile, annotation_file)\n')

  from tensorflow_datasets.datasets.caltech101 import caltech101_dataset_builder as module  # pylint: disable=g-import-not-at-top
  builder = _builder('caltech101')
  # Its _split_generators passes the folder 101_ObjectCategories.tar.gz extracts into.
  extracted = tempfile.mkdtemp(prefix='caltech101-')
  os.symlink(os.path.join(root, '101_ObjectCategories'),
             os.path.join(extracted, '101_ObjectCategories'))
  reading = set()
  given = module._TRAIN_POINTS_PER_CLASS
  module._TRAIN_POINTS_PER_CLASS = 1
  try:
    for is_train in (True, False):
      for key, example in builder._generate_examples(extracted, is_train_split=is_train):
        folder = key.split('/')[0]
        assert folder.lower() == example['label']
        reading.add((f'101_ObjectCategories/{key}', folder))
  finally:
    module._TRAIN_POINTS_PER_CLASS = given
  return Reference(root, {'train': reading}, hash_split=True, source='tfds caltech101')


# --- 4. Oxford-IIIT Pet -------------------------------------------------------------------


PETS = {  # image name: (class id, species 1 cat 2 dog, breed id), as list.txt numbers them
    'Abyssinian_1': (1, 1, 1), 'Abyssinian_2': (1, 1, 1),
    'american_bulldog_10': (2, 2, 1), 'american_bulldog_11': (2, 2, 1),
    'Bengal_3': (6, 1, 2), 'Bengal_4': (6, 1, 2),
}
PETS_TEST = ('Abyssinian_2', 'american_bulldog_11')
PETS_UNLISTED = 'Bengal_7'  # in images/, in no list


def oxford_iiit_pet(root) -> Reference:
  """images.tar.gz and annotations.tar.gz extracted side by side: images/<Breed>_<n>.jpg
  (flat; cats capitalised; the archive also holds three stray .mat files there) and
  annotations/ with list.txt (comment lines first), trainval.txt and test.txt
  (`<name> <class id> <species> <breed id>`), trimaps/ (with the AppleDouble `._`
  files the archive holds beside them) and xmls/ (head boxes, for trainval images
  only). One image is in no list. The
  reference is TFDS's oxford_iiit_pet: train from trainval.txt, test from test.txt, the
  label its label feature's name."""
  root = str(root)
  n = itertools.count(1)
  for name in list(PETS) + [PETS_UNLISTED]:
    jpeg(os.path.join(root, 'images', name + '.jpg'), next(n))
  for i in (100, 101, 102):
    data(os.path.join(root, 'images', f'Abyssinian_{i}.mat'),
         b'MATLAB 5.0 MAT-file, Platform: GLNXA64' + bytes(90))
  ann = os.path.join(root, 'annotations')
  line = lambda name: '{} {} {} {}\n'.format(name, *PETS[name])
  text(os.path.join(ann, 'list.txt'),
       '#Image CLASS-ID SPECIES BREED ID\n#ID: 1:37 Class ids\n#SPECIES: 1:Cat 2:Dog\n'
       '#BREED ID: 1-25:Cat 1:12:Dog\n'
       '#All images with 1st letter as captial are cat images\n'
       '#images with small first letter are dog images\n' + ''.join(map(line, PETS)))
  text(os.path.join(ann, 'trainval.txt'),
       ''.join(line(p) for p in PETS if p not in PETS_TEST))
  text(os.path.join(ann, 'test.txt'), ''.join(line(p) for p in PETS_TEST))
  for name in PETS:
    png(os.path.join(ann, 'trimaps', name + '.png'), next(n), mode='L')
    data(os.path.join(ann, 'trimaps', '._' + name + '.png'), apple_double(name + '.png'))
    if name not in PETS_TEST:
      species = ('cat', 'dog')[PETS[name][1] - 1]
      text(os.path.join(ann, 'xmls', name + '.xml'),
           f'<annotation><folder>OXIIIT</folder><filename>{name}.jpg</filename>'
           '<source><database>OXFORD-IIIT Pet Dataset</database></source>'
           '<size><width>32</width><height>24</height><depth>3</depth></size>'
           f'<segmented>0</segmented><object><name>{species}</name><pose>Frontal</pose>'
           '<truncated>0</truncated><occluded>0</occluded><bndbox><xmin>4</xmin>'
           '<ymin>3</ymin><xmax>20</xmax><ymax>18</ymax></bndbox><difficult>0</difficult>'
           '</object></annotation>\n')
  builder = _builder('oxford_iiit_pet')
  names = builder.info.features['label'].names

  def read(key, example):
    return f'images/{key}', names[example['label']]
  reading = _tfds_reading(builder, _Downloads(root), read)
  return Reference(root, reading, source='tfds oxford_iiit_pet')


# --- 5, 6. Stanford Dogs ------------------------------------------------------------------


DOGS = ('n02085620-Chihuahua', 'n02085782-Japanese_spaniel', 'n02085936-Maltese_dog')
DOG_IMAGES = ('10074', '1007', '10131')  # the last one of each breed: test


def _dog_xml(wnid: str, stem: str, breed: str) -> str:
  return (f'<annotation><folder>{wnid[1:]}</folder><filename>{stem}</filename>'
          '<source><database>ImageNet database</database></source>'
          '<size><width>32</width><height>24</height><depth>3</depth></size>'
          f'<segment>0</segment><object><name>{breed}</name><pose>Unspecified</pose>'
          '<truncated>0</truncated><difficult>0</difficult><bndbox><xmin>2</xmin>'
          '<ymin>3</ymin><xmax>29</xmax><ymax>22</ymax></bndbox></object></annotation>\n')


def _dogs_tree(images: str, annotations: str, n) -> List[Tuple[str, int, bool]]:
  """Writes <images>/<wnid>-<Name>/<wnid>_<n>.jpg and <annotations>/<same>/<wnid>_<n>
  (XML, no extension); returns [(relative image path, 1-based class, is test)]."""
  out = []
  for c, folder in enumerate(DOGS, 1):
    wnid, breed = folder.split('-', 1)
    for i, number in enumerate(DOG_IMAGES):
      stem = f'{wnid}_{number}'
      jpeg(os.path.join(images, folder, stem + '.jpg'), next(n))
      text(os.path.join(annotations, folder, stem), _dog_xml(wnid, stem, breed))
      out.append((f'{folder}/{stem}.jpg', c, i == len(DOG_IMAGES) - 1))
  return out


def stanford_dogs(root) -> Reference:
  """images.tar, annotation.tar and lists.tar extracted into one folder: Images/
  <wnid>-<Name>/<wnid>_<n>.jpg, Annotation/<wnid>-<Name>/<wnid>_<n> (XML, no
  extension), file_list.mat, train_list.mat, test_list.mat (`file_list`,
  `annotation_list`, `labels`). The reference is TFDS's stanford_dogs: train and test
  from train_list.mat and test_list.mat; it lowercases the folder names, ours keeps
  them as written."""
  root = str(root)
  n = itertools.count(1)
  images = _dogs_tree(os.path.join(root, 'Images'), os.path.join(root, 'Annotation'), n)
  for name, chosen in (('file_list', images), ('train_list', [i for i in images if not i[2]]),
                       ('test_list', [i for i in images if i[2]])):
    savemat(os.path.join(root, f'{name}.mat'), {
        'file_list': cell([p for p, _, _ in chosen]),
        'annotation_list': cell([p[:-len('.jpg')] for p, _, _ in chosen]),
        'labels': np.array([[c] for _, c, _ in chosen], dtype=np.float64)})
  builder = _builder('stanford_dogs')
  # Its label feature declares the full data set's 120 breeds, and _split_generators
  # names the breeds it finds: the replica's 3.
  builder.info.features['label']._num_classes = None
  downloads = _Downloads(root, {
      # annotation.tar extracts to Annotation/: the walk of it reads the same files
      'http://vision.stanford.edu/aditya86/ImageNetDogs/annotation.tar':
          os.path.join(root, 'Annotation')})
  # images.tar's members are Images/<folder>/<file>: iter_archive of the root lists
  # those (and the other files, which its name pattern and the lists leave out).

  def read(key, example):
    folder = key.split('/')[-2]
    assert folder.lower() == example['label']
    return key, folder
  reading = _tfds_reading(builder, downloads, read)
  return Reference(root, reading, source='tfds stanford_dogs')


def stanford_dogs_kaggle(root) -> Reference:
  """Kaggle's copy (jessicali9530/stanford-dogs-dataset): images/Images/<wnid>-<Name>/
  and annotations/Annotation/<wnid>-<Name>/, no lists. Hard-coded: the class is the
  image's folder (as TFDS's stanford_dogs labels it, case kept), no split."""
  root = str(root)
  images = _dogs_tree(os.path.join(root, 'images', 'Images'),
                      os.path.join(root, 'annotations', 'Annotation'), itertools.count(1))
  reading = {(f'images/Images/{p}', p.split('/')[0]) for p, _, _ in images}
  return Reference(root, {'train': reading}, hash_split=True,
                   source='hard-coded: the class folders, as tfds stanford_dogs labels images')


# --- 7. ImageNet, as Kaggle ships it ------------------------------------------------------


SYNSETS = {'n01440764': 'tench, Tinca tinca', 'n01443537': 'goldfish, Carassius auratus',
           'n01484850': 'great white shark, white shark, man-eater, man-eating shark, '
                        'Carcharodon carcharias'}
IMAGENET_VAL = ['n01443537', 'n01484850', 'n01440764', 'n01443537']
IMAGENET_TEST = 3


def _voc_box(folder: str, stem: str, wnid: str) -> str:
  return (f'<annotation><folder>{folder}</folder><filename>{stem}</filename>'
          '<source><database>ILSVRC_2012</database></source><size><width>32</width>'
          '<height>24</height><depth>3</depth></size><segmented>0</segmented>'
          f'<object><name>{wnid}</name><pose>Unspecified</pose><truncated>0</truncated>'
          '<difficult>0</difficult><bndbox><xmin>3</xmin><ymin>2</ymin><xmax>28</xmax>'
          '<ymax>21</ymax></bndbox></object></annotation>\n')


def imagenet_kaggle(root) -> Reference:
  """imagenet-object-localization-challenge.zip extracted: the LOC_*.csv files and
  LOC_synset_mapping.txt beside ILSVRC/ (Annotations/, Data/ and ImageSets/ of
  CLS-LOC); train/<wnid>/<wnid>_<n>.JPEG, val/ and test/ flat. Hard-coded (TFDS's
  imagenet2012 reads the ILSVRC2012 tars and its own validation label file, not this
  layout): train from train/<wnid>/ (the wnid its label), eval from val/ with the first
  token of LOC_val_solution.csv's PredictionString as label; test/ has no labels, so
  it is not read (`unread`)."""
  root = str(root)
  n = itertools.count(1)
  cls_loc = os.path.join(root, 'ILSVRC', 'Data', 'CLS-LOC')
  boxes = os.path.join(root, 'ILSVRC', 'Annotations', 'CLS-LOC')
  sets = os.path.join(root, 'ILSVRC', 'ImageSets', 'CLS-LOC')
  train, train_loc, reading = [], [], collections.defaultdict(set)
  for wnid in SYNSETS:
    for i in (10026, 10027, 10029):
      stem = f'{wnid}_{i}'
      jpeg(os.path.join(cls_loc, 'train', wnid, stem + '.JPEG'), next(n))
      train.append(f'{wnid}/{stem}')
      reading['train'].add((f'ILSVRC/Data/CLS-LOC/train/{wnid}/{stem}.JPEG', wnid))
      if i != 10029:  # not every training image has boxes
        text(os.path.join(boxes, 'train', wnid, stem + '.xml'), _voc_box(wnid, stem, wnid))
        train_loc.append((stem, wnid))
  val = []
  for i, wnid in enumerate(IMAGENET_VAL, 1):
    stem = f'ILSVRC2012_val_{i:08d}'
    jpeg(os.path.join(cls_loc, 'val', stem + '.JPEG'), next(n))
    text(os.path.join(boxes, 'val', stem + '.xml'), _voc_box('val', stem, wnid))
    val.append(stem)
    reading['eval'].add((f'ILSVRC/Data/CLS-LOC/val/{stem}.JPEG', wnid))
  test = [f'ILSVRC2012_test_{i:08d}' for i in range(1, IMAGENET_TEST + 1)]
  for stem in test:
    jpeg(os.path.join(cls_loc, 'test', stem + '.JPEG'), next(n))
  text(os.path.join(root, 'LOC_synset_mapping.txt'),
       ''.join(f'{w} {names}\n' for w, names in SYNSETS.items()))
  _csv(os.path.join(root, 'LOC_train_solution.csv'), ['ImageId', 'PredictionString'],
       [[stem, f'{wnid} 3 2 28 21 '] for stem, wnid in train_loc])
  _csv(os.path.join(root, 'LOC_val_solution.csv'), ['ImageId', 'PredictionString'],
       [[stem, f'{wnid} 3 2 28 21 {wnid} 1 1 12 10 '] for stem, wnid in zip(val, IMAGENET_VAL)])
  _csv(os.path.join(root, 'LOC_sample_submission.csv'), ['ImageId', 'PredictionString'],
       [[stem, 'n01440764 0 0 100 100 n01443537 0 0 100 100'] for stem in test])
  text(os.path.join(sets, 'train_cls.txt'),
       ''.join(f'{p} {i}\n' for i, p in enumerate(train, 1)))
  text(os.path.join(sets, 'train_loc.txt'),
       ''.join(f'{w}/{s} {i}\n' for i, (s, w) in enumerate(train_loc, 1)))
  text(os.path.join(sets, 'val.txt'), ''.join(f'{s} {i}\n' for i, s in enumerate(val, 1)))
  text(os.path.join(sets, 'test.txt'), ''.join(f'{s} {i}\n' for i, s in enumerate(test, 1)))
  return Reference(root, dict(reading), unread={'test': IMAGENET_TEST},
                   source='hard-coded: LOC_val_solution.csv and the train/<wnid> folders')


# --- 8. Imagenette ------------------------------------------------------------------------


IMAGENETTE = ('n01440764', 'n02102040', 'n02979186')


def imagenette(root) -> Reference:
  """imagenette2-160.tgz extracted: imagenette2-160/{train,val}/<wnid>/*.JPEG and
  noisy_imagenette.csv (one row an image: its path, noisy labels, is_valid). The
  reference is TFDS's imagenette (160px-v2): train and validation (our eval), the
  label the wnid folder."""
  root = str(root)
  top = os.path.join(root, 'imagenette2-160')
  n = itertools.count(1)
  rows = []
  for split, count in (('train', 3), ('val', 1)):
    for wnid in IMAGENETTE:
      for i in range(count):
        k = next(n)
        stem = f'{wnid}_{1000 + k}' if split == 'train' else f'ILSVRC2012_val_{k:08d}'
        jpeg(os.path.join(top, split, wnid, stem + '.JPEG'), k)
        noisy = IMAGENETTE[(IMAGENETTE.index(wnid) + i) % 3]
        rows.append([f'{split}/{wnid}/{stem}.JPEG', wnid, wnid, noisy, noisy, noisy,
                     str(split == 'val')])
  _csv(os.path.join(top, 'noisy_imagenette.csv'),
       ['path', 'noisy_labels_0', 'noisy_labels_1', 'noisy_labels_5', 'noisy_labels_25',
        'noisy_labels_50', 'is_valid'], rows)

  def read(key, example):
    return _rel(root, example['image']), example['label']
  reading = _tfds_reading(_builder('imagenette', '160px-v2'), _Downloads(root), read)
  return Reference(root, reading, source='tfds imagenette/160px-v2')


# --- 9. Oxford Flowers-102 ----------------------------------------------------------------


FLOWER_LABELS = list(range(1, 12)) + [1, 2, 3]  # image_00001's class, image_00002's, ...


def oxford_flowers102(root) -> Reference:
  """102flowers.tgz extracted (jpg/image_<5 digits>.jpg) beside imagelabels.mat
  (`labels`, 1 x N class numbers from 1) and setid.mat (`trnid`, `valid`, `tstid`,
  1 x k image numbers from 1). Eleven classes, so that 10 sorts after 9. The
  reference is TFDS's oxford_flowers102: train, validation (our eval) and test from
  setid.mat; its label is the class number - 1, so ours is the number as text, its id
  the number - 1."""
  root = str(root)
  n = itertools.count(1)
  for i in range(1, len(FLOWER_LABELS) + 1):
    jpeg(os.path.join(root, 'jpg', f'image_{i:05d}.jpg'), next(n))
  savemat(os.path.join(root, 'imagelabels.mat'),
          {'labels': np.array([FLOWER_LABELS], dtype=np.uint8)})
  ids = list(range(1, len(FLOWER_LABELS) + 1))
  savemat(os.path.join(root, 'setid.mat'), {
      'trnid': np.array([ids[0::3]], dtype=np.uint16),
      'valid': np.array([ids[1::3]], dtype=np.uint16),
      'tstid': np.array([ids[2::3]], dtype=np.uint16)})
  from tensorflow_datasets.datasets.oxford_flowers102 import oxford_flowers102_dataset_builder as module  # pylint: disable=g-import-not-at-top
  base = module._BASE_URL
  downloads = _Downloads(root, {  # 102flowers.tgz extracts jpg/ into the root
      os.path.join(base, name): os.path.join(root, name)
      for name in ('imagelabels.mat', 'setid.mat')})

  def read(key, example):
    return _rel(root, example['image']), str(int(example['label']) + 1)
  reading = _tfds_reading(_builder('oxford_flowers102'), downloads, read)
  return Reference(root, reading, source='tfds oxford_flowers102')


# --- 10. DTD ------------------------------------------------------------------------------


DTD = ('banded', 'blotchy', 'braided')
DTD_IMAGES = ('0002', '0004', '0009')


def dtd(root) -> Reference:
  """dtd-r1.0.1.tar.gz extracted: dtd/images/<class>/<class>_<n>.jpg, dtd/labels/
  {train,val,test}{1..10}.txt (`banded/banded_0002.jpg`), labels_joint_anno.txt and
  imdb/imdb.mat. The reference is TFDS's dtd: the first fold, train1, val1 (our
  eval) and test1."""
  root = str(root)
  top = os.path.join(root, 'dtd')
  n = itertools.count(1)
  names = {c: [f'{c}/{c}_{i}.jpg' for i in DTD_IMAGES] for c in DTD}
  for c in DTD:
    for name in names[c]:
      jpeg(os.path.join(top, 'images', name), next(n))
  for fold in range(1, 11):
    for k, split in enumerate(('train', 'val', 'test')):
      picked = [names[c][(k + fold - 1) % 3] for c in DTD]
      text(os.path.join(top, 'labels', f'{split}{fold}.txt'), ''.join(f'{p}\n' for p in picked))
  text(os.path.join(top, 'labels', 'labels_joint_anno.txt'),
       ''.join(f'{p} {c} \n' for c in DTD for p in names[c]))
  savemat(os.path.join(top, 'imdb', 'imdb.mat'), {
      'images': {'name': cell([p for c in DTD for p in names[c]])},
      'meta': {'classes': cell(list(DTD))}})

  def read(key, example):
    return _rel(root, example['image']), example['label']
  reading = _tfds_reading(_builder('dtd'), _Downloads(root), read)
  return Reference(root, reading, source='tfds dtd (fold 1)')


# --- 11, 17. EuroSAT ----------------------------------------------------------------------


EUROSAT = ('AnnualCrop', 'Forest', 'Highway')


def eurosat_rgb(root) -> Reference:
  """EuroSAT.zip extracted: 2750/<Class>/<Class>_<n>.jpg. No split of its own; the
  reference is TFDS's eurosat/rgb (every image train, the label the name's prefix)."""
  root = str(root)
  n = itertools.count(1)
  for c in EUROSAT:
    for i in range(1, 4):
      jpeg(os.path.join(root, '2750', c, f'{c}_{i}.jpg'), next(n), size=(32, 32))

  def read(key, example):
    return _rel(root, example['image']), example['label']
  reading = _tfds_reading(_builder('eurosat', 'rgb'), _Downloads(root), read)
  return Reference(root, reading, hash_split=True, source='tfds eurosat/rgb')


def multispectral_tiff(bands: np.ndarray) -> bytes:
  """A baseline little-endian TIFF of a (height, width, samples) uint16 array,
  uncompressed, interleaved, samples after the first marked as extra samples: the
  Sentinel-2 13-band files of EuroSATallBands.zip are such TIFFs (written here by hand:
  tifffile is not installed with the tests)."""
  height, width, samples = bands.shape
  pixels = bands.astype('<u2').tobytes()
  entries = []  # (tag, type, count, value or bytes)
  extra = b''
  header_size = 8
  tags = [(256, 3, 1, width), (257, 3, 1, height), (258, 3, samples, [16] * samples),
          (259, 3, 1, 1), (262, 3, 1, 1), (273, 4, 1, None), (277, 3, 1, samples),
          (278, 3, 1, height), (279, 4, 1, len(pixels)), (284, 3, 1, 1),
          (338, 3, samples - 1, [0] * (samples - 1)), (339, 3, samples, [1] * samples)]
  ifd_size = 2 + 12 * len(tags) + 4
  extra_at = header_size + ifd_size
  for tag, kind, count, value in tags:
    if isinstance(value, list):  # more than fits in the entry: stored after the IFD
      entries.append((tag, kind, count, extra_at + len(extra)))
      extra += struct.pack(f'<{count}H', *value)
    else:
      entries.append((tag, kind, count, value))
  pixels_at = extra_at + len(extra)
  ifd = struct.pack('<H', len(entries))
  for tag, kind, count, value in entries:
    value = pixels_at if tag == 273 else value
    if kind == 3 and count == 1:
      ifd += struct.pack('<HHIHH', tag, kind, count, value, 0)
    else:
      ifd += struct.pack('<HHII', tag, kind, count, value)
  ifd += struct.pack('<I', 0)
  return b'II*\x00' + struct.pack('<I', header_size) + ifd + extra + pixels


def eurosat_all_bands(root) -> Reference:
  """EuroSATallBands.zip extracted: ds/images/remote_sensing/otherDatasets/sentinel_2/
  tif/<Class>/<Class>_<n>.tif, each a 13-band uint16 TIFF (TFDS's eurosat/all reads
  them with tifffile into a [64, 64, 13] float tensor, not an image). The reference
  lists the images TFDS reads; no image of them can be a tf.train.Example image."""
  root = str(root)
  folder = os.path.join(root, 'ds', 'images', 'remote_sensing', 'otherDatasets',
                        'sentinel_2', 'tif')
  rng = np.random.default_rng(7)
  reading = set()
  for c in EUROSAT[:2]:
    for i in range(1, 3):
      path = data(os.path.join(folder, c, f'{c}_{i}.tif'), multispectral_tiff(
          rng.integers(0, 4096, size=(16, 16, 13), dtype=np.uint16)))
      reading.add((_rel(root, path), c))
  return Reference(root, {'train': reading}, hash_split=True,
                   source='hard-coded: tfds eurosat/all reads these with tifffile')


# --- 12. CUB-200-2011 ---------------------------------------------------------------------


BIRDS = {'001.Black_footed_Albatross': ['Black_Footed_Albatross_0001_796111',
                                        'Black_Footed_Albatross_0002_55',
                                        'Black_Footed_Albatross_0003_796136'],
         '002.Laysan_Albatross': ['Laysan_Albatross_0001_545', 'Laysan_Albatross_0002_1027',
                                  'Laysan_Albatross_0003_1033'],
         '003.Sooty_Albatross': ['Sooty_Albatross_0001_1071', 'Sooty_Albatross_0002_796395',
                                 'Sooty_Albatross_0003_796365']}


def cub_200_2011(root) -> Reference:
  """CUB_200_2011.tgz extracted: attributes.txt beside CUB_200_2011/, which holds
  images/<nnn>.<Name>/<Name>_<n>_<id>.jpg and the numbered lists (images.txt,
  classes.txt, image_class_labels.txt, train_test_split.txt with 1 for train,
  bounding_boxes.txt), README, parts/ and attributes/. The reference is TFDS's
  caltech_birds2011 (given segmentation masks of its other download, made here outside
  the replica): train and test from train_test_split.txt joined by images.txt; TFDS
  labels by the folder's number, ours by the folder's name."""
  root = str(root)
  top = os.path.join(root, 'CUB_200_2011')
  n = itertools.count(1)
  masks = tempfile.mkdtemp(prefix='cub-segmentations-')
  lines = collections.defaultdict(list)
  image_id = 0
  for c, (folder, names) in enumerate(BIRDS.items(), 1):
    lines['classes'].append(f'{c} {folder}')
    for k, name in enumerate(names):
      image_id += 1
      jpeg(os.path.join(top, 'images', folder, name + '.jpg'), next(n))
      png(os.path.join(masks, 'segmentations', folder, name + '.png'), next(n), mode='L')
      lines['images'].append(f'{image_id} {folder}/{name}.jpg')
      lines['image_class_labels'].append(f'{image_id} {c}')
      lines['train_test_split'].append(f'{image_id} {int(k != 1)}')
      lines['bounding_boxes'].append(f'{image_id} 3.0 2.0 24.0 19.0')
      lines['parts/part_locs'].append(f'{image_id} 1 10.0 12.0 1')
      lines['attributes/image_attribute_labels'].append(f'{image_id} 1 0 3 27.7080')
  for name, content in lines.items():
    text(os.path.join(top, name + '.txt'), '\n'.join(content) + '\n')
  text(os.path.join(top, 'README'),
       '===========================================\n'
       'The Caltech-UCSD Birds-200-2011 Dataset\n'
       '===========================================\n\n'
       'For more information about the dataset, visit the project website:\n\n'
       '  http://www.vision.caltech.edu/visipedia\n')
  text(os.path.join(top, 'parts', 'parts.txt'), '1 back\n2 beak\n3 belly\n')
  text(os.path.join(top, 'attributes', 'certainties.txt'),
       '1 not visible\n2 guessing\n3 probably\n4 definitely\n')
  text(os.path.join(top, 'attributes', 'class_attribute_labels_continuous.txt'),
       '0.0 3.1 0.0\n' * len(BIRDS))
  text(os.path.join(root, 'attributes.txt'),
       '1 has_bill_shape::curved_(up_or_down)\n2 has_bill_shape::dagger\n')

  builder = _builder('caltech_birds2011')
  info = builder._caltech_birds_info
  downloads = _Downloads(root, {info.segmentations_url: masks})

  def read(key, example):
    folder = key.split('/')[-2]
    assert int(folder.split('.')[0]) - 1 == example['label'], key
    return key, folder
  reading = _tfds_reading(builder, downloads, read)
  shutil.rmtree(masks)
  return Reference(root, reading, source='tfds caltech_birds2011')


# --- 13. COCO 2017 ------------------------------------------------------------------------


COCO_CATEGORIES = [{'supercategory': 'person', 'id': 1, 'name': 'person'},
                   {'supercategory': 'vehicle', 'id': 3, 'name': 'car'},
                   {'supercategory': 'animal', 'id': 18, 'name': 'dog'}]
COCO_IMAGES = {'train2017': {9: [18, 1, 1], 25: [3], 30: [1, 18]},
               'val2017': {139: [3, 3, 1], 285: [18]}}


def coco2017(root) -> Reference:
  """train2017.zip, val2017.zip and annotations_trainval2017.zip extracted into one
  folder: train2017/<12-digit id>.jpg, val2017/, annotations/ with instances_*,
  captions_* and person_keypoints_* files; category ids with gaps (1, 3, 18), as
  COCO's. Hard-coded from the instances files: train and eval (val2017), the objects
  of each image with their category ids."""
  root = str(root)
  n = itertools.count(1)
  cats = {c['id']: c['name'] for c in COCO_CATEGORIES}
  reading, objects = collections.defaultdict(set), {}
  ann_id = 100
  for subset, images in COCO_IMAGES.items():
    split = 'train' if subset.startswith('train') else 'eval'
    coco = {'info': {'description': 'COCO 2017 Dataset', 'year': 2017},
            'licenses': [{'url': 'http://creativecommons.org/licenses/by-nc-sa/2.0/',
                          'id': 1, 'name': 'Attribution-NonCommercial-ShareAlike License'}],
            'images': [], 'annotations': [], 'categories': COCO_CATEGORIES}
    for image_id, labels in images.items():
      name = f'{image_id:012d}.jpg'
      jpeg(os.path.join(root, subset, name), next(n), size=(40, 30))
      coco['images'].append({'license': 1, 'file_name': name, 'coco_url': '',
                             'height': 30, 'width': 40, 'date_captured': '2013-11-14 16:28:13',
                             'flickr_url': '', 'id': image_id})
      for k, category in enumerate(labels):
        ann_id += 1
        box = [2.0 + 3 * k, 1.5 + 2 * k, 20.0, 15.0]
        coco['annotations'].append({
            'segmentation': [[box[0], box[1], box[0] + box[2], box[1], box[0] + box[2],
                              box[1] + box[3]]],
            'area': box[2] * box[3] / 2, 'iscrowd': 0, 'image_id': image_id, 'bbox': box,
            'category_id': category, 'id': ann_id})
      rel = f'{subset}/{name}'
      reading[split].add((rel, ','.join(sorted({cats[c] for c in labels}))))
      objects[rel] = [(c, cats[c]) for c in labels]
    text(os.path.join(root, 'annotations', f'instances_{subset}.json'), json.dumps(coco))
    captions = dict(coco, annotations=[{'image_id': i, 'id': i, 'caption': 'A photo.'}
                                       for i in images])
    captions.pop('categories')
    text(os.path.join(root, 'annotations', f'captions_{subset}.json'), json.dumps(captions))
    keypoints = dict(coco, annotations=[], categories=[dict(
        COCO_CATEGORIES[0], keypoints=['nose', 'left_eye'], skeleton=[[1, 2]])])
    text(os.path.join(root, 'annotations', f'person_keypoints_{subset}.json'),
         json.dumps(keypoints))
  return Reference(root, dict(reading), objects=objects,
                   source='hard-coded: the instances files')


# --- 14. 100 Sports (Kaggle) --------------------------------------------------------------


SPORTS = ('air hockey', 'ampute football', 'archery')


def sports100(root) -> Reference:
  """Kaggle's "100 Sports Image Classification" (gpiosenka): train/, valid/ and test/
  of class folders (names with spaces), sports.csv (`class id,filepaths,labels,data
  set`) and a Keras model file beside. Hard-coded (no TFDS builder): the class
  folders, train, valid (our eval) and test."""
  root = str(root)
  n = itertools.count(1)
  reading, rows = collections.defaultdict(set), []
  for split, ours, count in (('train', 'train', 3), ('valid', 'eval', 1), ('test', 'test', 1)):
    for c, sport in enumerate(SPORTS):
      for i in range(1, count + 1):
        name = f'{i:03d}.jpg' if split == 'train' else f'{i}.jpg'
        jpeg(os.path.join(root, split, sport, name), next(n))
        rows.append([c, f'{split}/{sport}/{name}', sport, split])
        reading[ours].add((f'{split}/{sport}/{name}', sport))
  _csv(os.path.join(root, 'sports.csv'), ['class id', 'filepaths', 'labels', 'data set'], rows)
  data(os.path.join(root, 'EfficientNetB0-100-(224 X 224)- 98.40.h5'),
       b'\x89HDF\r\n\x1a\n' + bytes(512))
  return Reference(root, dict(reading), source='hard-coded: the class folders of each split')


# --- 15. GTSRB (Kaggle) -------------------------------------------------------------------


GTSRB_TRAIN = list(range(11)) + [1, 10]  # one class id a Train/ image
GTSRB_TEST = [10, 2, 0, 7, 1]


def gtsrb(root) -> Reference:
  """Kaggle's GTSRB (meowmeowmeowmeowmeow/gtsrb-german-traffic-sign): Train/<ClassId>/
  <class>_<track>_<frame>.png, Test/<5 digits>.png (flat), Meta/<ClassId>.png (one
  drawing a class), Train.csv and Test.csv (`Width,Height,Roi.X1,Roi.Y1,Roi.X2,Roi.Y2,
  ClassId,Path`) and Meta.csv (`Path,ClassId,ShapeId,ColorId,SignId`). Eleven
  classes, so 10 sorts after 9. Hard-coded (no TFDS builder reads this copy): train
  from Train.csv, test from Test.csv, each row's ClassId its label; Meta/ not read."""
  root = str(root)
  n = itertools.count(1)
  reading, rows = collections.defaultdict(set), {'Train': [], 'Test': []}
  frames = collections.Counter()
  for class_id in GTSRB_TRAIN:
    path = f'Train/{class_id}/{class_id:05d}_00000_{frames[class_id]:05d}.png'
    frames[class_id] += 1
    png(os.path.join(root, path), next(n), size=(30, 30))
    rows['Train'].append([30, 30, 5, 5, 25, 25, class_id, path])
    reading['train'].add((path, str(class_id)))
  for i, class_id in enumerate(GTSRB_TEST):
    path = f'Test/{i:05d}.png'
    png(os.path.join(root, path), next(n), size=(30, 30))
    rows['Test'].append([30, 30, 5, 5, 25, 25, class_id, path])
    reading['test'].add((path, str(class_id)))
  header = ['Width', 'Height', 'Roi.X1', 'Roi.Y1', 'Roi.X2', 'Roi.Y2', 'ClassId', 'Path']
  for name, content in rows.items():
    _csv(os.path.join(root, f'{name}.csv'), header, content)
  meta = []
  for class_id in range(11):
    png(os.path.join(root, 'Meta', f'{class_id}.png'), next(n), size=(30, 30), mode='RGBA')
    meta.append([f'Meta/{class_id}.png', class_id, class_id % 4, class_id % 3,
                 f'{class_id}.{class_id}'])
  _csv(os.path.join(root, 'Meta.csv'), ['Path', 'ClassId', 'ShapeId', 'ColorId', 'SignId'], meta)
  return Reference(root, dict(reading), source='hard-coded: Train.csv and Test.csv')


# --- 16. tf_flowers -----------------------------------------------------------------------


TF_FLOWERS = {'daisy': ['100080576_f52e8ee070_n', '10140303196_b88d3d6cec',
                        '10172379554_b296050f82_n'],
              'dandelion': ['10043234166_e6dd915111_n', '10200780773_c6051a7d71_n',
                            '10294487385_92a0676c7d_m'],
              'roses': ['10090824183_d02c613f10_m', '102501987_3cdb8e5394_n',
                        '10503217854_e66a804309']}


def tf_flowers(root) -> Reference:
  """flower_photos.tgz extracted: flower_photos/<class>/<flickr id>.jpg and
  flower_photos/LICENSE.txt. No split of its own; the reference is TFDS's tf_flowers
  (every image train, the label its folder)."""
  root = str(root)
  n = itertools.count(1)
  for c, names in TF_FLOWERS.items():
    for name in names:
      jpeg(os.path.join(root, 'flower_photos', c, name + '.jpg'), next(n))
  text(os.path.join(root, 'flower_photos', 'LICENSE.txt'),
       'All images in this archive are licensed under the Creative Commons By-Attribution '
       'License, available at:\nhttps://creativecommons.org/licenses/by/2.0/\n\n'
       'daisy/7568630428_8cf0fc16ff_n.jpg CC-BY by A Guy Taking Pictures - '
       'https://www.flickr.com/photos/80901381@N04/7568630428/\n')

  def read(key, example):
    return f'flower_photos/{key}', example['label']
  builder = _builder('tf_flowers')
  reading = _tfds_reading(builder, _Downloads(root), read)
  return Reference(root, reading, hash_split=True, source='tfds tf_flowers')


# --- junk an operating system leaves --------------------------------------------------------


def apple_double(name: str) -> bytes:
  """An AppleDouble `._<name>` file as macOS writes beside a file on a volume without
  extended attributes (and into __MACOSX/ of a zip): 4,096 bytes, magic 00 05 16 07."""
  header = bytes.fromhex('00051607') + bytes.fromhex('00020000') + b'Mac OS X        '
  header += struct.pack('>H', 2)  # two entries: Finder info (9), resource fork (2)
  header += struct.pack('>III', 9, 50, 3870) + struct.pack('>III', 2, 3920, 176)
  body = header + bytes(2) + b'ATTR' + name.encode('utf-8')[:64]
  return body + bytes(4096 - len(body))


DS_STORE = b'\x00\x00\x00\x01Bud1' + bytes(6148 - 8)
THUMBS_DB = bytes.fromhex('d0cf11e0a1b11ae1') + bytes(1024 - 8)
DESKTOP_INI = '[.ShellClassInfo]\r\nIconResource=C:\\Windows\\System32\\imageres.dll,-3\r\n'


def add_junk(root) -> None:
  """What a Mac and Windows leave in a dataset folder: .DS_Store, Thumbs.db and
  desktop.ini in every folder, an AppleDouble `._<name>` beside every image, and
  __MACOSX/ beside the data mirroring the tree with an AppleDouble file for every file
  and folder (as macOS's Archive Utility zips it)."""
  root = str(root)
  tree = []
  for folder, dirs, names in os.walk(root):
    dirs.sort()
    for name in sorted(names):
      if name.lower().endswith(IMAGE_EXTENSIONS):
        data(os.path.join(folder, '._' + name), apple_double(name))
    data(os.path.join(folder, '.DS_Store'), DS_STORE)
    data(os.path.join(folder, 'Thumbs.db'), THUMBS_DB)
    text(os.path.join(folder, 'desktop.ini'), DESKTOP_INI)
  for folder, dirs, names in os.walk(root):
    dirs[:] = sorted(d for d in dirs if d != '__MACOSX')
    for name in dirs + sorted(names):
      rel = _rel(root, os.path.join(folder, name))
      parent, base = posixpath_split(rel)
      tree.append(os.path.join(root, '__MACOSX', parent, '._' + base))
  for path in tree:
    data(path, apple_double(os.path.basename(path)[2:]))


def posixpath_split(rel: str) -> Tuple[str, str]:
  parent, _, base = rel.rpartition('/')
  return parent, base
