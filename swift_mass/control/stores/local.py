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
"""Worker-local state: the last resort of every store chain."""

import json
import time
import uuid

from swift_mass.control.stores.base import Store, encode


def _kept(fields, wanted):
    """The counters of ``fields`` whose names start with one of
    ``wanted`` (None: all of them)."""
    if wanted is None:
        return dict(fields)
    return {field: value for field, value in fields.items()
            if field.startswith(wanted)}


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
        self._forgotten = {}  # {tenant: forgotten at}
        self._forgotten_expires = 0.0

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
        self._entries = {tenant: encode(entry)
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
                self._entries[tenant] = encode(entry)
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

    def mark_forgotten(self, marks, ttl):
        if not marks:
            return
        now = self.clock()
        forgotten = self.forgotten()
        forgotten.update((tenant, float(at)) for tenant, at in marks.items())
        self._forgotten = forgotten
        self._forgotten_expires = now + ttl

    def forgotten(self):
        if self._forgotten_expires <= self.clock():
            self._forgotten = {}
        return dict(self._forgotten)

    def health(self):
        return {'store': self.name, 'ok': True, 'error': None}
