"""The conversion core as `pip install tfrecorder-component` gives it: no TFX, no
TensorFlow. Runs on every tested stack, the core-only ones (Python 3.12 and 3.13, no
TensorFlow installed) included, so it reads records with the package's shard reader
(`tfrecord_digest.read_records`; test_sink checks the shards against TensorFlow's).
"""
import os
import subprocess
import sys

from images import write_image, write_text
from tfrecord_digest import read_records
from tfrecorder_component.record import example_proto

TESTS = os.path.dirname(os.path.abspath(__file__))


def python(code: str, *args: str, warnings_as_errors: bool = False):
  """Runs `code` in a fresh interpreter of this environment (cwd: the tests folder, so
  the package comes from where the environment installed it)."""
  flags = ['-W', 'error'] if warnings_as_errors else []
  return subprocess.run([sys.executable, *flags, '-c', code, *args], capture_output=True,
                        text=True, cwd=TESTS, timeout=600, check=False)


HEAVY = "sorted(m for m in ('tfx', 'tensorflow') if m in sys.modules)"


def test_import_loads_neither_tfx_nor_tensorflow_and_warns_nothing():
  done = python(f'import sys, tfrecorder_component; print({HEAVY})', warnings_as_errors=True)
  assert done.returncode == 0, done.stderr
  assert done.stdout.strip() == '[]'
  assert done.stderr == ''


# The decode check's decisions on the seeded corpus of damaged images that
# test_decode_check.py compares with tf.io.decode_image (sha256 of one line a case); an
# 8-bit BMP of a colour palette is refused (images/formats/bmp.py), which TensorFlow
# decodes as grey indices.
DECISIONS = '21d0377a4bf2bd919a6b35600d0cb9a940dfef3b592637aa94c6dcc4491d6faa'


def test_decode_check_needs_no_tensorflow_and_decides_alike_on_every_stack():
  """Without importing TensorFlow, the decode check decides the damaged corpus exactly as
  on the main stack, where test_decode_check.py proves the decisions TensorFlow's."""
  done = python(
      'import hashlib, sys\n'
      'import damaged_images\nfrom tfrecorder_component.errors import RowError\n'
      'from tfrecorder_component.images.probe import probe_image\n'
      'lines = []\n'
      'for name, kind, data in damaged_images.corpus(damaged_images.SEED, damaged_images.CASES):\n'
      '  try:\n'
      '    i = probe_image(data, max_pixels=10**9, decode=True)\n'
      '    lines.append(f"{name} {i.format} {i.height} {i.width} {i.channels} {i.frames}")\n'
      '  except RowError as e:\n'
      '    lines.append(f"{name} {e.reason}")\n'
      'print(len(lines), hashlib.sha256("\\n".join(lines).encode()).hexdigest())\n'
      f'print({HEAVY})')
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.split() == ['2400', DECISIONS, '[]']


def test_cli_help_and_convert_load_neither_tfx_nor_tensorflow(tmp_path):
  done = python('import sys\nfrom tfrecorder_component.adapters import cli\n'
                'try:\n  cli.main(["--help"])\nexcept SystemExit as e:\n  assert e.code == 0\n'
                f'print({HEAVY})')
  assert done.returncode == 0, done.stderr
  assert done.stdout.strip().endswith('[]')
  assert 'convert' in done.stdout

  uris = [str(tmp_path / 'images' / f'{i}.{"png" if i % 2 else "jpg"}') for i in range(6)]
  data = {u: write_image(u, 'PNG' if i % 2 else 'JPEG', 'RGB', 5 + i, 7, seed=i)
          for i, u in enumerate(uris)}
  manifest = write_text(str(tmp_path / 'manifest.csv'), ''.join(
      f'{("TRAIN", "VALIDATION", "TEST")[i % 3]},{u},{("cat", "dog")[i % 2]}\n'
      for i, u in enumerate(uris)))
  out = tmp_path / 'out'
  done = python('import sys\nfrom tfrecorder_component.adapters import cli\n'
                'code = cli.main(sys.argv[1:])\n'
                f'print(code, {HEAVY})', 'convert', manifest, str(out))
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.strip().splitlines()[-1] == '0 []'
  seen = {}
  for split in ('train', 'eval', 'test'):
    for record in read_records(str(out / f'Split-{split}')):
      example = example_proto.Example.FromString(record)
      feature = example.features.feature
      uri = feature['image/source_id'].bytes_list.value[0].decode()
      seen[uri] = (split, feature['image/encoded'].bytes_list.value[0],
                   feature['image/class/text'].bytes_list.value[0].decode(),
                   feature['image/height'].int64_list.value[0])
  assert seen == {u: (('train', 'eval', 'test')[i % 3], data[u], ('cat', 'dog')[i % 2], 5 + i)
                  for i, u in enumerate(uris)}

  done = python('import sys\nfrom tfrecorder_component.adapters import cli\n'
                'code = cli.main(sys.argv[1:])\n'
                f'print(code, {HEAVY})', 'inspect', str(out), '--contact-sheet',
                str(tmp_path / 'sheet.png'))
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.strip().splitlines()[-1] == '0 []'
  assert "train: {'cat': 1, 'dog': 1}" in done.stdout
  assert (tmp_path / 'sheet.png').stat().st_size > 0


def test_missing_extras_are_named_in_one_line():
  # Without TFX or TensorFlow installed (here: made unimportable), the names that need
  # them say what to install.
  code = ('import sys\nsys.modules["tfx"] = None\nsys.modules["tensorflow"] = None\n'
          'import tfrecorder_component\n'
          'for name in ("ImageExampleGen", "ImageManifest", "ConversionReportPage", '
          '"load_dataset", "feature_spec", "examples_importer"):\n'
          '  try:\n    getattr(tfrecorder_component, name)\n'
          '  except ImportError as e:\n    print(e)\n'
          'from tfrecorder_component import convert, iter_records\n'
          'print("convert", callable(convert), callable(iter_records))')
  done = python(code)
  assert done.returncode == 0, done.stderr
  assert done.stdout.splitlines() == [
      "ImageExampleGen: the TFX component needs TFX: pip install 'tfrecorder-component[tfx]'",
      "ImageManifest: the TFX component needs TFX: pip install 'tfrecorder-component[tfx]'",
      "ConversionReportPage: the TFX component needs TFX: pip install "
      "'tfrecorder-component[tfx]'",
      "load_dataset: it needs TensorFlow: pip install tensorflow "
      "(or 'tfrecorder-component[tfx]', which brings it)",
      "feature_spec: it needs TensorFlow: pip install tensorflow "
      "(or 'tfrecorder-component[tfx]', which brings it)",
      "examples_importer: the TFX component needs TFX: pip install "
      "'tfrecorder-component[tfx]'",
      'convert True True']  # the numpy reader needs neither


def test_masks_and_class_masks_need_neither_tfx_nor_tensorflow(tmp_path):
  """COCO instance masks (pycocotools, a core dependency) and a segmentation CSV's class
  masks, written by the CLI without TFX or TensorFlow loaded, read back with Pillow."""
  import io
  import json
  import numpy as np
  from PIL import Image
  from pycocotools import mask as coco_mask
  write_image(str(tmp_path / 'a.png'), 'PNG', 'RGB', 20, 30, seed=1)
  polygon = [2, 3, 25, 3, 25, 15]
  coco = write_text(str(tmp_path / 'coco.json'), json.dumps({
      'images': [{'id': 1, 'file_name': 'a.png'}], 'categories': [{'id': 7, 'name': 'cat'}],
      'annotations': [{'id': 1, 'image_id': 1, 'category_id': 7, 'bbox': [2, 3, 23, 12],
                       'segmentation': [polygon]}]}))
  classes = np.zeros((20, 30), np.uint8)
  classes[5:15, 10:20], classes[0, :] = 3, 255
  Image.fromarray(classes, 'L').save(tmp_path / 'a_mask.png')
  csv = write_text(str(tmp_path / 'seg.csv'), 'image_uri,mask_uri\na.png,a_mask.png\n')
  run = ('import sys\nfrom tfrecorder_component.adapters import cli\n'
         'code = cli.main(sys.argv[1:])\n'
         f'print(code, {HEAVY})')
  written = {}
  for name, args in (('coco', [coco, '--include-masks']), ('seg', [csv])):
    done = python(run, 'convert', *args, str(tmp_path / name), '--splits', 'train=1')
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == '0 []'
    [record] = read_records(str(tmp_path / name / 'Split-train'))
    written[name] = example_proto.Example.FromString(record).features.feature
  [png] = written['coco']['image/object/mask'].bytes_list.value
  want = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects([polygon], 20, 30)))
  assert want.sum() > 100
  np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png))), want)
  seg = written['seg']
  assert seg['image/segmentation/class/format'].bytes_list.value == [b'png']
  with Image.open(io.BytesIO(seg['image/segmentation/class/encoded'].bytes_list.value[0])) as m:
    assert m.mode == 'L'
    np.testing.assert_array_equal(np.asarray(m), classes)
