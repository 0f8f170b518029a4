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
class Mine(trc.ImageExampleGen):
  pass
print(json.dumps([old is executor.Executor, manifest is trc.ImageManifest,
                  trc.ImageExampleGen.EXECUTOR_SPEC.executor_class is executor.Executor,
                  trc.ImageExampleGen.get_class_type(),
                  trc.ConversionReportPage.get_class_type(), Mine.get_class_type()]))
''')
  # The nodes' types, which ML Metadata names their executions by, are the ones they had
  # before the move; a subclass of a user's has its own.
  assert found == [True, True, True,
                   'tfrecorder_component.component.component.ImageExampleGen',
                   'tfrecorder_component.component.report_page.ConversionReportPage',
                   '__main__.Mine']


def test_python_m_with_an_old_path_runs_the_command():
  """`python -m tfrecorder_component.cli`, as the command module's old path ran it."""
  runs = [subprocess.run([sys.executable, '-m', module, '--version'], cwd=ROOT, text=True,
                         capture_output=True, timeout=300, check=False)
          for module in ('tfrecorder_component.cli', 'tfrecorder_component.adapters.cli')]
  assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-2000:]
  assert runs[0].stdout == runs[1].stdout and runs[0].stdout.startswith('tfrecorder-component')


def test_the_readers_module_s_names_all_import_from_its_old_path():
  from tfrecorder_component import readers  # pylint: disable=g-import-not-at-top
  from tfrecorder_component.readers import records  # pylint: disable=g-import-not-at-top
  public = [name for name in vars(records) if not name.startswith('_')
            and getattr(getattr(records, name), '__module__', records.__name__) == records.__name__]
  assert public and all(getattr(readers, name) is getattr(records, name) for name in public)
  with pytest.raises(AttributeError):
    getattr(readers, 'no_such_name')


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
