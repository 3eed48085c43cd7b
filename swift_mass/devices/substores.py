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
"""New substores spread over every server: ``swift-mass substores
plan|apply``.

A substore is a storage policy with its own object ring; here, a ring over
the devices of chosen performance classes (``--classes fast``, the classes
of :mod:`swift_mass.devices.classes`).  The guideline Mass follows
(GlusterFS's: spread data over all servers) is that a substore spans every
server holding a device of its classes: a server left out idles while
the substore's tenants queue on the others.  So the plan takes every
device of the classes, and refuses

* always, when their servers are fewer than the replicas: two replicas
  of a partition would share a server;
* when ``--exclude`` leaves out a server holding devices of the classes,
  unless ``--force`` (then a warning says so).

Devices come from the cluster's object rings, as the first ring holding
one has it (the default policy's first): region, zone, IP, port,
replication address and weight; their classes from the classes file.
``apply`` builds the ring of a storage policy swift.conf names and that
has no ring yet (add ``[storage-policy:N] name = NAME`` first): builder
and ring in the swift_dir, rebalanced, validated, no partition with two
replicas on one server; it never overwrites a ring.  Copy swift.conf and
the ring to every node afterwards.

The part power and ``min_part_hours`` are ``--part-power`` and
``--min-part-hours``, else those of the cluster's first builder in the
swift_dir (the default policy's first), as the plan says.  With neither,
the plan shows placeholders (the SAIO's 10 and 1) and says so, and
``apply`` refuses: a ring's part power cannot be changed lightly once it
holds data, so a production ring's is never a default.

:func:`plan_substore` is a plain function over device lists;
:func:`build_substore` writes the builder and the ring.
"""
import os
import time

from swift.common.ring import RingBuilder
from swift.common.storage_policy import REPL_POLICY

from swift_mass.devices import rings
from swift_mass.devices.classes import default_first, device_key, \
    object_ring_devices
from swift_mass.devices.weights import save_ring, shared_parts
from swift_mass.ring_devices import load_policies, ring_file

MIN_PART_HOURS = 1
# What plan shows when neither the options nor a builder of the cluster
# give a setting (the SAIO's); apply refuses to build with them.
PLACEHOLDERS = {'part_power': 10, 'min_part_hours': MIN_PART_HOURS}
OPTIONS = {'part_power': '--part-power', 'min_part_hours': '--min-part-hours'}
# what swift-ring-builder takes
DEV_KEYS = ('region', 'zone', 'ip', 'port', 'replication_ip',
            'replication_port', 'device', 'weight', 'meta')


def _names(ips):
    return ', '.join(ips)


def check_ring_options(replicas, part_power, min_part_hours=MIN_PART_HOURS):
    if isinstance(replicas, bool) or not isinstance(
            replicas, (int, float)) or not 1 <= replicas < float('inf'):
        raise ValueError('--replicas %r is not valid; allowed: 1 or more'
                         % (replicas,))
    if isinstance(part_power, bool) or not isinstance(part_power, int) or \
            not 0 <= part_power <= 32:
        raise ValueError('--part-power %r is not valid; allowed: a whole '
                         'number from 0 to 32' % (part_power,))
    if isinstance(min_part_hours, bool) or \
            not isinstance(min_part_hours, int) or min_part_hours < 0:
        raise ValueError('--min-part-hours %r is not valid; allowed: a '
                         'whole number, 0 or more' % (min_part_hours,))


def chosen_servers(of_class, chosen, wanted, replicas, force, warnings):
    """(servers, left_out): the servers of the devices ``chosen``, and the
    servers holding devices of the classes ``wanted`` (``of_class``) that
    they leave out.  ValueError when the servers are fewer than the
    replicas, or leave one out without ``force`` (with it, ``warnings``
    say so)."""
    holders = sorted({d['ip'] for d in of_class})
    servers = sorted({d['ip'] for d in chosen})
    left_out = [ip for ip in holders if ip not in servers]
    if len(servers) < replicas:
        raise ValueError(
            'the devices chosen are on %d server%s (%s), fewer than the %g '
            'replicas: two replicas of a partition would share a server' % (
                len(servers), '' if len(servers) == 1 else 's',
                _names(servers) or 'none', replicas))
    if left_out:
        message = ('the substore leaves out %s, which hold%s devices of '
                   'class %s: they would idle while its tenants queue on '
                   'the others' % (_names(left_out), 's' if len(left_out)
                                   == 1 else '', ','.join(wanted)))
        if not force:
            raise ValueError(message + ' (--force builds it anyway)')
        warnings.append(message)
    return servers, left_out


def plan_substore(devices_with_classes, classes_wanted, replicas,
                  part_power, exclude=(), force=False):
    """The devices of a new substore over ``classes_wanted``.

    devices_with_classes: ring devices (region, zone, ip, port, device,
    weight...) each with its ``class`` (None: not probed).  exclude:
    ``<ip>:<port>/<device>`` of devices to leave out.  Returns a dict:
    classes, replicas, part_power, devices, servers, left_out (servers
    holding devices of the classes that the substore leaves out: only
    with force), warnings.  ValueError when refused.
    """
    check_ring_options(replicas, part_power)
    known = sorted({d['class'] for d in devices_with_classes if d['class']})
    wanted = list(dict.fromkeys(classes_wanted))
    if not wanted or any(c not in known for c in wanted):
        raise ValueError('--classes %s is not valid; allowed: classes of '
                         'the devices: %s' % (','.join(classes_wanted),
                                              ', '.join(known) or 'none'))
    warnings = []
    of_class = []
    for dev in devices_with_classes:
        if dev['class'] not in wanted:
            continue
        if dev['weight'] > 0:
            of_class.append(dev)
        else:
            warnings.append('%s: weight 0 in the cluster\'s rings (being '
                            'drained?): left out' % device_key(dev))
    keys = {device_key(d) for d in of_class}
    unknown = sorted(set(exclude) - keys)
    if unknown:
        raise ValueError('--exclude %s is not valid; allowed: devices of '
                         'class %s: %s' % (', '.join(unknown), ','.join(
                             wanted), ', '.join(sorted(keys))))
    chosen = [d for d in of_class if device_key(d) not in exclude]
    servers, left_out = chosen_servers(of_class, chosen, wanted, replicas,
                                       force, warnings)
    unclassified = sorted(device_key(d) for d in devices_with_classes
                          if not d['class'])
    if unclassified:
        warnings.append('%d devices have no class (not probed), and are '
                        'left out: %s' % (len(unclassified),
                                          ', '.join(unclassified)))
    chosen = sorted(chosen, key=lambda d: (d['ip'], d['port'], d['device']))
    return {'classes': wanted, 'replicas': replicas,
            'part_power': part_power,
            'devices': [dict({k: d[k] for k in DEV_KEYS if k in d},
                             key=device_key(d), **{
                                 'class': d['class']}) for d in chosen],
            'servers': servers, 'left_out': left_out, 'warnings': warnings}


def build_substore(builder_path, ring_path, devs, replicas, part_power,
                   min_part_hours=MIN_PART_HOURS, seed=None, now=time.time):
    """Build, rebalance and validate a ring over ``devs`` (ring devices)
    and write its builder and ring; refuses (ValueError, nothing written)
    when either exists or a partition would have two replicas on one
    server.  Returns its spread (:func:`swift_mass.devices.rings.spread`)
    with balance, dispersion and the paths."""
    check_ring_options(replicas, part_power, min_part_hours)
    for path in (builder_path, ring_path):
        if os.path.exists(path):
            raise ValueError('%s exists: a substore is built once (step '
                             'its weights with swift-mass weights, or '
                             'swift-ring-builder)' % path)
    builder = RingBuilder(part_power, replicas, min_part_hours)
    for dev in devs:
        builder.add_dev({k: dev[k] for k in DEV_KEYS if k in dev})
    builder.rebalance(seed=seed)
    builder.validate()
    shared = shared_parts(builder)
    if shared:
        raise ValueError(
            '%d partitions would have two replicas on one server: a server '
            'has more than 1/%g of the devices\' weight' % (shared,
                                                            replicas))
    save_ring(builder, builder_path, ring_path, now())
    ring = builder.get_ring()
    table = ring._replica2part2dev_id
    result = rings.spread(ring.devs, rings.device_parts(table), replicas,
                          builder.parts)
    result.update(builder=builder_path, ring=ring_path,
                  balance=round(builder.get_balance(), 2),
                  dispersion=round(builder.dispersion, 2))
    return result


def policy_files(swift_dir, name):
    """(policy, builder path, ring path) of the storage policy ``name``
    of swift.conf, a replication one."""
    policies = load_policies(swift_dir)
    policy = policies.get_by_name(name)
    if policy is None:
        free = max(int(p) for p in policies) + 1
        raise ValueError(
            '--name %s is not valid; allowed: a storage policy of %s (%s): '
            'add [storage-policy:%d] name = %s there first' % (
                name, os.path.join(swift_dir, 'swift.conf'), ', '.join(
                    p.name for p in policies), free, name))
    if policy.policy_type != REPL_POLICY:
        raise ValueError('--name %s is not valid: a %s policy; allowed: a '
                         'replication policy' % (name, policy.policy_type))
    return policy, rings.builder_file(swift_dir, policy), ring_file(
        swift_dir, policy)


def inventory(swift_dir, device_class, skip=None):
    """(the object rings' devices, each with its class or None; the
    rings that could not be read, ``skip``'s aside)."""
    found, errors = object_ring_devices(swift_dir)
    errors = [e for e in errors if not skip or not e.startswith(skip + ':')]
    return [dict(dev, **{'class': device_class.get(key)})
            for key, dev in sorted(found.items())], errors


def reference_builder(swift_dir, skip):
    """The path of the first builder of the cluster's object rings in
    ``swift_dir`` (the default policy's first), the policy ``skip``'s
    aside; None when there is none."""
    for policy in default_first(load_policies(swift_dir)):
        path = rings.builder_file(swift_dir, policy)
        if policy.name != skip and os.path.exists(path):
            return path
    return None


def ring_settings(swift_dir, part_power, min_part_hours, skip, build):
    """``({part_power, min_part_hours}, {the same: where each came from})``:
    the option given (None: not given), else the cluster's first builder
    (:func:`reference_builder`), else a placeholder (from None) for plan;
    apply (``build``) refuses (ValueError) to build a production ring with
    one."""
    given = {'part_power': part_power, 'min_part_hours': min_part_hours}
    values, sources = {}, {}
    reference = None
    if None in given.values():
        path = reference_builder(swift_dir, skip)
        if path:
            reference = (path, RingBuilder.load(path))
    for key, value in given.items():
        if value is not None:
            values[key], sources[key] = value, OPTIONS[key]
        elif reference:
            values[key] = getattr(reference[1], key)
            sources[key] = reference[0]
        else:
            values[key], sources[key] = PLACEHOLDERS[key], None
    missing = [key for key in sources if sources[key] is None]
    if build and missing:
        raise ValueError(
            'no builder of the cluster\'s rings in %s to take %s from: give '
            '%s' % (swift_dir, ' and '.join(
                'the part power' if key == 'part_power' else key
                for key in missing), ' and '.join(OPTIONS[key]
                                                  for key in missing)))
    return values, sources
