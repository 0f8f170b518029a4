"""The same bad input in every annotation format: a box reaching past the image (clipped),
one wholly outside it (dropped), both listed in box_issues.jsonl; an image that is not
there (`missing`); a class the file's own class list lacks, where the format has one.
Each converted through the CLI with the format detected (yolo_obb named), nothing lost
silently: every image is a record or an error naming the file, the row and the reason."""
from __future__ import annotations

import json
import os

import pytest

from images import write_image, write_text
from tfrecorder_component.adapters.cli import main

W, H = 40, 20  # a.jpg's size; b.jpg is never written
CLIPPED = (30, 5, 50, 15)   # reaches past the right edge
OUTSIDE = (45, 5, 60, 15)   # wholly right of the image


def _yolo(root):
  names = 'names: [cat]\n'
  write_text(f'{root}/data.yaml', 'train: train.txt\n' + names)
  write_text(f'{root}/train.txt', 'images/a.jpg\nimages/b.jpg\nimages/c.jpg\n')
  # Ultralytics reads up to 0.01 past the image (then clipped); further is no
  # normalised coordinate: the image fails, as Ultralytics refuses it.
  write_text(f'{root}/labels/a.txt', '0 0.9 0.5 0.22 0.5\n')
  write_text(f'{root}/labels/c.txt', '3 0.5 0.5 0.2 0.2\n')
  write_image(f'{root}/images/c.jpg', height=H, width=W)
  return f'{root}/data.yaml', 'images/a.jpg', 'images/b.jpg', ('images/c.jpg', 'the class id is not in')


def _labelme(root):
  for name in 'ab':
    shapes = [{'label': 'cat', 'shape_type': 'rectangle', 'points': [b[:2], b[2:]]}
              for b in (CLIPPED, OUTSIDE)]
    write_text(f'{root}/{name}.json', json.dumps(
        {'shapes': shapes, 'imagePath': f'{name}.jpg', 'imageHeight': H, 'imageWidth': W}))
  return root, 'a.jpg', 'b.jpg', None


def _cvat(root):
  boxes = ''.join(f'<box label="cat" xtl="{b[0]}" ytl="{b[1]}" xbr="{b[2]}" ybr="{b[3]}" '
                  'occluded="0"/>' for b in (CLIPPED, OUTSIDE))
  images = ''.join(f'<image id="{i}" name="{n}.jpg" width="{W}" height="{H}">{boxes}</image>'
                   for i, n in enumerate('ab'))
  images += (f'<image id="2" name="c.jpg" width="{W}" height="{H}"><box label="dog" xtl="1" '
             'ytl="1" xbr="5" ybr="5"/></image>')
  write_image(f'{root}/c.jpg', height=H, width=W)
  write_text(f'{root}/annotations.xml', '<?xml version="1.0"?>\n<annotations><version>1.1'
             '</version><meta><task><labels><label><name>cat</name></label></labels></task>'
             f'</meta>{images}</annotations>')
  return f'{root}/annotations.xml', 'a.jpg', 'b.jpg', ('c.jpg', "'dog'")


def _createml(root):
  def entry(name):
    return {'image': f'{name}.jpg', 'annotations': [
        {'label': 'cat', 'coordinates': {'x': (b[0] + b[2]) / 2, 'y': (b[1] + b[3]) / 2,
                                         'width': b[2] - b[0], 'height': b[3] - b[1]}}
        for b in (CLIPPED, OUTSIDE)]}
  write_text(f'{root}/ml.json', json.dumps([entry('a'), entry('b')]))
  return f'{root}/ml.json', 'a.jpg', 'b.jpg', None


def _label_studio(root):
  def result(b):
    return {'type': 'rectanglelabels', 'original_width': W, 'original_height': H,
            'from_name': 'label', 'to_name': 'image',
            'value': {'x': b[0] / W * 100, 'y': b[1] / H * 100, 'width': (b[2] - b[0]) / W * 100,
                      'height': (b[3] - b[1]) / H * 100, 'rotation': 0,
                      'rectanglelabels': ['cat']}}
  tasks = [{'id': i, 'data': {'image': f'{n}.jpg'},
            'annotations': [{'result': [result(CLIPPED), result(OUTSIDE)]}]}
           for i, n in enumerate('ab')]
  write_text(f'{root}/export.json', json.dumps(tasks))
  return f'{root}/export.json', 'a.jpg', 'b.jpg', None


def _tf_od_csv(root):
  rows = ''.join(f'{n}.jpg,{W},{H},cat,{",".join(map(str, b))}\n'
                 for n in 'ab' for b in (CLIPPED, OUTSIDE))
  write_text(f'{root}/boxes.csv', 'filename,width,height,class,xmin,ymin,xmax,ymax\n' + rows)
  return f'{root}/boxes.csv', 'a.jpg', 'b.jpg', None


def _open_images(root):
  def row(image, mid, b):
    return (f'{image},xclick,{mid},1,{b[0] / W},{b[2] / W},{b[1] / H},{b[3] / H},'
            '0,0,0,0,0\n')
  write_image(f'{root}/c.jpg', height=H, width=W)
  write_text(f'{root}/oidv7-class-descriptions.csv', 'LabelName,DisplayName\n/m/01,cat\n')
  write_text(f'{root}/train-annotations-bbox.csv',
             'ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,'
             'IsTruncated,IsGroupOf,IsDepiction,IsInside\n' +
             ''.join(row(n, '/m/01', b) for n in 'ab' for b in (CLIPPED, OUTSIDE)) +
             row('c', '/m/99', (1, 1, 5, 5)))
  return f'{root}/train-annotations-bbox.csv', 'a.jpg', 'b.jpg', ('c.jpg', '/m/99')


WRITERS = {'yolo': _yolo, 'labelme': _labelme, 'cvat': _cvat, 'createml': _createml,
           'label_studio': _label_studio, 'tf_od_csv': _tf_od_csv,
           'open_images': _open_images}


@pytest.mark.parametrize('fmt', sorted(WRITERS))
def test_bad_input_is_reported_never_lost(tmp_path, fmt):
  root = str(tmp_path / 'data')
  write_image(f'{root}/{"images/" if fmt == "yolo" else ""}a.jpg', height=H, width=W)
  source, present, missing, unknown_class = WRITERS[fmt](root)
  out = str(tmp_path / 'out')
  assert main(['convert', source, out, '--max-error-ratio', '1']) == 0
  with open(os.path.join(out, 'report', 'summary.json'), encoding='utf-8') as f:
    summary = json.load(f)
  with open(os.path.join(out, 'report', 'errors.jsonl'), encoding='utf-8') as f:
    errors = {os.path.basename(e['uri']): e for e in map(json.loads, f)}
  with open(os.path.join(out, 'report', 'box_issues.jsonl'), encoding='utf-8') as f:
    issues = [json.loads(line) for line in f]
  # the missing image: its own error, naming the manifest and its row
  gone = errors.pop(os.path.basename(missing))
  assert gone['reason'] == 'missing' and gone['source'] and gone['row'], gone
  # a class the file's class list lacks fails its image, naming the class
  if unknown_class:
    uri, named = unknown_class
    bad = errors.pop(os.path.basename(uri))
    assert named in bad['message'], bad
  assert errors == {}
  assert summary['records_written'] == 1 and summary['rows_failed'] == 1 + bool(unknown_class)
  # the boxes past the edge: clipped, or dropped when wholly outside; never silently
  got = sorted((i['action'], i['reason']) for i in issues)
  if fmt == 'yolo':
    assert got == [('clipped', 'clipped')]
  else:
    assert got == [('clipped', 'clipped'), ('dropped', 'outside_image')], got
    assert all(os.path.basename(i['uri']) == os.path.basename(present) for i in issues)
  assert summary['objects_written'] == 1
