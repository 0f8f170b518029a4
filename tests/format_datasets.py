"""One small detection dataset written in the layouts annotation tools export (YOLO with
data.yaml, LabelMe, CVAT for images 1.1), and what every converter of it must write:
{image file name: (split, [(class, xmin, ymin, xmax, ymax) normalised])}."""
from __future__ import annotations

import json
import os
from typing import Dict, List, Tuple

from images import write_image, write_text

NAMES = ('cat', 'dog', 'traffic light')
# image: (split, width, height, [(class index, xmin, ymin, xmax, ymax) in pixels])
IMAGES: Dict[str, Tuple[str, int, int, List[Tuple[int, float, float, float, float]]]] = {
    'a.jpg': ('train', 64, 48, [(0, 4, 6, 36, 30), (1, 10.5, 12, 60, 47)]),
    'b.jpg': ('train', 40, 80, [(2, 0, 0, 40, 80)]),
    'c.jpg': ('train', 50, 50, []),  # no objects
    'd.jpg': ('val', 32, 32, [(1, 8, 8, 24, 16), (1, 1, 2, 3, 4), (0, 16, 16, 32, 32)]),
    'e.jpg': ('val', 30, 20, []),  # no objects
}
SPLIT = {'train': 'train', 'val': 'eval'}

Expected = Dict[str, Tuple[str, List[Tuple[str, float, float, float, float]]]]


def expected() -> Expected:
  return {name: (SPLIT[split], [(NAMES[c], x0 / w, y0 / h, x1 / w, y1 / h)
                                for c, x0, y0, x1, y1 in boxes])
          for name, (split, w, h, boxes) in IMAGES.items()}


def _photo(path: str, width: int, height: int, seed: int) -> None:
  write_image(path, 'JPEG', 'RGB', height, width, seed=seed)


def write_yolo(root: str) -> str:
  """Ultralytics layout: data.yaml, images/<split>/, labels/<split>/ (c.jpg's label file
  is empty, e.jpg has none). Returns data.yaml's path."""
  for seed, (name, (split, w, h, boxes)) in enumerate(IMAGES.items()):
    _photo(os.path.join(root, 'images', split, name), w, h, seed)
    if name == 'e.jpg':
      continue
    lines = ''.join(f'{c} {(x0 + x1) / 2 / w:.6f} {(y0 + y1) / 2 / h:.6f} '
                    f'{(x1 - x0) / w:.6f} {(y1 - y0) / h:.6f}\n' for c, x0, y0, x1, y1 in boxes)
    write_text(os.path.join(root, 'labels', split, name[:-4] + '.txt'), lines)
  names = ''.join(f'  {i}: {n}\n' for i, n in enumerate(NAMES))
  return write_text(os.path.join(root, 'data.yaml'),
                    f'path: .\ntrain: images/train\nval: images/val\nnames:\n{names}')


def write_labelme(root: str) -> str:
  """LabelMe: <split>/<image> with <image stem>.json beside it (rectangles, and d.jpg's
  second dog as a polygon). Returns the root."""
  for seed, (name, (split, w, h, boxes)) in enumerate(IMAGES.items()):
    _photo(os.path.join(root, split, name), w, h, seed)
    shapes = []
    for i, (c, x0, y0, x1, y1) in enumerate(boxes):
      if name == 'd.jpg' and i == 1:
        shapes.append({'label': NAMES[c], 'shape_type': 'polygon', 'group_id': None,
                       'flags': {}, 'points': [[x0, y0], [x1, y0 + 1], [x1, y1], [x0 + 1, y1]]})
      else:  # corners in the order a user drags them: bottom right first
        shapes.append({'label': NAMES[c], 'shape_type': 'rectangle', 'group_id': None,
                       'flags': {}, 'points': [[x1, y1], [x0, y0]]})
    doc = {'version': '5.4.1', 'flags': {}, 'shapes': shapes, 'imagePath': name,
           'imageData': None, 'imageHeight': h, 'imageWidth': w}
    write_text(os.path.join(root, split, name[:-4] + '.json'), json.dumps(doc, indent=2))
  return root


def write_cvat(root: str) -> str:
  """CVAT for images 1.1: annotations.xml (subsets Train / Validation) and images/.
  Returns annotations.xml's path."""
  labels = ''.join(f'<label><name>{n}</name><attributes></attributes></label>' for n in NAMES)
  parts = ['<?xml version="1.0" encoding="utf-8"?>\n<annotations>\n<version>1.1</version>\n'
           f'<meta><task><name>t</name><labels>{labels}</labels></task></meta>\n']
  subset = {'train': 'Train', 'val': 'Validation'}
  for seed, (name, (split, w, h, boxes)) in enumerate(IMAGES.items()):
    _photo(os.path.join(root, 'images', name), w, h, seed)
    shapes = ''.join(
        f'<box label="{NAMES[c]}" occluded="0" source="manual" xtl="{x0}" ytl="{y0}" '
        f'xbr="{x1}" ybr="{y1}" z_order="0"></box>' for c, x0, y0, x1, y1 in boxes)
    parts.append(f'<image id="{seed}" name="{name}" subset="{subset[split]}" width="{w}" '
                 f'height="{h}">{shapes}</image>\n')
  parts.append('</annotations>\n')
  return write_text(os.path.join(root, 'annotations.xml'), ''.join(parts))


def read_back(out: str, splits=('train', 'eval')) -> Expected:
  """What a conversion wrote, in `expected()`'s shape (records keyed by file name)."""
  from records import by_source_id, feature  # pylint: disable=g-import-not-at-top
  got = {}
  for uri, (split, example) in by_source_id(out, splits).items():
    boxes = list(zip(*(feature(example, f'image/object/{k}') for k in (
        'class/text', 'bbox/xmin', 'bbox/ymin', 'bbox/xmax', 'bbox/ymax'))))
    got[os.path.basename(uri)] = (split, [(t.decode(), *v) for t, *v in boxes])
  return got


def assert_matches(got: Expected, want: Expected, tolerance: float = 1e-4) -> None:
  assert sorted(got) == sorted(want), (sorted(got), sorted(want))
  for name, (split, boxes) in want.items():
    got_split, got_boxes = got[name]
    assert got_split == split, (name, got_split, split)
    assert len(got_boxes) == len(boxes), (name, got_boxes, boxes)
    for (label, *box), (got_label, *got_box) in zip(boxes, got_boxes):
      assert got_label == label, (name, got_label, label)
      assert max(abs(a - b) for a, b in zip(box, got_box)) <= tolerance, (name, got_box, box)
