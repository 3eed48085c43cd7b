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
"""The leader and an opted-out tenant: not classified, its policy replaced
by an entry that says it is opted out (which no worker takes for a
policy), learnt from opt_out_accounts or from the tenant's requests, and
decided on afresh once it opts back in."""
from swift_mass.control import controller, monitor
from swift_mass.generations.publisher import bumped_tenants
from swift_mass.control.stores.local import LocalStore
from tests.unit.control.test_agent import Durable, load, make
from tests.unit.helpers import Clock


def opted_out_requests(agent, tenant, n=5):
    for _ in range(n):
        counts = monitor.request_counts('GET', 200, 0, 10, 0.01)
        counts[monitor.OPTED_OUT] = 1
        agent.record(tenant, counts)


def classified(durable=None, opt_out=()):
    """A leader that classified AUTH_r (read: substore fast, cache)."""
    agent, clock, logger = make(durable=durable)
    agent.opt_out = frozenset(opt_out)
    load(agent, 'AUTH_r', 95, 5)
    agent.tick()
    assert agent.policy('AUTH_r').method == 'cache'
    return agent, clock, logger


def test_requests_counted_opted_out_take_the_policy_away():
    durable = Durable()
    agent, clock, logger = classified(durable)
    opted_out_requests(agent, 'AUTH_r')
    clock.now += 5
    agent.tick()
    assert agent.policy('AUTH_r') is None
    entry = agent.table['AUTH_r']
    assert entry.opted_out is True
    assert (entry.cls, entry.substore, entry.method) == \
        ('unknown', '', 'none')
    assert entry.reason == \
        "opted out (its account's X-Mass-Opt-Out mark)"
    # every worker's table, and the durable copy, say so
    assert agent.store.get_table()[1]['AUTH_r'] == entry.to_dict()
    assert durable.entries['AUTH_r'] == entry.to_dict()
    assert "mass decision: AUTH_r: opted out (its account's X-Mass-Opt-Out " \
        "mark): no class, substore or method" in logger.lines
    # nor are its writes bumped for a cache any more
    assert 'AUTH_r' not in bumped_tenants(agent.table)
    # still opted out while it makes requests that are: nothing new
    version = agent.table_version
    load(agent, 'AUTH_r', 95, 5)
    opted_out_requests(agent, 'AUTH_r')
    clock.now += 5
    agent.tick()
    assert agent.table_version == version


def test_a_configured_opt_out_takes_an_idle_tenants_policy_at_once():
    clock = Clock()
    store = LocalStore(clock=clock)
    agent, _, _ = make(store, clock)
    load(agent, 'AUTH_r', 95, 5)
    agent.tick()
    # a reload with the account in opt_out_accounts; no request since
    clock.now += 600
    reloaded, _, logger = make(store, clock)
    reloaded.opt_out = frozenset(['AUTH_r'])
    reloaded.tick()
    assert reloaded.policy('AUTH_r') is None
    assert reloaded.table['AUTH_r'].reason == \
        'opted out (opt_out_accounts)'


def test_an_opt_out_wins_over_a_pin_which_waits():
    agent, clock, logger = classified()
    agent.store.set_pin('AUTH_r', {'class': 'write', 'method': 'batch'})
    opted_out_requests(agent, 'AUTH_r')
    clock.now += 5
    agent.tick()
    assert agent.policy('AUTH_r') is None
    assert any(line.endswith('its pin waits until it opts back in')
               for line in logger.lines)
    # back in (a window without an opted-out request): the pin applies
    clock.now += 65
    agent.tick()
    assert agent.policy('AUTH_r').method == 'batch'
    assert agent.policy('AUTH_r').pinned is True


def test_back_in_once_a_window_passed_without_an_opted_out_request():
    agent, clock, logger = classified()
    opted_out_requests(agent, 'AUTH_r')
    clock.now += 5
    agent.tick()
    assert agent.policy('AUTH_r') is None
    # the mark cleared: requests no longer opted out, but some that were
    # are still in the window
    clock.now += 30
    load(agent, 'AUTH_r', 95, 5)
    agent.tick()
    assert agent.policy('AUTH_r') is None
    clock.now += 35
    load(agent, 'AUTH_r', 95, 5)
    agent.tick()
    entry = agent.policy('AUTH_r')
    assert (entry.cls, entry.method) == ('read', 'cache')
    assert 'mass decision: AUTH_r: no longer opted out' in logger.lines
    # cache ran up to the opt-out, which was more than a window ago: its
    # baseline is the window before, without it
    assert entry.baseline_ms is not None


def test_back_in_with_too_few_requests_is_no_entry_at_all():
    durable = Durable()
    agent, clock, logger = classified(durable)
    opted_out_requests(agent, 'AUTH_r')
    clock.now += 5
    agent.tick()
    clock.now += 65
    load(agent, 'AUTH_r', 2, 0)
    agent.tick()
    assert 'AUTH_r' not in agent.table
    assert 'AUTH_r' not in agent.store.get_table()[1]
    assert 'AUTH_r' not in durable.entries


def test_a_recalled_opt_out_is_kept_as_it_was():
    durable = Durable()
    agent, clock, _ = classified(durable)
    opted_out_requests(agent, 'AUTH_r')
    clock.now += 5
    agent.tick()
    entry = durable.entries['AUTH_r']  # as stored
    # Redis lost the table; the tenant, still opted out, makes requests
    store = LocalStore(clock=clock)
    fresh, _, _ = make(store, clock, durable=durable)
    saved = len(durable.saved)
    opted_out_requests(fresh, 'AUTH_r')
    fresh.tick()
    assert fresh.table['AUTH_r'].to_dict() == entry
    assert fresh.policy('AUTH_r') is None
    assert len(durable.saved) == saved  # recalled, not decided again


def test_an_opted_out_entry_is_no_policy_for_a_worker():
    agent, _, _ = make()
    agent.table = {'AUTH_o': controller.opt_out(
        'AUTH_o', None, 0.0, why='opt_out_accounts')[0],
        'AUTH_r': controller.new_entry('read', controller.DEFAULT_SETTINGS,
                                       0.0, 'x')}
    assert agent.policy('AUTH_o') is None
    assert agent.policy('AUTH_r').cls == 'read'
    # its counts still reach the metrics, under class unknown
    agent.emit_metrics({('AUTH_o', 0): {'ops.GET': 2}})
    assert agent.logger.counts['class.unknown.ops.GET'] == 2
