"""Registers the `df.tensorflow` accessor when pandas is imported, so that
`import tfrecorder_component` does not import pandas (0.4-0.9 s) for a program that never
makes a DataFrame.

Where pandas is already imported, the accessor is registered at once. Else a finder on
`sys.meta_path` (the import system's protocol: PEP 451, `importlib.abc.MetaPathFinder`)
waits for the import of `pandas` itself: it removes itself, takes the spec the other
finders give, and has its loader register the accessor once pandas' module has run.
Nothing else's import is changed.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import warnings

_PANDAS = 'pandas'


def _register() -> None:
  try:
    from tfrecorder_component.adapters import accessor  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  except Exception as e:  # pylint: disable=broad-except  (pandas itself must still import)
    warnings.warn(f'tfrecorder_component: the df.tensorflow accessor is not registered: '
                  f'{type(e).__name__}: {e}', stacklevel=3)


class _WhenPandasLoads(importlib.abc.MetaPathFinder):
  """Finds nothing itself: at the import of `pandas` it hands on the other finders' spec,
  its loader's `exec_module` followed by the accessor's registration."""

  def find_spec(self, fullname, path=None, target=None):  # pylint: disable=unused-argument
    if fullname != _PANDAS:
      return None
    uninstall()
    spec = importlib.util.find_spec(_PANDAS)  # the other finders, this one removed
    if spec is None or spec.loader is None or not hasattr(spec.loader, 'exec_module'):
      return spec
    run = spec.loader.exec_module

    def exec_module(module):
      run(module)  # pandas is in sys.modules, whole, when this returns
      _register()

    spec.loader.exec_module = exec_module  # this spec's own loader object
    return spec


_FINDER = _WhenPandasLoads()


def install() -> None:
  """Registers the accessor now if pandas is imported, else at its import."""
  if _PANDAS in sys.modules:
    _register()
  elif _FINDER not in sys.meta_path:
    sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
  """Removes the finder (done by itself at pandas' import)."""
  while _FINDER in sys.meta_path:
    sys.meta_path.remove(_FINDER)
