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
"""Phased runs (mass_bench.phases, ``tools/bench --staged``): the
workload-change experiments of docs/benchmarks/adaptation, their phases
as that page fixes them, run back to back on the same containers as one
unit of the ABBA cycles, and their figures per phase."""
import argparse
import os
import re
import time

import pytest

from mass_bench import bench, clients, driver, phases, plots, report
from swift_mass.control import classify

KB = 1024


def staged_tenants(name, **options):
    tenants = [clients.Tenant.parse(t) for t in bench.STAGED_TENANTS[name]]
    for tenant in tenants:
        tenant.workload = tenant.workload.with_options(**options)
    return tenants


def by_label(stage):
    return {t.label: w for t, w in stage.items()}


def test_the_internal_change_is_the_adaptation_pages_table():
    tenants = staged_tenants('internal')
    stages = bench.staged_scenario('internal', tenants)
    assert [name for name, _ in stages] == ['1 as first seen', '2 changed']
    one, two = by_label(stages[0][1]), by_label(stages[1][1])
    for w in list(one.values()) + list(two.values()):
        assert (w.concurrency, w.seconds) == (8, 240.0)
    # backup: C, 100 % PUT of new 8 KB objects; then 100 % GET, uniform
    assert dict(one['backup'].mix) == {'PUT': 1.0}
    assert not one['backup'].overwrite
    assert one['backup'].size_min == one['backup'].size_max == 8 * KB
    assert dict(two['backup'].mix) == {'GET': 1.0}
    assert two['backup'].popularity == 'uniform'
    # photos: A, 100 % GET 512 KB Zipf 0.99 over 200; then 80 % PUT of
    # new 512 KB objects, 20 % GET
    assert dict(one['photos'].mix) == {'GET': 1.0}
    assert one['photos'].zipf == 0.99 and one['photos'].objects == 200
    assert one['photos'].size_min == one['photos'].size_max == 512 * KB
    assert dict(two['photos'].mix) == {'PUT': 0.8, 'GET': 0.2}
    assert not two['photos'].overwrite
    assert two['photos'].size_min == two['photos'].size_max == 512 * KB
    # dbdump: B, 50/50 GET/PUT 64 KB overwrites; then 100 % GET, uniform
    assert dict(one['dbdump'].mix) == {'GET': 0.5, 'PUT': 0.5}
    assert one['dbdump'].overwrite
    assert one['dbdump'].size_min == one['dbdump'].size_max == 64 * KB
    assert dict(two['dbdump'].mix) == {'GET': 1.0}
    assert two['dbdump'].popularity == 'uniform'
    # each tenant's class changes
    assert [(one[t].intended_class, two[t].intended_class)
            for t in ('backup', 'photos', 'dbdump')] == [
        (classify.WRITE, classify.READ), (classify.READ, classify.WRITE),
        (classify.MIXED, classify.READ)]
    # phase 1 is each tenant's own workload: the one placed places and
    # static pins by (mass_bench.modes, mass_bench.placement)
    assert all(stages[0][1][t] is t.workload for t in tenants)


def test_the_external_change_is_the_slides_three_stages():
    tenants = staged_tenants('external')
    assert [t.label for t in tenants] == ['photos', 'dbdump', 'backup']
    assert [t.workload.name for t in tenants] == ['A', 'B', 'C']
    stages = bench.staged_scenario('external', tenants)
    assert [(name, {t: w.concurrency for t, w in by_label(s).items()})
            for name, s in stages] == [
        ('1 baseline', {'photos': 8, 'dbdump': 8, 'backup': 8}),
        ('2 photos-dominated', {'photos': 32, 'dbdump': 8, 'backup': 8}),
        ('3 backup-dominated', {'photos': 8, 'dbdump': 8, 'backup': 32})]
    assert all(w.seconds == 240 for _, s in stages for w in s.values())


def parsed(*argv):
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_staged_runs_take_the_pages_tenants_unless_told():
    tenants, _, _, modes = bench.checked(parsed('--staged', 'internal'))
    assert [(t.label, t.user, t.workload.name) for t in tenants] == [
        ('backup', 'backup:job', 'C'), ('photos', 'photos:web', 'A'),
        ('dbdump', 'dbdump:dump', 'B')]
    assert modes == ['default', 'placed', 'static', 'mass']
    tenants, _, _, _ = bench.checked(parsed('--staged', 'internal',
                                            '--seconds', '30'))
    assert {t.workload.seconds for t in tenants} == {30.0}
    tenants, _, _, _ = bench.checked(parsed(
        '--staged', 'internal', '--tenant', 'x:y:z=C'))
    assert [t.label for t in tenants] == ['x']
    # the steady-state comparison keeps its tenants
    tenants, _, _, _ = bench.checked(parsed())
    assert [t.workload.concurrency for t in tenants] == [2, 2, 2]


def test_a_staged_comparison_is_the_abba_comparison_of_phased_runs(
        monkeypatch):
    tenants = staged_tenants('internal')
    b = driver.Bench(tenants, 'http://auth', saio=None,
                     progress=lambda *a, **k: None)
    switched = []
    monkeypatch.setattr(b, 'switch', switched.append)
    monkeypatch.setattr(b, 'unpin', lambda: None)
    ran = []

    def run_phases(bench_, stages, label):
        ran.append((label, stages))
        return fake_phased_run(switched[-1], len(ran))
    monkeypatch.setattr(driver.phases, 'run_phases', run_phases)
    args = parsed('--staged', 'internal', '--modes', 'default,mass',
                  '--cycles', '2')
    result, text = bench.run_modes(b, args, tenants, ['default', 'mass'])
    # ABBA, the A/A control right after its twin; each unit all phases
    assert switched == ['default', 'default', 'mass', 'mass', 'default',
                        'default']
    assert [label for label, _ in ran] == [
        'cycle 1 default', 'cycle 1 default (A/A control)', 'cycle 1 mass',
        'cycle 2 mass', 'cycle 2 default', 'cycle 2 default (A/A control)']
    assert all(stages == b.phases for _, stages in ran)
    # mass starts cold in each run; the workers are asked as the SAIO's
    # reseller admin
    assert b.cold_start
    assert (b.reseller.user, b.reseller.key) == ('admin:admin', 'admin')
    assert [name for name, _ in b.phases] == ['1 as first seen',
                                              '2 changed']
    # overall, over both phases
    overall = result['summary']['backup']['mass']['throughput_ratio']
    assert overall['cycles'] == pytest.approx([(3 + 30) / 11.0,
                                               (4 + 40) / 55.0])
    # and per phase, against default of the same cycle, with the A/A
    # control's spread
    one, two = result['phases']
    assert (one['phase'], one['offset'], two['phase'], two['offset']) == (
        '1 as first seen', 0.0, '2 changed', 10.0)
    assert one['summary']['backup']['mass']['throughput_ratio'][
        'cycles'] == pytest.approx([3 / 1.0, 4 / 5.0])
    assert two['summary']['backup']['mass']['throughput_ratio'][
        'cycles'] == pytest.approx([30 / 10.0, 40 / 50.0])
    assert two['summary']['backup']['control']['aa_spread']['ops_per_s'][
        'cycles'] == pytest.approx([20 / 10.0, 60 / 50.0])
    assert 'mass' in two['per_tenant']
    assert 'phase 2 changed (measured from 10 s' in text
    assert text.count('ops/s vs default') == 3
    assert 'phase 1 as first seen (from 0 s):' in \
        report.format_phased_run(result['runs'][0])


OLD = ['write', 'bulk', 'batch', 1]
NEW = ['read', 'fast', 'cache', 2]


def fake_phased_run(mode, number):
    """A phased run whose backup made ``number`` ops/s in phase 1 and
    10 times that in phase 2 (10 s each)."""
    def figures(ops):
        return {'ops_per_s': float(ops), 'mb_per_s': 0.0, 'mean_ms': 1.0,
                'p50_ms': 1.0, 'p99_ms': 1.0, 'errors': 0, 'gets': 0,
                'hits': 0, 'hit_ratio': None, 'operations': ops * 10,
                'by_operation': {}, 'workload': 'C',
                'timeline': {'ops': [ops] * 10, 'mean_ms': [1.0] * 10}}
    return {'mode': mode, 'label': mode, 'seconds': 20.0, 'classes': [],
            'tenants': {'backup': figures((number + 10 * number) / 2.0)},
            'phases': [
                {'phase': '1 as first seen', 'offset': 0.0, 'seconds': 10,
                 'tenants': {'backup': figures(number)}},
                {'phase': '2 changed', 'offset': 10.0, 'seconds': 10,
                 'tenants': {'backup': figures(10 * number)}}]}


class FakeConnection(object):
    """A proxy that answers everything at once: 201 to PUTs, 200 to
    GETs."""

    def __init__(self, url, timeout=60):
        pass

    def request(self, method, path, headers, body=None):
        if method == 'PUT':
            return 201, {}, 0
        if method == 'HEAD':
            return 204, {'x-storage-policy': 'bulk'}, 0
        return 200, {}, 10


class FakeSampler(object):
    def __init__(self):
        self.taken = []

    def snapshot(self):
        self.taken.append(time.time())
        return {'time': time.time(), 'cpu': None, 'devices': None}

    def pulse(self):
        return {'time': time.time(), 'cpu': None, 'pressure': None}


@pytest.mark.filterwarnings('ignore:Using fork')
def test_phases_run_back_to_back_on_the_same_containers(monkeypatch):
    monkeypatch.setattr(clients, 'Connection', FakeConnection)
    tenants = staged_tenants('internal', concurrency=2, seconds=2.0,
                             warmup=0.3, objects=4)
    for tenant in tenants:
        tenant.url, tenant.token = 'http://p/v1/AUTH_%s' % tenant.label, 't'
    sampler = FakeSampler()
    b = driver.Bench(tenants, 'http://auth', sampler=sampler,
                     progress=lambda *a, **k: None)
    # the policy table, each second: backup's class changes as phase 2
    # begins
    classes = iter(['write'] * 2 + ['read'] * 100)
    monkeypatch.setattr(driver.Bench, 'policy_sample', lambda self: {
        'backup': {'class': next(classes), 'substore': '', 'method': 'x'}})
    b.base_mode = b.mode = 'mass'
    prepared = []
    real_prepare = b.prepare_all
    monkeypatch.setattr(b, 'prepare_all', lambda active: prepared.append(
        [w for _, w in active]) or real_prepare(active))
    started = []
    real_start = b.start_clients

    def start_clients(active, ready, start, warmup, stop_at, first_index):
        started.append((dict(ready), warmup, first_index, start))
        return real_start(active, ready, start, warmup, stop_at,
                          first_index)
    monkeypatch.setattr(b, 'start_clients', start_clients)

    class Probe(object):
        # every worker applies backup's new policy from 0.6 s into phase 2
        def sample(self):
            changed = len(started) > 1 and time.time() > started[1][3] + 0.6
            return {'backup': {'1': NEW if changed else OLD,
                               '2': NEW if changed else OLD}}
    b.worker_probe = Probe()
    stages = bench.staged_scenario('internal', tenants)
    run = phases.run_phases(b, stages, 'cycle 1 mass')
    # one container each, seeded once by phase 1's workloads
    assert prepared == [[t.workload for t in tenants]]
    assert [s[0]['backup'][0] for s in started] == [
        started[0][0]['backup'][0]] * 2
    assert started[0][0]['backup'][1] == []  # C is not seeded
    # phase 2 reads what phase 1 wrote: backup's new objects, from the
    # seeds of phase 1's clients (backup is the first tenant)
    wrote = started[1][0]['backup'][1]
    first = run['phases'][0]['tenants']['backup']
    assert wrote and all(re.match(r'c[01]-\d+$', n) for n in wrote)
    # (its warm-up's PUTs too, which its window does not count)
    assert len(set(wrote)) == len(wrote) >= first['by_operation']['PUT']
    # dbdump's overwrites leave its starting objects
    assert sorted(started[1][0]['dbdump'][1]) == [
        'seed-%05d' % i for i in range(4)]
    # phase 2's clients name their new objects apart; no warm-up there
    assert [(w, i) for _, w, i, _ in started] == [
        (0.3, 0), (0.0, phases.PHASE_SEEDS)]
    second = run['phases'][1]['tenants']
    assert set(second['backup']['by_operation']) == {'GET'}
    assert set(second['photos']['by_operation']) == {'GET', 'PUT'}
    assert second['backup']['errors'] == 0
    # the whole run: the phases' windows end to end
    assert [(p['phase'], p['offset']) for p in run['phases']] == [
        ('1 as first seen', 0.0), ('2 changed', 2.0)]
    # phase 2 begins once phase 1's window ended, after its own set-up
    # (its clients started): seconds on a loaded machine, never minutes
    assert 0 < run['phases'][1]['began'] - 2.0 < 30.0
    assert run['seconds'] == 4.0
    whole = run['tenants']['backup']
    assert whole['operations'] == first['operations'] + \
        second['backup']['operations']
    assert whole['ops_per_s'] == pytest.approx(
        (first['ops_per_s'] + second['backup']['ops_per_s']) / 2)
    assert len(whole['timeline']['ops']) == 4
    assert whole['workload'] == 'C -> C->reads'
    assert whole['container_policy'] == 'bulk'
    # the policy samples on the same axis: the change at 2 s
    assert [d['t'] for d in whole['mass']['decisions']] == [
        pytest.approx(2.0, abs=0.3)]
    assert len(run['policy']) == 4
    assert all(0 <= t < 4 for t, _ in run['policy'])
    # where the time went over the whole run: a snapshot before and
    # after, besides each phase's two
    assert len(sampler.taken) == 6
    assert run['resources']['seconds'] > 3.5
    assert 'phase 2 changed (from 2 s):' in report.format_phased_run(run)
    # the workers' policies, read each second: the reaction in phase 2
    assert run['phases'][0]['reaction']['backup'] == {
        'policy': OLD[:3], 'changed': False, 'seconds': 0.0}
    found = run['phases'][1]['reaction']['backup']
    assert (found['policy'], found['changed']) == (NEW[:3], True)
    assert found['seconds'] == pytest.approx(1.0, abs=0.3)


def test_a_mode_timeline_marks_where_each_phase_began(tmp_path):
    run = fake_phased_run('mass', 1)
    run.update(cycle=0, control=False)
    assert plots.phase_starts([dict(run, phases=None), run]) == [
        (0.0, '1 as first seen'), (10.0, '2 changed')]
    assert plots.phase_starts([dict(run, phases=None)]) == []
    path, = plots.run_timelines({'modes': ['mass'], 'runs': [run]},
                                str(tmp_path))
    assert os.path.basename(path) == 'timeline-mass.png'
    with open(path, 'rb') as fp:
        assert fp.read(8) == b'\x89PNG\r\n\x1a\n'


def test_the_names_a_tenants_sets_hold_each_once():
    shared = clients.ObjectSet(['a', 'b'])
    own = clients.ObjectSet(['c'])
    assert clients.held_names([shared, shared, own]) == ['a', 'b', 'c']
