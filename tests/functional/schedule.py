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
"""Seeded fault schedules against the SAIO, in the manner of Jepsen: the
cache's promise checked while faults that make replicas and fences old
come one after another, at random but replayable.

Two tenants of the cache method each write a small hot set of objects
through both proxies with Mass (8080, 8081) and the proxy without it
(8082), and read it through the two with Mass, while a schedule of faults
runs.  A schedule is drawn from its seed alone (:func:`draw`); the same
seed gives the same faults, with the same parameters, in the same order:

* ``lag``: one object server stopped while the writes go on (a quorum of
  the others and a handoff take them, as Swift does), then started again:
  a replica that missed writes, which no replicator repairs on the SAIO,
  for the rest of the schedule;
* ``snapshot``: Redis saves a snapshot, takes more writes (and their
  bumps), and is restarted from the snapshot: it went back in time;
* ``reenter``: a tenant leaves the cache (pinned to ``none``) and, once
  the object servers stopped bumping its writes, comes back (``cache``);
* ``migrate``: ``swift-mass migrate run`` moves a tenant's container to
  the other of two policies (standard, bulk) while both tenants read (the
  writers pause for the move).
* ``failover``: Redis fails over to a replica that lagged its master by
  some seconds of writes (the replica is promoted and put behind the
  master's address, as Sentinel's promotion and a virtual IP would; not
  Sentinel itself, which the SAIO runs only in its Sentinel topology),
  serves for a few seconds, and the SAIO's Redis comes back with what it
  holds;
* ``clock``: the machine's wall clock is stepped back or forward by a
  few seconds, as NTP steps it, and back again.

Every read is judged against the writes acknowledged before it began
(tests/functional/test_faults.py's AcknowledgedLoad): stale (a version
older than one acknowledged), wrong (a version never written) or failed.
A read Mass passed to Swift untouched (no ``X-Mass-Cache``: the tenant
was out of the cache) is Swift's own answer, which a lagging replica may
make old: it is counted, not judged stale.  So is a miss whose data is
the current version but whose metadata misses a POST that not every
replica has applied yet: Swift's X-Newest orders replicas by their data's
time alone, and may answer with the replica that missed the POST, as a
plain read that reaches it does (docs/cache.md: such an answer is never
cached); those are printed apart ("metadata behind a POST").  A hit
with such metadata is stale.  Once the writers stopped,
each object is read through both proxies with Mass and with X-Newest
through the proxy without it: one that misses an acknowledged write is
lost.  The proxies' statsd counter ``cache.lagging_replica`` (a miss that
reached a replica older than the object's fence) is counted, so a pass is
never a run that did not meet the fault.
"""
import collections
import contextlib
import os
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid

import requests

from tests.functional.conftest import PROXY, ROOT, Tenant
from tests.functional.test_cache import PROXIES, PROXY2, Client, \
    data_version, pin, wait_for_method
from tests.functional.test_faults import AcknowledgedLoad, abort_move
from tests.functional.test_lagging_replica import one_object_server_down, \
    tenant_released
from tests.functional.test_migrate import command, run_env
from tests.functional.test_never_stale import PROXY3, \
    LaggingReplicaFailover, answers, loaded_snapshot, redis_client, \
    restart_from_snapshot, start_redis
from tests.functional.waiting import until

FAULTS = ('lag', 'snapshot', 'reenter', 'migrate', 'failover', 'clock')
VIA = (PROXY, PROXY2, PROXY3)
CONTAINER = 'c'
OBJECTS = 6  # per tenant: a small hot set
STATSD = ('127.0.0.1', 8125)
POLICIES = ('standard', 'bulk')


def draw(seed, faults=3):
    """The schedule of ``seed``: ``faults`` faults, each (name, params)."""
    rng = random.Random(seed)
    schedule = []
    for _ in range(faults):
        # one object server fault a schedule: two within Swift's error
        # limiting (a minute) leave the proxy that met both unable to make
        # a quorum (503s), Swift's limit, not Mass's
        name = rng.choice([fault for fault in FAULTS if fault != 'lag' or
                           'lag' not in [f for f, _ in schedule]])
        if name == 'lag':
            params = {'server': rng.randint(1, 4),
                      'seconds': round(rng.uniform(1.0, 3.0), 1)}
        elif name == 'snapshot':
            params = {'seconds': round(rng.uniform(0.5, 2.0), 1)}
        elif name == 'reenter':
            params = {'tenant': rng.randint(0, 1),
                      'seconds': round(rng.uniform(1.0, 3.0), 1)}
        elif name == 'failover':
            params = {'seconds': round(rng.uniform(0.5, 2.0), 1),
                      'hold': round(rng.uniform(2.0, 5.0), 1)}
        elif name == 'clock':
            params = {'step': rng.choice((-1, 1)) * round(
                rng.uniform(2.0, 8.0), 1),
                'seconds': round(rng.uniform(1.0, 3.0), 1)}
        else:
            params = {'tenant': rng.randint(0, 1)}
        params['settle'] = round(rng.uniform(1.0, 3.0), 1)
        schedule.append((name, params))
    return schedule


def describe(schedule):
    return ', '.join('%s(%s)' % (name, ' '.join(
        '%s=%s' % item for item in sorted(params.items())))
        for name, params in schedule)


class LaggingReads(threading.Thread):
    """The proxies' statsd lines of ``cache.lagging_replica``, counted
    (they send statsd to 127.0.0.1:8125: tools/saio)."""

    def __init__(self):
        super(LaggingReads, self).__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(STATSD)
        self.sock.settimeout(0.2)
        self.count = 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            try:
                data = self.sock.recv(65535).decode('utf-8', 'replace')
            except socket.timeout:
                continue
            for line in data.splitlines():
                if 'cache.lagging_replica' in line:
                    self.count += 1

    def close(self):
        self.stopping.set()
        self.join()
        self.sock.close()


class ScheduledLoad(AcknowledgedLoad):
    """AcknowledgedLoad, reading through the proxies with Mass only, and
    judging only the reads Mass considered; a miss whose data is current
    but whose metadata misses a POST is counted apart (the module's
    docstring)."""

    def __init__(self, *args, **kwargs):
        super(ScheduledLoad, self).__init__(*args, **kwargs)
        self.passed = 0  # reads Mass passed to Swift untouched
        # reads stale or wrong by the order writes were issued in, right
        # by Swift's own order, that of their X-Timestamps, which a step
        # of the wall clock back made another (reordered_by_clock)
        self.reordered = []
        # {name: {version: the wall clock when it was issued}}: the
        # X-Timestamp the proxy gives it, within the time it takes to
        # reach it (each object has one writer, one write at a time)
        self.issued_at = {name: {} for name in self.names}
        # {name: {version: the wall clock when its answer came}}
        self.answered_at = {name: {} for name in self.names}
        # the size of the step of the wall clock under way (the clock
        # fault, until its settle ended), and by how much each write's
        # span widens for it: {name: {version: seconds}}
        self.clock_step = 0.0
        self.widened = {name: {} for name in self.names}
        self.writing = threading.Event()
        self.writing.set()

    def _write(self, name, kind, proxy):
        if not self.writing.is_set():
            time.sleep(0.05)  # paused: no write is issued
            return
        issued_at = time.time()
        stepping = self.clock_step
        with self.history.lock:
            version = self.history.issued[name] + 1
            self.issued_at[name][version] = issued_at
        super(ScheduledLoad, self)._write(name, kind, proxy)
        answered_at = time.time()
        with self.history.lock:
            self.answered_at[name][version] = answered_at
            self.widened[name][version] = max(stepping, self.clock_step)

    def history_of(self, what):
        """Every write of a bad read's object up to the last issued when
        the read ended, each with the wall clock when it was issued: a
        clock step or a move may have made any earlier write matter."""
        name, ceiling = what[0], what[3]
        h = self.history
        with h.lock:
            at = dict(self.issued_at[name])
            return [(v, kind) + h.via[name].get(v, ()) +
                    ('issued %.3f' % at[v] if v in at else '',)
                    for v, kind in h.ops[name] if v <= ceiling + 1]

    def reordered_by_clock(self, name, floor, ceiling, resp):
        """Whether a read that is stale or wrong by the order the writes
        were issued in is right by Swift's order, that of their
        X-Timestamps: after a step of the wall clock, a write is dated
        before writes issued earlier, and Swift serves the newest by date
        (newer metadata on older data too), as it does without Mass.  A
        write's X-Timestamp is the proxy's wall clock at some moment
        between when it was issued and when it was answered (:meth:`span`:
        one write may be issued before a step and dated after it), so the
        read is right if some dating within those spans makes it so.
        Without a step, and with writes of an object one at a time, the
        spans do not overlap and this never excuses a read."""
        h = self.history
        with h.lock:
            kinds = dict(h.ops[name])
            acknowledged = {v for v in self.acknowledged[name] if v <= floor}
            spans = {v: self.span(name, v) for v in kinds}
        spans = {v: span for v, span in spans.items() if span is not None}
        if any(v not in spans for v in acknowledged):
            return False

        def maybe_newer(v, than):
            return spans[v][1] > spans[than][0]

        def surely_newer(v, than):
            return spans[v][0] > spans[than][1]
        if resp.status_code == 404:
            # some DELETE may be the newest write by date
            return not acknowledged or any(
                kind == 'DELETE' and v <= ceiling and v in spans and
                not any(surely_newer(w, v) for w in acknowledged
                        if kinds[w] in ('PUT', 'POST'))
                for v, kind in kinds.items())
        try:
            meta = int(resp.headers['X-Object-Meta-V'])
        except (KeyError, ValueError):
            return False
        data = data_version(name, resp.content)
        if data is None or kinds.get(data) != 'PUT' or data not in spans or \
                kinds.get(meta) not in ('PUT', 'POST') or \
                meta not in spans or max(data, meta) > ceiling:
            return False
        if meta != data and not (kinds[meta] == 'POST' and
                                 maybe_newer(meta, data)):
            return False
        shown = meta
        return not any(
            (kinds[v] in ('PUT', 'DELETE') and v != data and
             surely_newer(v, data)) or
            (kinds[v] == 'POST' and v != shown and
             surely_newer(v, shown) and surely_newer(v, data))
            for v in acknowledged)

    def span(self, name, version):
        """``(earliest, latest)`` wall-clock time of the X-Timestamp the
        proxy gave a write: between when it was issued and when its answer
        came, by the wall clock (for a write still in flight, now).  While
        the clock fault stepped the clock (by S seconds), the proxy's clock
        may have shown anything within S of those two readings when it
        dated the write (issued before the step and dated after it, or the
        other way round), so the span widens by S; None for a write not
        issued."""
        issued = self.issued_at[name].get(version)
        if issued is None:
            return None
        # a write still in flight when a read that saw it is judged (the
        # read ends first): dated by now, and under the step under way
        answered = self.answered_at[name].get(version, time.time())
        widen = self.widened[name].get(version, self.clock_step)
        return min(issued, answered) - widen, max(issued, answered) + widen

    def verdict(self, name, floor, ceiling, resp):
        """AcknowledgedLoad's, except that a read reordered by a step of
        the wall clock back (:meth:`reordered_by_clock`) is 'reordered',
        counted apart, and that a 404 is right as well when a DELETE,
        acknowledged or failed (so may have happened), came after the last
        PUT acknowledged before the read began: a POST acknowledged since
        changed the metadata of the replicas that missed that DELETE (a
        proxy that error-limited the others acknowledges it with a primary
        and a handoff), and resurrects nothing.  A PUT acknowledged while
        the read ran is one it may not have seen."""
        verdict = super(ScheduledLoad, self).verdict(
            name, floor, ceiling, resp)
        if verdict in ('stale', 'wrong') and \
                self.reordered_by_clock(name, floor, ceiling, resp):
            return 'reordered'
        if verdict != 'stale' or resp.status_code != 404:
            return verdict
        h = self.history
        with h.lock:
            ops = list(h.ops[name])
            acknowledged = set(self.acknowledged[name])
        put = max([v for v, kind in ops if kind == 'PUT' and
                   v in acknowledged and v <= floor] or [0])
        if any(kind == 'DELETE' and put < v <= ceiling for v, kind in ops):
            return None
        return verdict

    def check(self, name, proxy, floor, ceiling, resp):
        verdict = self.verdict(name, floor, ceiling, resp)
        if verdict == 'stale' and ('X-Mass-Cache' not in resp.headers or
                                   self.metadata_behind(name, floor, resp)):
            with self.count_lock:
                self.reads += 1
                if 'X-Mass-Cache' not in resp.headers:
                    # Swift's own answer: see the module's docstring
                    self.passed += 1
                else:
                    self.behind.append(
                        self._what(name, proxy, floor, ceiling, resp))
            return
        if 'X-Mass-Cache' not in resp.headers:
            with self.count_lock:
                self.passed += 1
        super(ScheduledLoad, self).check(name, proxy, floor, ceiling, resp)

    def check_lost(self, reads=None):
        """Once every writer stopped: each object through both proxies
        with Mass, and with X-Newest (every replica asked) through the
        proxy without it; a plain read there is Swift's own answer."""
        super(ScheduledLoad, self).check_lost(reads or [
            (p, {}) for p in PROXIES] + [(PROXY3, {'X-Newest': 'true'})])

    def judge_afterwards(self, name, proxy, floor, ceiling, resp):
        if self.verdict(name, floor, ceiling, resp) == 'stale' and \
                self.metadata_behind(name, floor, resp):
            self.behind.append(self._what(name, proxy, floor, ceiling, resp))
            return
        super(ScheduledLoad, self).judge_afterwards(
            name, proxy, floor, ceiling, resp)


class Tenants(object):
    """The two cache tenants a run of schedules uses: an account each,
    its container written by ``test:tester3`` (not a reseller admin, whose
    writes a move does not refuse), pinned to the cache."""

    def __init__(self, admin):
        self.admin = admin
        self.user = Tenant('test:tester3', 'testing3')
        self.accounts = ['AUTH_fs%s' % uuid.uuid4().hex[:10]
                         for _ in range(2)]
        for account in self.accounts:
            owner = Client(admin, account, CONTAINER)
            assert owner.request('PUT', PROXY, headers={
                'X-Container-Read': 'test:tester3',
                'X-Container-Write': 'test:tester3'}).status_code in \
                (201, 202)
            pin(account, 'cache')
            wait_for_method(self.client(account), 'cache')

    def client(self, account):
        return Client(self.user, account, CONTAINER)

    def policy(self, account):
        return Client(self.admin, account, CONTAINER).request(
            'HEAD', PROXY).headers['X-Storage-Policy']

    def remove(self, store):
        for account in self.accounts:
            store.delete_pin(account)
            for container in (CONTAINER, '.mass-migrate-' + CONTAINER,
                              '.mass-migrate'):
                c = Client(self.admin, account, container)
                listing = c.request('GET', PROXY,
                                    params={'format': 'json'})
                for obj in listing.json() \
                        if listing.status_code == 200 else []:
                    c.request('DELETE', PROXY, obj['name'])
                c.request('DELETE', PROXY)


def failover(behind, hold):
    """Redis fails over to a replica ``behind`` seconds of writes behind
    its master: a replica of the SAIO's Redis (6380) is stopped (SIGSTOP)
    while writes go on, the master dies, the replica is promoted
    (REPLICAOF NO ONE) and a TCP front (socat) sends 127.0.0.1:6379 to it,
    as Sentinel's promotion and a virtual IP would; it serves for
    ``hold`` seconds.  Then the SAIO's Redis takes its place again, from a
    snapshot of what the promoted one holds (a Redis restart of its own:
    tests/functional/test_never_stale.py's two faults in one)."""
    master = redis_client()
    directory = master.config_get('dir')['dir']
    dbfilename = master.config_get('dbfilename')['dbfilename']
    workdir = tempfile.mkdtemp(prefix='mass-failover-')
    failover = LaggingReplicaFailover(workdir)
    try:
        failover.fail_over(lambda: time.sleep(behind))
        time.sleep(hold)
        failover.promoted.save()
        shutil.copy(os.path.join(workdir, 'dump.rdb'),
                    os.path.join(directory, dbfilename))
    finally:
        failover.remove()
        shutil.rmtree(workdir, ignore_errors=True)
        # also when the fault stopped half way (an error, ^C): the SAIO
        # is not left without its Redis
        if not answers(redis_client()):
            start_redis(directory, dbfilename)
    until(loaded_snapshot, 20, 'Redis loaded the promoted one\'s snapshot')


def step_wall_clock(step, seconds):
    """The machine's wall clock stepped by ``step`` seconds, as NTP steps
    it, and back after ``seconds`` (of the monotonic clock, which a step
    leaves alone).  Swift dates writes by it: a write after a step back
    may be older than one before it, which the object servers refuse
    (409; a PUT's 202), as they would without Mass, or order before it
    (ScheduledLoad.reordered_by_clock)."""
    time.clock_settime(time.CLOCK_REALTIME, time.time() + step)
    try:
        time.sleep(seconds)
    finally:
        time.clock_settime(time.CLOCK_REALTIME, time.time() - step)


def reenter(tenants, account, seconds):
    client = tenants.client(account)
    pin(account, 'none')
    wait_for_method(client, 'none')
    tenant_released(account)
    time.sleep(seconds)  # writes no object server bumps
    pin(account, 'cache')
    wait_for_method(client, 'cache', within=40.0)


def migrate(tenants, account):
    """A move to the other policy; a run that fails (a client keeps
    writing an object) is aborted, as an operator would."""
    # asked once: a container server that missed the last move's
    # recreation answers the policy before it
    current = tenants.policy(account)
    target = [p for p in POLICIES if p != current][0]
    moved = subprocess.run(
        command('run', account, CONTAINER, '--policy', target,
                '--settle', '2', '--lock-ttl', '6'),
        env=run_env(), cwd=ROOT, capture_output=True, text=True,
        timeout=300)
    why = ''
    if moved.returncode != 0:
        said = moved.stderr.strip().splitlines()
        why = ' (%s)' % said[-1][:160] if said else ''
        abort_move(account)
    return 'to %s, exit %d%s' % (target, moved.returncode, why)


@contextlib.contextmanager
def through(loads, write_via, read_via):
    """The loads' requests go through these proxies for the block."""
    saved = [(load.write_via, load.read_via) for load in loads]
    for load in loads:
        load.write_via, load.read_via = write_via, read_via
    time.sleep(0.5)  # requests already sent through the others finish
    try:
        yield
    finally:
        for load, (write_via, read_via) in zip(loads, saved):
            load.write_via, load.read_via = write_via, read_via


def run_fault(tenants, loads, name, params):
    """Run one fault of a schedule; what happened, in a few words."""
    if name == 'lag':
        # through the proxy without Mass alone: a proxy that meets a
        # stopped object server skips it for a minute (Swift's error
        # limiting), and the proxies with Mass must read the replica it
        # left behind once it is back
        with through(loads, (PROXY3,), (PROXY3,)):
            with one_object_server_down(params['server']):
                time.sleep(params['seconds'])
        return 'object server %d down %.1f s' % (params['server'],
                                                 params['seconds'])
    if name == 'snapshot':
        # writes, and bumps, the snapshot does not have meanwhile
        restart_from_snapshot(lambda: time.sleep(params['seconds']))
        return 'restarted from a snapshot %.1f s old' % params['seconds']
    if name == 'failover':
        failover(params['seconds'], params['hold'])
        return 'failed over to a replica %.1f s behind, for %.1f s' % (
            params['seconds'], params['hold'])
    if name == 'clock':
        for load in loads:
            load.clock_step = abs(params['step'])
        step_wall_clock(params['step'], params['seconds'])
        return 'wall clock stepped %+.1f s for %.1f s' % (
            params['step'], params['seconds'])
    account = tenants.accounts[params['tenant']]
    if name == 'reenter':
        reenter(tenants, account, params['seconds'])
        return '%s out of the cache %.1f s' % (account, params['seconds'])
    # no client writes during the move, only reads: a write during one
    # can be answered and then not read back for a while (docs/testing.md,
    # "What the fault schedules do not cover yet")
    for load in loads:
        load.writing.clear()
    try:
        return '%s moved %s' % (account, migrate(tenants, account))
    finally:
        for load in loads:
            load.writing.set()


Result = collections.namedtuple(
    'Result', 'seed schedule events reads hits passed lagging writes '
    'acknowledged stale wrong lost failed behind reordered report '
    'seconds')


def run_schedule(tenants, seed, faults=3):
    """Draw and run the schedule of ``seed`` under the load of both
    tenants; its :class:`Result`."""
    schedule = draw(seed, faults)
    started = time.time()
    loads = [ScheduledLoad(tenants.client(account),
                           ['s%d-%02d' % (seed, i) for i in range(OBJECTS)],
                           writers=2, readers=3, write_via=VIA,
                           read_via=PROXIES)
             for account in tenants.accounts]
    lagging = LaggingReads()
    lagging.start()
    events = []
    try:
        for load in loads:
            load.seed()
            load.start()
        time.sleep(2.0)  # the hot sets cached
        for name, params in schedule:
            for load in loads:
                load.phase = name
            events.append(run_fault(tenants, loads, name, params))
            time.sleep(params['settle'])
            for load in loads:
                load.clock_step = 0.0
        for load in loads:
            load.finish()
            load.check_lost()
    finally:
        for load in loads:
            if load.threads[0].ident is not None and \
                    not load.stop.is_set():
                load.finish()
        lagging.close()
    return Result(
        seed, schedule, events,
        sum(load.reads for load in loads),
        sum(sum(load.hits.values()) for load in loads),
        sum(load.passed for load in loads), lagging.count,
        sum(sum(load.history.issued.values()) for load in loads),
        sum(sum(len(v) for v in load.acknowledged.values())
            for load in loads),
        sum(len(load.stale) for load in loads),
        sum(len(load.wrong) for load in loads),
        sum(len(load.lost) for load in loads),
        sum(len(load.failed) for load in loads),
        sum(len(load.behind) for load in loads),
        sum(len(load.reordered) for load in loads),
        '\n'.join(load.report() for load in loads
                  if load.stale or load.wrong or load.lost),
        time.time() - started)


def line(result):
    return ('schedule %d (%.0f s): %s\n  %s\n  %d reads (%d hits, %d passed '
            'to Swift), %d reached a lagging replica; %d writes, %d '
            'acknowledged, %d failed; %d stale, %d wrong, %d lost; %d with '
            'metadata behind a POST; %d reordered by a clock step' % (
                result.seed, result.seconds, describe(result.schedule),
                '; '.join(result.events), result.reads, result.hits,
                result.passed, result.lagging, result.writes,
                result.acknowledged, result.failed, result.stale,
                result.wrong, result.lost, result.behind,
                result.reordered))


def totals(results):
    keys = ('reads', 'hits', 'passed', 'lagging', 'writes', 'acknowledged',
            'stale', 'wrong', 'lost', 'failed', 'behind', 'reordered')
    sums = {key: sum(getattr(r, key) for r in results) for key in keys}
    return ('%d schedules: %d reads (%d hits, %d passed to Swift), %d '
            'reached a lagging replica; %d writes, %d acknowledged; '
            '%d stale, %d wrong, %d lost; %d with metadata behind a POST; '
            '%d reordered by a clock step' % (
                len(results), sums['reads'], sums['hits'], sums['passed'],
                sums['lagging'], sums['writes'], sums['acknowledged'],
                sums['stale'], sums['wrong'], sums['lost'],
                sums['behind'], sums['reordered'])), sums


def proxies_answer():
    for proxy in VIA:
        try:
            if not requests.get(proxy + '/healthcheck', timeout=5).ok:
                return False
        except requests.RequestException:
            return False
    return True
