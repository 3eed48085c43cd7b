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
"""mass_queue on the SAIO's object servers: a noisy tenant saturating
writes while an urgent tenant reads, a device saturated on purpose, and
slots that come back when the load (or a client) goes away.

tools/saio.d/object-server.conf.in gives each device 8 slots (4 reserved
for the urgent tenant AUTH_dbdump while it is active), a 4 s deadline and
Retry-After: 1.  Latency comparisons (with and without mass_queue) are a
benchmark's business; these tests assert correctness.
"""
import socket
import threading
import time
import uuid
from urllib.parse import quote

import pytest
import requests

from swift.common.storage_policy import POLICIES

from mass_bench.summary import percentile
from tests.functional.conftest import Tenant
from tests.functional.waiting import until

SWIFT_DIR = '/etc/swift'
OBJECT_SERVERS = [('127.0.0.%d' % n, 6200 + 10 * n) for n in (1, 2, 3, 4)]
SETTLE = 10.0   # s: backend requests that outlive their client request


def queue_state(ip, port):
    resp = requests.get('http://%s:%d/mass_queue' % (ip, port), timeout=5)
    resp.raise_for_status()
    return resp.json()


@pytest.fixture(scope='module')
def object_servers(cluster):
    try:
        states = [queue_state(ip, port) for ip, port in OBJECT_SERVERS]
    except (requests.RequestException, ValueError) as err:
        pytest.fail('mass_queue is not in the object servers\' pipelines '
                    '(tools/saio pipeline with): %s' % err)
    if not all(state['slots_per_device'] for state in states):
        pytest.fail('the per-device queue is off (slots_per_device = 0)')
    return states


def total(counter):
    return sum(queue[counter] for ip, port in OBJECT_SERVERS
               for queue in queue_state(ip, port)['devices'].values())


def wait_until_idle(limit=SETTLE):
    """Every device's queue empty with no slot in use; the states."""
    end = time.time() + limit
    while True:
        states = dict(((ip, port), queue_state(ip, port))
                      for ip, port in OBJECT_SERVERS)
        busy = dict((node, device) for node, state in states.items()
                    for device, queue in state['devices'].items()
                    if queue['slots_in_use'] or queue['batch_slots_in_use']
                    or queue['waiting'])
        if not busy or time.time() > end:
            return states, busy
        time.sleep(0.2)


def wait_until_shared(ip, port, device, limit=SETTLE):
    end = time.time() + limit
    while time.time() < end:
        queue = queue_state(ip, port)['devices'].get(device)
        if queue is None or queue['mode'] == 'shared':
            return True
        time.sleep(0.2)
    return False


def make_container(tenant, policy='standard'):
    name = 'mass-queue-%s' % uuid.uuid4().hex[:8]
    resp = tenant.request('PUT', '/' + name,
                          headers={'X-Storage-Policy': policy})
    assert resp.status_code in (201, 202), resp.text
    return name


def remove_container(tenant, name):
    listing = tenant.request('GET', '/' + name, params={'format': 'json'})
    for obj in listing.json() if listing.status_code == 200 else []:
        tenant.request('DELETE', '/%s/%s' % (name, obj['name']))
    tenant.request('DELETE', '/' + name)


class Client(threading.Thread):
    """Repeats one kind of request until stopped, keeping each answer's
    status, Retry-After and latency."""

    def __init__(self, tenant, method, path_of, body=None):
        super().__init__(daemon=True)
        self.tenant, self.method, self.path_of = tenant, method, path_of
        self.body = body
        self.stopping = threading.Event()
        self.results = []     # (status, retry_after, seconds)
        self.errors = []

    def run(self):
        session = requests.Session()
        headers = {'X-Auth-Token': self.tenant.token}
        count = 0
        while not self.stopping.is_set():
            start = time.time()
            try:
                resp = session.request(
                    self.method, self.tenant.url + self.path_of(count),
                    headers=headers, data=self.body, timeout=30)
            except requests.RequestException as err:
                self.errors.append(repr(err))
                session = requests.Session()
                continue
            self.results.append((resp.status_code,
                                 resp.headers.get('Retry-After'),
                                 time.time() - start))
            count += 1


def test_noisy_writer_and_urgent_reader(object_servers):
    noisy = Tenant('backup:job', 'job')
    urgent = Tenant('dbdump:dump', 'dump')
    noisy_container = make_container(noisy)
    urgent_container = make_container(urgent)
    try:
        resp = urgent.request('PUT', '/%s/hot' % urgent_container,
                              data=b'p' * 4096)
        assert resp.status_code == 201
        admitted_before = total('admitted')
        waited_before = total('admitted_after_wait')
        body = b'w' * 8192
        writers = [Client(noisy, 'PUT', lambda n, w=w: '/%s/w%d-%d' % (
            noisy_container, w, n), body) for w in range(16)]
        readers = [Client(urgent, 'GET',
                          lambda n: '/%s/hot' % urgent_container)
                   for _ in range(2)]
        for client in writers + readers:
            client.start()
        # the urgent tenant's devices keep slots for it while it reads
        until(lambda: any(
            queue['mode'] == 'isolated' and queue['reserved_slots'] > 0
            for ip, port in OBJECT_SERVERS
            for queue in queue_state(ip, port)['devices'].values()),
            15, 'a device keeps slots for the urgent tenant')
        # the load runs on until every writer has progressed: a starved
        # one fails here; how fast they go is a speed, not tested
        loaded = time.time() + 4
        until(lambda: time.time() > loaded and all(
            sum(status == 201 for status, _, _ in list(w.results)) >= 2
            for w in writers), 90, 'every noisy writer created objects')
        for client in writers + readers:
            client.stopping.set()
        for client in writers + readers:
            client.join(60)
        writes = [r for c in writers for r in c.results]
        reads = [r for c in readers for r in c.results]
        assert [e for c in writers + readers for e in c.errors] == []
        # Nothing fails but for the documented 503s (a quorum of object
        # servers refused after their deadline)...
        assert set(status for status, _, _ in writes) <= {201, 503}
        assert set(status for status, _, _ in reads) <= {200, 503}
        # ... and everyone progresses: the noisy tenant too
        created = sum(status == 201 for status, _, _ in writes)
        assert created >= 2 * len(writers), created
        served = [seconds for status, _, seconds in reads if status == 200]
        assert len(served) >= 0.9 * len(reads) > 0
        print('\nnoisy PUTs: %d (201: %d), urgent GETs: %d (200: %d), '
              'urgent GET p50 %.3f s p99 %.3f s'
              % (len(writes), created, len(reads), len(served),
                 percentile(served, 0.5), percentile(served, 0.99)))
        # Slots are released: after the load every queue drains, and the
        # devices the load went through counted its requests.
        states, busy = wait_until_idle()
        assert busy == {}
        # each object written on a quorum (2 of 3 replicas) at least, and
        # the load did saturate devices: requests had to wait for slots
        assert total('admitted') - admitted_before >= 2 * created
        assert total('admitted_after_wait') > waited_before
        # ... and a new request is admitted at once
        start = time.time()
        resp = urgent.request('GET', '/%s/hot' % urgent_container)
        assert resp.status_code == 200
        assert time.time() - start < 1.0
    finally:
        remove_container(noisy, noisy_container)
        remove_container(urgent, urgent_container)


def open_held_get(ip, port, device, partition, path, policy_index):
    """A GET straight to an object server whose client reads only the
    status line: the server blocks sending the body and keeps its slot."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect((ip, port))
    sock.sendall(('GET /%s/%d%s HTTP/1.1\r\nHost: %s\r\n'
                  'X-Backend-Storage-Policy-Index: %d\r\n\r\n'
                  % (device, partition, quote(path), ip, policy_index)
                  ).encode('ascii'))
    status = sock.recv(12)
    assert status.startswith(b'HTTP/1.1 200'), status
    return sock


def test_saturated_device_answers_503_retry_after_and_recovers(
        object_servers, tenant, container, statsd):
    obj = 'big'
    resp = tenant.request('PUT', '/%s/%s' % (container, obj),
                          data=b'b' * (16 * 1024 * 1024))
    assert resp.status_code == 201
    policy_name = tenant.request('HEAD', '/' + container).headers[
        'X-Storage-Policy']
    policy = POLICIES.get_by_name(policy_name)
    policy.load_ring(SWIFT_DIR)
    partition, nodes = policy.object_ring.get_nodes(
        tenant.account, container, obj)
    node = nodes[0]
    ip, port, device = node['ip'], node['port'], node['device']
    path = '/%s/%s/%s' % (tenant.account, container, obj)
    state = queue_state(ip, port)
    slots, deadline = state['slots_per_device'], state['deadline']
    # an urgent tenant active a moment ago would leave fewer slots to us
    assert wait_until_shared(ip, port, device)
    # and an earlier test's refusals, less of the minute's budget: past it
    # the device admits over its slots instead of answering 503
    until(lambda: queue_state(ip, port)['devices'].get(device, {}).get(
        'refusals_left', 1) > 0, 70, 'the device may refuse again')
    held = []
    try:
        for _ in range(slots):
            held.append(open_held_get(ip, port, device, partition, path,
                                      int(policy)))
        queue = queue_state(ip, port)['devices'][device]
        assert queue['slots_in_use'] == slots
        start = time.time()
        resp = requests.head(
            'http://%s:%d/%s/%d%s' % (ip, port, device, partition,
                                      quote(path)),
            headers={'X-Backend-Storage-Policy-Index': str(int(policy))},
            timeout=deadline + 5)
        waited = time.time() - start
        assert resp.status_code == 503
        assert resp.headers['Retry-After'] == '1'
        assert deadline * 0.8 <= waited < deadline + 2
    finally:
        for sock in held:
            sock.close()
    # The server notices the gone clients when sending fails: the slots
    # come back without any request completing normally.
    states, busy = wait_until_idle()
    assert busy == {}
    start = time.time()
    resp = requests.head(
        'http://%s:%d/%s/%d%s' % (ip, port, device, partition, quote(path)),
        headers={'X-Backend-Storage-Policy-Index': str(int(policy))},
        timeout=deadline + 5)
    assert resp.status_code == 200
    assert time.time() - start < 1.0
    metrics = set(statsd.metrics())
    assert 'mass_queue.queue.refused' in metrics
    assert 'mass_queue.queue.wait.5' in metrics
