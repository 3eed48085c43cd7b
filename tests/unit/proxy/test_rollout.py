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
"""Rollout controls on the proxy (docs/rollout.md): observe mode, which
decides as active mode does and changes no request, and the per-account
opt-out (opt_out_accounts, and the X-Mass-Opt-Out account mark), which
serves an account exactly as without Mass.  A worker-local store stands in
for Redis, and fakeredis where the cache needs one."""
import json

import pytest
from swift.common import registry
from swift.common.swob import Request, Response

from swift_mass import tags
from swift_mass.control.stores.local import LocalStore
from swift_mass.proxy import middleware as proxy
from tests.unit.helpers import Logger
from tests.unit.proxy import test_marks, test_middleware_routing as routing
from tests.unit.proxy.methods import fakes
from tests.unit.proxy.test_middleware_control import call, make, pending, \
    policies  # noqa: F401 (the storage policies, for every test here)

OPT_OUT_SYSMETA = 'X-Account-Sysmeta-Mass-Opt-Out'


def mass_tags(headers):
    return sorted(name for name in headers
                  if name.lower().startswith('x-backend-mass-'))


def writes(mass, n=12):
    for _ in range(n):
        call(mass, method='PUT', body=b'z')


def tick(mass):
    mass.agent._next_tick = 0  # due now, whatever the interval
    assert mass.agent.tick()


# -- observe mode ------------------------------------------------------------

def test_observe_mode_decides_as_active_mode_and_tags_nothing():
    mass, backend = make({'mode': 'observe'})
    writes(mass)
    # counted as in active mode
    (_, counts), = pending(mass).items()
    assert counts['ops.PUT'] == 12
    tick(mass)
    entry = mass.agent.policy('AUTH_t')
    assert (entry.cls, entry.substore, entry.method) == \
        ('write', 'bulk', 'batch')
    # and kept durably, as every decision
    saved = [r for r in backend.requests
             if 'X-Account-Sysmeta-Mass-Policy' in r[2]]
    assert json.loads(saved[0][2]['X-Account-Sysmeta-Mass-Policy']) == \
        entry.to_dict()
    call(mass, method='PUT', body=b'z',
         headers={'X-Backend-Mass-Priority': '9'})
    headers, env = backend.requests[-1][2], backend.requests[-1][3]
    # no priority, class or batch tag (a client's forged one removed)
    assert mass_tags(headers) == []
    # nor anything else of Mass's in the environ
    assert [key for key in env if key.startswith('mass.')] == []


def test_observe_mode_routes_no_new_container():
    swift = routing.Swift()
    mass = proxy.MassMiddleware(swift, {
        'mode': 'observe', 'write_substore': 'bulk', 'store': 'local',
        'urgent_recheck_seconds': '0'}, logger=Logger(), store=LocalStore())
    mass.store.set_pin('AUTH_t', {'class': 'write'})
    mass.agent.tick()
    assert mass.agent.table['AUTH_t'].substore == 'bulk'
    assert routing.call(mass, '/v1/AUTH_t/c').status_int == 201
    (_, _, headers, _), = swift.puts('/v1/AUTH_t/c')
    assert 'X-Storage-Policy' not in headers
    assert swift.containers['/v1/AUTH_t/c'] == 0  # the default policy
    assert mass_tags(headers) == []


def test_observe_mode_caches_nothing_the_table_says_to_cache(prefix):
    mass, swift, logger = fakes.make(prefix, conf={'mode': 'observe'})
    assert mass.agent.table['AUTH_t'].method == 'cache'
    fakes.put(mass)
    for _ in range(3):
        resp = fakes.call(mass)
        assert resp.body == fakes.BODY
        assert tags.CACHE_RESPONSE_HEADER not in resp.headers
    assert len(swift.object_requests('GET')) == 3
    assert not [c for c in logger.counters if c.startswith('cache.')]


def test_a_reload_to_observe_keeps_nothing_of_active_and_back(prefix):
    active, swift, _ = fakes.make(prefix)
    fakes.put(active)
    fakes.call(active)
    assert fakes.call(active).headers[tags.CACHE_RESPONSE_HEADER] == 'hit'
    # a reload: new workers, the shared store and the cache as they were
    observing, _, logger = fakes.make(prefix, swift=swift,
                                      conf={'mode': 'observe'})
    resp = fakes.call(observing)
    assert tags.CACHE_RESPONSE_HEADER not in resp.headers
    assert swift.object_requests('GET')[-1][3].get(
        'X-Backend-Mass-Class') is None
    # written meanwhile, through the observing proxy: the object servers
    # still bump it, so active mode, back, serves no stale body
    fakes.put(observing, body=b'new')
    back, _, _ = fakes.make(prefix, swift=swift)
    assert fakes.call(back).body == b'new'
    assert not [c for c in logger.counters if c.startswith('cache.')]


def test_observe_mode_sends_no_urgent_tag():
    mass, backend = make({'mode': 'observe'})
    backend.sysmeta['X-Account-Sysmeta-Mass-Urgent'] = 'true'
    call(mass)
    assert mass_tags(backend.requests[-1][2]) == []
    # the control: active mode tags it
    mass, backend = make()
    backend.sysmeta['X-Account-Sysmeta-Mass-Urgent'] = 'true'
    call(mass)
    assert backend.requests[-1][2]['X-Backend-Mass-Urgent'] == 'true'


def test_observe_mode_still_refuses_writes_to_a_container_being_moved():
    # swift-mass migrate relies on it, whatever the mode
    filt, app = test_marks.migrating_filter(mode='observe')
    assert test_marks.marked('/v1/AUTH_t/c/o', 'PUT').get_response(
        filt).status_int == 503
    assert app.environs == []


def test_the_mode_is_in_info():
    make({'mode': 'observe'})
    assert registry.get_swift_info()['mass']['mode'] == 'observe'
    make()
    assert registry.get_swift_info()['mass']['mode'] == 'active'


# -- opt-out -----------------------------------------------------------------

def routed(conf=None, swift=None):
    """A proxy whose AUTH_t and AUTH_o are pinned to write (substore
    bulk), in front of a Swift that routes."""
    swift = swift or routing.Swift()
    logger = Logger()
    mass = proxy.MassMiddleware(swift, dict({
        'write_substore': 'bulk', 'urgent_recheck_seconds': '30',
        'store': 'local'},
        **(conf or {})), logger=logger, store=LocalStore())
    for tenant in ('AUTH_t', 'AUTH_o'):
        mass.store.set_pin(tenant, {'class': 'write'})
    mass.agent.tick()
    del swift.requests[:]
    return mass, swift, logger


def test_a_configured_account_is_served_as_without_mass():
    mass, swift, logger = routed({'opt_out_accounts': 'AUTH_t'})
    # the leader took its policy away at its first tick, pin or not
    assert mass.agent.policy('AUTH_t') is None
    entry = mass.agent.table['AUTH_t']
    assert entry.opted_out is True
    assert entry.reason == 'opted out (opt_out_accounts)'
    assert any('AUTH_t: opted out (opt_out_accounts)' in line
               for _, line in logger.lines)
    routing.call(mass, '/v1/AUTH_t/c')
    routing.call(mass, '/v1/AUTH_t/c/o')
    puts = [r for r in swift.requests if r[0] == 'PUT']
    assert [r[1] for r in puts] == ['/v1/AUTH_t/c', '/v1/AUTH_t/c/o']
    for _, path, headers, env in puts:
        assert 'X-Storage-Policy' not in headers, path
        assert mass_tags(headers) == [], path
        assert [key for key in env if key.startswith('mass.')] == [], path
    assert swift.containers['/v1/AUTH_t/c'] == 0
    # no lookup of its account's marks: the configuration says it all
    assert 'urgent.lookup' not in logger.counters
    # counted, opted out
    counts = [c for (tenant, _), c in pending(mass).items()
              if tenant == 'AUTH_t']
    assert sum(c['opted_out'] for c in counts) == 2
    # the control: another tenant is routed
    routing.call(mass, '/v1/AUTH_o/c')
    assert swift.containers['/v1/AUTH_o/c'] == routing.POLICY_INDEX['bulk']


class MarkedSwift(routing.Swift):
    """A Swift whose accounts carry the sysmeta in ``sysmeta``."""

    def __init__(self):
        super(MarkedSwift, self).__init__()
        self.sysmeta = {}

    def __call__(self, env, start_response):
        if env['PATH_INFO'].rstrip('/').count('/') == 2 and \
                env['REQUEST_METHOD'] in ('HEAD', 'GET'):
            self.requests.append((env['REQUEST_METHOD'], env['PATH_INFO'],
                                  {}, dict(env)))
            return Response(status=204, headers=self.sysmeta.get(
                env['PATH_INFO'].split('/')[2], {}))(env, start_response)
        return super(MarkedSwift, self).__call__(env, start_response)


@pytest.mark.parametrize('environ', [
    # the app is chosen before Swift authorises: routing, then the mark
    {'swift.authorize': lambda req: None},
    {},  # no auth system: the mark is known before the app is chosen
])
def test_a_marked_account_is_left_alone_before_the_leader_knows(environ):
    mass, swift, logger = routed(swift=MarkedSwift())
    swift.sysmeta['AUTH_t'] = {OPT_OUT_SYSMETA: 'true',
                               'X-Account-Sysmeta-Mass-Urgent': 'true'}
    assert mass.agent.policy('AUTH_t').substore == 'bulk'
    assert routing.call(mass, '/v1/AUTH_t/c',
                        environ=dict(environ)).status_int == 201
    routing.call(mass, '/v1/AUTH_t/c/o', environ=dict(environ))
    puts = [r for r in swift.requests if r[0] == 'PUT']
    assert [r[1] for r in puts] == ['/v1/AUTH_t/c', '/v1/AUTH_t/c/o']
    for _, path, headers, _ in puts:
        assert 'X-Storage-Policy' not in headers, path
        # neither priority nor class, nor urgent: opted out wins
        assert mass_tags(headers) == [], path
    assert swift.containers['/v1/AUTH_t/c'] == 0
    # one lookup told both marks
    assert logger.counters.count('urgent.lookup') == 1


@pytest.mark.parametrize('source, looked_up', [
    # an S3 client's bucket HEAD, through s3api: the client's own request
    ('S3', True),
    # tempauth's and dlo's lookups: the effect of a request of their own
    ('TA', False), ('DLO', False)])
def test_a_middlewares_container_read_looks_up_marks_only_for_a_client(
        source, looked_up):
    mass, swift, logger = routed(swift=MarkedSwift())
    swift.sysmeta['AUTH_t'] = {OPT_OUT_SYSMETA: 'true'}
    env = {'swift.authorize': lambda req: None, 'swift.source': source}
    routing.call(mass, '/v1/AUTH_t/c', method='HEAD', environ=env)
    assert logger.counters.count('urgent.lookup') == int(looked_up)
    counts = [c for (tenant, _), c in pending(mass).items()
              if tenant == 'AUTH_t']
    if looked_up:
        # counted, as opted out: how the leader learns of it
        assert sum(c['opted_out'] for c in counts) == 1
    else:
        assert counts == []


def test_the_leader_carries_a_marked_opt_out_into_the_table():
    mass, backend = make()
    writes(mass)
    tick(mass)
    assert mass.agent.policy('AUTH_t').cls == 'write'
    backend.sysmeta[OPT_OUT_SYSMETA] = 'true'
    mass.account_marks.known.clear()  # the recheck interval passed
    call(mass, method='PUT', body=b'z')
    # at once, on the request path
    assert mass_tags(backend.requests[-1][2]) == []
    (_, counts), = pending(mass).items()
    assert counts['opted_out'] == 1
    tick(mass)
    # then in the table, for every worker, and durably
    assert mass.agent.policy('AUTH_t') is None
    entry = mass.agent.table['AUTH_t']
    assert entry.opted_out is True
    assert entry.reason == \
        "opted out (its account's X-Mass-Opt-Out mark)"
    saved = [r for r in backend.requests
             if 'X-Account-Sysmeta-Mass-Policy' in r[2]][-1]
    assert json.loads(saved[2]['X-Account-Sysmeta-Mass-Policy']) == \
        entry.to_dict()


class OptedOutSwift(fakes.Swift):
    """The cache tests' Swift, AUTH_t's account opted out."""

    def __call__(self, env, start_response):
        if env['PATH_INFO'] == '/v1/AUTH_t':
            self._record(Request(env))
            return Response(status=204, headers={OPT_OUT_SYSMETA: 'true'})(
                env, start_response)
        return super(OptedOutSwift, self).__call__(env, start_response)


def test_an_opted_out_cache_tenant_is_not_cached_before_the_leader_knows(
        prefix):
    mass, swift, logger = fakes.make(prefix, swift=OptedOutSwift())
    # the table, which the app is chosen by, says cache: the method finds
    # the opt-out once Swift authorised the read
    assert mass.agent.policy('AUTH_t').method == 'cache'
    fakes.put(mass)
    for _ in range(2):
        resp = fakes.call(mass)
        assert resp.body == fakes.BODY
        assert tags.CACHE_RESPONSE_HEADER not in resp.headers
    assert len(swift.object_requests('GET')) == 2
    assert not [c for c in logger.counters if c.startswith('cache.')]


def test_an_opted_out_merge_tenant_writes_nothing_through(prefix):
    mass, swift, logger = fakes.make(prefix, swift=OptedOutSwift(),
                                     pin='merge')
    assert mass.agent.policy('AUTH_t').method == 'merge'
    fakes.put(mass)
    assert 'merge.written_through' not in logger.counters
    assert tags.CACHE_RESPONSE_HEADER not in fakes.call(mass).headers


def test_the_opt_out_mark_is_a_reseller_admins():
    mass, accounts, _ = test_marks.make()
    test_marks.get(mass, '/v1/AUTH_u', 'POST',
                   headers={'X-Mass-Opt-Out': 'true'})
    assert OPT_OUT_SYSMETA not in test_marks.last_headers(accounts)
    test_marks.get(mass, '/v1/AUTH_u', 'POST',
                   headers={'X-Mass-Opt-Out': 'true'}, reseller_request=True)
    assert test_marks.last_headers(accounts)[OPT_OUT_SYSMETA] == 'true'
    accounts.sysmeta['AUTH_u'] = {OPT_OUT_SYSMETA: 'true'}
    shown = test_marks.get(mass, '/v1/AUTH_u', 'HEAD', reseller_request=True)
    assert shown.headers['X-Mass-Opt-Out'] == 'true'
    assert 'X-Mass-Opt-Out' not in test_marks.get(
        mass, '/v1/AUTH_u', 'HEAD').headers
    test_marks.get(mass, '/v1/AUTH_u', 'POST',
                   headers={'X-Mass-Opt-Out': 'false'}, reseller_request=True)
    assert test_marks.last_headers(accounts)[OPT_OUT_SYSMETA] == ''


def test_nothing_is_looked_up_before_authorisation():
    mass, swift, logger = routed(swift=MarkedSwift())
    swift.sysmeta['AUTH_t'] = {OPT_OUT_SYSMETA: 'true'}
    refused = Request.blank('/v1/AUTH_t/c', method='PUT', environ={
        'swift.authorize': lambda req: Response(status=403)})
    assert refused.get_response(mass).status_int == 403
    assert swift.requests == []
    assert 'urgent.lookup' not in logger.counters
    assert mass_tags(Request(refused.environ).headers) == []
    assert pending(mass) == {}
