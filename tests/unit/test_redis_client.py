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
"""The Redis client of a redis_url (swift_mass.redis_client): what each URL
form parses to, the client each yields (constructed, never connected: no
Sentinel or Cluster runs in the unit tests), the Cluster's hash tag, a
Cluster that cannot be reached at start-up, and the fence of a Sentinel
split brain (fakeredis masters on TCP, small fakes for the sentinels)."""
import logging
import threading
import types

import fakeredis
import pytest
import redis
from fakeredis._commands import command
from fakeredis._socket import FakeSocket
from redis._parsers.helpers import parse_sentinel_state
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.exceptions import RedisClusterException
from redis.retry import Retry
from redis.sentinel import SentinelConnectionPool

from swift_mass.redis_cluster import LazyRedisCluster
from swift_mass.redis_client import Target, \
    client_from_url, key_prefix, parse_url
from tests.unit.helpers import REDIS_URL, Clock, Logger

SENTINEL_URL = 'redis+sentinel://127.0.0.1:26390,127.0.0.1:26391/mass'
# nobody listens on ports 1 and 2: connections are refused
DOWN_CLUSTER_URL = 'redis+cluster://127.0.0.1:1,127.0.0.1:2'
OPTIONS = dict(socket_timeout=0.05, socket_connect_timeout=0.05,
               retry=Retry(NoBackoff(), 0))


@pytest.mark.parametrize('url, target', [
    ('redis://127.0.0.1:6379/0', Target('single', (), None, None, None,
                                        None)),
    ('unix:///run/redis.sock?db=2', Target('single', (), None, None, None,
                                           None)),
    (SENTINEL_URL, Target('sentinel', (('127.0.0.1', 26390),
                                       ('127.0.0.1', 26391)),
                          'mass', None, None, None)),
    ('redis+sentinel://:s3cret@sentinel-a,[::1]:26391/mass/2',
     Target('sentinel', (('sentinel-a', 26379), ('::1', 26391)), 'mass', 2,
            None, 's3cret')),
    ('redis+sentinel://mass-user:p%40ss@h:26390/my%20service/',
     Target('sentinel', (('h', 26390),), 'my service', None, 'mass-user',
            'p@ss')),
    ('redis+cluster://10.0.0.1:7000,10.0.0.2', Target(
        'cluster', (('10.0.0.1', 7000), ('10.0.0.2', 6379)), None, None,
        None, None)),
    ('redis+cluster://:pw@[fd00::1]:7000/', Target(
        'cluster', (('fd00::1', 7000),), None, None, None, 'pw')),
])
def test_url_forms(url, target):
    assert parse_url(url) == target


@pytest.mark.parametrize('url, reason', [
    ('127.0.0.1:6379', 'no scheme'),
    ('http://127.0.0.1:6379/0', "scheme 'http'"),
    ('rediss+sentinel://h/mass', "scheme 'rediss+sentinel'"),
    ('redis://h:port/0', 'Port could not be cast'),
    ('redis+sentinel://127.0.0.1:26390', 'no service name'),
    ('redis+sentinel://127.0.0.1:26390/', 'no service name'),
    ('redis+sentinel://:pw@/mass', 'no host'),
    ('redis+sentinel://h1,,h2/mass', "'': no host"),
    ('redis+sentinel://h:port/mass', "'h:port': the port must be from 1"),
    ('redis+sentinel://h:0/mass', "'h:0': the port must be from 1"),
    ('redis+cluster://h:65536', "'h:65536': the port must be from 1"),
    ('redis+cluster://h:', "'h:': the port must be from 1"),
    ('redis+sentinel://h/mass/zero', 'the path is /SERVICE[/DB]'),
    ('redis+sentinel://h/mass/1/2', 'the path is /SERVICE[/DB]'),
    ('redis+cluster://h:7000/0', 'a Cluster has no databases'),
    ('redis+cluster://h:7000?ssl=true', 'no query string'),
    ('redis+cluster://[::1:7000', 'an IPv6 host goes in brackets'),
    ('redis+cluster://[::1]7000', 'an IPv6 host goes in brackets'),
])
def test_malformed_urls_say_what_is_wrong(url, reason):
    with pytest.raises(ValueError) as err:
        parse_url(url)
    assert reason in str(err.value)


@pytest.mark.parametrize('prefix, tagged', [
    ('mass:', '{mass}:'),
    ('mass:cache:', '{mass}:cache:'),
    ('{mass}:cache:', '{mass}:cache:'),
    ('t:abc:', '{t}:abc:'),
])
def test_only_a_cluster_tags_the_prefix(prefix, tagged):
    assert key_prefix(REDIS_URL, prefix) == prefix
    assert key_prefix(SENTINEL_URL, prefix) == prefix
    assert key_prefix(DOWN_CLUSTER_URL, prefix) == tagged
    # every key under it is in one slot
    assert key_slot((tagged + 'g:0123').encode()) == key_slot(
        tagged.encode())


def test_one_redis_is_redis_py_from_url():
    client = client_from_url('redis://10.0.0.1:6380/3?client_name=mass',
                             'mass:', decode_responses=True, **OPTIONS)
    assert type(client) is redis.Redis
    kwargs = client.connection_pool.connection_kwargs
    assert (kwargs['host'], kwargs['port'], kwargs['db']) == \
        ('10.0.0.1', 6380, 3)
    assert kwargs['client_name'] == 'mass'
    assert kwargs['socket_timeout'] == kwargs['socket_connect_timeout'] \
        == 0.05
    assert kwargs['decode_responses'] is True
    assert kwargs['retry'].get_retries() == 0
    assert 'redis_connect_func' not in kwargs


def test_connected_runs_once_the_connection_is_set_up(redis_db15):
    """redis-py's own set-up (here the SELECT of db 15) comes first."""
    redis_db15.set('marker', 'db 15')
    seen = []

    def connected(connection):
        connection.send_command('GET', 'marker')
        seen.append(connection.read_response())
    client = client_from_url(REDIS_URL, 'mass:', connected=connected)
    assert client.ping()
    assert seen == [b'db 15']
    assert client.get('marker') == b'db 15'


def test_a_sentinel_url_is_the_services_master():
    def connected(connection):
        pass
    client = client_from_url(
        'redis+sentinel://user:s3cret@127.0.0.1:26390,[::1]:26391/mass/2',
        'mass:', connected=connected, decode_responses=True, **OPTIONS)
    assert type(client) is redis.Redis
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert (pool.service_name, pool.is_master) == ('mass', True)
    kwargs = pool.connection_kwargs
    assert (kwargs['db'], kwargs['username'], kwargs['password']) == \
        (2, 'user', 's3cret')
    assert kwargs['socket_timeout'] == kwargs['socket_connect_timeout'] \
        == 0.05
    assert kwargs['decode_responses'] is True
    assert kwargs['retry'].get_retries() == 0
    # wrapped: a redis_connect_func replaces redis-py's set-up
    assert kwargs['redis_connect_func'] not in (None, connected)
    sentinels = [s.connection_pool.connection_kwargs
                 for s in pool.sentinel_manager.sentinels]
    assert [(s['host'], s['port']) for s in sentinels] == \
        [('127.0.0.1', 26390), ('::1', 26391)]
    for sentinel in sentinels:
        # as quick to give up as the master; asked without credentials
        assert sentinel['socket_timeout'] == \
            sentinel['socket_connect_timeout'] == 0.05
        assert sentinel['retry'].get_retries() == 0
        assert sentinel.get('password') is None
        assert sentinel.get('db', 0) == 0


def test_unreachable_sentinels_are_a_connection_error():
    client = client_from_url('redis+sentinel://127.0.0.1:1,127.0.0.1:2/mass',
                             'mass:', **OPTIONS)
    with pytest.raises(redis.ConnectionError) as err:
        client.get('k')
    assert "No master found for 'mass'" in str(err.value)


def test_a_cluster_url_is_a_cluster_built_on_first_use():
    def connected(connection):
        pass
    client = client_from_url('redis+cluster://u:pw@127.0.0.1:1,[::1]:2',
                             'mass:', connected=connected, **OPTIONS)
    assert isinstance(client, LazyRedisCluster)
    assert client._cluster is None
    assert client.addresses == (('127.0.0.1', 1), ('::1', 2))
    # RedisCluster runs redis-py's set-up before its redis_connect_func
    assert client.options['redis_connect_func'] is connected
    assert (client.options['username'], client.options['password']) == \
        ('u', 'pw')
    assert client.options['retry'].get_retries() == 0
    assert client.options['socket_timeout'] == 0.05
    assert client.home_slot == key_slot(b'{mass}')
    script = client.register_script('return 1')
    assert script.sha == 'e0e1f9fabfc9d4800c877a703b823ac0578ff8db'
    assert client._cluster is None


def test_an_unreachable_cluster_raises_at_each_command_not_before():
    client = client_from_url(DOWN_CLUSTER_URL, 'mass:', **OPTIONS)
    script = client.register_script('return 1')
    for call in (lambda: client.get('{mass}:k'), lambda: script(keys=['k']),
                 client.ping, lambda: client.pipeline()):
        with pytest.raises(RedisClusterException) as err:
            call()
        assert 'Redis Cluster cannot be connected' in str(err.value)
        assert client._cluster is None  # tried again at the next one
    client.close()


# -- a Sentinel split brain ---------------------------------------------

@command(name='CONFIG GET', fixed=(bytes,))
def config_get(socket, name):
    """fakeredis has no CONFIG GET; Mass reads min-replicas-to-write with
    it on a Sentinel master (a setting never made reads as Redis's default,
    0).  Kept for the session, as conftest.py's INFO is."""
    return [name, socket._server.config.get(name.lower(), b'0')]


FakeSocket.config_get = config_get

SENTINELS_URL = 'redis+sentinel://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3/mass'


@pytest.fixture
def masters():
    """``start(name, **config)``: a fakeredis server on a TCP port of its
    own, whose key ``where`` holds ``name``; its (host, port)."""
    servers = []

    def start(name, **config):
        server = fakeredis.TcpFakeServer(('127.0.0.1', 0))
        threading.Thread(target=server.serve_forever, args=(0.05,),
                         daemon=True).start()
        servers.append(server)
        for key, value in config.items():
            server.fake_server.config[key.replace('_', '-').encode()] = \
                value.encode()
        address = server.server_address[:2]
        direct = redis.Redis(*address)
        direct.set('where', name)
        direct.close()
        return address
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


class FakeSentinel(object):
    """A sentinel's answer about the service 'mass': the master it names,
    for how long (seconds) and with which flags, or no answer at all."""

    def __init__(self, port):
        self.connection_pool = types.SimpleNamespace(
            connection_kwargs={'host': '127.0.0.1', 'port': port})
        self.answer = None
        self.asked = 0

    def names(self, address, age=60.0, flags='master'):
        self.answer = (address, age, flags)

    def sentinel_master(self, service):
        self.asked += 1
        if self.answer is None:
            raise redis.ConnectionError('Connection refused')
        (host, port), age, flags = self.answer
        # parsed as redis-py parses a real SENTINEL MASTER reply
        return parse_sentinel_state(map(str, [
            'name', service, 'ip', host, 'port', port, 'flags', flags,
            'num-other-sentinels', 2, 'role-reported', 'master',
            'role-reported-time', int(age * 1000)]))

    def sentinel_masters(self):
        # what redis-py's own discover_master asks
        return {'mass': self.sentinel_master('mass')}


@pytest.fixture
def sentinel_client():
    """A client of SENTINELS_URL whose three sentinels are FakeSentinels
    and whose pool runs on a Clock: (client, pool, sentinels, clock)."""
    clients = []

    def make(**kwargs):
        client = client_from_url(SENTINELS_URL, 'mass:', **dict(
            OPTIONS, **kwargs))
        pool = client.connection_pool
        sentinels = [FakeSentinel(port) for port in (1, 2, 3)]
        pool.sentinel_manager.sentinels = list(sentinels)
        clock = Clock(1000.0)
        pool.clock = clock
        clients.append(client)
        return client, pool, sentinels, clock
    yield make
    for client in clients:
        client.close()


def all_name(sentinels, *args, **kwargs):
    for sentinel in sentinels:
        sentinel.names(*args, **kwargs)


def test_a_pooled_connection_is_left_within_a_period_of_a_failover(
        masters, sentinel_client):
    """The sentinels promote another master while the old one still
    answers the pool's connection: within a check period (less the socket
    timeout, 0.05 s) the pool stops using it."""
    old, new = masters('old'), masters('new')
    client, pool, sentinels, clock = sentinel_client()
    all_name(sentinels, old)
    assert client.get('where') == b'old'
    all_name(sentinels, new)
    clock.now += 0.9
    # the sentinels are asked once per period, not at each command
    assert client.get('where') == b'old'
    clock.now += 0.1
    assert client.get('where') == b'new'
    assert {(c.host, c.port) for c in pool._available_connections
            if c._sock is not None} == {new}


# (what each of the three sentinels says: a master, its age in seconds,
# its flags; None: no answer), after each named 'old' for a minute
@pytest.mark.parametrize('answers', [
    [('old', 60, 'master'), ('new', 60, 'master'), None],
    [None, None, ('old', 60, 'master')],
    # the old master seen down, or being failed over: not named
    [('old', 60, 's_down,master')] * 2 + [('old', 60, 'master')],
    [('old', 60, 's_down,o_down,master,failover_in_progress'),
     ('old', 60, 's_down,master,disconnected'), ('old', 60, 'master')],
    # promoted 1.5 s ago: some client may still trust the old one
    [('new', 1.5, 'master')] * 3,
], ids=['split', 'one-answers', 'sdown', 'failover', 'promoted-just-now'])
def test_without_a_majority_naming_the_master_nothing_is_trusted(
        masters, sentinel_client, answers):
    """Fewer than two of three sentinels naming one healthy master, for
    long enough, is no master: the pool's connections are closed and its
    commands fail, as when Redis is down, so callers validate hits against
    the object servers meanwhile."""
    addresses = {'old': masters('old'), 'new': masters('new')}
    client, pool, sentinels, clock = sentinel_client()
    all_name(sentinels, addresses['old'])
    assert client.get('where') == b'old'
    for sentinel, answer in zip(sentinels, answers):
        sentinel.answer = None
        if answer is not None:
            name, age, flags = answer
            sentinel.names(addresses[name], age, flags)
    clock.now += 1.0
    with pytest.raises(redis.ConnectionError) as err:
        client.get('where')
    assert "No master found for 'mass'" in str(err.value)
    # no connection of the pool is kept
    assert [c for c in pool._available_connections
            if c._sock is not None] == []
    assert not pool._in_use_connections
    # right after a failed check, commands fail without asking again
    asked = sum(s.asked for s in sentinels)
    clock.now += 0.2
    with pytest.raises(redis.ConnectionError):
        client.get('where')
    assert sum(s.asked for s in sentinels) == asked
    # a majority that names a master long enough is trusted again
    all_name(sentinels, addresses['new'], age=2.5)
    clock.now += 0.05
    assert client.get('where') == b'new'


def test_a_promoted_master_is_used_once_a_majority_named_it_long_enough(
        masters, sentinel_client):
    """Until every sentinel of a majority has named it for SENTINEL_HOLD
    (2 s), a client of the old master may still be within its check
    period."""
    new = masters('new')
    client, pool, sentinels, clock = sentinel_client()
    all_name(sentinels, new, age=1.9)
    with pytest.raises(redis.ConnectionError):
        client.get('where')
    # two of three suffice, the third may lag
    sentinels[0].names(new, age=1.9)
    sentinels[1].names(new, age=2.0)
    sentinels[2].names(new, age=2.1)
    clock.now += 0.25
    assert client.get('where') == b'new'


def test_a_connection_whose_set_up_outlasted_the_check_is_checked_again(
        masters, sentinel_client):
    """The sentinels were asked before a new connection was set up; were
    it handed out after the period, its first command could reach a master
    they named no longer."""
    old, new = masters('old'), masters('new')

    def slow_set_up(connection):
        clock.now += 1.0
        all_name(sentinels, new)
    client, pool, sentinels, clock = sentinel_client(connected=slow_set_up)
    all_name(sentinels, old)
    with pytest.raises(redis.ConnectionError) as err:
        client.get('where')
    assert "the master of 'mass' changed while connecting" in str(err.value)
    assert client.get('where') == b'new'


@pytest.mark.parametrize('setting, told', [
    ('1', None),
    ('0', 'it has min-replicas-to-write 0'),
])
def test_a_master_that_writes_without_replicas_is_told_once(
        masters, sentinel_client, caplog, setting, told):
    address = masters('master', min_replicas_to_write=setting)
    client, pool, sentinels, clock = sentinel_client()
    all_name(sentinels, address)
    caplog.set_level(logging.WARNING, logger='swift_mass.redis_client')
    for _ in range(2):
        # each new connection checks; the master still serves
        assert client.get('where') == b'master'
        pool.disconnect()
    warnings = [r.getMessage() for r in caplog.records
                if r.name == 'swift_mass.redis_client']
    if told is None:
        assert warnings == []
    else:
        assert len(warnings) == 1, warnings
        assert 'the Sentinel master %s:%s may take writes cut off from its ' \
            'replicas: %s' % (address + (told,)) in warnings[0]


def test_the_min_replicas_warning_goes_to_the_callers_logger(
        masters, sentinel_client):
    address = masters('master')
    logger = Logger()
    client, pool, sentinels, clock = sentinel_client(logger=logger)
    all_name(sentinels, address)
    assert client.get('where') == b'master'
    assert [level for level, line in logger.lines] == ['warning']


class ConfigRefused(object):
    """A new connection to a master that refuses CONFIG GET (fakeredis's
    TCP server closes a connection after an error reply, Redis does
    not)."""
    host, port = '10.0.0.1', 6390

    def __init__(self, error):
        self.error = error

    def send_command(self, *args):
        self.sent = args

    def read_response(self):
        raise self.error


@pytest.mark.parametrize('error, shown', [
    (redis.exceptions.NoPermissionError(
        "User mass has no permissions to run the 'config|get' command"),
     "CONFIG GET: User mass has no permissions"),
    (redis.ResponseError("unknown command 'CONFIG', with args beginning "
                         "with: 'GET'"),
     "CONFIG GET: unknown command 'CONFIG'"),
], ids=['acl', 'renamed'])
def test_a_master_whose_config_cannot_be_read_is_used_and_told_once(
        error, shown):
    from swift_mass.redis_client import MinReplicasCheck
    logger = Logger()
    check = MinReplicasCheck(logger)
    for _ in range(2):
        connection = ConfigRefused(error)
        check(connection)  # no exception: the connection is used
        assert connection.sent == ('CONFIG', 'GET', 'min-replicas-to-write')
    assert len(logger.lines) == 1
    level, line = logger.lines[0]
    assert level == 'warning'
    assert 'the Sentinel master 10.0.0.1:6390 may take writes cut off from ' \
        'its replicas: its min-replicas-to-write cannot be read (%s' % shown \
        in line
