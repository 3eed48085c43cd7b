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
"""Urgent tenants marked in account sysmeta, end to end on the SAIO:
``swift-mass urgent`` sets the mark through the proxy as a reseller admin,
nobody else can set or see it, and the marked tenant's requests make the
object servers keep slots for it (and stop doing so once it is unmarked).

tools/saio.d/proxy-server.conf sets urgent_recheck_seconds = 2; the
object servers' mass_queue lends reserved slots again after 5 idle seconds.
AUTH_urgent (user urgent:sla) is used by no other test.
"""
import json
import time
import uuid

import pytest

from swift_mass.cli import main as cli
from tests.functional.conftest import PROXY, Tenant
from tests.functional.waiting import until
from tests.functional.ungated import pipeline_without_gatekeeper, request
from tests.functional.test_queue import OBJECT_SERVERS, queue_state, \
    remove_container

OPERATOR = {'ST_AUTH': PROXY + '/auth/v1.0', 'ST_USER': 'admin:admin',
            'ST_KEY': 'admin'}
RECHECK = 2.0    # urgent_recheck_seconds of the SAIO's proxies
IDLE = 5.0       # urgent_idle_seconds of the SAIO's object servers


@pytest.fixture
def operator_env(monkeypatch):
    for name, value in OPERATOR.items():
        monkeypatch.setenv(name, value)


def urgent_command(capsys, *args):
    code = cli.main(['--json', 'urgent', 'AUTH_urgent'] + list(args))
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


@pytest.fixture
def sla(cluster, operator_env, capsys):
    tenant = Tenant('urgent:sla', 'sla')
    name = 'urgent-%s' % uuid.uuid4().hex[:8]
    assert tenant.request('PUT', '/' + name).status_code in (201, 202)
    yield tenant, name
    urgent_command(capsys, '--off')
    remove_container(tenant, name)


def devices_of(tenant, container, objects):
    """{(ip, port): devices} the tenant's objects are on (their proxy-side
    nodes, from the object servers' admitted counts)."""
    before = dict(((ip, port), queue_state(ip, port)['devices'])
                  for ip, port in OBJECT_SERVERS)
    for obj in objects:
        assert tenant.request('PUT', '/%s/%s' % (container, obj),
                              data=b'u' * 1024).status_code == 201
    touched = {}
    for ip, port in OBJECT_SERVERS:
        for device, queue in queue_state(ip, port)['devices'].items():
            old = before[(ip, port)].get(device, {}).get('admitted', 0)
            if queue['admitted'] > old:
                touched.setdefault((ip, port), set()).add(device)
    return touched


def modes(touched):
    return set(queue_state(ip, port)['devices'][device]['mode']
               for (ip, port), devices in touched.items()
               for device in devices)


def every_device():
    return dict(((ip, port), set(queue_state(ip, port)['devices']))
                for ip, port in OBJECT_SERVERS)


def wait_until_shared(limit=IDLE + 10):
    """Until no device keeps slots for an urgent tenant (this or another
    test's)."""
    end = time.time() + limit
    while modes(every_device()) - {'shared'}:
        assert time.time() < end, modes(every_device())
        time.sleep(0.5)


def test_only_a_reseller_admin_sets_and_sees_the_mark(sla, capsys):
    tenant, _ = sla
    assert urgent_command(capsys) == {'tenant': 'AUTH_urgent',
                                      'urgent': False}
    # the tenant's own admin can neither set the mark nor see it
    resp = tenant.request('POST', headers={'X-Mass-Urgent': 'true'})
    assert resp.status_code == 204
    assert urgent_command(capsys)['urgent'] is False
    assert 'X-Mass-Urgent' not in tenant.request('HEAD').headers
    assert urgent_command(capsys, '--on') == {'tenant': 'AUTH_urgent',
                                              'urgent': True}
    assert 'X-Mass-Urgent' not in tenant.request('HEAD').headers
    # ... nor clear it
    tenant.request('POST', headers={'X-Mass-Urgent': 'false',
                                    'X-Account-Sysmeta-Mass-Urgent': ''})
    assert urgent_command(capsys)['urgent'] is True
    assert urgent_command(capsys, '--off')['urgent'] is False


def test_a_marked_tenant_gets_reserved_slots_until_unmarked(sla, capsys):
    tenant, container = sla
    assert devices_of(tenant, container, ['warm'])
    wait_until_shared()

    urgent_command(capsys, '--on')
    batches = iter(range(1000))

    def devices_in(mode):
        # the touched devices, when every one of them is in ``mode``
        batch = next(batches)
        touched = devices_of(tenant, container,
                             ['%s%d' % (c, batch) for c in 'abc'])
        return touched if modes(touched) == {mode} else None

    # every proxy worker sees the mark within RECHECK seconds (plus the
    # account info's time in memcache)
    touched = until(lambda: devices_in('isolated'), RECHECK + 30,
                    'the marked tenant isolates its devices')
    seen = set(tenant for ip, port in OBJECT_SERVERS
               for tenant in queue_state(ip, port).get('urgent_seen', []))
    assert 'AUTH_urgent' in seen
    state = queue_state(*sorted(touched)[0])
    device = sorted(touched[sorted(touched)[0]])[0]
    assert state['devices'][device]['reserved_slots'] == \
        -(-state['slots_per_device'] // 2)   # urgent_share 0.5

    urgent_command(capsys, '--off')

    def shared_again():
        wait_until_shared()
        return devices_in('shared')
    # unmarked, once every worker knows, its requests no longer isolate
    # the devices
    until(shared_again, RECHECK + IDLE + 30,
          'the unmarked tenant shares its devices')


def test_without_credentials_the_command_says_what_is_missing(
        cluster, monkeypatch, capsys):
    for name in OPERATOR:
        monkeypatch.delenv(name, raising=False)
    assert cli.main(['urgent', 'AUTH_urgent']) == 1
    err = capsys.readouterr().err
    assert '-A/--auth/$ST_AUTH or --os-auth-url/$OS_AUTH_URL' in err and \
        'reseller admin' in err


def test_a_tenant_cannot_forge_the_backend_tag(cluster):
    # Gatekeeper would strip the tag before Mass sees it; without
    # gatekeeper (tests.functional.ungated) only Mass stands in the way.
    ungated = pipeline_without_gatekeeper()
    tenant = Tenant('urgent:sla', 'sla')
    name = 'forged-%s' % uuid.uuid4().hex[:8]
    assert tenant.request('PUT', '/' + name).status_code in (201, 202)
    try:
        assert devices_of(tenant, name, ['warm'])
        wait_until_shared()
        for n in range(3):
            resp = request(ungated, tenant, 'PUT', '/%s/o%d' % (name, n),
                           {'X-Backend-Mass-Urgent': 'true'}, b'f')
            assert resp.status_int == 201
        assert modes(every_device()) == {'shared'}
    finally:
        remove_container(tenant, name)
