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
"""A reseller admin's account HEAD that asks which policy this proxy
worker applies to the account's tenant
(swift_mass.proxy.policy_in_force), through the mass filter, whose worker
follows a shared store's policy table."""
import os

import pytest

from swift.common.swob import HTTPForbidden, Request

from swift_mass import tags
from swift_mass.control.entry import PolicyEntry
from swift_mass.control.stores.local import LocalStore
from swift_mass.proxy import middleware as proxy
from tests.unit.helpers import RecordingApp


def make(table=None):
    store = LocalStore()
    if table is not None:
        store.put_table(table)
    app = RecordingApp()
    mass = proxy.MassMiddleware(app, {
        'store': 'local', 'read_substore': 'fast', 'write_substore': 'bulk',
        'urgent_recheck_seconds': '0'}, store=store)
    return mass, app, store


def ask(mass, path='/v1/AUTH_t', method='HEAD', reseller=True,
        authorize=None):
    env = {'swift.authorize': authorize or (lambda req: None)}
    if reseller:
        env['reseller_request'] = True
    return Request.blank(path, method=method, environ=env, headers={
        tags.POLICY_REQUEST_HEADER: 'true'}).get_response(mass)


def test_a_reseller_admin_sees_the_policy_this_worker_applies():
    mass, app, store = make({'AUTH_t': PolicyEntry(
        'read', substore='fast', method='cache', pinned=True)})
    resp = ask(mass)
    assert resp.status_int == 200
    assert resp.headers[tags.POLICY_RESPONSE_HEADER] == 'read fast cache'
    assert tags.parse_policy_value(
        resp.headers[tags.POLICY_RESPONSE_HEADER]) == (
            'read', 'fast', 'cache')
    assert resp.headers[tags.WORKER_RESPONSE_HEADER] == str(os.getpid())
    version = int(resp.headers[tags.TABLE_VERSION_RESPONSE_HEADER])
    assert version == store.table_version() > 0
    assert app.environs == []  # answered by the filter


def test_a_change_shows_once_the_worker_loaded_it():
    """What the worker applies, not what the store holds: a change the
    leader published shows once this worker's tick loaded it."""
    mass, _, store = make({'AUTH_t': PolicyEntry(
        'read', substore='fast', method='cache', pinned=True)})
    assert ask(mass).headers[tags.POLICY_RESPONSE_HEADER] == \
        'read fast cache'
    store.put_table({'AUTH_t': PolicyEntry(
        'write', substore='bulk', method='batch', pinned=True)})
    before = ask(mass)
    assert before.headers[tags.POLICY_RESPONSE_HEADER] == 'read fast cache'
    mass.agent.refresh()
    after = ask(mass)
    assert after.headers[tags.POLICY_RESPONSE_HEADER] == 'write bulk batch'
    assert int(after.headers[tags.TABLE_VERSION_RESPONSE_HEADER]) > \
        int(before.headers[tags.TABLE_VERSION_RESPONSE_HEADER])


@pytest.mark.parametrize('table', [
    {},  # no entry decided yet
    {'AUTH_other': PolicyEntry('read', substore='fast', method='cache')},
])
def test_a_tenant_without_an_entry_shows_none(table):
    resp = ask(make(table)[0])
    assert resp.headers[tags.POLICY_RESPONSE_HEADER] == '- - -'
    assert tags.parse_policy_value('- - -') == (None, None, None)


def test_an_entry_without_a_substore_shows_a_dash():
    mass, _, _ = make({'AUTH_t': PolicyEntry('mixed', substore='',
                                             method='none')})
    assert ask(mass).headers[tags.POLICY_RESPONSE_HEADER] == 'mixed - none'


@pytest.mark.parametrize('value', ['read fast', 'a b c d', ''])
def test_a_malformed_value_is_refused(value):
    with pytest.raises(ValueError):
        tags.parse_policy_value(value)


@pytest.mark.parametrize('request_kwargs', [
    {'reseller': False},  # anyone else: the header is a forged tag
    {'authorize': lambda req: HTTPForbidden(request=req)},
    {'method': 'GET'},
    {'path': '/v1/AUTH_t/c'},
    {'path': '/v1/AUTH_t/c/o'},
])
def test_anything_else_is_swifts(request_kwargs):
    mass, app, _ = make({'AUTH_t': PolicyEntry(
        'read', substore='fast', method='cache', pinned=True)})
    resp = ask(mass, **request_kwargs)
    assert tags.POLICY_RESPONSE_HEADER not in resp.headers
    assert tags.WORKER_RESPONSE_HEADER not in resp.headers
    if app.environs:
        # the question does not reach Swift either
        assert all(tags.environ_key(tags.POLICY_REQUEST_HEADER) not in env
                   for env in app.environs)
