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
"""The shared store on Redis: one Redis, a Sentinel service's master or a
Redis Cluster (:mod:`swift_mass.redis_client`); its Lua scripts are the
files of ``lua/``."""

import hashlib
import json
import time
import uuid

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from swift_mass.breaker import describe
from swift_mass.control.stores.base import Store, by_bucket, encode, \
    quote, unquote
from swift_mass.lua import read_script
from swift_mass.redis_client import DEFAULT_KEY_PREFIX, \
    DEFAULT_REDIS_TIMEOUT_MS, DEFAULT_REDIS_URL, client_from_url, \
    key_prefix, redacted_url


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
                                ``RedisTable.CHANGES_KEPT``
    ``policy:entries:<token>``  a whole table on its way in (put_table)
    ``leader``                  the lease: owner, with a PX expiry
    ``pins``                    hash of tenant -> pin (JSON)
    ``forgotten``               hash of tenant -> the time it was
                                forgotten (its forget mark,
                                :mod:`~swift_mass.control.stores.base`)
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

    # Each script call keeps Redis a few milliseconds (measured:
    # docs/scale.md, "How"), well within a reply timeout
    # (redis_timeout_ms, 500 by default), and other clients' commands go
    # between two calls.
    #: tenants per script call of a flush, and of a read of counters
    COUNTS_CHUNK = 250
    READ_CHUNK = 500
    #: script calls per round trip (a pipeline): a flush's round trip
    #: carries at most 4,000 tenants
    CALLS_PER_TRIP = 16
    #: members of a bucket's index, entries of the table, per scan step
    SCAN_COUNT = 1000

    #: the scripts (lua/<name>.lua, where each says what it takes and
    #: returns), read once: a script's text is what names it to Redis
    SCRIPTS = {name: read_script(__package__, name) for name in (
        'acquire', 'release', 'add', 'members', 'read', 'changes',
        'entries', 'update', 'commit', 'replace')}

    def __init__(self, url=DEFAULT_REDIS_URL, prefix=DEFAULT_KEY_PREFIX,
                 socket_timeout_ms=DEFAULT_REDIS_TIMEOUT_MS,
                 connect_timeout_ms=DEFAULT_REDIS_TIMEOUT_MS):
        self.url = url
        self.prefix = key_prefix(url, prefix)
        self.client = client_from_url(
            url, self.prefix, socket_timeout=socket_timeout_ms / 1000.0,
            socket_connect_timeout=connect_timeout_ms / 1000.0,
            retry=Retry(NoBackoff(), 0), decode_responses=True)
        for name, script in self.SCRIPTS.items():
            setattr(self, '_%s_script' % name,
                    self.client.register_script(script))
        #: the policy table, kept through this store's client and scripts
        self.policy_table = RedisTable(self)

    @classmethod
    def script_shas(cls):
        """The SHA1 of each of the store's scripts: how EVALSHA names
        them (in MONITOR, for one)."""
        return {hashlib.sha1(script.encode()).hexdigest()
                for script in cls.SCRIPTS.values()}

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
        for bucket, tenants in by_bucket(items).items():
            names = list(tenants)
            keys = [buckets, self._key('cb', bucket)]
            base = self._key('c', bucket) + ':'
            for start in range(0, len(names), self.COUNTS_CHUNK):
                chunk = names[start:start + self.COUNTS_CHUNK]
                payload = json.dumps({quote(tenant): tenants[tenant]
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
                    counts.setdefault(unquote(quoted), {})[bucket] = dict(
                        zip(values, map(int, values)))
        return counts

    # -- the table: RedisTable's ---------------------------------------

    def table_changes(self, since):
        return self.policy_table.changes(since)

    def get_table(self):
        (_id, version), table = self.policy_table.whole()
        return version, table

    def put_table(self, table):
        return self.policy_table.replace(table)[1]

    def update_table(self, since, table, changed):
        return self.policy_table.update(since, table, changed)

    def table_version(self):
        return self.policy_table.version()

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

    def mark_forgotten(self, marks, ttl):
        if not marks:
            return
        key = self._key('forgotten')
        pipe = self.client.pipeline(transaction=False)
        pipe.hset(key, mapping={tenant: repr(float(at))
                                for tenant, at in marks.items()})
        pipe.expire(key, max(1, int(ttl)))
        pipe.execute()

    def forgotten(self):
        return {tenant: float(at) for tenant, at
                in self.client.hgetall(self._key('forgotten')).items()}

    def health(self):
        health = {'store': self.name, 'ok': True, 'error': None,
                  'url': redacted_url(self.url)}
        try:
            self.client.ping()
        except Exception as err:
            health.update(ok=False, error=describe(err))
        return health


class RedisTable(object):
    """The policy table of a :class:`RedisStore`: its entries
    (``policy:entries``), its state (``policy``: the lineage's id, the
    version, and the change log's floor) and its change log
    (``policy:changes``), read and written through the store's client,
    scripts and round trips (``CALLS_PER_TRIP``, ``SCAN_COUNT``).

    A worker asks what changed since its state (:meth:`changes`): a delta
    from the change log, or the whole table (:meth:`whole`) when the log
    no longer reaches back that far.  The leader writes the entries that
    changed (:meth:`update`); a whole table, as a new lineage
    (:meth:`replace`), only when the store lost the rest.
    """

    #: tenants the change log names at most: a worker further behind
    #: loads the whole table
    CHANGES_KEPT = 10000
    #: the most tenants a table update trims off the change log (a big
    #: update's excess goes over the next updates)
    TRIM_MOST = 5000
    #: changed entries per script call of a table update
    UPDATE_CHUNK = 500

    def __init__(self, store):
        self.store = store
        #: what every script of the table is given: KEYS policy,
        #: policy:entries, policy:changes
        self.keys = [store._key('policy'), store._key('policy', 'entries'),
                     store._key('policy', 'changes')]

    def changes(self, since):
        """:meth:`Store.table_changes
        <swift_mass.control.stores.base.Store.table_changes>`."""
        since = tuple(since or (None, 0))
        reply = self.store._changes_script(keys=self.keys, args=[
            since[0] or '', since[1], self.CHANGES_KEPT])
        state = (reply[0] or None, int(reply[1]))
        if len(reply) == 2:
            return None if state == since else (state, {}, True)
        if reply[2] == 'whole':
            state, table = self.whole()
            return state, table, True
        return state, _entries(reply[3:]), False

    def whole(self):
        """``(state, table)``: the entries, scanned in steps, then brought
        up to the latest version with what changed meanwhile."""
        store = self.store
        for _attempt in range(3):
            state = store.client.hmget(self.keys[0], 'id', 'version')
            state = (state[0], int(state[1] or 0))
            if state[0] is None:
                return (None, 0), {}
            table, cursor = {}, '0'
            while True:
                cursor, tenants, entries = store._entries_script(
                    keys=[self.keys[1]], args=[cursor, store.SCAN_COUNT])
                table.update(zip(json.loads(tenants), json.loads(entries)))
                if str(cursor) == '0':
                    break
            reply = store._changes_script(keys=self.keys, args=[
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

    def replace(self, table):
        """Put ``table`` whole, as a new lineage: its state."""
        store = self.store
        table_id = uuid.uuid4().hex
        new = store._key('policy', 'entries', table_id)
        items = [(tenant, encode(entry)) for tenant, entry in table.items()]
        pipe = store.client.pipeline(transaction=False)
        for start in range(0, len(items), self.UPDATE_CHUNK):
            pipe.hset(new, mapping=dict(items[start:start +
                                              self.UPDATE_CHUNK]))
            # gone by itself if this writer dies before it is in
            pipe.expire(new, 600)
            if len(pipe) >= 2 * store.CALLS_PER_TRIP:
                pipe.execute()
        pipe.execute()
        version = store._replace_script(keys=self.keys + [new],
                                        args=[table_id])
        return table_id, int(version)

    def update(self, since, table, changed):
        """:meth:`Store.update_table
        <swift_mass.control.stores.base.Store.update_table>`."""
        store = self.store
        since = tuple(since or (None, 0))
        pairs = []
        for tenant in changed:
            entry = table.get(tenant)
            pairs += [tenant, '' if entry is None else encode(entry)]
        calls = [(store._update_script, self.keys, [json.dumps(
            pairs[start:start + 2 * self.UPDATE_CHUNK])])
            for start in range(0, len(pairs), 2 * self.UPDATE_CHUNK)]
        calls.append((store._commit_script, self.keys, [
            since[0] or '', since[1], uuid.uuid4().hex, len(table),
            self.CHANGES_KEPT, self.TRIM_MOST]))
        reply = list(store._trips(calls))[-1]
        table_id, (version, exact, whole, fresh) = reply[0], map(
            int, reply[1:])
        if not whole and (exact or fresh):
            # the store lost entries (a restart, eviction, an old
            # snapshot): the whole table, once
            return self.replace(table)
        return (table_id, version) if exact and whole else None

    def version(self):
        """:meth:`Store.table_version
        <swift_mass.control.stores.base.Store.table_version>`."""
        return int(self.store.client.hget(self.keys[0], 'version') or 0)


def _entries(flat):
    """``{tenant: entry or None}`` of a flat reply ``[tenant, JSON or
    None, ...]``."""
    pairs = iter(flat)
    return {tenant: None if entry is None else json.loads(entry)
            for tenant, entry in zip(pairs, pairs)}
