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
"""swift-mass queue on the SAIO: the four object servers of its rings, each
with its device, read over HTTP."""
import json
import os
import subprocess
import sys

import pytest

from swift_mass.cli import main as cli, queue as queue_status

from tests.functional.conftest import ROOT
from tests.functional.test_queue import make_container, remove_container

SWIFT_DIR = '/etc/swift'
# tools/saio: server n is 127.0.0.n:62n0 with device sdbn, in every ring
OBJECT_SERVERS = dict(('127.0.0.%d:62%d0' % (n, n), 'sdb%d' % n)
                      for n in (1, 2, 3, 4))


@pytest.fixture(scope='module')
def with_mass_queue(cluster):
    answers = queue_status.fetch(queue_status.object_servers(SWIFT_DIR))
    missing = [answer for answer in answers.values()
               if not isinstance(answer, dict) and
               'not in its pipeline' in answer]
    if missing:
        pytest.fail('mass_queue is not in the object servers\' pipelines '
                    '(tools/saio pipeline with): %s' % missing[0])


@pytest.fixture
def traffic(with_mass_queue, tenant):
    """Objects PUT and read back: every device queued some requests (3
    replicas of each over the 4 devices; the policy is named, since Mass
    may route the tenant's new containers to a 2-device substore)."""
    container = make_container(tenant, 'standard')
    try:
        for n in range(12):
            path = '/%s/o%d' % (container, n)
            assert tenant.request('PUT', path, data=b'x').status_code == 201
            assert tenant.request('GET', path).status_code == 200
        yield
    finally:
        remove_container(tenant, container)


def test_every_object_server_and_its_device(traffic, capsys):
    status = cli.main(['queue', '--swift-dir', SWIFT_DIR, '--json'])
    out, err = capsys.readouterr()
    assert (status, err) == (0, '')
    result = json.loads(out)
    assert result['errors'] == []
    rows = dict((row['server'], row) for row in result['servers'])
    assert sorted(rows) == sorted(OBJECT_SERVERS)
    for server, device in OBJECT_SERVERS.items():
        row = rows[server]
        assert list(row['devices']) == [device]
        assert row['no_queue_yet'] == []
        stats = row['devices'][device]
        assert stats['slots'] >= 1 and stats['admitted'] >= 1
    totals = result['totals']
    assert (totals['servers'], totals['servers_read'],
            totals['devices']) == (4, 4, 4)
    # 12 PUTs and 12 GETs, at least one replica each, and more in flight
    # from other clients of the SAIO
    assert totals['admitted'] >= 24


def test_the_command_as_operators_run_it(traffic):
    result = subprocess.run(
        [sys.executable, '-m', 'swift_mass.cli', 'queue'], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        timeout=60, env=dict(os.environ, PYTHONWARNINGS='ignore'))
    assert (result.returncode, result.stderr) == (0, '')
    lines = result.stdout.splitlines()
    assert lines[0].split()[:2] == ['server', 'device']
    rows = [line.split() for line in lines[1:9]]
    assert sorted(row[:2] for row in rows if row[1] != 'mode') == sorted(
        [server, device] for server, device in OBJECT_SERVERS.items())
    # each server says how many of its workers reported
    assert sorted(row[0] for row in rows if row[1] == 'mode') == sorted(
        OBJECT_SERVERS)
    assert all('reported' in ' '.join(row) for row in rows
               if row[1] == 'mode')
    assert '4 of 4 object servers read' in lines
    assert lines[-1].startswith('note: figures are per object-server worker')
