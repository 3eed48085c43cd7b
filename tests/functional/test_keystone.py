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
"""Mass's core with Keystone-authenticated tenants (issue 26, item 3).

``tools/saio keystone up`` runs Debian's Keystone beside the SAIO and a
fourth proxy (8083) whose pipeline is the first proxy's with ``authtoken
s3api s3token keystoneauth`` in place of ``s3api tempauth``; its users,
with the tenants' EC2 credentials, are in
``/etc/swift-mass-keystone/accounts.json``.  A Keystone tenant's account is
``AUTH_`` + its project id (keystoneauth's reseller prefix).  Through that
proxy: a writer is classified and its new containers routed; a cached
tenant's overwrites are never read stale, through it or through the
tempauth proxy (as the reseller admin); an S3 client's reads (s3token) are
hits and its denials Swift's; and the operator commands act as
a user with Keystone's ``ResellerAdmin`` role, with swift's ``OS_*``
environment and no secret on the command line; given a project's name
(``--project``), by a user who may also list projects (the ``admin``
role), and refused to one who may not.
"""
import json
import os
import subprocess
import sys
import time
import uuid

import pytest
import requests
from swiftclient import client as swiftclient

from tests.functional.conftest import PROXY, ROOT, Tenant, saio
from tests.functional.test_cache import get_until_hit, tenant_trusted
from tests.functional.test_s3_cache import hits_of, raw, s3_client, \
    same_for_a_client
from tests.functional.test_control_loop import wait_for
from tests.functional.waiting import until

KEYSTONE = 'http://127.0.0.1:5000/v3'
KS_PROXY = 'http://127.0.0.1:8083'
ACCOUNTS = '/etc/swift-mass-keystone/accounts.json'


@pytest.fixture(scope='module')
def users(cluster):
    """The Keystone users, once Keystone and its proxy answer (started if
    need be; a failure to start fails every test, never a skip)."""
    up = saio('keystone', 'up', check=False)
    if up.returncode != 0:
        pytest.fail('tools/saio keystone up failed:\n%s' % up.stdout)
    with open(ACCOUNTS) as f:
        return json.load(f)


def v3_options(found):
    return {'project_name': found['project'], 'user_domain_name': 'Default',
            'project_domain_name': 'Default'}


class KeystoneTenant(object):
    """A Keystone user's token and its storage URL, from the catalog."""

    def __init__(self, users, name):
        found = users[name]
        self.url, self.token = swiftclient.get_auth(
            KEYSTONE, name, found['password'], auth_version='3',
            os_options=v3_options(found))
        self.account = found['account']

    def request(self, method, path='', headers=None, **kwargs):
        headers = dict(headers or {}, **{'X-Auth-Token': self.token})
        kwargs.setdefault('timeout', 20)
        return requests.request(method, self.url + path, headers=headers,
                                **kwargs)


def swift_mass(*args, env=None):
    return subprocess.run(
        [sys.executable, '-m', 'swift_mass.cli', '--json'] + list(args),
        env=dict(os.environ, PYTHONPATH=ROOT, **(env or {})),
        capture_output=True, text=True, timeout=300)


def test_the_catalog_names_the_keystone_proxy(users):
    tenant = KeystoneTenant(users, 'mass-ks-1')
    assert tenant.url == '%s/v1/%s' % (KS_PROXY, tenant.account)
    assert tenant.request('HEAD').status_code in (200, 204)
    # another tenant's account is not this one's
    other = users['mass-ks-2']['account']
    resp = requests.head('%s/v1/%s' % (KS_PROXY, other),
                         headers={'X-Auth-Token': tenant.token}, timeout=20)
    assert resp.status_code == 403


def test_a_keystone_writer_is_classified_and_routed(users, store):
    tenant = KeystoneTenant(users, 'mass-ks-1')
    store.delete_pin(tenant.account)
    first = 'ks-writes-%s' % uuid.uuid4().hex[:6]
    assert tenant.request('PUT', '/' + first).status_code in (201, 202)
    for i in range(40):
        assert tenant.request('PUT', '/%s/o%d' % (first, i),
                              data=b'w' * 1024).status_code == 201
    entry = wait_for(store, tenant.account, lambda e: e['class'] == 'write')
    assert (entry['ring'], entry['method']) == ('bulk', 'batch')
    # once the Keystone proxy's workers loaded the leader's table (every
    # interval, 1 s here), its next container lands on the writers'
    # substore

    def routed():
        name = 'ks-routed-%s' % uuid.uuid4().hex[:6]
        assert tenant.request('PUT', '/' + name).status_code == 201
        policy = tenant.request('HEAD', '/' + name).headers[
            'X-Storage-Policy']
        tenant.request('DELETE', '/' + name)
        return policy == 'bulk'
    until(routed, 15, 'a new container of the writer in bulk')


def test_a_keystone_tenants_cache_is_never_stale(users, store):
    """Writes through the Keystone proxy, reads through it and through the
    tempauth proxy (as the reseller admin): every read after a write
    returns that write, and hits happen on both."""
    tenant = KeystoneTenant(users, 'mass-ks-2')
    admin = Tenant('admin:admin', 'admin')
    container = 'ks-cached-%s' % uuid.uuid4().hex[:6]
    assert tenant.request('PUT', '/' + container).status_code == 201
    subprocess.run(['swift-mass', 'pin', tenant.account, '--class', 'read',
                    '--method', 'cache'], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        probe = '/%s/probe' % container
        assert tenant.request('PUT', probe, data=b'p').status_code == 201
        until(lambda: 'X-Mass-Cache' in tenant.request('GET', probe).headers,
              30, 'the Keystone proxy caches the tenant')
        tenant_trusted(tenant.account)

        class Reader(object):
            """get_until_hit's client: through one proxy, one token."""

            def __init__(self, token):
                self.token = token

            def request(self, method, proxy, name, token=None, **kwargs):
                return requests.request(
                    method, '%s/v1/%s/%s/%s' % (proxy, tenant.account,
                                                container, name),
                    headers={'X-Auth-Token': token or self.token},
                    timeout=20, **kwargs)
        readers = [(KS_PROXY, Reader(tenant.token)),
                   (PROXY, Reader(admin.token))]
        for body in (b'one', b'two', b'three'):
            assert tenant.request('PUT', '/%s/o' % container,
                                  data=body).status_code == 201
            for proxy, reader in readers:
                assert reader.request('GET', proxy, 'o').content == body
                assert get_until_hit(reader, proxy, 'o').content == body
        assert tenant.request('DELETE', '/%s/o' % container).status_code \
            == 204
        for proxy, reader in readers:
            assert reader.request('GET', proxy, 'o').status_code == 404
    finally:
        store.delete_pin(tenant.account)


def _s3_denials(users, bucket):
    """Each denial an S3 client of the Keystone proxy meets (s3token),
    as (what, raw answer)."""
    owner = users['mass-ks-1']
    other = users['mass-ks-2']
    url = '%s/%s/o' % (KS_PROXY, bucket)
    presigned = s3_client(KS_PROXY, owner).generate_presigned_url(
        'get_object', Params={'Bucket': bucket, 'Key': 'o'}, ExpiresIn=1)
    time.sleep(2.1)  # its X-Amz-Date has whole seconds
    return [
        # the account comes from the credential: the other tenant's own,
        # which has no such bucket
        ('a bucket of another project',
         raw('GET', url, (other['ec2_access'], other['ec2_secret']))),
        ('a bad signature', raw('GET', url, (owner['ec2_access'], 'bad'))),
        ('an expired presigned URL', requests.get(presigned, timeout=30)),
    ]


def test_a_keystone_tenants_s3_reads_are_hits_and_its_denials_swifts(
        users, store, statsd):
    """An S3 client with the tenant's EC2 credential, through s3api and
    s3token: its reads of a tenant pinned to the cache are hits, and each
    denial is the answer the same request gets with the tenant out of the
    cache (Mass then leaves every read to Swift)."""
    found = users['mass-ks-1']
    credential = (found['ec2_access'], found['ec2_secret'])
    client = s3_client(KS_PROXY, found)
    bucket = 'ks-s3-%s' % uuid.uuid4().hex[:8]
    client.create_bucket(Bucket=bucket)
    try:
        subprocess.run(['swift-mass', 'pin', found['account'], '--class',
                        'read', '--method', 'cache'], check=True,
                       stdout=subprocess.DEVNULL)
        client.put_object(Bucket=bucket, Key='o', Body=b'k' * 2048)
        tenant_trusted(found['account'])

        def reads():
            for _ in range(5):
                assert client.get_object(Bucket=bucket, Key='o')[
                    'Body'].read() == b'k' * 2048
        hits = hits_of(statsd, reads)
        print('5 S3 GETs through s3token: %d hits' % hits)
        assert hits >= 4
        cached = _s3_denials(users, bucket)
        subprocess.run(['swift-mass', 'pin', found['account'], '--class',
                        'read', '--method', 'none'], check=True,
                       stdout=subprocess.DEVNULL)
        until(lambda: raw('GET', '%s/%s/o' % (KS_PROXY, bucket),
                          credential).status_code == 200 and
              hits_of(statsd, lambda: raw(
                  'GET', '%s/%s/o' % (KS_PROXY, bucket), credential)) == 0,
              30, 'the Keystone proxy leaves the tenant\'s reads to Swift')
        uncached = _s3_denials(users, bucket)
        for (what, resp), (_, swift_resp) in zip(cached, uncached):
            print('%s: %d %s' % (what, resp.status_code, resp.content[:100]))
            assert resp.status_code in (403, 404), what
            assert same_for_a_client(resp) == \
                same_for_a_client(swift_resp), what
    finally:
        store.delete_pin(found['account'])
        client.delete_object(Bucket=bucket, Key='o')
        client.delete_bucket(Bucket=bucket)


def test_operator_commands_as_a_keystone_reseller_admin(users):
    """urgent, opt-out and migrate with Keystone v3 credentials from the
    environment (OS_PASSWORD: no secret on the command line), the
    tenant's account reached through the operator's catalog entry."""
    operator = users['operator']
    tenant = KeystoneTenant(users, 'mass-ks-2')
    env = {'OS_AUTH_URL': KEYSTONE, 'OS_USERNAME': 'operator',
           'OS_PASSWORD': operator['password'],
           'OS_PROJECT_NAME': operator['project'],
           'OS_USER_DOMAIN_NAME': 'Default',
           'OS_PROJECT_DOMAIN_NAME': 'Default',
           'OS_IDENTITY_API_VERSION': '3'}
    for key in ('ST_AUTH', 'ST_USER', 'ST_KEY'):
        env[key] = ''
    for on in ('--on', '--off'):
        done = swift_mass('urgent', tenant.account, on, env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)['urgent'] is (on == '--on')
    # a wrong password is refused, and says so
    refused = swift_mass('urgent', tenant.account,
                         env=dict(env, OS_PASSWORD='wrong'))
    assert refused.returncode != 0
    container = 'ks-moved-%s' % uuid.uuid4().hex[:6]
    assert tenant.request('PUT', '/' + container).status_code == 201
    for i in range(5):
        assert tenant.request('PUT', '/%s/o%d' % (container, i),
                              data=b'%d' % i).status_code == 201
    # wherever the tenant's class put it, to another policy
    policy = tenant.request('HEAD', '/' + container).headers[
        'X-Storage-Policy']
    target = 'bulk' if policy != 'bulk' else 'standard'
    moved = swift_mass('migrate', 'run', tenant.account, container,
                       '--policy', target, '--settle', '1', env=env)
    assert moved.returncode == 0, moved.stderr
    summary, = json.loads(moved.stdout)['containers']
    assert summary['status'] == 'moved', summary
    assert tenant.request('HEAD', '/' + container).headers[
        'X-Storage-Policy'] == target
    for i in range(5):
        resp = tenant.request('GET', '/%s/o%d' % (container, i))
        assert (resp.status_code, resp.content) == (200, b'%d' % i)


def keystone_env(users, name):
    """swift's OS_* environment for a Keystone user, v1's emptied."""
    found = users[name]
    env = {'OS_AUTH_URL': KEYSTONE, 'OS_USERNAME': name,
           'OS_PASSWORD': found['password'],
           'OS_PROJECT_NAME': found['project'],
           'OS_USER_DOMAIN_NAME': 'Default',
           'OS_PROJECT_DOMAIN_NAME': 'Default',
           'OS_IDENTITY_API_VERSION': '3'}
    env.update(ST_AUTH='', ST_USER='', ST_KEY='')
    return env


def test_urgent_by_project_name_as_a_keystone_operator(users):
    """``--project mass-ks-1``: its account looked up in Keystone with the
    operator's credentials (listing projects takes the admin role in
    Keystone's default policy: ``operator-admin`` has it beside
    ResellerAdmin, ``operator`` only ResellerAdmin), the mark set and
    cleared, and the output naming the account and the project."""
    tenant = users['mass-ks-1']
    project = {'id': tenant['project_id'], 'name': 'mass-ks-1',
               'domain_id': 'default'}
    env = keystone_env(users, 'operator-admin')
    for on in ('--on', '--off'):
        done = swift_mass('urgent', '--project', 'mass-ks-1', on, env=env)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result == {'tenant': tenant['account'], 'project': project,
                          'urgent': on == '--on'}, result
        # the account given: the same mark, and its project named back
        shown = swift_mass('urgent', tenant['account'], env=env)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout) == result
    # ResellerAdmin alone acts on the account but may not list projects:
    # refused, naming the policy, the mark left as it was
    refused = swift_mass('urgent', '--project', 'mass-ks-1', '--on',
                         env=keystone_env(users, 'operator'))
    assert refused.returncode == 1
    assert 'identity:list_projects' in refused.stderr, refused.stderr
    shown = swift_mass('urgent', tenant['account'],
                       env=keystone_env(users, 'operator'))
    assert json.loads(shown.stdout)['urgent'] is False
