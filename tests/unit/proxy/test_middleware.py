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
import pytest

from swift.common import registry
from swift.common.swob import Request
from swift.common.utils import split_path

import swift_mass
from swift_mass.conf import ConfigError
from swift_mass.proxy import middleware as proxy
from tests.unit.helpers import RecordingApp


def make(conf=None):
    app = RecordingApp()
    # no urgent-mark lookups: app.environs holds only the request itself
    conf = dict({'urgent_recheck_seconds': '0'}, **(conf or {}))
    return proxy.filter_factory({}, **conf)(app), app


def test_tags_tenant_requests():
    mass, app = make()
    resp = Request.blank('/v1/AUTH_test/c/o').get_response(mass)
    assert resp.status_int == 200
    env = app.environs[0]
    backend = Request(env).headers
    assert backend['X-Backend-Mass-Priority'] == '5'
    # the tenant is the path's account: no header repeats it to the
    # storage servers (Swift copies every X-Backend-* header, at a cost)
    assert 'X-Backend-Mass-Tenant' not in backend
    assert [name for name in backend
            if name.startswith(('X-Backend-Mass-', 'X-Mass-'))] == \
        ['X-Backend-Mass-Priority']


def test_configured_default_priority():
    mass, app = make({'default_priority': '8'})
    Request.blank('/v1/AUTH_test/c').get_response(mass)
    assert app.environs[0]['HTTP_X_BACKEND_MASS_PRIORITY'] == '8'


def test_any_account_name_is_the_tenant_and_in_no_header():
    mass, app = make()
    # newline and UTF-8 in an account name: the tenant is its WSGI string,
    # and still no header names it
    Request.blank('/v1/AUTH_%C3%A9%0Ax/c').get_response(mass)
    assert 'HTTP_X_BACKEND_MASS_TENANT' not in app.environs[0]
    assert [tenant for tenant, _bucket in mass.agent.window.drain()] == \
        ['AUTH_\xc3\xa9\nx']


def test_a_clients_tenant_tag_is_stripped_not_trusted():
    mass, app = make()
    Request.blank('/v1/AUTH_test/c/o', headers={
        'X-Backend-Mass-Tenant': 'AUTH_victim'}).get_response(mass)
    env = app.environs[0]
    assert 'HTTP_X_BACKEND_MASS_TENANT' not in env
    assert [tenant for tenant, _bucket in mass.agent.window.drain()] == \
        ['AUTH_test']


@pytest.mark.parametrize('header', [
    'X-Backend-Mass-Priority', 'X-Mass-Priority', 'X-Backend-Mass-Tenant',
    'X-Backend-Mass-Class', 'X-Mass-Class',
])
def test_client_can_never_set_its_own_tags(header):
    mass, app = make()
    req = Request.blank('/v1/AUTH_test/c/o', headers={header: '9'})
    req.get_response(mass)
    env = app.environs[0]
    forged = 'HTTP_' + header.upper().replace('-', '_')
    assert env.get('HTTP_X_BACKEND_MASS_PRIORITY') == '5'
    if forged != 'HTTP_X_BACKEND_MASS_PRIORITY':
        assert forged not in env


def test_forged_tags_are_stripped_on_non_tenant_paths_too():
    mass, app = make()
    Request.blank('/info', headers={'X-Backend-Mass-Priority': '9',
                                    'X-Mass-Priority': '9'}).get_response(mass)
    env = app.environs[0]
    assert 'HTTP_X_BACKEND_MASS_PRIORITY' not in env
    assert 'HTTP_X_MASS_PRIORITY' not in env
    assert 'mass.tenant' not in env


@pytest.mark.parametrize('path', [
    '/info', '/healthcheck', '/auth/v1.0', '/v1/.expiring_objects/c',
    '/v1/%00reserved/c', '/crossdomain.xml'])
def test_non_tenant_requests_pass_untagged(path):
    mass, app = make()
    resp = Request.blank(path).get_response(mass)
    assert resp.status_int == 200
    env = app.environs[0]
    assert 'mass.tenant' not in env
    assert 'HTTP_X_BACKEND_MASS_TENANT' not in env
    assert 'HTTP_X_BACKEND_MASS_PRIORITY' not in env


def test_other_headers_untouched():
    mass, app = make()
    Request.blank('/v1/AUTH_test/c/o', headers={
        'X-Auth-Token': 't', 'X-Object-Meta-Mass': 'm',
        'X-Storage-Policy': 'fast'}).get_response(mass)
    headers = Request(app.environs[0]).headers
    assert headers['X-Auth-Token'] == 't'
    assert headers['X-Object-Meta-Mass'] == 'm'
    assert headers['X-Storage-Policy'] == 'fast'
    assert split_path(app.environs[0]['PATH_INFO'], 4, 4, True) == \
        ['v1', 'AUTH_test', 'c', 'o']


@pytest.mark.parametrize('value', ['high', '-1', '10', '2.5', ''])
def test_bad_default_priority_stops_startup(value):
    with pytest.raises(ConfigError) as err:
        make({'default_priority': value})
    message = str(err.value)
    assert 'default_priority' in message
    assert 'from 0 to 9' in message
    assert '[filter:mass]' in message


def test_registers_in_info():
    make({'default_priority': '3', 'background_priority': '2'})
    info = registry.get_swift_info()['mass']
    assert (info['default_priority'], info['background_priority']) == (3, 2)
    assert (info['priority_min'], info['priority_max']) == (0, 9)
    # which Mass a proxy runs, for an operator checking a rollout
    assert info['version'] == swift_mass.__version__
