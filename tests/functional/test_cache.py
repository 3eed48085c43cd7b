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
"""The cache method on the SAIO's two proxies (8080: bodies in Redis, 8081:
bodies in memcache, encryption not encrypting new objects; one Redis for
both): overwrites and deletes through one proxy are never hidden by the
other's cache, also while Redis is down; hits are authorised; range and
conditional answers are Swift's, byte for byte; the budget holds.

Each run uses a fresh account (reached with the reseller admin's token),
pinned to read/cache.  Objects written through 8080 are encrypted at rest
and cached as ciphertext, those written through 8081 as plaintext: both
kinds are mixed on purpose."""
import configparser
import os
import random
import re
import subprocess
import threading
import time
import uuid

import pytest
import redis
import requests

from swift.common.memcached import load_memcache
from swift.common.utils import readconf

from swift_mass.cli.control import Quiet
from swift_mass.control.stores import store_from_conf
from swift_mass.proxy.conf import MassConf
from swift_mass.ring_devices import ring_devices
from swift_mass.redis_client import DEFAULT_REDIS_URL, client_from_url, \
    key_prefix
from tests.functional.conftest import PROXY, PROXY_CONF, SAIO, Tenant
from tests.functional.waiting import until

PROXY2 = 'http://127.0.0.1:8081'
PROXY2_CONF = '/etc/swift/proxy-server/2.conf'
PROXIES = (PROXY, PROXY2)
# parts of a response that belong to the response, not to the object
PER_RESPONSE = ('date', 'x-trans-id', 'x-openstack-request-id',
                'x-mass-cache', 'connection', 'keep-alive')


def swift_mass(*args):
    subprocess.run(['swift-mass', '--json'] + list(args), check=True,
                   stdout=subprocess.DEVNULL)


@pytest.fixture(scope='module')
def admin(cluster):
    for proxy in PROXIES:
        try:
            ok = requests.get(proxy + '/healthcheck', timeout=5).ok
        except requests.ConnectionError:
            ok = False
        if not ok:
            pytest.fail('no proxy at %s: run tools/saio up' % proxy)
    return Tenant('admin:admin', 'admin')


class Client(object):
    """The admin's requests to one account, through either proxy."""

    def __init__(self, admin, account, container):
        self.token = admin.token
        self.account = account
        self.container = container
        self.local = threading.local()

    def session(self):
        if not hasattr(self.local, 'session'):
            self.local.session = requests.Session()
        return self.local.session

    def url(self, proxy, name=None):
        path = '%s/v1/%s/%s' % (proxy, self.account, self.container)
        return path + '/' + name if name else path

    def request(self, method, proxy, name=None, headers=None, token=None,
                **kwargs):
        headers = dict(headers or {})
        headers['X-Auth-Token'] = token or self.token
        kwargs.setdefault('timeout', 30)
        return self.session().request(method, self.url(proxy, name),
                                      headers=headers, **kwargs)


def pin(account, method):
    swift_mass('pin', account, '--class', 'read', '--method', method)


# how often a proxy looks up the object servers' registrations
# (Generations.uncovered's period), and a heartbeat more
COVERAGE_PERIOD = 5.5


def proxies_redis():
    """A client of the Redis the proxies' generations use (single, Sentinel
    or Cluster: tools/saio redis), and the prefix of their keys there."""
    url = readconf(PROXY_CONF, 'filter:mass').get('redis_url',
                                                  DEFAULT_REDIS_URL)
    prefix = key_prefix(url, 'mass:cache:')
    return client_from_url(url, prefix, decode_responses=True,
                           socket_timeout=5), prefix


def tenant_trusted(account, within=30.0):
    """Until the proxies trust the account's generations: the leader
    published it as bumped, every live object server process of every
    device registered a version that has it, and the proxies' coverage
    lookups are that recent (swift_mass.generations: no write tax)."""
    client, prefix = proxies_redis()
    registry = prefix + 'bumping:'
    devices = sorted(ring_devices('/etc/swift'))

    def applied():
        entered = client.hget(prefix + 'bumps', account)
        if entered is None:
            return False
        now = int(client.time()[0] * 1000)
        for name in devices:
            live = [value.split() for value in
                    client.hvals(registry + name)]
            live = [int(v) for v, until_ms in live if int(until_ms) >= now]
            if not live or min(live) < int(entered):
                return False
        return True
    until(applied, within, 'the object servers bump %s' % account)
    time.sleep(COVERAGE_PERIOD)


def wait_for_method(client, method, within=20.0):
    """Until both proxies apply ``method`` to the account: a GET says so
    (X-Mass-Cache only appears when the cache considered it); for cache,
    until they trust its generations too."""
    name = 'probe-%s' % uuid.uuid4().hex[:6]
    assert client.request('PUT', PROXY2, name, data=b'p').status_code == 201
    deadline = time.time() + within
    for proxy in PROXIES:
        while True:
            seen = 'X-Mass-Cache' in client.request('GET', proxy,
                                                    name).headers
            if seen == (method == 'cache'):
                break
            assert time.time() < deadline, \
                '%s does not apply %s to %s' % (proxy, method,
                                                client.account)
            time.sleep(0.3)
    client.request('DELETE', PROXY2, name)
    if method == 'cache':
        tenant_trusted(client.account)


def generations_trusted(store, within=30.0):
    """Wait until every device of the SAIO's object rings has an object
    server registered as bumping generations, so that the proxies trust
    generations (the tests below are about generations, not the backend
    validation the proxies fall back on)."""
    registry = store.prefix + 'cache:bumping:'
    devices = sorted(ring_devices('/etc/swift'))
    until(lambda: all(store.client.exists(registry + name)
                      for name in devices), within,
          'every object server registered as bumping generations')


@pytest.fixture(scope='module')
def client(admin, store):
    generations_trusted(store)
    account = 'AUTH_mc%s' % uuid.uuid4().hex[:10]
    container = 'c'
    c = Client(admin, account, container)
    assert c.request('PUT', PROXY).status_code in (201, 202)
    pin(account, 'cache')
    wait_for_method(c, 'cache')
    yield c
    store.delete_pin(account)
    for proxy in PROXIES[:1]:
        listing = c.request('GET', proxy, params={'format': 'json'})
        for obj in listing.json() if listing.status_code == 200 else []:
            c.request('DELETE', proxy, obj['name'])
        c.request('DELETE', proxy)


def get_until_hit(client, proxy, name, **kwargs):
    for _ in range(5):
        resp = client.request('GET', proxy, name, **kwargs)
        if resp.headers.get('X-Mass-Cache') == 'hit':
            return resp
    pytest.fail('no hit for %s through %s: %r'
                % (name, proxy, dict(resp.headers)))


@pytest.mark.parametrize('prefix', ['o-', 'o-\u00f8\u55a0-'],
                         ids=['ascii', 'utf8'])
def test_writes_through_one_proxy_are_read_through_the_other(client, prefix):
    # a name beyond ASCII: the object servers bumped another key than the
    # proxies read, and a hit outlived a POST and a DELETE
    name = prefix + uuid.uuid4().hex[:6]
    assert client.request('PUT', PROXY2, name, data=b'one').status_code \
        == 201
    for proxy in PROXIES:
        assert get_until_hit(client, proxy, name).content == b'one'
    assert client.request('PUT', PROXY2, name, data=b'two').status_code \
        == 201
    for proxy in PROXIES:
        assert client.request('GET', proxy, name).content == b'two'
        assert get_until_hit(client, proxy, name).content == b'two'
    # through the other proxy: encrypted at rest, cached as ciphertext
    assert client.request('PUT', PROXY, name, data=b'three').status_code \
        == 201
    for proxy in PROXIES:
        assert client.request('GET', proxy, name).content == b'three'
        assert get_until_hit(client, proxy, name).content == b'three'
    assert client.request('PUT', PROXY2, name, data=b'four').status_code \
        == 201
    get_until_hit(client, PROXY, name)
    assert client.request('POST', PROXY2, name, headers={
        'X-Object-Meta-Color': 'red'}).status_code == 202
    resp = client.request('GET', PROXY, name)
    assert resp.headers['X-Object-Meta-Color'] == 'red'
    assert client.request('DELETE', PROXY2, name).status_code == 204
    for proxy in PROXIES:
        assert client.request('GET', proxy, name).status_code == 404


def test_a_hit_is_authorised(client, cluster):
    other = Tenant('test2:tester2', 'testing2')
    name = 'private-%s' % uuid.uuid4().hex[:6]
    assert client.request('PUT', PROXY2, name, data=b'secret'
                          ).status_code == 201
    for proxy in PROXIES:
        get_until_hit(client, proxy, name)
        resp = client.request('GET', proxy, name, token=other.token)
        assert resp.status_code == 403 and b'secret' not in resp.content
    assert client.request('POST', PROXY, headers={
        'X-Container-Read': '.r:*'}).status_code == 204
    try:
        for proxy in PROXIES:
            resp = get_until_hit(client, proxy, name, token=other.token)
            assert resp.content == b'secret'
            # anonymous too, as the ACL says
            resp = requests.get(client.url(proxy, name), timeout=10)
            assert resp.content == b'secret'
    finally:
        client.request('POST', PROXY, headers={'X-Remove-Container-Read':
                                               'x'})


def _normalised(resp):
    headers = {k.lower(): v for k, v in resp.headers.items()
               if k.lower() not in PER_RESPONSE}
    body = resp.content
    match = re.search(r'boundary=(\w+)', headers.get('content-type', ''))
    if match:
        boundary = match.group(1)
        headers['content-type'] = headers['content-type'].replace(
            boundary, 'B')
        body = body.replace(boundary.encode('ascii'), b'B')
    return resp.status_code, headers, body


@pytest.mark.parametrize('writer', [PROXY2, PROXY],
                         ids=['plaintext', 'encrypted'])
def test_range_and_conditional_answers_are_swifts(client, writer):
    name = 'ranged-%s' % uuid.uuid4().hex[:6]
    body = bytes(range(256)) * 40
    assert client.request('PUT', writer, name, data=body, headers={
        'Content-Type': 'application/x-test',
        'X-Object-Meta-Kind': 'ranged'}).status_code == 201
    first = client.request('GET', PROXY2, name)
    etag, modified = first.headers['ETag'], first.headers['Last-Modified']
    asks = [
        {}, {'Range': 'bytes=0-9'}, {'Range': 'bytes=-100'},
        {'Range': 'bytes=10000-'}, {'Range': 'bytes=20000-'},
        {'Range': 'bytes=0-1,100-199,5000-'}, {'Range': 'bytes=x'},
        {'If-Match': etag}, {'If-Match': '"0000"'}, {'If-Match': '*'},
        {'If-None-Match': etag}, {'If-None-Match': '*'},
        {'If-None-Match': '"0000"'},
        {'If-Modified-Since': modified},
        {'If-Modified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT'},
        {'If-Unmodified-Since': modified},
        {'If-Unmodified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT'},
        {'If-Match': etag, 'Range': 'bytes=5-9'},
        {'If-None-Match': '"0000"', 'Range': 'bytes=5-9'},
    ]

    def answers():
        return {(proxy, method, i): _normalised(client.request(
                    method, proxy, name, headers=ask))
                for proxy in PROXIES for method in ('GET', 'HEAD')
                for i, ask in enumerate(asks)}

    try:
        pin(client.account, 'none')
        wait_for_method(client, 'none')
        without = answers()
        assert all('x-mass-cache' not in headers
                   for _, headers, _ in without.values())
    finally:
        pin(client.account, 'cache')
        wait_for_method(client, 'cache')
    for proxy in PROXIES:
        get_until_hit(client, proxy, name)
    hits = {}
    for key, ask in [((p, m, i), a) for p in PROXIES
                     for m in ('GET', 'HEAD') for i, a in enumerate(asks)]:
        resp = client.request(key[1], key[0], name, headers=ask)
        # a failed precondition is left to Swift's proxy (see cache.py)
        assert resp.headers.get('X-Mass-Cache') == (
            'miss' if resp.status_code == 412 else 'hit'), (key, ask)
        hits[key] = _normalised(resp)
    differ = [(key, asks[key[2]], hits[key], without[key])
              for key in without if hits[key] != without[key]]
    assert differ == [], '\n'.join(repr(d) for d in differ)
    statuses = {without[key][0] for key in without}
    assert statuses == {200, 206, 304, 412, 416}


def test_cache_memory_stays_within_budget(client):
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(PROXY_CONF)
    budget = int(conf.get('filter:mass', 'cache_budget_bytes',
                          fallback=64 * 1024 * 1024))
    r = redis.Redis.from_url('redis://127.0.0.1:6379/0')
    size = 100 * 1024
    names = ['budget-%d' % i for i in range(int(budget * 2 / size) + 4)]
    for name in names:
        assert client.request('PUT', PROXY2, name,
                              data=name.encode() * (size // 10)
                              ).status_code == 201
    # the bodies held and the bytes counted, read in one script: the
    # proxies share a miss's body off the client's path, so a fill may
    # land (and evict) between the reads of a scan
    snapshot = r.register_script('''
        local held = 0
        for _, key in ipairs(redis.call('KEYS', 'mass:cache:b:*')) do
            held = held + redis.call('STRLEN', key)
        end
        return {held, tonumber(redis.call('GET', 'mass:cache:bytes') or '0')}
    ''')
    for name in names:
        resp = get_until_hit(client, PROXY, name)
        assert resp.content == name.encode() * (size // 10)
        held, counted = snapshot()
        assert held <= counted <= budget, (held, counted, budget)
    print('Redis cache: %d bytes held, budget %d' % (held, budget))
    # the least recently used went first
    assert client.request('GET', PROXY, names[0]).headers[
        'X-Mass-Cache'] == 'miss'


class History(object):
    """What each object's single writer did and when it was acknowledged:
    enough to tell a stale read (older than a write acknowledged before
    the read began) from a wrong one (no write ever made it)."""

    def __init__(self, names):
        self.lock = threading.Lock()
        self.ops = {n: [] for n in names}   # [(version, kind)]
        self.via = {n: {} for n in names}   # {version: (proxy, time)}
        self.acked = {n: 0 for n in names}
        self.issued = {n: 0 for n in names}

    def issue(self, name, kind):
        """The next version of ``name``, recorded as a ``kind`` write."""
        with self.lock:
            version = self.issued[name] + 1
            self.issued[name] = version
            self.ops[name].append((version, kind))
        return version

    def kind(self, name, version):
        return dict(self.ops[name]).get(version)

    def body_at(self, name, version):
        """The body an object has after ``version`` (None: deleted)."""
        body = None
        for v, kind in self.ops[name]:
            if v > version:
                break
            if kind == 'PUT':
                body = body_for(name, v)
            elif kind == 'DELETE':
                body = None
        return body


def body_for(name, version):
    return ('%s:%d:' % (name, version)).encode() * 50


def data_version(name, body):
    """The version whose PUT wrote ``body`` (:func:`body_for`), or None
    when no PUT of ``name`` could have."""
    try:
        version = int(body.split(b':', 2)[1])
    except (IndexError, ValueError):
        return None
    return version if body == body_for(name, version) else None


class Load(object):
    """Writers and readers of ``names``; ``write_via`` and ``read_via``
    the proxies each goes through.  Each write's latency is kept in
    ``write_latencies`` as (start time, seconds).

    A read is stale if it serves a version older than one acknowledged
    before it began, but for one case, kept in ``behind``: a miss whose
    data is the current version and whose metadata misses a POST that not
    every replica has applied yet.  Swift acknowledges a POST once a
    quorum of replicas took it, and serves the others' older metadata to
    a plain read that reaches one; Mass reads past such a replica where it
    can tell (docs/cache.md), and never caches its answer.  A hit with
    such metadata is stale."""

    def __init__(self, client, names, writers=4, readers=8,
                 write_via=PROXIES, read_via=PROXIES):
        self.client = client
        self.names = names
        self.write_via = write_via
        self.read_via = read_via
        self.write_latencies = []
        self.history = History(names)
        self.stop = threading.Event()
        self.reads = 0
        self.outage_reads = 0
        self.in_outage = False
        self.hits = {proxy: 0 for proxy in PROXIES}
        self.merged = 0
        self.outage_hits = {proxy: 0 for proxy in PROXIES}
        self.stale = []
        self.wrong = []
        self.behind = []  # misses: current data, metadata before a POST
        self.failed = []
        self.count_lock = threading.Lock()
        owned = [names[i::writers] for i in range(writers)]
        self.threads = [threading.Thread(target=self.write, args=(o,))
                        for o in owned]
        self.threads += [threading.Thread(target=self.read)
                         for _ in range(readers)]

    def seed(self):
        for name in self.names:
            self._write(name, 'PUT', PROXY2)

    def _write(self, name, kind, proxy):
        h = self.history
        version = h.issue(name, kind)
        meta = {'X-Object-Meta-V': str(version)}
        started = time.time()
        if kind == 'PUT':
            resp = self.client.request('PUT', proxy, name, headers=meta,
                                       data=body_for(name, version))
        elif kind == 'POST':
            resp = self.client.request('POST', proxy, name, headers=meta)
        else:
            resp = self.client.request('DELETE', proxy, name)
        self.write_latencies.append((started, time.time() - started))
        if resp.status_code not in (201, 202, 204):
            self.failed.append((kind, name, resp.status_code))
        with h.lock:
            h.acked[name] = version
            h.via[name][version] = (proxy[-4:], '%.3f' % time.time())

    def write(self, owned):
        deleted = set()
        while not self.stop.is_set():
            name = random.choice(owned)
            if name in deleted:
                kind = 'PUT'
            else:
                kind = random.choice(['PUT'] * 6 + ['POST'] * 2 +
                                     ['DELETE'] * 2)
            try:
                self._write(name, kind, random.choice(self.write_via))
            except requests.RequestException as err:
                self.failed.append((kind, name, repr(err)))
            if kind == 'DELETE':
                deleted.add(name)
            else:
                deleted.discard(name)
            time.sleep(0.02)

    def read(self):
        h = self.history
        while not self.stop.is_set():
            name = random.choice(self.names)
            proxy = random.choice(self.read_via)
            with h.lock:
                floor = h.acked[name]
            try:
                resp = self.client.request('GET', proxy, name)
            except requests.RequestException as err:
                self.failed.append(('GET', name, repr(err)))
                continue
            with h.lock:
                ceiling = h.issued[name]
            self.check(name, proxy, floor, ceiling, resp)

    def check(self, name, proxy, floor, ceiling, resp):
        h = self.history
        what = (name, proxy, floor, ceiling, resp.status_code,
                resp.headers.get('X-Object-Meta-V'),
                resp.headers.get('X-Mass-Cache'),
                resp.headers.get('X-Timestamp'), resp.content[:30])
        with self.count_lock:
            self.reads += 1
            if self.in_outage:
                self.outage_reads += 1
            if resp.headers.get('X-Mass-Merge') == 'merged':
                self.merged += 1
            if resp.headers.get('X-Mass-Cache') == 'hit':
                self.hits[proxy] += 1
                if self.in_outage:
                    self.outage_hits[proxy] += 1
        if resp.status_code == 404:
            # right if the object was deleted at some point in between
            if not any(h.kind(name, v) == 'DELETE'
                       for v in range(floor, ceiling + 1)):
                self.stale.append(what)
            return
        if resp.status_code != 200:
            self.failed.append(what)
            return
        try:
            version = int(resp.headers['X-Object-Meta-V'])
        except (KeyError, ValueError):
            self.wrong.append(what)
            return
        if version > ceiling or h.kind(name, version) not in ('PUT', 'POST'):
            self.wrong.append(what)
        elif resp.content != h.body_at(name, version):
            self.wrong.append(what)
        elif version < floor:
            if self.metadata_behind(name, floor, resp):
                self.behind.append(what)
            else:
                self.stale.append(what)

    def acknowledged_versions(self, name):
        """The versions of ``name`` whose writes were acknowledged: each
        object has one writer, one write at a time, so every version up to
        the last answered (a write that failed fails the test)."""
        with self.history.lock:
            return set(range(1, self.history.acked[name] + 1))

    def metadata_behind(self, name, floor, resp):
        """Whether a stale read that is not a hit (a miss, or Swift's own
        answer) has current data, and only its metadata older than a POST
        acknowledged before it began."""
        data = data_version(name, resp.content) if \
            resp.status_code == 200 and \
            resp.headers.get('X-Mass-Cache') != 'hit' else None
        if data is None:
            return False
        acknowledged = self.acknowledged_versions(name)
        with self.history.lock:
            kinds = dict(self.history.ops[name])
        return not any(v in acknowledged and kinds[v] in ('PUT', 'DELETE')
                       for v in range(data + 1, floor + 1))

    def report(self):
        """The bad reads, each with its object's history."""
        lines = []
        for label, bad in (('stale', self.stale), ('wrong', self.wrong)):
            for what in bad[:5]:
                lines.append('%s: %r; history %r' % (
                    label, what, [
                        op + self.history.via[what[0]].get(op[0], ())
                        for op in self.history.ops[what[0]][-8:]]))
        return '\n'.join(lines)

    def start(self):
        for thread in self.threads:
            thread.start()

    def finish(self):
        self.stop.set()
        for thread in self.threads:
            thread.join(60)

    def wait_reads(self, n, limit):
        deadline = time.time() + limit
        while self.reads < n:
            assert time.time() < deadline, 'only %d reads in %ds' % (
                self.reads, limit)
            assert not self.stale and not self.wrong, self.report()
            time.sleep(0.2)


class MemcacheLogger(Quiet):
    """What MemcacheRing also asks of its logger."""

    def timing_since(self, *args, **kwargs):
        pass


# How long a phase of the outage test may take to make its reads: a
# limit, not a speed (a machine at half the speed made 3,700 of the first
# 5,000 in 90 s, with and without this stop's changes).
READS_WITHIN = 240


def memcache_store():
    """The memcache store the proxies fall back to while Redis is down."""
    conf = readconf(PROXY_CONF, 'filter:mass')
    logger = MemcacheLogger()
    chain = store_from_conf(MassConf(conf), logger,
                            memcache=load_memcache(conf, logger))
    return chain.fallback.primary


def test_no_stale_or_wrong_read_under_writes_and_a_redis_outage(client):
    """At least 10,000 reads through both proxies while two writers
    overwrite, update and delete the same small objects through both;
    Redis is shut down (its data lost) part-way and started again."""
    names = ['hot-%02d' % i for i in range(24)]
    # two writers: four made 2,800 writes to the 10,000 reads and, the
    # SAIO's two cores busy with them, took 150 s to reach the reads
    load = Load(client, names, writers=2)
    load.seed()
    started = time.time()
    fallback = memcache_store()
    fallback.set_pin(client.account, {'class': 'read', 'method': 'cache'})
    load.start()
    try:
        load.wait_reads(5000, READS_WITHIN)
        before_outage = dict(load.hits)
        down = redis.Redis.from_url('redis://127.0.0.1:6379/0')
        down.shutdown(nosave=True)
        load.in_outage = True
        outage_started = load.reads
        load.wait_reads(outage_started + 3500, READS_WITHIN)
        load.in_outage = False
        subprocess.run([SAIO, 'start'], check=True, stdout=subprocess.DEVNULL)
        pin(client.account, 'cache')
        before_restart = dict(load.hits)
        load.wait_reads(max(10000, load.reads + 1500), READS_WITHIN)
    finally:
        load.finish()
        fallback.delete_pin(client.account)
        try:
            redis.Redis.from_url('redis://127.0.0.1:6379/0').ping()
        except redis.ConnectionError:
            subprocess.run([SAIO, 'start'], check=True,
                           stdout=subprocess.DEVNULL)
    elapsed = time.time() - started
    print('%d writes, %d reads in %.0fs (%d during the outage); hits '
          'before the outage %r, during it %r, in all %r; %d stale, %d wrong, '
          '%d failed; %d misses with metadata behind a POST' % (
              len(load.write_latencies), load.reads, elapsed,
              load.outage_reads, before_outage, load.outage_hits, load.hits,
              len(load.stale), len(load.wrong), len(load.failed),
              len(load.behind)))
    assert load.reads >= 10000
    assert load.stale == [] and load.wrong == [], load.report()
    assert load.failed == [], load.failed[:5]
    # the cache was in use on both proxies, and while Redis was down the
    # memcache one validated its hits against the backend
    assert all(before_outage[proxy] > 100 for proxy in PROXIES)
    assert load.outage_hits[PROXY2] > 0
    # and once Redis was back, empty (the riskiest moment): hits again
    after_restart = {proxy: load.hits[proxy] - before_restart[proxy]
                     for proxy in PROXIES}
    print('hits after Redis came back empty: %r' % after_restart)
    assert all(after_restart[proxy] > 0 for proxy in PROXIES)


def test_second_proxy_config_is_the_first_on_another_port():
    first = configparser.ConfigParser(interpolation=None)
    first.read(PROXY_CONF)
    second = configparser.ConfigParser(interpolation=None)
    second.read(PROXY2_CONF)
    assert os.path.exists(PROXY2_CONF)
    assert second.get('DEFAULT', 'bind_port') == '8081'
    assert first.get('pipeline:main', 'pipeline') == \
        second.get('pipeline:main', 'pipeline')
    assert second.get('filter:mass', 'cache_backend') == 'memcache'
    assert second.get('filter:encryption', 'disable_encryption') == 'true'
