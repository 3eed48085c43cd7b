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
"""Parsing of Mass options, once, at start-up: what both filters share.

Every parser raises :class:`ConfigError` whose message names the option, the
value it was given and what is allowed, so that a bad ``[filter:mass]`` line
stops the server with a sentence an operator can act on.  Each filter
section is parsed by one object: :class:`QueueConf`, here, every option of
``[filter:mass_queue]``, read by the object servers' filter;
:class:`swift_mass.proxy.conf.MassConf` every option of ``[filter:mass]``
(:data:`SECTION`), read by the ``mass`` filter, by ``swift-mass`` and by the
benchmark.  Nothing here imports the control loop (:mod:`swift_mass.control`),
which the object servers do not run.
"""
from swift.common.recon import DEFAULT_RECON_CACHE_PATH
from swift.common.storage_policy import POLICIES
from swift.common.swob import str_to_wsgi
from swift.common.utils import config_true_value, list_from_csv

from swift_mass import redis_client, tags

#: the proxy filter's section (:class:`swift_mass.proxy.conf.MassConf`)
SECTION = 'filter:mass'


class ConfigError(ValueError):
    pass


def invalid_option(section, option, value, allowed):
    """The error for an option whose value is not among `allowed`."""
    return ConfigError('[%s] %s = %r is not valid; allowed: %s'
                       % (section, option, value, allowed))


def _number_option(conf, section, option, default, minimum, maximum,
                   parse, kind, fmt):
    raw = conf.get(option, default)
    if minimum is not None and maximum is not None:
        allowed = ('%s from ' + fmt + ' to ' + fmt) % (kind, minimum,
                                                       maximum)
    elif minimum is not None:
        allowed = ('%s >= ' + fmt) % (kind, minimum)
    else:
        allowed = kind
    try:
        value = parse(str(raw).strip())
    except ValueError:
        raise invalid_option(section, option, raw, allowed)
    # value != value: NaN, which no range check would catch
    if value != value or ((minimum is not None and value < minimum) or
                          (maximum is not None and value > maximum)):
        raise invalid_option(section, option, raw, allowed)
    return value


def int_option(conf, section, option, default, minimum=None, maximum=None):
    """Read an integer option and check it lies in [minimum, maximum]."""
    return _number_option(conf, section, option, default, minimum, maximum,
                          int, 'an integer', '%d')


def float_option(conf, section, option, default, minimum=None,
                 maximum=None):
    """Read a number option and check it lies in [minimum, maximum]."""
    return _number_option(conf, section, option, default, minimum, maximum,
                          float, 'a number', '%g')


_TRUE = ('true', '1', 'yes', 'on', 't', 'y')
_FALSE = ('false', '0', 'no', 'off', 'f', 'n')


def bool_option(conf, section, option, default):
    """Read a boolean option; unlike swift's config_true_value, a typo such
    as ``ture`` is an error instead of silently meaning false."""
    raw = conf.get(option, default)
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise invalid_option(section, option, raw,
                         'one of ' + ', '.join(_TRUE + _FALSE))


def choice_option(conf, section, option, default, choices):
    """Read an option that must be one of `choices`."""
    raw = conf.get(option, default)
    value = str(raw).strip().lower()
    if value not in choices:
        raise invalid_option(section, option, raw,
                             'one of ' + ', '.join(choices))
    return value


#: ``mode`` of both filters: ``observe`` decides and reports as ``active``
#: does, and changes nothing on the request path
ACTIVE, OBSERVE = MODES = ('active', 'observe')


def mode_option(conf, section):
    """``mode``: active (the default) or observe."""
    return choice_option(conf, section, 'mode', ACTIVE, MODES)


def accounts_option(conf, section, option):
    """A comma-separated list of account names as a request's path
    carries them (``AUTH_a``: the reseller prefix included, not quoted),
    as WSGI strings, the form the proxy filter compares its tenants in;
    an empty frozenset if unset."""
    raw = str(conf.get(option, ''))
    names = list_from_csv(raw)
    for name in names:
        if '/' in name:
            raise invalid_option(
                section, option, raw, 'account names as a path carries '
                'them, comma-separated (AUTH_a, AUTH_b), without "/"')
    return frozenset(str_to_wsgi(name) for name in names)


def substore_option(conf, section, option):
    """A storage policy name from swift.conf ('' = the default policy)."""
    name = str(conf.get(option, '')).strip()
    if not name:
        return ''
    policy = POLICIES.get_by_name(name)
    if policy is None or policy.is_deprecated:
        names = sorted(p.name for p in POLICIES if not p.is_deprecated)
        raise ConfigError(
            '[%s] %s = %r is not valid; allowed: a storage policy of '
            'swift.conf that is not deprecated (%s), or empty for the '
            'default policy' % (section, option, name, ', '.join(names)))
    return policy.name


def servers_option(conf, section, option):
    """A comma-separated list of memcached servers, ``host:port`` each (an
    IPv6 host in brackets), as Swift's ``memcache_servers``; [] if
    unset."""
    raw = str(conf.get(option, '')).strip()
    servers = [item.strip() for item in raw.split(',') if item.strip()]
    for server in servers:
        host, _, port = server.rpartition(':')
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise invalid_option(section, option, raw,
                                 'host:port[,host:port...]')
    return servers


def redis_url_option(conf, section, option, default):
    """A Redis URL of a form swift_mass.redis_client takes: one Redis, a
    Sentinel service or a Cluster (checked whatever the store, so a typo
    shows at start-up, not on the day someone switches to Redis)."""
    url = str(conf.get(option, default)).strip()
    try:
        redis_client.parse_url(url)
    except ValueError as err:
        raise invalid_option(
            section, option, redis_client.redacted_url(url),
            '%s (%s)' % (redis_client.URL_FORMS, err))
    return url


#: the section an object server's own options are in
OBJECT_SERVER_SECTION = 'app:object-server'

#: the object server's own options that Mass reads, each with the object
#: server's default (swift.obj.server, swift.common.wsgi)
OBJECT_SERVER_DEFAULTS = {
    'devices': '/srv/node',
    'mount_check': 'true',
    'swift_dir': '/etc/swift',
    'bind_ip': '0.0.0.0',
    'bind_port': 6200,
    'servers_per_port': 0,
    'recon_cache_path': DEFAULT_RECON_CACHE_PATH,
}


class ObjectServerConf(object):
    """An object server's own options (``[app:object-server]`` over
    ``[DEFAULT]``), read as the object server reads them, for the code of
    Mass that needs to know where its devices are and which ring devices
    it serves: ``mass_queue`` (:class:`QueueConf`) and ``swift-mass
    devices probe`` (:mod:`swift_mass.devices.host`).  Defaults:
    :data:`OBJECT_SERVER_DEFAULTS`.

    ``ring_ip``: the address the rings name the server by, its
    ``ring_ip``, else its ``bind_ip``, as Swift's servers and replicators
    find their devices (swift.common.wsgi); ``ring_port``: its
    ``bind_port``, or None under ``servers_per_port``, where one config
    serves every port its IP has in the rings (one per device), so that
    its devices are found by IP alone, as Swift's replicator finds them.

    :raises ConfigError: naming the option and the values allowed.
    """

    def __init__(self, conf, section=OBJECT_SERVER_SECTION):
        default = OBJECT_SERVER_DEFAULTS
        self.devices = conf.get('devices', default['devices'])
        # as the object server reads it (a typo means false there too)
        self.mount_check = config_true_value(
            conf.get('mount_check', default['mount_check']))
        self.swift_dir = conf.get('swift_dir', default['swift_dir'])
        self.bind_ip = conf.get('bind_ip', default['bind_ip'])
        self.ring_ip = conf.get('ring_ip', self.bind_ip)
        self.bind_port = int_option(conf, section, 'bind_port',
                                    default['bind_port'], 1, 65535)
        self.servers_per_port = int_option(
            conf, section, 'servers_per_port', default['servers_per_port'],
            0)
        self.ring_port = None if self.servers_per_port else self.bind_port
        self.recon_cache_path = conf.get('recon_cache_path',
                                         default['recon_cache_path'])


#: the group-commit diskfile's options (swift_mass.obj.diskfile), in the
#: object server's ``[app:object-server]`` or ``[DEFAULT]``, and their
#: defaults; the sample, etc/object-server.conf-sample, shows these
GROUP_COMMIT_DEFAULTS = {
    # how long a flush waits at most for writes already under way
    'group_commit_linger_ms': 5.0,
    # where the processes of a node number each filesystem's flushes:
    # swift-init's run directory, on tmpfs on most systems
    'group_commit_run_dir': '/var/run/swift',
}
MAX_LINGER_MS = 1000.0


class GroupCommitConf(object):
    """The group-commit diskfile's options, read and checked once when its
    manager is made: ``linger`` (seconds, of ``group_commit_linger_ms``)
    and ``run_dir`` (``group_commit_run_dir``).  Defaults:
    :data:`GROUP_COMMIT_DEFAULTS`.

    :raises ConfigError: naming the option and the values allowed.
    """

    def __init__(self, conf, section=OBJECT_SERVER_SECTION):
        default = GROUP_COMMIT_DEFAULTS
        self.linger = float_option(
            conf, section, 'group_commit_linger_ms',
            default['group_commit_linger_ms'], 0.0, MAX_LINGER_MS) / 1000.0
        raw = conf.get('group_commit_run_dir',
                       default['group_commit_run_dir'])
        self.run_dir = str(raw).strip()
        # relative, it would depend on the directory each process was
        # started in, and processes would not share their flushes
        if not self.run_dir.startswith('/'):
            raise invalid_option(section, 'group_commit_run_dir', raw,
                                 'an absolute path')


class QueueConf(object):
    """``[filter:mass_queue]``, the object servers' filter: every option
    read and checked once, each an attribute named as the option (the
    sample, etc/object-server.conf-sample, says what each means).

    Without ``adaptive_slots`` the ``adaptive_*`` options are not read and
    each pool's bounds are its slot count; ``adaptive_interval``,
    ``adaptive_low`` and ``adaptive_high`` are then None.

    ``server_conf``: the object server's own options (``devices``,
    ``mount_check``, ``swift_dir``, ``bind_ip``, ``ring_ip``,
    ``bind_port``, ``servers_per_port``, ``recon_cache_path``) as the
    object server app was given them; by default ``conf``'s.

    :raises ConfigError: naming the option and the values allowed.
    """
    section = 'filter:mass_queue'

    def __init__(self, conf=None, server_conf=None):
        conf = {} if conf is None else conf
        server = conf if server_conf is None else server_conf
        # an error names the section the value came from
        server_section = self.section if server_conf is None else \
            OBJECT_SERVER_SECTION
        self._read_admission(conf)
        self._read_urgent(conf)
        self._read_pools(conf)
        self._read_server(server, server_section)
        self._read_generations(conf)
        self._read_stats(conf)

    def _read_admission(self, conf):
        """The mode, the priorities, and how a device's queue admits
        requests: its slots, how long a request may wait, and what a
        refusal says."""
        section = self.section
        self.mode = mode_option(conf, section)
        #: whether the queue admits by slots and priorities; in observe
        #: mode every request is admitted at once
        self.active = self.mode == ACTIVE
        self.default_priority = int_option(
            conf, section, 'default_priority', tags.DEFAULT_PRIORITY,
            tags.PRIORITY_MIN, tags.PRIORITY_MAX)
        self.background_priority = int_option(
            conf, section, 'background_priority', tags.BACKGROUND_PRIORITY,
            tags.PRIORITY_MIN, tags.PRIORITY_MAX)
        self.slots_per_device = int_option(
            conf, section, 'slots_per_device', 8, 0)
        self.deadline = float_option(conf, section, 'deadline', 3.0, 0.0,
                                     3600.0)
        self.retry_after = int_option(conf, section, 'retry_after', 1, 0)
        self.max_refusals_per_minute = int_option(
            conf, section, 'max_refusals_per_minute', 5, 0)
        self.priority_slack = float_option(conf, section, 'priority_slack',
                                           0.25, 0.0, 3600.0)

    def _read_urgent(self, conf):
        """The ``urgent_*`` options: the urgent tenants, the share of a
        device's slots kept for them, for how long once they are quiet,
        and whether the others may borrow what they leave idle."""
        section = self.section
        self.urgent_tenants = frozenset(
            list_from_csv(str(conf.get('urgent_tenants', ''))))
        self.urgent_share = float_option(conf, section, 'urgent_share', 0.5,
                                         0.0, 1.0)
        self.urgent_idle_seconds = float_option(
            conf, section, 'urgent_idle_seconds', 30.0, 0.0)
        #: whether, while isolated, the other tenants may use reserved
        #: slots no urgent request waits for, all but one
        self.lend_reserved_slots = bool_option(
            conf, section, 'lend_reserved_slots', True)

    def _read_pools(self, conf):
        """``batch_slots``, and ``adaptive_slots``: the bounds each pool
        of slots (general and batch) adapts within."""
        section = self.section
        self.batch_slots = int_option(conf, section, 'batch_slots', 0, 0)
        # A queue that is off (no slots) has nothing to adapt.
        self.adaptive_slots = bool(
            bool_option(conf, section, 'adaptive_slots', False) and
            self.slots_per_device)
        self.adaptive_interval = self.adaptive_low = self.adaptive_high = None
        self.adaptive_min_slots = self.adaptive_max_slots = \
            self.slots_per_device
        self.adaptive_min_batch_slots = self.adaptive_max_batch_slots = \
            self.batch_slots
        if self.adaptive_slots:
            self._read_adaptive(conf)

    def _read_server(self, server, server_section):
        """The object server's own options (:class:`ObjectServerConf`),
        read as it reads them: a queue only for a device it would serve,
        and the ring devices it registers as bumping generations."""
        #: the object server's own options
        self.server = ObjectServerConf(server, server_section)
        self.devices = self.server.devices
        self.mount_check = self.server.mount_check
        self.swift_dir = self.server.swift_dir
        self.bind_ip = self.server.bind_ip
        self.ring_ip = self.server.ring_ip
        self.bind_port = self.server.bind_port
        self.ring_port = self.server.ring_port

    def _read_generations(self, conf):
        """Generations (swift_mass.generations): off without a
        redis_url."""
        section = self.section
        self.redis_url = None
        if str(conf.get('redis_url', '')).strip():
            self.redis_url = redis_url_option(conf, section, 'redis_url',
                                              redis_client.DEFAULT_REDIS_URL)
        self.generation_ttl = int_option(conf, section, 'generation_ttl',
                                         86400, 1)
        self.bump_wait = int_option(conf, section, 'bump_wait_ms', 40, 1,
                                    10000) / 1000.0

    def _read_stats(self, conf):
        """How often (``stats_interval``) and where (``recon_cache_path``)
        each worker's queues are written: where its server's other workers
        read them, so that any worker answers GET /mass_queue for all."""
        section = self.section
        self.stats_interval = float_option(conf, section, 'stats_interval',
                                           5.0, 0.1, 3600.0)
        # the directory recon and Swift's daemons use, set (if at all)
        # for the object server, not for this filter
        self.recon_cache_path = self.server.recon_cache_path

    def _read_adaptive(self, conf):
        """The ``adaptive_*`` options, read only with ``adaptive_slots``:
        how often and between what usage the slots adapt, and each pool's
        bounds."""
        section = self.section
        low = float_option(conf, section, 'adaptive_low', 0.3, 0.0, 1.0)
        high = float_option(conf, section, 'adaptive_high', 0.9, 0.0, 1.0)
        if low >= high:
            raise ConfigError(
                '[%s] adaptive_low = %g, adaptive_high = %g are not '
                'valid; allowed: adaptive_low < adaptive_high'
                % (section, low, high))
        self.adaptive_low, self.adaptive_high = low, high
        self.adaptive_interval = float_option(
            conf, section, 'adaptive_interval', 10.0, 0.1)
        # Every request needs a general slot when the batch slots are
        # busy: at least one must stay.
        self.adaptive_min_slots, self.adaptive_max_slots = self._bounds(
            conf, 'slots', self.slots_per_device, 'slots_per_device', 1,
            4 * self.slots_per_device, 1)
        self.adaptive_min_batch_slots, self.adaptive_max_batch_slots = \
            self._bounds(conf, 'batch_slots', self.batch_slots,
                         'batch_slots', min(1, self.batch_slots),
                         4 * self.batch_slots, 0)

    def _bounds(self, conf, pool, value, value_option, default_min,
                default_max, lowest):
        """adaptive_min_<pool>, adaptive_max_<pool>, checked to hold
        `value`."""
        section = self.section
        minimum = int_option(conf, section, 'adaptive_min_%s' % pool,
                             default_min, lowest)
        maximum = int_option(conf, section, 'adaptive_max_%s' % pool,
                             default_max, 0)
        if not minimum <= value <= maximum:
            raise ConfigError(
                '[%s] adaptive_min_%s = %d, %s = %d, adaptive_max_%s = %d '
                'are not valid; allowed: adaptive_min_%s <= %s <= '
                'adaptive_max_%s'
                % (section, pool, minimum, value_option, value, pool,
                   maximum, pool, value_option, pool))
        return minimum, maximum
