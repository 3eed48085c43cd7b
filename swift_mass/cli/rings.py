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
"""``swift-mass check-rings``: how each substore's object ring spreads over
the cluster's servers (:func:`swift_mass.devices.rings.report`), and the
warnings about it."""
from swift_mass.cli import output
from swift_mass.devices import rings


def format_report(result):
    """The report as text, one block per policy."""
    lines = ['servers holding object rings: %s' % (
        ', '.join(result['servers']) or '-')]
    for policy in result['policies']:
        flags = [f for f in ('default', 'deprecated') if policy[f]]
        title = 'policy %d %s (%s%s)' % (
            policy['index'], policy['name'], policy['type'],
            ''.join(', ' + f for f in flags))
        if 'spread' not in policy:
            lines += ['', title, '  ring %s: %s' % (policy['ring'],
                                                    policy['error'])]
            continue
        s = policy['spread']
        lines += ['', title, '  %g replicas, %d partitions, %d devices on '
                  '%d servers' % (s['replicas'], s['partitions'],
                                  len(s['devices']), len(s['servers'])),
                  '  %-16s %-20s %8s %8s %14s %8s' % (
                      'server', 'devices', 'weight', 'weight%',
                      'part-replicas', 'parts%')]
        for ip, server in s['servers'].items():
            lines.append('  %-16s %-20s %8g %8.1f %14d %8.1f' % (
                ip, ','.join(server['devices']), server['weight'],
                100 * server['weight_share'], server['part_replicas'],
                100 * server['part_share']))
    if result['warnings'] or result['errors']:
        lines.append('')
    lines += ['WARNING: ' + w for w in result['warnings']]
    lines += ['ERROR: ' + e for e in result['errors']]
    return '\n'.join(lines)


def add_parsers(subparsers):
    """Register ``check-rings``: exit status 1 when a ring cannot be read
    (or, with --strict, on a warning)."""
    p = subparsers.add_parser('check-rings', help='each storage policy\'s '
                              'ring spread over servers and devices')
    p.add_argument('--swift-dir', default='/etc/swift',
                   help='where swift.conf and the ring files are')
    p.add_argument('--strict', action='store_true',
                   help='exit 1 when there is a warning')
    p.set_defaults(func=lambda args: output.emit(
        args, lambda: rings.report(args.swift_dir), format_report,
        lambda result: result['errors'] or (
            args.strict and result['warnings'])))
