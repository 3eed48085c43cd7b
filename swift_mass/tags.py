"""The cross-layer request tags Mass puts on a request.

The proxy filter ``mass`` is the only writer: it removes whatever a client
sent under these names and sets its own.  Swift's proxy forwards every
``X-Backend-*`` request header to the account, container and object servers,
where ``mass_queue`` reads them.

Priorities are integers from PRIORITY_MIN (background) to PRIORITY_MAX (most
urgent); a larger number is served first.
"""
from swift_mass.control.classify import CLASSES  # noqa: F401 (class tags)

TENANT_HEADER = 'X-Backend-Mass-Tenant'
PRIORITY_HEADER = 'X-Backend-Mass-Priority'
CLASS_HEADER = 'X-Backend-Mass-Class'
# Only on requests of tenants an operator marked urgent
# (swift_mass.proxy.urgent)
URGENT_HEADER = 'X-Backend-Mass-Urgent'
URGENT_ENV = 'HTTP_X_BACKEND_MASS_URGENT'
URGENT = 'true'
# Only on requests of tenants whose policy's method is batch: their PUTs
# may use mass_queue's batch slots.
BATCH_HEADER = 'X-Backend-Mass-Batch'
BATCH_ENV = 'HTTP_X_BACKEND_MASS_BATCH'
BATCH = 'true'

# WSGI environ keys for the same facts, for middlewares further right.
ENV_TENANT = 'mass.tenant'
ENV_PRIORITY = 'mass.priority'
ENV_POLICY = 'mass.policy'
ENV_CLASS = 'mass.class'

PRIORITY_MIN = 0
PRIORITY_MAX = 9
DEFAULT_PRIORITY = 5
BACKGROUND_PRIORITY = 1

# Client-controllable headers in the Mass namespaces, as WSGI environ keys.
_CLIENT_TAG_PREFIXES = ('HTTP_X_BACKEND_MASS_', 'HTTP_X_MASS_')


def strip_client_tags(environ):
    """Remove every Mass tag from a request's headers; return their names.

    Anything in the Mass namespaces that reaches the filter before it has
    tagged the request was put there by someone other than Mass.
    """
    forged = [key for key in environ if key.startswith(_CLIENT_TAG_PREFIXES)]
    for key in forged:
        del environ[key]
    return forged


def parse_priority(value, default):
    """The priority carried by a header value, or ``default`` when the value
    is missing or not an integer in range (never an error: a backend request
    must not fail because of a tag)."""
    if value is None:
        return default
    try:
        priority = int(value)
    except (TypeError, ValueError):
        return default
    if PRIORITY_MIN <= priority <= PRIORITY_MAX:
        return priority
    return default
