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
"""Building the chain of stores from [filter:mass]."""
from swift.common.memcached import MemcacheRing

from swift_mass.control.stores import store_from_conf
from swift_mass.control.stores.local import LocalStore
from swift_mass.control.stores.memcache_store import MemcacheStore
from swift_mass.control.stores.redis_store import RedisStore
from swift_mass.control.stores.resilient import ResilientStore
from swift_mass.proxy.conf import MassConf
from tests.unit.control.stores.helpers import Logger
from tests.unit.helpers import MEMCACHE_SERVER


def test_default_chain():
    store = store_from_conf(MassConf({}), Logger())
    assert isinstance(store, ResilientStore)
    assert isinstance(store.primary, RedisStore)
    assert store.primary.url == 'redis://127.0.0.1:6379/0'
    kwargs = store.primary.client.connection_pool.connection_kwargs
    assert kwargs['socket_timeout'] == kwargs['socket_connect_timeout'] \
        == 0.5
    assert isinstance(store.fallback, LocalStore)
    assert store.retry_after == 30


def test_chain_with_memcache_and_options():
    ring = MemcacheRing([MEMCACHE_SERVER])
    store = store_from_conf(MassConf({
        'redis_url': 'unix:///run/redis.sock?db=2',
        'redis_timeout_ms': '200', 'store_retry_after': '5'}), Logger(), ring)
    kwargs = store.primary.client.connection_pool.connection_kwargs
    assert kwargs['path'] == '/run/redis.sock'
    assert kwargs['socket_timeout'] == 0.2
    assert store.retry_after == 5
    assert isinstance(store.fallback, ResilientStore)
    assert isinstance(store.fallback.primary, MemcacheStore)
    assert store.fallback.primary.memcache is ring
    assert isinstance(store.fallback.fallback, LocalStore)
    assert store.fallback.retry_after == 5


def test_memcache_and_local_chains():
    ring = MemcacheRing([MEMCACHE_SERVER])
    store = store_from_conf(MassConf({'store': 'memcache'}), Logger(), ring)
    assert isinstance(store, ResilientStore)
    assert isinstance(store.primary, MemcacheStore)
    assert isinstance(store.fallback, LocalStore)

    logger = Logger()
    assert isinstance(
        store_from_conf(MassConf({'store': 'memcache'}), logger), LocalStore)
    assert 'no memcache' in logger.lines['warning'][0]
    assert isinstance(
        store_from_conf(MassConf({'store': ' Local '}), Logger(), ring),
        LocalStore)
