"""The import paths modules had before the package took its layers keep working: each
old path (`_moved.MOVED`) imports the very module of its new path, in either order, so
code, pickles and pipelines compiled before the move (their executor's class path is
`tfrecorder_component.component.executor.Executor`) find what they name."""
import json
import os
import subprocess
import sys

import pytest

from tfrecorder_component import _moved

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code: str):
  out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, check=False)
  assert out.returncode == 0, out.stderr[-3000:]
  return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize('old_first', [True, False], ids=['old-path-first', 'new-path-first'])
def test_each_old_path_is_the_module_of_its_new_path(old_first):
  """Every old path and a module under each moved package, imported in a fresh process
  before or after its new path: one module object, its own name and spec, and no module
  loaded twice under two names."""
  code = f'''
import importlib, json, sys
from tfrecorder_component import _moved
olds = sorted(_moved.MOVED)
olds += ['component.executor', 'component.types', 'beam.pipeline', 'layouts.base']
found = {{}}
for old in olds:
  old, new = 'tfrecorder_component.' + old, _moved.new_path('tfrecorder_component.' + old)
  a, b = (old, new) if {old_first} else (new, old)
  first, second = importlib.import_module(a), importlib.import_module(b)
  found[old] = [first is second, first.__name__, first.__spec__.name, new]
files = {{}}
for name, module in list(sys.modules.items()):
  path = getattr(module, '__file__', None)
  if name.startswith('tfrecorder_component') and path:
    files.setdefault(path, set()).add(id(module))
found['twice'] = sorted(p for p, ids in files.items() if len(ids) > 1)
print(json.dumps(found))
'''
  found = _run(code)
  assert found.pop('twice') == []
  assert len(found) == len(_moved.MOVED) + 4
  for old, (same, name, spec_name, new) in found.items():
    assert same, old
    assert name == spec_name == new, (old, name, spec_name)


def test_a_pipeline_compiled_before_the_move_finds_its_executor_and_types():
  """TFX resolves a compiled pipeline's executor by its class path string, and the
  artifact types by theirs; the old strings give the classes the component uses now."""
  found = _run('''
import json
from tfx.utils import import_utils
import tfrecorder_component as trc
from tfrecorder_component.adapters.component import executor
old = import_utils.import_class_by_path('tfrecorder_component.component.executor.Executor')
manifest = import_utils.import_class_by_path('tfrecorder_component.component.types.ImageManifest')
print(json.dumps([old is executor.Executor, manifest is trc.ImageManifest,
                  trc.ImageExampleGen.EXECUTOR_SPEC.executor_class is executor.Executor]))
''')
  assert found == [True, True, True]


def test_a_path_that_never_existed_still_fails_as_python_says():
  assert _moved.new_path('tfrecorder_component.no_such_module') is None
  assert _moved.new_path('numpy.files') is None
  with pytest.raises(ModuleNotFoundError):
    __import__('tfrecorder_component.component.no_such_module')


def test_the_old_paths_the_docs_named_are_all_kept():
  """The paths the README, the guides and the API reference named before the move."""
  for old in ('conversion', 'accessor', 'cli', 'labels', 'dataset', 'run', 'beam',
              'component', 'component.mlmd', 'component.importer', 'component.report_page',
              'component.component'):
    assert _moved.new_path(f'tfrecorder_component.{old}') is not None, old
