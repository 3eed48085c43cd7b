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
"""The cache's promise when the real Redis misbehaves as production Redis
does: restarted from its own snapshot, refusing writes, hung.  Writers go
through one proxy (8081) and readers through the other (8080) throughout;
every read is checked against the history of acknowledged writes (see
tests/functional/test_cache.py's Load), and each test prints the hits
served in the window it checks and asserts there were some, so a test that
merely turned the cache off fails."""
import configparser
import contextlib
import glob
import os
import re
import signal
import subprocess
import time
import uuid

import redis

from swift.common import direct_client
from swift.common.storage_policy import POLICIES
from swift.common.utils import Timestamp

from tests.functional.test_cache import PROXY, PROXY2, Client, Load, \
    admin, client, get_until_hit, pin, wait_for_method  # noqa: F401 (fixtures)
from tests.functional.conftest import SAIO, saio
from tests.functional.waiting import until

REDIS_URL = 'redis://127.0.0.1:6379/0'
# the SAIO's proxy without Mass (tools/saio)
PROXY3 = 'http://127.0.0.1:8082'
NAMES = ['ns-%02d' % i for i in range(24)]


def redis_client():
    return redis.Redis.from_url(REDIS_URL, socket_timeout=5)


def load_through_two_proxies(client):  # noqa: F811
    # each test's own pin: the Redis a test before left (a promoted replica
    # that lagged, a snapshot) may not hold the pin the fixture made, and
    # the control loop then gives the tenant what its load earns
    pin(client.account, 'cache')
    wait_for_method(client, 'cache')
    load = Load(client, NAMES, write_via=(PROXY2,), read_via=(PROXY,))
    load.seed()
    load.start()
    return load


def hits(load):
    return load.hits[PROXY]


def finish(load, label):
    load.finish()
    print('%s: %d reads, %d hits through %s; %d stale, %d wrong, '
          '%d failed' % (label, load.reads, hits(load), PROXY,
                         len(load.stale), len(load.wrong),
                         len(load.failed)))
    assert load.stale == [] and load.wrong == [], load.report()
    assert load.failed == [], load.failed[:5]


def wait_hits(load, more, limit=60):
    start = hits(load)
    until(lambda: hits(load) >= start + more, limit,
          '%d more hits through %s' % (more, PROXY))
    assert load.stale == [] and load.wrong == [], load.report()


def loaded_snapshot():
    try:
        return redis_client().dbsize() > 0
    except redis.ConnectionError:  # not listening yet
        return False


def restart_from_snapshot(meanwhile):
    """Redis saves a snapshot, ``meanwhile()`` runs (the writes the
    snapshot does not have), and Redis is restarted from the snapshot: it
    went back in time."""
    r = redis_client()
    directory = r.config_get('dir')['dir']
    dbfilename = r.config_get('dbfilename')['dbfilename']
    r.save()
    meanwhile()
    try:
        r.shutdown(nosave=True)
    except redis.ConnectionError:
        pass
    start_redis(directory, dbfilename)
    until(loaded_snapshot, 20, 'Redis loaded its snapshot')


def start_redis(directory, dbfilename):
    """The SAIO's Redis (127.0.0.1:6379) started from the snapshot
    ``dbfilename`` in ``directory``, saving nothing of its own."""
    subprocess.run(['redis-server', '--daemonize', 'yes', '--bind',
                    '127.0.0.1', '--port', '6379', '--save', '',
                    '--appendonly', 'no', '--dir', directory,
                    '--dbfilename', dbfilename], check=True,
                   stdout=subprocess.DEVNULL)


def ensure_redis():
    try:
        redis_client().ping()
    except redis.ConnectionError:
        subprocess.run([SAIO, 'start'], check=True,
                       stdout=subprocess.DEVNULL)


def test_a_restart_from_its_own_snapshot_serves_nothing_stale(client):  # noqa: F811,E501
    """Redis saves a snapshot, takes more writes, and is restarted from
    the snapshot: the generations of those writes go back in time."""
    load = load_through_two_proxies(client)
    try:
        wait_hits(load, 200)
        counted = {}

        def writes_the_snapshot_lacks():
            time.sleep(2)
            counted['before'] = hits(load)
        restart_from_snapshot(writes_the_snapshot_lacks)
        before = counted['before']
        wait_hits(load, 200)
        print('hits before the restart %d, after it %d'
              % (before, hits(load) - before))
    finally:
        finish(load, 'restart from snapshot')
        ensure_redis()
        try:
            os.unlink(os.path.join(directory, dbfilename))
        except (OSError, NameError):
            pass


def answers(redis_):
    try:
        return redis_.ping()
    except redis.ConnectionError:
        return False


def replica_in_sync(replica):
    try:
        info = replica.info('replication')
    except redis.ConnectionError:
        return False
    return info.get('master_link_status') == 'up' and \
        info.get('master_sync_in_progress') == 0


class LaggingReplicaFailover(object):
    """A second redis-server (6380) replicating the SAIO's Redis, its
    data in ``directory``; :meth:`fail_over` makes it lag and promotes it
    in the master's place, :meth:`remove` stops it and its front (the
    SAIO's Redis is the caller's to start again)."""

    def __init__(self, directory):
        self.replica = subprocess.Popen(
            ['redis-server', '--port', '6380', '--bind', '127.0.0.1',
             '--save', '', '--appendonly', 'no', '--dir', directory,
             '--replicaof', '127.0.0.1', '6379'],
            stdout=subprocess.DEVNULL)
        self.promoted = redis.Redis(port=6380, socket_timeout=5)
        self.front = None

    def fail_over(self, meanwhile):
        """The replica is stopped (SIGSTOP) once in sync, so it lags,
        while ``meanwhile()`` runs (the writes it does not get); the
        master dies, the replica is promoted (REPLICAOF NO ONE), and a
        TCP front (socat, as a failover's virtual IP would) sends
        127.0.0.1:6379 to it."""
        until(lambda: replica_in_sync(self.promoted), 30,
              'the replica in sync with its master')
        os.kill(self.replica.pid, signal.SIGSTOP)
        meanwhile()
        try:
            # NOW: a master waits for lagging replicas before it stops
            redis_client().shutdown(nosave=True, now=True)
        except redis.ConnectionError:
            pass
        until(lambda: not answers(redis_client()), 10, 'the master gone')
        os.kill(self.replica.pid, signal.SIGCONT)
        self.promoted.replicaof('NO', 'ONE')
        # a session of its own: its forked connections go with it
        self.front = subprocess.Popen(
            ['socat', 'TCP-LISTEN:6379,bind=127.0.0.1,reuseaddr,fork',
             'TCP:127.0.0.1:6380'], stdout=subprocess.DEVNULL,
            start_new_session=True)
        until(lambda: answers(redis_client()), 20,
              'the promoted replica answering on 6379')

    def remove(self):
        if self.front is not None:
            os.killpg(self.front.pid, signal.SIGTERM)
            self.front.wait()
        os.kill(self.replica.pid, signal.SIGCONT)
        self.replica.terminate()
        self.replica.wait()


def test_a_lagging_replica_promoted_serves_nothing_stale(client, tmp_path):  # noqa: F811,E501
    """A second redis-server (6380) replicates the SAIO's Redis; it is
    stopped (SIGSTOP), so it lags, while writes go on; the master dies,
    the replica is promoted (REPLICAOF NO ONE), and a TCP front (socat,
    as a failover's virtual IP would) sends 127.0.0.1:6379 to it.  The
    generations of the writes it missed go back in time."""
    load = load_through_two_proxies(client)
    failover = LaggingReplicaFailover(str(tmp_path))
    seen = {}

    def writes_it_does_not_get():
        time.sleep(2)
        seen['before'] = hits(load)
    try:
        wait_hits(load, 200)
        failover.fail_over(writes_it_does_not_get)
        wait_hits(load, 200)
        print('hits before the failover %d, after it %d'
              % (seen['before'], hits(load) - seen['before']))
    finally:
        finish(load, 'lagging replica promoted')
        failover.remove()
        ensure_redis()


def test_a_redis_that_refuses_writes_serves_nothing_stale(client):  # noqa: F811,E501
    """min-replicas-to-write with no replica: every write is refused
    (NOREPLICAS) while reads are answered."""
    load = load_through_two_proxies(client)
    r = redis_client()
    try:
        wait_hits(load, 200)
        r.config_set('min-replicas-max-lag', 10)
        r.config_set('min-replicas-to-write', 1)
        refusing_from = load.reads
        time.sleep(8)
        during = hits(load)
        r.config_set('min-replicas-to-write', 0)
        print('%d reads while Redis refused writes' % (
            load.reads - refusing_from))
        wait_hits(load, 200)
        print('hits after Redis took writes again: %d'
              % (hits(load) - during))
    finally:
        r.config_set('min-replicas-to-write', 0)
        finish(load, 'refusing writes')


def p99(latencies):
    ordered = sorted(latencies)
    return ordered[int(0.99 * (len(ordered) - 1))] if ordered else 0.0


def test_a_hung_redis_serves_nothing_stale(client):  # noqa: F811
    """SIGSTOP for 10 s, then SIGCONT: writes go on (each object server
    waits for Redis at most its bump_wait_ms, the proxies not at all: no
    write waits for the hang) and nothing stale is read.  The write p99
    before and during the hang is printed: a speed, measured, not
    asserted."""
    load = load_through_two_proxies(client)
    load_started = time.time()
    r = redis_client()
    pid = int(r.info('server')['process_id'])
    try:
        wait_hits(load, 200)
        time.sleep(max(0.0, load_started + 10 - time.time()))
        # p99 over some 300 writes each side: 10 s of them
        baseline_from = time.time() - 10
        os.kill(pid, signal.SIGSTOP)
        hung_from = time.time()
        try:
            time.sleep(10)
        finally:
            os.kill(pid, signal.SIGCONT)
        hung_until = time.time()
        wait_hits(load, 200)
        normal = [s for t, s in load.write_latencies
                  if baseline_from <= t < hung_from]
        hung = [s for t, s in load.write_latencies
                if hung_from <= t < hung_until - 1]
        print('write p99 before the hang %.0f ms (%d writes), during it '
              '%.0f ms (%d writes)' % (p99(normal) * 1000, len(normal),
                                       p99(hung) * 1000, len(hung)))
        assert len(hung) > 20
        # none waited for the hung Redis (10 s)
        assert max(hung) < 5.0, max(hung)
    finally:
        os.kill(pid, signal.SIGCONT)
        finish(load, 'hung Redis')


def writes_without_mass_read_through_mass(client, label):  # noqa: F811
    """Writes through the proxy without Mass, which only the object
    servers' bumps tell the proxies of, read through a proxy with Mass
    until 300 hits: none may be stale."""
    load = Load(client, NAMES, write_via=(PROXY3,), read_via=(PROXY,))
    load.seed()
    load.start()
    try:
        wait_hits(load, 300)
    finally:
        finish(load, label)


def test_writes_through_a_proxy_without_mass_are_never_hidden(client):  # noqa: F811,E501
    """The SAIO's third proxy (8082) has no Mass, as a proxy a rolling
    install has not reached yet: its writes are bumped by the object
    servers all the same, and the proxy with Mass reads none stale."""
    writes_without_mass_read_through_mass(client, 'writes without Mass')


@contextlib.contextmanager
def object_servers_set_up_in_their_app_section():
    """Every object server with ``devices`` and ``mount_check`` in
    ``[app:object-server]`` only, as Swift lets an operator set them (the
    SAIO's are in ``[DEFAULT]``), restarted; put back and restarted after."""
    saved = {}
    for path in sorted(glob.glob('/etc/swift/object-server/*.conf')):
        with open(path) as f:
            saved[path] = f.read()
        conf = configparser.RawConfigParser()
        conf.optionxform = str
        conf.read_string(saved[path])
        for option in ('devices', 'mount_check'):
            value = conf.defaults()[option]
            conf.remove_option(configparser.DEFAULTSECT, option)
            conf.set('app:object-server', option, value)
        with open(path, 'w') as f:
            conf.write(f)
    try:
        started = saio('restart', 'object-server', check=False)
        assert started.returncode == 0, started.stdout
        yield
    finally:
        for path, text in saved.items():
            with open(path, 'w') as f:
                f.write(text)
        started = saio('restart', 'object-server', check=False)
        assert started.returncode == 0, started.stdout


def test_object_servers_set_up_in_their_app_section_bump_every_write(
        client):  # noqa: F811
    """Item 12 of issue 25 on real servers: mass_queue judged whether a
    write was to one of its devices from its own section's ``devices``
    (default /srv/node), while it registered the ring's devices as
    bumping: with the object server's ``devices`` in
    ``[app:object-server]`` only, no write was bumped, every device counted
    as covered, and the proxies served replaced bodies.  Writes through
    the proxy without Mass (only the object servers' bumps tell the
    proxies), reads through a proxy with Mass."""
    with object_servers_set_up_in_their_app_section():
        pin(client.account, 'cache')
        wait_for_method(client, 'cache')
        writes_without_mass_read_through_mass(
            client, 'object servers set up in [app:object-server]')


def test_objects_swifts_own_daemons_delete_are_not_served(client):  # noqa: F811,E501
    """swift-container-deleter queues a container's objects for the
    object-expirer, which deletes them through its internal client (a
    pipeline without Mass): the object servers' mass_queue gives each a
    new generation, so no proxy serves its cached body afterwards."""
    names = ['expire-%d-%s' % (i, uuid.uuid4().hex[:6]) for i in range(5)]
    for name in names:
        assert client.request('PUT', PROXY2, name,
                              data=name.encode()).status_code == 201
        assert get_until_hit(client, PROXY, name).content == name.encode()
    print('%d objects cached through %s before they were deleted'
          % (len(names), PROXY))
    subprocess.run(['swift-container-deleter', client.account,
                    client.container, '--prefix', 'expire-'], check=True,
                   stdout=subprocess.DEVNULL)
    # the container updaters tell the queue's account of its containers,
    # as they do in a cluster every few minutes
    for n in (1, 2, 3, 4):
        subprocess.run(['swift-container-updater',
                        '/etc/swift/container-server/%d.conf' % n, 'once'],
                       check=True, stdout=subprocess.DEVNULL)
    expirer = subprocess.run(
        ['swift-object-expirer', '/etc/swift/object-expirer.conf', '--once',
         '-v'], check=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    expired = re.search(r'(\d+) objects expired', expirer.stdout)
    assert expired and int(expired.group(1)) >= len(names), expirer.stdout
    print(expired.group(0))
    for name in names:
        for proxy in (PROXY, PROXY2):
            resp = client.request('GET', proxy, name)
            assert resp.status_code == 404, (
                name, proxy, resp.status_code, dict(resp.headers))


def test_a_replica_that_missed_a_write_before_the_cache_fills_nothing(
        admin, store):  # noqa: F811
    """A write acknowledged by two of three replicas before the tenant had
    the cache records no write timestamp; the third replica still holds
    the old version.  Swift alone serves it only to the reads that reach
    that replica; the cache must not fill with it, or every proxy would
    serve it as a hit.  The proxy picks a replica at random: with twelve
    such objects, a fill that reads one replica would take an old version
    but for a chance of (2/3)^12, under 1 %."""
    account = 'AUTH_mclag%s' % uuid.uuid4().hex[:8]
    lagging = Client(admin, account, 'c')
    assert lagging.request('PUT', PROXY).status_code in (201, 202)
    policy = POLICIES.get_by_name(lagging.request('HEAD', PROXY).headers[
        'X-Storage-Policy'])
    ring = POLICIES.get_object_ring(int(policy), '/etc/swift')
    names = ['o%02d' % i for i in range(12)]
    try:
        for name in names:
            assert lagging.request('PUT', PROXY3, name,
                                   data=b'old').status_code == 201
            part, nodes = ring.get_nodes(account, 'c', name)
            assert len(nodes) == 3
            # the newer version, as a PUT that reached two of the
            # primaries (the third was down) writes it; no replicator runs
            # on the SAIO
            new = Timestamp.now().internal
            for node in nodes[:2]:
                direct_client.direct_put_object(
                    node, part, account, 'c', name, b'new',
                    headers={'X-Timestamp': new,
                             'X-Backend-Storage-Policy-Index':
                             str(int(policy)),
                             'Content-Type': 'application/octet-stream'})
        pin(account, 'cache')
        wait_for_method(lagging, 'cache')
        served = {(r.status_code, r.content, r.headers.get('X-Mass-Cache'))
                  for r in (lagging.request('GET', proxy, name)
                            for _ in range(3) for name in names
                            for proxy in (PROXY, PROXY2))}
        print('reads of objects one replica lags on: %s' % sorted(served))
        assert {(code, body) for code, body, _ in served} == {(200, b'new')}
        assert any(how == 'hit' for _, _, how in served)
    finally:
        store.delete_pin(account)
        for name in names:
            lagging.request('DELETE', PROXY3, name)
        lagging.request('DELETE', PROXY)
