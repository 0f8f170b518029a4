"""Our output read by TF Model Garden's own vision dataloaders (tf-models-official 2.16.0
in the consumers environment, scripts/consumers-env, never the product's; one script a
test, its JSON read back): the detection decoder with masks and `process_source_id`,
which parses `image/source_id` as an int64 (COCO's image id; `source_id='number'` for the
formats without one, where the image URI fails it); the label-map decoder over our
`label_map.csv`, with a category declared but never annotated keeping its id; the
segmentation and classification parsers, the latter decoding JPEG only by default.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from PIL import Image

import tfrecorder_component as trc
from consumer_envs import env_python, run_json
from images import write_image, write_text
from records import feature, read_split
from tfrecorder_component.errors import UsageError
from tfrecorder_component.record import labels as labels_lib
from tfrecorder_component.record.example import uri_number
from tfrecorder_component.steps import duplicates
from tfrecorder_component.steps.row import RecordStat

H, W = 48, 64
TRAIN = {'train': 1}


@pytest.fixture(scope='session', autouse=True)
def consumers() -> str:
  """The consumers environment's python, built once (from its lock) for the session."""
  return env_python('consumers')


def _image(path, seed: int) -> bytes:
  return write_image(str(path), 'PNG' if str(path).endswith('.png') else 'JPEG',
                     height=H, width=W, seed=seed)


# COCO over three images whose ids are neither 1, 2, 3 nor in file order; `bird` is
# declared and never annotated, `animals` (id 0) is a supercategory as Roboflow's exports
# declare one.
COCO_IMAGES = {'a.jpg': 101, 'b.png': 205, 'c.jpg': 9}
COCO_OBJECTS = {'a.jpg': [(1, [4, 6, 20, 16]), (2, [30, 20, 24, 20])],
                'b.png': [(2, [10, 10, 30, 30])], 'c.jpg': [(1, [0, 0, 10, 10])]}
COCO_CATEGORIES = [{'id': 0, 'name': 'animals'}, {'id': 1, 'name': 'cat'},
                   {'id': 2, 'name': 'dog'}, {'id': 4, 'name': 'bird'}]


def _coco(folder, images=COCO_IMAGES, objects=COCO_OBJECTS, categories=COCO_CATEGORIES,
          name='annotations.json', seed=0) -> str:
  """Writes a COCO file `name` over `images` ({file name: image id}, each written with
  its own pixels from `seed` on) and their `objects` into `folder`; returns its path."""
  coco = {'images': [], 'annotations': [], 'categories': categories}
  for seed, (file_name, image_id) in enumerate(images.items(), start=seed):
    _image(folder / file_name, seed)
    coco['images'].append({'id': image_id, 'file_name': file_name, 'height': H, 'width': W})
    for category, (x, y, w, h) in objects.get(file_name, ()):
      coco['annotations'].append({
          'id': len(coco['annotations']) + 1, 'image_id': image_id, 'category_id': category,
          'bbox': [x, y, w, h], 'area': w * h, 'iscrowd': 0,
          'segmentation': [[x, y, x + w, y, x + w, y + h, x, y + h]]})
  return write_text(str(folder / name), json.dumps(coco))


def _summary(out) -> dict:
  with open(os.path.join(out, 'report', 'summary.json'), encoding='utf-8') as f:
    return json.load(f)


# argv[1]: an output folder. Its records through TfExampleDecoder(include_mask=True) and
# process_source_id, and TfExampleDecoderLabelMap over its label_map.csv (which maps
# image/object/class/text to ids); `lookup`: what that map's table gives some names.
_DETECTION = """
import glob, json, sys
import tensorflow as tf
from official.vision.dataloaders import tf_example_decoder, tf_example_label_map_decoder, utils
out = sys.argv[1]
decoder = tf_example_decoder.TfExampleDecoder(include_mask=True)
by_name = tf_example_label_map_decoder.TfExampleDecoderLabelMap(
    label_map=out + '/label_map.csv', include_mask=True)
records = []
for raw in tf.data.TFRecordDataset(sorted(glob.glob(out + '/Split-*/*.gz')),
                                   compression_type='GZIP'):
  decoded, named = decoder.decode(raw), by_name.decode(raw)
  records.append({
      'source_id': int(utils.process_source_id(decoded['source_id']).numpy()),
      'classes': decoded['groundtruth_classes'].numpy().tolist(),
      'classes_by_name': named['groundtruth_classes'].numpy().tolist(),
      'boxes': decoded['groundtruth_boxes'].numpy().tolist(),
      'masks': list(decoded['groundtruth_instance_masks'].shape),
      'mask_sums': decoded['groundtruth_instance_masks'].numpy().sum(axis=(1, 2)).tolist()})
lookup = by_name._name_to_id_table.lookup(  # the table built from label_map.csv
    tf.constant(['cat', 'dog', 'bird', 'animals'])).numpy().tolist()
print(json.dumps({'records': records, 'lookup': lookup}))
"""


def test_coco_records_read_by_model_garden_with_coco_ids_and_the_csv_label_map(tmp_path):
  """Model Garden's detection decoder reads COCO's image ids back through
  process_source_id (create_coco_tf_record's `str(image['id'])`), the classes its label-map
  decoder gives from our label_map.csv and the names are the category ids the records
  hold, and the masks come as [objects, H, W]. `bird`, declared with no annotation, keeps
  id 4 in every label file and is reported; `animals` (id 0, the background) is left out
  and named."""
  source = _coco(tmp_path / 'data')
  out = str(tmp_path / 'out')
  result = trc.convert(source, out, include_masks=True, splits=TRAIN)
  assert result.rows_failed == 0
  with open(os.path.join(out, 'label_map.csv'), encoding='utf-8') as f:
    assert f.read() == '1,cat\n2,dog\n4,bird\n'
  with open(os.path.join(out, 'labels.txt'), encoding='utf-8') as f:
    assert f.read() == 'cat\ndog\n\nbird\n'  # line k is id 1 + k: id 3 is no class
  assert trc.read_label_map(out) == {'cat': 1, 'dog': 2, 'bird': 4}
  summary = _summary(out)
  assert summary['labels_declared_only'] == ['bird'] and summary['labels_left_out'] == ['bird']
  assert summary['label_id_conflicts'] == [
      "'animals' (declared with id 0, no annotation) is left out: id 0 is the background"]
  assert labels_lib.label_notes(summary)[0] == (
      'Classes declared with no annotation (each keeps its id in the label files, no record '
      "holds it): 'bird' (id 4)")
  ours = {feature(e, 'image/source_id')[0].decode(): e for e in read_split(f'{out}/Split-train')}
  assert sorted(ours) == sorted(str(i) for i in COCO_IMAGES.values())
  for name, image_id in COCO_IMAGES.items():  # the file name stays in image/filename
    assert feature(ours[str(image_id)], 'image/filename') == [name.encode()]

  read = run_json('consumers', _DETECTION, out)
  by_id = {r['source_id']: r for r in read['records']}
  assert sorted(by_id) == sorted(COCO_IMAGES.values())
  for name, image_id in COCO_IMAGES.items():
    record, objects = by_id[image_id], COCO_OBJECTS[name]
    assert record['classes'] == [c for c, _ in objects]
    assert record['classes_by_name'] == record['classes'] == feature(
        ours[str(image_id)], 'image/object/class/label')
    np.testing.assert_allclose(record['boxes'], [[y / H, x / W, (y + h) / H, (x + w) / W]
                                                 for _, (x, y, w, h) in objects], atol=1e-6)
    assert record['masks'] == [len(objects), H, W]
    assert record['mask_sums'] == [w * h for _, (x, y, w, h) in objects]
  assert read['lookup'] == [1, 2, 4, -1]


def test_the_label_files_read_back_with_the_ids_they_hold(tmp_path):
  """label_map.pbtxt (an output folder), label_map.csv and labels.txt of one output give
  the same ids to a run that keeps them, the gap of labels.txt's empty line and the
  declared `bird` included; a class new to the next span whose COCO id `bird` holds
  takes the next free id."""
  first = str(tmp_path / 'span-1')
  trc.convert(_coco(tmp_path / 'data'), first, splits=TRAIN)
  want = {'cat': 1, 'dog': 2, 'bird': 4}
  for given in (first, f'{first}/label_map.pbtxt', f'{first}/label_map.csv',
                f'{first}/labels.txt'):
    assert labels_lib.given_label_map(given).ids(1) == want, given
  # Span 2 annotates a bird, and a fish that no category of span 1 had (its own id 4).
  second = _coco(tmp_path / 'span-2', images={'d.jpg': 1, 'e.jpg': 2},
                 objects={'d.jpg': [(4, [1, 1, 9, 9])], 'e.jpg': [(4, [2, 2, 9, 9])]},
                 categories=[{'id': 1, 'name': 'cat'}, {'id': 4, 'name': 'fish'}])
  for k, given in enumerate(('label_map.csv', 'labels.txt', 'label_map.pbtxt')):
    out = str(tmp_path / f'span-2-{k}')
    trc.convert(second, out, splits=TRAIN, label_map=f'{first}/{given}',
                append_new_labels=True)
    assert trc.read_label_map(out) == dict(want, fish=5), given
    with open(os.path.join(out, 'labels.txt'), encoding='utf-8') as f:
      assert f.read() == 'cat\ndog\n\nbird\nfish\n'


def test_a_csv_label_map_quotes_names_and_is_refused_by_line(tmp_path):
  """A name with a comma or a quote is quoted as Python's csv (and Model Garden's reader)
  reads it; a line that is not `id,name` is refused naming the file and the line."""
  ids = {'a, b': 1, 'say "hi"': 2, 'plain': 3}
  text = labels_lib.label_map_csv(ids)
  assert text == '1,"a, b"\n2,"say ""hi"""\n3,plain\n'
  path = write_text(str(tmp_path / 'map.csv'), text)
  assert dict(labels_lib.read_given_label_map(path).items) == ids
  bad = write_text(str(tmp_path / 'bad.csv'), 'id,name\n1,cat\n')
  with pytest.raises(UsageError, match=r'bad.csv: line 1 must be `id,name`'):
    labels_lib.read_given_label_map(bad)
  twice = write_text(str(tmp_path / 'twice.csv'), '1,cat\n2,cat\n')
  with pytest.raises(UsageError, match=r"twice.csv: line 2: name 'cat' is given twice"):
    labels_lib.read_given_label_map(twice)


# argv[1:]: output folders of 3 records. Each record's image/source_id through
# TfExampleDecoder and process_source_id: the int64 parsed, or the error; and the source
# ids of RetinaNet's evaluation input (the retinanet_resnetfpn_coco experiment's
# validation_data over the folder's GZIP shards, as a trainer configures it), or the error.
_SOURCE_IDS = """
import glob, json, sys
import tensorflow as tf
from official.core import exp_factory, task_factory
from official.vision import registry_imports  # the experiments
from official.vision.dataloaders import tf_example_decoder, utils
decoder = tf_example_decoder.TfExampleDecoder()
read = {}
for out in sys.argv[1:]:
  rows = []
  for raw in tf.data.TFRecordDataset(sorted(glob.glob(out + '/Split-*/*.gz')),
                                     compression_type='GZIP'):
    written = decoder.decode(raw)['source_id']
    try:
      rows.append([written.numpy().decode(), int(utils.process_source_id(written).numpy())])
    except tf.errors.InvalidArgumentError as e:
      rows.append([written.numpy().decode(), type(e).__name__ + ': ' + e.message])
  config = exp_factory.get_exp_config('retinanet_resnetfpn_coco')
  config.task.model.input_size = [128, 128, 3]
  data = config.task.validation_data
  data.input_path, data.file_type, data.global_batch_size = (
      out + '/Split-*/*', 'tfrecord_compressed', 3)
  try:
    _, labels = next(iter(task_factory.get_task(config.task).build_inputs(data)))
    pipeline = labels['groundtruths']['source_id'].numpy().tolist()
  except tf.errors.InvalidArgumentError as e:
    pipeline = type(e).__name__ + ': ' + e.message
  read[out] = {'records': rows, 'retinanet': pipeline}
print(json.dumps(read))
"""


def test_source_id_number_is_what_process_source_id_parses_where_the_uri_fails(tmp_path):
  """A Pascal VOC output's source ids are its image URIs by default, which Model Garden's
  process_source_id refuses (StringToNumber), and with it RetinaNet's evaluation input:
  the reason for `source_id='number'`, whose ids both parse to the distinct numbers we
  wrote (the URIs' SHA-256, 63 bits)."""
  data = tmp_path / 'voc'
  names = ['x.jpg', 'y.jpg', 'z.png']
  for k, name in enumerate(names):
    _image(data / name, k)
    write_text(str(data / f'{name[0]}.xml'), (
        f'<annotation><filename>{name}</filename><size><width>{W}</width><height>{H}'
        f'</height><depth>3</depth></size><object><name>cat</name><bndbox><xmin>4</xmin>'
        '<ymin>6</ymin><xmax>30</xmax><ymax>40</ymax></bndbox></object></annotation>'))
  default, number = str(tmp_path / 'default'), str(tmp_path / 'number')
  trc.convert(str(data), default, splits=TRAIN)
  trc.convert(str(data), number, splits=TRAIN, source_id='number')
  read = run_json('consumers', _SOURCE_IDS, default, number)
  assert sorted(written for written, _ in read[default]['records']) == names
  for written, parsed in read[default]['records']:
    assert parsed.startswith('InvalidArgumentError: ') and (
        f'StringToNumberOp could not correctly convert string: {written}' in parsed)
  assert read[default]['retinanet'].startswith('InvalidArgumentError: ') and (
      'StringToNumberOp could not correctly convert string: ' in read[default]['retinanet'])
  rows = read[number]['records']
  assert sorted(parsed for _, parsed in rows) == sorted(uri_number(n) for n in names)
  assert all(str(parsed) == written for written, parsed in rows)
  assert len({parsed for _, parsed in rows}) == 3 and all(0 <= p < 2**63 for _, p in rows)
  assert sorted(read[number]['retinanet']) == sorted(parsed for _, parsed in rows)
  assert _summary(number)['duplicates']['source_id_groups'] == 0
  # source_id='uri' keeps COCO's file names, as before.
  uri = str(tmp_path / 'uri')
  trc.convert(_coco(tmp_path / 'coco'), uri, splits=TRAIN, source_id='uri')
  assert sorted(feature(e, 'image/source_id')[0].decode()
                for e in read_split(f'{uri}/Split-train')) == sorted(COCO_IMAGES)


def test_one_source_id_held_by_different_images_is_reported(tmp_path):
  """Two COCO files numbering their images alike: across split folders (one per split,
  as Roboflow exports them) a warning that an evaluation of one split tells them apart;
  in one split, one that Model Garden's COCO evaluation mixes them up. The index finds
  a `number` collision the same way; the same image listed twice is a duplicate only."""
  for k, split in enumerate(('train', 'valid')):
    _coco(tmp_path / 'roboflow' / split, images={'a.jpg': 0, 'b.jpg': 1}, objects={},
          categories=[{'id': 1, 'name': 'cat'}], name='_annotations.coco.json', seed=2 * k)
  out = str(tmp_path / 'out')
  trc.convert(str(tmp_path / 'roboflow'), out)
  counts = _summary(out)['duplicates']
  assert (counts['source_id_groups'], counts['source_id_groups_in_a_split']) == (2, 0)
  assert counts['first_source_ids'][0] == {'source_id': '0', 'uris': ['a.jpg', 'a.jpg'],
                                           'splits': ['eval', 'train'], 'cross_split': True,
                                           'in_a_split': False}
  warning, = [w for w in _summary(out)['warnings'] if 'image/source_id' in w]
  assert warning.startswith("2 image/source_id values are held by records of different "
                            "images, e.g. '0': a.jpg (eval), a.jpg (train); each in "
                            'different splits only')
  with open(os.path.join(out, 'report', 'duplicates.jsonl'), encoding='utf-8') as f:
    assert f.read() == ''  # no image is written twice

  one = tmp_path / 'one'
  _coco(one, images={'a.jpg': 5}, objects={}, categories=[], name='first.json')
  _coco(one, images={'b.jpg': 5}, objects={}, categories=[], name='second.json', seed=1)
  out = str(tmp_path / 'out-one')
  trc.convert(str(one), out, splits=TRAIN)
  counts = _summary(out)['duplicates']
  assert (counts['source_id_groups'], counts['source_id_groups_in_a_split']) == (1, 1)
  warning, = [w for w in _summary(out)['warnings'] if 'image/source_id' in w]
  assert '1 within one split' in warning and '--source-id number' in warning

  # URIs given one number (as a SHA-256 collision would), and one URI listed twice: a
  # split holding two images of the number, and the image listed twice, in one split.
  stat = lambda uri, sha, split: RecordStat(split, (), sha, uri, source_id='42')
  path = str(tmp_path / 'run')
  duplicates.write_run(path, list(duplicates.entries([
      stat('p.jpg', '11' * 32, 'train'), stat('q.jpg', '22' * 32, 'eval'),
      stat('r.jpg', '33' * 32, 'train')])))
  assert list(duplicates.merge_range((0, 256, (path,)))) == [
      {'source_id': '42', 'uris': ['p.jpg', 'q.jpg', 'r.jpg'],
       'splits': ['train', 'eval', 'train'], 'cross_split': True, 'in_a_split': True}]
  duplicates.write_run(path, list(duplicates.entries([
      stat('p.jpg', '11' * 32, 'train'), stat('p.jpg', '11' * 32, 'train'),
      stat('q.jpg', '22' * 32, 'eval')])))
  groups = list(duplicates.merge_range((0, 256, (path,))))
  assert [g['uris'] for g in groups if not duplicates.is_source_id_group(g)] == [
      ['p.jpg', 'p.jpg']]  # a duplicate image
  assert [g['in_a_split'] for g in groups if duplicates.is_source_id_group(g)] == [False]
  twice = list(duplicates.entries([RecordStat('train', (), '11' * 32, 'p.jpg', source_id='7'),
                                   RecordStat('eval', (), '11' * 32, 'p.jpg', source_id='7')]))
  duplicates.write_run(path, twice)
  assert [sorted(g) for g in duplicates.merge_range((0, 256, (path,)))] == [
      ['cross_split', 'sha256', 'splits', 'uris']]  # a duplicate image, no source id group


# argv[1]: a segmentation output. Each record through segmentation_input's Decoder and
# its Parser's eval parse: the image's shape, the mask and where it is valid.
_SEGMENTATION = """
import glob, json, sys
import tensorflow as tf
from official.vision.dataloaders import segmentation_input
decoder = segmentation_input.Decoder()
parse = segmentation_input.Parser(output_size=[48, 64]).parse_fn(is_training=False)
records = []
for raw in tf.data.TFRecordDataset(sorted(glob.glob(sys.argv[1] + '/Split-train/*.gz')),
                                   compression_type='GZIP'):
  image, labels = parse(decoder.decode(raw))
  name = tf.io.parse_single_example(raw, {'image/filename': tf.io.FixedLenFeature([], tf.string)})
  records.append({'filename': name['image/filename'].numpy().decode(),
                  'image': image.shape.as_list(),
                  'mask': labels['masks'].numpy().reshape(48, 64).astype(int).tolist(),
                  'valid': labels['valid_masks'].numpy().reshape(48, 64).astype(int).tolist()})
print(json.dumps(records))
"""


def test_segmentation_csv_read_by_model_garden_segmentation_parser(tmp_path):
  """A segmentation CSV's class masks (class indices, 255 ignored) come back exactly
  from Model Garden's segmentation Decoder and Parser, a JPEG and a PNG image alike."""
  data = tmp_path / 'seg'
  (data / 'masks').mkdir(parents=True)
  want, rows = {}, ['image_uri,mask_uri']
  for k, name in enumerate(['s1.jpg', 's2.png']):
    _image(data / name, k)
    mask = np.zeros((H, W), np.uint8)
    mask[5:20, 10:40] = 1 + k
    mask[30:, :8] = 255
    Image.fromarray(mask, 'L').save(data / 'masks' / f's{k + 1}.png')
    want[name] = mask
    rows.append(f'{name},masks/s{k + 1}.png')
  out = str(tmp_path / 'out')
  trc.convert(write_text(str(data / 'seg.csv'), '\n'.join(rows) + '\n'), out, splits=TRAIN)
  read = run_json('consumers', _SEGMENTATION, out)
  assert sorted(r['filename'] for r in read) == sorted(want)
  for record in read:
    assert record['image'] == [H, W, 3]
    np.testing.assert_array_equal(record['mask'], want[record['filename']])
    np.testing.assert_array_equal(record['valid'], want[record['filename']] != 255)


# argv[1:]: classification outputs. Each record through classification_input's Decoder
# and its Parser, training and eval, with decode_jpeg_only True (its default) and False:
# [format, decode_jpeg_only, training, label or the error].
_CLASSIFICATION = """
import glob, json, sys
import tensorflow as tf
from official.vision.dataloaders import classification_input
decoder = classification_input.Decoder()
read = {}
for out in sys.argv[1:]:
  rows = read[out] = []
  for raw in tf.data.TFRecordDataset(sorted(glob.glob(out + '/Split-train/*.gz')),
                                     compression_type='GZIP'):
    fmt = tf.io.parse_single_example(raw, {'image/format': tf.io.FixedLenFeature([], tf.string)})
    decoded = decoder.decode(raw)
    for jpeg_only in (True, False):
      parser = classification_input.Parser(output_size=[32, 32], num_classes=2,
                                            decode_jpeg_only=jpeg_only)
      for training in (True, False):
        try:
          image, label = parser.parse_fn(training)(decoded)
          got = [int(label), image.shape.as_list()]
        except tf.errors.InvalidArgumentError as e:
          got = type(e).__name__ + ': ' + e.message
        rows.append([fmt['image/format'].numpy().decode(), jpeg_only, training, got])
print(json.dumps(read))
"""


def test_classification_parser_decodes_jpeg_only_unless_told(tmp_path):
  """Model Garden's classification Parser decodes JPEG only by default
  (`decode_jpeg_only=True`: tf.image.extract_jpeg_shape): a PNG record fails it, and
  reads with `decode_jpeg_only=False`; with `image_transform={'encode': 'jpeg'}` every
  record is JPEG and the default reads them all, with our 0-based ids."""
  data = tmp_path / 'cls'
  names = ['cat-1.jpg', 'cat-2.png', 'dog-1.jpg', 'dog-2.png']
  for k, name in enumerate(names):
    _image(data / name, k)
  manifest = write_text(str(data / 'manifest.csv'),
                        ''.join(f'TRAIN,{n},{n.split("-")[0]}\n' for n in names))
  mixed, jpeg = str(tmp_path / 'mixed'), str(tmp_path / 'jpeg')
  trc.convert(manifest, mixed)
  trc.convert(manifest, jpeg, image_transform={'encode': 'jpeg'})
  assert trc.read_label_map(mixed) == {'cat': 0, 'dog': 1}
  read = run_json('consumers', _CLASSIFICATION, mixed, jpeg)
  labels = sorted(['cat', 'dog'].index(n.split('-')[0]) for n in names)
  for out, formats in ((mixed, ['jpeg', 'png']), (jpeg, ['jpeg'])):
    rows = read[out]
    assert sorted({f for f, *_ in rows}) == formats
    for fmt, jpeg_only, _, got in rows:
      if fmt == 'png' and jpeg_only:
        assert got.startswith('InvalidArgumentError: ') and 'Invalid JPEG data' in got
      else:
        assert got[1] == [32, 32, 3]
    for jpeg_only in (True, False):
      for training in (True, False):
        read_labels = [got[0] for fmt, j, t, got in rows
                       if (j, t) == (jpeg_only, training) and not isinstance(got, str)]
        if out == jpeg or not jpeg_only:
          assert sorted(read_labels) == labels
