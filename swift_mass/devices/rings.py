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
"""How each substore's object ring spreads over the cluster's servers.

A substore is a storage policy with its own object ring, often over a subset
of the devices. The placement guideline Mass follows is that the data a
tenant uses should be spread over all servers: a substore whose ring sits on
fewer servers than the cluster has makes its tenants queue on those servers
while the others idle. :func:`report` (``swift-mass check-rings``) gives,
for every storage policy of swift.conf, the servers (by IP) and devices its
object ring uses and each server's share of weight and of partition
replicas, and warns when

* a substore's ring does not span every server that holds a device of any
  object ring (with weight): the servers it leaves out idle while its
  tenants are busy;
* a ring has more replicas than servers: two replicas of a partition share
  a server, and one server failing takes both.

Deprecated policies are reported but not warned about: no new container
lands on them.

:func:`device_parts`, :func:`spread` and :func:`check` are plain functions
over device lists and assignment tables; :func:`report` reads swift.conf
and the ring files.
"""
import collections
import os

from swift.common.ring import RingData

from swift_mass.ring_devices import load_policies, ring_file

# Warnings name the servers a substore leaves out; past this many they are
# counted rather than listed.
LIST_AT_MOST = 8


def device_parts(replica2part2dev):
    """{device id: partition replicas assigned to it} of an assignment table
    (one row per replica, the device id of each partition)."""
    counts = collections.Counter()
    for part2dev in replica2part2dev:
        counts.update(part2dev)
    return dict(counts)


def _share(part, whole):
    return round(part / whole, 4) if whole else 0.0


def spread(devs, parts, replicas, partitions):
    """A ring's spread over servers.

    devs: the ring's device list (dicts with id, ip, port, device, weight;
    None for removed ids); parts: :func:`device_parts` of its assignment;
    replicas: its replica count (may be fractional); partitions: its
    partition count.

    Returns a dict: ``replicas``, ``partitions``, ``devices`` (each
    device's ip, port, device, weight, part_replicas) and ``servers`` (per
    IP: devices, weight, weight_share, part_replicas, part_share), sorted.
    """
    devices = []
    for dev in devs:
        if dev is None:
            continue
        devices.append({
            'id': dev['id'], 'ip': dev['ip'], 'port': dev['port'],
            'device': dev['device'], 'weight': float(dev['weight']),
            'part_replicas': parts.get(dev['id'], 0)})
    devices.sort(key=lambda d: (d['ip'], d['port'], d['device']))
    total_weight = sum(d['weight'] for d in devices)
    total_parts = sum(d['part_replicas'] for d in devices)
    servers = collections.OrderedDict()
    for dev in devices:
        server = servers.setdefault(dev['ip'], {
            'devices': [], 'weight': 0.0, 'part_replicas': 0})
        server['devices'].append(dev['device'])
        server['weight'] += dev['weight']
        server['part_replicas'] += dev['part_replicas']
    for server in servers.values():
        server['weight_share'] = _share(server['weight'], total_weight)
        server['part_share'] = _share(server['part_replicas'], total_parts)
    return {'replicas': replicas, 'partitions': partitions,
            'devices': devices, 'servers': dict(servers)}


def used_servers(ring_spread):
    """The servers a ring can put data on: those of its devices with
    weight or partitions (a device drained to weight 0 still serves the
    partitions it has until a rebalance moves them)."""
    return sorted(ip for ip, server in ring_spread['servers'].items()
                  if server['weight'] > 0 or server['part_replicas'] > 0)


def _names(ips):
    if len(ips) <= LIST_AT_MOST:
        return ', '.join(ips)
    return '%s and %d more' % (', '.join(ips[:LIST_AT_MOST]),
                               len(ips) - LIST_AT_MOST)


def check(policies):
    """Warnings about the spread of a set of policies' rings.

    policies: dicts with ``name``, ``deprecated`` and ``spread`` (a
    :func:`spread`; policies whose ring could not be read have none and
    are left out).  Returns (servers, warnings): every server that holds a
    device of any object ring, and one sentence per problem.
    """
    readable = [p for p in policies if p.get('spread')]
    cluster = sorted(set().union(*[used_servers(p['spread'])
                                   for p in readable]))
    warnings = []
    for policy in readable:
        if policy.get('deprecated'):
            continue
        used = used_servers(policy['spread'])
        missing = [ip for ip in cluster if ip not in used]
        if missing:
            warnings.append(
                '%s: its ring spans %d of the %d servers that hold object '
                'rings\' devices; %s hold none of its devices and idle '
                'while its tenants are busy (a substore should span every '
                'server)' % (policy['name'], len(used), len(cluster),
                             _names(missing)))
        replicas = policy['spread']['replicas']
        if used and replicas > len(used):
            warnings.append(
                '%s: %g replicas on %d server%s: replicas of a partition '
                'share a server, and losing it loses them all' % (
                    policy['name'], replicas, len(used),
                    '' if len(used) == 1 else 's'))
    return cluster, warnings


def builder_file(swift_dir, policy):
    """The path of the builder of ``policy``'s object ring in
    ``swift_dir``: beside the ring, as swift-ring-builder keeps it."""
    return os.path.join(swift_dir, policy.ring_name + '.builder')


def ring_spread(path):
    """:func:`spread` of a ring file."""
    # RingData rather than Ring: reading an assignment needs neither the
    # hash path settings nor Ring's reload machinery; its replica2part2dev
    # table is what Ring itself is built from.
    data = RingData.load(path)
    table = data._replica2part2dev_id
    return spread(data.devs, device_parts(table), data.replica_count,
                  len(table[0]) if table else 0)


def report(swift_dir):
    """Every storage policy's ring spread, the cluster's servers, the
    warnings, and the errors (a ring that cannot be read)."""
    policies = []
    errors = []
    for policy in sorted(load_policies(swift_dir), key=int):
        path = ring_file(swift_dir, policy)
        entry = {'index': int(policy), 'name': policy.name,
                 'type': policy.policy_type, 'default': policy.is_default,
                 'deprecated': policy.is_deprecated, 'ring': path}
        try:
            entry['spread'] = ring_spread(path)
        except Exception as err:
            entry['error'] = '%s: %s' % (type(err).__name__, err)
            errors.append('%s: cannot read %s: %s' % (policy.name, path,
                                                      entry['error']))
        policies.append(entry)
    servers, warnings = check(policies)
    return {'swift_dir': swift_dir, 'servers': servers,
            'policies': policies, 'warnings': warnings, 'errors': errors}
