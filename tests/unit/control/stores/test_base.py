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
"""What every store offers, each store held to it."""
import time

import pytest

from swift_mass.control.entry import PolicyEntry
from swift_mass.control.stores.base import TableBusy
from swift_mass.control.stores.local import LocalStore
from swift_mass.control.stores.memcache_store import MemcacheStore
from swift_mass.control.stores.redis_store import RedisStore
from tests.unit.control.stores.helpers import B0, B1, B2, ODD_TENANTS
from tests.unit.helpers import REDIS_URL, Clock


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


def test_a_table_of_policy_entries_is_kept_as_their_dicts(harness):
    # the leader hands its table of PolicyEntry over; every store keeps
    # each as its to_dict(), which workers read back
    leader = harness.store()
    worker = harness.store(like=leader)
    table = {'AUTH_a:b': PolicyEntry('read', substore='fast',
                                     method='cache', since=1.5,
                                     ran_until={'batch': 1.0}),
             'AUTH_c': PolicyEntry('write', substore='', method='batch')}
    stored = {tenant: entry.to_dict() for tenant, entry in table.items()}
    state = leader.update_table(None, table, list(table))
    assert worker.table_changes(None) == (state, stored, True)
    assert leader.put_table(table) == 2
    assert worker.get_table() == (2, stored)


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


def test_forget_removes_entries_through_the_versioned_write(harness):
    leader = harness.store()
    worker = harness.store(like=leader)
    operator = harness.store(like=leader)
    table = {tenant: {'class': 'read', 'method': 'cache', 'since': 1}
             for tenant in ODD_TENANTS}
    state = leader.update_table(None, table, list(table))
    assert worker.table_changes(None) == (state, table, True)
    assert operator.forget(['AUTH_a:b', 'AUTH_\xc3\xa9', 'AUTH_none',
                            'AUTH_a:b'], 1700000100.0) == [
        'AUTH_a:b', 'AUTH_\xc3\xa9']
    del table['AUTH_a:b'], table['AUTH_\xc3\xa9']
    later, entries, whole = worker.table_changes(state)
    assert later[1] == state[1] + 1
    if harness.kind == 'memcache':
        assert (entries, whole) == (table, True)
    else:
        # a delta, as any removed entry: every worker drops them
        assert (entries, whole) == (
            {'AUTH_a:b': None, 'AUTH_\xc3\xa9': None}, False)
    assert worker.get_table()[1] == table
    # the marks, beside the table, for the leader
    assert worker.forgotten() == {'AUTH_a:b': 1700000100.0,
                                  'AUTH_\xc3\xa9': 1700000100.0,
                                  'AUTH_none': 1700000100.0}
    # the leader's next write, from the state it read, takes
    table['AUTH_new'] = {'class': 'write'}
    assert leader.update_table(later, table, ['AUTH_new']) == (
        later[0], later[1] + 1)
    # forgotten again later: its mark moves on; nothing to remove
    assert operator.forget(['AUTH_a:b'], 1700000200.5) == []
    assert worker.forgotten()['AUTH_a:b'] == 1700000200.5
    assert worker.forgotten()['AUTH_none'] == 1700000100.0
    assert worker.table_version() == later[1] + 1


def test_forget_with_no_table_marks_the_tenants(harness):
    store = harness.store()
    assert store.forgotten() == {}
    assert store.forget(['AUTH_x'], 1700000000.0) == []
    assert store.table_changes(None) is None  # no table made for it
    assert store.forgotten() == {'AUTH_x': 1700000000.0}


def test_forget_marks_expire_after_the_last_forget(harness):
    store = harness.store()
    store.mark_forgotten({'AUTH_x': 1.0}, 1)
    store.mark_forgotten({}, 1)  # nothing
    assert store.forgotten() == {'AUTH_x': 1.0}
    assert harness.eventually(lambda: store.forgotten() == {}, 1)


def test_forget_tries_again_when_another_write_comes_in_between(harness):
    leader = harness.store()
    operator = harness.store(like=leader)
    table = {'AUTH_a': {'class': 'read'}, 'AUTH_b': {'class': 'write'}}
    state = [leader.update_table(None, table, list(table))]
    real = operator.update_table
    calls = []

    def update_table(since, wanted, changed):
        calls.append(sorted(changed))
        if len(calls) == 1:
            # the leader writes between the operator's read and write
            table['AUTH_c'] = {'class': 'mixed'}
            state.append(real(state[-1], table, ['AUTH_c']))
        return real(since, wanted, changed)
    operator.update_table = update_table
    assert operator.forget(['AUTH_a'], 1700000000.0) == ['AUTH_a']
    del table['AUTH_a']
    assert calls == [['AUTH_a']]
    if harness.kind == 'memcache':
        # its updates are whole tables, never refused: the forget's, from
        # its read, took the other write's entry away (memcache keeps no
        # concurrent writes apart, forget's or the leader's)
        assert leader.get_table()[1] == {'AUTH_b': {'class': 'write'}}
    else:
        # written but refused (the store does not hold exactly the
        # forget's table): read again, nothing is left to remove, and the
        # other write's entry stays
        assert leader.get_table()[1] == table


def test_forget_removes_an_entry_another_write_put_back(harness):
    store = harness.store()
    store.update_table(None, {'AUTH_a': {}}, ['AUTH_a'])
    real = store.update_table
    calls = []

    def update_table(since, wanted, changed):
        calls.append(sorted(changed))
        result = real(since, wanted, changed)
        if len(calls) == 1:
            # another writer, from a state before the forget, writes the
            # entry again after it
            real(since, {'AUTH_a': {'class': 'read'}}, ['AUTH_a'])
            return None
        return result
    store.update_table = update_table
    assert store.forget(['AUTH_a'], 1700000000.0) == ['AUTH_a']
    assert calls == [['AUTH_a'], ['AUTH_a']]
    assert store.get_table()[1] == {}


def test_forget_gives_up_on_a_table_that_keeps_changing(harness):
    store = harness.store()
    store.update_table(None, {'AUTH_a': {}}, ['AUTH_a'])
    store.update_table = lambda since, table, changed: None
    with pytest.raises(TableBusy):
        store.forget(['AUTH_a'], 1700000000.0)
