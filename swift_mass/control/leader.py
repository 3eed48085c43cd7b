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
"""What the leader decides in a tick (:meth:`Agent.lead
<swift_mass.control.agent.Agent.lead>`): which tenants' entries may change,
and each one's new entry, by :mod:`swift_mass.control.controller`.  Writing
the decisions (to the store, to account sysmeta) is the agent's.
"""
from swift_mass.control import controller, monitor
from swift_mass.control.entry import MalformedEntry, PolicyEntry
from swift_mass.tags import OPT_OUT_MARK_HEADER


class Decisions(object):
    """The leader's decisions of one tick.

    :param table: the leader's policy table ``{tenant: PolicyEntry}``,
        read, not changed.
    :param figures: ``{tenant: Figures}`` of every tenant with requests in
        the window (:meth:`Agent.tenant_figures
        <swift_mass.control.agent.Agent.tenant_figures>`).
    :param pins: the operator's pins ``{tenant: pin}``; ``pins_known``:
        whether the store that keeps them answered.
    :param opt_out: the tenants opted out by configuration
        (``opt_out_accounts``).
    :param durable: where an entry is kept durably (account sysmeta, as
        :meth:`PolicyEntry.to_dict
        <swift_mass.control.entry.PolicyEntry.to_dict>` stores it), or
        None.
    :param forgotten: the forget marks ``{tenant: forgotten at}``
        (``swift-mass forget``): an entry from before a tenant's mark is
        not its previous entry (:func:`controller.forgotten_entry`), and
        ``figures`` are already of its counts after it only
        (:func:`controller.counts_since_forget`).

    :meth:`make` fills in ``updates``, ``{tenant: new entry or None}``, the
    entries to write, and ``changed``, those of them that are decisions
    (not recalled from ``durable`` as they were).
    """

    def __init__(self, table, figures, pins, pins_known, now, settings,
                 opt_out, durable, logger, forgotten=None):
        self.table = table
        self.figures = figures
        self.pins = pins
        self.pins_known = pins_known
        self.now = now
        self.settings = settings
        self.opt_out = opt_out
        self.durable = durable
        self.logger = logger
        self.forgotten = forgotten or {}
        #: {tenant: new entry or None}, to write
        self.updates = {}
        #: of those, the decisions (not recalled as they were)
        self.changed = []
        self._empty = monitor.figures([])
        self._totals = controller.latency_totals(figures.values())

    def tenants(self):
        """The tenants whose entry may change; any other's stays as it
        is."""
        table = self.table
        tenants = set(self.figures)
        tenants.update(self.pins)
        tenants.update(tenant for tenant, entry in table.items()
                       if not controller.keeps_when_idle(entry))
        # configured opt-outs take a policy away at once, idle or not
        tenants.update(tenant for tenant in self.opt_out
                       if tenant in table and
                       not controller.is_opted_out(table[tenant]))
        # an entry from before its tenant was forgotten goes, idle or not
        tenants.update(tenant for tenant, at in self.forgotten.items()
                       if controller.forgotten_entry(table.get(tenant), at))
        return tenants

    def make(self):
        """Decide every tenant of :meth:`tenants`; this, with its
        ``updates`` and ``changed`` filled in."""
        for tenant in self.tenants():
            self._decide_tenant(tenant)
        return self

    def _decide_tenant(self, tenant):
        """The tenant's new entry, in ``updates`` (and ``changed``) if it
        is to be written; each reason for it logged."""
        forgotten_at = self.forgotten.get(tenant)
        previous = self.table.get(tenant)
        if controller.forgotten_entry(previous, forgotten_at):
            previous = None  # decided afresh; its entry is replaced
        recalled = previous is None and self.durable is not None
        kept = False  # whether a durable copy of its entry was found
        if recalled:
            previous, kept = self._recall(tenant)
            if controller.forgotten_entry(previous, forgotten_at):
                previous = None  # its durable copy is replaced too
        own = self.figures.get(tenant, self._empty)
        why = self._opted_out(tenant, own)
        if why:
            # before the pins: an opt-out wins over a pin
            decided = controller.opt_out(tenant, previous, self.now,
                                         self.settings, why,
                                         pinned=tenant in self.pins)
        elif not self.pins_known and previous is not None and \
                previous.pinned and tenant not in self.pins:
            # The store that keeps the operator's pins does not
            # answer: a pinned tenant keeps its entry, and its durable
            # copy, until the pins can be read again.
            if recalled:
                self.updates[tenant] = previous
            return
        else:
            decided = self._decide(tenant, previous, own)
        if decided is None:
            return
        entry, reasons = decided
        for reason in reasons:
            self.logger.info('mass decision: %s', reason)
        self._note(tenant, entry, previous, recalled, kept)

    def _recall(self, tenant):
        """``(entry, kept)``: the tenant's entry kept durably, or None if
        there is none or it is not an entry (logged: the tenant is
        decided on afresh), and whether there is a durable copy."""
        stored = self.durable.load(tenant)
        if stored is None:
            return None, False
        try:
            return PolicyEntry.from_dict(stored), True
        except MalformedEntry as err:
            self.logger.warning(
                'mass decision: %s: cannot decide on its entry %r (%s: %s)',
                tenant, stored, type(err).__name__, err)
            return None, True

    def _note(self, tenant, entry, previous, recalled, kept):
        """``entry``, the tenant's decided entry, in ``updates`` if it
        differs from the table's, and in ``changed`` if it is new
        (``kept``: the tenant has a durable copy, recalled)."""
        if entry is None:
            # a recalled entry that is no more: its durable copy goes
            # too, or every tick would recall it again
            if tenant in self.table or kept:
                self.updates[tenant] = None
                self.changed.append(tenant)
        elif entry is not self.table.get(tenant):
            self.updates[tenant] = entry
            # an entry recalled from sysmeta as it was is not new
            if not (recalled and entry is previous):
                self.changed.append(tenant)

    def _decide(self, tenant, previous, own):
        """:func:`controller.decide` for one tenant; an entry it cannot
        decide from is decided on afresh, as if the tenant had none
        (malformed ones never get here: a worker leaves them out of its
        table, and :meth:`_recall` out of what it recalls); None, logged,
        if even that fails: one bad entry never stops the others'
        decisions."""
        totals = self._totals
        min_requests = self.settings.thresholds.min_requests

        def reference(cls):
            return controller.reference_latency(cls, totals, own,
                                                min_requests)
        for was in (previous, None):
            try:
                return controller.decide(tenant, was, own, self.now,
                                         self.settings,
                                         pin=self.pins.get(tenant),
                                         reference=reference)
            except Exception as err:
                self.logger.warning(
                    'mass decision: %s: cannot decide on %s (%s: %s)',
                    tenant, 'its entry %r' % (was,) if was is not None
                    else 'it', type(err).__name__, err)
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
