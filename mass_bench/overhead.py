# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""What Mass costs a request it does not optimise: small-object GETs with
Mass (monitoring, tagging, the control loop) in the proxy pipeline and
without, on the running SAIO.  The GETs are of AUTH_test, pinned for the
run to the read class without a method (as validation leaves a tenant
whose method did not help), so its requests carry every tag and no
method acts on them; the pin is removed at the end.

Two measurements, each alternating the modes in ABBA order (with, without,
without, with, ...) so drift on a shared machine falls on both alike:

* in-process: the proxy pipeline of /etc/swift/proxy-server.conf loaded in
  this process (paste loadapp), with `mass` and with it removed; blocks of
  GETs of a 4 KiB object, CPU time (process_time) of this process per
  request; the backends are the SAIO's storage servers;
* the control loop: CPU of one tick (it runs once per `interval` in each
  worker, whatever the request rate);
* with --instructions, instructions per GET in the proxy process counted
  by valgrind (callgrind): unlike time, the count does not depend on what
  else the machine is doing;
* end to end: `tools/saio pipeline with|without`, then concurrent clients
  sending GETs of a 4 KiB object to the proxy for --seconds; requests/s and
  latency.

Each comparison comes with an A/A control (the same comparison between two
setups without Mass), the spread that is noise on this machine: a ratio
inside it is no difference.  Prints each run, then the median ratio
with/without, its quartiles and min-max.

The in-process pipelines are mass_bench.pipelines'; --fill-cost is
mass_bench.fill_cost.  Everything runs in the benchmark's process but the
children it starts: the in-process part's (it monkey-patches its process
for eventlet) and valgrind's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from mass_bench.pipelines import PROXY, PROXY_CONF, get_requests, \
    load_pipelines, mass_of, redis_calls
from mass_bench.ratios import abba

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAIO = os.path.join(ROOT, 'tools', 'saio')
# this module again, in a process of its own (its launcher puts the
# checkout on sys.path)
SELF = [sys.executable, os.path.join(ROOT, 'tools', 'bench-overhead')]
TENANT = 'AUTH_test'
# What Mass does not optimise: a classified tenant whose policy has no
# method (as validation leaves one whose method did not help).
NO_METHOD = {'class': 'read', 'method': 'none'}
# What --hit-cost pins TENANT to, and the size of the object it reads
# (the slides' tenant A).
CACHED = {'class': 'read', 'method': 'cache'}
HIT_SIZE = 512 * 1024
# set once the top process has pinned TENANT
PINNED_ENV = 'MASS_OVERHEAD_PINNED'


def with_and_without(pairs):
    """'with' and 'without' in ABBA order, ``pairs`` of each."""
    return [mode for order in abba(('with', 'without'), pairs)
            for mode in order]


def summary(rows, key, higher_is_better):
    by_pair = []
    for i in range(0, len(rows), 2):
        a, b = rows[i], rows[i + 1]
        w = a if a['mode'] == 'with' else b
        wo = b if a['mode'] == 'with' else a
        by_pair.append(w[key] / wo[key])
    result = {'median': statistics.median(by_pair), 'min': min(by_pair),
              'max': max(by_pair), 'pairs': by_pair,
              'higher_is_better': higher_is_better}
    if len(by_pair) >= 4:
        result['q1'], _, result['q3'] = statistics.quantiles(by_pair, n=4)
    return result


def describe(s):
    spread = 'min %.3f, max %.3f' % (s['min'], s['max'])
    if 'q1' in s:
        spread = 'quartiles %.3f-%.3f, %s' % (s['q1'], s['q3'], spread)
    return 'median %.3f (%s; %d pairs)' % (
        s['median'], spread, len(s['pairs']))


# ----------------------------------------------------------- in-process

def pinned(pin=NO_METHOD, timeout=30.0):
    """Pin TENANT (by default to a class without a method) and wait until
    the SAIO's leader has put that in the policy table; the store, to
    unpin."""
    import logging
    from swift_mass.control.entry import read_table
    from swift_mass.shared_store import shared_store
    _conf, store = shared_store(PROXY_CONF, logging.getLogger('overhead'))
    store.set_pin(TENANT, pin)
    deadline = time.time() + timeout
    while time.time() < deadline:
        entry = read_table(store.get_table()[1]).get(TENANT)
        if entry and entry.pinned and entry.method == pin['method']:
            # the object servers load the bumped set at their heartbeat
            time.sleep(2)
            return store
        time.sleep(0.5)
    store.delete_pin(TENANT)
    raise RuntimeError('the leader did not apply the pin of %s within %ds'
                       % (TENANT, timeout))


def in_process(pairs, block):
    """Blocks of `block` GETs through the pipeline with mass, without it,
    and through a second pipeline without it (the A/A control: what two
    identical pipelines differ by here), alternated in ABBA order block by
    block so that drift of the machine falls on every mode alike."""
    apps, token, path = load_pipelines(
        ('with', 'without', 'without again'))
    for app in apps.values():
        # warm up: connections, memcache, info caches
        get_requests(app, token, path, 50)
    rows = {'mass': [], 'control': []}
    for comparison, modes in (('mass', ('with', 'without')),
                              ('control', ('without again', 'without'))):
        for order in abba(modes, pairs):
            for mode in order:
                cpu = time.process_time()
                get_requests(apps[mode], token, path, block)
                cpu = time.process_time() - cpu
                rows[comparison].append({
                    'mode': 'with' if mode != 'without' else 'without',
                    'requests': block,
                    'cpu_us_per_request': cpu / block * 1e6})
    return rows


def hit_cost(pairs, block, size=HIT_SIZE):
    """Per GET of a ``size`` object through the SAIO's full (encrypting)
    proxy pipeline, in this process: proxy CPU (process_time), minor page
    faults and Redis commands, for a cache hit (TENANT pinned to the cache
    method, the pipeline with Mass) against the same GET answered by the
    object servers (the pipeline without Mass); blocks alternated in ABBA
    order, with the A/A control (two pipelines without Mass).  The Redis
    commands include every other process's (heartbeats): the blocks
    without Mass show that background."""
    import resource
    from swift.common.swob import Request
    apps, token, _small = load_pipelines(
        ('with', 'without', 'without again'), loop=False)
    path = '/v1/AUTH_test/mass-bench/large'
    body = os.urandom(size)
    resp = Request.blank(path, method='PUT', body=body, headers={
        'X-Auth-Token': token}).get_response(apps['without'])
    assert resp.status_int == 201, resp.status

    def gets(app, n):
        hits = 0
        for _ in range(n):
            resp = Request.blank(path, headers={
                'X-Auth-Token': token}).get_response(app)
            assert resp.status_int == 200 and resp.body == body, resp.status
            hits += resp.headers.get('X-Mass-Cache') == 'hit'
        return hits
    for app in apps.values():
        gets(app, 20)  # connections, info caches, the fill
    rows = {'mass': [], 'control': []}
    for comparison, modes in (('mass', ('with', 'without')),
                              ('control', ('without again', 'without'))):
        for order in abba(modes, pairs):
            for mode in order:
                calls = redis_calls()
                faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                cpu = time.process_time()
                hits = gets(apps[mode], block)
                cpu = time.process_time() - cpu
                faults = resource.getrusage(
                    resource.RUSAGE_SELF).ru_minflt - faults
                after = redis_calls()
                rows[comparison].append({
                    'mode': 'with' if mode != 'without' else 'without',
                    'requests': block, 'hits': hits,
                    'cpu_us_per_request': cpu / block * 1e6,
                    'page_faults_per_request': faults / block,
                    'redis_commands_per_request': (
                        (after - calls) / block
                        if None not in (calls, after) else None)})
    return rows


def print_hit_cost(rows, block, pairs):
    print('hit cost: blocks of %d GETs of %d KiB through the full SAIO '
          'proxy pipeline (encrypting), %d ABBA pairs of blocks; a hit '
          '(with Mass) against the object servers\' answer (without)'
          % (block, HIT_SIZE // 1024, pairs))
    result = {}
    for name, label in (('mass', 'hit / backend GET'),
                        ('control', 'A/A control, backend / backend')):
        runs = rows[name]
        figures = {}
        for key in ('cpu_us_per_request', 'page_faults_per_request',
                    'redis_commands_per_request'):
            for mode in ('with', 'without'):
                values = [r[key] for r in runs if r['mode'] == mode and
                          r[key] is not None]
                figures['%s_%s' % (mode, key)] = statistics.median(
                    values) if values else None
        figures['cpu_ratio'] = summary(runs, 'cpu_us_per_request', False)
        figures['hit_ratio'] = sum(r['hits'] for r in runs
                                   if r['mode'] == 'with') / float(
            sum(r['requests'] for r in runs if r['mode'] == 'with'))
        result[name] = dict(figures, runs=runs)
        print('  %s: CPU %s; median %.0f us against %.0f us; page faults '
              '%.0f against %.0f; Redis commands %.2f against %.2f; hits '
              '%.0f %%' % (
                  label, describe(figures['cpu_ratio']),
                  figures['with_cpu_us_per_request'],
                  figures['without_cpu_us_per_request'],
                  figures['with_page_faults_per_request'],
                  figures['without_page_faults_per_request'],
                  figures['with_redis_commands_per_request'] or 0,
                  figures['without_redis_commands_per_request'] or 0,
                  100 * figures['hit_ratio']))
    return result


def count_requests(mode, n):
    """Child of `instructions`: load one pipeline, send 20 + n GETs."""
    apps, token, path = load_pipelines([mode], loop=False)
    get_requests(apps[mode], token, path, 20 + n)


def instructions(small=50, large=250):
    """Instructions the proxy process executes per GET, with Mass and
    without (valgrind's callgrind counts instructions, not time: the same
    whatever else the machine does).  Per request: the difference between
    a run of `large` and one of `small` requests, over large - small, so
    start-up cancels out.  Mass's control loop is held (it costs per
    second, not per request: see `tick_cost`)."""
    rows = {}
    for mode in ('with', 'without'):
        counts = []
        for n in (small, large):
            with tempfile.TemporaryDirectory() as tmp:
                out = subprocess.run(
                    ['valgrind', '--tool=callgrind', '--callgrind-out-file='
                     + os.path.join(tmp, 'out')] + SELF +
                    ['--count-requests', mode, str(n)],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    text=True, check=True).stdout
            counts.append(int(out.split('Collected : ')[1].split()[0]))
        rows[mode] = (counts[1] - counts[0]) / float(large - small)
    return rows


def tick_cost(ticks=50):
    """CPU seconds of one control-loop tick of the SAIO's Mass (flush,
    table refresh, lease; the leader's decisions when it wins the lease),
    against the real shared store."""
    apps, token, path = load_pipelines(['with'], loop=False)
    mass = mass_of(apps['with'])
    costs = []
    for _ in range(ticks):
        get_requests(mass, token, path, 5)
        mass.agent.ticker.step()  # a tick due (load_pipelines holds them)
        cpu = time.process_time()
        mass.agent.tick()
        costs.append(time.process_time() - cpu)
    return {'median_ms': statistics.median(costs) * 1e3,
            'max_ms': max(costs) * 1e3,
            'leader': mass.agent.is_leader}


def mass_alone(pairs, requests_per_run):
    """CPU the mass filter itself adds to a request: MassMiddleware in
    front of an app that answers at once, against that app alone.  The
    store is worker-local so no network time is included; the counting,
    tagging and the control loop's work per request are."""
    from swift.common.swob import Request
    from swift_mass.proxy.middleware import MassMiddleware
    from swift_mass.control.stores.local import LocalStore

    def bare(env, start_response):
        start_response('200 OK', [('Content-Length', '4096')])
        return iter([b's' * 4096])

    apps = {'without': bare,
            'with': MassMiddleware(bare, {'store': 'local'},
                                   store=LocalStore())}
    env = Request.blank('/v1/AUTH_test/c/o', headers={
        'X-Auth-Token': 't'}).environ

    def run(app, n):
        for _ in range(n):
            status, headers, body = Request(dict(env)).call_application(app)
            for _chunk in body:
                pass
            close = getattr(body, 'close', None)
            if close:
                close()
    for app in apps.values():
        run(app, 1000)
    rows = []
    for mode in with_and_without(pairs):
        cpu = time.process_time()
        run(apps[mode], requests_per_run)
        cpu = time.process_time() - cpu
        rows.append({'mode': mode, 'requests': requests_per_run,
                     'cpu_us_per_request': cpu / requests_per_run * 1e6})
    return rows


# ----------------------------------------------------------- end to end

def end_to_end(pairs, seconds, clients):
    import requests
    from swiftclient.client import get_auth
    storage_url, token = get_auth(PROXY + '/auth/v1.0', 'test:tester',
                                  'testing', timeout=10)
    url = storage_url + '/mass-bench/small'
    headers = {'X-Auth-Token': token}
    requests.put(url.rsplit('/', 1)[0], headers=headers, timeout=10)
    requests.put(url, data=b's' * 4096, headers=headers, timeout=10)
    rows = []
    # then the A/A control: pairs of runs without Mass (the second of each
    # pair labelled 'with'), what two identical setups differ by here
    for i, mode in enumerate(with_and_without(pairs) * 2):
        control = i >= 2 * pairs
        subprocess.run([SAIO, 'pipeline', 'without' if control else mode],
                       check=True, stdout=subprocess.DEVNULL)
        latencies, errors = [], [0]
        lock = threading.Lock()
        stop = threading.Event()

        def client():
            session = requests.Session()
            while not stop.is_set():
                started = time.time()
                try:
                    ok = session.get(url, headers=headers,
                                     timeout=30).status_code == 200
                except requests.RequestException:
                    ok = False
                with lock:
                    if ok:
                        latencies.append(time.time() - started)
                    else:
                        errors[0] += 1
        threads = [threading.Thread(target=client) for _ in range(clients)]
        for thread in threads:
            thread.start()
        time.sleep(2)  # warm up
        with lock:
            latencies.clear()
        began = time.time()
        time.sleep(seconds)
        with lock:
            done = list(latencies)
        elapsed = time.time() - began
        stop.set()
        for thread in threads:
            thread.join()
        done.sort()
        rows.append({
            'mode': mode, 'control': control, 'requests': len(done),
            'errors': errors[0],
            'requests_per_s': len(done) / elapsed,
            'p50_ms': done[len(done) // 2] * 1000,
            'p99_ms': done[int(len(done) * 0.99)] * 1000})
    subprocess.run([SAIO, 'pipeline', 'with'], check=True,
                   stdout=subprocess.DEVNULL)
    return rows


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog='tools/bench-overhead',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--pairs', type=int, default=3)
    parser.add_argument('--requests', type=int, default=1000,
                        help='requests per run of the filter alone '
                        '(x20)')
    parser.add_argument('--blocks', type=int, default=30,
                        help='ABBA pairs of in-process blocks')
    parser.add_argument('--block', type=int, default=100,
                        help='GETs per in-process block')
    parser.add_argument('--seconds', type=float, default=15.0,
                        help='seconds per end-to-end run')
    parser.add_argument('--clients', type=int, default=4)
    parser.add_argument('--json', help='also write the results here')
    parser.add_argument('--skip', choices=('in-process', 'end-to-end'))
    parser.add_argument('--instructions', action='store_true',
                        help='also count instructions per request with '
                        'valgrind (about 5 minutes)')
    parser.add_argument('--hit-cost', action='store_true',
                        help='only the cost of a cache hit of a 512 KiB '
                        'object against a backend GET of it, in-process')
    parser.add_argument('--fill-cost', action='store_true',
                        help='only the cost of a cache fill (the first in '
                        'an era, and one under a sealed fence) against a '
                        'backend GET and a hit, in-process '
                        '(mass_bench.fill_cost); --blocks blocks of '
                        '--block objects')
    parser.add_argument('--count-requests', nargs=2,
                        help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.count_requests:
        count_requests(args.count_requests[0], int(args.count_requests[1]))
        return 0
    store = None
    if not os.environ.get(PINNED_ENV):
        store = pinned(CACHED if args.hit_cost or args.fill_cost
                       else NO_METHOD)
        os.environ[PINNED_ENV] = TENANT  # for the children
    try:
        if args.fill_cost:
            from mass_bench import fill_cost
            rows = fill_cost.fill_cost(args.blocks, args.block,
                                       load_pipelines, redis_calls)
            result = fill_cost.summarise(rows)
            print(fill_cost.format_summary(result, args.blocks, args.block))
            if args.json:
                with open(args.json, 'w') as fp:
                    json.dump(dict(result, rows=rows), fp, indent=2)
            return 0
        if args.hit_cost:
            result = print_hit_cost(hit_cost(args.blocks, args.block),
                                    args.block, args.blocks)
            if args.json:
                with open(args.json, 'w') as fp:
                    json.dump(result, fp, indent=2)
            return 0
        return measure(args)
    finally:
        if store is not None:
            store.delete_pin(TENANT)


def measure(args):
    """The comparisons ``--skip`` leaves, each printed; all of them
    written to ``--json`` too."""
    results = {}
    if args.skip != 'in-process' and args.skip != 'end-to-end':
        results.update(in_a_child(args))
    elif args.skip != 'in-process':
        results.update(measure_in_process(args))
    if args.skip != 'end-to-end':
        results['end_to_end'] = measure_end_to_end(args)
    if args.json:
        with open(args.json, 'w') as fp:
            json.dump(results, fp, indent=2)
    return 0


def in_a_child(args):
    """The in-process comparisons' results, run in a child process: they
    monkey-patch their process for eventlet, which would stall the
    end-to-end clients."""
    with tempfile.NamedTemporaryFile(suffix='.json') as tmp:
        subprocess.run(SELF + [
            '--skip', 'end-to-end', '--pairs', str(args.pairs),
            '--requests', str(args.requests), '--blocks',
            str(args.blocks), '--block', str(args.block), '--json',
            tmp.name] + (['--instructions'] if args.instructions
                         else []), check=True)
        with open(tmp.name) as fp:
            return json.load(fp)


def measure_in_process(args):
    """The in-process comparisons, printed: the mass filter alone, the
    SAIO's pipeline with Mass and without, one control-loop tick and,
    with ``--instructions``, instructions per GET."""
    results = {'mass_alone': mass_alone_results(args)}
    rows = in_process(args.blocks, args.block)
    results['in_process'] = {
        name: {'runs': runs,
               'cpu_ratio': summary(runs, 'cpu_us_per_request', False)}
        for name, runs in rows.items()}
    print('in-process: blocks of %d GETs of 4 KiB through the full SAIO '
          'proxy pipeline, %d ABBA pairs of blocks'
          % (args.block, args.blocks))
    for name, label in (('mass', 'with/without Mass'),
                        ('control', 'A/A control, without/without')):
        runs = results['in_process'][name]['runs']
        w = statistics.median(r['cpu_us_per_request'] for r in runs
                              if r['mode'] == 'with')
        wo = statistics.median(r['cpu_us_per_request'] for r in runs
                               if r['mode'] == 'without')
        results['in_process'][name]['added_cpu_us'] = w - wo
        print('  CPU per request, %s: %s; median %.0f us against %.0f '
              'us (%+.0f us)' % (
                  label, describe(results['in_process'][name][
                      'cpu_ratio']), w, wo, w - wo))
    tick = results['tick'] = tick_cost()
    print('control loop: one tick (every `interval` per worker) costs '
          '%.1f ms CPU (median; max %.1f; %s)' % (
              tick['median_ms'], tick['max_ms'],
              'as leader' if tick['leader'] else 'not leader'))
    if args.instructions:
        counts = results['instructions'] = instructions()
        print('instructions per GET in the proxy process (callgrind, '
              'control loop left out): with %.3f M, without %.3f M: '
              'ratio %.3f (%+.0f k)' % (
                  counts['with'] / 1e6, counts['without'] / 1e6,
                  counts['with'] / counts['without'],
                  (counts['with'] - counts['without']) / 1e3))
    return results


def mass_alone_results(args):
    """The mass filter alone (:func:`mass_alone`), printed."""
    rows = mass_alone(args.pairs, args.requests * 20)
    results = {'runs': rows,
               'cpu_ratio': summary(rows, 'cpu_us_per_request', False)}
    print('the mass filter alone: %d requests per run, in front of an '
          'app that answers at once' % (args.requests * 20))
    print('  %-8s %18s' % ('mode', 'CPU us/request'))
    for r in rows:
        print('  %-8s %18.1f' % (r['mode'], r['cpu_us_per_request']))
    w = statistics.median(r['cpu_us_per_request'] for r in rows
                          if r['mode'] == 'with')
    wo = statistics.median(r['cpu_us_per_request'] for r in rows
                           if r['mode'] == 'without')
    print('  CPU Mass adds per request: %.1f us (median with %.1f, '
          'without %.1f)' % (w - wo, w, wo))
    return results


def measure_end_to_end(args):
    """The end-to-end comparison (:func:`end_to_end`) and its A/A
    control, printed."""
    rows = end_to_end(args.pairs, args.seconds, args.clients)
    mass = [r for r in rows if not r['control']]
    control = [r for r in rows if r['control']]
    results = {
        'runs': rows,
        'throughput_ratio': summary(mass, 'requests_per_s', True),
        'p50_ratio': summary(mass, 'p50_ms', False),
        'control_throughput_ratio': summary(control, 'requests_per_s',
                                            True),
        'control_p50_ratio': summary(control, 'p50_ms', False)}
    print('end to end: %d clients, GETs of 4 KiB, %.0f s per run'
          % (args.clients, args.seconds))
    print('  %-8s %10s %8s %8s %8s' % ('mode', 'req/s', 'p50 ms',
                                       'p99 ms', 'errors'))
    for r in rows:
        print('  %-8s %10.1f %8.1f %8.1f %8d' % (
            'without' if r['control'] else r['mode'],
            r['requests_per_s'], r['p50_ms'], r['p99_ms'],
            r['errors']))
    for name in ('throughput_ratio', 'p50_ratio'):
        print('  %s with/without Mass: %s' % (
            name.replace('_', ' '), describe(results[name])))
        print('  %s A/A control, without/without: %s' % (
            name.replace('_', ' '), describe(results['control_' + name])))
    return results


if __name__ == '__main__':
    sys.exit(main())
