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
"""The ``mass_queue`` filter of Swift's object servers: the storage-node
half of Mass, a priority queue per device (:class:`MassQueueMiddleware`).

The filter reads requests and answers them; what it decides is in plain
classes of its own: the queues (:mod:`swift_mass.obj.queues`, over
:mod:`swift_mass.obj.device_queue`), the generation bumps
(:mod:`swift_mass.obj.bumps`) and the reports
(:mod:`swift_mass.obj.reports`).
"""
import functools
import json
import time

import eventlet

from swift.common.constraints import check_drive, check_utf8
from swift.common.registry import register_swift_info
from swift.common.request_helpers import split_and_validate_path
from swift.common.swob import HTTPException, HTTPServiceUnavailable, \
    Request, str_to_wsgi, wsgi_to_str
from swift.common.utils import ClosingIterator, config_true_value, \
    get_logger
from swift.common.wsgi import load_app_config

from swift_mass import metrics, tags
from swift_mass.conf import QueueConf
from swift_mass.generations import object_key
from swift_mass.generations.writer import GenerationWriter
from swift_mass.obj import bumps
from swift_mass.obj.queues import DeviceQueues, ObservedDevices
from swift_mass.obj.reports import WorkerReports
from swift_mass.ring_devices import ring_devices

REPLICATION_METHODS = ('REPLICATE', 'SSYNC')
# Swift's own header, set by its replicators and reconstructor.
REPLICATION_ENV = tags.environ_key('X-Backend-Replication')
# Holds a slot for a whole partition's transfer; see MassQueueMiddleware.
UNQUEUED_METHODS = ('SSYNC',)
# The object server's paths (swift.obj.server): REPLICATE names a
# partition (and maybe suffixes), every other method an object.
PARTITION_METHODS = ('REPLICATE',)


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


class MassQueueMiddleware(object):
    """Tags each backend request with its Mass priority and class, and
    admits it to its device through a priority queue.

    Tags.  The filter reads the priority the proxy filter ``mass`` put on a
    backend request (``X-Backend-Mass-Priority``) and its tenant's workload
    class (``X-Backend-Mass-Class``: read, write or mixed), and records
    them in the WSGI environ (``mass.priority``, ``mass.class``) for the
    object server.  A missing or malformed priority gets
    ``default_priority``, never an error; replication traffic (REPLICATE,
    SSYNC, ``X-Backend-Replication: true``) gets ``background_priority``,
    whatever it carries.

    Tenant.  The tenant of a request is the account of its path
    (``/<device>/<partition>/<account>/<container>/<object>``); no tag
    carries it (why: docs/architecture.md, "Why no header names the
    tenant").

    Queue.  Every request the object server would serve from one of its
    devices (``/<device>/<partition>/...``; the device a directory under
    ``devices``, and mounted when ``mount_check`` is on, as Swift's
    ``check_drive`` says) needs one of the device's ``slots_per_device``
    slots; when none is free it waits, without blocking the server's other
    green threads.  A request the object server refuses by its path alone
    (a bad path: 400 or 412; a device it has not or not mounted: 507) goes
    straight through to it, answered as without Mass.  Waiters are
    admitted in the order of ``arrival - priority x priority_slack``: a
    higher priority goes first, but a request is only ever overtaken by
    requests that arrived less than ``(their priority - its priority) x
    priority_slack`` seconds after it, so nothing starves
    (``swift_mass.obj.device_queue`` has the details).  A request that
    waited ``deadline`` seconds is answered ``503 Service Unavailable``
    with ``Retry-After``; the proxy then tries another node, as for any
    busy node (and, like any 5xx, counts it towards error-limiting that
    node: at most ``max_refusals_per_minute`` requests per device are
    refused in a minute, and past that a request whose deadline passes is
    admitted over the slot count, so that refusals never get a node
    error-limited for every tenant).  The slot is held until the response
    body is fully sent or closed, including when the client goes away
    mid-body, and also given back when the object server raises.

    * Urgent tenants may keep ``urgent_share`` of each device's slots to
      themselves while they are active, and lend them to everyone once they
      have been idle ``urgent_idle_seconds``.  A tenant is urgent when its
      account (the path's) is in ``urgent_tenants`` or when the proxy marks
      its requests
      ``X-Backend-Mass-Urgent: true`` (an operator marked its account with
      ``swift-mass urgent TENANT --on``; see ``swift_mass.proxy.marks``).
    * With ``adaptive_slots``, each device's slot counts follow utilisation
      between bounds: doubling when the slots are busy and requests wait,
      shrinking by one when they are mostly idle.
    * ``batch_slots``: PUTs of tenants whose Mass policy has the method
      ``batch`` (the proxy tags them ``X-Backend-Mass-Batch: true``; by
      default the method of write-dominated tenants) may use that many
      extra slots per device, so more of them run at once and the
      filesystem commits their fsyncs together.  Each object is still
      fsynced before its 201.  Give the object server at least that many
      tpool threads (``eventlet_tpool_num_threads``, default 20) for the
      fsyncs to overlap.

    Slots are per object-server worker: with ``workers = N`` a device
    admits up to N x ``slots_per_device`` requests at once.  SSYNC is never
    queued: one SSYNC request streams a whole partition for minutes, and
    Swift already limits it with ``replication_concurrency_per_device``.

    Generations.  With ``redis_url`` (the Redis of the proxies' ``mass``),
    every object PUT, POST and DELETE the object server handles, whoever
    sent it, gives the object a new generation once the object server has
    written it and before its answer leaves (at most ``bump_wait_ms``
    later, whatever Redis does), and the filter registers the ring devices
    it serves (those that pass Swift's device check); the proxies' caches
    serve a body only while its generation is unchanged, and trust
    generations only while every device of their object rings is
    registered (``swift_mass.generations``).

    ``GET /mass_queue`` (a path without a device) answers the state of
    every device's queue as JSON, for operators; object servers listen on
    the storage network only, like recon.  Every worker of the server
    writes its queues every ``stats_interval`` seconds to
    ``<recon_cache_path>/mass_queue.recon`` (keyed by its pid, with Swift's
    ``dump_recon_cache``, as Swift's replicator workers write their stats),
    from its first request on: the worker that answers writes its own,
    reads everyone's and answers ``workers`` (``{pid: {time, devices,
    urgent_seen}}``, the reports of its server's port younger than
    ``2 x stats_interval`` whose process lives) and ``urgent_seen_all``
    beside the keys it always answered, which stay its own.

    ``mode = observe`` (the default is ``active``): every request is
    admitted at once, whatever its device's slots and its priority (no
    queue is made, so none holds a slot nor makes anyone wait, and no
    request is refused); the filter still records and counts each
    request's priority and class, still bumps generations (the proxies'
    caches rely on them, whatever this server's mode) and still answers
    ``GET /mass_queue`` (with ``"mode": "observe"``).  Instead of its
    queues it reports, per device, what they would have seen
    (:class:`swift_mass.obj.queues.Observed`): how many requests ran at
    once, and how many arrived while ``slots_per_device`` were running (in
    active mode they would have waited, unless a batch or urgent slot took
    them), also counted as ``queue.would_wait``.  The mode is read at
    start-up: a reload (``swift-init object-server reload``, SIGHUP)
    switches it, and the new workers start with no queue.

    Place it immediately left of ``object-server``::

        [pipeline:main]
        pipeline = healthcheck recon mass_queue object-server

        [filter:mass_queue]
        use = egg:swift_mass#mass_queue

    Every option, its default and meaning, and every metric, is in
    ``etc/object-server.conf-sample``; :class:`swift_mass.conf.QueueConf`
    reads them once, with the object server's own options (``devices``,
    ``mount_check``, its address and ports) as the object server app was
    given them: from ``[app:object-server]`` over ``[DEFAULT]``
    (:func:`object_server_conf`), not from the filter's section.  Options
    are validated when the object server starts; a bad one stops it with a
    message naming the option and the allowed values.  The ``log_*`` and
    ``log_statsd_*`` options apply; metrics are emitted under
    ``mass_queue.``, and with Swift's ``statsd_label_mode`` (Swift 2.36 and
    later) also as labeled ``swift_mass_queue_*`` metrics
    (:mod:`swift_mass.metrics`; every name is in docs/metrics.md).
    """

    def __init__(self, app, conf, logger=None, clock=time.monotonic,
                 spawn=eventlet.spawn_n, sleep=eventlet.sleep):
        self.app = app
        self.conf = QueueConf(conf, server_conf=object_server_conf(conf))
        self.logger = logger or get_logger(
            conf, log_route='mass_queue', statsd_tail_prefix='mass_queue')
        metrics.attach(self.logger, conf, metrics.QUEUE_PREFIX)
        self.queues = DeviceQueues(self.conf, self.logger, clock)
        self.observed = ObservedDevices(self.conf.slots_per_device,
                                        self.logger)
        self.reports = WorkerReports(self.conf, self.queues, self.observed,
                                     self.logger, spawn=spawn, sleep=sleep)
        self.generations = None
        if self.conf.redis_url:
            self.generations = GenerationWriter(
                self.conf.redis_url, self.logger, ttl=self.conf.generation_ttl,
                bump_wait=self.conf.bump_wait)
            # Registered from the start, so the proxies trust generations
            # before anyone writes (the heartbeat runs once the server's
            # hub does; __call__ starts it again in a forked worker).
            self.generations.start(self._local_devices)
        else:
            self.logger.info('mass_queue: no redis_url, so this object '
                             'server bumps no generations and the proxies\' '
                             'caches validate every hit against Swift')
        if not self.conf.active:
            self.logger.info('mass_queue: observe mode: every request is '
                             'admitted at once')
        register_swift_info('mass_queue', mode=self.conf.mode,
                            slots_per_device=self.conf.slots_per_device,
                            batch_slots=self.conf.batch_slots,
                            adaptive_slots=self.conf.adaptive_slots,
                            admin_path=tags.QUEUE_ADMIN_PATH)

    def __call__(self, env, start_response):
        method = env.get('REQUEST_METHOD')
        if method == 'GET' and env.get('PATH_INFO') == tags.QUEUE_ADMIN_PATH:
            return self._admin(env, start_response)
        if self.generations is not None:
            # once per process: a worker forked after __init__
            self.generations.start(self._local_devices)
        self.reports.start(env.get('SERVER_PORT'))
        label = self._tag(env, method)
        if method in UNQUEUED_METHODS:
            return self.app(env, start_response)
        target = device_and_account(env, method)
        if target is None:
            return self.app(env, start_response)
        device, account, key = target
        # Bumped whatever the device check below says: were it ever to
        # disagree with the object server's, a write the object server
        # serves is bumped still, and one it refuses (507) costs a bump,
        # not a stale read.
        app = self._app_for(env, method, account, key)
        # On every request, as the object server does: a device unmounted
        # since its queue was made gets its 507 at once.
        if not self.conf.slots_per_device or not self._serves(device):
            return app(env, start_response)
        if not self.conf.active:
            return self._observed(env, start_response, device, app, label)
        return self._queued(env, start_response, method, device, account,
                            label, app)

    # ------------------------------------------------------------ tags

    def _tag(self, env, method):
        """Record the Mass tags in env; return the statsd priority label."""
        if (method in REPLICATION_METHODS or
                config_true_value(env.get(REPLICATION_ENV))):
            env[tags.ENV_PRIORITY] = self.conf.background_priority
            label = 'background'
        else:
            priority = tags.parse_priority(env.get(tags.PRIORITY_ENV),
                                           self.conf.default_priority)
            env[tags.ENV_PRIORITY] = priority
            label = str(priority)
        self.logger.increment('priority.' + label)
        cls = env.get(tags.CLASS_ENV)
        if cls in tags.CLASSES:
            env[tags.ENV_CLASS] = cls
            self.logger.increment('class.' + cls)
        else:
            cls = 'unknown'
        labeled = metrics.labeled_only(self.logger)
        if labeled is not None:
            # one packet for what the legacy names need two
            labeled[0].increment(labeled[1] + 'requests', labels={
                'priority': label, 'class': cls})
        return label

    # ------------------------------------------------------------ devices

    def _serves(self, device):
        """Whether the object server serves ``device`` now: Swift's device
        check, with the object server's own devices and mount_check."""
        try:
            check_drive(self.conf.devices, device, self.conf.mount_check)
        except ValueError:
            return False
        return True

    def _local_devices(self):
        # only what the object server serves: a registration says its
        # writes are bumped, and only a write it serves can be
        return ring_devices(self.conf.swift_dir,
                            local_to=(self.conf.ring_ip, self.conf.ring_port),
                            served=self._serves)

    # ------------------------------------------------------------ serving

    def _app_for(self, env, method, account, key):
        """The object server, or for a client's object write, the object
        server with a generation bump (replication moves versions that
        were written already; a move's write may keep the version)."""
        if self.generations is None or key is None:
            return self.app
        keeps_version = env.get(tags.KEEPS_VERSION_ENV) == tags.KEEPS_VERSION
        if not bumps.is_bumped(
                method, config_true_value(env.get(REPLICATION_ENV)),
                keeps_version):
            if keeps_version and method in bumps.WRITE_METHODS:
                metrics.increment(
                    self.logger, 'generations.kept_version', 'generations',
                    {'event': 'kept_version'})
            return self.app
        return functools.partial(
            bumps.BumpedWrite(self.app, self.generations, self.logger),
            key=key, tenant=str_to_wsgi(account))

    def _queued(self, env, start_response, method, device, account, label,
                app):
        """Serve the request once its device's queue admits it, or answer
        503 when it waited past its deadline."""
        release = self.queues.admit(
            device, method, env[tags.ENV_PRIORITY], label, account,
            urgent=env.get(tags.URGENT_ENV) == tags.URGENT,
            batch=env.get(tags.BATCH_ENV) == tags.BATCH)
        if release is None:
            return HTTPServiceUnavailable(
                body=b'Device %s busy; retry later.\n' % device.encode(
                    'utf-8'),
                headers={'Retry-After': str(self.conf.retry_after)})(
                    env, start_response)
        return serve_holding(app, env, start_response, release)

    def _observed(self, env, start_response, device, app, label):
        """Serve the request at once (observe mode), noting what its
        device's queue would have seen."""
        return serve_holding(app, env, start_response,
                             self.observed.arrive(device, label))

    def _admin(self, env, start_response):
        self.reports.start(env.get('SERVER_PORT'))
        body = json.dumps(self.reports.status(),
                          sort_keys=True).encode('utf-8')
        start_response('200 OK', [('Content-Type', 'application/json'),
                                  ('Content-Length', str(len(body)))])
        return [body]


def device_and_account(env, method):
    """(device, account or None, object key or None) of a request whose
    path names a device (``/<device>/<partition>/...``); None for any
    other (the object server answers those itself: 400 or 412)."""
    req = Request(env)
    if not check_utf8(wsgi_to_str(req.path_info), internal=True):
        return None
    try:
        key = None
        if method in PARTITION_METHODS:
            device = split_and_validate_path(req, 2, 3, True)[0]
            account = None
        else:
            device, _, account, container, obj = \
                split_and_validate_path(req, 5, 5, True)
            # the key of the WSGI strings, as the proxies make it
            # (split_and_validate_path gives native ones: a name
            # beyond ASCII got another key, or none)
            key = object_key(*map(str_to_wsgi,
                                  (account, container, obj)))
    except (HTTPException, ValueError):
        return None
    return device, account, key


def serve_holding(app, env, start_response, release):
    """``app``'s answer, its body holding the request's slot until
    ``release`` gives it back; given back at once if ``app`` raises."""
    try:
        app_iter = app(env, start_response)
    except BaseException:
        release()
        raise
    return SlotHoldingIterator(app_iter, release)


def object_server_conf(conf):
    """The options the object server app was given, for a filter whose
    ``conf`` (``[filter:mass_queue]`` over ``[DEFAULT]``) lacks those set
    in ``[app:object-server]`` alone: read from the same config, as
    Swift's dlo reads the proxy's; ``conf`` itself when the filter was not
    loaded from a config."""
    if '__file__' not in conf:
        return conf
    return load_app_config(conf['__file__'])


def filter_factory(global_conf, **local_conf):
    conf = global_conf.copy()
    conf.update(local_conf)

    def mass_queue_filter(app):
        return MassQueueMiddleware(app, conf)
    return mass_queue_filter
