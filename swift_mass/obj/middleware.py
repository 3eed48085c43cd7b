"""
``mass_queue``: the storage-node half of Mass, a priority queue per device.

Tags.  The filter reads the priority the proxy filter ``mass`` put on a
backend request (``X-Backend-Mass-Priority``), the tenant
(``X-Backend-Mass-Tenant``) and its workload class (``X-Backend-Mass-Class``:
read, write or mixed), and records them in the WSGI environ
(``mass.priority``, ``mass.tenant``, ``mass.class``) for the object server.
A missing or malformed priority gets ``default_priority``, never an error;
replication traffic (REPLICATE, SSYNC, ``X-Backend-Replication: true``) gets
``background_priority``, whatever it carries.

Queue.  Every request for one of the server's devices
(``/<device>/<partition>/...``, the device a directory under ``devices``)
needs one of the device's ``slots_per_device`` slots; when none is free
it waits, without blocking the server's other green threads.  Waiters are
admitted in the order of ``arrival - priority x priority_slack``: a higher
priority goes first, but a request is only ever overtaken by requests that
arrived less than ``(their priority - its priority) x priority_slack``
seconds after it, so nothing starves (``swift_mass.obj.device_queue`` has the
details).  A request that waited ``deadline`` seconds is answered ``503
Service Unavailable`` with ``Retry-After``; the proxy then tries another
node, as for any busy node (and, like any 5xx, counts it towards
error-limiting that node: at most ``max_refusals_per_minute`` requests per
device are refused in a minute, and past that a request whose deadline
passes is admitted over the slot count, so that refusals never get a node
error-limited for every tenant).  The slot is held until the response body is
fully sent or closed, including when the client goes away mid-body, and
also given back when the object server raises.

* Urgent tenants may keep ``urgent_share`` of each device's slots to
  themselves while they are active, and lend them to everyone once they
  have been idle ``urgent_idle_seconds``.  A tenant is urgent when it is
  in ``urgent_tenants`` or when the proxy marks its requests
  ``X-Backend-Mass-Urgent: true`` (an operator marked its account with
  ``swift-mass urgent TENANT --on``; see ``swift_mass.proxy.urgent``).
* With ``adaptive_slots``, each device's slot counts follow utilisation
  between bounds: doubling when the slots are busy and requests wait,
  shrinking by one when they are mostly idle.
* ``batch_slots``: PUTs of tenants whose Mass policy has the method
  ``batch`` (the proxy tags them ``X-Backend-Mass-Batch: true``; by
  default the method of write-dominated tenants) may use that many extra
  slots per device, so more of them run at once and the
  filesystem commits their fsyncs together.  Each object is still fsynced
  before its 201.  Give the object server at least that many tpool threads
  (``eventlet_tpool_num_threads``, default 20) for the fsyncs to overlap.

Slots are per object-server worker: with ``workers = N`` a device admits up
to N x ``slots_per_device`` requests at once.  SSYNC is never queued: one
SSYNC request streams a whole partition for minutes, and Swift already
limits it with ``replication_concurrency_per_device``.

``GET /mass_queue`` (a path without a device) answers the state of every
device's queue in this worker as JSON, for operators; object servers listen
on the storage network only, like recon.

Place it immediately left of ``object-server``::

    [pipeline:main]
    pipeline = healthcheck recon mass_queue object-server

    [filter:mass_queue]
    use = egg:swift_mass#mass_queue

Every option, its default and meaning, and every metric, is in
``etc/object-server.conf-sample``.  Options are validated when the object
server starts; a bad one stops it with a message naming the option and the
allowed values.  The ``log_*`` and ``log_statsd_*`` options apply; metrics
are emitted under ``mass_queue.``.
"""
import json
import os
import time

from eventlet.event import Event

from swift.common.swob import HTTPServiceUnavailable, wsgi_to_str, \
    wsgi_unquote
from swift.common.utils import ClosingIterator, config_true_value, \
    get_logger

from swift_mass.obj import device_queue
from swift_mass import tags
from swift_mass.conf import ConfigError, bool_option, float_option, int_option

SECTION = 'filter:mass_queue'
REPLICATION_METHODS = ('REPLICATE', 'SSYNC')
# Holds a slot for a whole partition's transfer; see the module docstring.
UNQUEUED_METHODS = ('SSYNC',)
ADMIN_PATH = '/mass_queue'
# Operators mark few tenants urgent; the cap keeps a flood of forged
# backend requests (storage network only) from growing the set.
MAX_URGENT_SEEN = 1000


class SlotHoldingIterator(ClosingIterator):
    """The response body; closing it, iterating it to the end or failing
    while iterating gives the request's slot back (once)."""
    __slots__ = ('release',)

    def __init__(self, app_iter, release):
        super(SlotHoldingIterator, self).__init__(app_iter)
        self.release = release

    def close(self):
        try:
            super(SlotHoldingIterator, self).close()
        finally:
            self.release()


def _list_option(conf, option):
    return frozenset(item.strip() for item in
                     str(conf.get(option, '')).split(',') if item.strip())


def _check_bounds(conf, prefix, value, value_option, default_min,
                  default_max, lowest):
    minimum = int_option(conf, SECTION, 'adaptive_min_%s' % prefix,
                         default_min, lowest)
    maximum = int_option(conf, SECTION, 'adaptive_max_%s' % prefix,
                         default_max, 0)
    if not minimum <= value <= maximum:
        raise ConfigError(
            '[%s] adaptive_min_%s = %d, %s = %d, adaptive_max_%s = %d are '
            'not valid; allowed: adaptive_min_%s <= %s <= adaptive_max_%s'
            % (SECTION, prefix, minimum, value_option, value, prefix,
               maximum, prefix, value_option, prefix))
    return minimum, maximum


class MassQueueMiddleware(object):

    def __init__(self, app, conf, logger=None, clock=time.monotonic):
        self.app = app
        self.logger = logger or get_logger(
            conf, log_route='mass_queue', statsd_tail_prefix='mass_queue')
        self.clock = clock
        self.default_priority = int_option(
            conf, SECTION, 'default_priority', tags.DEFAULT_PRIORITY,
            tags.PRIORITY_MIN, tags.PRIORITY_MAX)
        self.background_priority = int_option(
            conf, SECTION, 'background_priority', tags.BACKGROUND_PRIORITY,
            tags.PRIORITY_MIN, tags.PRIORITY_MAX)
        self.slots_per_device = int_option(
            conf, SECTION, 'slots_per_device', 8, 0)
        self.deadline = float_option(conf, SECTION, 'deadline', 3.0, 0.0,
                                     3600.0)
        self.retry_after = int_option(conf, SECTION, 'retry_after', 1, 0)
        self.max_refusals = int_option(conf, SECTION,
                                       'max_refusals_per_minute', 5, 0)
        priority_slack = float_option(conf, SECTION, 'priority_slack', 0.25,
                                      0.0, 3600.0)
        self.slack = device_queue.linear_slack(
            priority_slack, range(tags.PRIORITY_MIN, tags.PRIORITY_MAX + 1))
        self.urgent_tenants = _list_option(conf, 'urgent_tenants')
        self.urgent_share = float_option(conf, SECTION, 'urgent_share', 0.5,
                                         0.0, 1.0)
        self.urgent_idle = float_option(conf, SECTION, 'urgent_idle_seconds',
                                        30.0, 0.0)
        self.batch_slots = int_option(conf, SECTION, 'batch_slots', 0, 0)
        self.adaptive = None
        self.slot_bounds = self.batch_bounds = None
        if bool_option(conf, SECTION, 'adaptive_slots', False) and \
                self.slots_per_device:
            low = float_option(conf, SECTION, 'adaptive_low', 0.3, 0.0, 1.0)
            high = float_option(conf, SECTION, 'adaptive_high', 0.9, 0.0,
                                1.0)
            if low >= high:
                raise ConfigError(
                    '[%s] adaptive_low = %g, adaptive_high = %g are not '
                    'valid; allowed: adaptive_low < adaptive_high'
                    % (SECTION, low, high))
            self.adaptive = device_queue.Adaptive(
                interval=float_option(conf, SECTION, 'adaptive_interval',
                                      10.0, 0.1),
                low=low, high=high)
            # Every request needs a general slot when the batch slots are
            # busy: at least one must stay.
            self.slot_bounds = _check_bounds(
                conf, 'slots', self.slots_per_device, 'slots_per_device',
                1, 4 * self.slots_per_device, 1)
            self.batch_bounds = _check_bounds(
                conf, 'batch_slots', self.batch_slots, 'batch_slots',
                min(1, self.batch_slots), 4 * self.batch_slots, 0)
        # The object server's own option: a queue only for a device it has,
        # so that requests naming others cannot grow self.queues.
        self.devices = conf.get('devices', '/srv/node')
        self.queues = {}
        # tenants the proxies marked urgent, for GET /mass_queue
        self.urgent_seen = set()

    # ------------------------------------------------------------ tags

    def _tag(self, env, method):
        """Record the Mass tags in env; return the statsd priority label."""
        if (method in REPLICATION_METHODS or
                config_true_value(env.get('HTTP_X_BACKEND_REPLICATION'))):
            env[tags.ENV_PRIORITY] = self.background_priority
            label = 'background'
        else:
            priority = tags.parse_priority(
                env.get('HTTP_X_BACKEND_MASS_PRIORITY'),
                self.default_priority)
            env[tags.ENV_PRIORITY] = priority
            label = str(priority)
        self.logger.increment('priority.' + label)
        tenant = env.get('HTTP_X_BACKEND_MASS_TENANT')
        if tenant:
            env[tags.ENV_TENANT] = wsgi_unquote(tenant)
        cls = env.get('HTTP_X_BACKEND_MASS_CLASS')
        if cls in tags.CLASSES:
            env[tags.ENV_CLASS] = cls
            self.logger.increment('class.' + cls)
        return label

    # ------------------------------------------------------------ queue

    def _queue_of(self, device):
        """The device's queue, or None for a device this server has not
        (the object server answers those itself, 507 or 400)."""
        queue = self.queues.get(device)
        if queue is None:
            if device in ('.', '..') or not os.path.isdir(
                    os.path.join(self.devices, device)):
                return None
            queue = self.queues[device] = device_queue.DeviceQueue(
                self.slots_per_device, self.clock, self.slack, self.deadline,
                batch_slots=self.batch_slots,
                urgent_tenants=self.urgent_tenants,
                urgent_share=self.urgent_share,
                urgent_idle=self.urgent_idle, adaptive=self.adaptive,
                slot_bounds=self.slot_bounds, batch_bounds=self.batch_bounds,
                max_refusals_per_minute=self.max_refusals,
                on_event=lambda event: self.logger.increment(
                    'queue.' + event))
        return queue

    @staticmethod
    def _path_parts(env):
        """(device, the rest after the partition) of a storage request, or
        None for a path without a device and a numeric partition."""
        parts = env.get('PATH_INFO', '').split('/', 3)
        if len(parts) < 3 or parts[0] or not parts[1] or \
                not parts[2].isdigit():
            return None
        return parts[1], parts[3] if len(parts) > 3 else ''

    @staticmethod
    def _tenant(env, rest):
        """The tenant as a native string, comparable with the configured
        urgent_tenants."""
        tenant = env.get(tags.ENV_TENANT)
        if tenant is None:
            # No proxy tag (a request not through a Mass proxy): the
            # account in the (already unquoted) path is the tenant.
            tenant = rest.split('/', 1)[0]
        return wsgi_to_str(tenant) if tenant else None

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

    def _admin(self, env, start_response):
        body = json.dumps({
            'slots_per_device': self.slots_per_device,
            'batch_slots': self.batch_slots,
            'deadline': self.deadline,
            'max_refusals_per_minute': self.max_refusals,
            'urgent_tenants': sorted(self.urgent_tenants),
            'urgent_seen': sorted(self.urgent_seen),
            'adaptive_slots': self.adaptive is not None,
            'devices': dict((device, queue.stats()) for device, queue
                            in self.queues.items()),
        }, sort_keys=True).encode('utf-8')
        start_response('200 OK', [('Content-Type', 'application/json'),
                                  ('Content-Length', str(len(body)))])
        return [body]

    def __call__(self, env, start_response):
        method = env.get('REQUEST_METHOD')
        if method == 'GET' and env.get('PATH_INFO') == ADMIN_PATH:
            return self._admin(env, start_response)
        label = self._tag(env, method)
        parts = self._path_parts(env) if self.slots_per_device else None
        if parts is None or method in UNQUEUED_METHODS:
            return self.app(env, start_response)
        device, rest = parts
        queue = self._queue_of(device)
        if queue is None:
            return self.app(env, start_response)
        urgent = env.get(tags.URGENT_ENV) == tags.URGENT
        tenant = self._tenant(env, rest) \
            if self.urgent_tenants or urgent else None
        if urgent and len(self.urgent_seen) < MAX_URGENT_SEEN:
            self.urgent_seen.add(tenant or '')
        batch = (self.batch_slots and method == 'PUT' and
                 env.get(tags.BATCH_ENV) == tags.BATCH)
        ticket = queue.arrive(env[tags.ENV_PRIORITY], tenant, batch,
                              urgent=urgent)
        if ticket.state == device_queue.WAITING:
            # A statsd packet costs the object server some 20 us of CPU:
            # a request admitted at once sends none beyond its priority.
            self.logger.timing('queue.depth', queue.waiting)
            self._wait(queue, ticket)
            waited = ticket.waited
            if waited is None:  # refused: it waited until now
                waited = self.clock() - ticket.arrival
            self.logger.timing('queue.wait.' + label, waited * 1000.0)
        if ticket.state != device_queue.ADMITTED:
            self.logger.increment('queue.refused')
            return HTTPServiceUnavailable(
                body=b'Device %s busy; retry later.\n' % device.encode(
                    'latin-1'),
                headers={'Retry-After': str(self.retry_after)})(
                    env, start_response)
        try:
            app_iter = self.app(env, start_response)
        except BaseException:
            queue.release(ticket)
            raise
        return SlotHoldingIterator(app_iter, lambda: queue.release(ticket))


def filter_factory(global_conf, **local_conf):
    conf = global_conf.copy()
    conf.update(local_conf)

    def mass_queue_filter(app):
        return MassQueueMiddleware(app, conf)
    return mass_queue_filter
