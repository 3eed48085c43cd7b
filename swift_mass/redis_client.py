"""Redis clients for a ``redis_url``: one Redis, the master of a Redis
Sentinel service, or a Redis Cluster, each through redis-py's own class.

The URL forms (``redis_url`` of ``[filter:mass]`` and of
``[filter:mass_queue]``):

* ``redis://[[user]:password@]host[:port][/db]``, ``rediss://...`` (TLS)
  and ``unix://[[user]:password@]/path/to.sock[?db=N]``: one Redis, as
  ``redis.Redis.from_url`` takes them (its query options included);
* ``redis+sentinel://[[user]:password@]ADDRESSES/service[/db]``: the
  master that the sentinels at ADDRESSES (port 26379 unless given) name
  for ``service``, through ``Sentinel.master_for``: every new connection
  asks a sentinel for the master first, so after a failover the next
  connection reaches the promoted one.  The credentials and the database
  are the master's; the sentinels are asked without any;
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
defence, :meth:`swift_mass.generations.Generations._connected`) runs on
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
"""
import collections
import urllib.parse

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.commands.core import Script
from redis.crc import key_slot
from redis.event import AfterSlotsCacheRefreshEvent, EventDispatcher, \
    EventListenerInterface
from redis.exceptions import SlotNotCoveredError
from redis.sentinel import Sentinel

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

#: what a URL names: ``kind`` 'single', 'sentinel' or 'cluster';
#: ``addresses``, (host, port) pairs of the sentinels or Cluster nodes;
#: ``service`` and ``db`` (None: 0) of a Sentinel URL; the credentials of
#: the sentinel and cluster forms (None when absent)
Target = collections.namedtuple(
    'Target', 'kind addresses service db username password')


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


def _after_set_up(connected):
    """A ``redis_connect_func`` that calls ``connected(connection)`` after
    redis-py's own set-up, which a ``redis_connect_func`` replaces."""
    def set_up(connection):
        connection.on_connect()
        connected(connection)
    return set_up


def client_from_url(url, prefix, connected=None, **options):
    """A redis-py client of the Redis ``url`` names; it connects only when
    it is first used.

    :param prefix: the caller's key prefix (:func:`key_prefix`): on a
        Cluster, the commands that name no key (SCRIPT LOAD, PING) go to
        the node holding its slot.
    :param connected: ``connected(connection)``, run on every new
        connection once it is set up, before it serves a command.
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
    if connected is not None:
        options['redis_connect_func'] = _after_set_up(connected)
    if target.kind == 'single':
        return redis.Redis.from_url(url, **options)
    sentinel_options = {
        name: options[name] for name in (
            'socket_timeout', 'socket_connect_timeout', 'retry')
        if name in options}
    sentinels = Sentinel(target.addresses, sentinel_kwargs=sentinel_options)
    if target.db is not None:
        options['db'] = target.db
    return sentinels.master_for(target.service, username=target.username,
                                password=target.password, **options)


class LazyRedisCluster(object):
    """A ``RedisCluster`` built at its first command (the module's
    docstring says why), whose commands that name no key go to the node
    holding the slot of ``home_key``; any other attribute is the
    cluster's.

    :param target: a Cluster URL's :class:`Target`.
    :param home_key: a key (or prefix) in the slot of the caller's keys.
    :param options: RedisCluster's keyword arguments.
    """
    _cluster = None

    def __init__(self, target, home_key, options):
        self.addresses = target.addresses
        self.options = dict(options, username=target.username,
                            password=target.password)
        self.home_key = home_key
        # Script objects encode their text with it; the cluster's is the
        # same, and this one needs no cluster built
        self.encoder = redis.connection.Encoder(
            options.get('encoding', 'utf-8'),
            options.get('encoding_errors', 'strict'),
            options.get('decode_responses', False))
        self.home_slot = key_slot(self.encoder.encode(home_key))
        #: the node the slot map named for the home slot, last time
        self.home_node_name = None

    @property
    def cluster(self):
        """The RedisCluster, built now if it is not yet."""
        if self._cluster is None:
            dispatcher = EventDispatcher()
            dispatcher.register_listeners({
                AfterSlotsCacheRefreshEvent: [_HomeNodeWatch(self)]})
            cluster = RedisCluster(
                startup_nodes=[ClusterNode(host, port)
                               for host, port in self.addresses],
                event_dispatcher=dispatcher, **self.options)
            self.home_node_name = cluster.get_node_from_key(
                self.home_key).name
            self._cluster = cluster
        return self._cluster

    def __getattr__(self, name):
        return getattr(self.cluster, name)

    def get_encoder(self):
        return self.encoder

    def register_script(self, script):
        # bound to this object, so a script's first call builds the
        # cluster, and its SCRIPT LOAD goes to the home node
        return Script(self, script)

    def home_node(self):
        """The ClusterNode the slot map names for the home slot."""
        return self.cluster.get_node_from_key(self.home_key)

    def script_load(self, script):
        # RedisCluster loads a script on every master, where the caller's
        # keys are on one: another master down must not fail the caller
        return self.cluster.execute_command('SCRIPT LOAD', script,
                                            target_nodes=self.home_node())

    def ping(self):
        # the caller's Redis is the home node (RedisCluster pings a node
        # of its choosing)
        return self.cluster.ping(target_nodes=self.home_node())

    def close(self):
        if self._cluster is not None:
            self._cluster.close()

    def home_node_changed(self):
        """The slot map was refreshed: if it names another node for the
        home slot, close the connections to that node (those in use once
        released), so that every command there goes over a connection set
        up (``connected``) while the node held the slot."""
        cluster = self._cluster
        if cluster is None:
            return  # the first map, as the cluster is built
        try:
            node = cluster.nodes_manager.get_node_from_slot(self.home_slot)
        except SlotNotCoveredError:
            return  # no node to use yet; the map that names one will
        if node.name == self.home_node_name:
            return
        self.home_node_name = node.name
        if node.redis_connection is not None:
            pool = node.redis_connection.connection_pool
            pool.update_active_connections_for_reconnect()
            pool.disconnect_free_connections()


class _HomeNodeWatch(EventListenerInterface):
    """Tells a LazyRedisCluster each time its cluster's slot map was
    refreshed."""

    def __init__(self, client):
        self.client = client

    def listen(self, event):
        self.client.home_node_changed()
