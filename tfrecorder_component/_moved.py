"""Modules at the import paths they had before the package took its layers (io/,
record/, output/, engines/, adapters/, readers/): `tfrecorder_component.conversion`,
`tfrecorder_component.component.executor` (the executor class path of pipelines compiled
before), `tfrecorder_component.beam` and the rest keep importing, each as the very module
object of its new path (not a copy: its classes, its globals and what a test patches are
the same), through a finder that `tfrecorder_component/__init__.py` puts first on
`sys.meta_path`. Only the names below are looked at; any other import goes on as usual.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Optional

PACKAGE = 'tfrecorder_component'

# {old path: new path}, relative to the package; a moved package's modules follow it.
# `record` and `readers` are not here: their names are packages now (`readers` keeps its
# public names in its __init__).
MOVED = {
    'accessor': 'adapters.accessor',
    'beam': 'engines.beam',
    'cli': 'adapters.cli',
    'component': 'adapters.component',
    'console': 'adapters.console',
    'conversion': 'adapters.conversion',
    'dataset': 'readers.dataset',
    'example': 'record.example',
    'example_proto': 'record.example_proto',
    'files': 'io.files',
    'inspection': 'readers.inspection',
    'interrupt': 'output.interrupt',
    'labels': 'record.labels',
    'layout': 'output.paths',
    'layouts': 'output.layouts',
    'local': 'engines.local_pool',
    'output_swap': 'output.folder',
    'policy': 'steps.policy',
    'progress': 'output.progress',
    'report_html': 'output.report_html',
    'run': 'engines.run',
    'sources': 'manifest.sources',
    'splits': 'record.splits',
    'staging': 'io.staging',
    'steps.sort': 'io.sort',
    'steps.sorted_runs': 'io.sorted_runs',
    'storage': 'io.storage',
}


def new_path(name: str) -> Optional[str]:
  """The module path that old path `name` now has, or None for a path that did not move.

  Args:
    name: a dotted module path, such as 'tfrecorder_component.component.executor'.
  """
  if not name.startswith(PACKAGE + '.'):
    return None
  parts = name[len(PACKAGE) + 1:].split('.')
  for end in range(len(parts), 0, -1):
    moved = MOVED.get('.'.join(parts[:end]))
    if moved is not None:
      return '.'.join([PACKAGE, moved] + parts[end:])
  return None


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
  """Imports an old path as the module of its new path."""

  def __init__(self):
    self._specs = {}  # {old path: the module's own spec, while the import system runs}

  def find_spec(self, fullname, path=None, target=None):  # pylint: disable=unused-argument
    """A spec loading old path `fullname` through this finder, or None (Python's own
    finders go on) for a path that did not move or whose new path has no module.

    Args:
      fullname: the dotted module path being imported.
      path: the parent package's `__path__` (None for a top-level module); unused: the
        new path is found by name.
      target: the module object being reloaded, if any; unused.
    """
    new = new_path(fullname)
    found = importlib.util.find_spec(new) if new is not None else None
    if found is None:
      return None  # not moved, or no such module at the new path either: Python's error
    return importlib.util.spec_from_loader(
        fullname, self, is_package=found.submodule_search_locations is not None)

  def create_module(self, spec):
    """The module of the new path, imported (once) and given under the old name.

    Args:
      spec: the spec `find_spec` returned, named by the old path; the module's own spec is
        kept until `exec_module` puts it back.
    """
    module = importlib.import_module(new_path(spec.name))
    # The import system gives the module this spec; its own is put back in exec_module.
    self._specs[spec.name] = module.__spec__
    return module

  def get_code(self, fullname):
    """The code `python -m <old path>` runs (`runpy` asks the loader for it): the new
    path's module's own code, run as `__main__` as `python -m <new path>` runs it.

    Args:
      fullname: the old dotted path given to `-m`.
    """
    new = new_path(fullname)
    return importlib.util.find_spec(new).loader.get_code(new)

  def exec_module(self, module):
    """Puts back the module's own spec, which the import system replaced with the old
    path's; the module is not run again.

    Args:
      module: the module `create_module` returned.
    """
    module.__spec__ = self._specs.pop(module.__spec__.name)


def install() -> None:
  """Puts the finder first on `sys.meta_path`, once: before Python's own path finder,
  which would otherwise load a second copy of a moved package's module from its new
  folder under the old name."""
  if not any(isinstance(f, MovedModules) for f in sys.meta_path):
    sys.meta_path.insert(0, MovedModules())
