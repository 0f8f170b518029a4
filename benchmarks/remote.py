"""Object storage: the CLI's steady rate and CPU an image, images, manifest and output on
local disk or on a real object store.

Three runs of the same JPEGs, for each store (fake-gcs-server for gs://, moto's S3 server
for s3://, each behind a latency proxy):

- `local`: manifest, images and output on local disk;
- `images`: the images on the store, named by a local manifest, the output local;
- `all`: manifest, images and output on the store (the Vertex AI and Kubeflow path).

    .venv/bin/python -m benchmarks.remote [--sizes 300,3000] [--repeats 3]
                                          [--latencies 20] [--stores gcs,s3]
                                          [--image-set photo]

The first N2 benchmark JPEGs (`--image-set`: photo-like by default, benchmarks/photos.py,
or the synthetic 256x256 ones) go up as <store>://bkt/images/..., with an AutoML CSV of
the first N of each size at the bucket's root naming them relatively (as the local CSV
names the local copies), so the records of `local` and `all` must be byte-identical; the
`images` run's local CSV names the same objects by their full URIs (records that differ
in their paths and hash splits), so its images and labels must be those of `local`.
Clients reach each server through the module's HTTP proxy (STORAGE_EMULATOR_HOST,
AWS_ENDPOINT_URL), which adds the latency to every request and counts the requests it
forwards.

Each run is a fresh `tfrecorder-component convert MANIFEST OUT` process with default
settings, pinned to core 0 (`taskset -c 0`: one core, so the CLI runs one worker),
timed from launch to exit, with the CPU time (user and system) of its process tree and
its peak resident memory (sampled every 50 ms). The storage servers, the proxies and
this driver are pinned to core 1, so they do not take the converter's CPU. Beside each
run's rate: both cores' busy share over the run (per-CPU counters of /proc/stat, sampled
at launch and exit) and the store's ceiling, the images a second the store's core could
serve at the CPU an image its server and proxy spent in that run; the goal's measure is
the `all` run's rate over the lower of the `images` rate and that ceiling. One untimed
warm-up run of each kind comes first. Then, for each repeat, each latency and each N,
the three runs, interleaved so that the host's noise falls on all alike. The steady rate
of a repeat is (N2 - N1) / (t2 - t1) and the CPU an image (c2 - c1) / (N2 - N1), so
start-up cancels out; the fixed cost is what remains at N = 0. Each figure is the median
over repeats with its range; ratios are taken within each repeat. Once, at the first
latency's N2 runs, the outputs are compared with tests/tfrecord_digest.py. Writes
benchmarks/results/remote.md.

Length: one measurement end to end (the buckets filled, the runs interleaved, the outputs
compared, the table), whose parts share the stores, the proxies and the pinning.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import csv
import os
import re
import shutil
import sys
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from benchmarks import procs, report
from tests import storage_servers

HERE = os.path.dirname(os.path.abspath(__file__))

BUCKET = 'bkt'
CONVERTER_CORE = 0
SERVER_CORE = 1
KINDS = ('local', 'images', 'all')
STORES = {'gcs': 'gs', 's3': 's3'}
_WROTE = re.compile(r'Wrote ([\d,]+) records of ([\d,]+) rows')


def _pin(core: int) -> List[str]:
  return ['taskset', '-c', str(core)]


def _convert(manifest: str, out: str, n: int, env: Dict[str, str], what: str) -> Dict:
  """One pinned CLI run into `out` (new); checks that it wrote all n records."""
  if files_local(out):
    shutil.rmtree(out, ignore_errors=True)
  cmd = [*_pin(CONVERTER_CORE),
         *procs.python('-m', 'tfrecorder_component.adapters.cli', 'convert', manifest, out)]
  try:
    r = procs.run(cmd, env=env)
  except RuntimeError as e:  # procs.run raises with the CLI's stderr
    print(f'remote: {what} failed:\n{e}', file=sys.stderr, flush=True)
    raise
  wrote = _WROTE.search(r['stdout'])
  if not wrote or int(wrote.group(1).replace(',', '')) != n:
    raise RuntimeError(f'{what}: expected {n} records, the CLI said:\n{r["stdout"][-2000:]}')
  return r


def _cpu_s(services: Sequence[Any]) -> float:
  """CPU time (user and system) the store's server and proxy processes have used so far."""
  import psutil  # pylint: disable=g-import-not-at-top
  total = 0.0
  for service in services:
    times = psutil.Process(service.pid).cpu_times()
    total += times.user + times.system + times.children_user + times.children_system
  return total


def _core_times() -> Dict[int, Tuple[float, float]]:
  """{core: (busy s, total s)} of CONVERTER_CORE and SERVER_CORE since boot (psutil's
  per-CPU counters, /proc/stat: busy is everything but idle and iowait)."""
  import psutil  # pylint: disable=g-import-not-at-top
  per_cpu = psutil.cpu_times(percpu=True)
  out = {}
  for core in (CONVERTER_CORE, SERVER_CORE):
    t = per_cpu[core]
    total = sum(t)
    out[core] = (total - t.idle - getattr(t, 'iowait', 0.0), total)
  return out


def _busy(before: Dict[int, Tuple[float, float]], after: Dict[int, Tuple[float, float]]
          ) -> Dict[int, float]:
  """{core: share of the time between the two samples it was busy}: whatever ran there,
  this run's or anyone else's (on a shared host, other work shows up here too)."""
  return {core: ((after[core][0] - before[core][0]) /
                 max(after[core][1] - before[core][1], 1e-9)) for core in before}


def files_local(path: str) -> bool:
  return '://' not in path


@contextlib.contextmanager
def _store(name: str) -> Iterator[Tuple[Any, Any, Dict[str, str]]]:
  """(server, proxy, the clients' environment) of store `name`, server and proxy pinned
  to SERVER_CORE."""
  pin = _pin(SERVER_CORE)
  if name == 'gcs':
    with storage_servers.gcs_behind_proxy(0, server_prefix=pin, proxy_prefix=pin) as (
        server, proxy):
      yield server, proxy, {'STORAGE_EMULATOR_HOST': proxy.url}
    return
  with storage_servers.S3Server(prefix=pin) as server:
    with storage_servers.Proxy(server.endpoint, 0, (), pin) as proxy:
      yield server, proxy, {**server.client_env(), 'AWS_ENDPOINT_URL': proxy.url}


def _upload(server, data_root: str, n: int, sizes: List[int]) -> None:
  """The first n images as <store>://bkt/images/..., and each size's manifest at the
  bucket's root (the cache folder may hold more images than this part reads: only n go
  up)."""
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


def _uri_manifest(local_manifest: str, scheme: str, scratch: str) -> str:
  """A local copy of `local_manifest` naming each image by its URI on the store."""
  path = os.path.join(scratch, f'{scheme}-{os.path.basename(local_manifest)}')
  with open(local_manifest, newline='') as f, open(path, 'w', newline='') as out:
    writer = csv.writer(out)
    for split, image, label in csv.reader(f):
      writer.writerow([split, f'{scheme}://{BUCKET}/{image}', label])
  return path


def _drop(env: Dict[str, str], uri: str) -> None:
  """Removes a run's output from the store (the servers keep objects in memory)."""
  from tfrecorder_component.io import storage  # pylint: disable=g-import-not-at-top
  with storage_servers.environment(env):
    try:
      storage._forget_clients()  # pylint: disable=protected-access  (this store's endpoint)
      storage.client_for(uri).delete_dir(uri.split('://', 1)[1])
    except Exception:  # pylint: disable=broad-except  (what is left only takes memory)
      pass


def _pairs(output_dir: str) -> List[Tuple[bytes, bytes]]:
  """(image bytes, label text) of every record of an output, sorted."""
  from tfrecorder_component.record import example_proto  # pylint: disable=g-import-not-at-top
  from tests import tfrecord_digest  # pylint: disable=g-import-not-at-top
  out = []
  for split in sorted(os.listdir(output_dir)):
    if split.startswith('Split-'):
      for record in tfrecord_digest.read_records(os.path.join(output_dir, split)):
        feature = example_proto.Example.FromString(record).features.feature
        out.append((feature['image/encoded'].bytes_list.value[0],
                    feature['image/class/text'].bytes_list.value[0]))
  return sorted(out)


def measure(data_root: str, sizes: List[int], repeats: int, latencies: List[float],
            scratch: str, image_set: str = 'photo', stores: Sequence[str] = tuple(STORES)
            ) -> Dict:
  """Every run (see the module); returns {'runs': [...], 'identical': {store: bool}, ...}."""
  from benchmarks import image_sets  # pylint: disable=g-import-not-at-top
  data = image_sets.image_set(image_set)
  from tests import tfrecord_digest  # pylint: disable=g-import-not-at-top
  if not {CONVERTER_CORE, SERVER_CORE} <= os.sched_getaffinity(0):
    raise RuntimeError(f'this part needs cores {CONVERTER_CORE} and {SERVER_CORE}; '
                       f'this process may use {sorted(os.sched_getaffinity(0))}')
  n2 = sizes[-1]
  t = time.perf_counter()
  data.generate(data_root, n2)
  manifests = {n: data.write_manifest(data_root, n) for n in sizes}
  print(f'remote: {n2} images ready in {time.perf_counter() - t:.0f}s', flush=True)
  shutil.rmtree(scratch, ignore_errors=True)
  os.makedirs(scratch)
  runs: List[Dict] = []
  identical: Dict[str, Optional[bool]] = {}
  affinity = os.sched_getaffinity(0)
  for store in stores:
    scheme = STORES[store]
    identical[store] = None
    with _store(store) as (server, proxy, store_env):
      t = time.perf_counter()
      _upload(server, data_root, n2, sizes)
      print(f'remote: uploaded {n2} images to {scheme}://{BUCKET}/images/ in '
            f'{time.perf_counter() - t:.0f}s', flush=True)
      env = {'local': {}, 'images': store_env, 'all': store_env}
      source = {'local': manifests,
                'images': {n: _uri_manifest(manifests[n], scheme, scratch) for n in sizes},
                'all': {n: f'{scheme}://{BUCKET}/manifest-{n}.csv' for n in sizes}}
      output = lambda kind, name: (f'{scheme}://{BUCKET}/out/{name}' if kind == 'all'
                                   else os.path.join(scratch, f'{kind}-{name}'))

      def done_with(kind: str, out: str) -> None:
        if kind == 'all':
          _drop(store_env, out)
        else:
          shutil.rmtree(out, ignore_errors=True)

      os.sched_setaffinity(0, {SERVER_CORE})  # the driver's 50 ms sampling, off core 0
      try:
        for kind in KINDS:
          out = output(kind, 'warmup')
          r = _convert(source[kind][n2], out, n2, env[kind], f'{store} warm-up {kind} N={n2}')
          done_with(kind, out)
          print(f'remote: {store} warm-up {kind:<6} N={n2:>6} {r["wall_s"]:7.2f}s '
                '(not counted)', flush=True)
        for rep in range(repeats):
          for latency in latencies:
            proxy.set_delay(latency)
            for n in sizes:
              check = identical[store] is None and n == n2
              outs = {}
              for kind in KINDS:
                out = output(kind, f'{rep}-{latency:g}-{n}')
                proxy.reset_stats()
                served = _cpu_s((server, proxy))
                cores = _core_times()
                r = _convert(source[kind][n], out, n, env[kind],
                             f'{store} rep {rep + 1} {latency:g} ms {kind} N={n}')
                busy = _busy(cores, _core_times())
                stats = proxy.stats()
                served = _cpu_s((server, proxy)) - served
                runs.append({'store': store, 'kind': kind, 'n': n, 'rep': rep,
                             'latency_ms': latency, 'wall_s': r['wall_s'], 'cpu_s': r['cpu_s'],
                             'peak_mb': r['peak_mb'], 'server_cpu_s': served,
                             'requests': stats['requests'], 'methods': stats['methods'],
                             'converter_core_busy': busy[CONVERTER_CORE],
                             'server_core_busy': busy[SERVER_CORE],
                             'max_in_flight': stats['max_in_flight'],
                             'upstream_errors': stats['upstream_errors']})
                print(f'remote {store} rep {rep + 1} {latency:>4g} ms N={n:>6} {kind:<6} '
                      f'{r["wall_s"]:7.2f}s  cpu {r["cpu_s"]:7.2f}s  peak '
                      f'{r["peak_mb"]:6.0f} MB  {stats["requests"]} requests  server cpu '
                      f'{served:6.2f}s  cores busy {100 * busy[CONVERTER_CORE]:3.0f}% / '
                      f'{100 * busy[SERVER_CORE]:3.0f}%  {_methods(stats["methods"])}',
                      flush=True)
                if check:
                  outs[kind] = (server.download(BUCKET, out.split(f'{BUCKET}/', 1)[1],
                                                os.path.join(scratch, 'fetched'))
                                if kind == 'all' else out)
                  if kind == 'all':
                    _drop(store_env, out)
                else:
                  done_with(kind, out)
              if check:
                same = tfrecord_digest.digest(outs['local']) == tfrecord_digest.digest(outs['all'])
                pairs = _pairs(outs['local']) == _pairs(outs['images'])
                identical[store] = same and pairs
                print(f'remote: {store} N={n}: records of local and all byte-identical: '
                      f'{"yes" if same else "NO"}; images and labels of local and images '
                      f'identical: {"yes" if pairs else "NO"}', flush=True)
                for out in outs.values():
                  shutil.rmtree(out, ignore_errors=True)
      finally:
        os.sched_setaffinity(0, affinity)
  shutil.rmtree(scratch, ignore_errors=True)
  return {'runs': runs, 'identical': identical, 'sizes': sizes, 'repeats': repeats,
          'images': data.SHORT, 'latencies': latencies, 'stores': list(stores)}


def _methods(methods: Dict[str, int]) -> str:
  """'GET 3034 POST 14 PUT 24': the proxy's requests by method (PUTs and POSTs are the
  output's uploads, GETs the reads)."""
  return ' '.join(f'{m} {n}' for m, n in sorted(methods.items()))


def _run(runs, store, kind, n, rep, latency):
  return next(r for r in runs if (r['store'], r['kind'], r['n'], r['rep'], r['latency_ms'])
              == (store, kind, n, rep, latency))


def figures(got: Dict) -> Dict:
  """{(store, latency): {kind: rate, cpu an image, fixed cost, peak; ratios}}, each a
  procs.spread dict over repeats (ratios taken within each repeat)."""
  runs, (n1, n2) = got['runs'], got['sizes'][-2:]
  out = {}
  for store in got['stores']:
    for latency in got['latencies']:
      per_kind = {k: {'rate': [], 'cpu_ms': [], 'fixed_s': [], 'server_ms': [], 'server_busy': [],
                      'ceiling': [], 'core0_busy': [], 'core1_busy': []}
                  for k in KINDS}
      ratios = {'all_rate': [], 'all_cpu': [], 'images_rate': [], 'images_cpu': [],
                'all_bound': [], 'all_local_cpu': []}
      for rep in range(got['repeats']):
        rep_rate, rep_cpu = {}, {}
        for kind in KINDS:
          a, b = (_run(runs, store, kind, n1, rep, latency),
                  _run(runs, store, kind, n2, rep, latency))
          steady = procs.marginal(a, b, n1, n2)
          if steady is None:  # too close to time a rate
            continue
          rep_rate[kind], rep_cpu[kind] = steady['rate'], steady['cpu_ms']
          for name in ('rate', 'cpu_ms', 'fixed_s'):
            per_kind[kind][name].append(steady[name])
          per_kind[kind]['server_ms'].append(
              1000 * (b['server_cpu_s'] - a['server_cpu_s']) / (n2 - n1))
          per_kind[kind]['server_busy'].append(b['server_cpu_s'] / b['wall_s'])
          # The store's ceiling: the images a second its core could serve at the CPU an
          # image its server and proxy spent in this run (1 / store CPU-s an image).
          served = (b['server_cpu_s'] - a['server_cpu_s']) / (n2 - n1)
          rep_ceiling = 1 / served if served > 0 else None
          if rep_ceiling and kind != 'local':
            per_kind[kind]['ceiling'].append(rep_ceiling)
            if kind == 'all':
              rep_rate['all_ceiling'] = rep_ceiling
          if 'converter_core_busy' in b:
            per_kind[kind]['core0_busy'].append(b['converter_core_busy'])
            per_kind[kind]['core1_busy'].append(b['server_core_busy'])
        if all(k in rep_rate for k in KINDS):
          ratios['all_rate'].append(rep_rate['all'] / rep_rate['images'])
          ratios['all_cpu'].append(rep_cpu['all'] / rep_cpu['images'])
          ratios['images_rate'].append(rep_rate['images'] / rep_rate['local'])
          ratios['images_cpu'].append(rep_cpu['images'] / rep_cpu['local'])
          ratios['all_local_cpu'].append(rep_cpu['all'] / rep_cpu['local'])
          # The goal's measure: the all run's rate over the lower of what the images run
          # reached and what the store could serve at its cost an image in the all run.
          bound = min(rep_rate['images'], rep_rate.get('all_ceiling') or float('inf'))
          ratios['all_bound'].append(rep_rate['all'] / bound)
      big = [r for r in runs if (r['store'], r['n'], r['latency_ms']) == (store, n2, latency)]
      out[store, latency] = {
          **{kind: {name: procs.spread(v) if v else None for name, v in f.items()}
             for kind, f in per_kind.items()},
          **{name: procs.spread(v) if v else None for name, v in ratios.items()},
          'peak_mb': {kind: procs.spread([r['peak_mb'] for r in big if r['kind'] == kind])
                      for kind in KINDS},
          'requests_per_image': {kind: procs.spread([r['requests'] / n2 for r in big
                                                     if r['kind'] == kind]) for kind in KINDS},
          'upstream_errors': sum(r['upstream_errors'] for r in big),
          # Requests other than GETs (uploads: POST starts one, PUT sends a piece, and
          # the lock's and the report's small objects), the output's side of the count.
          'writes': {kind: procs.spread([sum(v for m, v in r.get('methods', {}).items()
                                             if m != 'GET') for r in big if r['kind'] == kind])
                     for kind in KINDS},
      }
  return out


def markdown(got: Dict, figs: Dict) -> str:
  n1, n2 = got['sizes'][-2:]
  opt = lambda s, d, u='': procs.fmt(s, d, u) if s else 'n/a'
  pct = lambda s: {k: (v if k == 'n' else 100 * v) for k, v in s.items()} if s else s
  lines = [
      f'The first {n2:,} and {n1:,} {got.get("images", "JPEGs")}; `tfrecorder-component '
      f'convert` with default settings, a fresh process per run pinned to core '
      f'{CONVERTER_CORE} (so one worker), the storage server, its latency proxy and the '
      f'driver pinned to core {SERVER_CORE}. Runs: **local** (manifest, images and output '
      'on local disk), **images** (the images on the store, named by their URIs in a local '
      'manifest; output local), **all** (manifest, images and output on the store: the '
      'Vertex AI and Kubeflow path). gs:// is fake-gcs-server, s3:// moto\'s server. '
      f'{got["repeats"]} repeat{"s" * (got["repeats"] != 1)}, the three runs interleaved; '
      'median (min–max) over repeats.',
      '',
      '| store | added latency | run | images/s | CPU ms an image | fixed cost s '
      f'| peak MB at N={n2:,} | requests an image | server CPU ms an image '
      f'| server core busy at N={n2:,} | store\'s ceiling images/s '
      f'| core {CONVERTER_CORE} / core {SERVER_CORE} busy at N={n2:,} '
      f'| requests other than GET at N={n2:,} |',
      '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
  for (store, latency), f in figs.items():
    for kind in KINDS:
      lines.append(
          f'| {STORES[store]}:// | {latency:g} ms | {kind} | {opt(f[kind]["rate"], 0)} | '
          f'{opt(f[kind]["cpu_ms"], 2)} | {opt(f[kind]["fixed_s"], 1)} | '
          f'{f["peak_mb"][kind]["median"]:,.0f} | '
          f'{procs.fmt(f["requests_per_image"][kind], 2) if kind != "local" else "–"} | '
          f'{opt(f[kind]["server_ms"], 2) if kind != "local" else "–"} | '
          f'{opt(pct(f[kind]["server_busy"]), 0, "%") if kind != "local" else "–"} | '
          f'{opt(f[kind]["ceiling"], 0) if kind != "local" else "–"} | '
          f'{opt(pct(f[kind]["core0_busy"]), 0, "%")} / {opt(pct(f[kind]["core1_busy"]), 0, "%")} | '
          f'{procs.fmt(f["writes"][kind], 0) if kind != "local" else "–"} |')
  lines += ['', '| store | added latency | all / images: rate | all / images: CPU an image '
            '| images / local: rate | images / local: CPU an image '
            '| all / min(images, store\'s ceiling): rate | all / local: CPU an image |',
            '|---|---:|---:|---:|---:|---:|---:|---:|']
  for (store, latency), f in figs.items():
    lines.append(f'| {STORES[store]}:// | {latency:g} ms | {opt(f["all_rate"], 2, "x")} | '
                 f'{opt(f["all_cpu"], 2, "x")} | {opt(f["images_rate"], 2, "x")} | '
                 f'{opt(f["images_cpu"], 2, "x")} | {opt(f["all_bound"], 2, "x")} | '
                 f'{opt(f["all_local_cpu"], 2, "x")} |')
  same = ', '.join(f'{STORES[s]}:// {({None: "n/a", True: "yes", False: "**no**"})[v]}'
                   for s, v in got['identical'].items())
  lines += [
      '',
      f'Steady rate: (N={n2:,} - N={n1:,}) / (difference of wall times, launch to exit) '
      'within one repeat; CPU an image: the difference of the runs\' CPU time (user and '
      'system, the whole process tree) over the same difference of N; fixed cost: the wall '
      'time left at N = 0. Requests an image: what the proxy forwarded in the '
      f'N={n2:,} run (manifest, images, output, listings), over {n2:,}. Peak memory: the '
      'CLI\'s whole process tree, sampled every 50 ms. Server CPU: user and system time of '
      'the store\'s server and its proxy, the steady difference over N as for the CLI; '
      f'server core busy: their CPU time over the wall time of the N={n2:,} run (the '
      'store\'s core is also the driver\'s, so 100% means the store is the limit). '
      'Store\'s ceiling: 1 / (that server CPU an image), the images a second the store\'s '
      'core could serve at what each cost it in that run; all / min(images, store\'s '
      'ceiling) compares the all run\'s rate with the lower of the images run\'s rate and '
      'that ceiling, within each repeat. Cores busy: the share of the run\'s wall time each '
      'core was not idle (per-CPU counters of /proc/stat, sampled at launch and exit), '
      'whatever ran there: on a host shared with other work they count it too.',
      '',
      f'Outputs compared at N={n2:,}, {got["latencies"][0]:g} ms (tests/tfrecord_digest.py): '
      f'records of local and all byte-identical, images and labels of images identical to '
      f'local: {same}.']
  return '\n'.join(lines) + '\n'


def _numbers(text: str, kind=float) -> List:
  return [kind(v) for v in text.split(',') if v.strip()]


def main(argv=None) -> Dict:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='300,3000',
                      help='N values; the steady rate is taken between the two largest')
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--latencies', default='20', help='ms the proxy adds a request')
  parser.add_argument('--stores', default=','.join(STORES),
                      help=f'of {", ".join(STORES)}')
  from benchmarks import image_sets  # pylint: disable=g-import-not-at-top
  image_sets.add_arguments(parser)
  parser.add_argument('--scratch', default=os.path.join(HERE, 'out', 'remote'))
  parser.add_argument('--results', default=os.path.join(HERE, 'results'))
  args = parser.parse_args(argv)
  sizes = sorted(set(_numbers(args.sizes, int)))
  stores = [s for s in args.stores.split(',') if s]
  if len(sizes) < 2 or args.repeats < 1 or not stores or set(stores) - set(STORES):
    parser.error('need two sizes or more, one repeat or more, and stores of '
                 f'{", ".join(STORES)}')
  image_sets.resolve(args)
  got = measure(args.data, sizes, args.repeats, _numbers(args.latencies), args.scratch,
                args.image_set, stores)
  figs = figures(got)
  report.write_part(args.results, 'remote.md', markdown(got, figs))
  return {'sizes': sizes, 'repeats': args.repeats, 'identical': got['identical'],
          'figures': {f'{s} {l:g} ms': f for (s, l), f in figs.items()}, 'runs': got['runs']}


if __name__ == '__main__':
  main()
  sys.exit(0)
