"""The shared store: where Mass proxies meet.

Every proxy worker, on every proxy machine, keeps four kinds of state here:

* window counters: per tenant and time bucket, integer fields that only
  ever grow by addition (see :mod:`swift_mass.control.monitor`), so the
  deltas of
  any number of workers add up to the cluster's figures.  A bucket expires
  ``ttl`` seconds after it was written;
* the policy table: one document ``{tenant: policy}`` with a version.  The
  controller replaces it whole; workers poll the version each interval
  (cheap) and read the table only when the version changed.  Compare
  versions for equality, not order: a store that lost its state (a
  restarted memcached, a worker-local fallback) starts again from 1;
* pins: an operator's hand-set policy per tenant, which the controller
  never overrides;
* the leader lease: the one controller that decides at a time.

Redis (:class:`RedisStore`) is the store of choice; Swift's own memcache
(:class:`MemcacheStore`) and worker-local dicts (:class:`LocalStore`) are
the fallbacks.  These three let their errors propagate;
:class:`ResilientStore` chains them, each behind a circuit breaker
(:class:`Breaker`; Redis -> memcache -> local, built by
:func:`store_from_conf`), and never raises, so no request fails because a
store is down.  What was written to a fallback during an outage is not
copied back: once the primary answers again, its (older) table, pins and
counters are what every worker sees, and the controller brings the table up
to date from there; pins set during the outage must be set again.
"""
from __future__ import annotations

import json
import math
import time
import urllib.parse

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from swift.common.memcached import load_memcache
from swift.common.utils import readconf

from swift_mass.conf import DEFAULT_REDIS_TIMEOUT_MS, DEFAULT_REDIS_URL, \
    SECTION, ConfigError, MassConf, redacted_url


def _quote(name):
    # Tenant names are arbitrary (':' and '/' are our key separators, and
    # WSGI strings carry non-ASCII), so they go into keys quoted.
    return urllib.parse.quote(name, safe='')


def _unquote(quoted):
    return urllib.parse.unquote(quoted)


def _describe(err):
    return '%s: %s' % (type(err).__name__, err)


class Store(object):
    """What every store offers (see the module docstring for the model).

    Counters are ``{tenant: {bucket: {field: value}}}``, buckets are ints
    (epoch seconds of the bucket's start), fields are names such as
    ``ops.GET``.  Tables, policies and pins are JSON-able dicts; what is read
    back is a fresh copy.  Every method does a bounded, small number of round
    trips to its backend.
    """
    name = 'base'

    def add_counts(self, tenant: str, bucket: int, counts: dict[str, int],
                   ttl: int) -> None:
        """Add ``counts`` (field -> delta) to the tenant's counters of
        ``bucket``; the bucket expires ``ttl`` seconds later."""
        raise NotImplementedError

    def read_counts(self, since_bucket: int
                    ) -> dict[str, dict[int, dict[str, int]]]:
        """Every tenant's live buckets from ``since_bucket`` on."""
        raise NotImplementedError

    def get_table(self) -> tuple[int, dict[str, dict]]:
        """``(version, table)``; ``(0, {})`` if no table was ever put."""
        raise NotImplementedError

    def put_table(self, table: dict[str, dict]) -> int:
        """Replace the table and return its new version."""
        raise NotImplementedError

    def table_version(self) -> int:
        """Only the version (0 if none): what workers poll."""
        raise NotImplementedError

    def acquire_lease(self, owner: str, ttl_ms: int) -> bool:
        """Take the leader lease if it is free, or extend it for ``ttl_ms``
        if ``owner`` holds it already; whether ``owner`` holds it now."""
        raise NotImplementedError

    def release_lease(self, owner: str) -> None:
        """Free the lease if, and only if, ``owner`` holds it."""
        raise NotImplementedError

    def lease_holder(self) -> str | None:
        raise NotImplementedError

    def set_pin(self, tenant: str, pin: dict) -> None:
        raise NotImplementedError

    def delete_pin(self, tenant: str) -> None:
        raise NotImplementedError

    def get_pins(self) -> dict[str, dict]:
        raise NotImplementedError

    def health(self) -> dict:
        """``{'store': name, 'ok': bool, 'error': str or None, ...}``;
        never raises."""
        raise NotImplementedError

    def in_use(self) -> str:
        """The name of the store that serves calls right now."""
        return self.name

    def holds_pins(self) -> bool:
        """Whether :meth:`get_pins` answers the operator's pins: the store
        ``swift-mass pin`` keeps them in serves calls right now."""
        return True


class RedisStore(Store):
    """The shared store on Redis: atomic counters, table and lease.

    Keys, under ``prefix``:

    ==========================  ===========================================
    ``c:<bucket>:<tenant>``     hash of a tenant's counters in a bucket
    ``cb:<bucket>``             set of the tenants (quoted) with counters
    ``buckets``                 sorted set of buckets, scored by expiry
    ``table``, ``table:version``  the policy table (JSON) and its version
    ``leader``                  the lease: owner, with a PX expiry
    ``pins``                    hash of tenant -> pin (JSON)
    ==========================  ===========================================

    The bucket and tenant indexes let :meth:`read_counts` find counters
    without KEYS or SCAN, which walk the whole keyspace.  The client is
    created lazily (no connection until the first call) with short
    timeouts and no retries: a slow Redis must cost a request at most one
    timeout, and the breaker, not the client, decides when to try again.
    """
    name = 'redis'

    # Take the lease if free (SET NX PX) or extend it if ARGV[1] holds it;
    # one script, so no other proxy can take it between the check and the
    # write.
    _ACQUIRE = """
        local holder = redis.call('GET', KEYS[1])
        if not holder then
            redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
            return 1
        end
        if holder == ARGV[1] then
            redis.call('PEXPIRE', KEYS[1], ARGV[2])
            return 1
        end
        return 0
    """
    _RELEASE = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
            redis.call('DEL', KEYS[1])
        end
        return 0
    """

    def __init__(self, url=DEFAULT_REDIS_URL, prefix='mass:',
                 socket_timeout_ms=DEFAULT_REDIS_TIMEOUT_MS,
                 connect_timeout_ms=DEFAULT_REDIS_TIMEOUT_MS):
        self.url = url
        self.prefix = prefix
        self.client = redis.Redis.from_url(
            url, socket_timeout=socket_timeout_ms / 1000.0,
            socket_connect_timeout=connect_timeout_ms / 1000.0,
            retry=Retry(NoBackoff(), 0), retry_on_timeout=False,
            decode_responses=True)
        self._acquire = self.client.register_script(self._ACQUIRE)
        self._release = self.client.register_script(self._RELEASE)

    def _key(self, *parts):
        return self.prefix + ':'.join(str(part) for part in parts)

    def _counter_key(self, bucket, quoted_tenant):
        return self._key('c', bucket, quoted_tenant)

    def add_counts(self, tenant, bucket, counts, ttl):
        if not counts:
            return
        bucket, ttl = int(bucket), max(1, int(ttl))
        quoted = _quote(tenant)
        counters = self._counter_key(bucket, quoted)
        tenants = self._key('cb', bucket)
        buckets = self._key('buckets')
        now = time.time()
        # MULTI/EXEC, one round trip: the indexes never name counters that
        # were not written.
        pipe = self.client.pipeline()
        for field, delta in counts.items():
            pipe.hincrby(counters, field, int(delta))
        pipe.expire(counters, ttl)
        pipe.sadd(tenants, quoted)
        pipe.expire(tenants, ttl)
        # The bucket index is scored by expiry, so it is trimmed without
        # knowing how long a bucket is; GT keeps the latest expiry.  Scores
        # come from the proxies' clocks: only a skew larger than ttl would
        # trim a live bucket.
        pipe.zadd(buckets, {str(bucket): now + ttl}, gt=True)
        pipe.zremrangebyscore(buckets, '-inf', '(%r' % now)
        pipe.expire(buckets, ttl)
        pipe.execute()

    def read_counts(self, since_bucket):
        live = self.client.zrangebyscore(
            self._key('buckets'), '(%r' % time.time(), '+inf')
        buckets = sorted(b for b in map(int, live) if b >= since_bucket)
        if not buckets:
            return {}
        pipe = self.client.pipeline(transaction=False)
        for bucket in buckets:
            pipe.smembers(self._key('cb', bucket))
        pairs = [(bucket, quoted)
                 for bucket, tenants in zip(buckets, pipe.execute())
                 for quoted in sorted(tenants)]
        pipe = self.client.pipeline(transaction=False)
        for bucket, quoted in pairs:
            pipe.hgetall(self._counter_key(bucket, quoted))
        counts = {}
        for (bucket, quoted), fields in zip(pairs, pipe.execute()):
            if fields:  # expired between the two round trips
                counts.setdefault(_unquote(quoted), {})[bucket] = {
                    field: int(value) for field, value in fields.items()}
        return counts

    def get_table(self):
        # MULTI: the version and the table it belongs to, read together.
        pipe = self.client.pipeline()
        pipe.get(self._key('table', 'version'))
        pipe.get(self._key('table'))
        version, table = pipe.execute()
        return int(version or 0), json.loads(table) if table else {}

    def put_table(self, table):
        pipe = self.client.pipeline()
        pipe.set(self._key('table'), json.dumps(table, sort_keys=True))
        pipe.incr(self._key('table', 'version'))
        return int(pipe.execute()[1])

    def table_version(self):
        return int(self.client.get(self._key('table', 'version')) or 0)

    def acquire_lease(self, owner, ttl_ms):
        return bool(self._acquire(keys=[self._key('leader')],
                                  args=[owner, max(1, int(ttl_ms))]))

    def release_lease(self, owner):
        self._release(keys=[self._key('leader')], args=[owner])

    def lease_holder(self):
        return self.client.get(self._key('leader'))

    def set_pin(self, tenant, pin):
        self.client.hset(self._key('pins'), tenant,
                         json.dumps(pin, sort_keys=True))

    def delete_pin(self, tenant):
        self.client.hdel(self._key('pins'), tenant)

    def get_pins(self):
        return {tenant: json.loads(pin) for tenant, pin
                in self.client.hgetall(self._key('pins')).items()}

    def health(self):
        health = {'store': self.name, 'ok': True, 'error': None,
                  'url': redacted_url(self.url)}
        try:
            self.client.ping()
        except Exception as err:
            health.update(ok=False, error=_describe(err))
        return health


class MemcacheStore(Store):
    """The shared store on Swift's memcache (``env['swift.cache']``, a
    :class:`swift.common.memcached.MemcacheRing`).

    Memcache has atomic increments and little else, so this store is
    weaker than Redis, on purpose only a fallback:

    * counters are one key per (bucket, tenant, field), added to with
      ``incr``, which is atomic and creates a missing key; but memcache
      cannot list keys, so each bucket has an index key ``{tenant:
      [fields]}`` and a ``buckets`` key lists the live buckets.  The indexes
      are JSON, updated by read-modify-write only when a tenant or field is
      new: two workers updating one at once can lose one's entry, which
      hides (not loses) that tenant's counters of the bucket until its next
      flush puts the entry back.  :meth:`read_counts` costs one round trip
      per (bucket, tenant, field);
    * counters are unsigned: a negative delta stops at 0;
    * ``incr`` cannot refresh an expiry, so a counter expires ``ttl`` after
      its first write, not its last; memcached's clock ticks in whole
      seconds, so everything here lives up to one second longer than asked;
    * the table is one JSON value holding its version; ``put_table`` takes a
      new version with an atomic ``incr`` but writes the table separately,
      so two concurrent puts (not expected: one leader writes) can leave the
      version key ahead of the table until the next put;
    * the lease: ``incr`` of a token key is the atomic set-if-absent
      (MemcacheRing has no ``add``; the first ``incr`` of a missing key adds
      it and returns 1, every later one returns more), so only one proxy
      takes a free lease.  Renewal is a get then a set, not atomic: if the
      lease expires between the two and another proxy takes it, both may
      act as leader until the next renewal.  Eviction under memory pressure
      can also free a lease early.  Good enough to keep a cluster from
      deciding twice in most intervals, not a lock;
    * pins are one JSON value, read-modify-write: concurrent pin changes
      can lose one;
    * anything can be evicted: memcache is a cache.
    """
    name = 'memcache'

    def __init__(self, memcache, prefix='mass-store/'):
        self.memcache = memcache
        self.prefix = prefix

    def _key(self, *parts):
        # '/' separators: MemcacheRing logs a key up to its last '/'.
        return self.prefix + '/'.join(str(part) for part in parts)

    def _counter_key(self, bucket, tenant, field):
        return self._key('c', bucket, _quote(tenant), _quote(field))

    def _get(self, key):
        return self.memcache.get(key, raise_on_error=True)

    def _set(self, key, value, ttl=0):
        self.memcache.set(key, value, time=ttl, raise_on_error=True)

    @staticmethod
    def _seconds(seconds):
        # At least as long as asked, whatever the phase of memcached's
        # one-second clock; 0 would mean "never expires".
        return int(math.ceil(seconds)) + 1

    def add_counts(self, tenant, bucket, counts, ttl):
        if not counts:
            return
        bucket, ttl = int(bucket), self._seconds(ttl)
        for field, delta in counts.items():
            self.memcache.incr(self._counter_key(bucket, tenant, field),
                               int(delta), time=ttl)
        index_key = self._key('cb', bucket)
        index = self._get(index_key) or {'expires': 0, 'tenants': {}}
        known = set(index['tenants'].get(tenant, ()))
        if not known.issuperset(counts):
            index['tenants'][tenant] = sorted(known.union(counts))
            index['expires'] = time.time() + ttl
            self._set(index_key, index, ttl)
        self._register(bucket, index['expires'], ttl)

    def _register(self, bucket, expires, ttl):
        """Make sure the bucket list names ``bucket`` for as long as its
        index lives (a lost update may have dropped it)."""
        key = self._key('buckets')
        buckets = self._get(key) or {}
        if buckets.get(str(bucket), 0) >= expires:
            return
        now = time.time()
        buckets = {b: when for b, when in buckets.items() if when > now}
        buckets[str(bucket)] = expires
        self._set(key, buckets, ttl)

    def read_counts(self, since_bucket):
        now = time.time()
        counts = {}
        for bucket, expires in (self._get(self._key('buckets')) or {}).items():
            bucket = int(bucket)
            if bucket < since_bucket or expires <= now:
                continue
            index = self._get(self._key('cb', bucket)) or {'tenants': {}}
            for tenant, fields in index['tenants'].items():
                values = {}
                for field in fields:
                    value = self._get(self._counter_key(bucket, tenant, field))
                    if value is not None:
                        values[field] = int(value)
                if values:
                    counts.setdefault(tenant, {})[bucket] = values
        return counts

    def get_table(self):
        stored = self._get(self._key('table'))
        if not stored:
            return 0, {}
        return int(stored['version']), stored['table']

    def put_table(self, table):
        version = self.memcache.incr(self._key('table-version'), 1)
        self._set(self._key('table'), {'version': version, 'table': table})
        return int(version)

    def table_version(self):
        return int(self._get(self._key('table-version')) or 0)

    def acquire_lease(self, owner, ttl_ms):
        ttl = self._seconds(ttl_ms / 1000.0)
        holder_key, token_key = self._key('leader'), self._key('leader-token')
        if self._get(holder_key) == owner:
            self._set(token_key, 1, ttl)
            self._set(holder_key, owner, ttl)
            return True
        if self.memcache.incr(token_key, 1, time=ttl) != 1:
            return False
        self._set(holder_key, owner, ttl)
        return True

    def release_lease(self, owner):
        if self._get(self._key('leader')) == owner:
            self.memcache.delete(self._key('leader-token'))
            self.memcache.delete(self._key('leader'))

    def lease_holder(self):
        return self._get(self._key('leader'))

    def set_pin(self, tenant, pin):
        pins = self.get_pins()
        pins[tenant] = pin
        self._set(self._key('pins'), pins)

    def delete_pin(self, tenant):
        pins = self.get_pins()
        if pins.pop(tenant, None) is not None:
            self._set(self._key('pins'), pins)

    def get_pins(self):
        return self._get(self._key('pins')) or {}

    def health(self):
        health = {'store': self.name, 'ok': True, 'error': None,
                  'servers': list(getattr(self.memcache, 'memcache_servers',
                                          ()))}
        try:
            self._get(self._key('health'))
        except Exception as err:
            health.update(ok=False, error=_describe(err))
        return health


class LocalStore(Store):
    """Worker-local dicts with the semantics of the shared stores.

    The last resort: nothing is shared, so each worker counts, classifies
    and leads on its own numbers (the lease is granted to whoever asks while
    it is free or expired).  Expiry follows ``clock``; counters expire
    ``ttl`` after their last write, as in Redis.
    """
    name = 'local'

    def __init__(self, clock=time.time):
        self.clock = clock
        self._buckets = {}  # {bucket: {tenant: [fields, expires]}}
        self._table = (0, '{}')  # (version, JSON): readers get a copy
        self._lease = None  # (owner, expires)
        self._pins = {}  # {tenant: JSON}

    def _expire(self, now):
        for bucket, tenants in list(self._buckets.items()):
            for tenant, (_fields, expires) in list(tenants.items()):
                if expires <= now:
                    del tenants[tenant]
            if not tenants:
                del self._buckets[bucket]

    def add_counts(self, tenant, bucket, counts, ttl):
        if not counts:
            return
        now, bucket = self.clock(), int(bucket)
        if bucket not in self._buckets:
            # Once per new bucket, so memory stays bounded by the live ones.
            self._expire(now)
        tenants = self._buckets.setdefault(bucket, {})
        entry = tenants.get(tenant)
        fields = entry[0] if entry and entry[1] > now else {}
        for field, delta in counts.items():
            fields[field] = fields.get(field, 0) + int(delta)
        tenants[tenant] = [fields, now + ttl]

    def read_counts(self, since_bucket):
        now = self.clock()
        counts = {}
        for bucket, tenants in self._buckets.items():
            if bucket < since_bucket:
                continue
            for tenant, (fields, expires) in tenants.items():
                if expires > now:
                    counts.setdefault(tenant, {})[bucket] = dict(fields)
        return counts

    def get_table(self):
        version, table = self._table
        return version, json.loads(table)

    def put_table(self, table):
        version = self._table[0] + 1
        self._table = (version, json.dumps(table, sort_keys=True))
        return version

    def table_version(self):
        return self._table[0]

    def acquire_lease(self, owner, ttl_ms):
        now = self.clock()
        holder = self.lease_holder()
        if holder is not None and holder != owner:
            return False
        self._lease = (owner, now + ttl_ms / 1000.0)
        return True

    def release_lease(self, owner):
        if self.lease_holder() == owner:
            self._lease = None

    def lease_holder(self):
        if self._lease is None or self._lease[1] <= self.clock():
            return None
        return self._lease[0]

    def set_pin(self, tenant, pin):
        self._pins[tenant] = json.dumps(pin, sort_keys=True)

    def delete_pin(self, tenant):
        self._pins.pop(tenant, None)

    def get_pins(self):
        return {tenant: json.loads(pin) for tenant, pin in self._pins.items()}

    def health(self):
        return {'store': self.name, 'ok': True, 'error': None}


class Breaker(object):
    """A circuit breaker for one backend.

    Closed while the backend answers.  The first failure opens it for
    ``retry_after`` seconds, during which :meth:`allows` says no; then it
    lets one caller probe (the others are still refused for another
    ``retry_after``), and a success closes it.  ``on_open(error)`` and
    ``on_close()`` are called once per transition, for the owner's log
    line.  Hand-written: pybreaker opens after a count of failures and
    raises its own exception, where a Mass backend opens on the first one,
    its callers pick their own fallback, and tests move its clock.
    """

    def __init__(self, retry_after, clock=time.time, on_open=None,
                 on_close=None):
        self.retry_after = float(retry_after)
        self.clock = clock
        self.on_open = on_open
        self.on_close = on_close
        self.error = None  # why it is open; None: closed
        self.retry_at = 0.0  # when a probe may go to the backend

    def allows(self):
        """Whether a call may go to the backend now."""
        if self.error is None:
            return True
        now = self.clock()
        if now < self.retry_at:
            return False
        # Only this call probes; concurrent ones keep away from the
        # backend until it has answered.
        self.retry_at = now + self.retry_after
        return True

    def failed(self, error):
        """A call failed with ``error`` (a description): open, or stay
        open for another ``retry_after``."""
        opened = self.error is None
        self.error = error
        self.retry_at = self.clock() + self.retry_after
        if opened and self.on_open is not None:
            self.on_open(error)

    def succeeded(self):
        """A call was answered: close."""
        if self.error is not None:
            self.error = None
            self.retry_at = 0.0
            if self.on_close is not None:
                self.on_close()


class ResilientStore(Store):
    """A circuit breaker: ``primary`` while it answers, else ``fallback``.

    The first failure of the primary (any exception: a refused connection,
    a timeout, a Redis or memcache error) logs one warning, and for
    ``retry_after`` seconds every call goes straight to the fallback, so an
    outage costs one timeout, not one per request.  Then one call tries the
    primary again (the others keep using the fallback meanwhile); if it
    answers, one info line says it recovered.  The fallback may itself be a
    ResilientStore (Redis -> memcache -> local).  Should the fallback fail
    too, the call returns an empty answer (no counts, no table, no lease)
    and one error is logged: callers never see an exception.
    """
    name = 'resilient'

    def __init__(self, primary, fallback, logger, retry_after=30.0,
                 clock=time.time):
        self.primary = primary
        self.fallback = fallback
        self.logger = logger
        self.breaker = Breaker(retry_after, clock, on_open=self._opened,
                               on_close=self._closed)
        self._fallback_failing = False

    @property
    def retry_after(self):
        return self.breaker.retry_after

    def in_use(self):
        if self.breaker.error is None:
            return self.primary.name
        return self.fallback.in_use()

    def holds_pins(self):
        # a fallback knows none of the pins the primary holds
        return self.breaker.error is None and self.primary.holds_pins()

    def _opened(self, error):
        self.logger.warning(
            'Mass store %s unavailable (%s); using %s, retrying every %gs',
            self.primary.name, error, self.fallback.in_use(),
            self.breaker.retry_after)

    def _closed(self):
        self.logger.info('Mass store %s recovered', self.primary.name)

    def _call(self, method, args, empty):
        if self.breaker.allows():
            try:
                result = getattr(self.primary, method)(*args)
            except Exception as err:
                self.breaker.failed(_describe(err))
            else:
                self.breaker.succeeded()
                return result
        try:
            result = getattr(self.fallback, method)(*args)
        except Exception as err:
            if not self._fallback_failing:
                self._fallback_failing = True
                self.logger.error('Mass store %s failed too (%s); Mass runs '
                                  'without shared state',
                                  self.fallback.name, _describe(err))
            return empty
        self._fallback_failing = False
        return result

    def add_counts(self, tenant, bucket, counts, ttl):
        return self._call('add_counts', (tenant, bucket, counts, ttl), None)

    def read_counts(self, since_bucket):
        return self._call('read_counts', (since_bucket,), {})

    def get_table(self):
        return self._call('get_table', (), (0, {}))

    def put_table(self, table):
        """The new version, or 0 if no store could take the table."""
        return self._call('put_table', (table,), 0)

    def table_version(self):
        return self._call('table_version', (), 0)

    def acquire_lease(self, owner, ttl_ms):
        return self._call('acquire_lease', (owner, ttl_ms), False)

    def release_lease(self, owner):
        return self._call('release_lease', (owner,), None)

    def lease_holder(self):
        return self._call('lease_holder', (), None)

    def set_pin(self, tenant, pin):
        return self._call('set_pin', (tenant, pin), None)

    def delete_pin(self, tenant):
        return self._call('delete_pin', (tenant,), None)

    def get_pins(self):
        return self._call('get_pins', (), {})

    def health(self):
        """The health of the store in use; while the primary is out,
        ``ok`` is False and ``error`` says why (for each store passed over,
        outermost first)."""
        breaker = self.breaker
        if breaker.error is None:
            health = self.primary.health()
            if health['ok']:
                return dict(health, fallback=self.fallback.in_use())
            breaker.failed(health['error'])
        health = dict(self.fallback.health())
        reason = '%s: %s' % (self.primary.name, breaker.error)
        if health.get('error'):
            reason += '; ' + health['error']
        health.update(ok=False, error=reason, primary=self.primary.name,
                      retry_in=max(0.0, breaker.retry_at - breaker.clock()))
        return health


def store_from_conf(mass_conf, logger, memcache=None):
    """The store chain that ``[filter:mass]`` asks for.

    ``mass_conf``: a :class:`swift_mass.conf.MassConf`, whose ``store``
    holds the options ``store`` (redis, memcache or local; default redis),
    ``redis_url``, ``redis_timeout_ms`` (connect and reply timeout, default
    50) and ``store_retry_after`` (seconds a failed store is passed over,
    default 30).  ``memcache`` is Swift's MemcacheRing if there is one.
    """
    conf = mass_conf.store
    local = LocalStore()
    if conf.kind == 'local':
        return local
    if memcache is None:
        shared = local
        if conf.kind == 'memcache':
            logger.warning('Mass store = memcache, but there is no memcache '
                           'client; using worker-local state')
    else:
        shared = ResilientStore(MemcacheStore(memcache), local, logger,
                                conf.retry_after)
    if conf.kind == 'memcache':
        return shared
    # redis-py connects only on the first call, so a Redis that is down
    # does not stop the proxy starting.
    redis_store = RedisStore(conf.redis_url,
                             socket_timeout_ms=conf.redis_timeout_ms,
                             connect_timeout_ms=conf.redis_timeout_ms)
    return ResilientStore(redis_store, shared, logger, conf.retry_after)


def shared_store(conf_path, logger):
    """``(mass_conf, store)`` for a command outside the proxy: the
    ``[filter:mass]`` of the proxy config ``conf_path``, parsed as the
    filter parses it, and the shared store it names (the first of the
    chain: the fallbacks are a proxy worker's own).  ConfigError when the
    proxies share none (``store = local``)."""
    raw = readconf(conf_path, SECTION)
    conf = MassConf(raw)
    store = store_from_conf(conf, logger,
                            memcache=load_memcache(raw, logger))
    if not isinstance(store, ResilientStore):
        raise ConfigError('[%s] store = local: each proxy worker keeps its '
                          'own state; there is no shared store to read'
                          % SECTION)
    while isinstance(store.primary, ResilientStore):
        store = store.primary
    return conf, store.primary
