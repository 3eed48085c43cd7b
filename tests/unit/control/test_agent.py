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
import pytest

from swift_mass.control import agent as agent_mod
from swift_mass.control import controller, monitor, stats
from swift_mass.control.entry import PolicyEntry
from swift_mass.control.stores.local import LocalStore
from swift_mass.control.stores.resilient import ResilientStore
from tests.unit.helpers import Clock

SETTINGS = controller.DEFAULT_SETTINGS._replace(
    substores={'read': 'fast', 'write': 'bulk', 'mixed': ''}, window=60)


class Logger(object):
    def __init__(self):
        self.lines = []
        self.counts = {}

    def info(self, msg, *args):
        self.lines.append(msg % args if args else msg)

    warning = error = debug = info

    def increment(self, metric):
        self.counts[metric] = self.counts.get(metric, 0) + 1

    def update_stats(self, metric, value):
        self.counts[metric] = self.counts.get(metric, 0) + value


class Durable(object):
    """Stands where account sysmeta stands in the proxy."""

    def __init__(self, entries=None):
        self.entries = dict(entries or {})
        self.saved = []

    def load(self, tenant):
        return self.entries.get(tenant)

    def known(self, tenants):
        pass

    def save(self, tenant, entry):
        self.saved.append(tenant)
        if entry is None:
            self.entries.pop(tenant, None)
        else:
            self.entries[tenant] = entry


def make(store=None, clock=None, owner='proxy1:1', durable=None,
         generations=None):
    # one fake clock for the wall and the ticks: they advance together
    clock = clock or Clock()
    logger = Logger()
    store = store or LocalStore(clock=clock)
    return agent_mod.Agent(store, SETTINGS, owner, logger, interval=5,
                           bucket_seconds=5, durable=durable, clock=clock,
                           ticker=clock,
                           generations=generations), clock, logger


def load(agent, tenant, gets, puts):
    for _ in range(gets):
        agent.record(tenant, monitor.request_counts('GET', 200, 0, 10, 0.01))
    for _ in range(puts):
        agent.record(tenant, monitor.request_counts('PUT', 201, 10, 0, 0.01))


def test_tick_runs_once_per_interval():
    agent, clock, _ = make()
    assert agent.tick() is True
    assert agent.tick() is False
    clock.now += 4.9
    assert agent.tick() is False
    clock.now += 0.1
    assert agent.tick() is True


def test_ticks_every_interval_after_the_wall_clock_steps_back():
    # an NTP step, a VM resumed or a `date -s`: the wall clock goes back
    # an hour, and the worker must not wait out that hour before its next
    # flush, table refresh, lease renewal and (as leader) decisions
    wall, steady = Clock(), Clock(1000.0)
    agent, _, _ = make(clock=wall)
    agent.ticker = steady
    assert agent.tick() is True
    wall.now -= 3600
    for _ in range(12):
        steady.now += 2.5
        wall.now += 2.5
        assert agent.tick() is False
        steady.now += 2.5
        wall.now += 2.5
        load(agent, 'AUTH_t', 1, 0)
        assert agent.tick() is True
        assert agent.is_leader
        assert len(agent.window) == 0  # flushed


def test_classifies_tenants_and_publishes_the_table():
    durable = Durable()
    agent, clock, logger = make(durable=durable)
    load(agent, 'AUTH_photos', 95, 5)
    load(agent, 'AUTH_backup', 0, 80)
    load(agent, 'AUTH_db', 50, 50)
    load(agent, 'AUTH_quiet', 3, 3)
    agent.tick()
    assert agent.is_leader
    assert {t: (e.cls, e.substore, e.method)
            for t, e in agent.table.items()} == {
        'AUTH_photos': ('read', 'fast', 'cache'),
        'AUTH_backup': ('write', 'bulk', 'batch'),
        'AUTH_db': ('mixed', '', 'none')}
    assert agent.table_version == agent.store.table_version() == 1
    assert sorted(durable.saved) == ['AUTH_backup', 'AUTH_db', 'AUTH_photos']
    assert logger.counts['decisions'] == 3
    assert any('AUTH_photos: unknown -> read' in line
               for line in logger.lines)
    # nothing new: no new version
    clock.now += 5
    agent.tick()
    assert agent.table_version == 1


def test_all_workers_see_the_leaders_decision():
    clock = Clock()
    store = LocalStore(clock=clock)
    leader, _, _ = make(store, clock, owner='a')
    follower, _, _ = make(store, clock, owner='b')
    leader.tick()
    follower.tick()
    assert leader.is_leader and not follower.is_leader
    # the follower's counts reach the leader through the store
    load(follower, 'AUTH_x', 0, 100)
    clock.now += 5
    follower.tick()   # flushes
    leader.tick()     # decides
    assert follower.policy('AUTH_x') is None
    clock.now += 5
    follower.tick()   # refreshes
    assert follower.policy('AUTH_x').cls == 'write'


def test_window_forgets_old_load():
    agent, clock, _ = make()
    load(agent, 'AUTH_x', 100, 0)
    agent.tick()
    assert agent.policy('AUTH_x').cls == 'read'
    # a minute later the tenant only writes: the reads are out of the window
    clock.now += 65
    load(agent, 'AUTH_x', 0, 100)
    agent.tick()
    assert agent.policy('AUTH_x').cls == 'write'


def test_pins_and_unpins():
    agent, clock, _ = make()
    agent.store.set_pin('AUTH_p', {'class': 'write'})
    load(agent, 'AUTH_p', 100, 0)
    agent.tick()
    assert agent.policy('AUTH_p').cls == 'write'
    assert agent.policy('AUTH_p').pinned
    agent.store.delete_pin('AUTH_p')
    clock.now += 5
    agent.tick()
    assert agent.policy('AUTH_p').cls == 'read'
    assert not agent.policy('AUTH_p').pinned


def test_pins_hold_while_the_store_that_keeps_them_is_out():
    """A leader on the fallback store sees no pins: it classified pinned
    tenants by their load and saved that over their durable copies."""
    clock = Clock()
    primary = LocalStore(clock=clock)
    store = ResilientStore(primary, LocalStore(clock=clock), Logger(),
                           retry_after=30, clock=clock)
    durable = Durable()
    agent, _, _ = make(store, clock, durable=durable)
    store.set_pin('AUTH_p', {'class': 'read', 'method': 'cache'})
    load(agent, 'AUTH_p', 0, 100)
    agent.tick()
    pinned = agent.policy('AUTH_p')
    assert pinned.pinned and durable.entries['AUTH_p'] == pinned.to_dict()
    primary_failing = primary.get_pins
    primary.get_pins = lambda: 1 / 0
    for _ in range(3):
        clock.now += 5
        load(agent, 'AUTH_p', 0, 100)
        agent.tick()
        assert store.in_use() == 'local'
        assert agent.policy('AUTH_p') == pinned
    assert durable.entries['AUTH_p'] == pinned.to_dict()
    # a new worker, recalling from the durable copy, keeps it too
    fresh, _, _ = make(store, clock, owner='proxy2:1', durable=durable)
    store.release_lease('proxy1:1')
    clock.now += 5
    fresh.tick()
    assert fresh.policy('AUTH_p') == pinned
    # the pins can be read again: an unpin there takes effect
    primary.get_pins = primary_failing
    primary.delete_pin('AUTH_p')
    clock.now += 31
    load(agent, 'AUTH_p', 0, 100)
    agent.tick()
    assert agent.policy('AUTH_p').cls == 'write'


def test_decisions_survive_the_loss_of_the_store():
    durable = Durable()
    agent, clock, _ = make(durable=durable)
    load(agent, 'AUTH_x', 0, 100)
    agent.tick()
    # the shared store restarts empty; a new worker starts
    fresh, _, _ = make(LocalStore(clock=clock), clock, durable=durable)
    load(fresh, 'AUTH_x', 1, 0)   # the tenant shows up again
    durable.saved.clear()
    fresh.tick()
    assert fresh.policy('AUTH_x').cls == 'write'
    assert fresh.policy('AUTH_x') == agent.policy('AUTH_x')
    assert durable.saved == []  # recalled as it was: not written again


def test_metrics_per_tenant_and_class_once_per_flush():
    agent, clock, logger = make()
    load(agent, 'AUTH_a.b:c', 0, 60)
    agent.tick()
    assert logger.counts['tenant.AUTH_a_b_c.ops.PUT'] == 60
    assert logger.counts['class.unknown.ops.PUT'] == 60
    assert logger.counts['tenant.AUTH_a_b_c.bytes_in'] == 600
    load(agent, 'AUTH_a.b:c', 5, 0)
    clock.now += 5
    agent.tick()
    assert logger.counts['class.write.ops.GET'] == 5
    assert not [m for m in logger.counts if 'lat' in m or 'size' in m]


@pytest.mark.parametrize('bad', [
    'read', {'class': 'read'}, {'class': 'read', 'method': 'cache',
                                'since': 'yesterday', 'validated': False}])
def test_one_malformed_entry_stops_no_one_elses_decision(bad):
    """A malformed entry in one account's sysmeta raised out of the
    leader's tick: no tenant was decided on, every interval."""
    durable = Durable({'AUTH_bad': bad})
    agent, _, logger = make(durable=durable)
    load(agent, 'AUTH_bad', 95, 5)
    load(agent, 'AUTH_good', 0, 80)
    agent.tick()
    assert agent.policy('AUTH_good').cls == 'write'
    # the bad one is decided on afresh, from its load
    assert agent.policy('AUTH_bad').cls == 'read'
    assert any('AUTH_bad: cannot decide on its entry' in line
               for line in logger.lines)
    assert durable.entries['AUTH_bad'] == agent.policy('AUTH_bad').to_dict()


def test_a_malformed_durable_copy_of_an_unclassified_tenant_goes():
    durable = Durable({'AUTH_bad': {'class': 'read'}})
    agent, _, _ = make(durable=durable)
    load(agent, 'AUTH_bad', 2, 0)  # too few to classify
    agent.tick()
    assert agent.policy('AUTH_bad') is None
    assert durable.saved == ['AUTH_bad'] and durable.entries == {}


def test_statsd_name():
    assert stats.statsd_name('AUTH_test') == 'AUTH_test'
    assert stats.statsd_name('AUTH_\xc3\xa9.x:y|z@w') == \
        'AUTH____x_y_z_w'


def test_baseline_records_the_other_tenants_latency():
    agent, clock, _ = make()
    load(agent, 'reader', 60, 0)
    for _ in range(60):
        # another tenant's GETs, slower: the cluster's reference
        agent.record('other', monitor.request_counts('GET', 200, 0, 10,
                                                     0.05))
    agent.tick()
    entry = agent.policy('reader')
    assert entry.cls == 'read'
    assert entry.baseline_ms == 10.0
    assert entry.baseline_reference_ms == 50.0
    # the other tenant's own reference is the reader's latency
    assert agent.policy('other').baseline_reference_ms == 10.0


def test_the_leader_publishes_the_tenants_to_bump_at_every_tick():
    # the object servers bump only the writes of tenants whose method
    # reads generations; Redis may lose the set, so every tick says it
    import uuid
    from swift_mass.generations.core import Generations
    from tests.unit.helpers import REDIS_URL
    generations = Generations(REDIS_URL, Logger(),
                              prefix='t:%s:' % uuid.uuid4().hex)
    agent, clock, logger = make(generations=generations)

    def bumped():
        return {t.decode() for t in generations.client.hkeys(
            generations.bumps_key)}
    agent.store.set_pin('AUTH_c', {'class': 'read', 'method': 'cache'})
    agent.store.set_pin('AUTH_m', {'class': 'mixed', 'method': 'merge'})
    agent.store.set_pin('AUTH_b', {'class': 'write', 'method': 'batch'})
    agent.store.set_pin('AUTH_n', {'class': 'read', 'method': 'none'})
    agent.tick()
    assert bumped() == {'AUTH_c', 'AUTH_m'}
    generations.client.delete(generations.bumps_key)
    clock.now += 5
    agent.tick()
    assert bumped() == {'AUTH_c', 'AUTH_m'}
    agent.store.delete_pin('AUTH_c')
    clock.now += 5
    agent.tick()
    assert 'AUTH_c' not in bumped()


class Recording(LocalStore):
    """A LocalStore that records the calls the control loop makes."""

    def __init__(self, clock):
        LocalStore.__init__(self, clock)
        self.calls = []

    def add_counts_many(self, items, ttl):
        items = list(items)
        self.calls.append(('add_counts_many', len(items)))
        return LocalStore.add_counts_many(self, items, ttl)

    def update_table(self, since, table, changed):
        self.calls.append(('update_table', sorted(changed)))
        return LocalStore.update_table(self, since, table, changed)

    def table_changes(self, since):
        changes = LocalStore.table_changes(self, since)
        self.calls.append(('table_changes', changes and (
            sorted(changes[1]), changes[2])))
        return changes

    def of(self, name):
        found = [args for call, args in self.calls if call == name]
        del self.calls[:]
        return found


class KnownDurable(Durable):
    def __init__(self):
        Durable.__init__(self)
        self.known_tenants = []

    def known(self, tenants):
        self.known_tenants.append(sorted(tenants))


def test_a_flush_is_one_call_to_the_store():
    clock = Clock()
    store = Recording(clock)
    agent, _, logger = make(store, clock)
    for i in range(300):
        load(agent, 'AUTH_%03d' % i, 1, 1)
    clock.now += 5  # counts in two buckets
    load(agent, 'AUTH_000', 0, 2)
    agent.tick()
    assert store.of('add_counts_many') == [301]
    assert logger.counts['tenant.AUTH_000.ops.PUT'] == 3
    assert logger.counts['class.unknown.ops.GET'] == 300
    clock.now += 5
    agent.tick()  # nothing to flush
    assert store.of('add_counts_many') == []


def test_a_flush_to_redis_is_a_round_trip_per_few_thousand_tenants(
        prefix, monkeypatch):
    from swift_mass.control.stores.redis_store import RedisStore
    from tests.unit.helpers import REDIS_URL
    store = RedisStore(REDIS_URL, prefix=prefix)
    agent, clock, _ = make(store)
    agent.record('AUTH_warm', {'ops.GET': 1})
    agent.flush()  # loads the script
    executes = []
    real = store.client.pipeline

    def pipeline(*args, **kwargs):
        pipe = real(*args, **kwargs)
        run = pipe.execute

        def execute(*args, **kwargs):
            executes.append(len(pipe.command_stack))
            return run(*args, **kwargs)
        pipe.execute = execute
        return pipe
    monkeypatch.setattr(store.client, 'pipeline', pipeline)
    for i in range(5000):
        agent.record('AUTH_%04d' % i, {'ops.GET': 1, 'lat_ms.GET': 3})
    agent.flush()
    # 5,000 tenants: 20 scripts of 250, 16 to a round trip
    assert executes == [16, 4]
    assert len(store.read_counts(0)) == 5001


def test_the_leader_decides_the_active_and_writes_what_changed(
        monkeypatch):
    clock = Clock()
    store = Recording(clock)
    durable = KnownDurable()
    agent, _, _ = make(store, clock, durable=durable)
    # 1,000 tenants known, idle
    known = {'AUTH_idle%04d' % i: controller.new_entry(
        'read', SETTINGS, clock.now - 600, 'earlier').replace(validated=True)
        for i in range(1000)}
    store.update_table(None, known, list(known))
    store.of('update_table')
    load(agent, 'AUTH_photos', 95, 5)
    load(agent, 'AUTH_quiet', 3, 3)
    decided = []
    real_decide = controller.decide

    def decide(tenant, *args, **kwargs):
        decided.append(tenant)
        return real_decide(tenant, *args, **kwargs)
    monkeypatch.setattr(controller, 'decide', decide)
    agent.tick()
    assert sorted(decided) == ['AUTH_photos', 'AUTH_quiet']
    assert store.of('update_table') == [['AUTH_photos']]
    assert len(agent.table) == 1001
    clock.now += 5
    del decided[:]
    agent.store.set_pin('AUTH_idle0007', {'class': 'write'})
    agent.tick()
    assert sorted(decided) == ['AUTH_idle0007', 'AUTH_photos', 'AUTH_quiet']
    # the leader's own write: nothing to load, not even a delta
    assert ('table_changes', None) in store.calls
    assert store.of('update_table') == [['AUTH_idle0007']]
    assert agent.table['AUTH_idle0007'].pinned
    # nothing changed: nothing written
    clock.now += 5
    agent.tick()
    assert store.of('update_table') == []


def test_workers_apply_what_changed():
    clock = Clock()
    store = Recording(clock)
    leader, _, _ = make(store, clock, owner='leader')
    durable = KnownDurable()
    worker, _, _ = make(store, clock, owner='worker', durable=durable)
    load(leader, 'AUTH_a', 100, 0)
    load(leader, 'AUTH_b', 0, 100)
    leader.tick()
    worker.tick()
    assert store.of('table_changes')[-1] == (['AUTH_a', 'AUTH_b'], True)
    assert durable.known_tenants == [['AUTH_a', 'AUTH_b']]
    table = worker.table
    # a pin changes one entry; an unpin after it removes another
    store.set_pin('AUTH_c', {'class': 'mixed'})
    clock.now += 5
    leader.tick()
    worker.tick()
    assert store.of('table_changes')[-1] == (['AUTH_c'], False)
    assert worker.table is table  # changed in place
    assert sorted(table) == ['AUTH_a', 'AUTH_b', 'AUTH_c']
    assert durable.known_tenants[-1] == ['AUTH_c']
    store.delete_pin('AUTH_c')
    clock.now += 5
    leader.tick()
    worker.tick()
    assert store.of('table_changes')[-1] == (['AUTH_c'], False)
    assert sorted(table) == ['AUTH_a', 'AUTH_b']
    assert durable.known_tenants[-1] == []
    assert (worker.table_id, worker.table_version) == (
        leader.table_id, leader.table_version)
    assert worker.table == leader.table


def test_a_worker_the_change_log_no_longer_reaches_loads_it_whole():
    clock = Clock()
    store = Recording(clock)
    store.CHANGES_KEPT = 2
    leader, _, _ = make(store, clock, owner='leader')
    worker, _, _ = make(store, clock, owner='worker')
    leader.tick()
    worker.tick()
    for tenant in ('AUTH_a', 'AUTH_b', 'AUTH_c'):
        store.set_pin(tenant, {'class': 'read'})
        clock.now += 5
        leader.tick()  # a version each
    store.of('table_changes')
    worker._next_tick = 0
    worker.tick()
    assert store.of('table_changes') == [(['AUTH_a', 'AUTH_b', 'AUTH_c'],
                                          True)]
    assert worker.table == leader.table


def test_a_store_that_lost_the_table_is_loaded_again():
    clock = Clock()
    store = Recording(clock)
    leader, _, _ = make(store, clock, owner='leader')
    worker, _, _ = make(store, clock, owner='worker')
    store.set_pin('AUTH_p', {'class': 'write'})
    leader.tick()
    worker.tick()
    assert worker.policy('AUTH_p').cls == 'write'
    old_id = worker.table_id
    LocalStore.__init__(store, clock)  # restarted, empty
    clock.now += 5
    worker.tick()
    assert worker.table == {} and worker.table_id is None
    store.set_pin('AUTH_p', {'class': 'write'})
    clock.now += 5
    leader.tick()
    worker.tick()
    assert worker.policy('AUTH_p').cls == 'write'
    assert worker.table_id not in (None, old_id)


def test_a_leader_whose_write_was_not_the_only_one_catches_up():
    clock = Clock()
    store = LocalStore(clock)
    leader, _, _ = make(store, clock, owner='leader')
    leader.tick()
    state = (leader.table_id, leader.table_version)
    # another writer, between two of this leader's ticks
    store.update_table(state, {'AUTH_other': PolicyEntry('read')},
                       ['AUTH_other'])
    store.set_pin('AUTH_p', {'class': 'write'})
    clock.now += 5
    leader.tick()  # loads the other's change, then writes its own
    assert sorted(leader.table) == ['AUTH_other', 'AUTH_p']
    assert (leader.table_id, leader.table_version) == store._state


def test_the_lease_lasts_one_and_a_half_intervals():
    clock = Clock()
    store = LocalStore(clock)
    leader, _, _ = make(store, clock, owner='leader')
    other, _, _ = make(store, clock, owner='other')
    leader.tick()
    other.tick()
    assert leader.is_leader and not other.is_leader
    # the leader dies: within 7.5 s (1.5 intervals) the lease is free
    clock.now += 7.4
    other.tick()
    assert not other.is_leader
    clock.now += 0.2
    other._next_tick = 0
    other.tick()
    assert other.is_leader


def test_per_tenant_metrics_for_the_busiest_only():
    clock = Clock()
    logger = Logger()
    agent = agent_mod.Agent(LocalStore(clock), SETTINGS, 'proxy1:1', logger,
                            clock=clock, ticker=clock, tenant_metrics=2)
    load(agent, 'AUTH_busy', 30, 0)
    load(agent, 'AUTH_busier', 0, 40)
    clock.now += 5  # in two buckets: added up
    load(agent, 'AUTH_busy', 11, 0)
    for i in range(10):
        load(agent, 'AUTH_quiet%d' % i, 1, 1)
    agent.tick()
    tenants = {m.split('.')[1] for m in logger.counts
               if m.startswith('tenant.')}
    assert tenants == {'AUTH_busy', 'AUTH_busier'}
    assert logger.counts['tenant.AUTH_busy.ops.GET'] == 41
    # every tenant in its class's
    assert logger.counts['class.unknown.ops.GET'] == 51
    assert logger.counts['class.unknown.ops.PUT'] == 50

    logger.counts.clear()
    agent.tenant_metrics = 0
    load(agent, 'AUTH_busy', 1, 0)
    clock.now += 5
    agent.tick()
    assert logger.counts == {'class.unknown.ops.GET': 1,
                             'class.unknown.bytes_out': 10}


def test_a_loaded_table_shares_its_few_kinds_of_values(prefix):
    from swift_mass.control.stores.redis_store import RedisStore
    from tests.unit.helpers import REDIS_URL
    store = RedisStore(REDIS_URL, prefix=prefix)
    table = {'AUTH_%d' % i: PolicyEntry('read', 'fast', 'cache', since=1.0,
                                        reason='r%d' % i)
             for i in range(3)}
    store.update_table(None, table, list(table))
    agent, _, _ = make(store)
    agent.refresh()
    assert agent.table == table
    one, two = agent.table['AUTH_0'], agent.table['AUTH_2']
    for field in ('cls', 'substore', 'method'):
        assert getattr(one, field) is getattr(two, field)


def requests(agent, tenant, op, n, ms):
    status = 201 if op == 'PUT' else 200
    for _ in range(n):
        agent.record(tenant, monitor.request_counts(op, status, 0, 0,
                                                    ms / 1000.0))


def test_an_unpinned_warm_cache_outlives_its_cold_start():
    """The benchmark's run: a reader pinned to cache, then unpinned; its
    next container starts cold (every GET a miss and a fill for a
    minute).  The leader kept the method, and judged it against neither
    the pinned window nor the cold one."""
    agent, clock, logger = make(durable=Durable())
    agent.store.set_pin('AUTH_r', {'class': 'read', 'method': 'cache'})
    for _ in range(24):  # two minutes pinned, warm: 2 ms GETs
        requests(agent, 'AUTH_r', 'GET', 40, 2)
        agent.tick()
        clock.now += 5
    assert agent.policy('AUTH_r').pinned
    agent.store.delete_pin('AUTH_r')
    unpinned = clock.now
    while clock.now < unpinned + 1800:
        cold = clock.now < unpinned + 60
        requests(agent, 'AUTH_r', 'GET', 40, 20 if cold else 3)
        agent.tick()
        entry = agent.policy('AUTH_r')
        assert (entry.cls, entry.method, entry.pinned) == \
            ('read', 'cache', False)
        clock.now += 5
    assert not [line for line in logger.lines if 'deleted' in line]
    assert entry.baseline_ms is None and 'not judged' in entry.reason


def test_classification_settles_within_the_warm_up():
    """How many ticks a tenant needs to be classified: a new one, the
    first tick whose window holds min_requests; one whose workload turns
    from writes to reads, fewer ticks than a window holds (the read
    share must pass read_share of the window, with a step through mixed).
    The warm-up, a window or more, covers it: no validated window holds
    the workload before the change, and validation never delays a class."""
    agent, clock, logger = make()
    ticks = 0
    while agent.policy('AUTH_t') is None:
        requests(agent, 'AUTH_t', 'PUT', 20, 10)  # 4 a second
        agent.tick()
        ticks += 1
        clock.now += 5
    assert ticks == 3  # 60 requests: min_requests (50) in the window
    assert agent.policy('AUTH_t').cls == 'write'
    for _ in range(36):  # three minutes of writes: batch validated
        requests(agent, 'AUTH_t', 'PUT', 20, 10)
        agent.tick()
        clock.now += 5
    assert agent.policy('AUTH_t').validated
    switched, classes, validated = clock.now, [], None
    for _ in range(60):  # reads only, from now on
        requests(agent, 'AUTH_t', 'GET', 20, 10)
        agent.tick()
        entry = agent.policy('AUTH_t')
        if not classes or classes[-1][0] != entry.cls:
            classes.append((entry.cls, clock.now - switched))
        if entry.cls == 'read' and entry.validated and \
                validated is None:
            validated = clock.now - switched
        clock.now += 5
    # mixed once the window holds more than 25 % reads, read at 80 %
    assert classes == [('write', 0), ('mixed', 15), ('read', 45)]
    assert 45 < SETTINGS.window <= SETTINGS.warmup
    # cache judged (and validated: no slower) once, over the first window
    # after the warm-up, a window after the class settled
    assert validated == 45 + SETTINGS.interval + SETTINGS.warmup + \
        SETTINGS.window
    assert [line for line in logger.lines if 'AUTH_t: cache' in line] == [
        'mass decision: AUTH_t: cache validated: 10.0 ms against 10.0 ms '
        'before']


def test_a_forgotten_tenant_is_dropped_and_classified_afresh():
    clock = Clock()
    store = Recording(clock)
    leader, _, logger = make(store, clock, owner='leader')
    worker, _, _ = make(store, clock, owner='worker')
    load(leader, 'AUTH_x', 100, 0)
    load(leader, 'AUTH_y', 0, 100)
    leader.tick()
    worker.tick()
    assert worker.policy('AUTH_x').cls == 'read'
    store.of('table_changes')
    clock.now += 5
    assert store.forget(['AUTH_x'], clock.now) == ['AUTH_x']
    # the forget read the table whole, and wrote the removal alone
    assert store.of('table_changes') == [(['AUTH_x', 'AUTH_y'], True)]
    worker.tick()
    # dropped at the worker's next tick, as any removed entry: a delta
    assert store.of('table_changes') == [(['AUTH_x'], False)]
    assert worker.policy('AUTH_x') is None
    assert worker.policy('AUTH_y').cls == 'write'
    # the reads from before the forget are still in the window, but not
    # the tenant's any more: no entry while it makes no request
    leader.tick()
    assert 'AUTH_x' not in leader.table
    assert store.get_table()[1].keys() == {'AUTH_y'}
    # afresh, from its requests after the forget only: writes, not the
    # mixed load that its reads before would make of them
    clock.now += 5
    load(leader, 'AUTH_x', 0, 100)
    leader.tick()
    entry = leader.policy('AUTH_x')
    assert (entry.cls, entry.method, entry.since) == (
        'write', 'batch', clock.now)
    assert any('AUTH_x: unknown -> write' in line for line in logger.lines)
    clock.now += 5
    worker.tick()
    assert worker.policy('AUTH_x') == entry
    # and it is not forgotten again at the next ticks
    clock.now += 5
    load(leader, 'AUTH_x', 0, 100)
    leader.tick()
    assert leader.policy('AUTH_x') is entry


def test_an_entry_from_before_a_forget_put_back_goes_at_the_next_tick():
    clock = Clock()
    store = LocalStore(clock)
    leader, _, _ = make(store, clock, owner='leader')
    old = PolicyEntry('read', substore='fast', method='cache',
                      since=clock.now - 300, validated=True)
    assert controller.keeps_when_idle(old)  # idle: kept as it is
    store.update_table(None, {'AUTH_x': old}, ['AUTH_x'])
    leader.tick()
    assert leader.policy('AUTH_x') == old
    clock.now += 5
    state = (leader.table_id, leader.table_version)
    assert store.forget(['AUTH_x'], clock.now) == ['AUTH_x']
    # a leader that decided before the forget writes after it
    store.update_table(state, {'AUTH_x': old}, ['AUTH_x'])
    assert 'AUTH_x' in store.get_table()[1]
    clock.now += 5
    leader.tick()
    assert 'AUTH_x' not in leader.table
    assert store.get_table()[1] == {}


def test_a_forget_replaces_the_durable_copy_and_keeps_the_pin():
    durable = Durable()
    agent, clock, _ = make(durable=durable)
    load(agent, 'AUTH_x', 100, 0)
    agent.store.set_pin('AUTH_p', {'class': 'write'})
    agent.tick()
    read, pinned = agent.policy('AUTH_x'), agent.policy('AUTH_p')
    assert durable.entries['AUTH_x'] == read.to_dict()
    clock.now += 65  # the reads are out of the window
    agent.tick()
    assert agent.store.forget(['AUTH_x', 'AUTH_p'], clock.now) == [
        'AUTH_x', 'AUTH_p']
    # a new worker, which would recall the tenant's durable copy
    fresh, _, _ = make(agent.store, clock, owner='proxy2:1',
                       durable=durable)
    agent.store.release_lease('proxy1:1')
    clock.now += 5
    load(fresh, 'AUTH_x', 100, 0)
    durable.saved.clear()
    fresh.tick()
    assert fresh.is_leader
    entry = fresh.policy('AUTH_x')
    assert entry.cls == 'read' and entry.since == clock.now != read.since
    assert durable.entries['AUTH_x'] == entry.to_dict()
    # the pin outlives the forget: unpin removes it
    assert fresh.policy('AUTH_p').pinned
    assert fresh.policy('AUTH_p').since == clock.now != pinned.since
    assert agent.store.get_pins() == {'AUTH_p': {'class': 'write'}}
    assert sorted(durable.saved) == ['AUTH_p', 'AUTH_x']


def test_a_forgotten_opted_out_tenant_stays_opted_out():
    clock = Clock()
    store = LocalStore(clock)
    agent = agent_mod.Agent(store, SETTINGS, 'proxy1:1', Logger(),
                            interval=5, bucket_seconds=5, clock=clock,
                            ticker=clock, opt_out={'AUTH_o'})
    load(agent, 'AUTH_o', 100, 0)
    agent.tick()
    assert agent.table['AUTH_o'].opted_out
    clock.now += 5
    store.forget(['AUTH_o'], clock.now)
    clock.now += 5
    load(agent, 'AUTH_o', 100, 0)
    agent.tick()
    assert agent.table['AUTH_o'].opted_out
    assert agent.policy('AUTH_o') is None
