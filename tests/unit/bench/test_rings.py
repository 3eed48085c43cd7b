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
"""Ring variants (mass_bench.rings) and the grid runner
(mass_bench.weights_grid) on the hetero layout in a temporary directory:
real builders and rings, no servers."""
import os

import pytest
from swift.common.ring import RingData

from mass_bench import rings, weights_grid
from swift_mass.devices import classes, lookup
from tests.unit.devices import hetero


@pytest.fixture
def swift_dir(tmp_path):
    swift_dir = hetero.cluster(tmp_path, {
        (n, kind): 4.0 if kind == 'b' else 12.0
        for n in range(1, 5) for kind in 'bc'})
    measured = {hetero.key(n, kind): {
        'read_iops': iops, 'write_iops': iops, 'iops': iops,
        'probed_at': 0.0, 'method': 'direct'}
        for n in range(1, 5)
        for kind, iops in (('b', 5000.0), ('c', 250.0))}
    classes.save_classes(os.path.join(swift_dir, classes.CLASSES_FILE),
                         measured, [600.0], ['hdd', 'ssd'])
    return swift_dir


def class_shares(ring_bytes, path):
    with open(path, 'wb') as fp:
        fp.write(ring_bytes)
    devs = [d for d in RingData.load(path).devs if d]
    total = sum(d['weight'] for d in devs)
    return {kind: round(sum(d['weight'] for d in devs
                            if d['device'].startswith(kind)) / total, 4)
            for kind in ('sdb', 'sdc')}


def test_a_ring_variant_parses_and_names_what_is_wrong():
    variant = rings.RingVariant.parse('chosen=default:standard=0.5,0.5',
                                      ('default', 'mass'))
    assert (variant.name, variant.mode, variant.policy, variant.shares) == \
        ('chosen', 'default', 'standard', (0.5, 0.5))
    for bad in ('chosen=default:standard', 'chosen=nope:standard=0.5,0.5',
                'default=default:standard=1', 'chosen=default:=0.5,0.5',
                'chosen=default:standard=a,b'):
        with pytest.raises(ValueError) as caught:
            rings.RingVariant.parse(bad, ('default', 'mass'))
        assert '--ring-variant' in str(caught.value) and \
            'NAME=MODE:POLICY=W' in str(caught.value)


def test_weighted_ring_gives_each_class_its_share_and_leaves_the_builder(
        swift_dir, tmp_path):
    builder = os.path.join(swift_dir, 'object.builder')
    before = open(builder, 'rb').read()
    path, data, report = rings.weighted_ring(swift_dir, 'standard',
                                             (0.5, 0.5))
    assert path == os.path.join(swift_dir, 'object.ring.gz')
    assert class_shares(data, str(tmp_path / 'w.ring.gz')) == {
        'sdb': 0.5, 'sdc': 0.5}
    assert report['classes']['ssd']['share'] == 0.25
    assert open(builder, 'rb').read() == before
    # capacity weights: the ring as it is
    _, same, _ = rings.weighted_ring(swift_dir, 'standard', (0.75, 0.25))
    assert class_shares(same, str(tmp_path / 'c.ring.gz')) == {
        'sdb': 0.25, 'sdc': 0.75}


def test_weighted_ring_refuses_weights_that_do_not_fit_the_classes(
        swift_dir):
    # W is one share per class, summing to 1
    for shares in ((0.3, 0.3), (1.0,), (0.0, 1.0)):
        with pytest.raises(ValueError):
            rings.weighted_ring(swift_dir, 'standard', shares)


def test_the_switcher_installs_a_variant_then_puts_the_original_back(
        swift_dir):
    path = os.path.join(swift_dir, 'object.ring.gz')
    original = open(path, 'rb').read()
    slept = []
    switcher = rings.RingSwitcher(
        {'chosen': rings.RingVariant('chosen', 'default', 'standard',
                                     (0.5, 0.5))},
        swift_dir, sleep=slept.append, wait=16)
    assert switcher.install(None) is False and slept == []
    assert switcher.install('chosen') is True and slept == [16]
    assert open(path, 'rb').read() == switcher.rings['chosen'][path] != \
        original
    assert switcher.install('chosen') is False and slept == [16]
    assert switcher.install(None) is True and slept == [16, 16]
    assert open(path, 'rb').read() == original
    switcher.install('chosen')
    switcher.restore()
    assert open(path, 'rb').read() == original
    assert not [f for f in os.listdir(swift_dir) if 'mass-bench' in f]


def test_grid_runs_every_weight_and_client_count_and_records_the_best(
        tmp_path):
    table = str(tmp_path / 'lookup.json')
    grid = lookup.weight_grid(['hdd', 'ssd'], 0.25)
    assert grid == [(0.25, 0.75), (0.5, 0.5), (0.75, 0.25)]
    ran = []

    def run(shares, n_clients):
        ran.append((shares, n_clients))
        # more weight on the SSD-class devices: faster, more so with more
        # clients; the HDD-heavy W fails some requests
        mean_ms = 10.0 * n_clients * (1.5 - shares[1])
        errors = 3 if shares[0] == 0.75 else 0
        return {'operations': 100, 'errors': errors, 'mean_ms': mean_ms,
                'ops_per_s': 5.0}

    def record(shares, n_clients, mean_s, error_ratio):
        lookup.record_file(table, ['hdd', 'ssd'], n_clients, 0.8, shares,
                           mean_s, error_ratio)
    lines = []
    rows = weights_grid.run_grid(run, grid, [4, 16], record,
                                 progress=lines.append)
    # W outside, so the ring changes once per W
    assert ran == [(w, n) for w in grid for n in (4, 16)]
    assert len(rows) == len(lines) == 6
    assert rows[-1] == ((0.75, 0.25), 16, pytest.approx(0.2), 0.03)
    found = lookup.nearest(lookup.load_table(table), 12, 0.8)
    assert found['weights'] == (0.25, 0.75) and found['n_clients'] == 16
    text = weights_grid.format_table(lookup.load_table(table))
    assert text.count('best') == 2 and '0.25,0.75' in text


def test_a_run_without_answers_scores_as_all_errors(tmp_path):
    recorded = []
    weights_grid.run_grid(
        lambda shares, n: {'operations': 0, 'errors': 0, 'mean_ms': None,
                           'ops_per_s': 0.0},
        [(0.5, 0.5)], [4], lambda *args: recorded.append(args),
        progress=lambda line: None)
    assert recorded == [((0.5, 0.5), 4, 0.0, 1.0)]


def test_the_grid_workload_is_the_seeds_mix():
    workload = weights_grid.grid_workload(0.8, '4k', 400, 16, 20, 3,
                                          'standard')
    assert dict(workload.mix) == {'GET': 0.8, 'PUT': 0.2}
    assert (workload.size_min, workload.size_max, workload.objects,
            workload.concurrency, workload.policy) == (4096, 4096, 400, 16,
                                                       'standard')
    assert dict(weights_grid.grid_workload(1, '4k', 4, 1, 1, 0, 's').mix) \
        == {'GET': 1.0}
    with pytest.raises(ValueError) as caught:
        weights_grid.parse_clients('4,x')
    assert '--clients' in str(caught.value)


def test_the_bench_runs_a_ring_variant_with_its_ring_and_the_rest_without(
        swift_dir, tmp_path):
    from mass_bench import driver
    calls = tmp_path / 'saio-calls'
    saio = tmp_path / 'saio'
    saio.write_text('#!/bin/sh\necho "$@" >> %s\n' % calls)
    saio.chmod(0o755)
    path = os.path.join(swift_dir, 'object.ring.gz')
    original = open(path, 'rb').read()
    b = driver.Bench([], 'http://127.0.0.1:8080/auth/v1.0', saio=str(saio),
                     ring_variants=[rings.RingVariant(
                        'chosen', 'default', 'standard', (0.5, 0.5))],
                     swift_dir=swift_dir)
    b.rings.sleep = lambda seconds: None
    b.switch('chosen')
    assert b.mode == 'chosen' and b.pipeline == 'without'
    assert open(path, 'rb').read() != original
    b.switch('mass')
    assert b.mode == 'mass' and b.pipeline == 'with'
    assert open(path, 'rb').read() == original
    b.switch('chosen')
    b.restore_rings()
    assert open(path, 'rb').read() == original
    assert calls.read_text().split('\n')[:3] == [
        'pipeline without', 'pipeline with', 'pipeline without']
