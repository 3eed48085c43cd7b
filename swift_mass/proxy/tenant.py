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
"""Which tenant a proxy request belongs to.

A tenant is a Swift account.  Requests that do not address an account
(``/info``, ``/auth/...``, ``/healthcheck``, ``/crossdomain.xml``), requests
with an API version Swift does not serve, and requests to reserved (``\\x00``)
or system (``.``-prefixed: ``.expiring_objects``, ``.shards_*``...) accounts
have no tenant: Mass leaves them alone.
"""

from swift.common.constraints import AUTO_CREATE_ACCOUNT_PREFIX, \
    valid_api_version
from swift.common.utils import RESERVED_STR, split_path


def tenant_of(path):
    """The account named by a WSGI ``PATH_INFO``, or None."""
    try:
        version, account, _rest = split_path(path, 2, 3, True)
    except ValueError:
        return None
    if not valid_api_version(version):
        return None
    if account.startswith((RESERVED_STR, AUTO_CREATE_ACCOUNT_PREFIX)):
        return None
    return account


def object_of(path):
    """Whether a WSGI ``PATH_INFO`` names an object (not an account or a
    container)."""
    try:
        split_path(path, 4, 4, True)
    except ValueError:
        return False
    return True
