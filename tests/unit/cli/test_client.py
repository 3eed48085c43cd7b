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
"""The operator's connections on a tenant's account, against the small
proxy of test_urgent (tempauth v1.0, account HEAD and POST)."""
import argparse

import pytest
from swiftclient.exceptions import ClientException

from swift_mass.cli import client
from tests.unit.cli.test_urgent import start  # noqa: F401 (fixture)


def parsed(*argv):
    parser = argparse.ArgumentParser()
    client.add_options(parser)
    return parser.parse_args(list(argv))


def v1(auth_url, user, key):
    return client.credentials(parsed('-A', auth_url, '-U', user),
                              environ={'ST_KEY': key})


def test_credentials_come_from_options_or_env_never_a_default():
    args = parsed('--user', 'op:op')
    with pytest.raises(client.MissingCredentials,
                       match='ST_AUTH.*OS_AUTH_URL.*ST_KEY or \\$OS_PASSWORD'):
        client.credentials(args, environ={})
    creds = client.credentials(args, environ={
        'ST_AUTH': 'http://a/auth/v1.0', 'ST_USER': 'env:env',
        'ST_KEY': 'k'})
    assert (creds['auth'], creds['user'], creds['key'],
            creds['auth_version']) == ('http://a/auth/v1.0', 'op:op', 'k',
                                       '1.0')
    # this command's earlier spelling of -A
    assert client.credentials(parsed('--auth-url', 'http://b/auth/v1.0'),
                              environ={'ST_USER': 'u', 'ST_KEY': 'k'})[
        'auth'] == 'http://b/auth/v1.0'


def test_keystone_v3_credentials_as_swift_takes_them():
    """OS_* as swiftclient's swift reads them, the password from the
    environment only; a domain makes it v3, as for swift."""
    creds = client.credentials(parsed(
        '--os-auth-url', 'http://k:5000/v3', '--os-username', 'ops',
        '--os-project-name', 'service'), environ={
        'OS_PASSWORD': 'secret', 'OS_USER_DOMAIN_NAME': 'Default',
        'OS_PROJECT_DOMAIN_NAME': 'Default'})
    assert (creds['auth'], creds['user'], creds['key'],
            creds['auth_version']) == ('http://k:5000/v3', 'ops', 'secret',
                                       '3')
    assert {k: v for k, v in creds['os_options'].items() if v} == {
        'user_domain_name': 'Default', 'project_domain_name': 'Default',
        'project_name': 'service'}
    # OS_IDENTITY_API_VERSION, as openrc files set it
    assert client.credentials(parsed(), environ={
        'OS_AUTH_URL': 'http://k:5000/v3', 'OS_USERNAME': 'ops',
        'OS_PASSWORD': 'secret', 'OS_IDENTITY_API_VERSION': '3'})[
        'auth_version'] == '3'


def test_account_url_is_the_same_endpoint_on_another_account():
    assert client.account_url('http://p:8080/v1/AUTH_admin', 'AUTH_t x') \
        == 'http://p:8080/v1/AUTH_t%20x'
    assert client.account_url('https://p/swift/v1/AUTH_a/', 'AUTH_b') == \
        'https://p/swift/v1/AUTH_b'


def test_tenant_connection_is_the_operators_on_the_tenants_account(
        start):  # noqa: F811
    proxy = start()
    conn = client.tenant_connection(
        v1(proxy.url + '/auth/v1.0', 'admin:admin', 'admin'), 'AUTH_test')
    assert conn.url == proxy.url + '/v1/AUTH_test'
    conn.post_account({'X-Mass-Urgent': 'true'})
    assert proxy.marks == {'AUTH_test': True}
    assert proxy.requests[0][2]['X-Auth-Token'] == 'AUTH_tk_admin'
    # the operator's own work: not counted in the tenant's workload
    assert proxy.requests[0][2]['X-Mass-Operator'] == 'true'
    with pytest.raises(ClientException):
        client.tenant_connection(v1(proxy.url + '/auth/v1.0', 'admin:admin',
                                    'wrong'), 'AUTH_test', retries=0)


def test_connections_share_one_login_and_keep_the_account_on_a_401(
        start):  # noqa: F811
    proxy = start()
    url, connect = client.tenant_connector(
        v1(proxy.url + '/auth/v1.0', 'admin:admin', 'admin'), 'AUTH_test')
    assert url == proxy.url + '/v1/AUTH_test'
    first, second = connect(), connect()
    assert first.token == second.token == 'AUTH_tk_admin'
    # an expired token: swiftclient logs in again, on the same account
    first.token = 'AUTH_tk_expired'
    first.head_account()
    assert [(method, path) for method, path, _ in proxy.requests] == [
        ('HEAD', '/v1/AUTH_test'), ('HEAD', '/v1/AUTH_test')]
    assert proxy.requests[-1][2]['X-Auth-Token'] == 'AUTH_tk_admin'
