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
"""The proxy filter ``mass``: :class:`MassMiddleware`."""
import functools
import os
import socket
import time

import eventlet

from swift.common.http import is_success
from swift.common.memcached import load_memcache
from swift.common.registry import register_swift_info
from swift.common.swob import Request, wsgi_quote
from swift.common.utils import ClosingIterator, drain_and_close, get_logger
from swift.common.wsgi import WSGIContext
from swift.proxy.controllers.base import get_container_info

import swift_mass
from swift_mass import metrics, tags
from swift_mass.control import monitor
from swift_mass.control.agent import Agent
from swift_mass.control.stores import store_from_conf
from swift_mass.control.substores import SubstoreCheck
from swift_mass.proxy import marks, routing
from swift_mass.proxy.authorization import Authorization
from swift_mass.proxy.container_replicas import ContainerReplicas
from swift_mass.proxy.policy_in_force import PolicyInForce
from swift_mass.proxy.conf import MassConf
from swift_mass.proxy.methods import Methods
from swift_mass.proxy.sysmeta import AccountSysmeta
from swift_mass.proxy.tenant import object_of, tenant_of


def worker_name():
    """Who holds the leader lease: this host and worker process."""
    return '%s:%d' % (socket.gethostname(), os.getpid())


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
    """A container PUT of a tenant whose policy names a substore
    (swift_mass.proxy.routing): once Swift has authorised it, sent with the
    substore's storage policy if its container does not exist, and sent
    again as the client sent it if the backend then answers 409."""

    def __init__(self, wsgi_app, logger, substore):
        super(RoutedPut, self).__init__(wsgi_app)
        self.logger = logger
        self.substore = substore
        # what the lookup decided; policy None: sent as the client sent it
        self.policy = None
        self.reason = None

    def handle_put(self, req, start_response):
        env = req.environ
        # quoted for logs: one line, whatever the account's name
        tenant = wsgi_quote(env[tags.ENV_TENANT], safe='')
        # The proxy rewrites some request headers in the environ as it
        # handles a container PUT (ACLs, owner-only headers); a retry must
        # start from the client's own.
        sent = {k: v for k, v in env.items() if k.startswith('HTTP_')}
        # The proxy asks swift.authorize before its handler reads the
        # policy header: the lookup waits for a yes, and still comes in
        # time.  A PUT Swift refuses costs no lookup.
        Authorization.of(env).after(
            functools.partial(self._route_if_new, req))
        app_iter = self._app_call(env)
        status = self._get_status_int()
        path = wsgi_quote(env['PATH_INFO'])
        if self.policy is None:
            self.logger.debug('mass: %s of %s not routed: %s', path, tenant,
                              self.reason or 'not authorised')
        elif status != 409:
            if is_success(status):
                metrics.increment(self.logger, 'routed', 'routed',
                                  {'substore': self.substore})
            self.logger.info('mass: routed new container %s of %s to '
                             'storage policy %s: %d',
                             path, tenant, self.policy, status)
        else:
            drain_and_close(app_iter)  # a short error page
            metrics.increment(self.logger, 'route_conflict',
                              'route_conflicts', {'substore': self.substore})
            self.logger.info('mass: %s of %s exists in another storage '
                             'policy than %s; sent again without one',
                             path, tenant, self.policy)
            for key in [k for k in env if k.startswith('HTTP_')]:
                del env[key]
            env.update(sent)
            return self.app(env, start_response)
        start_response(self._response_status, self._response_headers,
                       self._response_exc_info)
        return app_iter

    def _route_if_new(self, req):
        """Once Swift authorised the PUT: the substore's policy for a
        container that does not exist yet.  Refuses nothing."""
        if req.environ.get(tags.ENV_OPTED_OUT):
            # learnt as Swift authorised the PUT (MassMiddleware's hook
            # runs first): served as without Mass
            self.reason = 'opted out'
            return None
        # pre-authorised, and from the infocache or memcache when the
        # proxy knows the container already
        info = get_container_info(req.environ, self.app, swift_source='MASS')
        self.policy, self.reason = routing.routed(
            self.substore, routing.existence(info['status']))
        if self.policy is not None:
            req.headers[routing.POLICY_HEADER] = self.policy
        return None


class TenantRequest(WSGIContext):
    """One request of a tenant, from the app Mass chose for it to the
    client: the answer shows a reseller admin the marks of what was asked
    for, and the request is counted in the tenant's window once it has
    completed (its body sent or the client gone)."""

    def __init__(self, app, agent):
        super(TenantRequest, self).__init__(app)
        self.agent = agent

    def __call__(self, env, start_response, tenant, counting, is_object):
        """``counting``: whether the control loop counts requests;
        ``is_object``: whether the request addresses an object."""
        op = None
        if counting:
            op = monitor.operation(env['REQUEST_METHOD'],
                                   env.get('swift.source'))
        showing = [mark for mark in marks.MARKS if mark.shows(env)]
        try:
            length = int(env['CONTENT_LENGTH'])
        except (KeyError, ValueError):
            length = None  # chunked, or a bad value Swift answers 400 to
        started = time.time()

        app_iter = self._app_call(env)
        headers = self._response_headers
        for mark in showing:
            headers = mark.shown(headers)
        start_response(self._response_status, headers,
                       self._response_exc_info)
        if op is None:
            # not counting, or the effect of a request counted already
            return app_iter

        status = self._get_status_int()
        authorization = Authorization.of(env)

        def on_close(sent):
            # a request Swift did not authorise leaves nothing behind
            if not authorization.authorized or \
                    not monitor.counted(op, status):
                return
            size = None
            if is_object and op in ('PUT', 'COPY'):
                size = length
            elif is_object and op == 'GET' and status == 200:
                size = sent
            counts = monitor.request_counts(
                op, status, length or 0, sent, time.time() - started, size)
            if env.get(tags.ENV_OPTED_OUT):
                # how the leader learns of the opt-out
                counts[monitor.OPTED_OUT] = 1
            self.agent.record(tenant, counts)

        if isinstance(app_iter, (list, tuple)):
            # A body already in memory is complete, and some middlewares
            # (object_versioning's DELETE) drain a response and then serve
            # the same one: a list can be iterated twice, a wrapper cannot.
            on_close(sum(len(chunk) for chunk in app_iter))
            return app_iter
        return CountedBody(app_iter, on_close)


class MassMiddleware(object):
    """
    ``mass``: the proxy half of Mass, a workload-aware storage policy for
    Swift.

    For every request that addresses a tenant (a Swift account) the filter

    * removes any ``X-Backend-Mass-*`` or ``X-Mass-*`` header the request
      arrived with, so no client (and no middleware left of Mass) can
      choose its own tags or priority;
    * tags the request with its tenant, priority and, once the control
      loop has classified the tenant, its workload class: in the WSGI
      environ (``mass.tenant``, ``mass.priority``, ``mass.policy``), and
      the priority and class as ``X-Backend-Mass-Priority`` / ``-Class``
      headers, which Swift's proxy forwards to every account, container
      and object server the request reaches; ``mass_queue`` reads them on
      the object servers.  No header carries the tenant (why:
      docs/architecture.md, "Why no header names the tenant");
      a tenant an operator marked urgent in its account sysmeta also gets
      ``X-Backend-Mass-Urgent: true``, and a tenant whose policy's method
      is batch ``X-Backend-Mass-Batch: true``;
    * keeps the marks a reseller admin sets with ``X-Mass-Migrating`` (on a
      container ``swift-mass migrate`` moves: writes by others are refused
      meanwhile) and ``X-Mass-Urgent`` (on an urgent tenant's account), and
      shows them to a reseller admin (``swift_mass.proxy.marks``);
    * hands the request to one app: the method of the tenant's policy
      (``swift_mass.proxy.methods``), the routing of a new container, or
      the proxy app;
    * counts the request once it has completed (its body sent or the
      client gone) in the tenant's window: operations, bytes, latency,
      object sizes.  Subrequests of other middlewares, 401/403 answers and
      other answers that no storage server worked for are not counted.

    Nothing before authorisation: whatever costs a lookup or leaves state
    (the urgent mark's account lookup, routing's container lookup,
    counting, the cache's generations and bodies, refusing writes to a
    container being moved) waits until
    Swift's ``swift.authorize`` has said yes
    (``swift_mass.proxy.authorization``), so a request Swift refuses, such
    as an anonymous one for a made-up account, leaves nothing behind.
    OPTIONS requests (CORS preflights, which the auth systems let through
    unchecked and no storage server serves) are left to Swift untagged.

    Each worker runs the control loop in a green thread (see
    ``swift_mass.control.agent``): every ``interval`` seconds it flushes
    its counts to the shared store, applies what changed in the policy
    table, and, if it holds the leader lease, classifies every tenant
    (read, write or mixed), turns the class into a policy {tenant,
    substore, method}, validates policies that have run for a window, and
    writes the entries that changed.  Each decision is logged with its
    reason and kept durably in the tenant's account sysmeta
    (``swift_mass.proxy.sysmeta``), so it survives the loss of the shared
    store and reloads.  The shared store is Redis (while it is down:
    docs/runbook.md, "Redis is down").

    Routing: a container PUT of a tenant whose policy names a substore (a
    storage policy of swift.conf) gets ``X-Storage-Policy: <substore>`` when
    it names no policy itself and the container does not exist yet (learnt
    with ``get_container_info``, which uses the proxy's info caches, once
    Swift has authorised the PUT); when
    the backend answers 409 anyway (the container exists with another
    policy: a race, or stale cached info) the PUT is sent once more exactly
    as the client sent it, so the client gets Swift's own answer.  The rules
    are in ``swift_mass.proxy.routing``.  Swift's per-policy proxy options
    (``[proxy-server:policy:N]``: read and write affinity, sorting) tune
    each substore; see ``etc/proxy-server.conf-sample``.

    Requests without a tenant (``/info``, ``/auth``, ``/healthcheck``,
    reserved and ``.``-prefixed system accounts) are passed on with only
    the forged tags removed.

    Rollout controls (docs/rollout.md):

    * ``mode = observe`` (the default is ``active``): Mass counts,
      classifies, runs the control loop, logs and keeps every decision and
      sends its metrics as in active mode, and changes nothing on the
      request path: no ``X-Backend-Mass-*`` tag (so every priority and
      class is Swift's and ``mass_queue``'s default), no urgent tag, no
      routing, no method (no cache, merge or batch).  What protects the
      correctness of work an operator started stays: writes to a container
      ``swift-mass migrate`` is moving are still refused, and its objects
      still read from the staging container, since the move relies on
      both; forged tags are still removed, and marks still taken and
      shown.  The mode is read at start-up, so a reload (``swift-init
      proxy reload``, SIGHUP) switches it, and nothing of the other mode
      survives in the new workers: a policy the table holds is never
      taken for a tag or a method in observe mode, and the object servers
      keep bumping generations, so caches are as sound when active mode
      comes back.
    * Opt-out: an account in ``opt_out_accounts``, or whose account a
      reseller admin marked with ``X-Mass-Opt-Out: true`` (``swift-mass
      opt-out TENANT --on``; ``swift_mass.proxy.marks``), is served
      exactly as without Mass: no tag, no routing, no method.  Its
      requests are still counted (the leader learns of the opt-out from
      them, and ``swift-mass explain`` shows its figures), and the leader
      replaces its policy with an entry that says it is opted out, which
      no worker takes for a policy.  The mark is looked up only once Swift
      authorised a request, with the urgent mark (one lookup): what Mass
      chose for the request before (its policy's method, the routing of a
      new container) checks the opt-out at that point and leaves the
      request to Swift, and once the leader has carried the opt-out into
      the policy table (within an interval) nothing is chosen at all.

    Place it immediately left of ``proxy-server``, right of ``gatekeeper``
    and of the auth middlewares, so that every backend-bound request,
    subrequests of slo, dlo, copy, versioned_writes, symlink and s3api
    included, passes it.  Every option, its default and meaning is in
    ``etc/proxy-server.conf-sample``; they are parsed once, by
    :class:`swift_mass.proxy.conf.MassConf`, and a bad one stops the proxy at
    start-up with a message naming the option and the allowed values.
    """

    def __init__(self, app, conf, logger=None, store=None, mass_conf=None):
        self.app = app
        # mass_conf: conf already parsed (a test's or a benchmark's, whose
        # Redis keys have a prefix of their own); store: the shared store
        # chain, built from it unless given
        self.conf = MassConf(conf) if mass_conf is None else mass_conf
        self.logger = logger or get_logger(
            conf, log_route='mass', statsd_tail_prefix='mass')
        metrics.attach(self.logger, conf, metrics.PROXY_PREFIX)
        self._priority_header = str(self.conf.default_priority)
        self.store = store or store_from_conf(
            self.conf, self.logger, memcache=load_memcache(conf, self.logger))
        self.sysmeta = AccountSysmeta(app, self.logger)
        # cache and merge, and the generation bumps every write needs
        self.methods = Methods(app, self.conf, self.logger)
        self.agent = Agent(
            self.store, self.conf.control, worker_name(), self.logger,
            interval=self.conf.interval,
            bucket_seconds=self.conf.bucket_seconds, durable=self.sysmeta,
            generations=self.methods.cache.generations,
            tenant_metrics=self.conf.tenant_metrics,
            opt_out=self.conf.opt_out_accounts,
            substores=SubstoreCheck(self.conf.swift_dir, self.logger)
            if self.conf.substore_routing == 'measured' else None)
        self._loop_pid = None
        self.account_marks = marks.AccountMarks(
            app, self.conf.urgent_recheck_seconds, logger=self.logger)
        self.moving_containers = marks.MovingContainers(
            app, self.conf.migrate_retry_after)
        self.container_replicas = ContainerReplicas(app, self.logger)
        self.policy_in_force = PolicyInForce(app, self.agent)
        # observe mode without the control loop has no use for them
        self._looks_up_marks = self.conf.active or self.conf.control_loop
        if not self.conf.active:
            self.logger.info('mass: observe mode: counting and deciding, '
                             'changing no request')
        # swift-mass migrate runs only where writes are refused meanwhile
        register_swift_info('mass_migrate',
                            retry_after=self.conf.migrate_retry_after)
        register_swift_info(
            'mass', version=swift_mass.__version__, mode=self.conf.mode,
            default_priority=self.conf.default_priority,
            priority_min=tags.PRIORITY_MIN, priority_max=tags.PRIORITY_MAX,
            control_loop=self.conf.control_loop,
            substores=dict(self.conf.control.substores),
            methods=dict(self.conf.control.methods))

    def __call__(self, env, start_response):
        sent_marks = marks.taken_out(env)
        replicas_asked = env.pop(tags.environ_key(
            tags.REPLICAS_REQUEST_HEADER), None)
        policy_asked = env.pop(tags.environ_key(
            tags.POLICY_REQUEST_HEADER), None)
        if tags.strip_client_tags(env):
            metrics.increment(self.logger, 'forged_tags', 'forged_tags')
        tenant = tenant_of(env.get('PATH_INFO', ''))
        if tenant is None or env.get('REQUEST_METHOD') == 'OPTIONS':
            # OPTIONS (a CORS preflight) is answered by the proxy from what
            # it knows, and every auth system lets it through unchecked:
            # no storage server works for it, Mass has nothing to do.
            return self.app(env, start_response)

        if tenant in self.conf.opt_out_accounts:
            env[tags.ENV_OPTED_OUT] = True
        entry = self._tag(env, tenant)
        for mark, sent in sent_marks.items():
            mark.take(env, sent)
        authorization = Authorization(env)
        authorization.after(functools.partial(self._authorized, env, tenant))
        refusal = authorization.settle()
        if refusal is not None:
            return refusal(env, start_response)
        if ContainerReplicas.asked(env, replicas_asked):
            return self.container_replicas(env, start_response)
        if PolicyInForce.asked(env, policy_asked):
            return self.policy_in_force(env, start_response, tenant)
        is_object = object_of(env['PATH_INFO'])
        return TenantRequest(self._app_for(env, entry, is_object),
                             self.agent)(env, start_response, tenant,
                                         self.conf.control_loop, is_object)

    def _authorized(self, env, tenant):
        """What waits until Swift authorised the request
        (swift_mass.proxy.authorization): its account's marks (opted out:
        the request is left as Swift alone would serve it; urgent: its
        tag), and refusing a write to a container being moved (the
        refusal, or None), in every mode and for every account."""
        if self._looks_up_marks and not env.get(tags.ENV_OPTED_OUT):
            found = self.account_marks(env, tenant)
            if marks.OPT_OUT in found:
                untag(env)
            elif marks.URGENT in found and self.conf.active:
                env[tags.URGENT_ENV] = tags.URGENT
        return self.moving_containers(env)

    def _tag(self, env, tenant):
        """Tag a tenant's request with its tenant (in the environ only: the
        storage servers take it from their path), priority and, once the
        control loop has classified the tenant, its class (its method tags
        what it needs: methods.Methods.app_for; the urgent tag waits for
        authorisation: _authorized); return the tenant's policy entry or
        None.  In observe mode, and for an account opted out by
        configuration, only the tenant."""
        env[tags.ENV_TENANT] = tenant
        if self.conf.control_loop:
            self._ensure_loop(env)
        if not self.conf.active or env.get(tags.ENV_OPTED_OUT):
            return None
        env[tags.ENV_PRIORITY] = self.conf.default_priority
        env[tags.PRIORITY_ENV] = self._priority_header
        if not self.conf.control_loop:
            return None
        entry = self.agent.policy(tenant)
        if entry is not None:
            env[tags.ENV_POLICY] = entry
            env[tags.CLASS_ENV] = entry.cls
        return entry

    def _app_for(self, env, entry, is_object):
        """The one app that answers a tenant's request: its policy's
        method, the routing of a new container to its substore, or the app
        right of Mass (for a read of an object, through marks.StagedRead:
        a container being moved reads what it lacks from its staging
        container)."""
        if env.get(tags.ENV_OPTED_OUT):
            # known before the app is chosen without an auth system
            entry = None
        app = self.app
        if entry is not None and entry.substore and \
                env['REQUEST_METHOD'] == 'PUT' and \
                routing.container_of(env['PATH_INFO']):
            app = self._route
        elif is_object and marks.StagedRead.applies(env):
            app = marks.StagedRead(self.app)
        if entry is None:
            return app
        return self.methods.app_for(env, entry, app)

    def _ensure_loop(self, env):
        # One loop per worker process, started by its first request: the
        # app may be loaded before the workers fork.
        if self._loop_pid == os.getpid():
            return
        self._loop_pid = os.getpid()
        self.agent.owner = worker_name()
        if self.sysmeta.cache is None:
            self.sysmeta.cache = env.get('swift.cache')
        # The table is read once here, in the first request's time: without
        # it a new worker (a second one, or one after a reload) would serve
        # its first requests as if no tenant were classified, and a pinned
        # writer's new container would land in the default policy.
        try:
            self.agent.refresh()
        except Exception:
            self.logger.exception('first read of the policy table')
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

    def _route(self, env, start_response):
        """A PUT of a tenant whose policy has a substore: a new container
        gets the substore's storage policy (swift_mass.proxy.routing)."""
        req = Request(env)
        substore, reason = routing.substore_of(
            req.method, env['PATH_INFO'], req.headers, env[tags.ENV_POLICY])
        if substore is None:
            self.logger.debug('mass: %s of %s not routed: %s',
                              wsgi_quote(env['PATH_INFO']),
                              wsgi_quote(env[tags.ENV_TENANT], safe=''),
                              reason)
            return self.app(env, start_response)
        return RoutedPut(self.app, self.logger, substore).handle_put(
            req, start_response)


def untag(env):
    """Leave a request of an opted-out account as Swift alone would serve
    it: every Mass tag it got before Swift authorised it removed, and the
    opt-out in the environ, for what would act on it later
    (:data:`swift_mass.tags.ENV_OPTED_OUT`)."""
    env[tags.ENV_OPTED_OUT] = True
    for key in [k for k in env if k.startswith(tags.BACKEND_TAG_PREFIX)]:
        del env[key]
    for key in (tags.ENV_PRIORITY, tags.ENV_POLICY, tags.ENV_CLASS):
        env.pop(key, None)


def filter_factory(global_conf, **local_conf):
    conf = global_conf.copy()
    conf.update(local_conf)

    def mass_filter(app):
        return MassMiddleware(app, conf)
    return mass_filter
