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
"""A new substore over every server (swift_mass.devices.substores): its
devices chosen from device lists, then its ring built with RingBuilder in
a temporary directory."""
import os

import pytest

from swift.common.ring import RingBuilder, RingData

from swift_mass.devices import classes, substores
from tests.unit.devices import hetero
from tests.unit.devices.test_rings import SERVERS


def cluster_devices(fast_on=(1, 2, 3, 4), weight=1.0):
    """The hetero layout's devices with classes: sdbN fast on the
    servers ``fast_on`` (slow elsewhere), sdcN slow."""
    found = []
    for n in range(1, 5):
        for kind in 'bc':
            dev = dict(hetero.dev(n, kind, weight), replication_ip=SERVERS[
                n - 1], replication_port=6200 + 10 * n, meta='')
            dev['class'] = 'fast' if kind == 'b' and n in fast_on \
                else 'slow'
            found.append(dev)
    return found


def test_every_server_holding_the_classes():
    plan = substores.plan_substore(cluster_devices(), ['fast'], 3, 10)
    assert plan['servers'] == SERVERS and plan['left_out'] == []
    assert plan['warnings'] == []
    assert [d['key'] for d in plan['devices']] == [
        hetero.key(n, 'b') for n in range(1, 5)]
    assert plan['devices'][0] == {
        'region': 1, 'zone': 1, 'ip': '127.0.0.1', 'port': 6210,
        'replication_ip': '127.0.0.1', 'replication_port': 6210,
        'device': 'sdb1', 'weight': 1.0, 'meta': '', 'class': 'fast',
        'key': '127.0.0.1:6210/sdb1'}
    both = substores.plan_substore(cluster_devices(), ['slow', 'fast'], 3,
                                   10)
    assert len(both['devices']) == 8 and both['classes'] == ['slow', 'fast']


def test_fewer_servers_than_replicas_is_refused_even_forced():
    devs = cluster_devices(fast_on=(1, 2))
    for force in (False, True):
        with pytest.raises(ValueError) as caught:
            substores.plan_substore(devs, ['fast'], 3, 10, force=force)
        assert str(caught.value) == (
            'the devices chosen are on 2 servers (127.0.0.1, 127.0.0.2), '
            'fewer than the 3 replicas: two replicas of a partition would '
            'share a server')
    assert substores.plan_substore(devs, ['fast'], 2, 10)['servers'] == \
        SERVERS[:2]


def test_leaving_a_server_out_needs_force():
    devs = cluster_devices()
    with pytest.raises(ValueError) as caught:
        substores.plan_substore(devs, ['fast'], 3, 10,
                                exclude=[hetero.key(4, 'b')])
    assert str(caught.value) == (
        'the substore leaves out 127.0.0.4, which holds devices of class '
        'fast: they would idle while its tenants queue on the others '
        '(--force builds it anyway)')
    plan = substores.plan_substore(devs, ['fast'], 3, 10,
                                   exclude=[hetero.key(4, 'b')], force=True)
    assert plan['left_out'] == ['127.0.0.4']
    assert plan['servers'] == SERVERS[:3]
    assert plan['warnings'][0].startswith('the substore leaves out '
                                          '127.0.0.4, which holds')
    # a server keeps its place while one of its devices is in
    plan = substores.plan_substore(devs, ['slow', 'fast'], 3, 10,
                                   exclude=[hetero.key(4, 'b')])
    assert plan['servers'] == SERVERS and len(plan['devices']) == 7


def test_what_is_left_out_and_why():
    devs = cluster_devices()
    devs[0]['weight'] = 0.0          # sdb1, being drained
    devs[2]['class'] = None          # sdb2, never probed
    plan = substores.plan_substore(devs, ['fast'], 2, 8)
    assert [d['key'] for d in plan['devices']] == [hetero.key(3, 'b'),
                                                   hetero.key(4, 'b')]
    assert plan['warnings'] == [
        '127.0.0.1:6210/sdb1: weight 0 in the cluster\'s rings (being '
        'drained?): left out',
        '1 devices have no class (not probed), and are left out: '
        '127.0.0.2:6220/sdb2']


@pytest.mark.parametrize('kwargs, message', [
    ({'classes_wanted': ['ssd']}, '--classes ssd is not valid; allowed: '
     'classes of the devices: fast, slow'),
    ({'classes_wanted': []}, '--classes  is not valid'),
    ({'exclude': ['127.0.0.1:6216/sdc1']}, '--exclude 127.0.0.1:6216/sdc1 '
     'is not valid; allowed: devices of class fast: 127.0.0.1:6210/sdb1, '),
    ({'replicas': 0}, '--replicas 0 is not valid; allowed: 1 or more'),
    ({'part_power': 33}, '--part-power 33 is not valid; allowed: a whole '
     'number from 0 to 32'),
    ({'part_power': 2.5}, '--part-power 2.5 is not valid'),
])
def test_refusals(kwargs, message):
    args = dict(devices_with_classes=cluster_devices(),
                classes_wanted=['fast'], replicas=3, part_power=10)
    args.update(kwargs)
    with pytest.raises(ValueError) as caught:
        substores.plan_substore(**args)
    assert str(caught.value).startswith(message)


def test_build_writes_a_valid_ring_over_every_server(tmp_path):
    plan = substores.plan_substore(cluster_devices(), ['fast'], 3, 6)
    builder_path = str(tmp_path / 'object-2.builder')
    ring_path = str(tmp_path / 'object-2.ring.gz')
    built = substores.build_substore(builder_path, ring_path,
                                     plan['devices'], 3, 6, 1, seed=1,
                                     now=lambda: 1700000000)
    assert (built['builder'], built['ring']) == (builder_path, ring_path)
    assert sorted(built['servers']) == SERVERS
    assert all(s['part_share'] == 0.25 for s in built['servers'].values())
    assert built['dispersion'] == 0
    builder = RingBuilder.load(builder_path)
    builder.validate()
    assert (builder.replicas, builder.part_power, builder.min_part_hours) \
        == (3, 6, 1)
    ring = RingData.load(ring_path)
    assert [classes.device_key(d) for d in ring.devs] == [
        hetero.key(n, 'b') for n in range(1, 5)]
    assert ring.devs[0]['replication_port'] == 6210
    assert sorted(os.listdir(tmp_path / 'backups')) == [
        '1700000000.object-2.builder', '1700000000.object-2.ring.gz']
    before = open(ring_path, 'rb').read()
    with pytest.raises(ValueError, match='object-2.builder exists: a '
                       'substore is built once'):
        substores.build_substore(builder_path, ring_path, plan['devices'],
                                 3, 6)
    assert open(ring_path, 'rb').read() == before


def test_build_refuses_two_replicas_on_one_server(tmp_path):
    # server 1's two devices hold 80% of the weight: 2.4 replicas of each
    # partition
    devs = [dict(hetero.dev(n, kind, w), replication_ip=SERVERS[n - 1],
                 replication_port=6200)
            for n, kind, w in ((1, 'b', 4), (1, 'c', 4), (2, 'b', 1),
                               (3, 'b', 1))]
    with pytest.raises(ValueError, match='partitions would have two '
                       'replicas on one server: a server has more than '
                       '1/3 of the devices\' weight'):
        substores.build_substore(str(tmp_path / 'o.builder'),
                                 str(tmp_path / 'o.ring.gz'), devs, 3, 6)
    assert os.listdir(tmp_path) == []
