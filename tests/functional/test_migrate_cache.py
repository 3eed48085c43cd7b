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
"""A move keeps the proxies' cached bodies, and serves none that a client
replaced during it (docs/cache.md, "A move keeps cached bodies"), on the
SAIO: a cache tenant's container, its bodies cached in both proxies, is
moved by ``swift-mass migrate``; in the empty phase and after the move its
reader's GETs are hits with the same bodies, while an overwrite, a POST
and a DELETE made through the proxy without the mass filter during the
move are what every reader gets."""
import os
import re
import signal
import subprocess

import pytest
import requests

from tests.functional.conftest import PROXY, ROOT, Tenant
from tests.functional.test_cache import (
    PROXIES, Client, generations_trusted, pin, wait_for_method)
from tests.functional.test_migrate import (
    command, listing, q, run_env, run_with, without_mass)

OBJECTS = 20
CHANGED = ('zz-deleted', 'zz-posted', 'zz-replaced')


@pytest.fixture
def moved(store):
    """AUTH_cachemove (its own user, used by no other test) pinned to
    cache, with a new container on policy standard; given back and
    deleted after the test."""
    generations_trusted(store)
    tenant = Tenant('cachemove:reader', 'reader')
    container = 'cached-%s' % os.urandom(3).hex()
    assert tenant.request('PUT', '/' + container, headers={
        'X-Storage-Policy': 'standard'}).status_code == 201
    pin(tenant.account, 'cache')
    admin = Tenant('admin:admin', 'admin')
    wait_for_method(Client(admin, tenant.account, container), 'cache')
    yield tenant, container
    subprocess.run(command('abort', tenant.account, container, '--settle',
                           '0', '--lock-ttl', '6'),
                   env=run_env(), cwd=ROOT, capture_output=True, timeout=300)
    for entry in listing(tenant, container):
        tenant.request('DELETE', '/%s/%s' % (container, q(entry['name'])))
    tenant.request('DELETE', '/' + container)
    store.delete_pin(tenant.account)


def read(tenant, proxy, container, name):
    """(status, body, X-Mass-Cache) of the reader's GET through ``proxy``."""
    resp = requests.get('%s/%s/%s' % (tenant.url.replace(PROXY, proxy),
                                      q(container), q(name)),
                        headers={'X-Auth-Token': tenant.token}, timeout=20)
    return resp.status_code, resp.content, resp.headers.get('X-Mass-Cache')


def cached_everywhere(tenant, container, name):
    for proxy in PROXIES:
        for _ in range(5):
            if read(tenant, proxy, container, name)[2] == 'hit':
                break
        else:
            pytest.fail('no hit for %s through %s' % (name, proxy))


def test_a_move_keeps_cached_bodies_and_serves_none_replaced(moved):
    tenant, container = moved
    names = ['o-%02d' % i for i in range(OBJECTS)]
    for name in names + list(CHANGED):
        assert tenant.request('PUT', '/%s/%s' % (container, name),
                              data=b'old ' + name.encode()
                              ).status_code == 201
    for name in names + list(CHANGED):
        cached_everywhere(tenant, container, name)
    proc = run_with(tenant.account, container, '--settle', '1',
                    '--concurrency', '1')
    during = {}
    lines = []
    for line in proc.stderr:
        lines.append(line)
        emptied = re.search(r': empty (\d+)/', line)
        if emptied and int(emptied.group(1)) >= 5 and not during:
            # the move deleted o-00.. in C already, and not the zz- ones
            proc.send_signal(signal.SIGSTOP)
            try:
                during['answers'] = [
                    without_mass(tenant, 'PUT', container, 'zz-replaced',
                                 data=b'new zz-replaced').status_code,
                    without_mass(tenant, 'POST', container, 'zz-posted',
                                 headers={'X-Object-Meta-Posted': 'yes'}
                                 ).status_code,
                    without_mass(tenant, 'DELETE', container,
                                 'zz-deleted').status_code]
                during['reads'] = {
                    (proxy, name): read(tenant, proxy, container, name)
                    for proxy in PROXIES for name in names + list(CHANGED)}
            finally:
                proc.send_signal(signal.SIGCONT)
    proc.wait()
    err = ''.join(lines)
    assert proc.returncode == 0, err
    assert during['answers'] == [201, 202, 204], err
    for (proxy, name), (status, body, cache) in during['reads'].items():
        if name == 'zz-replaced':
            assert (status, body) == (200, b'new zz-replaced'), proxy
        elif name == 'zz-deleted':
            assert status == 404, proxy
        elif name == 'zz-posted':
            # its POST was bumped: a miss, then cached again
            assert (status, body) == (200, b'old zz-posted'), proxy
        else:
            # o-00.. were deleted from C by now: a hit all the same
            assert (status, body, cache) == (
                200, b'old ' + name.encode(), 'hit'), (proxy, name)
    assert tenant.request('HEAD', '/' + container).headers[
        'X-Storage-Policy'] == 'bulk'
    for proxy in PROXIES:
        assert read(tenant, proxy, container, 'zz-posted')[:2] == (
            200, b'old zz-posted')
        for name in names:
            # the first read after the move: the body cached before it
            assert read(tenant, proxy, container, name) == (
                200, b'old ' + name.encode(), 'hit'), (proxy, name)
        assert read(tenant, proxy, container, 'zz-replaced')[:2] == (
            200, b'new zz-replaced')
        assert read(tenant, proxy, container, 'zz-deleted')[0] == 404
    assert tenant.request('HEAD', '/%s/zz-posted' % container).headers[
        'X-Object-Meta-Posted'] == 'yes'
