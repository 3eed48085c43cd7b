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
"""Faults one after another under one cached tenant's load.

A tenant of the cache method reads and writes its objects through both
proxies with Mass (8080, 8081) and the proxy without it (8082), as a user
of its own (``test:tester3``, given the container by its ACLs: not a
reseller admin, whose writes a move does not refuse), while, in turn:

1. the Redis master is cut off from the sentinels, a replica promoted, and
   the partition healed (tests/functional/test_redis_partition.py's split
   brain; the whole test runs on the SAIO's Sentinel set, and the SAIO is
   put back on its single Redis at the end);
2. one object server's disk refuses writes (the standard policy's objects
   of storage server 1 on the refusing device of
   tests/functional/test_group_commit_errors.py), and goes on refusing
   them until the load is over; then it is replaced by an empty one
   (tests/functional/faults.py: refusing_objects).  Put back while the
   load runs, it would take the writes of the proxy workers that had not
   error-limited its server and miss those of the others, and Swift
   itself, with or without Mass, would serve what it missed until a
   replicator ran (none runs on the SAIO);
3. the ``fast`` policy's ring is replaced in place by a broken one for
   longer than two ring reloads, then put back;
4. ``swift-mass migrate run`` moves the tenant's container and fails (an
   object that expires while it waits, as in
   tests/functional/test_migrate.py, or a copy the load changed), leaving
   its staging container and journal for a next run; they are aborted
   once the load is over.

Every read is checked against the writes acknowledged before it began
(:class:`AcknowledgedLoad`): stale (a version older than one acknowledged,
or a 404 for an object no delete may have removed), wrong (a body or
version never written) or failed (neither 200 nor 404).  A write that
failed (a 503 of a proxy with Mass while the container is marked, ...) is
not acknowledged, and may or may not have happened.  Once the load is
over every object is read through every proxy, and with X-Newest through
Swift alone: one missing an acknowledged write is lost.  The counts are
printed, by phase; none may be stale, wrong or lost.

Long (some two minutes), so tools/test runs it in a step of its own
(``-m faults``) after the functional step, which leaves it out.
"""
import collections
import contextlib
import subprocess
import time
import uuid

import pytest
import redis
from swift.common import direct_client
from swift.common.storage_policy import POLICIES
from swift.common.utils import Timestamp

from tests.functional.conftest import PROXY, ROOT, Tenant
from tests.functional.faults import BROKEN_FOR, FAST_RING, SWIFT_DIR, \
    REGISTRATION_LIFE, Registry, RegistrationWatch, refusing_objects, \
    ring_broken_in_place
from tests.functional.test_cache import PROXIES, PROXY2, Client, Load, \
    admin, body_for, data_version, pin, \
    wait_for_method  # noqa: F401 (fixtures)
from tests.functional.test_migrate import command, run_env
from tests.functional.test_never_stale import PROXY3
from tests.functional.test_redis_partition import close_connections_of, \
    named_master, sentinel_engine, sentinel_store_ready, \
    topology  # noqa: F401 (fixtures)
from tests.functional.waiting import until

pytestmark = pytest.mark.faults

NAMES = ['ft-%02d' % i for i in range(24)]
VIA = (PROXY, PROXY2, PROXY3)
CONTAINER = 'c'
# the storage server whose disk refuses writes, and how long the phase
# lasts (the disk refuses them until the end)
DISK_NODE = 1
DISK_FOR = 15
# the answer that acknowledges each kind of write: a PUT that Swift
# answers 202 was refused as older than the version the object servers
# hold (its X-Timestamp is older: a wall clock stepped back), which stays
# the current one
ACKNOWLEDGED = {'PUT': 201, 'POST': 202, 'DELETE': 204}


class AcknowledgedLoad(Load):
    """test_cache's Load, judged by the writes that were acknowledged: a
    write that failed may or may not have changed its object, so it
    neither raises the floor a read must reach nor makes an older version
    stale.  Counts by ``phase`` (set by the test)."""

    def __init__(self, *args, **kwargs):
        super(AcknowledgedLoad, self).__init__(*args, **kwargs)
        self.acknowledged = {name: set() for name in self.names}
        self.lost = []
        self.phase = 'start'
        self.by_phase = collections.defaultdict(collections.Counter)

    def _count(self, counter, n=1):
        with self.count_lock:
            self.by_phase[self.phase][counter] += n

    def _write(self, name, kind, proxy):
        h = self.history
        version = h.issue(name, kind)
        headers = {'X-Object-Meta-V': str(version)}
        started = time.time()
        data = body_for(name, version) if kind == 'PUT' else None
        resp = self.client.request(kind, proxy, name, headers=headers,
                                   data=data)
        self.write_latencies.append((started, time.time() - started))
        ok = resp.status_code == ACKNOWLEDGED[kind]
        with h.lock:
            if ok:
                h.acked[name] = version
                self.acknowledged[name].add(version)
            h.via[name][version] = (proxy[-4:], '%.3f' % time.time(),
                                    resp.status_code)
        self._count('writes')
        if ok:
            self._count('acknowledged')
        else:
            self._count('failed %s %d' % (kind, resp.status_code))
            self.failed.append((name, proxy, kind, resp.status_code,
                                self.phase))

    def acknowledged_versions(self, name):
        with self.history.lock:
            return set(self.acknowledged[name])

    def verdict(self, name, floor, ceiling, resp):
        """None for a right read of ``name`` begun when ``floor`` was the
        last acknowledged version and ended when ``ceiling`` was the last
        issued, else 'stale', 'wrong' or 'failed'."""
        h = self.history
        with h.lock:
            kinds = dict(h.ops[name])
            acknowledged = set(self.acknowledged[name])
        if resp.status_code == 404:
            # right if nothing was acknowledged yet, or a delete (done or
            # under way) may have removed it since the floor
            if floor == 0 or any(kinds.get(v) == 'DELETE'
                                 for v in range(floor, ceiling + 1)):
                return None
            return 'stale'
        if resp.status_code != 200:
            return 'failed'
        try:
            version = int(resp.headers['X-Object-Meta-V'])
        except (KeyError, ValueError):
            return 'wrong'
        data = data_version(name, resp.content)
        if version > ceiling or kinds.get(version) not in ('PUT', 'POST') \
                or data is None or data > version \
                or kinds.get(data) != 'PUT' \
                or (kinds[version] == 'PUT' and data != version):
            return 'wrong'
        # older metadata than acknowledged, or a body older than a PUT or
        # DELETE acknowledged before the read began
        if version < floor or any(
                v in acknowledged and kinds[v] in ('PUT', 'DELETE')
                for v in range(data + 1, floor + 1)):
            return 'stale'
        return None

    def _what(self, name, proxy, floor, ceiling, resp):
        return (name, proxy, floor, ceiling, resp.status_code,
                resp.headers.get('X-Object-Meta-V'),
                resp.headers.get('X-Mass-Cache'),
                resp.headers.get('X-Timestamp'), resp.content[:30],
                self.phase, '%.3f' % time.time())

    def check(self, name, proxy, floor, ceiling, resp):
        hit = resp.headers.get('X-Mass-Cache') == 'hit'
        with self.count_lock:
            self.reads += 1
            if self.in_outage:
                self.outage_reads += 1
            if hit:
                self.hits[proxy] += 1
                if self.in_outage:
                    self.outage_hits[proxy] += 1
        self._count('reads')
        if hit:
            self._count('hits')
        verdict = self.verdict(name, floor, ceiling, resp)
        if verdict is not None:
            self._count(verdict if verdict != 'failed' else
                        'failed GET %d' % resp.status_code)
            getattr(self, verdict).append(
                self._what(name, proxy, floor, ceiling, resp))

    def history_of(self, what):
        """The writes of a bad read's object from the one before the
        version it served to the last issued when it ended: (version,
        kind, proxy, time acknowledged or failed, status)."""
        name, served, ceiling = what[0], what[5], what[3]
        low = min(int(served) if served and served.isdigit() else what[2],
                  what[2]) - 1
        h = self.history
        with h.lock:
            return [(v, kind) + h.via[name].get(v, ())
                    for v, kind in h.ops[name] if low <= v <= ceiling + 1]

    def report(self):
        kinds = (('stale', self.stale), ('wrong', self.wrong),
                 ('lost', self.lost))
        return '\n'.join(
            '%s: %r; writes %r' % (label, what, self.history_of(what))
            for label, bad in kinds for what in bad[:5])

    def check_lost(self, reads=None):
        """Once every writer stopped: each object through every proxy,
        and with X-Newest through Swift alone (every replica asked);
        ``reads``: other ``(proxy, headers)`` to read it with."""
        self.phase = 'afterwards'
        h = self.history
        if reads is None:
            reads = [(p, {}) for p in VIA] + [
                (PROXY3, {'X-Newest': 'true'})]
        for name in self.names:
            with h.lock:
                floor, ceiling = h.acked[name], h.issued[name]
            for proxy, headers in reads:
                resp = self.client.request('GET', proxy, name,
                                           headers=headers)
                self.judge_afterwards(name, proxy, floor, ceiling, resp)

    def judge_afterwards(self, name, proxy, floor, ceiling, resp):
        """A read of :meth:`check_lost`: a stale one lost a write."""
        verdict = self.verdict(name, floor, ceiling, resp)
        if verdict == 'stale':
            self.lost.append(self._what(name, proxy, floor, ceiling, resp))
        elif verdict is not None:
            getattr(self, verdict).append(
                self._what(name, proxy, floor, ceiling, resp))


def hits_through_both(load, more, limit):
    """Until ``more`` hits more through each proxy with Mass (unlike
    test_redis_partition's wait, a stale read fails the test only at its
    end, once every phase has been counted)."""
    start = {proxy: load.hits[proxy] for proxy in PROXIES}
    until(lambda: all(load.hits[proxy] >= start[proxy] + more
                      for proxy in PROXIES), limit,
          '%d more hits through each of %s' % (more, ' and '.join(PROXIES)))


@contextlib.contextmanager
def phase(load, name, timings):
    load.phase = name
    started = time.time()
    try:
        yield
    finally:
        timings[name] = time.time() - started


def redis_partitioned(load):
    """The master cut off from the sentinels until a replica is promoted
    and both proxies serve hits from it (the object servers' connections
    to the old master closed, as test_redis_partition does), then
    healed."""
    old_host, old_port = old = named_master()
    old_master = redis.Redis(old_host, old_port, socket_timeout=5)
    load.in_outage = True
    try:
        parted = topology('partition')
        assert parted.returncode == 0, parted.stdout + parted.stderr
        promoted = named_master()
        assert promoted not in (None, old), (promoted, old)
        close_connections_of(old_master, old_port, 'swift-object')
        hits_through_both(load, 20, 120)
    finally:
        load.in_outage = False
        healed = topology('heal')
        old_master.close()
    assert healed.returncode == 0, healed.stdout + healed.stderr


def refused_status(account, name):
    """The status of a write of ``name`` sent straight to the faulty
    device's object server (as its proxy would), 201 if it took it."""
    ring = POLICIES.get_object_ring(0, SWIFT_DIR)
    node, = [dev for dev in ring.devs if dev and
             dev['device'] == 'sdb%d' % DISK_NODE]
    try:
        direct_client.direct_put_object(
            node, ring.get_part(account, CONTAINER, name), account,
            CONTAINER, name, b'probe', headers={
                'X-Timestamp': Timestamp.now().internal,
                'Content-Type': 'application/octet-stream',
                'X-Backend-Storage-Policy-Index': '0'})
    except direct_client.DirectClientException as err:
        return err.http_status
    return 201


def migration(account):
    return subprocess.run(
        command('run', account, CONTAINER, '--policy', 'bulk',
                '--settle', '6', '--lock-ttl', '6'),
        env=run_env(), cwd=ROOT, capture_output=True, text=True,
        timeout=300)


def abort_move(account):
    """Give the container back as an operator would (the failed run left
    its journal and staging copies); nothing to abort is no error."""
    for _ in range(5):
        aborted = subprocess.run(
            command('abort', account, CONTAINER, '--settle', '0',
                    '--lock-ttl', '6'),
            env=run_env(), cwd=ROOT, capture_output=True, text=True,
            timeout=300)
        if aborted.returncode == 0 or \
                'is not being moved' in aborted.stderr:
            return
        time.sleep(3)  # a lock a killed run held lasts --lock-ttl
    pytest.fail('swift-mass migrate abort could not give %s back:\n%s'
                % (CONTAINER, aborted.stderr))


def remove_account_data(operator, account):
    for container in (CONTAINER, '.mass-migrate-' + CONTAINER,
                      '.mass-migrate'):
        c = Client(operator, account, container)
        listing = c.request('GET', PROXY, params={'format': 'json'})
        for obj in listing.json() if listing.status_code == 200 else []:
            c.request('DELETE', PROXY, obj['name'])
        c.request('DELETE', PROXY)


def test_faults_one_after_another_serve_nothing_stale_and_lose_nothing(
        sentinel_engine, admin, tmp_path):  # noqa: F811
    store = sentinel_store_ready()
    account = 'AUTH_ft%s' % uuid.uuid4().hex[:10]
    owner = Client(admin, account, CONTAINER)
    client = Client(Tenant('test:tester3', 'testing3'), account, CONTAINER)
    load = AcknowledgedLoad(client, NAMES, write_via=VIA, read_via=VIA)
    timings = {}
    migrated = watch = None
    faulty_disk = contextlib.ExitStack()
    try:
        assert owner.request('PUT', PROXY, headers={
            'X-Container-Read': 'test:tester3',
            'X-Container-Write': 'test:tester3'}).status_code in (201, 202)
        assert owner.request('HEAD', PROXY).headers[
            'X-Storage-Policy'] == 'standard'
        pin(account, 'cache')
        wait_for_method(client, 'cache')
        load.seed()
        load.start()
        with phase(load, 'warm-up', timings):
            hits_through_both(load, 30, 60)

        with phase(load, 'redis partition', timings):
            redis_partitioned(load)
            hits_through_both(load, 20, 120)

        with phase(load, 'disk errors', timings):
            # until the load is over (see the module's docstring)
            faulty_disk.enter_context(refusing_objects(
                DISK_NODE, str(tmp_path), account, CONTAINER, NAMES))
            started = time.time()
            status = refused_status(account, 'disk-probe')
            assert status >= 500, status
            hits_through_both(load, 20, 60)
            time.sleep(max(0.0, started + DISK_FOR - time.time()))

        with phase(load, 'ring broken', timings):
            registry = Registry()
            with RegistrationWatch(registry) as watch:
                with ring_broken_in_place(FAST_RING):
                    time.sleep(BROKEN_FOR)
                renewed = registry.renewed(2 * REGISTRATION_LIFE)
            assert renewed, 'a heartbeat of an object server did not ' \
                'come back with the ring: %r' % registry.expiries()
            hits_through_both(load, 20, 60)

        with phase(load, 'migrate fails', timings):
            # expired once the run has waited --settle: listed, unreadable
            assert owner.request('PUT', PROXY, 'expiring', data=b'soon',
                                 headers={'X-Delete-At': str(int(
                                     time.time()) + 3)}).status_code == 201
            run_started = time.time()
            migrated = migration(account)
            timings['swift-mass migrate run'] = time.time() - run_started
            assert migrated.returncode != 0, migrated.stderr
            assert 'writes to %s are allowed again' % CONTAINER in \
                migrated.stderr, migrated.stderr
            until(lambda: client.request('PUT', PROXY, 'after-move',
                                         data=b'x').status_code == 201,
                  30, 'a write through %s once the run failed' % PROXY)
            owner.request('DELETE', PROXY, 'expiring')
            hits_through_both(load, 20, 60)
        load.finish()
        load.check_lost()
    finally:
        if load.threads[0].ident is not None:
            load.finish()
        try:
            faulty_disk.close()
        finally:
            try:
                if migrated is not None:
                    abort_move(account)
            finally:
                store.delete_pin(account)
                remove_account_data(admin, account)
    acknowledged = sum(len(v) for v in load.acknowledged.values())
    written = sum(load.history.issued.values())
    print('faults: %d reads (hits %r), %d writes, %d acknowledged; '
          '%d stale, %d wrong, %d lost, %d failed' % (
              load.reads, load.hits, written, acknowledged,
              len(load.stale), len(load.wrong), len(load.lost),
              len(load.failed)))
    for name, counts in load.by_phase.items():
        print('  %s (%.0f s): %s' % (name, timings.get(name, 0), ', '.join(
            '%s %d' % item for item in sorted(counts.items()))))
    print('  registrations sampled %d times with the ring broken, %d with '
          'a device unregistered' % (watch.samples, len(watch.gaps)))
    print('  swift-mass migrate run (%.0f s), exit %d: %s' % (
        timings['swift-mass migrate run'], migrated.returncode,
        migrated.stderr.strip().splitlines()[-1]))
    if load.stale or load.wrong or load.lost:
        print(load.report())
    assert load.stale == [] and load.wrong == [] and load.lost == [], \
        load.report()
    assert watch.errors == [] and watch.gaps == [], (watch.errors[:3],
                                                     watch.gaps[:5])
    assert migrated.returncode != 0
    assert all(load.hits[proxy] > 0 for proxy in PROXIES)
