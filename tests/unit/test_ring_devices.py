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
"""The object rings' devices and which a node serves
(swift_mass.ring_devices), over real rings in a temporary swift_dir."""
import os

import pytest
from swift.common.storage_policy import POLICIES

from swift_mass.conf import ConfigError, ObjectServerConf, QueueConf
from swift_mass.ring_devices import device_name, load_policies, \
    object_ring_devs, ring_devices, served_here
from tests.unit.cli.test_queue import build
from tests.unit.devices.test_rings import swift_conf
from tests.unit.helpers import Logger


def rings_of_two_servers(tmp_path, monkeypatch):
    """A swift_dir whose three object rings hold an SSD- and an HDD-class
    device on each of 127.0.0.1 and 127.0.0.2, a port each."""
    for policy in POLICIES:
        # each policy keeps the ring it loaded first, from any swift_dir
        monkeypatch.setattr(policy, 'object_ring', None)
    swift_dir = str(tmp_path)
    swift_conf(swift_dir, [(0, 'standard', {'default': 'yes'}),
                           (1, 'fast', {}), (2, 'bulk', {})])
    devices = [('127.0.0.1', 6210, 'sdb1'), ('127.0.0.1', 6216, 'sdc1'),
               ('127.0.0.2', 6220, 'sdb2'), ('127.0.0.2', 6226, 'sdc2')]
    for ring in ('object', 'object-1', 'object-2'):
        build(swift_dir, ring, 2, devices)
    return swift_dir


def test_ring_devices_of_a_server_per_port_are_found_by_ip(
        tmp_path, monkeypatch):
    # under servers_per_port each device has a port of its own; a server
    # that looked for its bind_port alone registered one of its devices,
    # and proxies never trusted generations
    swift_dir = rings_of_two_servers(tmp_path, monkeypatch)
    assert ring_devices(swift_dir, local_to=('127.0.0.1', None)) == {
        '127.0.0.1:6210/sdb1', '127.0.0.1:6216/sdc1'}
    assert ring_devices(swift_dir, local_to=('127.0.0.1', 6210)) == {
        '127.0.0.1:6210/sdb1'}
    assert QueueConf({'servers_per_port': '1', 'bind_port': '6210'}
                     ).ring_port is None
    assert QueueConf({'bind_port': '6210'}).ring_port == 6210


def test_an_object_server_registers_the_devices_of_its_ring_ip(
        tmp_path, monkeypatch):
    """mass_queue looked its devices up by bind_ip: on a node whose rings
    name another address (ring_ip), none registered, and every proxy
    validated every hit against the object servers forever."""
    from swift_mass.obj import middleware as object_mw
    swift_dir = rings_of_two_servers(tmp_path, monkeypatch)
    devices = tmp_path / 'node'
    for device in ('sdb2', 'sdc2'):
        (devices / device).mkdir(parents=True)
    mw = object_mw.MassQueueMiddleware(lambda env, start: [], {
        'swift_dir': swift_dir, 'bind_ip': '0.0.0.0',
        'ring_ip': '127.0.0.2', 'servers_per_port': '1',
        'devices': str(devices), 'mount_check': 'false'}, logger=Logger())
    assert mw._local_devices() == {'127.0.0.2:6220/sdb2',
                                   '127.0.0.2:6226/sdc2'}


def test_ring_ip_is_ring_ip_else_bind_ip_as_swifts_servers_read_it():
    def ring_ip(conf):
        return ObjectServerConf(conf).ring_ip
    assert ring_ip({'ring_ip': '10.0.0.2', 'bind_ip': '0.0.0.0'}) == \
        '10.0.0.2'
    assert ring_ip({'bind_ip': '10.0.0.1'}) == '10.0.0.1'
    assert ring_ip({}) == '0.0.0.0'


def test_object_server_options_are_read_in_one_place():
    # mass_queue (QueueConf) and swift-mass devices probe read the object
    # server's options with one reader, with the object server's defaults
    default = ObjectServerConf({})
    assert (default.devices, default.mount_check, default.swift_dir,
            default.bind_ip, default.ring_ip, default.bind_port,
            default.servers_per_port, default.ring_port) == (
        '/srv/node', True, '/etc/swift', '0.0.0.0', '0.0.0.0', 6200, 0,
        6200)
    server = ObjectServerConf({
        'devices': '/d', 'mount_check': 'false', 'bind_ip': '10.0.0.1',
        'bind_port': '6210', 'servers_per_port': '2',
        'recon_cache_path': '/r'})
    assert (server.devices, server.mount_check, server.bind_port,
            server.servers_per_port, server.ring_port,
            server.recon_cache_path) == ('/d', False, 6210, 2, None, '/r')
    queue = QueueConf({}, server_conf={'devices': '/d', 'bind_port': '6210',
                                       'recon_cache_path': '/r'})
    assert (queue.devices, queue.bind_port, queue.ring_port,
            queue.recon_cache_path) == ('/d', 6210, 6210, '/r')
    assert vars(queue.server) == vars(ObjectServerConf(
        {'devices': '/d', 'bind_port': '6210', 'recon_cache_path': '/r'}))


@pytest.mark.parametrize('option, value, allowed', [
    ('bind_port', '0', 'an integer from 1 to 65535'),
    ('bind_port', 'http', 'an integer from 1 to 65535'),
    ('servers_per_port', '-1', 'an integer >= 0'),
])
def test_a_bad_object_server_option_is_named(option, value, allowed):
    message = "[app:object-server] %s = %r is not valid; allowed: %s" % (
        option, value, allowed)
    with pytest.raises(ConfigError) as err:
        ObjectServerConf({option: value})
    assert str(err.value) == message
    with pytest.raises(ConfigError) as err:
        QueueConf({}, server_conf={option: value})
    assert str(err.value) == message


def test_served_here_by_this_hosts_addresses_and_the_servers_port():
    def ips_of(ip):
        return ['10.0.0.1', '127.0.0.1'] if ip == '0.0.0.0' else [ip]
    one = {'ip': '10.0.0.1', 'port': 6200, 'device': 'sdb'}
    other_port = dict(one, port=6206)
    other_host = dict(one, ip='10.0.0.2')
    is_served = served_here('0.0.0.0', 6200, ips_of)
    assert [is_served(d) for d in (one, other_port, other_host)] == [
        True, False, False]
    # servers_per_port: every port of its addresses
    is_served = served_here('10.0.0.1', None, ips_of)
    assert [is_served(d) for d in (one, other_port, other_host)] == [
        True, True, False]
    assert device_name(one) == '10.0.0.1:6200/sdb'


def test_ring_files_of_the_swift_dirs_policies(tmp_path, monkeypatch):
    swift_dir = rings_of_two_servers(tmp_path, monkeypatch)
    policies = load_policies(swift_dir)
    assert [p.name for p in policies] == ['standard', 'fast', 'bulk']
    assert len(list(object_ring_devs(swift_dir, policies))) == 12
    os.unlink(os.path.join(swift_dir, 'object-2.ring.gz'))
    with pytest.raises(IOError):
        list(object_ring_devs(swift_dir, policies))
    errors = []
    assert len(list(object_ring_devs(swift_dir, policies,
                                     errors=errors))) == 8
    (error,) = errors
    assert error.startswith('bulk: cannot read %s: ' % os.path.join(
        swift_dir, 'object-2.ring.gz'))
    with pytest.raises(ValueError, match='cannot read .*swift.conf'):
        load_policies(str(tmp_path / 'none'))
