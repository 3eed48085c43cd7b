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
"""Redis clients for a ``redis_url``: one Redis, the master of a Redis
Sentinel service, or a Redis Cluster, each through redis-py's own class.

The URL forms (``redis_url`` of ``[filter:mass]`` and of
``[filter:mass_queue]``):

* ``redis://[[user]:password@]host[:port][/db]``, ``rediss://...`` (TLS)
  and ``unix://[[user]:password@]/path/to.sock[?db=N]``: one Redis, as
  ``redis.Redis.from_url`` takes them (its query options included);
* ``redis+sentinel://[[user]:password@]ADDRESSES/service[/db]``: the
  master that a majority of the sentinels at ADDRESSES (port 26379 unless
  given) name for ``service``, through ``Sentinel.master_for`` (below,
  *Split brain*): every new connection asks the sentinels for the master
  first, so after a failover the next connection reaches the promoted
  one.  The credentials and the database are the master's; the sentinels
  are asked without any;
* ``redis+cluster://[[user]:password@]ADDRESSES[/]``: a Redis Cluster
  (``RedisCluster``), discovered through any of the nodes at ADDRESSES
  (port 6379 unless given); a Cluster has no databases.

ADDRESSES is ``host[:port][,host[:port]...]``, an IPv6 host in brackets.
The last two forms take no query string.  TLS to sentinels or Cluster
nodes is not offered: redis-py takes its TLS options (certificates, CA)
from a URL's query string only for one Redis.

**Keys on a Cluster.**  A Cluster runs a script, or a transaction, only
when all the keys it touches hash to one slot, and each script of Mass
touches several: the never-stale ones read the epoch together with
per-object keys, so no split of Mass's keys over slots keeps every script
within one.  On a Cluster URL every key prefix therefore becomes a hash
tag (:func:`key_prefix`: ``mass:`` -> ``{mass}:``): all of Mass's keys are
in the slot of ``{mass}``, so all of Mass's state is on one master of the
Cluster (and its replicas).  Other URLs keep the prefixes as they were,
so an upgrade keeps the operator's pins and the policy table.  The
commands that name no key (SCRIPT LOAD, PING) go to the node holding
that slot, not to every master nor to one of redis-py's choosing.

**A Cluster is built on first use.**  ``RedisCluster`` asks its nodes for
the slot map as it is constructed and raises when none answers, where a
Mass server must start, and every request succeed, while Redis is down.
:class:`LazyRedisCluster` builds it at the first command instead, inside
the caller's own handling of Redis errors; a failed build is tried again
at the next command.  The errors a Cluster adds (``RedisClusterException``
and its ``SlotNotCoveredError``, which are not ``RedisError``; and
``ClusterDownError``, ``MovedError``, ``TryAgainError``, which are) reach
callers that, as every caller of this module does, treat any exception
of a Redis call as Redis being down.  A call that meets a connection error
refreshes the slot map before it raises, so the call after a failover
reaches the promoted master; one that meets CLUSTERDOWN (a Cluster that
lost a master and has not promoted its replica yet) waits 0.25 s in
redis-py first, once per period the caller's breaker lets through.

**Set-up of a connection.**  ``connected(connection)`` (Mass's rollback
defence, :meth:`swift_mass.generations.core.Generations._connected`) runs on
every new connection once redis-py has set it up (HELLO, AUTH, SELECT),
before the connection serves a command: on one Redis, on the Sentinel
master's connections (a promoted replica is reached by new connections)
and on every Cluster node's connections.  On a Cluster, connections to
nodes that do not hold Mass's slot cannot tell anything about it; and a
node that comes to hold the slot (a replica promoted) may still have
connections opened before.  So whenever the client's slot map names
another node for Mass's slot, the connections it has to that node are
closed (those in use once they are released): the first command Mass
sends there opens a new one, on which ``connected`` runs.

**Split brain on Sentinel.**  A master cut off from the sentinels but not
from every client goes on answering the connections it has while the
sentinels promote a replica.  Unfenced, a proxy reading generations over
its pooled connections to the old master misses the bumps that writers
make on the new one, and a writer still bumping the old master hides its
writes from proxies reading the new one.  The fence:

* the master is the one a *majority* of the configured sentinels name
  (``SENTINEL MASTER``), each as a master it sees healthy (no ``s_down``,
  ``o_down`` or failover in progress) and has named for at least
  ``SENTINEL_HOLD`` seconds (its ``role-reported-time``, which a sentinel
  starts again when it switches to a promoted replica); no majority, no
  master (``MasterNotFoundError``, a ConnectionError).  redis-py's own
  ``discover_master`` takes the first sentinel that answers
  (:class:`MajoritySentinel`);
* a pool uses the master it found for ``SENTINEL_CHECK_PERIOD`` seconds,
  less its socket timeout, from the start of the check that found it; the
  first checkout after that asks the sentinels again before a connection
  is handed out.  When they no longer name it, every connection of the
  pool is closed (those in use too) and the checkout raises, so callers
  treat Redis as down, as they do for any error of it
  (:class:`CheckedSentinelPool`).

Why that is enough: two majorities share a sentinel, and a sentinel names
the old master only before it switches to the new one.  So whoever starts
using a promoted master does so ``SENTINEL_HOLD`` seconds at least after
the start of every check that still found the old master, by which time
every pool has stopped handing out connections to it, and the commands it
handed out have been answered or abandoned (the hold is the check period,
which the socket timeout is taken from, and a second for scheduling and
clock rates).  Bumps the old master took after the promotion are on no
replica, but the first connection to the promoted master replaces the
epoch (``connected``, above), so no body cached before is served.

That rests on the sentinels keeping their view across restarts (their
config files) and on no process stalling, between a check and the command
it hands a connection to, for longer than that second.  For the stalls,
every new connection also reads the master's ``min-replicas-to-write``
(:class:`MinReplicasCheck`): with it at 1 or more, and a small
``min-replicas-max-lag``, a master cut off from its replicas refuses
writes, Mass's reads included, within seconds.  The fence does not rest on
it, so a master with 0, or whose CONFIG is renamed or forbidden (an ACL,
``rename-command``), is used, with a warning (once per master and client,
through ``logger``).

The costs: one to three ``SENTINEL MASTER`` round trips per pool and check
period, and per new connection, with a ``CONFIG GET``; a failover reaches
Mass ``SENTINEL_HOLD`` seconds later; after a failed check, checkouts fail
at once for ``SENTINEL_RETRY`` seconds instead of asking again.
"""
import collections
import logging
import threading
import time
import urllib.parse

import redis
from redis.sentinel import MasterNotFoundError, Sentinel, \
    SentinelConnectionPool

from swift_mass.redis_cluster import LazyRedisCluster

SENTINEL_SCHEME = 'redis+sentinel'
CLUSTER_SCHEME = 'redis+cluster'
# what redis.Redis.from_url parses
SINGLE_SCHEMES = ('redis', 'rediss', 'unix')
SENTINEL_PORT = 26379
CLUSTER_PORT = 6379
#: the forms, as a configuration error names them
URL_FORMS = ('a redis://, rediss://, unix://, '
             'redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB] '
             'or redis+cluster://HOST[:PORT][,HOST[:PORT]...] URL')

DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379/0'
#: the shared store's connect and reply timeout (``redis_timeout_ms``).
#: Only the control loop calls the store, beside the requests, so a slow
#: reply delays no client; at 50 ms, proxies whose CPU was saturated read
#: replies late and passed the store over to memcache and back again and
#: again, deciding from its stale table meanwhile
#: (docs/benchmarks/hetero-device-bound/README.md).
DEFAULT_REDIS_TIMEOUT_MS = 500

#: the prefix of Mass's keys in Redis (:func:`key_prefix` makes it a hash
#: tag on a Cluster): the shared store's keys, and the cache's under
#: ``<prefix>cache:``
DEFAULT_KEY_PREFIX = 'mass:'

#: seconds a pool of a Sentinel URL uses the master it found before it asks
#: the sentinels again (less the pool's socket timeout)
SENTINEL_CHECK_PERIOD = 1.0
#: seconds each sentinel of a majority must have named a master for
#: before any connection goes to it: the check period and a margin
SENTINEL_HOLD = SENTINEL_CHECK_PERIOD + 1.0
#: seconds after a failed check during which checkouts fail at once
SENTINEL_RETRY = 0.25

#: what a URL names: ``kind`` 'single', 'sentinel' or 'cluster';
#: ``addresses``, (host, port) pairs of the sentinels or Cluster nodes;
#: ``service`` and ``db`` (None: 0) of a Sentinel URL; the credentials of
#: the sentinel and cluster forms (None when absent)
Target = collections.namedtuple(
    'Target', 'kind addresses service db username password')


def redacted_url(url):
    """The URL without its password, fit for logs and error messages."""
    try:
        parts = urllib.parse.urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.replace(':' + parts.password + '@', ':***@')
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        # one urlsplit refuses (a stray bracket of an IPv6 host): all
        # that may hold a password goes
        scheme, sep, rest = url.partition('://')
        netloc, slash, path = rest.partition('/')
        userinfo, at, hosts = netloc.rpartition('@')
        return scheme + sep + '***@' + hosts + slash + path if at else url


def _address(text, default_port):
    """``(host, port)`` of ``host[:port]`` or ``[v6 host][:port]``."""
    if text.startswith('['):
        host, bracket, rest = text[1:].partition(']')
        if not bracket or (rest and not rest.startswith(':')):
            raise ValueError('%r: an IPv6 host goes in brackets' % text)
        port = rest[1:] if rest else None
    else:
        host, colon, port = text.partition(':')
        port = port if colon else None
    if not host:
        raise ValueError('%r: no host' % text)
    if port is None:
        return host, default_port
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError('%r: the port must be from 1 to 65535' % text)
    return host, int(port)


def parse_url(url):
    """The :class:`Target` of a URL of one of the forms of the module's
    docstring; ValueError saying what is wrong with any other.

    redis-py parses only the single-Redis forms (``redis.connection.
    parse_url``, which takes one host): the Sentinel and Cluster forms,
    several addresses each, are parsed here."""
    scheme, sep, rest = url.partition('://')
    if not sep:
        raise ValueError('no scheme')
    if scheme in SINGLE_SCHEMES:
        redis.connection.parse_url(url)
        return Target('single', (), None, None, None, None)
    if scheme not in (SENTINEL_SCHEME, CLUSTER_SCHEME):
        raise ValueError('scheme %r' % scheme)
    if '?' in rest or '#' in rest:
        raise ValueError('no query string or fragment is taken')
    netloc, _, path = rest.partition('/')
    userinfo, at, hosts = netloc.rpartition('@')
    username, _, password = userinfo.partition(':')
    if not hosts:
        raise ValueError('no host')
    sentinel = scheme == SENTINEL_SCHEME
    default_port = SENTINEL_PORT if sentinel else CLUSTER_PORT
    addresses = tuple(_address(item, default_port)
                      for item in hosts.split(','))
    service = db = None
    if sentinel:
        parts = path.split('/')
        service = urllib.parse.unquote(parts[0])
        if not service:
            raise ValueError('no service name after the sentinels')
        if len(parts) > 2 or (len(parts) == 2 and parts[1] and
                              not parts[1].isdigit()):
            raise ValueError('%r: the path is /SERVICE[/DB]' % path)
        if len(parts) == 2 and parts[1]:
            db = int(parts[1])
    elif path:
        raise ValueError('a Cluster has no databases (path %r)' % path)
    return Target('sentinel' if sentinel else 'cluster', addresses, service,
                  db, urllib.parse.unquote(username) or None,
                  urllib.parse.unquote(password) or None)


def _has_hash_tag(key):
    # Redis Cluster's rule: the first '{', then the first '}' after it,
    # with something in between
    start = key.find('{')
    return start > -1 and key.find('}', start + 1) > start + 1


def key_prefix(url, prefix):
    """The prefix of Mass's keys in the Redis of ``url``: ``prefix`` as it
    is, except on a Cluster, where its first part becomes a hash tag
    (``mass:`` -> ``{mass}:``, ``mass:cache:`` -> ``{mass}:cache:``;
    one already tagged stays as it is), so that every key of Mass is in
    one slot (the module's docstring says why)."""
    if parse_url(url).kind != 'cluster' or _has_hash_tag(prefix):
        return prefix
    head, sep, rest = prefix.partition(':')
    return '{%s}%s%s' % (head, sep, rest)


def _after_set_up(*checks):
    """A ``redis_connect_func`` that calls each ``check(connection)`` after
    redis-py's own set-up, which a ``redis_connect_func`` replaces."""
    def set_up(connection):
        connection.on_connect()
        for check in checks:
            check(connection)
    return set_up


def client_from_url(url, prefix, connected=None, logger=None, **options):
    """A redis-py client of the Redis ``url`` names; it connects only when
    it is first used.

    :param prefix: the caller's key prefix (:func:`key_prefix`): on a
        Cluster, the commands that name no key (SCRIPT LOAD, PING) go to
        the node holding its slot.
    :param connected: ``connected(connection)``, run on every new
        connection once it is set up, before it serves a command.
    :param logger: where a Sentinel master without ``min-replicas-to-write``
        is told (the module's docstring); this module's logging logger
        unless given.
    :param options: the client's options (socket timeouts, ``retry``,
        ``decode_responses``), the same on each engine; a Sentinel's
        sentinels are asked with the same timeouts and retries.
    """
    target = parse_url(url)
    if target.kind == 'cluster':
        if connected is not None:
            # RedisCluster runs redis-py's set-up before its
            # redis_connect_func
            options['redis_connect_func'] = connected
        return LazyRedisCluster(target, key_prefix(url, prefix), options)
    if target.kind == 'single':
        if connected is not None:
            options['redis_connect_func'] = _after_set_up(connected)
        return redis.Redis.from_url(url, **options)
    # before connected: Mass's own set-up is a write, which a master that
    # has min-replicas-to-write and no replica left refuses
    checks = [MinReplicasCheck(logger or logging.getLogger(__name__))]
    if connected is not None:
        checks.append(connected)
    options['redis_connect_func'] = _after_set_up(*checks)
    sentinel_options = {
        name: options[name] for name in (
            'socket_timeout', 'socket_connect_timeout', 'retry')
        if name in options}
    sentinels = MajoritySentinel(target.addresses,
                                 sentinel_kwargs=sentinel_options)
    if target.db is not None:
        options['db'] = target.db
    return sentinels.master_for(
        target.service, connection_pool_class=CheckedSentinelPool,
        username=target.username, password=target.password, **options)


def _where(client):
    kwargs = client.connection_pool.connection_kwargs
    return '%s:%s' % (kwargs.get('host'), kwargs.get('port'))


class MajoritySentinel(Sentinel):
    """redis-py's Sentinel, whose master is the one a majority of the
    configured sentinels name, each for ``hold`` seconds at least (the
    module's docstring says why)."""
    hold = SENTINEL_HOLD

    def named(self, state):
        """The address a sentinel's ``SENTINEL MASTER`` reply names as the
        master, or None when it names none that can be trusted yet."""
        flags = state.get('flags') or ''
        if not state.get('is_master') or state.get('is_sdown') or \
                state.get('is_odown') or 'failover_in_progress' in flags:
            return None
        # a sentinel reports the old master healthy until it switches,
        # then the promoted one with this age started again
        if state.get('role-reported') != 'master' or \
                state.get('role-reported-time', 0) < self.hold * 1000:
            return None
        return state['ip'], int(state['port'])

    def discover_master(self, service_name):
        """The ``(host, port)`` that more than half of the configured
        sentinels name as ``service_name``'s master; MasterNotFoundError
        (a ConnectionError) when no address has a majority."""
        needed = len(self.sentinels) // 2 + 1
        votes = collections.Counter()
        answers = []
        for asked, sentinel in enumerate(self.sentinels, 1):
            try:
                state = sentinel.sentinel_master(service_name)
            except redis.RedisError as err:
                answers.append('%s: %s' % (_where(sentinel), err))
            else:
                address = self.named(state)
                answers.append('%s: %s' % (_where(sentinel), '%s:%s' %
                                           address if address else 'none'))
                if address is not None:
                    votes[address] += 1
                    if votes[address] >= needed:
                        return address
            best = max(votes.values()) if votes else 0
            if best + len(self.sentinels) - asked < needed:
                break  # those left cannot make a majority
        raise MasterNotFoundError(
            'No master found for %r: %d of %d sentinels must name one '
            '(%s)' % (service_name, needed, len(self.sentinels),
                      '; '.join(answers)))


class CheckedSentinelPool(SentinelConnectionPool):
    """redis-py's pool of a Sentinel master, whose connections are handed
    out only while the sentinels were asked, within the check period, and
    named the master they reach (the module's docstring says why)."""
    period = SENTINEL_CHECK_PERIOD
    retry = SENTINEL_RETRY
    clock = staticmethod(time.monotonic)

    def reset(self):
        super(CheckedSentinelPool, self).reset()
        # also after a fork: a lock another process held stays held
        self._checking = threading.Lock()
        self.trusted_until = float('-inf')
        self._failed_until = float('-inf')
        self._failure = None

    def trust_window(self):
        """Seconds from the start of a check during which connections are
        handed out: a command handed out at its end is answered, or given
        up, by the end of the period."""
        timeout = self.connection_kwargs.get('socket_timeout')
        if timeout is None:
            return 0.0
        return max(0.0, self.period - timeout)

    def check(self):
        """Ask the sentinels for the master unless a check within the
        window found it (or one failed within ``retry`` seconds); raise
        MasterNotFoundError, with every connection closed, when they name
        none."""
        if self.clock() < self.trusted_until:
            return
        with self._checking:
            began = self.clock()
            if began < self.trusted_until:
                return  # another thread checked meanwhile
            if began < self._failed_until:
                raise MasterNotFoundError(self._failure)
            try:
                # a new address closes the idle connections (redis-py);
                # those in use are closed as they are released
                self.get_master_address()
            except redis.ConnectionError as err:
                self._failed_until = began + self.retry
                self._failure = str(err)
                self.disconnect(inuse_connections=True)
                raise
            self.trusted_until = began + self.trust_window()

    def get_connection(self, *args, **kwargs):
        self.check()
        connection = super(CheckedSentinelPool, self).get_connection(
            *args, **kwargs)
        if self.clock() < self.trusted_until:
            return connection
        # setting up a new connection outlasted the window
        try:
            self.check()
        except BaseException:
            self.release(connection)
            raise
        if not self.owns_connection(connection):
            self.release(connection)
            raise redis.ConnectionError(
                'the master of %r changed while connecting'
                % self.service_name)
        return connection


def _config_value(reply, name):
    """The value of ``name`` in a CONFIG GET reply (a flat list in RESP2, a
    map in RESP3; bytes unless decoded), or None."""
    if isinstance(reply, dict):
        items = list(reply.items())
    else:
        items = list(zip(reply[::2], reply[1::2]))
    for key, value in items:
        if isinstance(key, bytes):
            key = key.decode('utf-8', 'replace')
        if key == name:
            if isinstance(value, bytes):
                value = value.decode('utf-8', 'replace')
            return value
    return None


class MinReplicasCheck(object):
    """Run on every new connection to a Sentinel master: tell ``logger``,
    once per master, when the master takes writes without a replica
    (``min-replicas-to-write`` 0), or cannot say whether it does (CONFIG
    renamed or forbidden).  Never refuses the connection: the majority
    fence does not rest on it (the module's docstring)."""

    def __init__(self, logger):
        self.logger = logger
        self.told = set()

    def __call__(self, connection):
        where = '%s:%s' % (connection.host, connection.port)
        connection.send_command('CONFIG', 'GET', 'min-replicas-to-write')
        try:
            value = _config_value(connection.read_response(),
                                  'min-replicas-to-write')
        except redis.ResponseError as err:
            self.tell(where, 'its min-replicas-to-write cannot be read '
                      '(CONFIG GET: %s)' % err)
            return
        if value is None or not value.isdigit() or int(value) < 1:
            self.tell(where, 'it has min-replicas-to-write %s' % value)

    def tell(self, where, what):
        if where in self.told:
            return
        self.told.add(where)
        self.logger.warning(
            'mass redis: the Sentinel master %s may take writes cut off '
            'from its replicas: %s.  Set min-replicas-to-write 1 and a '
            'small min-replicas-max-lag on every node of the service '
            '(the sentinels\' majority still fences a split brain)',
            where, what)
