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
"""The proxy filter's control-loop half: counting, tagging by class,
durable decisions.  A worker-local store stands in for Redis."""
import json

import pytest

from swift.common.storage_policy import StoragePolicy, \
    StoragePolicyCollection
from swift.common.swob import Request, Response
from swift.common.utils import close_if_possible

from swift_mass import conf as config
from swift_mass.conf import ConfigError
from swift_mass.proxy import middleware as proxy
from swift_mass.control.entry import PolicyEntry
from swift_mass.control.stores.local import LocalStore
from swift_mass.control.substores import SubstoreCheck


@pytest.fixture(autouse=True)
def policies(monkeypatch):
    monkeypatch.setattr(config, 'POLICIES', StoragePolicyCollection([
        StoragePolicy(0, 'standard', is_default=True),
        StoragePolicy(1, 'fast'), StoragePolicy(2, 'bulk'),
        StoragePolicy(3, 'old', is_deprecated=True)]))


class Backend(object):
    """The app right of the filter: answers like a tiny Swift."""

    def __init__(self):
        self.requests = []
        self.sysmeta = {}

    def __call__(self, env, start_response):
        req = Request(env)
        self.requests.append((req.method, req.path, dict(req.headers),
                              dict(env)))
        if req.headers.get('X-Auth-Token') == 'bad':
            return Response(status=401)(env, start_response)
        if req.method == 'POST' and req.path.count('/') == 2:
            self.sysmeta.update(
                (k, v) for k, v in req.headers.items()
                if k.startswith('X-Account-Sysmeta-'))
            return Response(status=204)(env, start_response)
        if req.method == 'HEAD' and req.path.count('/') == 2:
            if req.path == '/v1/AUTH_missing':
                # what the proxy answers with account_autocreate
                return Response(status=204, headers={
                    'X-Backend-Fake-Account-Listing': 'yes'})(
                    env, start_response)
            return Response(status=204, headers=self.sysmeta)(
                env, start_response)
        if req.method == 'PUT':
            return Response(status=201)(env, start_response)
        # object GETs stream from the object servers: an iterator
        return Response(app_iter=iter([b'x' * 500, b'x' * 500]),
                        content_length=1000)(env, start_response)


def make(conf=None):
    backend = Backend()
    conf = dict({'read_substore': 'fast', 'write_substore': 'bulk',
                 'min_requests': '10', 'store': 'local'}, **(conf or {}))
    mass = proxy.MassMiddleware(backend, conf, store=LocalStore())
    return mass, backend


def call(mass, path='/v1/AUTH_t/c/o', method='GET', headers=None,
         environ=None, body=None):
    req = Request.blank(path, method=method, headers=headers or {},
                        environ=environ or {})
    if body is not None:
        req.body = body
    resp = req.get_response(mass)
    resp.body  # the client reads the whole response
    return resp


def pending(mass):
    return dict(mass.agent.window._pending)


def test_counts_after_the_body_is_sent():
    mass, _ = make()
    req = Request.blank('/v1/AUTH_t/c/o')
    resp = req.call_application(mass)
    status, headers, body_iter = resp
    assert pending(mass) == {}
    assert b''.join(body_iter) == b'x' * 1000
    body_iter.close()
    (key, counts), = pending(mass).items()
    assert key[0] == 'AUTH_t'
    assert counts['ops.GET'] == 1
    assert counts['bytes_out'] == 1000
    assert counts['size.4096'] == 1


def test_counts_a_client_that_goes_away():
    mass, _ = make()
    status, headers, body_iter = Request.blank(
        '/v1/AUTH_t/c/o').call_application(mass)
    body_iter.close()  # nothing read
    (_, counts), = pending(mass).items()
    assert counts['ops.GET'] == 1 and 'bytes_out' not in counts


def test_put_counts_bytes_in_and_size():
    mass, _ = make()
    call(mass, method='PUT', body=b'y' * 5000)
    (_, counts), = pending(mass).items()
    assert counts['ops.PUT'] == 1
    assert counts['bytes_in'] == 5000 and counts['size.65536'] == 1


def test_not_counted_unauthorised_subrequests_and_no_tenant():
    mass, _ = make()
    call(mass, headers={'X-Auth-Token': 'bad'})
    call(mass, environ={'swift.source': 'SLO'})
    call(mass, environ={'swift.source': 'SSC'})  # the GET half of a copy
    call(mass, path='/info')
    assert pending(mass) == {}


def test_s3_requests_and_copies_are_counted_once():
    mass, _ = make()
    call(mass, environ={'swift.source': 'S3'})
    call(mass, method='PUT', body=b'c' * 10,
         environ={'swift.source': 'SSC'})
    (_, counts), = pending(mass).items()
    assert (counts['ops.GET'], counts['ops.COPY']) == (1, 1)
    assert 'ops.PUT' not in counts


def test_bad_content_length_is_not_an_error():
    mass, backend = make()
    req = Request.blank('/v1/AUTH_t/c/o', method='PUT')
    req.environ['CONTENT_LENGTH'] = 'abc'
    resp = req.get_response(mass)
    resp.body
    assert backend.requests  # passed on; Swift answers it
    (_, counts), = pending(mass).items()
    assert 'bytes_in' not in counts
    assert not [k for k in counts if k.startswith('size.')]


def test_control_loop_off_counts_nothing():
    mass, backend = make({'control_loop': 'false'})
    call(mass)
    assert pending(mass) == {}
    assert backend.requests[-1][2]['X-Backend-Mass-Priority'] == '5'


def test_class_tag_after_a_decision_and_durable_copy():
    mass, backend = make()
    for _ in range(12):
        call(mass, method='PUT', body=b'z')
    assert mass.agent.tick()
    entry = mass.agent.policy('AUTH_t')
    assert (entry.cls, entry.substore, entry.method) == \
        ('write', 'bulk', 'batch')
    # the decision went to account sysmeta with a MASS subrequest
    method, path, headers, env = [r for r in backend.requests
                                  if r[0] == 'POST'][0]
    assert path == '/v1/AUTH_t' and env['swift.source'] == 'MASS'
    assert json.loads(headers['X-Account-Sysmeta-Mass-Policy']) == \
        entry.to_dict()
    call(mass)
    headers, env = backend.requests[-1][2], backend.requests[-1][3]
    assert headers['X-Backend-Mass-Class'] == 'write'
    assert headers['X-Backend-Mass-Batch'] == 'true'
    # the tenant is the path's account, in no header
    assert sorted(name for name in headers
                  if name.startswith('X-Backend-Mass-')) == [
        'X-Backend-Mass-Batch', 'X-Backend-Mass-Class',
        'X-Backend-Mass-Priority']


def test_batch_tag_follows_the_method_not_the_class():
    # a write-dominated tenant whose batch method is gone (validation
    # deleted it, or an operator pinned another) keeps no batch slots
    mass, backend = make({'write_method': 'none'})
    for _ in range(12):
        call(mass, method='PUT', body=b'z')
    assert mass.agent.tick()
    assert mass.agent.policy('AUTH_t').method == 'none'
    call(mass, method='PUT', body=b'z')
    headers = backend.requests[-1][2]
    assert headers['X-Backend-Mass-Class'] == 'write'
    assert 'X-Backend-Mass-Batch' not in headers
    call(mass, method='PUT', body=b'z',
         headers={'X-Backend-Mass-Batch': 'true'})
    assert 'X-Backend-Mass-Batch' not in backend.requests[-1][2]


def test_client_cannot_forge_its_class():
    mass, backend = make()
    call(mass, headers={'X-Backend-Mass-Class': 'read',
                        'X-Mass-Class': 'read'})
    headers = backend.requests[-1][2]
    assert 'X-Backend-Mass-Class' not in headers
    assert 'X-Mass-Class' not in headers


def test_decision_recalled_from_sysmeta_after_store_loss():
    mass, backend = make()
    for _ in range(12):
        call(mass, method='PUT', body=b'z')
    mass.agent.tick()
    entry = mass.agent.policy('AUTH_t')
    # a new proxy (or a Redis that lost everything) on the same account
    fresh = proxy.MassMiddleware(backend, {
        'read_substore': 'fast', 'write_substore': 'bulk',
        'min_requests': '10', 'store': 'local'}, store=LocalStore())
    call(fresh)
    fresh.agent.tick()
    assert fresh.agent.policy('AUTH_t') == entry


@pytest.mark.parametrize('option, value, message', [
    ('read_substore', 'gold', "[filter:mass] read_substore = 'gold' is not "
     "valid; allowed: a storage policy of swift.conf that is not "
     "deprecated (bulk, fast, standard), or empty for the default policy"),
    ('write_substore', 'old', 'write_substore'),
    ('mixed_method', 'fast', "[filter:mass] mixed_method = 'fast' is not "
     "valid; allowed: one of cache, batch, merge, none"),
    ('read_share', '1.5', 'read_share'),
    ('write_share', '0.9', 'write_share must be below read_share'),
    ('min_requests', '0', 'min_requests'),
    ('window_seconds', '5', 'window_seconds'),
    ('bucket_seconds', '40', 'at least twice bucket_seconds'),
    ('interval', '0', 'interval'),
    ('control_loop', 'sure', 'control_loop'),
    ('store', 'mysql', 'store'),
    ('redis_url', 'http://x', 'redis_url'),
])
def test_bad_options_stop_startup(option, value, message):
    with pytest.raises(ConfigError) as err:
        proxy.filter_factory({}, **{option: value})(Backend())
    assert message in str(err.value)
    assert option in str(err.value) or 'read_share' in str(err.value)


def test_no_sysmeta_post_creates_a_missing_account():
    mass, backend = make()
    for _ in range(12):
        call(mass, path='/v1/AUTH_missing/c/o')
    mass.agent.tick()
    assert mass.agent.policy('AUTH_missing').cls == 'read'
    assert not [r for r in backend.requests if r[0] == 'POST']


def test_a_body_in_memory_can_be_served_twice():
    # object_versioning drains a DELETE's response, then returns that same
    # response to its client: a list body must survive it (it did not when
    # every body was wrapped: clients got 404s without their 70 bytes)
    mass, _ = make()

    def error_app(env, start_response):
        start_response('404 Not Found', [('Content-Length', '9')])
        return [b'not found']
    mass.app = error_app
    status, headers, body = Request.blank(
        '/v1/AUTH_t/c/o', method='DELETE').call_application(mass)
    assert b''.join(body) == b'not found'
    assert b''.join(body) == b'not found'
    # a DELETE's 404 changed nothing: it is not counted (monitor.counted)
    assert not pending(mass)
    status, headers, body = Request.blank(
        '/v1/AUTH_t/c/o', method='GET').call_application(mass)
    assert b''.join(body) == b'not found'
    assert b''.join(body) == b'not found'
    (_, counts), = pending(mass).items()
    assert counts['ops.GET'] == 1 and counts['bytes_out'] == 9


def test_decisions_are_not_logged_under_a_subrequests_txn_id():
    # the sysmeta HEAD's transaction id stayed on the loop's green thread,
    # so the decisions logged after it claimed to belong to that request
    from swift.common.utils import get_logger
    mass, backend = make()
    logger = get_logger({}, log_route='mass-test')
    mass.sysmeta.logger = logger

    def app_that_sets_a_txn_id(env, start_response):
        logger.txn_id = 'tx-sysmeta-head'
        return backend(env, start_response)
    mass.sysmeta.app = app_that_sets_a_txn_id
    logger.txn_id = None
    for _ in range(12):
        call(mass, method='PUT', body=b'z')
    mass.agent.tick()
    assert mass.agent.policy('AUTH_t').cls == 'write'
    assert logger.txn_id is None


def test_recall_after_store_loss_by_a_leader_that_saw_no_policy_before():
    # Two proxies share the store and the account.  The one that leads
    # after Redis lost everything had once found no policy in the tenant's
    # sysmeta; the other decided and saved one meanwhile.  The recall must
    # read the sysmeta again, not trust the old absence (it did: the tenant
    # came back unclassified, on the SAIO with its second proxy).
    backend, store = Backend(), LocalStore()
    conf = {'read_substore': 'fast', 'write_substore': 'bulk',
            'min_requests': '10', 'store': 'local'}
    first = proxy.MassMiddleware(backend, conf, store=store)
    second = proxy.MassMiddleware(backend, conf, store=store)
    first.agent.owner, second.agent.owner = 'proxy1:1', 'proxy2:1'

    def tick(mass):
        mass.agent._next_tick = 0
        mass.agent.tick()

    call(second, method='HEAD')
    tick(second)  # leads; nothing in sysmeta, too few requests
    assert second.agent.is_leader and second.agent.policy('AUTH_t') is None
    store.release_lease('proxy2:1')
    for _ in range(12):
        call(first, method='PUT', body=b'z')
    tick(first)  # leads now, decides and saves
    assert first.agent.policy('AUTH_t').cls == 'write'
    tick(second)  # follows: loads the table
    assert second.agent.policy('AUTH_t').cls == 'write'
    # Redis restarted empty; the second proxy leads
    store.__init__()
    second.agent.table_version = first.agent.table_version = -1
    call(second, method='HEAD')
    tick(second)
    assert second.agent.is_leader
    assert second.agent.policy('AUTH_t').cls == 'write'


def test_a_reseller_admins_head_is_counted_and_shows_the_mark():
    # one request, both ends: the answer gets the mark, the window a count
    mass, backend = make()
    backend.sysmeta['X-Account-Sysmeta-Mass-Urgent'] = 'true'
    calls = []

    def start_response(status, headers, exc_info=None):
        calls.append((status, dict(headers)))

    body = mass(Request.blank('/v1/AUTH_t', method='HEAD', environ={
        'reseller_request': True}).environ, start_response)
    close_if_possible(body)
    [(status, headers)] = calls
    assert status.startswith('204') and headers['X-Mass-Urgent'] == 'true'
    (_, counts), = pending(mass).items()
    assert counts['ops.HEAD'] == 1


def test_a_new_workers_first_request_follows_the_table():
    # a worker's loop starts with its first request; before, that request
    # (and every one until the loop's first tick) was tagged as if the
    # table were empty, so a second proxy worker routed a pinned writer's
    # new container to the default policy
    store = LocalStore()
    store.put_table({'AUTH_t': PolicyEntry(
        'write', substore='bulk', method='batch', pinned=True)})
    backend = Backend()
    mass = proxy.MassMiddleware(backend, {
        'read_substore': 'fast', 'write_substore': 'bulk', 'store': 'local'},
        store=store)
    call(mass, method='PUT', path='/v1/AUTH_t/new')
    headers = backend.requests[-1][2]
    assert headers['X-Backend-Mass-Class'] == 'write'
    # routing asked whether the container exists: the entry's substore
    # was in force
    assert ('HEAD', '/v1/AUTH_t/new') in [r[:2] for r in backend.requests]


def test_a_first_refresh_that_fails_leaves_the_request_untouched():
    class Down(LocalStore):
        def table_changes(self, since):
            raise ConnectionError('store down')
    backend = Backend()
    mass = proxy.MassMiddleware(backend, {'store': 'local'}, store=Down())
    assert call(mass, method='PUT', path='/v1/AUTH_t/new').status_int == 201
    assert 'X-Backend-Mass-Class' not in backend.requests[-1][2]


def test_the_leader_checks_the_substores_unless_told_to_trust_them():
    mass, _ = make()
    assert isinstance(mass.agent.substores, SubstoreCheck)
    assert mass.agent.substores.swift_dir == mass.conf.swift_dir
    mass, _ = make({'substore_routing': 'configured'})
    assert mass.agent.substores is None


def test_an_operators_own_work_on_a_tenants_account_is_not_counted():
    """swift-mass's commands (a move's copies, fences and deletes) say so
    with X-Mass-Operator: a reseller admin's such requests are not the
    tenant's workload (a move's writes made a reading tenant a writer);
    anyone else's are counted, and the header goes no further."""
    mass, backend = make()
    operator = {'X-Mass-Operator': 'true'}
    call(mass, method='PUT', body=b'y', headers=operator,
         environ={'reseller_request': True})
    call(mass, headers=operator, environ={'reseller_request': True})
    assert pending(mass) == {}
    # a tenant that sends the header is counted as ever
    call(mass, method='PUT', body=b'y', headers=operator)
    # and a reseller admin's request without it (tests and tools that act
    # as the tenant)
    call(mass, environ={'reseller_request': True})
    (_, counts), = pending(mass).items()
    assert (counts['ops.PUT'], counts['ops.GET']) == (1, 1)
    assert not any('Mass-Operator' in name
                   for _, _, headers, _ in backend.requests
                   for name in headers)
