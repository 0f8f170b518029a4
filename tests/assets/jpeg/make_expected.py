"""Writes expected.json: for each JPEG in this folder, what this Python's TensorFlow
`tf.io.decode_image(data, expand_animations=False)` returns: [height, width, channels],
or null where it refuses the file (the error is printed).
  .venv/bin/python tests/assets/jpeg/make_expected.py [--check]
--check writes nothing and exits 1 if this TensorFlow disagrees with expected.json."""
import json
import pathlib
import sys

import tensorflow as tf

here = pathlib.Path(__file__).resolve().parent
results = {}
for path in sorted(here.glob('*.jpg')):
  try:
    results[path.name] = list(tf.io.decode_image(path.read_bytes(), expand_animations=False).shape)
  except (tf.errors.InvalidArgumentError, tf.errors.ResourceExhaustedError) as e:
    results[path.name] = None
    print(f'{path.name}: refused: {e.message.strip()}')
print(f'TensorFlow {tf.__version__}: {sum(v is not None for v in results.values())} of '
      f'{len(results)} decoded')
if '--check' in sys.argv:
  old = json.loads((here / 'expected.json').read_text())
  for name in sorted(set(old) | set(results)):
    if old.get(name, 'absent') != results.get(name, 'absent'):
      print(f'DIFFERENT {name}: expected.json {old.get(name, "absent")}, '
            f'this TensorFlow {results.get(name, "absent")}')
  sys.exit(old != results)
(here / 'expected.json').write_text(
    '{\n' + ',\n'.join(f' {json.dumps(k)}: {json.dumps(v)}' for k, v in results.items()) + '\n}\n')
