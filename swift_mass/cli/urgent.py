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
"""``swift-mass urgent`` and ``swift-mass opt-out``: show, set or clear a
mark on a tenant's account.

* urgent: urgent tenants get a reserved share of each device's slots on
  the object servers (``mass_queue``).  Besides the object servers'
  ``urgent_tenants``, an operator marks a tenant urgent in its account.
* opt-out: an opted-out tenant is served as without Mass (no tags, no
  substore, no method: ``swift_mass.proxy.middleware``), and the control
  loop does not classify it.  Besides the proxies' ``opt_out_accounts``,
  an operator opts a tenant out in its account.

Both go through a proxy running the ``mass`` filter
(``swift_mass.proxy.marks``): an account POST by a reseller admin with
``X-Mass-Urgent: true`` (``X-Mass-Opt-Out: true``) sets the mark, ``false``
clears it, and a reseller admin's account HEAD shows it as ``true`` or
``false``.  A proxy that shows neither does not run Mass, or the
credentials are not a reseller admin's.  Proxies pick a change up within
their ``urgent_recheck_seconds`` (``[filter:mass]``, default 30).

The functions take a swiftclient ``Connection`` on the tenant's account
(``swift_mass.cli.client.tenant_connection`` makes one from operator
credentials), and the mark's header (by default the urgent mark's)::

    conn = client.tenant_connection(client.credentials(args), 'AUTH_test')
    set_mark(conn, True)      # POST, then HEAD to check: True
    get_mark(conn)            # True
    set_mark(conn, True, OPT_OUT.header)
"""
import collections

from swift_mass import tags
from swift_mass.cli import client, output, projects

#: a mark's subcommand: its name, the header, the key of --json's result
#: and what --on does, for --help
AccountMark = collections.namedtuple('AccountMark', [
    'command', 'header', 'key', 'on_help'])
URGENT = AccountMark('urgent', tags.URGENT_MARK_HEADER, 'urgent',
                     'mark the tenant urgent')
OPT_OUT = AccountMark('opt-out', tags.OPT_OUT_MARK_HEADER, 'opt_out',
                      'opt the tenant out of Mass')
MARKS = (URGENT, OPT_OUT)
HEADER = URGENT.header


class MarkError(Exception):
    pass


# its name when the urgent mark was the only one
UrgentError = MarkError


def shown(headers, header=HEADER):
    """The mark an account HEAD's headers (swiftclient's, lower-case
    names) show: True, False, or None when they show none."""
    value = headers.get(header.lower())
    if value is None:
        return None
    value = value.strip().lower()
    if value not in ('true', 'false'):
        raise MarkError('the proxy shows %s: %r; expected true or false'
                        % (header, value))
    return value == 'true'


def get_mark(conn, header=HEADER):
    """The mark of the connection's account; MarkError when the proxy
    shows none."""
    on = shown(conn.head_account(), header)
    if on is None:
        raise MarkError(
            'the proxy shows no %s for %s: either the mass filter is not in '
            'its pipeline, or %s is not a reseller admin' % (
                header, conn.url, conn.user or 'the token\'s user'))
    return on


def set_mark(conn, on, header=HEADER):
    """Set the connection's account's mark (or clear it) and check that
    the proxy shows it so; the mark shown.  MarkError when the proxy shows
    none (see :func:`get_mark`) or the other value."""
    conn.post_account({header: 'true' if on else 'false'})
    now = get_mark(conn, header)
    if now != on:
        raise MarkError('%s was posted to %s but the proxy shows %s: %s'
                        % (header, conn.url, header,
                           'true' if now else 'false'))
    return now


def command(args, mark=URGENT):
    """``swift-mass urgent|opt-out TENANT|--project NAME [--on | --off]``:
    the result for --json.  ``args``: tenant or project (and
    project_domain), on (True, False or None to show) and the credentials
    (:func:`swift_mass.cli.client.add_options`).  The result names the
    account (``tenant``) and, when known, its Keystone project
    (:func:`swift_mass.cli.projects.resolve`)."""
    found, _url, connect = projects.connector(args, retries=2)
    conn = connect()
    if args.on is None:
        on = get_mark(conn, mark.header)
    else:
        on = set_mark(conn, args.on, mark.header)
    result = {'tenant': found['account'], mark.key: on}
    if found.get('project'):
        result['project'] = found['project']
    return result


def text(result):
    """The plain-text form of :func:`command`'s result."""
    key = URGENT.key if URGENT.key in result else OPT_OUT.key
    project = projects.describe(result)
    return 'tenant: %s\n%s%s: %s' % (
        result['tenant'], 'project: %s\n' % project if project else '',
        key.replace('_', '-'), 'true' if result[key] else 'false')


def add_parsers(subparsers):
    """Register ``urgent`` and ``opt-out``."""
    descriptions = {
        URGENT: ('show, set or clear a tenant\'s urgent mark',
                 'Without --on or --off, shows whether TENANT is marked '
                 'urgent; with them, marks it (or clears the mark)'),
        OPT_OUT: ('show, set or clear a tenant\'s opt-out of Mass',
                  'Without --on or --off, shows whether TENANT is opted '
                  'out of Mass (served as without it: no tags, no '
                  'substore, no method; not classified); with them, opts '
                  'it out (or back in)'),
    }
    for mark in MARKS:
        summary, what = descriptions[mark]
        p = subparsers.add_parser(
            mark.command, help=summary,
            description=what + ' with an account POST through the proxy, '
            'then checks the mark the proxy shows.  Needs a reseller '
            'admin\'s credentials (Keystone: the ResellerAdmin role; with '
            '--project, also the right to list projects) and the mass '
            'filter in the proxy\'s pipeline.  Proxies pick a change up '
            'within their urgent_recheck_seconds ([filter:mass], default '
            '30).')
        projects.add_options(p)
        onoff = p.add_mutually_exclusive_group()
        onoff.add_argument('--on', action='store_const', const=True,
                           default=None, help=mark.on_help)
        onoff.add_argument('--off', action='store_const', const=False,
                           dest='on', help='clear the mark')
        client.add_options(p)
        p.set_defaults(func=lambda args, mark=mark, p=p: projects.check(
            p, args) or output.emit(args, lambda: command(args, mark), text))
