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
"""One object-server worker's admission to its devices, for ``mass_queue``
(:class:`swift_mass.obj.middleware.MassQueueMiddleware`): in active mode a
:class:`~swift_mass.obj.device_queue.DeviceQueue` per device, a request
waiting for its own in its green thread (:class:`DeviceQueues`); in
observe mode, what those queues would have seen (:class:`ObservedDevices`).

No WSGI: the middleware reads the request, answers it and gives its slot
back once its body is sent.
"""
from collections.abc import Mapping
import functools

from eventlet.event import Event

from swift_mass import metrics
from swift_mass.obj import device_queue

# Operators mark few tenants urgent; the cap keeps a flood of forged
# backend requests (storage network only) from growing the set.
MAX_URGENT_SEEN = 1000


class DeviceQueues(Mapping):
    """``{device: DeviceQueue}`` of one worker, each queue made at its
    device's first request with the settings of ``conf`` (a
    :class:`swift_mass.conf.QueueConf`), its events counted as
    ``queue.<event>``; and the tenants the proxies marked urgent
    (``urgent_seen``, for GET /mass_queue).

    :param clock: the queues' clock (monotonic seconds)
    """

    def __init__(self, conf, logger, clock):
        self.conf = conf
        self.logger = logger
        self.clock = clock
        self._queues = {}
        self.urgent_seen = set()

    def __getitem__(self, device):
        return self._queues[device]

    def __iter__(self):
        return iter(self._queues)

    def __len__(self):
        return len(self._queues)

    def stats(self):
        """``{device: its queue's stats}``."""
        return dict((device, queue.stats()) for device, queue
                    in self._queues.items())

    def admit(self, device, method, priority, label, account, urgent=False,
              batch=False):
        """Admit a request to ``device`` once its queue does, waiting
        meanwhile (without blocking other green threads).

        :param label: the request's priority as statsd names it
        :param account: the account of the request's path, if it names one
        :param urgent: the proxy marked the request urgent
        :param batch: the proxy tagged the request batch (its tenant's
            policy has the method ``batch``): a PUT may take a batch slot
        :returns: the callable that gives the request's slot back (only its
            first call counts); None when the queue refused the request: it
            waited past its deadline
        """
        queue = self._queue_of(device)
        # The tenant is the path's account (no tag carries it:
        # docs/architecture.md, "Why no header names the tenant"), a
        # native string as the configured urgent_tenants are.
        tenant = (account or None) \
            if self.conf.urgent_tenants or urgent else None
        if urgent and len(self.urgent_seen) < MAX_URGENT_SEEN:
            self.urgent_seen.add(tenant or '')
        batch = self.conf.batch_slots and method == 'PUT' and batch
        ticket = queue.arrive(priority, tenant, batch, urgent=urgent)
        labels = {'device': device, 'priority': label}
        if ticket.state == device_queue.WAITING:
            # A statsd packet costs the object server CPU (docs/metrics.md,
            # "Cost"): a request admitted at once sends none beyond its
            # priority.
            metrics.timing(self.logger, 'queue.depth', 'depth',
                           queue.waiting, labels)
            self._wait(queue, ticket)
            waited = ticket.waited
            if waited is None:  # refused: it waited until now
                waited = self.clock() - ticket.arrival
            metrics.timing(self.logger, 'queue.wait.' + label,
                           'wait_timing', waited * 1000.0, labels)
        if ticket.state != device_queue.ADMITTED:
            metrics.increment(self.logger, 'queue.refused', 'refused',
                              labels)
            return None
        return functools.partial(queue.release, ticket)

    def _queue_of(self, device):
        queue = self._queues.get(device)
        if queue is None:
            queue = self._queues[device] = device_queue.DeviceQueue(
                self.conf, self.clock,
                on_event=lambda event: metrics.increment(
                    self.logger, 'queue.' + event, 'events',
                    {'device': device, 'event': event}))
        return queue

    def _wait(self, queue, ticket):
        event = Event()
        ticket.wake = event.send
        try:
            while ticket.state == device_queue.WAITING:
                wake_at = queue.wake_at()
                timeout = None if wake_at is None else \
                    max(0.0, wake_at - self.clock())
                event.wait(timeout)
                if ticket.state == device_queue.WAITING:
                    queue.poll()
        except BaseException:
            # Killed while waiting (client gone, server stopping): a
            # waiting ticket is withdrawn, an admitted one given back.
            queue.release(ticket)
            raise


class Observed(object):
    """In observe mode, what one device's queue would have seen: the
    requests running at once and at most, those that arrived, and of
    those, the ones that arrived while ``slots`` were running."""
    __slots__ = ('slots', 'in_flight', 'peak', 'arrived', 'would_wait')

    def __init__(self, slots):
        self.slots = slots
        self.in_flight = self.peak = self.arrived = self.would_wait = 0

    def arrive(self):
        """A request starts; whether it would have waited, and the
        callable that ends it (only its first call counts)."""
        self.arrived += 1
        waits = self.in_flight >= self.slots
        if waits:
            self.would_wait += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        ended = []

        def end():
            if not ended:
                ended.append(True)
                self.in_flight -= 1
        return waits, end

    def stats(self):
        return {'in_flight': self.in_flight,
                'peak_in_flight': self.peak, 'arrived': self.arrived,
                'would_wait': self.would_wait}


class ObservedDevices(Mapping):
    """In observe mode, ``{device: Observed}`` of one worker, each made at
    its device's first request: what its queue, of ``slots`` slots, would
    have seen."""

    def __init__(self, slots, logger):
        self.slots = slots
        self.logger = logger
        self._observed = {}

    def __getitem__(self, device):
        return self._observed[device]

    def __iter__(self):
        return iter(self._observed)

    def __len__(self):
        return len(self._observed)

    def stats(self):
        """``{device: what its queue would have seen}``."""
        return dict((device, seen.stats()) for device, seen
                    in self._observed.items())

    def arrive(self, device, label):
        """A request to ``device`` starts, admitted at once; counted as
        ``queue.would_wait`` if it would have waited.

        :param label: the request's priority as statsd names it
        :returns: the callable that ends it (only its first call counts)
        """
        seen = self._observed.get(device)
        if seen is None:
            seen = self._observed[device] = Observed(self.slots)
        waits, end = seen.arrive()
        if waits:
            metrics.increment(self.logger, 'queue.would_wait', 'would_wait',
                              {'device': device, 'priority': label})
        return end
