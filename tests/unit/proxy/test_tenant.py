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
import pytest

from swift_mass.proxy.tenant import object_of, tenant_of


@pytest.mark.parametrize('path, tenant', [
    ('/v1/AUTH_test', 'AUTH_test'),
    ('/v1/AUTH_test/', 'AUTH_test'),
    ('/v1/AUTH_test/cont', 'AUTH_test'),
    ('/v1/AUTH_test/cont/obj/with/slashes', 'AUTH_test'),
    ('/v1.0/AUTH_test/cont/obj', 'AUTH_test'),
    # account names arrive as WSGI strings (UTF-8 bytes as latin-1)
    ('/v1/AUTH_\xc3\xa9t\xc3\xa9/c', 'AUTH_\xc3\xa9t\xc3\xa9'),
    ('/v1/KEY_0123456789abcdef/c/o', 'KEY_0123456789abcdef'),
])
def test_account_paths_have_a_tenant(path, tenant):
    assert tenant_of(path) == tenant


@pytest.mark.parametrize('path', [
    '', '/', '/info', '/healthcheck', '/crossdomain.xml',
    '/auth/v1.0', '/auth/v1.0/', '/auth/v2/AUTH_test',
    '/v1', '/v1/', '//AUTH_test/c',
    '/v2/AUTH_test/c/o',  # not an API version Swift serves
    '/endpoints/v1/AUTH_test/c/o',  # list_endpoints
    '/recon/diskusage',
    # system accounts of Swift's own daemons
    '/v1/.expiring_objects/1234',
    '/v1/.shards_AUTH_test/c',
    '/v1/.misplaced_objects/c',
    # reserved names
    '/v1/\x00reserved/c',
])
def test_non_tenant_paths(path):
    assert tenant_of(path) is None


@pytest.mark.parametrize('path, expected', [
    ('/v1/a/c/o', True), ('/v1/a/c/o/with/slashes', True),
    ('/v1/a/c', False), ('/v1/a/c/', False), ('/v1/a', False),
    ('/info', False), ('', False),
])
def test_object_of(path, expected):
    assert object_of(path) is expected
