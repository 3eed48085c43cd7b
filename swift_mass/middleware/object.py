"""
``mass_queue``: the storage-node half of Mass.

Reads the priority the proxy filter ``mass`` put on a backend request
(``X-Backend-Mass-Priority``), the tenant (``X-Backend-Mass-Tenant``) and
its workload class (``X-Backend-Mass-Class``: read, write or mixed), and
records them in the WSGI environ (``mass.priority``, ``mass.tenant``,
``mass.class``) for the object server.  A missing or malformed priority gets
``default_priority``, never an error; replication traffic (REPLICATE, SSYNC,
``X-Backend-Replication: true``) gets ``background_priority``, whatever it
carries.  Each request is counted in statsd as
``mass_queue.priority.<n>`` (``mass_queue.priority.background`` for
replication), and each classified one as ``mass_queue.class.<class>``, so
an operator can see the mix each device serves.

This is the admission point of the per-device priority queue; the filter
already sits where the queue belongs::

    [pipeline:main]
    pipeline = healthcheck recon mass_queue object-server

    [filter:mass_queue]
    use = egg:swift_mass#mass_queue
    # Priority of requests that carry none (or a malformed one), 0 to 9.
    # default_priority = 5
    # Priority of replication traffic, 0 to 9.
    # background_priority = 1

Options are validated when the object server starts; the ``log_*`` and
``log_statsd_*`` options apply.
"""

from swift.common.swob import wsgi_unquote
from swift.common.utils import config_true_value, get_logger

from swift_mass import tags
from swift_mass.config import int_option

SECTION = 'filter:mass_queue'
REPLICATION_METHODS = ('REPLICATE', 'SSYNC')


class MassQueueMiddleware(object):

    def __init__(self, app, conf, logger=None):
        self.app = app
        self.logger = logger or get_logger(
            conf, log_route='mass_queue', statsd_tail_prefix='mass_queue')
        self.default_priority = int_option(
            conf, SECTION, 'default_priority', tags.DEFAULT_PRIORITY,
            tags.PRIORITY_MIN, tags.PRIORITY_MAX)
        self.background_priority = int_option(
            conf, SECTION, 'background_priority', tags.BACKGROUND_PRIORITY,
            tags.PRIORITY_MIN, tags.PRIORITY_MAX)

    def __call__(self, env, start_response):
        if (env.get('REQUEST_METHOD') in REPLICATION_METHODS or
                config_true_value(env.get('HTTP_X_BACKEND_REPLICATION'))):
            env[tags.ENV_PRIORITY] = self.background_priority
            self.logger.increment('priority.background')
        else:
            priority = tags.parse_priority(
                env.get('HTTP_X_BACKEND_MASS_PRIORITY'),
                self.default_priority)
            env[tags.ENV_PRIORITY] = priority
            self.logger.increment('priority.%d' % priority)
        tenant = env.get('HTTP_X_BACKEND_MASS_TENANT')
        if tenant:
            env[tags.ENV_TENANT] = wsgi_unquote(tenant)
        cls = env.get('HTTP_X_BACKEND_MASS_CLASS')
        if cls in tags.CLASSES:
            env[tags.ENV_CLASS] = cls
            self.logger.increment('class.' + cls)
        return self.app(env, start_response)


def filter_factory(global_conf, **local_conf):
    conf = global_conf.copy()
    conf.update(local_conf)

    def mass_queue_filter(app):
        return MassQueueMiddleware(app, conf)
    return mass_queue_filter
