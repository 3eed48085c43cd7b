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
"""The Redis store: flushes at scale, the table's change log, its keys,
its scripts."""
import importlib.resources
import time

import pytest
import redis
from redis.crc import key_slot

from swift_mass.control.stores import store_from_conf
from swift_mass.control.stores.base import FORGET_KEPT
from swift_mass.control.stores.local import LocalStore
from swift_mass.control.stores.redis_store import RedisStore
from swift_mass.control.stores.resilient import ResilientStore
from swift_mass.proxy.conf import MassConf
from swift_mass.redis_client import key_prefix
from tests.unit.control.stores.helpers import B0, B1, DOWN_CLUSTER_URL, \
    DOWN_REDIS_URL, ODD_TENANTS, SENTINEL_URL, Logger
from tests.unit.helpers import REDIS_URL, names_cluster_error


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
    leader.policy_table.CHANGES_KEPT = 3
    worker = RedisStore(REDIS_URL, prefix=prefix)
    worker.policy_table.CHANGES_KEPT = 3
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
    store.policy_table.CHANGES_KEPT = 2
    store.policy_table.TRIM_MOST = 1
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

    table_id, version = store.policy_table.replace(
        {'AUTH_a:b': {'method': 'cache'}})
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
    names = store.policy_table.keys + [
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
    assert store.forget(['AUTH_b'], 1700000000.0) == ['AUTH_b']
    assert store.acquire_lease('proxy-1', 5000)
    keys = list(redis_db15.scan_iter())
    assert len(keys) >= len(ODD_TENANTS) + 7
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
    assert names_cluster_error(health['error'])
    assert 'Redis Cluster cannot be connected' in health['error']
    # the chain passes over it to worker-local state, and says so once
    assert chain.put_table({'AUTH_a': {'method': 'cache'}}) == 1
    assert chain.get_table() == (1, {'AUTH_a': {'method': 'cache'}})
    [warning] = logger.lines['warning']
    assert names_cluster_error(warning.split('(', 1)[1]) and \
        'using local' in warning


def test_redis_db15_is_created_lazily():
    start = time.monotonic()
    RedisStore(DOWN_REDIS_URL)
    store_from_conf(MassConf({'redis_url': DOWN_REDIS_URL}), Logger())
    assert time.monotonic() - start < 0.1


def test_every_lua_file_is_a_script_of_the_store():
    # a file no script is read from would ship, and be read, as if it ran
    lua = importlib.resources.files('swift_mass.control.stores') / 'lua'
    assert sorted(path.name for path in lua.iterdir()) == sorted(
        name + '.lua' for name in RedisStore.SCRIPTS)
    assert len(RedisStore.script_shas()) == len(RedisStore.SCRIPTS)


def test_redis_forget_marks_and_the_change_log(redis_db15, redis_prefixes):
    prefix = redis_prefixes()
    store = RedisStore(REDIS_URL, prefix=prefix)
    state = store.update_table(None, {'AUTH_a:b': {'method': 'cache'},
                                      'AUTH_c': {'method': 'batch'}},
                               ['AUTH_a:b', 'AUTH_c'])
    assert store.forget(['AUTH_a:b'], 1700000000.25) == ['AUTH_a:b']
    # a hash of marks, kept FORGET_KEPT after the last forget
    assert redis_db15.hgetall(prefix + 'forgotten') == {
        b'AUTH_a:b': b'1700000000.25'}
    assert FORGET_KEPT - 5 < redis_db15.ttl(prefix + 'forgotten') <= \
        FORGET_KEPT
    # the entry removed as the leader removes one: logged at the version
    # the write took, which every worker's delta brings
    assert redis_db15.hgetall(prefix + 'policy:entries') == {
        b'AUTH_c': b'{"method": "batch"}'}
    assert redis_db15.zscore(prefix + 'policy:changes', 'AUTH_a:b') == 2.0
    assert store.table_changes(state) == (
        (state[0], 2), {'AUTH_a:b': None}, False)
