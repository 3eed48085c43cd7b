"""Performance classes of the cluster's devices: what ``swift-mass devices``
measures and keeps, and what ``weights`` and ``substores`` read.

A device is named ``<ip>:<port>/<device>``, its object-ring address (a
device name alone repeats across servers).  Its class comes from the IOPS
of its probe (:func:`swift_mass.cli.probe.probe`'s ``iops``: reads and
writes of the 50/50 mix per second) and the operator's thresholds, an
ascending list of IOPS, ``[1000]`` by default.  Classes are ordered
slowest first: class 0 holds the devices below the first threshold, class
i those at or above threshold i-1 and below threshold i.  Their names are
the operator's (``--names hdd,ssd``), else slow, fast for two classes;
slow, medium, fast for three; class0, class1, ... for more.

The classes file (default ``/etc/swift/mass-devices.json``: beside the
rings, copied to the hosts as they are)::

    {"version": 1, "thresholds": [1000.0], "classes": ["slow", "fast"],
     "devices": {"127.0.0.1:6210/sdb1": {
         "read_iops": 812.4, "write_iops": 655.1, "iops": 720.3,
         "class": "slow", "probed_at": 1764000000.0, "method": "direct"}}}

``devices probe`` measures the devices this host's object servers serve
and merges them into the file, so probing each storage server in turn,
the file carried along, fills it; every device is classified again with
the thresholds given (else the file's).  ``devices classify`` classifies
the stored figures again with other thresholds, probing nothing.

Plain functions: :func:`classify`, :func:`update`, :func:`served_devices`;
:func:`probe_here` and the file's :func:`load_classes` and
:func:`save_classes` touch the machine.
"""
import bisect
import json
import os
import tempfile
import time

from swift.common.ring import RingData
from swift.common.utils import lock_path, readconf, renamer, whataremyips
from swift.common.ring.utils import is_local_device

from swift_mass.cli import output, probe, rings

VERSION = 1
DEFAULT_THRESHOLDS = (1000.0,)
CLASSES_FILE = 'mass-devices.json'
DEFAULT_NAMES = {2: ('slow', 'fast'), 3: ('slow', 'medium', 'fast')}
FIGURES = ('read_iops', 'write_iops', 'iops', 'probed_at', 'method')


def device_key(dev):
    """``<ip>:<port>/<device>`` of a ring device (IPv6 in brackets)."""
    ip = '[%s]' % dev['ip'] if ':' in dev['ip'] else dev['ip']
    return '%s:%s/%s' % (ip, dev['port'], dev['device'])


def check_thresholds(thresholds):
    """The thresholds as floats; ValueError unless they are ascending
    positive numbers, one at least."""
    allowed = ('allowed: ascending positive IOPS, one at least, e.g. 1000 '
               'or 500,5000')
    try:
        values = [float(t) for t in thresholds]
    except (TypeError, ValueError):
        values = None
    if not values or any(not 0 < v < float('inf') for v in values) or \
            any(a >= b for a, b in zip(values, values[1:])):
        raise ValueError('--thresholds %s is not valid; %s' % (
            ','.join(str(t) for t in thresholds or ()) or "''", allowed))
    return values


def parse_thresholds(text):
    """``--thresholds 500,5000``."""
    return check_thresholds([t.strip() for t in text.split(',')])


def class_names(thresholds, names=None):
    """The classes' names, slowest first: ``names`` (checked: one more
    than the thresholds, distinct, neither empty nor holding ``,``) or the
    default ones."""
    count = len(thresholds) + 1
    if names is None:
        return list(DEFAULT_NAMES.get(
            count, ['class%d' % i for i in range(count)]))
    names = [str(n) for n in names]
    if len(names) != count or len(set(names)) != count or \
            any(not n or ',' in n or n != n.strip() for n in names):
        raise ValueError(
            '--names %s is not valid; allowed: %d distinct names, slowest '
            'first (one more than the thresholds)' % (','.join(names), count))
    return names


def classify(iops_by_device, thresholds, names=None):
    """{device: class name} of {device: IOPS}: below the first threshold,
    the slowest class; at or above the last, the fastest."""
    thresholds = check_thresholds(thresholds)
    names = class_names(thresholds, names)
    return {device: names[bisect.bisect_right(thresholds, iops)]
            for device, iops in iops_by_device.items()}


def new_classes(thresholds=DEFAULT_THRESHOLDS, names=None):
    """An empty classes file's content."""
    thresholds = check_thresholds(thresholds)
    return {'version': VERSION, 'thresholds': thresholds,
            'classes': class_names(thresholds, names), 'devices': {}}


def update(data, measured, thresholds=None, names=None, now=None):
    """The classes file's content ``data`` with the probes ``measured``
    ({device: probe result}) merged in and every device classified with
    ``thresholds`` and ``names`` (default: ``data``'s, names kept only
    while their count fits)."""
    if thresholds is None:
        thresholds = data['thresholds']
    thresholds = check_thresholds(thresholds)
    if names is None and len(data['classes']) == len(thresholds) + 1:
        names = data['classes']
    result = new_classes(thresholds, names)
    devices = {k: dict(v) for k, v in data['devices'].items()}
    for key, figures in measured.items():
        entry = {f: figures[f] for f in FIGURES if f in figures}
        entry.setdefault('probed_at', now if now is not None else time.time())
        devices[key] = entry
    classes = classify({k: v['iops'] for k, v in devices.items()},
                       thresholds, result['classes'])
    for key, entry in devices.items():
        entry['class'] = classes[key]
    result['devices'] = dict(sorted(devices.items()))
    return result


def classes_path(swift_dir, path=None):
    return path or os.path.join(swift_dir, CLASSES_FILE)


def load_classes(path):
    """The classes file's content; ValueError when it is not one."""
    try:
        with open(path) as fp:
            data = json.load(fp)
    except FileNotFoundError:
        raise ValueError('%s does not exist: probe the devices first '
                         '(swift-mass devices probe)' % path)
    except ValueError as err:
        raise ValueError('%s is not JSON: %s' % (path, err))
    if not isinstance(data, dict) or data.get('version') != VERSION:
        raise ValueError('%s is not a version %d classes file' % (
            path, VERSION))
    check_thresholds(data.get('thresholds'))
    class_names(data['thresholds'], data.get('classes'))
    for key, entry in data.get('devices', {}).items():
        if isinstance(entry.get('iops'), bool) or \
                not isinstance(entry.get('iops'), (int, float)):
            raise ValueError('%s: %s has no IOPS figure' % (path, key))
        if entry.get('class') not in data['classes']:
            raise ValueError('%s: %s has class %r, not one of %s' % (
                path, key, entry.get('class'), ', '.join(data['classes'])))
    return data


def write_json(path, data):
    """Write ``data`` to ``path`` whole or not at all (a temporary file
    beside it, synced, renamed over it)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix='.' + os.path.basename(
        path) + '.', suffix='.tmp')
    try:
        with os.fdopen(fd, 'w') as fp:
            json.dump(data, fp, indent=1, sort_keys=True)
            fp.write('\n')
            fp.flush()
            os.fsync(fp.fileno())
        os.chmod(tmp, 0o644)   # readable by Swift's user, as rings are
        renamer(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_classes(path, measured, thresholds=None, names=None):
    """Merge ``measured`` into the classes file at ``path`` (made when
    missing, with DEFAULT_THRESHOLDS unless ``thresholds``), classify
    every device again, write it; its new content."""
    with lock_path(os.path.dirname(os.path.abspath(path)),
                   name=os.path.basename(path)):
        if os.path.exists(path):
            data = load_classes(path)
        else:
            data = new_classes(thresholds or DEFAULT_THRESHOLDS, names)
        data = update(data, measured, thresholds, names)
        write_json(path, data)
    return data


def object_ring_devices(swift_dir):
    """({device key: ring device}, errors) over every storage policy's
    object ring, the default policy's first: a device in several rings
    is the first one's."""
    devices = {}
    errors = []
    policies = sorted(rings.load_policies(swift_dir),
                      key=lambda p: (not p.is_default, int(p)))
    for policy in policies:
        path = os.path.join(swift_dir, policy.ring_name + '.ring.gz')
        try:
            devs = RingData.load(path).devs
        except Exception as err:
            errors.append('%s: cannot read %s: %s' % (policy.name, path,
                                                      err))
            continue
        for dev in devs:
            if dev is not None:
                devices.setdefault(device_key(dev), dict(dev))
    return devices, errors


def object_server_confs(swift_dir, paths=None):
    """The options of this host's object servers, each with
    ``__file__``: ``paths``, else ``<swift_dir>/object-server.conf`` and
    ``<swift_dir>/object-server/*.conf`` (as the SAIO has them)."""
    if not paths:
        paths = [os.path.join(swift_dir, 'object-server.conf')]
        folder = os.path.join(swift_dir, 'object-server')
        if os.path.isdir(folder):
            paths += [os.path.join(folder, name)
                      for name in sorted(os.listdir(folder))
                      if name.endswith('.conf')]
        paths = [p for p in paths if os.path.exists(p)]
        if not paths:
            raise ValueError('no object-server config in %s: give '
                             '--object-conf or --devices' % swift_dir)
    return [readconf(p, 'app:object-server') for p in paths]


def served_devices(ring_devices, confs, ips_of=whataremyips):
    """[{device, path, conf}]: the ring devices (``{key: device}``) the
    object servers of ``confs`` serve, and where they are mounted.

    As Swift's replicator decides it: a device is a server's when its IP
    is one of the server's addresses (``whataremyips`` of its ``ring_ip``
    or ``bind_ip``) and its port the server's ``bind_port`` (any port with
    ``servers_per_port``); it is at ``<devices>/<device>``.
    """
    found = []
    for conf in confs:
        ips = ips_of(conf.get('ring_ip', conf.get('bind_ip', '0.0.0.0')))
        port = None if int(conf.get('servers_per_port', 0) or 0) else \
            int(conf.get('bind_port', 6200))
        for key, dev in sorted(ring_devices.items()):
            if any(f['device'] == key for f in found):
                continue
            if is_local_device(ips, port, dev['ip'], dev['port']):
                found.append({
                    'device': key,
                    'path': os.path.join(conf.get('devices', '/srv/node'),
                                         dev['device']),
                    'conf': conf.get('__file__')})
    return found


def probe_here(swift_dir, classes_file=None, conf_paths=None,
               devices_dir=None, only=(), seconds=probe.SECONDS,
               max_bytes=probe.MAX_BYTES, thresholds=None, names=None,
               dry_run=False, prober=probe.probe, ips_of=whataremyips):
    """Probe every object-ring device this host serves (those named in
    ``only``, when given) and merge the results into the classes file.

    ``devices_dir``: every device of the rings whose IP is this host's is
    at ``<devices_dir>/<device>``, whatever the object-server configs say.
    ``dry_run``: list the devices and their paths, probe nothing, write
    nothing.
    """
    probe.check_bounds(seconds, max_bytes)
    if thresholds is not None:
        class_names(check_thresholds(thresholds), names)
    path = classes_path(swift_dir, classes_file)
    ring_devices, errors = object_ring_devices(swift_dir)
    if devices_dir:
        confs = [{'devices': devices_dir, 'servers_per_port': 1,
                  '__file__': '--devices'}]
    else:
        confs = object_server_confs(swift_dir, conf_paths)
    served = served_devices(ring_devices, confs, ips_of)
    unknown = sorted(set(only) - set(d['device'] for d in served))
    if unknown:
        raise ValueError('--device %s is not valid; allowed: the devices '
                         'served here: %s' % (', '.join(unknown), ', '.join(
                             d['device'] for d in served) or 'none'))
    if only:
        served = [d for d in served if d['device'] in only]
    if not served:
        errors.append('no device of the object rings is served here')
    measured = {}
    for entry in served:
        if not os.path.isdir(entry['path']):
            entry['error'] = 'not mounted: %s is not a directory' % (
                entry['path'])
        elif not dry_run:
            try:
                measured[entry['device']] = prober(
                    entry['path'], seconds=seconds, max_bytes=max_bytes)
                entry.update(measured[entry['device']])
            except Exception as err:
                entry['error'] = '%s: %s' % (type(err).__name__, err)
        if 'error' in entry:
            errors.append('%s: %s' % (entry['device'], entry['error']))
    result = {'classes_file': path, 'dry_run': dry_run, 'devices': served,
              'errors': errors, 'written': False}
    if measured:
        data = save_classes(path, measured, thresholds, names)
        result.update(written=True, thresholds=data['thresholds'],
                      classes=data['classes'])
        for entry in served:
            if entry['device'] in measured:
                entry['class'] = data['devices'][entry['device']]['class']
    return result


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


def show_classes(path):
    """The classes file, with the devices counted per class."""
    data = load_classes(path)
    counts = {name: 0 for name in data['classes']}
    for entry in data['devices'].values():
        counts[entry['class']] += 1
    return dict(data, classes_file=path, counts=counts)


def reclassify(path, thresholds, names=None):
    """Classify the stored figures again; the file's new content."""
    load_classes(path)   # says why when there is none to classify
    save_classes(path, {}, check_thresholds(thresholds), names)
    return show_classes(path)


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
                   help='default: <swift-dir>/%s' % CLASSES_FILE)


def _thresholds(text):
    return None if text is None else parse_thresholds(text)


def run(args):
    names = None if args.names is None else _names(args.names)
    if args.action == 'probe':
        return output.emit(args, lambda: probe_here(
            args.swift_dir, args.classes_file, args.object_conf,
            args.devices, args.device or (), args.seconds, args.max_bytes,
            _thresholds(args.thresholds), names, args.dry_run),
            format_probe, lambda result: result['errors'])
    path = classes_path(args.swift_dir, args.classes_file)
    if args.action == 'classes':
        return output.emit(args, lambda: show_classes(path), format_classes)
    return output.emit(args, lambda: reclassify(
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
