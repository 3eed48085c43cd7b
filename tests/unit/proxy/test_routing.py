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
"""Which storage policy a tenant's container PUT gets
(swift_mass.proxy.routing)."""
import pytest

from swift.common.swob import HeaderEnvironProxy, HeaderKeyDict

from swift_mass.control.entry import PolicyEntry
from swift_mass.proxy import routing

WRITER = PolicyEntry('write', substore='bulk', method='batch')
MIXED = PolicyEntry('mixed', substore='', method='merge')


R = routing
CASES = [
    # method, path, headers, entry, exists -> policy, reason, looked up
    ('PUT', '/v1/AUTH_t/c', {}, WRITER, False, 'bulk', R.ROUTED, True),
    ('PUT', '/v1/AUTH_t/c/', {}, WRITER, False, 'bulk', R.ROUTED, True),
    ('PUT', '/v1/AUTH_t/c', {'x-storage-policy': ''}, WRITER, False,
     'bulk', R.ROUTED, True),
    ('PUT', '/v1/AUTH_t/c', {}, WRITER, True, None, R.EXISTS, True),
    ('PUT', '/v1/AUTH_t/c', {}, WRITER, None, None, R.UNKNOWN, True),
    ('PUT', '/v1/AUTH_t/c', {'X-Storage-Policy': 'standard'}, WRITER,
     False, None, R.EXPLICIT, False),
    ('PUT', '/v1/AUTH_t/c', {'x-storage-policy': 'bulk'}, WRITER, False,
     None, R.EXPLICIT, False),
    ('PUT', '/v1/AUTH_t/c',
     {'X-Container-Sysmeta-Versions-Container': '%00versions%00c'},
     WRITER, False, None, R.VERSIONED, False),
    ('PUT', '/v1/AUTH_t/c', {}, MIXED, False, None, R.NO_SUBSTORE, False),
    ('PUT', '/v1/AUTH_t/c', {}, None, False, None, R.NO_SUBSTORE, False),
    ('PUT', '/v1/AUTH_t/c', {}, PolicyEntry('read'), False, None,
     R.NO_SUBSTORE, False),
    ('PUT', '/v1/AUTH_t/c/o', {}, WRITER, False, None,
     R.NOT_CONTAINER_PUT, False),
    ('PUT', '/v1/AUTH_t/c/o/p', {}, WRITER, False, None,
     R.NOT_CONTAINER_PUT, False),
    ('PUT', '/v1/AUTH_t', {}, WRITER, False, None, R.NOT_CONTAINER_PUT,
     False),
    ('PUT', '/v1/AUTH_t/', {}, WRITER, False, None, R.NOT_CONTAINER_PUT,
     False),
    ('POST', '/v1/AUTH_t/c', {}, WRITER, False, None, R.NOT_CONTAINER_PUT,
     False),
    ('HEAD', '/v1/AUTH_t/c', {}, WRITER, False, None,
     R.NOT_CONTAINER_PUT, False),
    ('PUT', '/v1/AUTH_t/\x00versions\x00c', {}, WRITER, False, None,
     R.SYSTEM_NAME, False),
    ('PUT', '/v1/AUTH_t/.trash', {}, WRITER, False, None, R.SYSTEM_NAME,
     False),
    ('PUT', '/v1/.shards_AUTH_t/c', {}, WRITER, False, None, R.SYSTEM_NAME,
     False),
    ('PUT', '/v1/\x00acct/c', {}, WRITER, False, None, R.SYSTEM_NAME,
     False),
    # a name that merely contains a dot or a reserved byte later on is a
    # tenant's own
    ('PUT', '/v1/AUTH_t/photos.2026', {}, WRITER, False, 'bulk', R.ROUTED,
     True),
]


def decide(method, path, headers, entry, exists):
    """(policy, reason) by every rule, as the middleware applies them, and
    whether the container's existence had to be learnt."""
    substore, reason = routing.substore_of(method, path, headers, entry)
    if substore is None:
        return (None, reason), False
    return routing.routed(substore, exists), True


@pytest.mark.parametrize(
    'method,path,headers,entry,exists,policy,reason,looked_up', CASES)
def test_decide(method, path, headers, entry, exists, policy, reason,
                looked_up):
    got, learnt = decide(method, path, HeaderKeyDict(headers), entry, exists)
    assert got == (policy, reason)
    # the lookup costs a backend HEAD: only when nothing else decided
    assert learnt == looked_up


def test_decide_reads_headers_from_a_wsgi_environ():
    env = {'HTTP_X_STORAGE_POLICY': 'fast'}
    assert routing.substore_of('PUT', '/v1/AUTH_t/c', HeaderEnvironProxy(env),
                               WRITER) == (None, R.EXPLICIT)
    assert routing.substore_of('PUT', '/v1/AUTH_t/c', HeaderEnvironProxy({}),
                               WRITER) == ('bulk', None)


@pytest.mark.parametrize('status,exists', [
    (200, True), (204, True), (404, False), (410, False), (0, None),
    (503, None), (507, None), (401, None)])
def test_existence(status, exists):
    assert routing.existence(status) is exists


@pytest.mark.parametrize('path,names', [
    ('/v1/a/c', ('a', 'c')),
    ('/v1/a/c/', ('a', 'c')),
    ('/v1/a/c/o', None),
    ('/v1/a/c//', None),   # object '/'
    ('/v1/a', None),
    ('/v1/a/', None),
    ('/v1//c', None),
    ('v1/a/c', None),
    ('/', None),
    ('', None),
])
def test_container_of(path, names):
    assert routing.container_of(path) == names
