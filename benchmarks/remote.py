"""Remote reads: the CLI's steady conversion rate, images on local disk against gs://.

The same JPEGs are read from local disk and from gs:// (a real GCS server behind a
latency proxy) at 0, 20 and 50 ms added to every request.

    .venv/bin/python -m benchmarks.remote [--sizes 4000,12000] [--repeats 3]
                                          [--latencies 0,20,50] [--image-set photo]

The first N2 benchmark JPEGs (`--image-set`: photo-like by default, benchmarks/photos.py,
or the synthetic 256x256 ones) and an AutoML CSV of the first N1
and of the first N2 (relative image paths, hash splits) are written locally, then
uploaded to fake-gcs-server (tests/storage_servers.py) as gs://bkt/images/... and
gs://bkt/manifest-N.csv, so the gs:// manifest's relative paths resolve to the same
images and the records must come out byte-identical. Clients reach the server through
the module's HTTP proxy (STORAGE_EMULATOR_HOST), which adds the latency to every request
and counts the requests it forwards.

Each run is a fresh `tfrecorder-component convert MANIFEST OUT` process with default
settings, pinned to core 0 (`taskset -c 0`: one core, so the CLI runs one worker in
memory), writing to local disk, timed from launch to exit, with the peak resident
memory of its process tree (sampled every 50 ms). The storage server, the proxy and this
driver are pinned to core 1, so they do not take the converter's CPU. One untimed
warm-up run of each kind comes first. Then, for each repeat, each latency and each N, a
local run and a gs:// run, interleaved so that the host's noise falls on both alike.
The steady rate of a repeat is (N2 - N1) / (t2 - t1), so start-up cancels out; the fixed
cost is what remains at N = 0 (t1 - N1 / rate). Each figure is the median over repeats
with its range; the gs:// / local ratio is taken within each repeat. At the N2 gs://
run the proxy's counts give the image reads per image (1.00: every image read once) and
the most requests it saw in flight (the converter's default is 64 reads in flight per
worker, `--concurrent-reads N` / `concurrent_reads=`). Once, at the first latency's N2
runs, both outputs are compared with tests/tfrecord_digest.py. Writes
benchmarks/results/remote.md.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import sys
import time
from typing import Dict, List

from benchmarks import procs, report

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'tests'))
import storage_servers  # pylint: disable=g-import-not-at-top,wrong-import-position

BUCKET = 'bkt'
CONVERTER_CORE = 0
SERVER_CORE = 1
KINDS = ('local', 'gcs')
_WROTE = re.compile(r'Wrote ([\d,]+) records of ([\d,]+) rows')


def _pin(core: int) -> List[str]:
  return ['taskset', '-c', str(core)]


def _convert(manifest: str, out: str, n: int, env: Dict[str, str], what: str) -> Dict:
  """One pinned CLI run into a fresh `out`; checks that it wrote all n records."""
  shutil.rmtree(out, ignore_errors=True)
  cmd = [*_pin(CONVERTER_CORE),
         *procs.python('-m', 'tfrecorder_component.cli', 'convert', manifest, out)]
  try:
    r = procs.run(cmd, env=env)
  except RuntimeError as e:  # procs.run raises with the CLI's stderr
    print(f'remote: {what} failed:\n{e}', file=sys.stderr, flush=True)
    raise
  wrote = _WROTE.search(r['stdout'])
  if not wrote or int(wrote.group(1).replace(',', '')) != n:
    raise RuntimeError(f'{what}: expected {n} records, the CLI said:\n{r["stdout"][-2000:]}')
  return r


def _upload(server, data_root: str, n: int, sizes: List[int]) -> None:
  """The first n images as gs://bkt/images/..., and each size's manifest at the bucket's
  root (the cache folder may hold more images than this part reads: only n go up)."""
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  server.create_bucket(BUCKET)

  def one(i: int) -> None:
    path = data.image_path(data_root, i)
    with open(path, 'rb') as f:
      server.upload(BUCKET, os.path.relpath(path, data_root).replace(os.sep, '/'), f.read())

  with concurrent.futures.ThreadPoolExecutor(storage_servers.UPLOAD_WORKERS) as pool:
    for _ in pool.map(one, range(n)):
      pass
  for size in sizes:
    with open(os.path.join(data_root, f'manifest-{size}.csv'), 'rb') as f:
      server.upload(BUCKET, f'manifest-{size}.csv', f.read())
  listed = len(server.list(BUCKET, 'images/'))
  if listed != n:
    raise RuntimeError(f'uploaded {n} images, the server lists {listed}')


def measure(data_root: str, sizes: List[int], repeats: int, latencies: List[float],
            scratch: str, image_set: str = 'photo') -> Dict:
  """Every run (see the module); returns {'runs': [...], 'identical': bool, ...}."""
  from benchmarks import data as data_lib  # pylint: disable=g-import-not-at-top
  data = data_lib.image_set(image_set)
  import tfrecord_digest  # pylint: disable=g-import-not-at-top
  if not {CONVERTER_CORE, SERVER_CORE} <= os.sched_getaffinity(0):
    raise RuntimeError(f'this part needs cores {CONVERTER_CORE} and {SERVER_CORE}; '
                       f'this process may use {sorted(os.sched_getaffinity(0))}')
  n1, n2 = sizes[-2], sizes[-1]
  t = time.perf_counter()
  data.generate(data_root, n2)
  manifests = {n: data.write_manifest(data_root, n) for n in sizes}
  print(f'remote: {n2} images ready in {time.perf_counter() - t:.0f}s', flush=True)
  shutil.rmtree(scratch, ignore_errors=True)
  os.makedirs(scratch)
  runs: List[Dict] = []
  identical = None
  affinity = os.sched_getaffinity(0)
  with storage_servers.gcs_behind_proxy(0, server_prefix=_pin(SERVER_CORE),
                                        proxy_prefix=_pin(SERVER_CORE)) as (server, proxy):
    t = time.perf_counter()
    _upload(server, data_root, n2, sizes)
    print(f'remote: uploaded {n2} images to gs://{BUCKET}/images/ in '
          f'{time.perf_counter() - t:.0f}s', flush=True)
    env = {'local': {}, 'gcs': {'STORAGE_EMULATOR_HOST': proxy.url}}
    source = {'local': manifests, 'gcs': {n: f'gs://{BUCKET}/manifest-{n}.csv' for n in sizes}}
    os.sched_setaffinity(0, {SERVER_CORE})  # the driver's 50 ms sampling, off core 0
    try:
      for kind in KINDS:
        out = os.path.join(scratch, f'warmup-{kind}')
        r = _convert(source[kind][n2], out, n2, env[kind], f'warm-up {kind} N={n2}')
        shutil.rmtree(out, ignore_errors=True)
        print(f'remote: warm-up {kind:<5} N={n2:>6} {r["wall_s"]:7.2f}s (not counted)',
              flush=True)
      for rep in range(repeats):
        for latency in latencies:
          proxy.set_delay(latency)
          for n in sizes:
            check = identical is None and n == n2
            outs = {}
            for kind in KINDS:
              out = os.path.join(scratch, f'{kind}-{n}')
              if kind == 'gcs':
                proxy.reset_stats()
              r = _convert(source[kind][n], out, n, env[kind],
                           f'rep {rep + 1} {latency:g} ms {kind} N={n}')
              run = {'kind': kind, 'n': n, 'rep': rep, 'latency_ms': latency,
                     'wall_s': r['wall_s'], 'peak_mb': r['peak_mb']}
              if kind == 'gcs':
                stats = proxy.stats()
                images = {p: c for p, c in stats['reads_by_path'].items() if '/images/' in p}
                run.update(requests=stats['requests'], image_reads=sum(images.values()),
                           images_read=len(images), max_in_flight=stats['max_in_flight'],
                           upstream_errors=stats['upstream_errors'])
              runs.append(run)
              extra = (f'  {run["image_reads"] / n:.2f} reads/image, max '
                       f'{run["max_in_flight"]} in flight' if kind == 'gcs' else '')
              print(f'remote rep {rep + 1} {latency:>4g} ms N={n:>6} {kind:<5} '
                    f'{r["wall_s"]:7.2f}s  peak {r["peak_mb"]:6.0f} MB{extra}', flush=True)
              if check:
                outs[kind] = out
              else:
                shutil.rmtree(out, ignore_errors=True)
            if check:
              digests = {kind: tfrecord_digest.digest(out) for kind, out in outs.items()}
              identical = digests['local'] == digests['gcs']
              print(f'remote: records identical, local and gs://, N={n}: '
                    f'{"yes" if identical else "NO"}', flush=True)
              if not identical:
                for kind in KINDS:
                  print(f'  {kind}: {digests[kind]}', flush=True)
              for out in outs.values():
                shutil.rmtree(out, ignore_errors=True)
    finally:
      os.sched_setaffinity(0, affinity)
  shutil.rmtree(scratch, ignore_errors=True)
  return {'runs': runs, 'identical': identical, 'sizes': sizes, 'repeats': repeats,
          'images': data.SHORT,
          'latencies': latencies}


def _run(runs, kind, n, rep, latency):
  return next(r for r in runs if (r['kind'], r['n'], r['rep'], r['latency_ms']) ==
              (kind, n, rep, latency))


def figures(got: Dict) -> Dict:
  """Per latency: steady rates, their ratio within each repeat, fixed costs, the proxy's
  counts at N2 and gs:// peak memory at N1 and N2, as procs.spread dicts."""
  runs, (n1, n2) = got['runs'], got['sizes'][-2:]
  out = {}
  for latency in got['latencies']:
    rate = {kind: [] for kind in KINDS}
    fixed = {kind: [] for kind in KINDS}
    ratio = []
    for rep in range(got['repeats']):
      per = {}
      for kind in KINDS:
        a, b = _run(runs, kind, n1, rep, latency), _run(runs, kind, n2, rep, latency)
        if b['wall_s'] - a['wall_s'] <= 0:  # too close to time a rate
          continue
        per[kind] = (n2 - n1) / (b['wall_s'] - a['wall_s'])
        rate[kind].append(per[kind])
        fixed[kind].append(max(0.0, a['wall_s'] - n1 / per[kind]))
      if len(per) == 2:
        ratio.append(per['gcs'] / per['local'])
    gcs = {n: [r for r in runs if (r['kind'], r['n'], r['latency_ms']) == ('gcs', n, latency)]
           for n in (n1, n2)}
    big = gcs[n2]
    peak1 = procs.spread([r['peak_mb'] for r in gcs[n1]])
    peak2 = procs.spread([r['peak_mb'] for r in big])
    out[latency] = {
        'local_rate': procs.spread(rate['local']) if rate['local'] else None,
        'gcs_rate': procs.spread(rate['gcs']) if rate['gcs'] else None,
        'ratio': procs.spread(ratio) if ratio else None,
        'local_fixed_s': procs.spread(fixed['local']) if fixed['local'] else None,
        'gcs_fixed_s': procs.spread(fixed['gcs']) if fixed['gcs'] else None,
        'reads_per_image': procs.spread([r['image_reads'] / n2 for r in big]),
        'every_image_read': all(r['images_read'] == n2 for r in big),
        'requests_per_image': procs.spread([r['requests'] / n2 for r in big]),
        'max_in_flight': procs.spread([r['max_in_flight'] for r in big]),
        'upstream_errors': sum(r['upstream_errors'] for r in big),
        'gcs_peak_mb': {n1: peak1, n2: peak2},
        'memory_ratio': peak2['median'] / peak1['median'],
    }
  return out


def markdown(got: Dict, figs: Dict) -> str:
  n1, n2 = got['sizes'][-2:]
  opt = lambda s, d, u='': procs.fmt(s, d, u) if s else 'n/a'
  lines = [
      f'The first {n2:,} {got.get("images", "synthetic 256x256 JPEGs (about 34 KB)")}, '
      'read from local disk and '
      f'from gs:// (fake-gcs-server behind an HTTP proxy that adds the latency to every '
      f'request); `tfrecorder-component convert` with default settings, a fresh process per '
      f'run pinned to core {CONVERTER_CORE} (so one worker in memory), server, proxy and '
      f'driver pinned to core {SERVER_CORE}; output to local disk. {got["repeats"]} repeat'
      f'{"s" * (got["repeats"] != 1)}, '
      f'local and gs:// interleaved; median (min–max) over repeats. The converter keeps 64 '
      f'reads in flight per worker by default (`--concurrent-reads N`, `concurrent_reads=`).',
      '',
      '| added latency a request | local images/s | gs:// images/s | gs:// / local '
      '| fixed cost s, local / gs:// | image reads an image (all read) '
      '| max requests in flight | gs:// peak MB, N1 → N2 (N2/N1) |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|']
  for latency, f in figs.items():
    peak = f['gcs_peak_mb']
    lines.append(
        f'| {latency:g} ms | {opt(f["local_rate"], 0)} | {opt(f["gcs_rate"], 0)} | '
        f'{opt(f["ratio"], 2, "x")} | '
        f'{opt(f["local_fixed_s"], 1)} / {opt(f["gcs_fixed_s"], 1)} | '
        f'{procs.fmt(f["reads_per_image"], 2)} '
        f'({"yes" if f["every_image_read"] else "**no**"}) | '
        f'{procs.fmt(f["max_in_flight"], 0)} | '
        f'{peak[n1]["median"]:,.0f} → {peak[n2]["median"]:,.0f} ({f["memory_ratio"]:.2f}x) |')
  identical = {None: 'n/a', True: 'yes', False: '**no**'}[got['identical']]
  lines += [
      '',
      f'Steady rate: (N={n2:,} - N={n1:,}) / (difference of wall times, launch to exit) '
      'within one repeat; fixed cost: the wall time left at N = 0. Image reads an image: '
      f'the proxy\'s GETs of objects under images/ in the N={n2:,} gs:// run, divided by '
      f'{n2:,} ("all read": every image read at least once). Peak memory: the CLI\'s whole '
      'process tree, sampled every 50 ms.',
      '',
      f'Records identical, local and gs:// (N={n2:,}, {got["latencies"][0]:g} ms, '
      f'tests/tfrecord_digest.py): {identical}.']
  return '\n'.join(lines) + '\n'


def _numbers(text: str, kind=float) -> List:
  return [kind(v) for v in text.split(',') if v.strip()]


def main(argv=None) -> Dict:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='4000,12000',
                      help='N values; the steady rate is taken between the two largest')
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--latencies', default='0,20,50', help='ms the proxy adds a request')
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  data.add_arguments(parser)
  parser.add_argument('--scratch', default=os.path.join(HERE, 'out', 'remote'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  args = parser.parse_args(argv)
  sizes = sorted(set(_numbers(args.sizes, int)))
  if len(sizes) < 2 or args.repeats < 1:
    parser.error('need two sizes or more and one repeat or more')
  data.resolve(args)
  got = measure(args.data, sizes, args.repeats, _numbers(args.latencies), args.scratch,
                args.image_set)
  figs = figures(got)
  report.write_part(args.results, 'remote.md', markdown(got, figs))
  return {'sizes': sizes, 'repeats': args.repeats, 'identical': got['identical'],
          'latencies': figs, 'runs': got['runs']}


if __name__ == '__main__':
  main()
  sys.exit(0)
