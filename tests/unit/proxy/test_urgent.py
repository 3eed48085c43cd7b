"""The proxy's half of urgent tenants (swift_mass.proxy.urgent): the mark in
account sysmeta, who may set and see it, and the backend tag it gives."""
import pytest

from swift.common.swob import Request, Response

from swift_mass.proxy import urgent
from swift_mass.conf import ConfigError
from swift_mass.proxy import middleware as proxy
from tests.unit.helpers import Clock


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
    clock = mass.urgent_tenants.clock = Clock()
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
    monkeypatch.setattr(urgent, 'MAX_KNOWN', 3)
    mass, accounts, _ = make()
    for n in range(7):
        get(mass, '/v1/AUTH_%d/c' % n)
    assert len(mass.urgent_tenants.known) <= 3


@pytest.mark.parametrize('value', ['-1', 'soon', '3601'])
def test_bad_recheck_stops_startup(value):
    with pytest.raises(ConfigError) as caught:
        make(recheck=value)
    assert 'urgent_recheck_seconds' in str(caught.value)
    assert 'allowed' in str(caught.value)
