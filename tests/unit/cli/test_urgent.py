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
"""swift-mass urgent and opt-out against a small real HTTP server that
behaves like a proxy with the mass filter (tempauth v1.0, an account POST
and HEAD), and like one without it, through real swiftclient
Connections."""
import http.server
import threading

import pytest
from swiftclient.client import Connection

from swift_mass.cli import main as cli, urgent as urgent_mark
from swift_mass.cli.urgent import UrgentError

# user: (key, token, account, reseller admin)
USERS = {'admin:admin': ('admin', 'AUTH_tk_admin', 'AUTH_admin', True),
         'test:tester': ('testing', 'AUTH_tk_test', 'AUTH_test', False)}
TOKENS = dict((token, (account, admin))
              for _, token, account, admin in USERS.values())


class Proxy(http.server.ThreadingHTTPServer):
    """mass: True shows and takes X-Mass-Urgent as the mass filter does;
    False is a proxy without it.  shows: a value to show whatever the
    mark (a proxy misbehaving)."""

    def __init__(self, mass=True, shows=None):
        super(Proxy, self).__init__(('127.0.0.1', 0), Handler)
        self.mass = mass
        self.shows = shows
        self.marks = {}
        self.opt_outs = {}
        self.requests = []

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.server_port


class Handler(http.server.BaseHTTPRequestHandler):

    def log_message(self, *args):
        pass

    def answer(self, status, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header('Content-Length', '0')
        self.end_headers()

    def do_GET(self):
        if self.path != '/auth/v1.0':
            return self.answer(404)
        user = self.headers.get('X-Auth-User')
        key, token, account, _ = USERS.get(user, (None,) * 4)
        if key is None or key != self.headers.get('X-Auth-Key'):
            return self.answer(401)
        self.answer(200, [
            ('X-Storage-Url', '%s/v1/%s' % (self.server.url, account)),
            ('X-Auth-Token', token)])

    def account(self):
        """(account, reseller admin) of an allowed account request, else
        None once answered."""
        # headers: names in any case, as sent
        self.server.requests.append((self.command, self.path,
                                     self.headers))
        parts = self.path.split('/')
        if len(parts) != 3 or parts[1] != 'v1':
            self.answer(404)
            return None
        known = TOKENS.get(self.headers.get('X-Auth-Token'))
        if known is None:
            self.answer(401)
            return None
        own, admin = known
        if not admin and own != parts[2]:
            self.answer(403)
            return None
        return parts[2], admin

    def do_HEAD(self):
        found = self.account()
        if found is None:
            return
        account, admin = found
        headers = [('X-Account-Object-Count', '0')]
        if self.server.mass and admin:
            shows = self.server.shows or (
                'true' if self.server.marks.get(account) else 'false')
            headers.append(('X-Mass-Urgent', shows))
            opted_out = self.server.opt_outs.get(account)
            headers.append(('X-Mass-Opt-Out',
                            'true' if opted_out else 'false'))
        self.answer(204, headers)

    def do_POST(self):
        found = self.account()
        if found is None:
            return
        account, admin = found
        mark = self.headers.get('X-Mass-Urgent')
        # anyone else's X-Mass-Urgent is stripped
        if self.server.mass and admin and mark is not None:
            self.server.marks[account] = mark.lower() == 'true'
        opt_out = self.headers.get('X-Mass-Opt-Out')
        if self.server.mass and admin and opt_out is not None:
            self.server.opt_outs[account] = opt_out.lower() == 'true'
        self.answer(204)


@pytest.fixture
def start():
    started = []

    def start(**kwargs):
        proxy = Proxy(**kwargs)
        # a short poll: shutdown() waits for it
        threading.Thread(target=proxy.serve_forever, args=(0.05,),
                         daemon=True).start()
        started.append(proxy)
        return proxy
    yield start
    for proxy in started:
        proxy.shutdown()
        proxy.server_close()


def connection(proxy, user='admin:admin', account='AUTH_test'):
    _, token, _, _ = USERS[user]
    return Connection(preauthurl='%s/v1/%s' % (proxy.url, account),
                      preauthtoken=token, retries=0)


def test_shown():
    assert urgent_mark.shown({'x-mass-urgent': 'true'}) is True
    assert urgent_mark.shown({'x-mass-urgent': 'False'}) is False
    assert urgent_mark.shown({'x-account-object-count': '0'}) is None
    with pytest.raises(UrgentError) as err:
        urgent_mark.shown({'x-mass-urgent': 'yes'})
    assert "X-Mass-Urgent: 'yes'" in str(err.value)


def test_mark_and_clear(start):
    proxy = start()
    conn = connection(proxy)
    assert urgent_mark.get_mark(conn) is False
    assert urgent_mark.set_mark(conn, True) is True
    assert proxy.marks == {'AUTH_test': True}
    assert urgent_mark.get_mark(conn) is True
    method, path, headers = proxy.requests[1]
    assert (method, path, headers['X-Mass-Urgent']) == (
        'POST', '/v1/AUTH_test', 'true')
    # the POST is checked with a HEAD
    assert [r[0] for r in proxy.requests] == ['HEAD', 'POST', 'HEAD',
                                              'HEAD']
    assert urgent_mark.set_mark(conn, False) is False
    assert proxy.marks == {'AUTH_test': False}
    assert urgent_mark.get_mark(connection(proxy, account='AUTH_other')) \
        is False


def test_a_mark_not_shown_names_both_causes(start):
    for proxy, user in ((start(), 'test:tester'),
                        (start(mass=False), 'admin:admin')):
        conn = connection(proxy, user)
        for act in (urgent_mark.get_mark,
                    lambda conn: urgent_mark.set_mark(conn, True)):
            with pytest.raises(UrgentError) as err:
                act(conn)
            assert str(err.value) == (
                'the proxy shows no X-Mass-Urgent for %s/v1/AUTH_test: '
                'either the mass filter is not in its pipeline, or the '
                'token\'s user is not a reseller admin' % proxy.url)
        assert proxy.marks == {}


def test_a_mark_that_did_not_take(start):
    proxy = start(shows='false')
    with pytest.raises(UrgentError) as err:
        urgent_mark.set_mark(connection(proxy), True)
    assert str(err.value) == (
        'X-Mass-Urgent was posted to %s/v1/AUTH_test but the proxy shows '
        'X-Mass-Urgent: false' % proxy.url)


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli(start, capsys, monkeypatch):
    proxy = start()
    auth = ['--auth-url', proxy.url + '/auth/v1.0', '--user', 'admin:admin',
            '--key', 'admin']
    assert run(capsys, 'urgent', 'AUTH_test', *auth) == (
        0, 'tenant: AUTH_test\nurgent: false\n', '')
    status, out, _ = run(capsys, 'urgent', 'AUTH_test', '--on', '--json',
                         *auth)
    assert status == 0
    assert out == '{\n  "tenant": "AUTH_test",\n  "urgent": true\n}\n'
    assert proxy.marks == {'AUTH_test': True}
    # the credentials from the environment, as swift's client reads them
    monkeypatch.setenv('ST_AUTH', proxy.url + '/auth/v1.0')
    monkeypatch.setenv('ST_USER', 'admin:admin')
    monkeypatch.setenv('ST_KEY', 'admin')
    assert run(capsys, 'urgent', 'AUTH_test', '--off') == (
        0, 'tenant: AUTH_test\nurgent: false\n', '')
    assert proxy.marks == {'AUTH_test': False}
    # not a reseller admin: exit 1, saying why
    status, out, err = run(capsys, 'urgent', 'AUTH_test', '--on',
                           '--user', 'test:tester', '--key', 'testing')
    assert (status, out) == (1, '')
    assert 'shows no X-Mass-Urgent' in err
    assert 'test:tester is not a reseller admin' in err
    assert proxy.marks == {'AUTH_test': False}
    monkeypatch.delenv('ST_KEY')
    status, _, err = run(capsys, 'urgent', 'AUTH_test')
    assert status == 1 and '$ST_KEY or $OS_PASSWORD' in err
    with pytest.raises(SystemExit):
        run(capsys, 'urgent', 'AUTH_test', '--on', '--off')


# -- opt-out: the same client, another mark ----------------------------------

OPT_OUT = urgent_mark.OPT_OUT.header


def test_opt_out_mark_and_clear(start):
    proxy = start()
    conn = connection(proxy)
    assert urgent_mark.get_mark(conn, OPT_OUT) is False
    assert urgent_mark.set_mark(conn, True, OPT_OUT) is True
    assert (proxy.opt_outs, proxy.marks) == ({'AUTH_test': True}, {})
    method, path, headers = proxy.requests[1]
    assert (method, path, headers['X-Mass-Opt-Out']) == (
        'POST', '/v1/AUTH_test', 'true')
    assert urgent_mark.set_mark(conn, False, OPT_OUT) is False
    assert proxy.opt_outs == {'AUTH_test': False}
    with pytest.raises(urgent_mark.MarkError) as err:
        urgent_mark.get_mark(connection(start(mass=False)), OPT_OUT)
    assert 'shows no X-Mass-Opt-Out' in str(err.value)


def test_opt_out_cli(start, capsys):
    proxy = start()
    auth = ['--auth-url', proxy.url + '/auth/v1.0', '--user', 'admin:admin',
            '--key', 'admin']
    assert run(capsys, 'opt-out', 'AUTH_test', *auth) == (
        0, 'tenant: AUTH_test\nopt-out: false\n', '')
    status, out, _ = run(capsys, 'opt-out', 'AUTH_test', '--on', '--json',
                         *auth)
    assert status == 0
    assert out == '{\n  "opt_out": true,\n  "tenant": "AUTH_test"\n}\n'
    assert proxy.opt_outs == {'AUTH_test': True} and proxy.marks == {}
    assert run(capsys, 'opt-out', 'AUTH_test', '--off', *auth) == (
        0, 'tenant: AUTH_test\nopt-out: false\n', '')
    status, out, err = run(capsys, 'opt-out', 'AUTH_test', '--on',
                           '--user', 'test:tester', '--key', 'testing',
                           '--auth-url', proxy.url + '/auth/v1.0')
    assert (status, out) == (1, '')
    assert 'shows no X-Mass-Opt-Out' in err
    assert proxy.opt_outs == {'AUTH_test': False}
    with pytest.raises(SystemExit):
        run(capsys, 'opt-out', 'AUTH_test', '--on', '--off')
