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
"""Fixtures for tests against the SAIO that tools/saio sets up.

The session fixture starts the SAIO (``tools/saio start``) when it is not
already answering, so ``pytest tests/functional`` works on a machine where
``tools/saio setup`` has run.
"""
import os
import socket
import subprocess
import time

import pytest
import requests
from swiftclient.client import get_auth

from swift_mass.cli import control

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SAIO = os.path.join(ROOT, 'tools', 'saio')
PROXY = 'http://127.0.0.1:8080'
PROXY_CONF = '/etc/swift/proxy-server.conf'
# tools/saio points the Mass filters' statsd at this address.
STATSD = ('127.0.0.1', 8125)


def saio(*args, check=True):
    return subprocess.run([SAIO] + list(args), check=check,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)


@pytest.fixture(scope='session')
def cluster():
    """The SAIO's proxy, once every server, memcached and Redis answer:
    started if need be, and every test fails naming what is down if it
    cannot be (never a skip)."""
    if saio('status', check=False).returncode == 0:
        return PROXY
    started = saio('start', check=False)
    status = saio('status', check=False)
    if status.returncode != 0:
        # status names each server, memcached and Redis, up or DOWN
        pytest.fail('the SAIO is not up after tools/saio start:\n%s\n'
                    'tools/saio start said:\n%s'
                    % (status.stdout, started.stdout))
    return PROXY


class Tenant(object):
    """An authenticated tempauth user and its storage URL."""

    def __init__(self, user, key):
        self.url, self.token = get_auth(PROXY + '/auth/v1.0', user, key,
                                        timeout=10)
        self.account = self.url.rsplit('/', 1)[1]

    def request(self, method, path='', headers=None, **kwargs):
        headers = dict(headers or {}, **{'X-Auth-Token': self.token})
        kwargs.setdefault('timeout', 20)
        return requests.request(method, self.url + path, headers=headers,
                                **kwargs)


@pytest.fixture(scope='session')
def tenant(cluster):
    return Tenant('test:tester', 'testing')


@pytest.fixture(scope='session')
def tenant2(cluster):
    return Tenant('test2:tester2', 'testing2')


@pytest.fixture
def container(tenant, request):
    name = 'mass-func-%s-%s' % (request.node.name[:40], os.urandom(4).hex())
    name = ''.join(c if c.isalnum() or c in '-_' else '_' for c in name)
    assert tenant.request('PUT', '/' + name).status_code in (201, 202)
    yield name
    listing = tenant.request('GET', '/' + name, params={'format': 'json'})
    for obj in listing.json() if listing.status_code == 200 else []:
        tenant.request('DELETE', '/%s/%s' % (name, obj['name']))
    tenant.request('DELETE', '/' + name)


@pytest.fixture(scope='session')
def store(cluster):
    """The shared store the SAIO's proxies use (Redis), as swift-mass
    reads it."""
    _, primary, _ = control.load(PROXY_CONF)
    return primary


class StatsdListener(object):
    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(STATSD)
        self.sock.settimeout(0.2)

    def metrics(self, wait=1.5, limit=30.0):
        """Counter names received until nothing arrives for `wait` seconds
        (or for `limit` seconds in all, under a steady load)."""
        names = []
        deadline = time.time() + wait
        end = time.time() + limit
        while time.time() < min(deadline, end):
            try:
                data = self.sock.recv(65535).decode()
            except socket.timeout:
                continue
            for line in data.splitlines():
                names.append(line.split(':', 1)[0])
                deadline = time.time() + wait
        return names

    def close(self):
        self.sock.close()


@pytest.fixture
def statsd(cluster):
    try:
        listener = StatsdListener()
    except OSError as err:
        pytest.fail('cannot listen on %s:%d for statsd: %s' % (
            STATSD + (err,)))
    yield listener
    listener.close()
