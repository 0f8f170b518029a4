"""The names in a dataset folder, local or on object storage, with what operating
systems and archivers leave beside a user's files never taken for data.

`is_junk` is the one rule for that junk, at every depth: macOS's `__MACOSX/` (the
resource forks its Archive Utility stores in a zip) and AppleDouble `._<name>` files,
`.DS_Store`, Windows' `Thumbs.db`, `ehthumbs.db` and `desktop.ini`, and the folders
volumes keep (`.Spotlight-V100`, `.Trashes`, `.fseventsd`, `$RECYCLE.BIN`,
`System Volume Information`). Names starting with a dot are hidden and skipped as well,
as Keras's `image_dataset_from_directory` and Ultralytics' globs skip them.
"""
from __future__ import annotations

import logging
import os
import posixpath
from typing import Dict, List, Optional, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.manifest.confine import Confinement

# Raster images: rows of a class folder (those TensorFlow does not decode fail as
# unsupported_format, or are re-encoded with convert_unsupported, never skipped).
IMAGE_EXTENSIONS = ('.jpg', '.jpeg', '.png', '.gif', '.bmp', '.webp', '.tif', '.tiff',
                    '.heic', '.heif', '.avif')
# Pictures that are no raster image (vector drawings, documents, camera raw and layered
# files): named in a warning with their count where a class folder holds them.
OTHER_PICTURE_EXTENSIONS = ('.svg', '.svgz', '.pdf', '.eps', '.ai', '.psd', '.dng', '.cr2',
                            '.nef', '.arw', '.raw')

_JUNK = frozenset(n.lower() for n in (
    '__MACOSX', 'Thumbs.db', 'ehthumbs.db', 'ehthumbs_vista.db', 'desktop.ini',
    '$RECYCLE.BIN', 'System Volume Information'))


def is_junk(name: str) -> bool:
  """Whether a file or folder name is what an operating system or archiver leaves
  beside data (see the module), or a hidden name (starting with a dot).

  Args:
    name: one component of a path (no slash).
  """
  return name.startswith('.') or name.lower() in _JUNK


def has_junk(relative: str) -> bool:
  """Whether any component of a `/`-separated relative path `is_junk`.

  Args:
    relative: a path relative to a listed folder, `/`-separated.
  """
  return any(is_junk(part) for part in relative.split('/'))


def is_image_name(name: str) -> bool:
  """Whether a file name is an image's by its extension (any case), and no junk.

  Args:
    name: a file's base name.
  """
  return name.lower().endswith(IMAGE_EXTENSIONS) and not is_junk(name)


class Tree:
  """The names in the folders of a local folder or an object-store prefix, listed
  as they are asked for (local) or from one listing (gs://, s3://); junk (`is_junk`)
  is never listed.

  Args:
    root: the folder: a local path (made absolute) or a gs:// or s3:// prefix.
    confine: the run's roots (`confine_to`): a symbolic link leading out of them is
      not listed (logged), but for a link named as an image, listed so that its row
      fails as `outside_root`; so nothing outside is listed or read as a manifest.
      None: every link is followed.
  """

  def __init__(self, root: str, confine: Optional[Confinement] = None):
    self.root = root.rstrip('/') if '://' in root else os.path.abspath(root)
    self.confine = confine
    self._warned = set()  # links out of the roots, warned of once
    self._remote: Optional[Dict[str, Tuple[List[str], List[str]]]] = None

  @property
  def remote(self) -> bool:
    return '://' in self.root

  def _listing(self) -> Dict[str, Tuple[List[str], List[str]]]:
    if self._remote is None:
      self._remote = {}
      for path in files.list_objects(self.root):
        if has_junk(path):
          continue
        parts = path.split('/')
        for depth in range(len(parts)):
          names, folders = self._remote.setdefault('/'.join(parts[:depth]), ([], []))
          if depth == len(parts) - 1:
            names.append(parts[-1])
          elif parts[depth] not in folders:
            folders.append(parts[depth])
    return self._remote

  def names(self, relative: str = '') -> List[str]:
    """The files directly in a folder (sorted; [] if there is none).

    Args:
      relative: the folder, relative to the root ('': the root).
    """
    if self.remote:
      return sorted(self._listing().get(relative, ([], []))[0])
    try:
      with os.scandir(self.path(relative)) as found:
        # A link out of the roots is not followed (not even to ask what it is): named
        # as an image, it is listed, so that its row fails as outside_root.
        return sorted(e.name for e in found if not is_junk(e.name) and (
            (not e.is_dir()) if self._kept(e) else is_image_name(e.name)))
    except (FileNotFoundError, NotADirectoryError):
      return []

  def folders(self, relative: str = '') -> List[str]:
    """The folders directly in a folder (sorted; [] if there is none).

    Args:
      relative: the folder, relative to the root ('': the root).
    """
    if self.remote:
      return sorted(self._listing().get(relative, ([], []))[1])
    try:
      with os.scandir(self.path(relative)) as found:
        return sorted(e.name for e in found if not is_junk(e.name) and self._kept(e)
                      and e.is_dir())
    except (FileNotFoundError, NotADirectoryError):
      return []

  def _kept(self, entry: os.DirEntry) -> bool:
    """Whether a local entry is listed: anything but, under `confine`, a link leading
    out of the roots."""
    if self.confine is None or not entry.is_symlink():
      return True
    if self.confine.resolve(entry.path) is not None:
      return True
    if entry.path not in self._warned and not is_image_name(entry.name):
      self._warned.add(entry.path)
      logging.warning('%s: a symbolic link leading outside the folders this run may read '
                      '(confine_to); not read', entry.path)
    return False

  def images(self, relative: str = '') -> List[str]:
    """The image files directly in a folder, by extension (sorted).

    Args:
      relative: the folder, relative to the root ('': the root).
    """
    return [n for n in self.names(relative) if is_image_name(n)]

  def holds_images(self, relative: str = '', depth: Optional[int] = 3) -> bool:
    """Whether a folder holds an image within `depth` levels.

    Args:
      relative: the folder, relative to the root ('': the root).
      depth: the levels looked into (1: directly in it); None: any depth.
    """
    if self.images(relative):
      return True
    if depth is not None and depth <= 1:
      return False
    return any(self.holds_images(posixpath.join(relative, f) if relative else f,
                                 None if depth is None else depth - 1)
               for f in self.folders(relative))

  def path(self, relative: str) -> str:
    """The full path or URI of a path relative to the root.

    Args:
      relative: `/`-separated, relative to the root ('': the root itself).
    """
    return posixpath.join(self.root, relative) if relative else self.root

  def sub(self, relative: str) -> 'Tree':
    """The tree of a folder inside this one (sharing a remote listing's result).

    Args:
      relative: the folder, relative to the root.
    """
    tree = Tree(self.path(relative), self.confine)
    if self.remote and self._remote is not None:
      prefix = relative.strip('/')
      tree._remote = {}
      for key, value in self._remote.items():
        if key == prefix or key.startswith(prefix + '/'):
          tree._remote[key[len(prefix) + 1:] if key != prefix else ''] = value
    return tree

  def parent(self) -> Optional['Tree']:
    """The tree of the folder above (None for a bucket or the file system's root). Asked
    only of a folder named as a dataset's part (`Annotations/`), whose parent is the
    dataset's root."""
    if self.remote:
      scheme, rest = self.root.split('://', 1)
      return (Tree(f'{scheme}://{rest.rsplit("/", 1)[0]}', self.confine) if '/' in rest
              else None)
    if os.path.dirname(self.root) == self.root:
      return None
    return Tree(os.path.dirname(self.root), self.confine)
