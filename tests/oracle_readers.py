"""The field's own readers as oracles: what supervision, Datumaro and pycocotools read from
a dataset (tests/oracles/read.py, run in their own environment, scripts/oracles-env),
what our records hold, in one shape, and the comparison of the two.

The shape (read.py's): {image key: {'split', 'width', 'height', 'objects': [{'label',
'box': [xmin, ymin, xmax, ymax] normalised, optional 'mask' (COCO RLE), 'corners'}]}},
the key being the image file's name without its extension.
"""
from __future__ import annotations

import functools
import glob
import io
import os
import subprocess
from typing import Any, Dict, List, Optional

import numpy as np
from PIL import Image

from records import feature, read_split

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READ = os.path.join(ROOT, 'tests', 'oracles', 'read.py')
WRITE = os.path.join(ROOT, 'tests', 'oracles', 'write.py')


@functools.lru_cache(maxsize=None)
def oracle_python() -> str:
  """The reference readers' python: scripts/oracles-env builds its environment the first
  time (about 25 s with uv's cache) and only prints it afterwards."""
  done = subprocess.run([os.path.join(ROOT, 'scripts', 'oracles-env')], cwd=ROOT,
                        capture_output=True, text=True, check=False)
  assert done.returncode == 0, f'scripts/oracles-env failed:\n{done.stderr[-4000:]}'
  return done.stdout.strip().splitlines()[-1]


def reference(reader: str, fmt: str, path: str, *, images: Optional[str] = None,
              masks: bool = False) -> Dict[str, Any]:
  """What `reader` (supervision, datumaro, pycocotools) reads from `path` as `fmt`."""
  command = [oracle_python(), READ, '--reader', reader, '--format', fmt, str(path)]
  if images:
    command += ['--images', str(images)]
  if masks:
    command.append('--masks')
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', PYTHONWARNINGS='ignore')
  done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
  assert done.returncode == 0, (f'{reader} could not read {path} as {fmt}:\n'
                                f'{done.stderr[-4000:]}')
  import json  # pylint: disable=g-import-not-at-top
  return json.loads(done.stdout)['images']


def _hf_decoded(value):
  """read.py's JSON value with its bytes ({'$bytes': base64}) as bytes again."""
  import base64  # pylint: disable=g-import-not-at-top
  if isinstance(value, dict):
    if set(value) == {'$bytes'}:
      return base64.b64decode(value['$bytes'])
    return {k: _hf_decoded(v) for k, v in value.items()}
  if isinstance(value, list):
    return [_hf_decoded(v) for v in value]
  return value


def hf_parquet(path: str) -> Dict[str, Any]:
  """What Hugging Face `datasets.load_dataset(path)` reads from a `parquet` layout folder
  (read.py's `datasets` reader): {'features': {column: feature dict}, 'splits': {split:
  {'count': n, 'rows': [{column: value}]}}}, bytes as bytes again."""
  import json  # pylint: disable=g-import-not-at-top
  command = [oracle_python(), READ, '--reader', 'datasets', '--format', 'parquet', str(path)]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', PYTHONWARNINGS='ignore')
  done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
  assert done.returncode == 0, f'datasets could not load {path}:\n{done.stderr[-4000:]}'
  read = json.loads(done.stdout)
  return {'features': read['features'], 'splits': _hf_decoded(read['splits'])}


def hf_parquet_shared(paths: List[str], hf_home: str) -> List[Dict[str, Any]]:
  """What `datasets.load_dataset(path)`, no other argument, reads from each `parquet`
  layout folder of `paths`, one after the other in one process whose HF_HOME is
  `hf_home` (offline): datasets' own cache there, kept between calls. Per path, as
  hf_parquet's, with 'cache_files': {split: the cache's Arrow files it was read from}."""
  import json  # pylint: disable=g-import-not-at-top
  command = [oracle_python(), READ, '--reader', 'datasets', '--format', 'parquet',
             '--shared-cache', *map(str, paths)]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', PYTHONWARNINGS='ignore',
             HF_HOME=str(hf_home), HF_DATASETS_OFFLINE='1', HF_HUB_OFFLINE='1')
  env.pop('HF_DATASETS_CACHE', None)
  done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
  assert done.returncode == 0, f'datasets could not load {paths}:\n{done.stderr[-4000:]}'
  reads = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
  assert len(reads) == len(paths), done.stdout[-4000:]
  return [{'features': r['features'], 'splits': _hf_decoded(r['splits']),
           'cache_files': r['cache_files']} for r in reads]


def datumaro_export(fmt: str, spec: Dict[str, Any], out: str, **options) -> str:
  """Writes `spec` (tests/oracles/write.py's) as `fmt` with Datumaro's exporter, images
  saved, into `out` (`options` the exporter's); returns `out`."""
  return _write('datumaro', fmt, spec, out, options)


def supervision_export(fmt: str, spec: Dict[str, Any], out: str) -> str:
  """Writes `spec` as `fmt` with supervision's writer (`as_labelme`, `as_createml` ...),
  each split in its own folder (tests/oracles/write.py); returns `out`."""
  return _write('supervision', fmt, spec, out, {})


def _write(writer: str, fmt: str, spec: Dict[str, Any], out: str,
           options: Dict[str, Any]) -> str:
  import json  # pylint: disable=g-import-not-at-top
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', PYTHONWARNINGS='ignore')
  given = [a for k, v in options.items() for a in ('--option', f'{k}={json.dumps(v)}')]
  done = subprocess.run([oracle_python(), WRITE, '--writer', writer, '--format', fmt, *given,
                         str(out)],
                        input=json.dumps(spec), capture_output=True, text=True, env=env,
                        check=False)
  assert done.returncode == 0, f'{writer} could not write {fmt}:\n{done.stderr[-4000:]}'
  return str(out)


def truth(spec: Dict[str, Any], split_names: Optional[Dict[str, str]] = None
          ) -> Dict[str, Any]:
  """A write.py spec in read.py's shape: what any reader should see (boxes normalised
  by the spec's sizes; a polygon's box its bounds; splits renamed by `split_names`)."""
  images = {}
  for image in spec['images']:
    w, h = image['width'], image['height']
    objects = []
    for obj in image['objects']:
      if obj.get('polygon'):
        xs, ys = obj['polygon'][0::2], obj['polygon'][1::2]
        box = (min(xs), min(ys), max(xs), max(ys))
      else:
        box = obj['box']
      objects.append({'label': obj['label'],
                      'box': [box[0] / w, box[1] / h, box[2] / w, box[3] / h]})
    split = image.get('split')
    images[image['name']] = {'split': (split_names or {}).get(split, split), 'width': w,
                             'height': h, 'objects': objects}
  return images


def _mask_rle(png: bytes) -> Dict[str, Any]:
  from pycocotools import mask as coco_mask  # pylint: disable=g-import-not-at-top
  pixels = np.asarray(Image.open(io.BytesIO(png)))
  rle = coco_mask.encode(np.asfortranarray((pixels > 0).astype(np.uint8)))
  return {'size': [int(v) for v in rle['size']], 'counts': rle['counts'].decode('ascii')}


def ours(out_dir: str) -> Dict[str, Any]:
  """Our records under `out_dir` (every Split-*) in read.py's shape."""
  images: Dict[str, Any] = {}
  split_dirs = sorted(glob.glob(os.path.join(str(out_dir), 'Split-*')))
  assert split_dirs, f'no Split-* folder in {out_dir}'
  for split_dir in split_dirs:
    split = os.path.basename(split_dir)[len('Split-'):]
    for example in read_split(split_dir):
      name = feature(example, 'image/filename')[0].decode()
      key = os.path.splitext(name)[0]
      assert key not in images, f'{name} written twice'
      boxes = zip(*(feature(example, f'image/object/bbox/{k}')
                    for k in ('xmin', 'ymin', 'xmax', 'ymax')))
      labels = [t.decode() for t in feature(example, 'image/object/class/text')]
      masks = feature(example, 'image/object/mask')
      xs = feature(example, 'image/object/corner/x')
      ys = feature(example, 'image/object/corner/y')
      objects: List[Dict[str, Any]] = []
      for i, (label, box) in enumerate(zip(labels, boxes)):
        obj: Dict[str, Any] = {'label': label, 'box': [float(v) for v in box]}
        if masks:
          obj['mask'] = _mask_rle(masks[i])
        if xs:
          obj['corners'] = [float(v) for p in zip(xs[4 * i:4 * i + 4], ys[4 * i:4 * i + 4])
                            for v in p]
        objects.append(obj)
      images[key] = {'split': split, 'width': feature(example, 'image/width')[0],
                     'height': feature(example, 'image/height')[0], 'objects': objects}
  return images


def mask_iou(a: Dict[str, Any], b: Dict[str, Any]) -> float:
  from pycocotools import mask as coco_mask  # pylint: disable=g-import-not-at-top
  ra = {'size': a['size'], 'counts': a['counts'].encode('ascii')}
  rb = {'size': b['size'], 'counts': b['counts'].encode('ascii')}
  if coco_mask.area(ra) == 0 and coco_mask.area(rb) == 0:
    return 1.0
  return float(coco_mask.iou([ra], [rb], [0])[0][0])


def _box(obj) -> str:
  return '[' + ', '.join(f'{v:.6f}' for v in obj['box']) + ']'


def differences(mine: Dict[str, Any], theirs: Dict[str, Any], *, tol: float = 1e-4,
                splits: bool = True, masks: bool = False, min_iou: float = 0.99,
                corners: bool = False) -> List[str]:
  """What differs between our records and a reader's view, one line a difference,
  naming the image and the object: images missing on either side, sizes, splits (where
  the reader gives one), and objects matched by label and box (within `tol`), then
  their masks (each object must have one on both sides, IoU at least `min_iou`) and
  oriented corners when asked."""
  out = []
  for key in sorted(set(theirs) - set(mine)):
    out.append(f'{key}: read by the reference, not in our records')
  for key in sorted(set(mine) - set(theirs)):
    out.append(f'{key}: in our records, not read by the reference')
  for key in sorted(set(mine) & set(theirs)):
    a, b = mine[key], theirs[key]
    if (a['width'], a['height']) != (b['width'], b['height']):
      out.append(f'{key}: size {a["width"]}x{a["height"]} in our records, '
                 f'{b["width"]}x{b["height"]} read')
    if splits and b['split'] is not None and a['split'] != b['split']:
      out.append(f'{key}: split {a["split"]!r} in our records, {b["split"]!r} read')
    left = list(enumerate(b['objects']))
    for i, obj in enumerate(a['objects']):
      same = [(j, o) for j, o in left if o['label'] == obj['label']]
      near = min(same, key=lambda jo: max(abs(x - y) for x, y in zip(jo[1]['box'], obj['box'])),
                 default=None)
      if near is None or max(abs(x - y) for x, y in zip(near[1]['box'], obj['box'])) > tol:
        closest = (f'; nearest {near[1]["label"]} {_box(near[1])} (reference object '
                   f'{near[0]})' if near else '')
        out.append(f'{key}: our object {i} ({obj["label"]} {_box(obj)}) not read{closest}')
        continue
      left.remove(near)
      j, other = near
      if masks:  # every object must have one on both sides
        if 'mask' not in obj or 'mask' not in other:
          out.append(f'{key}: object {i} ({obj["label"]}): mask '
                     f'{"in our records" if "mask" in obj else "not in our records"}, '
                     f'{"read" if "mask" in other else "not read"}')
        else:
          iou = mask_iou(obj['mask'], other['mask'])
          if iou < min_iou:
            out.append(f'{key}: object {i} ({obj["label"]} {_box(obj)}): mask IoU {iou:.4f} '
                       f'with reference object {j}')
      if corners and ('corners' in obj or 'corners' in other):
        ours_c, theirs_c = obj.get('corners'), other.get('corners')
        if theirs_c is None:  # we give every object of such an image its box's corners
          b = other['box']
          theirs_c = [b[0], b[1], b[2], b[1], b[2], b[3], b[0], b[3]]
        if ours_c is None or not _same_corners(ours_c, theirs_c, tol):
          out.append(f'{key}: object {i} ({obj["label"]}): corners {ours_c} in our records, '
                     f'{theirs_c} read')
    for j, other in left:
      out.append(f'{key}: reference object {j} ({other["label"]} {_box(other)}) not in our '
                 f'records')
  return out


def _same_corners(a, b, tol) -> bool:
  """The same four points, in the same cyclic order from any start (readers begin an
  oriented box at different corners)."""
  pa = list(zip(a[0::2], a[1::2]))
  pb = list(zip(b[0::2], b[1::2]))
  if len(pa) != len(pb):
    return False
  for start in range(len(pb)):
    turned = pb[start:] + pb[:start]
    if all(abs(x - y) <= tol and abs(u - v) <= tol for (x, u), (y, v) in zip(pa, turned)):
      return True
  return False


def assert_same(mine: Dict[str, Any], theirs: Dict[str, Any], tol: float = 1e-4,
                **options) -> None:
  """Fails with every difference (`differences`), naming the image and the object."""
  found = differences(mine, theirs, tol=tol, **options)
  assert not found, f'{len(found)} difference(s):\n' + '\n'.join(found[:40])
