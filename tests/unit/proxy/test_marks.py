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
"""The marks the proxy keeps (swift_mass.proxy.marks): the Mark class on
its own, then through the filter: the urgent mark in account sysmeta and
the backend tag it gives, the migrating mark in container sysmeta and the
writes it refuses; who may set and see each."""
import os
import subprocess
import sys

import pytest

from swift.common.swob import HTTPUnauthorized, Request, Response, \
    str_to_wsgi, wsgi_quote, wsgi_to_str
from swift.proxy.controllers.base import get_cache_key, \
    headers_to_container_info

import swift_mass
from swift_mass import tags
from swift_mass.conf import ConfigError
from swift_mass.proxy import conf as mass_conf
from swift_mass.proxy import marks
from swift_mass.proxy import middleware as proxy
from tests.unit.helpers import Clock, RecordingApp


# --- the Mark class ---------------------------------------------------------

def test_each_mark_names_its_sysmeta_after_its_header():
    assert marks.MIGRATING.header == tags.MIGRATING_MARK_HEADER
    assert marks.MIGRATING.env_key == 'HTTP_X_MASS_MIGRATING'
    assert marks.MIGRATING.sysmeta_header == \
        'X-Container-Sysmeta-Mass-Migrating'
    assert marks.MIGRATING.sysmeta_env == \
        'HTTP_X_CONTAINER_SYSMETA_MASS_MIGRATING'
    assert marks.MIGRATING.sysmeta_key == 'mass-migrating'
    assert marks.URGENT.header == tags.URGENT_MARK_HEADER
    assert marks.URGENT.sysmeta_env == 'HTTP_X_ACCOUNT_SYSMETA_MASS_URGENT'
    assert marks.URGENT.sysmeta_key == 'mass-urgent'


@pytest.mark.parametrize('mark, path, addressed', [
    (marks.URGENT, '/v1/AUTH_u', True),
    (marks.URGENT, '/v1/AUTH_u/c', False),
    (marks.MIGRATING, '/v1/AUTH_u/c', True),
    (marks.MIGRATING, '/v1/AUTH_u/c/', True),
    (marks.MIGRATING, '/v1/AUTH_u', False),
    (marks.MIGRATING, '/v1/AUTH_u/c/o', False),
])
def test_a_mark_addresses_the_marked_thing_only(mark, path, addressed):
    assert mark.addresses({'PATH_INFO': path}) is addressed


def env_of(path, method, reseller=True):
    env = {'PATH_INFO': path, 'REQUEST_METHOD': method}
    if reseller:
        env['reseller_request'] = True
    return env


@pytest.mark.parametrize('mark, path', [
    (marks.URGENT, '/v1/AUTH_u'), (marks.MIGRATING, '/v1/AUTH_u/c')])
def test_a_mark_is_taken_from_a_reseller_admins_put_or_post_only(mark, path):
    for method in ('PUT', 'POST'):
        env = env_of(path, method)
        mark.take(env, 'true')
        assert env[mark.sysmeta_env] == 'true'
    for env in (env_of(path, 'POST', reseller=False),
                env_of(path, 'DELETE'), env_of(path, 'GET'),
                env_of(path + '/x', 'POST')):
        mark.take(env, 'true')
        assert mark.sysmeta_env not in env
    env = env_of(path, 'POST')
    mark.take(env, None)  # no mark sent: sysmeta left alone
    assert mark.sysmeta_env not in env


def test_what_each_mark_keeps_and_shows():
    assert marks.URGENT.stored('on') == 'true'
    assert marks.URGENT.stored('nonsense') == ''
    assert marks.URGENT.shown([]) == [('X-Mass-Urgent', 'false')]
    shown = marks.URGENT.shown([('x-account-sysmeta-mass-urgent', 'true')])
    assert shown[-1] == ('X-Mass-Urgent', 'true')
    assert marks.MIGRATING.stored('target=bulk') == 'target=bulk'
    assert marks.MIGRATING.shown([]) == []
    assert marks.MIGRATING.shown(
        [('X-Container-Sysmeta-Mass-Migrating', 'target=bulk')])[-1] == \
        ('X-Mass-Migrating', 'target=bulk')


def test_a_mark_shows_to_a_reseller_admins_head_or_get_of_it_only():
    assert marks.URGENT.shows(env_of('/v1/AUTH_u', 'HEAD'))
    assert marks.URGENT.shows(env_of('/v1/AUTH_u', 'GET'))
    assert not marks.URGENT.shows(env_of('/v1/AUTH_u', 'POST'))
    assert not marks.URGENT.shows(env_of('/v1/AUTH_u', 'HEAD', False))
    assert not marks.URGENT.shows(env_of('/v1/AUTH_u/c', 'HEAD'))
    assert marks.MIGRATING.shows(env_of('/v1/AUTH_u/c', 'HEAD'))
    assert not marks.MIGRATING.shows(env_of('/v1/AUTH_u/c/o', 'HEAD'))


def test_the_header_names_import_neither_swift_nor_eventlet():
    # swift-mass imports them on operators' machines
    loaded = subprocess.check_output([
        sys.executable, '-c', 'import sys, swift_mass.tags; '
        'print(sorted(m for m in sys.modules if m.split(".")[0] in '
        '("swift", "eventlet")))'], text=True,
        cwd=os.path.dirname(os.path.dirname(swift_mass.__file__)))
    assert loaded.strip() == '[]'


# --- urgent, through the filter ---------------------------------------------


class Accounts(object):
    """The proxy app right of Mass: accounts with sysmeta; anything else
    answers 200.  Remembers (method, path, headers) of what reached it."""

    def __init__(self, status=204):
        self.sysmeta = {}       # account -> {sysmeta header: value}
        self.status = status
        self.requests = []

    def __call__(self, env, start_response):
        req = Request(env)
        self.requests.append((req.method, req.path, dict(req.headers)))
        if req.path.count('/') == 2 and req.method in ('HEAD', 'GET'):
            account = req.path.split('/')[2]
            return Response(status=self.status,
                            headers=self.sysmeta.get(account, {}))(
                env, start_response)
        return Response(body=b'ok')(env, start_response)

    def heads(self):
        return [r for r in self.requests if r[0] == 'HEAD' and
                r[1].count('/') == 2]


def make(recheck='30', **conf):
    accounts = Accounts()
    mass = proxy.filter_factory({}, control_loop='false',
                                urgent_recheck_seconds=recheck,
                                **conf)(accounts)
    clock = Clock()
    mass.account_marks = marks.AccountMarks(
        accounts, mass.conf.urgent_recheck_seconds, clock)
    return mass, accounts, clock


def get(mass, path='/v1/AUTH_u/c/o', method='GET', headers=None,
        **environ):
    req = Request.blank(path, method=method, headers=headers or {},
                        environ=environ)
    resp = req.get_response(mass)
    resp.body
    return resp


def last_headers(accounts):
    return accounts.requests[-1][2]


def mark(accounts, account='AUTH_u'):
    accounts.sysmeta[account] = {'X-Account-Sysmeta-Mass-Urgent': 'true'}


def test_a_marked_tenants_requests_carry_the_urgent_tag():
    mass, accounts, _ = make()
    mark(accounts)
    get(mass)
    assert last_headers(accounts)['X-Backend-Mass-Urgent'] == 'true'
    get(mass, '/v1/AUTH_other/c/o')
    assert 'X-Backend-Mass-Urgent' not in last_headers(accounts)


def test_an_operators_own_work_has_the_background_priority_and_no_urgency():
    """A move's copies, fences and deletes (a reseller admin's with
    X-Mass-Operator) wait behind the tenant's own requests at the devices,
    urgent ones included; the header from anyone else changes nothing."""
    mass, accounts, _ = make()
    mark(accounts)
    operator = {'X-Mass-Operator': 'true'}
    for method in ('GET', 'PUT', 'POST', 'DELETE'):
        get(mass, method=method, headers=operator, reseller_request=True)
        sent = last_headers(accounts)
        assert sent['X-Backend-Mass-Priority'] == '1'
        assert 'X-Backend-Mass-Urgent' not in sent
    # a tenant that sends the header is the tenant
    get(mass, headers=operator)
    assert last_headers(accounts)['X-Backend-Mass-Priority'] == '5'
    assert last_headers(accounts)['X-Backend-Mass-Urgent'] == 'true'
    # a reseller admin acting as the tenant (no header)
    get(mass, reseller_request=True)
    assert last_headers(accounts)['X-Backend-Mass-Priority'] == '5'


def test_only_an_operators_move_write_says_it_keeps_the_version():
    """mass_queue bumps no generation for a write tagged
    X-Backend-Mass-Keeps-Version: a client that could set it would keep
    stale bodies in every proxy's cache."""
    mass, accounts, _ = make()
    keeps = {'X-Mass-Operator': 'true', 'X-Mass-Keeps-Version': 'true'}
    for method in ('PUT', 'POST', 'DELETE'):
        get(mass, method=method, headers=keeps, reseller_request=True)
        assert last_headers(accounts)['X-Backend-Mass-Keeps-Version'] == \
            'true'
    forged = dict(keeps, **{'X-Backend-Mass-Keeps-Version': 'true'})
    for headers, environ in (
            (keeps, {}),  # the tenant
            (forged, {}),
            ({'X-Mass-Keeps-Version': 'true'}, {'reseller_request': True}),
            ({'X-Mass-Operator': 'true'}, {'reseller_request': True})):
        get(mass, method='PUT', headers=headers, **environ)
        assert 'X-Backend-Mass-Keeps-Version' not in last_headers(accounts)
    # a container's write is no object's
    get(mass, '/v1/AUTH_u/c', method='PUT', headers=keeps,
        reseller_request=True)
    assert 'X-Backend-Mass-Keeps-Version' not in last_headers(accounts)


def test_the_background_priority_is_configurable():
    mass, accounts, _ = make(background_priority='0', default_priority='7')
    get(mass, headers={'X-Mass-Operator': 'true'}, reseller_request=True)
    assert last_headers(accounts)['X-Backend-Mass-Priority'] == '0'
    get(mass)
    assert last_headers(accounts)['X-Backend-Mass-Priority'] == '7'


def test_a_tenant_is_looked_up_once_per_recheck_interval():
    mass, accounts, clock = make(recheck='30')
    for _ in range(5):
        get(mass)
    assert len(accounts.heads()) == 1
    assert 'X-Backend-Mass-Urgent' not in last_headers(accounts)
    mark(accounts)
    clock.now += 29
    get(mass)
    assert 'X-Backend-Mass-Urgent' not in last_headers(accounts)
    clock.now += 1
    get(mass)
    assert len(accounts.heads()) == 2
    assert last_headers(accounts)['X-Backend-Mass-Urgent'] == 'true'


def test_recheck_zero_turns_marks_off():
    mass, accounts, _ = make(recheck='0')
    mark(accounts)
    get(mass)
    assert accounts.heads() == []
    assert 'X-Backend-Mass-Urgent' not in last_headers(accounts)


def test_an_unreadable_account_is_not_urgent_and_the_request_goes_on():
    mass, accounts, _ = make()
    mark(accounts)
    accounts.status = 503   # every account server down
    assert get(mass).status_int == 200
    assert 'X-Backend-Mass-Urgent' not in last_headers(accounts)


@pytest.mark.parametrize('header', ['X-Backend-Mass-Urgent', 'X-Mass-Urgent'])
def test_a_client_cannot_make_itself_urgent(header):
    mass, accounts, _ = make()
    get(mass, headers={header: 'true'})
    sent = last_headers(accounts)
    assert 'X-Backend-Mass-Urgent' not in sent
    assert 'X-Mass-Urgent' not in sent


@pytest.mark.parametrize('value, sysmeta', [
    ('true', 'true'), ('on', 'true'), ('false', ''), ('', '')])
def test_a_reseller_admin_sets_and_removes_the_mark(value, sysmeta):
    mass, accounts, _ = make()
    get(mass, '/v1/AUTH_u', 'POST', headers={'X-Mass-Urgent': value},
        reseller_request=True)
    method, path, sent = accounts.requests[-1]
    assert (method, path) == ('POST', '/v1/AUTH_u')
    assert sent['X-Account-Sysmeta-Mass-Urgent'] == sysmeta
    assert 'X-Mass-Urgent' not in sent


@pytest.mark.parametrize('path, environ', [
    ('/v1/AUTH_u', {}),                          # the tenant itself
    ('/v1/AUTH_u/c', {'reseller_request': True}),  # not an account
])
def test_nobody_else_sets_the_mark(path, environ):
    mass, accounts, _ = make()
    get(mass, path, 'POST', headers={'X-Mass-Urgent': 'true'}, **environ)
    sent = accounts.requests[-1][2]
    assert 'X-Account-Sysmeta-Mass-Urgent' not in sent
    assert 'X-Mass-Urgent' not in sent


def test_writes_to_an_account_do_not_look_it_up():
    mass, accounts, _ = make()
    for method in ('PUT', 'POST', 'DELETE'):
        get(mass, '/v1/AUTH_u', method, reseller_request=True)
    assert accounts.heads() == []


@pytest.mark.parametrize('method', ['HEAD', 'GET'])
def test_a_reseller_admin_sees_the_mark(method):
    mass, accounts, _ = make()
    resp = get(mass, '/v1/AUTH_u', method, reseller_request=True)
    assert resp.headers['X-Mass-Urgent'] == 'false'
    mark(accounts)
    resp = get(mass, '/v1/AUTH_u', method, reseller_request=True)
    assert resp.headers['X-Mass-Urgent'] == 'true'


def test_nobody_else_sees_the_mark():
    mass, accounts, _ = make()
    mark(accounts)
    assert 'X-Mass-Urgent' not in get(mass, '/v1/AUTH_u', 'HEAD').headers
    assert 'X-Mass-Urgent' not in get(
        mass, '/v1/AUTH_u/c', 'HEAD', reseller_request=True).headers


def test_known_tenants_are_bounded(monkeypatch):
    monkeypatch.setattr(marks, 'MAX_KNOWN', 3)
    mass, accounts, _ = make()
    for n in range(7):
        get(mass, '/v1/AUTH_%d/c' % n)
    assert len(mass.account_marks.known) == 3
    assert len(accounts.heads()) == 7
    get(mass, '/v1/AUTH_6/c')  # still known: no lookup
    assert len(accounts.heads()) == 7


@pytest.mark.parametrize('value', ['-1', 'soon', '3601'])
def test_bad_recheck_stops_startup(value):
    with pytest.raises(ConfigError) as caught:
        make(recheck=value)
    assert 'urgent_recheck_seconds' in str(caught.value)
    assert 'allowed' in str(caught.value)


# --- migrating, through the filter ------------------------------------------

class ContainerServers(RecordingApp):
    """The proxy app right of Mass: answers a HEAD of a container as its
    container servers would, with ``status`` and the migrating mark
    ``mark`` (None: unmarked), and keeps its path in ``heads``; remembers
    any other request that reaches it."""

    def __init__(self, mark='target=bulk; since=1', status=204):
        super(ContainerServers, self).__init__()
        self.mark = mark
        self.status = status
        self.heads = []

    def __call__(self, env, start_response):
        if env['REQUEST_METHOD'] != 'HEAD' or \
                env['PATH_INFO'].count('/') != 3:
            return super(ContainerServers, self).__call__(env, start_response)
        self.heads.append(env['PATH_INFO'])
        headers = {'X-Container-Sysmeta-Mass-Migrating': self.mark} \
            if self.mark and self.status // 100 == 2 else {}
        return Response(status=self.status, headers=headers)(
            env, start_response)


def migrating_filter(mark='target=bulk; since=1', status=204, **conf):
    app = ContainerServers(mark, status)
    # no urgent-mark lookups: app.environs holds only the request itself
    return proxy.filter_factory({}, control_loop='false',
                                urgent_recheck_seconds='0', **conf)(app), app


def marked(path, method, mark='target=bulk; since=1', **environ):
    req = Request.blank(path, environ=dict(REQUEST_METHOD=method,
                                           **environ))
    headers = {'X-Container-Sysmeta-Mass-Migrating': mark} if mark else {}
    req.environ['swift.infocache'] = {
        get_cache_key('AUTH_t', 'c'): headers_to_container_info(headers,
                                                                200)}
    return req


@pytest.mark.parametrize('path,method', [
    ('/v1/AUTH_t/c/o', 'PUT'), ('/v1/AUTH_t/c/o', 'POST'),
    ('/v1/AUTH_t/c/o', 'DELETE'), ('/v1/AUTH_t/c', 'POST'),
    ('/v1/AUTH_t/c', 'PUT'), ('/v1/AUTH_t/c', 'DELETE')])
def test_writes_to_a_marked_container_are_refused(path, method):
    filt, app = migrating_filter()
    resp = marked(path, method).get_response(filt)
    assert resp.status_int == 503
    assert resp.headers['Retry-After'] == \
        str(mass_conf.DEFAULT_MIGRATE_RETRY_AFTER)
    assert app.environs == []


def test_a_write_refused_for_a_move_is_counted():
    """The move's refusals are the tenant's demand: not counted, a tenant
    whose upload burst the move refused whole looked a pure reader, and
    swift-mass auto-migrate kept the move, refusing its uploads, for as
    long as the move lasted (a run on the hetero SAIO)."""
    servers = ContainerServers()

    def proxy_app(env, start_response):
        # as Swift's proxy asks the auth system, whose answer Mass gives
        denial = env['swift.authorize'](Request(env))
        if denial is not None:
            return denial(env, start_response)
        return servers(env, start_response)
    filt = proxy.filter_factory({}, urgent_recheck_seconds='0',
                                store='local')(proxy_app)

    def allowed(req):
        return None
    for _ in range(5):
        assert marked('/v1/AUTH_t/c/o', 'PUT', **{
            'swift.authorize': allowed}).get_response(filt).status_int == 503
    assert marked('/v1/AUTH_t/c/o', 'GET', **{
        'swift.authorize': allowed}).get_response(filt).status_int == 200
    (_, counts), = filt.agent.window._pending.items()
    assert counts['ops.PUT'] == 5 and counts['ops.GET'] == 1


def test_a_mark_the_container_servers_no_longer_hold_refuses_nothing():
    # Swift clears its info cache before its POST reaches the container
    # servers, so a read in between caches the marked info again for
    # recheck_container_existence: a failed move kept the container's
    # writes refused for that long (a CI run's faults test)
    filt, app = migrating_filter(mark=None)
    req = marked('/v1/AUTH_t/c/o', 'PUT')
    assert req.get_response(filt).status_int == 200
    assert app.heads == ['/v1/AUTH_t/c']
    assert [env['PATH_INFO'] for env in app.environs] == ['/v1/AUTH_t/c/o']


def test_the_container_servers_are_asked_at_most_once_a_second():
    app = ContainerServers()
    clock = Clock()
    moving = marks.MovingContainers(app, 60, clock=clock)

    def refused(path='/v1/AUTH_t/c/o'):
        resp = moving(marked(path, 'PUT').environ)
        return resp is not None and resp.status_int == 503
    assert refused() and refused('/v1/AUTH_t/c')
    assert app.heads == ['/v1/AUTH_t/c']
    clock.sleep(marks.MOVE_RECHECK_SECONDS + 0.01)
    app.mark = None  # the move took it off meanwhile
    assert not refused()
    assert app.heads == ['/v1/AUTH_t/c'] * 2


def test_the_container_asked_is_the_one_written_to_whatever_its_name():
    app = ContainerServers()
    moving = marks.MovingContainers(app, 60)
    name = 'a?b%25c d\u00e9'
    req = Request.blank(wsgi_quote(str_to_wsgi('/v1/AUTH_t/%s/o' % name)),
                        method='PUT')
    req.environ['swift.infocache'] = {
        get_cache_key('AUTH_t', name): headers_to_container_info(
            {'X-Container-Sysmeta-Mass-Migrating': 'target=bulk'}, 200)}
    assert moving(req.environ).status_int == 503
    assert app.heads == [str_to_wsgi('/v1/AUTH_t/' + name)]


@pytest.mark.parametrize('status', [503, 507])
def test_without_the_container_servers_the_cached_mark_stands(status):
    filt, app = migrating_filter(mark=None, status=status)
    assert marked('/v1/AUTH_t/c/o', 'PUT').get_response(
        filt).status_int == 503
    assert app.heads == ['/v1/AUTH_t/c'] and app.environs == []


def test_a_container_gone_meanwhile_is_left_to_swift():
    filt, app = migrating_filter(status=404)
    assert marked('/v1/AUTH_t/c/o', 'PUT').get_response(
        filt).status_int == 200


@pytest.mark.parametrize('method', ['GET', 'HEAD'])
def test_reads_of_a_marked_container_are_served(method):
    filt, app = migrating_filter()
    assert marked('/v1/AUTH_t/c/o', method).get_response(
        filt).status_int == 200


def test_unmarked_containers_and_reseller_admins_are_written_to():
    filt, app = migrating_filter()
    assert marked('/v1/AUTH_t/c/o', 'PUT', mark=None).get_response(
        filt).status_int == 200
    assert marked('/v1/AUTH_t/c/o', 'PUT',
                  reseller_request=True).get_response(filt).status_int == 200
    assert len(app.environs) == 2


def test_only_a_reseller_admin_sets_the_migrating_mark():
    filt, app = migrating_filter()
    for reseller in (False, True):
        req = Request.blank('/v1/AUTH_t/new', method='PUT', headers={
            'X-Mass-Migrating': 'target=bulk'})
        if reseller:
            req.environ['reseller_request'] = True
        req.environ['swift.infocache'] = {
            get_cache_key('AUTH_t', 'new'): headers_to_container_info(
                {}, 404)}
        assert req.get_response(filt).status_int == 200
    tenant_env, admin_env = app.environs
    assert 'HTTP_X_MASS_MIGRATING' not in tenant_env
    assert marks.MIGRATING.sysmeta_env not in tenant_env
    assert 'HTTP_X_MASS_MIGRATING' not in admin_env
    assert admin_env[marks.MIGRATING.sysmeta_env] == 'target=bulk'


def container_head(filt, mark, reseller):
    def backend(env, start_response):
        headers = [('X-Storage-Policy', 'bulk')]
        if mark:
            headers.append(('X-Container-Sysmeta-Mass-Migrating', mark))
        start_response('204 No Content', headers)
        return [b'']
    filt.app = backend
    req = Request.blank('/v1/AUTH_t/c', method='HEAD')
    if reseller:
        req.environ['reseller_request'] = True
    return req.get_response(filt)


def test_the_migrating_mark_shows_to_reseller_admins_only():
    filt, _ = migrating_filter()
    shown = container_head(filt, 'target=bulk; since=5', reseller=True)
    assert shown.headers['X-Mass-Migrating'] == 'target=bulk; since=5'
    assert 'X-Mass-Migrating' not in container_head(
        filt, 'target=bulk; since=5', reseller=False).headers
    assert 'X-Mass-Migrating' not in container_head(
        filt, None, reseller=True).headers


def test_migrate_retry_after_is_configurable():
    filt, _ = migrating_filter(migrate_retry_after='7')
    resp = marked('/v1/AUTH_t/c/o', 'PUT').get_response(filt)
    assert resp.headers['Retry-After'] == '7'


# --- reads of a container being moved ------------------------------------

class Moving(object):
    """The proxy app right of Mass for a container being moved: container
    info from ``containers`` ({name: sysmeta mark or None}; a missing name
    is a 404), objects from ``objects`` ({path: body}).  Like Swift's, it
    puts the container's storage policy index in the request it serves,
    and reads an object with the index a request carries: the staging
    container is in another policy (its name ends the index)."""

    def __init__(self, containers, objects, tombstones=None,
                 versions=None, denied=()):
        self.containers = containers
        self.objects = objects
        # paths the reader may not read (Swift's authorize denies them)
        self.denied = denied
        # {path: X-Backend-Timestamp of its 404}, {path: of its 200}
        self.tombstones = tombstones or {}
        self.versions = versions or {}
        self.reads = []

    def __call__(self, env, start_response):
        req = Request(env)
        parts = req.path.split('/')
        if len(parts) == 3:  # the account
            return Response(status=204)(env, start_response)
        if len(parts) == 4:
            name = wsgi_to_str(env['PATH_INFO']).split('/')[3]
            if name not in self.containers:
                return Response(status=404)(env, start_response)
            mark = self.containers[name]
            return Response(status=204, headers={
                'X-Container-Sysmeta-Mass-Migrating': mark} if mark else {})(
                env, start_response)
        path = wsgi_to_str(env['PATH_INFO'])
        self.reads.append(path)
        if path in self.denied:
            return Response(status=403, body=b'denied')(env, start_response)
        policy = '2' if tags.STAGING_PREFIX in path else '0'
        asked = env.setdefault('HTTP_X_BACKEND_STORAGE_POLICY_INDEX', policy)
        body = self.objects.get(path) if asked == policy else None
        if body is None:
            headers = {'X-Backend-Timestamp': self.tombstones[path]} \
                if path in self.tombstones else {}
            return Response(status=404, body=b'not here', headers=headers)(
                env, start_response)
        headers = {'X-Backend-Timestamp': self.versions[path]} \
            if path in self.versions else {}
        return Response(body=body, headers=headers)(env, start_response)


STAGED = '/v1/AUTH_t/%s/o\u00e9' % tags.staging_name('c\u00e9')
PLAIN = '/v1/AUTH_t/c\u00e9/o\u00e9'


def staged_read(containers, objects, method='GET', tombstones=None,
                versions=None, denied=(), **environ):
    app = Moving(containers, objects, tombstones, versions, denied)
    filt = proxy.filter_factory({}, control_loop='false',
                                urgent_recheck_seconds='0')(app)
    req = Request.blank(wsgi_quote(str_to_wsgi(PLAIN)), method=method,
                        environ=environ)
    return req.get_response(filt), app


@pytest.mark.parametrize('containers', [
    # emptied (the container still marked), or gone (the staging one is)
    {'c\u00e9': 'target=bulk; since=1',
     tags.staging_name('c\u00e9'): 'target=bulk; since=1'},
    {tags.staging_name('c\u00e9'): 'target=bulk; since=1'}])
@pytest.mark.parametrize('method', ['GET', 'HEAD'])
def test_an_object_of_a_container_being_moved_never_reads_404(
        containers, method):
    resp, app = staged_read(containers, {STAGED: b'staged'}, method)
    assert resp.status_int == 200
    assert app.reads == [PLAIN, STAGED]
    if method == 'GET':
        assert resp.body == b'staged'


def test_reads_fall_back_only_while_the_move_is_under_way():
    # not marked: Swift's own 404
    resp, app = staged_read({'c\u00e9': None}, {STAGED: b'staged'})
    assert (resp.status_int, app.reads) == (404, [PLAIN])
    # the move's own reads see the container as it is
    marked_ = {'c\u00e9': 'target=bulk; since=1'}
    resp, app = staged_read(marked_, {STAGED: b'staged'},
                            reseller_request=True)
    assert (resp.status_int, app.reads) == (404, [PLAIN])
    # an object in neither: a 404
    resp, app = staged_read(marked_, {})
    assert (resp.status_int, app.reads) == (404, [PLAIN, STAGED])
    # found in the container: never asked of the staging container
    resp, app = staged_read(marked_, {PLAIN: b'here'})
    assert (resp.body, app.reads) == (b'here', [PLAIN])


def test_a_reader_the_staging_container_denies_gets_the_containers_404():
    """A reader by the container's ACL whose 404 falls back to a staging
    container that does not grant it (yet: the move gives it the ACL just
    after creating it, and proxies cache its info meanwhile) gets the
    container's 404, never a 403 it would not get from Swift alone."""
    marked_ = {'c\u00e9': 'target=bulk; since=1',
               tags.staging_name('c\u00e9'): 'target=bulk; since=1'}
    resp, app = staged_read(marked_, {STAGED: b'staged'}, denied={STAGED})
    assert (resp.status_int, resp.body) == (404, b'not here')
    assert app.reads == [PLAIN, STAGED]


@pytest.mark.parametrize('containers', [
    # a failed run: the container writable, its staging container kept
    {'c\u00e9': None, tags.staging_name('c\u00e9'): 'target=bulk; since=1'},
    {'c\u00e9': 'target=bulk; since=1',
     tags.staging_name('c\u00e9'): 'target=bulk; since=1'}])
def test_a_client_delete_after_the_staged_copy_stands(containers):
    version = '1700000000.00000'
    staged = {STAGED: '1700000000.00000_0000000000000009'}
    # the move's own delete of that version: the staged copy is read
    resp, app = staged_read(containers, {STAGED: b'staged'},
                            tombstones={PLAIN: version + '_000000000000000a'},
                            versions=staged)
    assert (resp.status_int, resp.body) == (200, b'staged')
    # a client's delete, made after it: Swift's 404, never the old body
    resp, app = staged_read(containers, {STAGED: b'staged'},
                            tombstones={PLAIN: '1700000001.00000'},
                            versions=staged)
    assert (resp.status_int, resp.body) == (404, b'not here')
    assert app.reads == [PLAIN, STAGED]


@pytest.mark.parametrize('method', ['PUT', 'POST', 'DELETE'])
def test_a_write_swift_refuses_learns_nothing_of_a_move(method):
    """The refusal waits for authorisation: a write Swift refuses gets
    Swift's own denial, not a 503 that tells which container is being
    moved; an authorised one gets the 503 as the proxy asks."""
    filt, app = migrating_filter()
    for authorize, status in (
            (lambda req: HTTPUnauthorized(request=req), 401),
            (lambda req: None, 503)):
        req = marked('/v1/AUTH_t/c/o', method)
        req.environ['swift.authorize'] = authorize
        req.get_response(filt)
        # what the proxy app right of Mass asks before serving it
        env = app.environs[-1]
        assert env['swift.authorize'](Request(env)).status_int == status
