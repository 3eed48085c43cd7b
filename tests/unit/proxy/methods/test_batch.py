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
from tests.unit.helpers import Logger, RecordingApp
from tests.unit.proxy.methods.fakes import BODY, DOWN_REDIS_URL, PATH, \
    MassConf, Swift, call, make, put


def methods():
    return Methods(Swift(), MassConf({'cache_backend': 'local',
                                      'store': 'local'}), Logger())


def request_env(path=PATH, method='GET'):
    return Request.blank(path, method=method).environ


BATCH = PolicyEntry('write', substore='', method='batch')


def test_batch_is_a_method_of_the_policy_table():
    assert isinstance(methods().by_name['batch'], BatchMethod)


@pytest.mark.parametrize('path, method', [
    (PATH, 'PUT'), (PATH, 'GET'), (PATH, 'HEAD'), (PATH, 'DELETE'),
    ('/v1/AUTH_t/c', 'PUT'), ('/v1/AUTH_t', 'GET')])
def test_every_request_of_a_batch_tenant_is_tagged(path, method):
    env = request_env(path, method)
    methods().app_for(env, BATCH, RecordingApp())
    assert env[tags.BATCH_ENV] == tags.BATCH


@pytest.mark.parametrize('entry', [
    None,
    PolicyEntry('write', substore='', method='none'),
    PolicyEntry('write', substore='', method='cache'),
    PolicyEntry('write', substore='', method='merge'),
    # a method this proxy does not know (a later release's)
    PolicyEntry('write', substore='', method='sharded'),
])
def test_the_tag_follows_the_method_not_the_class(entry):
    env = request_env(method='PUT')
    methods().app_for(env, entry, RecordingApp())
    assert tags.BATCH_ENV not in env


def test_a_batch_tenants_read_goes_to_the_app_as_it_came():
    app = RecordingApp()
    assert methods().app_for(request_env(), BATCH, app) is app


def test_a_batch_tenants_put_goes_to_the_backend_as_it_is():
    """Generations are the object servers' (swift_mass.generations): the
    proxy adds nothing to a write but the batch tag."""
    found = methods()
    app = RecordingApp()
    assert found.app_for(request_env(method='PUT'), BATCH, app) is app


def test_a_batch_tenants_put_reaches_the_backend_tagged():
    swift = Swift()
    mass, _, _ = make('test-mass-batch:', swift, store_url=DOWN_REDIS_URL,
                      pin='batch', conf={'cache_backend': 'local'})
    put(mass)
    (_method, _path, _source, headers), = swift.object_requests('PUT')
    assert headers[tags.BATCH_HEADER] == tags.BATCH
    resp = call(mass)
    assert resp.body == BODY and 'X-Mass-Cache' not in resp.headers
