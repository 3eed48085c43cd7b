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
"""The devices of the cluster's object rings, and which of them a node
serves: one walk for the proxies (every device a bump must cover), the
object servers (the devices each registers as bumping) and ``swift-mass``
(the servers ``queue`` asks, the devices ``devices probe`` measures and
``substores`` builds from).

The walk (:func:`object_ring_devs`) takes its rings from one of two
places:

* a server's: the storage policies Swift loaded (``POLICIES``) and the
  ``Ring`` each holds, reloaded when its file changes
  (:func:`loaded_ring_devs`; :func:`ring_devices` names them);
* an operator's: the policies of ``<swift_dir>/swift.conf``
  (:func:`load_policies`) and their ring files, read as they are now
  (:func:`ring_file_devs`).

A node's own devices are those whose IP is one of its addresses
(``whataremyips`` of its ``ring_ip``, else its ``bind_ip``: ``ring_ip`` of
:class:`swift_mass.conf.ObjectServerConf`) and whose port is its server's
(any port, under ``servers_per_port``): :func:`served_here`, as Swift's
replicator decides.
"""
import configparser
import os

from swift.common.ring import RingData
from swift.common.ring.utils import is_local_device
from swift.common.storage_policy import POLICIES, parse_storage_policies
from swift.common.utils import whataremyips


def device_name(dev):
    """How a ring device is named in the registry of bumpers."""
    return '%s:%s/%s' % (dev['ip'], dev['port'], dev['device'])


def served_here(ip, port, ips_of=whataremyips):
    """A test of ring devices, true of those that a server of this host
    serves: ``ip`` is the address the rings name it by (``ring_ip`` of
    :class:`swift_mass.conf.ObjectServerConf`),
    ``port`` its ``bind_port`` (None: every port of ``ip``, as under
    ``servers_per_port``); ``ips_of(ip)``, this host's addresses."""
    my_ips = ips_of(ip)

    def is_served(dev):
        return is_local_device(my_ips, port, dev['ip'], dev['port'])
    return is_served


def load_policies(swift_dir):
    """The storage policies of ``<swift_dir>/swift.conf``."""
    path = os.path.join(swift_dir, 'swift.conf')
    conf = configparser.ConfigParser(strict=False)
    if not conf.read(path):
        raise ValueError('cannot read %s' % path)
    return parse_storage_policies(conf)


def ring_file(swift_dir, policy):
    """The path of ``policy``'s object ring in ``swift_dir``."""
    return os.path.join(swift_dir, policy.ring_name + '.ring.gz')


def ring_file_devs(swift_dir, policy):
    """The device list of ``policy``'s object ring file, read now."""
    # RingData rather than Ring: reading a ring's devices needs neither
    # the hash path settings nor Ring's reload machinery.
    return RingData.load(ring_file(swift_dir, policy)).devs


def loaded_ring_devs(swift_dir, policy):
    """The device list of ``policy``'s object ring as this process holds
    it (a ``Ring`` of ``POLICIES``, which reloads when its file
    changes)."""
    return POLICIES.get_object_ring(int(policy), swift_dir).devs


def object_ring_devs(swift_dir, policies, read_devs=ring_file_devs,
                     errors=None):
    """Every device (a dict) of the object ring of each of ``policies``,
    in their order; removed devices (None in a ring) are left out.

    read_devs(swift_dir, policy): the ring's device list
    (:func:`ring_file_devs`, :func:`loaded_ring_devs`).  A ring that cannot
    be read raises, or, given a list ``errors``, is skipped, and appended
    there as ``'<policy>: cannot read <ring file>: <why>'``.
    """
    for policy in policies:
        try:
            devs = read_devs(swift_dir, policy)
        except Exception as err:
            if errors is None:
                raise
            errors.append('%s: cannot read %s: %s' % (
                policy.name, ring_file(swift_dir, policy), err))
            continue
        for dev in devs:
            if dev is not None:
                yield dev


def ring_devices(swift_dir, local_to=None, served=None):
    """The names (:func:`device_name`) of every device in the object rings
    of every storage policy, or with ``local_to=(ring_ip, bind_port)``
    only of those this server serves (``bind_port`` None: every port of
    ``ring_ip``, as under ``servers_per_port``; a server's ``ring_ip`` is
    its ``bind_ip`` unless set) and, with ``served``, for which
    ``served(device)`` (the device's name on disk) is true."""
    is_served = None if local_to is None else served_here(*local_to)
    names = set()
    for dev in object_ring_devs(swift_dir, POLICIES, loaded_ring_devs):
        if is_served is not None and not is_served(dev):
            continue
        if served is not None and not served(dev['device']):
            continue
        names.add(device_name(dev))
    return names
