"""Small defects of untrusted and unlucky input, each fixed and held here: a full
temporary folder is named as such (not blamed on the output folder, which has room),
from the command and from convert(); --max-bytes above what a record can hold is taken
as that limit. Real files, real tmpfs mounts, the real command."""
import json
import os
import subprocess

import pytest

from images import write_image
from runs import CLI
import tfrecorder_component as trc
from tfrecorder_component import option_table
from tfrecorder_component.options import ConversionOptions

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason='mounts a tmpfs (the tests run as root)')


@pytest.fixture
def full_tmpdir(tmp_path):
  """A 64 KiB tmpfs as TMPDIR; the output folder on the roomy disk beside it."""
  tiny = tmp_path / 'tiny'
  tiny.mkdir()
  subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', str(tiny)], check=True)
  yield str(tiny)
  subprocess.run(['umount', str(tiny)], check=True)


def _coco(folder):
  """A COCO file whose 2,000 boxes overflow a 64 KiB scratch folder (the external sort
  of its annotations and boxes)."""
  images, annotations = [], []
  for i in range(40):
    write_image(os.path.join(folder, f'{i}.jpg'), height=64, width=64, seed=i)
    images.append({'id': i + 1, 'file_name': f'{i}.jpg', 'width': 64, 'height': 64})
    annotations += [{'id': len(annotations) + 1, 'image_id': i + 1, 'category_id': 1,
                     'bbox': [1, 1, 10, 10], 'area': 100, 'iscrowd': 0} for _ in range(50)]
  path = os.path.join(folder, 'instances.json')
  with open(path, 'w', encoding='utf-8') as f:
    json.dump({'images': images, 'annotations': annotations,
               'categories': [{'id': 1, 'name': 'cat'}]}, f)
  return path


@needs_root
def test_a_full_temporary_folder_is_named_not_blamed_on_the_output(tmp_path, full_tmpdir):
  coco = _coco(str(tmp_path / 'data'))
  out = str(tmp_path / 'out')
  done = subprocess.run([CLI, 'convert', coco, out], capture_output=True, text=True,
                        timeout=300, env=dict(os.environ, TMPDIR=full_tmpdir,
                                              TF_CPP_MIN_LOG_LEVEL='2'))
  assert done.returncode == 2, done.stderr[-2000:]
  line = done.stderr.strip().splitlines()[-1]
  assert line == (f'error: no space left in the temporary folder {full_tmpdir}, where a run '
                  'keeps its scratch files: free some, or point TMPDIR at a folder with '
                  'room'), line
  assert not os.path.exists(os.path.join(out, '_SUCCESS'))


@needs_root
def test_convert_raises_the_full_temporary_folder_by_name(tmp_path, full_tmpdir, monkeypatch):
  import tempfile  # pylint: disable=g-import-not-at-top
  coco = _coco(str(tmp_path / 'data'))
  monkeypatch.setenv('TMPDIR', full_tmpdir)
  monkeypatch.setattr(tempfile, 'tempdir', None)  # read TMPDIR again
  with pytest.raises(OSError) as raised:
    trc.convert(coco, str(tmp_path / 'out'))
  assert raised.value.errno == 28
  assert f'no space left in the temporary folder {full_tmpdir}' in str(raised.value)


def test_max_bytes_above_what_a_record_holds_is_taken_as_that_limit(tmp_path):
  assert option_table.MAX_RECORD_IMAGE_BYTES < 2**31 - 1
  options = ConversionOptions(max_bytes=4 * 2**30)
  assert options.max_bytes == option_table.MAX_RECORD_IMAGE_BYTES
  assert ConversionOptions(max_bytes=2**20).max_bytes == 2**20
  write_image(str(tmp_path / 'data' / 'cat' / 'a.jpg'))
  write_image(str(tmp_path / 'data' / 'dog' / 'b.jpg'), seed=1)
  result = trc.convert(str(tmp_path / 'data'), str(tmp_path / 'out'), max_bytes=4 * 2**30)
  assert result.records_written == 2


def test_a_coco_annotation_nested_too_deep_fails_its_row_not_the_file(tmp_path):
  """One annotation holding a 100,000-deep array (deeper than json's decoder recurses):
  that annotation fails, naming it and its depth; the file and the other images are
  read, and its string holding brackets does not throw the reading off."""
  data = tmp_path / 'data'
  for i in range(3):
    write_image(str(data / f'{i}.jpg'), height=32, width=32, seed=i)
  annotations = [{'id': i + 1, 'image_id': i + 1, 'category_id': 1, 'bbox': [1, 1, 5, 5],
                  'area': 25, 'iscrowd': 0} for i in range(3)]
  annotations[1].update(note='a "]" and a "[" in a string', segmentation='DEEP')
  text = json.dumps({
      'images': [{'id': i + 1, 'file_name': f'{i}.jpg', 'width': 32, 'height': 32}
                 for i in range(3)],
      'annotations': annotations, 'categories': [{'id': 1, 'name': 'cat'}]})
  coco = data / 'instances.json'
  coco.write_text(text.replace('"DEEP"', '[' * 100_000 + ']' * 100_000), encoding='utf-8')
  result = trc.convert(str(coco), str(tmp_path / 'out'), max_error_ratio=0.5)
  assert result.errors_per_reason == {'bad_row': 1}
  assert result.records_written == 3
  with open(tmp_path / 'out' / 'report' / 'errors.jsonl', encoding='utf-8') as f:
    [error] = [json.loads(line) for line in f]
  assert error['uri'] == '1.jpg'
  assert error['message'].startswith('annotation id 2 (annotations[1]) nests arrays or '
                                     'objects 100,001 levels deep')


def test_heic_avif_svg_and_pdf_in_class_folders_are_reported_not_skipped(tmp_path, caplog):
  """HEIC and AVIF files in class folders are rows that fail as unsupported_format (as
  TIFF and WebP do; AVIF, which this Pillow reads, is re-encoded with
  convert_unsupported); SVG and PDF files are named in a warning with their count."""
  from PIL import features  # pylint: disable=g-import-not-at-top
  from images import encode, make_image  # pylint: disable=g-import-not-at-top
  data = tmp_path / 'data'
  write_image(str(data / 'cat' / 'a.jpg'))
  write_image(str(data / 'dog' / 'b.jpg'), seed=1)
  # A HEIC file's first box, as an iPhone writes it (ftyp, major brand heic).
  (data / 'cat' / 'c.heic').write_bytes(b'\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic'
                                        + b'\x00' * 64)
  avif = features.check('avif')
  if avif:
    (data / 'dog' / 'd.avif').write_bytes(encode(make_image('RGB', 16, 16), 'AVIF'))
  (data / 'cat' / 'e.svg').write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
  (data / 'dog' / 'f.pdf').write_bytes(b'%PDF-1.4\n%%EOF\n')
  result = trc.convert(str(data), str(tmp_path / 'out'), max_error_ratio=0.9)
  with open(tmp_path / 'out' / 'report' / 'errors.jsonl', encoding='utf-8') as f:
    errors = {e['uri']: e for e in map(json.loads, f)}
  assert errors['cat/c.heic']['reason'] == 'unsupported_format'
  assert errors['cat/c.heic']['message'].startswith('a HEIF (HEIC) image, which')
  assert any('2 files in the class folders' in r.getMessage() and '.pdf, .svg' in r.getMessage()
             for r in caplog.records)
  if avif:
    assert errors['dog/d.avif']['reason'] == 'unsupported_format'
    converted = trc.convert(str(data), str(tmp_path / 'out2'), max_error_ratio=0.9,
                            convert_unsupported=True)
    assert converted.records_written == result.records_written + 1
