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
"""Which substore (storage policy) a tenant's new container lands on.

A container's storage policy is fixed when the container is created, by
the ``X-Storage-Policy`` header of its first PUT.  Mass routes a tenant to
the substore of its policy by adding that header to a container PUT that
names none, and only to one whose container does not exist yet, so that
Swift's answer to every other request is the one it would have given
without Mass.

The rules, in the order :func:`substore_of` and :func:`routed` apply
them:

* only PUTs of a container (not of an account or an object);
* only for a tenant with a policy whose substore names a storage policy;
  an empty substore is the default policy, which Swift picks by itself;
* never reserved (``\\x00``) or system (``.``-prefixed) accounts or
  container names: they belong to Swift and its middlewares
  (object_versioning's ``\\x00versions\\x00<container>`` follows its
  parent's policy, which object_versioning sets itself);
* an explicit ``X-Storage-Policy`` always wins (Swift treats an empty one as
  none, and so does Mass);
* not a container PUT that object_versioning has just given a versions
  container (``X-Container-Sysmeta-Versions-Container``, which only
  middlewares can set: gatekeeper removes sysmeta from clients): that
  versions container was created in the policy the client asked for, the
  default, and a container must stay with its versions;
* only when the container is known not to exist: a container that exists
  keeps its policy, and one whose existence could not be learnt (a backend
  error) is left to Swift.

The last rule costs a lookup (a backend HEAD, and info cached in memcache):
the middleware learns it only once Swift has authorised the PUT, so a PUT
Swift refuses costs nothing Swift alone would not.

The middleware also retries a routed PUT once without the header when the
backend answers 409 (the container exists with another policy: a race, or
stale cached info), so the client sees exactly what Swift would have said.

Plain Python, no WSGI: the proxy filter is the adapter.
"""
from swift.common.request_helpers import get_sys_meta_prefix


# swift.common.utils.RESERVED_STR and constraints.AUTO_CREATE_ACCOUNT_PREFIX
RESERVED = '\x00'
SYSTEM = '.'
POLICY_HEADER = 'X-Storage-Policy'
# object_versioning's SYSMETA_VERSIONS_CONT
VERSIONS_SYSMETA = get_sys_meta_prefix('container') + 'versions-container'

# decide()'s reasons for not routing, for logs and tests
NOT_CONTAINER_PUT = 'not a container PUT'
NO_SUBSTORE = 'no substore (default policy)'
SYSTEM_NAME = 'reserved or system name'
EXPLICIT = 'explicit X-Storage-Policy'
VERSIONED = 'versions container created in the default policy'
EXISTS = 'container exists'
UNKNOWN = 'container existence unknown'
ROUTED = 'new container'


def container_of(path):
    """(account, container) of a container path ``/v1/a/c`` (``/v1/a/c/``
    too: Swift serves it as the container), or None."""
    parts = path.split('/', 4)
    if len(parts) < 4 or parts[0] != '' or not parts[2] or not parts[3]:
        return None
    if len(parts) == 5 and parts[4]:
        return None  # an object
    return parts[2], parts[3]


def existence(status):
    """Whether a container exists, from the status of its info: True
    (2xx), False (404 or 410) or None (unknown: an error, or 0 when its
    account could not be found)."""
    if 200 <= status < 300:
        return True
    if status in (404, 410):
        return False
    return None


def substore_of(method, path, headers, entry):
    """The storage policy name a request gets if its container does not
    exist yet, by every rule but that one.

    Returns (name, None), or (None, the reason it goes on as it came).
    method and path: the request's (a WSGI PATH_INFO); headers: its
    headers, a mapping that ignores the case of names (swob's
    HeaderKeyDict, HeaderEnvironProxy); entry: the tenant's policy table
    entry (a :class:`swift_mass.control.entry.PolicyEntry`) or None.
    """
    if method != 'PUT':
        return None, NOT_CONTAINER_PUT
    names = container_of(path)
    if names is None:
        return None, NOT_CONTAINER_PUT
    substore = entry.substore if entry is not None else None
    if not substore:
        return None, NO_SUBSTORE
    if any(name.startswith((RESERVED, SYSTEM)) for name in names):
        return None, SYSTEM_NAME
    if headers.get(POLICY_HEADER):
        return None, EXPLICIT
    if headers.get(VERSIONS_SYSMETA):
        return None, VERSIONED
    return substore, None


def routed(substore, exists):
    """The last rule: (substore, ROUTED) for a container known not to
    exist; (None, why not) when it exists or whether it does is unknown
    (``exists`` None, see :func:`existence`)."""
    if exists is None:
        return None, UNKNOWN
    if exists:
        return None, EXISTS
    return substore, ROUTED
