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
"""How each substore's ring spreads over the servers
(swift_mass.devices.rings), over real rings built in a temporary
swift_dir."""
import os

import pytest

from swift.common.ring import RingBuilder

from swift_mass.devices import rings

SERVERS = ['127.0.0.%d' % i for i in range(1, 5)]


def build(swift_dir, ring_name, replicas, devices, part_power=6):
    """devices: (ip, device, weight); one zone per server."""
    builder = RingBuilder(part_power, replicas, 1)
    for i, (ip, device, weight) in enumerate(devices):
        builder.add_dev({'id': i, 'region': 1,
                         'zone': SERVERS.index(ip) + 1, 'ip': ip,
                         'port': 6200 + i, 'device': device,
                         'weight': weight})
    builder.rebalance(seed=1)
    builder.get_ring().save(os.path.join(swift_dir, ring_name + '.ring.gz'))
    return builder


def swift_conf(swift_dir, policies):
    """policies: (index, name, extra options)."""
    lines = ['[swift-hash]', 'swift_hash_path_suffix = test', '']
    for index, name, extra in policies:
        lines += ['[storage-policy:%d]' % index, 'name = %s' % name]
        lines += ['%s = %s' % kv for kv in extra.items()] + ['']
    with open(os.path.join(swift_dir, 'swift.conf'), 'w') as fp:
        fp.write('\n'.join(lines))


@pytest.fixture
def saio(tmp_path):
    """The SAIO's layout: standard over the four servers, fast on the
    first two, bulk on the last two."""
    d = str(tmp_path)
    swift_conf(d, [(0, 'standard', {'default': 'yes'}), (1, 'fast', {}),
                   (2, 'bulk', {})])
    build(d, 'object', 3, [(ip, 'sdb%d' % (i + 1), 1.0)
                           for i, ip in enumerate(SERVERS)])
    build(d, 'object-1', 2, [(SERVERS[0], 'sdb1', 1.0),
                             (SERVERS[1], 'sdb2', 1.0)])
    build(d, 'object-2', 2, [(SERVERS[2], 'sdb3', 1.0),
                             (SERVERS[3], 'sdb4', 1.0)])
    return d


def by_name(result):
    return {p['name']: p for p in result['policies']}


def test_substores_on_half_the_servers_are_warned_about(saio):
    result = rings.report(saio)
    assert result['servers'] == SERVERS
    assert result['errors'] == []
    policies = by_name(result)
    standard = policies['standard']['spread']
    assert (standard['replicas'], standard['partitions']) == (3, 64)
    assert sorted(standard['servers']) == SERVERS
    for server in standard['servers'].values():
        assert server['weight_share'] == 0.25
        assert server['part_replicas'] == 48  # 3 * 64 / 4
        assert server['part_share'] == 0.25
    fast = policies['fast']['spread']
    assert sorted(fast['servers']) == SERVERS[:2]
    assert fast['servers'][SERVERS[0]] == {
        'devices': ['sdb1'], 'weight': 1.0, 'weight_share': 0.5,
        'part_replicas': 64, 'part_share': 0.5}
    assert len(result['warnings']) == 2
    fast_warning, bulk_warning = result['warnings']
    assert fast_warning.startswith('fast: its ring spans 2 of the 4 servers')
    assert '127.0.0.3, 127.0.0.4 hold none of its devices' in fast_warning
    assert bulk_warning.startswith('bulk: its ring spans 2 of the 4 servers')
    assert '127.0.0.1, 127.0.0.2 hold none' in bulk_warning


def test_substores_spanning_every_server_pass(tmp_path):
    d = str(tmp_path)
    swift_conf(d, [(0, 'standard', {'default': 'yes'}), (1, 'fast', {})])
    build(d, 'object', 3, [(ip, 'sdb', 1.0) for ip in SERVERS])
    # a substore on one fast device of each server, weighted unevenly
    build(d, 'object-1', 2, [(ip, 'ssd', w) for ip, w in
                             zip(SERVERS, (1.0, 1.0, 2.0, 4.0))])
    result = rings.report(d)
    assert result['warnings'] == [] and result['errors'] == []
    fast = by_name(result)['fast']['spread']['servers']
    assert [fast[ip]['weight_share'] for ip in SERVERS] == [
        0.125, 0.125, 0.25, 0.5]
    assert sum(s['part_replicas'] for s in fast.values()) == 2 * 64
    # more weight, more partitions
    assert fast[SERVERS[3]]['part_replicas'] > \
        fast[SERVERS[0]]['part_replicas']


def test_devices_of_a_server_add_up(tmp_path):
    d = str(tmp_path)
    swift_conf(d, [(0, 'standard', {'default': 'yes'})])
    build(d, 'object', 2, [(SERVERS[0], 'sdb1', 1.0),
                           (SERVERS[0], 'sdb2', 1.0),
                           (SERVERS[1], 'sdb1', 2.0)])
    servers = by_name(rings.report(d))['standard']['spread']['servers']
    assert servers[SERVERS[0]]['devices'] == ['sdb1', 'sdb2']
    assert servers[SERVERS[0]]['weight'] == 2.0
    assert servers[SERVERS[0]]['weight_share'] == 0.5
    assert servers[SERVERS[0]]['part_replicas'] + \
        servers[SERVERS[1]]['part_replicas'] == 128


def test_more_replicas_than_servers(tmp_path):
    d = str(tmp_path)
    swift_conf(d, [(0, 'standard', {'default': 'yes'})])
    build(d, 'object', 3, [(SERVERS[0], 'sdb1', 1.0),
                           (SERVERS[0], 'sdb2', 1.0),
                           (SERVERS[1], 'sdb1', 1.0)])
    result = rings.report(d)
    assert result['warnings'] == [
        'standard: 3 replicas on 2 servers: replicas of a partition share '
        'a server, and losing it loses them all']


def test_deprecated_policies_are_reported_not_warned_about(saio):
    swift_conf(saio, [(0, 'standard', {'default': 'yes'}), (1, 'fast', {}),
                      (2, 'bulk', {'deprecated': 'yes'})])
    result = rings.report(saio)
    assert by_name(result)['bulk']['deprecated']
    assert 'spread' in by_name(result)['bulk']
    assert [w.split(':')[0] for w in result['warnings']] == ['fast']


def test_a_drained_server_is_not_one_the_cluster_holds_data_on(tmp_path):
    d = str(tmp_path)
    swift_conf(d, [(0, 'standard', {'default': 'yes'}), (1, 'fast', {})])
    builder = RingBuilder(6, 2, 0)
    for i, ip in enumerate(SERVERS[:3]):
        builder.add_dev({'id': i, 'region': 1, 'zone': i + 1, 'ip': ip,
                         'port': 6200, 'device': 'sdb', 'weight': 1.0})
    builder.rebalance(seed=1)
    # the third server is being removed: weight 0, partitions moved away
    builder.set_dev_weight(2, 0.0)
    builder.pretend_min_part_hours_passed()
    builder.rebalance(seed=1)
    builder.get_ring().save(os.path.join(d, 'object.ring.gz'))
    build(d, 'object-1', 2, [(SERVERS[0], 'ssd', 1.0),
                             (SERVERS[1], 'ssd', 1.0)])
    result = rings.report(d)
    standard = by_name(result)['standard']['spread']['servers']
    assert standard[SERVERS[2]]['weight'] == 0.0
    assert standard[SERVERS[2]]['part_replicas'] == 0
    assert result['servers'] == SERVERS[:2]
    assert result['warnings'] == []


def test_an_unreadable_ring_is_an_error_the_others_are_reported(saio):
    os.unlink(os.path.join(saio, 'object-2.ring.gz'))
    result = rings.report(saio)
    bulk = by_name(result)['bulk']
    assert 'spread' not in bulk and 'object-2.ring.gz' in bulk['ring']
    (error,) = result['errors']
    assert error.startswith('bulk: cannot read ')
    # the servers and warnings come from the rings that could be read
    assert result['servers'] == SERVERS
    assert [w.split(':')[0] for w in result['warnings']] == ['fast']


def test_device_parts_and_fractional_replicas():
    table = [[0, 1, 2, 0], [1, 2, 0, 1], [2, 0]]
    assert rings.device_parts(table) == {0: 4, 1: 3, 2: 3}
    devs = [{'id': 0, 'ip': 'b', 'port': 1, 'device': 'd0', 'weight': 1},
            None,
            {'id': 2, 'ip': 'a', 'port': 1, 'device': 'd2', 'weight': 3}]
    s = rings.spread(devs, {0: 4, 2: 2}, 2.5, 4)
    assert list(s['servers']) == ['a', 'b']
    assert s['servers']['a']['weight_share'] == 0.75
    assert s['servers']['b']['part_share'] == round(4 / 6, 4)
    assert [d['id'] for d in s['devices']] == [2, 0]
