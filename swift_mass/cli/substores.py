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
the devices of chosen performance classes (``--classes fast``).  ``plan``
shows the devices, writes nothing; ``apply`` builds the ring of a storage
policy swift.conf names and that has no ring yet.  What is chosen, and
what is refused, is :mod:`swift_mass.devices.substores`'s.
"""
import os

from swift_mass.cli import output
from swift_mass.cli.devices import location_options
from swift_mass.devices import classes, substores

LABELS = {'part_power': 'part power', 'min_part_hours': 'min_part_hours'}


def run_plan(args, build=False):
    """``substores plan`` or, ``build``, ``substores apply`` of the parsed
    ``args``."""
    found = classes.load_classes(classes.classes_path(
        args.swift_dir, args.classes_file))
    policy, builder_path, ring_path = substores.policy_files(
        args.swift_dir, args.name)
    settings, sources = substores.ring_settings(
        args.swift_dir, args.part_power, args.min_part_hours, policy.name,
        build)
    device_class = {k: v['class'] for k, v in found['devices'].items()}
    devs, errors = substores.inventory(args.swift_dir, device_class,
                                       policy.name)
    plan = substores.plan_substore(
        devs, [c.strip() for c in args.classes.split(',')], args.replicas,
        settings['part_power'], args.exclude or (), args.force)
    plan['warnings'] += ['cannot read a ring: ' + e for e in errors]
    plan.update(name=policy.name, index=int(policy), builder=builder_path,
                ring=ring_path, min_part_hours=settings['min_part_hours'],
                settings_from=sources,
                exists=[p for p in (builder_path, ring_path)
                        if os.path.exists(p)], built=None)
    if build:
        plan['built'] = substores.build_substore(
            builder_path, ring_path, plan['devices'], args.replicas,
            settings['part_power'], settings['min_part_hours'], args.seed)
    return plan


def settings_text(p):
    """Where the part power and min_part_hours came from."""
    sources = p['settings_from']
    parts = ['%s %d from %s' % (LABELS[key], p[key], source)
             for key, source in sources.items() if source]
    missing = [key for key, source in sources.items() if not source]
    if missing:
        one = len(missing) == 1
        parts.append(
            '%s: %s (no %s, nor a builder of the cluster\'s rings in %s to '
            'take %s from): apply needs %s given' % (
                ' and '.join('%s %d' % (LABELS[key], p[key])
                             for key in missing),
                'a placeholder' if one else 'placeholders',
                ', '.join(substores.OPTIONS[key] for key in missing),
                os.path.dirname(p['builder']), 'it' if one else 'them',
                'it' if one else 'them'))
    return ', '.join(parts)


def format_plan(p):
    lines = ['substore %s (policy %d): %g replicas, 2^%d partitions, '
             'classes %s' % (p['name'], p['index'], p['replicas'],
                             p['part_power'], ','.join(p['classes'])),
             settings_text(p),
             '%d devices on %d servers:' % (len(p['devices']),
                                            len(p['servers']))]
    for d in p['devices']:
        lines.append('  %-26s %-10s region %d zone %d weight %g' % (
            d['key'], d['class'], d['region'], d['zone'], d['weight']))
    lines += ['WARNING: ' + w for w in p['warnings']]
    built = p['built']
    if built:
        lines.append('built %s and %s: balance %.2f, dispersion %.2f' % (
            built['builder'], built['ring'], built['balance'],
            built['dispersion']))
        for ip, s in built['servers'].items():
            lines.append('  %-16s %5.1f%% of the weight, %5.1f%% of the '
                         'partition replicas' % (ip, 100 * s['weight_share'],
                                                 100 * s['part_share']))
        lines.append('copy swift.conf and %s to every node' % built['ring'])
    elif p['exists']:
        lines.append('apply would refuse: %s exists' % ' and '.join(
            p['exists']))
    else:
        lines.append('dry run: nothing written (substores apply builds %s '
                     'and %s)' % (p['builder'], p['ring']))
    return '\n'.join(lines)


def add_parsers(subparsers):
    """Register ``substores plan`` and ``substores apply``."""
    p = subparsers.add_parser('substores', help='a new substore\'s ring '
                              'over every server holding devices of '
                              'chosen classes')
    actions = p.add_subparsers(dest='action', required=True)
    for action, text in (('plan', 'show the devices; write nothing'),
                         ('apply', 'build and write the builder and the '
                          'ring')):
        a = actions.add_parser(action, help=text, description=__doc__.split(
            '\n\n')[0])
        a.add_argument('--name', required=True,
                       help='the storage policy, in swift.conf already')
        a.add_argument('--classes', required=True,
                       help='the devices\' classes, e.g. fast or '
                       'medium,fast')
        a.add_argument('--replicas', type=float, default=3.0)
        a.add_argument('--part-power', type=int,
                       help='default: the part power of the cluster\'s '
                       'first builder in --swift-dir (the default '
                       'policy\'s first); apply needs one or the other')
        a.add_argument('--min-part-hours', type=int,
                       help='default: the min_part_hours of that builder; '
                       'apply needs one or the other')
        a.add_argument('--exclude', action='append',
                       metavar='IP:PORT/DEVICE',
                       help='leave this device out (repeat)')
        a.add_argument('--force', action='store_true',
                       help='build even when a server holding devices of '
                       'the classes is left out')
        a.add_argument('--seed', type=int,
                       help='the rebalance\'s random seed')
        location_options(a)
        a.set_defaults(func=lambda args: output.emit(
            args, lambda: run_plan(args, args.action == 'apply'),
            format_plan))
