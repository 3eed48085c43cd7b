from swift_mass.control import agent as agent_mod
from swift_mass.control import controller, monitor
from swift_mass.control.store import LocalStore, ResilientStore
from tests.unit.helpers import Clock

SETTINGS = controller.DEFAULT_SETTINGS._replace(
    rings={'read': 'fast', 'write': 'bulk', 'mixed': ''}, window=60)


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


def make(store=None, clock=None, owner='proxy1:1', durable=None):
    clock = clock or Clock()
    logger = Logger()
    store = store or LocalStore(clock=clock)
    return agent_mod.Agent(store, SETTINGS, owner, logger, interval=5,
                           bucket_seconds=5, durable=durable,
                           clock=clock), clock, logger


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


def test_classifies_tenants_and_publishes_the_table():
    durable = Durable()
    agent, clock, logger = make(durable=durable)
    load(agent, 'AUTH_photos', 95, 5)
    load(agent, 'AUTH_backup', 0, 80)
    load(agent, 'AUTH_db', 50, 50)
    load(agent, 'AUTH_quiet', 3, 3)
    agent.tick()
    assert agent.is_leader
    assert {t: (e['class'], e['ring'], e['method'])
            for t, e in agent.table.items()} == {
        'AUTH_photos': ('read', 'fast', 'cache'),
        'AUTH_backup': ('write', 'bulk', 'batch'),
        'AUTH_db': ('mixed', '', 'merge')}
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
    assert follower.policy('AUTH_x')['class'] == 'write'


def test_window_forgets_old_load():
    agent, clock, _ = make()
    load(agent, 'AUTH_x', 100, 0)
    agent.tick()
    assert agent.policy('AUTH_x')['class'] == 'read'
    # a minute later the tenant only writes: the reads are out of the window
    clock.now += 65
    load(agent, 'AUTH_x', 0, 100)
    agent.tick()
    assert agent.policy('AUTH_x')['class'] == 'write'


def test_pins_and_unpins():
    agent, clock, _ = make()
    agent.store.set_pin('AUTH_p', {'class': 'write'})
    load(agent, 'AUTH_p', 100, 0)
    agent.tick()
    assert agent.policy('AUTH_p')['class'] == 'write'
    assert agent.policy('AUTH_p')['pinned']
    agent.store.delete_pin('AUTH_p')
    clock.now += 5
    agent.tick()
    assert agent.policy('AUTH_p')['class'] == 'read'
    assert not agent.policy('AUTH_p')['pinned']


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
    assert pinned['pinned'] and durable.entries['AUTH_p'] == pinned
    primary_failing = primary.get_pins
    primary.get_pins = lambda: 1 / 0
    for _ in range(3):
        clock.now += 5
        load(agent, 'AUTH_p', 0, 100)
        agent.tick()
        assert store.in_use() == 'local'
        assert agent.policy('AUTH_p') == pinned
    assert durable.entries['AUTH_p'] == pinned
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
    assert agent.policy('AUTH_p')['class'] == 'write'


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
    assert fresh.policy('AUTH_x')['class'] == 'write'
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


def test_statsd_name():
    assert agent_mod.statsd_name('AUTH_test') == 'AUTH_test'
    assert agent_mod.statsd_name('AUTH_\xc3\xa9.x:y|z@w') == \
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
    assert entry['class'] == 'read'
    assert entry['baseline_ms'] == 10.0
    assert entry['baseline_reference_ms'] == 50.0
    # the other tenant's own reference is the reader's latency
    assert agent.policy('other')['baseline_reference_ms'] == 10.0


def test_the_leader_publishes_the_tenants_to_bump_at_every_tick():
    # the object servers bump only the writes of tenants whose method
    # reads generations; Redis may lose the set, so every tick says it
    import uuid
    from swift_mass.generations import Generations
    from tests.unit.helpers import REDIS_URL
    agent, clock, logger = make()
    agent.generations = Generations(REDIS_URL, logger,
                                    prefix='t:%s:' % uuid.uuid4().hex)

    def bumped():
        return {t.decode() for t in agent.generations.client.hkeys(
            agent.generations.bumps_key)}
    agent.store.set_pin('AUTH_c', {'class': 'read', 'method': 'cache'})
    agent.store.set_pin('AUTH_m', {'class': 'mixed', 'method': 'merge'})
    agent.store.set_pin('AUTH_b', {'class': 'write', 'method': 'batch'})
    agent.store.set_pin('AUTH_n', {'class': 'read', 'method': 'none'})
    agent.tick()
    assert bumped() == {'AUTH_c', 'AUTH_m'}
    agent.generations.client.delete(agent.generations.bumps_key)
    clock.now += 5
    agent.tick()
    assert bumped() == {'AUTH_c', 'AUTH_m'}
    agent.store.delete_pin('AUTH_c')
    clock.now += 5
    agent.tick()
    assert 'AUTH_c' not in bumped()
