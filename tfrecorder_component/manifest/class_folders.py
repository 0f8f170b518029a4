"""Class folders of images read as a classification manifest: `<label>/<image>` or
`<split>/<label>/<image>`, on a local disk or object storage, and the refusal, in one
line, of a folder laid out as a dataset of another kind (its folders named as a
dataset's parts, annotation files for classes, class folders inside class folders).

Length: the one reading of class folders and every refusal of a look-alike, which
name each other's cases.
"""
from __future__ import annotations

import logging
import posixpath
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from tfrecorder_component.errors import ManifestError, UsageError
from tfrecorder_component.manifest.registry import MANIFEST_EXTENSIONS
from tfrecorder_component.manifest.rows import ML_USE_TO_SPLIT
from tfrecorder_component.manifest.tree import (IMAGE_EXTENSIONS, OTHER_PICTURE_EXTENSIONS, Tree,
                                               is_junk)

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
_DATASET_ANNOTATIONS = ('.xml', '.json', '.csv', '.yaml', '.yml', '.jsonl', '.ndjson')
# Files that annotate images: a class folder holding some of these and no image is a
# folder of annotations, not a class.
_ANNOTATION_EXTENSIONS = ('.xml', '.json', '.txt', '.csv', '.yaml', '.yml', '.jsonl', '.ndjson')


LAYOUT_HINT = 'lay images out as <label>/<image> or <split>/<label>/<image>'


def folder_manifest(root: str) -> str:
  """A manifest (CSV text) for a folder laid out as `<split>/<label>/<image>` (split
  folders named train, validation, eval or test, in any case) or `<label>/<image>`;
  image URIs are relative to `root`, a local folder or a prefix on any Beam file system
  (gs://, s3://). Junk (`tree.is_junk`: `__MACOSX/`, `._*`, `.DS_Store`, `Thumbs.db`,
  ...) is never read. Raises ManifestError if the folder holds neither, or is laid out
  as a dataset of another kind (`_refusal`): folders named as a dataset's parts (Pascal
  VOC's JPEGImages/, YOLO's images/ and labels/, KITTI's image_2/, ...), a class folder
  of annotation files, or images in a folder inside a class folder, which are never read
  as classes or left out. Images beside the class folders (or directly in a split
  folder), which have no class, are named in a warning with their count.

  Args:
    root: the image folder: a local path (made absolute) or a gs:// or s3:// prefix,
      listed once.
  """
  return class_folders_csv(Tree(root))


def class_folders_csv(tree: Tree, refuse_lone: bool = True) -> str:
  """`folder_manifest` of a Tree.

  Args:
    tree: the image folder.
    refuse_lone: whether a folder of images without class folders is refused (else it
      is "no images found").
  """
  root = tree.root
  entries = tree.folders()
  if tree.remote and not entries and not tree.names():
    raise UsageError(f'{root} does not exist: no object and no folder of that name')
  if not entries:
    images = tree.images()
    if images and refuse_lone:
      raise ManifestError(lone_folder_refusal(root, len(images)))
    raise ManifestError(f'{root} holds no manifest ({", ".join(MANIFEST_EXTENSIONS)}) and '
                        f'no label folders: {LAYOUT_HINT}')
  by_split = all(e.upper() in ML_USE_TO_SPLIT and e for e in entries)
  loose = tree.images()
  if loose:
    logging.warning('%s: %d images (%s, ...) lie beside the %s folders, in none, so they '
                    'have no %s; they are not converted', root, len(loose), loose[0],
                    'split' if by_split else 'class', 'class' if by_split else 'label')
  folders = ([posixpath.join(entry, label) for entry in entries
              for label in tree.folders(entry)] if by_split else entries)
  if by_split:
    for entry in entries:
      direct = tree.images(entry)
      if direct:
        logging.warning('%s/%s: %d images lie directly in the split folder, in no class '
                        'folder, so they have no label; they are not converted (list '
                        'them with their labels in a manifest to convert them)', root,
                        entry, len(direct))
  listing = {}
  for relative in folders:
    # a file: anything but a folder (a dangling link, a FIFO named as an image fails
    # its row with the reason)
    listing[relative] = (tree.names(relative),
                         [f for f in tree.folders(relative)
                          if tree.holds_images(posixpath.join(relative, f), depth=None)])
  return _class_folders_csv(root, listing, by_split)


def lone_folder_refusal(root: str, count: int) -> str:
  """The one-line refusal of a folder that holds images and no class folder.

  Args:
    root: the folder, as the user gave it or as it was reached.
    count: the images directly in it.
  """
  return (f'{root} holds {count} images and no class folders, so no image has a label '
          f'(a folder of images is not read as one class): {LAYOUT_HINT}, one folder a '
          'class, or give a manifest naming each image\'s label')


def _class_folders_csv(root: str, listing: Dict[str, Tuple[Sequence[str], Sequence[str]]],
                       by_split: bool) -> str:
  """The manifest of class folders (`listing` as `_refusal` takes it, in the order to
  write), or ManifestError: a layout `_refusal` names, or no image."""
  refused = _refusal(root, listing)
  if refused:
    raise ManifestError(refused)
  lines = ['split,image_uri,label']
  others: List[str] = []
  for relative, (names, _) in listing.items():
    split, label = relative.split('/') if by_split else ('', relative)
    for name in names:
      if name.lower().endswith(IMAGE_EXTENSIONS) and not is_junk(name):
        lines.append(','.join(csv_field(v) for v in
                              (split.upper(), posixpath.join(relative, name), label)))
      elif name.lower().endswith(OTHER_PICTURE_EXTENSIONS) and not is_junk(name):
        others.append(posixpath.join(relative, name))
  if others:
    kinds = sorted({posixpath.splitext(o)[1].lower() for o in others})
    logging.warning('%s: %d files in the class folders (%s, ...) are %s files, no raster '
                    'image TensorFlow decodes, and are not converted; export them as PNG or '
                    'JPEG to convert them', root, len(others), others[0], ', '.join(kinds))
  if len(lines) == 1:
    raise ManifestError(f'no images ({", ".join(IMAGE_EXTENSIONS)}) found under {root}')
  return '\n'.join(lines) + '\n'


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
    return _layout_refusal(root, {c.lower() for c in classes}, parts, listing)
  for relative, (names, nested) in listing.items():
    names = [n for n in names if not is_junk(n)]  # junk and hidden files: not the user's data
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


def _layout_refusal(root: str, names: Iterable[str], parts: List[str],
                    listing: Optional[Dict[str, Tuple[Sequence[str], Sequence[str]]]] = None
                    ) -> str:
  """The one-line refusal of an image folder whose class folders `parts` are named as a
  dataset's parts; `names`: all its class folders' names, in lower case."""
  names = set(names)
  found = ', '.join(f'{p}/' for p in parts)

  def layout(kind: str, advice: str) -> str:
    return f'{root} holds {found}: {kind}, not class folders; {advice}'

  if names & {'jpegimages', 'imagesets', 'segmentationclass', 'segmentationobject'}:
    if 'annotations' in names and 'jpegimages' in names:
      # reached only when Annotations/ holds no XML (`discover._voc` reads the others)
      return layout('a Pascal VOC dataset whose Annotations/ holds no XML file', 'put its '
                    'annotation XMLs in Annotations/, or convert a manifest of its images '
                    'and labels instead')
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
    folder = given.get('annotations', 'annotations')
    readable = [n for n in (listing or {}).get(folder, ((), ()))[0]
                if n.lower().endswith(('.xml', '.json'))]
    if not readable:  # lists, masks or MATLAB files: no annotation file to convert
      return layout('a dataset of images and annotations', f'its {folder}/ holds no '
                    'annotation file this tool reads (Pascal VOC XML, COCO or LabelMe '
                    'JSON); write a manifest naming each image\'s label (see the formats '
                    'guide)')
    return layout('a dataset of annotation files and images', 'convert its annotations '
                  f'(`tfrecorder-component convert {root}/{folder} OUT --image-root '
                  f'{root}/{given.get("images", "images")}`)')
  return (f'{root} holds {found}, which name a dataset\'s parts, not classes; convert its '
          'annotation file, or write a manifest naming each image\'s label')


def csv_field(value: str) -> str:
  """A CSV field for `value`, quoted where it holds a comma, a quote or a line break.

  Args:
    value: the field's text.
  """
  if any(c in value for c in ',"\n\r'):
    return '"' + value.replace('"', '""') + '"'
  return value
