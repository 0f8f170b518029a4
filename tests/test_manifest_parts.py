"""A large AutoML CSV is parsed in byte ranges of whole lines by several processes
(`manifest.parts`, `engines.local.read`): the items of its parts, in order,
are exactly the whole file's parse's, differentially on generated files holding every
kind of row the reader tells apart; a file the cut could misread (a quoted field, a line
ended by a lone CR, extra columns whose types come from the whole file) is parsed whole;
and a run whose manifest is read in parts writes what a run that reads it whole writes."""
import json
import os
import subprocess

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from images import write_image
from runs import CLI
from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest import parts as manifest_parts
from tfrecorder_component.manifest.parts import iter_manifest_part, plan_parts
from tfrecorder_component.manifest.reader import iter_manifest_file

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


def _compared(item):
  """A row as it is; a RowError (an exception: equal only to itself) as its fields."""
  return ('error', type(item), vars(item)) if isinstance(item, RowError) else item


def whole_and_parts(path: str, parts: int):
  whole = [_compared(i) for i in iter_manifest_file(path).items]
  cut = plan_parts(path, None, parts)
  return whole, cut, [_compared(item) for part in cut
                      for item in iter_manifest_part(path, part).items]


# Rows of every kind the AutoML reader tells apart: good rows with and without ML_USE,
# splits in any case, bad splits, empty URIs, too few columns, blank and white-space
# lines, labels with spaces, non-ASCII and non-NFC labels, control characters, bytes
# that are not UTF-8, URIs absolute, relative, file:// and gs://.
_ROW = st.one_of(
    st.tuples(st.sampled_from(['TRAIN', 'validation', 'Test', '', 'UNASSIGNED', 'bogus']),
              st.sampled_from(['a.jpg', 'd/b.png', '/abs/c.jpg', 'file:///x/y.jpg',
                               'gs://b/z.jpg', '', ' sp ace.jpg', '../up.jpg', 'd//e.jpg']),
              st.sampled_from(['cat', 'dog', ' cat ', 'caf\u00e9', 'cafe\u0301', 'x\x01y', '',
                               'cat,dog', '\u65e5\u672c'])
              ).map(lambda t: ','.join(t).encode('utf-8')),
    st.sampled_from([b'', b'   ', b',,', b'TRAIN', b'TRAIN,bad\xffname.jpg,cat',
                     b'TEST,ok.jpg,l\xc3', b'\xef\xbb\xbfTRAIN,bom.jpg,cat']))


@SETTINGS
@given(rows=st.lists(_ROW, min_size=150, max_size=400), parts=st.integers(2, 9),
       crlf=st.booleans(), bom=st.booleans(), trailing=st.booleans())
def test_the_parts_of_a_headerless_csv_parse_as_the_whole_file(tmp_path, monkeypatch, rows,
                                                               parts, crlf, bom, trailing):
  monkeypatch.setattr(manifest_parts, 'PART_MIN_BYTES', 0)
  # A first data row with ML_USE decides the layout; the generated rows then follow.
  body = (b'\r\n' if crlf else b'\n').join([b'TRAIN,first.jpg,cat', *rows])
  path = tmp_path / 'manifest.csv'
  path.write_bytes((b'\xef\xbb\xbf' if bom else b'') + body + (b'\n' if trailing else b''))
  whole, cut, got = whole_and_parts(str(path), parts)
  if cut:
    assert got == whole
    assert [p.first_line for p in cut] == sorted({p.first_line for p in cut})
  else:  # only a file of too few rows is not cut here
    assert sum(1 for r in rows if r.replace(b',', b'').strip()) < 100


@SETTINGS
@given(rows=st.lists(_ROW, min_size=150, max_size=300), parts=st.integers(2, 5))
def test_the_parts_of_a_csv_with_a_header_parse_as_the_whole_file(tmp_path, monkeypatch, rows,
                                                                  parts):
  monkeypatch.setattr(manifest_parts, 'PART_MIN_BYTES', 0)
  path = tmp_path / 'manifest.csv'
  path.write_bytes(b'\n'.join([b'split,image_uri,label', *rows]) + b'\n')
  whole, cut, got = whole_and_parts(str(path), parts)
  if cut:
    assert got == whole
  else:  # only a file of too few rows is not cut here
    assert sum(1 for r in rows if r.replace(b',', b'').strip()) < 100


def _manifest(tmp_path, lines, name='manifest.csv') -> str:
  path = tmp_path / name
  path.write_bytes(b'\n'.join(lines) + b'\n')
  return str(path)


ROWS = [f'TRAIN,img/{i}.jpg,{"cat" if i % 3 else "dog"}'.encode() for i in range(400)]


def test_only_files_the_cut_cannot_misread_are_cut(tmp_path, monkeypatch):
  monkeypatch.setattr(manifest_parts, 'PART_MIN_BYTES', 0)
  assert len(plan_parts(_manifest(tmp_path, ROWS), None, 4)) == 4
  assert plan_parts(_manifest(tmp_path, ROWS), None, 1) == []
  # A quoted field may hold a line break: a line end is then not a row's end.
  quoted = ROWS[:200] + [b'TRAIN,"img/q.jpg",cat'] + ROWS[200:]
  assert plan_parts(_manifest(tmp_path, quoted), None, 4) == []
  # csv ends a line at a lone CR, which the cut does not see.
  assert plan_parts(_manifest(tmp_path, ROWS[:300] + [b'TRAIN,a.jpg,cat\rTEST,b.jpg,dog']),
                    None, 4) == []
  # Extra columns take types inferred from every row of the file.
  header = [b'split,image_uri,label,weight'] + [r + b',0.5' for r in ROWS]
  assert plan_parts(_manifest(tmp_path, header), None, 4) == []
  assert len(plan_parts(_manifest(tmp_path, [b'split,image_uri,label'] + ROWS), None, 4)) == 4
  # Too few rows to hold the lines that set the reader's state, and formats that
  # declare no context: whole.
  assert plan_parts(_manifest(tmp_path, ROWS[:100]), None, 4) == []
  assert plan_parts(_manifest(tmp_path, ROWS, 'boxes.csv'), 'automl_detection_csv', 4) == []
  assert plan_parts('gs://bucket/manifest.csv', None, 4) == []
  monkeypatch.setattr(manifest_parts, 'PART_MIN_BYTES', 1 << 20)
  assert plan_parts(_manifest(tmp_path, ROWS), None, 4) == []


def _run(manifest: str, out: str, workers: str):
  done = subprocess.run([CLI, 'convert', '-q', '--max-error-ratio', '0.01', manifest, out],
                        capture_output=True, text=True,
                        env=dict(os.environ, TFRECORDER_LOCAL_WORKERS=workers,
                                 TF_CPP_MIN_LOG_LEVEL='2'), check=False)
  assert done.returncode == 0, done.stderr
  report = os.path.join(out, 'report')
  summary = json.load(open(os.path.join(report, 'summary.json'), encoding='utf-8'))
  errors = open(os.path.join(report, 'errors.jsonl'), encoding='utf-8').read()
  return summary, errors, open(os.path.join(out, 'labels.txt'), encoding='utf-8').read()


def test_a_run_reading_its_manifest_in_parts_writes_what_a_whole_read_writes(tmp_path):
  """12,000 rows (over PART_MIN_BYTES) of 12 images, bad rows among them: two workers
  read the manifest in two parts, one worker reads it whole, and the counts, the failed
  rows with their lines and the labels are the same."""
  for i in range(12):
    write_image(str(tmp_path / 'img' / f'{i}.jpg'), 'JPEG', 'RGB', 8 + i, 8, seed=i)
  lines, bad = [], 0
  for n in range(12000):
    if n % 997 == 5:
      lines.append(f'BOGUS,img/{n % 12}.jpg,cat'.encode())
      bad += 1
    elif n % 1313 == 7:
      lines.append(b'TRAIN,img/missing-with-a-long-name-to-fill-the-file.jpg,dog')
      bad += 1
    else:
      label = ('cat', 'dog', 'bird', 'caf\u00e9')[n % 4]
      lines.append(f'{("TRAIN", "VALIDATION", "TEST")[n % 3]},img/{n % 12}.jpg,'
                   f'{label}'.encode())
  manifest = _manifest(tmp_path, lines)
  assert os.path.getsize(manifest) >= manifest_parts.PART_MIN_BYTES
  assert len(plan_parts(manifest, None, 2)) == 2
  whole = _run(manifest, str(tmp_path / 'whole'), '1')
  parts = _run(manifest, str(tmp_path / 'parts'), '2')
  assert parts == whole
  assert whole[0]['rows_failed'] == bad == 23 and whole[0]['records_written'] == 12000 - bad
