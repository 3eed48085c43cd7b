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
"""swift-mass status, tenants, explain, pin, unpin: the parts that need no
cluster."""
import json
import time

import pytest
from swift.common import storage_policy
from swift.common.memcached import MemcacheRing
from swift.common.swob import Request
from swift.common.storage_policy import StoragePolicy, \
    StoragePolicyCollection

from swift_mass.cli import control, main as cli
from swift_mass.conf import ConfigError
from swift_mass.control.entry import PolicyEntry
from swift_mass.control.stores.local import LocalStore
from swift_mass.proxy.conf import MassConf
from swift_mass.proxy.tenant import tenant_of


def test_store_logger_serves_swifts_memcache_client():
    # swift-mass commands whose store fell back to memcache died with
    # AttributeError: the memcache client reports timings to its logger
    logger = control.Quiet()
    ring = MemcacheRing(['127.0.0.1:1'], logger=logger)
    assert ring.get('mass-store/table') is None
    ring.set('mass-store/table', 1)
    assert any('127.0.0.1:1' in m for m in logger.messages)


@pytest.fixture
def store(monkeypatch):
    """The commands on a worker-local store in place of the proxies'."""
    local = LocalStore()
    loaded = []

    def load(conf_path):
        loaded.append(conf_path)
        conf = MassConf({})
        return conf, local, conf.control
    monkeypatch.setattr(control, 'load', load)
    local.loaded = loaded
    return local


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_pin_unpin_and_status_through_the_store(store, capsys):
    status, out, _ = run(capsys, '--conf', 'p.conf', '--json', 'pin',
                         'AUTH_a', '--class', 'write', '--method', 'batch')
    assert status == 0
    assert json.loads(out) == {'tenant': 'AUTH_a', 'pin': {
        'class': 'write', 'method': 'batch'}}
    assert store.get_pins() == {'AUTH_a': {'class': 'write',
                                           'method': 'batch'}}
    assert store.loaded == ['p.conf']
    store.acquire_lease('proxy-1', 60000)
    store.put_table({})
    status, out, _ = run(capsys, 'status', '--json')
    assert status == 0
    assert (json.loads(out)['pins'], json.loads(out)['window_seconds']) == \
        (1, 60)
    status, out, _ = run(capsys, 'unpin', 'AUTH_a')
    assert (status, out) == (0, 'tenant:                    AUTH_a\n'
                                'pin:                       None\n')
    assert store.get_pins() == {}


def test_tenants_lists_the_policy_table(store, capsys):
    store.put_table({'AUTH_a': PolicyEntry('read', substore='fast',
                                           method='cache', since=1)})
    status, out, _ = run(capsys, 'tenants')
    assert status == 0
    header, row = out.splitlines()
    assert header.split()[:4] == ['tenant', 'class', 'substore', 'method']
    assert row.split()[:5] == ['AUTH_a', 'read', 'fast', 'cache', 'no']
    status, out, _ = run(capsys, 'explain', 'AUTH_a', '--json')
    assert status == 0
    assert json.loads(out)['policy']['ring'] == 'fast'


def test_explain_and_tenants_show_the_entry_as_stored(store, capsys):
    # what --json showed before entries were PolicyEntry, key for key:
    # scripts parse it (the substore under 'ring')
    stored = {'baseline_ms': 10.0, 'baseline_reference_ms': None,
              'class': 'read', 'holdoff': {'batch': 2000.0},
              'judging': {'from': 5.0, 'ms': 3.0, 'n': 9, 'ref_ms': None,
                          'windows': 1, 'worse': 0},
              'method': 'cache', 'pinned': False,
              'ran_until': {'merge': 900.0}, 'reason': 'read share 0.95',
              'ring': 'fast', 'since': 1000.0, 'validated': False}
    store.put_table({'AUTH_a': stored, 'AUTH_bad': {'class': 'read'}})
    status, out, err = run(capsys, 'explain', 'AUTH_a', '--json')
    assert status == 0
    assert json.dumps(json.loads(out)['policy'], sort_keys=True) == \
        json.dumps(stored, sort_keys=True)
    assert err == ('swift-mass: AUTH_bad: its entry in the policy table is '
                   'left out: not a policy entry: its method is None, not '
                   'a string\n')
    status, out, _ = run(capsys, 'tenants', '--json')
    row, = json.loads(out)
    assert row == {'tenant': 'AUTH_a', 'class': 'read', 'ring': 'fast',
                   'method': 'cache', 'pinned': False, 'since': 1000.0,
                   'reason': 'read share 0.95', 'figures': None}


def test_a_bad_pin_or_config_exits_2_and_a_dead_store_1(store, monkeypatch,
                                                        capsys):
    status, _, err = run(capsys, 'pin', 'AUTH_a', '--class', 'read',
                         '--ring', 'no-such-policy')
    assert status == 2
    assert err.startswith("swift-mass: [pin] substore = 'no-such-policy' "
                          "is not valid; allowed: ")
    assert store.get_pins() == {}

    def broken(conf_path):
        raise OSError('connection refused')
    monkeypatch.setattr(control, 'load', broken)
    # status speaks the monitoring-plugin convention: critical
    assert run(capsys, 'status') == (
        2, '', 'swift-mass: OSError: connection refused\n')
    assert run(capsys, 'tenants') == (
        1, '', 'swift-mass: OSError: connection refused\n')


def test_global_options_after_the_subcommand(store, capsys):
    status, out, _ = run(capsys, 'status', '--conf', 'after.conf', '--json')
    assert status == control.CRITICAL  # no leader
    assert store.loaded == ['after.conf']
    assert json.loads(out)['pins'] == 0


@pytest.fixture
def policies(monkeypatch):
    """swift.conf's policies as the SAIO has them, whatever /etc/swift
    holds."""
    monkeypatch.setattr(storage_policy, '_POLICIES', StoragePolicyCollection(
        [StoragePolicy(0, 'standard', is_default=True),
         StoragePolicy(1, 'fast'), StoragePolicy(2, 'bulk')]))


def test_pin_substore_and_its_old_spelling_ring(store, policies, capsys):
    status, out, _ = run(capsys, '--json', 'pin', 'AUTH_a', '--class',
                         'write', '--substore', 'bulk')
    assert status == 0
    # the stored pin keeps the key the controller reads
    assert json.loads(out)['pin'] == {'class': 'write', 'ring': 'bulk'}
    assert store.get_pins()['AUTH_a'] == {'class': 'write', 'ring': 'bulk'}
    status, _, _ = run(capsys, 'pin', 'AUTH_b', '--class', 'read',
                       '--ring', 'fast')
    assert status == 0
    assert store.get_pins()['AUTH_b'] == {'class': 'read', 'ring': 'fast'}
    status, _, err = run(capsys, 'pin', 'AUTH_c', '--class', 'read',
                         '--substore', 'gold')
    assert status == 2
    assert err.startswith("swift-mass: [pin] substore = 'gold' is not "
                          "valid; allowed: a storage policy of swift.conf "
                          "that is not deprecated (bulk, fast, standard)")
    assert 'AUTH_c' not in store.get_pins()


def requests(store, tenant, reads=0, writes=0):
    """Requests counted for ``tenant`` in the current window, as a proxy
    records them."""
    store.add_counts_many([(tenant, time.time(), {
        'ops.GET': reads, 'ops.PUT': writes})], ttl=600)


@pytest.fixture
def three(store):
    """AUTH_b busiest, read-only and pinned; AUTH_a writing; AUTH_c known
    by the table only."""
    store.put_table({'AUTH_a': PolicyEntry('write', substore='bulk',
                                           method='batch'),
                     'AUTH_b': PolicyEntry('read', substore='fast',
                                           method='cache', pinned=True),
                     'AUTH_c': PolicyEntry('mixed', substore='')})
    requests(store, 'AUTH_a', reads=5, writes=30)
    requests(store, 'AUTH_b', reads=90)
    return store


def tenant_column(out):
    return [line.split()[0] for line in out.splitlines()[1:]]


@pytest.mark.parametrize('argv, order', [
    # busiest first by default: the tenants an operator looks for
    ((), ['AUTH_b', 'AUTH_a', 'AUTH_c']),
    (('--sort', 'requests'), ['AUTH_b', 'AUTH_a', 'AUTH_c']),
    (('--sort', 'writes'), ['AUTH_a', 'AUTH_b', 'AUTH_c']),
    (('--sort', 'reads'), ['AUTH_b', 'AUTH_a', 'AUTH_c']),
    (('--sort', 'tenant'), ['AUTH_a', 'AUTH_b', 'AUTH_c']),
    (('--sort', 'class'), ['AUTH_c', 'AUTH_b', 'AUTH_a']),
    # the default policy ('') after the named ones
    (('--sort', 'substore'), ['AUTH_a', 'AUTH_b', 'AUTH_c']),
    (('--sort', 'method'), ['AUTH_a', 'AUTH_b', 'AUTH_c']),
    (('--sort', 'share'), ['AUTH_b', 'AUTH_a', 'AUTH_c']),
    (('--sort', 'pinned'), ['AUTH_b', 'AUTH_a', 'AUTH_c']),
    (('--top', '2', '--sort', 'writes'), ['AUTH_a', 'AUTH_b']),
    (('--top', '1'), ['AUTH_b']),
])
def test_tenants_top_and_sort(three, capsys, argv, order):
    status, out, _ = run(capsys, 'tenants', *argv)
    assert status == 0
    assert tenant_column(out) == order
    status, out, _ = run(capsys, 'tenants', '--json', *argv)
    assert [row['tenant'] for row in json.loads(out)] == order


def test_tenants_json_keeps_its_shape(three, capsys):
    status, out, _ = run(capsys, 'tenants', '--json', '--top', '1')
    assert status == 0
    row, = json.loads(out)
    assert sorted(row) == ['class', 'figures', 'method', 'pinned',
                           'reason', 'ring', 'since', 'tenant']
    assert (row['tenant'], row['ring'], row['figures']['reads']) == (
        'AUTH_b', 'fast', 90)


@pytest.mark.parametrize('argv, message', [
    (('--top', '0'), "argument --top: '0' is not valid; allowed: a whole "
     'number, 1 or more'),
    (('--sort', 'size'), "argument --sort: invalid choice: 'size'"),
])
def test_tenants_bad_top_or_sort(three, capsys, argv, message):
    with pytest.raises(SystemExit) as caught:
        cli.main(['tenants'] + list(argv))
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


def test_tenants_columns_fit_keystone_accounts(store, capsys):
    keystone = 'AUTH_' + '0123456789abcdef' * 2
    assert len(keystone) == 37
    store.put_table({keystone: PolicyEntry('write', substore='bulk',
                                           method='batch'),
                     'AUTH_a': PolicyEntry('read', substore='fast',
                                           method='cache')})
    requests(store, keystone, writes=123456789)
    status, out, _ = run(capsys, 'tenants')
    assert status == 0
    header, first, second = out.splitlines()
    assert header.split() == ['tenant', 'class', 'substore', 'method',
                              'pinned', 'requests', 'reads', 'writes',
                              'share', 'p99', 'ms']
    assert first.split()[:8] == [keystone, 'write', 'bulk', 'batch', 'no',
                                 '123456789', '0', '123456789']
    # every column starts where its heading does
    for line in (first, second):
        for heading in ('class', 'substore', 'method'):
            start = header.index(heading)
            assert line[start - 1] == ' ' and line[start] != ' '
    # and numbers end where their heading does
    end = header.index('writes') + len('writes')
    assert first[:end].endswith(' 123456789')
    assert second[:end].endswith(' 0')


def test_explain_a_tenant_the_store_does_not_know_exits_1(three, capsys):
    status, out, err = run(capsys, 'explain', 'AUTH_nobody')
    assert (status, out) == (1, '')
    assert err == ('swift-mass: AUTH_nobody: no such tenant in the store: '
                   'not in the policy table, not pinned, no requests in '
                   'the last 60s\n')
    # an account typed without its reseller prefix: the known ones named
    requests(three, 'AUTH_photos', reads=1)
    three.set_pin('KEY_photos', {'class': 'read'})
    status, _, err = run(capsys, 'explain', 'photos')
    assert status == 1
    assert err.endswith('the last 60s (tenants are accounts: AUTH_photos, '
                        'KEY_photos?)\n'), err
    # known by the table alone, by its requests alone, by its pin alone
    requests(three, 'AUTH_d', reads=1)
    three.set_pin('AUTH_e', {'class': 'read'})
    for tenant in ('AUTH_c', 'AUTH_d', 'AUTH_e'):
        status, out, _ = run(capsys, 'explain', tenant, '--json')
        assert status == 0
        assert json.loads(out)['tenant'] == tenant


def test_a_non_ascii_account_is_pinned_as_the_proxies_key_it(store, capsys):
    # the proxies key a tenant by the account of PATH_INFO, a WSGI string
    path = Request.blank('/v1/AUTH_t%C3%ABst/c/o').environ['PATH_INFO']
    key = tenant_of(path)
    assert key != u'AUTH_t\u00ebst'
    status, out, _ = run(capsys, '--json', 'pin', u'AUTH_t\u00ebst',
                         '--class', 'read')
    assert status == 0
    assert json.loads(out)['tenant'] == u'AUTH_t\u00ebst'
    assert store.get_pins() == {key: {'class': 'read'}}
    store.put_table({key: PolicyEntry('read', substore='', method='cache',
                                      since=time.time())})
    status, out, _ = run(capsys, '--json', 'explain', u'AUTH_t\u00ebst')
    assert status == 0 and json.loads(out)['pin'] == {'class': 'read'}
    status, out, _ = run(capsys, '--json', 'tenants')
    assert [row['tenant'] for row in json.loads(out)] == [u'AUTH_t\u00ebst']
    status, _, _ = run(capsys, 'unpin', u'AUTH_t\u00ebst')
    assert status == 0 and store.get_pins() == {}


class DownStore(LocalStore):
    """A store that does not answer."""

    def health(self):
        return {'store': 'redis', 'ok': False,
                'error': 'ConnectionError: connection refused'}

    def get_table(self):
        raise ConnectionError('connection refused')


@pytest.mark.parametrize('state, code', [
    ('ok', 0), ('no table yet', 1), ('no leader', 2), ('store down', 2)])
def test_status_exits_as_a_monitoring_plugin(monkeypatch, capsys, state,
                                             code):
    local = DownStore() if state == 'store down' else LocalStore()
    if state in ('ok', 'no table yet'):
        local.acquire_lease('proxy-1', 60000)
    if state == 'ok':
        local.put_table({'AUTH_a': PolicyEntry('read')})
    monkeypatch.setattr(control, 'load', lambda conf_path: (
        MassConf({}), local, MassConf({}).control))
    status, out, err = run(capsys, 'status', '--json')
    result = json.loads(out)
    assert (status, result['state']) == (code, control.STATES[code])
    assert bool(result['problems']) == (code != 0)
    if state == 'store down':
        assert result['leader'] is None and result['store']['ok'] is False
        assert 'does not answer' in result['problems'][0]
    if state == 'ok':
        assert (result['leader'], result['tenants']) == ('proxy-1', 1)
    # the text form says the same
    status, out, _ = run(capsys, 'status')
    assert status == code and 'state:' in out


def test_status_of_a_bad_config_is_unknown(monkeypatch, capsys):
    def bad(conf_path):
        raise ConfigError("[filter:mass] store = 'x' is not valid")
    monkeypatch.setattr(control, 'load', bad)
    status, out, err = run(capsys, 'status')
    assert (status, out) == (control.UNKNOWN, '')
    assert "store = 'x' is not valid" in err


@pytest.mark.parametrize('state, gauges', [
    ('ok', {'mass_status_state': 0, 'mass_store_up': 1,
            'mass_leader_present': 1, 'mass_policy_table_version': 1}),
    ('no leader', {'mass_status_state': 2, 'mass_store_up': 1,
                   'mass_leader_present': 0,
                   'mass_policy_table_version': 0}),
    ('store down', {'mass_status_state': 2, 'mass_store_up': 0,
                    'mass_leader_present': 0,
                    'mass_policy_table_version': 0}),
    ('bad config', {'mass_status_state': 3, 'mass_store_up': 0,
                    'mass_leader_present': 0,
                    'mass_policy_table_version': 0}),
])
def test_status_writes_its_gauges_for_node_exporter(
        monkeypatch, capsys, tmp_path, state, gauges):
    local = DownStore() if state == 'store down' else LocalStore()
    if state == 'ok':
        local.acquire_lease('proxy-1', 60000)
        local.put_table({'AUTH_a': PolicyEntry('read')})

    def load(conf_path):
        if state == 'bad config':
            raise ConfigError("[filter:mass] store = 'x' is not valid")
        return MassConf({}), local, MassConf({}).control
    monkeypatch.setattr(control, 'load', load)
    path = tmp_path / 'mass.prom'
    path.write_text('an older file')
    before = time.time()
    status, _, _ = run(capsys, 'status', '--textfile', str(path))
    assert status == gauges['mass_status_state']
    text = path.read_text()
    # Prometheus's exposition format: HELP, TYPE, then the sample
    values = {}
    for line in text.splitlines():
        if line.startswith('# TYPE '):
            assert line.endswith(' gauge')
        elif not line.startswith('# HELP '):
            name, value = line.split(' ')
            values[name] = float(value)
    assert values.pop('mass_status_time_seconds') >= int(before)
    assert values == gauges
    # replaced at once: nothing but the file is left in the directory
    assert [p.name for p in tmp_path.iterdir()] == ['mass.prom']


def test_forget_removes_the_entries_and_marks_the_tenants(store, capsys):
    entry = PolicyEntry('read', method='cache', since=1)
    store.put_table({'AUTH_a': entry, 'AUTH_b': entry, 'AUTH_c': entry})
    store.set_pin('AUTH_b', {'class': 'write'})
    before = time.time()
    status, out, _ = run(capsys, '--json', 'forget', 'AUTH_a', 'AUTH_b',
                         'AUTH_z')
    assert status == 0
    result = json.loads(out)
    assert result['tenants'] == ['AUTH_a', 'AUTH_b', 'AUTH_z']
    assert result['entries_removed'] == ['AUTH_a', 'AUTH_b']
    # forget keeps the pin: unpin removes it
    assert result['still_pinned'] == ['AUTH_b']
    assert store.get_pins() == {'AUTH_b': {'class': 'write'}}
    assert before <= result['forgotten_at'] <= time.time()
    assert store.get_table()[1] == {'AUTH_c': entry.to_dict()}
    assert store.forgotten() == {'AUTH_a': result['forgotten_at'],
                                 'AUTH_b': result['forgotten_at'],
                                 'AUTH_z': result['forgotten_at']}
    status, out, _ = run(capsys, 'forget', 'AUTH_c')
    assert status == 0
    assert out.splitlines()[0] == \
        'tenants:                   ["AUTH_c"]'
    assert 'entries_removed:           ["AUTH_c"]' in out.splitlines()
    assert store.get_table()[1] == {}


def test_forget_needs_a_tenant_and_says_what_it_does(store, capsys):
    with pytest.raises(SystemExit):
        cli.main(['forget'])
    assert 'TENANT' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(['forget', '--help'])
    out = ' '.join(capsys.readouterr().out.split())
    assert 'classify it afresh' in out
    assert 'unpin removes it' in out


def test_forget_a_non_ascii_tenant(store, capsys):
    key = tenant_of(
        Request.blank('/v1/AUTH_t%C3%ABst/c/o').environ['PATH_INFO'])
    store.put_table({key: PolicyEntry('read', since=1)})
    status, out, _ = run(capsys, '--json', 'forget', u'AUTH_t\u00ebst')
    assert status == 0
    assert json.loads(out)['entries_removed'] == [u'AUTH_t\u00ebst']
    assert store.get_table()[1] == {}
    assert list(store.forgotten()) == [key]
