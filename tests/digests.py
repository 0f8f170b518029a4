"""Converts a fixed set of inputs (every manifest format, classification and detection,
multi-label, a DataFrame, an image folder, transforms, a failed row, the extra output
layouts) with the public API and prints a digest of each output: the check that a
refactor leaves every record and label file, every report file and every Parquet and
ArrayRecord file byte-identical.

    .venv/bin/python tests/digests.py WORK_DIR > before.json   # on the old commit
    .venv/bin/python tests/digests.py WORK_DIR > after.json    # on the new one; diff them

Run as a script, its own folder (tests/) is on sys.path, so its sibling helpers import
as the tests import them; test_engines.py runs the same conversions on both engines.
"""
import hashlib
import json
import os
import shutil
import sys
from typing import Optional

import pandas as pd
import sklearn.datasets

from images import write_image
import tfrecord_digest
import tfrecorder_component as trc


REPORT_FILES = ('summary.json', 'errors.jsonl', 'duplicates.jsonl', 'box_issues.jsonl',
                'report.html')
# The Parquet and ArrayRecord layouts, hashed file by file: their bytes come from pyarrow's
# and ArrayRecord's writers, beside the TFX shards' records that tfrecord_digest checks.
LAYOUT_FOLDERS = ('parquet', 'array_record')


def _report_digests(output_dir: str, base: Optional[str] = None) -> dict:
  """SHA-256 of each report file, and the report folder's listing. The reports name the
  manifests and images by their paths: with `base`, that folder's path is hashed as a
  fixed word, so that two work folders give the same digests."""
  report = os.path.join(output_dir, 'report')
  out = {'report/': ' '.join(sorted(os.listdir(report)))}
  for name in REPORT_FILES:
    with open(os.path.join(report, name), 'rb') as f:
      data = f.read()
    if base:
      data = data.replace(base.encode(), b'WORK_DIR')
    out[f'report/{name}'] = hashlib.sha256(data).hexdigest()
  return out


def _layout_digests(output_dir: str) -> dict:
  """SHA-256 of every file under the output's Parquet and ArrayRecord folders, by its
  path relative to the output (none where the run wrote neither)."""
  out = {}
  for folder in LAYOUT_FOLDERS:
    for parent, _, names in os.walk(os.path.join(output_dir, folder)):
      for name in names:
        path = os.path.join(parent, name)
        with open(path, 'rb') as f:
          out[os.path.relpath(path, output_dir).replace(os.sep, '/')] = (
              hashlib.sha256(f.read()).hexdigest())
  return out


def digests(base: str) -> dict:
  """{run: {output file: digest}} of every run, its inputs and outputs made under `base`."""
  base = os.path.abspath(base)  # the path the reports hold, replaced before hashing
  shutil.rmtree(base, ignore_errors=True)
  d = os.path.join(base, 'data'); os.makedirs(d)
  photos = os.path.join(os.path.dirname(sklearn.datasets.__file__), 'images')
  for n in ('china.jpg', 'flower.jpg'):
    shutil.copy(os.path.join(photos, n), os.path.join(d, n))
  rows = ['split,image_uri,label,weight,note']
  for i in range(30):
    fmt = ['JPEG', 'PNG', 'GIF', 'BMP'][i % 4]
    ext = {'JPEG': 'jpg', 'PNG': 'png', 'GIF': 'gif', 'BMP': 'bmp'}[fmt]
    mode = 'P' if fmt == 'GIF' else ['RGB', 'L', 'RGBA'][i % 3] if fmt == 'PNG' else ['RGB', 'L'][i % 2]
    write_image(os.path.join(d, f'img{i}.{ext}'), fmt, mode, 10 + i, 20 + i % 7, seed=i)
    rows.append(f'{["TRAIN","TEST","VALIDATION","UNASSIGNED",""][i % 5]},img{i}.{ext},{["cat","dog","10","2"][i % 4]},{i * 0.5},n{i}')
  rows.append('TRAIN,missing.jpg,cat,1,x')
  with open(os.path.join(d, 'cls.csv'), 'w') as f: f.write('\n'.join(rows) + '\n')
  with open(os.path.join(d, 'multi.csv'), 'w') as f:
    f.write(''.join(f'TRAIN,img{i}.{"jpg" if i % 4 == 0 else "png"},a,b\n' for i in (0, 4, 8)) )
  det = ['china.jpg,pagoda,0.4,0.1,,,0.6,0.5,,', 'china.jpg,tree,0.5,0.5,,,1.2,0.9,,',
         'china.jpg,tree,0.3,0.1,,,0.3,0.2,,', 'flower.jpg,flower,0.1,0.1,,,0.5,0.5,,',
         'TEST,flower.jpg,flower,0.2,0.2,,,0.4,0.6,,']
  with open(os.path.join(d, 'det.csv'), 'w') as f: f.write('\n'.join(det[:4]) + '\n')
  coco = {'images': [{'id': 1, 'file_name': 'china.jpg', 'width': 640, 'height': 427},
                     {'id': 7, 'file_name': 'flower.jpg', 'width': 640, 'height': 427}],
          'categories': [{'id': 3, 'name': 'pagoda'}, {'id': 90, 'name': 'flower'}],
          'annotations': [{'id': 1, 'image_id': 1, 'category_id': 3, 'bbox': [262, 54, 130, 196], 'area': 100, 'iscrowd': 0},
                          {'id': 2, 'image_id': 7, 'category_id': 90, 'bbox': [148.5, 43, 330, 350], 'area': 50, 'iscrowd': 1}]}
  with open(os.path.join(d, 'coco.json'), 'w') as f: json.dump(coco, f)
  voc = ('<annotation><filename>china.jpg</filename><size><width>640</width><height>427</height><depth>3</depth></size>'
         '<object><name>pagoda</name><difficult>1</difficult><bndbox><xmin>262</xmin><ymin>54</ymin><xmax>392</xmax><ymax>250</ymax></bndbox></object></annotation>')
  with open(os.path.join(d, 'voc.xml'), 'w') as f: f.write(voc)
  jl = [{'imageGcsUri': 'china.jpg', 'boundingBoxAnnotations': [{'displayName': 'pagoda', 'xMin': 0.4, 'yMin': 0.1, 'xMax': 0.6, 'yMax': 0.5}], 'dataItemResourceLabels': {'aiplatform.googleapis.com/ml_use': 'training'}},
        {'imageGcsUri': 'flower.jpg', 'boundingBoxAnnotations': []}]
  with open(os.path.join(d, 'det.jsonl'), 'w') as f: f.write(''.join(json.dumps(x) + '\n' for x in jl))
  cl = [{'imageGcsUri': 'img0.jpg', 'classificationAnnotation': {'displayName': 'cat'}, 'dataItemResourceLabels': {'aiplatform.googleapis.com/ml_use': 'test'}},
        {'imageGcsUri': 'img1.png', 'classificationAnnotations': [{'displayName': 'a'}, {'displayName': 'b'}]}]
  with open(os.path.join(d, 'cls.jsonl'), 'w') as f: f.write(''.join(json.dumps(x) + '\n' for x in cl))
  # Duplicates: images listed twice and the same bytes under other names, in several
  # groups whose hashes fall in different ranges, some across splits.
  dup_rows = []
  for i in range(8):
    src = os.path.join(d, f'img{i}.{["jpg", "png", "gif", "bmp"][i % 4]}')
    for k in range(1 + i % 3):
      copy = os.path.join(d, f'dup{i}_{k}{os.path.splitext(src)[1]}')
      shutil.copy(src, copy)
      dup_rows.append(f'{["TRAIN", "TEST"][k % 2]},{os.path.basename(copy)},c{i % 2}')
    dup_rows.append(f'TRAIN,{os.path.basename(src)},c{i % 2}')
    dup_rows.append(f'VALIDATION,{os.path.basename(src)},c{i % 2}')
  with open(os.path.join(d, 'dups.csv'), 'w') as f: f.write('\n'.join(dup_rows) + '\n')
  folder = os.path.join(base, 'folder')
  for lab in ('ant', 'bee'):
    for i in range(3):
      write_image(os.path.join(folder, lab, f'{i}.jpg'), 'JPEG', 'RGB', 9 + i, 11, seed=i)

  # cls_layouts: a fixed shard count, as the layouts' files (and the report listing them)
  # follow the TFX shards, whose count is otherwise the runner's choice.
  runs = {
    'cls': (os.path.join(d, 'cls.csv'), dict(max_error_ratio=0.1)),
    'cls_layouts': (os.path.join(d, 'cls.csv'), dict(max_error_ratio=0.1, num_shards=2,
                                                     layouts=['tfrecord', 'parquet', 'array_record'])),
    'cls_transform': (os.path.join(d, 'cls.csv'), dict(max_error_ratio=0.1, image_transform={'size': [8, 8], 'resize_mode': 'fit', 'encode': 'png'})),
    'multi': (os.path.join(d, 'multi.csv'), {}),
    'det': (os.path.join(d, 'det.csv'), {}),
    'det_transform': (os.path.join(d, 'det.csv'), dict(image_transform={'size': [100, 80], 'resize_mode': 'crop'})),
    'coco': (os.path.join(d, 'coco.json'), {}),
    'voc': (os.path.join(d, 'voc.xml'), {}),
    'detjsonl': (os.path.join(d, 'det.jsonl'), {}),
    'clsjsonl': (os.path.join(d, 'cls.jsonl'), {}),
    'folder': (folder, {}),
    'dups': (os.path.join(d, 'dups.csv'), {}),
  }
  out = {}
  for name, (src, kw) in runs.items():
    o = os.path.join(base, 'out', name)
    trc.convert(src, o, **kw)
    out[name] = dict(tfrecord_digest.digest(o), **_report_digests(o, base),
                     **_layout_digests(o))
  cwd = os.getcwd(); os.chdir(d)
  df = pd.DataFrame({'split': ['TRAIN', 'TEST', ''], 'image_uri': ['img0.jpg', 'img1.png', 'img2.gif'], 'label': [['a', 'b'], ['b'], []], 'w': [1, 2, 3]})
  trc.convert(df, os.path.join(base, 'out', 'df'))
  os.chdir(cwd)
  out['df'] = dict(tfrecord_digest.digest(os.path.join(base, 'out', 'df')),
                   **_report_digests(os.path.join(base, 'out', 'df'), base))
  return out


if __name__ == '__main__':
  print(json.dumps(digests(sys.argv[1]), indent=1, sort_keys=True))
