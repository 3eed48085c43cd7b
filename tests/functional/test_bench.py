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
"""tools/bench end to end on the SAIO, on a tiny workload for a few
seconds, one cycle of every mode with a short settle: it leaves the
cluster as it found it, and results.json holds every figure the summary,
the costs per operation and what Mass did need, each number finite, and
the plots are PNGs.  How fast anything is, is not a test's business."""
import json
import math
import os
import subprocess

from tests.functional.conftest import ROOT, saio

TENANTS = ['photos:web:web=A,objects=4,warmup=0.5,size=64k',
           'backup:job:job=C,warmup=0.5']
SECONDS = 3
GROUPS = {'load_generator', 'proxy', 'object', 'container', 'account',
          'redis', 'memcached'}


def run_bench(tenants, out, options, timeout=300):
    """``tools/bench`` as an operator runs it, with results in ``out``:
    its output and its results.json."""
    cmd = [os.path.join(ROOT, 'tools', 'bench'), '--out', str(out)] + \
        list(options)
    for tenant in tenants:
        cmd += ['--tenant', tenant]
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stdout
    with open(os.path.join(str(out), 'results.json')) as fp:
        # NaN and Infinity are no JSON: refuse them
        return proc.stdout, json.load(fp, parse_constant=_refuse)


def _refuse(name):
    raise AssertionError('results.json holds %s' % name)


def numbers(value, path='result'):
    """(path, number) of every number in a JSON tree."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from numbers(item, '%s.%s' % (path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from numbers(item, '%s[%d]' % (path, i))


def is_png(path):
    with open(path, 'rb') as fp:
        return fp.read(8) == b'\x89PNG\r\n\x1a\n'


def check_run(run):
    assert set(run['tenants']) == {'photos', 'backup'}
    for figures in run['tenants'].values():
        assert figures['operations'] > 0
        assert figures['ops_per_s'] > 0 and figures['mean_ms'] > 0
        assert figures['p50_ms'] <= figures['p99_ms']
        assert len(figures['timeline']['ops']) == SECONDS
        did = figures['mass']
        assert did['samples'] >= SECONDS - 1
        assert set(did) >= {'class_seconds', 'substore_seconds',
                            'method_seconds', 'decisions'}
        # judged only with Mass in the pipelines
        assert (did['method_in_force'] is not None) == \
            run['mass_in_pipeline']
    # the policy table each second, the warm-up's included
    assert len(run['policy']) >= SECONDS
    assert all(isinstance(t, (int, float)) for t, _ in run['policy'])
    where = run['resources']
    assert set(where['cpu_seconds']) >= GROUPS
    assert where['redis_commands'] >= 0
    assert 0 <= run['load_generator']['machine_pct'] <= 100
    costs = run['costs']
    assert costs['operations'] == sum(
        f['operations'] for f in run['tenants'].values())
    assert set(costs['cpu_ms']) >= GROUPS
    assert costs['redis_commands'] >= 0


def test_bench_runs_every_mode_and_writes_results(cluster, store, tmp_path):
    before = store.get_pins()
    stdout, result = run_bench(TENANTS, tmp_path, [
        '--cycles', '1', '--seconds', str(SECONDS), '--settle', '1'])
    bad = [(path, n) for path, n in numbers(result) if not math.isfinite(n)]
    assert bad == []
    assert result['modes'] == ['default', 'placed', 'static', 'mass']
    # one cycle: each mode once, and default a second time (A/A control)
    assert [(r['mode'], r['control'], r['mass_in_pipeline'], r['settle'])
            for r in result['runs']] == [
        ('default', False, False, 1.0), ('default', True, False, 1.0),
        ('placed', False, False, 1.0), ('static', False, True, 1.0),
        ('mass', False, True, 1.0)]
    # placed: Swift alone, each tenant's containers where static routes
    # it (the SAIO's proxies send readers to fast, writers to bulk)
    runs = {r['mode']: r for r in result['runs'] if not r['control']}
    assert result['placement'] == {'photos': 'fast', 'backup': 'bulk'}
    for label in ('photos', 'backup'):
        assert runs['placed']['tenants'][label]['container_policy'] == \
            runs['static']['tenants'][label]['container_policy'] == \
            (result['placement'][label] or 'standard'), label
    for run in result['runs']:
        check_run(run)
    photos = result['runs'][0]['tenants']['photos']
    assert set(photos['by_operation']) == {'GET'}
    assert result['runs'][0]['tenants']['backup']['by_operation'].keys() \
        == {'PUT'}
    assert result['tenants']['photos']['workload']['intended_class'] == \
        'read'
    # the ratios: median, bootstrap interval, A/A spread and verdict
    for label in ('photos', 'backup', '(all)'):
        modes = result['summary'][label]
        assert set(modes) == {'default', 'placed', 'static', 'mass',
                              'control'}
        for mode in ('placed', 'static', 'mass'):
            ratio = modes[mode]['throughput_ratio']
            assert ratio['cycles']
            assert ratio['interval']['low'] <= ratio['median'] <= \
                ratio['interval']['high']
            assert ratio['verdict'] in ('difference', 'no difference')
        assert set(modes['control']['aa_spread']) == {'ops_per_s',
                                                      'mean_ms'}
    assert 0 <= result['summary']['photos']['mass']['hit_ratio'] <= 1
    per_tenant = result['per_tenant']
    assert set(per_tenant) >= {'mass', 'control'}
    assert per_tenant['mass']['throughput_ratio']['median'] > 0
    assert set(result['costs']) == {'default', 'placed', 'static', 'mass',
                                    'control'}
    # the table
    for text in ('ops/s vs default', 'hit %', 'geo-mean', 'A/A spread',
                 '% of the machine', 'cost per operation',
                 'where the time went'):
        assert text in stdout, text
    for name in ('throughput.png', 'latency.png', 'timeline-default.png',
                 'timeline-mass.png'):
        assert is_png(os.path.join(str(tmp_path), name)), name
    # as found: Mass in the pipelines again, no pins left behind
    assert store.get_pins() == before
    assert 'with mass' in saio('status').stdout


def test_an_s3_tenant_runs_through_s3api(cluster, store, tmp_path):
    """A tenant whose clients speak S3 (api=s3): its bucket made, seeded
    and read through s3api, each request answered 2xx, in placed and in
    mass (where the proxies' Redis sees its reads)."""
    _, result = run_bench(
        ['photos:web:web=A,objects=4,warmup=0.5,size=64k,api=s3'],
        tmp_path, ['--modes', 'placed,mass', '--base', 'placed',
                   '--cycles', '1', '--seconds', str(SECONDS),
                   '--settle', '1'])
    assert result['tenants']['photos']['workload']['api'] == 's3'
    runs = {r['mode']: r for r in result['runs'] if not r['control']}
    for mode in ('placed', 'mass'):
        figures = runs[mode]['tenants']['photos']
        assert set(figures['by_operation']) == {'GET'}, mode
        assert figures['operations'] > 0 and figures['errors'] == 0, mode
        assert figures['container_policy'] == 'fast', mode
    assert runs['mass']['costs']['redis_commands'] > 0


def test_a_workload_change_runs_its_phases_and_reads_every_worker(
        cluster, store, tmp_path):
    """``--staged internal`` (docs/benchmarks/adaptation) on a tiny
    workload: each mode's run is both phases on the same containers; the
    mass run starts cold (its tenants forgotten) and reads, each second,
    the policy every proxy worker applies (X-Mass-Policy as the SAIO's
    reseller admin), from which each phase's reaction is made; Swift
    alone (placed) has no worker to ask."""
    before = store.get_pins()
    stdout, result = run_bench(TENANTS, tmp_path, [
        '--staged', 'internal', '--modes', 'placed,mass', '--base',
        'placed', '--cycles', '1', '--seconds', str(SECONDS),
        '--settle', '1'])
    bad = [(path, n) for path, n in numbers(result) if not math.isfinite(n)]
    assert bad == []
    runs = {r['mode']: r for r in result['runs'] if not r['control']}
    for run in result['runs']:
        assert [p['phase'] for p in run['phases']] == [
            '1 as first seen', '2 changed']
        assert run['seconds'] == 2 * SECONDS
        # phase 2 is the changed workload: the backup reads back
        assert set(run['phases'][1]['tenants']['backup'][
            'by_operation']) == {'GET'}
        assert run['phases'][1]['tenants']['backup']['errors'] == 0
    assert 'reaction' not in runs['placed']['phases'][0]
    for phase in runs['mass']['phases']:
        for label in ('photos', 'backup'):
            found = phase['reaction'][label]
            assert found is not None, (phase['phase'], label)
            assert len(found['policy']) == 3
        # every sample: the workers that answered, each with its policy
        # and table version
        workers = [w for _, sample in phase['workers']
                   for w in sample['backup'].values()]
        assert workers and all(len(w) == 4 for w in workers)
    assert [p['phase'] for p in result['phases']] == [
        '1 as first seen', '2 changed']
    assert set(result['phases'][1]['reaction']) == {'mass'}
    assert 'mass: forgot AUTH_backup, AUTH_photos' in stdout
    assert 'reaction, mass backup' in stdout
    assert set(store.forgotten()) >= {'AUTH_backup', 'AUTH_photos'}
    assert is_png(os.path.join(str(tmp_path), 'timeline-mass.png'))
    assert store.get_pins() == before
