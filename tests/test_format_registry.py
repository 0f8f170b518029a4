"""Adding a manifest format is one module and its registry line: in a scratch copy of the
package with a format added that way and nothing else changed, the registry, detection,
discovery, the command's `--format`, the component guide's `manifest_format` row and the
formats guide's table (as scripts/cli-reference makes them) name it, and the tests that
loop over the registry (each format's sample read named and detected, each format fuzzed
from its sample) run it."""
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The new format: a `.lst` file in AutoML CSV's columns, parsed as AutoML CSV parses it.
_MODULE = '''"""A list of images in AutoML CSV's columns, ending .lst."""
from tfrecorder_component.manifest import automl_csv
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat

FORMAT = ManifestFormat(
    'image_list', ('.lst',), sniff=lambda head: True, parse=automl_csv.parse, streamed=True,
    title='image list', sample=FormatSample('m.lst', 'TRAIN,a.jpg,cat\\n'), sniff_rank=150)
'''

_CHECK = '''
import importlib.machinery, importlib.util, json, os, sys
from tfrecorder_component.manifest import registry
from tfrecorder_component.manifest.discover import manifest_files
from tfrecorder_component.adapters import cli
from tfrecorder_component.adapters.component import component

folder = sys.argv[1]
for name in ('m.lst', 'a.jpg'):
  open(os.path.join(folder, name), 'w').write('TRAIN,a.jpg,cat\\n')
parser = cli.build_parser()
parser = parser[0] if isinstance(parser, tuple) else parser
loader = importlib.machinery.SourceFileLoader('cli_reference', sys.argv[2])
script = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
loader.exec_module(script)
print(json.dumps({
    'formats': 'image_list' in registry.MANIFEST_FORMATS,
    'extensions': '.lst' in registry.MANIFEST_EXTENSIONS,
    'detected': registry.detect_format('x.lst', 'TRAIN,a.jpg,cat'),
    'discovered': [os.path.basename(p) for p in manifest_files(folder)],
    'cli': 'image\\_list' in script.page(),  # the page escapes Markdown's _
    'component_guide': [l for l in component.docs_table().splitlines()
                        if l.startswith('| `manifest_format`') and '`image_list`' in l] != [],
    'formats_guide': [l for l in script._formats_guide_table().splitlines()
                      if l.startswith('| `image_list` | image list | `.lst` |')] != [],
}))
'''


def test_a_format_added_as_one_module_and_a_registry_line_is_everywhere(tmp_path):
  scratch = tmp_path / 'scratch'
  shutil.copytree(os.path.join(REPO, 'tfrecorder_component'), str(scratch / 'tfrecorder_component'),
                  ignore=shutil.ignore_patterns('__pycache__'))
  (scratch / 'tfrecorder_component' / 'manifest' / 'image_list.py').write_text(
      _MODULE, encoding='utf-8')
  registry = scratch / 'tfrecorder_component' / 'manifest' / 'registry.py'
  text = registry.read_text(encoding='utf-8')
  assert '    automl_csv.FORMAT,\n' in text
  text = text.replace('    automl_csv.FORMAT,\n', '    automl_csv.FORMAT,\n    image_list.FORMAT,\n', 1)
  text = text.replace('from tfrecorder_component.manifest import (automl_csv,',
                      'from tfrecorder_component.manifest import image_list\n'
                      'from tfrecorder_component.manifest import (automl_csv,', 1)
  registry.write_text(text, encoding='utf-8')
  env = dict(os.environ, PYTHONPATH=str(scratch), PYTHONDONTWRITEBYTECODE='1')
  folder = tmp_path / 'data'
  folder.mkdir()
  done = subprocess.run([sys.executable, '-c', _CHECK, str(folder),
                         os.path.join(REPO, 'scripts', 'cli-reference')], env=env, cwd=str(tmp_path),
                        capture_output=True, text=True, timeout=300, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  found = json.loads(done.stdout.strip().splitlines()[-1])
  assert found == {'formats': True, 'extensions': True, 'detected': 'image_list',
                   'discovered': ['m.lst'], 'cli': True, 'component_guide': True,
                   'formats_guide': True}, found
  # The registry's loops: its sample read named and detected, and fuzzed from its sample.
  tests = os.path.join(REPO, 'tests')
  done = subprocess.run(
      [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-p', 'no:randomly',
       os.path.join(tests, 'test_detection_manifests.py') +
       '::test_every_listed_format_reads_its_files_named_or_detected',
       os.path.join(tests, 'test_fuzz_formats.py') +
       '::test_every_format_fuzzed_from_its_sample[image_list]'],
      cwd=str(tmp_path), env=dict(env, FUZZ_EXAMPLES='40'), capture_output=True, text=True,
      timeout=600, check=False)
  assert done.returncode == 0 and '2 passed' in done.stdout, done.stdout[-3000:]
