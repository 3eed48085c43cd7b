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
"""Mass's control loop at scale: the real Agent, controller and RedisStore
against a real Redis, with synthetic tenants (no mocks).

It starts a redis-server of its own on a free port (or uses --redis-url,
under a key prefix of its own, deleted afterwards) and, for each count of
tenants (1,000, 10,000 and 100,000; --quick: the first two), all of them
known (in the policy table), measures:

* spread ``realistic``: each interval, half as many requests as tenants,
  spread over the tenants by a Zipf law (--zipf-s): most tenants idle, a
  tail of busy ones; a window's worth of intervals first, then
  ``--repeats`` measured ones;
* spread ``worst``: every tenant makes 10 requests in the interval (and
  none in the rest of the window);
* spread ``worst-new``: as worst, with the table empty and min_requests
  10, so that the leader gives every tenant a new entry in one tick;

and in each: one worker's flush (CPU and wall seconds, of which its
statsd metrics, Agent.emit_metrics; Redis commands, bytes and round
trips), the leader's tick (the same), a worker's tick that is not the
leader's (per interval: what each worker costs Redis), a worker loading
the whole table, and a one-entry change reaching a worker (a delta).
Then: the CPU of a request through the real MassMiddleware with a table of
10 tenants and of all of them (ABBA blocks), the per-request cost of
``Agent.policy`` and ``Agent.record`` with 10 tenants and with all of them
(timeit), the memory a worker's table takes (tracemalloc; and the RSS of a
process of its own), the Redis round
trips a request costs by its tenant's method (through the real
MassMiddleware, in front of an app that answers at once), and
``--processes`` worker processes (multiprocessing, each an Agent ticking
as a proxy worker's loop does) sharing the Redis with the largest table:
how long after the leader wrote a change every one of them holds it, and
how long the lease takes to reach another one after the leader process is
SIGKILLed (both in intervals).

Redis commands run are counted by Redis (INFO commandstats: every
command, those scripts run included), commands sent by the client
(redis-py's, each of a pipeline's), bytes by Redis (total_net_input_bytes
and total_net_output_bytes), round trips by the client (every send of a
command or of a pipeline by redis-py); each figure is the median over
--repeats.  CPU is this process's
(process_time); the machine's other load shows in the wall times.

Prints a table and writes --json.
"""
import argparse
import collections
import itertools
import json
import multiprocessing
import os
import queue
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import timeit
import tracemalloc
import uuid
import warnings

from mass_bench.ratios import abba, median


# this module's launcher, for a process of its own
LAUNCHER = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'tools', 'bench-scale')
SIZES = (1000, 10000, 100000)
QUICK_SIZES = (1000, 10000)
SPREADS = ('realistic', 'worst', 'worst-new')
INTERVAL = 5.0
BUCKET_SECONDS = 5


# ------------------------------------------------------- pure functions

def zipf_weights(n, s):
    """The cumulative weights of a Zipf law over ranks 1..n (exponent
    ``s``): what random.choices takes as cum_weights."""
    return list(itertools.accumulate(1.0 / (rank ** s)
                                     for rank in range(1, n + 1)))


def spread(kind, tenants, rng, cum_weights=None, per_tenant=10):
    """``{tenant index: requests}`` of one interval: ``worst``, every
    tenant ``per_tenant``; ``realistic``, ``tenants // 2`` requests drawn
    by the Zipf law of ``cum_weights`` (busiest first), the tenants' ranks
    shuffled by ``rng``."""
    if kind in ('worst', 'worst-new'):
        return dict.fromkeys(range(tenants), per_tenant)
    if cum_weights is None or len(cum_weights) != tenants:
        raise ValueError('realistic needs the cumulative weights of '
                         '%d tenants' % tenants)
    ranks = rng.choices(range(tenants), cum_weights=cum_weights,
                        k=max(1, tenants // 2))
    return dict(collections.Counter(ranks))


def tenant_name(index):
    return 'AUTH_%08x' % index


def profile(index):
    """A tenant's workload: reader, writer or mixed (by its index)."""
    return ('read', 'read', 'write', 'mixed')[index % 4]


def fmt(value, digits=3):
    """A figure for the table: '-' for none, thousands separated."""
    if value is None:
        return '-'
    if isinstance(value, int) or (isinstance(value, float) and
                                  value >= 1000):
        return '{:,.0f}'.format(value)
    return '%.*f' % (digits, value)


def format_table(rows, columns):
    """A plain text table: ``columns`` are ``(key, heading)``, ``rows``
    dicts; numbers right-aligned."""
    cells = [[heading for _key, heading in columns]]
    for row in rows:
        cells.append([row[key] if isinstance(row.get(key), str)
                      else fmt(row.get(key)) for key, _heading in columns])
    widths = [max(len(line[i]) for line in cells)
              for i in range(len(columns))]
    lines = []
    for n, line in enumerate(cells):
        lines.append('  '.join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths))))
        if n == 0:
            lines.append('  '.join('-' * width for width in widths))
    return '\n'.join(lines)


def in_intervals(seconds, interval):
    return None if seconds is None else seconds / float(interval)


# ------------------------------------------------------------- redis

def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class RedisServer(object):
    """A redis-server of this run's own, on a free port, in the
    foreground of a child process (stopped by its pid)."""

    def __init__(self, binary='redis-server'):
        self.dir = tempfile.mkdtemp(prefix='bench-scale-redis-')
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, '--port', str(self.port), '--bind', '127.0.0.1',
             '--save', '', '--appendonly', 'no', '--dir', self.dir,
             '--logfile', os.path.join(self.dir, 'redis.log')],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = 'redis://127.0.0.1:%d/0' % self.port
        import redis
        client = redis.Redis.from_url(self.url)
        deadline = time.time() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Trips(object):
    """Round trips of every redis-py connection of this process (each
    send of a packed command or pipeline is one), and the commands they
    carried."""

    count = 0
    commands = 0

    @classmethod
    def install(cls):
        from redis.client import Pipeline, Redis
        from redis.connection import AbstractConnection
        send = AbstractConnection.send_packed_command
        command = Redis._execute_command
        pipeline = Pipeline.execute

        def send_packed_command(self, packed, check_health=True):
            cls.count += 1
            return send(self, packed, check_health)

        def execute_command(self, *args, **options):
            cls.commands += 1
            return command(self, *args, **options)

        def execute(self, *args, **kwargs):
            cls.commands += len(self.command_stack)
            return pipeline(self, *args, **kwargs)
        AbstractConnection.send_packed_command = send_packed_command
        Redis._execute_command = execute_command
        Pipeline.execute = execute


class Meter(object):
    """What a piece of work costs: CPU and wall seconds here, and in
    Redis commands run (INFO commandstats, scripts' included), commands
    sent and round trips (Trips), bytes in and out of Redis, Redis CPU
    seconds.  The INFO calls' own cost is taken out."""

    def __init__(self, url):
        import redis
        self.client = redis.Redis.from_url(url, decode_responses=True)

    def _server(self):
        info = self.client.info('all')
        return {
            'commands': sum(v['calls'] for k, v in info.items()
                            if k.startswith('cmdstat_')),
            'bytes_in': info['total_net_input_bytes'],
            'bytes_out': info['total_net_output_bytes'],
            'redis_cpu_s': info['used_cpu_user'] + info['used_cpu_sys'],
        }

    def measure(self, work):
        """``(result, figures)`` of ``work()``."""
        # what an INFO costs, taken just before: INFO's size grows with
        # the kinds of commands Redis has seen
        calibration = self._server()
        before = self._server()
        overhead = {key: before[key] - calibration[key] for key in before}
        trips, sent = Trips.count, Trips.commands
        cpu, wall = time.process_time(), time.time()
        result = work()
        cpu, wall = time.process_time() - cpu, time.time() - wall
        trips, sent = Trips.count - trips, Trips.commands - sent
        after = self._server()
        figures = {key: after[key] - before[key] for key in before}
        for key in ('commands', 'bytes_in', 'bytes_out'):
            figures[key] -= overhead[key]
        figures.update(cpu_s=cpu, wall_s=wall, round_trips=trips,
                       commands_sent=sent)
        return result, figures


def fresh_prefix():
    return 'mass-bench-scale-%s:' % uuid.uuid4().hex[:8]


def delete_prefix(url, prefix):
    import redis
    client = redis.Redis.from_url(url)
    batch = []
    for key in client.scan_iter(match=prefix + '*', count=10000):
        batch.append(key)
        if len(batch) >= 5000:
            client.unlink(*batch)
            batch = []
    if batch:
        client.unlink(*batch)


# ------------------------------------------------------- the workload

class Logger(object):
    """Swift's statsd half (a StatsdClient: to a local UDP sink with
    ``statsd_port``, else one with no host, what a proxy without statsd
    pays); log lines go nowhere."""

    def __init__(self, statsd_port=None):
        import swift.common.utils  # noqa: F401 (before statsd_client)
        from swift.common.statsd_client import get_statsd_client
        conf = {}
        if statsd_port:
            conf = {'log_statsd_host': '127.0.0.1',
                    'log_statsd_port': str(statsd_port)}
        self.statsd = get_statsd_client(conf, tail_prefix='mass')
        self.update_stats = self.statsd.update_stats
        self.increment = self.statsd.increment

    def _nothing(self, *args, **kwargs):
        pass

    info = warning = error = debug = exception = _nothing


class Clock(object):
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


REQUESTS = None


def request_kinds():
    """The counter deltas of a few requests of each workload (the real
    monitor.request_counts), drawn from for every simulated request."""
    global REQUESTS
    if REQUESTS is None:
        from swift_mass.control import monitor
        get = [monitor.request_counts('GET', 200, 0, 4096, ms / 1000.0, 4096)
               for ms in (2, 4, 8, 15, 40)]
        put = [monitor.request_counts('PUT', 201, 4096, 0, ms / 1000.0, 4096)
               for ms in (8, 20, 60)]
        head = [monitor.request_counts('HEAD', 204, 0, 0, 0.002)]
        REQUESTS = {'read': get * 4 + head + put[:1],
                    'write': put * 6 + get[:1],
                    'mixed': get + put + head}
    return REQUESTS


def record(agent, requests, rng):
    """Each tenant's requests of ``requests`` ({index: count}) recorded
    in the agent's window, as the proxy does per request."""
    kinds = request_kinds()
    for index, count in requests.items():
        tenant = tenant_name(index)
        choices = kinds[profile(index)]
        for _ in range(count):
            agent.record(tenant, choices[rng.randrange(len(choices))])


def known_table(tenants, now, settings):
    """An entry for every tenant, decided an hour ago and validated."""
    from swift_mass.control import controller
    table = {}
    for index in range(tenants):
        entry = controller.new_entry(profile(index), settings, now - 3600,
                                     'bench-scale')
        entry.validated = True
        table[tenant_name(index)] = entry
    return table


class Setup(object):
    """A store prefix with a table, a worker, a leader and a clock."""

    def __init__(self, args, url, tenants, spread_kind, logger):
        from swift_mass.control import classify, controller
        from swift_mass.control.agent import Agent
        from swift_mass.control.stores.redis_store import RedisStore
        from swift_mass.generations.core import Generations
        self.url, self.tenants, self.kind = url, tenants, spread_kind
        self.timeout_ms = args.timeout_ms
        self.prefix = fresh_prefix()
        self.clock = Clock(float(int(time.time()) // BUCKET_SECONDS *
                                 BUCKET_SECONDS))
        settings = controller.DEFAULT_SETTINGS
        if spread_kind == 'worst-new':
            settings = settings._replace(
                thresholds=classify.DEFAULT_THRESHOLDS._replace(
                    min_requests=10))
        self.settings = settings

        def store():
            # a bench's Redis may be busy: no breaker here
            return RedisStore(url, prefix=self.prefix,
                              socket_timeout_ms=args.timeout_ms,
                              connect_timeout_ms=args.timeout_ms)

        def agent(owner, generations=None):
            return Agent(store(), settings, owner, logger,
                         interval=INTERVAL, bucket_seconds=BUCKET_SECONDS,
                         clock=self.clock, generations=generations)
        self.agent = agent
        self.worker = agent('bench-worker')
        # the leader publishes the tenants whose writes the object servers
        # bump (cache and merge: half of them), as a proxy's does
        self.leader = agent('bench-leader', Generations(
            url, logger, prefix=self.prefix + 'cache:',
            timeout=args.timeout_ms / 1000.0))
        if spread_kind != 'worst-new':
            table = known_table(tenants, self.clock.now, settings)
            self.worker.store.update_table(None, table, list(table))
        # the leader holds the lease; the worker never takes it
        self.leader.tick()
        self.worker.tick()

    def next_interval(self, seconds=INTERVAL):
        self.clock.now += seconds
        for agent in (self.worker, self.leader):
            agent._next_tick = 0

    def close(self):
        delete_prefix(self.url, self.prefix)


def flush_figures(meter, agent):
    """The worker's flush, as its tick makes it (the collector paused),
    with the CPU of its statsd metrics apart."""
    from swift_mass.control.agent import collector_paused
    spent = [0.0]
    real = agent.emit_metrics

    def emit(pending):
        cpu = time.process_time()
        real(pending)
        spent[0] += time.process_time() - cpu
    agent.emit_metrics = emit

    def flush():
        with collector_paused():
            agent.flush()
    try:
        _, figures = meter.measure(flush)
    finally:
        agent.emit_metrics = real
    figures['metrics_cpu_s'] = spent[0]
    return figures


def run_spread(args, url, meter, tenants, kind, rng, cum_weights, logger):
    """The repeats of one (tenants, spread): a list of figures each."""
    runs = []
    setups = []
    try:
        setup = None
        for repeat in range(args.repeats):
            if setup is None or kind == 'worst-new':
                setup = Setup(args, url, tenants, kind, logger)
                setups.append(setup)
            run = {}
            if kind == 'realistic':
                # a window's worth of intervals first, then one per repeat
                intervals = (setup.settings.window // BUCKET_SECONDS
                             if repeat == 0 else 1)
                for _ in range(intervals):
                    setup.next_interval()
                    record(setup.worker, spread(kind, tenants, rng,
                                                cum_weights), rng)
                    if _ < intervals - 1:
                        setup.worker.flush()
                        setup.leader.tick()
            else:
                # the window's other buckets are behind it: only this
                # interval's requests count
                setup.next_interval(setup.settings.window + INTERVAL)
                record(setup.worker, spread(kind, tenants, rng), rng)
            active = len(setup.worker.window)
            run['flush'] = flush_figures(meter, setup.worker)
            run['flush']['tenants_flushed'] = active
            _, run['leader'] = meter.measure(setup.leader.tick)
            run['leader']['entries_written'] = None
            # a worker's tick that is not the leader's: nothing pending
            # but the decisions' delta, if any (in worst-new, the whole
            # table): what each worker costs Redis per interval
            setup.worker._next_tick = 0
            _, run['worker_tick'] = meter.measure(setup.worker.tick)
            # a one-entry change reaching a worker
            tenant = tenant_name(rng.randrange(tenants))
            setup.worker.store.set_pin(tenant, {'class': 'write',
                                                'method': 'batch'})
            setup.leader._next_tick = 0
            setup.leader.tick()
            _, run['delta'] = meter.measure(setup.worker.refresh)
            run['delta']['fetched'] = tenant in setup.worker.table and \
                setup.worker.table[tenant].pinned
            setup.worker.store.delete_pin(tenant)
            setup.leader._next_tick = 0
            setup.leader.tick()
            setup.worker.refresh()
            # a worker loading the whole table (a new one, or one whose
            # state the change log no longer reaches)
            fresh = setup.agent('bench-fresh')
            _, run['whole_load'] = meter.measure(fresh.refresh)
            run['whole_load']['entries'] = len(fresh.table)
            runs.append(run)
            print('  %d tenants, %s, repeat %d: flush %.3f s CPU (%d '
                  'tenants), leader tick %.3f s CPU' % (
                      tenants, kind, repeat + 1, run['flush']['cpu_s'],
                      active, run['leader']['cpu_s']), flush=True)
        return runs, setups[-1]
    finally:
        for setup in setups[:-1]:
            setup.close()


def summarise(runs):
    """The median of each figure over the runs."""
    out = {}
    for part in runs[0]:
        out[part] = {key: median([run[part].get(key) for run in runs])
                     for key in runs[0][part]
                     if not isinstance(runs[0][part][key], (str, bool))}
    return out


# ----------------------------------------------- per request, memory

def per_request(setup, tenants, repeat=5, number=200000):
    """Nanoseconds per Agent.policy and Agent.record call, with a table
    and a window of 10 tenants and of ``tenants``."""
    from swift_mass.control import controller
    from swift_mass.control.agent import Agent
    from swift_mass.control.entry import PolicyEntry
    results = {}
    counts = request_kinds()['read'][0]
    for size in (10, tenants):
        agent = Agent(setup.worker.store, controller.DEFAULT_SETTINGS,
                      'bench-request', Logger(), clock=setup.clock)
        agent.table = {tenant_name(i): PolicyEntry('read', method='none')
                       for i in range(size)}
        names = [tenant_name(i) for i in random.Random(size).choices(
            range(size), k=1024)]
        for i in range(size):  # a window holding every tenant
            agent.record(tenant_name(i), counts)
        cycle = itertools.cycle(names)
        policy = min(timeit.repeat(lambda: agent.policy(next(cycle)),
                                   number=number, repeat=repeat)) / number
        record = min(timeit.repeat(
            lambda: agent.record(next(cycle), counts), number=number,
            repeat=repeat)) / number
        results[size] = {'policy_ns': policy * 1e9,
                         'record_ns': record * 1e9}
    small, large = results[10], results[tenants]
    return {'10': small, str(tenants): large,
            'policy_ratio': large['policy_ns'] / small['policy_ns'],
            'record_ratio': large['record_ns'] / small['record_ns']}


def _rss():
    with open('/proc/self/statm') as fp:
        return int(fp.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def rss_child(url, prefix, timeout_ms):
    """In a process of its own (--rss-child): the RSS a worker gains by
    loading the table whole, printed as JSON."""
    import gc
    from swift_mass.control import controller
    from swift_mass.control.agent import Agent
    from swift_mass.control.stores.redis_store import RedisStore
    agent = Agent(RedisStore(url, prefix=prefix, socket_timeout_ms=timeout_ms,
                             connect_timeout_ms=timeout_ms),
                  controller.DEFAULT_SETTINGS, 'bench-rss', Logger())
    agent.store.table_version()  # connected, scripts' module loaded
    gc.collect()
    before = _rss()
    agent.refresh()
    gc.collect()
    print(json.dumps({'rss_added_bytes': _rss() - before,
                      'entries': len(agent.table)}))


def table_memory(setup):
    """Bytes a worker's table of every tenant takes: the Python objects
    it holds (tracemalloc, while a fresh worker loads it whole), and the
    RSS a new worker process (no tracemalloc) gains by loading it."""
    fresh = setup.agent('bench-memory')
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        fresh.refresh()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    held = sum(stat.size_diff for stat in after.compare_to(before,
                                                           'filename'))
    entries = len(fresh.table)
    del fresh
    child = json.loads(subprocess.run(
        [sys.executable, LAUNCHER, '--rss-child',
         setup.url, setup.prefix, str(setup.timeout_ms)],
        stdout=subprocess.PIPE, check=True, text=True).stdout)
    return {'entries': entries, 'bytes': held,
            'bytes_per_tenant': held / float(entries or 1),
            'rss_added_bytes': child['rss_added_bytes']}


def _app(env, start_response):
    """The app right of Mass: answers at once."""
    from swift.common.swob import Response
    body = b'' if env['REQUEST_METHOD'] in ('PUT', 'HEAD') else b'x' * 512
    status = 201 if env['REQUEST_METHOD'] == 'PUT' else 200
    return Response(status=status, body=body, headers={
        'X-Timestamp': '%.5f' % time.time(),
        'Etag': '"%s"' % uuid.uuid4().hex})(env, start_response)


def _middleware(url, prefix):
    """The real MassMiddleware in front of _app, its store Redis under
    ``prefix``, without its control loop (per interval, not per
    request)."""
    from swift_mass.control.stores.redis_store import RedisStore
    from swift_mass.proxy.middleware import MassMiddleware
    mass = MassMiddleware(_app, {'redis_url': url}, logger=Logger(),
                          store=RedisStore(url, prefix=prefix))
    mass._loop_pid = os.getpid()  # no control loop
    mass.methods.cache.validity_check.devices = lambda: set()
    return mass


def proxy_requests(url, tenants, blocks=12, block=2000):
    """CPU per request through the MassMiddleware (tagging, the policy
    lookup, counting; the app right of it answers at once) with a table
    of 10 tenants and of ``tenants``: the same requests, of 10 tenants
    that both tables hold (what a request costs that depends on the
    number of tenants active, such as each one's first urgent-mark lookup,
    is left out: only the table's size differs), the collector on; blocks
    alternated ABBA, medians."""
    from swift.common.swob import Request
    from swift_mass.control import controller
    prefix = fresh_prefix()
    mass = _middleware(url, prefix)
    rng = random.Random(tenants)
    tables = {}
    for size in (10, tenants):
        tables[size] = known_table(size, time.time(),
                                   controller.DEFAULT_SETTINGS)
        for entry in tables[size].values():
            entry.method = 'none'
    base = Request.blank('/v1/AUTH_x/c/o').environ
    requests = [dict(base, PATH_INFO='/v1/%s/c/o' % tenant_name(i))
                for i in rng.choices(range(10), k=block)]
    envs = {10: requests, tenants: requests}

    def start_response(status, headers, exc_info=None):
        pass

    def run(size):
        for env in envs[size]:
            for _chunk in mass(dict(env), start_response):
                pass
    cpu = {10: [], tenants: []}
    try:
        run(10)
        for order in abba((10, tenants), blocks):
            for size in order:
                mass.agent.table = tables[size]
                started = time.process_time()
                run(size)
                cpu[size].append((time.process_time() - started) / block)
    finally:
        delete_prefix(url, prefix)
    small, large = median(cpu[10]), median(cpu[tenants])
    return {'10_us': small * 1e6, '%d_us' % tenants: large * 1e6,
            'ratio': large / small}


def per_request_redis(url, requests=200):
    """Redis round trips per request through the real MassMiddleware (no
    control loop: that is per interval), by the method of the tenant's
    policy, GETs and PUTs of small objects, in front of an app that
    answers at once."""
    from swift.common.swob import Request
    from swift_mass.control.entry import PolicyEntry
    prefix = fresh_prefix()
    mass = _middleware(url, prefix)
    results = {}
    try:
        for method in ('unclassified', 'none', 'batch', 'cache', 'merge'):
            tenant = 'AUTH_kind_%s' % method
            if method != 'unclassified':
                mass.agent.table[tenant] = PolicyEntry(
                    'read', substore='', method=method)
            for verb in ('GET', 'PUT'):
                def send():
                    for i in range(requests):
                        req = Request.blank('/v1/%s/c/o%d' % (tenant, i % 20),
                                            method=verb, body=b'y' * 512
                                            if verb == 'PUT' else None)
                        resp = req.get_response(mass)
                        resp.body
                trips = Trips.count
                send()
                results['%s %s' % (method, verb)] = \
                    (Trips.count - trips) / float(requests)
    finally:
        delete_prefix(url, prefix)
        delete_prefix(url, prefix + 'cache:')
    return results


# ------------------------------------------------------- processes

def _worker_process(url, prefix, interval, index, reports, timeout_ms,
                    phase):
    """A proxy worker's control loop (what MassMiddleware._run_loop does,
    without eventlet), started ``phase`` seconds late (workers start
    serving, and so ticking, at different times): an Agent ticking,
    reporting each new table state (and whether it leads) with the
    time."""
    from swift_mass.control import controller
    from swift_mass.control.agent import Agent
    from swift_mass.control.stores.redis_store import RedisStore
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    store = RedisStore(url, prefix=prefix, socket_timeout_ms=timeout_ms,
                       connect_timeout_ms=timeout_ms)
    agent = Agent(store, controller.DEFAULT_SETTINGS,
                  'bench-%d-%d' % (index, os.getpid()), Logger(),
                  interval=interval, bucket_seconds=BUCKET_SECONDS)
    state = None
    time.sleep(phase)
    while True:
        try:
            agent.tick()
        except Exception as err:
            reports.put((index, os.getpid(), 'error', repr(err), 0,
                         time.time(), False))
        now = (agent.table_id, agent.table_version)
        if now != state:
            state = now
            reports.put((index, os.getpid(), agent.table_id,
                         agent.table_version, len(agent.table), time.time(),
                         agent.is_leader))
        time.sleep(min(1.0, interval))


def processes(args, url, tenants, logger):
    """``args.processes`` worker processes sharing one Redis and a table
    of ``tenants``: a change's delay to every one of them, and leader
    failover after SIGKILL (at the worst moment: just after the leader
    renewed its lease), in intervals."""
    from swift_mass.control import controller
    from swift_mass.control.agent import Agent
    from swift_mass.control.stores.redis_store import RedisStore
    interval = args.process_interval
    prefix = fresh_prefix()
    store = RedisStore(url, prefix=prefix, socket_timeout_ms=args.timeout_ms,
                       connect_timeout_ms=args.timeout_ms)
    table = known_table(tenants, time.time(), controller.DEFAULT_SETTINGS)
    store.update_table(None, table, list(table))
    del table
    context = multiprocessing.get_context('fork')
    reports = context.Queue()
    children = {}
    latest = {}  # index: (table_id, version, entries, when, leading)
    errors = []

    def drain(timeout=0.05):
        try:
            while True:
                index, pid, table_id, version, entries, when, leading = \
                    reports.get(timeout=timeout)
                if table_id == 'error':
                    errors.append(version)
                    continue
                latest[index] = (table_id, version, entries, when, leading)
                timeout = 0
        except queue.Empty:
            pass

    def wait_for(check, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            drain()
            if check():
                return True
        return False

    result = {'processes': args.processes, 'tenants': tenants,
              'interval_s': interval, 'propagation': [], 'failover': []}
    try:
        started = time.time()
        phases = random.Random(args.seed)
        for index in range(args.processes):
            proc = context.Process(target=_worker_process, args=(
                url, prefix, interval, index, reports, args.timeout_ms,
                phases.uniform(0, interval)), daemon=True)
            proc.start()
            children[index] = proc
        if not wait_for(lambda: len(latest) == args.processes and all(
                state[2] == tenants for state in latest.values()), 600):
            raise RuntimeError('the workers did not all load the table')
        result['startup_s'] = time.time() - started
        print('  %d processes hold the table of %d tenants after %.1f s'
              % (args.processes, tenants, result['startup_s']), flush=True)
        alive = dict(children)
        for trial in range(args.trials):
            # a change: a pin the leader (one of the workers) decides
            tenant = tenant_name(trial)
            version = store.table_version()
            store.set_pin(tenant, {'class': 'write', 'method': 'batch'})
            while store.table_version() == version:
                time.sleep(0.01)
            written = time.time()
            new = store.table_version()

            def everyone():
                return all(latest[i][1] >= new for i in alive)
            wait_for(everyone, 10 * interval)
            delays = [latest[i][3] - written for i in alive
                      if latest[i][1] >= new]
            result['propagation'].append({
                'workers': len(alive), 'reached': len(delays),
                'max_s': max(delays) if delays else None,
                'max_intervals': in_intervals(max(delays) if delays else None,
                                              interval)})
            # failover: SIGKILL the leader's process at the worst moment,
            # just after it renewed its lease (within 0.2 s)
            lease_ms = interval * Agent.LEASE_INTERVALS * 1000
            deadline = time.time() + 3 * interval
            while time.time() < deadline:
                left = store.client.pttl(store._key('leader'))
                if left >= lease_ms - 200:
                    break
                time.sleep(0.005)
            holder = store.lease_holder()
            victim = int(holder.split('-')[1])
            os.kill(alive[victim].pid, signal.SIGKILL)
            killed = time.time()
            alive.pop(victim).join()
            took = None
            while time.time() - killed < 10 * interval:
                now = store.lease_holder()
                if now is not None and now != holder:
                    took = time.time() - killed
                    break
                time.sleep(0.01)
            result['failover'].append({
                'killed': holder, 'new_leader': now, 'seconds': took,
                'intervals': in_intervals(took, interval),
                'lease_left_s': left / 1000.0})
            print('  trial %d: a change reached %d/%d workers within %.2f '
                  'intervals; leader %s killed (its lease had %.1f s '
                  'left), lease taken after %s intervals' % (
                      trial + 1, len(delays), len(alive) + 1,
                      result['propagation'][-1]['max_intervals'] or -1,
                      holder, left / 1000.0,
                      fmt(in_intervals(took, interval), 2)), flush=True)
            wait_for(lambda: False, interval)  # let the new leader settle
    finally:
        for proc in children.values():
            if proc.is_alive():
                os.kill(proc.pid, signal.SIGTERM)
        for proc in children.values():
            proc.join(10)
        delete_prefix(url, prefix)
    result['errors'] = errors[:10]
    result['propagation_max_intervals'] = max(
        (p['max_intervals'] or 0) for p in result['propagation']) \
        if result['propagation'] else None
    result['failover_max_intervals'] = max(
        (f['intervals'] or float('inf')) for f in result['failover']) \
        if result['failover'] else None
    return result


# ------------------------------------------------------------- main

COLUMNS = [
    ('label', 'tenants, spread'),
    ('flush_tenants', 'flushed'),
    ('flush_cpu', 'flush CPU s'),
    ('flush_metrics', 'of it metrics'),
    ('flush_wall', 'flush wall s'),
    ('flush_commands', 'cmds run'),
    ('flush_sent', 'cmds sent'),
    ('flush_trips', 'trips'),
    ('flush_kb_in', 'KiB in'),
    ('flush_redis_cpu', 'Redis CPU s'),
    ('leader_cpu', 'leader CPU s'),
    ('leader_wall', 'leader wall s'),
    ('leader_commands', 'leader cmds'),
    ('leader_sent', 'sent'),
    ('leader_trips', 'leader trips'),
    ('leader_kb_out', 'leader KiB out'),
]
COLUMNS2 = [
    ('label', 'tenants, spread'),
    ('tick_commands', 'worker tick cmds'),
    ('tick_sent', 'sent'),
    ('tick_trips', 'trips'),
    ('tick_kb', 'KiB in+out'),
    ('delta_cpu', 'delta CPU s'),
    ('delta_wall', 'delta wall s'),
    ('delta_kb', 'delta KiB out'),
    ('delta_trips', 'delta trips'),
    ('whole_cpu', 'whole load CPU s'),
    ('whole_wall', 'whole load wall s'),
    ('whole_kb', 'whole load KiB out'),
]


def row(tenants, kind, s):
    f, lead, tick, delta, whole = (s['flush'], s['leader'],
                                   s['worker_tick'], s['delta'],
                                   s['whole_load'])
    return {
        'label': '{:,} {}'.format(tenants, kind),
        'flush_tenants': f['tenants_flushed'], 'flush_cpu': f['cpu_s'],
        'flush_metrics': f['metrics_cpu_s'], 'flush_wall': f['wall_s'],
        'flush_commands': f['commands'], 'flush_sent': f['commands_sent'],
        'flush_trips': f['round_trips'], 'flush_kb_in': f['bytes_in'] / 1024,
        'flush_redis_cpu': f['redis_cpu_s'],
        'leader_cpu': lead['cpu_s'], 'leader_wall': lead['wall_s'],
        'leader_commands': lead['commands'],
        'leader_sent': lead['commands_sent'],
        'leader_trips': lead['round_trips'],
        'leader_kb_out': lead['bytes_out'] / 1024,
        'tick_commands': tick['commands'], 'tick_sent': tick['commands_sent'],
        'tick_trips': tick['round_trips'],
        'tick_kb': (tick['bytes_in'] + tick['bytes_out']) / 1024,
        'delta_cpu': delta['cpu_s'], 'delta_wall': delta['wall_s'],
        'delta_kb': delta['bytes_out'] / 1024,
        'delta_trips': delta['round_trips'],
        'whole_cpu': whole['cpu_s'], 'whole_wall': whole['wall_s'],
        'whole_kb': whole['bytes_out'] / 1024,
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog='tools/bench-scale',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--sizes', default=None,
                        help='comma-separated tenant counts (default '
                        '1000,10000,100000)')
    parser.add_argument('--quick', action='store_true',
                        help='1,000 and 10,000 tenants only')
    parser.add_argument('--spreads', default=','.join(SPREADS))
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--zipf-s', type=float, default=1.2)
    parser.add_argument('--processes', type=int, default=16,
                        help='worker processes sharing the Redis (0: '
                        'none)')
    parser.add_argument('--process-interval', type=float, default=5.0,
                        help='their interval, seconds (results are in '
                        'intervals)')
    parser.add_argument('--trials', type=int, default=3,
                        help='changes and leader kills')
    parser.add_argument('--statsd', action='store_true',
                        help='statsd counters to a local UDP socket (by '
                        'default: a client with no host, what a proxy '
                        'without statsd pays)')
    parser.add_argument('--redis-url',
                        help='use this Redis (keys under a prefix of '
                        'their own, deleted after) instead of starting '
                        'one')
    parser.add_argument('--redis-server', default='redis-server')
    parser.add_argument('--timeout-ms', type=int, default=5000,
                        help='the stores\' Redis timeout')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--json', help='write the results here')
    parser.add_argument('--rss-child', nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sizes:
        args.sizes = tuple(int(s.replace('_', '')) for s in
                           args.sizes.split(','))
    else:
        args.sizes = QUICK_SIZES if args.quick else SIZES
    args.spreads = tuple(s.strip() for s in args.spreads.split(','))
    for kind in args.spreads:
        if kind not in SPREADS:
            parser.error('--spreads: %r; allowed: %s'
                         % (kind, ', '.join(SPREADS)))
    if args.repeats < 1:
        parser.error('--repeats: at least 1')
    return args


def main(argv=None):
    args = parse_args(argv)
    warnings.simplefilter('ignore')
    if args.rss_child:
        url, prefix, timeout_ms = args.rss_child
        rss_child(url, prefix, int(timeout_ms))
        return 0
    Trips.install()
    server = None
    sink = None
    if args.redis_url:
        url = args.redis_url
    else:
        server = RedisServer(args.redis_server)
        url = server.url
        print('redis-server on port %d' % server.port, flush=True)
    rng = random.Random(args.seed)
    results = {'args': {k: v for k, v in vars(args).items()},
               'machine': {'cpus': os.cpu_count(),
                           'python': sys.version.split()[0]},
               'runs': {}}
    rows = []
    try:
        statsd_port = None
        if args.statsd:
            sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sink.bind(('127.0.0.1', 0))
            statsd_port = sink.getsockname()[1]
        logger = Logger(statsd_port)
        meter = Meter(url)
        for tenants in args.sizes:
            cum_weights = zipf_weights(tenants, args.zipf_s)
            last = None
            for kind in args.spreads:
                runs, setup = run_spread(args, url, meter, tenants, kind,
                                         rng, cum_weights, logger)
                s = summarise(runs)
                results['runs']['%d %s' % (tenants, kind)] = {
                    'median': s, 'repeats': runs}
                rows.append(row(tenants, kind, s))
                if last is not None:
                    last.close()
                last = setup
            if last is not None:
                results['runs']['%d per_request' % tenants] = \
                    per_request(last, tenants)
                results['runs']['%d proxy_request' % tenants] = \
                    proxy_requests(url, tenants)
                results['runs']['%d memory' % tenants] = table_memory(last)
                last.close()
        results['per_request_redis'] = per_request_redis(url)
        if args.processes:
            results['processes'] = processes(args, url, max(args.sizes),
                                             logger)
    finally:
        if server is not None:
            server.stop()
        if sink is not None:
            sink.close()
    print()
    print(format_table(rows, COLUMNS))
    print()
    print(format_table(rows, COLUMNS2))
    print()
    for tenants in args.sizes:
        req = results['runs'].get('%d per_request' % tenants)
        mem = results['runs'].get('%d memory' % tenants)
        proxy = results['runs'].get('%d proxy_request' % tenants)
        if proxy:
            print('{:,} tenants: CPU per request through MassMiddleware '
                  '{:.1f} us, with 10 tenants {:.1f} us: ratio {:.3f}'.format(
                      tenants, proxy['%d_us' % tenants], proxy['10_us'],
                      proxy['ratio']))
        if req:
            print('{:,} tenants: Agent.policy {:.0f} ns (10 tenants: {:.0f}; '
                  'ratio {:.3f}), Agent.record {:.0f} ns (10: {:.0f}; ratio '
                  '{:.3f}); a worker\'s table {:.1f} MiB ({:.0f} B a tenant; '
                  'RSS +{:.1f} MiB)'.format(
                      tenants, req[str(tenants)]['policy_ns'],
                      req['10']['policy_ns'], req['policy_ratio'],
                      req[str(tenants)]['record_ns'], req['10']['record_ns'],
                      req['record_ratio'], mem['bytes'] / 2 ** 20,
                      mem['bytes_per_tenant'],
                      mem['rss_added_bytes'] / 2 ** 20))
    print('Redis round trips per request, by the method of the tenant: ' +
          ', '.join('%s %.2f' % item for item in
                    results['per_request_redis'].items()))
    proc = results.get('processes')
    if proc:
        print('{} worker processes, {:,} tenants, interval {:g} s: a change '
              'reached every worker within {} intervals (max of {} trials); '
              'the lease passed on within {} intervals of the leader\'s '
              'SIGKILL{}'.format(
                  proc['processes'], proc['tenants'], proc['interval_s'],
                  fmt(proc['propagation_max_intervals'], 2), args.trials,
                  fmt(proc['failover_max_intervals'], 2),
                  '; errors: %s' % proc['errors'] if proc['errors'] else ''))
    if args.json:
        with open(args.json, 'w') as fp:
            json.dump(results, fp, indent=2, default=str)
    return 0


if __name__ == '__main__':
    sys.exit(main())
