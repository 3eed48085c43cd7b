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
"""The proxy filter's routing of new containers to a tenant's substore,
against a backend that authorises requests as Swift's proxy server does and
keeps containers and their policies like Swift's container servers do."""
import pytest

from swift.common.memcached import MemcacheRing
from swift.common.middleware.tempauth import TempAuth
from swift.common.storage_policy import StoragePolicy, \
    StoragePolicyCollection
from swift.common.swob import Request, Response
from swift.proxy.controllers.base import get_cache_key, \
    headers_to_container_info

from swift_mass import conf as config
from swift_mass.proxy import middleware as proxy
from swift_mass.proxy import request as mass_request
from swift_mass.control.stores.local import LocalStore
from tests.unit.helpers import MEMCACHE_SERVER, Logger

POLICY_INDEX = {'standard': 0, 'fast': 1, 'bulk': 2}


@pytest.fixture(autouse=True)
def policies(monkeypatch):
    monkeypatch.setattr(config, 'POLICIES', StoragePolicyCollection([
        StoragePolicy(0, 'standard', is_default=True),
        StoragePolicy(1, 'fast'), StoragePolicy(2, 'bulk')]))


class Swift(object):
    """The proxy-server right of Mass: it asks swift.authorize before
    anything else (no container PUT delays its denial) and answers a
    denial itself; accounts exist, containers keep the policy they were
    created with, a PUT naming another one is refused with 409, as the
    container servers do."""

    def __init__(self):
        self.containers = {}     # path -> policy index
        self.requests = []       # (method, path, headers, environ)
        self.healthy = True
        self.put_status = None   # force the status of container PUTs

    def __call__(self, env, start_response):
        req = Request(env)
        authorize = env.get('swift.authorize')
        if authorize is not None:
            denial = authorize(req)
            if denial:
                return denial(env, start_response)
        # what reaches the storage servers
        self.requests.append((req.method, env['PATH_INFO'],
                              dict(req.headers), dict(env)))
        depth = env['PATH_INFO'].rstrip('/').count('/')
        if depth == 2:  # the account: exists; its sysmeta is not kept
            return Response(status=204)(env, start_response)
        if depth == 3:
            return self.container(req, env, start_response)
        return Response(status=201)(env, start_response)

    def container(self, req, env, start_response):
        path = env['PATH_INFO'].rstrip('/')
        if req.method == 'HEAD':
            if not self.healthy:
                return Response(status=503)(env, start_response)
            if path not in self.containers:
                return Response(status=404)(env, start_response)
            return Response(status=204, headers={
                'X-Backend-Storage-Policy-Index': str(
                    self.containers[path])})(env, start_response)
        if req.method != 'PUT':
            return Response(status=204)(env, start_response)
        if self.put_status:
            return Response(status=self.put_status)(env, start_response)
        # what the proxy does to a PUT's headers in the environ (clean_acls)
        if 'X-Container-Read' in req.headers:
            req.headers['X-Container-Read'] = 'rewritten by the proxy'
        name = req.headers.get('X-Storage-Policy')
        wanted = POLICY_INDEX[name] if name else None
        if path in self.containers:
            if wanted is not None and wanted != self.containers[path]:
                return Response(status=409, body=b'<html>Conflict</html>')(
                    env, start_response)
            return Response(status=202)(env, start_response)
        self.containers[path] = wanted or 0
        return Response(status=201)(env, start_response)

    def puts(self, path):
        return [r for r in self.requests if r[0] == 'PUT' and r[1] == path]

    def heads(self, path):
        return [r for r in self.requests if r[0] == 'HEAD' and r[1] == path]


@pytest.fixture
def lookups(monkeypatch):
    """The containers whose existence routing asked about (other parts of
    Mass may ask too: the backend's HEADs alone would not tell)."""
    seen = []
    real = mass_request.get_container_info

    def counting(env, app, swift_source=None):
        seen.append(env['PATH_INFO'])
        return real(env, app, swift_source=swift_source)
    monkeypatch.setattr(mass_request, "get_container_info", counting)
    return seen


def make(pin='write', ring=None):
    swift = Swift()
    logger = Logger()
    # urgent marks off: their lookups are test_marks' business
    mass = proxy.MassMiddleware(swift, {
        'read_substore': 'fast', 'write_substore': 'bulk',
        'mixed_substore': '', 'urgent_recheck_seconds': '0',
        'store': 'local'}, logger=logger, store=LocalStore())
    if pin:
        mass.store.set_pin('AUTH_t', dict(
            {'class': pin}, **({'ring': ring} if ring is not None else {})))
        mass.agent.tick()
    del swift.requests[:]  # the durable copy of the pin
    del logger.counters[:], logger.lines[:]
    return mass, swift, logger


def call(mass, path='/v1/AUTH_t/c', method='PUT', headers=None,
         environ=None):
    req = Request.blank(path, method=method, headers=headers or {},
                        environ=environ or {})
    resp = req.get_response(mass)
    resp.body
    return resp


def test_new_container_lands_on_the_tenants_substore(lookups):
    mass, swift, logger = make()
    resp = call(mass)
    assert resp.status_int == 201
    assert swift.containers['/v1/AUTH_t/c'] == POLICY_INDEX['bulk']
    (_, _, headers, env), = swift.puts('/v1/AUTH_t/c')
    assert headers['X-Storage-Policy'] == 'bulk'
    # one pre-authorised HEAD learnt that it did not exist
    assert lookups == ['/v1/AUTH_t/c']
    (_, _, _, head_env), = swift.heads('/v1/AUTH_t/c')
    assert head_env['swift.source'] == 'MASS'
    assert logger.counters == ['routed']
    assert [line for level, line in logger.lines if level == 'info'] == [
        'mass: routed new container /v1/AUTH_t/c of AUTH_t to storage '
        'policy bulk: 201']
    # counted once, as the tenant's PUT
    (_, counts), = mass.agent.window._pending.items()
    assert counts['ops.PUT'] == 1


def anonymous_put(app, swift, memcached):
    """An anonymous container PUT to ``app`` behind Swift's tempauth: the
    answer, what reached the storage servers of ``swift`` (the proxy app),
    and the keys it left in memcache."""
    memcached.items.clear()
    resp = Request.blank('/v1/AUTH_t/c', method='PUT', environ={
        'swift.cache': MemcacheRing([MEMCACHE_SERVER], logger=Logger())
    }).get_response(TempAuth(app, {}))
    return resp, [r[:2] for r in swift.requests], set(memcached.items)


def test_an_unauthorised_put_gets_swifts_answer_and_costs_nothing_more(
        lookups, fake_memcached):
    """Routing looked the container up before Swift authorised the PUT:
    an anonymous PUT to a routed tenant cost a backend HEAD of the
    container, and its info in memcache, that Swift alone does not make
    (tempauth's own account lookup is Swift's)."""
    swift_alone = Swift()
    alone, reached_alone, cached_alone = anonymous_put(
        swift_alone, swift_alone, fake_memcached)
    mass, swift, logger = make()
    resp, reached, cached = anonymous_put(mass, swift, fake_memcached)
    assert resp.status_int == 401
    assert (resp.status, resp.headers, resp.body) == (
        alone.status, alone.headers, alone.body)
    assert reached == reached_alone == [('HEAD', '/v1/AUTH_t')]
    assert cached == cached_alone
    assert lookups == [] and logger.counters == []


def test_the_lookup_waits_for_the_auth_systems_yes(lookups):
    mass, swift, logger = make()
    asked = []

    def authorize(req):
        asked.append(list(lookups))

    resp = call(mass, environ={'swift.authorize': authorize})
    assert resp.status_int == 201
    assert asked == [[]]  # the proxy asked before anything was looked up
    assert lookups == ['/v1/AUTH_t/c']
    assert swift.containers['/v1/AUTH_t/c'] == POLICY_INDEX['bulk']
    assert logger.counters == ['routed']


def test_a_retried_put_is_authorised_again_and_looked_up_once(lookups):
    mass, swift, logger = make()
    swift.containers['/v1/AUTH_t/c'] = 0
    infocache = {get_cache_key('AUTH_t', 'c'):
                 headers_to_container_info({}, 404)}
    asked = []
    resp = call(mass, environ={'swift.infocache': infocache,
                               'swift.authorize': asked.append})
    assert resp.status_int == 202
    assert len(asked) == 2 and lookups == ['/v1/AUTH_t/c']
    first, second = swift.puts('/v1/AUTH_t/c')
    assert first[2]['X-Storage-Policy'] == 'bulk'
    assert 'X-Storage-Policy' not in second[2]
    assert logger.counters == ['route_conflict']


def test_logs_name_any_tenant_on_one_line():
    mass, swift, logger = make(pin=None)
    # a WSGI string: UTF-8 bytes as latin-1, and a newline
    mass.store.set_pin('AUTH_\xc3\xa9\nx', {'class': 'write'})
    mass.agent.tick()
    del logger.lines[:]
    assert call(mass, path='/v1/AUTH_%C3%A9%0Ax/c').status_int == 201
    assert [line for level, line in logger.lines if level == 'info'] == [
        'mass: routed new container /v1/AUTH_%C3%A9%0Ax/c of '
        'AUTH_%C3%A9%0Ax to storage policy bulk: 201']


def test_existing_container_keeps_its_policy():
    mass, swift, logger = make()
    swift.containers['/v1/AUTH_t/c'] = 0
    resp = call(mass)
    assert resp.status_int == 202
    (_, _, headers, _), = swift.puts('/v1/AUTH_t/c')
    assert 'X-Storage-Policy' not in headers
    assert swift.containers['/v1/AUTH_t/c'] == 0
    assert 'routed' not in logger.counters


def test_explicit_policy_wins_without_a_lookup(lookups):
    mass, swift, _ = make()
    resp = call(mass, headers={'X-Storage-Policy': 'standard'})
    assert resp.status_int == 201
    assert swift.containers['/v1/AUTH_t/c'] == 0
    assert lookups == []


def test_stale_info_saying_absent_gets_swifts_own_answer():
    # the info cache says 404, but the container exists in another policy
    # (created through another proxy, or the cache is stale): the backend
    # answers 409 and the PUT goes again as the client sent it
    mass, swift, logger = make()
    swift.containers['/v1/AUTH_t/c'] = 0
    infocache = {get_cache_key('AUTH_t', 'c'):
                 headers_to_container_info({}, 404)}
    resp = call(mass, headers={'X-Container-Read': '.r:*',
                               'X-Container-Meta-Colour': 'blue'},
                environ={'swift.infocache': infocache})
    assert resp.status_int == 202
    assert b'Conflict' not in resp.body
    first, second = swift.puts('/v1/AUTH_t/c')
    assert first[2]['X-Storage-Policy'] == 'bulk'
    assert 'X-Storage-Policy' not in second[2]
    # the retry carries the client's headers, not what the first attempt
    # left in the environ
    assert second[2]['X-Container-Read'] == '.r:*'
    assert second[2]['X-Container-Meta-Colour'] == 'blue'
    # and the Mass tags it had, set before the first attempt
    assert second[2]['X-Backend-Mass-Priority'] == '5'
    assert second[2]['X-Backend-Mass-Class'] == 'write'
    assert swift.containers['/v1/AUTH_t/c'] == 0
    assert not swift.heads('/v1/AUTH_t/c')  # the cache answered
    assert logger.counters == ['route_conflict']
    (_, counts), = mass.agent.window._pending.items()
    assert counts['ops.PUT'] == 1


def test_a_second_409_is_the_clients_answer():
    mass, swift, logger = make()
    swift.put_status = 409
    resp = call(mass)
    assert resp.status_int == 409
    assert len(swift.puts('/v1/AUTH_t/c')) == 2  # retried once only
    assert logger.counters == ['route_conflict']


@pytest.mark.parametrize('status', [201, 202, 400, 403, 503, 507])
def test_other_answers_are_passed_on_as_they_are(status):
    mass, swift, logger = make()
    swift.put_status = status
    resp = call(mass)
    assert resp.status_int == status
    assert len(swift.puts('/v1/AUTH_t/c')) == 1
    assert logger.counters == (['routed'] if status < 300 else [])


def test_stale_info_saying_present_leaves_the_put_to_swift():
    mass, swift, _ = make()
    infocache = {get_cache_key('AUTH_t', 'c'):
                 headers_to_container_info({}, 204)}
    resp = call(mass, environ={'swift.infocache': infocache})
    assert resp.status_int == 201
    assert swift.containers['/v1/AUTH_t/c'] == 0
    assert not swift.heads('/v1/AUTH_t/c')


def test_unknown_existence_is_left_to_swift():
    mass, swift, _ = make()
    swift.healthy = False
    resp = call(mass)
    assert resp.status_int == 201
    (_, _, headers, _), = swift.puts('/v1/AUTH_t/c')
    assert 'X-Storage-Policy' not in headers


def test_object_requests_do_no_extra_work(lookups, monkeypatch):
    mass, swift, logger = make()
    decided = []
    monkeypatch.setattr(mass_request.routing, "substore_of",
                        lambda *args: decided.append(args))
    resp = call(mass, path='/v1/AUTH_t/c/o')
    assert resp.status_int == 201
    (_, _, headers, _), = swift.puts('/v1/AUTH_t/c/o')
    assert 'X-Storage-Policy' not in headers
    assert (lookups, decided, logger.counters) == ([], [], [])


@pytest.mark.parametrize('pin,ring', [(None, None), ('mixed', None),
                                      ('write', '')])
def test_no_substore_no_routing(pin, ring, lookups):
    mass, swift, _ = make(pin, ring)
    call(mass)
    (_, _, headers, _), = swift.puts('/v1/AUTH_t/c')
    assert 'X-Storage-Policy' not in headers
    assert swift.containers['/v1/AUTH_t/c'] == 0
    assert lookups == []


def test_read_tenant_goes_to_its_own_substore():
    mass, swift, _ = make('read')
    call(mass, path='/v1/AUTH_t/pics')
    assert swift.containers['/v1/AUTH_t/pics'] == POLICY_INDEX['fast']


@pytest.mark.parametrize('source', ['S3', 'EA'])
def test_containers_that_middlewares_create_for_clients_are_routed(source):
    # s3api's PUT Bucket and bulk's extract-archive create the client's
    # own containers
    mass, swift, _ = make()
    call(mass, path='/v1/AUTH_t/bucket', environ={'swift.source': source})
    assert swift.containers['/v1/AUTH_t/bucket'] == POLICY_INDEX['bulk']


def test_object_versioning_containers_stay_with_their_parent(lookups):
    mass, swift, _ = make()
    # object_versioning creates the versions container first, in the
    # client's policy (here the default), then sends the parent's PUT
    # with the versions container's name in sysmeta
    versions = '/v1/AUTH_t/\x00versions\x00c'
    call(mass, path=versions, environ={'swift.source': 'OV'},
         headers={'X-Backend-Allow-Reserved-Names': 'true'})
    call(mass, headers={'X-Container-Sysmeta-Versions-Container':
                        '%00versions%00c'})
    assert swift.containers[versions] == 0
    assert swift.containers['/v1/AUTH_t/c'] == 0
    assert lookups == []


@pytest.mark.parametrize('path', ['/v1/AUTH_t/.hidden',
                                  '/v1/AUTH_t/\x00reserved'])
def test_reserved_and_system_names_are_never_touched(path, lookups):
    mass, swift, _ = make()
    call(mass, path=path)
    (_, _, headers, _), = swift.puts(path)
    assert 'X-Storage-Policy' not in headers
    assert lookups == []
