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
a proxy (``swift-mass migrate``, ``swift-mass urgent``).

An operator acts on a tenant's account as a reseller admin: credentials
from ``--auth-url``, ``--user``, ``--key`` or ``ST_AUTH``, ``ST_USER``,
``ST_KEY`` (as swiftclient's ``swift`` reads them), one authentication
with swiftclient's ``get_auth``, and swiftclient ``Connection``\\ s on the
tenant's storage URL (``preauthurl``, which swiftclient keeps when it
authenticates again on a 401)::

    auth_url, user, key = credentials(args)
    url, connect = tenant_connector(auth_url, user, key, 'AUTH_test')
    conn = connect()          # one per thread: they are not thread-safe
"""
import os
import urllib.parse

from swiftclient import client as swiftclient


class MissingCredentials(Exception):
    pass


def add_options(parser):
    """The credential options of a subcommand."""
    parser.add_argument('--auth-url', help='default: $ST_AUTH')
    parser.add_argument('--user', help='default: $ST_USER')
    parser.add_argument('--key', help='default: $ST_KEY')


def credentials(args, environ=os.environ):
    """``(auth_url, user, key)`` from the options, else from ST_AUTH,
    ST_USER and ST_KEY as swiftclient's ``swift`` reads them; no default:
    an operator says who acts."""
    found = (args.auth_url or environ.get('ST_AUTH'),
             args.user or environ.get('ST_USER'),
             args.key or environ.get('ST_KEY'))
    if not all(found):
        missing = [name for name, value in zip(
            ('--auth-url/ST_AUTH', '--user/ST_USER', '--key/ST_KEY'), found)
            if not value]
        raise MissingCredentials(
            'swift-mass acts on the tenant\'s account as a reseller admin; '
            'missing %s' % ', '.join(missing))
    return found


def account_url(storage_url, account):
    """The operator's storage URL turned to ``account``'s: the same
    endpoint, the last path segment replaced (``.../v1/AUTH_x``)."""
    # neither swiftclient nor Swift turns a storage URL to another account
    base = storage_url.rstrip('/').rsplit('/', 1)[0]
    return '%s/%s' % (base, urllib.parse.quote(account, safe=''))


def tenant_connector(auth_url, user, key, tenant, retries=5):
    """``(url, connect)``: ``tenant``'s storage URL, and a function that
    makes swiftclient Connections on it with the operator's credentials,
    all sharing one authentication (each authenticates again on a 401).
    Raises swiftclient's ClientException when the credentials are
    refused."""
    storage_url, token = swiftclient.get_auth(auth_url, user, key)
    url = account_url(storage_url, tenant)

    def connect():
        return swiftclient.Connection(auth_url, user, key, preauthurl=url,
                                      preauthtoken=token, retries=retries)
    return url, connect


def tenant_connection(auth_url, user, key, tenant, retries=2):
    """One Connection on ``tenant``'s account with the operator's
    credentials (see :func:`tenant_connector`)."""
    return tenant_connector(auth_url, user, key, tenant, retries)[1]()
