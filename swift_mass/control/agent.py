"""What each proxy worker does for the control loop, once per interval.

* flush: hand the worker's window counters to the shared store, where all
  workers' counts add up;
* refresh: when the policy table's version changed, load the table, so
  every worker sees a decision within one interval;
* lead: if this worker holds (or wins) the leader lease, read every
  tenant's counts over the window, decide each tenant's policy
  (:func:`swift_mass.control.controller.decide`), and publish the table when it
  changed, with each changed entry saved durably (account sysmeta).

No WSGI here: the middleware records counts, asks for policies and calls
:meth:`Agent.tick` from a green thread; tests call it with a clock.
"""
import re
import time

from swift_mass.control import controller, monitor
from swift_mass.generations import bumped_tenants


def statsd_name(tenant):
    """A tenant name as one statsd path component ('.', ':', '|', '@' and
    anything outside [A-Za-z0-9_-] would break the line protocol)."""
    return re.sub(r'[^A-Za-z0-9_-]', '_', tenant)


class Agent(object):

    def __init__(self, store, settings, owner, logger, interval=5.0,
                 bucket_seconds=5, durable=None, clock=time.time,
                 generations=None):
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
        self.table = {}
        self.table_version = 0
        self.is_leader = False
        self._next_tick = 0.0
        # a bucket must outlive the window it is read in, plus a flush
        self._bucket_ttl = int(settings.window + 2 * bucket_seconds +
                               2 * self.interval)

    def record(self, tenant, counts):
        self.window.record(tenant, counts)

    def policy(self, tenant):
        return self.table.get(tenant)

    def tick(self):
        """Do the interval's work if it is due; cheap when it is not."""
        now = self.clock()
        if now < self._next_tick:
            return False
        self._next_tick = now + self.interval
        self.flush()
        self.refresh()
        self.lead(now)
        return True

    def flush(self):
        for (tenant, bucket), counts in self.window.drain().items():
            self.store.add_counts(tenant, bucket, counts, self._bucket_ttl)
            self.emit_metrics(tenant, counts)

    def emit_metrics(self, tenant, counts):
        """statsd counters per tenant and per class, once per flush
        rather than once per request: mass.tenant.<tenant>.<field> and
        mass.class.<class>.<field> for operations, errors and bytes."""
        entry = self.table.get(tenant)
        cls = entry['class'] if entry else 'unknown'
        name = statsd_name(tenant)
        for field, value in counts.items():
            if field.startswith(('ops.', 'err.')) or \
                    field in ('bytes_in', 'bytes_out'):
                self.logger.update_stats('tenant.%s.%s' % (name, field),
                                         value)
                self.logger.update_stats('class.%s.%s' % (cls, field),
                                         value)

    def refresh(self):
        version = self.store.table_version()
        if version != self.table_version:
            self.table_version, self.table = self.store.get_table()
            if self.durable is not None:
                self.durable.known(self.table)

    def tenant_figures(self, now):
        since = monitor.window_buckets(now, self.settings.window,
                                       self.window.bucket_seconds)
        return {tenant: monitor.figures(buckets.values())
                for tenant, buckets in self.store.read_counts(since).items()}

    def lead(self, now):
        # a lease of a few intervals: a dead leader is replaced quickly,
        # a live one renews well before it expires
        self.is_leader = self.store.acquire_lease(
            self.owner, int(self.interval * 3 * 1000))
        if not self.is_leader:
            return
        figures = self.tenant_figures(now)
        pins = self.store.get_pins()
        pins_known = self.store.holds_pins()
        empty = monitor.figures([])
        totals = controller.latency_totals(figures.values())
        min_requests = self.settings.thresholds.min_requests
        table = dict(self.table)
        changed = []
        for tenant in set(figures) | set(pins) | set(table):
            previous = table.get(tenant)
            recalled = previous is None and self.durable is not None
            if recalled:
                previous = self.durable.load(tenant)
            if not pins_known and previous and previous.get('pinned') and \
                    tenant not in pins:
                # The store that keeps the operator's pins does not
                # answer: a pinned tenant keeps its entry, and its durable
                # copy, until the pins can be read again.
                table[tenant] = previous
                continue
            own = figures.get(tenant, empty)
            entry, reasons = controller.decide(
                tenant, previous, own, now, self.settings,
                pin=pins.get(tenant),
                reference=lambda cls, own=own: controller.reference_latency(
                    cls, totals, own, min_requests))
            for reason in reasons:
                self.logger.info('mass decision: %s' % reason)
            if entry is None:
                if table.pop(tenant, None) is not None:
                    changed.append(tenant)
            elif entry is not table.get(tenant):
                table[tenant] = entry
                # an entry recalled from sysmeta as it was is not new
                if not (recalled and entry is previous):
                    changed.append(tenant)
        if changed or table != self.table:
            self.table_version = self.store.put_table(table)
            self.table = table
            for tenant in changed:
                self.logger.increment('decisions')
                if self.durable:
                    self.durable.save(tenant, table.get(tenant))
        if self.generations is not None:
            # at every tick, not only on a change: Redis may have lost it
            self.generations.publish_bumped(bumped_tenants(self.table))
