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
"""The stores' tests run against a Redis (fakeredis) and a memcached
(FakeMemcached) that tests/unit/conftest.py puts at the tests' addresses;
each test's keys are under prefixes of its own.

Failures are real: a Redis URL on a port nobody listens on, and a socket
that accepts and never answers.
"""
import uuid

import pytest
from swift.common.memcached import MemcacheRing

from swift_mass.control.stores.memcache_store import MemcacheStore
from tests.unit.control.stores.helpers import Logger
from tests.unit.helpers import MEMCACHE_SERVER


@pytest.fixture
def redis_prefixes(redis_db15):
    """Makes unique key prefixes; deletes their keys after the test."""
    prefixes = []

    def new_prefix():
        prefixes.append('test-mass-%s:' % uuid.uuid4().hex)
        return prefixes[-1]
    yield new_prefix
    for prefix in prefixes:
        keys = list(redis_db15.scan_iter(match=prefix + '*'))
        if keys:
            redis_db15.delete(*keys)


@pytest.fixture(scope='module')
def memcache():
    return MemcacheRing([MEMCACHE_SERVER], logger=Logger())


@pytest.fixture
def memcache_prefixes(memcache):
    """Makes unique key prefixes; deletes their unexpiring keys after the
    test (counters expire by themselves)."""
    prefixes = []

    def new_prefix():
        prefixes.append('test-mass-%s/' % uuid.uuid4().hex)
        return prefixes[-1]
    yield new_prefix
    for prefix in prefixes:
        store = MemcacheStore(memcache, prefix)
        for name in ('table', 'table-version', 'pins', 'leader',
                     'leader-token', 'buckets', 'forgotten'):
            memcache.delete(store._key(name))
