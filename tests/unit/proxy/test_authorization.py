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
"""Nothing before authorisation: Mass's lookups, counts and refusals wait
for Swift's swift.authorize (swift_mass.proxy.authorization), here behind
Swift's real tempauth, in front of a tiny Swift that authorises as the
proxy server does."""
import uuid

import pytest

from swift.common.middleware.tempauth import TempAuth
from swift.common.swob import HTTPForbidden, HTTPServiceUnavailable, \
    Request

from swift_mass import tags
from swift_mass.proxy import marks
from swift_mass.proxy.authorization import Authorization
from tests.unit.helpers import REDIS_URL
from tests.unit.proxy.methods.fakes import BODY, PATH, make, put

import redis


class Calls(object):
    def __init__(self, answer=None):
        self.answer = answer
        self.count = 0

    def __call__(self, *args):
        self.count += 1
        return self.answer


def test_hooks_run_once_when_the_auth_system_says_yes():
    auth_answer = Calls(HTTPForbidden())
    env = {'swift.authorize': auth_answer}
    authorization = Authorization(env)
    hook = Calls()
    authorization.after(hook)
    assert env['swift.authorize'] is authorization
    req = Request.blank('/v1/AUTH_t/c/o', environ=env)
    assert env['swift.authorize'](req).status_int == 403
    assert hook.count == 0 and not authorization.authorized
    auth_answer.answer = None
    assert env['swift.authorize'](req) is None
    assert env['swift.authorize'](req) is None
    assert hook.count == 1 and authorization.authorized
    late = Calls()
    authorization.after(late)
    assert late.count == 1


def test_a_hooks_refusal_is_the_denial_every_time_it_is_asked():
    env = {'swift.authorize': Calls(None)}
    authorization = Authorization(env)
    authorization.after(Calls(HTTPServiceUnavailable()))
    after_refusal = Calls()
    authorization.after(after_refusal)
    req = Request.blank('/v1/AUTH_t/c/o', environ=env)
    # the proxy asks before the handler and again once it loaded the ACLs
    assert env['swift.authorize'](req).status_int == 503
    assert env['swift.authorize'](req).status_int == 503
    assert after_refusal.count == 0


def test_without_an_auth_system_the_hooks_run_when_settled():
    env = {}
    authorization = Authorization(env)
    hook = Calls()
    authorization.after(hook)
    assert 'swift.authorize' not in env and hook.count == 0
    assert authorization.settle() is None
    assert hook.count == 1 and authorization.authorized
    assert authorization.settle() is None and hook.count == 1


def test_a_subrequest_copied_from_a_seen_request_has_its_own_hooks():
    inner = Calls(None)
    parent_env = {'swift.authorize': inner}
    parent = Authorization(parent_env)
    parent_hook = Calls()
    parent.after(parent_hook)
    sub_env = dict(parent_env)  # slo, dlo, copy: make_subrequest copies it
    sub = Authorization(sub_env)
    sub_hook = Calls()
    sub.after(sub_hook)
    assert sub.authorize is inner
    sub_env['swift.authorize'](Request.blank('/v1/AUTH_t/c/s',
                                             environ=sub_env))
    assert (sub_hook.count, parent_hook.count) == (1, 0)


def keys(prefix):
    return set(redis.Redis.from_url(REDIS_URL).keys(prefix + '*'))


def made_up_account_lookups(swift):
    """Mass's lookups of accounts other than AUTH_t's (AUTH_t's info is
    what Swift looks up, from its caches, for the container info of any
    request to AUTH_t)."""
    return [r[1] for r in swift.requests if r[2] == 'MASS' and
            r[1].count('/') == 2 and r[1] != '/v1/AUTH_t']


def tenant_state(mass):
    """Every per-tenant entry a worker keeps."""
    return {'window': len(mass.agent.window),
            'urgent': len(mass.account_marks.known),
            'absent': len(mass.sysmeta._absent)}


@pytest.fixture
def behind_tempauth(prefix):
    mass, swift, logger = make(prefix, pin='cache')
    put(mass)  # AUTH_t's object, cached by the next read
    assert Request.blank(PATH, environ={
        'swift.authorize': lambda req: None}).get_response(mass).body == BODY
    mass.account_marks.known.clear()
    mass.agent.window.drain()
    del swift.requests[:], mass.logger.counters[:]
    return TempAuth(mass, {}), mass, swift


def anonymous(app, method, path):
    return Request.blank(path, method=method, body=b'' if method in (
        'PUT', 'POST') else None).get_response(app)


def test_an_anonymous_flood_of_made_up_names_leaves_nothing(
        prefix, behind_tempauth):
    app, mass, swift = behind_tempauth
    before = keys(prefix)
    methods = ('GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'OPTIONS')
    for i in range(1200):
        name = uuid.uuid4().hex
        method = methods[i % len(methods)]
        # made-up accounts, and made-up objects of a cache tenant
        for path in ('/v1/AUTH_%s/c/%s' % (name, name),
                     '/v1/AUTH_t/c/%s' % name):
            resp = anonymous(app, method, path)
            assert resp.status_int in (401, 200), (method, path)
    mass.agent.tick()  # what a flush would send
    # nothing new (the object servers' registration may lapse meanwhile,
    # on a busy machine)
    assert keys(prefix) - before == set()
    assert made_up_account_lookups(swift) == []
    assert tenant_state(mass) == {'window': 0, 'urgent': 0, 'absent': 0}
    assert set(c for c in mass.logger.counters
               if c.startswith('cache.')) == {'cache.denied'}


def test_an_authorised_anonymous_read_is_served_as_any(
        prefix, behind_tempauth):
    """The control: a read the container's ACL grants to anyone is
    authorised, so Mass looks up, counts and caches it."""
    app, mass, swift = behind_tempauth
    swift.read_acl['/v1/AUTH_t/c'] = '.r:*'
    resp = anonymous(app, 'GET', PATH)
    assert resp.body == BODY and resp.headers['X-Mass-Cache'] == 'hit'
    assert tenant_state(mass) == {'window': 1, 'urgent': 1, 'absent': 0}
    assert 'AUTH_t' in mass.account_marks.known


def test_the_urgent_tag_reaches_the_backend_once_authorised(prefix):
    mass, swift, _ = make(prefix, pin=None)
    mass.account_marks.known['AUTH_t'] = frozenset([marks.URGENT])
    put(mass)
    (_, _, _, headers), = swift.object_requests('PUT')
    assert headers.get('X-Backend-Mass-Urgent') == tags.URGENT
    refused = Request.blank(PATH, environ={
        'swift.authorize': lambda req: HTTPForbidden(request=req)})
    assert refused.get_response(mass).status_int == 403
    assert tags.URGENT_ENV not in refused.environ
