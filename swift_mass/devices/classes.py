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
"""Performance classes of the cluster's devices, and the classes file that
keeps them: what ``swift-mass devices`` writes, and what ``weights`` and
``substores`` read.

A device is named ``<ip>:<port>/<device>``, its object-ring address (a
device name alone repeats across servers).  Its class comes from the IOPS
of its probe (:func:`swift_mass.devices.probe.probe`'s ``iops``: reads and
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

Probes are merged into the file (:func:`save_classes`), so probing each
storage server in turn (:func:`swift_mass.devices.host.probe_here`), the
file carried along, fills it; every device is classified again with the
thresholds given (else the file's).  :func:`reclassify` classifies the
stored figures again with other thresholds, probing nothing.

Plain functions: :func:`classify`, :func:`update`; :func:`load_classes`,
:func:`save_classes` and :func:`object_ring_devices` read or write files.
"""
import bisect
import json
import os
import tempfile
import time

from swift.common.utils import lock_path, renamer

# the file's name and path: one place, which the proxies read it by too
from swift_mass.device_speeds import (  # noqa: F401 (the command's)
    CLASSES_FILE, VERSION, classes_path)
from swift_mass.ring_devices import load_policies, object_ring_devs

DEFAULT_THRESHOLDS = (1000.0,)
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


def default_first(policies):
    """The storage policies, the default one first, then by index: the
    order in which the cluster's rings are read for what a device is."""
    return sorted(policies, key=lambda p: (not p.is_default, int(p)))


def object_ring_devices(swift_dir):
    """({device key: ring device}, errors) over every storage policy's
    object ring, the default policy's first: a device in several rings
    is the first one's."""
    devices = {}
    errors = []
    for dev in object_ring_devs(swift_dir,
                                default_first(load_policies(swift_dir)),
                                errors=errors):
        devices.setdefault(device_key(dev), dict(dev))
    return devices, errors
