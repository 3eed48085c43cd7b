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
"""tools/bench-scale's worker processes (mass_bench.scale): several
processes forked from the benchmark's, each an Agent ticking as a proxy
worker's loop does, sharing one Redis and the largest table; how long
after the leader wrote a change every one of them holds it, and how long
the lease takes to reach another one after the leader's process is
SIGKILLed (both in intervals)."""
import multiprocessing
import os
import queue
import random
import signal
import time

from mass_bench.scale_loop import BUCKET_SECONDS, Logger
from mass_bench.scale_redis import delete_prefix, fresh_prefix
from mass_bench.scale_report import fmt, in_intervals
from mass_bench.scale_tenants import known_table, tenant_name


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


class Workers(object):
    """The worker processes (:func:`_worker_process`) sharing a store
    prefix, and what they report: the latest table state of each, and
    their errors."""

    def __init__(self, url, prefix, interval, timeout_ms):
        self.url, self.prefix = url, prefix
        self.interval, self.timeout_ms = interval, timeout_ms
        self.context = multiprocessing.get_context('fork')
        self.reports = self.context.Queue()
        self.children = {}
        # index: (table_id, version, entries, when, leading)
        self.latest = {}
        self.errors = []

    def start(self, count, seed):
        """``count`` workers, each started late by a phase of the interval
        drawn with ``seed``."""
        phases = random.Random(seed)
        for index in range(count):
            proc = self.context.Process(target=_worker_process, args=(
                self.url, self.prefix, self.interval, index, self.reports,
                self.timeout_ms, phases.uniform(0, self.interval)),
                daemon=True)
            proc.start()
            self.children[index] = proc

    def drain(self, timeout=0.05):
        """The reports sent so far, into ``latest`` and ``errors``."""
        try:
            while True:
                index, pid, table_id, version, entries, when, leading = \
                    self.reports.get(timeout=timeout)
                if table_id == 'error':
                    self.errors.append(version)
                    continue
                self.latest[index] = (table_id, version, entries, when,
                                      leading)
                timeout = 0
        except queue.Empty:
            pass

    def wait_for(self, check, seconds):
        """Whether ``check()`` held within ``seconds``, reports drained
        meanwhile."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            self.drain()
            if check():
                return True
        return False

    def stop(self):
        """SIGTERM to every worker still alive; each joined."""
        for proc in self.children.values():
            if proc.is_alive():
                os.kill(proc.pid, signal.SIGTERM)
        for proc in self.children.values():
            proc.join(10)


def processes(args, url, tenants, logger):
    """``args.processes`` worker processes sharing one Redis and a table
    of ``tenants``: a change's delay to every one of them, and leader
    failover after SIGKILL (at the worst moment: just after the leader
    renewed its lease), in intervals."""
    from swift_mass.control import controller
    from swift_mass.control.stores.redis_store import RedisStore
    interval = args.process_interval
    prefix = fresh_prefix()
    store = RedisStore(url, prefix=prefix, socket_timeout_ms=args.timeout_ms,
                       connect_timeout_ms=args.timeout_ms)
    table = known_table(tenants, time.time(), controller.DEFAULT_SETTINGS)
    store.update_table(None, table, list(table))
    del table
    workers = Workers(url, prefix, interval, args.timeout_ms)
    latest = workers.latest
    result = {'processes': args.processes, 'tenants': tenants,
              'interval_s': interval, 'propagation': [], 'failover': []}
    try:
        started = time.time()
        workers.start(args.processes, args.seed)
        if not workers.wait_for(lambda: len(latest) == args.processes and all(
                state[2] == tenants for state in latest.values()), 600):
            raise RuntimeError('the workers did not all load the table')
        result['startup_s'] = time.time() - started
        print('  %d processes hold the table of %d tenants after %.1f s'
              % (args.processes, tenants, result['startup_s']), flush=True)
        alive = dict(workers.children)
        for trial in range(args.trials):
            reached = propagation(store, workers, alive, trial, interval)
            result['propagation'].append(reached)
            failed = failover(store, alive, interval)
            result['failover'].append(failed)
            print('  trial %d: a change reached %d/%d workers within %.2f '
                  'intervals; leader %s killed (its lease had %.1f s '
                  'left), lease taken after %s intervals' % (
                      trial + 1, reached['reached'], len(alive) + 1,
                      reached['max_intervals'] or -1, failed['killed'],
                      failed['lease_left_s'], fmt(failed['intervals'], 2)),
                  flush=True)
            # let the new leader settle
            workers.wait_for(lambda: False, interval)
    finally:
        workers.stop()
        delete_prefix(url, prefix)
    result['errors'] = workers.errors[:10]
    result['propagation_max_intervals'] = max(
        (p['max_intervals'] or 0) for p in result['propagation']) \
        if result['propagation'] else None
    result['failover_max_intervals'] = max(
        (f['intervals'] or float('inf')) for f in result['failover']) \
        if result['failover'] else None
    return result


def propagation(store, workers, alive, trial, interval):
    """A change (a pin, which the leader, one of the workers, decides)
    and how long it took to reach every worker of ``alive``: the trial's
    entry of the result's ``propagation``."""
    latest = workers.latest
    tenant = tenant_name(trial)
    version = store.table_version()
    store.set_pin(tenant, {'class': 'write', 'method': 'batch'})
    while store.table_version() == version:
        time.sleep(0.01)
    written = time.time()
    new = store.table_version()

    def everyone():
        return all(latest[i][1] >= new for i in alive)
    workers.wait_for(everyone, 10 * interval)
    delays = [latest[i][3] - written for i in alive
              if latest[i][1] >= new]
    return {'workers': len(alive), 'reached': len(delays),
            'max_s': max(delays) if delays else None,
            'max_intervals': in_intervals(max(delays) if delays else None,
                                          interval)}


def failover(store, alive, interval):
    """The leader's process SIGKILLed at the worst moment, just after it
    renewed its lease (within 0.2 s), and how long the lease took to reach
    another worker: the trial's entry of the result's ``failover``
    (``alive`` loses the leader)."""
    from swift_mass.control.agent import Agent
    lease_ms = interval * Agent.LEASE_INTERVALS * 1000
    deadline = time.time() + 3 * interval
    while time.time() < deadline:
        # the lease's key, as RedisStore's docstring lists its keys
        left = store.client.pttl(store.prefix + 'leader')
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
    return {'killed': holder, 'new_leader': now, 'seconds': took,
            'intervals': in_intervals(took, interval),
            'lease_left_s': left / 1000.0}
