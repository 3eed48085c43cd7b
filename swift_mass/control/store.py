"""The shared store: where Mass proxies meet.

Every proxy worker, on every proxy machine, keeps four kinds of state here:

* window counters: per tenant and time bucket, integer fields that only
  ever grow by addition (see :mod:`swift_mass.control.monitor`), so the
  deltas of
  any number of workers add up to the cluster's figures.  A bucket expires
  ``ttl`` seconds after it was written.  A worker hands over all of its
  counters of an interval in one call (:meth:`Store.add_counts_many`);
* the policy table: an entry ``{tenant: policy}`` per tenant, with a
  *state*, ``(id, version)``.  The leader writes only the entries that
  changed (:meth:`Store.update_table`), each write a new version; workers
  ask each interval for what changed since the state they hold
  (:meth:`Store.table_changes`, cheap when nothing did) and get either the
  entries changed since (a delta) or, when the store cannot tell (its
  change log no longer reaches that far back, or the state is another
  store's), the whole table.  The id names one lineage of versions: a
  store that lost its table (a restarted Redis or memcached, a worker-local
  fallback) starts another one, from version 1, so versions of different
  ids are never compared;
* pins: an operator's hand-set policy per tenant, which the controller
  never overrides;
* the leader lease: the one controller that decides at a time.

Redis (:class:`RedisStore`) is the store of choice, as one Redis, the
master of a Redis Sentinel service or a Redis Cluster (``redis_url``,
:mod:`swift_mass.redis_client`).  On a Cluster all of Mass's keys, the
cache's with the store's, are in one hash slot, so all of Mass's state is
on one master of the Cluster (and its replicas): every script and
transaction of Mass touches several keys, which a Cluster runs only when
they are in one slot, and the never-stale scripts read the epoch key with
the per-object keys, so no split of the keys keeps each script in one
slot.  The keys and the rule are in :class:`RedisStore`.

Swift's own memcache (:class:`MemcacheStore`) and worker-local dicts
(:class:`LocalStore`) are the fallbacks.  These three let their errors
propagate; :class:`ResilientStore` chains them, each behind a circuit
breaker (:class:`Breaker`; Redis -> memcache -> local, built by
:func:`store_from_conf`), and never raises, so no request fails because a
store is down.  What was written to a fallback during an outage is not
copied back: once the primary answers again, its (older) table, pins and
counters are what every worker sees, and the controller brings the table up
to date from there; pins set during the outage must be set again.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
import urllib.parse
import uuid

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from swift.common.memcached import load_memcache
from swift.common.utils import readconf

from swift_mass.conf import DEFAULT_REDIS_TIMEOUT_MS, DEFAULT_REDIS_URL, \
    SECTION, ConfigError, MassConf, redacted_url
from swift_mass.redis_client import client_from_url, key_prefix


# what urllib.parse.quote(name, safe='') leaves as it is
_UNRESERVED = re.compile(r'[A-Za-z0-9_.~-]*\Z').match


def _quote(name):
    # Tenant names are arbitrary (':' and '/' are our key separators, and
    # WSGI strings carry non-ASCII), so they go into keys quoted.
    if _UNRESERVED(name):
        return name  # as quote() would, without its cost per tenant
    return urllib.parse.quote(name, safe='')


def _unquote(quoted):
    return urllib.parse.unquote(quoted) if '%' in quoted else quoted


# an entry's JSON (keys sorted: equal entries, equal text); one encoder,
# not one per call as json.dumps(sort_keys=True) makes
_encode = json.JSONEncoder(sort_keys=True).encode


def _describe(err):
    return '%s: %s' % (type(err).__name__, err)


class Store(object):
    """What every store offers (see the module docstring for the model).

    Counters are ``{tenant: {bucket: {field: value}}}``, buckets are ints
    (epoch seconds of the bucket's start), fields are names such as
    ``ops.GET`` (no whitespace).  Tables, policies and pins are JSON-able
    dicts; what is read back is a fresh copy.  A table's state is a pair
    ``(id, version)``; ``(None, 0)`` is that of a store that holds no
    table.  Every method does a bounded number of round trips to its
    backend: a few, or one per few thousand tenants for the methods that
    take or return many.
    """
    name = 'base'

    def add_counts(self, tenant: str, bucket: int, counts: dict[str, int],
                   ttl: int) -> None:
        """Add ``counts`` (field -> delta) to the tenant's counters of
        ``bucket``; the bucket expires ``ttl`` seconds later."""
        self.add_counts_many([(tenant, bucket, counts)], ttl)

    def add_counts_many(self, items, ttl: int) -> None:
        """:meth:`add_counts` of every ``(tenant, bucket, counts)`` of
        ``items`` (a flush): in a few round trips, not one per tenant.
        When the backend fails part way, the exception raised has
        ``unwritten``: the items that may not have been added (those of
        the round trip that failed included: they may then count twice,
        where the alternative is to lose them)."""
        raise NotImplementedError

    def read_counts(self, since_bucket: int, fields=None
                    ) -> dict[str, dict[int, dict[str, int]]]:
        """Every tenant's live buckets from ``since_bucket`` on; with
        ``fields`` (a tuple of name prefixes) only the fields named so,
        and only the tenants with some."""
        raise NotImplementedError

    def get_table(self) -> tuple[int, dict[str, dict]]:
        """``(version, table)``; ``(0, {})`` if no table was ever put."""
        raise NotImplementedError

    def put_table(self, table: dict[str, dict]) -> int:
        """Replace the table, whole, and return its new version (a new
        lineage: every worker loads the whole table again)."""
        raise NotImplementedError

    def table_version(self) -> int:
        """Only the version (0 if none)."""
        raise NotImplementedError

    def table_changes(self, since):
        """What changed since the state ``since`` (``(id, version)``, as
        this method or :meth:`update_table` returned it, or None): None
        when nothing did, else ``(state, entries, whole)``: ``whole``
        True, ``entries`` is the whole table; False, only the tenants
        whose entry changed since, each with its entry or None (it has
        none any more)."""
        raise NotImplementedError

    def update_table(self, since, table: dict[str, dict],
                     changed) -> tuple | None:
        """The leader's write: ``table`` is the table as it wants it,
        ``changed`` the tenants whose entries differ from those of the
        state ``since`` it started from; only theirs are written (the
        whole table only when the store turns out not to hold the rest:
        it lost it).  The new state when the store now holds exactly
        ``table``; None when it does not (another writer's changes came
        in between: :meth:`table_changes` from ``since`` brings them)."""
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


def _kept(fields, wanted):
    """The counters of ``fields`` whose names start with one of
    ``wanted`` (None: all of them)."""
    if wanted is None:
        return dict(fields)
    return {field: value for field, value in fields.items()
            if field.startswith(wanted)}


def _by_bucket(items):
    """``{bucket: {tenant: counts}}`` of a flush's items, empty counts
    left out (a tenant twice in a bucket: its counts added up)."""
    buckets = {}
    for tenant, bucket, counts in items:
        if not counts:
            continue
        tenants = buckets.setdefault(int(bucket), {})
        if tenant in tenants:
            total = dict(tenants[tenant])
            for field, delta in counts.items():
                total[field] = total.get(field, 0) + delta
            counts = total
        tenants[tenant] = counts
    return buckets


class RedisStore(Store):
    """The shared store on Redis: atomic counters, table and lease.

    Keys, under ``prefix``: ``mass:`` by default, and on a Redis Cluster
    ``{mass}:`` (:func:`swift_mass.redis_client.key_prefix`), the hash tag
    that puts every key of Mass in the slot of ``{mass}``: these, and the
    cache's under ``<prefix>cache:`` (:mod:`swift_mass.generations`,
    :class:`swift_mass.proxy.methods.bodies.RedisBodies`).  One Redis and
    a Sentinel's master keep the untagged names, so an upgrade finds the
    pins and the table where they were:

    ==========================  ===========================================
    ``c:<bucket>:<tenant>``     hash of a tenant's counters in a bucket
    ``cb:<bucket>``             set of the tenants (quoted) with counters
    ``buckets``                 sorted set of buckets, scored by expiry
    ``policy``                  hash of the table's state: ``id`` (its
                                lineage), ``version``, and ``floor``: the
                                change log names every change made after
                                that version
    ``policy:entries``          hash of tenant -> policy entry (JSON)
    ``policy:changes``          the change log: sorted set of tenants,
                                each scored by the version of its last
                                change; the oldest go beyond
                                ``CHANGES_KEPT``
    ``policy:entries:<token>``  a whole table on its way in (put_table)
    ``leader``                  the lease: owner, with a PX expiry
    ``pins``                    hash of tenant -> pin (JSON)
    ==========================  ===========================================

    (``table`` and ``table:version``, the whole-table document of earlier
    releases, are neither read nor written.)  Scripts also make keys from
    their arguments (the counters' from their prefix), which under the tag
    are in the slot of the keys they name.

    The bucket and tenant indexes let :meth:`read_counts` find counters
    without KEYS or SCAN, which walk the whole keyspace.  A flush and a
    read of counters are Lua scripts, each over at most ``COUNTS_CHUNK``
    or ``READ_CHUNK`` tenants (a few milliseconds of Redis, well within a
    worker's reply timeout), ``CALLS_PER_TRIP`` of them per round trip: a
    worker's CPU per tenant is a share of one JSON encoding, not a dozen
    commands, and Redis parses one command per chunk.

    The client is created lazily (no connection until the first call; a
    Cluster's client is itself built then) with short timeouts and no
    retries: a slow Redis must cost a request at most one timeout, and the
    breaker, not the client, decides when to try again.
    """
    name = 'redis'

    # Each script call keeps Redis a few milliseconds (measured: 500
    # tenants' counters read in 5 to 35 ms on a loaded 2-core machine),
    # well within a reply timeout (redis_timeout_ms, 50 by default), and
    # other clients' commands go between two calls.
    #: tenants per script call of a flush, and of a read of counters
    COUNTS_CHUNK = 250
    READ_CHUNK = 500
    #: script calls per round trip (a pipeline): a flush's round trip
    #: carries at most 4,000 tenants
    CALLS_PER_TRIP = 16
    #: members of a bucket's index, entries of the table, per scan step
    SCAN_COUNT = 1000
    #: tenants the change log names at most: a worker further behind
    #: loads the whole table
    CHANGES_KEPT = 10000
    #: the most tenants a table update trims off the change log (a big
    #: update's excess goes over the next updates)
    TRIM_MOST = 5000
    #: changed entries per script call of a table update
    UPDATE_CHUNK = 500

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
    # A flush's tenants of one bucket: KEYS[1] buckets, KEYS[2] the
    # bucket's tenant index; ARGV[1] the prefix of its counter keys,
    # ARGV[2] ttl, ARGV[3] the bucket, ARGV[4] its expiry, ARGV[5] now,
    # ARGV[6] {quoted tenant: {field: delta}} (JSON).
    #
    # A script runs whole or not at all, but a flush is several: between
    # two, nothing is atomic, and a failure leaves the earlier ones
    # written.  The indexes still never name counters that were not
    # written: each script adds tenants to the index after their counters,
    # so whatever prefix of a flush Redis took (a script that stopped
    # part way included), an index entry only follows counters it names.
    # Counters without an index entry (a failure between the two) are
    # hidden, never wrong; the worker hands the failed rest to the
    # fallback store.
    #
    # The bucket index is scored by expiry, so it is trimmed without
    # knowing how long a bucket is; GT keeps the latest expiry.  Scores
    # come from the proxies' clocks: only a skew larger than ttl would
    # trim a live bucket.
    _ADD = """
        local base, ttl = ARGV[1], ARGV[2]
        local tenants = {}
        for tenant, counts in pairs(cjson.decode(ARGV[6])) do
            local key = base .. tenant
            for field, delta in pairs(counts) do
                redis.call('HINCRBY', key, field, string.format('%d', delta))
            end
            redis.call('EXPIRE', key, ttl)
            tenants[#tenants + 1] = tenant
        end
        for i = 1, #tenants, 500 do
            redis.call('SADD', KEYS[2],
                       unpack(tenants, i, math.min(i + 499, #tenants)))
        end
        redis.call('EXPIRE', KEYS[2], ttl)
        redis.call('ZADD', KEYS[1], 'GT', ARGV[4], ARGV[3])
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[5])
        redis.call('EXPIRE', KEYS[1], ttl)
        return #tenants
    """
    # A step of a scan of a bucket's tenant index (KEYS[1]; ARGV[1] the
    # cursor, ARGV[2] COUNT): the next cursor, and the quoted tenants
    # found, space-separated (quoted names have no space): one string to
    # split, not one reply per tenant.
    _MEMBERS = """
        local found = redis.call('SSCAN', KEYS[1], ARGV[1], 'COUNT', ARGV[2])
        return {found[1], table.concat(found[2], ' ')}
    """
    # Counters of some tenants in a bucket: KEYS[1] the bucket's tenant
    # index, which it does not read (a Cluster sends a script to the node
    # holding the slot of its keys, and one that names none to any node);
    # ARGV[1] the prefix of their keys, ARGV[2] the prefixes of the fields
    # wanted (space-separated; empty: all), ARGV[3] quoted tenants,
    # space-separated.  A line per tenant, in their order, of "field value
    # field value...", empty when it has none (expired since the index was
    # read, or none wanted).
    _READ = """
        local base = ARGV[1]
        local wanted = {}
        for prefix in string.gmatch(ARGV[2], '%S+') do
            wanted[#wanted + 1] = prefix
        end
        local lines = {}
        for tenant in string.gmatch(ARGV[3], '%S+') do
            local fields = redis.call('HGETALL', base .. tenant)
            local kept = {}
            for j = 1, #fields, 2 do
                local keep = #wanted == 0
                for k = 1, #wanted do
                    if string.sub(fields[j], 1, #wanted[k]) == wanted[k] then
                        keep = true
                        break
                    end
                end
                if keep then
                    kept[#kept + 1] = fields[j]
                    kept[#kept + 1] = fields[j + 1]
                end
            end
            lines[#lines + 1] = table.concat(kept, ' ')
        end
        return table.concat(lines, '\\n')
    """
    # What changed since a state: KEYS policy, policy:entries,
    # policy:changes; ARGV[1] the state's id ('' for none), ARGV[2] its
    # version, ARGV[3] the most entries a delta may hold.  {id, version}
    # when nothing changed (or there is no table: id ''); {id, version,
    # 'delta', tenant, entry or nil, ...}; {id, version, 'whole'} when the
    # change log cannot tell (another lineage, a version it no longer
    # reaches back to, or one from the future: the store went back).
    _CHANGES = """
        local state = redis.call('HMGET', KEYS[1], 'id', 'version', 'floor')
        local id = state[1]
        if not id then
            return {'', '0'}
        end
        local version = tonumber(state[2] or '0')
        local since = tonumber(ARGV[2])
        if id == ARGV[1] and since == version then
            return {id, tostring(version)}
        end
        if id == ARGV[1] and since >= tonumber(state[3] or '0')
                and since < version then
            local limit = tonumber(ARGV[3])
            local tenants = redis.call('ZRANGEBYSCORE', KEYS[3],
                                       '(' .. ARGV[2], '+inf', 'LIMIT', 0,
                                       limit + 1)
            if #tenants <= limit then
                local reply = {id, tostring(version), 'delta'}
                for i = 1, #tenants, 500 do
                    local last = math.min(i + 499, #tenants)
                    local entries = redis.call('HMGET', KEYS[2],
                                               unpack(tenants, i, last))
                    for j = i, last do
                        reply[#reply + 1] = tenants[j]
                        reply[#reply + 1] = entries[j - i + 1]
                    end
                end
                return reply
            end
        end
        return {id, tostring(version), 'whole'}
    """
    # A step of a scan of the entries (KEYS[1]; ARGV[1] cursor, ARGV[2]
    # COUNT): the next cursor, the tenants (a JSON list) and their
    # entries (a JSON list): two strings to parse, not two per tenant.
    _ENTRIES = """
        local found = redis.call('HSCAN', KEYS[1], ARGV[1], 'COUNT', ARGV[2])
        local tenants, entries = {}, {}
        for i = 1, #found[2], 2 do
            tenants[#tenants + 1] = found[2][i]
            entries[#entries + 1] = found[2][i + 1]
        end
        if #tenants == 0 then
            return {found[1], '[]', '[]'}
        end
        return {found[1], cjson.encode(tenants),
                '[' .. table.concat(entries, ',') .. ']'}
    """
    # Some of a table update's changed entries (KEYS policy,
    # policy:entries, policy:changes; ARGV[1] a JSON list [tenant, entry
    # (JSON; '' none), ...]): written, and logged under the version the
    # update will take.  The version moves only once every one is in
    # (_COMMIT), so a worker that sees the new version finds every change
    # of it in the log.
    _UPDATE = """
        local next = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
            + 1
        local changes = cjson.decode(ARGV[1])
        for i = 1, #changes, 2 do
            if changes[i + 1] == '' then
                redis.call('HDEL', KEYS[2], changes[i])
            else
                redis.call('HSET', KEYS[2], changes[i], changes[i + 1])
            end
            redis.call('ZADD', KEYS[3], next, changes[i])
        end
        return next
    """
    # The end of a table update: the new version (a new lineage if the
    # store had lost the table's state), the change log trimmed (its
    # oldest, at most ARGV[6] of them).  ARGV[1] the id of the state the
    # writer started from, ARGV[2] its version, ARGV[3] an id for a new
    # lineage, ARGV[4] how many entries the writer's table has, ARGV[5]
    # CHANGES_KEPT.  {id, version, exact,
    # whole, fresh}: exact, no other write came in since the writer's
    # state; whole, the store has as many entries as the writer's table
    # (if not, and the writer's state was the store's or the lineage is
    # new, the store lost some: the writer puts the whole table); fresh,
    # the lineage is new.
    _COMMIT = """
        local id = redis.call('HGET', KEYS[1], 'id')
        local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
        local exact = version == tonumber(ARGV[2]) + 1 and
            (id or '') == ARGV[1]
        local fresh = not id
        if fresh then
            id = ARGV[3]
            redis.call('UNLINK', KEYS[3])
            redis.call('HSET', KEYS[1], 'id', id, 'floor', version)
        else
            local extra = math.min(
                redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[5]),
                tonumber(ARGV[6]))
            if extra > 0 then
                local cut = redis.call('ZRANGE', KEYS[3], extra - 1,
                                       extra - 1, 'WITHSCORES')
                redis.call('HSET', KEYS[1], 'floor', cut[2])
                redis.call('ZREMRANGEBYRANK', KEYS[3], 0, extra - 1)
            end
        end
        local whole = redis.call('HLEN', KEYS[2]) == tonumber(ARGV[4])
        return {id, version, exact and 1 or 0, whole and 1 or 0,
                fresh and 1 or 0}
    """
    # A whole table in: KEYS policy, policy:entries, policy:changes, the
    # new entries (written meanwhile; absent for an empty table); ARGV[1]
    # the new lineage's id.  Its version follows the last one.
    _REPLACE = """
        redis.call('UNLINK', KEYS[2])
        if redis.call('EXISTS', KEYS[4]) == 1 then
            redis.call('RENAME', KEYS[4], KEYS[2])
            redis.call('PERSIST', KEYS[2])
        end
        redis.call('UNLINK', KEYS[3])
        local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
        redis.call('HSET', KEYS[1], 'id', ARGV[1], 'floor', version)
        return version
    """
    SCRIPTS = ('_ACQUIRE', '_RELEASE', '_ADD', '_MEMBERS', '_READ',
               '_CHANGES', '_ENTRIES', '_UPDATE', '_COMMIT', '_REPLACE')

    def __init__(self, url=DEFAULT_REDIS_URL, prefix='mass:',
                 socket_timeout_ms=DEFAULT_REDIS_TIMEOUT_MS,
                 connect_timeout_ms=DEFAULT_REDIS_TIMEOUT_MS):
        self.url = url
        self.prefix = key_prefix(url, prefix)
        self.client = client_from_url(
            url, self.prefix, socket_timeout=socket_timeout_ms / 1000.0,
            socket_connect_timeout=connect_timeout_ms / 1000.0,
            retry=Retry(NoBackoff(), 0), decode_responses=True)
        for name in self.SCRIPTS:
            setattr(self, name.lower() + '_script',
                    self.client.register_script(getattr(self, name)))
        self._policy_keys = [self._key('policy'),
                             self._key('policy', 'entries'),
                             self._key('policy', 'changes')]

    @classmethod
    def script_shas(cls):
        """The SHA1 of each of the store's scripts: how EVALSHA names
        them (in MONITOR, for one)."""
        return {hashlib.sha1(getattr(cls, name).encode()).hexdigest()
                for name in cls.SCRIPTS}

    def _key(self, *parts):
        return self.prefix + ':'.join(str(part) for part in parts)

    def _run(self, calls):
        """The results of script calls ``(script, keys, args)``, made in
        one round trip (a pipeline, not a transaction).  A script Redis
        does not know (it restarted, or its scripts were flushed) is
        loaded and its calls sent again, once."""
        def send(indexes):
            pipe = self.client.pipeline(transaction=False)
            for i in indexes:
                script, keys, args = calls[i]
                # not pipe.evalsha, which a Cluster's pipeline refuses
                # (a script that names no key goes to any node there);
                # every call here names its keys
                pipe.execute_command('EVALSHA', script.sha, len(keys),
                                     *keys, *args)
            return pipe.execute(raise_on_error=False)
        results = send(range(len(calls)))
        unknown = [i for i, result in enumerate(results)
                   if isinstance(result, redis.exceptions.NoScriptError)]
        if unknown:
            for script in {calls[i][0] for i in unknown}:
                self.client.script_load(script.script)
            for i, result in zip(unknown, send(unknown)):
                results[i] = result
        for result in results:
            if isinstance(result, Exception):
                raise result
        return results

    def _trips(self, calls):
        """``calls`` in round trips of ``CALLS_PER_TRIP``: the results of
        each, in order, as they come."""
        for start in range(0, len(calls), self.CALLS_PER_TRIP):
            group = calls[start:start + self.CALLS_PER_TRIP]
            for result in self._run(group):
                yield result

    # -- counters ------------------------------------------------------

    def add_counts_many(self, items, ttl):
        ttl = max(1, int(ttl))
        now = time.time()
        buckets = self._key('buckets')
        calls, chunks = [], []
        for bucket, tenants in _by_bucket(items).items():
            names = list(tenants)
            keys = [buckets, self._key('cb', bucket)]
            base = self._key('c', bucket) + ':'
            for start in range(0, len(names), self.COUNTS_CHUNK):
                chunk = names[start:start + self.COUNTS_CHUNK]
                payload = json.dumps({_quote(tenant): tenants[tenant]
                                      for tenant in chunk})
                calls.append((self._add_script, keys, [
                    base, ttl, bucket, repr(now + ttl), repr(now), payload]))
                chunks.append((bucket, chunk, tenants))
        done = 0
        try:
            while done < len(calls):
                self._run(calls[done:done + self.CALLS_PER_TRIP])
                done += self.CALLS_PER_TRIP
        except Exception as err:
            err.unwritten = [(tenant, bucket, tenants[tenant])
                             for bucket, chunk, tenants in chunks[done:]
                             for tenant in chunk]
            raise

    def _members(self, keys):
        """The members of each set of ``keys``, scanned in steps of
        ``SCAN_COUNT``, every set's step in one round trip."""
        found = [set() for _ in keys]
        cursors = dict.fromkeys(range(len(keys)), '0')
        while cursors:
            order = list(cursors)
            results = self._trips([(self._members_script, [keys[i]],
                                    [cursors[i], self.SCAN_COUNT])
                                   for i in order])
            for i, (cursor, members) in zip(order, results):
                if members:
                    found[i].update(members.split(' '))
                if str(cursor) == '0':
                    del cursors[i]
                else:
                    cursors[i] = cursor
        return found

    def read_counts(self, since_bucket, fields=None):
        live = self.client.zrangebyscore(
            self._key('buckets'), '(%r' % time.time(), '+inf')
        buckets = sorted(b for b in map(int, live) if b >= since_bucket)
        if not buckets:
            return {}
        members = self._members([self._key('cb', b) for b in buckets])
        wanted = ' '.join(fields or ())
        calls, chunks = [], []
        for bucket, tenants in zip(buckets, members):
            base = self._key('c', bucket) + ':'
            index = [self._key('cb', bucket)]  # routes the call
            tenants = list(tenants)
            for start in range(0, len(tenants), self.READ_CHUNK):
                chunk = tenants[start:start + self.READ_CHUNK]
                calls.append((self._read_script, index,
                              [base, wanted, ' '.join(chunk)]))
                chunks.append((bucket, chunk))
        counts = {}
        for (bucket, chunk), text in zip(chunks, self._trips(calls)):
            for quoted, line in zip(chunk, text.split('\n')):
                if line:  # else expired since the index was read
                    values = iter(line.split(' '))
                    counts.setdefault(_unquote(quoted), {})[bucket] = dict(
                        zip(values, map(int, values)))
        return counts

    # -- the table -----------------------------------------------------

    def table_changes(self, since):
        since = tuple(since or (None, 0))
        reply = self._changes_script(keys=self._policy_keys, args=[
            since[0] or '', since[1], self.CHANGES_KEPT])
        state = (reply[0] or None, int(reply[1]))
        if len(reply) == 2:
            return None if state == since else (state, {}, True)
        if reply[2] == 'whole':
            state, table = self._whole()
            return state, table, True
        return state, _entries(reply[3:]), False

    def _whole(self):
        """``(state, table)``: the entries, scanned in steps, then brought
        up to the latest version with what changed meanwhile."""
        for _attempt in range(3):
            state = self.client.hmget(self._policy_keys[0], 'id', 'version')
            state = (state[0], int(state[1] or 0))
            if state[0] is None:
                return (None, 0), {}
            table, cursor = {}, '0'
            while True:
                cursor, tenants, entries = self._entries_script(
                    keys=[self._policy_keys[1]],
                    args=[cursor, self.SCAN_COUNT])
                table.update(zip(json.loads(tenants), json.loads(entries)))
                if str(cursor) == '0':
                    break
            reply = self._changes_script(keys=self._policy_keys, args=[
                state[0], state[1], self.CHANGES_KEPT])
            if len(reply) == 2:
                return state, table
            if reply[2] == 'delta':
                for tenant, entry in _entries(reply[3:]).items():
                    if entry is None:
                        table.pop(tenant, None)
                    else:
                        table[tenant] = entry
                return (reply[0], int(reply[1])), table
            # replaced meanwhile: again
        return state, table

    def get_table(self):
        (_id, version), table = self._whole()
        return version, table

    def put_table(self, table):
        return self._replace(table)[1]

    def _replace(self, table):
        table_id = uuid.uuid4().hex
        new = self._key('policy', 'entries', table_id)
        items = [(tenant, _encode(entry)) for tenant, entry in table.items()]
        pipe = self.client.pipeline(transaction=False)
        for start in range(0, len(items), self.UPDATE_CHUNK):
            pipe.hset(new, mapping=dict(items[start:start +
                                              self.UPDATE_CHUNK]))
            # gone by itself if this writer dies before it is in
            pipe.expire(new, 600)
            if len(pipe) >= 2 * self.CALLS_PER_TRIP:
                pipe.execute()
        pipe.execute()
        version = self._replace_script(keys=self._policy_keys + [new],
                                       args=[table_id])
        return table_id, int(version)

    def update_table(self, since, table, changed):
        since = tuple(since or (None, 0))
        pairs = []
        for tenant in changed:
            entry = table.get(tenant)
            pairs += [tenant, '' if entry is None else _encode(entry)]
        calls = [(self._update_script, self._policy_keys, [json.dumps(
            pairs[start:start + 2 * self.UPDATE_CHUNK])])
            for start in range(0, len(pairs), 2 * self.UPDATE_CHUNK)]
        calls.append((self._commit_script, self._policy_keys, [
            since[0] or '', since[1], uuid.uuid4().hex, len(table),
            self.CHANGES_KEPT, self.TRIM_MOST]))
        reply = list(self._trips(calls))[-1]
        table_id, (version, exact, whole, fresh) = reply[0], map(
            int, reply[1:])
        if not whole and (exact or fresh):
            # the store lost entries (a restart, eviction, an old
            # snapshot): the whole table, once
            return self._replace(table)
        return (table_id, version) if exact and whole else None

    def table_version(self):
        return int(self.client.hget(self._policy_keys[0], 'version') or 0)

    # -- lease and pins ------------------------------------------------

    def acquire_lease(self, owner, ttl_ms):
        return bool(self._acquire_script(
            keys=[self._key('leader')], args=[owner, max(1, int(ttl_ms))]))

    def release_lease(self, owner):
        self._release_script(keys=[self._key('leader')], args=[owner])

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


def _entries(flat):
    """``{tenant: entry or None}`` of a flat reply ``[tenant, JSON or
    None, ...]``."""
    pairs = iter(flat)
    return {tenant: None if entry is None else json.loads(entry)
            for tenant, entry in zip(pairs, pairs)}


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
    * the table is one JSON value holding its version, written whole at
      every update, and every change is a whole table to the workers
      (:meth:`table_changes` never answers a delta): memcache has no
      structure to keep a change log in cheaply, and a fallback need not
      scale as Redis does (an item holds 1 MiB by default: some thousands
      of tenants).  A write takes a new version with an atomic ``incr``
      but writes the table separately, so two concurrent writes (not
      expected: one leader writes) can leave the version key ahead of the
      table until the next write.  The state's id is the store's own,
      ``memcache``: versions are compared for equality, so a memcached
      that restarted and reached a worker's version again before the
      worker asked is not noticed (as with a version alone);
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

    def add_counts_many(self, items, ttl):
        ttl = self._seconds(ttl)
        buckets = _by_bucket(items)
        done = []
        try:
            for bucket, tenants in buckets.items():
                self._add_bucket(bucket, tenants, ttl)
                done.append(bucket)
        except Exception as err:
            err.unwritten = [(tenant, bucket, counts)
                             for bucket, tenants in buckets.items()
                             if bucket not in done
                             for tenant, counts in tenants.items()]
            raise

    def _add_bucket(self, bucket, tenants, ttl):
        for tenant, counts in tenants.items():
            for field, delta in counts.items():
                self.memcache.incr(self._counter_key(bucket, tenant, field),
                                   int(delta), time=ttl)
        index_key = self._key('cb', bucket)
        index = self._get(index_key) or {'expires': 0, 'tenants': {}}
        grown = False
        for tenant, counts in tenants.items():
            known = set(index['tenants'].get(tenant, ()))
            if not known.issuperset(counts):
                index['tenants'][tenant] = sorted(known.union(counts))
                grown = True
        if grown:
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

    def read_counts(self, since_bucket, fields=None):
        now = time.time()
        counts = {}
        for bucket, expires in (self._get(self._key('buckets')) or {}).items():
            bucket = int(bucket)
            if bucket < since_bucket or expires <= now:
                continue
            index = self._get(self._key('cb', bucket)) or {'tenants': {}}
            for tenant, names in index['tenants'].items():
                values = {}
                for field in names:
                    if fields and not field.startswith(fields):
                        continue
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

    def table_changes(self, since):
        version = self.table_version()
        state = (self.name, version) if version else (None, 0)
        if tuple(since or (None, 0)) == state:
            return None
        version, table = self.get_table()
        return ((self.name, version) if version else (None, 0)), table, True

    def update_table(self, since, table, changed):
        return self.name, self.put_table(table)

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
    ``ttl`` after their last write, as in Redis.  The table keeps a change
    log as Redis does (``CHANGES_KEPT`` tenants), so it answers deltas.
    """
    name = 'local'
    CHANGES_KEPT = 10000

    def __init__(self, clock=time.time):
        self.clock = clock
        self._buckets = {}  # {bucket: {tenant: [fields, expires]}}
        self._entries = {}  # {tenant: JSON}: readers get a copy
        self._state = (None, 0)  # (id, version)
        # {tenant: version of its last change}, oldest first
        self._changes = {}
        self._floor = 0  # the log names every change after this version
        self._lease = None  # (owner, expires)
        self._pins = {}  # {tenant: JSON}

    def _expire(self, now):
        for bucket, tenants in list(self._buckets.items()):
            for tenant, (_fields, expires) in list(tenants.items()):
                if expires <= now:
                    del tenants[tenant]
            if not tenants:
                del self._buckets[bucket]

    def add_counts_many(self, items, ttl):
        for tenant, bucket, counts in items:
            if counts:
                self._add(tenant, int(bucket), counts, ttl)

    def _add(self, tenant, bucket, counts, ttl):
        now = self.clock()
        if bucket not in self._buckets:
            # Once per new bucket, so memory stays bounded by the live ones.
            self._expire(now)
        tenants = self._buckets.setdefault(bucket, {})
        entry = tenants.get(tenant)
        fields = entry[0] if entry and entry[1] > now else {}
        for field, delta in counts.items():
            fields[field] = fields.get(field, 0) + int(delta)
        tenants[tenant] = [fields, now + ttl]

    def read_counts(self, since_bucket, fields=None):
        now = self.clock()
        counts = {}
        for bucket, tenants in self._buckets.items():
            if bucket < since_bucket:
                continue
            for tenant, (values, expires) in tenants.items():
                if expires > now:
                    values = _kept(values, fields)
                    if values:
                        counts.setdefault(tenant, {})[bucket] = values
        return counts

    def get_table(self):
        return self._state[1], {tenant: json.loads(entry) for tenant, entry
                                in self._entries.items()}

    def put_table(self, table):
        self._entries = {tenant: _encode(entry)
                         for tenant, entry in table.items()}
        version = self._state[1] + 1
        # a new lineage: every worker loads it whole
        self._state = (uuid.uuid4().hex, version)
        self._changes = {}
        self._floor = version
        return version

    def table_version(self):
        return self._state[1]

    def table_changes(self, since):
        since = tuple(since or (None, 0))
        table_id, version = self._state
        if since == self._state:
            return None
        if since[0] == table_id and self._floor <= since[1] < version:
            changed = {}
            for tenant in reversed(self._changes):
                if self._changes[tenant] <= since[1]:
                    break
                entry = self._entries.get(tenant)
                changed[tenant] = None if entry is None else json.loads(entry)
            return self._state, changed, False
        return self._state, self.get_table()[1], True

    def update_table(self, since, table, changed):
        exact = tuple(since or (None, 0)) == self._state
        table_id, version = self._state
        version += 1
        fresh = table_id is None
        if fresh:
            table_id, self._changes, self._floor = \
                uuid.uuid4().hex, {}, version
        for tenant in changed:
            entry = table.get(tenant)
            if entry is None:
                self._entries.pop(tenant, None)
            else:
                self._entries[tenant] = _encode(entry)
            self._changes.pop(tenant, None)
            self._changes[tenant] = version
        while len(self._changes) > self.CHANGES_KEPT:
            oldest = next(iter(self._changes))
            self._floor = max(self._floor, self._changes.pop(oldest))
        self._state = (table_id, version)
        if len(self._entries) != len(table):
            if exact or fresh:
                # the entries it did not change are not all here
                self.put_table(table)
                return self._state
            return None
        return self._state if exact else None

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

    def _call(self, method, args, empty, rest=None):
        """``method(*args)`` of the primary if the breaker allows, else
        (or when it fails) of the fallback; ``empty`` if both fail.
        ``rest(error, args)``: the arguments the fallback gets when the
        primary failed with ``error`` (by default the same)."""
        if self.breaker.allows():
            try:
                result = getattr(self.primary, method)(*args)
            except Exception as err:
                self.breaker.failed(_describe(err))
                if rest is not None:
                    args = rest(err, args)
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

    def add_counts_many(self, items, ttl):
        # what a primary that failed part way may not have taken goes to
        # the fallback; what it took stays there
        return self._call(
            'add_counts_many', (list(items), ttl), None,
            rest=lambda err, args: (getattr(err, 'unwritten', args[0]),
                                    args[1]))

    def read_counts(self, since_bucket, fields=None):
        return self._call('read_counts', (since_bucket, fields), {})

    def get_table(self):
        return self._call('get_table', (), (0, {}))

    def put_table(self, table):
        """The new version, or 0 if no store could take the table."""
        return self._call('put_table', (table,), 0)

    def table_version(self):
        return self._call('table_version', (), 0)

    def table_changes(self, since):
        """None (no change) if no store answers: a worker keeps the
        table it has."""
        return self._call('table_changes', (since,), None)

    def update_table(self, since, table, changed):
        return self._call('update_table', (since, table, changed), None)

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
    # redis-py connects only on the first call (a Cluster's client is
    # built then), so a Redis that is down does not stop the proxy
    # starting.
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
