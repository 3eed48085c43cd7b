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
"""The durable copy of a tenant's policy (swift_mass.proxy.sysmeta): what
it reads, and how long it believes a tenant has none."""
import json

from swift.common.swob import Request, Response

from swift_mass.proxy import sysmeta
from tests.unit.helpers import Clock, Logger


class Accounts(object):
    """The proxy app right of Mass: account HEADs answer with the saved
    policy, if any."""

    def __init__(self):
        self.saved = {}
        self.heads = 0

    def __call__(self, env, start_response):
        req = Request(env)
        account = req.environ['PATH_INFO'].split('/')[2]
        if req.method == 'HEAD':
            self.heads += 1
            return Response(status=204, headers=self.saved.get(account, {}))(
                env, start_response)
        self.saved[account] = dict(req.headers)
        return Response(status=204)(env, start_response)


ENTRY = {'class': 'read', 'ring': 'fast', 'method': 'cache'}


def make(**kwargs):
    accounts, clock = Accounts(), Clock()
    return sysmeta.AccountSysmeta(accounts, Logger(), clock=clock,
                                  **kwargs), accounts, clock


def test_a_saved_policy_is_loaded():
    durable, accounts, _ = make()
    durable.save('AUTH_t', ENTRY)
    assert json.loads(accounts.saved['AUTH_t'][sysmeta.SYSMETA_POLICY]) \
        == ENTRY
    assert durable.load('AUTH_t') == ENTRY


def test_each_tenant_has_its_own_sysmeta_whatever_its_name():
    # 'AUTH_x%62' (a client's /v1/AUTH_x%2562) read and wrote AUTH_xb's
    durable, accounts, _ = make()
    names = ['AUTH_xb', 'AUTH_x%62', 'AUTH_a?b', 'AUTH_a#b',
             'AUTH_\xc3\xa9']  # a WSGI string: UTF-8 bytes as latin-1
    for i, name in enumerate(names):
        durable.save(name, dict(ENTRY, ring=str(i)))
    assert sorted(accounts.saved) == sorted(names)
    for i, name in enumerate(names):
        assert durable.load(name)['ring'] == str(i)


def test_a_tenant_without_a_policy_is_not_asked_again_for_a_while():
    durable, accounts, clock = make(negative_ttl=60)
    assert durable.load('AUTH_t') is None
    assert durable.load('AUTH_t') is None
    assert accounts.heads == 1
    clock.now += 61
    assert durable.load('AUTH_t') is None
    assert accounts.heads == 2


def test_a_tenant_some_leader_decided_for_is_asked_again_at_once():
    durable, accounts, _ = make()
    assert durable.load('AUTH_t') is None
    accounts.saved['AUTH_t'] = {sysmeta.SYSMETA_POLICY: json.dumps(ENTRY)}
    durable.known({'AUTH_t': ENTRY})
    assert durable.load('AUTH_t') == ENTRY


def test_tenants_without_a_policy_are_bounded(monkeypatch):
    monkeypatch.setattr(sysmeta, 'MAX_ABSENT', 3)
    durable, accounts, _ = make()
    for n in range(7):
        durable.load('AUTH_%d' % n)
    assert len(durable._absent) == 3
    durable.load('AUTH_6')
    assert accounts.heads == 7
