"""Fuzzing every manifest format: manifests whose fields take hostile values (quotes,
line breaks, control characters, lone surrogates, huge or non-finite numbers, wrong
types, deep nesting, hostile polygons and keypoints) are read and converted as a run
reads and converts them (`iter_manifest_file`, detection rows merged per image,
`steps.row.convert_row` with masks and keypoints).

For every variant: a fault of one row never stops the file (only a file-level fault,
raised as the project's ManifestError naming the file), every line / image / file is
accounted for exactly once (a row or a failed row, with its line), each row becomes a
record or a RowError and nothing else, no example runs over a time limit, and memory
stays bounded. Derandomized (the same examples every run); `FUZZ_EXAMPLES` sets how
many per format (default 150; the slow run sets 2,000: `FUZZ_EXAMPLES=2000 .venv/bin/python
-m pytest tests/test_fuzz_formats.py`)."""
import collections
import csv
import json
import os
import re
import resource
import signal
from xml.sax.saxutils import escape

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from images import write_image
from tfrecorder_component.steps import row as row_lib
from tfrecorder_component.errors import ManifestError, RowError
from tfrecorder_component.manifest import ManifestRow, Task
from tfrecorder_component.manifest.reader import iter_manifest_file
from tfrecorder_component.manifest.registry import FORMATS
from tfrecorder_component.manifest.rows import merge_image_rows
from tfrecorder_component.options import ConversionOptions

EXAMPLES = int(os.environ.get('FUZZ_EXAMPLES', '150'))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
SECONDS_PER_EXAMPLE = 30
MEMORY_GROWTH_MB = 1024
OPTIONS = ConversionOptions(include_masks=True, include_keypoints=True)  # COCO's
PLAIN = ConversionOptions()  # the other formats have no masks or keypoints to read


def fuzz(*strategies, file_share: float = 0.6):
  """Runs the decorated body (which takes `folder`, `outcomes` and the drawn values) as a
  derandomized Hypothesis test, then asserts the fuzzing reached past the file level: under
  `file_share` of the files are refused whole, and some rows become records and some
  fail."""
  def decorate(body):
    def test(folder):
      outcomes = collections.Counter()
      def example(drawn):
        body(folder, outcomes, *drawn)
      example.__name__ = example.__qualname__ = body.__name__  # seeds each format apart
      SETTINGS(given(st.tuples(*strategies))(example))()
      examples = outcomes['file'] + outcomes['read']
      assert outcomes['file'] < examples * file_share, outcomes
      assert outcomes['record'] and sum(outcomes.values()) > outcomes['record'] + examples, \
          outcomes
    test.__name__ = body.__name__
    test.__doc__ = body.__doc__
    return test
  return decorate

HUGE = '<an integer of 5,000 digits>'
HOSTILE_TEXT = st.sampled_from([
    '', ' ', '"', '""', 'a"b', '"x', '\n', '\r', '\r\n', '\x00', '\x1b[2J', '\x85', '\u2028',
    '\ufeff', '9' * 5000, '-1', '1e400', '1e39', 'nan', 'NaN', 'inf', '-0', '0.5', 'café',
    'cafe\u0301', 'TRAIN', 'VALIDATION', 'test', '../x.png', 'missing.png', ',',
    ';', '{', '[]', '\t', 'a.png', 'b.jpg', 'cat', 'dog', '  dog  ']) | st.text(max_size=6)
HOSTILE_NUMBER = (st.sampled_from([HUGE, -5, 0, 1, 1e300, -1e300, 1e39, 0.5, -0.0,
                                   float('nan'), float('inf'), True, None, '3', 'yes', [],
                                   {}, [1, 2]])
                  | st.integers(-10**6, 10**6) | st.floats(allow_nan=True))
IMAGES = ('a.png', 'b.jpg', 'missing.png')


def dumps(value) -> str:
  """JSON text, with HUGE written as an integer of 5,000 digits (json.dumps cannot)."""
  return json.dumps(value).replace(json.dumps(HUGE), '9' * 5000)


def nested(depth: int):
  value = []
  for _ in range(depth):
    value = [value]
  return value


JSON_HOSTILE = HOSTILE_NUMBER | HOSTILE_TEXT | st.integers(1, 400).map(nested)


@pytest.fixture(scope='module')
def folder(tmp_path_factory):
  d = tmp_path_factory.mktemp('fuzz')
  write_image(str(d / 'a.png'), 'PNG', height=12, width=16)
  write_image(str(d / 'b.jpg'), 'JPEG', height=20, width=10, seed=3)
  write_image(str(d / 'a.jpg'), 'JPEG', height=10, width=10, seed=5)  # the samples' image
  write_image(str(d / 'mask.png'), 'PNG', mode='L', height=12, width=16)
  return d


class _TimeLimit(Exception):
  pass


def _alarm(signum, frame):
  raise _TimeLimit(f'over {SECONDS_PER_EXAMPLE} s')


def run_as_a_run_does(outcomes: collections.Counter, path: str, fmt: str, expected_rows,
                      quoted_lines: bool = False, annotations=None, files=(),
                      confine_to=()):
  """Reads `path` as a run does and converts each row; asserts the accounting and the
  outcomes, and counts them in `outcomes` ('file' for a refused file, 'record', or a
  failed row's reason). `expected_rows`: the row numbers the file has (lines, images or
  files); None: not known (a mutated sample), so only that no row is read twice.
  `annotations`: what beyond boxes is read (default: masks and keypoints for COCO);
  `files`: the other files a file-level fault may name instead of `path` (the file at
  fault: a Darknet obj.data's names file); `confine_to`: the roots reads are confined to
  (`manifest.confine`); (): none."""
  previous = signal.signal(signal.SIGALRM, _alarm)
  signal.alarm(SECONDS_PER_EXAMPLE)
  rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  try:
    try:
      if annotations is None:
        annotations = frozenset({'masks', 'keypoints'} if fmt == 'coco_json' else ())
      _, items, spec = iter_manifest_file(path, fmt, annotations=annotations,
                                          confine_to=confine_to)
      items = list(items)
      outcomes['read'] += 1
    except ManifestError as e:  # a file-level fault: named, and nothing is read
      assert any(p in str(e) for p in (path, *files)), str(e)
      outcomes['file'] += 1
      return
    seen = []
    merged, rows = {}, []
    for item in items:
      assert isinstance(item, (ManifestRow, RowError)), type(item)
      if isinstance(item, RowError):
        assert item.reason and item.message
        assert item.row is not None or item.annotation is not None, item
        outcomes[item.reason] += 1
        if item.row is not None:
          seen.append(item.row)
        continue
      seen.append(item.row)
      if item.task is Task.DETECTION and not spec.one_row_an_image:
        merged.setdefault((item.source, item.image_uri), []).append(item)
      else:
        rows.append(item)
    # Every line / image / file is accounted for; a row is read once. (A malformed
    # annotation or box line is its own failed row beside its image's record.) A CSV
    # row with a quoted field over lines is named by its last line: a line may then be
    # part of the row that ends after it, never lost after the last row.
    if expected_rows is None:
      pass
    elif quoted_lines:
      assert all(any(s >= line for s in seen) for line in expected_rows), (seen, expected_rows)
    else:
      assert sorted(set(seen)) == sorted(expected_rows), (seen, expected_rows)
    read = [item.row for item in items if isinstance(item, ManifestRow)]
    if spec.one_row_an_image:
      assert len(read) == len(set(read)), read
    else:
      assert len(seen) == len(set(seen)), seen
    for group in merged.values():
      row = merge_image_rows(group)
      if isinstance(row, ManifestRow):
        rows.append(row)
    ids = {}
    for row in rows:
      for label in (*row.labels, *(o.label for o in row.objects or ())):
        ids.setdefault(label, len(ids) + 1)
      try:
        out = row_lib.convert_row(row, ids, OPTIONS if annotations else PLAIN)
      except RowError as e:
        assert e.reason and e.message
        outcomes[e.reason] += 1
        continue
      assert out.record and out.split in ('train', 'eval', 'test')
      outcomes['record'] += 1
  finally:
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
  grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
  assert grown_mb < MEMORY_GROWTH_MB, f'peak memory grew by {grown_mb:.0f} MB'


def csv_blank(line: str, first: bool = False) -> bool:
  """A CSV line of empty fields only (`,,""`): not a row. The file's first line loses a
  byte-order mark first, as the reader takes it."""
  if first and line.startswith('\ufeff'):
    line = line[1:]
  try:
    return not any(f.strip() for f in next(csv.reader([line]), []))
  except csv.Error:
    return False


def write(folder, name, text):
  path = folder / name
  path.write_text(text, encoding='utf-8', errors='surrogatepass')
  return str(path)


CSV_FIELD = st.one_of(HOSTILE_TEXT, st.sampled_from(IMAGES))


@fuzz(st.lists(st.tuples(CSV_FIELD, st.sampled_from(IMAGES) | HOSTILE_TEXT, CSV_FIELD,
                          st.lists(HOSTILE_TEXT, max_size=2)), min_size=1, max_size=6),
       st.booleans())
def test_automl_csv(folder, outcomes, rows, header):
  lines = ['split,image_uri,label,extra'] if header else []
  lines += [','.join([s, u, l, *extra]).replace('\n', ' ').replace('\r', ' ')
            for s, u, l, extra in rows]
  path = write(folder, 'm.csv', '\n'.join(lines) + '\n')
  first = 2 if header else 1
  run_as_a_run_does(outcomes, path, 'automl_csv', [
      first + i for i in range(len(rows))
      if not csv_blank(lines[first - 1 + i], first=i == 0 and not header)],
      quoted_lines='"' in ''.join(lines))


COORD = st.sampled_from(['0.1', '0.9', '0', '1', '-0.5', '1.5', 'nan', 'inf', '1e400', '',
                         'x', '9' * 5000, '0.5', '1e-300'])


@fuzz(st.lists(st.tuples(st.sampled_from(['TRAIN', 'TEST', '', 'junk']),
                          st.sampled_from(IMAGES) | HOSTILE_TEXT, HOSTILE_TEXT,
                          st.lists(COORD, min_size=4, max_size=4)), min_size=1, max_size=6))
def test_automl_detection_csv(folder, outcomes, rows):
  lines = [','.join([s, u, l, x1, y1, '', '', x2, y2, '', '']).replace('\n', ' ').replace(
      '\r', ' ') for s, u, l, (x1, y1, x2, y2) in rows]
  path = write(folder, 'boxes.csv', '\n'.join(lines) + '\n')
  run_as_a_run_does(outcomes, path, 'automl_detection_csv',
                    [i + 1 for i, line in enumerate(lines) if not csv_blank(line, i == 0)],
                    quoted_lines='"' in ''.join(lines))


@fuzz(st.lists(st.tuples(st.sampled_from(['TRAIN', '', 'junk']), st.sampled_from(IMAGES),
                          st.sampled_from(['mask.png', 'missing.png']) | HOSTILE_TEXT,
                          HOSTILE_TEXT), min_size=1, max_size=5))
def test_segmentation_csv(folder, outcomes, rows):
  lines = ['split,image_uri,mask_uri,weather'] + [
      ','.join(r).replace('\n', ' ').replace('\r', ' ') for r in rows]
  path = write(folder, 'seg.csv', '\n'.join(lines) + '\n')
  run_as_a_run_does(outcomes, path, 'segmentation_csv',
                    [i + 2 for i, line in enumerate(lines[1:]) if not csv_blank(line)],
                    quoted_lines='"' in ''.join(lines))


def vertex_line(draw):
  obj = {'imageGcsUri': draw(st.sampled_from(IMAGES) | JSON_HOSTILE)}
  kind = draw(st.sampled_from(['class', 'classes', 'boxes', 'junk']))
  if kind == 'class':
    obj['classificationAnnotation'] = {'displayName': draw(JSON_HOSTILE)}
  elif kind == 'classes':
    obj['classificationAnnotations'] = draw(st.lists(st.fixed_dictionaries(
        {'displayName': HOSTILE_TEXT}), max_size=3) | JSON_HOSTILE)
  elif kind == 'boxes':
    obj['boundingBoxAnnotations'] = draw(st.lists(st.fixed_dictionaries({
        'displayName': HOSTILE_TEXT, 'xMin': HOSTILE_NUMBER, 'yMin': HOSTILE_NUMBER,
        'xMax': HOSTILE_NUMBER, 'yMax': HOSTILE_NUMBER}), max_size=3) | JSON_HOSTILE)
  else:
    obj[draw(HOSTILE_TEXT)] = draw(JSON_HOSTILE)
  if draw(st.booleans()):
    obj['dataItemResourceLabels'] = {'aiplatform.googleapis.com/ml_use': draw(JSON_HOSTILE)}
  return dumps(obj)


@fuzz(st.data())
def test_vertex_jsonl(folder, outcomes, data):
  lines = [vertex_line(data.draw) for _ in range(data.draw(st.integers(1, 5)))]
  if data.draw(st.booleans()):  # a raw line that is not JSON
    lines.insert(data.draw(st.integers(0, len(lines))), data.draw(HOSTILE_TEXT).replace(
        '\n', ' ').replace('\r', ' ').replace('\x85', ' ').replace('\u2028', ' ') or 'x')
  path = write(folder, 'm.jsonl', '\n'.join(lines) + '\n')
  blank = lambda i, l: not (l[1:] if i == 0 and l.startswith('\ufeff') else l).strip()  # a BOM
  run_as_a_run_does(outcomes, path, 'vertex_jsonl',
                    [i + 1 for i, l in enumerate(lines) if not blank(i, l)])


POLYGON = st.lists(st.sampled_from([0.0, 5.0, 15.0, -1e10, 1e10, 1e300, float('nan'),
                                    float('inf'), 3.5]), min_size=0, max_size=10)


@fuzz(st.data())
def test_coco_json(folder, outcomes, data):
  draw = data.draw
  images = [{'id': i, 'file_name': draw(st.sampled_from(IMAGES)),
             'width': draw(st.sampled_from([16, 10, 0, -1, 10**30, 'x'])),
             'height': draw(st.sampled_from([12, 20, 0, None]))} for i in range(1, 4)]
  categories = [{'id': 1, 'name': draw(HOSTILE_TEXT | st.just('cat')),
                 'keypoints': ['a', 'b']},
                {'id': 7, 'name': 'dog'}]
  annotations = []
  for k in range(draw(st.integers(0, 5))):
    annotation = {'id': k, 'image_id': draw(st.sampled_from([1, 2, 3, 99, '1', None])),
                  'category_id': draw(st.sampled_from([1, 7, 42, None, 'x'])),
                  'bbox': draw(st.lists(HOSTILE_NUMBER, min_size=4, max_size=4)
                               | st.just([1, 1, 5, 5]) | JSON_HOSTILE),
                  'area': draw(HOSTILE_NUMBER), 'iscrowd': draw(HOSTILE_NUMBER),
                  'segmentation': draw(st.lists(POLYGON, max_size=2) | st.just(
                      {'size': [12, 16], 'counts': draw(st.sampled_from(
                          [[192], [10, 5], 'abc', '', [10**9]]))}) | JSON_HOSTILE),
                  'keypoints': draw(st.lists(HOSTILE_NUMBER, max_size=7))}
    annotations.append(annotation)
  coco = {'images': images, 'annotations': annotations, 'categories': categories}
  path = write(folder, 'instances.json', dumps(coco))
  run_as_a_run_does(outcomes, path, 'coco_json', [1, 2, 3])


@fuzz(st.data())
def test_pascal_voc(folder, outcomes, data):
  draw = data.draw
  text = lambda: escape(draw(HOSTILE_TEXT).replace('\x00', '').replace('\x1b', '')
                        .replace('\ufeff', ''))
  objects = ''.join(
      f'<object><name>{text()}</name><difficult>{text()}</difficult><bndbox>'
      + ''.join(f'<{k}>{draw(COORD | st.sampled_from(["2", "10", "-3", "1e9"]))}</{k}>'
                for k in ('xmin', 'ymin', 'xmax', 'ymax'))
      + '</bndbox></object>' for _ in range(draw(st.integers(0, 3))))
  xml = (f'<annotation><filename>{draw(st.sampled_from(IMAGES))}</filename><size>'
         f'<width>{text()}</width><height>12</height></size>{objects}</annotation>')
  path = write(folder, 'a.xml', xml)
  run_as_a_run_does(outcomes, path, 'pascal_voc', [1])


# Every format of the registry, fuzzed from its declared sample (`format_spec.FormatSample`):
# up to three of the sample's tokens (a JSON string or scalar, an XML or CSV field, a
# word) become hostile values written as the file's syntax writes them, and a line may be
# repeated. A format added to the registry is fuzzed here with no test of its own.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[^\s,:=<>"/\[\]{}()]+')


def _syntax(name: str) -> str:
  extension = os.path.splitext(name)[1].lower()
  return {'.json': 'json', '.jsonl': 'json', '.ndjson': 'json', '.xml': 'xml', '.csv': 'csv',
          '.txt': 'csv'}.get(extension, 'text')


def _written(value, syntax: str, quoted: bool) -> str:
  """A hostile value as a file of `syntax` writes it in a token's place."""
  if syntax == 'json':
    return dumps(value) if quoted or not isinstance(value, str) else dumps(value)[1:-1]
  text = value if isinstance(value, str) else dumps(value)
  if syntax == 'xml':  # the characters XML allows (XML 1.0, section 2.2), escaped
    text = escape(''.join(c for c in text if c in '\t\n\r' or ' ' <= c <= '\ud7ff'
                          or '\ue000' <= c <= '\ufffd'), {'"': '&quot;'})
    return f'"{text}"' if quoted else text
  if syntax == 'csv' and any(c in text for c in ',"\r\n'):
    return '"' + text.replace('"', '""') + '"'
  return text


def mutated(draw, text: str, syntax: str) -> str:
  """`text` with up to three tokens replaced by hostile values, a line maybe repeated."""
  tokens = list(_TOKEN.finditer(text))
  if syntax == 'xml':  # attribute values and text, not names (nor the XML declaration's)
    start = text.find('?>') + 1
    tokens = [t for t in tokens if t.start() > start and (
        t.group().startswith('"') or text[t.start() - 1] == '>')]
  picks = draw(st.lists(st.integers(0, len(tokens) - 1), max_size=3, unique=True)) if tokens else []
  for i in sorted(picks, reverse=True):
    token = tokens[i]
    key = syntax == 'json' and text[token.end():].lstrip().startswith(':')  # a key: a string
    value = draw(JSON_HOSTILE if syntax == 'json' and not key else HOSTILE_TEXT)
    text = (text[:token.start()] + _written(value, syntax, token.group().startswith('"'))
            + text[token.end():])
  lines = text.split('\n')
  if len(lines) > 2 and draw(st.booleans()):
    at = draw(st.integers(0, len(lines) - 1))
    lines.insert(at, lines[at])
  return '\n'.join(lines)


@pytest.mark.parametrize('fmt', FORMATS, ids=lambda f: f.name)
def test_every_format_fuzzed_from_its_sample(folder, fmt):
  sample = fmt.sample
  names = [sample.name, *(name for name, _ in sample.others)]

  # A small sample has few tokens, several of them its structure (a CSV header, a YAML
  # key, CVAT's version): most files may be refused whole, as they should be.
  @fuzz(st.data(), file_share=0.9)
  def from_sample(folder, outcomes, data):
    where = folder / fmt.name
    os.makedirs(str(where), exist_ok=True)
    write_image(str(where / 'a.jpg'), 'JPEG', height=10, width=10, seed=5)
    write_image(str(where / 'a.png'), 'PNG', mode='L', height=10, width=10)  # a mask
    texts = {sample.name: sample.text, **dict(sample.others)}
    for name in names:
      text = texts[name]
      if name.endswith('.jpg'):
        write_image(str(where / name), 'JPEG', height=10, width=10, seed=5)
        continue
      os.makedirs(os.path.dirname(str(where / name)), exist_ok=True)
      write(where, name, mutated(data.draw, text, _syntax(name)))
    # Masks or not, where the format has them (a sample has no keypoints to ask for:
    # asking refuses the file, as it should; COCO's own test fuzzes keypoints).
    asked = frozenset(fmt.annotations) & {'masks'} if data.draw(st.booleans()) else frozenset()
    # Confined to the sample's folder, as untrusted input is read
    # (docs/guides/untrusted-input.md): a mutated data.yaml may name `/` as its images.
    run_as_a_run_does(outcomes, str(where / sample.name), fmt.name, None, annotations=asked,
                      files=[str(where / name) for name in names], confine_to=(str(where),))

  from_sample.__name__ = f'from_sample_{fmt.name}'
  from_sample(folder)
