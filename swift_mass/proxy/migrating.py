"""The proxy's half of ``swift-mass migrate``: no client write is lost while
a container moves to another storage policy.

The migrate command marks the containers it works on (the container, its
staging container, the journal container) with ``X-Mass-Migrating`` on a
container PUT or POST.  The ``mass`` filter takes that header only from a
reseller admin (``reseller_request``, set by tempauth and keystoneauth
before the request reaches it) and keeps it in container sysmeta, which no
client can read, set or remove.  A write by anyone else to a marked
container (object PUT, POST, DELETE; container PUT, POST, DELETE) is
answered 503 with Retry-After.

The check costs a tenant that is not migrating nothing extra on object
writes: the container info it reads is the one the proxy reads for the same
request anyway (from the request's infocache or memcache).  Reads are never
checked.  A reseller admin's container HEAD or GET shows the mark as
``X-Mass-Migrating``: the command reads it back before it copies anything,
so it never runs where the mark did not take (no filter, or credentials
that are not a reseller admin's).
"""
from swift.common.swob import HTTPServiceUnavailable
from swift.common.utils import split_path
from swift.proxy.controllers.base import get_container_info

MARK_ENV = 'HTTP_X_MASS_MIGRATING'
MARK_HEADER = 'X-Mass-Migrating'
SYSMETA_HEADER = 'x-container-sysmeta-mass-migrating'
SYSMETA_ENV = 'HTTP_X_CONTAINER_SYSMETA_MASS_MIGRATING'
SYSMETA_KEY = 'mass-migrating'
WRITES = ('PUT', 'POST', 'DELETE')
DEFAULT_RETRY_AFTER = 60


def refusal(env, app, mark, retry_after):
    """None if the request may go on (with the mark turned into sysmeta
    when a reseller admin sent one), else the 503 to answer.

    ``mark``: the ``X-Mass-Migrating`` value the request came with (taken
    out of ``env`` by the caller, so it never passes on as is)."""
    method = env['REQUEST_METHOD']
    if method not in WRITES:
        return None
    try:
        _version, _account, _container, obj = split_path(
            env['PATH_INFO'], 3, 4, True)
    except ValueError:
        return None  # an account request, or not a Swift path at all
    if env.get('reseller_request'):
        if mark is not None and obj is None and method in ('PUT', 'POST'):
            env[SYSMETA_ENV] = mark  # '' removes it
        return None
    info = get_container_info(env, app, swift_source='MASS')
    if not info.get('sysmeta', {}).get(SYSMETA_KEY):
        return None
    return HTTPServiceUnavailable(
        body=b'This container is being moved to another storage policy; '
             b'writes are refused until the move is complete.\n',
        headers={'Retry-After': str(retry_after)},
        content_type='text/plain')


def showing_mark(env, start_response):
    """``start_response``, or for a reseller admin's container HEAD or GET
    one that shows the mark (container sysmeta, which gatekeeper hides
    from every client) as ``X-Mass-Migrating``."""
    if not env.get('reseller_request') or \
            env['REQUEST_METHOD'] not in ('HEAD', 'GET'):
        return start_response
    try:
        split_path(env['PATH_INFO'], 3, 3)
    except ValueError:
        return start_response  # not a container

    def shown(status, headers, exc_info=None):
        mark = [v for k, v in headers if k.lower() == SYSMETA_HEADER]
        if mark:
            headers = list(headers) + [(MARK_HEADER, mark[0])]
        return start_response(status, headers, exc_info)
    return shown
