"""Untrusted input (issue 65, items 1 and 2; docs/guides/untrusted-input.md).

1. No file's content leaks: a data.yaml or obj.data may name any file as an image list
   or names file (`/proc/self/environ`, `/etc/passwd`), and a label file is found by its
   image's path, so any of them may be a file whose text is not the user's to see. A
   line of such a file is named by its number, never quoted, in errors.jsonl, the
   report, summary.json, stderr, stdout and every other file the run writes.
2. `confine_to` (`--confine-to`): every path a manifest leads to, in every format, must
   lie inside the roots, links followed; anything else fails its row as `outside_root`
   without being opened, and the same whether it exists or not. "Not opened" is proved
   with inotify on the outside folder (an open of a file there, or a listing of it, is
   an event; a stat is none), and with a FIFO there (which a read would open) giving
   the same reason and message as a missing file and an existing one.
"""
from __future__ import annotations

import ctypes
import gzip
import json
import os
import struct
import subprocess

import pytest

from images import write_image, write_text
from runs import CLI
import tfrecorder_component as trc
from tfrecorder_component.errors import ManifestError, UsageError
from tfrecorder_component.manifest import confine
from tfrecorder_component.manifest.reader import read_manifest_file

SECRET = 's3cr3t-marker'
PASSWD_LINE = b'root:x:0:0'


def cli(*args, env=None) -> subprocess.CompletedProcess:
  return subprocess.run([CLI, *args], capture_output=True, timeout=600,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', **(env or {})))


def everything_written(folder: str) -> bytes:
  """Every byte of every file under `folder`, gzip files (the shards) decompressed."""
  out = []
  for top, _, names in os.walk(folder):
    for name in names:
      with open(os.path.join(top, name), 'rb') as f:
        data = f.read()
      if data[:2] == b'\x1f\x8b':
        data = gzip.decompress(data)
      out.append(data)
  return b'\n'.join(out)


def errors(out: str):
  with open(os.path.join(out, 'report', 'errors.jsonl'), encoding='utf-8') as f:
    return [json.loads(line) for line in f]


def assert_nothing_of(secret: bytes, done: subprocess.CompletedProcess, out: str) -> None:
  assert secret not in done.stdout and secret not in done.stderr, (done.stdout, done.stderr)
  if os.path.isdir(out):
    assert secret not in everything_written(out)


# --- 1. No file's content leaks ------------------------------------------------------


def _secrets(tmp_path) -> str:
  """A regular file of environment lines holding the marker (as /proc/self/environ's)."""
  return write_text(str(tmp_path / 'elsewhere' / 'secrets.env'),
                    f'TFRC_SECRET={SECRET}\nAWS_SECRET_ACCESS_KEY={SECRET}-2\n'
                    f'{SECRET}.jpg is not a path\n')


def test_a_yaml_naming_the_environment_as_an_image_list_leaks_no_line(tmp_path):
  write_image(str(tmp_path / 'ds' / 'images' / 'a.jpg'))
  secrets = _secrets(tmp_path)
  yaml = write_text(str(tmp_path / 'ds' / 'data.yaml'),
                    f'train: [/proc/self/environ, {secrets}]\nval: images\nnames: [cat]\n')
  out = str(tmp_path / 'out')
  done = cli('convert', yaml, out, '--max-error-ratio', '1', env={'TFRC_SECRET': SECRET})
  assert done.returncode == 0, done.stderr[-3000:]
  assert_nothing_of(SECRET.encode(), done, out)
  failed = errors(out)
  assert {e['reason'] for e in failed} == {'bad_row'} and len(failed) >= 3
  assert all(e['uri'] is None and 'is not an image file name' in e['message'] for e in failed)
  assert any(e['message'].startswith(f'{secrets} line 1 is not an image file name')
             for e in failed), failed


@pytest.mark.skipif(not os.path.isfile('/etc/passwd'), reason='no /etc/passwd')
def test_an_obj_data_naming_etc_passwd_leaks_no_line(tmp_path):
  with open('/etc/passwd', 'rb') as f:
    first = f.read().split(b'\n', 1)[0].split(b':', 1)[0] + b':x:'
  ds = tmp_path / 'ds'
  write_image(str(ds / 'images' / 'a.jpg'))
  write_text(str(ds / 'images' / 'a.txt'), '0 0.5 0.5 0.2 0.2\n')
  write_text(str(ds / 'valid.txt'), 'images/a.jpg\n')
  write_text(str(ds / 'obj.names'), 'cat\n')
  data = write_text(str(ds / 'obj.data'),
                    'classes = 1\ntrain = /etc/passwd\nvalid = valid.txt\nnames = obj.names\n')
  out = str(tmp_path / 'out')
  done = cli('convert', data, out, '--max-error-ratio', '1')
  assert done.returncode == 0, done.stderr[-3000:]
  for secret in (PASSWD_LINE, first):
    assert_nothing_of(secret, done, out)
  assert {e['reason'] for e in errors(out)} == {'bad_row'}
  # names = /etc/passwd: its lines would be class names, written to labels.txt: refused,
  # unread, the manifest's own `names =` line named
  write_text(data, 'classes = 1\ntrain = /etc/passwd\nvalid = valid.txt\nnames = /etc/passwd\n')
  out = str(tmp_path / 'out2')
  done = cli('convert', data, out, '--max-error-ratio', '1')
  assert done.returncode != 0
  assert b'is no class names file' in done.stderr, done.stderr[-2000:]
  for secret in (PASSWD_LINE, first):
    assert_nothing_of(secret, done, out)


def test_a_label_file_linked_to_a_secret_is_named_by_line_never_quoted(tmp_path):
  ds = tmp_path / 'ds'
  write_image(str(ds / 'images' / 'train' / 'a.jpg'))
  os.makedirs(ds / 'labels' / 'train')
  secret = write_text(str(tmp_path / 'elsewhere' / 'pin.txt'), f'{SECRET}\n482913\n')
  os.symlink(secret, ds / 'labels' / 'train' / 'a.txt')
  yaml = write_text(str(ds / 'data.yaml'), 'train: images/train\nnames: [cat]\n')
  [error] = read_manifest_file(yaml)
  assert error.reason == 'bad_row' and 'a.txt line 1: the class' in error.message
  assert SECRET not in str(error) and '482913' not in str(error)
  write_text(secret, '482913 0.5 0.5 0.2 0.2\n')  # a whole number: a class id of no class
  [error] = read_manifest_file(yaml)
  assert 'the class id is not in' in error.message and '482913' not in str(error)
  # confined to the dataset, the link is not followed at all
  [error] = read_manifest_file(yaml, confine_to=(str(ds),))
  assert error.reason == 'outside_root' and 'label file' in error.message


@pytest.mark.parametrize('text,words', [
    ('cat\ndog\x00\n', 'line 2 holds a control character'),
    ('cat\n' + 'x' * 1001 + '\n', 'line 2 is longer than 1,000 characters'),
    ('c\n' * 100_001, '100,001 lines, more than any class list'),
])
def test_a_names_file_that_is_no_class_list_is_refused_unquoted(tmp_path, text, words):
  write_text(str(tmp_path / 'train.txt'), 'a.jpg\n')
  write_text(str(tmp_path / 'obj.names'), text)
  data = write_text(str(tmp_path / 'obj.data'), 'train = train.txt\nnames = obj.names\n')
  with pytest.raises(ManifestError) as e:
    read_manifest_file(data)
  assert words in str(e.value) and 'dog' not in str(e.value) and 'xxx' not in str(e.value)


def test_a_names_file_is_a_names_or_txt_file(tmp_path):
  write_text(str(tmp_path / 'train.txt'), 'a.jpg\n')
  data = write_text(str(tmp_path / 'obj.data'), 'train = train.txt\nnames = /etc/hostname\n')
  with pytest.raises(ManifestError, match=r'`names = /etc/hostname` is no class names file: '
                     r'one is a \.names or \.txt file'):
    read_manifest_file(data)


def test_an_image_list_is_read_as_a_regular_file_only(tmp_path):
  """A FIFO named as a list would block the parse forever; a device would never end."""
  fifo = str(tmp_path / 'list.txt')
  os.mkfifo(fifo)
  yaml = write_text(str(tmp_path / 'data.yaml'), 'train: list.txt\nnames: [cat]\n')
  with pytest.raises(ManifestError, match='names .*list.txt, which does not exist'):
    read_manifest_file(yaml)  # no regular file, no folder: not read, never blocked on
  write_text(yaml, 'train: /dev/zero\nnames: [cat]\n')
  with pytest.raises(ManifestError, match='names /dev/zero, which does not exist'):
    read_manifest_file(yaml)
  from tfrecorder_component.manifest.yolo.paths import read_text  # pylint: disable=g-import-not-at-top
  for path in (fifo, '/dev/zero'):
    with pytest.raises(ManifestError, match='cannot read the image list: not_a_file'):
      read_text(path, 'image list')


# --- 2. confine_to: the roots, checked on the path's text, then its links -------------


def test_roots_are_parsed_and_source_is_the_sources_folder(tmp_path):
  assert confine.parse_roots(None) == () == confine.parse_roots('')
  assert confine.parse_roots(['s3://b/x/, gs://g', 'file:///d/../e', 'source']) == (
      's3://b/x', 'gs://g', '/e', 'source')
  for bad in ('https://h/x', 's3://', 'gs://b/../c', 7):
    with pytest.raises(UsageError):
      confine.parse_roots([bad])
  manifest = write_text(str(tmp_path / 'd' / 'm.csv'), '')
  assert confine.with_source(('source', '/x'), [manifest]) == (str(tmp_path / 'd'), '/x')
  assert confine.with_source(('source',), [str(tmp_path / 'd')]) == (str(tmp_path / 'd'),)
  assert confine.with_source(('source',), [str(tmp_path / 'd' / '*.csv')]) == (
      str(tmp_path / 'd'),)
  with pytest.raises(UsageError, match='no path'):
    confine.with_source(('source',), [])


def test_a_path_is_refused_on_its_text_then_on_its_links(tmp_path):
  root, out = tmp_path / 'root', tmp_path / 'out'
  write_image(str(root / 'sub' / 'a.jpg'))
  write_image(str(out / 'secret.jpg'))
  os.symlink('../../out/secret.jpg', root / 'sub' / 'link.jpg')
  os.symlink(str(out), root / 'outdir')
  os.symlink('sub', root / 'insub')
  c = confine.Confinement([str(root)])
  inside = {f'{root}/sub/a.jpg': f'{root}/sub/a.jpg',
            f'file://{root}/sub/a.jpg': f'{root}/sub/a.jpg',
            f'{root}/insub/a.jpg': f'{root}/sub/a.jpg',
            f'{root}/insub/../sub/a.jpg': f'{root}/sub/a.jpg',  # insub/.. is root, as the kernel has it
            f'{root}/missing/x.jpg': f'{root}/missing/x.jpg'}  # fails as missing when read
  for path, resolved in inside.items():
    assert not c.outside(path) and c.resolve(path) == resolved, path
  by_text = [f'{root}/../out/secret.jpg', '/etc/passwd', f'file://{out}/secret.jpg',
             'file://host/etc/passwd', 's3://b/x.jpg', 'https://h/x.jpg', f'{root}x/a.jpg']
  by_links = [f'{root}/sub/link.jpg', f'{root}/outdir/secret.jpg',
              f'{root}/outdir/../root/sub/a.jpg']
  for path in by_text:
    assert c.outside(path) and c.resolve(path) is None, path
  for path in by_links:
    assert not c.outside(path) and c.resolve(path) is None, path
  remote = confine.Confinement(['s3://bkt/data'])
  assert remote.resolve('s3://bkt/data/a/b.png') == 's3://bkt/data/a/b.png'
  for path in ('s3://bkt/data/../private/x.png', 's3://bkt/datax/a.png', 's3://other/data/a',
               'gs://bkt/data/a.png', f'{root}/sub/a.jpg', 's3://bkt/data/./a.png'):
    assert remote.resolve(path) is None, path


class Watch:
  """inotify on a folder tree: the names of what was opened in it (a file read, or a
  folder listed: '' for the folder itself). A stat is no event."""

  IN_ACCESS, IN_OPEN = 0x1, 0x20

  def __init__(self, folder: str):
    self._libc = ctypes.CDLL(None, use_errno=True)
    self._fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert self._fd >= 0
    for top in [top for top, _, _ in os.walk(folder)]:
      assert self._libc.inotify_add_watch(self._fd, top.encode(),
                                          self.IN_OPEN | self.IN_ACCESS) >= 0
    self.events()  # what the walk itself opened

  def events(self):
    names = []
    while True:
      try:
        data = os.read(self._fd, 65536)
      except BlockingIOError:
        return names
      at = 0
      while at < len(data):
        _, _, _, size = struct.unpack_from('iIII', data, at)
        names.append(data[at + 16:at + 16 + size].rstrip(b'\0').decode())
        at += 16 + size

  def close(self):
    os.close(self._fd)


def _outside(tmp_path) -> str:
  """A folder beside the dataset: an image, a FIFO named as one, a folder of images."""
  out = str(tmp_path / 'outside')
  write_image(os.path.join(out, 'secret.jpg'), seed=3)
  write_image(os.path.join(out, 'classes', 'x.jpg'), seed=4)
  write_text(os.path.join(out, 'list.txt'), 'secret.jpg\n')
  write_text(os.path.join(out, 'x.names'), 'cat\n')
  os.mkfifo(os.path.join(out, 'fifo.jpg'))
  return out


def _escapes(out: str):
  """{kind: how a manifest names an image outside the dataset (relative to its root)}."""
  return {'dotdot': '../outside/secret.jpg', 'absolute': f'{out}/secret.jpg',
          'file_uri': f'file://{out}/secret.jpg', 'symlink': 'images/link.jpg',
          'missing': f'{out}/missing.jpg', 'fifo': f'{out}/fifo.jpg'}


GOOD = 'images/good.jpg'


def _dataset(root: str, out: str) -> None:
  write_image(os.path.join(root, GOOD), height=8, width=8)
  write_image(os.path.join(root, 'images', 'mask.png'), 'PNG', 'L', 8, 8)
  os.symlink('../../outside/secret.jpg', os.path.join(root, 'images', 'link.jpg'))


def _box_json():
  return {'label': 'cat', 'coordinates': {'x': 4, 'y': 4, 'width': 4, 'height': 4}}


def write_manifest(fmt: str, root: str, refs) -> str:
  """A manifest of `fmt` in `root` naming each of `refs` (the first the good image) as
  an image (segmentation: as a mask); returns the source to convert."""
  def put(name, text):
    return write_text(os.path.join(root, name), text)
  if fmt == 'automl_csv':
    return put('m.csv', ''.join(f'TRAIN,{r},cat\n' for r in refs))
  if fmt == 'automl_detection_csv':
    return put('m.csv', ''.join(f'TRAIN,{r},cat,0.1,0.1,,,0.6,0.6,,\n' for r in refs))
  if fmt == 'coco_json':
    return put('instances.json', json.dumps({
        'images': [{'id': i, 'file_name': r, 'width': 8, 'height': 8} for i, r in enumerate(refs)],
        'annotations': [{'id': i, 'image_id': i, 'category_id': 1, 'bbox': [1, 1, 4, 4],
                         'area': 16, 'iscrowd': 0} for i in range(len(refs))],
        'categories': [{'id': 1, 'name': 'cat'}]}))
  if fmt == 'pascal_voc':
    for i, r in enumerate(refs):
      put(f'v{i}.xml', f'<annotation><filename>{r}</filename><size><width>8</width><height>8'
          '</height><depth>3</depth></size><object><name>cat</name><bndbox><xmin>1</xmin>'
          '<ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>')
    return root
  if fmt == 'yolo':
    put('train.txt', ''.join(f'{r}\n' for r in refs))
    return put('data.yaml', 'train: train.txt\nnames: [cat]\n')
  if fmt == 'yolo_darknet':
    put('train.txt', ''.join(f'{r}\n' for r in refs))
    put('obj.names', 'cat\n')
    return put('obj.data', 'classes = 1\ntrain = train.txt\nnames = obj.names\n')
  if fmt == 'labelme':
    for i, r in enumerate(refs):
      put(f'l{i}.json', json.dumps({
          'version': '5.2.1', 'flags': {}, 'imagePath': r, 'imageData': None,
          'imageHeight': 8, 'imageWidth': 8,
          'shapes': [{'label': 'cat', 'points': [[1, 1], [5, 5]], 'group_id': None,
                      'shape_type': 'rectangle', 'flags': {}}]}))
    return root
  if fmt == 'cvat':
    images = ''.join(f'<image id="{i}" name="{r}" width="8" height="8"><box label="cat" '
                     'occluded="0" xtl="1" ytl="1" xbr="5" ybr="5"></box></image>\n'
                     for i, r in enumerate(refs))
    return put('annotations.xml', '<?xml version="1.0" encoding="utf-8"?>\n<annotations>'
               '<version>1.1</version><meta><task><name>t</name><labels><label><name>cat'
               f'</name></label></labels></task></meta>\n{images}</annotations>\n')
  if fmt == 'label_studio':
    return put('tasks.json', json.dumps([{
        'id': i, 'data': {'image': r}, 'annotations': [{'id': i, 'result': [{
            'id': 'r1', 'type': 'rectanglelabels', 'from_name': 'label', 'to_name': 'image',
            'original_width': 8, 'original_height': 8, 'value': {
                'x': 10, 'y': 10, 'width': 50, 'height': 50, 'rotation': 0,
                'rectanglelabels': ['cat']}}]}]} for i, r in enumerate(refs)]))
  if fmt == 'createml':
    return put('createml.json', json.dumps([{'image': r, 'annotations': [_box_json()]}
                                            for r in refs]))
  if fmt == 'vertex_jsonl':
    return put('m.jsonl', ''.join(json.dumps({'imageGcsUri': r, 'classificationAnnotation':
                                              {'displayName': 'cat'}}) + '\n' for r in refs))
  if fmt == 'tf_od_csv':
    return put('labels.csv', 'filename,width,height,class,xmin,ymin,xmax,ymax\n' +
               ''.join(f'{r},8,8,cat,1,1,5,5\n' for r in refs))
  if fmt == 'open_images':
    ids = [r[:-len('.jpg')] for r in refs]
    return put('oidv6-train-annotations-human-imagelabels.csv',
               'ImageID,Source,LabelName,Confidence\n' +
               ''.join(f'{i},verification,/m/01yrx,1\n' for i in ids))
  if fmt == 'segmentation_csv':  # the masks lead outside
    masks = ['images/mask.png'] + list(refs[1:])
    return put('seg.csv', 'image_uri,mask_uri\n' +
               ''.join(f'{GOOD},{m}\n' for m in masks))
  if fmt == 'labelbox':
    return put('export.ndjson', ''.join(json.dumps({
        'data_row': {'id': f'd{i}', 'row_data': r, 'external_id': f'e{i}.jpg'},
        'projects': {'p': {'name': 'n', 'labels': [{'annotations': {'objects': [{
            'name': 'cat', 'annotation_kind': 'ImageBoundingBox',
            'bounding_box': {'top': 1, 'left': 1, 'height': 4, 'width': 4}}],
            'classifications': [], 'relationships': []}}]}}}) + '\n'
        for i, r in enumerate(refs)))
  raise AssertionError(fmt)


FORMATS = ['automl_csv', 'automl_detection_csv', 'coco_json', 'pascal_voc', 'yolo',
           'yolo_darknet', 'labelme', 'cvat', 'label_studio', 'createml', 'vertex_jsonl',
           'tf_od_csv', 'open_images', 'segmentation_csv', 'labelbox']


@pytest.mark.parametrize('fmt', FORMATS)
def test_every_formats_escapes_fail_as_outside_root_unopened(tmp_path, fmt):
  out = _outside(tmp_path)
  root = str(tmp_path / 'data')
  _dataset(root, out)
  escapes = _escapes(out)
  source = write_manifest(fmt, root, [GOOD, *escapes.values()])
  watch = Watch(out)
  try:
    result = trc.convert(source, str(tmp_path / 'run'), confine_to='source',
                         max_error_ratio=1.0)
    opened = watch.events()
  finally:
    watch.close()
  assert opened == [], opened  # nothing outside was read or listed
  failed = errors(str(tmp_path / 'run'))
  assert result.records_written == 1, failed
  assert [e['reason'] for e in failed] == ['outside_root'] * len(escapes), failed
  # one message for every outside path: existing, missing, a FIFO, a link
  assert len({e['message'] for e in failed}) == 1, failed
  assert out not in failed[0]['message'] and 'outside_root' in json.dumps(result.summary)


def test_without_confinement_the_same_manifest_reads_outside(tmp_path):
  """The control of the test above: the watch sees what an unconfined run opens, and
  the FIFO, the missing file and the linked image each fail for their own reason."""
  out = _outside(tmp_path)
  root = str(tmp_path / 'data')
  _dataset(root, out)
  source = write_manifest('automl_csv', root, [GOOD, *_escapes(out).values()])
  watch = Watch(out)
  try:
    result = trc.convert(source, str(tmp_path / 'run'), max_error_ratio=1.0)
    opened = watch.events()
  finally:
    watch.close()
  assert 'secret.jpg' in opened, opened
  assert result.records_written == 5  # good, and secret.jpg four ways
  reasons = sorted(e['reason'] for e in errors(str(tmp_path / 'run')))
  assert reasons == ['missing', 'not_a_file'], reasons


def test_yolo_path_split_folders_and_links_out_are_not_walked(tmp_path):
  out = _outside(tmp_path)
  root = tmp_path / 'data'
  _dataset(str(root), out)
  os.symlink(out, root / 'images' / 'more')  # a linked folder inside a walked one
  os.symlink(out, root / 'linked')
  yaml = write_text(str(root / 'data.yaml'),
                    f'path: {out}\ntrain: .\nval: {root}/images\ntest: {root}/linked\n'
                    'names: [cat]\n')
  watch = Watch(out)
  try:
    items = read_manifest_file(yaml, confine_to=(str(root),))
    assert [(getattr(i, 'reason', None), getattr(i, 'uri', None)) for i in items] == [
        ('outside_root', '.'), (None, None), (None, None), (None, None),
        ('outside_root', 'linked')]
    write_text(yaml, 'path: ..\ntrain: outside\nval: ../outside/list.txt\n'
               'test: outside/missing\nnames: [cat]\n')
    items = read_manifest_file(yaml, confine_to=(str(root),))
    assert [i.reason for i in items] == ['outside_root'] * 3
    # the same words for a folder, a list and nothing there, but the key's name
    assert len({i.message.replace(key, '') for i, key in zip(items, ('`train`', '`val`',
                                                                       '`test`'))}) == 1
    # the row count that sizes the run reads nothing outside either
    from tfrecorder_component.engines.run import estimate_rows  # pylint: disable=g-import-not-at-top
    assert estimate_rows([yaml], confine_to=(str(root),)) == 3
    opened = watch.events()
  finally:
    watch.close()
  assert opened == [], opened
  # The walk of images/ kept its own images (good.jpg and the link, which fails when
  # read) and left the linked folder more/ out.
  write_text(yaml, 'train: images\nnames: [cat]\n')
  rows = read_manifest_file(yaml, confine_to=(str(root),))
  assert sorted(r.image_uri for r in rows) == ['images/good.jpg', 'images/link.jpg',
                                               'images/mask.png']


def test_darknet_lists_and_names_outside_are_not_read(tmp_path):
  out = _outside(tmp_path)
  root = tmp_path / 'data'
  _dataset(str(root), out)
  write_text(str(root / 'obj.names'), 'cat\n')
  data = write_text(str(root / 'obj.data'),
                    f'classes = 1\ntrain = {out}/list.txt\nvalid = ../outside/list.txt\n'
                    'names = obj.names\n')
  watch = Watch(out)
  try:
    items = read_manifest_file(data, confine_to=(str(root),))
    assert [i.reason for i in items] == ['outside_root', 'outside_root']
    write_text(data, 'classes = 1\ntrain = train.txt\nnames = ../outside/x.names\n')
    with pytest.raises(ManifestError, match='class names file lies outside the folders'):
      read_manifest_file(data, confine_to=(str(root),))
    opened = watch.events()
  finally:
    watch.close()
  assert opened == [], opened


def test_class_folders_links_out_of_the_root(tmp_path):
  out = _outside(tmp_path)
  root = tmp_path / 'data'
  write_image(str(root / 'cat' / 'good.jpg'))
  write_image(str(root / 'bird' / 'good.jpg'))
  os.symlink(f'{out}/secret.jpg', root / 'cat' / 'link.jpg')  # fails as outside_root
  os.symlink(f'{out}/classes', root / 'dog')  # a class folder outside: not listed
  watch = Watch(out)
  try:
    result = trc.convert(str(root), str(tmp_path / 'run'), confine_to='source',
                         max_error_ratio=1.0)
    opened = watch.events()
  finally:
    watch.close()
  assert opened == [], opened
  assert result.records_written == 2
  assert result.records_per_label == {'bird': 1, 'cat': 1}
  [failed] = errors(str(tmp_path / 'run'))
  assert (failed['uri'], failed['reason']) == ('cat/link.jpg', 'outside_root')


def test_a_manifest_linked_out_of_the_roots_is_not_read(tmp_path):
  out = _outside(tmp_path)
  root = tmp_path / 'data'
  _dataset(str(root), out)
  write_text(f'{out}/m.csv', f'TRAIN,{GOOD},cat\n')
  os.symlink(f'{out}/m.csv', root / 'linked.csv')
  write_text(str(root / 'own.csv'), f'TRAIN,{GOOD},cat\n')
  watch = Watch(out)
  try:
    with pytest.raises(ManifestError, match='the manifest lies outside'):
      trc.convert(str(root / 'linked.csv'), str(tmp_path / 'run'), confine_to='source')
    result = trc.convert(str(root), str(tmp_path / 'run2'), confine_to='source')
    opened = watch.events()
  finally:
    watch.close()
  assert opened == [], opened
  assert result.manifests == (str(root / 'own.csv'),)


def test_the_option_on_the_command_line_and_for_validate(tmp_path):
  out = _outside(tmp_path)
  root = str(tmp_path / 'data')
  _dataset(root, out)
  source = write_manifest('automl_csv', root, [GOOD, *_escapes(out).values()])
  done = cli('convert', source, str(tmp_path / 'run'), '--confine-to', 'source',
             '--max-error-ratio', '1')
  assert done.returncode == 0, done.stderr[-3000:]
  assert [e['reason'] for e in errors(str(tmp_path / 'run'))] == ['outside_root'] * 6
  assert b'outside_root' in done.stdout + done.stderr
  from tfrecorder_component.adapters.conversion import validate  # pylint: disable=g-import-not-at-top
  summary = validate(source, str(tmp_path / 'report'), confine_to=[root])
  assert summary['errors_per_reason'] == {'outside_root': 6}
  with pytest.raises(UsageError, match='image_root .* lies outside confine_to'):
    trc.convert(source, str(tmp_path / 'run3'), confine_to=[f'{root}/images'],
                image_root=out)


def test_the_component_confines_to_its_manifest_artifacts_folder(tmp_path):
  from tfrecorder_component.adapters.component import executor  # pylint: disable=g-import-not-at-top
  out = _outside(tmp_path)
  root = str(tmp_path / 'data')
  _dataset(root, out)
  write_manifest('automl_csv', root, [GOOD, *_escapes(out).values()])

  class Artifact:  # what the executor reads of an ImageManifest artifact
    uri = root

  values = dict(manifest_format=None, image_root=None, feature_types=None, class_map=None,
                columns=None, confine_to=('source',))
  sources = executor._sources({'manifest': [Artifact()]}, {}, values,  # pylint: disable=protected-access
                              str(tmp_path / 'report'))
  assert [s.confine_to for s in sources] == [(root,)]


@pytest.fixture
def s3_escape(s3_bucket, tmp_path):
  """bkt/data/ holds the dataset's image; bkt/private/ and the bucket `other` hold
  images outside it; a local manifest names them all."""
  from storage_servers import Proxy  # pylint: disable=g-import-not-at-top
  from images import encode, make_image  # pylint: disable=g-import-not-at-top
  server = s3_bucket
  server.create_bucket('other')
  jpeg = encode(make_image(), 'JPEG')
  for bucket, name in (('bkt', 'data/good.jpg'), ('bkt', 'private/x.jpg'),
                       ('other', 'secret.jpg')):
    server.upload(bucket, name, jpeg)
  with Proxy(server.endpoint) as proxy:
    os.environ['AWS_ENDPOINT_URL'] = proxy.url
    try:
      yield proxy
    finally:
      os.environ['AWS_ENDPOINT_URL'] = server.url


def test_on_s3_another_bucket_or_prefix_is_never_asked_for(s3_escape, tmp_path):
  proxy = s3_escape
  good = 's3://bkt/data/good.jpg'
  escapes = ['s3://other/secret.jpg', 's3://other/missing.jpg', 's3://bkt/private/x.jpg',
             's3://bkt/data/../private/x.jpg', 's3://bkt/datax/x.jpg', 'gs://bkt/data/x.jpg',
             f'{tmp_path}/local.jpg']
  write_image(str(tmp_path / 'local.jpg'))
  alone = write_text(str(tmp_path / 'm1' / 'm.csv'), f'TRAIN,{good},cat\n')
  every = write_text(str(tmp_path / 'm2' / 'm.csv'),
                     ''.join(f'TRAIN,{u},cat\n' for u in [good, *escapes]))
  proxy.reset_stats()
  trc.convert(alone, str(tmp_path / 'run1'), confine_to='s3://bkt/data')
  asked_alone = proxy.stats()
  proxy.reset_stats()
  result = trc.convert(every, str(tmp_path / 'run2'), confine_to='s3://bkt/data',
                       max_error_ratio=1.0)
  asked = proxy.stats()
  assert result.records_written == 1
  failed = errors(str(tmp_path / 'run2'))
  assert [e['reason'] for e in failed] == ['outside_root'] * len(escapes)
  assert len({e['message'] for e in failed}) == 1
  assert set(asked['reads_by_path']) == {'/bkt/data/good.jpg'}, asked['reads_by_path']
  assert asked['requests'] == asked_alone['requests'], (asked, asked_alone)
  # `source` on object storage: an object's folder, or the prefix given
  from tfrecorder_component.io import storage  # pylint: disable=g-import-not-at-top
  storage.prepare_file_systems('s3://bkt/data')
  assert confine.source_folder('s3://bkt/data/good.jpg') == 's3://bkt/data'
  assert confine.source_folder('s3://bkt/data/') == 's3://bkt/data'
