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
"""tools/saio-slow: the object servers of chosen devices run under a real
blkio throttle, their I/O passes it, the limits survive a restart, and
clearing them puts every process back."""
import os
import re
import subprocess
import uuid

import pytest

from tests.functional.conftest import ROOT, saio

SLOW = os.path.join(ROOT, 'tools', 'saio-slow')
GROUP = '/sys/fs/cgroup/blkio/swift-mass-slow'


def slow(*args):
    return subprocess.run([SLOW] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


def object_server_pids(node):
    out = subprocess.run(
        ['pgrep', '-f', 'object-server /etc/swift/object-server/%d.conf'
         % node], stdout=subprocess.PIPE, text=True).stdout
    return {int(pid) for pid in out.split()}


def throttled_pids():
    with open(os.path.join(GROUP, 'cgroup.procs')) as fp:
        return {int(line) for line in fp if line.strip()}


def writes_seen():
    with open(os.path.join(GROUP, 'blkio.throttle.io_serviced')) as fp:
        return sum(int(line.split()[2]) for line in fp
                   if line.split()[1:2] == ['Write'])


@pytest.fixture
def slowed(cluster):
    if not os.path.exists('/sys/fs/cgroup/blkio/'
                          'blkio.throttle.read_iops_device'):
        result = slow('set', '4', '--write-iops', '200')
        assert result.returncode != 0
        assert 'no cgroup v1 blkio throttle' in result.stdout
        pytest.fail('no blkio v1 here: devices cannot be slowed (the '
                    'refusal was checked)')
    result = slow('set', '3,4', '--write-iops', '200', '--read-iops', '400')
    assert result.returncode == 0, result.stdout
    yield
    assert slow('clear').returncode == 0


def test_slow_devices_are_throttled_for_real(slowed, tenant):
    pids = object_server_pids(3) | object_server_pids(4)
    assert pids and pids <= throttled_pids()
    assert not (object_server_pids(1) | object_server_pids(2)) & \
        throttled_pids()
    status = slow('status').stdout
    assert re.search(r'write_iops +200', status), status
    # objects of policy bulk live on sdb3 and sdb4 only: their fsyncs
    # pass the throttle
    container = 'mass-slow-%s' % uuid.uuid4().hex[:8]
    assert tenant.request('PUT', '/' + container, headers={
        'X-Storage-Policy': 'bulk'}).status_code == 201
    before = writes_seen()
    for i in range(5):
        assert tenant.request('PUT', '/%s/o%d' % (container, i),
                              data=b'x' * 8192).status_code == 201
    assert writes_seen() >= before + 5
    # a restart starts new processes: tools/saio start throttles them too
    assert saio('restart', check=False).returncode == 0
    new = object_server_pids(3) | object_server_pids(4)
    assert new and not new & pids and new <= throttled_pids()
    for i in range(5):
        assert tenant.request('DELETE', '/%s/o%d' % (
            container, i)).status_code == 204
    tenant.request('DELETE', '/' + container)


def test_clear_puts_every_process_back(slowed):
    assert throttled_pids()
    assert slow('clear').returncode == 0
    assert not os.path.exists(GROUP)
    assert 'no device is slowed' in slow('status').stdout
    # the fixture clears again: that must be harmless
    assert slow('set', '2', '--read-iops', '1000').returncode == 0


def test_bad_arguments_are_refused():
    for args, message in ((['set', '5', '--write-iops', '10'],
                           'a list of 1-4'),
                          (['set', '3', '--write-iops', 'fast'],
                           'whole numbers'),
                          (['set', '3'], 'at least one of'),
                          (['sideways'], 'unknown command')):
        result = slow(*args)
        assert result.returncode != 0 and message in result.stdout, args
