"""The proxy's half of urgent tenants: a mark in account sysmeta that makes
the object servers' ``mass_queue`` keep slots for the tenant.

An operator marks a tenant urgent with ``swift-mass urgent TENANT --on``
(``swift_mass.cli.urgent``): an account POST with ``X-Mass-Urgent: true``
(``false`` removes the mark).  The ``mass`` filter takes that header only
from a reseller admin (``reseller_request``, set by tempauth and
keystoneauth before the request reaches it) and keeps it as
``X-Account-Sysmeta-Mass-Urgent``, which no client can read, set or remove.
A reseller admin's account HEAD or GET shows ``X-Mass-Urgent: true`` or
``false``, so the command can check that the mark took.

Every request of a marked tenant carries ``X-Backend-Mass-Urgent: true`` to
the storage servers.  Each proxy worker learns a tenant's mark from the
account info Swift caches (the request's infocache, then memcache, then an
account HEAD), at most once per ``urgent_recheck_seconds`` per tenant: a
request whose tenant was looked up recently costs a dictionary lookup.  A
change reaches every worker within ``urgent_recheck_seconds`` plus the
account info's time in memcache (``recheck_account_existence``; the proxy
that handles the POST clears it).
"""
from swift.common.utils import config_true_value, split_path
from swift.proxy.controllers.base import get_account_info

from swift_mass import tags

MARK_ENV = 'HTTP_X_MASS_URGENT'
MARK_HEADER = 'X-Mass-Urgent'
SYSMETA_ENV = 'HTTP_X_ACCOUNT_SYSMETA_MASS_URGENT'
SYSMETA_HEADER = 'x-account-sysmeta-mass-urgent'
SYSMETA_KEY = 'mass-urgent'
# Tenants a worker remembers; beyond it starts over (one lookup each).
MAX_KNOWN = 100000


def _account_request(env):
    """True for a request to an account itself (no container)."""
    try:
        split_path(env['PATH_INFO'], 2, 2)
    except ValueError:
        return False
    return True


def take_mark(env, mark):
    """Turn a reseller admin's ``X-Mass-Urgent`` on an account PUT or POST
    into sysmeta.  ``mark``: the value the request came with (taken out of
    ``env`` by the caller, so it never passes on as is)."""
    if mark is None or not env.get('reseller_request') or \
            env['REQUEST_METHOD'] not in ('PUT', 'POST') or \
            not _account_request(env):
        return
    # '' removes the sysmeta
    env[SYSMETA_ENV] = tags.URGENT if config_true_value(mark) else ''


def showing_mark(env, start_response):
    """``start_response``, or for a reseller admin's account HEAD or GET
    one that shows the mark as ``X-Mass-Urgent: true`` or ``false``."""
    if not env.get('reseller_request') or \
            env['REQUEST_METHOD'] not in ('HEAD', 'GET') or \
            not _account_request(env):
        return start_response

    def shown(status, headers, exc_info=None):
        marked = any(k.lower() == SYSMETA_HEADER and config_true_value(v)
                     for k, v in headers)
        headers = list(headers) + [
            (MARK_HEADER, 'true' if marked else 'false')]
        return start_response(status, headers, exc_info)
    return shown


class UrgentTenants(object):
    """Which tenants are marked urgent, as far as this worker knows.

    :param app: the proxy app right of Mass (account info lookups).
    :param recheck: seconds a tenant's mark is trusted before it is looked
        up again; 0 turns marks off (no lookups at all).
    :param clock: a callable returning seconds.
    """

    def __init__(self, app, recheck, clock):
        self.app = app
        self.recheck = recheck
        self.clock = clock
        self.known = {}   # tenant -> (urgent, when looked up)

    def __call__(self, env, tenant):
        """True when ``tenant``, the tenant of the request ``env``, is
        marked urgent."""
        if not self.recheck:
            return False
        now = self.clock()
        known = self.known.get(tenant)
        if known is not None and now - known[1] < self.recheck:
            return known[0]
        if _account_request(env) and \
                env['REQUEST_METHOD'] in ('PUT', 'POST', 'DELETE'):
            # Looking up an account that is being created or changed would
            # cache its old info; its next request looks it up.
            return known[0] if known is not None else False
        info = get_account_info(env, self.app, swift_source='MASS')
        urgent = config_true_value(info.get('sysmeta', {}).get(SYSMETA_KEY))
        if len(self.known) >= MAX_KNOWN:
            self.known.clear()
        self.known[tenant] = (urgent, now)
        return urgent
