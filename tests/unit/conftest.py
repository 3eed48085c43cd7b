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
"""The unit tests use no service of the machine: Redis is fakeredis and
memcached a FakeMemcached, both answering at the addresses the tests
name, and a test that still reaches the machine's Redis or memcached
fails, as does a test that skips."""
import os
import sys
import urllib.parse
import uuid

import fakeredis
import pytest
import redis
from fakeredis._commands import command
from fakeredis._socket import FakeSocket
from swift.common import memcached

from swift_mass.control import substores
from tests.unit.helpers import MEMCACHE_SERVER, REDIS_URL, FakeMemcached

# Redis's and memcached's ports, on any host: no unit test may use them.
MACHINE_PORTS = (6379, 11211)
LOCAL_HOSTS = ('127.0.0.1', 'localhost', '::1')
forbidden_connects = []


def _refuse_machine_services(event, args):
    # An audit hook sees every socket's connect, green or not, where
    # patching socket.socket would miss eventlet's own copy of it.
    if event == 'socket.connect' and isinstance(args[1], tuple) and \
            args[1][1] in MACHINE_PORTS:
        forbidden_connects.append(args[1])
        raise ConnectionRefusedError('unit tests may not use %s:%s'
                                     % args[1][:2])


sys.addaudithook(_refuse_machine_services)


@command((), (bytes,))
def info(socket, *_sections):
    """fakeredis has no INFO; Mass reads a server's run_id from it
    (swift_mass.generations.core.redis_run_id).  A FakeServer keeps one
    ``run_id``; a test "restarts" Redis by giving it a new one."""
    server = socket._server
    if getattr(server, 'run_id', None) is None:
        server.run_id = uuid.uuid4().hex
    return ('# Server\r\nredis_version:7.0.15\r\nrun_id:%s\r\n'
            % server.run_id).encode('ascii')


FakeSocket.info = info


def _is_machine_redis(url):
    parts = urllib.parse.urlsplit(url)
    return parts.scheme == 'redis' and parts.hostname in LOCAL_HOSTS and \
        (parts.port or 6379) == 6379


@pytest.fixture(scope='session', autouse=True)
def fake_memcached():
    """A FakeMemcached wherever a MemcacheRing is told MEMCACHE_SERVER
    (session-wide: rings may live in module-scoped fixtures)."""
    server = FakeMemcached()
    real_init = memcached.MemcacheConnPool.__init__

    def init(pool, address, *args, **kwargs):
        if address == MEMCACHE_SERVER:
            address = server.address
        real_init(pool, address, *args, **kwargs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memcached.MemcacheConnPool, '__init__', init)
        yield server
    server.stop()


@pytest.fixture(autouse=True)
def no_machine_device_speeds(monkeypatch):
    """No unit test reads the machine's classes file
    (``/etc/swift/mass-devices.json``, which a hetero SAIO probes): a
    proxy's leader built with the default ``swift_dir`` finds none, and
    routes as configured.  Tests of measured routing name their file."""
    def no_file(swift_dir, path=None):
        return path or os.path.join(swift_dir, 'not-read-by-unit-tests')
    monkeypatch.setattr(substores, 'classes_path', no_file)


@pytest.fixture(autouse=True)
def fake_services(monkeypatch, fake_memcached):
    """Every test starts with an empty Redis and memcached; a Redis client
    of the machine's Redis (any database) is a fakeredis client, sharing
    one fakeredis.FakeServer per test as clients of one Redis do."""
    server = fakeredis.FakeServer()

    def from_url(url, **kwargs):
        if _is_machine_redis(url):
            return fakeredis.FakeRedis.from_url(url, server=server, **kwargs)
        return real_from_url(url, **kwargs)
    real_from_url = redis.Redis.from_url
    monkeypatch.setattr(redis.Redis, 'from_url', staticmethod(from_url))
    fake_memcached.items.clear()
    del forbidden_connects[:]
    yield
    if forbidden_connects:
        pytest.fail('connected to the machine\'s Redis or memcached: %s'
                    % forbidden_connects)


@pytest.fixture
def redis_db15():
    """A client of the tests' Redis (REDIS_URL), to look at what the code
    under test stored there."""
    client = redis.Redis.from_url(REDIS_URL)
    yield client
    client.close()


@pytest.fixture
def prefix():
    """A key prefix of the test's own."""
    return 'test-mass-%s:' % uuid.uuid4().hex


def _fail_a_skip(report):
    """A skip is a failure in the unit tests: nothing here may quietly not
    run for want of a service or a package."""
    if report.skipped and not hasattr(report, 'wasxfail'):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) \
            else report.longrepr
        report.outcome = 'failed'
        report.longrepr = 'a unit test may not skip: %s' % (reason,)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    _fail_a_skip((yield).get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    _fail_a_skip((yield).get_result())


@pytest.fixture
def sent(monkeypatch):
    """The statsd lines every Swift statsd client sends, legacy and
    labeled."""
    # here, not at the top: swift.common.statsd_client imported before
    # swift.common.utils meets an import cycle
    from swift.common import statsd_client
    lines = []

    class Socket(object):
        def sendto(self, data, target):
            lines.extend(data.decode('utf-8').splitlines())
            return len(data)

        def close(self):
            pass

    client_cls = getattr(statsd_client, 'AbstractStatsdClient',
                         getattr(statsd_client, 'StatsdClient', None))
    monkeypatch.setattr(client_cls, '_open_socket', lambda self: Socket())
    return lines
