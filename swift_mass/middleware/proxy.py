"""
``mass``: the proxy half of Mass, a workload-aware storage policy for Swift.

For every request that addresses a tenant (a Swift account) the filter

* removes any ``X-Backend-Mass-*`` or ``X-Mass-*`` header the request arrived
  with, so no client (and no middleware left of Mass) can choose its own tags
  or priority;
* tags the request with its tenant and priority, in the WSGI environ
  (``mass.tenant``, ``mass.priority``) and as ``X-Backend-Mass-Tenant`` /
  ``X-Backend-Mass-Priority`` headers, which Swift's proxy forwards to every
  account, container and object server the request reaches; ``mass_queue``
  reads them on the object servers.

Requests without a tenant (``/info``, ``/auth``, ``/healthcheck``, reserved
and ``.``-prefixed system accounts) are passed on with only the forged tags
removed.

Place it immediately left of ``proxy-server``, right of ``gatekeeper`` and
of the auth middlewares, so that every backend-bound request, subrequests of
slo, dlo, copy, versioned_writes, symlink and s3api included, passes it::

    [pipeline:main]
    pipeline = catch_errors gatekeeper healthcheck proxy-logging cache ...
               tempauth ... slo dlo versioned_writes ... proxy-logging
               mass proxy-server

    [filter:mass]
    use = egg:swift_mass#mass
    # Priority given to a tenant's requests, 0 (background) to 9 (most
    # urgent).
    # default_priority = 5

Options are validated when the proxy starts; a bad one stops it with a
message naming the option and the allowed values.  The usual ``log_*`` and
``log_statsd_*`` options apply; metrics are emitted under ``mass.``.
"""

from swift.common.registry import register_swift_info
from swift.common.swob import wsgi_quote
from swift.common.utils import get_logger

from swift_mass import tags
from swift_mass.config import int_option
from swift_mass.tenant import tenant_of

SECTION = 'filter:mass'


class MassMiddleware(object):

    def __init__(self, app, conf, logger=None):
        self.app = app
        self.logger = logger or get_logger(
            conf, log_route='mass', statsd_tail_prefix='mass')
        self.default_priority = int_option(
            conf, SECTION, 'default_priority', tags.DEFAULT_PRIORITY,
            tags.PRIORITY_MIN, tags.PRIORITY_MAX)
        self._priority_header = str(self.default_priority)
        register_swift_info('mass', default_priority=self.default_priority,
                            priority_min=tags.PRIORITY_MIN,
                            priority_max=tags.PRIORITY_MAX)

    def __call__(self, env, start_response):
        forged = tags.strip_client_tags(env)
        if forged:
            self.logger.increment('forged_tags')
        tenant = tenant_of(env.get('PATH_INFO', ''))
        if tenant is not None:
            env[tags.ENV_TENANT] = tenant
            env[tags.ENV_PRIORITY] = self.default_priority
            env['HTTP_X_BACKEND_MASS_TENANT'] = wsgi_quote(tenant, safe='')
            env['HTTP_X_BACKEND_MASS_PRIORITY'] = self._priority_header
        return self.app(env, start_response)


def filter_factory(global_conf, **local_conf):
    conf = global_conf.copy()
    conf.update(local_conf)

    def mass_filter(app):
        return MassMiddleware(app, conf)
    return mass_filter
