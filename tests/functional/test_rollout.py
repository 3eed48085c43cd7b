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
"""Rollout controls on the SAIO (docs/rollout.md).

* Observe mode, switched with ``tools/saio mass mode=observe`` (which sets
  the option in the proxies' [filter:mass] and restarts them) and back: a
  pinned read tenant's reads get no X-Mass-Cache, a pinned writer's new
  container lands in the default policy, and ``swift-mass explain`` still
  shows both decisions; back in active mode the same pins cache and route
  again.  The object servers' ``tools/saio queue mode=observe`` admits
  every request at once and says so in ``GET /mass_queue``.
* The per-account opt-out, both ways: ``opt_out_accounts`` (set with
  ``tools/saio mass``) and the account mark (``swift-mass opt-out
  TENANT --on``): an opted-out account is neither routed nor cached, and
  ``swift-mass explain`` says it is opted out; another account, pinned
  alike, is routed meanwhile; once the mark is cleared, the account is
  Mass's again.

Each test uses fresh accounts (reached with the reseller admin's token),
so nothing an earlier run created or decided can make a test pass; every
option, pin and mark is put back when its test ends, whatever happens.
"""
import contextlib
import json
import time
import uuid

import pytest
import requests

from swift_mass.cli import main as cli
from tests.functional.conftest import PROXY, Tenant, saio
from tests.functional.test_queue import OBJECT_SERVERS, queue_state
from tests.functional.test_routing import DEFAULT_POLICY, \
    WRITE_SUBSTORE, Account, pinned, swift_mass
from tests.functional.waiting import until

READ_SUBSTORE = 'fast'   # read_substore of the SAIO's [filter:mass]
WINDOW = 20.0            # window_seconds of the SAIO's [filter:mass]
RECHECK = 2.0            # urgent_recheck_seconds of the SAIO's proxies
CACHE_HEADER = 'X-Mass-Cache'
OPERATOR = {'ST_AUTH': PROXY + '/auth/v1.0', 'ST_USER': 'admin:admin',
            'ST_KEY': 'admin'}


def shown_options(command):
    """The options of ``tools/saio mass`` or ``tools/saio queue``, as it
    shows them."""
    out = saio(command).stdout
    # an option set empty shows as "name = " (the restore of one the
    # template did not have)
    return dict((name.strip(), value.strip()) for name, value in (
        line.split(':', 1)[1].split('=', 1)
        for line in out.splitlines() if ' = ' in line))


def proxy_answers():
    try:
        return requests.get(PROXY + '/healthcheck', timeout=5).ok
    except requests.ConnectionError:
        return False


@contextlib.contextmanager
def options(command, **wanted):
    """``tools/saio COMMAND OPTION=VALUE...`` for the block, then the
    values it had (the default where it had none)."""
    defaults = {'mode': 'active', 'opt_out_accounts': ''}
    before = shown_options(command)
    restore = {name: before.get(name, defaults[name]) for name in wanted}
    result = saio(command, *['%s=%s' % item for item in
                             sorted(wanted.items())], check=False)
    assert result.returncode == 0, result.stdout
    try:
        until(proxy_answers, 60, 'the proxy after tools/saio %s' % command)
        yield
    finally:
        back = saio(command, *['%s=%s' % item for item in
                               sorted(restore.items())], check=False)
        assert back.returncode == 0, back.stdout
        until(proxy_answers, 60, 'the proxy after tools/saio %s' % command)


def explain(account):
    return json.loads(swift_mass('--json', 'explain', account).stdout)


@pytest.fixture(scope='module')
def admin(cluster):
    return Tenant('admin:admin', 'admin')


def fresh(admin):
    """A fresh account, used with the reseller admin's token; its first
    container creates it."""
    account = Account('%s/AUTH_massrollout%s' % (
        admin.url.rsplit('/', 1)[0], uuid.uuid4().hex[:10]), admin.token)
    assert account.create('first').status_code == 201
    return account


@pytest.fixture
def accounts(admin):
    made = []

    def make():
        made.append(fresh(admin))
        return made[-1]
    yield make
    for account in made:
        account.clean_up()


def routes_to(client, policy):
    """Whether a new container of the account lands in ``policy``."""
    probe = 'probe-%s' % uuid.uuid4().hex[:8]
    assert client.create(probe).status_code == 201
    return client.policy(probe) == policy


def cache_header_of_reads(client, container, n=4):
    """X-Mass-Cache of ``n`` reads of a small object (None: none)."""
    name = 'o-%s' % uuid.uuid4().hex[:8]
    assert client.request('PUT', '/%s/%s' % (container, name),
                          data=b'r' * 1000).status_code == 201
    shown = set()
    for _ in range(n):
        resp = client.request('GET', '/%s/%s' % (container, name))
        assert resp.content == b'r' * 1000
        shown.add(resp.headers.get(CACHE_HEADER))
    return shown


# -- observe mode ------------------------------------------------------------

def test_observe_mode_decides_and_changes_no_request(accounts, store,
                                                     statsd):
    reader, writer = accounts(), accounts()
    with pinned(store, reader, 'read', None), \
            pinned(store, writer, 'write', None):
        # the control: active mode routes and caches
        until(lambda: routes_to(writer, WRITE_SUBSTORE), 20,
              'routing in active mode', 0.5)
        until(lambda: 'hit' in cache_header_of_reads(reader, 'first'), 20,
              'the cache in active mode', 0.5)

        with options('mass', mode='observe'):
            statsd.metrics(wait=0.5)
            assert cache_header_of_reads(reader, 'first') == {None}
            assert routes_to(writer, DEFAULT_POLICY)
            assert writer.create('new').status_code == 201
            assert writer.policy('new') == DEFAULT_POLICY
            metrics = statsd.metrics()
            assert not [m for m in metrics if m.startswith('mass.cache.')]
            assert 'mass.routed' not in metrics
            # the control loop still counts, decides and reports
            assert 'mass.class.write.ops.PUT' in metrics, metrics
            for client, cls, ring, method in (
                    (reader, 'read', READ_SUBSTORE, 'cache'),
                    (writer, 'write', WRITE_SUBSTORE, 'batch')):
                policy = explain(client.account)['policy']
                assert (policy['class'], policy['ring'],
                        policy['method'], policy['pinned']) == (
                    cls, ring, method, True)

        # active again, after a reload: the same pins act again
        until(lambda: routes_to(writer, WRITE_SUBSTORE), 20,
              'routing back in active mode', 0.5)
        until(lambda: 'hit' in cache_header_of_reads(reader, 'first'), 20,
              'the cache back in active mode', 0.5)


def test_the_queues_observe_mode_admits_every_request(accounts):
    client = accounts()
    with options('queue', mode='observe'):
        for i in range(10):
            assert client.request('PUT', '/first/o%d' % i,
                                  data=b'q').status_code == 201
        arrived = 0
        for ip, port in OBJECT_SERVERS:
            state = queue_state(ip, port)
            assert state['mode'] == 'observe', (ip, port)
            # no queue made: every request admitted at once; what a queue
            # would have seen instead
            assert state['devices'] == {}, (ip, port)
            arrived += sum(seen['arrived']
                           for seen in state['observed'].values())
        # each server answers from one worker: some saw the writes
        assert arrived > 0
    for ip, port in OBJECT_SERVERS:
        assert queue_state(ip, port)['mode'] == 'active'


# -- opt-out -----------------------------------------------------------------

def opted_out(account):
    policy = explain(account)['policy'] or {}
    return policy.get('opted_out') and policy


def test_a_configured_account_is_not_routed_nor_cached(accounts, store):
    opted, other = accounts(), accounts()
    with pinned(store, opted, 'read', None), \
            pinned(store, other, 'read', None):
        with options('mass', opt_out_accounts=opted.account):
            assert routes_to(opted, DEFAULT_POLICY)
            assert cache_header_of_reads(opted, 'first') == {None}
            policy = until(lambda: opted_out(opted.account), 20,
                           'the opt-out in the policy table')
            assert policy['reason'] == 'opted out (opt_out_accounts)'
            assert (policy['ring'], policy['method']) == ('', 'none')
            # the control: another account, pinned alike, is Mass's
            assert routes_to(other, READ_SUBSTORE)
            until(lambda: 'hit' in cache_header_of_reads(other, 'first'),
                  20, 'the other account cached', 0.5)


@pytest.fixture
def operator_env(monkeypatch):
    for name, value in OPERATOR.items():
        monkeypatch.setenv(name, value)


def opt_out(capsys, account, on=None):
    """``swift-mass opt-out ACCOUNT`` with --on (True), --off (False) or
    neither (None): the mark the proxy shows."""
    onoff = [] if on is None else ['--on' if on else '--off']
    code = cli.main(['--json', 'opt-out', account] + onoff)
    out = capsys.readouterr().out
    assert code == 0, out
    result = json.loads(out)
    assert result['tenant'] == account
    return result['opt_out']


def test_a_marked_account_is_not_routed_nor_cached_until_unmarked(
        accounts, store, operator_env, capsys):
    opted, other = accounts(), accounts()
    with pinned(store, opted, 'read', None), \
            pinned(store, other, 'read', None):
        assert routes_to(opted, READ_SUBSTORE)
        # only a reseller admin sets the mark, and sees it
        tenant = Tenant('test:tester', 'testing')
        assert tenant.request('POST', headers={
            'X-Mass-Opt-Out': 'true'}).status_code == 204
        assert 'X-Mass-Opt-Out' not in tenant.request('HEAD').headers
        assert opt_out(capsys, tenant.account) is False
        assert opt_out(capsys, opted.account, True) is True
        try:
            # every proxy worker sees the mark within RECHECK seconds
            # (plus the account info's time in memcache)
            until(lambda: routes_to(opted, DEFAULT_POLICY), RECHECK + 30,
                  'the marked account left to Swift', 0.5)
            # one worker has seen it; the others within RECHECK seconds
            time.sleep(RECHECK + 1)
            assert cache_header_of_reads(opted, 'first', n=8) == {None}
            policy = until(lambda: opted_out(opted.account), 20,
                           'the opt-out in the policy table')
            assert policy['reason'] == \
                "opted out (its account's X-Mass-Opt-Out mark)"
            # the control: another account, pinned alike, is Mass's
            assert routes_to(other, READ_SUBSTORE)
        finally:
            assert opt_out(capsys, opted.account, False) is False
        # back in once a window has passed without an opted-out request
        until(lambda: routes_to(opted, READ_SUBSTORE),
              RECHECK + WINDOW + 30, 'the unmarked account routed again',
              1.0)
        assert not opted_out(opted.account)
