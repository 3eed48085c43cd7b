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
"""The control loop on the SAIO: tenants classified from real traffic, one
policy table for all workers, pins, durability, a store that is down."""
import configparser
import copy
import json
import subprocess
import time
import uuid

import pytest
import redis
import requests
from swift.common.bufferedhttp import http_connect
from swift.common.ring import Ring
from swift.common.utils import Timestamp

from swift_mass.proxy.sysmeta import SYSMETA_POLICY
from tests.functional.conftest import PROXY, PROXY_CONF, Tenant
from tests.functional.waiting import until


@pytest.fixture(scope='module')
def func(cluster):
    return Tenant('mass:func', 'func')


@pytest.fixture
def bucket(func):
    name = 'mass-loop-%s' % uuid.uuid4().hex[:8]
    assert func.request('PUT', '/' + name).status_code in (201, 202)
    yield name
    for obj in func.request('GET', '/' + name,
                            params={'format': 'json'}).json():
        func.request('DELETE', '/%s/%s' % (name, obj['name']))
    func.request('DELETE', '/' + name)


def wait_for(store, tenant, predicate, timeout=20.0):
    deadline = time.time() + timeout
    while True:
        entry = store.get_table()[1].get(tenant)
        if entry is not None and predicate(entry):
            return entry
        if time.time() > deadline:
            pytest.fail('no matching policy for %s within %ss; last: %r'
                        % (tenant, timeout, entry))
        time.sleep(0.3)


def writes(tenant, container, n):
    for i in range(n):
        assert tenant.request('PUT', '/%s/o%d' % (container, i),
                              data=b'w' * 1024).status_code == 201


def reads(tenant, container, n):
    tenant.request('PUT', '/%s/r' % container, data=b'r' * 1024)
    for _ in range(n):
        assert tenant.request('GET', '/%s/r' % container).status_code == 200


def swift_mass(*args):
    return subprocess.run(['swift-mass', '--json'] + list(args), check=True,
                          stdout=subprocess.PIPE, text=True).stdout


def test_writer_is_classified_and_its_requests_tagged(func, bucket, store,
                                                      statsd):
    store.delete_pin(func.account)
    writes(func, bucket, 40)
    entry = wait_for(store, func.account, lambda e: e['class'] == 'write')
    assert (entry['ring'], entry['method']) == ('bulk', 'batch')
    assert 'read share 0.' in entry['reason']
    # the leader has published it; every proxy worker loads it within one
    # interval (1 s on the SAIO)

    def every_put_tagged():
        statsd.metrics(wait=0.5)
        writes(func, bucket, 3)
        seen = [m for m in statsd.metrics()
                if m.startswith('mass_queue.class.')]
        # every replica of every PUT carried the class to its object server
        return len(seen) >= 9 and set(seen) == {'mass_queue.class.write'}
    until(every_put_tagged, 15, 'every PUT tagged class write')
    shown = json.loads(swift_mass('explain', func.account))
    assert shown['policy']['class'] == 'write'
    assert shown['figures']['writes'] >= 40


def test_reader_becomes_read_dominated(func, bucket, store):
    reads(func, bucket, 300)
    entry = wait_for(store, func.account, lambda e: e['class'] == 'read')
    assert (entry['ring'], entry['method']) == ('fast', 'cache')


def test_pin_is_never_overridden(func, bucket, store):
    try:
        swift_mass('pin', func.account, '--class', 'mixed')
        wait_for(store, func.account,
                 lambda e: e['pinned'] and e['class'] == 'mixed')
        writes(func, bucket, 60)
        # the leader has seen the writes: its figures count them
        until(lambda: json.loads(swift_mass('explain', func.account))[
            'figures']['writes'] >= 60, 15, 'the writes counted')
        # and through the leader's next ticks (interval 1 s) it stays
        end = time.time() + 3
        while time.time() < end:
            entry = store.get_table()[1][func.account]
            assert entry['pinned'] and entry['class'] == 'mixed'
            time.sleep(0.2)
    finally:
        swift_mass('unpin', func.account)
    # unpinned, the tenant is the classifier's again
    writes(func, bucket, 30)
    wait_for(store, func.account, lambda e: not e['pinned'])


def new_account(admin, prefix):
    """A tenant of its own: an account ``admin`` (the reseller admin's
    Tenant) makes with its first PUT and uses with its token, so that
    nothing an earlier run left in its sysmeta or the policy table
    decides it."""
    tenant = copy.copy(admin)
    tenant.account = '%s-%s' % (prefix, uuid.uuid4().hex[:8])
    tenant.url = '%s/%s' % (admin.url.rsplit('/', 1)[0], tenant.account)
    return tenant


def test_decision_survives_loss_of_redis_and_a_reload(cluster, store):
    # a new account, quiet after its decision: a fixed one keeps whatever
    # entry earlier runs (on any profile) saved in its sysmeta
    tenant = new_account(Tenant('admin:admin', 'admin'), 'AUTH_durable')
    name = 'mass-durable'
    assert tenant.request('PUT', '/' + name).status_code in (201, 202)
    writes(tenant, name, 40)
    before = wait_for(store, tenant.account,
                      lambda e: e['class'] == 'write')
    # what is recalled below is the copy each account server holds
    until(lambda: {h.get(SYSMETA_POLICY.lower()) for h in account_servers(
        tenant.account, 'HEAD')} == {json.dumps(before, sort_keys=True)},
        20, 'the decision saved in the account\'s sysmeta')
    client = redis.Redis.from_url('redis://127.0.0.1:6379/0')
    # what a Redis restart without persistence leaves: nothing of Mass
    for key in client.scan_iter('mass:*'):
        client.delete(key)
    subprocess.run(['swift-init', 'proxy-server', 'reload-seamless'],
                   check=True, stdout=subprocess.DEVNULL)
    deadline = time.time() + 30
    while 'mass' not in requests.get(PROXY + '/info', timeout=5).json():
        assert time.time() < deadline
        time.sleep(0.2)
    # one request brings the tenant back; its class comes from sysmeta.
    # A worker of the old generation may still lead for a moment and may
    # have learnt the tenant's absence before the decision: such knowledge
    # lasts AccountSysmeta.negative_ttl (60 s) at most.
    deadline = time.time() + 75
    while True:
        tenant.request('HEAD', '/' + name)  # the tenant keeps coming
        after = store.get_table()[1].get(tenant.account)
        if after is not None:
            break
        assert time.time() < deadline, 'not recalled from sysmeta'
        time.sleep(1)
    fields = ('class', 'ring', 'method', 'since', 'reason')
    assert {k: after[k] for k in fields} == {k: before[k] for k in fields}
    for i in range(40):
        tenant.request('DELETE', '/%s/o%d' % (name, i))
    tenant.request('DELETE', '/' + name)


def test_requests_succeed_when_redis_is_down(cluster, tmp_path, func):
    conf = configparser.RawConfigParser()
    conf.optionxform = str
    conf.read(PROXY_CONF)
    conf['DEFAULT']['bind_port'] = '8097'
    conf['filter:mass']['redis_url'] = 'redis://127.0.0.1:1/0'
    path = tmp_path / 'proxy-server.conf'
    with open(path, 'w') as fp:
        conf.write(fp)
    proc = subprocess.Popen(['swift-proxy-server', str(path)],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = func.url.replace(':8080', ':8097')
    headers = {'X-Auth-Token': func.token}
    try:
        deadline = time.time() + 30
        while True:
            try:
                requests.get('http://127.0.0.1:8097/healthcheck', timeout=2)
                break
            except requests.ConnectionError:
                assert time.time() < deadline, 'proxy on 8097 did not start'
                time.sleep(0.2)
        name = 'mass-noredis-%s' % uuid.uuid4().hex[:8]
        started = time.time()
        assert requests.put(url + '/' + name, headers=headers,
                            timeout=10).status_code == 201
        for i in range(60):
            assert requests.put('%s/%s/o%d' % (url, name, i), data=b'x',
                                headers=headers,
                                timeout=10).status_code == 201
        for i in range(60):
            resp = requests.get('%s/%s/o%d' % (url, name, i),
                                headers=headers, timeout=10)
            assert resp.status_code == 200 and resp.content == b'x'
        elapsed = time.time() - started
        for i in range(60):
            requests.delete('%s/%s/o%d' % (url, name, i), headers=headers,
                            timeout=10)
        assert requests.delete(url + '/' + name, headers=headers,
                               timeout=10).status_code == 204
        # 121 requests; a store that hung each one would take minutes
        assert elapsed < 30, elapsed
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def account_servers(account, method, headers=None):
    """``method`` of ``account`` on each of its account servers, straight
    (no proxy: sysmeta as it is stored): their responses' headers."""
    ring = Ring('/etc/swift', ring_name='account')
    part, nodes = ring.get_nodes(account)
    answers = []
    for node in nodes:
        conn = http_connect(node['ip'], node['port'], node['device'], part,
                            method, '/' + account, headers=dict(
                                headers or {},
                                **{'X-Timestamp': Timestamp.now().internal}))
        resp = conn.getresponse()
        resp.read()
        assert resp.status // 100 == 2, (node, resp.status)
        answers.append(dict((k.lower(), v) for k, v in resp.getheaders()))
    return answers


def saved_class(headers):
    """The class of the policy entry an account server's headers hold,
    or None (none, or malformed)."""
    try:
        entry = json.loads(headers.get(SYSMETA_POLICY.lower()) or 'null')
    except ValueError:
        return None
    return entry.get('class') if isinstance(entry, dict) else None


def test_a_malformed_sysmeta_entry_stops_no_decision(cluster, store):
    """Item 11 of issue 25 on real servers: an account whose policy
    sysmeta is malformed (a JSON string, not an entry: what a hand edit
    or a bug could leave) raised out of the leader's tick when the leader
    recalled it, and no tenant was decided on, every interval.  Two new
    accounts (made by the reseller admin's first PUT): the malformed one
    reads, the other writes; both are decided on, and the malformed entry
    is replaced by the leader's."""
    admin = Tenant('admin:admin', 'admin')
    bad = new_account(admin, 'AUTH_malformed')
    good = new_account(admin, 'AUTH_wellformed')

    def request(tenant, method, path, **kwargs):
        resp = tenant.request(method, path, **kwargs)
        assert resp.status_code // 100 == 2, (method, tenant.account, path,
                                              resp)
        return resp

    for tenant in (bad, good):
        request(tenant, 'PUT', '/c')
    account_servers(bad.account, 'POST', {SYSMETA_POLICY: '"read"'})
    try:
        request(bad, 'PUT', '/c/r', data=b'r' * 1024)
        for _ in range(150):
            request(bad, 'GET', '/c/r')
        for i in range(40):
            request(good, 'PUT', '/c/o%d' % i, data=b'w' * 1024)
        assert wait_for(store, good.account, lambda e: e['class'] == 'write')
        assert wait_for(store, bad.account, lambda e: e['class'] == 'read')
        until(lambda: {saved_class(h) for h in account_servers(
            bad.account, 'HEAD')} == {'read'}, 20,
            'the malformed entry replaced by the leader\'s')
    finally:
        for tenant in (bad, good):
            for name in tenant.request('GET', '/c').text.split():
                request(tenant, 'DELETE', '/c/' + name)
            request(tenant, 'DELETE', '/c')
