"""
``mass``: the proxy half of Mass, a workload-aware storage policy for Swift.

For every request that addresses a tenant (a Swift account) the filter

* removes any ``X-Backend-Mass-*`` or ``X-Mass-*`` header the request arrived
  with, so no client (and no middleware left of Mass) can choose its own tags
  or priority;
* tags the request with its tenant, priority and, once the control loop has
  classified the tenant, its workload class: in the WSGI environ
  (``mass.tenant``, ``mass.priority``, ``mass.policy``) and as
  ``X-Backend-Mass-Tenant`` / ``-Priority`` / ``-Class`` headers, which
  Swift's proxy forwards to every account, container and object server the
  request reaches; ``mass_queue`` reads them on the object servers; a
  tenant an operator marked urgent in its account sysmeta also gets
  ``X-Backend-Mass-Urgent: true`` (``swift_mass.proxy.urgent``);
* counts the request once it has completed (its body sent or the client
  gone) in the tenant's window: operations, bytes, latency, object sizes.
  Subrequests of other middlewares, 401/403 answers and other answers that
  no storage server worked for are not counted.

Each worker runs the control loop in a green thread (see
``swift_mass.control.agent``): every ``interval`` seconds it flushes its counts
to
the shared store, loads the policy table when its version changed, and, if
it holds the leader lease, classifies every tenant (read, write or mixed),
turns the class into a policy {tenant, substore, method}, validates
policies that have run for a window, and publishes the table.  Each
decision is logged with its reason and kept durably in the tenant's account
sysmeta (``X-Account-Sysmeta-Mass-Policy``), so it survives the loss of the
shared store and reloads.  The shared store is Redis; when Redis is down,
Swift's memcache, then worker-local state, stand in (a request never fails
or waits because a store is down).

Routing: a container PUT of a tenant whose policy names a substore (a
storage policy of swift.conf) gets ``X-Storage-Policy: <substore>`` when it
names no policy itself and the container does not exist yet (learnt with
``get_container_info``, which uses the proxy's info caches); when the
backend answers 409 anyway (the container exists with another policy: a
race, or stale cached info) the PUT is sent once more exactly as the client
sent it, so the client gets Swift's own answer.  The rules are in
``swift_mass.proxy.routing``.  Swift's per-policy proxy options
(``[proxy-server:policy:N]``: read and write affinity, sorting) tune each
substore; see ``etc/proxy-server.conf-sample``.

Requests without a tenant (``/info``, ``/auth``, ``/healthcheck``, reserved
and ``.``-prefixed system accounts) are passed on with only the forged tags
removed.

Place it immediately left of ``proxy-server``, right of ``gatekeeper`` and
of the auth middlewares, so that every backend-bound request, subrequests of
slo, dlo, copy, versioned_writes, symlink and s3api included, passes it.
Every option, its default and meaning is in
``etc/proxy-server.conf-sample``; a bad one stops the proxy at start-up
with a message naming the option and the allowed values.
"""
import json
import os
import socket
import time

import eventlet

from swift.common.http import is_success
from swift.common.memcached import load_memcache
from swift.common.registry import register_swift_info
from swift.common.swob import HeaderEnvironProxy, Request, wsgi_quote
from swift.common.utils import ClosingIterator, config_true_value, \
    drain_and_close, get_logger
from swift.common.wsgi import WSGIContext
from swift.proxy.controllers.base import get_container_info

from swift_mass.proxy import migrating, routing, urgent
from swift_mass.control import monitor
from swift_mass import tags
from swift_mass.control.agent import Agent
from swift_mass.conf import ConfigError, bool_option, control_settings, \
    float_option, int_option
from swift_mass.proxy.methods import Methods
from swift_mass.control.store import store_from_conf
from swift_mass.proxy.tenant import object_of, tenant_of

SECTION = 'filter:mass'
SYSMETA_POLICY = 'X-Account-Sysmeta-Mass-Policy'


def worker_name():
    """Who holds the leader lease: this host and worker process."""
    return '%s:%d' % (socket.gethostname(), os.getpid())


class AccountSysmeta(object):
    """The durable copy of a tenant's policy, in its account's sysmeta,
    read and written by the proxy app right of Mass (no auth there)."""

    def __init__(self, app, logger, negative_ttl=60.0, clock=time.time):
        self.app = app
        self.logger = logger
        self.negative_ttl = negative_ttl
        self.clock = clock
        self.cache = None        # swift.cache, from the first request
        self._absent = {}        # tenant -> time it was found without one

    def _request(self, method, tenant, headers=None):
        env = {'REQUEST_METHOD': method, 'swift.source': 'MASS',
               'HTTP_USER_AGENT': 'Swift Mass'}
        if self.cache is not None:
            env['swift.cache'] = self.cache
        req = Request.blank('/v1/' + tenant, environ=env, headers=headers)
        try:
            return req.get_response(self.app)
        finally:
            # The proxy app tags this green thread's log lines with the
            # subrequest's transaction id; the control loop's decisions,
            # logged next, belong to no transaction.
            self.logger.txn_id = None

    def load(self, tenant):
        if self.clock() - self._absent.get(tenant, -1e9) < self.negative_ttl:
            return None
        try:
            resp = self._request('HEAD', tenant)
            value = resp.headers.get(SYSMETA_POLICY) \
                if resp.is_success else None
            entry = json.loads(value) if value else None
        except Exception as err:
            self.logger.warning('mass: cannot read the policy of %s from '
                                'account sysmeta: %s' % (tenant, err))
            return None
        if entry is None:
            self._absent[tenant] = self.clock()
        return entry

    def known(self, tenants):
        """Tenants some leader has decided for (they are in the table this
        worker loaded): whatever this worker learnt of their absence is
        out of date, and a later recall must read their sysmeta again."""
        for tenant in tenants:
            self._absent.pop(tenant, None)

    def save(self, tenant, entry):
        value = json.dumps(entry, sort_keys=True) if entry else ''
        try:
            # With account_autocreate a POST would create a missing
            # account, which Swift would not have done for this tenant.
            head = self._request('HEAD', tenant)
            if not head.is_success or config_true_value(head.headers.get(
                    'X-Backend-Fake-Account-Listing')):
                return
            resp = self._request('POST', tenant, {SYSMETA_POLICY: value})
            if not resp.is_success:
                raise Exception(resp.status)
        except Exception as err:
            self.logger.warning('mass: cannot save the policy of %s in '
                                'account sysmeta: %s' % (tenant, err))
        else:
            self._absent.pop(tenant, None)


class CountedBody(ClosingIterator):
    """A response body that reports its size and the request's end (body
    iterated or closed, client gone or not) exactly once."""
    __slots__ = ('sent', 'on_close')

    def __init__(self, iterable, on_close):
        super(CountedBody, self).__init__(iterable)
        self.sent = 0
        self.on_close = on_close

    def _get_next_item(self):
        chunk = next(self.wrapped_iter)
        self.sent += len(chunk)
        return chunk

    def close(self):
        if not self.closed:
            super(CountedBody, self).close()
            self.on_close(self.sent)


class RoutedPut(WSGIContext):
    """A container PUT sent with the tenant's substore, and sent again as
    the client sent it if the backend answers 409."""

    def __init__(self, app, logger):
        super(RoutedPut, self).__init__(app)
        self.logger = logger

    def __call__(self, env, start_response, tenant, policy):
        # The proxy rewrites some request headers in the environ as it
        # handles a container PUT (ACLs, owner-only headers); a retry must
        # start from the client's own.
        sent = {k: v for k, v in env.items() if k.startswith('HTTP_')}
        env['HTTP_X_STORAGE_POLICY'] = policy
        app_iter = self._app_call(env)
        status = self._get_status_int()
        if status != 409:
            if is_success(status):
                self.logger.increment('routed')
            self.logger.info('mass: routed new container %s of %s to '
                             'storage policy %s: %d' % (
                                 wsgi_quote(env['PATH_INFO']), tenant,
                                 policy, status))
            start_response(self._response_status, self._response_headers,
                           self._response_exc_info)
            return app_iter
        drain_and_close(app_iter)  # a short error page
        self.logger.increment('route_conflict')
        self.logger.info('mass: %s of %s exists in another storage policy '
                         'than %s; sent again without one' % (
                             wsgi_quote(env['PATH_INFO']), tenant, policy))
        for key in [k for k in env if k.startswith('HTTP_')]:
            del env[key]
        env.update(sent)
        return self.app(env, start_response)


class MassMiddleware(object):

    def __init__(self, app, conf, logger=None, store=None):
        self.app = app
        self.logger = logger or get_logger(
            conf, log_route='mass', statsd_tail_prefix='mass')
        self.default_priority = int_option(
            conf, SECTION, 'default_priority', tags.DEFAULT_PRIORITY,
            tags.PRIORITY_MIN, tags.PRIORITY_MAX)
        self._priority_header = str(self.default_priority)
        self.control_loop = bool_option(conf, SECTION, 'control_loop', True)
        settings = control_settings(conf, SECTION)
        interval = float_option(conf, SECTION, 'interval', 5.0, 0.1, 300.0)
        bucket = int_option(conf, SECTION, 'bucket_seconds', 5, 1)
        if settings.window < 2 * bucket:
            raise ConfigError('[%s] window_seconds = %d is not valid; '
                              'allowed: at least twice bucket_seconds (%d)'
                              % (SECTION, settings.window, bucket))
        self.store = store or store_from_conf(
            conf, self.logger, memcache=load_memcache(conf, self.logger))
        self.sysmeta = AccountSysmeta(app, self.logger)
        # cache and merge, and the generation bumps every write needs
        self.methods = Methods(app, conf, self.logger, self.store)
        self.agent = Agent(
            self.store, settings, worker_name(), self.logger,
            interval=interval, bucket_seconds=bucket, durable=self.sysmeta)
        self._loop_pid = None
        self.urgent_tenants = urgent.UrgentTenants(
            app, float_option(conf, SECTION, 'urgent_recheck_seconds', 30.0,
                              0.0, 3600.0), time.monotonic)
        self.migrate_retry_after = int_option(
            conf, SECTION, 'migrate_retry_after',
            migrating.DEFAULT_RETRY_AFTER, 1)
        # swift-mass migrate runs only where writes are refused meanwhile
        register_swift_info('mass_migrate',
                            retry_after=self.migrate_retry_after)
        register_swift_info(
            'mass', default_priority=self.default_priority,
            priority_min=tags.PRIORITY_MIN, priority_max=tags.PRIORITY_MAX,
            control_loop=self.control_loop,
            substores=dict(settings.rings),
            methods=dict(settings.methods))

    def _ensure_loop(self, env):
        # One loop per worker process, started by its first request: the
        # app may be loaded before the workers fork.
        if self._loop_pid == os.getpid():
            return
        self._loop_pid = os.getpid()
        self.agent.owner = worker_name()
        if self.sysmeta.cache is None:
            self.sysmeta.cache = env.get('swift.cache')
        eventlet.spawn_n(self._run_loop)

    def _run_loop(self):
        # the loop is no request's: its log lines carry no transaction id
        self.logger.txn_id = None
        while True:
            try:
                self.agent.tick()
            except Exception:
                self.logger.exception('mass: control loop')
            eventlet.sleep(min(1.0, self.agent.interval))

    def __call__(self, env, start_response):
        # swift-mass migrate's and urgent's marks, not forged tags (see
        # migrating and urgent)
        mark = env.pop(migrating.MARK_ENV, None)
        urgent_mark = env.pop(urgent.MARK_ENV, None)
        forged = tags.strip_client_tags(env)
        if forged:
            self.logger.increment('forged_tags')
        tenant = tenant_of(env.get('PATH_INFO', ''))
        if tenant is None:
            return self.app(env, start_response)
        env[tags.ENV_TENANT] = tenant
        env[tags.ENV_PRIORITY] = self.default_priority
        env['HTTP_X_BACKEND_MASS_TENANT'] = wsgi_quote(tenant, safe='')
        env['HTTP_X_BACKEND_MASS_PRIORITY'] = self._priority_header
        refused = migrating.refusal(env, self.app, mark,
                                    self.migrate_retry_after)
        if refused is not None:
            return refused(env, start_response)
        if self.urgent_tenants(env, tenant):
            env[tags.URGENT_ENV] = tags.URGENT
        urgent.take_mark(env, urgent_mark)
        start_response = urgent.showing_mark(
            env, migrating.showing_mark(env, start_response))
        if not self.control_loop:
            # writes still bump generations: other proxies may cache
            return self.methods.app_for(env, None, self.app)(
                env, start_response)
        self._ensure_loop(env)
        entry = self.agent.policy(tenant)
        app = self.app
        if entry is not None:
            env[tags.ENV_POLICY] = entry
            env['HTTP_X_BACKEND_MASS_CLASS'] = entry['class']
            if entry.get('method') == 'batch':
                # not the class: a batch method validation deleted, or a
                # pin with another method, must not keep the batch slots
                env[tags.BATCH_ENV] = tags.BATCH
            if entry.get('ring') and env['REQUEST_METHOD'] == 'PUT' and \
                    routing.container_of(env['PATH_INFO']):
                app = self._route
        app = self.methods.app_for(env, entry, app)
        op = monitor.operation(env['REQUEST_METHOD'], env.get('swift.source'))
        if op is None:
            # the effect of a request that is counted already
            return app(env, start_response)
        return self._counted(env, start_response, tenant, op, app)

    def _route(self, env, start_response):
        """A PUT of a tenant whose policy has a substore: a new container
        gets the substore's storage policy (swift_mass.proxy.routing)."""
        tenant = env['HTTP_X_BACKEND_MASS_TENANT']  # quoted for logs

        def container_exists():
            # pre-authorised, and from the infocache or memcache when the
            # proxy knows the container already
            info = get_container_info(env, self.app, swift_source='MASS')
            return routing.existence(info['status'])

        policy, reason = routing.decide(
            'PUT', env['PATH_INFO'], HeaderEnvironProxy(env),
            env[tags.ENV_POLICY], container_exists)
        if policy is None:
            self.logger.debug('mass: %s of %s not routed: %s' % (
                wsgi_quote(env['PATH_INFO']), tenant, reason))
            return self.app(env, start_response)
        return RoutedPut(self.app, self.logger)(
            env, start_response, tenant, policy)

    def _counted(self, env, start_response, tenant, op, app):
        started = time.time()
        is_object = object_of(env['PATH_INFO'])
        try:
            length = int(env['CONTENT_LENGTH'])
        except (KeyError, ValueError):
            length = None  # chunked, or a bad value Swift answers 400 to
        bytes_in = length or 0
        seen = {}

        def counting_start_response(status, headers, exc_info=None):
            seen['status'] = int(status.split(' ', 1)[0])
            seen['headers'] = headers
            return start_response(status, headers, exc_info)

        def on_close(sent):
            status = seen.get('status', 499)
            if not monitor.counted(status):
                return
            size = None
            if is_object and op in ('PUT', 'COPY'):
                size = length
            elif is_object and op == 'GET' and status == 200:
                size = sent
            self.agent.record(tenant, monitor.request_counts(
                op, status, bytes_in, sent, time.time() - started, size))

        app_iter = app(env, counting_start_response)
        if isinstance(app_iter, (list, tuple)):
            # A body already in memory is complete, and some middlewares
            # (object_versioning's DELETE) drain a response and then serve
            # the same one: a list can be iterated twice, a wrapper cannot.
            on_close(sum(len(chunk) for chunk in app_iter))
            return app_iter
        return CountedBody(app_iter, on_close)


def filter_factory(global_conf, **local_conf):
    conf = global_conf.copy()
    conf.update(local_conf)

    def mass_filter(app):
        return MassMiddleware(app, conf)
    return mass_filter
