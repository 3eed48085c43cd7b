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
"""The chain of stores, each behind a circuit breaker."""
import socket
import time

import pytest
import redis
from swift.common.memcached import MemcacheRing

from swift_mass.control.stores.local import LocalStore
from swift_mass.control.stores.memcache_store import MemcacheStore
from swift_mass.control.stores.redis_store import RedisStore
from swift_mass.control.stores.resilient import ResilientStore
from swift_mass.redis_client import DEFAULT_REDIS_TIMEOUT_MS
from tests.unit.control.stores.helpers import B0, DOWN_MEMCACHE_SERVER, \
    DOWN_REDIS_URL, Logger
from tests.unit.helpers import REDIS_URL, Clock


def test_a_down_redis_is_quick_to_fail():
    for call in (RedisStore(DOWN_REDIS_URL).table_version,
                 ResilientStore(RedisStore(DOWN_REDIS_URL), LocalStore(),
                                Logger()).table_version):
        start = time.monotonic()
        try:
            call()
        except redis.ConnectionError:
            pass
        assert time.monotonic() - start < 0.3


def test_a_silent_redis_times_out():
    with socket.socket() as listener:
        # connections complete in the backlog, nothing ever answers
        listener.bind(('127.0.0.1', 0))
        listener.listen(8)
        url = 'redis://127.0.0.1:%d/0' % listener.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(redis.TimeoutError):
            RedisStore(url, socket_timeout_ms=50).table_version()
        assert time.monotonic() - start < 0.3
        logger = Logger()
        breaker = ResilientStore(RedisStore(url), LocalStore(), logger)
        start = time.monotonic()
        assert breaker.put_table({'AUTH_a': {}}) == 1
        # one default reply timeout (the loop's, beside the requests)
        assert time.monotonic() - start < \
            DEFAULT_REDIS_TIMEOUT_MS / 1000.0 + 0.25
        assert 'TimeoutError' in logger.lines['warning'][0]


def test_down_redis_serves_from_the_fallback_and_warns_once():
    clock, logger = Clock(), Logger()
    store = ResilientStore(RedisStore(DOWN_REDIS_URL), LocalStore(clock),
                           logger, retry_after=30, clock=clock)
    for _ in range(50):
        store.add_counts('AUTH_a:b', B0, {'ops.GET': 1}, 60)
        clock.now += 0.5
    assert store.read_counts(B0) == {'AUTH_a:b': {B0: {'ops.GET': 50}}}
    assert store.put_table({'AUTH_a:b': {'method': 'cache'}}) == 1
    assert store.get_table() == (1, {'AUTH_a:b': {'method': 'cache'}})
    assert store.table_version() == 1
    assert store.acquire_lease('proxy-1', 10000)
    assert store.lease_holder() == 'proxy-1'
    store.release_lease('proxy-1')
    store.set_pin('AUTH_a:b', {'class': 'read'})
    store.delete_pin('AUTH_a:b')
    assert store.get_pins() == {}

    [warning] = logger.lines['warning']
    assert 'redis' in warning
    assert 'Connection refused' in warning
    assert 'using local' in warning
    assert logger.lines['error'] == logger.lines['info'] == []
    health = store.health()
    assert health['store'] == 'local'
    assert health['ok'] is False
    assert health['error'].startswith('redis: ConnectionError')
    assert health['primary'] == 'redis'
    assert 0 < health['retry_in'] <= 30


def test_a_failed_retry_stays_quiet_and_waits_again():
    clock, logger = Clock(), Logger()
    store = ResilientStore(RedisStore(DOWN_REDIS_URL), LocalStore(clock),
                           logger, retry_after=30, clock=clock)
    store.table_version()
    clock.now += 29
    store.table_version()
    assert store.health()['retry_in'] == pytest.approx(1)
    clock.now += 2
    store.table_version()  # tries Redis, which is still down
    assert store.health()['retry_in'] == pytest.approx(30)
    assert len(logger.lines['warning']) == 1
    assert logger.lines['info'] == []


def test_recovery_after_retry_after(redis_prefixes):
    clock, logger = Clock(), Logger()
    store = ResilientStore(RedisStore(DOWN_REDIS_URL), LocalStore(clock),
                           logger, retry_after=30, clock=clock)
    store.add_counts('AUTH_a', B0, {'ops.PUT': 1}, 60)
    redis_store = RedisStore(REDIS_URL, prefix=redis_prefixes())
    store.primary = redis_store  # Redis is back...
    clock.now += 29
    store.add_counts('AUTH_a', B0, {'ops.PUT': 2}, 60)
    assert redis_store.read_counts(B0) == {}  # ...but not tried yet
    assert logger.lines['info'] == []

    clock.now += 2
    store.add_counts('AUTH_a', B0, {'ops.PUT': 4}, 60)
    assert redis_store.read_counts(B0) == {'AUTH_a': {B0: {'ops.PUT': 4}}}
    assert store.read_counts(B0) == {'AUTH_a': {B0: {'ops.PUT': 4}}}
    assert logger.lines['info'] == ['Mass store redis recovered']
    assert len(logger.lines['warning']) == 1
    health = store.health()
    assert (health['store'], health['ok'], health['error']) == (
        'redis', True, None)


def test_redis_then_memcache_then_local(memcache, memcache_prefixes):
    clock, logger = Clock(), Logger()
    prefix = memcache_prefixes()
    store = ResilientStore(
        RedisStore(DOWN_REDIS_URL),
        ResilientStore(MemcacheStore(memcache, prefix), LocalStore(clock),
                       logger, clock=clock),
        logger, clock=clock)
    store.add_counts('AUTH_a:b', B0, {'ops.GET': 3}, 60)
    assert store.put_table({'AUTH_a:b': {'method': 'cache'}}) == 1
    elsewhere = MemcacheStore(memcache, prefix)  # another proxy
    assert elsewhere.read_counts(B0) == {'AUTH_a:b': {B0: {'ops.GET': 3}}}
    assert elsewhere.get_table() == (1, {'AUTH_a:b': {'method': 'cache'}})
    [warning] = logger.lines['warning']
    assert 'redis' in warning and 'using memcache' in warning
    health = store.health()
    assert health['store'] == 'memcache'
    assert health['ok'] is False
    assert health['error'].startswith('redis: ')


def test_everything_down_but_local():
    clock, logger = Clock(), Logger()
    down_memcache = MemcacheRing([DOWN_MEMCACHE_SERVER], logger=Logger())
    store = ResilientStore(
        RedisStore(DOWN_REDIS_URL),
        ResilientStore(MemcacheStore(down_memcache), LocalStore(clock),
                       logger, clock=clock),
        logger, clock=clock)
    for _ in range(10):
        store.add_counts('AUTH_a', B0, {'ops.GET': 1}, 60)
    assert store.read_counts(B0) == {'AUTH_a': {B0: {'ops.GET': 10}}}
    assert len(logger.lines['warning']) == 2  # one per store passed over
    health = store.health()
    assert health['store'] == 'local'
    assert health['error'].startswith('redis: ConnectionError')
    assert '; memcache: MemcacheConnectionError' in health['error']


def test_a_failing_fallback_gives_empty_answers():
    logger = Logger()
    down_memcache = MemcacheRing([DOWN_MEMCACHE_SERVER], logger=Logger())
    store = ResilientStore(RedisStore(DOWN_REDIS_URL),
                           MemcacheStore(down_memcache), logger)
    assert store.add_counts('AUTH_a', B0, {'ops.GET': 1}, 60) is None
    assert store.read_counts(B0) == {}
    assert store.get_table() == (0, {})
    assert store.put_table({'AUTH_a': {}}) == 0
    assert store.table_version() == 0
    assert store.acquire_lease('proxy-1', 1000) is False
    assert store.lease_holder() is None
    assert store.get_pins() == {}
    assert len(logger.lines['warning']) == 1
    [error] = logger.lines['error']
    assert 'memcache' in error


def test_forget_goes_to_the_store_in_use():
    clock, logger = Clock(), Logger()
    fallback = LocalStore(clock)
    store = ResilientStore(RedisStore(DOWN_REDIS_URL), fallback, logger,
                           clock=clock)
    store.put_table({'AUTH_a': {'method': 'cache'}, 'AUTH_b': {}})
    assert store.forget(['AUTH_a'], 1700000000.0) == ['AUTH_a']
    assert fallback.get_table()[1] == {'AUTH_b': {}}
    assert store.forgotten() == fallback.forgotten() == {
        'AUTH_a': 1700000000.0}
    assert len(logger.lines['warning']) == 1


def test_forget_marks_of_a_failing_fallback_are_none():
    logger = Logger()
    down_memcache = MemcacheRing([DOWN_MEMCACHE_SERVER], logger=Logger())
    store = ResilientStore(RedisStore(DOWN_REDIS_URL),
                           MemcacheStore(down_memcache), logger)
    assert store.forgotten() == {}
    assert store.mark_forgotten({'AUTH_a': 1.0}, 60) is None
