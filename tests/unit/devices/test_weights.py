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
"""Moving ring weights towards class weights W (swift_mass.devices.weights):
targets and steps as plain functions, then plans and steps on real
RingBuilder files in a temporary swift_dir."""
import os
import re

import pytest

from swift.common.ring import RingBuilder, RingData

from swift_mass.control import monitor
from swift_mass.devices import classes, lookup, weights
from tests.unit.devices import hetero

W = {'slow': 0.3, 'fast': 0.7}


def ring_devs(*specs):
    """(id, ip, device, weight) as ring classes."""
    return [{'id': i, 'ip': ip, 'port': 6200, 'device': dev, 'weight': w}
            for i, ip, dev, w in specs]


def test_target_shares_classes_and_keeps_proportions_within():
    devs = ring_devs((0, 'a', 'ssd', 1.0), (1, 'a', 'hdd', 4.0),
                     (2, 'b', 'ssd', 3.0), (3, 'b', 'hdd', 4.0),
                     (4, 'c', 'hdd', 0.0))
    classes = {'a:6200/ssd': 'fast', 'b:6200/ssd': 'fast',
               'a:6200/hdd': 'slow', 'b:6200/hdd': 'slow',
               'c:6200/hdd': 'slow'}
    target = weights.target_weights(devs, classes, W)
    # the total (12) kept; fast's 70% split 1:3, slow's 30% 4:4, and the
    # device at 0 (being drained) left there
    assert target == pytest.approx({0: 2.1, 1: 1.8, 2: 6.3, 3: 1.8,
                                    4: 0.0})
    assert sum(target.values()) == pytest.approx(12)
    assert weights.target_weights(devs, classes, W, total=100)[2] == \
        pytest.approx(52.5)
    # a share of 0 drains its class
    assert weights.target_weights(devs, classes, {'slow': 0, 'fast': 1})[
        1] == 0.0
    # a class W has but the ring has not, at 0: nothing to give it
    assert weights.target_weights(
        devs[:3], classes, {'slow': 0.5, 'fast': 0.5, 'x': 0.0}) == {
            0: 1.0, 1: 4.0, 2: 3.0}


def test_target_refusals():
    devs = ring_devs((0, 'a', 'ssd', 1.0), (1, 'a', 'hdd', 1.0))
    with pytest.raises(ValueError) as caught:
        weights.target_weights(devs, {'a:6200/ssd': 'fast'}, W)
    assert str(caught.value) == (
        '1 devices of the ring have no class: a:6200/hdd; probe them '
        '(swift-mass devices probe)')
    both = {'a:6200/ssd': 'fast', 'a:6200/hdd': 'medium'}
    with pytest.raises(ValueError, match='devices of class medium, which '
                       'the weights give no share; allowed: one share per '
                       'class \\(slow, fast\\)'):
        weights.target_weights(devs, both, W)
    with pytest.raises(ValueError, match='class slow has a share of 0.3 but '
                       'no device of the ring with weight'):
        weights.target_weights(devs[:1], {'a:6200/ssd': 'fast'}, W)


def test_step_goes_alpha_of_the_way_and_ends():
    current = {0: 1.0, 1: 1.0, 2: 0.0}
    target = {0: 3.0, 1: 0.5, 2: 0.0}
    assert weights.step_towards(current, target, 0.5) == {
        0: 2.0, 1: 0.75, 2: 0.0}
    assert weights.step_towards(current, target, 1) == target
    assert weights.step_towards(target, target, 0.3) == target
    steps = 0
    while current != target:
        current = weights.step_towards(current, target, 0.5)
        steps += 1
    # 2.0 to go for device 0, halved each step: within 1% of its target
    # (3.0) after 7; device 1 was within 1% of the mean (7/6) after 6
    assert steps == 7
    # draining to 0 ends too: within 1% of the mean target weight
    drain = {0: 2.0, 1: 0.0}
    current, steps = {0: 1.0, 1: 1.0}, 0
    while current != drain:
        current = weights.step_towards(current, drain, 0.5)
        steps += 1
    assert steps == 7 and current == drain


def test_step_refusals():
    for alpha in (0, -0.5, 1.5, True, '0.5'):
        with pytest.raises(ValueError) as caught:
            weights.step_towards({0: 1}, {0: 2}, alpha)
        assert str(caught.value).startswith('--alpha %r is not valid; '
                                            'allowed: above 0 and at most 1'
                                            % (alpha,))
    with pytest.raises(ValueError, match='other devices'):
        weights.step_towards({0: 1}, {1: 1}, 0.5)


def classes_of(*fast_servers):
    """{key: class}: sdbN fast, sdcN slow; all devices of the servers
    named fast."""
    return {hetero.key(n, k): 'fast' if k == 'b' or n in fast_servers
            else 'slow' for n in range(1, 5) for k in 'bc'}


@pytest.fixture
def swift_dir(tmp_path):
    """The hetero layout, its SSD-class devices half the weight of the
    HDD-class ones (their capacity)."""
    return hetero.cluster(tmp_path, {(n, 'b'): 0.5 for n in range(1, 5)})


def files(swift_dir):
    return {name: open(os.path.join(swift_dir, name), 'rb').read()
            for name in ('object.builder', 'object.ring.gz')}


def paths(swift_dir):
    return (os.path.join(swift_dir, 'object.builder'),
            os.path.join(swift_dir, 'object.ring.gz'))


def test_plan_writes_nothing_and_shows_the_trial(swift_dir):
    before = files(swift_dir)
    result = weights.plan_step(*paths(swift_dir), classes_of(), W, 0.5,
                               seed=1)
    assert files(swift_dir) == before
    assert (result['applied'], result['dry_run']) == (False, True)
    assert not result['at_target'] and not result['reaches_target']
    assert result['refusals'] == []
    assert result['servers'] == hetero.SERVERS and result['replicas'] == 3
    # 6 of weight: fast from 2 to 4.2 in all, half way is 3.1
    assert result['classes'] == {
        'fast': {'devices': 4, 'share': 0.3333, 'share_after': 0.5167,
                 'share_target': 0.7},
        'slow': {'devices': 4, 'share': 0.6667, 'share_after': 0.4833,
                 'share_target': 0.3}}
    change = result['changes'][0]
    assert change == {'id': 0, 'device': hetero.key(1, 'b'),
                      'class': 'fast', 'old': 0.5, 'new': 0.775,
                      'target': 1.05}
    assert len(result['changes']) == 8
    assert result['parts_moved'] > 0
    assert result['shared_parts'] == 0 and result['dispersion'] == 0


def ring_weights(swift_dir):
    ring = RingData.load(os.path.join(swift_dir, 'object.ring.gz'))
    return {classes.device_key(d): d['weight'] for d in ring.devs}


def test_apply_steps_to_the_target_then_changes_nothing(swift_dir):
    builder_path, ring_path = paths(swift_dir)
    result = weights.apply_step(builder_path, ring_path, classes_of(), W,
                                0.5, seed=1, now=lambda: 1700000000)
    assert result['applied'] and result['refused'] is None
    assert ring_weights(swift_dir)[hetero.key(1, 'b')] == \
        pytest.approx(0.775)
    builder = RingBuilder.load(builder_path)
    assert builder.devs[0]['weight'] == pytest.approx(0.775)
    builder.validate()
    # swift-ring-builder's backups of what was written
    assert sorted(os.listdir(os.path.join(swift_dir, 'backups'))) == [
        '1700000000.object.builder', '1700000000.object.ring.gz']
    steps = 1
    while not result['at_target']:
        result = weights.apply_step(builder_path, ring_path, classes_of(),
                                    W, 0.5, seed=1)
        assert result['refused'] is None
        steps += 1
    assert steps == 8   # seven steps, the eighth finds the target
    assert not result['applied'] and result['changes'] == []
    shares = result['classes']
    assert (shares['fast']['share'], shares['slow']['share']) == (0.7, 0.3)
    assert ring_weights(swift_dir)[hetero.key(1, 'b')] == \
        pytest.approx(1.05)
    # the total weight is what it was
    assert sum(ring_weights(swift_dir).values()) == pytest.approx(6, 1e-12)
    before = files(swift_dir)
    again = weights.apply_step(builder_path, ring_path, classes_of(), W,
                               0.5)
    assert again['at_target'] and not again['applied']
    assert files(swift_dir) == before
    # the ring's partitions followed the weights: fast now holds most
    ring = RingData.load(ring_path)
    fast_ids = {d['id'] for d in ring.devs if d['device'].startswith('sdb')}
    held = sum(1 for p2d in ring._replica2part2dev_id for d in p2d
               if d in fast_ids)
    assert held > 0.6 * 3 * 256


def test_apply_waits_for_min_part_hours(tmp_path):
    swift_dir = str(tmp_path)
    hetero.build(swift_dir, 'object', 3, [
        hetero.dev(n, k) for n in range(1, 5) for k in 'bc'],
        min_part_hours=1)
    before = files(swift_dir)
    result = weights.apply_step(*paths(swift_dir), classes_of(), W, 1)
    assert not result['applied']
    assert re.match(
        r'min_part_hours \(1\) have not passed since the last rebalance: '
        r'wait (0:59:\d\d|1:00:00)$', result['refused'])
    assert files(swift_dir) == before
    # the plan shows what the rebalance will do once it may
    plan = weights.plan_step(*paths(swift_dir), classes_of(), W, 1)
    assert plan['min_part_seconds_left'] > 3500
    assert plan['parts_moved'] > 0 and plan['refusals'] == []


def test_apply_refuses_more_replicas_than_servers(tmp_path):
    swift_dir = str(tmp_path)
    hetero.build(swift_dir, 'object', 3, [
        hetero.dev(n, k) for n in (1, 2) for k in 'bc'])
    result = weights.apply_step(*paths(swift_dir), classes_of(), W, 0.5)
    assert result['refused'].startswith(
        '3 replicas on 2 servers: two replicas of a partition share a '
        'server whatever the weights')
    assert not os.path.exists(os.path.join(swift_dir, 'backups'))


def test_apply_refuses_two_replicas_on_one_server(swift_dir):
    # both devices of servers 1 and 2 are fast: 90% of the weight on two
    # servers is 45% each, more than a third each of 3 replicas
    before = files(swift_dir)
    result = weights.apply_step(*paths(swift_dir), classes_of(1, 2),
                                {'slow': 0.1, 'fast': 0.9}, 1, seed=1)
    assert not result['applied']
    assert result['shared_parts'] > 0
    assert result['refused'] == (
        'after the step %d partitions would have two replicas on one '
        'server (a server with more than 1/3 of the weight): choose weights '
        'that keep each server\'s share below that' % result['shared_parts'])
    assert files(swift_dir) == before
    # the same, a step short enough, passes
    result = weights.apply_step(*paths(swift_dir), classes_of(1, 2),
                                {'slow': 0.1, 'fast': 0.9}, 0.2, seed=1)
    assert result['applied'] and result['shared_parts'] == 0


def test_shared_parts_counts_partitions_not_replicas(tmp_path):
    builder = RingBuilder(4, 3, 0)
    for i, (ip, dev) in enumerate([('a', 'd1'), ('a', 'd2'), ('b', 'd1')]):
        builder.add_dev({'id': i, 'region': 1, 'zone': 1, 'ip': ip,
                         'port': 1, 'device': dev, 'weight': 1})
    builder.rebalance(seed=1)
    # every partition has its 3 replicas on the 3 devices, two on 'a'
    assert weights.shared_parts(builder) == 16


def test_ring_files_and_choose_weights(swift_dir, tmp_path):
    assert weights.ring_files(swift_dir, 'standard') == paths(swift_dir)
    assert weights.ring_files(swift_dir, 'fast')[1].endswith(
        'object-1.ring.gz')
    assert weights.ring_files(swift_dir, '/x/object-3.builder') == (
        '/x/object-3.builder', '/x/object-3.ring.gz')
    with pytest.raises(ValueError) as caught:
        weights.ring_files(swift_dir, 'bulk')
    assert str(caught.value) == ('--ring bulk is not valid; allowed: a '
                                 'storage policy\'s name (standard, fast) '
                                 'or a .builder path')
    classes = ['slow', 'fast']
    assert weights.choose_weights(classes, '0.4,0.6') == (
        {'slow': 0.4, 'fast': 0.6}, {'from': '--weights'})
    table = str(tmp_path / 'lookup.json')
    lookup.record_file(table, classes, 4, 0.2, (0.5, 0.5), 0.01, 0)
    lookup.record_file(table, classes, 64, 0.9, (0.2, 0.8), 0.01, 0)
    chosen, source = weights.choose_weights(classes, table=table,
                                            n_clients=50, read_ratio=0.8)
    assert chosen == {'slow': 0.2, 'fast': 0.8}
    assert (source['from'], source['n_clients']) == (table, 64)
    for kwargs, message in [
            ({}, 'give --weights, or --table with --clients'),
            ({'weights': '0.5,0.5', 'table': table}, 'give --weights, or'),
            ({'table': table, 'n_clients': 3}, '--table needs --clients '
             'and --read-ratio'),
            ({'weights': '0,1'}, '--weights 0,1 is not valid')]:
        with pytest.raises(ValueError, match=message):
            weights.choose_weights(classes, **kwargs)
    assert weights.choose_weights(classes, '0,1', allow_zero=True)[0] == \
        {'slow': 0.0, 'fast': 1.0}
    with pytest.raises(ValueError, match='is over the classes slow, fast; '
                       'the devices\' classes are hdd, ssd'):
        weights.choose_weights(['hdd', 'ssd'], table=table, n_clients=3,
                               read_ratio=0.5)


def test_devices_being_removed_are_left_alone(swift_dir):
    builder_path, ring_path = paths(swift_dir)
    builder = RingBuilder.load(builder_path)
    builder.remove_dev(7)   # sdc4
    builder.save(builder_path)
    result = weights.plan_step(builder_path, ring_path, classes_of(), W, 1,
                               seed=1)
    assert [c['id'] for c in result['changes']] == list(range(7))
    assert result['classes']['slow']['devices'] == 3
    assert result['refusals'] == [] and result['reaches_target']


def many(counts, times):
    """The counter deltas of ``times`` requests like ``counts``."""
    return {field: value * times for field, value in counts.items()}


def test_the_live_workload_from_the_monitor_is_little_s_law():
    # two tenants over 60 s: 6,000 reads of 40 ms and 1,500 writes of
    # 200 ms are 540 s of requests in flight: 9 at a time
    seen = {
        'AUTH_a': monitor.figures([many(monitor.request_counts(
            'GET', 200, 0, 4096, 0.040), 6000)]),
        'AUTH_b': monitor.figures([many(monitor.request_counts(
            'PUT', 201, 4096, 0, 0.200), 1500)])}
    n_clients, read_ratio, live = weights.live_workload(seen, 60)
    assert (n_clients, read_ratio) == (9, 0.8)
    assert live == {'tenants': 2, 'reads': 6000, 'writes': 1500,
                    'seconds': 60, 'in_flight': 9.0}
    # a quiet cluster still has one client
    assert weights.live_workload({'AUTH_a': monitor.figures([
        monitor.request_counts('HEAD', 200, 0, 0, 0.001)])}, 60)[:2] == \
        (1, 1.0)
    with pytest.raises(ValueError, match='saw no reads or writes in the '
                       'last 60 s: give --clients and --read-ratio'):
        weights.live_workload({}, 60)
