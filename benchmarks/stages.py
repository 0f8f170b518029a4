"""Where the time goes: the cost of each step of the conversion, per image, in isolation.

    .venv/bin/python -m benchmarks.stages [--n 2000] [--image-set photo|synthetic]

Runs each step over the same N benchmark images in one process and reports
microseconds per image; writes benchmarks/results/stages.md.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import os
import time
import zlib

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(n: int, root: str, image_set: str = 'photo'):
  from apache_beam.io import tfrecordio  # pylint: disable=g-import-not-at-top
  from benchmarks import image_sets  # pylint: disable=g-import-not-at-top
  data = image_sets.image_set(image_set)
  from tfrecorder_component.io.tfrecord import tfrecord_frame  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.record.example import build_example  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.images.probe import probe_image  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.manifest import ManifestRow  # pylint: disable=g-import-not-at-top

  data.generate(root, n)
  paths = [data.image_path(root, i) for i in range(n)]

  def read(p):
    with open(p, 'rb') as f:
      return f.read()

  blobs = [read(p) for p in paths]
  infos = [probe_image(b) for b in blobs]
  row = ManifestRow('m.csv', 1, 'images/x.jpg', '/x.jpg', ('class_1',), 'train', (1,))
  examples = [build_example(row, b, i).SerializeToString(deterministic=True)
              for b, i in zip(blobs, infos)]

  def full_decode(b):
    with Image.open(io.BytesIO(b)) as im:
      im.load()

  def deflate(level):
    def run(b):
      c = zlib.compressobj(level, zlib.DEFLATED, 31)
      c.compress(b)
      c.flush()
    return run

  crc_fallback = tfrecordio._default_crc32c_fn  # pylint: disable=protected-access
  steps = [
      ('read the file', lambda i: read(paths[i])),
      ('probe the header (format, size, channels)', lambda i: probe_image(blobs[i])),
      ('full decode (Pillow)', lambda i: full_decode(blobs[i])),
      ('probe + decode check (probe_image(decode=True))', lambda i: probe_image(blobs[i], decode=True)),
      ('SHA-256 of the bytes', lambda i: hashlib.sha256(blobs[i]).hexdigest()),
      ('build + serialize the Example', lambda i: build_example(row, blobs[i], infos[i])
       .SerializeToString(deterministic=True)),
      ('TFRecord framing, CRC32C in C (google-crc32c)', lambda i: tfrecord_frame(examples[i])),
      ("CRC32C, Beam's fallback without python-snappy", lambda i: crc_fallback(examples[i])),
      ('gzip level 0 (stored), as written by default', lambda i: deflate(0)(examples[i])),
      ('gzip level 1', lambda i: deflate(1)(examples[i])),
      ('gzip level 6 (zlib default, Beam and TF)', lambda i: deflate(6)(examples[i])),
  ]
  results = []
  for name, fn in steps:
    k = n if 'fallback' not in name else max(1, n // 20)
    start = time.perf_counter()
    for i in range(k):
      fn(i)
    results.append((name, (time.perf_counter() - start) / k * 1e6))
  return results


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--n', type=int, default=2000)
  from benchmarks import image_sets  # pylint: disable=g-import-not-at-top
  image_sets.add_arguments(parser)
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  args = parser.parse_args(argv)
  images = image_sets.resolve(args)
  results = measure(args.n, args.data, args.image_set)
  lines = ['', f'Cost of each step per image, one process, N={args.n:,} {images.SHORT}:', '',
           '| step | µs per image | images/s on one core |', '|---|---:|---:|']
  lines += [f'| {name} | {us:,.0f} | {1e6 / us:,.0f} |' for name, us in results]
  from benchmarks import report  # pylint: disable=g-import-not-at-top
  report.write_part(args.results, 'stages.md', '\n'.join(lines) + '\n')
  return 0


if __name__ == '__main__':
  raise SystemExit(main())
