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
"""``--project NAME``: a Keystone project's name to its account and back,
against the small proxy of test_urgent with a fake of Keystone's v3 API
on the same port (tokens, projects, domains): swiftclient authenticates
there as ``swift`` does, and the lookups go through a real keystoneauth1
session."""
import datetime
import json
import threading
import urllib.parse

import pytest

from swift_mass.cli import client, main as cli, migrate, projects
from tests.unit.cli import test_urgent
from tests.unit.cli.test_urgent import Handler, Proxy

PASSWORD = 'operator-secret'
OPERATOR_PROJECT = {'id': 'op0000', 'name': 'service',
                    'domain_id': 'default'}
PROJECTS = [OPERATOR_PROJECT,
            {'id': 'a1b2c3', 'name': 'mass-ks-1', 'domain_id': 'default'},
            {'id': 'd4e5f6', 'name': 'mass-ks-2', 'domain_id': 'default'},
            # the same name in another domain
            {'id': 'other1', 'name': 'mass-ks-1', 'domain_id': 'd2'}]
DOMAINS = [{'id': 'default', 'name': 'Default'}, {'id': 'd2', 'name': 'Two'}]
TOKEN = 'ks_tk_operator'


class Keystone(Proxy):
    """The proxy, and Keystone's v3 API under /v3: ``prefix`` the proxies'
    reseller prefix, ``deny``: the policies that answer 403
    (``list_projects``, ``get_project``, ``list_domains``)."""

    def __init__(self, prefix='KEY_', projects=PROJECTS, deny=(), **kwargs):
        super(Keystone, self).__init__(**kwargs)
        self.RequestHandlerClass = KeystoneHandler
        self.prefix = prefix
        self.projects = list(projects)
        self.deny = set(deny)
        self.identity = []

    @property
    def auth_url(self):
        return self.url + '/v3'


class KeystoneHandler(Handler):

    def json(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def token_body(self):
        now = datetime.datetime.now(datetime.timezone.utc)
        stamp = '%Y-%m-%dT%H:%M:%S.000000Z'
        project = dict(OPERATOR_PROJECT, domain={'id': 'default',
                                                 'name': 'Default'})
        del project['domain_id']
        return {'token': {
            'methods': ['password'], 'issued_at': now.strftime(stamp),
            'expires_at': (now + datetime.timedelta(hours=1)).strftime(
                stamp),
            'user': {'id': 'u-operator', 'name': 'operator',
                     'domain': {'id': 'default', 'name': 'Default'}},
            'project': project,
            'roles': [{'id': 'r1', 'name': 'ResellerAdmin'}],
            'catalog': [{'type': 'object-store', 'name': 'swift',
                         'id': 's1', 'endpoints': [{
                             'id': 'e1', 'interface': 'public',
                             'region': 'RegionOne',
                             'region_id': 'RegionOne',
                             'url': '%s/v1/%s%s' % (
                                 self.server.url, self.server.prefix,
                                 OPERATOR_PROJECT['id'])}]}]}}

    def do_POST(self):
        if self.path.rstrip('/') != '/v3/auth/tokens':
            return super(KeystoneHandler, self).do_POST()
        body = json.loads(self.rfile.read(
            int(self.headers['Content-Length'])))
        user = body['auth']['identity']['password']['user']
        scope = body['auth'].get('scope', {}).get('project', {})
        self.server.identity.append(('POST', '/v3/auth/tokens', {}))
        if (user.get('name'), user.get('password'), scope.get('name')) != (
                'operator', PASSWORD, 'service'):
            return self.json(401, {'error': {'code': 401}})
        self.json(201, self.token_body(), [('X-Subject-Token', TOKEN)])

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path == '/info':
            return self.json(200, {'swift': {'policies': [
                {'name': 'standard', 'default': True}, {'name': 'bulk'}]}})
        if url.path.startswith('/v1/') and url.path.count('/') == 2:
            # an account listing: no containers
            if self.account() is not None:
                self.json(200, [])
            return
        if not url.path.startswith('/v3/'):
            # v1's auth too: identity records every authentication
            self.server.identity.append(('GET', url.path, query))
            return super(KeystoneHandler, self).do_GET()
        self.server.identity.append(('GET', url.path, query))
        if self.headers.get('X-Auth-Token') != TOKEN:
            return self.json(401, {'error': {'code': 401}})
        parts = url.path.split('/')[2:]
        denied = {'projects': 'list_projects', 'domains': 'list_domains'}
        what = denied.get(parts[0]) if len(parts) == 1 else 'get_project'
        if what in self.server.deny:
            return self.json(403, {'error': {'code': 403}})
        if parts == ['domains']:
            return self.json(200, {'domains': [
                d for d in DOMAINS if d['name'] == query.get('name')]})
        if parts == ['projects']:
            return self.json(200, {'projects': [
                p for p in self.server.projects
                if all(p.get(k) == query[k] for k in ('name', 'domain_id')
                       if k in query)]})
        found = [p for p in self.server.projects if parts[1:] == [p['id']]]
        if not found:
            return self.json(404, {'error': {'code': 404}})
        self.json(200, {'project': found[0]})


@pytest.fixture
def keystone(monkeypatch):
    """Start fake Keystones (each with its proxy), as test_urgent's start
    does proxies: the operator's token is a reseller admin's there."""
    started = []

    def keystone(**kwargs):
        server = Keystone(**kwargs)
        threading.Thread(target=server.serve_forever, args=(0.05,),
                         daemon=True).start()
        started.append(server)
        return server
    monkeypatch.setitem(test_urgent.TOKENS, TOKEN, ('', True))
    for name in ('ST_AUTH', 'ST_USER', 'ST_KEY', 'OS_PASSWORD'):
        monkeypatch.delenv(name, raising=False)
    yield keystone
    for server in started:
        server.shutdown()
        server.server_close()


def options(server):
    return ['--os-auth-url', server.auth_url, '--os-username', 'operator',
            '--os-project-name', 'service', '--os-user-domain-name',
            'Default', '--os-project-domain-name', 'Default']


def v3(server, password=PASSWORD):
    parser = cli.build_parser('urgent')
    args = parser.parse_args(['urgent', '--project', 'x'] + options(server))
    return client.credentials(args, environ={'OS_PASSWORD': password})


def storage_url(server):
    return '%s/v1/%sop0000' % (server.url, server.prefix)


# -- resolution ---------------------------------------------------------


def test_one_project_is_the_prefix_of_the_storage_url_and_its_id(keystone):
    server = keystone()
    creds = v3(server)
    found = projects.resolve(creds, storage_url(server), project='mass-ks-1')
    assert found == {'account': 'KEY_a1b2c3', 'project': {
        'id': 'a1b2c3', 'name': 'mass-ks-1', 'domain_id': 'default'}}
    # asked by name in the operator's own project domain
    assert ('GET', '/v3/projects', {'name': 'mass-ks-1',
                                    'domain_id': 'default'}) \
        in server.identity
    # the prefix is the storage URL's, whatever it is
    other = keystone(prefix='AUTH_')
    assert projects.resolve(v3(other), storage_url(other),
                            project='mass-ks-2')['account'] == \
        'AUTH_d4e5f6'


def test_the_prefix_is_what_precedes_the_operators_project_id():
    assert projects.reseller_prefix('http://p/v1/AUTH_abc', 'abc') == \
        'AUTH_'
    assert projects.reseller_prefix('http://p/v1/SWIFT_abc/', 'abc') == \
        'SWIFT_'
    with pytest.raises(projects.ProjectError,
                       match='does not end with its project id xyz'):
        projects.reseller_prefix('http://p/v1/AUTH_abc', 'xyz')


def test_no_project_of_that_name_is_refused(keystone):
    server = keystone()
    with pytest.raises(projects.ProjectError,
                       match="no project 'nope' in domain default"):
        projects.resolve(v3(server), storage_url(server), project='nope')


def test_several_projects_of_that_name_are_refused(keystone):
    twice = PROJECTS + [{'id': 'again1', 'name': 'mass-ks-2',
                         'domain_id': 'default'}]
    server = keystone(projects=twice)
    with pytest.raises(projects.ProjectError) as err:
        projects.resolve(v3(server), storage_url(server), project='mass-ks-2')
    assert "2 projects 'mass-ks-2'" in str(err.value)
    assert 'd4e5f6, again1' in str(err.value)
    assert 'give TENANT' in str(err.value)


def test_a_denied_listing_says_which_role_it_needs(keystone):
    server = keystone(deny=('list_projects',))
    with pytest.raises(projects.ProjectError) as err:
        projects.resolve(v3(server), storage_url(server), project='mass-ks-1')
    said = str(err.value)
    for words in ('403 Forbidden', 'identity:list_projects',
                  'rule:admin_required', 'admin role', 'system-scoped',
                  'openstack project show NAME -f value -c id'):
        assert words in said


def test_v1_and_v2_credentials_are_refused_with_project(keystone):
    server = keystone()
    v1 = client.credentials(cli.build_parser('urgent').parse_args(
        ['urgent', 'T', '-A', server.url + '/auth/v1.0', '-U', 'a:b']),
        environ={'ST_KEY': 'k'})
    with pytest.raises(projects.ProjectError,
                       match='needs Keystone v3 credentials.*version 1.0'):
        projects.resolve(v1, storage_url(server), project='mass-ks-1')
    # an account given as is needs no Keystone
    assert projects.resolve(v1, storage_url(server), tenant='AUTH_t') == {
        'account': 'AUTH_t'}
    v2 = dict(v1, auth_version='2.0')
    with pytest.raises(projects.ProjectError, match='version 2.0'):
        projects.session(v2)


def test_project_domain_by_name_or_id(keystone):
    server = keystone()
    creds = v3(server)
    for domain in ('Two', 'd2'):
        assert projects.resolve(
            creds, storage_url(server), project='mass-ks-1',
            domain=domain)['account'] == 'KEY_other1'
    # the operator's own: no domain lookup
    server.identity[:] = []
    projects.resolve(creds, storage_url(server), project='mass-ks-1',
                     domain='Default')
    assert [path for _, path, _ in server.identity
            if path == '/v3/domains'] == []


def test_an_account_given_is_named_back_when_keystone_shows_it(keystone):
    server = keystone()
    assert projects.resolve(v3(server), storage_url(server),
                            tenant='KEY_d4e5f6') == {
        'account': 'KEY_d4e5f6', 'project': {
            'id': 'd4e5f6', 'name': 'mass-ks-2', 'domain_id': 'default'}}
    # not shown, not the prefix, wrong credentials: the account alone
    denied = keystone(deny=('get_project',))
    assert projects.resolve(v3(denied), storage_url(denied),
                            tenant='KEY_d4e5f6') == {'account': 'KEY_d4e5f6'}
    assert projects.resolve(v3(server), storage_url(server),
                            tenant='AUTH_d4e5f6') == {
        'account': 'AUTH_d4e5f6'}
    assert projects.resolve(v3(server, 'wrong'), storage_url(server),
                            tenant='KEY_d4e5f6') == {
        'account': 'KEY_d4e5f6'}


def test_identity_url_as_swiftclient_reads_the_auth_url():
    for url in ('http://k:5000/v3', 'http://k:5000/v3/', 'http://k:5000',
                'http://k:5000/v2.0'):
        assert projects.identity_url(url) == 'http://k:5000/v3'


# -- the arguments ------------------------------------------------------


@pytest.mark.parametrize('argv, said', [
    ([], 'neither was given'),
    (['AUTH_t', '--project', 'p'], 'both were given'),
    (['AUTH_t', '--project-domain', 'Default'],
     '--project-domain goes with --project'),
])
@pytest.mark.parametrize('command', [['urgent'], ['opt-out'],
                                     ['migrate', 'plan']])
def test_exactly_one_of_tenant_and_project(command, argv, said, capsys):
    if command[0] == 'migrate' and argv[:2] == ['AUTH_t', '--project']:
        # with --project, migrate's positionals are containers
        return
    with pytest.raises(SystemExit) as exit:
        cli.main(command + argv + ['-A', 'http://x/auth/v1.0'])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert said in err and 'usage:' in err


# -- each subcommand ----------------------------------------------------


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize('command, key, marks', [
    ('urgent', 'urgent', 'marks'), ('opt-out', 'opt_out', 'opt_outs')])
def test_a_mark_by_project(keystone, capsys, monkeypatch, command, key,
                           marks):
    server = keystone()
    monkeypatch.setenv('OS_PASSWORD', PASSWORD)
    status, out, err = run(capsys, command, '--project', 'mass-ks-1', '--on',
                           *options(server))
    assert (status, err) == (0, '')
    assert out == ('tenant: KEY_a1b2c3\nproject: mass-ks-1 (id a1b2c3, '
                   'domain default)\n%s: true\n' % command)
    assert getattr(server, marks) == {'KEY_a1b2c3': True}
    status, out, _ = run(capsys, command, '--project', 'mass-ks-1', '--off',
                         '--json', *options(server))
    assert status == 0
    assert json.loads(out) == {'tenant': 'KEY_a1b2c3', key: False,
                               'project': {'id': 'a1b2c3',
                                           'name': 'mass-ks-1',
                                           'domain_id': 'default'}}
    assert getattr(server, marks) == {'KEY_a1b2c3': False}
    # the account given: named back
    status, out, _ = run(capsys, command, 'KEY_d4e5f6', '--json',
                         *options(server))
    assert json.loads(out)['project']['name'] == 'mass-ks-2'
    # refused: exit 1, saying why, nothing marked
    denied = keystone(deny=('list_projects',))
    status, out, err = run(capsys, command, '--project', 'mass-ks-2', '--on',
                           *options(denied))
    assert (status, out) == (1, '')
    assert 'identity:list_projects' in err
    assert getattr(denied, marks) == {}


def test_a_mark_by_project_needs_keystone_credentials(keystone, capsys):
    server = keystone()
    status, out, err = run(capsys, 'urgent', '--project', 'mass-ks-1',
                           '-A', server.url + '/auth/v1.0', '-U',
                           'admin:admin', '-K', 'admin')
    assert (status, out) == (1, '')
    assert 'needs Keystone v3 credentials' in err
    # refused before anything is asked of the auth service
    assert server.identity == []
    # v1 credentials do reach it with an account given
    run(capsys, 'urgent', 'KEY_t', '-A', server.url + '/auth/v1.0', '-U',
        'admin:admin', '-K', 'admin')
    assert server.identity == [('GET', '/auth/v1.0', {})]


def test_migrate_by_project(keystone, capsys, monkeypatch):
    server = keystone()
    monkeypatch.setenv('OS_PASSWORD', PASSWORD)
    status, out, err = run(capsys, 'migrate', 'plan', '--project',
                           'mass-ks-2', '--policy', 'bulk', '--json',
                           *options(server))
    assert status == 0, err
    result = json.loads(out)
    assert (result['tenant'], result['project']['name'],
            result['target']) == ('KEY_d4e5f6', 'mass-ks-2', 'bulk')
    listed = [path for method, path, _ in server.requests
              if method == 'GET']
    assert '/v1/KEY_d4e5f6?format=json' in listed
    status, out, _ = run(capsys, 'migrate', 'plan', '--project', 'mass-ks-2',
                         '--policy', 'bulk', *options(server))
    assert out.splitlines()[0].startswith(
        'tenant KEY_d4e5f6 (project mass-ks-2 (id d4e5f6, domain default)) '
        '-> bulk')
    # an account among the containers: TENANT and --project both meant
    status, out, err = run(capsys, 'migrate', 'run', 'KEY_a1b2c3',
                           '--project', 'mass-ks-2', '--policy', 'bulk',
                           *options(server))
    assert (status, out) == (1, '')
    assert 'KEY_a1b2c3 would be a container of KEY_d4e5f6' in err


def test_migrate_positionals_after_project_are_containers(monkeypatch):
    calls = []

    def fake_command(args, table, progress):
        calls.append((args.tenant, args.project, args.containers))
        return {'tenant': 'AUTH_x', 'target': 'bulk', 'why': '--policy',
                'containers': []}
    monkeypatch.setattr(migrate, 'command', fake_command)
    assert cli.main(['migrate', 'run', '--project', 'p', 'c1', 'c2',
                     '--policy', 'bulk']) == 0
    assert cli.main(['migrate', 'run', 'c1', '--project', 'p',
                     '--policy', 'bulk']) == 0
    assert calls == [(None, 'p', ['c1', 'c2']), (None, 'p', ['c1'])]
