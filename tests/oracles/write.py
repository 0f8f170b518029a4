"""Writes a detection dataset with Datumaro's or supervision's own writer, from a spec.

Runs with the reference readers' python (scripts/oracles-env), never the product's:

  $(scripts/oracles-env) tests/oracles/write.py --format yolo_ultralytics OUT < spec.json
  $(scripts/oracles-env) tests/oracles/write.py --format cvat --option save_dataset_meta=true ...
  $(scripts/oracles-env) tests/oracles/write.py --writer supervision --format labelme OUT < spec.json

The spec: {"labels": [NAME, ...], "images": [{"name": STEM, "width": W, "height": H,
"split": SUBSET | null, "seed": N, "objects": [{"label": NAME, "box": [x0, y0, x1, y1]
(pixels), "polygon": [x1, y1, x2, y2, ...] (pixels; written as a Polygon instead of a
Bbox)}]}]}. Each image is random RGB pixels of its size (seeded), saved by Datumaro's
exporter in its own layout and file type (JPEG unless the format says otherwise), or
by Pillow as JPEG for supervision's writers (write_supervision says where).
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np


def build(spec):
  import datumaro as dm
  from datumaro.components.annotation import AnnotationType, Bbox, LabelCategories, Polygon
  labels = LabelCategories.from_iterable(spec['labels'])
  index = {name: i for i, name in enumerate(spec['labels'])}
  items = []
  for image in spec['images']:
    rng = np.random.default_rng(image.get('seed', 0))
    pixels = rng.integers(0, 256, size=(image['height'], image['width'], 3), dtype=np.uint8)
    annotations = []
    for n, obj in enumerate(image['objects']):
      if obj.get('polygon'):
        annotations.append(Polygon(obj['polygon'], label=index[obj['label']], id=n + 1,
                                   group=n + 1))
      else:
        x0, y0, x1, y1 = obj['box']
        annotations.append(Bbox(x0, y0, x1 - x0, y1 - y0, label=index[obj['label']],
                                id=n + 1, group=n + 1))
    items.append(dm.DatasetItem(id=image['name'], subset=image.get('split') or 'default',
                                media=dm.Image.from_numpy(pixels, ext='.jpg'),
                                annotations=annotations))
  return dm.Dataset.from_iterable(items, categories={AnnotationType.label: labels},
                                  media_type=dm.Image)


def write_supervision(spec, fmt: str, out: str) -> None:
  """supervision's writer (`as_labelme`, `as_createml`, `as_yolo`, `as_pascal_voc`,
  `as_coco`) of each split's images, written first as JPEGs by Pillow: split by split
  into OUT/<split>/ (images and annotations together, as Roboflow lays them out; YOLO:
  OUT/<split>/images and labels, with OUT/data.yaml; COCO: OUT/<split>/_annotations.coco.json,
  CreateML: OUT/<split>/_annotations.createml.json). Polygons are written as boxes."""
  import os
  import supervision as sv
  from PIL import Image
  classes = list(spec['labels'])
  splits = {}
  for image in spec['images']:
    splits.setdefault(image.get('split') or 'train', []).append(image)
  for split, images in splits.items():
    folder = os.path.join(out, split, 'images' if fmt == 'yolo' else '')
    os.makedirs(folder, exist_ok=True)
    paths, annotations = [], {}
    for image in images:
      rng = np.random.default_rng(image.get('seed', 0))
      pixels = rng.integers(0, 256, size=(image['height'], image['width'], 3), dtype=np.uint8)
      path = os.path.join(folder, image['name'] + '.jpg')
      Image.fromarray(pixels).save(path, 'JPEG')
      boxes = []
      for obj in image['objects']:
        if obj.get('polygon'):
          xs, ys = obj['polygon'][0::2], obj['polygon'][1::2]
          boxes.append([min(xs), min(ys), max(xs), max(ys)])
        else:
          boxes.append(list(obj['box']))
      paths.append(path)
      annotations[path] = sv.Detections(
          xyxy=np.array(boxes, dtype=np.float32).reshape(-1, 4),
          class_id=np.array([classes.index(o['label']) for o in image['objects']],
                            dtype=int))
    dataset = sv.DetectionDataset(classes=classes, images=paths, annotations=annotations)
    where = os.path.join(out, split)
    if fmt == 'labelme':
      dataset.as_labelme(annotations_directory_path=where)
    elif fmt == 'createml':
      dataset.as_createml(annotations_path=os.path.join(where, '_annotations.createml.json'))
    elif fmt == 'coco':
      dataset.as_coco(annotations_path=os.path.join(where, '_annotations.coco.json'))
    elif fmt == 'voc':
      dataset.as_pascal_voc(annotations_directory_path=where)
    elif fmt == 'yolo':
      dataset.as_yolo(annotations_directory_path=os.path.join(where, 'labels'),
                      data_yaml_path=os.path.join(out, 'data.yaml'))
    else:
      raise SystemExit(f'write.py: supervision does not write {fmt}')


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--writer', default='datumaro', choices=('datumaro', 'supervision'))
  parser.add_argument('--format', required=True,
                      help="Datumaro's exporter name, or supervision's format")
  parser.add_argument('--option', action='append', default=[], metavar='NAME=JSON',
                      help="an exporter option, e.g. keep_empty=true")
  parser.add_argument('out')
  args = parser.parse_args(argv)
  options = {k: json.loads(v) for k, v in (o.split('=', 1) for o in args.option)}
  spec = json.load(sys.stdin)
  if args.writer == 'supervision':
    write_supervision(spec, args.format, args.out)
    return 0
  dataset = build(spec)
  dataset.export(args.out, args.format, save_media=True, **options)
  return 0


if __name__ == '__main__':
  sys.exit(main())
