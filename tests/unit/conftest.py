"""Fixtures shared by the unit tests that use the machine's Redis."""
import uuid

import pytest
import redis

from tests.unit.helpers import REDIS_URL


@pytest.fixture(scope='session')
def redis_db15():
    """The machine's Redis, database 15; the test is skipped without it."""
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=1,
                                  socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as err:
        pytest.skip('no Redis at %s: %s' % (REDIS_URL, err))
    yield client
    client.close()


@pytest.fixture
def prefix(redis_db15):
    """A key prefix of the test's own, its keys deleted afterwards."""
    name = 'test-mass-%s:' % uuid.uuid4().hex
    yield name
    keys = list(redis_db15.scan_iter(match=name + '*'))
    if keys:
        redis_db15.delete(*keys)
