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
"""``swift-mass devices probe|classes|classify``: the IOPS of the
object-ring devices this host serves, and the performance classes kept in
the classes file (``/etc/swift/mass-devices.json`` by default).

``devices probe`` measures the devices this host's object servers serve
and merges them into the file (:func:`swift_mass.devices.host.probe_here`);
``devices classes`` shows the file; ``devices classify`` classifies the
stored figures again with other thresholds, probing nothing
(:mod:`swift_mass.devices.classes`).
"""
import time

from swift_mass.cli import output
from swift_mass.devices import classes, host, probe


def format_probe(result):
    lines = ['%-26s %-10s %9s %9s %9s %-7s %s' % (
        'device', 'class', 'IOPS', 'read', 'write', 'method', 'path')]
    for d in result['devices']:
        if 'error' in d or 'iops' not in d:
            lines.append('%-26s %-10s %s  %s' % (
                d['device'], '-', d['path'], d.get('error', '(dry run)')))
            continue
        lines.append('%-26s %-10s %9.0f %9.0f %9.0f %-7s %s' % (
            d['device'], d['class'], d['iops'], d['read_iops'],
            d['write_iops'], d['method'], d['path']))
        if d.get('note'):
            lines.append('  note: ' + d['note'])
    if result['written']:
        lines.append('written to %s (thresholds %s: %s)' % (
            result['classes_file'], ','.join(
                '%g' % t for t in result['thresholds']),
            ', '.join(result['classes'])))
    lines += ['ERROR: ' + e for e in result['errors']]
    return '\n'.join(lines)


def format_classes(data):
    bounds = ['0'] + ['%g' % t for t in data['thresholds']] + ['']
    lines = ['%s: classes by IOPS, slowest first' % data['classes_file']]
    for i, name in enumerate(data['classes']):
        lines.append('  %-10s %s-%s IOPS: %d devices' % (
            name, bounds[i], bounds[i + 1], data['counts'][name]))
    lines.append('%-26s %-10s %9s %9s %9s %-7s %s' % (
        'device', 'class', 'IOPS', 'read', 'write', 'method', 'probed'))
    for key, e in sorted(data['devices'].items()):
        lines.append('%-26s %-10s %9.0f %9.0f %9.0f %-7s %s' % (
            key, e['class'], e['iops'], e['read_iops'], e['write_iops'],
            e['method'], time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(
                e['probed_at']))))
    return '\n'.join(lines)


def _names(text):
    return [n.strip() for n in text.split(',')]


def location_options(p, out=False):
    """--swift-dir and --classes-file (also --out): what every
    command that reads the classes file takes."""
    p.add_argument('--swift-dir', default='/etc/swift',
                   help='where swift.conf, the rings and the classes file '
                   'are')
    options = ('--classes-file', '--out') if out else ('--classes-file',)
    p.add_argument(*options, dest='classes_file',
                   help='default: <swift-dir>/%s' % classes.CLASSES_FILE)


def _thresholds(text):
    return None if text is None else classes.parse_thresholds(text)


def run(args):
    names = None if args.names is None else _names(args.names)
    if args.action == 'probe':
        return output.emit(args, lambda: host.probe_here(
            args.swift_dir, args.classes_file, args.object_conf,
            args.devices, args.device or (), args.seconds, args.max_bytes,
            _thresholds(args.thresholds), names, args.dry_run),
            format_probe, lambda result: result['errors'])
    path = classes.classes_path(args.swift_dir, args.classes_file)
    if args.action == 'classes':
        return output.emit(args, lambda: classes.show_classes(path),
                           format_classes)
    return output.emit(args, lambda: classes.reclassify(
        path, _thresholds(args.thresholds), names), format_classes)


def add_parsers(subparsers):
    """Register ``devices probe``, ``devices classes`` and ``devices
    classify``."""
    p = subparsers.add_parser('devices', help='measure the devices\' IOPS '
                              'and keep their performance classes')
    actions = p.add_subparsers(dest='action', required=True)
    a = actions.add_parser(
        'probe', help='measure the object-ring devices this host serves '
        '(exit 1 when one could not be)', description='Probes each '
        'object-ring device this host\'s object servers serve, one after '
        'the other (a temporary file in the device\'s tmp dir, random 4 '
        'KiB reads and writes half and half for --seconds), classifies '
        'it by its IOPS and merges it into the classes file.')
    location_options(a, out=True)
    a.add_argument('--object-conf', action='append', metavar='PATH',
                   help='an object server\'s config (repeat; default: '
                   '<swift-dir>/object-server.conf and '
                   '<swift-dir>/object-server/*.conf)')
    a.add_argument('--devices', metavar='DIR',
                   help='every ring device with one of this host\'s IPs is '
                   'at DIR/<device> (instead of the configs\' devices)')
    a.add_argument('--device', action='append', metavar='IP:PORT/DEVICE',
                   help='probe only this device (repeat)')
    a.add_argument('--seconds', type=float, default=probe.SECONDS,
                   help='of random I/O per device (default %g)' %
                   probe.SECONDS)
    a.add_argument('--max-bytes', type=int, default=probe.MAX_BYTES,
                   help='of the temporary file (default %d)' %
                   probe.MAX_BYTES)
    a.add_argument('--thresholds', help='ascending IOPS between classes, '
                   'e.g. 500,5000 (default: the file\'s, else 1000)')
    a.add_argument('--names', help='the classes\' names, slowest first, '
                   'e.g. hdd,ssd')
    a.add_argument('--dry-run', action='store_true',
                   help='list the devices and their paths only')
    a.set_defaults(func=run)
    a = actions.add_parser('classes', help='show the classes file')
    location_options(a)
    a.set_defaults(func=run, names=None)
    a = actions.add_parser('classify', help='classify the stored figures '
                           'again with other thresholds')
    location_options(a)
    a.add_argument('--thresholds', required=True,
                   help='ascending IOPS between classes')
    a.add_argument('--names', help='the classes\' names, slowest first')
    a.set_defaults(func=run)
