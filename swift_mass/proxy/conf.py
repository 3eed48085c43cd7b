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
"""``[filter:mass]``, the proxy filter's options: parsed and checked once,
at start-up, into one :class:`MassConf`, which the ``mass`` filter hands
each of its parts, and which ``swift-mass`` and the benchmark build from the
proxy's configuration file to read what the proxies share.

The option parsers, :class:`~swift_mass.conf.ConfigError` and the object
servers' :class:`~swift_mass.conf.QueueConf` are in :mod:`swift_mass.conf`;
what is here builds the control loop's settings
(:class:`swift_mass.control.controller.Settings`), which only the proxies
and the command need.
"""
from swift_mass import metrics, redis_client, tags
from swift_mass.conf import ACTIVE, SECTION, ConfigError, accounts_option, \
    bool_option, choice_option, float_option, int_option, invalid_option, \
    mode_option, redis_url_option, servers_option, substore_option
from swift_mass.control import classify, controller, substores

STORES = ('redis', 'memcache', 'local')
DEFAULT_STORE_RETRY_AFTER = 30
CACHE_BACKENDS = ('redis', 'memcache', 'local')
DEFAULT_MIGRATE_RETRY_AFTER = 60
#: the classes whose tenants ``swift-mass auto-migrate`` moves by default:
#: a move refuses the container's writes while it lasts, and a read
#: tenant's are few
DEFAULT_AUTO_MIGRATE_CLASSES = (tags.READ,)


def _warmup_option(conf, section, window):
    """``validation_warmup_seconds``: at least a window (by default one),
    so no window a method is judged by holds its cold start."""
    option = 'validation_warmup_seconds'
    try:
        return int_option(conf, section, option, window, window)
    except ConfigError:
        raise invalid_option(section, option, conf.get(option),
                             'an integer >= window_seconds (%d)' % window)


def _control_settings(conf, section=SECTION, interval=5.0):
    """The control loop's settings (swift_mass.control.controller.Settings);
    `interval`, the ``interval`` option, is how long a decision may take
    to reach every worker.  Each default is the control loop's own
    (controller.DEFAULT_SETTINGS, its thresholds classify's): one table,
    which the sample's values are tested against."""
    default = controller.DEFAULT_SETTINGS
    limits = default.thresholds
    thresholds = classify.Thresholds(
        read_share=float_option(conf, section, 'read_share',
                                limits.read_share, 0.0, 1.0),
        write_share=float_option(conf, section, 'write_share',
                                 limits.write_share, 0.0, 1.0),
        min_requests=int_option(conf, section, 'min_requests',
                                limits.min_requests, 1),
        hysteresis=float_option(conf, section, 'hysteresis',
                                limits.hysteresis, 0.0, 0.5))
    try:
        classify.check_thresholds(thresholds)
    except ValueError as err:
        raise ConfigError('[%s] read_share, write_share, hysteresis: %s'
                          % (section, err))
    substores, methods = {}, {}
    for cls in classify.CLASSES:
        substores[cls] = substore_option(conf, section, '%s_substore' % cls)
        methods[cls] = choice_option(
            conf, section, '%s_method' % cls,
            default.methods[cls], controller.METHODS)
    window = int_option(conf, section, 'window_seconds', default.window, 10)
    return controller.Settings(
        thresholds=thresholds, substores=substores, methods=methods,
        window=window,
        margin=float_option(conf, section, 'validation_margin',
                            default.margin, 0.0, 10.0),
        holdoff=int_option(conf, section, 'holdoff_seconds',
                           default.holdoff, 0),
        warmup=_warmup_option(conf, section, window),
        validation_window=int_option(conf, section,
                                     'validation_window_seconds',
                                     default.validation_window, 10),
        interval=interval)


class StoreConf(object):
    """The shared store's options (swift_mass.control.stores), and the
    Redis the cache shares with it (swift_mass.proxy.methods.cache):
    ``redis_url`` when ``store`` is redis, its keys under
    ``redis_prefix``."""

    def __init__(self, conf, section=SECTION):
        self.kind = choice_option(conf, section, 'store', 'redis', STORES)
        self.redis_url = redis_url_option(conf, section, 'redis_url',
                                          redis_client.DEFAULT_REDIS_URL)
        #: not an option: the prefix of Mass's keys (a test or a benchmark
        #: run sets one of its own)
        self.redis_prefix = redis_client.DEFAULT_KEY_PREFIX
        self.redis_timeout_ms = int_option(
            conf, section, 'redis_timeout_ms',
            redis_client.DEFAULT_REDIS_TIMEOUT_MS, 1)
        self.retry_after = int_option(
            conf, section, 'store_retry_after', DEFAULT_STORE_RETRY_AFTER, 1)


class CacheConf(object):
    """The ``cache_*`` options (swift_mass.proxy.methods.cache)."""

    def __init__(self, conf, section=SECTION):
        self.backend = choice_option(conf, section, 'cache_backend',
                                     'redis', CACHE_BACKENDS)
        self.memcache_servers = servers_option(conf, section,
                                               'cache_memcache_servers')
        self.max_object_size = int_option(
            conf, section, 'cache_max_object_size', 1024 * 1024, 1)
        self.budget = int_option(conf, section, 'cache_budget_bytes',
                                 64 * 1024 * 1024, 1)
        if self.budget < self.max_object_size:
            raise ConfigError(
                '[%s] cache_budget_bytes = %d is not valid; allowed: at '
                'least cache_max_object_size (%d)' % (
                    section, self.budget, self.max_object_size))
        # each worker's own LRU in front of shared bodies (0: none)
        self.local_budget = int_option(
            conf, section, 'cache_local_budget_bytes', 32 * 1024 * 1024, 0)
        if 0 < self.local_budget < self.max_object_size:
            raise ConfigError(
                '[%s] cache_local_budget_bytes = %d is not valid; allowed: '
                '0 (no worker cache) or at least cache_max_object_size (%d)'
                % (section, self.local_budget, self.max_object_size))
        self.ttl = int_option(conf, section, 'cache_ttl', 300, 1)
        self.generation_ttl = int_option(
            conf, section, 'cache_generation_ttl', 86400, self.ttl)
        self.ttl_only = bool_option(conf, section, 'cache_ttl_only', False)
        # seconds, as redis-py takes them
        self.redis_timeout = int_option(
            conf, section, 'cache_redis_timeout_ms', 250, 1) / 1000.0


class MergeConf(object):
    """The ``merge_*`` options (swift_mass.proxy.methods.merge)."""

    def __init__(self, conf, section=SECTION):
        self.wait_seconds = float_option(
            conf, section, 'merge_wait_seconds', 10.0, 0.0, 300.0)


class MassConf(object):
    """Every option of ``[filter:mass]``, parsed and checked once.

    The ``mass`` filter builds one at start-up and hands each part what it
    needs; ``swift-mass`` and the benchmark build one from the proxy's
    configuration file (:mod:`swift_mass.shared_store`).
    Every option, its default and meaning is in
    ``etc/proxy-server.conf-sample``; a bad one raises :class:`ConfigError`
    naming it and the allowed values.

    :param conf: the section's options (a dict of strings), or None for
        every default.
    """

    def __init__(self, conf=None, section=SECTION):
        conf = conf or {}
        self.mode = mode_option(conf, section)
        #: whether Mass acts on requests (tags, routes, methods); in
        #: observe mode it only counts, decides and reports
        self.active = self.mode == ACTIVE
        #: accounts served as without Mass, besides those whose account
        #: carries the opt-out mark
        self.opt_out_accounts = accounts_option(conf, section,
                                                'opt_out_accounts')
        self.default_priority = int_option(
            conf, section, 'default_priority', tags.DEFAULT_PRIORITY,
            tags.PRIORITY_MIN, tags.PRIORITY_MAX)
        #: put on a reseller admin's own work on a tenant's account (a
        #: move's copies, fences and deletes), as mass_queue puts its own
        #: background_priority on replication: the tenant's requests go
        #: first at the devices the move shares with them
        self.background_priority = int_option(
            conf, section, 'background_priority', tags.BACKGROUND_PRIORITY,
            tags.PRIORITY_MIN, tags.PRIORITY_MAX)
        self.control_loop = bool_option(conf, section, 'control_loop', True)
        self.interval = float_option(conf, section, 'interval',
                                     controller.DEFAULT_SETTINGS.interval, 0.1,
                                     300.0)
        self.bucket_seconds = int_option(conf, section, 'bucket_seconds', 5,
                                         1)
        #: per-tenant statsd counters of a flush for at most this many
        #: tenants, the busiest (0: none)
        self.tenant_metrics = int_option(conf, section, 'tenant_metrics',
                                         metrics.DEFAULT_TENANT_METRICS, 0)
        #: the control loop's (swift_mass.control.controller.Settings)
        self.control = _control_settings(conf, section, self.interval)
        #: 'measured': a class's substore is used only where the classes
        #: file shows its devices faster than the default policy's
        #: (swift_mass.control.substores); 'configured': as configured
        self.substore_routing = choice_option(
            conf, section, 'substore_routing', 'measured',
            substores.MODES)
        if self.control.window < 2 * self.bucket_seconds:
            raise ConfigError('[%s] window_seconds = %d is not valid; '
                              'allowed: at least twice bucket_seconds (%d)'
                              % (section, self.control.window,
                                 self.bucket_seconds))
        self.urgent_recheck_seconds = float_option(
            conf, section, 'urgent_recheck_seconds', 30.0, 0.0, 3600.0)
        self.migrate_retry_after = int_option(
            conf, section, 'migrate_retry_after',
            DEFAULT_MIGRATE_RETRY_AFTER, 1)
        #: the proxy's: its rings say which devices must bump generations
        self.swift_dir = conf.get('swift_dir', '/etc/swift')
        self.store = StoreConf(conf, section)
        self.cache = CacheConf(conf, section)
        self.merge = MergeConf(conf, section)
        self.auto_migrate = AutoMigrateConf(conf, self.control.window,
                                            section)


class AutoMigrateConf(object):
    """The ``auto_migrate*`` options of ``[filter:mass]``: what
    ``swift-mass auto-migrate`` (:mod:`swift_mass.cli.migrate.auto`) moves,
    and how often.  The proxies parse them too, so a bad one stops them
    at start-up as any other option of the section does.

    :param window: the control loop's ``window_seconds``; a tenant's
        policy must stand at least that long before its containers move
        (never faster than the classifier's hysteresis).
    """

    def __init__(self, conf, window, section=SECTION):
        #: opt-in: without it the command moves nothing
        self.enabled = bool_option(conf, section, 'auto_migrate', False)
        #: seconds a tenant's policy must have stood unchanged
        self.after = float_option(conf, section, 'auto_migrate_after',
                                  max(600.0, window), float(window))
        #: seconds between two passes; each moves at most one container
        self.interval = float_option(conf, section, 'auto_migrate_interval',
                                     60.0, 1.0)
        #: a container with more objects is left to the operator
        self.max_objects = int_option(conf, section,
                                      'auto_migrate_max_objects', 100000, 1)
        #: seconds between marking a container and its last listing
        #: (``swift-mass migrate --settle``): at least the proxies'
        #: ``recheck_container_existence``
        self.settle = float_option(conf, section, 'auto_migrate_settle',
                                   60.0, 0.0)
        #: copies and deletes in flight during a move
        self.concurrency = int_option(conf, section,
                                      'auto_migrate_concurrency', 4, 1, 64)
        self.classes = _classes_option(conf, section, 'auto_migrate_classes',
                                       DEFAULT_AUTO_MIGRATE_CLASSES)


def _classes_option(conf, section, option, default):
    """A comma-separated list of workload classes, at least one."""
    raw = conf.get(option, ','.join(default))
    names = tuple(name.strip().lower() for name in str(raw).split(','))
    if not all(name in tags.CLASSES for name in names):
        raise invalid_option(section, option, raw, 'a comma-separated list '
                             'of %s' % ', '.join(tags.CLASSES))
    return names
