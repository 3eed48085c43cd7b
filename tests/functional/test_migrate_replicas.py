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
"""``swift-mass migrate`` and a container replica that missed object
updates, on the SAIO: container server N is stopped while the container's
objects are deleted, so its listing keeps their rows (no object-updater
runs on the SAIO until the test runs one).  Swift's proxy takes the
container's DELETE with the other two replicas, and the PUT that makes it
again in another policy too, and that replica would keep it in the old
policy (the fault schedules met this: objects written through proxies
whose lookups reached it were written and read in the old policy).  The
move must wait until every replica is empty, and leave every replica in
the new policy."""
import re
import subprocess
import time

import requests
from swift.common import direct_client
from swift.common.ring import Ring

from tests.functional.conftest import ROOT, Tenant
from tests.functional.test_migrate import OPERATOR_USER, command, run_env, moved  # noqa: F401,E501 (fixture)

SWIFT_DIR = '/etc/swift'
OBJECTS = 100


def container_server(command_, number, check=True):
    subprocess.run(['swift-init', 'container-server.%d' % number, command_],
                   check=check, stdout=subprocess.DEVNULL)


def replicas(account, container):
    """(device, policy index, object count) of each primary."""
    ring = Ring(SWIFT_DIR, ring_name='container')
    part, nodes = ring.get_nodes(account, container)
    found = []
    for node in nodes:
        headers = direct_client.direct_head_container(
            node, part, account, container)
        found.append((node['device'],
                      int(headers['x-backend-storage-policy-index']),
                      int(headers['x-container-object-count'])))
    return found


def test_a_move_waits_for_a_replica_that_missed_its_objects_deletes(
        tenant, moved):  # noqa: F811
    """Container server N is stopped as the move starts emptying the
    container, so the deletes of its objects reach the other replicas
    only; it starts again with their rows, and an object-updater brings
    them some seconds later."""
    container, _ = moved
    names = ['o%03d' % i for i in range(OBJECTS)]
    for name in names:
        assert tenant.request('PUT', '/%s/%s' % (container, name),
                              data=b'x').status_code == 201
    ring = Ring(SWIFT_DIR, ring_name='container')
    _, nodes = ring.get_nodes(tenant.account, container)
    behind = nodes[-1]
    number = behind['port'] // 10 % 10  # tools/saio: 62N1
    started = time.time()
    proc = subprocess.Popen(
        command('run', tenant.account, container, '--policy', 'bulk',
                '--settle', '0'),
        env=run_env(), cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line)
            if re.search(r': copy %d/%d' % (OBJECTS, OBJECTS), line):
                break  # the copy is verified: emptying begins
        container_server('stop', number)
        try:
            time.sleep(4)
        finally:
            container_server('start', number)
        time.sleep(4)
        subprocess.run(['swift-init', 'object-updater', 'once'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lines.extend(proc.stderr)
        assert proc.wait(timeout=300) == 0, ''.join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
        container_server('start', number, check=False)  # if it is not
    after = replicas(tenant.account, container)
    print('the move took %.0f s; replicas after it (device, policy, '
          'objects): %s' % (time.time() - started, after))
    # every replica in bulk (policy 2 on the SAIO), none left in standard
    assert {policy for _, policy, _ in after} == {2}, (after, lines)
    assert tenant.request('HEAD', '/' + container).headers[
        'X-Storage-Policy'] == 'bulk'
    listed = tenant.request('GET', '/' + container, params={
        'format': 'json'}).json()
    assert sorted(e['name'] for e in listed) == names


def test_a_reseller_admin_reads_the_union_of_the_replicas_listings(
        tenant, moved):  # noqa: F811
    """The rows of objects deleted while container server N was down stay
    in its listing alone: the union of every replica's listing shows
    them, a page at a time after the marker, with each replica's count,
    through slo, symlink and listing_formats; the tenant's own GET with
    the header is Swift's listing."""
    container, _ = moved
    for name in ('a', 'b', 'c'):
        assert tenant.request('PUT', '/%s/%s' % (container, name),
                              data=b'x').status_code == 201
    ring = Ring(SWIFT_DIR, ring_name='container')
    _, nodes = ring.get_nodes(tenant.account, container)
    number = nodes[-1]['port'] // 10 % 10  # tools/saio: 62N1
    container_server('stop', number)
    try:
        for name in ('a', 'b'):
            assert tenant.request('DELETE', '/%s/%s' % (
                container, name)).status_code == 204
    finally:
        container_server('start', number)
    admin = Tenant(*OPERATOR_USER)
    ask = {'X-Auth-Token': admin.token, 'X-Mass-Replicas': 'true'}
    url = '%s/%s' % (tenant.url, container)

    def union(**params):
        resp = requests.get(url, headers=ask, timeout=20,
                            params=dict(params, format='json'))
        assert resp.status_code == 200, resp.text
        return resp
    resp = union()
    assert [e['name'] for e in resp.json()] == ['a', 'b', 'c']
    assert [resp.headers['X-Mass-Replica-%d' % i].split()[:2]
            for i in range(3)] == [['200', '1'], ['200', '1'], ['200', '3']]
    assert [e['name'] for e in union(marker='a', limit='1').json()] == ['b']
    # anyone else's header is dropped: Swift's own listing, of one replica
    mine = tenant.request('GET', '/' + container, headers={
        'X-Mass-Replicas': 'true'}, params={'format': 'json'})
    assert mine.status_code == 200
    assert not any(k.startswith('X-Mass-Replica') for k in mine.headers)
    assert [e['name'] for e in mine.json()][-1] == 'c'
