"""The Redis client of a redis_url (swift_mass.redis_client): what each URL
form parses to, the client each yields (constructed, never connected: no
Sentinel or Cluster runs in the unit tests), the Cluster's hash tag, and a
Cluster that cannot be reached at start-up."""
import pytest
import redis
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.exceptions import RedisClusterException
from redis.retry import Retry
from redis.sentinel import SentinelConnectionPool

from swift_mass.redis_client import LazyRedisCluster, Target, \
    client_from_url, key_prefix, parse_url
from tests.unit.helpers import REDIS_URL

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
