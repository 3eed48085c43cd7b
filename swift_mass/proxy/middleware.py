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
import os
import socket

import eventlet

from swift.common.memcached import load_memcache
from swift.common.registry import register_swift_info
from swift.common.utils import config_true_value, get_logger

import swift_mass
from swift_mass import metrics, tags
from swift_mass.control.agent import Agent
from swift_mass.control.stores import store_from_conf
from swift_mass.control.substores import SubstoreCheck
from swift_mass.proxy import marks
from swift_mass.proxy.container_replicas import ContainerReplicas
from swift_mass.proxy.policy_in_force import PolicyInForce
from swift_mass.proxy.conf import MassConf
from swift_mass.proxy.methods import Methods
from swift_mass.proxy.request import MassRequest
from swift_mass.proxy.sysmeta import AccountSysmeta
from swift_mass.proxy.tenant import tenant_of


def worker_name():
    """Who holds the leader lease: this host and worker process."""
    return '%s:%d' % (socket.gethostname(), os.getpid())


class MassMiddleware(object):
    """
    ``mass``: the proxy half of Mass, a workload-aware storage policy for
    Swift.

    For every request that addresses a tenant (a Swift account) the filter

    * removes any ``X-Backend-Mass-*`` or ``X-Mass-*`` header the request
      arrived with, so no client (and no middleware left of Mass) can
      choose its own tags or priority;
    * makes one :class:`~swift_mass.proxy.request.MassRequest`, which owns
      the request from there: its tenant, its tenant's policy entry and
      opt-out, its authorisation, its tags and its count;
    * once Swift authorised the request, tags it with its priority and,
      once the control loop has classified the tenant, its workload class,
      as ``X-Backend-Mass-Priority`` / ``-Class`` headers, which Swift's
      proxy forwards to every account, container and object server the
      request reaches; ``mass_queue`` reads them on the object servers.
      No header carries the tenant (why: docs/architecture.md, "Why no
      header names the tenant"); a tenant an operator marked urgent in
      its account sysmeta also gets ``X-Backend-Mass-Urgent: true``, and
      a tenant whose policy's method is batch ``X-Backend-Mass-Batch:
      true``.  A request Swift refuses, and every request of an opted-out
      account, is tagged with nothing;
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
      other answers that no storage server worked for are not counted,
      but for the 503 refusing a write to a container being moved: that
      is the tenant's demand.

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
        #: the priority tag's values (MassRequest's backend tags): a
        #: tenant's requests', and an operator's own work's on its account
        self.priority_header = str(self.conf.default_priority)
        self.background_priority_header = str(self.conf.background_priority)
        self.store = store or store_from_conf(
            self.conf, self.logger, memcache=load_memcache(conf, self.logger))
        self.sysmeta = AccountSysmeta(app, self.logger)
        # cache and merge, and the generation bumps every write needs
        self.methods = Methods(app, self.conf, self.logger,
                               policy_of=lambda tenant: self.agent.policy(
                                   tenant))
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
        self.looks_up_marks = self.conf.active or self.conf.control_loop
        if not self.conf.active:
            self.logger.info('mass: observe mode: counting and deciding, '
                             'changing no request')
        # swift-mass migrate runs only where writes are refused meanwhile
        register_swift_info('mass_migrate',
                            retry_after=self.conf.migrate_retry_after)
        register_swift_info(
            'mass', version=swift_mass.__version__, mode=self.conf.mode,
            default_priority=self.conf.default_priority,
            background_priority=self.conf.background_priority,
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
        operators_work = config_true_value(env.pop(tags.environ_key(
            tags.OPERATOR_REQUEST_HEADER), None))
        keeps_version = config_true_value(env.pop(tags.environ_key(
            tags.KEEPS_VERSION_REQUEST_HEADER), None))
        if tags.strip_client_tags(env):
            metrics.increment(self.logger, 'forged_tags', 'forged_tags')
        tenant = tenant_of(env.get('PATH_INFO', ''))
        if tenant is None or env.get('REQUEST_METHOD') == 'OPTIONS':
            # OPTIONS (a CORS preflight) is answered by the proxy from what
            # it knows, and every auth system lets it through unchecked:
            # no storage server works for it, Mass has nothing to do.
            return self.app(env, start_response)

        if self.conf.control_loop:
            self._ensure_loop(env)
        request = MassRequest(self, env, tenant, operators_work,
                              keeps_version)
        for mark, sent in sent_marks.items():
            mark.take(env, sent)
        refusal = request.authorization.settle()
        if refusal is not None:
            return refusal(env, start_response)
        if ContainerReplicas.asked(env, replicas_asked):
            return self.container_replicas(env, start_response)
        if PolicyInForce.asked(env, policy_asked):
            return self.policy_in_force(env, start_response, tenant)
        return request(start_response)

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


def filter_factory(global_conf, **local_conf):
    conf = global_conf.copy()
    conf.update(local_conf)

    def mass_filter(app):
        return MassMiddleware(app, conf)
    return mass_filter
