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
"""The shared store on Swift's memcache: a fallback for Redis."""

import math
import time

from swift_mass.breaker import describe
from swift_mass.control.stores.base import Store, by_bucket, quote, \
    stored


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
    * forget marks too (``forgotten``, kept ``ttl`` after the last
      forget), and a forget's table write is a whole table, as every
      update here;
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
        return self._key('c', bucket, quote(tenant), quote(field))

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
        buckets = by_bucket(items)
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
        # MemcacheRing serialises with json.dumps: dicts, not entries
        self._set(self._key('table'), {'version': version, 'table': {
            tenant: stored(entry) for tenant, entry in table.items()}})
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

    def mark_forgotten(self, marks, ttl):
        if not marks:
            return
        forgotten = self.forgotten()
        forgotten.update((tenant, float(at)) for tenant, at in marks.items())
        self._set(self._key('forgotten'), forgotten, self._seconds(ttl))

    def forgotten(self):
        return self._get(self._key('forgotten')) or {}

    def health(self):
        health = {'store': self.name, 'ok': True, 'error': None,
                  'servers': list(getattr(self.memcache, 'memcache_servers',
                                          ()))}
        try:
            self._get(self._key('health'))
        except Exception as err:
            health.update(ok=False, error=describe(err))
        return health
