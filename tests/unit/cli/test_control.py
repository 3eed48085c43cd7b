"""swift-mass status, tenants, explain, pin, unpin: the parts that need no
cluster."""
import json

import pytest
from swift.common.memcached import MemcacheRing

from swift_mass.cli import control, main as cli
from swift_mass.conf import MassConf
from swift_mass.control.store import LocalStore


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
    status, out, _ = run(capsys, 'status', '--json')
    assert status == 0
    assert (json.loads(out)['pins'], json.loads(out)['window_seconds']) == \
        (1, 60)
    status, out, _ = run(capsys, 'unpin', 'AUTH_a')
    assert (status, out) == (0, 'tenant:                    AUTH_a\n'
                                'pin:                       None\n')
    assert store.get_pins() == {}


def test_tenants_lists_the_policy_table(store, capsys):
    store.put_table({'AUTH_a': {'class': 'read', 'ring': 'fast',
                                'method': 'cache', 'since': 1}})
    status, out, _ = run(capsys, 'tenants')
    assert status == 0
    header, row = out.splitlines()
    assert header.split()[:4] == ['tenant', 'class', 'ring', 'method']
    assert row.split()[:5] == ['AUTH_a', 'read', 'fast', 'cache', 'no']
    status, out, _ = run(capsys, 'explain', 'AUTH_a', '--json')
    assert status == 0
    assert json.loads(out)['policy']['ring'] == 'fast'


def test_a_bad_pin_or_config_exits_2_and_a_dead_store_1(store, monkeypatch,
                                                        capsys):
    status, _, err = run(capsys, 'pin', 'AUTH_a', '--class', 'read',
                         '--ring', 'no-such-policy')
    assert status == 2
    assert err.startswith("swift-mass: [pin] ring = 'no-such-policy' is "
                          "not valid; allowed: ")
    assert store.get_pins() == {}

    def broken(conf_path):
        raise OSError('connection refused')
    monkeypatch.setattr(control, 'load', broken)
    assert run(capsys, 'status') == (
        1, '', 'swift-mass: OSError: connection refused\n')
