"""``swift-mass urgent``: show, set or clear a tenant's urgent mark.

Urgent tenants get a reserved share of each device's slots on the object
servers (``mass_queue``). Besides the object servers' ``urgent_tenants``, an
operator marks a tenant urgent in its account, through a proxy running the
``mass`` filter (``swift_mass.proxy.marks``): an account POST by a reseller
admin with ``X-Mass-Urgent: true`` marks it, ``false`` clears the mark, and a
reseller admin's account HEAD shows ``X-Mass-Urgent: true`` or ``false``. A
proxy that shows neither does not run Mass, or the credentials are not a
reseller admin's. Proxies pick a change up within their
``urgent_recheck_seconds`` (``[filter:mass]``, default 30).

The functions take a swiftclient ``Connection`` on the tenant's account
(``swift_mass.cli.client.tenant_connection`` makes one from operator
credentials)::

    conn = client.tenant_connection(auth_url, user, key, 'AUTH_test')
    set_mark(conn, True)      # POST, then HEAD to check: True
    get_mark(conn)            # True
"""
from swift_mass import tags
from swift_mass.cli import client, output

HEADER = tags.URGENT_MARK_HEADER
RECHECK_NOTE = ('proxies pick a change up within their '
                'urgent_recheck_seconds ([filter:mass], default 30)')


class UrgentError(Exception):
    pass


def shown(headers):
    """The mark an account HEAD's headers (swiftclient's, lower-case
    names) show: True, False, or None when they show none."""
    value = headers.get(HEADER.lower())
    if value is None:
        return None
    value = value.strip().lower()
    if value not in ('true', 'false'):
        raise UrgentError('the proxy shows %s: %r; expected true or false'
                          % (HEADER, value))
    return value == 'true'


def get_mark(conn):
    """The mark of the connection's account; UrgentError when the proxy
    shows none."""
    urgent = shown(conn.head_account())
    if urgent is None:
        raise UrgentError(
            'the proxy shows no %s for %s: either the mass filter is not in '
            'its pipeline, or %s is not a reseller admin' % (
                HEADER, conn.url, conn.user or 'the token\'s user'))
    return urgent


def set_mark(conn, urgent):
    """Mark the connection's account urgent (or clear the mark) and check
    that the proxy shows it so; the mark shown.  UrgentError when the proxy
    shows none (see :func:`get_mark`) or the other value."""
    conn.post_account({HEADER: 'true' if urgent else 'false'})
    now = get_mark(conn)
    if now != urgent:
        raise UrgentError('%s was posted to %s but the proxy shows %s: %s'
                          % (HEADER, conn.url, HEADER,
                             'true' if now else 'false'))
    return now


def command(args):
    """``swift-mass urgent TENANT [--on | --off]``: the result for --json.
    ``args``: tenant, on (True, False or None to show), auth_url, user,
    key."""
    auth_url, user, key = client.credentials(args)
    conn = client.tenant_connection(auth_url, user, key, args.tenant)
    if args.on is None:
        urgent = get_mark(conn)
    else:
        urgent = set_mark(conn, args.on)
    return {'tenant': args.tenant, 'urgent': urgent}


def text(result):
    """The plain-text form of :func:`command`'s result."""
    return 'tenant: %s\nurgent: %s' % (
        result['tenant'], 'true' if result['urgent'] else 'false')


def add_parsers(subparsers):
    """Register ``urgent``."""
    p = subparsers.add_parser(
        'urgent', help='show, set or clear a tenant\'s urgent mark',
        description='Without --on or --off, shows whether TENANT is marked '
        'urgent; with them, marks it (or clears the mark) with an account '
        'POST through the proxy, then checks the mark the proxy shows.  '
        'Needs a reseller admin\'s credentials and the mass filter in the '
        'proxy\'s pipeline.  Proxies pick a change up within their '
        'urgent_recheck_seconds ([filter:mass], default 30).')
    p.add_argument('tenant', help='the account, e.g. AUTH_test')
    onoff = p.add_mutually_exclusive_group()
    onoff.add_argument('--on', action='store_const', const=True,
                       default=None, help='mark the tenant urgent')
    onoff.add_argument('--off', action='store_const', const=False,
                       dest='on', help='clear the mark')
    client.add_options(p)
    p.set_defaults(func=lambda args: output.emit(
        args, lambda: command(args), text))
