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
"""The hetero SAIO's layout in a temporary directory, for the tests of
``swift-mass devices``, ``weights`` and ``substores``: four servers
127.0.0.1-4, each with an SSD-class sdbN (port 62N0) and an HDD-class
sdcN (port 62N6), mounted at <tmp>/srv/N/node/<device>, each server's
object server configured in <swift_dir>/object-server/N.conf
(servers_per_port); ``standard`` (3 replicas) over all eight devices,
``fast`` over the sdbN."""
import os

from swift.common.ring import RingBuilder

from tests.unit.devices.test_rings import SERVERS, swift_conf


def dev(n, kind, weight=1.0):
    """The ring device sd<kind><n> of server n."""
    return {'region': 1, 'zone': n, 'ip': SERVERS[n - 1],
            'port': 6200 + 10 * n + (0 if kind == 'b' else 6),
            'device': 'sd%s%d' % (kind, n), 'weight': weight}


def key(n, kind):
    d = dev(n, kind)
    return '%s:%d/%s' % (d['ip'], d['port'], d['device'])


def build(swift_dir, ring_name, replicas, devs, part_power=8,
          min_part_hours=0):
    """A builder and its ring ``ring_name`` in ``swift_dir``, rebalanced
    with a fixed seed; the builder."""
    builder = RingBuilder(part_power, replicas, min_part_hours)
    for d in devs:
        builder.add_dev(dict(d))
    builder.rebalance(seed=1)
    builder.save(os.path.join(swift_dir, ring_name + '.builder'))
    builder.get_ring().save(os.path.join(swift_dir, ring_name + '.ring.gz'))
    return builder


def object_conf(swift_dir, n, devices_dir):
    folder = os.path.join(swift_dir, 'object-server')
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, '%d.conf' % n), 'w') as fp:
        fp.write('[DEFAULT]\ndevices = %s\nbind_ip = 127.0.0.%d\n'
                 'bind_port = 62%d0\nservers_per_port = 1\n'
                 '[app:object-server]\nuse = egg:swift#object\n'
                 % (devices_dir, n, n))


def cluster(tmp_path, weights=None):
    """The layout under ``tmp_path``; its swift_dir.  weights: {(n,
    kind): weight} of the standard ring's devices (default 1.0; the
    SSD-class ones are smaller, as they are)."""
    weights = weights or {}
    swift_dir = str(tmp_path / 'etc')
    os.makedirs(swift_dir)
    swift_conf(swift_dir, [(0, 'standard', {'default': 'yes'}),
                           (1, 'fast', {})])
    build(swift_dir, 'object', 3, [
        dev(n, kind, weights.get((n, kind), 1.0))
        for n in range(1, 5) for kind in 'bc'])
    build(swift_dir, 'object-1', 3, [dev(n, 'b') for n in range(1, 5)])
    for n in range(1, 5):
        node = tmp_path / 'srv' / str(n) / 'node'
        for kind in 'bc':
            (node / ('sd%s%d' % (kind, n)) / 'tmp').mkdir(parents=True)
        object_conf(swift_dir, n, str(node))
    return swift_dir
