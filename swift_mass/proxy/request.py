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
"""One tenant's request through the proxy filter ``mass``:
:class:`MassRequest`."""
import time

from swift.common.http import is_success
from swift.common.swob import Request, wsgi_quote
from swift.common.utils import ClosingIterator, drain_and_close
from swift.common.wsgi import WSGIContext
from swift.proxy.controllers.base import get_container_info

from swift_mass import metrics, tags
from swift_mass.control import monitor
from swift_mass.proxy import marks, routing
from swift_mass.proxy.authorization import Authorization
from swift_mass.proxy.tenant import object_of


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


class MassRequest(WSGIContext):
    """One request of a tenant (a Swift account) through the ``mass``
    filter, from its arrival to the end of its answer's body: the filter
    makes one per request, as Swift's symlink middleware makes a context
    per request, and nothing of it is kept in the WSGI environ but what
    Swift's proxy reads (the backend tags, ``swift.authorize``).

    It owns

    * what Mass knows of the request: its tenant, the tenant's policy
      entry (:attr:`entry`; None in observe mode, before the control loop
      classified the tenant, and once the account is known to be opted
      out) and whether the account is opted out (:attr:`opted_out`: by
      configuration at once, by its account's mark once Swift authorised
      the request);
    * its :class:`~swift_mass.proxy.authorization.Authorization` and what
      waits for it (:meth:`_authorized`): the account's marks, the
      backend tags, applied once and only for a request Swift serves, and
      refusing a write to a container being moved;
    * the app that answers it (:meth:`answering_app`): its policy's
      method, the routing of a new container to its substore, or the
      app right of Mass;
    * its count in the tenant's window once its body has been sent or the
      client has gone.

    ``mass`` is the :class:`~swift_mass.proxy.middleware.MassMiddleware`
    that serves it: its configuration, control loop and lookups;
    ``operators_work``: whether it came with
    :data:`~swift_mass.tags.OPERATOR_REQUEST_HEADER` (counted all the same
    unless Swift finds it is a reseller admin's); ``keeps_version``:
    whether it came with :data:`~swift_mass.tags.KEEPS_VERSION_REQUEST_HEADER`
    (tagged only on such work).
    """

    def __init__(self, mass, env, tenant, operators_work=False,
                 keeps_version=False):
        super(MassRequest, self).__init__(mass.app)
        self.mass = mass
        self.operators_work = operators_work
        self.keeps_version = keeps_version
        self.env = env
        self.tenant = tenant
        self.is_object = object_of(env['PATH_INFO'])
        self.opted_out = tenant in mass.conf.opt_out_accounts
        self.entry = None
        if mass.conf.active and mass.conf.control_loop and \
                not self.opted_out:
            self.entry = mass.agent.policy(tenant)
        #: the operation it counts as in its tenant's window, or None: the
        #: effect of a request counted already (monitor.operation)
        self.op = monitor.operation(env['REQUEST_METHOD'],
                                    env.get('swift.source'))
        self.urgent = False
        self.authorization = Authorization(env)
        # Another middleware's read of an account or container that stands
        # for no client request (an auth middleware's info lookup, made
        # before it authorises its own client's request; a listing of
        # dlo's) is not counted, and no method or routing acts on it:
        # looking up its account's marks would cost a lookup, and a
        # per-tenant entry, for every request an auth middleware then
        # refuses, and its tags would reach no server that reads them
        # (mass_queue is on the object servers).
        if self.op is not None or self.is_object or \
                env['REQUEST_METHOD'] not in ('GET', 'HEAD'):
            self.authorization.after(self._authorized)

    # -- authorisation -------------------------------------------------

    def is_operators_work(self):
        """Whether the request is a reseller admin's own work on the
        tenant's account (once Swift authorised it: ``reseller_request``
        is set by the auth middleware), not the tenant's."""
        return self.operators_work and bool(self.env.get('reseller_request'))

    def _authorized(self):
        """Once Swift authorised the request: its account's marks (opted
        out: left as Swift alone would serve it; urgent: its tag), the
        backend tags, and refusing a write to a container being moved
        (the refusal, or None), in every mode and for every account."""
        mass = self.mass
        if mass.looks_up_marks and not self.opted_out:
            found = mass.account_marks(self.env, self.tenant)
            if marks.OPT_OUT in found:
                self.opted_out = True
                self.entry = None
            else:
                self.urgent = marks.URGENT in found
        if mass.conf.active and not self.opted_out:
            self._tag()
        return mass.moving_containers(self.env)

    def _tag(self):
        """The backend tags, which Swift's proxy forwards to every server
        the request reaches (``mass_queue`` reads them on the object
        servers): priority, the class once the tenant is classified, the
        urgent mark, and what the policy's method asks for.  No header
        names the tenant (docs/architecture.md, "Why no header names the
        tenant")."""
        env = self.env
        if self.is_operators_work():
            # a move's copies and deletes would otherwise take the device
            # time the tenant's own requests wait for
            env[tags.PRIORITY_ENV] = self.mass.background_priority_header
            if self.keeps_version and self.is_object:
                # read by mass_queue on object writes only
                env[tags.KEEPS_VERSION_ENV] = tags.KEEPS_VERSION
        else:
            env[tags.PRIORITY_ENV] = self.mass.priority_header
            if self.urgent:
                env[tags.URGENT_ENV] = tags.URGENT
        if self.entry is not None:
            env[tags.CLASS_ENV] = self.entry.cls
            env.update(self.mass.methods.backend_tags(self.entry))

    # -- the app that answers ------------------------------------------

    def answering_app(self):
        """The one app that answers the request: its policy's method, the
        routing of a new container to its substore, or the app right of
        Mass (for a read of an object, through marks.StagedRead: a
        container being moved reads what it lacks from its staging
        container)."""
        env = self.env
        app = self.mass.app
        if self.entry is not None and self.entry.substore and \
                env['REQUEST_METHOD'] == 'PUT' and \
                routing.container_of(env['PATH_INFO']):
            app = self._route
        elif self.is_object and marks.StagedRead.applies(env):
            app = marks.StagedRead(self.mass.app)
        if self.entry is None:
            return app
        return self.mass.methods.app_for(self, app)

    def _route(self, env, start_response):
        """A PUT of a tenant whose policy has a substore: a new container
        gets the substore's storage policy (swift_mass.proxy.routing)."""
        req = Request(env)
        substore, reason = routing.substore_of(
            req.method, env['PATH_INFO'], req.headers, self.entry)
        if substore is None:
            self.mass.logger.debug(
                'mass: %s of %s not routed: %s', wsgi_quote(env['PATH_INFO']),
                wsgi_quote(self.tenant, safe=''), reason)
            return self.mass.app(env, start_response)
        return RoutedPut(self, substore).handle_put(req, start_response)

    # -- answering and counting ----------------------------------------

    def __call__(self, start_response):
        """Answer with :meth:`answering_app`'s choice: the answer shows a
        reseller admin the marks of what was asked for, and the request is
        counted in the tenant's window once it has completed (its body
        sent or the client gone) when the control loop counts requests."""
        env = self.env
        op = self.op if self.mass.conf.control_loop else None
        showing = [mark for mark in marks.MARKS if mark.shows(env)]
        try:
            length = int(env['CONTENT_LENGTH'])
        except (KeyError, ValueError):
            length = None  # chunked, or a bad value Swift answers 400 to
        started = time.time()

        self.app = self.answering_app()
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

        def on_close(sent):
            self._count(op, status, length, sent, time.time() - started)

        if isinstance(app_iter, (list, tuple)):
            # A body already in memory is complete, and some middlewares
            # (object_versioning's DELETE) drain a response and then serve
            # the same one: a list can be iterated twice, a wrapper cannot.
            on_close(sum(len(chunk) for chunk in app_iter))
            return app_iter
        return CountedBody(app_iter, on_close)

    def _count(self, op, status, length, sent, seconds):
        # a request Swift did not authorise leaves nothing behind; an
        # operator's own work on the tenant's account (a move's copies and
        # deletes) is not the tenant's workload, and would make it a
        # writer.  A write Mass refused (its container being moved) is
        # counted: it is the tenant's demand, and only it shows
        # auto-migrate a reader turned writer whose move is to be given back
        if not self.authorization.authorized or \
                self.is_operators_work() or not monitor.counted(op, status):
            return
        size = None
        if self.is_object and op in ('PUT', 'COPY'):
            size = length
        elif self.is_object and op == 'GET' and status == 200:
            size = sent
        counts = monitor.request_counts(
            op, status, length or 0, sent, seconds, size)
        if self.opted_out:
            # how the leader learns of the opt-out
            counts[monitor.OPTED_OUT] = 1
        self.mass.agent.record(self.tenant, counts)


class RoutedPut(WSGIContext):
    """A container PUT of a tenant whose policy names a substore
    (swift_mass.proxy.routing): once Swift has authorised it, sent with the
    substore's storage policy if its container does not exist, and sent
    again as the client sent it if the backend then answers 409."""

    def __init__(self, request, substore):
        super(RoutedPut, self).__init__(request.mass.app)
        self.request = request
        self.logger = request.mass.logger
        self.substore = substore
        # what the lookup decided; policy None: sent as the client sent it
        self.policy = None
        self.reason = None

    def handle_put(self, req, start_response):
        env = req.environ
        # quoted for logs: one line, whatever the account's name
        tenant = wsgi_quote(self.request.tenant, safe='')
        # The proxy rewrites some request headers in the environ as it
        # handles a container PUT (ACLs, owner-only headers); a retry must
        # start from the client's own.
        sent = {k: v for k, v in env.items() if k.startswith('HTTP_')}
        # The proxy asks swift.authorize before its handler reads the
        # policy header: the lookup waits for a yes, and still comes in
        # time.  A PUT Swift refuses costs no lookup.
        self.request.authorization.after(lambda: self._route_if_new(req))
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
        if self.request.opted_out:
            # learnt as Swift authorised the PUT (the request's own hook
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
