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

from swift_mass import tags


def test_strip_client_tags_removes_only_mass_namespaces():
    env = {
        'HTTP_X_BACKEND_MASS_PRIORITY': '9',
        'HTTP_X_BACKEND_MASS_TENANT': 'AUTH_victim',
        'HTTP_X_BACKEND_MASS_CLASS': 'read',
        'HTTP_X_MASS_PRIORITY': '9',
        'HTTP_X_MASS_ANYTHING': 'x',
        'HTTP_X_BACKEND_STORAGE_POLICY_INDEX': '1',
        'HTTP_X_MASSIVE': 'kept',
        'HTTP_X_AUTH_TOKEN': 'tok',
        'PATH_INFO': '/v1/AUTH_test',
    }
    removed = tags.strip_client_tags(env)
    assert sorted(removed) == sorted([
        'HTTP_X_BACKEND_MASS_PRIORITY', 'HTTP_X_BACKEND_MASS_TENANT',
        'HTTP_X_BACKEND_MASS_CLASS', 'HTTP_X_MASS_PRIORITY',
        'HTTP_X_MASS_ANYTHING'])
    assert env == {
        'HTTP_X_BACKEND_STORAGE_POLICY_INDEX': '1',
        'HTTP_X_MASSIVE': 'kept',
        'HTTP_X_AUTH_TOKEN': 'tok',
        'PATH_INFO': '/v1/AUTH_test',
    }


def test_strip_client_tags_nothing_to_strip():
    env = {'PATH_INFO': '/v1/AUTH_test'}
    assert tags.strip_client_tags(env) == []
    assert env == {'PATH_INFO': '/v1/AUTH_test'}


@pytest.mark.parametrize('value, expected', [
    (None, 5), ('', 5), ('abc', 5), ('3.5', 5), ('-1', 5), ('10', 5),
    ('0', 0), ('9', 9), ('7', 7), (' 2 ', 2),
])
def test_parse_priority(value, expected):
    assert tags.parse_priority(value, 5) == expected
