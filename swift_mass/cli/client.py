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
"""The operator's connections to Swift, for the subcommands that go through
a proxy (``swift-mass migrate``, ``swift-mass urgent``, ``swift-mass
opt-out``).

An operator acts on a tenant's account as a reseller admin (tempauth's
``.reseller_admin``, Keystone's ``ResellerAdmin`` role), with the
credentials swiftclient's ``swift`` takes, under the same option and
environment names: v1 (``-A``/``ST_AUTH``, ``-U``/``ST_USER``,
``-K``/``ST_KEY``) or Keystone v2/v3 (``--os-auth-url``/``OS_AUTH_URL``,
``--os-username``, ``OS_PASSWORD``, ``--os-project-name``, the domains,
...), the auth version found as ``swift`` finds it (swiftclient's
``process_options``).  A secret is best left in the environment: no
option needs one on the command line.  One authentication, and swiftclient
``Connection``\\ s on the tenant's storage URL (``preauthurl``, which
swiftclient keeps when it authenticates again on a 401)::

    creds = credentials(args)
    url, connect = tenant_connector(creds, 'AUTH_test')
    conn = connect()          # one per thread: they are not thread-safe
"""
import os
import urllib.parse

from swiftclient import client as swiftclient
from swiftclient.service import process_options

from swift_mass import tags

# (option, dest, environment variables, help): swiftclient's shell reads
# these when it builds its parser (add_default_args, which also brings
# options of its own commands) and its service's defaults are private,
# so the names are listed here, as swift spells them.
OPTIONS = (
    ('--auth', 'auth', ('ST_AUTH',), 'v1 auth URL'),
    ('--user', 'user', ('ST_USER',), 'v1 user'),
    ('--key', 'key', ('ST_KEY',), 'v1 key (best left in $ST_KEY)'),
    ('--auth-version', 'auth_version',
     ('ST_AUTH_VERSION', 'OS_AUTH_VERSION', 'OS_IDENTITY_API_VERSION'),
     '1.0, 2.0 or 3 (default: from the other options)'),
    ('--os-auth-url', 'os_auth_url', ('OS_AUTH_URL',), 'Keystone URL'),
    ('--os-auth-type', 'os_auth_type', ('OS_AUTH_TYPE',),
     'v1password, v2password, v3password or v3applicationcredential'),
    ('--os-username', 'os_username', ('OS_USERNAME',), None),
    ('--os-user-id', 'os_user_id', ('OS_USER_ID',), None),
    ('--os-password', 'os_password', ('OS_PASSWORD',),
     'best left in $OS_PASSWORD'),
    ('--os-user-domain-name', 'os_user_domain_name',
     ('OS_USER_DOMAIN_NAME',), None),
    ('--os-user-domain-id', 'os_user_domain_id', ('OS_USER_DOMAIN_ID',),
     None),
    ('--os-project-name', 'os_project_name', ('OS_PROJECT_NAME',), None),
    ('--os-project-id', 'os_project_id', ('OS_PROJECT_ID',), None),
    ('--os-project-domain-name', 'os_project_domain_name',
     ('OS_PROJECT_DOMAIN_NAME',), None),
    ('--os-project-domain-id', 'os_project_domain_id',
     ('OS_PROJECT_DOMAIN_ID',), None),
    ('--os-tenant-name', 'os_tenant_name', ('OS_TENANT_NAME',), None),
    ('--os-tenant-id', 'os_tenant_id', ('OS_TENANT_ID',), None),
    ('--os-application-credential-id', 'os_application_credential_id',
     ('OS_APPLICATION_CREDENTIAL_ID',), None),
    ('--os-application-credential-secret',
     'os_application_credential_secret',
     ('OS_APPLICATION_CREDENTIAL_SECRET',),
     'best left in $OS_APPLICATION_CREDENTIAL_SECRET'),
    ('--os-auth-token', 'os_auth_token', ('OS_AUTH_TOKEN',), None),
    ('--os-storage-url', 'os_storage_url', ('OS_STORAGE_URL',), None),
    ('--os-region-name', 'os_region_name', ('OS_REGION_NAME',), None),
    ('--os-service-type', 'os_service_type', ('OS_SERVICE_TYPE',), None),
    ('--os-endpoint-type', 'os_endpoint_type', ('OS_ENDPOINT_TYPE',), None),
    ('--os-cacert', 'os_cacert', ('OS_CACERT',), None),
)
# swift's short spellings, and this command's earlier ones
ALIASES = {'--auth': ('-A', '--auth-url'), '--user': ('-U',),
           '--key': ('-K',), '--auth-version': ('-V',)}


class MissingCredentials(Exception):
    pass


def add_options(parser):
    """The credential options of a subcommand, as swiftclient's ``swift``
    names them."""
    group = parser.add_argument_group(
        'credentials (a reseller admin\'s; as swift takes them, options or '
        'environment)')
    for option, dest, names, text in OPTIONS:
        group.add_argument(option, *ALIASES.get(option, ()), dest=dest,
                           help='%sdefault: $%s' % (
                               text + '; ' if text else '',
                               ', $'.join(names)))


def credentials(args, environ=os.environ):
    """swiftclient's options (``auth``, ``user``, ``key``, ``auth_version``,
    ``os_options``, ...) from the options given, else the environment, as
    swiftclient's ``swift`` reads them; no default: an operator says who
    acts."""
    options = {}
    for _option, dest, names, _text in OPTIONS:
        value = getattr(args, dest, None)
        for name in names:
            if value:
                break
            value = environ.get(name)
        options[dest] = value or None
    options['auth_version'] = options['auth_version'] or '1.0'
    process_options(options)
    if not (options['auth'] and options['user'] and options['key']):
        missing = [name for name, value in (
            ('-A/--auth/$ST_AUTH or --os-auth-url/$OS_AUTH_URL',
             options['auth']),
            ('-U/--user/$ST_USER or --os-username/$OS_USERNAME',
             options['user']),
            ('$ST_KEY or $OS_PASSWORD', options['key'])) if not value]
        raise MissingCredentials(
            'swift-mass acts on the tenant\'s account as a reseller admin; '
            'missing %s' % ', '.join(missing))
    return options


def account_url(storage_url, account):
    """The operator's storage URL turned to ``account``'s: the same
    endpoint, the last path segment replaced (``.../v1/AUTH_x``)."""
    # neither swiftclient nor Swift turns a storage URL to another account
    base = storage_url.rstrip('/').rsplit('/', 1)[0]
    return '%s/%s' % (base, urllib.parse.quote(account, safe=''))


class OperatorConnection(swiftclient.Connection):
    """swiftclient's Connection whose every request says it is the
    operator's own work on the account (tags.OPERATOR_REQUEST_HEADER):
    the mass filter counts a reseller admin's such requests in no
    tenant's workload.  By hand because swiftclient has no default
    headers (it clears its requests session's).  Only ``request``: the
    commands send no chunked bodies (``putrequest``)."""

    def http_connection(self, url=None):
        parsed, conn = super(OperatorConnection, self).http_connection(url)
        request = conn.request

        def operators_request(method, full_path, data=None, headers=None,
                              files=None):
            headers = dict(headers or {},
                           **{tags.OPERATOR_REQUEST_HEADER: 'true'})
            return request(method, full_path, data, headers, files)
        conn.request = operators_request
        return parsed, conn


def _connection(creds, retries, url=None, token=None):
    return OperatorConnection(
        creds['auth'], creds['user'], creds['key'], retries=retries,
        auth_version=creds['auth_version'],
        os_options=dict(creds['os_options']), cacert=creds['os_cacert'],
        preauthurl=url, preauthtoken=token)


def login(creds):
    """``(storage_url, token)``: the operator's own, from the auth
    service.  Raises swiftclient's ClientException when the credentials
    are refused."""
    return _connection(creds, retries=0).get_auth()


def tenant_connector(creds, tenant, retries=5, auth=None):
    """``(url, connect)``: ``tenant``'s storage URL, and a function that
    makes swiftclient Connections on it with the operator's credentials
    (``creds``, from :func:`credentials`), all sharing one authentication
    (``auth``, from :func:`login`, else made here; each authenticates
    again on a 401).  Raises swiftclient's ClientException when the
    credentials are refused."""
    storage_url, token = auth or login(creds)
    url = account_url(storage_url, tenant)

    def connect():
        return _connection(creds, retries, url, token)
    return url, connect


def tenant_connection(creds, tenant, retries=2):
    """One Connection on ``tenant``'s account with the operator's
    credentials (see :func:`tenant_connector`)."""
    return tenant_connector(creds, tenant, retries)[1]()
