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
import os
import re

import pytest
from swift.common.storage_policy import StoragePolicy, \
    StoragePolicyCollection

from swift_mass import conf
from swift_mass.conf import GROUP_COMMIT_DEFAULTS, ConfigError, \
    GroupCommitConf, QueueConf, bool_option, \
    choice_option, float_option, int_option
from swift_mass.proxy.conf import MassConf


def test_int_option():
    assert int_option({}, 's', 'n', 5, 0, 9) == 5
    assert int_option({'n': ' 7 '}, 's', 'n', 5, 0, 9) == 7
    for bad in ('x', '10', '-1', '1.5'):
        with pytest.raises(ConfigError) as err:
            int_option({'n': bad}, 's', 'n', 5, 0, 9)
        assert str(err.value) == "[s] n = %r is not valid; allowed: an " \
            "integer from 0 to 9" % bad
    with pytest.raises(ConfigError) as err:
        int_option({'n': '0'}, 's', 'n', 5, 1)
    assert 'an integer >= 1' in str(err.value)


def test_float_option():
    assert float_option({'f': '0.25'}, 's', 'f', 0.5, 0.0, 1.0) == 0.25
    for bad in ('x', '1.5', '-0.1', 'nan'):
        with pytest.raises(ConfigError) as err:
            float_option({'f': bad}, 's', 'f', 0.5, 0.0, 1.0)
        assert 'allowed: a number from 0 to 1' in str(err.value)


def test_bool_option():
    assert bool_option({}, 's', 'b', True) is True
    assert bool_option({'b': 'No'}, 's', 'b', True) is False
    assert bool_option({'b': 'on'}, 's', 'b', False) is True
    with pytest.raises(ConfigError) as err:
        bool_option({'b': 'ture'}, 's', 'b', False)
    assert "[s] b = 'ture' is not valid; allowed: one of true" in \
        str(err.value)


def test_choice_option():
    assert choice_option({'m': ' Cache '}, 's', 'm', 'none',
                         ('cache', 'none')) == 'cache'
    with pytest.raises(ConfigError) as err:
        choice_option({'m': 'fast'}, 's', 'm', 'none', ('cache', 'none'))
    assert str(err.value) == \
        "[s] m = 'fast' is not valid; allowed: one of cache, none"


# --- MassConf: every option of [filter:mass] --------------------------------

@pytest.fixture
def policies(monkeypatch):
    monkeypatch.setattr(conf, 'POLICIES', StoragePolicyCollection([
        StoragePolicy(0, 'standard', is_default=True),
        StoragePolicy(1, 'fast'), StoragePolicy(2, 'old',
                                                is_deprecated=True)]))


# (option, a bad value): one row per option MassConf reads
BAD = [
    ('default_priority', '10'), ('background_priority', '-1'),
    ('control_loop', 'sure'), ('tenant_metrics', '-1'),
    ('interval', '0'), ('bucket_seconds', '0'), ('window_seconds', '5'),
    ('read_share', '1.5'), ('write_share', '-0.1'), ('min_requests', '0'),
    ('hysteresis', '0.6'), ('read_substore', 'gold'),
    ('write_substore', 'old'), ('mixed_substore', 'gold'),
    ('read_method', 'fast'), ('write_method', 'queue'),
    ('mixed_method', 'x'), ('substore_routing', 'fastest'),
    ('validation_margin', '-1'),
    ('validation_warmup_seconds', '59'),
    ('validation_window_seconds', '9'),
    ('holdoff_seconds', '-1'), ('urgent_recheck_seconds', '3601'),
    ('migrate_retry_after', '0'), ('store', 'mongodb'),
    ('auto_migrate', 'ture'), ('auto_migrate_after', '59'),
    ('auto_migrate_interval', '0.5'), ('auto_migrate_classes', 'reads'),
    ('auto_migrate_max_objects', '0'), ('auto_migrate_settle', '-1'),
    ('auto_migrate_concurrency', '0'),
    ('redis_url', 'http://127.0.0.1:6379/0'), ('redis_timeout_ms', 'fast'),
    ('store_retry_after', '1.5'), ('cache_backend', 'disk'),
    ('cache_max_object_size', '0'), ('cache_budget_bytes', '-1'),
    ('cache_local_budget_bytes', '-1'),
    ('cache_ttl', '0'), ('cache_generation_ttl', '299'),
    ('cache_ttl_only', 'sometimes'), ('cache_redis_timeout_ms', '0'),
    ('merge_wait_seconds', '301'),
    ('cache_memcache_servers', '127.0.0.1'),
    ('cache_memcache_servers', '127.0.0.1:11211,:11212'),
    ('cache_memcache_servers', 'host:99999'),
    ('mode', 'watch'), ('opt_out_accounts', '/v1/AUTH_a'),
]


@pytest.mark.parametrize('option, value', BAD)
def test_every_bad_option_names_itself(policies, option, value):
    with pytest.raises(ConfigError) as err:
        MassConf({option: value})
    assert str(err.value).startswith(
        "[filter:mass] %s = %r is not valid; allowed: " % (option, value))


def sample_options(name, section, end=None):
    """``{option: value}`` the sample ``etc/<name>`` shows in ``section``
    (up to the text ``end``), Swift's own logging and statsd options and
    memcache_servers aside; a value followed by its choices
    ("measured   (measured | configured)") is the value alone."""
    sample = os.path.join(os.path.dirname(__file__), '..', '..', 'etc',
                          name)
    with open(sample) as f:
        text = f.read().split('[%s]' % section)[1]
    if end:
        text = text.split(end)[0]
    return {option: re.split(r'\s{2,}', value.strip())[0]
            for option, value in re.findall(r'^# ([a-z_]+) =[ ]?(.*)$',
                                            text, re.M)
            if not option.startswith(('log_', 'statsd_')) and
            option != 'memcache_servers'}


def proxy_sample_options():
    # up to the per-substore tuning, which is Swift's
    return sample_options('proxy-server.conf-sample', 'filter:mass',
                          'per-substore proxy tuning')


def test_every_option_of_the_sample_is_checked():
    assert set(proxy_sample_options()) == {option for option, _ in BAD}


@pytest.mark.parametrize('options, named', [
    ({'window_seconds': '10', 'bucket_seconds': '6'},
     "[filter:mass] window_seconds = 10 is not valid; allowed: at least "
     "twice bucket_seconds (6)"),
    ({'cache_local_budget_bytes': '10', 'cache_max_object_size': '20'},
     "[filter:mass] cache_local_budget_bytes = 10 is not valid; allowed: 0 "
     "(no worker cache) or at least cache_max_object_size (20)"),
    ({'cache_budget_bytes': '10', 'cache_max_object_size': '20'},
     "[filter:mass] cache_budget_bytes = 10 is not valid; allowed: at "
     "least cache_max_object_size (20)"),
    ({'cache_ttl': '600', 'cache_generation_ttl': '60'},
     "[filter:mass] cache_generation_ttl = '60' is not valid; allowed: an "
     "integer >= 600"),
    ({'read_share': '0.5', 'write_share': '0.6'},
     "[filter:mass] read_share, write_share, hysteresis: write_share must "
     "be below read_share"),
    # a warm-up shorter than a window would judge the method's cold start
    ({'window_seconds': '120', 'validation_warmup_seconds': '60'},
     "[filter:mass] validation_warmup_seconds = '60' is not valid; "
     "allowed: an integer >= window_seconds (120)"),
    ({'validation_warmup_seconds': 'soon'},
     "[filter:mass] validation_warmup_seconds = 'soon' is not valid; "
     "allowed: an integer >= window_seconds (60)"),
    ({'validation_window_seconds': '1.5'},
     "[filter:mass] validation_window_seconds = '1.5' is not valid; "
     "allowed: an integer >= 10"),
    ({'validation_margin': '15%'},
     "[filter:mass] validation_margin = '15%' is not valid; allowed: a "
     "number from 0 to 10"),
])
def test_options_checked_against_each_other(options, named):
    with pytest.raises(ConfigError) as err:
        MassConf(options)
    assert str(err.value).startswith(named)


def test_merge_wait_below_its_minimum_names_itself():
    with pytest.raises(ConfigError) as err:
        MassConf({'merge_wait_seconds': '-1'})
    assert str(err.value).startswith(
        "[filter:mass] merge_wait_seconds = '-1' is not valid; allowed: a "
        "number from 0 to 300")


def test_defaults():
    mass = MassConf()
    assert (mass.default_priority, mass.background_priority,
            mass.control_loop, mass.interval, mass.bucket_seconds) == \
        (5, 1, True, 5.0, 5)
    assert (mass.urgent_recheck_seconds, mass.migrate_retry_after) == \
        (30.0, 60)
    assert mass.control.window == 60
    assert mass.control.methods == {'read': 'cache', 'write': 'batch',
                                    'mixed': 'none'}
    # validation: a 15 % margin, above the noise; a warm-up of one window
    # (window_seconds) after the decision reached every worker (interval);
    # verdicts over at least 60 s
    assert (mass.control.margin, mass.control.warmup,
            mass.control.validation_window, mass.control.holdoff,
            mass.control.interval) == (0.15, 60, 60, 600, 5.0)
    assert vars(mass.store) == {
        'kind': 'redis', 'redis_url': 'redis://127.0.0.1:6379/0',
        'redis_timeout_ms': 500, 'retry_after': 30, 'redis_prefix': 'mass:'}
    assert vars(mass.cache) == {
        'backend': 'redis', 'memcache_servers': [],
        'max_object_size': 1048576, 'budget': 67108864,
        'local_budget': 33554432, 'ttl': 300, 'generation_ttl': 86400,
        'ttl_only': False, 'redis_timeout': 0.25}
    assert mass.merge.wait_seconds == 10.0


def test_options_are_read(policies):
    mass = MassConf({
        'default_priority': '8', 'control_loop': 'off', 'interval': '2.5',
        'bucket_seconds': '10', 'window_seconds': '30',
        'read_substore': 'fast', 'write_method': 'none',
        'urgent_recheck_seconds': '0', 'migrate_retry_after': '7',
        'store': ' Local ', 'redis_url': 'unix:///run/redis.sock?db=2',
        'redis_timeout_ms': '200', 'store_retry_after': '5',
        'cache_backend': 'memcache', 'cache_ttl_only': 'yes',
        'cache_redis_timeout_ms': '150', 'merge_wait_seconds': '0.5',
        'cache_memcache_servers': '10.0.0.1:11211, [::1]:11212'})
    assert (mass.default_priority, mass.control_loop, mass.interval,
            mass.bucket_seconds, mass.control.window) == \
        (8, False, 2.5, 10, 30)
    assert mass.control.substores['read'] == 'fast'
    assert mass.control.methods['write'] == 'none'
    assert (mass.urgent_recheck_seconds, mass.migrate_retry_after) == \
        (0.0, 7)
    assert vars(mass.store) == {
        'kind': 'local', 'redis_url': 'unix:///run/redis.sock?db=2',
        'redis_timeout_ms': 200, 'retry_after': 5, 'redis_prefix': 'mass:'}
    assert (mass.cache.backend, mass.cache.ttl_only,
            mass.cache.redis_timeout) == ('memcache', True, 0.15)
    assert mass.cache.memcache_servers == ['10.0.0.1:11211', '[::1]:11212']
    assert mass.merge.wait_seconds == 0.5


def test_validation_options_are_read():
    mass = MassConf({'interval': '2', 'window_seconds': '20',
                     'validation_margin': '0.3',
                     'validation_warmup_seconds': '45',
                     'validation_window_seconds': '120',
                     'holdoff_seconds': '0'})
    assert (mass.control.margin, mass.control.warmup,
            mass.control.validation_window, mass.control.holdoff,
            mass.control.interval) == (0.3, 45, 120, 0, 2.0)
    # the warm-up follows window_seconds unless set
    assert MassConf({'window_seconds': '90'}).control.warmup == 90


REDIS_URL_FORMS = (
    'a redis://, rediss://, unix://, '
    'redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB] or '
    'redis+cluster://HOST[:PORT][,HOST[:PORT]...] URL')


@pytest.mark.parametrize('url, reason', [
    ('127.0.0.1:6379', 'no scheme'),
    ('redis://127.0.0.1:port/0', 'Port could not be cast to integer'),
    ('redis://127.0.0.1:99999/0', 'Port out of range'),
    ('redis://h/0?socket_timeout=soon', "Invalid value for 'socket_timeout'"),
    ('redis+sentinel://10.0.0.1:26379,10.0.0.2:26379',
     'no service name after the sentinels'),
    ('redis+sentinel:///mass', 'no host'),
    ('redis+sentinel://10.0.0.1:sentinel/mass',
     "'10.0.0.1:sentinel': the port must be from 1 to 65535"),
    ('redis+sentinel://10.0.0.1/mass/first',
     "'mass/first': the path is /SERVICE[/DB]"),
    ('redis+cluster://', 'no host'),
    ('redis+cluster://10.0.0.1:7000,:7001', "':7001': no host"),
    ('redis+cluster://10.0.0.1:70000',
     "'10.0.0.1:70000': the port must be from 1 to 65535"),
    ('redis+cluster://10.0.0.1:7000/1', "a Cluster has no databases"),
])
@pytest.mark.parametrize('parse, section', [
    (MassConf, 'filter:mass'), (QueueConf, 'filter:mass_queue')])
def test_bad_redis_urls(url, reason, parse, section):
    with pytest.raises(ConfigError) as err:
        parse({'redis_url': url})
    assert str(err.value).startswith(
        '[%s] redis_url = %r is not valid; allowed: %s (' % (
            section, url, REDIS_URL_FORMS))
    assert reason in str(err.value)


@pytest.mark.parametrize('url', [
    'redis://:s3cret@h:port/0',
    'redis+sentinel://mass:s3cret@10.0.0.1:26379',
    'redis+cluster://:s3cret@[fd00::1:7000',
])
def test_a_bad_redis_url_is_reported_without_its_password(url):
    with pytest.raises(ConfigError) as err:
        MassConf({'redis_url': url})
    assert 'redis_url' in str(err.value)
    assert 's3cret' not in str(err.value)
    assert '***@' in str(err.value)


@pytest.mark.parametrize('url', [
    'redis+sentinel://10.0.0.1:26379,10.0.0.2:26379,[fd00::3]/mass',
    'redis+sentinel://:s3cret@sentinel.example/mass/2',
    'redis+cluster://10.0.0.1:7000,10.0.0.2:7000',
    'redis+cluster://redis-cluster.example/',
])
def test_sentinel_and_cluster_urls_are_taken(url):
    assert MassConf({'redis_url': url}).store.redis_url == url
    assert QueueConf({'redis_url': url}).redis_url == url


# -- rollout controls --------------------------------------------------------

def test_mode_is_active_unless_observe_is_asked_for():
    assert (MassConf().mode, MassConf().active) == ('active', True)
    observing = MassConf({'mode': ' Observe '})
    assert (observing.mode, observing.active) == ('observe', False)
    assert (QueueConf().mode, QueueConf().active) == ('active', True)
    assert QueueConf({'mode': 'observe'}).active is False
    for make, section in ((MassConf, 'filter:mass'),
                          (QueueConf, 'filter:mass_queue')):
        with pytest.raises(ConfigError) as err:
            make({'mode': 'off'})
        assert str(err.value) == "[%s] mode = 'off' is not valid; " \
            "allowed: one of active, observe" % section


def test_opt_out_accounts_are_the_paths_account_names():
    assert MassConf().opt_out_accounts == frozenset()
    accounts = MassConf({'opt_out_accounts': ' AUTH_a,,AUTH_b , AUTH_a, '
                         'AUTH_\xe9'}).opt_out_accounts
    # compared with a path's account, a WSGI string
    assert accounts == {'AUTH_a', 'AUTH_b', 'AUTH_\xc3\xa9'}
    with pytest.raises(ConfigError) as err:
        MassConf({'opt_out_accounts': 'AUTH_a, /v1/AUTH_b'})
    assert str(err.value) == (
        "[filter:mass] opt_out_accounts = 'AUTH_a, /v1/AUTH_b' is not "
        "valid; allowed: account names as a path carries them, "
        "comma-separated (AUTH_a, AUTH_b), without \"/\"")


def parsed(value):
    """A parsed configuration as plain values, to compare two."""
    if hasattr(value, '_asdict'):
        return {k: parsed(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: parsed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [parsed(v) for v in value]
    if hasattr(value, '__dict__') and not callable(value):
        return {k: parsed(v) for k, v in vars(value).items()
                if not k.startswith('_')}
    return value


def test_the_samples_values_are_the_defaults():
    # as Swift's sharder holds DEFAULT_SHARDER_CONF against its sample:
    # each option the sample shows, set to the value it shows, parses to
    # what no option does
    shown = proxy_sample_options()
    assert len(shown) > 30
    default = parsed(MassConf({}))
    differ = {name: value for name, value in shown.items()
              if parsed(MassConf({name: value})) != default}
    assert differ == {}


def object_sample_options():
    """{option: value} of the object server's sample: mass_queue's, and
    the group-commit diskfile's (``group_commit_*``, in
    ``[app:object-server]``)."""
    shown = sample_options('object-server.conf-sample', 'filter:mass_queue')
    group_commit = {name: value for name, value in shown.items()
                    if name.startswith('group_commit_')}
    return ({name: value for name, value in shown.items()
             if name not in group_commit}, group_commit)


def test_the_object_server_samples_values_are_the_defaults():
    shown, _ = object_sample_options()
    assert len(shown) > 10
    default = parsed(QueueConf({}))
    differ = {}
    for name, value in shown.items():
        try:
            if parsed(QueueConf({name: value})) != default:
                differ[name] = value
        except ConfigError as err:
            differ[name] = str(err)
    assert differ == {}


def test_the_group_commit_samples_values_are_the_defaults():
    # the diskfile's options, one table (GROUP_COMMIT_DEFAULTS): the sample
    # shows each, with its default
    _, shown = object_sample_options()
    assert set(shown) == set(GROUP_COMMIT_DEFAULTS)
    default = vars(GroupCommitConf({}))
    differ = {}
    for name, value in shown.items():
        try:
            if vars(GroupCommitConf({name: value})) != default:
                differ[name] = value
        except ConfigError as err:
            differ[name] = str(err)
    assert differ == {}
