"""Per-object generations: what makes a cached body safe to serve.

Every object has a generation in Redis, shared by all Mass proxies.  Each
write of the object (PUT, POST, DELETE, COPY, from a client or a
subrequest) replaces it before the write is sent on and again once the
backend has answered; a body is cached together with the generation read
before it was fetched, and a hit is served only while the object's
generation is still that one.

A generation is a random token, not a counter: a counter would start again
from 1 after Redis lost its data or the key expired, and a body cached
under "generation 5" long ago would match a new, different "generation 5".
A token never repeats, so losing a key (expiry, eviction, a Redis restart
without persistence) only ever turns hits into misses.  The second bump
also records the write's X-Timestamp, so a body older than the last write
Mass saw (read from a replica the write has not reached yet) is not cached.

Reads and bumps fail differently.  A read that fails (or times out)
makes the next ``retry_after`` seconds skip Redis for reads: the readers
then validate by other means (see :mod:`swift_mass.proxy.methods.cache`), which
is slower, never stale.  A bump that fails is the dangerous case: the
other proxies, which may still reach Redis, would go on trusting the old
generation.  So bumps never skip Redis, get a timeout of their own
(``bump_client``, longer than the readers') and a second attempt; if both
fail, the worker replaces the epoch, one more token that is part of every
validity, as soon as Redis answers it again (a green thread retries every
``repair_interval`` seconds), which invalidates every cached body at once.
Until then (Redis unreachable from this worker, reachable from others) a
body this worker overwrote can be served by another proxy: the one case
left, bounded by that outage and by ``cache_ttl``.

Redis errors never propagate; each outage is logged once.
"""
import time
import uuid

import eventlet

from swift.common.utils import Timestamp

DEFAULT_TTL = 86400


def new_token():
    return uuid.uuid4().hex


class Generations(object):
    """Generations in one Redis; ``client`` is a redis-py client."""

    # The object's generation and the epoch, each made if missing, in one
    # round trip: a reader must get a token even for an object no Mass
    # proxy has written yet.
    _READ = """
        local epoch = redis.call('GET', KEYS[2])
        if not epoch then
            redis.call('SET', KEYS[2], ARGV[2])
            epoch = ARGV[2]
        end
        local gen = redis.call('GET', KEYS[1])
        if not gen then
            redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
            gen = ARGV[1]
        end
        return {epoch, gen}
    """

    def __init__(self, client, logger, prefix='mass:cache:', ttl=DEFAULT_TTL,
                 retry_after=30.0, clock=time.time, bump_client=None,
                 attempts=2, repair_interval=0.5, spawn=eventlet.spawn_n):
        self.client = client
        self.bump_client = bump_client or client
        self.attempts = max(1, int(attempts))
        self.repair_interval = float(repair_interval)
        self.spawn = spawn
        self._repairing = False
        self.logger = logger
        self.prefix = prefix
        self.ttl = int(ttl)
        self.retry_after = float(retry_after)
        self.clock = clock
        self._read = client.register_script(self._READ)
        # A breaker of its own, not control.store.ResilientStore's: it
        # must let bumps through while it skips reads, and a skipped read
        # has no store to fall back to (the reader validates by a HEAD).
        self.down_until = 0.0
        self.error = None
        # a bump failed: the epoch must change before a token is trusted
        self.dirty = False

    def _key(self, key):
        return self.prefix + 'g:' + key

    @property
    def epoch_key(self):
        return self.prefix + 'epoch'

    def _available(self):
        return self.clock() >= self.down_until

    def _failed(self, err):
        if self.error is None:
            self.logger.warning(
                'mass cache: generations in Redis unavailable (%s: %s); '
                'cached bodies are validated against the backend' % (
                    type(err).__name__, err))
        self.error = err
        self.down_until = self.clock() + self.retry_after

    def _new_epoch_if_dirty(self):
        if self.dirty:
            # Writes went on while their bumps failed: no token read
            # before them may be trusted again.
            self.bump_client.set(self.epoch_key, new_token())
            self.dirty = False
            self.logger.increment('cache.epoch')

    def _succeeded(self):
        if self.error is not None:
            self.error = None
            self.down_until = 0.0
            self.logger.info('mass cache: generations in Redis recovered')

    def repair(self):
        """Replace the epoch once Redis answers; retried every
        ``repair_interval`` seconds meanwhile."""
        try:
            while self.dirty:
                try:
                    self._new_epoch_if_dirty()
                    self._succeeded()
                except Exception:
                    eventlet.sleep(self.repair_interval)
        finally:
            self._repairing = False

    def read(self, key):
        """``(validity, write_timestamp)`` of an object now: validity is a
        string that changes with every write, write_timestamp the
        X-Timestamp of the last write Mass saw complete (a Timestamp) or
        None.  ``(None, None)`` when Redis cannot tell."""
        if not self._available():
            return None, None
        try:
            self._new_epoch_if_dirty()
            epoch, gen = self._read(
                keys=[self._key(key), self.epoch_key],
                args=[new_token(), new_token(), self.ttl])
        except Exception as err:
            self._failed(err)
            return None, None
        self._succeeded()
        epoch, gen = _text(epoch), _text(gen)
        token, _, written = gen.partition('/')
        try:
            written = Timestamp(written) if written else None
        except ValueError:
            written = None
        return '%s:%s' % (epoch, token), written

    def bump(self, keys, timestamp=None):
        """Give each object a new generation, recording the write's
        ``timestamp`` (its X-Timestamp) if given; whether Redis took it.
        A failure makes the worker replace the epoch once Redis answers
        again."""
        value_suffix = ''
        if timestamp:
            try:
                value_suffix = '/' + Timestamp(timestamp).internal
            except ValueError:
                pass
        error = None
        for _attempt in range(self.attempts):
            try:
                self._new_epoch_if_dirty()
                pipe = self.bump_client.pipeline(transaction=False)
                for key in keys:
                    pipe.set(self._key(key), new_token() + value_suffix,
                             ex=self.ttl)
                pipe.execute()
                self._succeeded()
                return True
            except Exception as err:
                error = err
        self.dirty = True
        self._failed(error)
        if not self._repairing:
            self._repairing = True
            self.spawn(self.repair)
        return False


def _text(value):
    return value.decode('ascii') if isinstance(value, bytes) else value
