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
"""The devices a host serves, probed into the classes file
(swift_mass.devices.host), over real rings and configs in a temporary
swift_dir."""
import os

import pytest

from swift_mass.conf import ConfigError
from swift_mass.devices import classes, host
from tests.unit.devices import hetero
from tests.unit.devices.test_classes import figures


def test_served_devices_as_swift_decides():
    ring = {classes.device_key(d): d for d in [
        {'ip': '10.0.0.1', 'port': 6200, 'device': 'sdb'},
        {'ip': '10.0.0.1', 'port': 6206, 'device': 'sdc'},
        {'ip': '10.0.0.2', 'port': 6200, 'device': 'sdb'}]}

    def ips_of(ip):
        return ['10.0.0.1', '127.0.0.1'] if ip == '0.0.0.0' else [ip]
    # one server on its port only
    found = host.served_devices(ring, [
        {'devices': '/srv/node', 'bind_ip': '0.0.0.0', 'bind_port': '6200',
         '__file__': 'o.conf'}], ips_of)
    assert found == [{'device': '10.0.0.1:6200/sdb',
                      'path': '/srv/node/sdb', 'conf': 'o.conf'}]
    # servers_per_port: every port of its IPs
    found = host.served_devices(ring, [
        {'devices': '/d', 'bind_ip': '10.0.0.1', 'servers_per_port': '2'}],
        ips_of)
    assert [(f['device'], f['path']) for f in found] == [
        ('10.0.0.1:6200/sdb', '/d/sdb'), ('10.0.0.1:6206/sdc', '/d/sdc')]
    # the SAIO: one config per server, each its own devices dir; ring_ip
    # before bind_ip; a device is the first config's
    found = host.served_devices(ring, [
        {'devices': '/srv/1/node', 'bind_ip': '10.0.0.1',
         'bind_port': '6206'},
        {'devices': '/srv/2/node', 'bind_ip': '0.0.0.0',
         'ring_ip': '10.0.0.2', 'bind_port': '6200'},
        {'devices': '/srv/9/node', 'bind_ip': '10.0.0.1',
         'servers_per_port': '1'}], ips_of)
    assert [(f['device'], f['path']) for f in found] == [
        ('10.0.0.1:6206/sdc', '/srv/1/node/sdc'),
        ('10.0.0.2:6200/sdb', '/srv/2/node/sdb'),
        ('10.0.0.1:6200/sdb', '/srv/9/node/sdb')]


def test_a_bad_server_option_names_its_file_and_the_allowed_values():
    # the object server's options are read as mass_queue reads them
    # (swift_mass.conf.ObjectServerConf): a bad bind_port was a bare
    # "invalid literal for int()"
    with pytest.raises(ConfigError) as err:
        host.served_devices({}, [{'bind_port': 'x', '__file__': 'o.conf'}])
    assert str(err.value) == "o.conf: [app:object-server] bind_port = " \
        "'x' is not valid; allowed: an integer from 1 to 65535"


@pytest.fixture
def cluster(tmp_path):
    return hetero.cluster(tmp_path)


def fake_prober(calls):
    def prober(path, seconds, max_bytes):
        calls.append((path, seconds, max_bytes))
        # sdb: an SSD, sdc: a disk
        return figures(8000 if os.path.basename(path).startswith('sdb')
                       else 300)
    return prober


def test_probe_here_probes_the_devices_served_and_merges(cluster):
    calls = []
    # this host runs the object servers of 127.0.0.1 and 127.0.0.2
    confs = [os.path.join(cluster, 'object-server', '%d.conf' % n)
             for n in (1, 2)]
    result = host.probe_here(cluster, conf_paths=confs, seconds=0.5,
                             max_bytes=8192, prober=fake_prober(calls))
    assert result['errors'] == [] and result['written']
    root = os.path.dirname(cluster)
    assert calls == [(os.path.join(root, 'srv/1/node', d), 0.5, 8192)
                     for d in ('sdb1', 'sdc1')] + \
        [(os.path.join(root, 'srv/2/node', d), 0.5, 8192)
         for d in ('sdb2', 'sdc2')]
    assert [(d['device'], d['class']) for d in result['devices']] == [
        ('127.0.0.1:6210/sdb1', 'fast'), ('127.0.0.1:6216/sdc1', 'slow'),
        ('127.0.0.2:6220/sdb2', 'fast'), ('127.0.0.2:6226/sdc2', 'slow')]
    path = os.path.join(cluster, 'mass-devices.json')
    assert result['classes_file'] == path
    # the other host, other thresholds: all eight classified with them
    confs = [os.path.join(cluster, 'object-server', '%d.conf' % n)
             for n in (3, 4)]
    result = host.probe_here(cluster, conf_paths=confs,
                             thresholds=[200, 1000],
                             names=['disk', 'hybrid', 'ssd'],
                             prober=fake_prober(calls))
    data = classes.load_classes(path)
    assert data['thresholds'] == [200, 1000]
    assert sorted(data['devices']) == sorted(
        classes.object_ring_devices(cluster)[0])
    assert {e['class'] for e in data['devices'].values()} == {'hybrid',
                                                              'ssd'}


def test_probe_here_errors_dry_run_and_only(cluster):
    calls = []
    root = os.path.dirname(cluster)
    os.rmdir(os.path.join(root, 'srv/1/node/sdc1/tmp'))
    os.rmdir(os.path.join(root, 'srv/1/node/sdc1'))
    conf = [os.path.join(cluster, 'object-server', '1.conf')]
    result = host.probe_here(cluster, conf_paths=conf, dry_run=True,
                             prober=fake_prober(calls))
    assert calls == [] and not result['written']
    assert not os.path.exists(os.path.join(cluster, 'mass-devices.json'))
    assert result['errors'] == [
        '127.0.0.1:6216/sdc1: not mounted: %s is not a directory'
        % os.path.join(root, 'srv/1/node/sdc1')]
    result = host.probe_here(cluster, conf_paths=conf,
                             only=['127.0.0.1:6210/sdb1'],
                             prober=fake_prober(calls))
    assert result['errors'] == [] and len(calls) == 1
    with pytest.raises(ValueError) as caught:
        host.probe_here(cluster, conf_paths=conf,
                        only=['127.0.0.2:6220/sdb2'])
    assert str(caught.value) == (
        '--device 127.0.0.2:6220/sdb2 is not valid; allowed: the devices '
        'served here: 127.0.0.1:6210/sdb1, 127.0.0.1:6216/sdc1')

    def failing(path, seconds, max_bytes):
        raise OSError(28, 'No space left on device')
    result = host.probe_here(cluster, conf_paths=conf,
                             only=['127.0.0.1:6210/sdb1'],
                             prober=failing)
    assert result['errors'] == [
        '127.0.0.1:6210/sdb1: OSError: [Errno 28] No space left on device']


def test_probe_here_refuses_before_probing(cluster):
    with pytest.raises(ValueError, match='--seconds 100 is not valid'):
        host.probe_here(cluster, seconds=100)
    with pytest.raises(ValueError, match='--names a is not valid'):
        host.probe_here(cluster, thresholds=[5], names=['a'])
    os.rename(os.path.join(cluster, 'object-server'),
              os.path.join(cluster, 'elsewhere'))
    with pytest.raises(ValueError, match='no object-server config in'):
        host.probe_here(cluster)
