"""Object detection end to end: COCO and AutoML CSV over the same real photos, through Beam.

The photos are scikit-learn's bundled sample images (china.jpg, flower.jpg; 640x427).
"""
import json
import os
import shutil

import numpy as np
import pytest
import sklearn.datasets
import tensorflow as tf
from PIL import Image

from runs import SPLITS, convert
from records import by_coco_file_name, by_source_id, feature
from tfrecorder_component.options import ConversionOptions, ManifestSource
from tfrecorder_component.record.labels import read_label_map
from tfrecorder_component.images.transform import ImageTransform

PHOTOS = os.path.join(os.path.dirname(sklearn.datasets.__file__), 'images')
W, H = 640, 427
# Pixel boxes (x, y, w, h) per image; 'empty.jpg' has no objects.
OBJECTS = {
    'china.jpg': [('pagoda', 262.0, 54.0, 130.0, 196.0), ('tree', 0.0, 205.0, 170.0, 222.0)],
    'flower.jpg': [('flower', 148.5, 43.0, 330.0, 350.0), ('flower', 20.0, 300.0, 60.0, 60.0)],
    'empty.jpg': [],
}
CATEGORIES = {'pagoda': 3, 'tree': 17, 'flower': 90}  # COCO ids: non-contiguous on purpose
CROWD = {('tree', 0.0)}
EXPECTED_IDS = {'flower': 1, 'pagoda': 2, 'tree': 3}  # sorted vocabulary, 1-based


@pytest.fixture(scope='module')
def photos(tmp_path_factory):
  d = tmp_path_factory.mktemp('photos')
  for name in ('china.jpg', 'flower.jpg'):
    shutil.copy(os.path.join(PHOTOS, name), d / name)
  with Image.open(os.path.join(PHOTOS, 'china.jpg')) as im:  # a third photo, no objects
    im.transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(d / 'empty.jpg', quality=90)
  return d


def write_coco(path, image_dir_name=''):
  images, annotations = [], []
  for image_id, (name, objects) in enumerate(OBJECTS.items(), start=7):
    images.append({'id': image_id, 'file_name': os.path.join(image_dir_name, name),
                   'width': W, 'height': H})
    for label, x, y, w, h in objects:
      annotations.append({'id': len(annotations) + 100, 'image_id': image_id,
                          'category_id': CATEGORIES[label], 'bbox': [x, y, w, h],
                          'area': round(w * h * 0.8, 2),
                          'iscrowd': int((label, x) in CROWD)})
  coco = {'images': images, 'annotations': annotations,
          'categories': [{'id': i, 'name': n, 'supercategory': 'thing'}
                         for n, i in CATEGORIES.items()]}
  path.write_text(json.dumps(coco))
  return str(path)


def write_automl_csv(path):
  lines = []
  for name, objects in OBJECTS.items():
    if not objects:
      lines.append(f'TRAIN,{name},,,,,,,,,')
    for label, x, y, w, h in objects:
      lines.append(f'TRAIN,{name},{label},{x / W:.6f},{y / H:.6f},,,{(x + w) / W:.6f},'
                   f'{(y + h) / H:.6f},,')
  path.write_text('\n'.join(lines) + '\n')
  return str(path)


def objects_of(example):
  boxes = zip(*(feature(example, f'image/object/bbox/{k}') for k in ('xmin', 'ymin', 'xmax',
                                                                      'ymax')))
  return sorted(zip((t.decode() for t in feature(example, 'image/object/class/text')),
                    feature(example, 'image/object/class/label'), boxes,
                    feature(example, 'image/object/is_crowd'),
                    feature(example, 'image/object/area')))


def expected_objects(name, ids=EXPECTED_IDS):
  return sorted((label, ids[label], (x / W, y / H, (x + w) / W, (y + h) / H))
                for label, x, y, w, h in OBJECTS[name])


def assert_records_match_annotations(out, coco):
  """`coco`: the COCO file converted into `out` (its records are found by image id), or
  None for an AutoML CSV's output (by image URI)."""
  records = by_coco_file_name(out, SPLITS, coco) if coco else by_source_id(out, SPLITS)
  assert sorted(records) == sorted(OBJECTS)
  for name, (_, example) in records.items():
    got = objects_of(example)
    want = expected_objects(name, CATEGORIES if coco else EXPECTED_IDS)
    assert [(g[0], g[1]) for g in got] == [(w[0], w[1]) for w in want], name
    for g, w in zip(got, want):
      np.testing.assert_allclose(g[2], w[2], atol=1e-3)
    assert feature(example, 'image/height') == [H] and feature(example, 'image/width') == [W]
    if coco:
      crowd = {(l, round(b[0] * W, 1)): c for l, _, b, c, _ in got}
      assert crowd == {(l, round(x, 1)): int((l, x) in CROWD) for l, x, *_ in OBJECTS[name]}
      areas = sorted(a for *_, a in got)
      assert areas == pytest.approx(sorted(w * h * 0.8 for *_, w, h in OBJECTS[name]), rel=1e-4)
    else:
      areas = sorted(a for *_, a in got)
      assert areas == pytest.approx(sorted(w * h for *_, w, h in OBJECTS[name]), rel=1e-3)
  assert read_label_map(out) == (CATEGORIES if coco else EXPECTED_IDS)
  return records


def test_coco_keeps_its_category_ids_and_automl_csv_gives_the_same_boxes(tmp_path, photos):
  """COCO category ids (3, 17, 90) are the records' class ids, as COCO-pretrained
  checkpoints and Model Garden's COCO readers expect; a CSV has none: sorted, 1-based."""
  coco = write_coco(photos / 'instances.json')
  csv = write_automl_csv(photos / 'boxes.csv')
  out_coco, summary_coco, errors_coco = convert(tmp_path / 'coco', [ManifestSource(coco)])
  out_csv, summary_csv, errors_csv = convert(tmp_path / 'csv', [ManifestSource(csv)])
  assert errors_coco == [] and errors_csv == []
  coco_records = assert_records_match_annotations(out_coco, coco=coco)
  csv_records = assert_records_match_annotations(out_csv, coco=None)
  for name in OBJECTS:  # the photos' bytes pass through unchanged
    data = (photos / name).read_bytes()
    assert feature(coco_records[name][1], 'image/encoded') == [data]
    assert feature(csv_records[name][1], 'image/encoded') == [data]
  assert objects_of(coco_records['empty.jpg'][1]) == []
  for summary in (summary_coco, summary_csv):
    assert summary['records_written'] == 3
    assert summary['objects_written'] == 4
    assert summary['objects_per_label'] == {'flower': 2, 'pagoda': 1, 'tree': 1}
    assert summary['box_issues'] == {}
  assert set(summary_csv['records_per_split']) == {'train'}
  with open(os.path.join(out_coco, 'label_map.pbtxt')) as f:
    assert 'name: "flower"\n  id: 90' in f.read()
  with open(os.path.join(out_coco, 'labels.txt')) as f:  # line k: id k + 1
    lines = f.read().split('\n')
  assert (lines[2], lines[16], lines[89], len(lines)) == ('pagoda', 'tree', 'flower', 91)


def test_pascal_voc_and_vertex_jsonl_give_the_same_boxes(tmp_path, photos):
  voc_dir = tmp_path / 'voc'
  voc_dir.mkdir()
  for name, objects in OBJECTS.items():
    xml = ''.join(f'<object><name>{label}</name><difficult>{int(label == "tree")}</difficult>'
                  f'<truncated>0</truncated><bndbox><xmin>{x}</xmin><ymin>{y}</ymin>'
                  f'<xmax>{x + w}</xmax><ymax>{y + h}</ymax></bndbox></object>'
                  for label, x, y, w, h in objects)
    (voc_dir / (name + '.xml')).write_text(
        f'<annotation><filename>{name}</filename><size><width>{W}</width>'
        f'<height>{H}</height><depth>3</depth></size>{xml}</annotation>')
  lines = [json.dumps({'imageGcsUri': name, 'boundingBoxAnnotations': [
      {'displayName': label, 'xMin': x / W, 'yMin': str(y / H), 'xMax': (x + w) / W,
       'yMax': str((y + h) / H)} for label, x, y, w, h in objects]})
           for name, objects in OBJECTS.items()]
  (photos / 'boxes.jsonl').write_text('\n'.join(lines) + '\n')
  voc_sources = [ManifestSource(str(p), image_root=str(photos))
                 for p in sorted(voc_dir.glob('*.xml'))]
  out_voc, _, errors_voc = convert(tmp_path / 'voc_run', voc_sources)
  out_jsonl, _, errors_jsonl = convert(tmp_path / 'jsonl_run',
                                       [ManifestSource(str(photos / 'boxes.jsonl'))])
  assert errors_voc == [] and errors_jsonl == []
  for out in (out_voc, out_jsonl):
    records = by_source_id(out, SPLITS)
    assert sorted(records) == sorted(OBJECTS)
    for name, (_, example) in records.items():
      got, want = objects_of(example), expected_objects(name)
      assert [g[:2] for g in got] == [w[:2] for w in want], name
      for g, w in zip(got, want):
        np.testing.assert_allclose(g[2], w[2], atol=1e-3)
    assert read_label_map(out) == EXPECTED_IDS
  china = by_source_id(out_voc, SPLITS)['china.jpg'][1]
  assert sorted(zip(feature(china, 'image/object/class/text'),
                    feature(china, 'image/object/difficult'))) == [(b'pagoda', 0), (b'tree', 1)]


def test_model_garden_decoder_reads_the_records(tmp_path, photos):
  """The TensorFlow Model Garden's own detection decoder (tf-models-official) reads the
  records: boxes ([ymin, xmin, ymax, xmax]), 1-based classes, crowd flags, areas.
  Model Garden has no release for TensorFlow 2.21, so the TFX 1.21 stack does not have
  it; the TFX 1.16 stack, which CI runs every test on, does."""
  tf_example_decoder = pytest.importorskip('official.vision.dataloaders.tf_example_decoder',
                                           reason='tf-models-official is not in this stack')
  decoder = tf_example_decoder.TfExampleDecoder(include_mask=False)
  coco = write_coco(photos / 'decoder.json')
  out, _, errors = convert(tmp_path, [ManifestSource(coco)])
  assert errors == []
  records = by_coco_file_name(out, SPLITS, coco)
  ids = {image['file_name']: image['id'] for image in json.loads(open(coco).read())['images']}
  for name, (_, example) in records.items():
    decoded = decoder.decode(tf.constant(example.SerializeToString()))
    assert decoded['source_id'].numpy() == str(ids[name]).encode()  # COCO's image id
    assert tuple(decoded['image'].shape) == (H, W, 3)
    assert (int(decoded['height']), int(decoded['width'])) == (H, W)
    got = sorted(zip(decoded['groundtruth_classes'].numpy().tolist(),
                     decoded['groundtruth_boxes'].numpy().tolist(),
                     decoded['groundtruth_is_crowd'].numpy().tolist(),
                     decoded['groundtruth_area'].numpy().tolist()))
    want = sorted((CATEGORIES[label], [y / H, x / W, (y + h) / H, (x + w) / W],
                   (label, x) in CROWD, w * h * 0.8) for label, x, y, w, h in OBJECTS[name])
    assert [g[0] for g in got] == [w[0] for w in want], name
    for g, w in zip(got, want):
      np.testing.assert_allclose(g[1], w[1], atol=1e-3)
      assert g[2] == w[2]
      assert g[3] == pytest.approx(w[3], rel=1e-4)
  empty = decoder.decode(tf.constant(records['empty.jpg'][1].SerializeToString()))
  assert tuple(empty['groundtruth_boxes'].shape) == (0, 4)


def test_coco_image_root(tmp_path, photos):
  """file_name is resolved against image_root, not the JSON's folder, when given."""
  coco = write_coco(tmp_path / 'elsewhere.json')
  out, summary, errors = convert(tmp_path / 'run', [ManifestSource(coco, image_root=str(photos))])
  assert errors == [] and summary['records_written'] == 3


def test_invalid_boxes_are_clipped_or_dropped_and_reported(tmp_path, photos):
  csv = photos / 'bad_boxes.csv'
  csv.write_text(
      'china.jpg,pagoda,0.4,0.1,,,0.6,0.5,,\n'       # fine
      'china.jpg,tree,0.5,0.5,,,1.2,0.9,,\n'         # clipped at the right edge
      'china.jpg,tree,nan,0.1,,,0.3,0.2,,\n'         # not finite: dropped
      'china.jpg,tree,0.3,0.1,,,0.3,0.2,,\n'         # zero width: dropped
      'china.jpg,tree,0.6,0.1,,,0.2,0.2,,\n'         # negative width: dropped
      'china.jpg,tree,1.1,0.1,,,1.3,0.2,,\n')        # outside the image: dropped
  out, summary, errors = convert(tmp_path, [ManifestSource(str(csv))])
  assert errors == []
  assert summary['box_issues'] == {'clipped:clipped': 1, 'dropped:empty': 2,
                                   'dropped:not_finite': 1, 'dropped:outside_image': 1}
  (_, example), = by_source_id(out, SPLITS).values()
  got = objects_of(example)
  assert [(l, i) for l, i, *_ in got] == [('pagoda', 1), ('tree', 2)]
  np.testing.assert_allclose(got[1][2], (0.5, 0.5, 1.0, 0.9), atol=1e-6)
  with open(tmp_path / 'report' / 'box_issues.jsonl') as f:
    issues = [json.loads(l) for l in f]
  assert len(issues) == 5
  assert all(i['uri'] == 'china.jpg' and i['source'] == str(csv) for i in issues)
  assert sorted((i['action'], i['reason'], i['label']) for i in issues) == [
      ('clipped', 'clipped', 'tree'), ('dropped', 'empty', 'tree'), ('dropped', 'empty', 'tree'),
      ('dropped', 'not_finite', 'tree'), ('dropped', 'outside_image', 'tree')]


def test_a_class_whose_every_box_was_dropped_keeps_its_id(tmp_path, photos):
  """'ant' sorts first and its one box is dropped: it keeps id 1 in label_map.pbtxt and
  labels.txt, so no other id moves, and the run names it."""
  csv = photos / 'dropped_class.csv'
  csv.write_text('china.jpg,pagoda,0.4,0.1,,,0.6,0.5,,\n'
                 'china.jpg,ant,0.3,0.1,,,0.3,0.2,,\n'    # zero width: dropped
                 'flower.jpg,tree,0.1,0.1,,,0.5,0.5,,\n')
  out, summary, _ = convert(tmp_path / 'with', [ManifestSource(str(csv))])
  assert summary['labels_left_out'] == ['ant']
  assert summary['vocabulary'] == ['ant', 'pagoda', 'tree']
  assert read_label_map(out) == {'ant': 1, 'pagoda': 2, 'tree': 3}
  assert open(os.path.join(out, 'labels.txt')).read() == 'ant\npagoda\ntree\n'
  records = by_source_id(out, SPLITS)
  assert [(l, i) for l, i, *_ in objects_of(records['china.jpg'][1])] == [('pagoda', 2)]
  assert [(l, i) for l, i, *_ in objects_of(records['flower.jpg'][1])] == [('tree', 3)]


def test_rows_of_one_image_with_different_splits_fail_that_image(tmp_path, photos):
  csv = photos / 'conflict.csv'
  csv.write_text('TRAIN,china.jpg,tree,0.1,0.1,,,0.2,0.2,,\n'
                 'TEST,china.jpg,tree,0.3,0.3,,,0.4,0.4,,\n'
                 'TEST,flower.jpg,flower,0.3,0.3,,,0.4,0.4,,\n')
  out, summary, errors = convert(tmp_path, [ManifestSource(str(csv))])
  assert [(e['reason'], e['uri'], e['row']) for e in errors] == [
      ('conflicting_split', 'china.jpg', 1)]
  assert summary['records_written'] == 1 and summary['rows_failed'] == 1


def test_auto_orient_and_resize_keep_boxes_on_their_objects(tmp_path):
  """An EXIF-rotated photo (stored sideways, orientation 6) with a box on the pagoda."""
  upright = Image.open(os.path.join(PHOTOS, 'china.jpg')).convert('RGB')
  stored = upright.transpose(Image.Transpose.ROTATE_90)  # 427 wide, 640 high
  exif = Image.Exif()
  exif[0x0112] = 6  # "rotate 90 degrees clockwise to display"
  stored.save(tmp_path / 'sideways.jpg', quality=95, exif=exif.tobytes())
  # The pagoda in upright normalised coordinates, and the same box in the stored frame.
  ux0, uy0, ux1, uy1 = 262 / W, 54 / H, 392 / W, 250 / H
  sx0, sy0, sx1, sy1 = uy0, 1 - ux1, uy1, 1 - ux0
  (tmp_path / 'm.csv').write_text(
      f'sideways.jpg,pagoda,{sx0:.6f},{sy0:.6f},,,{sx1:.6f},{sy1:.6f},,\n')
  size = (320, 200)
  options = ConversionOptions(transform=ImageTransform(auto_orient=True, size=size))
  out, summary, errors = convert(tmp_path, [ManifestSource(str(tmp_path / 'm.csv'))], options)
  assert errors == [] and summary['box_issues'] == {}
  (_, example), = by_source_id(out, SPLITS).values()
  assert (feature(example, 'image/width'), feature(example, 'image/height')) == ([320], [200])
  pixels = tf.io.decode_image(feature(example, 'image/encoded')[0]).numpy()
  assert pixels.shape == (200, 320, 3)
  reference = np.asarray(upright.resize(size, Image.Resampling.BILINEAR), dtype=np.float32)
  assert np.abs(pixels.astype(np.float32) - reference).mean() < 8  # upright, same picture
  sideways = np.asarray(stored.resize((200, 320), Image.Resampling.BILINEAR), dtype=np.float32)
  assert np.abs(pixels[:, :200].astype(np.float32) - sideways[:200]).mean() > 30  # not sideways
  (label, class_id, box, _, area), = objects_of(example)
  assert (label, class_id) == ('pagoda', 1)
  np.testing.assert_allclose(box, (ux0, uy0, ux1, uy1), atol=1e-3)
  x0, y0, x1, y1 = (round(box[0] * 320), round(box[1] * 200), round(box[2] * 320),
                    round(box[3] * 200))
  inside = pixels[y0:y1, x0:x1].astype(np.float32)
  assert np.abs(inside - reference[y0:y1, x0:x1]).mean() < 8  # the box holds the pagoda
  assert area == pytest.approx((x1 - x0) * (y1 - y0), rel=0.05)


def test_coco_folder_through_tfx_with_a_transform(tmp_path, photos):
  """input_base holding a COCO JSON (images elsewhere, image_root), resized in the
  pipeline; StatisticsGen and SchemaGen read the detection records unchanged."""
  import tensorflow_data_validation as tfdv
  from tfx import v1 as tfx
  from runs import run
  from tfrecorder_component import ImageExampleGen
  from tensorflow_metadata.proto.v0 import schema_pb2
  from tfrecorder_component.adapters.component.mlmd import latest_output

  (tmp_path / 'annotations').mkdir()
  coco = write_coco(tmp_path / 'annotations' / 'instances.json')
  gen = ImageExampleGen(input_base=str(tmp_path / 'annotations'), image_root=str(photos),
                        image_transform={'longest_side': 320, 'encode': 'png'})
  stats = tfx.components.StatisticsGen(examples=gen.outputs['examples'])
  schema = tfx.components.SchemaGen(statistics=stats.outputs['statistics'])
  config = run([gen, stats, schema], str(tmp_path / 'tfx'), 'coco')

  examples = latest_output(config, 'coco', 'ImageExampleGen', 'examples')
  assert examples.get_int_custom_property('objects_written') == 4
  records = by_coco_file_name(examples.uri, SPLITS, coco)
  assert sorted(records) == sorted(OBJECTS)
  for name, (_, example) in records.items():
    assert feature(example, 'image/format') == [b'png']
    pixels = tf.io.decode_image(feature(example, 'image/encoded')[0])
    assert tuple(pixels.shape) == (214, 320, 3)
    assert (feature(example, 'image/height'), feature(example, 'image/width')) == ([214], [320])
    got = objects_of(example)
    for g, w in zip(got, expected_objects(name, CATEGORIES)):  # boxes survive the resize
      assert g[:2] == w[:2]
      np.testing.assert_allclose(g[2], w[2], atol=2e-3)
  schema_uri = latest_output(config, 'coco', 'SchemaGen', 'schema').uri
  inferred = tfdv.load_schema_text(os.path.join(schema_uri, 'schema.pbtxt'))
  types = {f.name: f.type for f in inferred.feature}
  assert types['image/object/bbox/xmin'] == schema_pb2.FLOAT
  assert types['image/object/class/label'] == schema_pb2.INT
