"""The SAIO's hetero profile (``tools/saio setup --profile hetero``): an
SSD-class and an HDD-class device on every storage server, each its own
XFS image on its own direct-I/O loop device, the HDD-class ones throttled
in the root blkio group; ``standard`` over all eight by capacity, ``fast``
over the SSD-class and ``bulk`` over the HDD-class devices, 3 replicas
each.  The module brings the profile up and puts the plain one back, as
the project's scripts do for an operator.
"""
import json
import os
import uuid

import pytest
import requests
from swift.common.ring import Ring
from swift.common.utils import readconf

from tests.functional.conftest import PROXY, Tenant, saio

SWIFT_DIR = '/etc/swift'


def devices():
    return json.loads(saio('devices', '--json').stdout)


@pytest.fixture(scope='module')
def hetero(cluster):
    up = saio('setup', '--profile', 'hetero', check=False)
    assert up.returncode == 0, up.stdout
    started = saio('start', check=False)
    try:
        assert started.returncode == 0, started.stdout
        yield Tenant('test:tester', 'testing')
    finally:
        back = saio('setup', '--profile', 'plain', check=False)
        restarted = saio('start', check=False)
        assert back.returncode == 0, back.stdout
        assert restarted.returncode == 0, restarted.stdout


def ring_devices(name):
    ring = Ring(SWIFT_DIR, ring_name=name)
    return [dev for dev in ring.devs if dev]


def test_every_server_has_a_throttled_and_an_unthrottled_device(hetero):
    found = devices()
    assert [(d['server'], d['class']) for d in found] == [
        (n, cls) for n in (1, 2, 3, 4) for cls in ('ssd', 'hdd')]
    for device in found:
        loop = os.path.basename(device['loop'])
        # direct I/O: the host keeps no page cache under the "disk"
        with open('/sys/block/%s/loop/dio' % loop) as fp:
            assert fp.read().strip() == '1', device
        limits = (device['read_iops_limit'], device['write_iops_limit'])
        assert limits == ((150, 150) if device['class'] == 'hdd'
                          else (0, 0)), device
        # each device is a filesystem of its own
        mount = '/srv/%d/node/%s' % (device['server'], device['device'])
        assert os.path.ismount(mount), mount


def test_standard_spans_both_classes_and_each_substore_every_server(
        hetero):
    standard = ring_devices('object')
    assert {d['device'][:3] for d in standard} == {'sdb', 'sdc'}
    # weighted by capacity: the larger HDD-class devices weigh more
    weights = {d['device'][:3]: d['weight'] for d in standard}
    assert weights['sdc'] > weights['sdb']
    for name, prefix in (('object-1', 'sdb'), ('object-2', 'sdc')):
        ring = Ring(SWIFT_DIR, ring_name=name)
        assert ring.replica_count == 3
        devs = ring_devices(name)
        assert {d['device'][:3] for d in devs} == {prefix}
        assert {d['ip'] for d in devs} == {
            '127.0.0.%d' % n for n in (1, 2, 3, 4)}
    # the write substore's writes share their device's flushes
    conf = readconf(os.path.join(SWIFT_DIR, 'swift.conf'))
    assert conf['storage-policy:2']['diskfile_module'] == \
        'egg:swift_mass#replication.group_commit'
    assert 'diskfile_module' not in conf['storage-policy:0']


def test_writes_to_bulk_pass_the_hdd_throttle(hetero):
    # through the proxy without Mass: Mass keeps its substores for the
    # tenants it routes there, and this is about the devices
    def request(method, path, **kwargs):
        headers = dict(kwargs.pop('headers', {}),
                       **{'X-Auth-Token': hetero.token})
        return requests.request(method, '%s/%s' % (
            hetero.url.replace(':8080/', ':8082/'), path),
            headers=headers, timeout=30, **kwargs)
    before = {d['device']: d for d in devices()}
    container = 'hetero-%s' % uuid.uuid4().hex[:8]
    assert request('PUT', container, headers={
        'X-Storage-Policy': 'bulk'}).status_code in (201, 202)
    for i in range(12):
        assert request('PUT', '%s/o%d' % (container, i),
                       data=os.urandom(4096)).status_code == 201
    after = {d['device']: d for d in devices()}
    passed = {name: after[name]['throttle_passed_writes'] -
              before[name]['throttle_passed_writes']
              for name in after if after[name]['class'] == 'hdd'}
    # 12 objects, 3 replicas each, over four HDD-class devices
    assert sum(passed.values()) >= 36, passed
    for i in range(12):
        assert request('GET', '%s/o%d' % (container, i)).status_code == 200


def test_each_device_has_an_object_server_process_of_its_own(hetero):
    for n in (1, 2, 3, 4):
        for port in (6200 + 10 * n, 6206 + 10 * n):
            assert requests.get('http://127.0.0.%d:%d/healthcheck' % (
                n, port), timeout=5).status_code == 200
    assert requests.get(PROXY + '/healthcheck', timeout=5).ok
