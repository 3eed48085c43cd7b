"""The shared stores, against a Redis (fakeredis) and a memcached
(FakeMemcached) that tests/unit/conftest.py puts at the tests' addresses.

Failures are real: a Redis URL on a port nobody listens on, and a socket
that accepts and never answers.
"""
import socket
import time
import uuid

import pytest
import redis
from swift.common.memcached import MemcacheRing

from swift_mass.conf import MassConf
from swift_mass.control.store import Breaker, LocalStore, MemcacheStore, \
    RedisStore, ResilientStore, store_from_conf
from tests.unit.helpers import MEMCACHE_SERVER, REDIS_URL, Clock

DOWN_REDIS_URL = 'redis://127.0.0.1:1/0'  # connection refused
DOWN_MEMCACHE_SERVER = '127.0.0.1:1'

ODD_TENANTS = ('AUTH_test', 'AUTH_a:b', 'AUTH_\xc3\xa9', 'AUTH_x/y z%')
B0, B1, B2 = 1700000000, 1700000005, 1700000010


class Logger(object):
    """Captures log lines; also serves MemcacheRing, which times calls."""

    def __init__(self):
        self.lines = {'error': [], 'warning': [], 'info': []}

    def _log(self, level, msg, *args):
        if len(args) == 1 and isinstance(args[0], dict):
            args = args[0]  # as logging does: MemcacheRing logs so
        self.lines[level].append(msg % args if args else msg)

    def error(self, msg, *args):
        self._log('error', msg, *args)

    exception = error

    def warning(self, msg, *args):
        self._log('warning', msg, *args)

    def info(self, msg, *args):
        self._log('info', msg, *args)

    def timing_since(self, *args, **kwargs):
        pass


@pytest.fixture
def redis_prefixes(redis_db15):
    """Makes unique key prefixes; deletes their keys after the test."""
    prefixes = []

    def new_prefix():
        prefixes.append('test-mass-%s:' % uuid.uuid4().hex)
        return prefixes[-1]
    yield new_prefix
    for prefix in prefixes:
        keys = list(redis_db15.scan_iter(match=prefix + '*'))
        if keys:
            redis_db15.delete(*keys)


@pytest.fixture(scope='module')
def memcache():
    return MemcacheRing([MEMCACHE_SERVER], logger=Logger())


@pytest.fixture
def memcache_prefixes(memcache):
    """Makes unique key prefixes; deletes their unexpiring keys after the
    test (counters expire by themselves)."""
    prefixes = []

    def new_prefix():
        prefixes.append('test-mass-%s/' % uuid.uuid4().hex)
        return prefixes[-1]
    yield new_prefix
    for prefix in prefixes:
        store = MemcacheStore(memcache, prefix)
        for name in ('table', 'table-version', 'pins', 'leader',
                     'leader-token', 'buckets'):
            memcache.delete(store._key(name))


class Harness(object):
    """Stores of one kind, and time that passes for them."""

    def __init__(self, kind, new_store, clock=None):
        self.kind = kind
        self._new_store = new_store
        self.clock = clock  # only LocalStore's time can be moved

    def store(self, like=None):
        """A store with a namespace of its own or, given ``like``, another
        client of like's state (what another proxy would see)."""
        return self._new_store(like)

    def eventually(self, check, seconds):
        """Whether ``check()`` holds once ``seconds`` have passed."""
        if self.clock is not None:
            self.clock.now += seconds + 0.001
            return check()
        # memcached's clock ticks in whole seconds: allow one more
        deadline = time.monotonic() + seconds + 1.5
        while not check() and time.monotonic() < deadline:
            time.sleep(0.05)
        return check()


@pytest.fixture(params=['redis', 'memcache', 'local'])
def harness(request):
    if request.param == 'redis':
        new_prefix = request.getfixturevalue('redis_prefixes')
        return Harness('redis', lambda like: RedisStore(
            REDIS_URL, prefix=like.prefix if like else new_prefix()))
    if request.param == 'memcache':
        ring = request.getfixturevalue('memcache')
        new_prefix = request.getfixturevalue('memcache_prefixes')
        return Harness('memcache', lambda like: MemcacheStore(
            ring, prefix=like.prefix if like else new_prefix()))
    clock = Clock()
    return Harness('local', lambda like: like or LocalStore(clock), clock)


# The behaviour every store shares.

def test_an_empty_store(harness):
    store = harness.store()
    assert store.read_counts(0) == {}
    assert store.get_table() == (0, {})
    assert store.table_version() == 0
    assert store.lease_holder() is None
    assert store.get_pins() == {}
    health = store.health()
    assert health['store'] == harness.kind
    assert health['ok'] is True
    assert health['error'] is None


def test_counts_add_up_across_workers_buckets_and_tenants(harness):
    store = harness.store()
    other_worker = harness.store(like=store)
    for tenant in ODD_TENANTS:
        store.add_counts(tenant, B0, {'ops.GET': 1, 'bytes_out': 100}, 60)
        other_worker.add_counts(tenant, B0, {'ops.GET': 2}, 60)
        other_worker.add_counts(tenant, B1, {'ops.PUT': 1}, 60)
    store.add_counts('AUTH_a:b', B2, {'ops.HEAD': 5, 'lat.HEAD.inf': 1}, 60)
    store.add_counts('AUTH_nothing', B2, {}, 60)

    counts = store.read_counts(B0)
    assert sorted(counts) == sorted(ODD_TENANTS)
    for tenant in ODD_TENANTS:
        assert counts[tenant][B0] == {'ops.GET': 3, 'bytes_out': 100}
        assert counts[tenant][B1] == {'ops.PUT': 1}
    assert counts['AUTH_a:b'][B2] == {'ops.HEAD': 5, 'lat.HEAD.inf': 1}
    assert other_worker.read_counts(B0) == counts

    later = store.read_counts(B1)
    assert {tenant: sorted(buckets) for tenant, buckets in later.items()} \
        == dict({t: [B1] for t in ODD_TENANTS}, **{'AUTH_a:b': [B1, B2]})
    assert store.read_counts(B2 + 1) == {}


def test_counters_and_lease_expire(harness):
    store = harness.store()
    renewed = harness.store()
    # taken before `store`'s lease, so would expire first if not renewed
    assert renewed.acquire_lease('proxy-1', 1000)
    assert renewed.acquire_lease('proxy-1', 60000)
    store.add_counts('AUTH_a', B0, {'ops.GET': 1}, ttl=1)
    assert store.acquire_lease('proxy-1', 1000)
    assert store.read_counts(B0) == {'AUTH_a': {B0: {'ops.GET': 1}}}
    assert store.lease_holder() == 'proxy-1'

    assert harness.eventually(
        lambda: (store.read_counts(B0), store.lease_holder()) == ({}, None),
        seconds=1)
    assert renewed.lease_holder() == 'proxy-1'
    # an expired lease is free for anyone
    assert store.acquire_lease('proxy-2', 1000)


def test_table_versions(harness):
    store = harness.store()
    proxy = harness.store(like=store)
    table = {'AUTH_\xc3\xa9': {'class': 'read', 'ring': 'gold',
                               'method': 'cache'}}
    assert store.put_table(table) == 1
    table['AUTH_\xc3\xa9']['method'] = 'none'  # the store keeps a copy
    assert proxy.table_version() == 1
    assert proxy.get_table() == (1, {'AUTH_\xc3\xa9': {
        'class': 'read', 'ring': 'gold', 'method': 'cache'}})
    assert store.put_table({}) == 2
    assert proxy.table_version() == 2
    assert proxy.get_table() == (2, {})


def test_lease_has_one_holder(harness):
    store = harness.store()
    other_proxy = harness.store(like=store)
    assert store.acquire_lease('proxy-1', 10000)
    assert not other_proxy.acquire_lease('proxy-2', 10000)
    assert other_proxy.lease_holder() == 'proxy-1'
    assert store.acquire_lease('proxy-1', 10000)  # renewal
    other_proxy.release_lease('proxy-2')  # not the holder: ignored
    assert other_proxy.lease_holder() == 'proxy-1'
    assert not other_proxy.acquire_lease('proxy-2', 10000)
    store.release_lease('proxy-1')
    assert store.lease_holder() is None
    assert other_proxy.acquire_lease('proxy-2', 10000)
    assert store.lease_holder() == 'proxy-2'


def test_pins(harness):
    store = harness.store()
    operator = harness.store(like=store)
    pin = {'class': 'write', 'ring': 'silver', 'method': 'batch'}
    operator.set_pin('AUTH_a:b', pin)
    operator.set_pin('AUTH_\xc3\xa9', {'class': 'read'})
    assert store.get_pins() == {'AUTH_a:b': pin,
                                'AUTH_\xc3\xa9': {'class': 'read'}}
    operator.set_pin('AUTH_a:b', {'class': 'mixed'})
    operator.delete_pin('AUTH_\xc3\xa9')
    operator.delete_pin('AUTH_never_pinned')
    assert store.get_pins() == {'AUTH_a:b': {'class': 'mixed'}}


# What is particular to one store.

def test_redis_key_layout(redis_db15, redis_prefixes):
    prefix = redis_prefixes()
    store = RedisStore(REDIS_URL, prefix=prefix)
    store.add_counts('AUTH_a:b', B0, {'ops.GET': 2}, ttl=60)
    counters = '%sc:%d:AUTH_a%%3Ab' % (prefix, B0)
    tenants = '%scb:%d' % (prefix, B0)
    assert redis_db15.hgetall(counters) == {b'ops.GET': b'2'}
    assert redis_db15.smembers(tenants) == {b'AUTH_a%3Ab'}
    for key in (counters, tenants):
        assert 0 < redis_db15.ttl(key) <= 60

    store.put_table({'AUTH_a:b': {'method': 'cache'}})
    assert redis_db15.get(prefix + 'table:version') == b'1'
    assert store.acquire_lease('proxy-1', 5000)
    assert redis_db15.get(prefix + 'leader') == b'proxy-1'
    assert 0 < redis_db15.pttl(prefix + 'leader') <= 5000
    assert store.acquire_lease('proxy-1', 60000)
    assert 5000 < redis_db15.pttl(prefix + 'leader') <= 60000


def test_memcache_lease_is_taken_by_one_of_many(memcache, memcache_prefixes):
    prefix = memcache_prefixes()
    proxies = [MemcacheStore(memcache, prefix) for _ in range(5)]
    taken = [p.acquire_lease('proxy-%d' % i, 10000)
             for i, p in enumerate(proxies)]
    assert taken == [True, False, False, False, False]
    assert proxies[4].lease_holder() == 'proxy-0'


def test_local_lease_renewal_extends_it():
    clock = Clock()
    store = LocalStore(clock)
    assert store.acquire_lease('proxy-1', 1000)
    clock.now += 0.8
    assert store.acquire_lease('proxy-1', 1000)
    clock.now += 0.8
    assert store.lease_holder() == 'proxy-1'
    assert not store.acquire_lease('proxy-2', 1000)
    clock.now += 0.3
    assert store.acquire_lease('proxy-2', 1000)


def test_local_store_forgets_expired_buckets():
    clock = Clock()
    store = LocalStore(clock)
    store.add_counts('AUTH_a', B0, {'ops.GET': 1}, ttl=10)
    clock.now += 11
    store.add_counts('AUTH_a', B2, {'ops.GET': 1}, ttl=10)
    assert list(store._buckets) == [B2]


def test_redis_db15_is_created_lazily():
    start = time.monotonic()
    RedisStore(DOWN_REDIS_URL)
    store_from_conf(MassConf({'redis_url': DOWN_REDIS_URL}), Logger())
    assert time.monotonic() - start < 0.1


# The circuit breaker.

def test_a_down_redis_is_quick_to_fail():
    for call in (RedisStore(DOWN_REDIS_URL).table_version,
                 ResilientStore(RedisStore(DOWN_REDIS_URL), LocalStore(),
                                Logger()).table_version):
        start = time.monotonic()
        try:
            call()
        except redis.ConnectionError:
            pass
        assert time.monotonic() - start < 0.3


def test_a_silent_redis_times_out():
    with socket.socket() as listener:
        # connections complete in the backlog, nothing ever answers
        listener.bind(('127.0.0.1', 0))
        listener.listen(8)
        url = 'redis://127.0.0.1:%d/0' % listener.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(redis.TimeoutError):
            RedisStore(url, socket_timeout_ms=50).table_version()
        assert time.monotonic() - start < 0.3
        logger = Logger()
        breaker = ResilientStore(RedisStore(url), LocalStore(), logger)
        start = time.monotonic()
        assert breaker.put_table({'AUTH_a': {}}) == 1
        assert time.monotonic() - start < 0.3
        assert 'TimeoutError' in logger.lines['warning'][0]


def test_down_redis_serves_from_the_fallback_and_warns_once():
    clock, logger = Clock(), Logger()
    store = ResilientStore(RedisStore(DOWN_REDIS_URL), LocalStore(clock),
                           logger, retry_after=30, clock=clock)
    for _ in range(50):
        store.add_counts('AUTH_a:b', B0, {'ops.GET': 1}, 60)
        clock.now += 0.5
    assert store.read_counts(B0) == {'AUTH_a:b': {B0: {'ops.GET': 50}}}
    assert store.put_table({'AUTH_a:b': {'method': 'cache'}}) == 1
    assert store.get_table() == (1, {'AUTH_a:b': {'method': 'cache'}})
    assert store.table_version() == 1
    assert store.acquire_lease('proxy-1', 10000)
    assert store.lease_holder() == 'proxy-1'
    store.release_lease('proxy-1')
    store.set_pin('AUTH_a:b', {'class': 'read'})
    store.delete_pin('AUTH_a:b')
    assert store.get_pins() == {}

    [warning] = logger.lines['warning']
    assert 'redis' in warning
    assert 'Connection refused' in warning
    assert 'using local' in warning
    assert logger.lines['error'] == logger.lines['info'] == []
    health = store.health()
    assert health['store'] == 'local'
    assert health['ok'] is False
    assert health['error'].startswith('redis: ConnectionError')
    assert health['primary'] == 'redis'
    assert 0 < health['retry_in'] <= 30


def test_a_failed_retry_stays_quiet_and_waits_again():
    clock, logger = Clock(), Logger()
    store = ResilientStore(RedisStore(DOWN_REDIS_URL), LocalStore(clock),
                           logger, retry_after=30, clock=clock)
    store.table_version()
    clock.now += 29
    store.table_version()
    assert store.health()['retry_in'] == pytest.approx(1)
    clock.now += 2
    store.table_version()  # tries Redis, which is still down
    assert store.health()['retry_in'] == pytest.approx(30)
    assert len(logger.lines['warning']) == 1
    assert logger.lines['info'] == []


def test_recovery_after_retry_after(redis_prefixes):
    clock, logger = Clock(), Logger()
    store = ResilientStore(RedisStore(DOWN_REDIS_URL), LocalStore(clock),
                           logger, retry_after=30, clock=clock)
    store.add_counts('AUTH_a', B0, {'ops.PUT': 1}, 60)
    redis_store = RedisStore(REDIS_URL, prefix=redis_prefixes())
    store.primary = redis_store  # Redis is back...
    clock.now += 29
    store.add_counts('AUTH_a', B0, {'ops.PUT': 2}, 60)
    assert redis_store.read_counts(B0) == {}  # ...but not tried yet
    assert logger.lines['info'] == []

    clock.now += 2
    store.add_counts('AUTH_a', B0, {'ops.PUT': 4}, 60)
    assert redis_store.read_counts(B0) == {'AUTH_a': {B0: {'ops.PUT': 4}}}
    assert store.read_counts(B0) == {'AUTH_a': {B0: {'ops.PUT': 4}}}
    assert logger.lines['info'] == ['Mass store redis recovered']
    assert len(logger.lines['warning']) == 1
    health = store.health()
    assert (health['store'], health['ok'], health['error']) == (
        'redis', True, None)


def test_redis_then_memcache_then_local(memcache, memcache_prefixes):
    clock, logger = Clock(), Logger()
    prefix = memcache_prefixes()
    store = ResilientStore(
        RedisStore(DOWN_REDIS_URL),
        ResilientStore(MemcacheStore(memcache, prefix), LocalStore(clock),
                       logger, clock=clock),
        logger, clock=clock)
    store.add_counts('AUTH_a:b', B0, {'ops.GET': 3}, 60)
    assert store.put_table({'AUTH_a:b': {'method': 'cache'}}) == 1
    elsewhere = MemcacheStore(memcache, prefix)  # another proxy
    assert elsewhere.read_counts(B0) == {'AUTH_a:b': {B0: {'ops.GET': 3}}}
    assert elsewhere.get_table() == (1, {'AUTH_a:b': {'method': 'cache'}})
    [warning] = logger.lines['warning']
    assert 'redis' in warning and 'using memcache' in warning
    health = store.health()
    assert health['store'] == 'memcache'
    assert health['ok'] is False
    assert health['error'].startswith('redis: ')


def test_everything_down_but_local():
    clock, logger = Clock(), Logger()
    down_memcache = MemcacheRing([DOWN_MEMCACHE_SERVER], logger=Logger())
    store = ResilientStore(
        RedisStore(DOWN_REDIS_URL),
        ResilientStore(MemcacheStore(down_memcache), LocalStore(clock),
                       logger, clock=clock),
        logger, clock=clock)
    for _ in range(10):
        store.add_counts('AUTH_a', B0, {'ops.GET': 1}, 60)
    assert store.read_counts(B0) == {'AUTH_a': {B0: {'ops.GET': 10}}}
    assert len(logger.lines['warning']) == 2  # one per store passed over
    health = store.health()
    assert health['store'] == 'local'
    assert health['error'].startswith('redis: ConnectionError')
    assert '; memcache: MemcacheConnectionError' in health['error']


def test_a_failing_fallback_gives_empty_answers():
    logger = Logger()
    down_memcache = MemcacheRing([DOWN_MEMCACHE_SERVER], logger=Logger())
    store = ResilientStore(RedisStore(DOWN_REDIS_URL),
                           MemcacheStore(down_memcache), logger)
    assert store.add_counts('AUTH_a', B0, {'ops.GET': 1}, 60) is None
    assert store.read_counts(B0) == {}
    assert store.get_table() == (0, {})
    assert store.put_table({'AUTH_a': {}}) == 0
    assert store.table_version() == 0
    assert store.acquire_lease('proxy-1', 1000) is False
    assert store.lease_holder() is None
    assert store.get_pins() == {}
    assert len(logger.lines['warning']) == 1
    [error] = logger.lines['error']
    assert 'memcache' in error


# The breaker itself.

def test_breaker_opens_on_the_first_failure_and_lets_one_probe_through():
    clock, events = Clock(), []
    breaker = Breaker(30, clock, on_open=events.append,
                      on_close=lambda: events.append('closed'))
    assert breaker.allows()
    breaker.failed('timeout')
    breaker.failed('timeout again')
    assert events == ['timeout']  # once per opening
    assert not breaker.allows()
    clock.now += 30
    assert breaker.allows()       # the probe...
    assert not breaker.allows()   # ...and only the probe
    breaker.succeeded()
    assert events == ['timeout', 'closed']
    assert breaker.allows() and breaker.error is None


def test_a_failed_probe_keeps_the_breaker_open_for_another_period():
    clock = Clock()
    breaker = Breaker(30, clock)
    breaker.failed('refused')
    clock.now += 30
    assert breaker.allows()
    breaker.failed('refused')
    clock.now += 29
    assert not breaker.allows()
    clock.now += 1
    assert breaker.allows()


# Building the chain from [filter:mass].

def test_default_chain():
    store = store_from_conf(MassConf({}), Logger())
    assert isinstance(store, ResilientStore)
    assert isinstance(store.primary, RedisStore)
    assert store.primary.url == 'redis://127.0.0.1:6379/0'
    kwargs = store.primary.client.connection_pool.connection_kwargs
    assert kwargs['socket_timeout'] == kwargs['socket_connect_timeout'] \
        == 0.05
    assert isinstance(store.fallback, LocalStore)
    assert store.retry_after == 30


def test_chain_with_memcache_and_options():
    ring = MemcacheRing([MEMCACHE_SERVER])
    store = store_from_conf(MassConf({
        'redis_url': 'unix:///run/redis.sock?db=2',
        'redis_timeout_ms': '200', 'store_retry_after': '5'}), Logger(), ring)
    kwargs = store.primary.client.connection_pool.connection_kwargs
    assert kwargs['path'] == '/run/redis.sock'
    assert kwargs['socket_timeout'] == 0.2
    assert store.retry_after == 5
    assert isinstance(store.fallback, ResilientStore)
    assert isinstance(store.fallback.primary, MemcacheStore)
    assert store.fallback.primary.memcache is ring
    assert isinstance(store.fallback.fallback, LocalStore)
    assert store.fallback.retry_after == 5


def test_memcache_and_local_chains():
    ring = MemcacheRing([MEMCACHE_SERVER])
    store = store_from_conf(MassConf({'store': 'memcache'}), Logger(), ring)
    assert isinstance(store, ResilientStore)
    assert isinstance(store.primary, MemcacheStore)
    assert isinstance(store.fallback, LocalStore)

    logger = Logger()
    assert isinstance(
        store_from_conf(MassConf({'store': 'memcache'}), logger), LocalStore)
    assert 'no memcache' in logger.lines['warning'][0]
    assert isinstance(
        store_from_conf(MassConf({'store': ' Local '}), Logger(), ring),
        LocalStore)
