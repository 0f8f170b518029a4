"""The choice of benchmark images: the photo-like ones (benchmarks/photos.py), the
default, or the synthetic ones (benchmarks/data.py).

Each image set is a module with the same functions (`generate(root, n)`,
`image_path(root, i)`, `write_manifest(root, n)`) and `DEFAULT_ROOT`, `DESCRIPTION`,
`SHORT`, `MEAN_KB`: `image_set(name)` returns it, `add_arguments` gives a part
`--image-set photo|synthetic` and `--data`, `resolve(args)` the set and its folder.

The choice lives here, not in data.py, because photos.py builds on data.py (the same
layout and manifests): a module that imports both keeps their imports one way.
"""
from __future__ import annotations

from benchmarks import data
from benchmarks import photos

IMAGE_SETS = ('photo', 'synthetic')
DEFAULT_SET = 'photo'


def image_set(name: str):
  """The module that makes image set `name`: benchmarks.photos or benchmarks.data."""
  if name == 'photo':
    return photos
  if name == 'synthetic':
    return data
  raise ValueError(f'unknown image set {name!r}: one of {", ".join(IMAGE_SETS)}')


def add_arguments(parser) -> None:
  """`--image-set` and `--data` (default: the set's own cache folder)."""
  parser.add_argument('--image-set', choices=IMAGE_SETS, default=DEFAULT_SET,
                      help='photo: crops of real photographs, about 366 px and 53 KB '
                      '(benchmarks/photos.py); synthetic: 256x256 colour fields, about '
                      '34 KB (benchmarks/data.py)')
  parser.add_argument('--data', default=None,
                      help='the image folder (default: benchmarks/out/photos for photo, '
                      'benchmarks/out/data for synthetic)')


def resolve(args):
  """The image set `args` names; fills in `args.data` with its folder when not given."""
  images = image_set(args.image_set)
  if not args.data:
    args.data = images.DEFAULT_ROOT
  return images
