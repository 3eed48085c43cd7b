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
"""What every shared store offers, and what the stores share: how a
tenant's name goes into a key, an entry's JSON, a flush's items by bucket
(an error's description is :func:`swift_mass.breaker.describe`).

Forgetting a tenant (``swift-mass forget``, :meth:`Store.forget`) is two
writes, the same on every store:

* a *forget mark*, ``{tenant: forgotten at}`` (epoch seconds, the
  forgetter's clock), kept in the store beside the pins
  (:meth:`Store.mark_forgotten`, read by :meth:`Store.forgotten`) for
  :data:`FORGET_KEPT` seconds after the last forget.  The leader reads the
  marks at every tick with the counts, and
  :mod:`swift_mass.control.controller` applies them: a counts bucket that
  started before the tenant's mark is not the tenant's any more, and an
  entry whose ``since`` is before it (in the table, or recalled from
  account sysmeta) is not its previous entry: it is decided afresh;
* the tenant's entry removed from the table by the leader's own versioned
  write (:meth:`Store.update_table` from the state just read, the entry
  None, tried again if another write came in between): the change log
  names the tenant, so every worker drops its entry at its next refresh
  as it drops any removed entry.

The mark goes first: a leader that ticks between the two already sees it.
A leader that decided from the old entry before the mark was written and
writes after the removal (a race the table's compare-and-set detects but
does not undo on Redis, whose update is several scripts) puts back an
entry from before the mark: its next tick, with the mark, decides the
tenant afresh and replaces it (an entry keeps its ``since`` for as long
as the policy it says lasts, so one carried over from before the forget
is told by it).  Left: a leader that read the marks before the forget,
but whose tick's time is after it, and that changed the tenant's class
in that tick writes an entry that counts as new.  On memcache a table
write is a whole table and never refused, so a forget and a leader's
write at the same moment can lose either's changes (as any two writers
there).  Pins and opt-outs are not forgotten: a
pin is removed by ``swift-mass unpin``, and an opt-out is the account's
mark (or ``opt_out_accounts``), which the next request brings back.
"""

from __future__ import annotations

import json
import re
import urllib.parse

from swift_mass.control.entry import PolicyEntry

#: how long a store keeps forget marks after the last forget (seconds): as
#: long as an entry from before a forget may come back (a tenant's durable
#: copy in account sysmeta is replaced at its first request after it)
FORGET_KEPT = 30 * 86400
#: tries of :meth:`Store.forget`'s table write when other writes keep
#: coming in between
FORGET_TRIES = 5


# what urllib.parse.quote(name, safe='') leaves as it is
_UNRESERVED = re.compile(r'[A-Za-z0-9_.~-]*\Z').match


def quote(name):
    # Tenant names are arbitrary (':' and '/' are our key separators, and
    # WSGI strings carry non-ASCII), so they go into keys quoted.
    if _UNRESERVED(name):
        return name  # as urllib's quote() would, without its cost per tenant
    return urllib.parse.quote(name, safe='')


def unquote(quoted):
    return urllib.parse.unquote(quoted) if '%' in quoted else quoted


def stored(entry):
    """What a store keeps of a table's entry: a
    :class:`~swift_mass.control.entry.PolicyEntry`'s dict
    (:meth:`~swift_mass.control.entry.PolicyEntry.to_dict`), anything
    else as it is."""
    return entry.to_dict() if entry.__class__ is PolicyEntry else entry


def _stored(value):
    if value.__class__ is PolicyEntry:
        return value.to_dict()
    raise TypeError('%r is not JSON serializable' % (value,))


# an entry's JSON (keys sorted: equal entries, equal text), a PolicyEntry's
# that of its dict; one encoder, not one per call as
# json.dumps(sort_keys=True) makes
encode = json.JSONEncoder(sort_keys=True, default=_stored).encode


class Store(object):
    """What every store offers (see the module docstring for the model).

    Counters are ``{tenant: {bucket: {field: value}}}``, buckets are ints
    (epoch seconds of the bucket's start), fields are names such as
    ``ops.GET`` (no whitespace).  Tables, policies and pins are JSON-able
    dicts (a table's entries may be given as
    :class:`~swift_mass.control.entry.PolicyEntry`, each kept as its
    :func:`stored` dict); what is read back is a fresh copy, of dicts.  A
    table's state is a pair ``(id, version)``; ``(None, 0)`` is that of a
    store that holds no table.  Every method does a bounded number of
    round trips to its backend: a few, or one per few thousand tenants for
    the methods that take or return many.
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

    def mark_forgotten(self, marks: dict[str, float], ttl: int) -> None:
        """Add ``marks`` (``{tenant: forgotten at}``) to the forget marks;
        they are kept ``ttl`` seconds (all of them: the newest sets how
        long)."""
        raise NotImplementedError

    def forgotten(self) -> dict[str, float]:
        """The forget marks, ``{tenant: forgotten at}``."""
        raise NotImplementedError

    def forget(self, tenants, at: float) -> list[str]:
        """Forget ``tenants`` at time ``at`` (see the module docstring):
        mark them, then remove their entries from the table through
        :meth:`update_table`; the tenants that had an entry.  Raises
        :class:`TableBusy` if other writes kept coming in between."""
        tenants = list(dict.fromkeys(tenants))
        self.mark_forgotten(dict.fromkeys(tenants, at), FORGET_KEPT)
        removed = set()
        for _try in range(FORGET_TRIES):
            changes = self.table_changes(None)
            table = {} if changes is None else changes[1]
            present = [tenant for tenant in tenants if tenant in table]
            if not present:  # (or no table at all)
                break
            for tenant in present:
                del table[tenant]
            removed.update(present)
            if self.update_table(changes[0], table, present) is not None:
                break
        else:
            raise TableBusy('the policy table kept changing: %d tries'
                            % FORGET_TRIES)
        return [tenant for tenant in tenants if tenant in removed]

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


class TableBusy(Exception):
    """Other writes to the policy table kept coming in between."""


def by_bucket(items):
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
