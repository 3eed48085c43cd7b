"""Per-object generations in Redis: what makes a cached body safe to serve.

Shared by both halves of Mass.  The object servers' ``mass_queue`` gives an
object a new generation after each write of it has reached the disk and
before the object server answers (:meth:`Generations.bump`), so every write
is covered, whoever sent it: a proxy with or without ``mass``, Swift's own
daemons (object-expirer, reaper, reconciler, container-sync) through their
internal clients.  A proxy's cache stores a body with the generation it
read before the body was fetched, only if the generation is still the same
once the whole body arrived, and serves it only while it is
(:meth:`Generations.read`); the write's X-Timestamp is recorded too, the
highest of all writes seen, so a body older than the last write (read from
a replica the write has not reached) is never stored.

A generation is a random token, not a counter, and every validity also
holds the *epoch*, one more token, which replaces every generation at once
when it changes.  The ways Redis misbehaves, and what each does here:

* **a key is lost** (expiry, eviction, restart without persistence): a
  reader makes a new random token, so a lost key turns hits into misses;
* **Redis goes back in time** (restart from an RDB snapshot or a short
  AOF, failover to a replica that missed the latest writes): the old
  tokens come back, but the server is another process.  Every connection
  a client opens first compares the server's ``run_id`` with the one Redis
  holds under the ``instance`` key, and replaces the epoch when they
  differ, before the connection serves anything
  (:meth:`Generations._connected`).  Through Redis Sentinel a promoted
  replica is reached by new connections; on a Redis Cluster the client
  closes its connections to a node that comes to hold Mass's slot, so
  those it opens there are checked (:mod:`swift_mass.redis_client`);
* **Redis refuses writes but answers reads** (MISCONF, ``maxmemory`` with
  ``noeviction``, a READONLY replica, ``min-replicas-to-write``): a read is
  a write too (it renews ``alive``, below), so readers fail with the
  writers and validate hits against Swift meanwhile;
* **Redis hangs** or **goes away for a while**: writers wait at most
  ``bump_wait`` seconds, then answer the client and become *dirty*: they
  replace the epoch as soon as Redis answers again (retrying every
  ``repair_interval``), skipping further bumps until then.  Readers that
  failed validate hits against Swift for ``retry_after`` seconds.  And
  every script compares Redis's clock with the time of the last script
  that ran (``alive``, renewed by every worker's heartbeat every
  ``gap / 4`` seconds): after a gap over ``gap`` seconds, in which no
  write could be recorded, the epoch is replaced first.

What is left: a storage node cut off from Redis while the proxies still
reach it, and a refusal shorter than ``gap`` that a reader sat out idle
and ended less than ``repair_interval`` before the reader's next read.

A cache that trusts generations also needs every object server to bump
them: each ``mass_queue`` process registers the ring devices it serves
(hash ``bumping:<ip>:<port>/<device>``, a field per process, renewed by
the heartbeat), and a proxy trusts generations only while every device of
its object rings is registered (:meth:`Generations.uncovered`).

**Only the tenants that need it pay** (no write tax).  The object servers
bump the writes of the tenants whose method reads generations (cache,
merge) and make no Redis call for anyone else's.  The leader publishes
those tenants (:meth:`Generations.publish_bumped`: hash ``bumps``, tenant
-> the version of the set it entered in, and ``bumps:version``); every
object server process reloads the set when its version changes, before
its heartbeat, and registers the version it applies.  The barrier, both
ways:

* a tenant's generations are trusted only once every live process of every
  device has registered a version at least the one the tenant entered in
  (:meth:`Generations.read` compares it with the lowest registered): from
  then on every write of the tenant is bumped, and one that finished
  before was on disk before any proxy trusted a generation of it.  A
  body is stored under the tenant's entry version too, so nothing cached
  in an earlier membership is served in a later one;
* a tenant leaves the set in Redis first, and :meth:`Generations.read`
  reads its membership in the same script as the generation: once it is
  out no proxy trusts its generations, whatever table a proxy holds, and
  only then do object servers stop bumping its writes;
* a process whose heartbeat failed, or whose registration may have lapsed
  (no heartbeat got through for nearly as long as a registration lives),
  bumps every write again, at once;
* a registration Redis dropped while its process still relied on it (a
  step forward of Redis's clock, an eviction) is found at the process's
  next heartbeat, which replaces the epoch: writes in between may have
  passed unbumped.

Each deadline a process keeps for itself (a registration it trusts, a
Redis it skips, coverage it looked up) is on its monotonic clock, which no
step of the wall clock moves; what is compared with Redis's ``TIME``
(``alive``, a registration's expiry) is compared in Redis's scripts.

Redis errors never propagate; each outage is logged once.
"""
import hashlib
import os
import socket
import time
import uuid

import eventlet
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from swift.common.utils import Timestamp

from swift_mass import metrics
from swift_mass.redis_client import client_from_url, key_prefix
# moved to swift_mass.ring_devices; still importable from here
from swift_mass.ring_devices import device_name, ring_devices  # noqa: F401

DEFAULT_PREFIX = 'mass:cache:'
DEFAULT_TTL = 86400
DEFAULT_GAP = 2.0
DEFAULT_BUMP_WAIT = 0.04
DEFAULT_REPAIR_INTERVAL = 0.02
DEFAULT_RETRY_AFTER = 5.0

# The gap check, shared by every script: KEYS[1] epoch, KEYS[2] alive;
# ARGV[1] a new epoch, ARGV[2] the gap in ms.  Sets `epoch`.
_GAP = """
    local time = redis.call('TIME')
    local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    local alive = tonumber(redis.call('GET', KEYS[2]) or '0')
    local epoch = redis.call('GET', KEYS[1])
    if (not epoch) or now - alive > tonumber(ARGV[2]) then
        epoch = ARGV[1]
        redis.call('SET', KEYS[1], epoch)
    end
    redis.call('SET', KEYS[2], now)
"""


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


class Generations(object):
    """Generations in one Redis, for a proxy's readers and an object
    server's writers.

    :param url: the Redis URL (the shared store's).
    :param prefix: of every key: ``epoch``, ``alive``, ``instance``,
        ``g:<object key>``, ``bumping:<device>``, ``bumps`` and
        ``bumps:version``, and the cache's bodies
        (:class:`swift_mass.proxy.methods.bodies.RedisBodies`).  On a
        Redis Cluster its first part becomes a hash tag (``{mass}:cache:``,
        :func:`swift_mass.redis_client.key_prefix`): each script reads the
        epoch with per-object keys, so all must be in one slot.
    :param timeout: seconds a reader waits to connect and for a reply.
    :param identify: ``identify(connection)`` -> the server's identity
        (:func:`redis_run_id`; the unit tests' fake Redis has its own).
    :param clock: seconds on a clock no one sets (``time.monotonic``):
        every deadline it measures is this process's own.
    """

    # A generation is written only when there is none (a lost key must
    # not bring an older token back); the bumps renew its TTL.  The gap
    # check's SET of `alive` is the read's one unconditional write: a
    # Redis that refuses the writers' bumps refuses this read too.
    _READ = """
        local gen = redis.call('GET', KEYS[3])
        if not gen then
            gen = ARGV[3]
            redis.call('SET', KEYS[3], gen, 'EX', ARGV[4])
        end
    """ + _GAP + """
        local entered = redis.call('HGET', KEYS[4], ARGV[5])
        if not entered then
            entered = ''
        end
        return {epoch, gen, entered}
    """
    # ARGV[3] ttl, ARGV[4] the write's timestamp or '', ARGV[5..] tokens
    _BUMP = """
        for i = 3, #KEYS do
            local old = redis.call('GET', KEYS[i])
            local written = ARGV[4]
            if old then
                local seen = string.match(old, '/(.*)$')
                if seen and (written == '' or seen > written) then
                    written = seen
                end
            end
            local value = ARGV[i + 2]
            if written ~= '' then
                value = value .. '/' .. written
            end
            redis.call('SET', KEYS[i], value, 'EX', ARGV[3])
        end
    """ + _GAP + """
        return epoch
    """
    # ARGV[3] ms a registration lives, ARGV[4] this process, ARGV[5] the
    # version of the bumped set it applies, ARGV[6] how many names follow
    # to register, then those, then the names whose registration the
    # process relied on since its last heartbeat.  A field per process,
    # "<version> <expiry ms, Redis's clock>"; expired ones go.  Returns the
    # epoch, and 1 when a registration relied on had lapsed: the epoch is
    # then new.
    _HEARTBEAT = _GAP + """
        local registering = 6 + tonumber(ARGV[6])
        local lapsed = 0
        for i = registering + 1, #ARGV do
            local mine = redis.call('HGET', KEYS[3] .. ARGV[i], ARGV[4])
            local until_ms = tonumber(
                string.match(mine or '', ' (%d+)$') or '0')
            if until_ms < now then
                lapsed = 1
            end
        end
        if lapsed == 1 then
            epoch = ARGV[1]
            redis.call('SET', KEYS[1], epoch)
        end
        local expires = now + tonumber(ARGV[3])
        for i = 7, registering do
            local key = KEYS[3] .. ARGV[i]
            local fields = redis.call('HGETALL', key)
            for j = 1, #fields, 2 do
                local until_ms = tonumber(
                    string.match(fields[j + 1], ' (%d+)$') or '0')
                if until_ms < now then
                    redis.call('HDEL', key, fields[j])
                end
            end
            redis.call('HSET', key, ARGV[4], ARGV[5] .. ' ' .. expires)
            redis.call('PEXPIRE', key, ARGV[3])
        end
        return {epoch, lapsed}
    """
    # KEYS registrations of devices: per device the lowest version a live
    # process applies, or -1 when none is registered.
    _COVERAGE = """
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 +
            math.floor(tonumber(time[2]) / 1000)
        local lowest = {}
        for i = 1, #KEYS do
            local low = -1
            local fields = redis.call('HGETALL', KEYS[i])
            for j = 1, #fields, 2 do
                local version, until_ms = string.match(
                    fields[j + 1], '^(%d+) (%d+)$')
                if version and tonumber(until_ms) >= now then
                    version = tonumber(version)
                    if low < 0 or version < low then
                        low = version
                    end
                end
            end
            lowest[i] = low
        end
        return lowest
    """
    # KEYS[1] bumps, KEYS[2] bumps:version; ARGV the tenants to bump.  A
    # change takes a new version; tenants that enter get it.
    _PUBLISH = """
        local want = {}
        for i = 1, #ARGV do
            want[ARGV[i]] = true
        end
        local gone = {}
        for _, tenant in ipairs(redis.call('HKEYS', KEYS[1])) do
            if want[tenant] then
                want[tenant] = nil
            else
                table.insert(gone, tenant)
            end
        end
        local added = {}
        for tenant in pairs(want) do
            table.insert(added, tenant)
        end
        if #gone == 0 and #added == 0 then
            return tonumber(redis.call('GET', KEYS[2]) or '0')
        end
        local version = redis.call('INCR', KEYS[2])
        for _, tenant in ipairs(gone) do
            redis.call('HDEL', KEYS[1], tenant)
        end
        for _, tenant in ipairs(added) do
            redis.call('HSET', KEYS[1], tenant, version)
        end
        return version
    """
    _INSTANCE = """
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then
            redis.call('SET', KEYS[1], ARGV[1])
            redis.call('SET', KEYS[2], ARGV[2])
            return 1
        end
        return 0
    """

    def __init__(self, url, logger, prefix=DEFAULT_PREFIX, ttl=DEFAULT_TTL,
                 timeout=0.25, bump_wait=DEFAULT_BUMP_WAIT,
                 gap=DEFAULT_GAP, retry_after=DEFAULT_RETRY_AFTER,
                 repair_interval=DEFAULT_REPAIR_INTERVAL,
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
        self.retry_after = float(retry_after)
        self.repair_interval = float(repair_interval)
        self.identify = identify
        self.clock = clock
        self.spawn = spawn
        self.sleep = sleep
        self.client = self._client(url, timeout)
        # a writer waits for Redis at most bump_wait, all attempts
        # together
        self.bump_client = self._client(url, max(0.001, self.bump_wait))
        self._read = self.client.register_script(self._READ)
        self._bump = self.bump_client.register_script(self._BUMP)
        self._heartbeat = self.bump_client.register_script(self._HEARTBEAT)
        self._coverage_script = self.client.register_script(self._COVERAGE)
        self._publish = self.client.register_script(self._PUBLISH)
        # A breaker of its own, not control.stores.resilient's: a
        # skipped read has no store to fall back to (the reader validates
        # by a HEAD), and bumps have their own rule (dirty).
        self.down_until = 0.0
        self.error = None
        # a bump failed: the epoch must change before the next bump
        self.dirty = False
        # bumps skipped while dirty, so a repair knows whether one was
        # skipped while its new epoch was on its way
        self.skipped = 0
        self._repairing = False
        self._beating_pid = None
        self.names = tuple
        # (when checked, devices not registered, lowest version applied)
        self._coverage = (0.0, None, None)
        # an object server's bumped set: None until loaded
        self.bumped = None
        self.bumped_version = None
        self.registration_ms = int(self.heartbeat_interval * 4 * 1000) + 5000
        # until when the registration of the process whose heartbeat got
        # through surely lives (its clock), and that process: a worker
        # forked after it is not registered, yet inherits both
        self.registered_until = 0.0
        self._registered_pid = None
        # what that heartbeat registered
        self._registered_names = ()
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
                '%s): every cached body is invalid' % identity)
            metrics.increment(
                self.logger, 'generations.new_instance', 'generations',
                {'event': 'new_instance'})

    # -- failures ------------------------------------------------------

    def available(self):
        """Whether Redis is worth asking now: not within ``retry_after``
        of a failure (shared with the cache's bodies when they are kept in
        the same Redis)."""
        return self.clock() >= self.down_until

    def failed(self, err):
        """Redis failed (``err``): log it once, and skip it for
        ``retry_after`` seconds."""
        if self.error is None:
            self.logger.warning(
                'mass generations: Redis unavailable (%s: %s); cached '
                'bodies are validated against the object servers' % (
                    type(err).__name__, err))
        self.error = err
        self.down_until = self.clock() + self.retry_after

    def _succeeded(self):
        if self.error is not None:
            self.error = None
            self.down_until = 0.0
            self.logger.info('mass generations: Redis answers again')

    def _epoch_args(self):
        return [new_token(), self.gap_ms]

    # -- readers -------------------------------------------------------

    def read(self, key, tenant):
        """``(validity, written)`` of an object of ``tenant`` now: validity
        a string that changes with every write, written the X-Timestamp of
        the newest write recorded (a Timestamp) or None.  ``(None, None)``
        when Redis cannot tell, or the generations are not to be trusted:
        the tenant is not bumped, or not yet by every object server (call
        :meth:`uncovered` first: it finds the lowest version they apply)."""
        if self.clock() < self.down_until or self.dirty:
            return None, None
        try:
            epoch, gen, entered = self._read(
                keys=[self.epoch_key, self.alive_key, self._key(key),
                      self.bumps_key],
                args=self._epoch_args() + [new_token(), self.ttl, tenant])
        except Exception as err:
            self.failed(err)
            return None, None
        self._succeeded()
        epoch, gen, entered = _text(epoch), _text(gen), _text(entered)
        applied = self._coverage[2]
        if not entered or applied is None or int(entered) > applied:
            return None, None
        token, _, written = gen.partition('/')
        try:
            written = Timestamp(written) if written else None
        except ValueError:
            written = None
        return '%s:%s:%s' % (epoch, token, entered), written

    def uncovered(self, required, period=5.0):
        """The names of the devices ``required()`` answers (ring devices,
        as :func:`device_name` makes them) that no object server has
        registered as bumping their writes, looked up at most every
        ``period`` seconds; None when Redis could not tell."""
        checked, missing, _applied = self._coverage
        now = self.clock()
        if missing is not None and now < checked + period:
            return missing
        if not self.available():
            return None
        try:
            required = sorted(required())
        except Exception as err:
            # a ring being replaced, or broken: unknown, so hits are
            # validated against the object servers meanwhile
            self.logger.warning('mass generations: the ring devices could '
                                'not be read: %s' % err)
            return None
        try:
            found = self._coverage_script(
                keys=[self.bumper_prefix + name for name in required]) \
                if required else []
        except Exception as err:
            self.failed(err)
            return None
        missing = frozenset(name for name, value in zip(required, found)
                            if int(value) < 0)
        applied = min(map(int, found)) if found and not missing else None
        if missing != self._coverage[1]:
            if missing:
                self.logger.warning(
                    'mass generations: %d device(s) have no object server '
                    'bumping generations (mass_queue with redis_url), so '
                    'cached bodies are validated against the object '
                    'servers: %s' % (len(missing),
                                     ', '.join(sorted(missing)[:5])))
            elif self._coverage[1]:
                self.logger.info('mass generations: every device bumps')
        self._coverage = (now, missing, applied)
        return missing

    # -- the leader --------------------------------------------------

    def publish_bumped(self, tenants):
        """Make ``tenants`` the ones whose writes the object servers bump
        (the leader, at every tick); the set's version, or None when Redis
        did not take it."""
        try:
            return int(self._publish(
                keys=[self.bumps_key, self.bumps_version_key],
                args=sorted(tenants)))
        except Exception as err:
            self.logger.warning('mass generations: could not publish the '
                                'tenants to bump: %s' % err)
            return None

    # -- writers -------------------------------------------------------

    def bumps_writes_of(self, tenant):
        """Whether this object server bumps the writes of ``tenant``: the
        tenants of the set it applies, or everyone's until it has loaded
        one, and again once its heartbeat failed, its registration may
        have lapsed or, in a worker forked since, was never made."""
        return not self._relies_on_registration() or tenant in self.bumped

    def _relies_on_registration(self):
        # whether writes of tenants outside the bumped set pass unbumped
        return self.bumped is not None and \
            self.clock() < self.registered_until and \
            self._registered_pid == os.getpid()

    def load_bumped(self):
        """Reload the bumped set if its version changed; whether this
        process knows the current one."""
        version = _text(self.bump_client.get(self.bumps_version_key))
        version = int(version or 0)
        if version == self.bumped_version:
            return True
        # MULTI: the set and the version it belongs to, read together
        pipe = self.bump_client.pipeline(transaction=True)
        pipe.get(self.bumps_version_key)
        pipe.hkeys(self.bumps_key)
        version, tenants = pipe.execute()
        self.bumped = frozenset(_text(t) for t in tenants)
        self.bumped_version = int(_text(version) or 0)
        return True

    def bump(self, keys, timestamp=None):
        """Give each object a new generation, recording the write's
        ``timestamp`` (its X-Timestamp) if given; whether Redis took it
        within ``bump_wait``.  A failure makes this worker dirty: it skips
        bumps, and replaces the epoch as soon as Redis answers."""
        if self.dirty:
            self.skipped += 1
            metrics.increment(
                self.logger, 'generations.bump_skipped', 'generations',
                {'event': 'bump_skipped'})
            return False
        written = ''
        if timestamp:
            try:
                written = Timestamp(timestamp).internal
            except ValueError:
                pass
        keys = list(keys)
        deadline = self.clock() + self.bump_wait
        error = None
        while True:
            try:
                self._bump(
                    keys=[self.epoch_key, self.alive_key] +
                    [self._key(key) for key in keys],
                    args=self._epoch_args() + [self.ttl, written] +
                    [new_token() for _key in keys])
                self._succeeded()
                return True
            except Exception as err:
                error = err
            if self.clock() + self.repair_interval >= deadline:
                break
            self.sleep(self.repair_interval)
        self.dirty = True
        metrics.increment(
            self.logger, 'generations.bump_failed', 'generations',
            {'event': 'bump_failed'})
        self.failed(error)
        if not self._repairing:
            self._repairing = True
            self.spawn(self._repair)
        return False

    def _repair(self):
        """Replace the epoch once Redis answers again."""
        try:
            while self.dirty:
                # A write whose bump is skipped after this point may be
                # acknowledged after Redis took the new epoch: a reader
                # could then cache the old body under it.  Such a skip
                # takes another epoch.
                skipped = self.skipped
                try:
                    self.bump_client.set(self.epoch_key, new_token())
                except Exception:
                    self.sleep(self.repair_interval)
                    continue
                if self.skipped != skipped:
                    continue
                self.dirty = False
                self._succeeded()
                metrics.increment(
                    self.logger, 'generations.epoch', 'generations',
                    {'event': 'epoch'})
                self.logger.info('mass generations: new epoch after '
                                 'writes Redis did not record')
        finally:
            self._repairing = False

    # -- heartbeat -----------------------------------------------------

    def heartbeat(self):
        """Renew ``alive`` and, with the bumped set reloaded first, this
        process's registrations, replacing the epoch if Redis dropped one
        this process relied on; whether Redis answered."""
        began = self.clock()
        # Redis may have dropped a registration before this process's
        # deadline (its clock stepped forward, the key evicted); only
        # Redis's TIME can tell whether those it relied on lived.
        relied = list(self._registered_names) \
            if self._relies_on_registration() else []
        try:
            # in the try: a ring replaced in place must not end the
            # heartbeat for good
            names = sorted(self.names())
            if names:
                self.load_bumped()
            _, lapsed = self._heartbeat(
                keys=[self.epoch_key, self.alive_key, self.bumper_prefix],
                args=self._epoch_args() + [
                    self.registration_ms, self.process(),
                    self.bumped_version or 0, len(names)] + names + relied)
        except Exception as err:
            # Redis may drop the registration before this process could
            # tell: trust it no longer.
            self.registered_until = 0.0
            if not self._heartbeat_failing:
                self._heartbeat_failing = True
                self.logger.warning(
                    'mass generations: heartbeat failed (%s: %s); this '
                    'process bumps every write, and its registrations '
                    'lapse, until it succeeds' % (
                        type(err).__name__, err))
            return False
        if self._heartbeat_failing:
            self._heartbeat_failing = False
            self.logger.info('mass generations: heartbeat succeeds again')
        if int(lapsed):
            metrics.increment(
                self.logger, 'generations.registration_lapsed', 'generations',
                {'event': 'registration_lapsed'})
            self.logger.warning(
                'mass generations: Redis dropped a registration of this '
                'process before it expected (a step of Redis\'s clock, an '
                'eviction), when writes may have passed unbumped: new '
                'epoch, every cached body is invalid')
        self._registered_names = names
        if names:
            # a second short of Redis's expiry, measured from before the
            # call: the registration surely lives until then
            self.registered_until = began + self.registration_ms / 1000.0 \
                - 1.0
            self._registered_pid = os.getpid()
        return True

    def process(self):
        """This process's name in the registrations (a forked worker gets
        its own)."""
        if self._process is None or self._process[0] != os.getpid():
            self._process = (os.getpid(), '%s/%d/%s' % (
                socket.gethostname(), os.getpid(), new_token()[:8]))
        return self._process[1]

    def start(self, names=None):
        """Run the heartbeat in this process (once; call it after the
        server forked its workers), registering what ``names()`` answers
        at each beat."""
        if names is not None:
            self.names = names
        if self._beating_pid == os.getpid():
            return
        self._beating_pid = os.getpid()
        self.spawn(self._beat)

    def _beat(self):
        while True:
            self.heartbeat()
            self.sleep(self.heartbeat_interval)


# The methods that read generations: the object servers bump the writes of
# the tenants the policy table gives one of them.
BUMPED_METHODS = frozenset(('cache', 'merge'))


def bumped_tenants(table):
    """The tenants of a policy table whose writes must be bumped."""
    return frozenset(tenant for tenant, entry in table.items()
                     if entry and entry.get('method') in BUMPED_METHODS)


def object_key(account, container, obj):
    """A fixed-length key for an object, the same in every proxy and
    object server (WSGI strings of its path): object names are up to 1 KiB
    of arbitrary bytes."""
    name = '/'.join((account, container, obj)).encode('latin-1')
    return hashlib.sha256(name).hexdigest()


def _text(value):
    # UTF-8: a tenant is a WSGI string, which redis-py sent as UTF-8
    return value.decode('utf-8') if isinstance(value, bytes) else value
