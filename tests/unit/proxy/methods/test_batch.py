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
"""The ``batch`` method: the requests of a tenant whose policy names it
carry the tag that gives its PUTs mass_queue's batch slots; the proxy
answers them as it would without Mass."""
import pytest

from swift.common.swob import Request

from swift_mass import tags
from swift_mass.control.entry import PolicyEntry
from swift_mass.proxy.methods import Methods
from swift_mass.proxy.methods.batch import BatchMethod
from swift_mass.proxy.request import MassRequest
from tests.unit.helpers import Logger
from tests.unit.proxy.methods.fakes import BODY, DOWN_REDIS_URL, PATH, \
    MassConf, Swift, call, make, put


def methods():
    return Methods(Swift(), MassConf({'cache_backend': 'local',
                                      'store': 'local'}), Logger())


BATCH = PolicyEntry('write', substore='', method='batch')


def batch_tenant(entry=BATCH):
    """A proxy's Mass filter whose policy table holds ``entry`` (None: no
    entry) for AUTH_t, and the Swift behind it."""
    swift = Swift()
    mass, _, _ = make('test-mass-batch:', swift, store_url=DOWN_REDIS_URL,
                      pin=None, conf={'cache_backend': 'local'})
    mass.agent.table = {} if entry is None else {'AUTH_t': entry}
    return mass, swift


def sent(swift, method, path):
    """The headers of each ``method`` request for ``path`` the proxy app
    got (the client's, not Mass's own lookups)."""
    return [headers for m, p, source, headers in swift.requests
            if (m, p, source) == (method, path, None)]


def test_batch_is_a_method_of_the_policy_table():
    assert isinstance(methods().by_name['batch'], BatchMethod)


@pytest.mark.parametrize('path, method', [
    (PATH, 'PUT'), (PATH, 'GET'), (PATH, 'HEAD'), (PATH, 'DELETE'),
    ('/v1/AUTH_t/c', 'PUT'), ('/v1/AUTH_t', 'GET')])
def test_every_request_of_a_batch_tenant_is_tagged(path, method):
    mass, swift = batch_tenant()
    call(mass, path, method, body=BODY if method == 'PUT' else None)
    headers, = sent(swift, method, path)
    assert headers[tags.BATCH_HEADER] == tags.BATCH


@pytest.mark.parametrize('entry', [
    None,
    PolicyEntry('write', substore='', method='none'),
    PolicyEntry('write', substore='', method='cache'),
    PolicyEntry('write', substore='', method='merge'),
    # a method this proxy does not know (a later release's)
    PolicyEntry('write', substore='', method='sharded'),
])
def test_the_tag_follows_the_method_not_the_class(entry):
    mass, swift = batch_tenant(entry)
    call(mass, method='PUT', body=BODY)
    headers, = sent(swift, 'PUT', PATH)
    assert tags.BATCH_HEADER not in headers


def test_a_request_swift_refuses_is_not_tagged():
    """The tags go on once Swift authorised the request: a refused one
    carries none to the servers Swift's proxy asks before it decides (its
    container's info)."""
    mass, swift = batch_tenant()
    env = {}
    resp = call(mass, user='stranger', environ=env)
    assert resp.status_int == 403
    assert not [name for name in env if name.startswith(
        tags.BACKEND_TAG_PREFIX)]


@pytest.mark.parametrize('method', ['GET', 'PUT'])
def test_a_batch_tenants_request_goes_to_the_app_as_it_came(method):
    """Generations are the object servers' (swift_mass.generations): the
    proxy adds nothing to a request but the batch tag."""
    mass, _swift = batch_tenant()
    request = MassRequest(mass, request_env(method=method), 'AUTH_t')
    assert mass.methods.app_for(request, mass.app) is mass.app


def request_env(path=PATH, method='GET'):
    return Request.blank(path, method=method).environ


def test_a_batch_tenants_put_reaches_the_backend_tagged():
    swift = Swift()
    mass, _, _ = make('test-mass-batch:', swift, store_url=DOWN_REDIS_URL,
                      pin='batch', conf={'cache_backend': 'local'})
    put(mass)
    (_method, _path, _source, headers), = swift.object_requests('PUT')
    assert headers[tags.BATCH_HEADER] == tags.BATCH
    resp = call(mass)
    assert resp.body == BODY and 'X-Mass-Cache' not in resp.headers
