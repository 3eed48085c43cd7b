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
"""swift-mass auto-migrate on the SAIO: a tenant the control loop forgot
writes, then reads (classified write, then read with substore fast), and
the daemon moves its container from standard to fast, while the tenant
keeps reading and writing through a proxy with Mass (its writes refused
503 with Retry-After during the move, and retried) and a few times
through one without (8082, which refuses nothing).  Every object written
before and every write acknowledged during the move is there after it,
with its body.  A move the daemon
started and SIGTERM stopped is given back whole by ``swift-mass migrate
abort``.  And tools/saio runs the daemon while ``auto_migrate`` is on.

The daemons here are started on the test's tenant alone (``TENANT``),
AUTH_automove, with a copy of the proxy's config that turns
``auto_migrate`` on: the SAIO's own stays off, so no other test's tenant
moves.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
import requests

from tests.functional.conftest import PROXY, PROXY_CONF, ROOT, SAIO, Tenant
from tests.functional.test_control_loop import wait_for
from tests.functional.test_migrate import (
    Reader, command, listing, q, run_env)

INI = os.path.join(ROOT, 'tools', 'saio.d', 'ini.py')
# the proxy on 8082 runs without the mass filter
PLAIN_PROXY = PROXY.replace(':8080', ':8082')
OBJECTS = 30


@pytest.fixture
def auto_conf(tmp_path):
    """The proxy's config with auto_migrate on: a policy must stand the
    SAIO's window (20 s), a pass each second."""
    path = str(tmp_path / 'proxy-server.conf')
    shutil.copy(PROXY_CONF, path)
    subprocess.run([sys.executable, INI, 'set', path, 'filter:mass',
                    'auto_migrate=true', 'auto_migrate_after=20',
                    'auto_migrate_interval=1', 'auto_migrate_settle=3',
                    'auto_migrate_concurrency=2'], check=True)
    return path


def daemon(conf, account):
    return subprocess.Popen(
        [sys.executable, '-m', 'swift_mass.cli', '--conf', conf,
         'auto-migrate', account, '-v'],
        env=dict(run_env(), PYTHONUNBUFFERED='1'), cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def read_tenant(store, container):
    """AUTH_automove (its own user, used by no other test), forgotten by
    the control loop, with a new container on the default policy: it
    writes OBJECTS objects there (classified write), then reads them
    until it is classified read, with substore fast."""
    tenant = Tenant('automove:client', 'client')
    store.forget([tenant.account], time.time())
    # the loop counts the buckets that start after the mark (the SAIO's
    # are 2 s long)
    time.sleep(2.5)
    assert tenant.request('PUT', '/' + container, headers={
        'X-Storage-Policy': 'standard'}).status_code == 201
    bodies = {}
    for i in range(OBJECTS):
        name = 'before-%02d' % i
        bodies[name] = os.urandom(512) + name.encode()
        assert tenant.request('PUT', '/%s/%s' % (container, name),
                              data=bodies[name]).status_code == 201
    wait_for(store, tenant.account, lambda e: e['class'] == 'write')
    deadline = time.time() + 60
    while time.time() < deadline and (store.get_table()[1].get(
            tenant.account) or {}).get('class') != 'read':
        for name in bodies:
            assert tenant.request('GET', '/%s/%s' % (
                container, name)).status_code == 200
    entry = wait_for(store, tenant.account, lambda e: e['class'] == 'read')
    assert entry['ring'] == 'fast'
    return tenant, bodies


@pytest.fixture
def container(request):
    """A container of AUTH_automove's own, deleted after the test with
    whatever a failed move left (given back by migrate abort first)."""
    name = 'automove-%s' % os.urandom(3).hex()
    yield name
    tenant = Tenant('automove:client', 'client')
    subprocess.run(command('abort', tenant.account, name, '--settle', '0',
                           '--lock-ttl', '6'),
                   env=run_env(), cwd=ROOT, capture_output=True, timeout=300)
    for entry in listing(tenant, name) if tenant.request(
            'HEAD', '/' + name).status_code == 204 else []:
        tenant.request('DELETE', '/%s/%s' % (name, q(entry['name'])))
    tenant.request('DELETE', '/' + name)


class Writer(threading.Thread):
    """The tenant writing new objects all through a move through the proxy
    with Mass, a write refused with 503 tried again after a second until
    it is acknowledged (or the writer is stopped: then it was never
    acknowledged).  Once Mass refused one (the move is under way), the
    next ``PLAIN_WRITES`` go through the proxy without Mass, which refuses
    nothing: a few, as an operator's forgotten proxy would take (a steady
    stream there keeps the copy phase from ever matching the container,
    and the move stops, safely, as test_migrate shows)."""

    PLAIN_WRITES = 3

    def __init__(self, tenant, container):
        super(Writer, self).__init__(daemon=True)
        self.tenant, self.container = tenant, container
        self.acknowledged = {}
        self.refused = []
        self.plain = 0
        self.running = True

    def run(self):
        n = 0
        while self.running:
            n += 1
            name = 'during-%04d' % n
            body = os.urandom(256) + name.encode()
            mass = not (self.refused and self.plain < self.PLAIN_WRITES)
            self.plain += 0 if mass else 1
            # the tenant's storage URL on one proxy or the other
            url = '%s/%s/%s' % (PROXY if mass else PLAIN_PROXY,
                                self.tenant.url[len(PROXY) + 1:],
                                self.container)
            while True:
                resp = requests.put('%s/%s' % (url, name), data=body,
                                    headers={'X-Auth-Token':
                                             self.tenant.token},
                                    timeout=20)
                if resp.status_code == 201:
                    self.acknowledged[name] = body
                    break
                self.refused.append((mass, name, resp.status_code,
                                     resp.headers.get('Retry-After')))
                if not self.running:
                    break
                time.sleep(1)
            time.sleep(0.2)

    def stop(self):
        self.running = False
        self.join(120)


def policy_of(tenant, container):
    resp = tenant.request('HEAD', '/' + q(container))
    return resp.headers.get('X-Storage-Policy')


def moves_left(tenant):
    """The move's own containers (staging, journal) the account holds."""
    return [e['name'] for e in listing(tenant, '')
            if e['name'].startswith('.mass-migrate')]


def moved_whole(tenant, container):
    """Whether ``container`` is in fast and the move's cleanup is done."""
    return policy_of(tenant, container) == 'fast' and not moves_left(tenant)


def test_a_tenant_turned_reader_is_moved_and_keeps_every_write(
        cluster, store, auto_conf, container):
    tenant, bodies = read_tenant(store, container)
    reader = Reader(tenant, container, sorted(bodies))
    writer = Writer(tenant, container)
    reader.start()
    writer.start()
    proc = daemon(auto_conf, tenant.account)
    try:
        deadline = time.time() + 120
        while not moved_whole(tenant, container) and time.time() < deadline:
            time.sleep(0.5)
        moved = moved_whole(tenant, container)
        time.sleep(2)  # writes on both sides of the move's end
    finally:
        writer.stop()
        reader.stop()
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=60)[0]
    assert moved, '%s\npolicy: %r' % (out, store.get_table()[1].get(
        tenant.account))
    assert re.search(r'%s moved \(copied \d+' % container, out), out
    # the writes not taken were refused as a move refuses them, 503 with
    # Retry-After, or answered 404 in the moment the container is deleted
    # and created again, as Swift answers a write to a container that is
    # not there
    assert [r for r in writer.refused if not (
        (r[2] == 503 and r[3]) or r[2] == 404)] == []
    assert writer.acknowledged and writer.plain
    assert reader.missing == []
    expected = dict(bodies, **writer.acknowledged)
    assert sorted(e['name'] for e in listing(tenant, container)) == \
        sorted(expected)
    for name, body in expected.items():
        resp = tenant.request('GET', '/%s/%s' % (container, name))
        assert (resp.status_code, resp.content) == (200, body), name


def test_an_abort_gives_a_stopped_move_back_whole(cluster, store, auto_conf,
                                                  container):
    tenant, bodies = read_tenant(store, container)
    proc = daemon(auto_conf, tenant.account)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if re.search(r'%s: copy \d+/' % container, line):
            # SIGTERM: the move stops as a failed run does
            proc.send_signal(signal.SIGTERM)
            break
    lines += proc.communicate(timeout=60)[0].splitlines(True)
    assert any('phase copy' in line for line in lines), ''.join(lines)
    aborted = subprocess.run(
        command('abort', tenant.account, container, '--settle', '0'),
        env=run_env(), cwd=ROOT, capture_output=True, text=True,
        timeout=300)
    assert aborted.returncode == 0, aborted.stderr
    assert policy_of(tenant, container) == 'standard'
    assert sorted(e['name'] for e in listing(tenant, container)) == \
        sorted(bodies)
    for name, body in bodies.items():
        resp = tenant.request('GET', '/%s/%s' % (container, name))
        assert (resp.status_code, resp.content) == (200, body), name
    # writable again, and nothing of the move is left
    assert tenant.request('PUT', '/%s/after' % container,
                          data=b'x').status_code == 201
    assert moves_left(tenant) == []


def saio_daemon_pid():
    try:
        with open('/var/run/swift/mass-auto-migrate.pid') as f:
            pid = int(f.read())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def test_the_saio_runs_the_daemon_while_auto_migrate_is_on(cluster):
    # a day: nothing any other test left in the table is due
    started = subprocess.run(
        [SAIO, 'mass', 'auto_migrate=true', 'auto_migrate_after=86400'],
        capture_output=True, text=True)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert 'swift-mass auto-migrate runs' in started.stdout
        assert saio_daemon_pid() is not None
    finally:
        stopped = subprocess.run(
            [SAIO, 'mass', 'auto_migrate=false', 'auto_migrate_after=600'],
            capture_output=True, text=True)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert saio_daemon_pid() is None
