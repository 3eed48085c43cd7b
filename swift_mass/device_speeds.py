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
"""The devices' measured speeds, as the classes file keeps them: written
by ``swift-mass devices probe`` (:mod:`swift_mass.devices.classes`, which
holds the file's whole format), read here by the proxies' leader, which
routes a tenant to a substore only where its devices were measured faster
than the default policy's (:mod:`swift_mass.control.substores`).

The file lives beside the rings (``<swift_dir>/mass-devices.json``) and is
copied to the hosts as they are.  What a proxy reads of it is each
device's probed ``read_iops``, ``write_iops`` and ``iops`` (of the 50/50
mix): one I/O at a time, the inverse of their mean latency.  A device
whose figures are missing or not positive numbers is left out, so one bad
entry leaves that device unmeasured and stops nothing.
"""
import collections
import json
import os

VERSION = 1
CLASSES_FILE = 'mass-devices.json'

#: a device's probed speeds, I/Os a second one at a time
Speeds = collections.namedtuple('Speeds', 'read_iops write_iops iops')


def classes_path(swift_dir, path=None):
    """The classes file: ``path``, else ``<swift_dir>/mass-devices.json``."""
    return path or os.path.join(swift_dir, CLASSES_FILE)


def _positive(value):
    return not isinstance(value, bool) and isinstance(value, (int, float)) \
        and value > 0


def read_speeds(path):
    """``{device name: Speeds}`` of the classes file at ``path`` (device
    names as :func:`swift_mass.ring_devices.device_name` gives them);
    ``{}`` when there is no file.  ValueError when the file is not a
    version 1 classes file: the caller says so and routes as configured."""
    try:
        with open(path) as fp:
            data = json.load(fp)
    except FileNotFoundError:
        return {}
    except ValueError as err:
        raise ValueError('%s is not JSON: %s' % (path, err))
    if not isinstance(data, dict) or data.get('version') != VERSION or \
            not isinstance(data.get('devices'), dict):
        raise ValueError('%s is not a version %d classes file' % (
            path, VERSION))
    speeds = {}
    for name, entry in data['devices'].items():
        if not isinstance(entry, dict):
            continue
        figures = [entry.get(field) for field in Speeds._fields]
        if all(_positive(f) for f in figures):
            speeds[name] = Speeds(*(float(f) for f in figures))
    return speeds
