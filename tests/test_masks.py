"""COCO instance masks and keypoints (include_masks, include_keypoints), end to end.

The photos are scikit-learn's bundled sample images (china.jpg, flower.jpg; 640x427).
Every mask is checked against pycocotools' own raster of its annotation (and, for the
run-length encoded ones, against the array they were encoded from), polygons past the
image's edges byte for byte against the oracles' environment's pycocotools; keypoints
against the annotated pixels, normalised by hand.
"""
import json
import os
import random
import shutil
import subprocess
import time

import numpy as np
import pytest
import sklearn.datasets
import tensorflow as tf
from PIL import Image
from pycocotools import mask as coco_mask

from records import by_coco_file_name, by_source_id, decoded_masks, feature
from tfrecord_digest import read_records
import tfrecorder_component as trc
from tfrecorder_component.errors import ManifestError
from tfrecorder_component.images import masks as masks_lib
from tfrecorder_component.record.labels import read_label_map
from tfrecorder_component.manifest.rows import InstanceMask

PHOTOS = os.path.join(os.path.dirname(sklearn.datasets.__file__), 'images')
W, H = 640, 427
SPLITS = ['train', 'eval', 'test']
ONE_SPLIT = {'train': 1}

# Non-contiguous COCO category ids; 'tree' lists no keypoints, 'pagoda' fewer than
# 'flower', so every object is padded to K = 4 keypoints.
CATEGORIES = [
    {'id': 3, 'name': 'pagoda', 'supercategory': 'building', 'keypoints': ['top', 'base']},
    {'id': 17, 'name': 'tree', 'supercategory': 'plant'},
    {'id': 90, 'name': 'flower', 'supercategory': 'plant',
     'keypoints': ['centre', 'left_petal', 'right_petal', 'stem']},
]
K = 4
LABELS = {c['id']: c['name'] for c in CATEGORIES}
KEYPOINT_NAMES = {c['name']: tuple(c.get('keypoints', ())) for c in CATEGORIES}
EXPECTED_IDS = {c['name']: c['id'] for c in CATEGORIES}  # COCO's category ids, kept

PAGODA_POLYGON = [262, 250, 300, 120, 327, 54, 354, 120, 392, 250]  # on china.jpg


@pytest.fixture(scope='module')
def photos(tmp_path_factory):
  d = tmp_path_factory.mktemp('photos')
  for name in ('china.jpg', 'flower.jpg'):
    shutil.copy(os.path.join(PHOTOS, name), d / name)
  return d


# --- reference masks ----------------------------------------------------------------


def uncompressed_rle(mask):
  """COCO's uncompressed RLE counts of a 0/1 array: column-major runs, zeros first."""
  flat = np.asarray(mask, dtype=np.uint8).flatten(order='F')
  change = np.flatnonzero(np.diff(flat)) + 1
  bounds = np.concatenate([[0], change, [flat.size]])
  runs = np.diff(bounds).tolist()
  return ([0] + runs) if flat[0] else runs


def compressed_rle(mask):
  rle = coco_mask.encode(np.asfortranarray(np.asarray(mask, dtype=np.uint8)))
  return {'size': [int(v) for v in rle['size']], 'counts': rle['counts'].decode('ascii')}


def reference_raster(segmentation, height=H, width=W):
  """pycocotools' own raster of a COCO `segmentation` (0/1, height x width)."""
  if isinstance(segmentation, list):
    rle = coco_mask.merge(coco_mask.frPyObjects(segmentation, height, width))
  elif isinstance(segmentation['counts'], list):
    rle = coco_mask.frPyObjects(segmentation, height, width)
  else:
    rle = {'size': segmentation['size'], 'counts': segmentation['counts'].encode('ascii')}
  return coco_mask.decode(rle).astype(np.uint8)


def iou(a, b):
  a, b = np.asarray(a) > 0, np.asarray(b) > 0
  union = (a | b).sum()
  assert union, 'both masks are empty'
  return (a & b).sum() / union


def bbox_of(mask):
  """[x, y, width, height] of a mask's pixels."""
  ys, xs = np.nonzero(mask)
  return [int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1),
          int(ys.max() - ys.min() + 1)]


def tree_mask():
  """An irregular (not symmetric, so a transposed mask would not match) crowd region."""
  y, x = np.mgrid[0:H, 0:W]
  return ((y >= 205) & (x < 170) & (x < (y - 205) * 0.8 + 20)).astype(np.uint8)


def flower_crowd_mask():
  y, x = np.mgrid[0:H, 0:W]
  return (((x - 80) ** 2 + (y - 330) ** 2 < 30 ** 2) | ((x >= 60) & (x < 75) & (y >= 355)
                                                       & (y < 420))).astype(np.uint8)


def headline_coco():
  """(coco dict, {annotation id: what its object must be in a record})."""
  tree, crowd = tree_mask(), flower_crowd_mask()
  annotations = [
      # a polygon with two keypoints: labelled-visible and labelled-occluded
      {'id': 100, 'image_id': 7, 'category_id': 3, 'segmentation': [PAGODA_POLYGON],
       'keypoints': [327, 56, 2, 327, 248, 1], 'iscrowd': 0},
      # a crowd, uncompressed RLE, of a category with no keypoints
      {'id': 101, 'image_id': 7, 'category_id': 17, 'iscrowd': 1,
       'segmentation': {'size': [H, W], 'counts': uncompressed_rle(tree)}},
      # two polygons, one object; keypoints v=2, v=1, unlabelled (with coordinates), v=2
      {'id': 102, 'image_id': 8, 'category_id': 90, 'iscrowd': 0,
       'segmentation': [[200, 60, 330, 40, 470, 90, 460, 260, 300, 300, 180, 220],
                        [300, 300, 330, 300, 335, 410, 305, 410]],
       'keypoints': [315, 190, 2, 200, 180, 1, 420, 180, 0, 318, 380, 2]},
      # a crowd, compressed RLE (COCO's string), with no "keypoints" field
      {'id': 103, 'image_id': 8, 'category_id': 90, 'iscrowd': 1,
       'segmentation': compressed_rle(crowd)},
  ]
  expected = {}
  for a in annotations:
    raster = reference_raster(a['segmentation'])
    a['bbox'] = bbox_of(raster)
    a['area'] = float(raster.sum())
    label = LABELS[a['category_id']]
    names = KEYPOINT_NAMES[label]
    triples = list(zip(*[iter(a.get('keypoints', [0, 0, 0] * len(names)))] * 3))
    points = [(x / W, y / H, v) if v else (0.0, 0.0, 0) for x, y, v in triples]
    points += [(0.0, 0.0, 0)] * (K - len(names))
    expected[a['id']] = dict(
        image={7: 'china.jpg', 8: 'flower.jpg'}[a['image_id']], label=label,
        bbox=a['bbox'], mask=raster, crowd=a['iscrowd'], points=points,
        rle=raster if isinstance(a['segmentation'], dict) else None,
        names=list(names) + [''] * (K - len(names)))
  # the RLE masks are exactly the arrays they were encoded from
  np.testing.assert_array_equal(expected[101]['mask'], tree)
  np.testing.assert_array_equal(expected[103]['mask'], crowd)
  coco = {'images': [{'id': 7, 'file_name': 'china.jpg', 'width': W, 'height': H},
                     {'id': 8, 'file_name': 'flower.jpg', 'width': W, 'height': H}],
          'annotations': annotations, 'categories': CATEGORIES}
  return coco, expected


def write_json(path, data):
  path.write_text(json.dumps(data))
  return str(path)


def objects(example, k=K):
  """Per object of a record: label, class id, box, is_crowd, mask, keypoints (k triples,
  k the file's longest keypoint list), num, keypoint names."""
  labels = [t.decode() for t in feature(example, 'image/object/class/text')]
  n = len(labels)
  boxes = list(zip(*(feature(example, f'image/object/bbox/{k}')
                     for k in ('xmin', 'ymin', 'xmax', 'ymax'))))
  masks = decoded_masks(example)
  xs, ys = (feature(example, f'image/object/keypoint/{k}') for k in ('x', 'y'))
  vis = feature(example, 'image/object/keypoint/visibility')
  texts = [t.decode() for t in feature(example, 'image/object/keypoint/text')]
  nums = feature(example, 'image/object/keypoint/num')
  assert len(boxes) == len(masks) == len(nums) == n
  assert len(xs) == len(ys) == len(vis) == len(texts) == n * k
  points = list(zip(xs, ys, vis))
  return [dict(label=labels[i], class_id=feature(example, 'image/object/class/label')[i],
               box=boxes[i], crowd=feature(example, 'image/object/is_crowd')[i],
               mask=masks[i], points=points[i * k:(i + 1) * k], num=nums[i],
               names=texts[i * k:(i + 1) * k]) for i in range(n)]


def match(obj, candidates, atol=1e-3):
  """The annotation id among `candidates` ({id: expected}) of a written object."""
  found = [i for i, e in candidates.items() if e['label'] == obj['label'] and np.allclose(
      obj['box'], _normalised_box(e['bbox']), atol=atol)]
  assert len(found) == 1, (obj['label'], obj['box'], found)
  return found[0]


def _normalised_box(bbox):
  x, y, w, h = bbox
  return (x / W, y / H, (x + w) / W, (y + h) / H)


def assert_points(got, want, atol=1e-4):
  assert [v for _, _, v in got] == [v for _, _, v in want]
  np.testing.assert_allclose([p[:2] for p in got], [p[:2] for p in want], atol=atol)


def assert_headline_records(records, expected, size=(W, H), min_iou=0.99, box_atol=1e-3,
                            exact_resize=False):
  """Every object of `expected` written once, in its image's record, with its mask
  (pycocotools' raster; resized with NEAREST to `size` when the images were), keypoints,
  num, names and class id."""
  assert sorted(records) == ['china.jpg', 'flower.jpg']
  seen = []
  for name, (_, example) in records.items():
    assert (feature(example, 'image/width'), feature(example, 'image/height')) == (
        [size[0]], [size[1]])
    candidates = {i: e for i, e in expected.items() if e['image'] == name}
    got = objects(example)
    assert len(got) == len(candidates), name
    for obj in got:
      ann = match(obj, candidates, box_atol)
      want = candidates[ann]
      seen.append(ann)
      assert obj['class_id'] == EXPECTED_IDS[want['label']]
      assert obj['crowd'] == want['crowd']
      reference = want['mask']
      if size != (W, H):
        reference = np.asarray(Image.fromarray(reference).resize(size, Image.Resampling.NEAREST))
      assert obj['mask'].shape == (size[1], size[0])
      assert iou(obj['mask'], reference) >= min_iou, (name, ann, iou(obj['mask'], reference))
      if exact_resize:  # nearest-neighbour: the reference's own pixels, none blended
        np.testing.assert_array_equal(obj['mask'], reference)
      if size == (W, H):
        assert bbox_of(obj['mask']) == want['bbox']  # the mask spans exactly its box
        if want['rle'] is not None:  # exactly the array the RLE was encoded from
          np.testing.assert_array_equal(obj['mask'], want['rle'])
      assert_points(obj['points'], want['points'], atol=1e-4 if size == (W, H) else 3e-3)
      assert obj['num'] == sum(1 for *_, v in want['points'] if v)
      assert obj['names'] == want['names']
  assert sorted(seen) == sorted(expected)


# --- the headline: through TFX on LocalDagRunner ------------------------------------


@pytest.fixture(scope='module')
def through_tfx(tmp_path_factory, photos):
  """One LocalDagRunner run of ImageExampleGen(include_masks, include_keypoints) over a
  COCO folder: (the Examples artifact, {file_name: (split, example)}, expected)."""
  from runs import run
  from tfrecorder_component import ImageExampleGen
  from tfrecorder_component.adapters.component.mlmd import latest_output
  root = tmp_path_factory.mktemp('tfx_masks')
  (root / 'annotations').mkdir()
  coco, expected = headline_coco()
  write_json(root / 'annotations' / 'instances.json', coco)
  gen = ImageExampleGen(input_base=str(root / 'annotations'), image_root=str(photos),
                        include_masks=True, include_keypoints=True)
  config = run([gen], str(root / 'tfx'), 'coco_masks')
  examples = latest_output(config, 'coco_masks', 'ImageExampleGen', 'examples')
  return examples, by_coco_file_name(examples.uri, SPLITS, coco), expected


def test_tfx_masks_match_pycocotools_and_keypoints_are_normalised(through_tfx):
  examples, records, expected = through_tfx
  assert examples.get_int_custom_property('objects_written') == 4
  assert read_label_map(examples.uri) == EXPECTED_IDS
  for name, (_, example) in records.items():  # the photos' bytes pass through unchanged
    with open(os.path.join(PHOTOS, name), 'rb') as f:
      assert feature(example, 'image/encoded') == [f.read()]
  assert_headline_records(records, expected)
  # spelled out for the flower with two polygons: v=2, v=1, unlabelled -> 0, v=2
  flower = [o for o in objects(records['flower.jpg'][1]) if not o['crowd']][0]
  assert [v for *_, v in flower['points']] == [2, 1, 0, 2]
  assert flower['points'][2][:2] == (0.0, 0.0)
  assert flower['num'] == 3
  assert flower['names'] == ['centre', 'left_petal', 'right_petal', 'stem']
  pagoda = [o for o in objects(records['china.jpg'][1]) if o['label'] == 'pagoda'][0]
  assert pagoda['names'] == ['top', 'base', '', '']
  assert pagoda['points'][0] == pytest.approx((327 / W, 56 / H, 2), abs=1e-6)
  tree = [o for o in objects(records['china.jpg'][1]) if o['label'] == 'tree'][0]
  assert tree['names'] == [''] * K and tree['points'] == [(0.0, 0.0, 0)] * K
  assert tree['num'] == 0


def test_tfx_two_polygons_make_one_mask(through_tfx):
  """Both parts of the multi-part flower are in its one mask."""
  _, records, _ = through_tfx
  flower = [o for o in objects(records['flower.jpg'][1]) if not o['crowd']][0]
  assert flower['mask'][350:400, 310:325].all()   # inside the stem part only
  assert flower['mask'][120:200, 250:420].all()   # inside the head part only
  assert not flower['mask'][350:400, 200:290].any()


def test_tfx_records_decode_with_model_garden(through_tfx):
  """Model Garden's TfExampleDecoder(include_mask=True) reads the masks as [n, H, W],
  aligned with groundtruth_classes and groundtruth_boxes."""
  tf_example_decoder = pytest.importorskip('official.vision.dataloaders.tf_example_decoder',
                                           reason='tf-models-official is not in this stack')
  decoder = tf_example_decoder.TfExampleDecoder(include_mask=True)
  _, records, expected = through_tfx
  seen = []
  for name, (_, example) in records.items():
    decoded = decoder.decode(tf.constant(example.SerializeToString()))
    masks = decoded['groundtruth_instance_masks'].numpy()
    classes = decoded['groundtruth_classes'].numpy().tolist()
    boxes = decoded['groundtruth_boxes'].numpy()
    candidates = {i: e for i, e in expected.items() if e['image'] == name}
    assert masks.shape == (len(candidates), H, W)
    assert len(classes) == len(candidates) == boxes.shape[0]
    assert set(np.unique(masks).tolist()) <= {0.0, 1.0}
    for mask, class_id, (ymin, xmin, ymax, xmax) in zip(masks, classes, boxes):
      ann = match({'label': {v: k for k, v in EXPECTED_IDS.items()}[class_id],
                   'box': (xmin, ymin, xmax, ymax)}, candidates)
      seen.append(ann)
      assert iou(mask, expected[ann]['mask']) >= 0.99, (name, ann)
  assert sorted(seen) == sorted(expected)


# --- convert() ----------------------------------------------------------------------


def convert(source, out, **kwargs):
  kwargs.setdefault('splits', ONE_SPLIT)
  return trc.convert(str(source), str(out), **kwargs)


def train_records(result):
  """{file_name: (split, example)} of a COCO file's output, found by image id; else
  {image URI: ...}."""
  source, = result.manifests
  if source.endswith('.json'):
    return by_coco_file_name(result.output_dir, ['train'], source)
  return by_source_id(result.output_dir, ['train'])


def read_jsonl(path):
  with open(path) as f:
    return [json.loads(line) for line in f]


def test_masks_and_keypoints_are_off_by_default(tmp_path, photos):
  """Without the flags no mask or keypoint key is written, and segmentation and
  keypoints are not even read: a malformed one fails nothing."""
  coco, _ = headline_coco()
  coco['annotations'].append({'id': 104, 'image_id': 7, 'category_id': 90,
                              'bbox': [10, 10, 20, 20], 'segmentation': [[1, 2, 3]],
                              'keypoints': [1, 2, 7]})
  result = convert(write_json(photos / 'off.json', coco), tmp_path / 'out')
  assert result.rows_failed == 0
  assert result.summary['objects_written'] == 5
  records = train_records(result)
  assert sorted(records) == ['china.jpg', 'flower.jpg']
  for _, example in records.values():
    keys = set(example.features.feature)
    assert 'image/object/bbox/xmin' in keys
    assert 'image/object/mask' not in keys
    assert not any(k.startswith('image/object/keypoint/') for k in keys), keys


def test_mask_and_keypoint_issues_are_listed(tmp_path, photos):
  coco = {'images': [{'id': 7, 'file_name': 'china.jpg', 'width': W, 'height': H}],
          'categories': CATEGORIES, 'annotations': [
              {'id': 200, 'image_id': 7, 'category_id': 3, 'bbox': [262, 54, 130, 196],
               'segmentation': [PAGODA_POLYGON], 'keypoints': [327, 56, 2, 327, 248, 1]},
              # reaches past the right and bottom edges: clipped
              {'id': 201, 'image_id': 7, 'category_id': 17, 'bbox': [500, 300, 140, 127],
               'segmentation': [[500, 300, 700, 300, 700, 500, 500, 500]]},
              # an RLE of another size: dropped
              {'id': 202, 'image_id': 7, 'category_id': 17, 'bbox': [0, 0, 50, 50],
               'segmentation': {'size': [100, 100], 'counts': [10000]}},
              # an RLE with no pixels: dropped
              {'id': 203, 'image_id': 7, 'category_id': 17, 'bbox': [0, 0, 50, 50],
               'segmentation': {'size': [H, W], 'counts': [H * W]}},
              # a labelled keypoint left of the image: hidden
              {'id': 204, 'image_id': 7, 'category_id': 3, 'bbox': [10, 10, 50, 50],
               'segmentation': [[10, 10, 60, 10, 60, 60]], 'keypoints': [30, 30, 1, -5, 30, 2]},
          ]}
  result = convert(write_json(photos / 'issues.json', coco), tmp_path / 'out',
                   include_masks=True, include_keypoints=True)
  assert result.rows_failed == 0
  assert result.summary['box_issues'] == {
      'clipped:mask_outside_image': 1, 'dropped:empty_mask': 1,
      'dropped:mask_size_mismatch': 1, 'hidden:keypoint_outside': 1}
  issues = read_jsonl(os.path.join(result.report_dir, 'box_issues.jsonl'))
  assert sorted((i['action'], i['reason'], i['label'], tuple(i['box']), i.get('keypoint'))
                for i in issues) == [
      ('clipped', 'mask_outside_image', 'tree', (500.0, 300.0, 640.0, 427.0), None),
      ('dropped', 'empty_mask', 'tree', (0.0, 0.0, 50.0, 50.0), None),
      ('dropped', 'mask_size_mismatch', 'tree', (0.0, 0.0, 50.0, 50.0), None),
      ('hidden', 'keypoint_outside', 'pagoda', (10.0, 10.0, 60.0, 60.0), 'base')]
  assert all(isinstance(i['index'], int) and i['uri'] == 'china.jpg' for i in issues)

  (_, example), = train_records(result).values()
  got = {(o['label'], round(o['box'][0] * W)): o for o in objects(example)}
  assert sorted(got) == [('pagoda', 10), ('pagoda', 262), ('tree', 500)]  # two dropped
  clipped = got[('tree', 500)]['mask']
  inside = np.zeros((H, W), np.uint8)
  inside[300:, 500:] = 1
  assert iou(clipped, inside) >= 0.99  # the polygon's part inside the image
  assert not clipped[:299].any() and not clipped[:, :499].any()
  hidden = got[('pagoda', 10)]
  assert hidden['points'] == [pytest.approx((30 / W, 30 / H, 1)), (0.0, 0.0, 0),
                              (0.0, 0.0, 0), (0.0, 0.0, 0)]
  assert hidden['num'] == 1
  assert hidden['names'] == ['top', 'base', '', '']
  assert iou(got[('pagoda', 262)]['mask'], reference_raster([PAGODA_POLYGON])) >= 0.99


def test_a_polygon_wholly_outside_the_image_is_an_empty_mask_and_dropped(tmp_path, photos):
  """The object's box reaches into the image (clipped), but its polygon lies wholly
  right of it: the mask has no pixels, so the object is dropped ('empty_mask'), as an
  empty RLE is; no object is written with an empty mask."""
  coco = {'images': [{'id': 7, 'file_name': 'china.jpg', 'width': W, 'height': H}],
          'categories': [{'id': 17, 'name': 'tree'}], 'annotations': [
              {'id': 1, 'image_id': 7, 'category_id': 17, 'bbox': [262, 54, 130, 196],
               'segmentation': [PAGODA_POLYGON]},
              {'id': 2, 'image_id': 7, 'category_id': 17, 'bbox': [600, 10, 100, 40],
               'segmentation': [[645, 10, 700, 10, 700, 50, 645, 50]]}]}
  result = convert(write_json(photos / 'wholly_outside.json', coco), tmp_path / 'out',
                   include_masks=True)
  (_, example), = train_records(result).values()
  masks = decoded_masks(example)
  assert all(m.any() for m in masks), [int(m.sum()) for m in masks]
  assert len(masks) == 1 and iou(masks[0], reference_raster([PAGODA_POLYGON])) >= 0.99
  issues = read_jsonl(os.path.join(result.report_dir, 'box_issues.jsonl'))
  assert ('dropped', 'empty_mask') in [(i['action'], i['reason']) for i in issues], issues
  assert result.summary['box_issues'].get('dropped:empty_mask') == 1


MALFORMED = {
    300: ({'segmentation': [[10, 10, 60, 10]]}, 'at least 3 points'),
    301: ({'segmentation': [[10, 10, 60, 10, 60, 60, 4]]}, 'at least 3 points'),
    302: ({'segmentation': {'size': [H, W], 'counts': [5, 6]}}, 'add up to 11'),
    303: ({}, 'no "segmentation"'),
    304: ({'category_id': 3, 'keypoints': [1, 2, 2]}, '"keypoints" must be 6 numbers'),
    305: ({'category_id': 3, 'keypoints': [1, 2, 3, 4, 5, 2]}, 'visibility must be 0, 1 or 2'),
}


def test_malformed_segmentation_and_keypoints_are_error_rows(tmp_path, photos):
  good = {'id': 299, 'image_id': 7, 'category_id': 3, 'bbox': [262, 54, 130, 196],
          'segmentation': [PAGODA_POLYGON], 'keypoints': [327, 56, 2, 327, 248, 1]}
  bad = [dict({'id': i, 'image_id': 7, 'category_id': 17, 'bbox': [0, 0, 50, 50],
               'segmentation': [[10, 10, 60, 10, 60, 60]]}, **fields)
         for i, (fields, _) in MALFORMED.items()]
  for a in bad:
    if 'segmentation' in a and a['id'] == 303:
      del a['segmentation']
  coco = {'images': [{'id': 7, 'file_name': 'china.jpg', 'width': W, 'height': H}],
          'categories': CATEGORIES, 'annotations': [good] + bad}
  result = convert(write_json(photos / 'malformed.json', coco), tmp_path / 'out',
                   include_masks=True, include_keypoints=True, max_error_ratio=1.0)
  assert result.rows_failed == len(MALFORMED)
  assert result.errors_per_reason == {'bad_row': len(MALFORMED)}
  errors = read_jsonl(os.path.join(result.report_dir, 'errors.jsonl'))
  assert len(errors) == len(MALFORMED)
  by_id = {}
  for e in errors:
    assert e['reason'] == 'bad_row' and e['uri'] == 'china.jpg'
    named = [i for i in MALFORMED if f'annotation id {i} ' in e['message']]
    assert len(named) == 1, e['message']
    by_id[named[0]] = e['message']
  assert sorted(by_id) == sorted(MALFORMED)
  for i, (_, words) in MALFORMED.items():
    assert words in by_id[i], (i, by_id[i])
  # the image is still written, with its good object, mask and keypoints
  assert result.records_per_split == {'train': 1, 'eval': 0, 'test': 0}
  (_, example), = train_records(result).values()
  (obj,) = objects(example)
  assert (obj['label'], obj['class_id']) == ('pagoda', 3)  # its COCO category id
  assert iou(obj['mask'], reference_raster([PAGODA_POLYGON])) >= 0.99
  assert_points(obj['points'], [(327 / W, 56 / H, 2), (327 / W, 248 / H, 1), (0, 0, 0),
                                (0, 0, 0)])


def test_include_keypoints_needs_a_category_with_keypoints(tmp_path, photos):
  coco = {'images': [{'id': 7, 'file_name': 'china.jpg', 'width': W, 'height': H}],
          'categories': [{'id': 17, 'name': 'tree'}],
          'annotations': [{'id': 1, 'image_id': 7, 'category_id': 17, 'bbox': [0, 0, 9, 9]}]}
  path = write_json(photos / 'no_keypoints.json', coco)
  with pytest.raises(ManifestError, match='include_keypoints'):
    convert(path, tmp_path / 'out', include_keypoints=True)
  assert not os.path.exists(tmp_path / 'out' / 'Split-train')


def test_include_masks_on_a_detection_csv_is_a_manifest_error(tmp_path, photos):
  csv = photos / 'boxes.csv'
  csv.write_text('TRAIN,china.jpg,pagoda,0.4,0.1,,,0.6,0.5,,\n')
  with pytest.raises(ManifestError, match='include_masks'):
    convert(csv, tmp_path / 'out', include_masks=True)
  assert not os.path.exists(tmp_path / 'out' / 'Split-train')


def sideways_photo(folder):
  """china.jpg stored sideways (427 wide, 640 high) with EXIF orientation 6."""
  upright = Image.open(os.path.join(PHOTOS, 'china.jpg')).convert('RGB')
  stored = upright.transpose(Image.Transpose.ROTATE_90)
  exif = Image.Exif()
  exif[0x0112] = 6  # "rotate 90 degrees clockwise to display"
  stored.save(folder / 'sideways.jpg', quality=95, exif=exif.tobytes())


def to_stored(x, y):
  """An upright pixel position in the stored (sideways) frame."""
  return y, W - x


# Upright pixels: the pagoda's top and base, and a point near the left edge.
UPRIGHT_KEYPOINTS = [(327, 56, 2), (327, 248, 1), (30, 200, 2)]


def sideways_coco(folder):
  """The pagoda polygon and keypoints drawn in the stored frame of the sideways photo."""
  sideways_photo(folder)
  polygon = [v for x, y in zip(PAGODA_POLYGON[0::2], PAGODA_POLYGON[1::2])
             for v in to_stored(x, y)]
  keypoints = [v for x, y, vis in UPRIGHT_KEYPOINTS for v in (*to_stored(x, y), vis)]
  xs, ys = polygon[0::2], polygon[1::2]
  coco = {'images': [{'id': 1, 'file_name': 'sideways.jpg', 'width': H, 'height': W}],
          'categories': [{'id': 5, 'name': 'pagoda', 'keypoints': ['top', 'base', 'left']}],
          'annotations': [{'id': 1, 'image_id': 1, 'category_id': 5, 'segmentation': [polygon],
                           'bbox': [min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)],
                           'keypoints': keypoints}]}
  return write_json(folder / 'sideways.json', coco)


def one_object(result):
  (_, example), = train_records(result).values()
  (obj,) = objects(example, k=3)
  return example, obj


def upright_reference(size, box=None):
  """The pagoda polygon rasterised upright by pycocotools, resized with NEAREST."""
  raster = Image.fromarray(reference_raster([PAGODA_POLYGON]))
  return np.asarray(raster.resize(size, Image.Resampling.NEAREST, box=box))


def test_auto_orient_and_resize_move_masks_and_keypoints(tmp_path):
  """A polygon and keypoints drawn in the stored (sideways) frame land, after
  auto_orient and a resize, on the pixels of the upright reference."""
  source = sideways_coco(tmp_path)
  result = convert(source, tmp_path / 'out', include_masks=True, include_keypoints=True,
                   image_transform={'auto_orient': True, 'size': (320, 200)})
  assert result.summary['box_issues'] == {}
  example, obj = one_object(result)
  assert (feature(example, 'image/width'), feature(example, 'image/height')) == ([320], [200])
  assert obj['mask'].shape == (200, 320)
  assert iou(obj['mask'], upright_reference((320, 200))) >= 0.95
  assert_points(obj['points'], [(x / W, y / H, v) for x, y, v in UPRIGHT_KEYPOINTS],
                atol=2e-3)
  assert obj['num'] == 3 and obj['names'] == ['top', 'base', 'left']
  np.testing.assert_allclose(obj['box'], (262 / W, 54 / H, 392 / W, 250 / H), atol=2e-3)


def test_crop_hides_a_keypoint_cropped_away(tmp_path):
  """'crop' to 200x200 keeps upright x from 106.5 to 533.5: the 'left' keypoint
  (x = 30) is cropped away and becomes unlabelled."""
  source = sideways_coco(tmp_path)
  result = convert(source, tmp_path / 'out', include_masks=True, include_keypoints=True,
                   image_transform={'auto_orient': True, 'size': (200, 200),
                                    'resize_mode': 'crop'})
  assert result.summary['box_issues'] == {'hidden:keypoint_outside_after_transform': 1}
  (issue,) = read_jsonl(os.path.join(result.report_dir, 'box_issues.jsonl'))
  assert (issue['action'], issue['reason'], issue['keypoint'], issue['label']) == (
      'hidden', 'keypoint_outside_after_transform', 'left', 'pagoda')
  _, obj = one_object(result)
  x0 = (W - H) / 2  # the centre H x H square of the upright image, scaled to 200 x 200
  x1 = x0 + H
  assert_points(obj['points'], [((327 - x0) / H, 56 / H, 2), ((327 - x0) / H, 248 / H, 1),
                                (0.0, 0.0, 0)], atol=2e-3)
  assert obj['points'][2] == (0.0, 0.0, 0)
  assert obj['num'] == 2
  assert obj['mask'].shape == (200, 200)
  assert iou(obj['mask'], upright_reference((200, 200), box=(x0, 0, x1, H))) >= 0.95


def test_fit_pads_masks_with_zero(tmp_path):
  """'fit' to 200x200: the upright image becomes 200 x 133, centred; the mask's padding
  rows are 0 and its content is the reference's."""
  source = sideways_coco(tmp_path)
  result = convert(source, tmp_path / 'out', include_masks=True, include_keypoints=True,
                   image_transform={'auto_orient': True, 'size': (200, 200),
                                    'resize_mode': 'fit'})
  assert result.summary['box_issues'] == {}
  _, obj = one_object(result)
  content = round(H * 200 / W)
  top = (200 - content) // 2
  reference = np.zeros((200, 200), np.uint8)
  reference[top:top + content] = upright_reference((200, content))
  assert iou(obj['mask'], reference) >= 0.95
  assert not obj['mask'][:top].any() and not obj['mask'][top + content:].any()
  assert_points(obj['points'], [(x / W, (top + y * content / H) / 200, v)
                                for x, y, v in UPRIGHT_KEYPOINTS], atol=3e-3)


def test_records_are_byte_identical_on_a_second_run(tmp_path, photos):
  """Masks and keypoints (resized here, longest side 320) write the same bytes twice."""
  coco, expected = headline_coco()
  source = write_json(photos / 'twice.json', coco)
  options = dict(include_masks=True, include_keypoints=True,
                 image_transform={'longest_side': 320})
  first = convert(source, tmp_path / 'first', **options)
  second = convert(source, tmp_path / 'second', **options)
  assert first.summary['box_issues'] == {}
  records = read_records(first.split_dirs['train'])
  assert len(records) == 2
  assert sorted(records) == sorted(read_records(second.split_dirs['train']))
  assert_headline_records(train_records(first), expected, size=(320, 214), min_iou=0.95,
                          box_atol=3e-3, exact_resize=True)


# --- polygons past the image's edges, against pycocotools ---------------------------
# pycocotools draws a polygon unclipped (rleFrPoly walks its edges in fifths of a pixel,
# also outside the image), so a polygon past an edge must give its RLE byte for byte: a
# polygon clipped to the image first was a few pixels off. pycocotools here is the
# oracles' environment's (scripts/oracles-env), not the one the product imports.

DRAW = '''
import json, sys
from pycocotools import mask as coco_mask
out = []
for width, height, polygons in json.load(sys.stdin):
  rle = coco_mask.merge(coco_mask.frPyObjects(polygons, height, width))
  out.append(rle['counts'].decode('ascii'))
print(json.dumps(out))
'''


def pycocotools_counts(cases):
  """pycocotools' compressed RLE counts of each (width, height, polygons): its COCO.annToRLE
  of a polygon segmentation, frPyObjects then merge."""
  from oracle_readers import oracle_python  # pylint: disable=g-import-not-at-top
  done = subprocess.run([oracle_python(), '-c', DRAW], input=json.dumps(cases),
                        capture_output=True, text=True, check=False)
  assert done.returncode == 0, done.stderr[-4000:]
  return json.loads(done.stdout)


SW, SH = 64, 48  # a small image, so that far-away vertices stay cheap for pycocotools
PAST_THE_EDGES = {
    'left': [[-7.3, 5.2, 20.6, 3.1, 18.2, 30.9]],
    'right': [[50.2, 4.7, 71.9, 12.3, 55.1, 40.6]],
    'top': [[10.4, -6.6, 40.2, 10.9, 5.7, 20.3]],
    'bottom': [[12.2, 30.1, 45.8, 55.4, 20.6, 60.2]],
    'top_left_corner': [[-3.7, -2.2, 30.3, 1.9, 8.1, 25.6]],
    'bottom_right_corner': [[40.1, 30.2, 70.6, 47.3, 61.2, 52.9]],
    'every_edge': [[-10.3, -8.1, 75.6, -3.3, 70.2, 55.9, -4.4, 60.7]],  # holds the image
    'on_the_fifth_grid': [[-1.2, 4.4, 30.0, -0.6, 64.4, 20.2, 33.0, 48.6]],
    'one_part_outside': [[5.5, 5.5, 20.5, 5.5, 12.5, 20.5],
                         [55.3, 30.1, 80.2, 33.7, 58.9, 44.4]],
    # nothing of them inside: pycocotools draws no pixel either
    'wholly_left': [[-0.4, 2.1, -0.05, 2.1, -0.1, 40.3]],
    'wholly_right': [[64.05, 2.1, 64.6, 9.7, 70.1, 40.3]],
    'wholly_above': [[3.2, -0.3, 60.7, -0.02, 30.1, -9.8]],
    'wholly_below': [[3.2, 48.01, 60.7, 48.4, 30.1, 70.2]],
    'wholly_beyond_a_corner': [[64.2, 48.3, 90.1, 50.2, 70.7, 80.5]],
    # far away: pycocotools walks 1.5 million steps an edge; drawn without walking them
    'far_left': [[-1e5, 10.3, 30.2, 20.7, 25.1, 30.3]],
    'far_above': [[30.1, -2e5, 40.7, 40.2, 20.3, 30.1]],
    'far_below': [[-2e5, 3e5, 2.5e5, 3e5 + 0.3, 30.7, 10.1]],
    'far_diagonal': [[5.1, 5.3, 3e5, 3e5 + 0.3, 20.2, 40.1]],
    'far_every_way': [[-2e5, -1.5e5, 2.5e5, -2e5 + 7.1, 2e5 + 3.3, 2.2e5, -2.1e5, 2e5]],
    'nearly_diagonal_from_far': [[-2.9e5 + 12.3, -2.9e5 + 10.1, 40.2, 38.3, 44.6, 30.1]],
}


def test_polygons_past_the_edges_draw_as_pycocotools_draws_them():
  names = list(PAST_THE_EDGES)
  cases = [(SW, SH, PAST_THE_EDGES[n]) for n in names]
  for name, want in zip(names, pycocotools_counts(cases)):
    polygons = PAST_THE_EDGES[name]
    raster = masks_lib.rasterize(InstanceMask(polygons=tuple(map(tuple, polygons))), SW, SH)
    assert raster.rle is not None, name
    assert raster.rle['counts'].decode('ascii') == want, name
    empty = not coco_mask.area({'size': [SH, SW], 'counts': want.encode('ascii')})
    assert raster.reason == ('empty_mask' if empty else 'mask_outside_image'), name
    assert empty == name.startswith('wholly'), name


def random_polygons(seed, count):
  """Polygons around small images: vertices on the fifth-pixel grid (rounding ties),
  near the image, and up to 20,000 pixels away in any direction."""
  rng = random.Random(seed)
  cases = []
  for _ in range(count):
    width, height = rng.randint(1, 80), rng.randint(1, 80)
    flat = []
    for _ in range(rng.randint(3, 8)):
      kind = rng.random()
      if kind < 0.3:
        flat += [rng.randint(-30, 5 * width + 30) / 5, rng.randint(-30, 5 * height + 30) / 5]
      elif kind < 0.6:
        flat += [rng.uniform(-width, 2 * width), rng.uniform(-height, 2 * height)]
      else:
        far = rng.choice([-1, 1]) * 10 ** rng.uniform(1, 4.3)
        near = rng.uniform(-width, 2 * width) if kind < 0.8 else rng.uniform(-height,
                                                                              2 * height)
        flat += [far, near] if kind < 0.8 else [near, far]
    if rng.random() < 0.1:
      flat += flat[-2:]  # a repeated vertex: a walk of one point
    cases.append((width, height, [flat]))
  return cases


def test_random_polygons_draw_as_pycocotools_draws_them():
  """Byte-equal RLEs for random polygons; the far-away ones are drawn without walking
  every step, and that walk is also checked on polygons pycocotools draws itself."""
  cases = random_polygons(seed=3, count=400)
  for (width, height, (flat,)), want in zip(cases, pycocotools_counts(cases)):
    raster = masks_lib.rasterize(InstanceMask(polygons=(tuple(flat),)), width, height)
    assert raster.rle['counts'].decode('ascii') == want, (width, height, flat)
    walked = masks_lib._walk(flat, width, height)  # pylint: disable=protected-access
    rle = coco_mask.frPyObjects({'size': [height, width], 'counts': walked}, height, width)
    assert rle['counts'].decode('ascii') == want, (width, height, flat)


def test_a_polygon_past_pycocotools_int_range_is_cut_to_it():
  """Beyond 2**27 pixels pycocotools' ints overflow (it crashes): the polygon is cut to
  the square [-2**27, 2**27]^2 first. A band with horizontal edges draws as the same band
  ending just past the image; a slanted polygon as the cut one, in no time."""
  band = [10.3, 10.6, 1e12, 10.6, 1e12, 20.2, 10.3, 20.2]
  slanted = [5.2, 7.7, 1e300, 3e9, 40.1, 45.3]
  short_band = [10.3, 10.6, 1000.0, 10.6, 1000.0, 20.2, 10.3, 20.2]
  want, = pycocotools_counts([(SW, SH, [short_band])])
  raster = masks_lib.rasterize(InstanceMask(polygons=(tuple(band),)), SW, SH)
  assert (raster.rle['counts'].decode('ascii'), raster.reason) == (want,
                                                                    'mask_outside_image')
  far = float(2 ** 27)
  cut = masks_lib.clip_polygon(slanted, -far, -far, far, far)
  assert max(abs(v) for v in cut) == far
  start = time.monotonic()
  raster = masks_lib.rasterize(InstanceMask(polygons=(tuple(slanted),)), SW, SH)
  assert time.monotonic() - start < 5
  assert raster.rle == masks_lib.polygon_rle(cut, SW, SH)
  mask = masks_lib.decode(raster.rle)
  assert mask[10, 10] and not mask[40, 2]  # the wedge between the two near vertices


def test_coco_masks_past_the_edges_match_pycocotools_reader(tmp_path, photos):
  """End to end: the records' masks of a COCO file with polygons past the photo's edges
  are pixel for pixel what pycocotools' COCO.annToRLE draws (tests/oracles/read.py); the
  objects whose polygon lies wholly outside are the ones it draws empty, dropped."""
  from oracle_readers import ours, reference  # pylint: disable=g-import-not-at-top
  polygons = [
      [-12.3, 40.7, 120.2, 30.1, 90.6, 200.9],             # past the left edge
      [600.3, 10.7, 700.9, 100.2, 620.1, 300.3],           # the right
      [200.2, -30.3, 300.7, 50.2, 150.1, 60.6],            # the top
      [300.2, 400.3, 420.9, 480.2, 330.1, 500.6],          # the bottom
      [-1e5, -3e4, 320.3, 200.7, 1e4, 426.9],              # far away
      [650.1, 10.2, 700.3, 10.2, 690.7, 90.8],             # wholly right: dropped
      [10.2, 430.1, 600.3, 428.2, 300.5, 500.5],           # wholly below: dropped
  ]
  coco = {'images': [{'id': 7, 'file_name': 'china.jpg', 'width': W, 'height': H}],
          'categories': [{'id': 17, 'name': 'tree'}],
          'annotations': [{'id': i, 'image_id': 7, 'category_id': 17, 'iscrowd': 0,
                           'bbox': [10, 10, 100, 100], 'segmentation': [p]}
                          for i, p in enumerate(polygons)]}
  path = write_json(photos / 'past_the_edges.json', coco)
  result = convert(path, tmp_path / 'out', include_masks=True)
  theirs = reference('pycocotools', 'coco', path, images=str(photos), masks=True)
  drawn = [coco_mask.decode({'size': o['mask']['size'],
                             'counts': o['mask']['counts'].encode('ascii')})
           for o in theirs['china']['objects']]
  assert [bool(m.any()) for m in drawn] == [True] * 5 + [False] * 2
  mine = [coco_mask.decode({'size': o['mask']['size'], 'counts': o['mask']['counts']
                            .encode('ascii')}) for o in ours(result.output_dir)['china']
          ['objects']]
  assert len(mine) == 5
  for i, (a, b) in enumerate(zip(mine, drawn[:5])):
    assert np.array_equal(a, b), (i, int((a != b).sum()))
  assert result.summary['box_issues'] == {'clipped:mask_outside_image': 5,
                                          'dropped:empty_mask': 2}


# --- CLI ----------------------------------------------------------------------------


def test_cli_include_masks_and_keypoints(tmp_path, photos, capsys):
  from tfrecorder_component.adapters.cli import main
  coco, expected = headline_coco()
  source = write_json(photos / 'cli.json', coco)
  out = tmp_path / 'out'
  assert main(['convert', source, str(out), '--include-masks', '--include-keypoints',
               '--splits', 'train=1']) == 0
  assert 'Wrote 2 records' in capsys.readouterr().out
  records = by_coco_file_name(str(out), ['train'], coco)
  assert_headline_records(records, expected)
  assert read_label_map(str(out)) == EXPECTED_IDS
