"""Turns the benchmark's runs into Markdown tables with medians and ranges, the target
checks and a PNG plot; assembles results.md from every part's file."""
from __future__ import annotations

import os
from typing import Dict, List, Optional

from benchmarks import procs

BASELINE = 'naive_gzip'
DEFAULT = 'localdag_default'
PART_FILES = ('throughput.md', 'startup.md', 'timeline.md', 'memory.md', 'stages.md', 'masks.md',
              'remote.md', 'engines.md', 'peers.md', 'formats.md')
PART_TITLES = {'throughput.md': 'Throughput', 'startup.md': 'Start-up',
               'memory.md': 'Memory against manifest size',
               'timeline.md': 'A run from launch to exit',
               'stages.md': 'Where the time goes',
               'masks.md': 'What masks and keypoints cost',
               'remote.md': 'Local disk against gs:// and s3://',
               'engines.md': 'Without Beam against Beam\'s DirectRunner',
               'peers.md': 'Against TFDS, Ray Data and the floors',
               'formats.md': 'Against Datumaro, by format'}


def _run(runs, method, n, rep) -> Optional[Dict]:
  return next((r for r in runs if (r['method'], r['n'], r['rep']) == (method, n, rep)), None)


def steady(runs: List[Dict]) -> Dict[str, Dict[str, List[float]]]:
  """Per method, per repeat: the steady rate between the two largest N, the fixed cost
  left at N = 0, and the ratio to the baseline's steady rate in the same repeat."""
  sizes = sorted({r['n'] for r in runs})
  out: Dict[str, Dict[str, List[float]]] = {}
  if len(sizes) < 2:
    return out
  n1, n2 = sizes[-2], sizes[-1]
  reps = sorted({r['rep'] for r in runs})
  for method in dict.fromkeys(r['method'] for r in runs):
    got = out.setdefault(method, {'rate': [], 'fixed': [], 'ratio': []})
    for rep in reps:
      a, b = _run(runs, method, n1, rep), _run(runs, method, n2, rep)
      if not a or not b or b['run_s'] - a['run_s'] < 0.5:  # too close to time a rate
        continue
      rate = (n2 - n1) / (b['run_s'] - a['run_s'])
      got['rate'].append(rate)
      got['fixed'].append(max(0.0, a['run_s'] - n1 / rate))
      base = [_run(runs, BASELINE, n, rep) for n in (n1, n2)]
      if all(base) and base[1]['run_s'] - base[0]['run_s'] >= 0.5:
        got['ratio'].append(rate / ((n2 - n1) / (base[1]['run_s'] - base[0]['run_s'])))
  return out


def write(runs: List[Dict], methods: Dict[str, str], machine: str, directory: str,
          images: Optional[str] = None) -> None:
  """throughput.md and results.png of the throughput part's runs; `methods` gives each
  method's description, the table's row label."""
  sizes = sorted({r['n'] for r in runs})
  reps = len({r['rep'] for r in runs})
  rates = steady(runs)
  lines = [f'Measured on: {machine}; {reps} repeats, interleaved. Images: '
           f'{images or "synthetic 256x256 JPEGs (benchmarks/data.py)"}. Each figure is '
           'the median, with the range over repeats in brackets.', '',
           '| method | ' + ' | '.join(f'run s, N={n:,}' for n in sizes) +
           ' | fixed cost s | steady images/s | x naive GZIP loop | peak MB | output MB |',
           '|---|' + '---:|' * (len(sizes) + 5)]
  for method in dict.fromkeys(r['method'] for r in runs):
    times = [procs.fmt(procs.spread([r['run_s'] for r in runs
                                     if r['method'] == method and r['n'] == n]))
             for n in sizes]
    got = rates.get(method, {})
    cells = [procs.fmt(procs.spread(got[k]), d) if got.get(k) else 'n/a'
             for k, d in (('fixed', 1), ('rate', 0), ('ratio', 2))]
    big = [r for r in runs if r['method'] == method and r['n'] == sizes[-1]]
    peak = procs.spread([r['peak_mb'] for r in big])
    lines.append(f'| {methods[method]} | ' + ' | '.join(times + cells) +
                 f' | {procs.fmt(peak, 0)} | {big[0]["output_mb"]:,.1f} |')
  lines += ['', f'Steady rate: (N={sizes[-1]:,} - N={sizes[-2]:,}) / (difference of run '
            'times) within one repeat; fixed cost: the run time left at N = 0. Run times '
            'exclude the interpreter and imports; the LocalDagRunner row times '
            '`LocalDagRunner.run()`. n/a: too little time difference to measure a rate.'
            if len(sizes) > 1 else '']
  checks = targets(rates)
  if checks:
    lines += ['', '| target | measured, median (range) | holds |', '|---|---:|---|']
    lines += [f'| {t} | {m} | {"yes" if ok else "**no**"} |' for t, m, ok in checks]
  write_part(directory, 'throughput.md', '\n'.join(lines) + '\n', echo=False)
  _plot(runs, rates, machine, os.path.join(directory, 'results.png'))


def targets(rates) -> List[tuple]:
  out = []
  for method, what in ((DEFAULT, 'default settings on LocalDagRunner'),
                       ('beam_multiproc_2', 'DirectRunner, 2 workers')):
    ratios = rates.get(method, {}).get('ratio')
    if ratios:
      s = procs.spread(ratios)
      out.append((f'{what}: steady state >= 2x the naive GZIP loop', procs.fmt(s, 2, 'x'),
                  s['median'] >= 2))
  return out


def write_part(directory: str, name: str, text: str, echo: bool = True) -> None:
  """Writes one part's Markdown into `directory` (and prints it)."""
  if echo:
    print(text)
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, name), 'w') as f:
    f.write(text)


def assemble(directory: str) -> str:
  """results.md: every part's file that exists, under its title."""
  sections = []
  for name in PART_FILES:
    path = os.path.join(directory, name)
    if os.path.exists(path):
      with open(path) as f:
        sections.append(f'### {PART_TITLES[name]}\n\n{f.read().strip()}\n')
  text = '\n'.join(sections)
  with open(os.path.join(directory, 'results.md'), 'w') as f:
    f.write(text)
  return text


def _plot(runs: List[Dict], rates, machine: str, path: str) -> None:
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  methods = [m for m in dict.fromkeys(r['method'] for r in runs)]
  big = max(r['n'] for r in runs)
  fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
  for ax, values, title, unit in (
      (ax1, [rates.get(m, {}).get('rate') or [0] for m in methods],
       'Steady-state throughput (median, range)', 'images/s'),
      (ax2, [[r['peak_mb'] for r in runs if r['method'] == m and r['n'] == big]
             for m in methods], f'Peak memory of the process tree, N={big:,}', 'MB')):
    s = [procs.spread(v) for v in values]
    ax.barh(methods, [x['median'] for x in s],
            xerr=[[x['median'] - x['min'] for x in s], [x['max'] - x['median'] for x in s]])
    ax.set_xlabel(unit)
    ax.set_title(title)
    ax.grid(True, axis='x', alpha=0.3)
  ax1.set_xscale('log')
  ax2.set_yticklabels([])
  fig.suptitle(machine, fontsize=9)
  fig.tight_layout()
  fig.savefig(path, dpi=90)
