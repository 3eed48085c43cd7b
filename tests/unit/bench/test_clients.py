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
"""The benchmark's clients against a fake proxy: which objects they pick
(uniform slices, a shared Zipf ranking, overwrites), the cache hits they
count, and a whole run with its CPU and device samples."""
import collections
import io
import os
import threading
import time

import eventlet
import eventlet.wsgi
import pytest
from swift.common.middleware import tempauth
from swift.common.middleware.s3api import s3api
from swift.common.swob import Request, Response
from swift.common.utils import md5

from mass_bench import clients, driver, report, resources, summary, \
    workloads

NAMES = ['seed-%05d' % i for i in range(200)]


class FakeConnection(object):
    """Answers as a proxy would: 201 to PUTs, 204 to DELETEs, 200 to
    GETs (X-Mass-Cache: hit for the names in ``hot``, miss otherwise) and
    404 to a GET of ``missing``."""
    hot = set()
    missing = set()
    merged = set()

    def __init__(self, url, timeout=60):
        pass

    def request(self, method, path, headers, body=None):
        name = path.rsplit('/', 1)[1]
        FakeConnection.log.append((method, name))
        if method == 'PUT':
            return 201, {}, 0
        if method == 'DELETE':
            return 204, {}, 0
        if method == 'HEAD' and path.count('/') == 1:  # a container
            return 204, {'x-storage-policy': 'fast'}, 0
        if name in self.missing:
            return 404, {}, 0
        if name in self.merged:
            return 200, {'x-mass-merge': 'merged'}, 10
        cache = 'hit' if name in self.hot else 'miss'
        return 200, {'x-mass-cache': cache}, 10


@pytest.fixture
def fake_proxy(monkeypatch):
    FakeConnection.log = []
    FakeConnection.hot = set()
    FakeConnection.missing = set()
    FakeConnection.merged = set()
    monkeypatch.setattr(clients, 'Connection', FakeConnection)
    return FakeConnection


class Tenant(object):
    label, url, token = 'photos', 'http://p/v1/AUTH_photos', 'tk'


def run_client(workload, objects, seed=1, operations=2000):
    out = []
    clients.client(Tenant(), workload.with_options(operations=operations),
                   'cont', objects, seed, time.time(), time.time() + 60, out)
    return out


def test_uniform_clients_keep_to_their_own_slices():
    w = workloads.parse('A,objects=200,concurrency=8')
    sets = clients.client_sets(w, NAMES)
    assert [s.names for s in sets] == [NAMES[i::8] for i in range(8)]
    assert len({id(s) for s in sets}) == 8


def test_zipf_clients_share_the_whole_set_and_its_ranking(fake_proxy):
    w = workloads.parse('A,objects=200,concurrency=4,popularity=zipf:0.99')
    sets = clients.client_sets(w, NAMES)
    assert all(s is sets[0] for s in sets) and sets[0].names == NAMES
    for seed in range(4):
        fake_proxy.log = []
        run_client(w, sets[seed], seed=seed)
        counts = collections.Counter(name for _, name in fake_proxy.log)
        # every client finds the same objects hot
        assert [n for n, _ in counts.most_common(2)] == NAMES[:2]
        assert counts[NAMES[0]] > 5 * counts[NAMES[20]]


def test_puts_create_new_objects_without_overwrite(fake_proxy):
    w = workloads.parse('get=0.5,put=0.5,size=1k,objects=20')
    objects = clients.ObjectSet(NAMES[:20])
    run_client(w, objects, seed=7, operations=200)
    puts = [name for op, name in fake_proxy.log if op == 'PUT']
    assert puts and all(name.startswith('c7-') for name in puts)
    assert len(objects) == 20 + len(puts)


@pytest.mark.parametrize('popularity', ['uniform', 'zipf:0.99'])
def test_overwrites_pick_from_the_set_which_does_not_grow(fake_proxy,
                                                          popularity):
    w = workloads.parse('B,objects=20,overwrite=1,popularity=%s'
                        % popularity)
    objects = clients.ObjectSet(NAMES[:20])
    rows = run_client(w, objects, operations=400)
    puts = [name for op, name in fake_proxy.log if op == 'PUT']
    assert len(puts) > 100
    assert set(puts) <= set(NAMES[:20])
    assert objects.names == NAMES[:20]
    assert all(r[4] == 64 * 1024 for r in rows if r[1] == 'PUT')


def test_an_overwriter_with_nothing_left_writes_a_new_object(fake_proxy):
    w = workloads.parse('put=0.5,delete=0.5,size=1k,objects=2,overwrite=1')
    objects = clients.ObjectSet(NAMES[:2])
    run_client(w, objects, operations=50)
    assert [n for op, n in fake_proxy.log if op == 'PUT' and
            n.startswith('c')]


def test_hits_are_counted_per_successful_get(fake_proxy):
    fake_proxy.hot = set(NAMES[:5])
    fake_proxy.missing = {NAMES[5]}
    w = workloads.parse('get=0.8,head=0.2,size=1k,objects=10')
    rows = run_client(w, clients.ObjectSet(NAMES[:10]), operations=1000)
    assert {r[5] for r in rows if r[1] == 'GET' and r[3] == 200} == {
        'hit', 'miss'}
    assert {r[5] for r in rows if r[1] == 'HEAD'} == {''}
    f = summary.summarise(rows, 0.0, 10.0)
    gets = [r for r in rows if r[1] == 'GET' and r[3] == 200]
    hits = [r for r in gets if r[5] == 'hit']
    assert f['gets'] == len(gets) and f['hits'] == len(hits)
    assert f['hit_ratio'] == pytest.approx(len(hits) / len(gets))
    assert 0.4 < f['hit_ratio'] < 0.7  # 5 of 9 names that answer 200


def test_merged_reads_are_counted_per_successful_get(fake_proxy):
    """A GET merge's single flight answered (X-Mass-Merge: merged, no
    X-Mass-Cache) counts as merged, not as a hit or a miss."""
    fake_proxy.hot = set(NAMES[:2])
    fake_proxy.merged = set(NAMES[2:5])
    w = workloads.parse('get=1,size=1k,objects=10')
    rows = run_client(w, clients.ObjectSet(NAMES[:10]), operations=1000)
    assert {r[5] for r in rows} == {'hit', 'miss', 'merged'}
    f = summary.summarise(rows, 0.0, 10.0)
    merged = [r for r in rows if r[5] == 'merged']
    assert f['merged_ratio'] == pytest.approx(len(merged) / f['gets'])
    assert f['hit_ratio'] == pytest.approx(
        sum(1 for r in rows if r[5] == 'hit') / f['gets'])
    assert summary.summarise([(1.0, 'PUT', 0.01, 201, 10, '')], 0.0,
                             10.0)['merged_ratio'] is None
    # a comparison carries its median over the runs
    runs = [{'mode': 'merge', 'cycle': c, 'control': False,
             'tenants': {'dbdump': dict(f, merged_ratio=share)}}
            for c, share in enumerate([0.1, 0.3, 0.2])]
    assert summary.summary(runs, ['merge'], base='merge')['dbdump'][
        'merge']['merged_ratio'] == pytest.approx(0.2)


class S3Tenant(Tenant):
    user, key = 'photos:web', 'web'


def test_an_s3_clients_hit_ratio_is_unknown_not_zero(fake_proxy):
    """s3api passes on only the headers S3 defines, so an S3 client never
    sees X-Mass-Cache: its GETs are neither hits nor misses to the bench
    (the 2026-12-06 S3 run printed 'hits 0.0 %' for a tenant whose
    GetObjects were about 70 % hits), and the hit ratio of all tenants
    is that of the tenants whose clients can tell."""
    fake_proxy.hot = set(NAMES[:5])
    w = workloads.parse('get=1,size=1k,objects=10,api=s3')
    out = []
    clients.client(S3Tenant(), w.with_options(operations=200), 'cont',
                   clients.ObjectSet(NAMES[:10]), 1, time.time(),
                   time.time() + 60, out)
    assert {r[5] for r in out} == {None}
    s3 = summary.summarise(out, 0.0, 10.0)
    assert s3['gets'] == 200
    assert (s3['hit_ratio'], s3['merged_ratio']) == (None, None)
    assert ' hits ' not in report.format_run(
        {'tenants': {'dbdump': dict(s3, workload='A', mb_per_s=0.0)}})
    swift = figures(hits=30, gets=40)
    assert summary.overall({'photos': swift, 'dbdump': s3})[
        'hit_ratio'] == pytest.approx(0.75)


def test_summarise_hit_ratio_of_measured_gets():
    rows = [(1.0, 'GET', 0.01, 200, 10, 'hit')] * 3 + \
        [(1.0, 'GET', 0.01, 200, 10, 'miss')] + \
        [(1.0, 'GET', 0.01, 404, 0, '')] + \
        [(1.0, 'GET', 0.01, 503, 0, '')] + \
        [(-1.0, 'GET', 0.01, 200, 10, 'hit')] * 10 + \
        [(1.0, 'PUT', 0.01, 201, 10, '')]
    f = summary.summarise(rows, 0.0, 10.0)
    assert (f['gets'], f['hits'], f['hit_ratio']) == (4, 3, 0.75)
    f = summary.summarise([(1.0, 'PUT', 0.01, 201, 10, '')], 0.0, 10.0)
    assert (f['gets'], f['hits'], f['hit_ratio']) == (0, 0, None)


def figures(hits, gets):
    return {'ops_per_s': 10.0, 'mb_per_s': 1.0, 'mean_ms': 5.0,
            'p50_ms': 5.0, 'p99_ms': 9.0, 'errors': 0, 'gets': gets,
            'hits': hits, 'hit_ratio': hits / gets if gets else None,
            'workload': 'A', 'concurrency': 1}


def test_summary_and_table_carry_the_hit_ratio():
    runs = []
    for cycle, (default, mass) in enumerate([(0, 60), (0, 80), (0, 70)]):
        for mode, hits in (('default', default), ('mass', mass)):
            runs.append({'mode': mode, 'cycle': cycle, 'control': False,
                         'tenants': {'photos': figures(hits, 100),
                                     'backup': figures(0, 0)}})
    s = summary.summary(runs, ['default', 'mass'])
    assert s['photos']['mass']['hit_ratio'] == pytest.approx(0.7)
    assert s['photos']['default']['hit_ratio'] == 0.0
    assert s['backup']['mass']['hit_ratio'] is None
    # all tenants: hits over all GETs
    assert s[summary.ALL]['mass']['hit_ratio'] == pytest.approx(0.7)
    lines = report.format_summary({'summary': s}).splitlines()
    assert 'hit %' in lines[0]
    rows = {tuple(line.split()[:2]): line for line in lines}
    assert ' 70.0 ' in rows['photos', 'mass']
    backup_mass = rows['backup', 'mass']
    # blank where there are no GETs
    column = lines[0].index('hit %')
    assert backup_mass[column:column + 6].strip() == ''
    run_text = report.format_run(runs[-1])
    assert 'hits 70.0 %' in run_text and run_text.count('hits') == 1


class FakeSampler(object):
    """Snapshots as resources.Sampler takes them, from a script."""

    def __init__(self, devices):
        self.devices = list(devices)
        self.taken = []
        self.pulses = []

    def snapshot(self):
        n = len(self.taken)
        self.taken.append(time.time())
        return {'time': 10.0 * n, 'cpu': {'total': 1000 * n,
                                          'busy': 600 * n, 'iowait': 100 * n},
                'devices': self.devices[n]}

    def pulse(self):
        n = len(self.pulses)
        self.pulses.append(time.time())
        return {'time': float(n), 'cpu': {'total': 200 * n, 'busy': 150 * n,
                                          'iowait': 20 * n},
                'pressure': {'cpu_some': 100000 * n, 'io_some': 400000 * n,
                             'io_full': 250000 * n}}


def hdd(writes, passed):
    return [{'server': 1, 'device': 'sdc1', 'class': 'hdd',
             'loop': '/dev/loop3', 'reads': 0, 'writes': writes,
             'busy_ms': writes * 6, 'read_iops_limit': 150,
             'write_iops_limit': 150, 'throttle_passed_reads': 0,
             'throttle_passed_writes': passed}]


@pytest.mark.filterwarnings('ignore:Using fork')
@pytest.mark.parametrize('devices, expected', [
    ([hdd(0, 0), hdd(1000, 1400)], {'hdd': {
        'devices': 1, 'read_iops': 0.0, 'write_iops': 100.0,
        'busy_pct': 60.0,
        'read_throttle': {'iops': 0.0, 'limit': 150, 'pct': 0.0},
        'write_throttle': {'iops': 140.0, 'limit': 150,
                           'pct': pytest.approx(93.333, abs=0.01)},
        'budget': None, 'model_iops': None}}),
    ([None, None], None),  # the plain profile
])
def test_a_run_samples_its_measured_time(fake_proxy, monkeypatch, devices,
                                         expected):
    monkeypatch.setattr(driver.Bench, 'policy_sample', lambda self: None)
    sampler = FakeSampler(devices)
    photos = clients.Tenant.parse(
        'photos:web:web=A,objects=6,concurrency=2,popularity=zipf:1,'
        'warmup=0.3,seconds=1')
    photos.url, photos.token = 'http://p/v1/AUTH_photos', 'tk'
    fake_proxy.hot = {'seed-00000'}
    b = driver.Bench([photos], 'http://p/auth/v1.0', progress=lambda *a,
                     **k: None, sampler=sampler)
    began = time.time()
    result = b.run({photos: photos.workload}, 'test')
    # one snapshot at the start of the measured time, one at its end
    assert len(sampler.taken) == 2
    assert sampler.taken[0] - began == pytest.approx(0.8, abs=0.25)
    assert sampler.taken[1] - sampler.taken[0] == pytest.approx(1.0,
                                                                abs=0.25)
    load = result['resources']['cpu_seconds']['load_generator']
    assert result['resources'] == {
        'seconds': 10.0, 'cpu': {'busy_pct': 60.0, 'iowait_pct': 10.0},
        'devices': expected, 'redis_commands': None, 'queue_refusals': None,
        # the fake sampler has no process groups: the load generator only,
        # as its client processes measured themselves
        'cpu_seconds': {'load_generator': load}}
    assert 0 < load < 2.0
    assert result['load_generator']['cpu_seconds'] == load
    assert result['load_generator']['machine_pct'] == pytest.approx(
        100.0 * load / os.cpu_count())
    costs = result['costs']
    assert costs['operations'] == result['tenants']['photos']['operations']
    assert costs['cpu_ms'] == {'load_generator': pytest.approx(
        1000.0 * load / costs['operations'])}
    assert costs['redis_commands'] is None
    assert costs['hdd_model_ios'] is None
    assert costs['queue_refusals_per_1000'] is None
    f = result['tenants']['photos']
    assert f['gets'] > 0 and 0 < f['hit_ratio'] < 1
    # where its container landed
    assert f['container_policy'] == 'fast'
    # and the machine in each second of the window (one here)
    assert len(sampler.pulses) == 2
    assert result['machine'] == [{
        'busy_pct': 75.0, 'iowait_pct': 10.0, 'cpu_some_pct': 10.0,
        'io_some_pct': 40.0, 'io_full_pct': 25.0}]
    assert result['stalls']['others']['seconds'] == 1
    text = report.format_run(result)
    assert 'where: CPU 60% busy, 10% iowait' in text
    assert ' in fast\n' in text
    assert 'load generator: %.0f %% of the machine' % result[
        'load_generator']['machine_pct'] in text
    if expected:
        assert 'hdd r/w 0/100 IOPS, 60% busy' in text
        assert 'writes 140/s=93% of limit' in text
    else:
        assert 'devices not sampled' in text


def test_the_default_sampler_asks_tools_saio_and_the_proxies_redis(
        monkeypatch, tmp_path):
    asked = []
    monkeypatch.setattr(resources, 'saio_devices',
                        lambda saio: asked.append(saio))
    monkeypatch.setattr(resources, 'redis_commands',
                        lambda url: asked.append(url) or 1234)
    conf = tmp_path / 'proxy-server.conf'
    conf.write_text('[filter:mass]\nredis_url = redis://10.1.1.1:6390\n')
    b = driver.Bench([], 'http://p/auth/v1.0', saio='/x/tools/saio',
                     conf=str(conf))
    taken = b.sampler.snapshot()
    assert taken['devices'] is None and taken['redis_commands'] == 1234
    # this machine's processes, by group
    assert isinstance(taken['processes'], dict)
    assert asked == ['redis://10.1.1.1:6390', '/x/tools/saio']


# ---- counting by completion, the settle after seeding, the load
# generator's CPU

def test_a_request_counts_in_the_window_it_completed_in():
    rows = [(-0.5, 'GET', 0.7, 200, 10, ''),  # began in the warm-up
            (-0.5, 'GET', 0.4, 200, 10, ''),  # ended in it
            (0.2, 'GET', 0.1, 200, 10, ''),
            (1.8, 'GET', 0.4, 200, 10, ''),   # ended after the window
            (1.95, 'GET', 0.01, 503, 0, '')]
    measured = [rows[0], rows[2], rows[4]]
    assert summary.completed_in(rows, 0.0, 2.0) == measured
    f = summary.summarise(rows, 0.0, 2.0)
    assert (f['operations'], f['errors'], f['ops_per_s']) == (3, 1, 1.0)
    # the timeline bins by completion second too, the warm-up's left out
    assert summary.timeline(rows, 2)['ops'] == [2, 0]


class SlowConnection(FakeConnection):
    """Each answer takes 0.3 s."""

    def request(self, method, path, headers, body=None):
        time.sleep(0.3)
        return FakeConnection.request(self, method, path, headers, body)


def test_clients_issue_until_the_end_and_wait_for_the_last_answer(
        fake_proxy, monkeypatch):
    monkeypatch.setattr(clients, 'Connection', SlowConnection)
    w = workloads.parse('A,objects=4')
    out = []
    start = time.time()
    clients.client(Tenant(), w, 'cont', clients.ObjectSet(NAMES[:4]), 1,
                   start, start + 0.5, out)
    returned = time.time() - start
    # began at 0, 0.3 (before the end at 0.5); the second ended at 0.6
    assert len(out) == 2
    assert out[-1][0] < 0.5 < out[-1][0] + out[-1][2] <= returned
    assert summary.summarise(out, 0.0, 0.5)['operations'] == 1


def test_seeding_then_sync_then_the_settle_then_the_clients(monkeypatch):
    events = []
    monkeypatch.setattr(driver.os, 'sync', lambda: events.append('sync'))
    monkeypatch.setattr(driver.time, 'sleep',
                        lambda s: events.append(('sleep', s)))
    b = driver.Bench([], 'http://p/auth/v1.0', settle_after_seeding=35.0,
                     progress=lambda *a, **k: None)
    b.settle_write_back()
    assert events == ['sync', ('sleep', 35.0)]
    del events[:]
    driver.Bench([], 'http://p/auth/v1.0', settle_after_seeding=0.0,
                 progress=lambda *a, **k: None).settle_write_back()
    assert events == ['sync']
    del events[:]
    # the demo's and the weights grid's runs: neither
    driver.Bench([], 'http://p/auth/v1.0').settle_write_back()
    assert events == []


@pytest.mark.filterwarnings('ignore:Using fork')
def test_a_run_settles_after_seeding_every_tenant(fake_proxy, monkeypatch):
    synced = []
    monkeypatch.setattr(driver.os, 'sync',
                        lambda: synced.append((time.time(),
                                               len(fake_proxy.log))))
    sampler = FakeSampler([None, None])
    tenants = [clients.Tenant.parse('%s:u:k=A,objects=3,concurrency=1,'
                                    'warmup=0.2,seconds=0.5' % name)
               for name in ('photos', 'videos')]
    for t in tenants:
        t.url, t.token = 'http://p/v1/AUTH_%s' % t.label, 'tk'
    b = driver.Bench(tenants, 'http://p/auth/v1.0', sampler=sampler,
                     settle_after_seeding=0.6, progress=lambda *a, **k: None)
    monkeypatch.setattr(driver.Bench, 'policy_sample', lambda self: None)
    b.run({t: t.workload for t in tenants}, 'test')
    (when, seeded), = synced
    # both tenants' containers (each HEADed once made: its policy) and 3
    # starting objects each were written before the sync
    assert seeded == 10
    assert sorted(op for op, _ in fake_proxy.log[:10]) == \
        ['HEAD'] * 2 + ['PUT'] * 8
    assert sorted(n for _, n in fake_proxy.log[:10] if n.startswith(
        'seed-')) == ['seed-00000'] * 2 + ['seed-00001'] * 2 + \
        ['seed-00002'] * 2
    # the window began settle + 0.5 s + the warm-up after it
    assert sampler.taken[0] - when == pytest.approx(0.6 + 0.5 + 0.2,
                                                    abs=0.2)


def test_the_client_process_measures_its_cpu_over_the_window():
    # the CPU this process got while busy, seen from the busy loop itself:
    # on a loaded machine it is less than the window, and the thread must
    # count what it got, not the wall time
    out = []
    now = time.time()
    thread = threading.Thread(target=clients.cpu_between,
                              args=(now + 0.1, now + 0.4, out))
    thread.start()
    got = {}
    while time.time() < now + 0.45:
        moment = time.time()
        if 'begin' not in got and moment >= now + 0.1:
            got['begin'] = time.process_time()
        if 'end' not in got and moment >= now + 0.4:
            got['end'] = time.process_time()
    thread.join()
    assert out[0] > 0
    assert abs(out[0] - (got['end'] - got['begin'])) < 0.05


# -- the S3 API, as Swift's s3api takes it ---------------------------------

class Stored(object):
    """What Swift's proxy app would do with the requests s3api passes on:
    authorise them, keep PUTs, answer GETs; the account and container
    exist."""

    def __init__(self):
        self.objects = {}
        self.seen = []

    def __call__(self, env, start_response):
        req = Request(env)
        # as the proxy, before it serves anything
        denial = env['swift.authorize'](req)
        if denial:
            return denial(env, start_response)
        self.seen.append((req.method, req.path, req.headers.get(
            'X-Storage-Policy')))
        if req.path.count('/') < 4:
            return Response(status=204 if req.method != 'PUT' else 201)(
                env, start_response)
        if req.method == 'PUT':
            self.objects[req.path] = req.body
            return Response(status=201, etag=md5(
                req.body, usedforsecurity=False).hexdigest())(
                    env, start_response)
        body = self.objects.get(req.path)
        if body is None:
            return Response(status=404)(env, start_response)
        return Response(body=body, request=req)(env, start_response)


@pytest.fixture
def s3api_proxy():
    """Swift's s3api and tempauth (tempauth's user photos:web, key web,
    as tools/saio and the bench's tenants have them) in front of
    ``Stored``, served over HTTP on a free port by eventlet's wsgi server,
    as Swift's proxy is (keep-alive connections)."""
    stored = Stored()
    app = s3api.filter_factory({'s3_acl': 'false'})(
        tempauth.filter_factory({'user_photos_web': 'web .admin'})(stored))
    sock = eventlet.listen(('127.0.0.1', 0))

    def serve():
        # this thread's own hub
        eventlet.wsgi.server(sock, app, log=io.StringIO())
    threading.Thread(target=serve, daemon=True).start()
    yield 'http://127.0.0.1:%d/v1/AUTH_photos' % sock.getsockname()[1], \
        stored


def test_an_s3_tenants_requests_are_signed_as_s3api_checks_them(
        s3api_proxy):
    url, stored = s3api_proxy
    tenant = clients.Tenant.parse('photos:web:web=A,api=s3')
    tenant.url = url  # as tempauth's auth answered
    api = clients.S3Api(tenant)
    assert api.request('PUT', 'bucket', headers={
        'X-Storage-Policy': 'fast'})[0] == 200
    assert api.request('PUT', 'bucket', 'o', b'x' * 10)[0] == 200
    status, _, length = api.request('GET', 'bucket', 'o')
    assert (status, length) == (200, 10)
    # s3api checked the signature (tempauth made the account AUTH_photos
    # of the access key) and passed the policy on
    assert ('PUT', '/v1/AUTH_photos/bucket', 'fast') in stored.seen
    assert stored.objects == {'/v1/AUTH_photos/bucket/o': b'x' * 10}
    wrong = clients.Tenant.parse('photos:web:wrong=A,api=s3')
    wrong.url = url
    assert clients.S3Api(wrong).request('GET', 'bucket', 'o')[0] == 403


def test_a_workloads_api_is_swift_or_s3():
    assert workloads.parse('A').api == 'swift'
    assert workloads.parse('A,api=s3').api == 's3'
    with pytest.raises(ValueError) as raised:
        workloads.parse('A,api=ftp')
    assert str(raised.value) == "api: 'ftp' is not valid; allowed: swift, s3"
