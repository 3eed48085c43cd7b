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
"""Admission to one storage device: slots, priorities with aging, deadlines,
slots reserved for urgent tenants and slot counts that follow utilisation.

Pure Python: no WSGI, no eventlet, no Swift.  ``mass_queue``
(``swift_mass.obj.middleware``) keeps one :class:`DeviceQueue` per device,
all with the settings of its :class:`swift_mass.conf.QueueConf`, and
implements waiting with eventlet; tests drive a queue directly with a clock
they move.

How a request goes through a queue::

    ticket = queue.arrive(priority, tenant, batch)
    if ticket.state == WAITING:
        ticket.wake = <callable>     # before yielding to any other code
        ... wait until woken, or until queue.wake_at(), then queue.poll() ...
    if ticket.state == ADMITTED:
        ... serve the request ...
    queue.release(ticket)            # always; only the first call counts

The queue never blocks and never sleeps: every call looks at the clock,
refuses waiters whose deadline has passed, switches the reservation mode,
adapts the slot counts, admits as many waiters as slots allow, and calls
``wake()`` on each ticket it admitted or refused.

**Order.**  Waiters are ordered by ``arrival - priority x priority_slack``
(ties by arrival order); the waiter with the smallest key is admitted first,
so a higher priority is served first but an old low-priority request
overtakes new high-priority ones.  **Starvation bound**: a waiting request A
(arrival a, priority pa) is admitted after a later request B (arrival b,
priority pb) only if ``b - pb x priority_slack < a - pa x priority_slack``,
that is only if B arrived less than ``(pb - pa) x priority_slack`` seconds
after A (:func:`overtake_window`).  Requests arriving more than
``(highest priority - pa) x priority_slack`` seconds after A never go before
it, so A waits at most for the requests that arrived before that moment; and
never longer than
its deadline, after which it is refused (the middleware answers 503 with
Retry-After).  Refusals are limited to ``max_refusals_per_minute`` per
device: Swift's proxy counts every 5xx against the node and, after
``error_suppression_limit`` (10) of them within a minute, sends no request
of any tenant to it for a minute, so unlimited refusals under a sustained
overload would turn slow successes into failures for everyone.  Past that
budget a request whose deadline passes is admitted over the slot count
instead (counted in ``admitted_past_deadline``).  The bound is between
requests competing for the same slot:
a request that takes a slot A may not use (a slot reserved for urgent
tenants, a batch slot) overtakes nobody.

**Urgent tenants** (the Ceph SLA seed's isolated and shared modes).  While an
urgent tenant is active the queue is *isolated*: ``reserved_slots()`` of the
general slots are kept for urgent tenants, so other tenants use at most the
rest (urgent tenants may use every slot).  When no urgent request has
arrived, run or waited for ``urgent_idle_seconds`` the queue becomes
*shared* and everyone may use every slot.  The hysteresis is in time: one
urgent request isolates at once, only ``urgent_idle_seconds`` quiet seconds
share again, so a tenant that is merely between requests keeps its
reservation.

A reservation held idle is device time nobody uses: an urgent tenant that
runs one request at a time beside a writer that could keep every slot busy
left half of an 8-slot device's slots empty for as long as it was active
(docs/benchmarks.md, the device-bound placed run).  So, with
``lend_reserved_slots`` (the default), the other tenants may also use the
reserved slots while no urgent request waits, up to all the slots but one;
the free one lets the next urgent arrival start at once, and while an
urgent request waits no slot goes to another tenant beyond its share, so
the reserved slots come back to urgent requests as the borrowers' requests
end.  What an urgent tenant gives up is the second and later of a burst
starting at once: each waits for a borrowed slot to be released.  Without
it (strict isolation) the other tenants never use more than the unreserved
slots.

**Adaptive slots** (the MOS seed's provisioning loop).  With
``adaptive_slots``, every ``adaptive_interval`` seconds each slot pool
measures its utilisation (time-averaged slots in use / slots) since the last
step: at or above ``adaptive_high`` with requests kept waiting, its slot
count doubles; at or below ``adaptive_low``, it shrinks by one; always
within the pool's bounds (``adaptive_min_slots`` to ``adaptive_max_slots``,
``adaptive_min_batch_slots`` to ``adaptive_max_batch_slots``).  Growing
quickly and shrinking slowly follows demand without oscillating.

**Batch slots.**  Tickets marked ``batch`` (write-dominated tenants' PUTs)
may use ``batch_slots`` slots of their own before they compete for a general
slot, so more of their PUTs run at once and the filesystem commits their
fsyncs together.  Nothing about each PUT changes.
"""
import collections
import heapq
import itertools

WAITING = 'waiting'
ADMITTED = 'admitted'
REFUSED = 'refused'
RELEASED = 'released'
CANCELLED = 'cancelled'

SHARED = 'shared'
ISOLATED = 'isolated'

# Names passed to a queue's on_event listener.
EVENT_ISOLATED = 'mode.isolated'
EVENT_SHARED = 'mode.shared'
EVENT_GROW = 'slots.grow'
EVENT_SHRINK = 'slots.shrink'
EVENT_PAST_DEADLINE = 'admitted_past_deadline'
REFUSAL_WINDOW = 60.0   # seconds, Swift's default error_suppression_interval


def overtake_window(priority_slack, low, high):
    """How many seconds after a waiting request of priority `low` a request
    of priority `high` may arrive and still be admitted before it (0 or less:
    never)."""
    return (high - low) * priority_slack


class Ticket(object):
    """One request's claim on a slot of a device."""
    __slots__ = ('priority', 'tenant', 'urgent', 'batch', 'arrival',
                 'deadline', 'order', 'state', 'pool', 'admitted_at', 'wake')

    def __init__(self, priority, tenant, urgent, batch, arrival, deadline,
                 order):
        self.priority = priority
        self.tenant = tenant
        self.urgent = urgent
        self.batch = batch
        self.arrival = arrival
        self.deadline = deadline
        self.order = order
        self.state = WAITING
        self.pool = None
        self.admitted_at = None
        # Called (no arguments) when the queue admits or refuses this
        # ticket after arrive() returned; set it before waiting.
        self.wake = None

    @property
    def waited(self):
        """Seconds between arrival and admission (None if not admitted)."""
        if self.admitted_at is None:
            return None
        return self.admitted_at - self.arrival

    def __repr__(self):
        return '<Ticket p=%d %s %s>' % (self.priority, self.tenant,
                                        self.state)


class SlotPool(object):
    """A number of slots, how many are in use, and the utilisation since
    the pool last adapted."""

    def __init__(self, name, capacity, minimum, maximum, now):
        if not minimum <= capacity <= maximum:
            raise ValueError('%s: %d slots not within [%d, %d]'
                             % (name, capacity, minimum, maximum))
        self.name = name
        self.capacity = capacity
        self.minimum = minimum
        self.maximum = maximum
        self.in_use = 0
        # A request had to wait while this pool could have served it.
        self.pressed = False
        self._busy_area = 0.0
        self._since = now
        self._last_change = now

    def _integrate(self, now):
        self._busy_area += self.in_use * max(0.0, now - self._last_change)
        self._last_change = max(now, self._last_change)

    def has_free(self):
        return self.in_use < self.capacity

    def take(self, now):
        self._integrate(now)
        self.in_use += 1

    def give(self, now):
        self._integrate(now)
        self.in_use -= 1

    def utilisation(self, now):
        """Time-averaged share of slots in use since the last adaptation."""
        self._integrate(now)
        if self.capacity <= 0:
            # No slot is free: a pool shrunk to nothing can grow again.
            return 1.0
        elapsed = now - self._since
        if elapsed <= 0:
            return 0.0
        return self._busy_area / (self.capacity * elapsed)

    def adapt(self, now, low, high):
        """One step of the provisioning loop; the event name, or None."""
        utilisation = self.utilisation(now)
        old = self.capacity
        if utilisation >= high and self.pressed:
            self.capacity = min(self.maximum, max(1, 2 * old))
        elif utilisation <= low:
            self.capacity = max(self.minimum, old - 1)
        self.pressed = False
        self._busy_area = 0.0
        self._since = now
        if self.capacity > old:
            return EVENT_GROW
        if self.capacity < old:
            return EVENT_SHRINK
        return None


class DeviceQueue(object):
    """Admission to one device.  Not thread-safe: one per device in one
    process, called from green threads that do not yield inside it.

    :param conf: the queue's settings, a
        :class:`swift_mass.conf.QueueConf` (the options it reads:
        slots_per_device, batch_slots, deadline, priority_slack,
        max_refusals_per_minute, urgent_tenants, urgent_share,
        urgent_idle_seconds, lend_reserved_slots, adaptive_slots and the
        adaptive_* values).
    :param clock: a callable returning seconds (monotonic in production).
    :param on_event: called with EVENT_* names (mode switches, adaptation,
        admissions past the deadline).
    :raises ValueError: for a conf without slots (its queue is off).
    """

    def __init__(self, conf, clock, on_event=None):
        if conf.slots_per_device < 1:
            raise ValueError('a device queue needs at least one slot')
        self.conf = conf
        self.clock = clock
        self.on_event = on_event
        now = clock()
        self.general = SlotPool('slots', conf.slots_per_device,
                                conf.adaptive_min_slots,
                                conf.adaptive_max_slots, now)
        self.batch = SlotPool('batch_slots', conf.batch_slots,
                              conf.adaptive_min_batch_slots,
                              conf.adaptive_max_batch_slots, now)
        self.mode = SHARED
        self._last_urgent = None
        self._next_adapt = (now + conf.adaptive_interval
                            if conf.adaptive_slots else None)
        # Waiters by lane (urgent, batch): within a lane every waiter may
        # use the same slots, so only each lane's head needs looking at.
        self._lanes = {}
        self._deadlines = []
        self._sequence = itertools.count()
        self._urgent_running = 0
        self._urgent_waiting = 0
        self._batch_waiting = 0
        self._normal_in_general = 0
        self.waiting = 0
        self.waiting_by_priority = {}
        self.admitted = 0
        self.admitted_after_wait = 0
        self.refused = 0
        self.admitted_past_deadline = 0
        self._refusal_times = collections.deque()
        self.admitted_by_priority = {}
        self.wait_seconds_by_priority = {}

    # ------------------------------------------------------------ public

    def arrive(self, priority, tenant=None, batch=False, deadline=None,
               urgent=False):
        """A request for a slot: the returned ticket is ADMITTED now or
        WAITING (set its ``wake`` and wait).  It is urgent when ``urgent``
        says so (the proxy's mark) or its tenant is in urgent_tenants."""
        now = self.clock()
        self._advance(now)
        urgent = bool(urgent) or (tenant is not None and
                                  tenant in self.conf.urgent_tenants)
        if urgent:
            self._last_urgent = now
            self._set_mode(ISOLATED)
        wait = self.conf.deadline if deadline is None else deadline
        seq = next(self._sequence)
        ticket = Ticket(priority, tenant, urgent, bool(batch), now,
                        now + wait,
                        (now - priority * self.conf.priority_slack, seq))
        if not self.waiting:
            # Nobody to go before: admit without touching the heaps (the
            # common case, kept cheap).
            pool = self._pool_for(ticket)
            if pool is not None:
                self._grant(ticket, pool, now)
                return ticket
        lane = (urgent, ticket.batch)
        heapq.heappush(self._lanes.setdefault(lane, []),
                       (ticket.order, ticket))
        heapq.heappush(self._deadlines, (ticket.deadline, seq, ticket))
        self.waiting += 1
        self.waiting_by_priority[priority] = \
            self.waiting_by_priority.get(priority, 0) + 1
        if urgent:
            self._urgent_waiting += 1
        if ticket.batch:
            self._batch_waiting += 1
        self._admit(now, arriving=ticket)
        self._note_pressure()
        return ticket

    def release(self, ticket):
        """Give back an admitted ticket's slot, or withdraw a waiting one;
        later calls for the same ticket do nothing."""
        now = self.clock()
        if ticket.state == ADMITTED:
            ticket.pool.give(now)
            if ticket.pool is self.general and not ticket.urgent:
                self._normal_in_general -= 1
            if ticket.urgent:
                self._urgent_running -= 1
                self._last_urgent = now
            ticket.state = RELEASED
        elif ticket.state == WAITING:
            self._stop_waiting(ticket, CANCELLED)
        else:
            return
        self._advance(now)
        self._admit(now)

    def poll(self):
        """Apply what time alone changes (deadlines, mode, adaptation) and
        admit whoever can now be."""
        now = self.clock()
        self._advance(now)
        self._admit(now)

    def wake_at(self):
        """The next clock time at which poll() may change something without
        any arrival or release, or None."""
        times = []
        while self._deadlines and self._deadlines[0][2].state != WAITING:
            heapq.heappop(self._deadlines)
        if self._deadlines:
            times.append(self._deadlines[0][0])
        if self._can_share():
            times.append(self._last_urgent + self.conf.urgent_idle_seconds)
        if self._next_adapt is not None and self.waiting:
            times.append(self._next_adapt)
        return min(times) if times else None

    def reserved_slots(self):
        """General slots other tenants may not use while isolated:
        ceil(slots x urgent_share), but at most slots - 1, so that the
        other tenants always keep one slot and nobody waits forever."""
        share = self.conf.urgent_share
        if share <= 0:
            return 0
        capacity = self.general.capacity
        wanted = -(-capacity * share // 1)  # ceil
        return int(max(0, min(wanted, capacity - 1)))

    def stats(self):
        """The queue's state and counts, JSON-serialisable, brought up to
        date first (poll()): a device nobody called since its urgent
        tenants went idle reports the shared mode it is in."""
        self.poll()
        return {
            'mode': self.mode,
            'slots': self.general.capacity,
            'slots_in_use': self.general.in_use,
            'batch_slots': self.batch.capacity,
            'batch_slots_in_use': self.batch.in_use,
            'reserved_slots': (self.reserved_slots()
                               if self.mode == ISOLATED else 0),
            'waiting': self.waiting,
            'waiting_by_priority': dict(
                (priority, count) for priority, count
                in self.waiting_by_priority.items() if count),
            'admitted': self.admitted,
            'admitted_after_wait': self.admitted_after_wait,
            'refused': self.refused,
            'refusals_left': (self.conf.max_refusals_per_minute -
                              len(self._recent_refusals(self.clock()))),
            'admitted_past_deadline': self.admitted_past_deadline,
            'admitted_by_priority': dict(self.admitted_by_priority),
            'wait_seconds_by_priority': dict(self.wait_seconds_by_priority),
        }

    # ------------------------------------------------------------ inside

    def _emit(self, event):
        if self.on_event is not None:
            self.on_event(event)

    def _set_mode(self, mode):
        if self.mode != mode:
            self.mode = mode
            self._emit(EVENT_ISOLATED if mode == ISOLATED else EVENT_SHARED)

    def _can_share(self):
        return (self.mode == ISOLATED and not self._urgent_running and
                not self._urgent_waiting)

    def _advance(self, now):
        while self._deadlines and self._deadlines[0][0] <= now:
            ticket = heapq.heappop(self._deadlines)[2]
            if ticket.state != WAITING:
                continue
            if self._may_refuse(now):
                self._stop_waiting(ticket, REFUSED)
                self.refused += 1
            else:
                self._stop_waiting(ticket, ADMITTED)
                self._grant(ticket, self.general, now)
                self.admitted_past_deadline += 1
                self._emit(EVENT_PAST_DEADLINE)
            if ticket.wake is not None:
                ticket.wake()
        if self._can_share() and \
                now - self._last_urgent >= self.conf.urgent_idle_seconds:
            self._set_mode(SHARED)
        if self._next_adapt is not None and now >= self._next_adapt:
            self._note_pressure()
            for pool in (self.general, self.batch):
                event = pool.adapt(now, self.conf.adaptive_low,
                                   self.conf.adaptive_high)
                if event:
                    self._emit(event)
            self._next_adapt = now + self.conf.adaptive_interval

    def _recent_refusals(self, now):
        """The times of the refusals of the last REFUSAL_WINDOW."""
        times = self._refusal_times
        while times and times[0] <= now - REFUSAL_WINDOW:
            times.popleft()
        return times

    def _may_refuse(self, now):
        """True, and counted, while the refusal budget lasts."""
        times = self._recent_refusals(now)
        if len(times) >= self.conf.max_refusals_per_minute:
            return False
        times.append(now)
        return True

    def _note_pressure(self):
        # A pool is pressed when requests it could serve are kept waiting.
        if self.waiting:
            self.general.pressed = True
        if self._batch_waiting:
            self.batch.pressed = True

    def _stop_waiting(self, ticket, state):
        # The ticket stays in its lane and the deadline heap until it
        # reaches their head: removing it from the middle costs more.
        ticket.state = state
        self.waiting -= 1
        self.waiting_by_priority[ticket.priority] -= 1
        if ticket.urgent:
            self._urgent_waiting -= 1
        if ticket.batch:
            self._batch_waiting -= 1

    def _pool_for(self, ticket):
        if ticket.batch and self.batch.has_free():
            return self.batch
        if not self.general.has_free():
            return None
        if ticket.urgent or self.mode == SHARED:
            return self.general
        capacity = self.general.capacity  # lending: the module's docstring
        if self._normal_in_general < capacity - self.reserved_slots() or (
                self.conf.lend_reserved_slots and not self._urgent_waiting
                and self.general.in_use < capacity - 1):
            return self.general
        return None

    def _admit(self, now, arriving=None):
        while True:
            best, best_pool = None, None
            for lane in self._lanes.values():
                while lane and lane[0][1].state != WAITING:
                    heapq.heappop(lane)
                if not lane:
                    continue
                head = lane[0][1]
                if best is not None and best.order < head.order:
                    continue
                pool = self._pool_for(head)
                if pool is not None:
                    best, best_pool = head, pool
            if best is None:
                return
            self._stop_waiting(best, ADMITTED)
            self._grant(best, best_pool, now)
            if best is not arriving and best.wake is not None:
                best.wake()

    def _grant(self, ticket, pool, now):
        ticket.state = ADMITTED
        ticket.pool = pool
        ticket.admitted_at = now
        pool.take(now)
        if pool is self.general and not ticket.urgent:
            self._normal_in_general += 1
        if ticket.urgent:
            self._urgent_running += 1
        self.admitted += 1
        waited = now - ticket.arrival
        if waited > 0:
            self.admitted_after_wait += 1
        priority = ticket.priority
        self.admitted_by_priority[priority] = \
            self.admitted_by_priority.get(priority, 0) + 1
        self.wait_seconds_by_priority[priority] = \
            self.wait_seconds_by_priority.get(priority, 0.0) + waited
