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
  sysmeta).  A tenant opted out of Mass is not classified: its entry
  says so (:func:`swift_mass.control.controller.opt_out`), and
  :meth:`Agent.policy` answers None for it.  The leader learns of an
  opt-out from the tenant's requests (the ``opted_out`` counter the
  proxies count once Swift authorised a request of an opted-out account,
  :mod:`swift_mass.control.monitor`), or from ``opt_out_accounts``: an
  account opts out at its next request, or at once when configured, and
  back in once a window has passed without an opted-out request.

No WSGI here: the middleware records counts, asks for policies and calls
:meth:`Agent.tick` from a green thread; tests call it with a clock.
"""
import contextlib
import gc
import heapq
import re
import sys
import time

from swift_mass import metrics
from swift_mass.control import controller, monitor
from swift_mass.generations import bumped_tenants
from swift_mass.tags import OPT_OUT_MARK_HEADER


_STATSD_SAFE = re.compile(r'[A-Za-z0-9_-]*\Z').match


def statsd_name(tenant):
    """A tenant name as one statsd path component ('.', ':', '|', '@' and
    anything outside [A-Za-z0-9_-] would break the line protocol)."""
    if _STATSD_SAFE(tenant):
        return tenant
    return re.sub(r'[^A-Za-z0-9_-]', '_', tenant)


# the counters that go to statsd: operations, errors and bytes
OPS_FIELDS = frozenset('ops.' + op for op in monitor.OPS)
METRIC_FIELDS = OPS_FIELDS | frozenset(
    ['err.' + op for op in monitor.OPS] + ['bytes_in', 'bytes_out'])
# a field's labeled name (after swift_mass_tenant_ or swift_mass_class_)
# and its method label: Swift's label for an HTTP method
LABELED_FIELDS = dict(
    [('ops.' + op, ('requests', op)) for op in monitor.OPS] +
    [('err.' + op, ('errors', op)) for op in monitor.OPS] +
    [('bytes_in', ('bytes_in', None)), ('bytes_out', ('bytes_out', None))])


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for a while (if it was on).

    A tick allocates a few containers per tenant (counts, figures), freed
    by reference counting, none in a cycle; but with some 100,000 of them
    made in a row the collector runs full collections, each through the
    worker's whole heap (the table included): at 100,000 tenants some 40 %
    of a leader's tick.  Cyclic garbage made meanwhile, by the tick or by
    requests served in its pauses, waits until the collector runs again.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# an entry's fields with a value of a few kinds, each read back from the
# store as a string of its own
_SHARED = ('class', 'ring', 'method')


def _shared(entries):
    """``entries`` (an iterable of entries) with the values of _SHARED
    interned: a table of 100,000 holds three strings, not 300,000 (some
    100 bytes an entry)."""
    intern = sys.intern
    for entry in entries:
        for field in _SHARED:
            value = entry.get(field)
            if value.__class__ is str:
                entry[field] = intern(value)


class Agent(object):

    #: how many intervals the leader lease lasts: the leader renews it at
    #: every tick, and when it dies another worker takes over within two
    #: intervals (the lease lapses within 1.5, and some worker ticks soon
    #: after)
    LEASE_INTERVALS = 1.5

    def __init__(self, store, settings, owner, logger, interval=5.0,
                 bucket_seconds=5, durable=None, clock=time.time,
                 generations=None,
                 tenant_metrics=metrics.DEFAULT_TENANT_METRICS,
                 opt_out=frozenset()):
        self.store = store
        self.settings = settings
        self.owner = owner
        self.logger = logger
        self.interval = float(interval)
        self.window = monitor.Window(bucket_seconds, clock)
        self.durable = durable
        #: where the leader publishes the tenants whose writes the object
        #: servers bump (swift_mass.generations), if anyone reads them
        self.generations = generations
        self.clock = clock
        #: per-tenant statsd counters of a flush for at most this many
        #: tenants (None: all)
        self.tenant_metrics = tenant_metrics
        #: the tenants opted out by configuration (``opt_out_accounts``)
        self.opt_out = frozenset(opt_out)
        #: {tenant: entry}: what policy() answers from, a dict lookup
        self.table = {}
        #: the state of the store's table that self.table is: (id, version)
        self.table_id = None
        self.table_version = 0
        self.is_leader = False
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
        if entry is not None and controller.OPTED_OUT in entry:
            return None
        return entry

    def tick(self):
        """Do the interval's work if it is due; cheap when it is not."""
        now = self.clock()
        if now < self._next_tick:
            return False
        self._next_tick = now + self.interval
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
        """statsd counters per tenant and per class, once per flush
        rather than once per request: mass.tenant.<tenant>.<field> and
        mass.class.<class>.<field> for operations, errors and bytes
        (``pending``: what the flush handed over, ``{(tenant, bucket):
        counts}``).  Every tenant's counts go into its class's, added up:
        one update per class and field; a tenant's own, added up over its
        buckets, only for the ``tenant_metrics`` busiest tenants (most
        requests) when there are more: a statsd packet per counter costs
        a worker some microseconds, and statsd a series.  With labels
        (swift_mass.metrics), each also as swift_mass_tenant_<field> and
        swift_mass_class_<field>, labeled with the tenant, its class and
        the HTTP method."""
        classes = {}
        tenants = {}  # {tenant: [counts of a bucket, ...]}
        tenant_class = {}
        table = self.table
        metric_fields = METRIC_FIELDS.intersection
        for (tenant, _bucket), counts in pending.items():
            fields = metric_fields(counts)
            if not fields:
                continue
            entry = table.get(tenant)
            cls = entry['class'] if entry else 'unknown'
            tenant_class[tenant] = cls
            total = classes.get(cls)
            if total is None:
                total = classes[cls] = {}
            for field in fields:
                total[field] = total.get(field, 0) + counts[field]
            if tenant in tenants:
                tenants[tenant].append(counts)
            else:
                tenants[tenant] = [counts]
        limit = self.tenant_metrics
        if limit is not None and len(tenants) > limit:
            def requests(tenant):
                n = 0
                for counts in tenants[tenant]:
                    for field in ops_fields(counts):
                        n += counts[field]
                return n
            ops_fields = OPS_FIELDS.intersection
            tenants = {tenant: tenants[tenant] for tenant in heapq.nlargest(
                limit, tenants, key=requests)}
        update_stats = self.logger.update_stats
        labeled = metrics.labeled_only(self.logger)
        for tenant, buckets in tenants.items():
            name = 'tenant.%s.' % statsd_name(tenant)
            total = {}
            for counts in buckets:
                for field in metric_fields(counts):
                    total[field] = total.get(field, 0) + counts[field]
            for field, value in total.items():
                update_stats(name + field, value)
            if labeled is not None:
                # the tenant as Swift sends an account label: as it is
                self._emit_labeled(labeled, 'tenant_', total, {
                    'tenant': tenant, 'class': tenant_class[tenant]})
        for cls, total in classes.items():
            for field, value in total.items():
                update_stats('class.%s.%s' % (cls, field), value)
            if labeled is not None:
                self._emit_labeled(labeled, 'class_', total, {'class': cls})

    @staticmethod
    def _emit_labeled(labeled, kind, total, labels):
        client, prefix = labeled
        for field, value in total.items():
            name, method = LABELED_FIELDS[field]
            client.update_stats(
                prefix + kind + name, value,
                labels=labels if method is None else dict(labels,
                                                          method=method))

    def _count_decisions(self, changed, table):
        """decisions, and labeled, how many by the class decided (none:
        an entry dropped): one packet a class, once a tick."""
        self.logger.update_stats('decisions', len(changed))
        labeled = metrics.labeled_only(self.logger)
        if labeled is None:
            return
        client, prefix = labeled
        by_class = {}
        for tenant in changed:
            entry = table.get(tenant)
            cls = (entry.get('class') or 'unknown') if entry else 'none'
            by_class[cls] = by_class.get(cls, 0) + 1
        for cls, count in by_class.items():
            client.update_stats(prefix + 'decisions', count,
                                labels={'class': cls})

    def refresh(self):
        """Apply what changed in the store's table since this worker's
        state: a delta in place, or the whole table."""
        changes = self.store.table_changes((self.table_id,
                                            self.table_version))
        if changes is None:
            return
        (self.table_id, self.table_version), entries, whole = changes
        _shared(entry for entry in entries.values() if entry)
        if whole:
            self.table = entries
            decided = entries
        else:
            table = self.table
            for tenant, entry in entries.items():
                if entry is None:
                    table.pop(tenant, None)
                else:
                    table[tenant] = entry
            decided = [tenant for tenant, entry in entries.items()
                       if entry is not None]
        if self.durable is not None:
            self.durable.known(decided)

    def tenant_figures(self, now):
        """``{tenant: Figures}`` of every tenant with requests in the
        window, with what the controller decides by
        (:func:`monitor.decision_figures`)."""
        since = monitor.window_buckets(now, self.settings.window,
                                       self.window.bucket_seconds)
        counts = self.store.read_counts(since, monitor.DECISION_FIELDS)
        return {tenant: monitor.decision_figures(buckets.values())
                for tenant, buckets in counts.items()}

    def _decide(self, tenant, previous, own, now, pins, reference):
        """:func:`controller.decide` for one tenant; an entry it cannot
        read (a malformed one, in the table or in the account's sysmeta)
        is decided on afresh, as if the tenant had none; None, logged, if
        even that fails: one bad entry never stops the others'
        decisions."""
        for was in (previous, None):
            try:
                return controller.decide(tenant, was, own, now,
                                         self.settings,
                                         pin=pins.get(tenant),
                                         reference=reference)
            except Exception as err:
                self.logger.warning(
                    'mass decision: %s: cannot decide on %s (%s: %s)' % (
                        tenant, 'its entry %r' % (was,) if was is not None
                        else 'it', type(err).__name__, err))
                if was is None:
                    return None
        return None

    def _opted_out(self, tenant, figures):
        """Why the tenant is opted out of Mass, or None if it is not."""
        if tenant in self.opt_out:
            return 'opt_out_accounts'
        if figures.opted_out:
            return 'its account\'s %s mark' % OPT_OUT_MARK_HEADER
        return None

    def lead(self, now):
        """The leader's work (it holds the lease): decide, and write what
        changed."""
        figures = self.tenant_figures(now)
        pins = self.store.get_pins()
        pins_known = self.store.holds_pins()
        empty = monitor.figures([])
        totals = controller.latency_totals(figures.values())
        min_requests = self.settings.thresholds.min_requests
        table = self.table
        # the tenants whose entry may change; any other's stays as it is
        tenants = set(figures)
        tenants.update(pins)
        tenants.update(tenant for tenant, entry in table.items()
                       if not controller.keeps_when_idle(entry))
        # configured opt-outs take a policy away at once, idle or not
        tenants.update(tenant for tenant in self.opt_out
                       if tenant in table and
                       not controller.is_opted_out(table[tenant]))
        updates = {}  # {tenant: new entry or None}, to write
        changed = []  # of those, the decisions (not recalled as they were)
        for tenant in tenants:
            previous = table.get(tenant)
            recalled = previous is None and self.durable is not None
            if recalled:
                previous = self.durable.load(tenant)
            own = figures.get(tenant, empty)
            why = self._opted_out(tenant, own)
            if why:
                # before the pins: an opt-out wins over a pin
                decided = controller.opt_out(tenant, previous, now,
                                             self.settings, why,
                                             pinned=tenant in pins)
            elif not pins_known and previous and previous.get('pinned') \
                    and tenant not in pins:
                # The store that keeps the operator's pins does not
                # answer: a pinned tenant keeps its entry, and its durable
                # copy, until the pins can be read again.
                if recalled:
                    updates[tenant] = previous
                continue
            else:
                decided = self._decide(tenant, previous, own, now, pins,
                                       lambda cls, own=own:
                                       controller.reference_latency(
                                           cls, totals, own, min_requests))
            if decided is None:
                continue
            entry, reasons = decided
            for reason in reasons:
                self.logger.info('mass decision: %s' % reason)
            if entry is None:
                # a recalled entry that is no more: its durable copy goes
                # too, or every tick would recall it again
                if tenant in table or (recalled and previous is not None):
                    updates[tenant] = None
                    changed.append(tenant)
            elif entry is not table.get(tenant):
                updates[tenant] = entry
                # an entry recalled from sysmeta as it was is not new
                if not (recalled and entry is previous):
                    changed.append(tenant)
        if updates:
            since = (self.table_id, self.table_version)
            for tenant, entry in updates.items():
                if entry is None:
                    table.pop(tenant, None)
                else:
                    table[tenant] = entry
            state = self.store.update_table(since, table, updates)
            if state is not None:
                self.table_id, self.table_version = state
            # else: another writer came in between, or no store took it:
            # the next refresh brings this worker up to the store's table
            if changed:
                self._count_decisions(changed, table)
            if self.durable:
                for tenant in changed:
                    self.durable.save(tenant, table.get(tenant))
        if self.generations is not None:
            # at every tick, not only on a change: Redis may have lost it
            self.generations.publish_bumped(bumped_tenants(self.table))
