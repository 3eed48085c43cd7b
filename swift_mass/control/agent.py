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
"""What each proxy worker does for the control loop, once per interval.

* lease: renew the leader lease if this worker holds it, or take it if it
  is free; first, so that however long the rest takes, the leader renews
  it every interval;
* flush: hand the worker's window counters to the shared store, all of
  them in one call (:meth:`Store.add_counts_many
  <swift_mass.control.stores.base.Store.add_counts_many>`: a few round trips,
  not one per tenant), where all workers' counts add up;
* refresh: ask the store what changed in the policy table since the state
  this worker holds, and apply it: the entries that changed or, when the
  store cannot tell (its change log does not reach back that far, or it
  lost the table), the whole table; so every worker sees a decision
  within one interval, without loading the whole table for it;
* lead: if this worker holds the lease, read every tenant's counts over
  the window (only the fields the controller decides by), decide the
  policy (:func:`swift_mass.control.controller.decide`) of every tenant
  that made requests in it, has a pin or a pinned entry (nothing else can
  change an entry: :func:`swift_mass.control.controller.keeps_when_idle`),
  and write the entries that changed, each saved durably (account
  sysmeta).  A tenant the operator forgot (``swift-mass forget``: its
  forget mark, read with the counts) is decided from its counts after
  the mark only, and not from its entry from before it
  (:mod:`swift_mass.control.controller`).  A tenant opted out of Mass
  is not classified: its entry says so
  (:func:`swift_mass.control.controller.opt_out`), and
  :meth:`Agent.policy` answers None for it.  The leader learns of an
  opt-out from the tenant's requests (the ``opted_out`` counter the
  proxies count once Swift authorised a request of an opted-out account,
  :mod:`swift_mass.control.monitor`), or from ``opt_out_accounts``: an
  account opts out at its next request, or at once when configured, and
  back in once a window has passed without an opted-out request.

What the leader decides in a tick is worked out by
:mod:`swift_mass.control.leader`, and the statsd counters of flushes and
decisions are :mod:`swift_mass.control.stats`'.

No WSGI here: the middleware records counts, asks for policies and calls
:meth:`Agent.tick` from a green thread; tests call it with a clock.
"""
import contextlib
import gc
import time

from swift_mass import metrics
from swift_mass.control import controller, leader, monitor, stats
from swift_mass.control.entry import MalformedEntry, PolicyEntry
from swift_mass.generations.publisher import BumpedSetPublisher, \
    bumped_tenants


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for a while (if it was on).

    A tick allocates a few containers per tenant (counts, figures), freed
    by reference counting, none in a cycle; but with some 100,000 of them
    made in a row the collector runs full collections, each through the
    worker's whole heap (the table included): a large share of a leader's
    tick at 100,000 tenants (docs/scale.md).  Cyclic garbage made
    meanwhile, by the tick or by requests served in its pauses, waits
    until the collector runs again.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Agent(object):
    """A proxy worker's part in the control loop: its window of counts,
    its copy of the policy table, and :meth:`tick`, the interval's work
    (see the module's docstring)."""

    #: how many intervals the leader lease lasts: the leader renews it at
    #: every tick, and when it dies another worker takes over within two
    #: intervals (the lease lapses within 1.5, and some worker ticks soon
    #: after)
    LEASE_INTERVALS = 1.5

    def __init__(self, store, settings, owner, logger, interval=5.0,
                 bucket_seconds=5, durable=None, clock=time.time,
                 ticker=time.monotonic, generations=None,
                 tenant_metrics=metrics.DEFAULT_TENANT_METRICS,
                 opt_out=frozenset(), substores=None):
        self.store = store
        self.settings = settings
        #: the measured check of the substores (a
        #: swift_mass.control.substores.SubstoreCheck), or None: the
        #: mapping of ``settings`` as configured
        self.substores = substores
        self.owner = owner
        self.logger = logger
        self.interval = float(interval)
        self.window = monitor.Window(bucket_seconds, clock)
        self.durable = durable
        #: where the leader publishes the tenants whose writes the object
        #: servers bump (swift_mass.generations), if anyone reads them:
        #: through ``generations``, the proxy's
        self.publisher = None if generations is None else \
            BumpedSetPublisher(generations)
        #: the wall clock: bucket times, and the ``now`` the leader decides
        #: at, which are compared with times kept in the store
        self.clock = clock
        #: the clock ticks are due by: one that never steps back, so that
        #: a step back of the wall clock (NTP, a VM resumed, ``date -s``)
        #: does not hold the worker's ticks off for the size of the step
        self.ticker = ticker
        #: per-tenant statsd counters of a flush for at most this many
        #: tenants (None: all)
        self.tenant_metrics = tenant_metrics
        #: the tenants opted out by configuration (``opt_out_accounts``)
        self.opt_out = frozenset(opt_out)
        #: {tenant: PolicyEntry}: what policy() answers from, a dict
        #: lookup; its entries are made once, as the table is loaded
        #: (:meth:`refresh`) or decided (:meth:`lead`)
        self.table = {}
        #: the state of the store's table that self.table is: (id, version)
        self.table_id = None
        self.table_version = 0
        self.is_leader = False
        # read on self.ticker, never the wall clock; 0: the first is due
        self._next_tick = 0.0
        # a bucket must outlive the window it is read in, plus a flush
        self._bucket_ttl = int(settings.window + 2 * bucket_seconds +
                               2 * self.interval)

    def record(self, tenant, counts):
        self.window.record(tenant, counts)

    def policy(self, tenant):
        """The tenant's policy entry, or None: none decided, or the tenant
        is opted out."""
        entry = self.table.get(tenant)
        if entry is not None and entry.opted_out:
            return None
        return entry

    def tick(self):
        """Do the interval's work if it is due; cheap when it is not."""
        ticker_now = self.ticker()
        if ticker_now < self._next_tick:
            return False
        self._next_tick = ticker_now + self.interval
        now = self.clock()
        self.is_leader = self.store.acquire_lease(
            self.owner, int(self.interval * self.LEASE_INTERVALS * 1000))
        with collector_paused():
            self.flush()
            self.refresh()
            if self.is_leader:
                self.lead(now)
        return True

    def flush(self):
        pending = self.window.drain()
        if not pending:
            return
        self.store.add_counts_many(
            [(tenant, bucket, counts)
             for (tenant, bucket), counts in pending.items()],
            self._bucket_ttl)
        self.emit_metrics(pending)

    def emit_metrics(self, pending):
        """The flush's statsd counters, per tenant and per class
        (:func:`swift_mass.control.stats.emit_flush`; ``pending``: what
        the flush handed over, ``{(tenant, bucket): counts}``)."""
        stats.emit_flush(self.logger, pending, self.table,
                         self.tenant_metrics)

    def refresh(self):
        """Apply what changed in the store's table since this worker's
        state: a delta in place, or the whole table.  Each entry is read
        (:meth:`PolicyEntry.from_dict
        <swift_mass.control.entry.PolicyEntry.from_dict>`) here, once; one
        that is not an entry is logged and left out, as if the tenant had
        none."""
        changes = self.store.table_changes((self.table_id,
                                            self.table_version))
        if changes is None:
            return
        (self.table_id, self.table_version), entries, whole = changes
        table = {} if whole else self.table
        from_dict = PolicyEntry.from_dict
        for tenant, stored in entries.items():
            if stored is None:
                table.pop(tenant, None)
                continue
            try:
                table[tenant] = from_dict(stored)
            except MalformedEntry as err:
                table.pop(tenant, None)
                self.logger.warning('mass: %s: its entry in the policy '
                                    'table is left out: %s', tenant, err)
        self.table = table
        if self.durable is not None:
            self.durable.known([tenant for tenant, stored in entries.items()
                                if stored is not None])

    def tenant_figures(self, now, forgotten=None):
        """``{tenant: Figures}`` of every tenant with requests in the
        window, with what the controller decides by
        (:func:`monitor.decision_figures`); a tenant of ``forgotten`` (the
        forget marks) only from its buckets after its mark
        (:func:`controller.counts_since_forget`)."""
        since = monitor.window_buckets(now, self.settings.window,
                                       self.window.bucket_seconds)
        counts = self.store.read_counts(since, monitor.DECISION_FIELDS)
        counts = controller.counts_since_forget(counts, forgotten)
        return {tenant: monitor.decision_figures(buckets.values())
                for tenant, buckets in counts.items()}

    def lead(self, now):
        """The leader's work (it holds the lease): decide
        (:class:`swift_mass.control.leader.Decisions`), and write what
        changed."""
        forgotten = self.store.forgotten()
        figures = self.tenant_figures(now, forgotten)
        pins = self.store.get_pins()
        pins_known = self.store.holds_pins()
        settings = self.settings if self.substores is None else \
            self.substores.settings(self.settings, now)
        decisions = leader.Decisions(
            self.table, figures, pins, pins_known, now, settings,
            self.opt_out, self.durable, self.logger, forgotten).make()
        if decisions.updates:
            self._write(decisions.updates, decisions.changed)
        if self.publisher is not None:
            # at every tick, not only on a change: Redis may have lost it
            self.publisher.publish(bumped_tenants(self.table))

    def _write(self, updates, changed):
        """The leader's decisions into its table and the store's, and each
        new one (``changed``) counted and saved durably (``updates``:
        ``{tenant: new entry or None}``)."""
        table = self.table
        since = (self.table_id, self.table_version)
        for tenant, entry in updates.items():
            if entry is None:
                table.pop(tenant, None)
            else:
                table[tenant] = entry
        # the stores write each PolicyEntry as its to_dict()
        state = self.store.update_table(since, table, updates)
        if state is not None:
            self.table_id, self.table_version = state
        # else: another writer came in between, or no store took it:
        # the next refresh brings this worker up to the store's table
        if changed:
            stats.count_decisions(self.logger, changed, table)
        if self.durable:
            for tenant in changed:
                entry = table.get(tenant)
                self.durable.save(tenant, None if entry is None
                                  else entry.to_dict())
