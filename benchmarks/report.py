"""Turns benchmark results into a Markdown table, target checks and a PNG plot."""
from __future__ import annotations

import os
from typing import Dict, List

COMPONENT = 'beam_multiproc_2'


def _get(results, method, n):
  return next((r for r in results if r['method'] == method and r['n'] == n), None)


def _rated(results, method, n):
  """The run of `method` at `n`, if it has a measurable rate."""
  r = _get(results, method, n)
  return r if r and r['images_per_s'] is not None else None


def add_steady_rates(results: List[Dict], startup_n: int) -> None:
  """Steady-state rate of each run: the marginal rate since the next smaller run.

  For N_i: (N_i - N_{i-1}) / (t_i - t_{i-1}), starting from the start-up run (Beam: the
  same pipeline on `startup_n` images; other methods: nothing, as their run time
  already excludes imports). Fixed costs cancel out, whatever their size.
  """
  for method in dict.fromkeys(r['method'] for r in results):
    rows = sorted((r for r in results if r['method'] == method), key=lambda r: r['n'])
    prev_n, prev_t = (startup_n, rows[0]['startup_s']) if rows[0]['startup_s'] else (0, 0.0)
    for r in rows:
      dt = r['run_s'] - prev_t
      # Below half a second the difference is start-up noise, not a rate.
      r['images_per_s'] = (r['n'] - prev_n) / dt if dt >= 0.5 else None
      r['mb_per_s'] = r['images_per_s'] * r['input_mb'] / r['n'] if dt >= 0.5 else None
      prev_n, prev_t = r['n'], r['run_s']


def targets(results: List[Dict]) -> List[tuple]:
  """(target, measured, holds) for every target of the benchmark that the data covers."""
  sizes = sorted({r['n'] for r in results})
  big = max(sizes)
  out = []
  comp, naive, copy = (_rated(results, m, big) for m in (COMPONENT, 'naive_gzip', 'copy'))
  if comp and naive:
    ratio = comp['images_per_s'] / naive['images_per_s']
    out.append((f'throughput at N={big:,} >= 2x naive GZIP loop', f'{ratio:.2f}x', ratio >= 2))
  if comp and copy:
    ratio = comp['images_per_s'] / copy['images_per_s']
    out.append((f'throughput at N={big:,} >= 0.5x copy limit', f'{ratio:.2f}x', ratio >= 0.5))
  fast = _rated(results, 'beam_multiproc_2_noverify', big)
  if fast and naive:
    ratio = fast['images_per_s'] / naive['images_per_s']
    out.append(('same with verify_decode=False >= 2x naive GZIP loop', f'{ratio:.2f}x',
                ratio >= 2))
  one = _rated(results, 'beam_multiproc_1', big)
  if comp and one:
    ratio = comp['images_per_s'] / one['images_per_s']
    out.append(('2 workers >= 1.6x 1 worker', f'{ratio:.2f}x', ratio >= 1.6))
  if 5000 in sizes and big > 5000:
    for method in ('beam_inmemory_1', COMPONENT, 'beam_multiproc_2_noverify'):
      small, large = _get(results, method, 5000), _get(results, method, big)
      if small and large:
        ratio = large['peak_mb'] / small['peak_mb']
        out.append((f'{method}: peak memory N={big:,} <= 1.3x N=5,000', f'{ratio:.2f}x',
                    ratio <= 1.3))
        out.append((f'{method}: peak memory N={big:,} < 2 GB', f'{large["peak_mb"]:.0f} MB',
                    large['peak_mb'] < 2048))
        ratio = large['run_s'] / small['run_s']
        out.append((f'{method}: time(N={big:,}) / time(N=5,000) <= {big / 5000 * 1.1:.0f}',
                    f'{ratio:.2f}', ratio <= big / 5000 * 1.1))
  return out


def write(results: List[Dict], machine: str, directory: str, startup_n: int) -> None:
  from benchmarks.run import METHODS  # pylint: disable=g-import-not-at-top
  add_steady_rates(results, startup_n)
  lines = [f'Measured on: {machine}.', '',
           '| N | method | run s | start-up s | steady images/s | steady MB/s | peak MB | '
           'output MB |', '|---:|---|---:|---:|---:|---:|---:|---:|']
  for r in results:
    rate = 'n/a' if r['images_per_s'] is None else f'{r["images_per_s"]:,.0f}'
    mbps = 'n/a' if r['mb_per_s'] is None else f'{r["mb_per_s"]:.1f}'
    lines.append(f'| {r["n"]:,} | {METHODS[r["method"]]} | {r["run_s"]:.1f} | '
                 f'{r["startup_s"]:.1f} | {rate} | {mbps} | '
                 f'{r["peak_mb"]:,.0f} | {r["output_mb"]:,.1f} |')
  lines += ['', 'n/a: the run took less than half a second longer than the next smaller one '
            '(or than start-up), too little to measure a rate.']
  lines += ['', '| target | measured | holds |', '|---|---:|---|']
  lines += [f'| {t} | {m} | {"yes" if ok else "**no**"} |' for t, m, ok in targets(results)]
  with open(os.path.join(directory, 'results.md'), 'w') as f:
    f.write('\n'.join(lines) + '\n')
  _plot(results, machine, os.path.join(directory, 'results.png'))


def _plot(results: List[Dict], machine: str, path: str) -> None:
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
  for method in dict.fromkeys(r['method'] for r in results):
    rows = sorted((r for r in results if r['method'] == method), key=lambda r: r['n'])
    rated = [r for r in rows if r['images_per_s'] is not None]
    ax1.plot([r['n'] for r in rated], [r['images_per_s'] for r in rated], marker='o',
             label=method)
    ax2.plot([r['n'] for r in rows], [r['peak_mb'] for r in rows], marker='o', label=method)
  for ax, title, unit in ((ax1, 'Steady-state throughput', 'images/s'),
                          (ax2, 'Peak memory of the process tree', 'MB')):
    ax.set_xscale('log')
    if ax is ax1:
      ax.set_yscale('log')
    ax.set_xlabel('N images (256x256 JPEG)')
    ax.set_ylabel(unit)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
  ax1.legend(fontsize=8)
  fig.suptitle(machine, fontsize=9)
  fig.tight_layout()
  fig.savefig(path, dpi=90)
