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
"""The object-ring devices this host's object servers serve, probed one
after the other and merged into the classes file: ``swift-mass devices
probe``.

Which devices a server serves is decided as Swift's replicator decides it
(:func:`swift_mass.ring_devices.served_here`), from the object servers'
configs (:func:`object_server_confs`); each device is measured by
:func:`swift_mass.devices.probe.probe` and classified by
:mod:`swift_mass.devices.classes`.

:func:`served_devices` is a plain function; :func:`probe_here` reads the
rings and configs, probes, and writes the classes file.
"""
import os

from swift.common.utils import readconf, whataremyips

from swift_mass.conf import ConfigError, ObjectServerConf
from swift_mass.devices import classes, probe
from swift_mass.ring_devices import served_here


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


def served_devices(devices, confs, ips_of=whataremyips):
    """[{device, path, conf}]: the ring devices (``{key: device}``) the
    object servers of ``confs`` serve, and where they are mounted.

    As Swift's replicator decides it: a device is a server's when its IP
    is one of the server's addresses (``whataremyips`` of its ``ring_ip``
    or ``bind_ip``) and its port the server's ``bind_port`` (any port with
    ``servers_per_port``); it is at ``<devices>/<device>``.
    """
    found = []
    for conf in confs:
        server = server_conf(conf)
        is_served = served_here(server.ring_ip, server.ring_port, ips_of)
        for key, dev in sorted(devices.items()):
            if any(f['device'] == key for f in found):
                continue
            if is_served(dev):
                found.append({
                    'device': key,
                    'path': os.path.join(server.devices, dev['device']),
                    'conf': conf.get('__file__')})
    return found


def server_conf(conf):
    """The object server options of ``conf``
    (:class:`swift_mass.conf.ObjectServerConf`); a bad one raises
    ConfigError naming its file too."""
    try:
        return ObjectServerConf(conf)
    except ConfigError as err:
        if '__file__' not in conf:
            raise
        raise ConfigError('%s: %s' % (conf['__file__'], err))


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
        classes.class_names(classes.check_thresholds(thresholds), names)
    path = classes.classes_path(swift_dir, classes_file)
    ring_devices, errors = classes.object_ring_devices(swift_dir)
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
        data = classes.save_classes(path, measured, thresholds, names)
        result.update(written=True, thresholds=data['thresholds'],
                      classes=data['classes'])
        for entry in served:
            if entry['device'] in measured:
                entry['class'] = data['devices'][entry['device']]['class']
    return result
