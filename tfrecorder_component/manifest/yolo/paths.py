"""YOLO datasets' paths: split folders and image lists found and listed (local ones with
os.walk, gs:// and s3:// ones with one listing a folder), Ultralytics' images -> labels
rule, and the path arithmetic the readers share.

Image lists, names files and label files are read whole but bounded (`read_text`: a
regular file of at most TEXT_MAX_BYTES, never a FIFO or a device), and a line of a list
that names no image fails its row by its number, never quoting it: a list may be any
file a data.yaml names, whose text is not the user's to see. Where the run is confined
(`confine`), a walk does not follow a link out of the roots.
"""
from __future__ import annotations

import os
import posixpath
from typing import Dict, Iterator, List, Optional, Tuple, Union

from tfrecorder_component.io import files
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest.confine import Confinement
from tfrecorder_component.manifest.tree import has_junk, is_junk


# Ultralytics' IMG_FORMATS: the extensions a split folder's images are found by.
IMG_FORMATS = ('.bmp', '.dng', '.jpeg', '.jpg', '.mpo', '.png', '.tif', '.tiff', '.webp',
               '.pfm', '.heic')


# The most bytes of an image list, names file or label file read (a list of ten million
# image paths): a larger one is refused, not held.
TEXT_MAX_BYTES = 1 << 30


# The objects under each gs:// or s3:// folder listed while one file is parsed, relative
# to it: each folder is listed once.
Listings = Dict[str, List[str]]


def _list_objects(folder: str, listed: Listings) -> List[str]:
  prefix = folder.rstrip('/')
  if prefix not in listed:
    listed[prefix] = files.list_objects(prefix)
  return listed[prefix]


def path_kind(target: str, listed: Listings) -> Optional[str]:
  """'folder', 'file' or None (nothing there).

  Args:
    target: A local path or a gs:// or s3:// URI; a URI that is no object is a folder
      when objects lie under it.
    listed: The folder listings made while this file is parsed, each folder listed once;
      a remote folder's listing is added to it.
  """
  if files.is_local(target):
    return 'folder' if os.path.isdir(target) else 'file' if os.path.isfile(target) else None
  if files.exists(target):
    return 'file'
  return 'folder' if _list_objects(target, listed) else None


def walk_files(folder: str, extensions: Tuple[str, ...], listed: Listings,
               confine: Optional[Confinement] = None) -> Iterator[str]:
  """The files under `folder`, at any depth, whose names end with `extensions`: full
  paths; hidden files and folders skipped (as Ultralytics' glob skips them), and
  operating-system junk (`tree.is_junk`: `__MACOSX/`, `Thumbs.db`, ...).

  Args:
    folder: A local folder (symbolic links followed) or a gs:// or s3:// folder URI.
    extensions: The name endings to keep, lower case with the dot (`IMG_FORMATS`,
      ('.txt',)); names are compared in lower case.
    listed: The folder listings made while this file is parsed, for a remote folder.
    confine: The run's roots, `folder` inside them: a linked folder leading out of
      them is not walked, nor one walked already (a link cycle). A linked file is
      listed (its row fails as `outside_root` when it is read). None: every link is
      followed.
  """
  if files.is_local(folder):
    seen = set()
    for top, dirs, names in os.walk(folder, followlinks=True):
      dirs[:] = [d for d in dirs if not is_junk(d) and (
          confine is None or _walked(os.path.join(top, d), confine, seen))]
      for name in names:
        if not is_junk(name) and name.lower().endswith(extensions):
          yield os.path.join(top, name)
    return
  prefix = folder.rstrip('/')
  for relative in _list_objects(prefix, listed):
    if relative.lower().endswith(extensions) and not has_junk(relative):
      yield f'{prefix}/{relative}'


def _walked(folder: str, confine: Confinement, seen: set) -> bool:
  """Whether a walk under confinement goes into `folder`: not a link, or a link whose
  folder lies inside the roots and was not walked yet."""
  if not os.path.islink(folder):
    return True
  resolved = confine.resolve(folder)
  if resolved is None or resolved in seen:
    return False
  seen.add(resolved)
  return True


def listed_images(list_path: str) -> List[Tuple[str, Union[str, RowError]]]:
  """The images a .txt list names, one a line, relative ones relative to its folder; a
  line naming no image is a RowError naming its number (never its text).

  Returns (image path, image path or RowError) pairs, in the list's order; blank lines
  skipped. Raises ManifestError when the list is not UTF-8 text, or cannot be read.

  Args:
    list_path: The image list's local path or URI.
  """
  text = read_text(list_path, 'image list')
  if text is None:
    raise ManifestError(f'{list_path}: the image list is not UTF-8 text')
  folder = parent_path(list_path)
  out: List[Tuple[str, Union[str, RowError]]] = []
  for number, line in enumerate(text.split('\n'), start=1):
    name = line.strip()
    if not name:
      continue
    out.append(list_entry(list_path, number, name, join_path(folder, name)))
  return out


def list_entry(list_path: str, number: int, entry: str, image: str
                ) -> Tuple[str, Union[str, RowError]]:
  """(image, image) for an image list's line naming an image, else (image, its
  RowError), which names the line by its number: the line's text is not quoted, and the
  RowError has no `uri` (the list may be any file; its text is not the user's to see).

  Args:
    list_path: The list's path, named in the RowError.
    number: The line's number in the list, from 1.
    entry: The line as written (stripped); not quoted.
    image: The line resolved to a full path or URI; an image is one whose name ends with
      one of `IMG_FORMATS`, in any case.
  """
  del entry  # never quoted
  if image.lower().endswith(IMG_FORMATS):
    return image, image
  return image, RowError(
      'bad_row', f'{list_path} line {number} is not an image file name (one of '
      f'{", ".join(IMG_FORMATS)}); list only images, one path a line')


def img2label_path(image: str) -> str:
  """Ultralytics' img2label_paths: the last `/images/` made `/labels/`, the extension
  `.txt`.

  Args:
    image: The image's full path or URI; without `/images/` in it, the label file is
      beside the image.
  """
  labelled = '/labels/'.join(image.rsplit('/images/', 1))
  return labelled.rsplit('.', 1)[0] + '.txt'


def absolute_path(path: str) -> str:
  """A local path (or file:// URI) made absolute; a gs:// or s3:// URI as it is.

  Args:
    path: A local path, a file:// URI or another URI.
  """
  if path.startswith('file://'):
    path = path[len('file://'):]
  return os.path.abspath(path) if files.is_local(path) else path


def folder_path(folder: str) -> str:
  """A folder as `absolute_path` gives it, without a trailing `/` ('/' for the root).

  Args:
    folder: A local folder, a file:// URI or a folder URI (`image_root`, say).
  """
  return absolute_path(folder).rstrip('/') or '/'


def parent_path(path: str) -> str:
  """The folder part of a path or URI, up to its last `/`; '.' when it has none.

  Args:
    path: A path or URI, a trailing `/` ignored when looking for one.
  """
  return path.rsplit('/', 1)[0] if '/' in path.rstrip('/') else '.'


def join_path(base: str, relative: str) -> str:
  """`relative` under `base`, `..` resolved; an absolute path or URI as it is.

  Args:
    base: The folder relative paths are relative to: a local path or a URI.
    relative: The path as a file gives it: relative, absolute, a file:// URI (made a
      local absolute path) or another URI (`..` resolved in it too).
  """
  if relative.startswith('file://'):
    return absolute_path(relative)
  if '://' in relative:
    scheme, rest = relative.split('://', 1)
    return f'{scheme}://{posixpath.normpath(rest)}'
  if relative.startswith('/'):
    return posixpath.normpath(relative)
  if '://' in base:
    scheme, rest = base.split('://', 1)
    return f'{scheme}://{posixpath.normpath(posixpath.join(rest, relative))}'
  return posixpath.normpath(posixpath.join(base, relative))


def relative_path(image: str, base: str) -> str:
  """The image's path relative to `base` when it is under it, else its full path.

  What a row's `image_uri` shows; `resolved_uri` keeps the full path.

  Args:
    image: The image's full path or URI.
    base: The folder it is shown relative to: obj.data's or data.yaml's folder, or
      `image_root` when given.
  """
  prefix = base.rstrip('/') + '/'
  return image[len(prefix):] if image.startswith(prefix) else image


def read_text(path: str, what: str = 'file') -> Optional[str]:
  """A file's text, decoded as UTF-8 (a byte-order mark dropped), or None when it is not
  UTF-8. Read as an image is (`files.read_bytes`): only a regular file (never a FIFO or
  a device, which could block or never end), of at most TEXT_MAX_BYTES; ManifestError
  otherwise, naming why.

  Args:
    path: A local path or a URI.
    what: What the file is, in words ('image list', 'class names file'), for errors.
  """
  try:
    raw = files.read_bytes(path, TEXT_MAX_BYTES)
  except RowError as e:
    raise ManifestError(f'{path}: cannot read the {what}: {e.reason}: {e.message}') from None
  try:
    return raw.decode('utf-8-sig')
  except UnicodeDecodeError:
    return None
