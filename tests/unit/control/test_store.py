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
from redis.crc import key_slot
from swift.common.memcached import MemcacheRing

from swift_mass.conf import MassConf
from swift_mass.control.store import Breaker, LocalStore, MemcacheStore, \
    RedisStore, ResilientStore, store_from_conf
from swift_mass.redis_client import key_prefix
from tests.unit.helpers import MEMCACHE_SERVER, REDIS_URL, Clock

DOWN_REDIS_URL = 'redis://127.0.0.1:1/0'  # connection refused
DOWN_CLUSTER_URL = 'redis+cluster://127.0.0.1:1,127.0.0.1:2'
# constructed, never asked
SENTINEL_URL = 'redis+sentinel://127.0.0.1:26390/mass'
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


def test_a_flush_in_one_call(harness):
    store = harness.store()
    items = [(tenant, bucket, {'ops.GET': 1, 'lat_ms.GET': 7})
             for tenant in ODD_TENANTS for bucket in (B0, B1)]
    items += [('AUTH_a:b', B0, {'ops.GET': 2, 'ops.PUT': 1}),  # again
              ('AUTH_idle', B0, {})]
    assert store.add_counts_many(iter(items), 60) is None
    store.add_counts_many([], 60)
    counts = store.read_counts(B0)
    assert sorted(counts) == sorted(ODD_TENANTS)
    assert counts['AUTH_a:b'] == {
        B0: {'ops.GET': 3, 'lat_ms.GET': 7, 'ops.PUT': 1},
        B1: {'ops.GET': 1, 'lat_ms.GET': 7}}
    assert counts['AUTH_test'][B1] == {'ops.GET': 1, 'lat_ms.GET': 7}


def test_read_counts_of_some_fields(harness):
    store = harness.store()
    store.add_counts_many([
        ('AUTH_a:b', B0, {'ops.GET': 2, 'lat_ms.GET': 9, 'bytes_out': 5,
                          'lat.GET.10': 2}),
        ('AUTH_a:b', B1, {'ops.PUT': 1, 'size.4096': 1}),
        ('AUTH_bytes', B0, {'bytes_in': 3})], 60)
    assert store.read_counts(B0, ('ops.', 'lat_ms.')) == {
        'AUTH_a:b': {B0: {'ops.GET': 2, 'lat_ms.GET': 9},
                     B1: {'ops.PUT': 1}}}
    assert store.read_counts(B0, ('bytes_',)) == {
        'AUTH_a:b': {B0: {'bytes_out': 5}},
        'AUTH_bytes': {B0: {'bytes_in': 3}}}


def test_table_changes_and_updates(harness):
    leader = harness.store()
    worker = harness.store(like=leader)
    assert worker.table_changes(None) is None  # no table yet
    assert worker.table_changes((None, 0)) is None
    table = {tenant: {'class': 'read', 'method': 'cache'}
             for tenant in ODD_TENANTS}
    state = leader.update_table(None, table, list(table))
    assert state is not None and state[1] == 1
    # a worker with no table, or another store's, loads it whole
    for since in (None, (None, 0), ('another store', 1)):
        assert worker.table_changes(since) == (state, table, True)
    assert worker.table_changes(state) is None

    table['AUTH_a:b'] = {'class': 'write', 'method': 'batch'}
    del table['AUTH_test']
    later = leader.update_table(state, table, ['AUTH_a:b', 'AUTH_test'])
    assert later == (state[0], 2)
    assert leader.table_version() == 2
    assert worker.get_table() == (2, table)
    changes = worker.table_changes(state)
    if harness.kind == 'memcache':
        # a whole table at each change (memcache keeps no change log)
        assert changes == (later, table, True)
    else:
        assert changes == (later, {
            'AUTH_a:b': {'class': 'write', 'method': 'batch'},
            'AUTH_test': None}, False)
    assert worker.table_changes(later) is None


def test_put_table_starts_a_lineage(harness):
    store = harness.store()
    worker = harness.store(like=store)
    state = store.update_table(None, {'AUTH_a': {}}, ['AUTH_a'])
    assert store.put_table({'AUTH_b': {'method': 'none'}}) == 2
    state2, table, whole = worker.table_changes(state)
    assert (state2[1], table, whole) == (
        2, {'AUTH_b': {'method': 'none'}}, True)
    # versions of another lineage are never compared: a state from the
    # future (the store went back, or another store's) loads it whole
    assert worker.table_changes((state2[0], 7))[2] is True


# Flushes at scale, and the table's change log, in Redis.

class Trips(object):
    """Counts a Redis client's round trips: commands and pipelines
    sent."""

    def __init__(self, client, monkeypatch):
        self.count = 0
        self.commands = 0
        real_pipeline = client.pipeline
        real_execute = client.execute_command

        def execute_command(*args, **kwargs):
            self.count += 1
            self.commands += 1
            return real_execute(*args, **kwargs)

        def pipeline(*args, **kwargs):
            pipe = real_pipeline(*args, **kwargs)
            real = pipe.execute

            def execute(*args, **kwargs):
                self.count += 1
                self.commands += len(pipe.command_stack)
                return real(*args, **kwargs)
            pipe.execute = execute
            return pipe
        monkeypatch.setattr(client, 'pipeline', pipeline)
        monkeypatch.setattr(client, 'execute_command', execute_command)


def test_a_flush_takes_a_round_trip_per_few_thousand_tenants(
        redis_prefixes, monkeypatch):
    store = RedisStore(REDIS_URL, prefix=redis_prefixes())
    store.COUNTS_CHUNK, store.CALLS_PER_TRIP = 10, 3
    store.READ_CHUNK, store.SCAN_COUNT = 20, 50
    store.add_counts('AUTH_000', B0, {'ops.GET': 0}, 60)  # loads scripts
    store.read_counts(B0)
    trips = Trips(store.client, monkeypatch)
    items = [('AUTH_%03d' % i, bucket, {'ops.GET': i, 'bytes_out': 1})
             for i in range(150) for bucket in (B0, B1)]
    store.add_counts_many(items, 60)
    # 2 buckets x 150 tenants: 30 script calls of 10 tenants, 3 a trip
    assert (trips.count, trips.commands) == (10, 30)
    trips.count = trips.commands = 0
    counts = store.read_counts(B0)
    assert len(counts) == 150 and counts['AUTH_149'] == {
        B0: {'ops.GET': 149, 'bytes_out': 1},
        B1: {'ops.GET': 149, 'bytes_out': 1}}
    # the live buckets; their indexes, a scan step each per trip (150
    # tenants: a few steps of 50); then 2 x 150 / 20 = 16 reads, 3 a trip
    assert trips.count <= 1 + 6 + 6


def test_a_flush_that_fails_part_way_names_what_was_not_written(
        redis_prefixes, monkeypatch):
    store = RedisStore(REDIS_URL, prefix=redis_prefixes())
    store.COUNTS_CHUNK, store.CALLS_PER_TRIP = 2, 1
    real_run = store._run
    trips = []

    def run(calls):
        trips.append(calls)
        if len(trips) == 2:
            raise redis.ConnectionError('gone')
        return real_run(calls)
    monkeypatch.setattr(store, '_run', run)
    items = [('AUTH_%d' % i, B0, {'ops.GET': 1}) for i in range(5)]
    with pytest.raises(redis.ConnectionError) as caught:
        store.add_counts_many(items, 60)
    written = store.read_counts(B0)
    assert sorted(written) == ['AUTH_0', 'AUTH_1']
    assert caught.value.unwritten == items[2:]

    # behind the breaker, the fallback gets the rest
    trips.clear()
    local = LocalStore()
    resilient = ResilientStore(store, local, Logger())
    resilient.add_counts_many(
        [('AUTH_%d' % i, B1, {'ops.GET': 1}) for i in range(5)], 60)
    assert sorted(store.read_counts(B1)) == ['AUTH_0', 'AUTH_1']
    assert sorted(local.read_counts(B1)) == ['AUTH_2', 'AUTH_3', 'AUTH_4']


def test_scripts_redis_forgot_are_loaded_again(redis_prefixes, redis_db15):
    store = RedisStore(REDIS_URL, prefix=redis_prefixes())
    store.add_counts('AUTH_a', B0, {'ops.GET': 1}, 60)
    redis_db15.script_flush()
    store.add_counts('AUTH_a', B0, {'ops.GET': 1}, 60)
    assert store.read_counts(B0) == {'AUTH_a': {B0: {'ops.GET': 2}}}
    redis_db15.script_flush()
    assert store.table_changes(None) is None


def test_the_leader_writes_only_the_entries_that_changed(
        redis_prefixes, redis_db15):
    prefix = redis_prefixes()
    store = RedisStore(REDIS_URL, prefix=prefix)
    table = {'AUTH_%d' % i: {'method': 'none'} for i in range(5)}
    state = store.update_table(None, table, list(table))
    # what the store holds of an entry nobody changed is not written again
    redis_db15.hset(prefix + 'policy:entries', 'AUTH_4', '{"mark": 1}')
    table['AUTH_0'] = {'method': 'cache'}
    state = store.update_table(state, table, ['AUTH_0'])
    entries = store.get_table()[1]
    assert entries['AUTH_0'] == {'method': 'cache'}
    assert entries['AUTH_4'] == {'mark': 1}


def test_a_worker_the_change_log_no_longer_reaches_loads_it_whole(
        redis_prefixes, redis_db15):
    prefix = redis_prefixes()
    leader = RedisStore(REDIS_URL, prefix=prefix)
    leader.CHANGES_KEPT = 3
    worker = RedisStore(REDIS_URL, prefix=prefix)
    worker.CHANGES_KEPT = 3
    table = {}
    states = [None]
    for i in range(6):
        table['AUTH_%d' % i] = {'method': 'none'}
        states.append(leader.update_table(states[-1], table, ['AUTH_%d' % i]))
    assert redis_db15.zcard(prefix + 'policy:changes') == 3
    assert redis_db15.hget(prefix + 'policy', 'floor') == b'3'
    # versions 4, 5 and 6 are in the log: from 3 on, a delta
    state, entries, whole = worker.table_changes(states[3])
    assert (state, sorted(entries), whole) == (
        states[6], ['AUTH_3', 'AUTH_4', 'AUTH_5'], False)
    # before that, the log may have lost changes: the whole table
    assert worker.table_changes(states[2]) == (states[6], table, True)


def test_a_big_update_trims_the_change_log_over_several(
        redis_prefixes, redis_db15):
    prefix = redis_prefixes()
    store = RedisStore(REDIS_URL, prefix=prefix)
    store.CHANGES_KEPT, store.TRIM_MOST = 2, 1
    worker = RedisStore(REDIS_URL, prefix=prefix)  # takes deltas of 10,000
    table = {'AUTH_a': {}}
    v1 = store.update_table(None, table, ['AUTH_a'])  # a new lineage
    assert redis_db15.zcard(prefix + 'policy:changes') == 0
    table['AUTH_b'] = {}
    v2 = store.update_table(v1, table, ['AUTH_b'])
    table.update(AUTH_c={}, AUTH_d={}, AUTH_e={})
    v3 = store.update_table(v2, table, ['AUTH_c', 'AUTH_d', 'AUTH_e'])
    # one trimmed (AUTH_b, of version 2), not both beyond 2
    assert redis_db15.zcard(prefix + 'policy:changes') == 3
    assert redis_db15.hget(prefix + 'policy', 'floor') == b'2'
    assert worker.table_changes(v1) == (v3, table, True)
    assert sorted(worker.table_changes(v2)[1]) == [
        'AUTH_c', 'AUTH_d', 'AUTH_e']
    table['AUTH_f'] = {}
    v4 = store.update_table(v3, table, ['AUTH_f'])
    assert redis_db15.zcard(prefix + 'policy:changes') == 3
    assert redis_db15.hget(prefix + 'policy', 'floor') == b'3'
    assert worker.table_changes(v2) == (v4, table, True)
    assert worker.table_changes(v3) == (v4, {'AUTH_f': {}}, False)


def test_a_store_that_lost_the_table_starts_a_lineage(
        redis_prefixes, redis_db15):
    prefix = redis_prefixes()
    leader = RedisStore(REDIS_URL, prefix=prefix)
    worker = RedisStore(REDIS_URL, prefix=prefix)
    table = {'AUTH_a': {'method': 'cache'}, 'AUTH_b': {'method': 'none'}}
    state = leader.update_table(None, table, list(table))
    assert worker.table_changes(None)[0] == state
    # Redis restarted empty: the worker's state is of a lost lineage
    redis_db15.delete(*redis_db15.keys(prefix + 'policy*'))
    assert worker.table_changes(state) == ((None, 0), {}, True)
    # a leader that starts again from its own table writes it whole, as a
    # new lineage (the store lost the entries it did not change)
    table['AUTH_c'] = {'method': 'batch'}
    fresh = leader.update_table(state, table, ['AUTH_c'])
    assert fresh[0] != state[0] and fresh[1] >= 1
    assert worker.table_changes(state) == (fresh, table, True)
    # the version went back (an old snapshot): whole again
    redis_db15.hset(prefix + 'policy', 'version', 0)
    assert worker.table_changes(fresh) == ((fresh[0], 0), table, True)


def test_a_write_that_is_not_the_only_one(redis_prefixes):
    prefix = redis_prefixes()
    one = RedisStore(REDIS_URL, prefix=prefix)
    two = RedisStore(REDIS_URL, prefix=prefix)
    state = one.update_table(None, {'AUTH_a': {}}, ['AUTH_a'])
    assert two.update_table(state, {'AUTH_a': {}, 'AUTH_b': {}},
                            ['AUTH_b']) == (state[0], 2)
    # the first writer, still at `state`, changes another entry: written,
    # but the store does not hold exactly its table
    assert one.update_table(state, {'AUTH_a': {}, 'AUTH_c': {}},
                            ['AUTH_c']) is None
    new_state, entries, whole = one.table_changes(state)
    assert (new_state, entries, whole) == (
        (state[0], 3), {'AUTH_b': {}, 'AUTH_c': {}}, False)


def test_a_whole_load_catches_up_with_changes_made_meanwhile(
        redis_prefixes, monkeypatch):
    prefix = redis_prefixes()
    leader = RedisStore(REDIS_URL, prefix=prefix)
    worker = RedisStore(REDIS_URL, prefix=prefix)
    worker.SCAN_COUNT = 2
    table = {'AUTH_%02d' % i: {'n': i} for i in range(40)}
    state = [leader.update_table(None, table, list(table))]
    real = worker._entries_script
    steps = []

    def entries_script(*args, **kwargs):
        steps.append(1)
        if len(steps) == 1:
            # the leader writes while the worker is part way
            table['AUTH_00'] = {'n': 'changed'}
            del table['AUTH_39']
            table['AUTH_new'] = {'n': 'new'}
            state.append(leader.update_table(
                state[-1], table, ['AUTH_00', 'AUTH_39', 'AUTH_new']))
        return real(*args, **kwargs)
    monkeypatch.setattr(worker, '_entries_script', entries_script)
    assert worker.table_changes(None) == (state[-1], table, True)
    assert len(steps) > 2


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

    assert redis_db15.zrange(prefix + 'buckets', 0, -1) == [b'%d' % B0]

    table_id, version = store._replace({'AUTH_a:b': {'method': 'cache'}})
    assert redis_db15.hgetall(prefix + 'policy') == {
        b'id': table_id.encode(), b'version': b'1', b'floor': b'1'}
    assert redis_db15.hgetall(prefix + 'policy:entries') == {
        b'AUTH_a:b': b'{"method": "cache"}'}
    assert store.update_table((table_id, 1), {
        'AUTH_a:b': {'method': 'none'}, 'AUTH_c': {'method': 'batch'}},
        ['AUTH_c', 'AUTH_a:b']) == (table_id, 2)
    assert store.update_table((table_id, 2), {
        'AUTH_a:b': {'method': 'none'}}, ['AUTH_c']) == (table_id, 3)
    assert redis_db15.hgetall(prefix + 'policy:entries') == {
        b'AUTH_a:b': b'{"method": "none"}'}
    assert redis_db15.zrange(prefix + 'policy:changes', 0, -1,
                             withscores=True) == [(b'AUTH_a:b', 2.0),
                                                  (b'AUTH_c', 3.0)]
    assert redis_db15.hget(prefix + 'policy', 'version') == b'3'
    # nothing of the whole-table document of earlier releases
    assert redis_db15.keys(prefix + 'table*') == []
    assert store.acquire_lease('proxy-1', 5000)
    assert redis_db15.get(prefix + 'leader') == b'proxy-1'
    assert 0 < redis_db15.pttl(prefix + 'leader') <= 5000
    assert store.acquire_lease('proxy-1', 60000)
    assert 5000 < redis_db15.pttl(prefix + 'leader') <= 60000


def test_redis_keys_are_renamed_on_a_cluster_only():
    """mass: on one Redis and on a Sentinel's master, as in earlier
    releases (an upgrade finds its pins and table); {mass}: on a Cluster,
    where every key the store names is in the slot of {mass}."""
    assert RedisStore(REDIS_URL).prefix == 'mass:'
    assert RedisStore(SENTINEL_URL).prefix == 'mass:'
    store = RedisStore(DOWN_CLUSTER_URL)
    assert store.prefix == '{mass}:'
    names = store._policy_keys + [
        store._key('buckets'), store._key('cb', B0),
        store._key('c', B0) + ':AUTH_a', store._key('leader'),
        store._key('pins'), store._key('policy', 'entries', 'a-token')]
    assert {key_slot(name.encode()) for name in names} == \
        {key_slot(b'{mass}')}


def test_every_key_the_store_writes_under_the_cluster_tag_is_in_its_slot(
        redis_db15):
    """The scripts make keys of their own (counters, from their prefix):
    with a Cluster's prefix, against fakeredis, every key written is in
    the slot of the tag."""
    store = RedisStore(REDIS_URL, prefix=key_prefix(DOWN_CLUSTER_URL,
                                                    'mass:'))
    assert store.prefix == '{mass}:'
    store.add_counts_many([(tenant, B0, {'ops.GET': 1})
                           for tenant in ODD_TENANTS], ttl=60)
    assert set(store.read_counts(B0)) == set(ODD_TENANTS)
    state = store.update_table(None, {'AUTH_a': {'method': 'cache'}},
                               ['AUTH_a'])
    store.put_table({'AUTH_b': {'method': 'batch'}})
    assert store.table_changes(state)[2] is True
    store.set_pin('AUTH_c', {'method': 'none'})
    assert store.acquire_lease('proxy-1', 5000)
    keys = list(redis_db15.scan_iter())
    assert len(keys) >= len(ODD_TENANTS) + 6
    assert {key_slot(key) for key in keys} == {key_slot(b'{mass}')}


def test_an_unreachable_cluster_is_a_down_store_not_a_failed_start():
    logger = Logger()
    start = time.monotonic()
    store = RedisStore(DOWN_CLUSTER_URL)
    chain = store_from_conf(MassConf({'redis_url': DOWN_CLUSTER_URL}),
                            logger)
    assert time.monotonic() - start < 0.1
    health = store.health()
    assert health['ok'] is False
    assert health['error'].startswith(
        'RedisClusterException: Redis Cluster cannot be connected')
    # the chain passes over it to worker-local state, and says so once
    assert chain.put_table({'AUTH_a': {'method': 'cache'}}) == 1
    assert chain.get_table() == (1, {'AUTH_a': {'method': 'cache'}})
    [warning] = logger.lines['warning']
    assert 'RedisClusterException' in warning and 'using local' in warning


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
