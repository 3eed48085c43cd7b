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
"""A tenant's policy entry (swift_mass.control.entry): what it stores,
what it reads back (the key ``ring`` of every release so far, and
``substore``), and the entries it refuses."""
import json

import pytest

from swift_mass.control import controller, monitor
from swift_mass.control.entry import MalformedEntry, PolicyEntry, \
    read_table
from swift_mass.control.stores.base import encode
from swift_mass.control.stores.local import LocalStore
from tests.unit.control.test_agent import make

SETTINGS = controller.DEFAULT_SETTINGS._replace(
    substores={'read': 'fast', 'write': 'bulk', 'mixed': ''})

# an entry as the release before PolicyEntry stored it (controller.decide's
# new policy for a reader, then a window judged)
STORED = {'baseline_ms': 10.0, 'baseline_reference_ms': 20.0,
          'class': 'read', 'holdoff': {'batch': 1700000600.0},
          'judging': {'from': 1700000125.0, 'ms': 500.0, 'n': 50,
                      'ref_ms': None, 'windows': 1, 'worse': 0},
          'method': 'cache', 'pinned': False,
          'ran_until': {'merge': 1700000000.0},
          'reason': 'read share 0.95 over 100 requests', 'ring': 'fast',
          'since': 1700000000.0, 'validated': False}


def figures(gets=0, puts=0):
    return monitor.figures(
        [monitor.request_counts('GET', 200, 0, 0, 0.01)] * gets +
        [monitor.request_counts('PUT', 201, 0, 0, 0.01)] * puts)


def test_an_entry_reads_what_the_running_release_stored():
    entry = PolicyEntry.from_dict(json.loads(json.dumps(STORED)))
    assert (entry.cls, entry.substore, entry.method) == (
        'read', 'fast', 'cache')
    assert (entry.since, entry.baseline_ms, entry.baseline_reference_ms,
            entry.validated, entry.pinned, entry.opted_out) == (
        1700000000.0, 10.0, 20.0, False, False, False)
    assert entry.holdoff == {'batch': 1700000600.0}
    assert entry.ran_until == {'merge': 1700000000.0}
    assert entry.judging['windows'] == 1
    assert entry.reason == 'read share 0.95 over 100 requests'
    # and stores it back as it was, to the byte
    assert entry.to_dict() == STORED
    assert encode(entry) == encode(STORED) == \
        json.dumps(STORED, sort_keys=True)


def decided_entries():
    """An entry of each kind the controller makes."""
    new, _ = controller.decide('t', None, figures(95, 5), 1000, SETTINGS)
    pinned, _ = controller.decide('t', new, figures(95, 5), 1010, SETTINGS,
                                  pin={'class': 'write', 'ring': 'gold'})
    opted_out, _ = controller.opt_out('t', new, 1020, SETTINGS, 'test')
    judging = new.replace(judging={'from': 5.0, 'windows': 1, 'ms': 3.0,
                                   'n': 9, 'ref_ms': None, 'worse': 0})
    return [new, pinned, opted_out, judging]


@pytest.mark.parametrize('entry', decided_entries())
def test_round_trip_through_json(entry):
    text = encode(entry)
    again = PolicyEntry.from_dict(json.loads(text))
    assert again == entry and again is not entry
    assert encode(again) == text


def test_what_is_stored_keeps_the_keys_of_the_running_release():
    new, pinned, opted_out, judging = decided_entries()
    # the substore under 'ring', the key older proxies read it by
    assert new.to_dict() == {
        'baseline_ms': pytest.approx(10.0), 'baseline_reference_ms': None,
        'class': 'read', 'holdoff': {}, 'method': 'cache', 'pinned': False,
        'reason': 'read share 0.95 over 100 requests', 'ring': 'fast',
        'since': 1000, 'validated': False}
    assert 'substore' not in pinned.to_dict()
    assert pinned.to_dict()['ring'] == 'gold'
    # ran_until, judging and opted_out only when they say something
    assert pinned.to_dict()['ran_until'] == {'cache': 1010}
    assert opted_out.to_dict()['opted_out'] is True
    assert 'opted_out' not in new.to_dict()
    assert 'judging' not in new.to_dict()
    assert judging.to_dict()['judging']['windows'] == 1


def test_the_substore_is_read_by_either_name():
    by_ring = PolicyEntry.from_dict(STORED)
    later = dict(STORED, substore='fast')
    del later['ring']
    assert PolicyEntry.from_dict(later) == by_ring
    # both: the concept's own name first
    assert PolicyEntry.from_dict(dict(STORED, substore='gold')).substore == \
        'gold'
    # neither: the default policy
    neither = dict(STORED)
    del neither['ring']
    assert PolicyEntry.from_dict(neither).substore == ''


def test_an_earlier_releases_entry_takes_the_defaults():
    old = {'class': 'write', 'ring': 'bulk', 'method': 'batch',
           'since': 5, 'validated': True}
    entry = PolicyEntry.from_dict(old)
    assert (entry.baseline_ms, entry.baseline_reference_ms, entry.holdoff,
            entry.pinned, entry.reason, entry.ran_until, entry.judging,
            entry.opted_out) == (None, None, {}, False, '', {}, None, False)


@pytest.mark.parametrize('data, why', [
    ('read', "it is 'read', not an object"),
    (None, 'it is None, not an object'),
    ({'class': 'read'}, 'its method is None, not a string'),
    (dict(STORED, method=None), 'its method is None, not a string'),
    (dict(STORED, ring=7), 'its ring is 7, not a string'),
    (dict(STORED, substore=None), 'its substore is None, not a string'),
    (dict(STORED, since='yesterday'),
     "its since is 'yesterday', not a number"),
    (dict(STORED, since=True), 'its since is True, not a number'),
    (dict(STORED, validated=1), 'its validated is 1, not true or false'),
    (dict(STORED, pinned='no'), "its pinned is 'no', not true or false"),
    (dict(STORED, baseline_ms='10'), "its baseline_ms is '10', not a "
     'number'),
    (dict(STORED, holdoff=[]), 'its holdoff is [], not an object'),
    (dict(STORED, ran_until={'cache': None}),
     "its ran_until of 'cache' is None, not a number"),
    (dict(STORED, judging={'windows': 1}),
     "its judging's from is None, not a number"),
    (dict(STORED, judging=[]), 'its judging is [], not an object'),
])
def test_a_malformed_entry_is_refused_saying_why(data, why):
    with pytest.raises(MalformedEntry) as caught:
        PolicyEntry.from_dict(data)
    assert str(caught.value) == 'not a policy entry: ' + why
    assert isinstance(caught.value, ValueError)


def test_replace_makes_a_copy():
    entry = PolicyEntry.from_dict(STORED)
    copy = entry.replace(method='none', validated=True)
    assert (copy.method, copy.validated, copy.cls) == ('none', True, 'read')
    assert (entry.method, entry.validated) == ('cache', False)
    with pytest.raises(TypeError, match='not fields of a policy entry: '
                       'ring'):
        entry.replace(ring='gold')


def test_an_entry_is_small_and_no_key():
    entry = PolicyEntry('read')
    with pytest.raises(AttributeError):
        entry.ring = 'gold'
    with pytest.raises(TypeError):
        {entry}
    assert entry != entry.to_dict()
    assert 'substore=' in repr(entry)


def test_read_table_leaves_out_what_is_not_an_entry():
    said = []
    table = read_table({'AUTH_a': STORED, 'AUTH_b': {'class': 'read'}},
                       lambda tenant, err: said.append((tenant, str(err))))
    assert list(table) == ['AUTH_a']
    assert said == [('AUTH_b', 'not a policy entry: its method is None, '
                               'not a string')]
    assert read_table({'AUTH_b': 'read'}) == {}


def test_a_worker_leaves_a_malformed_entry_of_the_table_out():
    store = LocalStore()
    store.put_table({'AUTH_a': STORED, 'AUTH_b': {'class': 'read'}})
    agent, _, logger = make(store)
    agent.refresh()
    assert sorted(agent.table) == ['AUTH_a']
    assert agent.policy('AUTH_a') == PolicyEntry.from_dict(STORED)
    assert agent.policy('AUTH_b') is None
    assert logger.lines == [
        'mass: AUTH_b: its entry in the policy table is left out: not a '
        'policy entry: its method is None, not a string']
    # a delta that makes a good entry a bad one takes it out too
    state = (agent.table_id, agent.table_version)
    assert store.update_table(state, {'AUTH_a': 'read',
                                      'AUTH_b': {'class': 'read'}},
                              ['AUTH_a']) is not None
    agent.refresh()
    assert agent.table == {}
