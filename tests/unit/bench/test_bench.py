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
"""The benchmark's pure parts: workloads, presets, figures, ratios,
plots, its command line and its store.  Running it against the SAIO is
tests/functional/test_bench.py."""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

import pytest

from mass_bench import bench, clients, driver, modes, plots, ratios, \
    report, results, summary, workloads
from swift_mass.conf import ConfigError
from swift_mass.control import classify
from swift_mass.control.entry import PolicyEntry
from swift_mass.control.stores.local import LocalStore
from swift_mass.control.stores.redis_store import RedisStore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


@pytest.mark.parametrize('name, reads, size, cls', [
    ('A', 1.0, (512 * 1024, 512 * 1024), classify.READ),
    ('B', 0.5, (64 * 1024, 64 * 1024), classify.MIXED),
    ('C', 0.0, (8 * 1024, 8 * 1024), classify.WRITE),
    ('web-hosting', 0.9, (1024, 128 * 1024), classify.READ),
    ('online-game', 0.05, (1024, 128 * 1024), classify.WRITE),
    ('video-sharing', 0.9, (1 << 20, 128 << 20), classify.READ),
    ('enterprise-backup', 0.05, (1 << 20, 128 << 20), classify.WRITE),
    ('oltp', 0.7, (8192, 8192), classify.MIXED),
    ('web-file-server', 0.95, (8192, 65536), classify.READ),
    ('decision-support', 1.0, (1 << 20, 1 << 20), classify.READ),
    ('game-hosting', 0.05, (65536, 65536), classify.WRITE),
])
def test_presets_are_the_papers_workloads(name, reads, size, cls):
    w = workloads.PRESETS[name]
    assert w.share('GET', 'HEAD') == pytest.approx(reads)
    assert (w.size_min, w.size_max) == size
    assert w.intended_class == cls


def test_parse_a_preset_with_options():
    w = workloads.parse('A,concurrency=4,seconds=30,objects=10,size=64k,'
                        'policy=bulk')
    assert w.name == 'A' and w.mix == (('GET', 1.0),)
    assert w.policy == 'bulk'
    assert (w.concurrency, w.seconds, w.objects) == (4, 30.0, 10)
    assert w.size_min == w.size_max == 65536


def test_parse_a_custom_workload():
    w = workloads.parse('get=0.6,head=0.1,put=0.2,delete=0.1,size=1k-2M',
                        name='mine')
    assert w.name == 'mine'
    assert dict(w.mix) == {'GET': 0.6, 'HEAD': 0.1, 'PUT': 0.2,
                           'DELETE': 0.1}
    assert (w.size_min, w.size_max) == (1024, 2 << 20)
    assert w.intended_class == classify.MIXED


@pytest.mark.parametrize('spec, message', [
    ('Z', "unknown workload 'Z'"),
    ('get=0.5,size=1k', 'add up to 1'),
    ('get=1', 'needs a preset'),
    ('A,size=big', 'not a size'),
    ('A,colour=red', "unknown field 'colour'"),
    ('A,concurrency=0', 'concurrency'),
    ('A,concurrency=two', 'not a number'),
    ('A,size=2M-1M', 'min <= max'),
    ('A,objects=0', 'objects'),
    ('A,seconds=0', 'seconds or operations'),
    ('A,warmup=-1', 'warmup'),
    ('fly=1,size=1k', "unknown field 'fly'"),
    ('A,popularity=zipf', "popularity: 'zipf' is not valid; allowed: "
     "uniform, or zipf:S"),
    ('A,popularity=zipf:-1', "popularity: 'zipf:-1' is not valid"),
    ('A,popularity=zipf:0', "popularity: 'zipf:0' is not valid"),
    ('A,popularity=pareto', "popularity: 'pareto' is not valid"),
    ('B,overwrite=yes', "overwrite: 'yes' is not valid; allowed: 0 or 1"),
    ('C,objects=0,overwrite=1', 'objects: overwrites need at least 1'),
])
def test_bad_workloads_are_refused(spec, message):
    with pytest.raises(ValueError) as err:
        workloads.parse(spec)
    assert message in str(err.value)


def test_chooser_follows_the_mix_and_is_repeatable():
    w = workloads.parse('get=0.7,put=0.3,size=1k-4k')
    first = workloads.Chooser(w, seed=7)
    ops = collections.Counter(first.operation() for _ in range(20000))
    assert ops['GET'] / 20000.0 == pytest.approx(0.7, abs=0.02)
    assert set(ops) == {'GET', 'PUT'}
    a, b = workloads.Chooser(w, seed=3), workloads.Chooser(w, seed=3)
    assert [(a.operation(), a.size()) for _ in range(100)] == \
        [(b.operation(), b.size()) for _ in range(100)]
    assert all(1024 <= a.size() <= 4096 for _ in range(1000))


@pytest.mark.parametrize('spec, popularity, zipf, overwrite', [
    ('A', 'uniform', None, False),
    ('A,popularity=uniform', 'uniform', None, False),
    ('A,popularity=zipf:0.99', 'zipf:0.99', 0.99, False),
    ('A,popularity=Zipf:1.2', 'Zipf:1.2', 1.2, False),
    ('B,overwrite=1', 'uniform', None, True),
    ('B,overwrite=0,popularity=zipf:1', 'zipf:1', 1.0, False),
])
def test_parse_popularity_and_overwrite(spec, popularity, zipf, overwrite):
    w = workloads.parse(spec)
    assert (w.popularity, w.zipf, w.overwrite) == (popularity, zipf,
                                                   overwrite)


def zipf_shares(n, s):
    weights = [k ** -s for k in range(1, n + 1)]
    return [w / sum(weights) for w in weights]


def test_zipf_draws_ranks_by_popularity():
    w = workloads.parse('A,objects=200,popularity=zipf:0.99')
    chooser = workloads.Chooser(w, seed=11)
    draws = 20000
    counts = collections.Counter(chooser.index(200) for _ in range(draws))
    assert set(counts) <= set(range(200))
    shares = zipf_shares(200, 0.99)
    for rank in (1, 2, 10):
        p = shares[rank - 1]
        # within four standard deviations of the binomial count
        tolerance = 4 * (draws * p * (1 - p)) ** 0.5
        assert abs(counts[rank - 1] - draws * p) < tolerance, rank
    assert counts[0] > 20 * max(counts[199], 1)
    assert counts[0] > counts[1] > counts[9] > counts[99]


def test_zipf_over_a_set_that_grew_or_shrank():
    w = workloads.parse('get=0.5,put=0.5,size=1k,objects=3,'
                        'popularity=zipf:1')
    chooser = workloads.Chooser(w, seed=2)
    assert {chooser.index(1) for _ in range(100)} == {0}
    grown = collections.Counter(chooser.index(6) for _ in range(6000))
    assert set(grown) == set(range(6))
    assert grown[0] / 6000.0 == pytest.approx(zipf_shares(6, 1)[0],
                                              abs=0.03)


def test_uniform_draws_as_before_popularity_existed():
    # a client drew its operation, then names[rng.randrange(len(names))]
    w = workloads.parse('get=0.7,put=0.3,size=1k-4k')
    new, old = workloads.Chooser(w, seed=5), workloads.Chooser(w, seed=5)
    assert [(new.operation(), new.index(40)) for _ in range(500)] == \
        [(old.operation(), old.rng.randrange(40)) for _ in range(500)]


def test_nothing_to_read_means_a_put():
    chooser = workloads.Chooser(workloads.PRESETS['A'], seed=1)
    assert chooser.operation(have_objects=False) == 'PUT'


def test_scaled_sizes():
    w = workloads.scaled(workloads.PRESETS['video-sharing'], 1.0 / 64)
    assert (w.size_min, w.size_max) == (16384, 2 << 20)


def test_tenant_spec():
    t = clients.Tenant.parse('photos:web:web=A,concurrency=3')
    assert (t.label, t.user, t.key) == ('photos', 'photos:web', 'web')
    assert t.workload.concurrency == 3
    for bad in ('photos:web=A', 'photos:web:web', ':web:web=A'):
        with pytest.raises(ValueError):
            clients.Tenant.parse(bad)


def rows(n, latency, status=200, start=0.0, size=100, op='GET', cache=''):
    return [(start + i * 0.1, op, latency, status, size, cache)
            for i in range(n)]


def test_summarise_counts_only_measured_successes():
    measured = rows(90, 0.010) + rows(10, 0.5, status=503)
    warm = rows(50, 0.001, start=-5.0)
    f = summary.summarise(warm + measured, 0.0, 10.0)
    assert f['operations'] == 100 and f['errors'] == 10
    assert f['ops_per_s'] == 9.0
    assert f['mb_per_s'] == pytest.approx(90 * 100 / 10.0 / 1e6)
    assert f['mean_ms'] == pytest.approx(10.0)
    assert f['p99_ms'] == pytest.approx(10.0)
    assert f['statuses'] == {'200': 90, '503': 10}


def test_percentiles_interpolate_between_ranks():
    values = list(range(100, 0, -1))
    assert summary.percentile(values, 0.5) == 50.5
    assert summary.percentile(values, 0.99) == pytest.approx(99.01)
    assert summary.percentile([3.0, 1.0], 0.5) == 2.0
    assert summary.percentile([7.0], 0.99) == 7.0
    assert summary.percentile([], 0.5) is None


def test_timeline_bins_by_completion_second():
    t = summary.timeline([(0.2, 'GET', 0.1, 200, 1),
                          (0.95, 'GET', 0.1, 200, 1),
                          (1.5, 'GET', 0.2, 500, 1),
                          (2.95, 'GET', 0.1, 200, 1)], 3)
    # the last one ended after the measured time
    assert t['ops'] == [1, 1, 0]
    assert t['mean_ms'][0] == pytest.approx(100.0)
    assert t['mean_ms'][2] is None


def test_ratio_inside_the_control_spread_is_no_difference():
    r = ratios.ratio_summary([1.02, 0.97, 1.04], control=[0.95, 1.05])
    assert r['median'] == 1.02 and r['verdict'] == 'no difference'
    r = ratios.ratio_summary([1.6, 1.5, 1.7], control=[0.95, 1.05])
    assert r['verdict'] == 'difference'
    assert (r['min'], r['max']) == (1.5, 1.7)
    assert ratios.ratio_summary([None]) is None


def fake_run(mode, cycle, control, ops, mean):
    figures = {'ops_per_s': ops, 'mb_per_s': ops / 10.0, 'mean_ms': mean,
               'p50_ms': mean, 'p99_ms': 2 * mean, 'errors': 0,
               'gets': 0, 'hits': 0, 'hit_ratio': None,
               'workload': 'A', 'concurrency': 1,
               'timeline': {'ops': [ops] * 3, 'mean_ms': [mean] * 3}}
    return {'mode': mode, 'cycle': cycle, 'control': control,
            'seconds': 2, 'label': mode,
            'tenants': {'photos': figures}, 'classes': []}


def comparison():
    runs = []
    for cycle, (default, control, mass) in enumerate(
            [(100, 98, 150), (90, 93, 160), (110, 105, 140)]):
        runs += [fake_run('default', cycle, False, default, 10.0),
                 fake_run('default', cycle, True, control, 10.0),
                 fake_run('mass', cycle, False, mass, 5.0)]
    return runs


def test_summary_ratios_per_cycle():
    s = summary.summary(comparison(), ['default', 'mass'])['photos']
    assert s['default']['ops_per_s'] == 100
    assert s['control']['ops_per_s'] == 98
    ratio = s['mass']['throughput_ratio']
    assert ratio['cycles'] == pytest.approx([1.5, 160 / 90.0, 140 / 110.0])
    assert ratio['median'] == pytest.approx(1.5)
    assert ratio['verdict'] == 'difference'
    assert s['mass']['latency_ratio']['median'] == pytest.approx(0.5)
    text = report.format_summary({'summary': summary.summary(
        comparison(), ['default', 'mass'])})
    # median [95 % bootstrap interval]: with three cycles the interval is
    # their min-max
    assert 'default*' in text and '1.500 [1.273-1.778]' in text


def test_staged_scenarios():
    tenants = [clients.Tenant.parse(s) for s in bench.DEFAULT_TENANTS]
    stages = bench.staged_scenario('external', tenants)
    assert [name for name, _ in stages] == [
        '1 baseline', '2 photos-dominated', '3 backup-dominated']
    assert stages[1][1][tenants[0]].concurrency == \
        4 * tenants[0].workload.concurrency
    assert stages[2][1][tenants[0]].concurrency == \
        tenants[0].workload.concurrency
    stages = bench.staged_scenario('internal', tenants)
    (_, first), (_, second) = stages
    assert first[tenants[0]].intended_class == classify.READ
    assert second[tenants[0]].intended_class == classify.WRITE
    with pytest.raises(ValueError):
        bench.staged_scenario('external', tenants[:1])


def is_png(path):
    with open(path, 'rb') as fp:
        return fp.read(8) == b'\x89PNG\r\n\x1a\n'


def test_plots_are_pngs(tmp_path):
    result = {'runs': comparison(), 'modes': ['default', 'mass'],
              'staged': None,
              'tenants': {'photos': {'workload': {'name': 'A'}}}}
    result['summary'] = summary.summary(result['runs'], result['modes'])
    paths = plots.draw(result, str(tmp_path))
    assert [p.rsplit('/', 1)[1] for p in paths] == [
        'throughput.png', 'latency.png', 'timeline-default.png',
        'timeline-mass.png']
    assert all(is_png(p) for p in paths)
    staged = {'modes': ['mass'], 'staged': 'internal', 'runs': [
        dict(fake_run('mass', 0, False, 10, 5.0), stage='1 reads',
             classes=[(0.5, {'photos': 'unknown'}), (1.5, {'photos':
                                                           'read'})])]}
    path, = plots.draw(staged, str(tmp_path))
    assert path.endswith('timeline.png') and is_png(path)


def test_all_tenants_together():
    runs = comparison()
    for run in runs:
        other = dict(run['tenants']['photos'], ops_per_s=50.0, mean_ms=40.0)
        run['tenants']['backup'] = other
    s = summary.summary(runs, ['default', 'mass'])[summary.ALL]
    # cycle 1: default 100 + 50 ops/s, mass 150 + 50
    assert s['default']['ops_per_s'] == 150
    assert s['default']['mean_ms'] == pytest.approx((100 * 10 + 50 * 40)
                                                    / 150.0)
    assert s['default']['p99_ms'] is None
    assert s['mass']['throughput_ratio']['cycles'][0] == \
        pytest.approx(200 / 150.0)


def test_tools_bench_runs_outside_the_package_and_apart_from_the_cli(
        tmp_path):
    # from another directory, as an operator runs it: the checkout is put
    # on sys.path by tools/bench itself
    proc = subprocess.run(
        [os.path.join(ROOT, 'tools', 'bench'), '--modes', 'default,fast'],
        cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=dict(os.environ, PYTHONPATH=''))
    assert proc.returncode == 2
    assert proc.stderr == ("tools/bench: --modes: 'default,fast'; allowed: "
                           "default, placed, static, mass\n")
    proc = subprocess.run(
        [sys.executable, '-c', 'import sys, json\n'
         'from mass_bench import bench, plots, workloads\n'
         'print(json.dumps(sorted(m for m in sys.modules '
         'if m.startswith("swift_mass.cli"))))'],
        cwd=ROOT, stdout=subprocess.PIPE, check=True, text=True)
    # not the command: ring variants weight rings with swift_mass.devices
    # and the store is read through swift_mass.shared_store
    assert json.loads(proc.stdout) == []


def test_main_refuses_bad_options_before_touching_the_cluster(capsys):
    assert bench.main(['--cycles', '0']) == 2
    assert capsys.readouterr().err == 'tools/bench: --cycles: at least 1\n'
    assert bench.main(['--modes', 'static,mass', '--base', 'default']) == 2
    assert capsys.readouterr().err == "tools/bench: --base: 'default'; " \
        "allowed: one of --modes (static, mass)\n"
    assert bench.main(['--tenant', 'photos:web=A']) == 2
    assert 'ACCOUNT:USER:KEY=WORKLOAD' in capsys.readouterr().err


def test_the_store_is_the_one_the_proxies_share(tmp_path):
    conf = tmp_path / 'proxy-server.conf'
    conf.write_text('[filter:mass]\nredis_url = redis://127.0.0.1:6399/3\n')
    store = driver.Bench([], 'http://p/auth/v1.0', conf=str(conf))._store()
    assert isinstance(store, RedisStore)
    assert store.url == 'redis://127.0.0.1:6399/3'
    conf.write_text('[filter:mass]\nstore = local\n')
    with pytest.raises(ConfigError, match='store = local'):
        driver.Bench([], 'http://p/auth/v1.0', conf=str(conf))._store()


def test_tenants_log_in_with_swiftclient(monkeypatch):
    calls = []

    def get_auth(url, user, key, **kwargs):
        calls.append((url, user, key))
        return 'http://p:8080/v1/AUTH_photos', 'AUTH_tk'
    monkeypatch.setattr(clients, 'get_auth', get_auth)
    tenant = clients.Tenant.parse('photos:web:web=A')
    tenant.authenticate('http://p:8080/auth/v1.0')
    assert calls == [('http://p:8080/auth/v1.0', 'photos:web', 'web')]
    assert (tenant.url, tenant.token, tenant.account) == (
        'http://p:8080/v1/AUTH_photos', 'AUTH_tk', 'AUTH_photos')


@pytest.mark.parametrize('text', [
    'adaptive=mass', 'adaptive=fast:adaptive_slots=true',
    'mass=static:adaptive_slots=true', '=mass:a=1', 'x=mass:a',
    'x=mass:a=1+b', 'x=mass:a=', 'x=mass:mass.=1', 'x=mass:mass.a'])
def test_bad_variants_are_refused(text):
    with pytest.raises(ValueError, match='NAME=MODE:OPTION=VALUE'):
        modes.Variant.parse(text)


def test_a_variant_runs_its_mode_with_its_queue_options(tmp_path):
    calls = tmp_path / 'calls'
    saio = tmp_path / 'saio'
    saio.write_text('#!/bin/sh\necho "$@" >> %s\n' % calls)
    saio.chmod(0o755)
    conf = tmp_path / 'object-server.conf'
    conf.write_text('[filter:mass_queue]\nadaptive_slots = false\n'
                    'slots_per_device = 8\n')
    variant = modes.Variant.parse(
        'adaptive=mass:adaptive_slots=true+slots_per_device=4')
    assert (variant.name, variant.mode, variant.options) == (
        'adaptive', 'mass', {'adaptive_slots': 'true',
                             'slots_per_device': '4'})
    runner = driver.Bench([], 'http://p/auth/v1.0', saio=str(saio),
                          variants=[variant], object_conf=str(conf))
    for mode in ('default', 'adaptive', 'mass', 'adaptive', 'default'):
        runner.switch(mode)
        assert runner.mode == mode
    runner.restore_options()
    assert calls.read_text().splitlines() == [
        'pipeline without',
        'queue adaptive_slots=true slots_per_device=4',
        'pipeline with',
        'queue adaptive_slots=false slots_per_device=8',
        'queue adaptive_slots=true slots_per_device=4',
        'queue adaptive_slots=false slots_per_device=8',
        'pipeline without']


def test_a_variant_runs_its_mode_with_its_proxy_options(tmp_path):
    calls = tmp_path / 'calls'
    saio = tmp_path / 'saio'
    saio.write_text('#!/bin/sh\necho "$@" >> %s\n' % calls)
    saio.chmod(0o755)
    proxy = tmp_path / 'proxy-server.conf'
    proxy.write_text('[filter:mass]\nwrite_substore = bulk\n'
                     'redis_url = redis://127.0.0.1:6399/3\n')
    variant = modes.Variant.parse('unrouted=mass:mass.write_substore=')
    assert (variant.options, variant.mass_options) == (
        {}, {'write_substore': ''})
    runner = driver.Bench([], 'http://p/auth/v1.0', saio=str(saio),
                          variants=[variant], conf=str(proxy))
    for mode in ('mass', 'unrouted', 'unrouted', 'mass'):
        runner.switch(mode)
    runner.restore_options()
    assert calls.read_text().splitlines() == [
        'pipeline with',
        'mass write_substore=',
        'mass write_substore=bulk']


def test_a_variant_of_an_option_left_to_its_default_is_refused(tmp_path,
                                                               capsys):
    conf = tmp_path / 'object-server.conf'
    conf.write_text('[filter:mass_queue]\nslots_per_device = 8\n')
    with pytest.raises(ValueError, match='adaptive_slots not set in'):
        driver.Bench([], 'http://p/auth/v1.0', variants=[
            modes.Variant.parse('a=mass:adaptive_slots=true')],
            object_conf=str(conf))
    assert bench.main(['--modes', 'default,b', '--variant',
                       'a=mass:adaptive_slots=true']) == 2
    assert "allowed: default, placed, static, mass, a" in \
        capsys.readouterr().err


class ForgetRecording(LocalStore):
    """The store the bench pins and forgets through, its calls kept."""

    def __init__(self):
        LocalStore.__init__(self)
        self.calls = []

    def set_pin(self, tenant, pin):
        self.calls.append(('set_pin', tenant))
        LocalStore.set_pin(self, tenant, pin)

    def delete_pin(self, tenant):
        self.calls.append(('delete_pin', tenant))
        LocalStore.delete_pin(self, tenant)

    def forget(self, tenants, at):
        self.calls.append(('forget', sorted(tenants)))
        return LocalStore.forget(self, tenants, at)


def test_every_mass_run_of_a_workload_change_starts_cold(tmp_path,
                                                         monkeypatch):
    saio = tmp_path / 'saio'
    saio.write_text('#!/bin/sh\n')
    saio.chmod(0o755)
    tenants = [clients.Tenant.parse('photos:web:web=A'),
               clients.Tenant.parse('backup:backup:backup=A')]
    for tenant in tenants:
        tenant.url = 'http://127.0.0.1:8080/v1/AUTH_%s' % tenant.label
    monkeypatch.setattr(clients.Tenant, 'authenticate',
                        lambda self, auth_url: None)
    store = ForgetRecording()
    store.put_table({'AUTH_photos': PolicyEntry('read', method='cache',
                                                since=1),
                     'AUTH_backup': PolicyEntry('write', method='batch',
                                                since=1),
                     'AUTH_other': PolicyEntry('mixed', since=1)})
    said = []
    runner = driver.Bench(tenants, 'http://p/auth/v1.0', saio=str(saio),
                          settle=0, progress=said.append)
    runner.store = store
    # the steady state's mass runs start from what the loop holds
    runner.switch('mass')
    assert store.calls == []
    runner.cold_start = True  # --staged
    before = time.time()
    for mode in ('static', 'mass', 'mass', 'default'):
        runner.switch(mode)
    accounts = ['AUTH_backup', 'AUTH_photos']
    # the pins static set go first, then the tenants are forgotten:
    # before each mass run
    assert store.calls[:2] == [('set_pin', 'AUTH_photos'),
                               ('set_pin', 'AUTH_backup')]
    assert sorted(store.calls[2:4]) == [('delete_pin', account)
                                        for account in accounts]
    assert store.calls[4:] == [('forget', accounts), ('forget', accounts)]
    assert store.get_pins() == {}
    # only the run's tenants: their entries gone, their marks set
    assert list(store.get_table()[1]) == ['AUTH_other']
    assert sorted(store.forgotten()) == accounts
    assert before <= min(store.forgotten().values()) <= time.time()
    assert said.count('mass: forgot AUTH_backup, AUTH_photos') == 2


def test_starting_objects_go_through_the_seed_proxy():
    tenant = clients.Tenant.parse('photos:web:web=A')
    tenant.url = 'http://127.0.0.1:8080/v1/AUTH_photos'
    assert driver.Bench([tenant], 'http://p/auth/v1.0').seed_storage_url(
        tenant) == 'http://127.0.0.1:8080/v1/AUTH_photos'
    assert driver.Bench(
        [tenant], 'http://p/auth/v1.0',
        seed_url='http://127.0.0.1:8082/').seed_storage_url(tenant) == \
        'http://127.0.0.1:8082/v1/AUTH_photos'


def test_with_reset_data_each_run_starts_from_a_wiped_cluster(
        tmp_path, monkeypatch):
    """--reset-data: ``tools/saio reset`` before each run's switch (which
    logs the tenants in again: the reset flushed their tokens); without
    it, no reset."""
    called = tmp_path / 'called'
    saio = tmp_path / 'saio'
    saio.write_text('#!/bin/sh\necho "$*" >> %s\n' % called)
    saio.chmod(0o755)
    tenant = clients.Tenant.parse('photos:web:web=A')
    logins = []
    monkeypatch.setattr(clients.Tenant, 'authenticate',
                        lambda self, auth_url: logins.append(
                            called.read_text().splitlines()[-1]))
    for reset in (True, False):
        if called.exists():
            called.unlink()
        said = []
        runner = driver.Bench([tenant], 'http://p/auth/v1.0',
                              saio=str(saio), settle=0, progress=said.append)
        runner.reset_data = reset
        monkeypatch.setattr(runner, 'run_unit', lambda label: {
            'label': label, 'tenants': {}})
        monkeypatch.setattr(driver.report, 'format_phased_run',
                            lambda r: '')
        for name in ('summary', 'per_tenant_summary', 'between_modes',
                     'resource_summary', 'cost_summary'):
            monkeypatch.setattr(driver.summary, name, lambda *a: {})
        del logins[:]
        runner.compare(['default'], 1, control=True, base='default')
        if reset:
            assert called.read_text().splitlines() == [
                'reset', 'pipeline without', 'reset']
            # each run's tenants logged in after the reset
            assert logins == ['pipeline without', 'reset']
            assert len([line for line in said
                        if line.startswith('reset: the cluster\'s data '
                                           'wiped in ')]) == 2
        else:
            assert called.read_text().splitlines() == ['pipeline without']


# ---- the command line, results.json and the plots

def test_settle_option(monkeypatch):
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    assert parser.parse_args([]).settle == 35.0
    assert parser.parse_args(['--settle', '1.5']).settle == 1.5
    assert parser.parse_args([]).cycles == 3


def test_main_refuses_a_negative_settle(capsys):
    assert bench.main(['--settle', '-1']) == 2
    assert capsys.readouterr().err == 'tools/bench: --settle: at least 0\n'


def canned_result():
    runs = comparison()
    runs[0]['tenants']['photos']['mean_ms'] = float('nan')
    return {'runs': runs, 'summary': summary.summary(runs, ['default',
                                                            'mass']),
            'per_tenant': {}, 'resources': {}, 'costs': {}}


@pytest.fixture
def offline_main(monkeypatch):
    """main() without a cluster: tenants log in to nothing and compare()
    answers canned results; the Bench it made is kept."""
    made = []

    def authenticate(tenant, auth_url):
        tenant.url, tenant.token = 'http://p/v1/AUTH_%s' % tenant.label, 't'

    def compare(self, modes, cycles, control=True, base='default'):
        made.append(self)
        self.compared_against = base
        return canned_result()
    monkeypatch.setattr(clients.Tenant, 'authenticate', authenticate)
    monkeypatch.setattr(driver.Bench, 'compare', compare)
    return made


def test_main_without_matplotlib_writes_results_and_a_note(
        offline_main, monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)
    out = tmp_path / 'out'
    assert bench.main(['--saio', '/nonexistent', '--settle', '2',
                       '--modes', 'default,mass', '--out', str(out)]) == 0
    assert offline_main[0].settle_after_seeding == 2.0
    printed = capsys.readouterr().out.splitlines()
    assert 'plots: skipped (matplotlib is not installed; pip install ' \
        'matplotlib)' in printed
    assert printed[-1] == 'results: %s' % (out / 'results.json')
    text = (out / 'results.json').read_text()
    result = json.loads(text)  # NaN is no JSON: it is null there
    assert 'NaN' not in text
    assert result['runs'][0]['tenants']['photos']['mean_ms'] is None
    assert not list(out.glob('*.png'))


def test_a_failing_plot_does_not_lose_the_run(monkeypatch, tmp_path,
                                              capsys):
    def draw(result, out):
        raise KeyError('summary')
    monkeypatch.setattr(plots, 'draw', draw)
    assert bench.draw_plots({}, str(tmp_path)) == []
    assert capsys.readouterr().out == "plots: not drawn: KeyError: " \
        "'summary'\n"


def test_finite_replaces_what_json_cannot_hold():
    assert results.finite({'a': [1.0, float('inf'), (2, float('nan'))],
                           'b': {'c': -float('inf'), 'd': 'x', 'e': None}}) \
        == {'a': [1.0, None, [2, None]],
            'b': {'c': None, 'd': 'x', 'e': None}}


def test_the_aa_band_is_default_times_the_control_spread():
    s = summary.summary(comparison(), ['default', 'mass'])
    # default's median 100 ops/s; the A/A ratios 98/100, 93/90, 105/110
    low, high = plots.aa_band(s, 'photos', 'ops_per_s')
    assert low == pytest.approx(100 * 105 / 110.0)
    assert high == pytest.approx(100 * 93 / 90.0)
    assert plots.aa_band(s, 'photos', 'mean_ms') == (10.0, 10.0)
    assert plots.aa_band(s, 'nobody', 'ops_per_s') is None
    without = summary.summary(
        [r for r in comparison() if not r['control']], ['default', 'mass'])
    assert plots.aa_band(without, 'photos', 'ops_per_s') is None


def test_timelines_of_every_run_per_mode(tmp_path):
    runs = comparison()
    runs[-1]['tenants']['photos']['timeline']['ops'] = [150, 0, 150]
    # the machine's seconds, where the bench recorded them (a last panel)
    runs[-1]['machine'] = [{'io_full_pct': 10.0}, {'io_full_pct': None},
                           {'io_full_pct': 60.0}]
    runs[-1]['tenants']['photos']['mass'] = {'decisions': [
        {'t': 1.0, 'decision': 'deleted', 'class': 'read',
         'substore': '', 'method': 'none', 'reason': 'worse'}]}
    result = {'runs': runs, 'modes': ['default', 'mass', 'a b/c'],
              'staged': None,
              'tenants': {'photos': {'workload': {'name': 'A'}}}}
    result['runs'].append(dict(runs[-1], mode='a b/c'))
    paths = plots.run_timelines(result, str(tmp_path))
    assert [os.path.basename(p) for p in paths] == [
        'timeline-default.png', 'timeline-mass.png', 'timeline-a_b_c.png']
    assert all(is_png(p) for p in paths)
    assert plots.available()


def test_the_timeline_draws_the_machine_figures_it_has():
    runs = comparison()
    assert plots.machine_panels(runs) == []
    runs[0]['machine'] = [{'io_full_pct': None, 'busy_pct': 90.0}]
    runs[1]['machine'] = [{'io_full_pct': 5.0}]
    assert plots.machine_panels(runs) == [('busy_pct', 'CPU busy'),
                                          ('io_full_pct', 'io full')]
    runs[1]['machine'] = [{'io_full_pct': None}]
    assert plots.machine_panels(runs) == [('busy_pct', 'CPU busy')]


def test_a_comparison_that_dies_keeps_the_runs_it_finished(monkeypatch,
                                                           tmp_path):
    # a 66-minute comparison died in its last run (the cluster's disk was
    # full) and nothing of its 19 finished runs was kept
    b = driver.Bench([], 'http://auth', saio=None)
    finished = iter(comparison()[:3])
    monkeypatch.setattr(b, 'switch', lambda mode: None)
    monkeypatch.setattr(b, 'unpin', lambda: None)

    def run(stage, label):
        try:
            return dict(next(finished))
        except StopIteration:
            raise RuntimeError('cannot create a container: 503')
    monkeypatch.setattr(b, 'run', run)
    kept = tmp_path / 'runs-so-far.json'
    b.keep_runs = str(kept)
    with pytest.raises(RuntimeError):
        b.compare(['default', 'mass'], 2)
    runs = json.loads(kept.read_text())['runs']
    assert [r['label'] for r in runs] == [r['label']
                                          for r in comparison()[:3]]


def test_the_kernels_autogroup_setting_is_read(tmp_path):
    flag = tmp_path / 'sched_autogroup_enabled'
    flag.write_text('1\n')
    assert bench.autogroup(str(flag)) is True
    flag.write_text('0\n')
    assert bench.autogroup(str(flag)) is False
    assert bench.autogroup(str(tmp_path / 'absent')) is None
    assert 'sched_autogroup' in bench.machine()


def test_mass_against_static_in_the_same_cycle():
    runs = comparison()
    for cycle, ops in enumerate((140, 150, 150)):
        runs.append(fake_run('static', cycle, False, ops, 5.0))
    between = summary.between_modes(runs, ['default', 'static', 'mass'])
    ratio = between['mass/static']['photos']
    assert ratio['cycles'] == pytest.approx([150 / 140.0, 160 / 150.0,
                                             140 / 150.0])
    assert ratio['median'] == pytest.approx(160 / 150.0)
    # set against the A/A control's spread; its interval holds 1
    assert (ratio['control']['min'], ratio['control']['max']) == \
        pytest.approx((105 / 110.0, 93 / 90.0))
    assert ratio['verdict'] == 'no difference'
    # which ran first, by the runs' order: mass, static appended after it
    assert ratio['by_order'] == {
        'first': pytest.approx(
            (150 / 140.0 * 160 / 150.0 * 140 / 150.0) ** (1 / 3.0)),
        'second': None, 'cycles_first': 3, 'cycles_second': 0,
        'balanced': None}
    lines = report.format_between(between)
    assert lines[0].startswith('mass/static ops/s in the same cycle')
    assert lines[1] == '  photos     x1.067 [0.933-1.071] ~ (1.071, 1.067, ' \
        '0.933); balanced - (first x1.022 in 3, second - in 0)'
    # one mode but default: nothing to set against
    assert summary.between_modes(comparison(), ['default', 'mass']) == {}


def test_a_comparison_against_static_runs_static_twice_a_cycle(
        monkeypatch, tmp_path):
    # mass against static, with an A/A control as CPU-bound as both
    b = driver.Bench([], 'http://auth', saio=None)
    switched = []
    monkeypatch.setattr(b, 'switch', switched.append)
    monkeypatch.setattr(b, 'unpin', lambda: None)
    ops = iter([140, 150, 133, 120, 126, 118])
    monkeypatch.setattr(b, 'run', lambda stage, label: dict(fake_run(
        switched[-1], 0, False, next(ops), 5.0), label=label))
    result = b.compare(['static', 'mass'], 2, base='static')
    assert switched == ['static', 'static', 'mass', 'mass', 'static',
                        'static']
    assert [r['label'] for r in result['runs']] == [
        'cycle 1 static', 'cycle 1 static (A/A control)', 'cycle 1 mass',
        'cycle 2 mass', 'cycle 2 static', 'cycle 2 static (A/A control)']
    assert result['base'] == 'static'
    ratio = result['summary']['photos']['mass']['throughput_ratio']
    assert ratio['cycles'] == pytest.approx([133 / 140.0, 120 / 126.0])
    assert ratio['control']['cycles'] == pytest.approx([150 / 140.0,
                                                        118 / 126.0])
    text = report.format_summary(dict(result, modes=['static', 'mass']))
    assert 'ops/s vs static' in text and 'static*' in text
    assert 'A/A spread (static* against static' in text
    band = plots.aa_band(result['summary'], 'photos', 'ops_per_s', 'static')
    assert band == pytest.approx((133.0 * 118 / 126.0, 133.0 * 150 / 140.0))


def test_a_ratio_balanced_by_the_order_the_two_modes_ran_in():
    # the second of two runs 10 % slower, whichever mode it is: mass
    # equal to static once that is set off, though the median says 0.909
    ratios = [1 / 1.1, 1.1, 1 / 1.1, 1.1, 1 / 1.1]
    order = summary.by_order(ratios, [False, True, False, True, False])
    assert order['first'] == pytest.approx(1.1)
    assert order['second'] == pytest.approx(1 / 1.1)
    assert order['balanced'] == pytest.approx(1.0)
    assert (order['cycles_first'], order['cycles_second']) == (2, 3)
    # cycles without a ratio, or whose order is unknown, are left out
    assert summary.by_order([None, 1.2], [True, None])['balanced'] is None
    runs = []
    for cycle, (first, ops) in enumerate(
            [('static', (100, 90)), ('mass', (100, 90)),
             ('static', (100, 90))]):
        second = 'mass' if first == 'static' else 'static'
        runs += [fake_run(first, cycle, False, ops[0], 5.0),
                 fake_run(second, cycle, False, ops[1], 5.0)]
    between = summary.between_modes(runs, ['static', 'mass'], base='x')
    assert between['mass/static']['photos']['by_order']['balanced'] == \
        pytest.approx(1.0)
