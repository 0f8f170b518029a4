"""Semantic segmentation end to end: class masks beside real photos, from a segmentation
CSV and from Vertex AI JSONL, read back with Model Garden's segmentation decoder, kept
pixel-aligned through EXIF orientation and every resize mode, and refused when wrong.

The photos are scikit-learn's bundled sample images (china.jpg, flower.jpg; 640x427);
the masks are drawn here.
"""
import io
import json
import os
import shutil

import numpy as np
import pytest
import sklearn.datasets
import tensorflow as tf
from PIL import Image

import tfrecorder_component as trc
from records import by_source_id, feature
from tfrecorder_component.errors import ManifestError
from tfrecorder_component.record.labels import read_label_map
from tfrecorder_component.steps.policy import TooManyFailedRows

PHOTOS = os.path.join(os.path.dirname(sklearn.datasets.__file__), 'images')
W, H = 640, 427
SPLITS = ('train', 'eval', 'test')
IGNORE = 255
MASK_KEY = 'image/segmentation/class/encoded'
FORMAT_KEY = 'image/segmentation/class/format'
# A VOC-like palette: index i is painted with a colour that is not i in any channel.
VOC_PALETTE = [0, 0, 0, 128, 0, 0, 0, 128, 0, 128, 128, 0] + [0, 0, 0] * 251 + [224, 224, 192]


def china_mask():
  """Classes 0..2 on china.jpg: 1 on the pagoda, 2 on the tree, an ignore band on top."""
  mask = np.zeros((H, W), np.uint8)
  mask[54:250, 262:392] = 1
  mask[205:427, 0:170] = 2
  mask[0:12, :] = IGNORE
  return mask


def flower_mask():
  """Classes 0, 1 and 3 on flower.jpg, with an ignore ring around the flower."""
  mask = np.zeros((H, W), np.uint8)
  mask[38:398, 143:484] = IGNORE
  mask[43:393, 148:479] = 3
  mask[300:360, 20:80] = 1
  return mask


def palette_png(mask):
  im = Image.fromarray(mask, 'P')
  im.putpalette(VOC_PALETTE)
  out = io.BytesIO()
  im.save(out, 'PNG')
  return out.getvalue()


def grey_png(mask):
  out = io.BytesIO()
  Image.fromarray(mask, 'L').save(out, 'PNG')
  return out.getvalue()


def rgb_png(pixels):
  out = io.BytesIO()
  Image.fromarray(pixels, 'RGB').save(out, 'PNG')
  return out.getvalue()


@pytest.fixture(scope='module')
def photos(tmp_path_factory):
  d = tmp_path_factory.mktemp('photos')
  for name in ('china.jpg', 'flower.jpg'):
    shutil.copy(os.path.join(PHOTOS, name), d / name)
  (d / 'masks').mkdir()
  (d / 'masks' / 'china.png').write_bytes(palette_png(china_mask()))
  (d / 'masks' / 'flower.png').write_bytes(grey_png(flower_mask()))
  return d


def decoded_mask(example):
  """The class mask as Model Garden reads it: decode_image(channels=1), (height, width)."""
  height, width = feature(example, 'image/height')[0], feature(example, 'image/width')[0]
  data = feature(example, MASK_KEY)[0]
  return tf.reshape(tf.io.decode_image(data, channels=1), (height, width)).numpy()


def errors_of(result):
  with open(os.path.join(result.report_dir, 'errors.jsonl')) as f:
    return sorted((json.loads(l) for l in f), key=lambda e: e['row'])


# --- segmentation CSV ----------------------------------------------------------------


def test_segmentation_csv_writes_the_class_masks_model_garden_reads(tmp_path, photos):
  """A palette mask (its indices, not its colours) and a greyscale mask, with a 255
  ignore region, come back exactly through Model Garden's segmentation Decoder and
  Parser; the photos' bytes are unchanged; the extra column is a feature."""
  segmentation_input = pytest.importorskip('official.vision.dataloaders.segmentation_input',
                                           reason='tf-models-official is not in this stack')
  (photos / 'seg.csv').write_text('ml_use,image_uri,mask_uri,weight\n'
                                  'TRAIN,china.jpg,masks/china.png,0.5\n'
                                  'VALIDATION,flower.jpg,masks/flower.png,2\n')
  result = trc.convert(str(photos / 'seg.csv'), str(tmp_path / 'out'))
  assert result.records_per_split == {'train': 1, 'eval': 1, 'test': 0}
  assert result.rows_failed == 0 and result.errors_per_reason == {}
  records = by_source_id(str(tmp_path / 'out'), SPLITS)
  assert {name: split for name, (split, _) in records.items()} == {
      'china.jpg': 'train', 'flower.jpg': 'eval'}
  want = {'china.jpg': china_mask(), 'flower.jpg': flower_mask()}
  decoder = segmentation_input.Decoder()
  parser = segmentation_input.Parser(output_size=[H, W], preserve_aspect_ratio=True)
  for name, (_, example) in records.items():
    assert feature(example, 'image/encoded') == [(photos / name).read_bytes()]
    assert feature(example, 'image/format') == [b'jpeg']
    assert (feature(example, 'image/height'), feature(example, 'image/width')) == ([H], [W])
    assert feature(example, FORMAT_KEY) == [b'png']
    assert feature(example, 'image/class/label') == []
    assert feature(example, 'weight') == pytest.approx([{'china.jpg': 0.5,
                                                         'flower.jpg': 2.0}[name]])
    # The stored mask is a single-channel PNG.
    with Image.open(io.BytesIO(feature(example, MASK_KEY)[0])) as im:
      assert (im.format, im.mode, im.size) == ('PNG', 'L', (W, H))
    np.testing.assert_array_equal(decoded_mask(example), want[name])

    data = decoder.decode(tf.constant(example.SerializeToString()))
    label = tf.io.decode_image(data[MASK_KEY], channels=1)
    label = tf.reshape(label, (int(data['image/height']), int(data['image/width']))).numpy()
    np.testing.assert_array_equal(label, want[name])
    image, label = parser._prepare_image_and_label(data)  # pylint: disable=protected-access
    assert tuple(image.shape) == (H, W, 3)
    np.testing.assert_array_equal(label.numpy().reshape(H, W), want[name].astype(np.float32))
    _, labels = parser._parse_eval_data(data)  # pylint: disable=protected-access
    np.testing.assert_array_equal(labels['masks'].numpy().reshape(H, W), want[name])
    np.testing.assert_array_equal(labels['valid_masks'].numpy().reshape(H, W),
                                  want[name] != IGNORE)
  # No vocabulary in this form: the pixel values are the classes.
  assert read_label_map(str(tmp_path / 'out')) == {}


@pytest.mark.parametrize('header', ['split,image,mask', 'path,segmentation_mask',
                                    'uri,mask_path,split', 'image_uri,mask_file'])
def test_segmentation_csv_is_detected_by_its_header_names(tmp_path, photos, header):
  names = header.split(',')
  values = {'split': 'TEST', 'image': 'china.jpg', 'path': 'china.jpg', 'uri': 'china.jpg',
            'image_uri': 'china.jpg'}
  row = ','.join(values.get(n, 'masks/china.png') for n in names)
  (tmp_path / 'm.csv').write_text(f'{header}\n{row}\n')
  result = trc.convert(str(tmp_path / 'm.csv'), str(tmp_path / 'out'), splits={'train': 1},
                       image_root=str(photos))
  split = 'test' if 'split' in names else 'train'
  assert result.records_per_split[split] == 1 and result.records_written == 1
  (_, example), = by_source_id(str(tmp_path / 'out'), ['train', 'eval', 'test']).values()
  np.testing.assert_array_equal(decoded_mask(example), china_mask())


# --- Vertex AI JSONL ---------------------------------------------------------------------


def colour_line(image, mask, colours, ml_use='training'):
  return json.dumps({
      'imageGcsUri': image,
      'segmentationAnnotation': {'maskGcsUri': mask, 'annotationSpecColors': [
          {'color': {'red': r, 'green': g, 'blue': b}, 'displayName': name}
          for name, (r, g, b) in colours.items()]},
      'dataItemResourceLabels': {'aiplatform.googleapis.com/ml_use': ml_use}})


def test_vertex_jsonl_colour_masks_become_label_map_ids(tmp_path, photos):
  """Listed colours become their class's id (sorted names, from 1); unlisted black is
  0; a row painting an unlisted colour fails naming it, and its class keeps its id."""
  cat, dog, bird = (255, 0, 0), (0, 255, 0), (128, 128, 0)
  china = np.zeros((H, W, 3), np.uint8)
  china[54:250, 262:392] = cat
  china[205:427, 0:170] = dog
  china[0:20, 600:640] = bird
  flower = np.zeros((H, W, 3), np.uint8)
  flower[43:393, 148:479] = dog
  bad = np.zeros((H, W, 3), np.uint8)
  bad[10:20, 10:30] = (255, 255, 0)  # 'ant'
  bad[100:107, 200:210] = (0, 0, 255)  # listed by nobody: 70 pixels
  for name, pixels in (('china_c.png', china), ('flower_c.png', flower), ('bad.png', bad)):
    (photos / 'masks' / name).write_bytes(rgb_png(pixels))
  spec = {'cat': (1.0, 0, 0), 'dog': (0, 1, 0.0), 'bird': (0.5, 0.5, 0)}  # 0.5 -> 128
  lines = [colour_line('china.jpg', 'masks/china_c.png', spec),
           colour_line('flower.jpg', 'masks/flower_c.png', {'dog': (0, 1, 0)}),
           colour_line('china.jpg', 'masks/bad.png', {'ant': (1, 1, 0)}, ml_use='test')]
  (photos / 'seg.jsonl').write_text('\n'.join(lines) + '\n')
  result = trc.convert(str(photos / 'seg.jsonl'), str(tmp_path / 'out'), max_error_ratio=0.5)
  ids = {'ant': 1, 'bird': 2, 'cat': 3, 'dog': 4}  # 'ant' kept: mask ids never move
  assert read_label_map(str(tmp_path / 'out')) == ids
  with open(tmp_path / 'out' / 'label_map.pbtxt') as f:
    label_map = f.read()
  assert 'name: "ant"\n  id: 1' in label_map and 'name: "dog"\n  id: 4' in label_map
  with open(tmp_path / 'out' / 'labels.txt') as f:
    assert f.read().split() == ['ant', 'bird', 'cat', 'dog']
  assert result.records_per_split == {'train': 2, 'eval': 0, 'test': 0}
  assert result.rows_failed == 1 and result.errors_per_reason == {'bad_mask': 1}
  (error,) = errors_of(result)
  assert error['reason'] == 'bad_mask' and error['row'] == 3
  assert error['message'].startswith("mask 'masks/bad.png'")
  assert '#0000ff' in error['message'] and '70 mask pixel' in error['message']
  assert '#ffff00' not in error['message']  # the listed colour is not blamed

  records = by_source_id(str(tmp_path / 'out'), SPLITS)
  assert sorted(records) == ['china.jpg', 'flower.jpg']
  want = np.zeros((H, W), np.uint8)
  want[54:250, 262:392] = ids['cat']
  want[205:427, 0:170] = ids['dog']
  want[0:20, 600:640] = ids['bird']
  np.testing.assert_array_equal(decoded_mask(records['china.jpg'][1]), want)
  want = np.zeros((H, W), np.uint8)
  want[43:393, 148:479] = ids['dog']
  np.testing.assert_array_equal(decoded_mask(records['flower.jpg'][1]), want)
  assert feature(records['china.jpg'][1], FORMAT_KEY) == [b'png']
  assert feature(records['china.jpg'][1], 'image/encoded') == [(photos / 'china.jpg').read_bytes()]


# --- transforms ---------------------------------------------------------------------


def rotated_photo(directory):
  """china.jpg stored sideways (427 wide, 640 high) with EXIF orientation 6, and the
  upright photo as it decodes from that file."""
  upright = Image.open(os.path.join(PHOTOS, 'china.jpg')).convert('RGB')
  stored = upright.transpose(Image.Transpose.ROTATE_90)
  exif = Image.Exif()
  exif[0x0112] = 6  # "rotate 90 degrees clockwise to display"
  stored.save(directory / 'sideways.jpg', quality=95, exif=exif.tobytes())
  with Image.open(directory / 'sideways.jpg') as im:
    upright = im.convert('RGB').transpose(Image.Transpose.ROTATE_270)
  assert upright.size == (W, H)
  return upright


def plan(mode, size):
  """(region (x0, y0, x1, y1) of the upright photo in pixels, content size, offset) of
  a resize to `size` by `mode`, computed here."""
  out_w, out_h = size
  if mode == 'stretch':
    return (0.0, 0.0, W, H), size, (0, 0)
  if mode == 'fit':
    s = min(out_w / W, out_h / H)
    content = (round(W * s), round(H * s))
    return (0.0, 0.0, W, H), content, ((out_w - content[0]) // 2, (out_h - content[1]) // 2)
  s = max(out_w / W, out_h / H)  # crop: cover, then cut the middle
  rw, rh = out_w / s, out_h / s
  return ((W - rw) / 2, (H - rh) / 2, (W + rw) / 2, (H + rh) / 2), size, (0, 0)


def reference_mask(mask, mode, size):
  """`mask` (upright) resized by nearest neighbour, computed with numpy; padding 0."""
  (x0, y0, x1, y1), (cw, ch), (ox, oy) = plan(mode, size)
  xs = np.floor(x0 + (np.arange(cw) + 0.5) * (x1 - x0) / cw).astype(int).clip(0, W - 1)
  ys = np.floor(y0 + (np.arange(ch) + 0.5) * (y1 - y0) / ch).astype(int).clip(0, H - 1)
  out = np.zeros((size[1], size[0]), np.uint8)
  out[oy:oy + ch, ox:ox + cw] = mask[np.ix_(ys, xs)]
  return out


def reference_image(upright, mode, size):
  region, content, offset = plan(mode, size)
  canvas = Image.new('RGB', size, (0, 0, 0))
  canvas.paste(upright.resize(content, Image.Resampling.BILINEAR, box=region), offset)
  return np.asarray(canvas, dtype=np.float32)


@pytest.mark.parametrize('transform', [
    {'auto_orient': True, 'size': (320, 200)},
    {'auto_orient': True, 'size': (320, 320), 'resize_mode': 'fit'},
    {'auto_orient': True, 'size': (200, 200), 'resize_mode': 'crop'},
    {'auto_orient': True, 'longest_side': 256},
], ids=['stretch', 'fit', 'crop', 'longest_side'])
def test_masks_stay_pixel_aligned_through_auto_orient_and_resize(tmp_path, transform):
  """The mask is given in the stored (sideways) frame; after orientation and resize it
  is the upright mask resized with nearest neighbour, and the pixels under each class
  are the upright photo's pixels of that region."""
  upright = rotated_photo(tmp_path)
  mask = china_mask()  # upright: 1 on the pagoda, 2 on the tree, 255 band on top
  stored_mask = np.asarray(Image.fromarray(mask, 'L').transpose(Image.Transpose.ROTATE_90))
  assert stored_mask.shape == (W, H)  # the stored frame: 640 high, 427 wide
  (tmp_path / 'mask.png').write_bytes(grey_png(stored_mask))
  (tmp_path / 'm.csv').write_text('image_uri,mask_uri\nsideways.jpg,mask.png\n')
  result = trc.convert(str(tmp_path / 'm.csv'), str(tmp_path / 'out'), splits={'train': 1},
                       image_transform=transform)
  assert result.records_per_split['train'] == 1 and result.rows_failed == 0
  (_, example), = by_source_id(str(tmp_path / 'out'), ['train', 'eval', 'test']).values()

  mode = transform.get('resize_mode', 'stretch')
  size = transform.get('size') or (256, round(H * 256 / W))
  assert (feature(example, 'image/width'), feature(example, 'image/height')) == (
      [size[0]], [size[1]])
  got = decoded_mask(example)
  assert got.shape == (size[1], size[0])
  assert set(np.unique(got)) <= {0, 1, 2, IGNORE}  # class indices, never blended
  want = reference_mask(mask, mode, size)
  assert (got == want).mean() >= 0.99, (got != want).sum()
  for c in (1, 2, IGNORE):  # every class is still there, about the same size
    assert abs(int((got == c).sum()) - int((want == c).sum())) <= 0.03 * (want == c).sum()
  # Not sideways: the stored-frame mask stretched to the output disagrees widely.
  naive = np.asarray(Image.fromarray(stored_mask).resize(size, Image.Resampling.NEAREST))
  assert (got == naive).mean() < 0.8

  pixels = tf.io.decode_image(feature(example, 'image/encoded')[0], channels=3).numpy()
  assert pixels.shape == (size[1], size[0], 3)
  reference = reference_image(upright, mode, size)
  for c in (1, 2):  # the image under the pagoda and the tree is the pagoda and the tree
    under = got == c
    diff = np.abs(pixels[under].astype(np.float32) - reference[under]).mean()
    assert diff < 8, (c, diff)
  if mode == 'fit':  # padding: black image, class 0 (not ignore)
    (_, ch), (_, oy) = plan(mode, size)[1:]
    assert (got[:oy - 1] == 0).all() and (got[oy + ch + 1:] == 0).all()
    assert pixels[:oy - 1].max() < 16 and pixels[oy + ch + 1:].max() < 16


# --- bad input ---------------------------------------------------------------------------


def test_bad_masks_fail_their_rows_with_the_reason_and_both_sizes(tmp_path, photos):
  bad = tmp_path / 'bad'
  bad.mkdir()
  (bad / 'small.png').write_bytes(grey_png(np.ones((50, 100), np.uint8)))
  (bad / 'swapped.png').write_bytes(grey_png(np.ones((W, H), np.uint8)))
  rgb = np.zeros((H, W, 3), np.uint8)
  rgb[10:20, 10:20] = (255, 0, 0)
  (bad / 'rgb.png').write_bytes(rgb_png(rgb))
  (bad / 'garbage.png').write_bytes(b'not a png at all')
  root = str(photos)
  (tmp_path / 'm.csv').write_text(
      'image_uri,mask_uri\n'
      f'{root}/china.jpg,{root}/masks/china.png\n'      # fine
      f'{root}/flower.jpg,{bad}/small.png\n'           # 100x50
      f'{root}/china.jpg,{bad}/swapped.png\n'          # 427x640: width and height swapped
      f'{root}/flower.jpg,{bad}/missing.png\n'         # no such file
      f'{root}/china.jpg,{bad}/rgb.png\n'              # colours without annotation colours
      f'{root}/flower.jpg,{bad}/garbage.png\n')        # not an image
  result = trc.convert(str(tmp_path / 'm.csv'), str(tmp_path / 'out'), splits={'train': 1},
                       max_error_ratio=0.9)
  assert result.records_written == 1 and result.rows_failed == 5
  errors = {e['row']: e for e in errors_of(result)}
  assert sorted(errors) == [3, 4, 5, 6, 7]  # rows counted from the header line
  small, swapped, missing, rgb_error, garbage = (errors[r] for r in (3, 4, 5, 6, 7))
  assert small['reason'] == 'bad_mask'
  assert small['message'].startswith(f"mask '{bad}/small.png'")
  assert 'the mask is 100x50, the image 640x427' in small['message']
  assert 'swapped' not in small['message']
  assert swapped['reason'] == 'bad_mask'
  assert 'the mask is 427x640, the image 640x427' in swapped['message']
  assert 'swapped' in swapped['message'] and 'EXIF' in swapped['message']
  assert missing['reason'] == 'missing'  # as for a missing image
  assert missing['message'].startswith(f"mask '{bad}/missing.png'")
  assert missing['uri'].endswith('flower.jpg')  # the row is the image's
  assert rgb_error['reason'] == 'bad_mask' and 'RGB' in rgb_error['message']
  assert rgb_error['message'].startswith(f"mask '{bad}/rgb.png'")
  assert garbage['reason'] == 'bad_mask' and 'cannot be decoded' in garbage['message']
  assert result.errors_per_reason == {'bad_mask': 4, 'missing': 1}
  (_, example), = by_source_id(str(tmp_path / 'out'), ['train', 'eval', 'test']).values()
  np.testing.assert_array_equal(decoded_mask(example), china_mask())


def test_a_bad_mask_fails_the_run_by_default(tmp_path, photos):
  (tmp_path / 'small.png').write_bytes(grey_png(np.ones((50, 100), np.uint8)))
  (tmp_path / 'm.csv').write_text(f'image_uri,mask_uri\n{photos}/china.jpg,small.png\n')
  with pytest.raises(TooManyFailedRows, match='bad_mask'):
    trc.convert(str(tmp_path / 'm.csv'), str(tmp_path / 'out'))
  assert not (tmp_path / 'out' / 'Split-train').exists()


def test_a_headerless_segmentation_csv_is_refused_naming_the_header(tmp_path, photos):
  (tmp_path / 'm.csv').write_text(f'{photos}/china.jpg,{photos}/masks/china.png\n')
  with pytest.raises(ManifestError, match='header') as e:
    trc.convert(str(tmp_path / 'm.csv'), str(tmp_path / 'out'),
                manifest_format='segmentation_csv')
  assert 'image_uri,mask_uri' in str(e.value) and str(tmp_path / 'm.csv') in str(e.value)
  # A header without a mask column: the mask columns are named.
  (tmp_path / 'n.csv').write_text(f'image_uri,label\n{photos}/china.jpg,cat\n')
  with pytest.raises(ManifestError, match='mask_uri') as e:
    trc.convert(str(tmp_path / 'n.csv'), str(tmp_path / 'out2'),
                manifest_format='segmentation_csv')
  assert 'image_uri,label' in str(e.value)


def mixed_lines(photos):
  mask = np.zeros((H, W, 3), np.uint8)
  mask[:10, :10] = (255, 0, 0)
  (photos / 'masks' / 'china_mix.png').write_bytes(rgb_png(mask))
  return [colour_line(f'{photos}/china.jpg', f'{photos}/masks/china_mix.png',
                      {'cat': (1, 0, 0)}),
          json.dumps({'imageGcsUri': f'{photos}/flower.jpg',
                      'classificationAnnotation': {'displayName': 'flower'}})]


def test_segmentation_and_classification_lines_of_one_jsonl_do_not_mix(tmp_path, photos):
  """One file holding a segmentation line and a classification line: the run refuses
  it (else the classification record would carry a 1-based id of a segmentation label
  map)."""
  (tmp_path / 'mixed.jsonl').write_text('\n'.join(mixed_lines(photos)) + '\n')
  with pytest.raises(ManifestError, match='mix classification and segmentation rows'):
    trc.convert(str(tmp_path / 'mixed.jsonl'), str(tmp_path / 'out'), splits={'train': 1})


def test_segmentation_and_classification_manifests_do_not_mix(tmp_path, photos):
  """A segmentation CSV beside a classification CSV, and a segmentation JSONL beside a
  detection JSONL, in one folder."""
  folder = tmp_path / 'folder'
  folder.mkdir()
  (folder / 'a.csv').write_text(
      f'image_uri,mask_uri\n{photos}/china.jpg,{photos}/masks/china.png\n')
  (folder / 'b.csv').write_text(f'TRAIN,{photos}/flower.jpg,flower\n')
  with pytest.raises(ManifestError, match='mix classification and segmentation rows'):
    trc.convert(str(folder), str(tmp_path / 'out'))
  other = tmp_path / 'other'
  other.mkdir()
  (other / 'seg.jsonl').write_text(mixed_lines(photos)[0] + '\n')
  (other / 'boxes.jsonl').write_text(json.dumps({
      'imageGcsUri': f'{photos}/flower.jpg', 'boundingBoxAnnotations': [
          {'displayName': 'flower', 'xMin': 0.1, 'yMin': 0.1, 'xMax': 0.5, 'yMax': 0.5}]}) + '\n')
  with pytest.raises(ManifestError, match='mix detection and segmentation rows'):
    trc.convert(str(other), str(tmp_path / 'out2'))


def test_a_jsonl_line_with_a_mask_and_a_label_is_a_row_error(tmp_path, photos):
  line = mixed_lines(photos)[0]
  both = json.loads(line)
  both['classificationAnnotation'] = {'displayName': 'flower'}
  (tmp_path / 'both.jsonl').write_text(json.dumps(both) + '\n' + line + '\n')
  result = trc.convert(str(tmp_path / 'both.jsonl'), str(tmp_path / 'out'),
                       max_error_ratio=0.5, splits={'train': 1})
  assert result.records_written == 1 and result.errors_per_reason == {'bad_row': 1}
  (error,) = errors_of(result)
  assert error['row'] == 1 and 'one task' in error['message']


# --- command line ------------------------------------------------------------------------


def test_cli_convert_writes_segmentation_records(tmp_path, photos, capsys):
  from tfrecorder_component.adapters import cli
  (tmp_path / 'seg.csv').write_text(
      'split,image_uri,mask_uri\n'
      'TRAIN,china.jpg,masks/china.png\n'
      'TEST,flower.jpg,masks/flower.png\n')
  out = tmp_path / 'out'
  assert cli.main(['convert', str(tmp_path / 'seg.csv'), str(out), '--image-root',
                   str(photos), '--transform', '{"longest_side": 320}']) == 0
  assert 'Wrote 2 records of 2 rows' in capsys.readouterr().out
  records = by_source_id(str(out), SPLITS)
  assert {n: s for n, (s, _) in records.items()} == {'china.jpg': 'train', 'flower.jpg': 'test'}
  for name, want in (('china.jpg', china_mask()), ('flower.jpg', flower_mask())):
    example = records[name][1]
    assert feature(example, FORMAT_KEY) == [b'png']
    assert (feature(example, 'image/width'), feature(example, 'image/height')) == ([320], [214])
    got = decoded_mask(example)
    assert (got == reference_mask(want, 'stretch', (320, 214))).mean() >= 0.99
