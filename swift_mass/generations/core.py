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
"""What every role of the generations shares (:mod:`swift_mass.generations`):
one Redis, its clients, keys and breaker, the defence against a Redis gone
back in time, and the heartbeat that renews ``alive``."""
import os
import socket
import time
import uuid

import eventlet
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from swift_mass import metrics
from swift_mass.breaker import Breaker, describe
from swift_mass.lua import read_script
from swift_mass.redis_client import client_from_url, key_prefix

DEFAULT_PREFIX = 'mass:cache:'
DEFAULT_TTL = 86400
DEFAULT_GAP = 2.0
DEFAULT_BUMP_WAIT = 0.04
DEFAULT_RETRY_AFTER = 5.0


def new_token():
    return uuid.uuid4().hex


def redis_run_id(connection):
    """The run_id of the Redis server a redis-py connection reached (a new
    one at every start of a server process)."""
    connection.send_command('INFO', 'server')
    info = connection.read_response()
    if isinstance(info, bytes):
        info = info.decode('utf-8', 'replace')
    for line in info.splitlines():
        if line.startswith('run_id:'):
            return line.split(':', 1)[1].strip()
    raise redis.ResponseError('INFO server shows no run_id')


def decoded(value):
    # UTF-8: a tenant is a WSGI string, which redis-py sent as UTF-8
    return value.decode('utf-8') if isinstance(value, bytes) else value


class Generations(object):
    """Generations in one Redis: what a proxy's reader
    (:class:`~swift_mass.generations.reader.GenerationReader`) and an
    object server's writer
    (:class:`~swift_mass.generations.writer.GenerationWriter`) share, and
    what the leader publishes through
    (:class:`~swift_mass.generations.publisher.BumpedSetPublisher`).

    :param url: the Redis URL (the shared store's).
    :param prefix: of every key: ``epoch``, ``alive``, ``instance``,
        ``g:<object key>``, ``bumping:<device>``, ``bumps`` and
        ``bumps:version``, and the cache's bodies
        (:class:`swift_mass.proxy.methods.bodies.RedisBodies`).  On a
        Redis Cluster its first part becomes a hash tag (``{mass}:cache:``,
        :func:`swift_mass.redis_client.key_prefix`): each script reads the
        epoch with per-object keys, so all must be in one slot.
    :param ttl: seconds a generation lives without a bump.
    :param timeout: seconds a reader waits to connect and for a reply.
    :param bump_wait: seconds a writer waits for Redis, all attempts
        together.  A heartbeat, off every request's path, waits up to its
        interval (``gap / 4``) for its reply: on a busy host a reply read
        late is not a Redis down.
    :param gap: seconds with no script run after which the epoch is
        replaced; the heartbeat runs four times in that.
    :param retry_after: seconds Redis is skipped after a failure.
    :param identify: ``identify(connection)`` -> the server's identity
        (:func:`redis_run_id`; the unit tests' fake Redis has its own).
    :param clock: seconds on a clock no one sets (``time.monotonic``):
        every deadline it measures is this process's own.
    """

    _INSTANCE = read_script(__package__, 'instance')
    _HEARTBEAT = read_script(__package__, 'heartbeat')

    def __init__(self, url, logger, prefix=DEFAULT_PREFIX, ttl=DEFAULT_TTL,
                 timeout=0.25, bump_wait=DEFAULT_BUMP_WAIT,
                 gap=DEFAULT_GAP, retry_after=DEFAULT_RETRY_AFTER,
                 identify=redis_run_id, clock=time.monotonic,
                 spawn=eventlet.spawn_n, sleep=eventlet.sleep):
        self.logger = logger
        self.prefix = prefix = key_prefix(url, prefix)
        self.epoch_key = prefix + 'epoch'
        self.alive_key = prefix + 'alive'
        self.instance_key = prefix + 'instance'
        self.bumper_prefix = prefix + 'bumping:'
        self.bumps_key = prefix + 'bumps'
        self.bumps_version_key = prefix + 'bumps:version'
        self.ttl = int(ttl)
        self.bump_wait = float(bump_wait)
        self.gap_ms = int(float(gap) * 1000)
        self.heartbeat_interval = float(gap) / 4
        self.registration_ms = int(self.heartbeat_interval * 4 * 1000) + 5000
        self.identify = identify
        self.clock = clock
        self.spawn = spawn
        self.sleep = sleep
        self.client = self._client(url, timeout)
        # a writer waits for Redis at most bump_wait, all attempts
        # together
        self.bump_client = self._client(url, max(0.001, self.bump_wait))
        # A heartbeat's registration lives from the Redis TIME its script
        # runs at, and this process trusts it only from before the call:
        # a slow reply costs no safety, and a busy hub (a proxy whose CPU
        # is saturated) answered late no longer lapses registrations.
        self.heartbeat_client = self._client(
            url, max(0.001, self.bump_wait, self.heartbeat_interval))
        self._heartbeat = self.heartbeat_client.register_script(
            self._HEARTBEAT)
        self.breaker = Breaker(retry_after, clock, on_open=self._opened,
                               on_close=self._closed)
        self._beating_pid = None
        self._process = None
        # a failed heartbeat is logged once, until one succeeds
        self._heartbeat_failing = False

    def _client(self, url, timeout):
        return client_from_url(
            url, self.prefix, connected=self._connected,
            socket_timeout=timeout, socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0))

    # -- keys ----------------------------------------------------------

    def _key(self, key):
        return self.prefix + 'g:' + key

    def _epoch_args(self):
        return [new_token(), self.gap_ms]

    # -- connections ---------------------------------------------------

    def _connected(self, connection):
        """Every new connection, once set up and before it serves a
        command: a server that is not the one whose run_id Redis holds
        (restarted, or a replica promoted) gets a new epoch."""
        identity = self.identify(connection)
        connection.send_command(
            'EVAL', self._INSTANCE, 2, self.instance_key, self.epoch_key,
            identity, new_token())
        try:
            replaced = connection.read_response()
        except redis.exceptions.AskError:
            # MOVED or ASK: a Cluster node that does not hold these keys
            # (one serving other slots, or a replica).  Commands on them
            # go to the node that does, over connections checked there;
            # should this node come to hold them, the client closes its
            # connections to it first (swift_mass.redis_client).
            return
        if replaced == 1:
            self.logger.warning(
                'mass generations: Redis is a new server process (run_id '
                '%s): every cached body is invalid', identity)
            metrics.increment(
                self.logger, 'generations.new_instance', 'generations',
                {'event': 'new_instance'})

    # -- failures ------------------------------------------------------

    def available(self):
        """Whether Redis is worth asking now: not within ``retry_after``
        of a failure (shared with the cache's bodies when they are kept in
        the same Redis)."""
        # Not Breaker.allows(): once retry_after has passed, that lets one
        # caller probe and refuses the others for another retry_after
        # unless the probe reports a success.  Not every caller here
        # reports one: the cache asks this before each call to bodies
        # kept in this Redis and reports their failures (failed) but not
        # their successes, and coverage lookups report none, so a probe
        # one of them took would keep readers off a Redis that recovered
        # for another retry_after.  So every caller may try again once
        # retry_after has passed.  Writers never ask: each bump tries
        # Redis, and a failed one makes its writer dirty
        # (GenerationWriter.bump).
        breaker = self.breaker
        return breaker.clock() >= breaker.retry_at

    def failed(self, err):
        """Redis failed (``err``): log it once, and skip it for
        ``retry_after`` seconds."""
        self.breaker.failed(describe(err))

    def _opened(self, error):
        self.logger.warning(
            'mass generations: Redis unavailable (%s); cached bodies are '
            'validated against the object servers', error)

    def _closed(self):
        self.logger.info('mass generations: Redis answers again')

    # -- heartbeat -----------------------------------------------------

    def start(self):
        """Run the heartbeat in this process (once; call it after the
        server forked its workers)."""
        if self._beating_pid == os.getpid():
            return
        self._beating_pid = os.getpid()
        self.spawn(self._beat)

    def _beat(self):
        while True:
            self.heartbeat()
            self.sleep(self.heartbeat_interval)

    def heartbeat(self):
        """Renew ``alive``, registering nothing (a proxy's heartbeat; an
        object server's registers its devices too:
        :meth:`GenerationWriter.heartbeat
        <swift_mass.generations.writer.GenerationWriter.heartbeat>`);
        whether Redis answered."""
        try:
            self._renew()
        except Exception as err:
            self._heartbeat_failed(err)
            return False
        self._heartbeat_succeeded()
        return True

    def _renew(self, names=(), relied=(), version=0):
        """The heartbeat's script: ``alive`` renewed, and ``names``
        registered as this process's, applying the bumped set's
        ``version``; whether a registration in ``relied`` had lapsed (the
        epoch is then new)."""
        _, lapsed = self._heartbeat(
            keys=[self.epoch_key, self.alive_key, self.bumper_prefix],
            args=self._epoch_args() + [
                self.registration_ms, self.process(), version,
                len(names)] + list(names) + list(relied))
        return bool(int(lapsed))

    def _heartbeat_failed(self, err):
        if not self._heartbeat_failing:
            self._heartbeat_failing = True
            self.logger.warning(
                'mass generations: heartbeat failed (%s: %s); this '
                'process bumps every write, and its registrations '
                'lapse, until it succeeds', type(err).__name__, err)

    def _heartbeat_succeeded(self):
        if self._heartbeat_failing:
            self._heartbeat_failing = False
            self.logger.info('mass generations: heartbeat succeeds again')

    def process(self):
        """This process's name in the registrations (a forked worker gets
        its own)."""
        if self._process is None or self._process[0] != os.getpid():
            self._process = (os.getpid(), '%s/%d/%s' % (
                socket.gethostname(), os.getpid(), new_token()[:8]))
        return self._process[1]
