"""The conversion report as one self-contained HTML page (`report.html`): counts per
split and label, image format and size histograms, a contact sheet per label (thumbnails
inline as data URIs) and the first failed rows. No scripts, no external files: it opens
locally and in a pipeline UI's HTML viewer."""
from __future__ import annotations

import base64
import html
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

from tfrecorder_component.images.geometry import SIZE_BUCKETS
from tfrecorder_component.record import labels as labels_lib

_STYLE = '''
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 4px 10px; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.bar { display: inline-block; height: 12px; background: #4a7bd0; }
.sheet td { vertical-align: middle; }
.sheet img { width: 96px; height: 96px; object-fit: contain; background: #eee; margin: 2px; }
.sheet .skipped { display: inline-flex; align-items: center; width: 96px; height: 96px;
  vertical-align: middle; overflow: hidden; font-size: 11px; background: #eee; margin: 2px; }
.bad { color: #a00; }
'''


def _e(value: Any) -> str:
  return html.escape(str(value), quote=True)


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], cls: str = '') -> str:
  head = ''.join(f'<th>{_e(h)}</th>' for h in headers)
  body = ''.join(
      '<tr>' + ''.join(f'<td class="n">{v:,}</td>' if isinstance(v, int) else
                       f'<td>{v}</td>' for v in row) + '</tr>' for row in rows)
  return f'<table class="{cls}"><tr>{head}</tr>{body}</table>'


def _histogram(counts: Mapping[str, int], cls: str, order: Sequence[str] = ()) -> str:
  keys = [k for k in order if k in counts] + sorted(k for k in counts if k not in order)
  top = max(counts.values(), default=1) or 1
  return _table(['', 'images', ''], [
      (_e(k), counts[k], f'<span class="bar" style="width:{200 * counts[k] // top}px"></span>')
      for k in keys], cls)


def _box_issues(summary: Dict[str, Any], box_issues: Sequence[Dict[str, Any]]) -> List[str]:
  """The page's box issues section: the counts by action and reason and the first
  dropped or clipped boxes; none for a run that wrote no boxes and had no issues."""
  issues = summary.get('box_issues') or {}
  if not issues and not summary.get('objects_written'):
    return []
  parts = ['<h2>Box issues</h2>']
  if issues:
    total = sum(issues.values())
    parts.append(_table(['action', 'reason', 'boxes'], [
        (f'<span class="bad">{_e(k.split(":", 1)[0])}</span>', _e(k.split(':', 1)[1]), n)
        for k, n in issues.items()], 'box-issues'))
    shown = f'first {len(box_issues)} of {total:,}; ' if total > len(box_issues) else ''
    parts.append(f'<p>{summary.get("objects_written", 0):,} boxes written; {total:,} '
                 f'dropped or clipped ({shown}all in box_issues.jsonl).</p>')
    parts.append(_table(['manifest', 'row', 'URI', 'label', 'box as annotated', 'action',
                         'reason'], [
        (_e(b['source']), b['row'] if isinstance(b['row'], int) else _e(b['row']),
         _e(b['uri']), _e(b['label']), _e(b.get('box')), _e(b['action']),
         _e(b['reason'] + (f' ({b["keypoint"]})' if b.get('keypoint') else '')))
        for b in box_issues], 'box-issue-rows'))
  else:
    parts.append(f'<p>{summary.get("objects_written", 0):,} boxes written; none dropped or '
                 'clipped.</p>')
  return parts


def render(summary: Dict[str, Any], samples: Mapping[str, List[Tuple[str, bytes]]],
           errors: List[Dict[str, Any]], title: str = 'Conversion report',
           box_issues: Sequence[Dict[str, Any]] = ()) -> str:
  """The page, as one HTML string.

  Args:
    summary: The run's summary as summary.json holds it (its warnings, label ids and
      duplicates added).
    samples: {label: [(uri, JPEG thumbnail bytes)]}, the contact sheet's images; a
      sample (uri, b'', note) is a thumbnail skipped, its note shown in its place
      ('thumbnail skipped: 50,000 scans (more than 100)').
    errors: The first failed rows (error records of errors.jsonl), shown in a table;
      where there are none, the section reads 'None.'.
    title: The page's title and heading.
    box_issues: The first dropped or clipped boxes (records of box_issues.jsonl).
  """
  parts = [f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{_e(title)}</title>'
           f'<style>{_STYLE}</style></head><body><h1>{_e(title)}</h1>']
  parts.extend(f'<p class="bad warning">Warning: {_e(w)}</p>'
               for w in summary.get('warnings') or ())
  failed = summary['rows_failed']
  parts.append(_table(['rows read', 'records written', 'rows failed'], [
      (summary['rows_read'], summary['records_written'],
       f'<span class="bad">{failed:,}</span>' if failed else 0)], 'totals'))

  splits = summary['records_per_split']
  parts.append('<h2>Records per split</h2>')
  parts.append(_table(['split', 'records'], [(_e(s), n) for s, n in splits.items()], 'splits'))

  per_split = summary.get('labels_per_split', {})
  names = list(splits)
  parts.append('<h2>Records per label</h2>')
  ids = summary.get('label_ids', {})
  parts.append(_table(['label', 'id', 'all', *names], [
      (_e(label), ids.get(label, ''), n, *(per_split.get(s, {}).get(label, 0) for s in names))
      for label, n in summary['records_per_label'].items()], 'labels'))
  parts.extend(f'<p class="bad">{_e(line)}</p>' for line in labels_lib.label_notes(summary))
  if summary.get('objects_per_label'):
    parts.append('<h2>Objects per label</h2>')
    parts.append(_table(['label', 'objects'], [
        (_e(k), n) for k, n in summary['objects_per_label'].items()], 'objects'))

  parts.append('<h2>Image formats</h2>')
  parts.append(_histogram(summary.get('image_formats', {}), 'formats'))
  parts.append('<h2>Image sizes (longest side)</h2>')
  parts.append(_histogram(summary.get('image_sizes', {}), 'sizes', [n for _, n in SIZE_BUCKETS]))

  parts.append('<h2>Contact sheet</h2>')
  rows = []
  for label in sorted(samples):
    images = ''.join(
        f'<span class="skipped bad" title="{_e(uri)}">{_e(uri)}: {_e(note[0])}</span>'
        if note else
        f'<img alt="{_e(uri)}" title="{_e(uri)}" '
        f'src="data:image/jpeg;base64,{base64.b64encode(data).decode()}">'
        for uri, data, *note in samples[label])
    rows.append((_e(label), images))
  parts.append(_table(['label', 'samples'], rows, 'sheet'))

  parts.extend(_box_issues(summary, box_issues))

  parts.append('<h2>Failed rows</h2>')
  if errors:
    reasons = summary['errors_per_reason']
    parts.append(_table(['reason', 'rows'], [(_e(k), n) for k, n in reasons.items()], 'reasons'))
    more = f' (first {len(errors)} of {failed:,}; all in errors.jsonl)' if failed > len(errors) else ''
    parts.append(f'<p>{more}</p>' if more else '')
    parts.append(_table(['manifest', 'row', 'URI', 'reason', 'message'], [
        ('DataFrame' if 'index' in e else _e(e['source']),
         _e(f'index {e["index"]!r}') if 'index' in e else
         e['row'] if isinstance(e['row'], int) else _e(e['row']),
         _e(e['uri']), _e(e['reason']), _e(e['message'])) for e in errors], 'errors'))
  else:
    parts.append('<p>None.</p>')
  dup = summary.get('duplicates') or {}
  if dup.get('groups'):
    parts.append(f'<h2>Duplicates</h2><p>{dup["groups"]:,} groups of identical images, '
                 f'{dup["extra_records"]:,} extra records, {dup["cross_split_groups"]:,} '
                 'across splits (duplicates.jsonl).</p>')
  parts.append('</body></html>')
  return '\n'.join(parts)
