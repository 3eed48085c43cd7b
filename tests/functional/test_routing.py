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
"""Substore routing on the SAIO: a pinned writer's new containers land on
the write substore (`bulk`), explicit policies and existing containers are
left as they are, a container PUT that races another proxy gets Swift's own
answer, and `swift-mass check-rings` reports the SAIO's rings.

Each run uses a fresh account (reached with the reseller admin's token), so
nothing an earlier run created or decided can make a test pass; every pin
is removed when its test ends, whatever happens."""
import contextlib
import json
import subprocess
import time
import uuid

import boto3
import botocore.config
import pytest
import requests

from swift.common import direct_client
from swift.common.ring import Ring
from swift.common.storage_policy import POLICIES
from swift.common.utils import Timestamp

from tests.functional.conftest import PROXY, Tenant
from tests.functional.waiting import until

SWIFT_DIR = '/etc/swift'
WRITE_SUBSTORE = 'bulk'      # write_substore of the SAIO's [filter:mass]
DEFAULT_POLICY = 'standard'
SAIO_LOOP_INTERVAL = 1.0   # interval of the SAIO's [filter:mass]


class Account(object):
    """An account's storage URL and a token for it; remembers the
    containers it created, for the clean-up."""

    def __init__(self, url, token):
        self.url = url
        self.account = url.rsplit('/', 1)[1]
        self.token = token
        self.created = []

    def request(self, method, path='', headers=None, **kwargs):
        headers = dict(headers or {}, **{'X-Auth-Token': self.token})
        kwargs.setdefault('timeout', 20)
        return requests.request(method, self.url + path, headers=headers,
                                **kwargs)

    def create(self, container, headers=None):
        resp = self.request('PUT', '/' + container, headers=headers)
        self.created.append(container)
        return resp

    def policy(self, container):
        resp = self.request('HEAD', '/' + container)
        assert resp.status_code == 204, (container, resp.status_code)
        return resp.headers['X-Storage-Policy']

    def clean_up(self):
        for container in self.created:
            listing = self.request('GET', '/' + container,
                                   params={'format': 'json'})
            for obj in listing.json() if listing.status_code == 200 else []:
                self.request('DELETE', '/%s/%s' % (container, obj['name']))
            self.request('DELETE', '/' + container)


def swift_mass(*args, check=True):
    return subprocess.run(['swift-mass'] + list(args), check=check,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


@contextlib.contextmanager
def pinned(store, client, cls='write', ring=WRITE_SUBSTORE):
    """The account pinned to a class until the block ends, once the pin is
    in the policy table and every proxy worker read it; with ``ring``
    (None: not waited for, as in observe mode, where it never comes), once
    the proxy routes its new containers there (seen with probe
    containers)."""
    account = client.account
    swift_mass('pin', account, '--class', cls)
    try:
        until(lambda: (store.get_table()[1].get(account) or {}).get(
            'pinned'), 20, 'the pin in the policy table')

        def proxy_routes():
            probe = 'mass-probe-%s' % uuid.uuid4().hex[:8]
            assert client.create(probe).status_code == 201
            return client.policy(probe) == ring
        if ring is not None:
            until(proxy_routes, 20, 'the proxy routing ' + account, 0.3)
        # every proxy worker reads the table within its loop's interval
        # (1 s on the SAIO), or at its first request
        time.sleep(2 * SAIO_LOOP_INTERVAL + 0.5)
        yield
    finally:
        swift_mass('unpin', account)
        until(lambda: not (store.get_table()[1].get(account) or {}).get(
            'pinned'), 20, 'the pin removed')


@pytest.fixture(scope='module')
def admin(cluster):
    return Tenant('admin:admin', 'admin')


@pytest.fixture
def client(admin):
    """A fresh account, used with the reseller admin's token."""
    account = Account('%s/AUTH_massroute%s' % (
        admin.url.rsplit('/', 1)[0], uuid.uuid4().hex[:10]), admin.token)
    yield account
    account.clean_up()


def container_servers(account, container):
    ring = Ring(SWIFT_DIR, ring_name='container')
    return ring.get_nodes(account, container)


def backend_policy_index(account, container):
    """The policy index every container server holds for a container
    (reserved names too, which no client can address)."""
    part, nodes = container_servers(account, container)
    return {direct_client.direct_head_container(
        node, part, account, container)['X-Backend-Storage-Policy-Index']
        for node in nodes}


def object_replicas(account, container, obj, policy_name):
    """The statuses the primary object servers of a storage policy's ring
    answer for an object, asked with that policy's index."""
    policy = POLICIES.get_by_name(policy_name)
    ring = POLICIES.get_object_ring(int(policy), SWIFT_DIR)
    part, nodes = ring.get_nodes(account, container, obj)
    statuses = set()
    for node in nodes:
        try:
            direct_client.direct_head_object(
                node, part, account, container, obj, headers={
                    'X-Backend-Storage-Policy-Index': str(int(policy))})
            statuses.add(200)
        except direct_client.DirectClientException as err:
            statuses.add(err.http_status)
    return statuses


def test_new_containers_of_a_writer_land_on_the_write_substore(
        client, store, statsd):
    assert client.create('before-pin').status_code == 201
    with pinned(store, client):
        statsd.metrics(wait=0.5)
        resp = client.create('new')
        assert resp.status_code == 201
        assert client.policy('new') == WRITE_SUBSTORE
        assert 'mass.routed' in statsd.metrics()
        # objects go to their container's ring, as always: checked on the
        # object servers themselves, where each policy has its own ring
        assert client.request('PUT', '/new/o', data=b'w').status_code == 201
        assert client.request('GET', '/new/o').content == b'w'
        assert object_replicas(client.account, 'new', 'o',
                               WRITE_SUBSTORE) == {200}
        assert object_replicas(client.account, 'new', 'o',
                               DEFAULT_POLICY) == {404}

        # an explicit policy wins
        resp = client.create('explicit',
                             headers={'X-Storage-Policy': DEFAULT_POLICY})
        assert resp.status_code == 201
        assert client.policy('explicit') == DEFAULT_POLICY

        # a container that existed before the pin keeps its policy; its
        # PUT gets Swift's answer for an existing container
        resp = client.create('before-pin',
                             headers={'X-Container-Meta-Colour': 'blue'})
        assert resp.status_code == 202
        head = client.request('HEAD', '/before-pin')
        assert head.headers['X-Storage-Policy'] == DEFAULT_POLICY
        assert head.headers['X-Container-Meta-Colour'] == 'blue'

        # a routed container PUT again is Swift's 202 too
        assert client.create('new').status_code == 202
        assert client.policy('new') == WRITE_SUBSTORE

        # a system (.-prefixed) name is never routed
        assert client.create('.mass-hidden').status_code == 201
        assert client.policy('.mass-hidden') == DEFAULT_POLICY
    # unpinned, the tenant is the classifier's again; what routing did
    # stays
    assert client.policy('new') == WRITE_SUBSTORE


def test_a_put_racing_another_proxy_gets_swifts_answer(client, store,
                                                       statsd):
    with pinned(store, client):
        name = 'race'
        # the proxy learns (and caches for a few seconds) that it is absent
        assert client.request('HEAD', '/' + name).status_code == 404
        # ...then another proxy, whose cache this one does not share,
        # creates it in the default policy
        part, nodes = container_servers(client.account, name)
        headers = {'X-Timestamp': Timestamp.now().internal,
                   'X-Backend-Storage-Policy-Index': '0'}
        for node in nodes:
            direct_client.direct_put_container(
                node, part, client.account, name, headers=dict(headers))
        client.created.append(name)
        statsd.metrics(wait=0.5)
        # Mass routes it (its cached info says absent), the container
        # servers refuse the other policy with 409, and the PUT is sent
        # again as the client sent it: the client sees Swift's 202
        resp = client.create(name)
        assert resp.status_code == 202, resp.text
        assert client.policy(name) == DEFAULT_POLICY
        assert 'mass.route_conflict' in statsd.metrics()


def test_versioned_containers_stay_with_their_versions(client, store):
    with pinned(store, client):
        # enabled at creation: object_versioning creates the versions
        # container first, in the default policy; the parent stays with it
        resp = client.create('versioned',
                             headers={'X-Versions-Enabled': 'true'})
        assert resp.status_code == 201
        assert client.policy('versioned') == DEFAULT_POLICY
        assert backend_policy_index(
            client.account, '\x00versions\x00versioned') == {'0'}
        # created first, versioning enabled after: both on the substore
        assert client.create('later').status_code == 201
        assert client.request('POST', '/later', headers={
            'X-Versions-Enabled': 'true'}).status_code == 204
        assert client.policy('later') == WRITE_SUBSTORE
        assert backend_policy_index(
            client.account, '\x00versions\x00later') == {'2'}
        for container in ('versioned', 'later'):
            client.request('PUT', '/%s/o' % container, data=b'1')
            client.request('PUT', '/%s/o' % container, data=b'2')
            listing = client.request('GET', '/' + container, params={
                'versions': '', 'format': 'json'}).json()
            assert len(listing) == 2
            for version in listing:
                client.request('DELETE', '/%s/o' % container, params={
                    'version-id': version['version_id']})
            client.request('POST', '/' + container,
                           headers={'X-Versions-Enabled': 'false'})


def test_s3_buckets_are_routed(cluster, store):
    # s3api's PUT Bucket is the client's own container PUT; S3 needs a
    # tempauth user, and this one's account is used by no other test
    # while the SAIO lock is held
    tenant = Tenant('durable:func', 'func')
    user = Account(tenant.url, tenant.token)
    s3 = boto3.client(
        's3', endpoint_url=PROXY, region_name='us-east-1',
        aws_access_key_id='durable:func', aws_secret_access_key='func',
        config=botocore.config.Config(s3={'addressing_style': 'path'},
                                      retries={'max_attempts': 1}))
    bucket = 'mass-route-%s' % uuid.uuid4().hex[:8]
    try:
        with pinned(store, user):
            s3.create_bucket(Bucket=bucket)
            user.created.append(bucket)
            assert user.policy(bucket) == WRITE_SUBSTORE
            s3.put_object(Bucket=bucket, Key='k', Body=b'v')
            assert s3.get_object(Bucket=bucket, Key='k')['Body'].read() \
                == b'v'
            s3.delete_object(Bucket=bucket, Key='k')
    finally:
        user.clean_up()


def test_check_rings_on_the_saio(cluster):
    result = swift_mass('check-rings')
    assert result.returncode == 0, result.stderr
    assert 'policy 0 standard (replication, default)' in result.stdout
    warnings = [line for line in result.stdout.splitlines()
                if line.startswith('WARNING: ')]
    assert [w.split(':')[1].strip() for w in warnings] == ['fast', 'bulk']
    report = json.loads(swift_mass('--json', 'check-rings').stdout)
    assert report['servers'] == ['127.0.0.%d' % i for i in range(1, 5)]
    assert report['errors'] == []
    spread = {p['name']: p['spread'] for p in report['policies']}
    assert sorted(spread['standard']['servers']) == report['servers']
    assert sorted(spread['fast']['servers']) == ['127.0.0.1', '127.0.0.2']
    assert sorted(spread['bulk']['servers']) == ['127.0.0.3', '127.0.0.4']
    assert spread['bulk']['replicas'] == 2
    assert sum(s['part_replicas'] for s in
               spread['bulk']['servers'].values()) == \
        2 * spread['bulk']['partitions']
    strict = swift_mass('check-rings', '--strict', check=False)
    assert strict.returncode == 1
