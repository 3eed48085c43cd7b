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
"""Mass in a real SAIO pipeline: requests work, tags cannot be forged."""
import hashlib
import types
import uuid

import pytest
import requests

from tests.functional.conftest import PROXY, Tenant
from tests.functional.ungated import pipeline_without_gatekeeper, request
OBJECT_SERVERS = ['http://127.0.0.%d:62%d0' % (n, n) for n in (1, 2, 3, 4)]


def test_info_lists_mass(cluster):
    info = requests.get(PROXY + '/info', timeout=10).json()
    assert info['mass']['default_priority'] == 5
    names = {p['name'] for p in info['swift']['policies']}
    assert {'standard', 'fast', 'bulk'} <= names


def test_object_round_trip(tenant, container):
    body = uuid.uuid4().bytes * 1000
    path = '/%s/obj' % container
    put = tenant.request('PUT', path, data=body,
                         headers={'X-Object-Meta-Color': 'blue'})
    assert put.status_code == 201
    assert put.headers['Etag'] == hashlib.md5(body).hexdigest()
    get = tenant.request('GET', path)
    assert get.status_code == 200 and get.content == body
    assert get.headers['X-Object-Meta-Color'] == 'blue'
    ranged = tenant.request('GET', path, headers={'Range': 'bytes=10-19'})
    assert ranged.status_code == 206 and ranged.content == body[10:20]
    assert tenant.request('DELETE', path).status_code == 204
    assert tenant.request('GET', path).status_code == 404


def test_bad_requests_get_swifts_answers(tenant, container):
    assert tenant.request('GET', '/%s/missing' % container).status_code == 404
    long_name = 'x' * 1025
    assert tenant.request('PUT', '/%s/%s' % (container, long_name),
                          data=b'x').status_code == 400
    assert requests.get(PROXY + '/v1/AUTH_test/' + container,
                        timeout=10).status_code == 401


def test_container_policy_is_honoured(tenant):
    name = 'mass-func-policy-%s' % uuid.uuid4().hex
    try:
        assert tenant.request('PUT', '/' + name, headers={
            'X-Storage-Policy': 'fast'}).status_code == 201
        head = tenant.request('HEAD', '/' + name)
        assert head.headers['X-Storage-Policy'] == 'fast'
        assert tenant.request('PUT', '/%s/o' % name,
                              data=b'abc').status_code == 201
        assert tenant.request('GET', '/%s/o' % name).content == b'abc'
    finally:
        tenant.request('DELETE', '/%s/o' % name)
        tenant.request('DELETE', '/' + name)


def test_large_metadata_and_long_utf8_names(tenant, container):
    # Swift pickles metadata into xattrs; on ext4 this fails with 507/503,
    # on the SAIO's XFS it must succeed.
    name = ('\u00e9\u4e2d' * 200)[:340]
    assert len(name.encode('utf-8')) <= 1024
    meta = {'X-Object-Meta-K%02d' % i: 'v' * 250 for i in range(30)}
    resp = tenant.request('PUT', '/%s/%s' % (container, name), data=b'data',
                          headers=meta)
    assert resp.status_code == 201, resp.text
    head = tenant.request('HEAD', '/%s/%s' % (container, name))
    assert head.headers['X-Object-Meta-K29'] == 'v' * 250


def priorities_seen(metrics):
    return sorted(m.rsplit('.', 1)[1] for m in metrics
                  if m.startswith('mass_queue.priority.'))


@pytest.fixture(scope='module')
def ungated(cluster):
    return pipeline_without_gatekeeper()


def classes_seen(metrics):
    return set(m.rsplit('.', 1)[1] for m in metrics
               if m.startswith('mass_queue.class.'))


def test_client_cannot_raise_its_priority(tenant, container, statsd,
                                          ungated):
    # Through the SAIO's proxy gatekeeper would strip the header before
    # Mass sees it; without gatekeeper only Mass stands in the way.
    statsd.metrics(wait=0.5)  # drain
    path = '/%s/forged' % container
    forged = {'X-Backend-Mass-Priority': '9'}
    assert request(ungated, tenant, 'PUT', path, forged,
                   b'x' * 100).status_int == 201
    assert request(ungated, tenant, 'GET', path, forged).body == b'x' * 100
    seen = priorities_seen(statsd.metrics())
    # a PUT to every replica (2 or 3: the tenant's substore may be a
    # 2-replica policy) and a GET: at least 3 object-server requests
    assert len(seen) >= 3
    assert set(seen) == {'5'}


def test_client_cannot_choose_its_class(cluster, statsd, ungated):
    # Mass tags a class only once the control loop has classified the
    # tenant: a fresh account (reached with the reseller admin's token)
    # has none, so a forged class would pass on unless Mass strips it.
    admin = Tenant('admin:admin', 'admin')
    fresh = types.SimpleNamespace(
        account='AUTH_forge%s' % uuid.uuid4().hex[:12], token=admin.token)
    statsd.metrics(wait=0.5)  # drain
    forged = {'X-Backend-Mass-Class': 'read'}
    assert request(ungated, fresh, 'PUT', '/c', forged).status_int in (
        201, 202)
    try:
        assert request(ungated, fresh, 'PUT', '/c/o', forged,
                       b'x').status_int == 201
        seen = statsd.metrics()
        assert len(priorities_seen(seen)) >= 2, 'no object PUT was counted'
        assert classes_seen(seen) == set()
    finally:
        request(ungated, fresh, 'DELETE', '/c/o')
        request(ungated, fresh, 'DELETE', '/c')


def test_object_server_honours_backend_priority(statsd, cluster):
    # Control for the test above: a priority that does reach an object
    # server is what mass_queue counts.  Only the cluster network can do
    # this; the proxy's gatekeeper strips X-Backend-* from clients.
    statsd.metrics(wait=0.5)
    url = OBJECT_SERVERS[0] + '/sdb1/0/AUTH_test/no-such-c/no-such-o'
    for priority in ('9', 'bogus'):
        resp = requests.head(url, headers={
            'X-Backend-Mass-Priority': priority}, timeout=10)
        assert resp.status_code == 404
    assert priorities_seen(statsd.metrics()) == ['5', '9']
