"""The package's shape, checked from its source: imports point one way (no cycle among
the modules of `tfrecorder_component/` or of `benchmarks/`, counting the imports made
inside functions, so none of those exists to break a cycle), a module imports only from
its own layer of the package or those below it (LAYERS), a module over MAX_LINES
lines says in its docstring why it is one module (a `Length:` line), and no function of
the package has over MAX_FUNCTION_LINES lines of code.
"""
import ast
import os
import re
import sys
from typing import Dict, List, Set

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ('tfrecorder_component', 'benchmarks')
MAX_LINES = 400
# Lines of code as cloc counts them: not blank, not only a comment, not the docstring.
MAX_FUNCTION_LINES = 80

# The layers of `tfrecorder_component/`, bottom first, by the top-level module or folder
# (docs/development.md describes each): a module imports from its own layer and those
# below, never above. The package's __init__ (the public API) sits above them all.
LAYERS = (
    ('errors', 'extras', 'option_table', 'feature_keys'),
    ('io',),
    ('manifest',),
    ('images',),
    ('record',),
    ('output',),
    ('options',),
    ('steps',),
    ('engines',),
    ('readers',),
    ('adapters',),
)


def _modules(package: str) -> Dict[str, str]:
  """{dotted module name: path} of every module of `package` (a package's own module is
  its __init__.py)."""
  found = {}
  for folder, _, names in os.walk(os.path.join(ROOT, package)):
    for name in names:
      if name.endswith('.py'):
        path = os.path.join(folder, name)
        dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, '.')
        found[dotted[:-len('.__init__')] if dotted.endswith('.__init__') else dotted] = path
  return found


def _imports(name: str, path: str, modules: Dict[str, str]) -> Set[str]:
  """The modules of `modules` that module `name` imports anywhere in its source (at the
  top, in functions, in classes), with the packages an import runs on the way (importing
  `a.b.c` runs `a.b`'s __init__ first, unless `name` is inside `a.b` already)."""
  def resolve(dotted: str):
    parts = dotted.split('.')
    for end in range(len(parts), 0, -1):
      if '.'.join(parts[:end]) in modules:
        return '.'.join(parts[:end])
    return None

  package = name if path.endswith('__init__.py') else name.rpartition('.')[0]
  targets = set()
  for node in ast.walk(ast.parse(open(path, encoding='utf-8').read())):
    if isinstance(node, ast.Import):
      targets.update(a.name for a in node.names)
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ''
      if node.level:
        up = package.split('.')
        base = '.'.join(up[:len(up) - node.level + 1] + ([base] if base else []))
      # `from a import b`: the module a.b where b is one, else a.
      targets.update(f'{base}.{a.name}' if f'{base}.{a.name}' in modules else base
                     for a in node.names)
  found = set()
  for target in targets:
    module = resolve(target)
    if module is None or module == name:
      continue
    found.add(module)
    parts = module.split('.')
    for end in range(1, len(parts)):
      parent = '.'.join(parts[:end])
      if parent in modules and not name.startswith(parent + '.'):
        found.add(parent)
  return found


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
  """The strongly connected components of more than one module (Tarjan's algorithm)."""
  index, low, stack, on_stack, found = {}, {}, [], set(), []

  def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in graph.get(v, ()):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      component = []
      while True:
        w = stack.pop()
        on_stack.discard(w)
        component.append(w)
        if w == v:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for v in sorted(graph):
    if v not in index:
      visit(v)
  return found


@pytest.mark.parametrize('package', PACKAGES)
def test_no_import_cycle_counting_imports_inside_functions(package):
  modules = _modules(package)
  graph = {name: _imports(name, path, modules) for name, path in modules.items()}
  cycles = _cycles(graph)
  described = []
  for cycle in cycles:
    edges = [f'{a} -> {b}' for a in cycle for b in sorted(graph[a]) if b in cycle]
    described.append(', '.join(edges))
  assert not cycles, '\n'.join(described)


def test_the_cycle_finder_finds_a_cycle_made_inside_a_function(tmp_path, monkeypatch):
  """The check above can fail: two modules that import each other, one of them inside a
  function, make a cycle here."""
  folder = tmp_path / 'pkg'
  folder.mkdir()
  (folder / '__init__.py').write_text('')
  (folder / 'a.py').write_text('from pkg import b\n')
  (folder / 'b.py').write_text('def f():\n  from pkg import a\n  return a\n')
  monkeypatch.setattr(sys.modules[__name__], 'ROOT', str(tmp_path))
  modules = _modules('pkg')
  graph = {name: _imports(name, path, modules) for name, path in modules.items()}
  assert _cycles(graph) == [['pkg.a', 'pkg.b']]


def _upward_imports(package: str, layers) -> List[str]:
  """'a -> b' for each import of `package` from a module to one in a higher layer, and
  'a: in no layer' for a top-level module or folder that `layers` does not place."""
  rank = {name: i for i, names in enumerate(layers) for name in names}
  modules = _modules(package)
  found = []

  def layer(module):
    return module.split('.')[1] if '.' in module else None  # None: the package's __init__

  for name in sorted(modules):
    top = layer(name)
    if top is None:
      continue
    if top not in rank:
      found.append(f'{name}: in no layer')
      continue
    for target in sorted(_imports(name, modules[name], modules)):
      other = layer(target)
      if other is not None and other in rank and rank[other] > rank[top]:
        found.append(f'{name} -> {target}')
  return found


def test_each_module_imports_from_its_own_layer_or_below():
  upward = _upward_imports('tfrecorder_component', LAYERS)
  assert not upward, '\n'.join(upward)


def test_the_layer_check_finds_an_upward_import_and_an_unplaced_module(tmp_path, monkeypatch):
  folder = tmp_path / 'pkg'
  (folder / 'low').mkdir(parents=True)
  (folder / 'high').mkdir()
  for path in ('__init__.py', 'low/__init__.py', 'high/__init__.py', 'high/b.py', 'stray.py'):
    (folder / path).write_text('')
  (folder / 'low' / 'a.py').write_text('def f():\n  from pkg.high import b\n  return b\n')
  monkeypatch.setattr(sys.modules[__name__], 'ROOT', str(tmp_path))
  assert _upward_imports('pkg', (('low',), ('high',))) == [
      'pkg.low.a -> pkg.high', 'pkg.low.a -> pkg.high.b', 'pkg.stray: in no layer']


@pytest.mark.parametrize('package', PACKAGES)
def test_a_long_module_says_why_it_is_one(package):
  long = []
  for name, path in sorted(_modules(package).items()):
    source = open(path, encoding='utf-8').read()
    lines = source.count('\n')
    if lines <= MAX_LINES:
      continue
    doc = ast.get_docstring(ast.parse(source)) or ''
    if not any(line.startswith('Length: ') and len(line) > 20 for line in doc.splitlines()):
      long.append(f'{name} ({lines} lines)')
  assert not long, 'over %d lines without a "Length: <why>" line in the docstring: %s' % (
      MAX_LINES, ', '.join(long))


def _code_lines(source_lines: List[str], node) -> int:
  """The lines of code of function `node` (its nested functions' too): lines that are
  not blank, not only a comment and not its docstring."""
  body = node.body
  doc = range(0)
  if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and (
      isinstance(body[0].value.value, str)):
    doc = range(body[0].lineno, body[0].end_lineno + 1)
  return sum(1 for number in range(node.lineno, node.end_lineno + 1)
             if number not in doc and source_lines[number - 1].strip()
             and not source_lines[number - 1].strip().startswith('#'))


def _long_functions(path: str) -> List[str]:
  """'name (N lines)' for each function of the module at `path` over MAX_FUNCTION_LINES
  lines of code."""
  source = open(path, encoding='utf-8').read()
  lines = source.splitlines()
  return [f'{node.name} ({_code_lines(lines, node)} lines)'
          for node in ast.walk(ast.parse(source))
          if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
          and _code_lines(lines, node) > MAX_FUNCTION_LINES]


def test_no_function_is_over_80_lines_of_code():
  """A function a maintainer reads whole: at most MAX_FUNCTION_LINES lines of code."""
  long = [f'{name}.{entry}' for name, path in sorted(_modules('tfrecorder_component').items())
          for entry in _long_functions(path)]
  assert not long, ', '.join(long)


def test_the_length_check_counts_code_not_docstrings_or_comments(tmp_path):
  body = ''.join(f'  x{i} = {i}\n' for i in range(MAX_FUNCTION_LINES))
  path = tmp_path / 'm.py'
  path.write_text('def f():\n  """A docstring,\n\n  of lines."""\n  # a comment\n\n' + body)
  assert _long_functions(str(path)) == ['f (81 lines)']  # the def line and 80 assignments
  path.write_text('def f():\n  """A docstring."""\n  # a comment\n' + body[body.index('\n') + 1:])
  assert _long_functions(str(path)) == []


def _parameters(function) -> List[str]:
  a = function.args
  named = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
  named += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
  return [name for name in named if name not in ('self', 'cls')]


def _documented(docstring: str) -> Set[str]:
  """The names an `Args:` or `Attributes:` section of a Google-style docstring lists."""
  sections = re.findall(r'^(?:Args|Attributes):\n((?:[ \t]+.*\n?|\n)*)', docstring + '\n', re.M)
  return set(re.findall(r'^\s{2,4}\**(\w+)(?: \([^)]*\))?:', '\n'.join(sections), re.M))


def _fields(node: ast.ClassDef) -> List[str]:
  """A dataclass's or NamedTuple's public fields; [] for another class."""
  marks = [ast.unparse(d) for d in node.decorator_list] + [ast.unparse(b) for b in node.bases]
  if not any('dataclass' in mark or 'NamedTuple' in mark for mark in marks):
    return []
  return [b.target.id for b in node.body
          if isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name)
          and not b.target.id.startswith('_') and 'ClassVar' not in ast.unparse(b.annotation)]


def _undocumented(path: str) -> List[str]:
  """'name(parameter, ...)' for each public function, class and method of the module at
  `path` with a parameter (a constructor's, a dataclass's field) its docstring leaves out."""
  found = []

  def check(label, docstring, names):
    missing = sorted(set(names) - _documented(docstring or ''))
    if missing:
      found.append(f'{label}({", ".join(missing)})')

  for node in ast.parse(open(path, encoding='utf-8').read()).body:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name[0] != '_':
      check(node.name, ast.get_docstring(node), _parameters(node))
    elif isinstance(node, ast.ClassDef) and node.name[0] != '_':
      methods = {b.name: b for b in node.body if isinstance(b, ast.FunctionDef)}
      init = methods.get('__init__')
      check(node.name, (ast.get_docstring(node) or '') + '\n' + (
          ast.get_docstring(init) or '' if init else ''),
            _parameters(init) if init else _fields(node))
      for name, method in methods.items():
        if name[0] != '_' and not any(ast.unparse(d) in ('property', f'{name}.setter')
                                      for d in method.decorator_list):
          check(f'{node.name}.{name}', ast.get_docstring(method), _parameters(method))
  return found


def test_every_public_function_class_and_method_documents_each_argument():
  """Every module's public functions, classes (their constructors, or a dataclass's
  fields) and methods name each parameter in an `Args:` (`Attributes:`) section, as
  Beam's and TFX's do: a maintainer reads what a value is beside the signature."""
  undocumented = [f'{name}: {entry}'
                  for name, path in sorted(_modules('tfrecorder_component').items())
                  for entry in _undocumented(path)]
  assert not undocumented, '\n'.join(undocumented)


def test_the_argument_check_finds_an_undocumented_parameter(tmp_path):
  module = tmp_path / 'm.py'
  module.write_text(
      'import dataclasses\n'
      'def documented(a, *, b=1, **rest):\n'
      '  """Does.\n\n  Args:\n    a: one.\n    b (int): two.\n    rest: more.\n  """\n'
      'def prose(a):\n  """Takes `a`, a number."""\n'
      'class C:\n  def __init__(self, x):\n    pass\n'
      '  def run(self, y):\n    """Runs.\n\n    Args:\n      y: why.\n    """\n'
      '  def _private(self, z):\n    pass\n'
      '@dataclasses.dataclass\nclass D:\n  """A D.\n\n  Attributes:\n    f: a field.\n  """\n'
      '  f: int\n  g: str = ""\n')
  assert _undocumented(str(module)) == ['prose(a)', 'C(x)', 'D(g)']


def test_each_public_function_and_class_documents_each_argument():
  """The public API (`tfrecorder_component.__all__`) documents every argument in an
  `Args:` section (a dataclass's fields in `Attributes:`), as Beam's and TFX's do."""
  import inspect  # pylint: disable=g-import-not-at-top
  import re  # pylint: disable=g-import-not-at-top
  import tfrecorder_component  # pylint: disable=g-import-not-at-top
  undocumented = []
  for name in tfrecorder_component.__all__:
    obj = getattr(tfrecorder_component, name)
    if inspect.isclass(obj):
      if '__init__' not in obj.__dict__:
        continue  # an artifact type: TFX's own constructor
      docs = (inspect.getdoc(obj) or '') + '\n' + (inspect.getdoc(obj.__init__) or '')
      signature = inspect.signature(obj.__init__)
    else:
      docs, signature = inspect.getdoc(obj) or '', inspect.signature(obj)
    sections = re.findall(r'^(?:Args|Attributes):\n((?:[ \t]+.*\n?|\n)*)', docs, re.M)
    documented = set(re.findall(r'^\s{2,4}\**(\w+):', '\n'.join(sections), re.M))
    for parameter in signature.parameters.values():
      if parameter.name in ('self', 'cls', 'args', 'kwargs'):
        continue
      if parameter.name not in documented:
        undocumented.append(f'{name}({parameter.name})')
  assert not undocumented, ', '.join(undocumented)


def test_no_test_module_imports_another():
  """Helpers several test modules use live in the shared modules (runs.py, images.py,
  records.py, ...), not in a test module another imports: running one test file never
  collects another's tests, and a test module's helper changes only its own tests."""
  tests = os.path.join(ROOT, 'tests')
  test_modules = {name[:-3] for name in os.listdir(tests)
                  if name.startswith('test_') and name.endswith('.py')}
  found = []
  for name in sorted(test_modules):
    for node in ast.walk(ast.parse(open(os.path.join(tests, name + '.py'),
                                        encoding='utf-8').read())):
      imported = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                  [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
      found += [f'{name} imports {m}' for m in imported if m.split('.')[0] in test_modules]
  assert not found, found
