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
"""tools/bench-scale's control loop (mass_bench.scale): the real Agent,
controller and RedisStore, a worker and a leader on a store prefix of
their own, run interval by interval at the bench's pace (a clock and an
Agent ticker it moves, mass_bench.ticker) over the synthetic tenants
(mass_bench.scale_tenants); and what each interval's work costs (Meter,
mass_bench.scale_redis): a worker's flush, the leader's tick, a worker's
tick, a delta and a whole table reaching a worker.  Runs in the
benchmark's process."""
import time

from mass_bench.ratios import median
from mass_bench.scale_redis import delete_prefix, fresh_prefix
from mass_bench.scale_tenants import known_table, record, spread, \
    tenant_name
from mass_bench.ticker import Ticker

INTERVAL = 5.0
BUCKET_SECONDS = 5


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


class Setup(object):
    """A store prefix with a table, a worker, a leader, and the clock
    and ticker they run by, which the bench moves."""

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
        # the agents' ticks are due when the bench says, whatever the time
        self.ticker = Ticker(INTERVAL)
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
                         clock=self.clock, ticker=self.ticker,
                         generations=generations)
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
        self.ticker.step()

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
            record_interval(setup, kind, repeat, rng, cum_weights)
            run = interval_figures(meter, setup, rng)
            runs.append(run)
            print('  %d tenants, %s, repeat %d: flush %.3f s CPU (%d '
                  'tenants), leader tick %.3f s CPU' % (
                      tenants, kind, repeat + 1, run['flush']['cpu_s'],
                      run['flush']['tenants_flushed'],
                      run['leader']['cpu_s']), flush=True)
        return runs, setups[-1]
    finally:
        for setup in setups[:-1]:
            setup.close()


def record_interval(setup, kind, repeat, rng, cum_weights):
    """The measured interval's requests, recorded in the worker's window
    as the proxy records them: in ``realistic``, drawn by the Zipf law of
    ``cum_weights``, a window's worth of intervals first (each but the
    last flushed and decided on), then one per repeat; in the worst
    spreads, every tenant's in one interval, the window's other buckets
    behind it."""
    tenants = setup.tenants
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


def interval_figures(meter, setup, rng):
    """What the interval's work costs (Meter's figures of each part): the
    worker's flush, the leader's tick, a worker's tick that is not the
    leader's, a one-entry change reaching a worker (a delta) and a worker
    loading the whole table."""
    run = {}
    active = len(setup.worker.window)
    run['flush'] = flush_figures(meter, setup.worker)
    run['flush']['tenants_flushed'] = active
    _, run['leader'] = meter.measure(setup.leader.tick)
    run['leader']['entries_written'] = None
    # a worker's tick that is not the leader's: nothing pending
    # but the decisions' delta, if any (in worst-new, the whole
    # table): what each worker costs Redis per interval
    setup.ticker.step()
    _, run['worker_tick'] = meter.measure(setup.worker.tick)
    # a one-entry change reaching a worker
    tenant = tenant_name(rng.randrange(setup.tenants))
    setup.worker.store.set_pin(tenant, {'class': 'write',
                                        'method': 'batch'})
    setup.ticker.step()
    setup.leader.tick()
    _, run['delta'] = meter.measure(setup.worker.refresh)
    run['delta']['fetched'] = tenant in setup.worker.table and \
        setup.worker.table[tenant].pinned
    setup.worker.store.delete_pin(tenant)
    setup.ticker.step()
    setup.leader.tick()
    setup.worker.refresh()
    # a worker loading the whole table (a new one, or one whose
    # state the change log no longer reaches)
    fresh = setup.agent('bench-fresh')
    _, run['whole_load'] = meter.measure(fresh.refresh)
    run['whole_load']['entries'] = len(fresh.table)
    return run


def summarise(runs):
    """The median of each figure over the runs."""
    out = {}
    for part in runs[0]:
        out[part] = {key: median([run[part].get(key) for run in runs])
                     for key in runs[0][part]
                     if not isinstance(runs[0][part][key], (str, bool))}
    return out
