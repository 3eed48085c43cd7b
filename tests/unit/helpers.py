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
"""What several unit tests stand in for: the WSGI app right of a filter,
Swift's logger, a clock the test moves, memcached."""
import socketserver
import threading
import time
import uuid

import redis.exceptions
from swift.common.swob import Response

# Where the tests' Redis seems to be; conftest.fake_services answers it
# with fakeredis, so the machine's Redis is never used.
REDIS_URL = 'redis://127.0.0.1:6379/15'
# Where the tests' memcached seems to be; conftest.fake_services answers
# it with a FakeMemcached.
MEMCACHE_SERVER = '127.0.0.1:11211'


class RecordingApp(object):
    """The app right of the filter: remembers what reached it."""

    def __init__(self):
        self.environs = []

    def __call__(self, env, start_response):
        self.environs.append(dict(env))
        return Response(body=b'ok')(env, start_response)


class Logger(object):
    """Swift's logger for a filter: keeps what it logs (level, line), the
    names of the counters it increments, the (name, value) of the counters it
    updates and of the timings it sends."""

    def __init__(self):
        self.lines = []
        self.counters = []
        self.updates = []
        self.timings = []
        self.txn_id = None

    def _line(self, level):
        def log(msg, *args, **kwargs):
            self.lines.append((level, msg % args if args else msg))
        return log

    def __getattr__(self, name):
        if name in ('debug', 'info', 'warning', 'error', 'exception'):
            return self._line(name)
        raise AttributeError(name)

    def increment(self, name, *args, **kwargs):
        self.counters.append(name)

    def update_stats(self, name, value, *args, **kwargs):
        self.updates.append((name, value))

    def timing(self, name, value, *args, **kwargs):
        self.timings.append((name, value))

    def timing_since(self, *args, **kwargs):
        pass


class Clock(object):
    def __init__(self, now=1700000000.0):
        self.now = now

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class FakeMemcached(socketserver.ThreadingTCPServer):
    """A memcached on a port of its own: the text protocol's get, set, add,
    incr, decr and delete over a dict, with expiry.

    Hand-written because no kept package serves memcached's protocol, and
    the stores must be tested through Swift's real MemcacheRing."""
    daemon_threads = True

    def __init__(self):
        socketserver.ThreadingTCPServer.__init__(
            self, ('127.0.0.1', 0), _MemcachedConnection)
        self.items = {}  # key: (flags, expires or 0, value)
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.serve_forever,
                                       daemon=True)
        self.thread.start()

    @property
    def address(self):
        return '%s:%d' % self.server_address

    def stop(self):
        self.shutdown()
        self.server_close()

    def item(self, key):
        """The live item under ``key``, or None (and forgotten) if expired."""
        found = self.items.get(key)
        if found and found[1] and found[1] <= time.time():
            del self.items[key]
            return None
        return found


class _MemcachedConnection(socketserver.StreamRequestHandler):
    # memcached's rule: an exptime up to 30 days is relative, beyond it is a
    # Unix time, negative means already expired.
    RELATIVE_LIMIT = 30 * 24 * 3600

    def _expires(self, exptime):
        if exptime == 0:
            return 0
        if exptime < 0:
            return -1
        if exptime <= self.RELATIVE_LIMIT:
            return time.time() + exptime
        return exptime

    def handle(self):
        server = self.server
        while True:
            words = self.rfile.readline().split()
            if not words:
                return
            command, args = words[0], words[1:]
            with server.lock:
                if command in (b'set', b'add'):
                    flags, exptime, size = (int(w) for w in args[1:4])
                    value = self.rfile.read(size)
                    self.rfile.readline()
                    if command == b'add' and server.item(args[0]):
                        reply = b'NOT_STORED'
                    else:
                        server.items[args[0]] = (
                            flags, self._expires(exptime), value)
                        reply = b'STORED'
                elif command == b'get':
                    reply = b''
                    for key in args:
                        found = server.item(key)
                        if found:
                            reply += b'VALUE %s %d %d\r\n%s\r\n' % (
                                key, found[0], len(found[2]), found[2])
                    reply += b'END'
                elif command in (b'incr', b'decr'):
                    found = server.item(args[0])
                    if not found:
                        reply = b'NOT_FOUND'
                    else:
                        delta = int(args[1])
                        value = int(found[2]) + (
                            delta if command == b'incr' else -delta)
                        value = max(0, value) % 2 ** 64
                        reply = b'%d' % value
                        server.items[args[0]] = (found[0], found[1], reply)
                elif command == b'delete':
                    reply = (b'DELETED' if server.item(args[0])
                             else b'NOT_FOUND')
                    server.items.pop(args[0], None)
                else:
                    reply = b'ERROR'
            self.wfile.write(reply + b'\r\n')


def names_cluster_error(text):
    """Whether ``text`` ("<class name>: <message>", as Mass reports a
    Redis error) names one of redis-py's Cluster errors: redis-py 8.2 calls
    an unreachable Cluster RedisClusterUnreachableError, a subclass of the
    RedisClusterException earlier versions raised."""
    name = text.split(':', 1)[0].split()[-1]
    error = getattr(redis.exceptions, name, None)
    return isinstance(error, type) and \
        issubclass(error, redis.exceptions.RedisClusterException)


def server_of(generations):
    """The FakeServer behind a client, found without connecting to it:
    redis-py 8.2's pool connects a connection it hands out, which fails
    while the server emulates a connection error."""
    return generations.client.connection_pool.connection_kwargs['server']


def restart(keys, *connected):
    """What a restart from a snapshot does: the process (run_id) is new,
    every connection (of the ``connected`` generations) is cut, and Redis
    holds the keys as they were."""
    for key, value in keys.items():
        connected[0].client.restore(key, 0, value, replace=True)
    server_of(connected[0]).run_id = uuid.uuid4().hex
    for generations in connected:
        generations.client.connection_pool.disconnect()
        generations.bump_client.connection_pool.disconnect()
