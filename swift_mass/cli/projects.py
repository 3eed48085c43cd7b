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
"""A Keystone project's name to its Swift account and back, for
``swift-mass migrate``, ``urgent`` and ``opt-out`` (``--project NAME``,
``--project-domain NAME``, instead of the positional TENANT).

A Keystone tenant's account is the reseller prefix (keystoneauth's
``reseller_prefix``, ``AUTH_`` unless the proxies say otherwise) and its
project id.  The prefix is read off the operator's own storage URL, whose
account is the prefix and the operator's project id; the project's id
comes from Keystone (``GET /v3/projects?name=&domain_id=``), asked with
the operator's own Keystone v3 credentials through a keystoneauth1
session built from the same options and environment as swiftclient's
(:func:`session`)::

    found = resolve(creds, storage_url, project='mass-ks-1')
    found['account']          # 'AUTH_' + its id
    found['project']          # {'id': ..., 'name': 'mass-ks-1',
                              #  'domain_id': 'default'}

Listing projects is Keystone's ``identity:list_projects`` (:data:`DENIED`
says what its default policy lets through).  Given an account instead
(TENANT) under Keystone v3 credentials, the project's name is looked up
too (``GET /v3/projects/{id}``) when Keystone allows it, and left out
otherwise: the account alone is all the command needs.
"""
import urllib.parse

from swift_mass.cli import client


class ProjectError(Exception):
    pass


#: why Keystone refuses to list projects, and what lets it
DENIED = (
    'Keystone denied listing projects (%s on GET /v3/projects, policy '
    'identity:list_projects).  Its default lets through the admin role '
    '(rule:admin_required) on a project-scoped token: since Keystone 25 '
    '(2024.1) by its default rule, in Keystone 22 to 24 by the deprecated '
    'one, while [oslo_policy] enforce_new_defaults and enforce_scope are '
    'off; otherwise the reader role on a system-scoped token or one scoped '
    'to the project\'s domain, which swift-mass does not ask with (it uses '
    'the project-scoped token it acts on Swift with).  So: the admin role '
    'for the operator, or a policy that lets its role list projects (e.g. '
    '"identity:list_projects": "rule:admin_required or '
    'role:ResellerAdmin").  Else give TENANT, the account: the reseller '
    'prefix and the id that `openstack project show NAME -f value -c id` '
    'prints')


def add_options(parser, tenant_help='the account, e.g. AUTH_test'):
    """The positional TENANT (optional) and ``--project``,
    ``--project-domain``: exactly one of TENANT and --project
    (:func:`check`)."""
    parser.add_argument('tenant', nargs='?', help=tenant_help + '; or '
                        '--project')
    parser.add_argument('--project', metavar='NAME',
                        help='the Keystone project whose account to act on '
                        '(instead of TENANT): its id looked up in Keystone '
                        'with the operator\'s v3 credentials (needs the '
                        'right to list projects: docs/cli.md)')
    parser.add_argument('--project-domain', metavar='NAME',
                        help='the domain of --project, a name or an id '
                        '(default: the operator\'s project domain)')


def check(parser, args):
    """parser.error unless exactly one of TENANT and --project is given
    (and --project-domain only with --project)."""
    if args.project_domain and not args.project:
        parser.error('--project-domain goes with --project')
    if bool(args.tenant) == bool(args.project):
        parser.error('give either TENANT (the account, e.g. AUTH_test) or '
                     '--project NAME (a Keystone project): %s given' % (
                         'both were' if args.tenant else 'neither was'))


def identity_url(auth_url):
    """Keystone's v3 API from an auth URL, versioned or not (as swiftclient
    reads it)."""
    base = auth_url.rstrip('/')
    last = base.rsplit('/', 1)[-1]
    if last == 'v3':
        return base
    if last in ('v2.0', 'v2'):
        base = base.rsplit('/', 1)[0]
    return base + '/v3'


def require_v3(creds):
    """ProjectError unless ``creds`` are Keystone v3's."""
    if creds.get('auth_version') != '3':
        raise ProjectError(
            '--project looks the project up in Keystone: it needs Keystone '
            'v3 credentials (--os-auth-url, --os-username, '
            '--os-project-name, the domains, OS_IDENTITY_API_VERSION=3 or '
            'an openrc file), not auth version %s (%s)' % (
                creds.get('auth_version'), creds.get('auth')))


def session(creds):
    """A keystoneauth1 Session authenticated as the operator, from the
    credentials swiftclient takes (:func:`swift_mass.cli.client.
    credentials`); ProjectError unless they are Keystone v3's."""
    require_v3(creds)
    try:
        from keystoneauth1 import session as ksa_session
        from keystoneauth1.identity import v3
    except ImportError:
        raise ProjectError('--project needs keystoneauth1 (pip install '
                           '\'swift_mass[keystone]\')')
    o = creds['os_options']
    url = identity_url(creds['auth'])
    if o.get('auth_type') == 'v3applicationcredential':
        auth = v3.ApplicationCredential(
            auth_url=url, application_credential_id=o.get(
                'application_credential_id'),
            application_credential_secret=o.get(
                'application_credential_secret'))
    else:
        scope = dict(
            project_id=o.get('project_id') or o.get('tenant_id'),
            project_name=o.get('project_name') or o.get('tenant_name'),
            project_domain_id=o.get('project_domain_id'),
            project_domain_name=o.get('project_domain_name'))
        if o.get('auth_token'):
            auth = v3.Token(auth_url=url, token=o['auth_token'], **scope)
        else:
            auth = v3.Password(
                auth_url=url, username=creds['user'],
                user_id=o.get('user_id'), password=creds['key'],
                user_domain_id=o.get('user_domain_id'),
                user_domain_name=o.get('user_domain_name'), **scope)
    return ksa_session.Session(auth=auth, verify=creds.get('os_cacert') or
                               True)


def reseller_prefix(storage_url, project_id):
    """The reseller prefix of the operator's storage URL, whose account is
    the prefix and the operator's project id."""
    account = urllib.parse.unquote(storage_url.rstrip('/').rsplit('/', 1)[-1])
    if not project_id or not account.endswith(project_id):
        raise ProjectError(
            'the operator\'s storage URL %s does not end with its project '
            'id %s: cannot tell the reseller prefix' % (storage_url,
                                                        project_id))
    return account[:-len(project_id)]


def _get(sess, url, params=None):
    return sess.get(url, params=params, raise_exc=False,
                    headers={'Accept': 'application/json'})


def domain_id(sess, identity, domain, access):
    """The id of ``domain`` (a name or an id; None: the operator's project
    domain)."""
    if not domain or domain in (access.project_domain_id,
                                access.project_domain_name):
        return access.project_domain_id or 'default'
    resp = _get(sess, identity + '/domains', {'name': domain})
    if resp.status_code == 200:
        found = [d['id'] for d in resp.json().get('domains', [])
                 if d.get('name') == domain]
        if len(found) == 1:
            return found[0]
    # not a name Keystone shows this user: taken as an id
    return domain


def find_project(sess, identity, name, domain):
    """The project ``name`` of the domain whose id is ``domain``:
    ``{'id', 'name', 'domain_id'}``; ProjectError when none or several
    match, or when Keystone denies the listing."""
    resp = _get(sess, identity + '/projects',
                {'name': name, 'domain_id': domain})
    if resp.status_code == 403:
        raise ProjectError(DENIED % '403 Forbidden')
    if resp.status_code != 200:
        raise ProjectError('Keystone answered %d to GET %s/projects?name=%s'
                           '&domain_id=%s' % (resp.status_code, identity,
                                              name, domain))
    # the filters again, should a policy or a backend have ignored them
    found = [{'id': p['id'], 'name': p['name'],
              'domain_id': p.get('domain_id')}
             for p in resp.json().get('projects', [])
             if p.get('name') == name and p.get('domain_id') == domain]
    if not found:
        raise ProjectError('Keystone has no project %r in domain %s' % (
            name, domain))
    if len(found) > 1:
        raise ProjectError('Keystone has %d projects %r in domain %s (%s): '
                           'give TENANT, the account, instead' % (
                               len(found), name, domain,
                               ', '.join(p['id'] for p in found)))
    return found[0]


def project_of(sess, identity, project_id):
    """``{'id', 'name', 'domain_id'}`` of a project id, or None when
    Keystone will not show it (identity:get_project) or has none."""
    resp = _get(sess, identity + '/projects/' +
                urllib.parse.quote(project_id, safe=''))
    if resp.status_code != 200:
        return None
    p = resp.json().get('project') or {}
    if p.get('id') != project_id:
        return None
    return {'id': p['id'], 'name': p.get('name'),
            'domain_id': p.get('domain_id')}


def resolve(creds, storage_url, tenant=None, project=None, domain=None,
            sess=None):
    """``{'account': ..., 'project': {...}}`` for ``project`` (a name, in
    ``domain``), or for ``tenant`` (an account; its project only when
    Keystone v3 credentials can see it, else the account alone).
    ``storage_url``: the operator's own.  ProjectError when --project
    cannot be resolved."""
    if not project:
        found = {'account': tenant}
        if creds.get('auth_version') != '3':
            return found
        try:
            sess = sess or session(creds)
            prefix = reseller_prefix(storage_url, sess.get_project_id())
            if tenant.startswith(prefix):
                known = project_of(sess, identity_url(creds['auth']),
                                   tenant[len(prefix):])
                if known:
                    found['project'] = known
        except Exception:
            pass  # the name is a courtesy: the account is what acts
        return found
    sess = sess or session(creds)
    access = sess.auth.get_access(sess)
    prefix = reseller_prefix(storage_url, access.project_id)
    identity = identity_url(creds['auth'])
    known = find_project(sess, identity, project,
                         domain_id(sess, identity, domain, access))
    return {'account': prefix + known['id'], 'project': known}


def describe(found):
    """``found``'s project in a line of text, or ''."""
    p = found.get('project')
    if not p:
        return ''
    return '%s (id %s, domain %s)' % (p['name'], p['id'], p['domain_id'])


def connector(args, retries=5):
    """``(found, url, connect)`` for a command's ``args`` (TENANT or
    --project, and the credentials): :func:`resolve`'s answer, and
    :func:`swift_mass.cli.client.tenant_connector`'s on its account, with
    one authentication to Swift."""
    creds = client.credentials(args)
    # callers that build their own args may know nothing of --project
    project = getattr(args, 'project', None)
    if project:
        require_v3(creds)
    auth = client.login(creds)
    found = resolve(creds, auth[0], args.tenant, project,
                    getattr(args, 'project_domain', None))
    url, connect = client.tenant_connector(creds, found['account'], retries,
                                           auth=auth)
    return found, url, connect
