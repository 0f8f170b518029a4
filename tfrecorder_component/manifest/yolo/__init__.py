"""Ultralytics YOLO datasets: a `data.yaml` naming split folders (or image lists) and
the class names; each image's objects in a `.txt` beside it under `labels/`.

The rules are Ultralytics' own (`check_det_dataset`, `img2label_paths`,
`verify_image_label` in ultralytics/data/utils.py):

- `path` is the dataset root: relative to the yaml's folder (`image_root` when given),
  the yaml's folder when absent; a local `path` that does not exist (a yaml written on
  another machine) falls back to the yaml's folder, with a warning.
- `train`, `val` (else `validation`, else `valid`) and `test`, in the order the yaml
  lists them, become the splits 'train', 'eval' and 'test'; one absent or empty is
  skipped. Each is a folder (its images found at any depth by extension, hidden files
  skipped), a `.txt` list of image paths (relative ones relative to the list's folder),
  an image, or a list of those; its images are sorted by path. A missing `../x` is
  retried as `x` under the root (Roboflow's `train: ../train/images`). A split naming
  nothing that exists is a ManifestError.
- `names` is a list or a {class id: name} dict; `nc` alone names the classes class_0,
  class_1, ...
- An image's label file is its path with the last `/images/` made `/labels/` and its
  extension `.txt` (beside the image when the path has no `/images/`). No label file,
  or an empty one: the image has no objects. A label file without an image is not read
  (a warning counts them).
- A line is `class cx cy w h` (a box) or `class x1 y1 x2 y2 x3 y3 ...` (a polygon: its
  bounding box, and with 'masks' its mask); with `kpt_shape: [K, 2 | 3]` in the yaml,
  `class cx cy w h` and K points `x y [v]` (with 'keypoints' the points, named by
  `kpt_names` or '0', '1', ...; 2-d points are labelled and visible, 2, as Ultralytics
  counts every point of non-negative coordinates). `yolo_obb` lines are
  `class x1 y1 x2 y2 x3 y3 x4 y4`: the axis-aligned box enclosing the corners, which are
  kept. Everything is normalised to [0, 1]; Ultralytics' tolerance of 0.01 either side
  holds (the record step clips boxes that reach past the image).
- A line that does not parse, a class id `names` lacks, or coordinates outside [-0.01,
  1.01] fail the image (`bad_row`, naming the label file and line). Images are not
  opened here: a listed image that does not exist fails when its record is built.

Local datasets are listed with os.walk; gs:// and s3:// ones with one object listing a
folder, their label files read through `files`. A line of an image list that names no
image, and a bad label line, are named by their number, never quoted (a list or label
file may be any file a path leads to). With the run confined (`confine_to`), a split
entry or `path:` outside the roots fails as one `outside_root` row, never listed; an
image outside them, or whose label file leads out, fails as `outside_root` unread. Darknet's `obj.data` layout, which
predates data.yaml, is `parse_darknet`'s.
"""
from __future__ import annotations

import re

from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.yolo.darknet import parse_darknet
from tfrecorder_component.manifest.yolo.data_yaml import parse, parse_obb, sniff
from tfrecorder_component.manifest.yolo.lines import TOLERANCE
from tfrecorder_component.manifest.yolo.paths import IMG_FORMATS, img2label_path
from tfrecorder_component.manifest.yolo.folders import count_images, label_folders, objects_from


def _data_yaml_sample(label_line: str) -> FormatSample:
  """The smallest Ultralytics dataset: a data.yaml, one image and its label file's line."""
  return FormatSample('data.yaml', 'train: images/train\nnames: [cat]\n',
                      others=(('images/train/a.jpg', ''), ('labels/train/a.txt', label_line)))


FORMAT = ManifestFormat(
    'yolo', ('.yaml', '.yml'), sniff=sniff, parse=parse, one_row_an_image=True,
    annotations=('masks', 'keypoints'), rows=count_images, objects_from=objects_from,
    reads_files=True,
    title='Ultralytics YOLO data.yaml',
    sample=_data_yaml_sample('0 0.5 0.5 0.2 0.2\n'),
    sniff_rank=90)


OBB_FORMAT = ManifestFormat(
    'yolo_obb', (), sniff=lambda head: False, parse=parse_obb, one_row_an_image=True,
    objects_from=objects_from, reads_files=True,
    title='Ultralytics YOLO oriented boxes (only ever named: its files look like a polygon '
          "dataset's)",
    sample=_data_yaml_sample('0 0.1 0.1 0.5 0.1 0.5 0.4 0.1 0.4\n'),
    sniff_rank=91)


# Darknet's obj.data (`parse_darknet`).
DARKNET_FORMAT = ManifestFormat(
    'yolo_darknet', ('.data',),
    sniff=lambda head: re.search(r'^\s*classes\s*=', head, re.M) is not None,
    parse=parse_darknet, one_row_an_image=True,
    rows=lambda path, confine=None: count_images(path, darknet=True, confine=confine),
    objects_from=lambda path, image_root=None, confine=None: objects_from(
        path, image_root, 'darknet', confine),
    reads_files=True,
    title='Darknet obj.data',
    sample=FormatSample(
        'obj.data',
        'classes = 1\ntrain = train.txt\nnames = obj.names\n',
        others=(
            ('train.txt', 'a.jpg\n'),
            ('obj.names', 'cat\n'),
            ('a.txt', '0 0.5 0.5 0.2 0.2\n'),
        )),
    sniff_rank=92)

__all__ = ['FORMAT', 'OBB_FORMAT', 'DARKNET_FORMAT', 'IMG_FORMATS', 'TOLERANCE', 'count_images',
           'img2label_path', 'label_folders', 'objects_from', 'parse', 'parse_darknet',
           'parse_obb']
