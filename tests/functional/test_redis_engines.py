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
"""Mass on Redis's two high-availability engines, Sentinel and Cluster
(``tools/saio redis sentinel|cluster``; the topologies are
tools/saio.d/redis-topology's, beside the SAIO's own Redis).

Under load (a cached tenant whose objects are written through one proxy
(8081) and read through the other (8080), every read checked against the
acknowledged writes as tests/functional/test_cache.py's Load does, and a
second tenant writing through 8080), the master holding Mass's keys is
killed (SIGKILL) and a replica promoted.  Through it: no client request
fails, no read is stale or wrong, the operator's pin and the control
loop's decision for the tenant are still there, and the cache serves hits
again from the promoted master (its generations under a new epoch: the
promoted node is another Redis process).
"""
import subprocess
import threading
import time
import uuid

import pytest
import redis
import requests

from swift_mass.cli import control
from tests.functional.conftest import PROXY, PROXY_CONF, ROOT, saio
from tests.functional.test_cache import PROXY2, Client, Load, admin, \
    generations_trusted, pin, proxies_redis, wait_for_method  # noqa: F401
from tests.functional.test_never_stale import finish, hits, wait_hits
from tests.functional.waiting import until

TOPOLOGY = ROOT + '/tools/saio.d/redis-topology'
NAMES = ['he-%02d' % i for i in range(24)]


@pytest.fixture(scope='module', params=['sentinel', 'cluster'])
def engine(request, cluster):
    switched = saio('redis', request.param, check=False)
    try:
        assert switched.returncode == 0, switched.stdout + switched.stderr
        yield request.param
    finally:
        back = saio('redis', 'single', check=False)
        assert back.returncode == 0, back.stdout + back.stderr


class Writer(threading.Thread):
    """Another tenant's client, writing new objects through 8080 until
    stopped; every answer but a 201 is kept, and each PUT's latency as
    (start time, seconds)."""

    def __init__(self, tenant_url, token, container):
        super(Writer, self).__init__(daemon=True)
        self.url = '%s/%s' % (tenant_url, container)
        self.token = token
        self.stopping = threading.Event()
        self.done, self.failed = 0, []
        self.latencies = []

    def run(self):
        n = 0
        while not self.stopping.is_set():
            n += 1
            started = time.time()
            try:
                resp = requests.put('%s/w%05d' % (self.url, n),
                                    data=b'w' * 8192, timeout=20,
                                    headers={'X-Auth-Token': self.token})
                status = resp.status_code
            except requests.RequestException as err:
                status = repr(err)
            self.latencies.append((started, time.time() - started))
            if status == 201:
                self.done += 1
            else:
                self.failed.append((n, status))


def percentiles(latencies, start, end):
    """``(count, p50 ms, p99 ms)`` of the requests (start time, seconds)
    that started between ``start`` and ``end``."""
    ordered = sorted(s for t, s in latencies if start <= t <= end)
    if not ordered:
        return 0, 0.0, 0.0
    return (len(ordered), 1000 * ordered[int(0.5 * (len(ordered) - 1))],
            1000 * ordered[int(0.99 * (len(ordered) - 1))])


def answered(call, attempts=5):
    for attempt in range(attempts):
        try:
            return call()
        except redis.RedisError:
            if attempt == attempts - 1:
                raise
            time.sleep(1)


def test_a_failover_under_load_fails_nothing_and_serves_nothing_stale(
        engine, admin):  # noqa: F811
    _, store, _ = control.load(PROXY_CONF)
    generations_trusted(store)
    account = 'AUTH_me%s' % uuid.uuid4().hex[:10]
    client = Client(admin, account, 'c')
    assert client.request('PUT', PROXY).status_code in (201, 202)
    writer_account = 'AUTH_mw%s' % uuid.uuid4().hex[:10]
    writer_url = admin.url.rsplit('/', 1)[0] + '/' + writer_account
    assert requests.put(writer_url + '/w', headers={
        'X-Auth-Token': admin.token}, timeout=20).status_code in (201, 202)
    pin(account, 'cache')
    wait_for_method(client, 'cache')
    load = Load(client, NAMES, write_via=(PROXY2,), read_via=(PROXY,))
    load.seed()
    load.start()
    writer = Writer(writer_url, admin.token, 'w')
    writer.start()
    try:
        wait_hits(load, 30)
        before = hits(load)
        mass_redis, prefix = proxies_redis()
        epoch = answered(lambda: mass_redis.get(prefix + 'epoch'))
        instance = answered(lambda: mass_redis.get(prefix + 'instance'))
        assert epoch and instance
        stopped = time.time()
        killed = subprocess.run([TOPOLOGY, engine, 'kill-master'],
                                capture_output=True, text=True, timeout=120)
        promoted = time.time()
        assert killed.returncode == 0, killed.stdout + killed.stderr
        # sharing resumes on the promoted master
        wait_hits(load, 30, limit=120)
    finally:
        writer.stopping.set()
        writer.join(60)
        finish(load, '%s failover' % engine)
    print('%s: %d hits before the kill; %s; %d writes of the other tenant'
          % (engine, before, killed.stdout.strip().splitlines()[-1],
             writer.done))
    # what a write waits while the master is down (docs/redis.md): PUTs
    # started from the kill until a replica was promoted, against the
    # 10 s before
    for label, latencies in (
            ('PUTs through 8080 of a tenant outside the bumped set',
             writer.latencies),
            ('the cached tenant\'s writes through 8081',
             load.write_latencies)):
        print('%s: master down %.1f s; %s: before %d, p50 %.0f ms, p99 '
              '%.0f ms; while down %d, p50 %.0f ms, p99 %.0f ms' % (
                  (engine, promoted - stopped, label) +
                  percentiles(latencies, stopped - 10, stopped) +
                  percentiles(latencies, stopped, promoted)))
    assert writer.failed == [], writer.failed[:5]
    assert writer.done > 0
    # the promoted master is another Redis process: every generation the
    # killed one held was replaced at once.  Hits alone do not show that
    # Mass reached it (a hit checked against the primaries is a hit too),
    # and until its replica has synced the promoted master refuses
    # writes (min-replicas-to-write): Mass's first connection there, whose
    # instance check is a write, fails, and this client's GET does not.
    # So wait until a Mass connection has checked it.
    mass_redis, _ = proxies_redis()
    until(lambda: answered(
        lambda: mass_redis.get(prefix + 'instance')) != instance, 30,
        'a Mass connection checked on the promoted master')
    assert answered(lambda: mass_redis.get(prefix + 'epoch')) != epoch
    # the operator's pin and the control loop's entry are still there
    # (this test's own client met the killed master: like every Redis
    # client of Mass, its first call after a failover may fail, and the
    # next reaches the promoted one)
    pins = answered(store.get_pins)
    assert pins.get(account, {}).get('method') == 'cache', pins
    _, table = answered(store.get_table)
    assert table.get(account, {}).get('method') == 'cache', table.get(
        account)
    store.delete_pin(account)
