"""Reads a detection dataset with one of the field's own readers and prints what it saw.

Runs with the reference readers' python (scripts/oracles-env), never the product's:

  $(scripts/oracles-env) tests/oracles/read.py --reader datumaro --format yolo DIR > out.json

and prints one JSON document:

  {"reader": ..., "format": ..., "images": {KEY: {"split": "train" | "eval" | "test" |
   other subset name | null, "width": W, "height": H, "objects": [{"label": NAME,
   "box": [xmin, ymin, xmax, ymax], "mask": {"size": [H, W], "counts": RLE} (when the
   reader gives one and --masks), "corners": [x1, y1, ... x4, y4] (oriented boxes)}]}}}

KEY is the image file's name without its extension (Datumaro's item ids drop it, and a
TFRecord has no path), so a dataset's image names must be unique. Boxes and corners are
normalised by the image's real size (its stored pixels, read from the file's header),
as the project normalises them; W and H are that size. Masks are COCO run-length
encodings (pycocotools) at that size. Split names: val / valid / validation -> eval;
Datumaro's "default" subset -> null; readers without splits give null.

Readers and formats (PATH, and --images where the reader needs the image folder):
  pycocotools: coco (PATH the JSON; images default to its folder)
  supervision: yolo (PATH data.yaml; every split it names: train / val / test),
    coco (the JSON), voc (the folder of XMLs; --images), createml (the JSON),
    labelme (the folder of JSONs; images default to it), yolo_obb (as yolo, oriented)
  datumaro: yolo, coco, voc, cvat, open_images, createml (Roboflow's layout),
    tf_detection_api, or any Datumaro format name; PATH what Dataset.import_from takes.
  label-studio-converter: label_studio (PATH the JSON export; --images the folder that
    /data/upload/ URIs are in), through its convert_to_coco, read as COCO.

Hugging Face `datasets` reads a Parquet folder (the `parquet` layout: PATH the folder,
its README.md the card) with `load_dataset(PATH)`, and prints another document:

  {"reader": "datasets", "format": "parquet", "features": the first split's
   Features.to_dict(), "splits": {SPLIT: {"count": N, "rows": [{COLUMN: value}]}}}

each row as `datasets` gives it (python format), bytes as {"$bytes": base64}. Its cache
goes to a temporary folder; with --shared-cache it is datasets' own (HF_HOME's), as a
user's load is, further folders after PATH are loaded in turn in the same process, and
each gives its document on a line of its own, with "cache_files": the Arrow files of
the cache it was read from, by split.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any, Dict, List, Optional

import numpy as np
from PIL import Image

SPLITS = {'train': 'train', 'val': 'eval', 'valid': 'eval', 'validation': 'eval',
          'eval': 'eval', 'test': 'test', 'default': None, '': None}

DATUMARO_FORMATS = {'coco': 'coco_instances', 'voc': 'voc_detection',
                    'createml': 'roboflow_create_ml', 'labelme': 'label_me'}


def split_name(subset: Optional[str]) -> Optional[str]:
  if subset is None:
    return None
  return SPLITS.get(subset.lower(), subset)


def image_key(path: str) -> str:
  return os.path.splitext(os.path.basename(path))[0]


def image_size(path: str):
  with Image.open(path) as image:
    return image.size  # (width, height), stored pixels


class Images:
  """The images seen, by key; a key seen twice is an error."""

  def __init__(self):
    self.images: Dict[str, Dict[str, Any]] = {}

  def add(self, key: str, split: Optional[str], width: int, height: int,
          objects: List[Dict[str, Any]]):
    if key in self.images:
      raise SystemExit(f'read.py: two images named {key!r}: keys must be unique')
    self.images[key] = {'split': split, 'width': width, 'height': height, 'objects': objects}


def normalised_box(x0, y0, x1, y1, width, height) -> List[float]:
  return [float(x0) / width, float(y0) / height, float(x1) / width, float(y1) / height]


def rle_of(mask: np.ndarray) -> Dict[str, Any]:
  from pycocotools import mask as coco_mask
  rle = coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))
  return {'size': [int(v) for v in rle['size']], 'counts': rle['counts'].decode('ascii')}


def rle_json(rle: Dict[str, Any]) -> Dict[str, Any]:
  counts = rle['counts']
  return {'size': [int(v) for v in rle['size']],
          'counts': counts.decode('ascii') if isinstance(counts, bytes) else counts}


# pycocotools

def read_pycocotools(path: str, images_dir: Optional[str], masks: bool) -> Images:
  from pycocotools.coco import COCO
  coco = COCO(path)
  images_dir = images_dir or os.path.dirname(path)
  names = {c['id']: c['name'] for c in coco.loadCats(coco.getCatIds())}
  out = Images()
  for image_id in coco.getImgIds():
    info = coco.loadImgs(image_id)[0]
    width, height = image_size(os.path.join(images_dir, info['file_name']))
    objects = []
    for ann in coco.loadAnns(coco.getAnnIds(imgIds=image_id)):
      x, y, w, h = ann['bbox']
      obj = {'label': names[ann['category_id']],
             'box': normalised_box(x, y, x + w, y + h, width, height)}
      if masks and ann.get('segmentation'):
        obj['mask'] = rle_json(coco.annToRLE(ann))
      objects.append(obj)
    out.add(image_key(info['file_name']), None, width, height, objects)
  return out


# supervision

def _sv_add(out: Images, dataset, split: Optional[str], masks: bool, obb: bool = False):
  from supervision.config import ORIENTED_BOX_COORDINATES
  for image_path in dataset.image_paths:
    width, height = image_size(image_path)
    detections = dataset.annotations[image_path]
    objects = []
    for i in range(len(detections)):
      x0, y0, x1, y1 = detections.xyxy[i]
      obj = {'label': dataset.classes[int(detections.class_id[i])],
             'box': normalised_box(x0, y0, x1, y1, width, height)}
      if masks and detections.mask is not None:
        obj['mask'] = rle_of(detections.mask[i])
      if obb:
        corners = detections.data[ORIENTED_BOX_COORDINATES][i]
        obj['corners'] = [float(v) / (width if j % 2 == 0 else height)
                          for j, v in enumerate(np.asarray(corners).reshape(-1))]
      objects.append(obj)
    out.add(image_key(image_path), split, width, height, objects)


def read_supervision(fmt: str, path: str, images_dir: Optional[str], masks: bool) -> Images:
  import supervision as sv
  out = Images()
  if fmt in ('yolo', 'yolo_obb'):
    import yaml
    with open(path, encoding='utf-8') as f:
      config = yaml.safe_load(f)
    root = os.path.join(os.path.dirname(path), config.get('path') or '')
    for key in ('train', 'val', 'test'):
      if not config.get(key):
        continue
      images = os.path.normpath(os.path.join(root, config[key]))
      parts = images.split(os.sep)
      labels = os.sep.join('labels' if p == 'images' else p for p in parts)
      dataset = sv.DetectionDataset.from_yolo(images, labels, path, force_masks=masks,
                                              is_obb=fmt == 'yolo_obb')
      _sv_add(out, dataset, split_name(key), masks, obb=fmt == 'yolo_obb')
  elif fmt == 'coco':
    dataset = sv.DetectionDataset.from_coco(images_dir or os.path.dirname(path), path,
                                            force_masks=masks)
    _sv_add(out, dataset, None, masks)
  elif fmt == 'voc':
    if not images_dir:
      raise SystemExit('read.py: supervision voc needs --images')
    dataset = sv.DetectionDataset.from_pascal_voc(images_dir, path, force_masks=masks)
    _sv_add(out, dataset, None, masks)
  elif fmt == 'createml':
    dataset = sv.DetectionDataset.from_createml(images_dir or os.path.dirname(path), path)
    _sv_add(out, dataset, None, False)
  elif fmt == 'labelme':
    dataset = sv.DetectionDataset.from_labelme(images_dir or path, path, force_masks=masks)
    _sv_add(out, dataset, None, masks)
  else:
    raise SystemExit(f'read.py: supervision does not read {fmt}')
  return out


# label-studio-converter (Label Studio's own export converter)

LS_TAGS = {'rectanglelabels': 'RectangleLabels', 'polygonlabels': 'PolygonLabels',
           'labels': 'Labels'}


def label_studio_config(tasks) -> str:
  """A labelling config naming every control the results use, with their labels (the
  converter takes its tags and classes from the project's config)."""
  controls: Dict[tuple, Dict[str, None]] = {}
  images = set()
  for task in tasks:
    for annotation in task.get('annotations') or []:
      for result in annotation.get('result') or []:
        kind = result.get('type')
        if kind not in LS_TAGS:
          continue
        key = (result['from_name'], result['to_name'], kind)
        controls.setdefault(key, {}).update(dict.fromkeys(result['value'].get(kind, [])))
        images.add(result['to_name'])
  parts = [f'<Image name="{n}" value="${n}"/>' for n in sorted(images)]
  for (name, to_name, kind), labels in controls.items():
    values = ''.join(f'<Label value="{v}"/>' for v in labels)
    parts.append(f'<{LS_TAGS[kind]} name="{name}" toName="{to_name}">{values}'
                 f'</{LS_TAGS[kind]}>')
  return '<View>' + ''.join(parts) + '</View>'


def read_label_studio(path: str, upload_dir: Optional[str], masks: bool) -> Images:
  """Label Studio's JSON export through the converter's convert_to_coco (images under
  /data/upload/ are taken from `upload_dir`), then read as COCO."""
  import tempfile
  from label_studio_converter import Converter
  with open(path, encoding='utf-8') as f:
    tasks = json.load(f)
  with tempfile.TemporaryDirectory() as out:
    converter = Converter(label_studio_config(tasks), os.path.dirname(path),
                          upload_dir=upload_dir, download_resources=True)
    converter.convert_to_coco(path, out, output_image_dir=os.path.join(out, 'images'),
                              is_dir=False)
    return read_pycocotools(os.path.join(out, 'result.json'), out, masks)


# Datumaro

def _dm_mask(ann, width: int, height: int) -> Optional[Dict[str, Any]]:
  from datumaro.components.annotation import AnnotationType
  from pycocotools import mask as coco_mask
  if ann.type == AnnotationType.polygon:
    rles = coco_mask.frPyObjects([list(map(float, ann.points))], height, width)
    return rle_json(coco_mask.merge(rles))
  if ann.type == AnnotationType.mask:
    rle = getattr(ann, 'rle', None)
    if isinstance(rle, dict):
      if isinstance(rle.get('counts'), list):
        rle = coco_mask.frPyObjects(rle, *rle['size'])
      return rle_json(rle)
    return rle_of(ann.image)
  return None


def _merge_rles(rles: List[Dict[str, Any]]) -> Dict[str, Any]:
  from pycocotools import mask as coco_mask
  if len(rles) == 1:
    return rles[0]
  merged = coco_mask.merge([{'size': r['size'], 'counts': r['counts'].encode('ascii')}
                            for r in rles])
  return rle_json(merged)


def read_datumaro(fmt: str, path: str, masks: bool) -> Images:
  import datumaro as dm
  from datumaro.components.annotation import AnnotationType
  name = DATUMARO_FORMATS.get(fmt, fmt)
  if name == 'yolo' and os.path.isfile(path):
    path = os.path.dirname(path)  # the importer takes the folder of data.yaml
  dataset = dm.Dataset.import_from(path, name)
  labels = dataset.categories()[AnnotationType.label]
  shapes = (AnnotationType.bbox, AnnotationType.polygon, AnnotationType.mask,
            AnnotationType.rotated_bbox)
  out = Images()
  for item in dataset:
    media = item.media
    if getattr(media, 'path', None) and os.path.exists(media.path):
      key = image_key(media.path)
      width, height = image_size(media.path)
    else:  # an image in a record (tf_detection_api): its size as the record gives it
      key = item.id.split('/')[-1]
      height, width = media.size
    # COCO: a Bbox and its Polygon parts or RLE share the annotation's id (one object);
    # every other format: one annotation, one object.
    groups: Dict[Any, List[Any]] = {}
    for index, ann in enumerate(item.annotations):
      if ann.type not in shapes:
        continue
      key_of = ann.id if name.startswith('coco') else index
      groups.setdefault(key_of, []).append(ann)
    objects = []
    for anns in groups.values():
      boxes = [a for a in anns if a.type in (AnnotationType.bbox, AnnotationType.rotated_bbox)]
      regions = [a for a in anns if a.type in (AnnotationType.polygon, AnnotationType.mask)]
      first = (boxes or regions)[0]
      if boxes:
        x, y, w, h = first.get_bbox()
      else:  # the box enclosing every part
        parts = [a.get_bbox() for a in regions]
        x0 = min(p[0] for p in parts)
        y0 = min(p[1] for p in parts)
        x1 = max(p[0] + p[2] for p in parts)
        y1 = max(p[1] + p[3] for p in parts)
        x, y, w, h = x0, y0, x1 - x0, y1 - y0
      obj = {'label': labels[first.label].name if first.label is not None else None,
             'box': normalised_box(x, y, x + w, y + h, width, height)}
      if boxes and first.type == AnnotationType.rotated_bbox:
        obj['corners'] = [float(v) / (width if j % 2 == 0 else height)
                          for j, v in enumerate(np.asarray(first.as_polygon()).reshape(-1))]
      if masks and regions:
        obj['mask'] = _merge_rles([_dm_mask(a, width, height) for a in regions])
      objects.append(obj)
    out.add(key, split_name(item.subset), width, height, objects)
  return out


def _jsonable(value: Any) -> Any:
  if isinstance(value, bytes):
    import base64  # pylint: disable=g-import-not-at-top
    return {'$bytes': base64.b64encode(value).decode('ascii')}
  if isinstance(value, list):
    return [_jsonable(v) for v in value]
  if isinstance(value, dict):
    return {k: _jsonable(v) for k, v in value.items()}
  return value


def _hf_read(loaded) -> Dict[str, Any]:
  splits = {name: {'count': len(ds), 'rows': [_jsonable(row) for row in ds]}
            for name, ds in loaded.items()}
  features = next(iter(loaded.values())).features.to_dict() if loaded else {}
  return {'features': features, 'splits': splits}


def read_hf_parquet(path: str) -> Dict[str, Any]:
  """What `datasets.load_dataset(path)` gives: the splits its card names, every row. The
  cache it writes goes to a temporary folder, never the Hub (offline)."""
  import tempfile  # pylint: disable=g-import-not-at-top
  os.environ.setdefault('HF_HUB_OFFLINE', '1')
  os.environ.setdefault('HF_DATASETS_DISABLE_PROGRESS_BARS', '1')
  import datasets  # pylint: disable=g-import-not-at-top
  with tempfile.TemporaryDirectory() as cache:
    return _hf_read(datasets.load_dataset(path, cache_dir=cache))


def read_hf_parquet_shared(path: str) -> Dict[str, Any]:
  """What `datasets.load_dataset(path)` with no other argument gives, in datasets' own
  cache (HF_HOME's, kept), as read_hf_parquet's document with 'cache_files' ({split:
  the Arrow files of the cache read}); offline."""
  os.environ.setdefault('HF_HUB_OFFLINE', '1')
  os.environ.setdefault('HF_DATASETS_DISABLE_PROGRESS_BARS', '1')
  import datasets  # pylint: disable=g-import-not-at-top
  loaded = datasets.load_dataset(path)
  cache_files = {name: [f['filename'] for f in ds.cache_files] for name, ds in loaded.items()}
  return {**_hf_read(loaded), 'cache_files': cache_files}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--reader', required=True, choices=(
      'supervision', 'datumaro', 'pycocotools', 'label-studio-converter', 'datasets'))
  parser.add_argument('--format', required=True)
  parser.add_argument('--images', help='the image folder, where the reader needs it')
  parser.add_argument('--masks', action='store_true', help='masks too, as COCO RLEs')
  parser.add_argument('--shared-cache', action='store_true',
                      help="datasets: its own cache (HF_HOME's), PATH and MORE in turn")
  parser.add_argument('path')
  parser.add_argument('more', nargs='*', help='datasets --shared-cache: folders loaded next')
  args = parser.parse_args(argv)
  if args.more and not args.shared_cache:
    raise SystemExit('read.py: several folders only with --reader datasets --shared-cache')
  if args.reader == 'datasets':
    if args.format != 'parquet':
      raise SystemExit('read.py: datasets reads parquet only')
    for path in [args.path, *args.more]:
      with contextlib.redirect_stdout(sys.stderr):
        read = (read_hf_parquet_shared if args.shared_cache else read_hf_parquet)(path)
      json.dump({'reader': args.reader, 'format': args.format, **read}, sys.stdout,
                sort_keys=True)
      sys.stdout.write('\n')
      sys.stdout.flush()
    return 0
  with contextlib.redirect_stdout(sys.stderr):  # what a reader prints is not the result
    if args.reader == 'pycocotools':
      if args.format != 'coco':
        raise SystemExit('read.py: pycocotools reads coco only')
      images = read_pycocotools(args.path, args.images, args.masks)
    elif args.reader == 'label-studio-converter':
      if args.format != 'label_studio':
        raise SystemExit('read.py: label-studio-converter reads label_studio only')
      images = read_label_studio(args.path, args.images, args.masks)
    elif args.reader == 'supervision':
      images = read_supervision(args.format, args.path, args.images, args.masks)
    else:
      images = read_datumaro(args.format, args.path, args.masks)
  json.dump({'reader': args.reader, 'format': args.format, 'images': images.images},
            sys.stdout, sort_keys=True)
  sys.stdout.write('\n')
  return 0


if __name__ == '__main__':
  sys.exit(main())
