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
"""The wire contract of Mass: the names it puts on requests and answers.

The proxy filter ``mass`` is the only writer of the ``X-Backend-Mass-*``
request tags: it removes whatever a client sent under these names and sets
its own.  Swift's proxy forwards every ``X-Backend-*`` request header to the
account, container and object servers, where ``mass_queue`` reads them.
Every name is spelled here once, with its WSGI environ key beside it; both
filters and ``swift-mass`` use these, and nothing in this module imports
Swift or eventlet (``swift-mass`` imports it on operators' machines).

No tag names the tenant, the account of the request's path: why, and the
``X-Backend-Mass-Tenant`` of earlier releases, in docs/architecture.md,
"Why no header names the tenant".

Priorities are integers from PRIORITY_MIN (background) to PRIORITY_MAX (most
urgent); a larger number is served first.
"""
import hashlib

# The workload classes: the values of the class tag, which the object
# servers read, and of the controller's decisions
# (swift_mass.control.classify).
READ = 'read'
WRITE = 'write'
MIXED = 'mixed'
CLASSES = (READ, WRITE, MIXED)


def environ_key(header):
    """The WSGI environ key of a request header.  Hand-written because
    swob.header_to_environ_key imports eventlet with swift.common.utils;
    the names here are ASCII, so its byte dance is not needed."""
    return 'HTTP_' + header.upper().replace('-', '_')


# Request tags, set by ``mass`` on every request of a tenant.
PRIORITY_HEADER = 'X-Backend-Mass-Priority'
PRIORITY_ENV = environ_key(PRIORITY_HEADER)
# Once the control loop has classified the tenant.
CLASS_HEADER = 'X-Backend-Mass-Class'
CLASS_ENV = environ_key(CLASS_HEADER)
# Only on requests of tenants an operator marked urgent.
URGENT_HEADER = 'X-Backend-Mass-Urgent'
URGENT_ENV = environ_key(URGENT_HEADER)
URGENT = 'true'
# Only on requests of tenants whose policy's method is batch: their PUTs
# may use mass_queue's batch slots.
BATCH_HEADER = 'X-Backend-Mass-Batch'
BATCH_ENV = environ_key(BATCH_HEADER)
BATCH = 'true'
# Only on a move's object writes that keep the version a reader sees
# (``swift-mass migrate``'s fences, its deletes of a version its staging
# container holds, and its restores: KEEPS_VERSION_REQUEST_HEADER): the
# object servers give the object no new generation, so bodies cached
# before the move stay hits through it (docs/cache.md, "A move keeps
# cached bodies").
KEEPS_VERSION_HEADER = 'X-Backend-Mass-Keeps-Version'
KEEPS_VERSION_ENV = environ_key(KEEPS_VERSION_HEADER)
KEEPS_VERSION = 'true'

# The object server's WSGI environ: the priority and class ``mass_queue``
# took from the tags, for what runs right of it.  (The proxy filter keeps
# what it knows of a request in its MassRequest, not in the environ.)
ENV_PRIORITY = 'mass.priority'
ENV_CLASS = 'mass.class'

# Operators' marks, sent by ``swift-mass`` on a PUT or POST of a container
# or account and kept by ``mass`` in its sysmeta (swift_mass.proxy.marks).
# On a container: swift-mass migrate is moving it; writes are refused.
MIGRATING_MARK_HEADER = 'X-Mass-Migrating'
# On a reseller admin's container HEAD: answer with each primary container
# server's view of the container (swift-mass migrate checks that every
# replica is empty before it deletes a container it emptied), one response
# header per replica: REPLICA_RESPONSE_PREFIX + its number, its value
# "<status> <object count> <storage policy index>" (replica_value).  On a
# reseller admin's container GET: answer with the same headers and the
# union of the primaries' listings, a Swift listing paged by marker and
# limit (swift-mass migrate finds there the rows of its own deletes that
# one replica still lists).
REPLICAS_REQUEST_HEADER = 'X-Mass-Replicas'
REPLICA_RESPONSE_PREFIX = 'X-Mass-Replica-'
# On a reseller admin's account HEAD: answer with the policy this proxy
# worker applies to the account's tenant now, POLICY_RESPONSE_HEADER
# "<class> <substore> <method>" (policy_value; '-' for none), with the
# version of the policy table it holds and its process id: the adaptation
# benchmark times a change until every worker applies it.
POLICY_REQUEST_HEADER = 'X-Mass-Policy'
POLICY_RESPONSE_HEADER = 'X-Mass-Policy'
TABLE_VERSION_RESPONSE_HEADER = 'X-Mass-Table-Version'
WORKER_RESPONSE_HEADER = 'X-Mass-Worker'
# On a reseller admin's request to a tenant's account: the operator's own
# work there (swift-mass's commands: a move's copies, fences and deletes),
# not the tenant's workload, so it is not counted in the tenant's window.
# The filter takes it out of every request; anyone else's is counted.
OPERATOR_REQUEST_HEADER = 'X-Mass-Operator'
# With OPERATOR_REQUEST_HEADER, on a move's object write that leaves what a
# client reads of the object as it was: tagged KEEPS_VERSION_HEADER once
# Swift found the request is a reseller admin's.
KEEPS_VERSION_REQUEST_HEADER = 'X-Mass-Keeps-Version'
# On an account: the tenant's requests get mass_queue's reserved slots.
URGENT_MARK_HEADER = 'X-Mass-Urgent'
# On an account: Mass leaves the tenant's requests as Swift alone would
# serve them (no tags, no substore, no method).
OPT_OUT_MARK_HEADER = 'X-Mass-Opt-Out'

# swift-mass migrate moves container C through its staging container,
# whose name both it and the proxy (which reads an object there while it is
# missing from C) derive from C's.
STAGING_PREFIX = '.mass-migrate-'
# Swift's default max_container_name_length.
MAX_CONTAINER_NAME = 256


def staging_name(container):
    """The deterministic staging container of ``container`` (a native
    string)."""
    name = STAGING_PREFIX + container
    if len(name.encode('utf-8')) <= MAX_CONTAINER_NAME:
        return name
    digest = hashlib.sha256(container.encode('utf-8')).hexdigest()
    return STAGING_PREFIX + 'h-' + digest


# The object servers' queue state, answered by mass_queue, read by
# ``swift-mass queue``.
QUEUE_ADMIN_PATH = '/mass_queue'

PRIORITY_MIN = 0
PRIORITY_MAX = 9
DEFAULT_PRIORITY = 5
BACKGROUND_PRIORITY = 1

# Response headers: what the cache and merge methods did with a request.
CACHE_RESPONSE_HEADER = 'X-Mass-Cache'
MERGE_RESPONSE_HEADER = 'X-Mass-Merge'

# The request tags' namespace, as a WSGI environ key prefix.
BACKEND_TAG_PREFIX = environ_key('X-Backend-Mass-')
# Client-controllable headers in the Mass namespaces, as WSGI environ keys.
_CLIENT_TAG_PREFIXES = (BACKEND_TAG_PREFIX, environ_key('X-Mass-'))


def policy_value(cls, substore, method):
    """POLICY_RESPONSE_HEADER's value of a policy (None or '' for what it
    has not: '-')."""
    return ' '.join(part or '-' for part in (cls, substore, method))


def parse_policy_value(value):
    """``(class, substore, method)`` of a POLICY_RESPONSE_HEADER value,
    None for each '-'."""
    parts = value.split()
    if len(parts) != 3:
        raise ValueError('not "<class> <substore> <method>": %r' % value)
    return tuple(None if part == '-' else part for part in parts)


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


def replica_value(status, object_count, policy_index):
    """The value of a container replica's response header: its container
    server's status (0: no answer), object count and policy index (-1
    where it gave none)."""
    return '%d %d %d' % (status, object_count, policy_index)


def parse_replica_value(value):
    """``(status, object count, policy index)`` of :func:`replica_value`'s
    text; ValueError if it is not one."""
    status, count, policy = (int(part) for part in value.split())
    return status, count, policy
