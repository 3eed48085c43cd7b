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
"""What Mass did in a run, from the policy table sampled each second: the
class, substore and method in force, the method's changes flagged, and
the controller's decisions; and a whole run against a fake proxy whose
table changes under it."""
import time

import pytest

from mass_bench import clients, driver, policy_table, report, summary
from swift_mass.control.entry import PolicyEntry

# an entry as the store keeps it
CACHE = {'class': 'read', 'ring': 'fast', 'method': 'cache', 'since': 100.0,
         'validated': False, 'pinned': False, 'reason': 'read share 1.00',
         'baseline_ms': 12.5, 'baseline_reference_ms': None, 'holdoff': {}}


def entry(**changes):
    return policy_table.entry_sample(
        PolicyEntry.from_dict(CACHE).replace(**changes))


def samples(*entries, label='photos', first=-2):
    """One sample a second from ``first`` on, of one tenant's entries."""
    return [[float(first + i), {label: e}] for i, e in enumerate(entries)]


def test_an_entry_sample_names_the_substore():
    judging = dict(CACHE, judging={'windows': 1, 'worse': 0, 'ms': 3.0,
                                   'n': 9, 'from': 5.0, 'ref_ms': None})
    assert policy_table.entry_sample(PolicyEntry.from_dict(judging)) == {
        'class': 'read', 'substore': 'fast', 'method': 'cache',
        'validated': False, 'pinned': False, 'since': 100.0,
        'reason': 'read share 1.00', 'baseline_ms': 12.5,
        'judging': {'windows': 1, 'worse': 0}}
    assert policy_table.entry_sample(None) is None
    assert policy_table.table_sample(
        {'AUTH_photos': CACHE}, {'photos': 'AUTH_photos',
                                 'backup': 'AUTH_backup'}) == {
        'photos': entry(), 'backup': None}


def test_a_method_in_force_for_the_whole_window():
    window = samples(None, None, entry(), entry(), entry(), entry())
    did = policy_table.what_mass_did(window, 'photos', 4.0)
    # the warm-up's samples (before 0) do not count
    assert did['samples'] == 4
    assert did['method_in_force'] == {'method': 'cache', 'share': 1.0,
                                      'whole_window': True}
    assert did['class_seconds'] == {'read': 4}
    assert did['substore_seconds'] == {'fast': 4}
    assert policy_table.flagged(did) is None
    assert policy_table.describe(did) == 'class read, substore fast, ' \
        'method cache'


def test_a_method_deleted_half_way_is_flagged():
    deleted = entry(method='none', validated=True,
                    reason='cache made latency worse')
    window = samples(entry(), entry(), entry(), deleted, deleted,
                     first=0)
    did = policy_table.what_mass_did(window, 'photos', 5.0)
    assert did['method_in_force'] == {'method': 'cache', 'share': 0.6,
                                      'whole_window': False}
    assert did['method_seconds'] == {'cache': 3, 'none': 2}
    assert did['decisions'] == [{
        't': 3.0, 'decision': 'deleted', 'class': 'read',
        'substore': 'fast', 'method': 'none',
        'reason': 'cache made latency worse'}]
    assert policy_table.flagged(did) == (
        'method not in force for the whole window (cache: 60 % of it; '
        'cache 3 s, none 2 s)')
    assert policy_table.describe(did) == (
        'class read, substore fast, method cache 3 s/none 2 s; '
        'decisions: deleted at 3 s')


def test_a_tenant_without_an_entry_part_of_the_window_is_flagged():
    did = policy_table.what_mass_did(
        samples(None, entry(), entry(), entry(), first=0), 'photos', 4.0)
    assert did['method_in_force']['whole_window'] is False
    assert did['method_seconds'] == {'absent': 1, 'cache': 3}
    assert did['decisions'][0]['decision'] == 'new policy'
    # no entry at all: no method in force, flagged as well
    none = policy_table.what_mass_did(samples(None, None, first=0),
                                      'photos', 2.0)
    assert none['method_in_force'] == {'method': 'absent', 'share': 1.0,
                                       'whole_window': False}
    assert 'absent: 100 %' in policy_table.flagged(none)


def test_without_mass_in_the_pipeline_nothing_is_flagged():
    did = policy_table.what_mass_did(samples(None, entry(), first=0),
                                     'photos', 2.0, judged=False)
    assert did['method_in_force'] is None
    assert policy_table.flagged(did) is None


def test_unread_tables_are_left_out():
    window = [[0.0, None], [1.0, {'photos': entry()}], [2.0, None]]
    did = policy_table.what_mass_did(window, 'photos', 3.0)
    assert did['samples'] == 1 and did['method_in_force']['whole_window']
    assert policy_table.describe(policy_table.what_mass_did(
        [[0.0, None]], 'photos', 1.0)) == \
        'policy table not read in the window'


@pytest.mark.parametrize('before, after, decision', [
    (entry(), entry(), None),
    (entry(), None, 'entry removed'),
    (None, entry(), 'new policy'),
    (None, entry(pinned=True), 'pinned'),
    (entry(), entry(pinned=True, since=200.0), 'pinned'),
    (entry(), entry(cls='write', method='batch'),
     'new policy'),
    (entry(), entry(since=200.0), 'new policy'),
    (entry(), entry(validated=True), 'validated'),
    (entry(), entry(validated=True, method='none'), 'deleted'),
    (entry(judging={'windows': 1, 'worse': 0}),
     entry(judging={'windows': 0, 'worse': 1}), 'judged worse'),
    (entry(judging={'windows': 1, 'worse': 0}),
     entry(judging={'windows': 2, 'worse': 0}), None),
    (entry(validated=True), entry(validated=True, reason='other'), None),
])
def test_decisions_between_samples(before, after, decision):
    assert policy_table.decision(before, after) == decision


def test_a_changed_substore_of_the_same_policy():
    before = entry()
    after = entry(substore='bulk')
    assert policy_table.decision(before, after) == 'changed'


class FakeStore(object):
    """get_table() answers from a script: one table per call, the last
    one thereafter; an exception is raised."""

    def __init__(self, tables):
        self.tables = list(tables)

    def get_table(self):
        table = self.tables.pop(0) if len(self.tables) > 1 else \
            self.tables[0]
        if isinstance(table, Exception):
            raise table
        return 1, table


def tenant():
    photos = clients.Tenant.parse('photos:web:web=A')
    photos.url, photos.token = 'http://p/v1/AUTH_photos', 'tk'
    return photos


def test_the_bench_samples_its_tenants_entries():
    b = driver.Bench([tenant()], 'http://p/auth/v1.0')
    b.store = FakeStore([{'AUTH_photos': CACHE, 'AUTH_other': CACHE},
                         {}, RuntimeError('Redis down')])
    assert b.policy_sample() == {'photos': entry()}
    assert b.classes() == {'photos': 'unknown'}
    assert b.policy_sample() is None
    assert b.classes() == {}


class FakeConnection(object):
    def __init__(self, url, timeout=60):
        pass

    def request(self, method, path, headers, body=None):
        return (201 if method == 'PUT' else 200), {}, 10


class FakeSampler(object):
    def snapshot(self):
        return {'time': time.time(), 'cpu': None, 'devices': None}

    def pulse(self):
        return {'time': time.time(), 'cpu': None, 'pressure': None}


@pytest.mark.filterwarnings('ignore:Using fork')
def test_a_run_records_what_mass_did_each_second(monkeypatch):
    monkeypatch.setattr(clients, 'Connection', FakeConnection)
    photos = tenant()
    photos.workload = photos.workload.with_options(
        objects=2, concurrency=1, warmup=1.0, seconds=3)
    deleted = dict(CACHE, method='none', validated=True)
    b = driver.Bench([photos], 'http://p/auth/v1.0', sampler=FakeSampler(),
                     progress=lambda *a, **k: None)
    # warm-up, then 0 s and 1 s with cache, then none
    b.store = FakeStore([{}, {'AUTH_photos': CACHE},
                         {'AUTH_photos': CACHE}, {'AUTH_photos': deleted}])
    b.base_mode = b.mode = 'mass'
    result = b.run({photos: photos.workload}, 'cycle 1 mass')
    assert [round(t) for t, _ in result['policy']] == [-1, 0, 1, 2]
    assert result['policy'][0][1] == {'photos': None}
    assert result['classes'][1] == [result['policy'][1][0],
                                    {'photos': 'read'}]
    assert result['mass_in_pipeline'] is True
    did = result['tenants']['photos']['mass']
    assert did['method_seconds'] == {'cache': 2, 'none': 1}
    assert [d['decision'] for d in did['decisions']] == ['deleted']
    text = report.format_run(result)
    assert '      ! method not in force for the whole window (cache: ' \
        '67 % of it' in text
    assert 'mass: class read, substore fast, method cache 2 s/none 1 s; ' \
        'decisions: deleted at 2 s' in text
    assert summary.flagged_runs([result]) == [
        ('cycle 1 mass', 'photos', policy_table.flagged(did))]
    table = report.format_summary({'summary': {}, 'runs': [result]})
    assert 'method not in force for the whole window (these runs ' \
        'measured a mixture):\n  cycle 1 mass: photos: method not in ' \
        'force' in table


def test_window_ticks():
    assert summary.window_ticks(3.0, 3.0) == [-3.0, -2.0, -1.0, 0.0, 1.0,
                                              2.0, 3.0]
    assert summary.window_ticks(0.5, 2.5) == [0.0, 1.0, 2.0, 2.5]
    assert summary.window_ticks(0.0, 1.0) == [0.0, 1.0]
