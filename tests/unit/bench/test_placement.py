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
"""The ``placed`` mode: Swift without Mass, each tenant's containers on the
policy ``static`` routes it to, set as an operator sets it."""
import pytest

from swift.common.storage_policy import StoragePolicy, \
    StoragePolicyCollection

from mass_bench import clients, driver, placement
from swift_mass import conf as mass_conf
from swift_mass.control import substores


@pytest.fixture
def policies(monkeypatch):
    collection = StoragePolicyCollection([
        StoragePolicy(0, 'standard', is_default=True),
        StoragePolicy(1, 'fast'), StoragePolicy(2, 'bulk')])
    monkeypatch.setattr(mass_conf, 'POLICIES', collection)
    monkeypatch.setattr(substores, 'POLICIES', collection)
    return collection


def proxy_conf(tmp_path, routing='configured'):
    path = tmp_path / 'proxy-server.conf'
    path.write_text('[filter:mass]\nread_substore = fast\n'
                    'write_substore = bulk\nswift_dir = %s\n'
                    'substore_routing = %s\n' % (tmp_path, routing))
    return str(path)


TENANTS = ['photos:web:web=A', 'dbdump:dump:dump=B', 'backup:job:job=C']


def test_each_class_on_the_substore_a_pin_gets(tmp_path, policies):
    found = placement.class_substores(proxy_conf(tmp_path))
    assert found == {'read': 'fast', 'write': 'bulk', 'mixed': ''}
    tenants = [clients.Tenant.parse(t) for t in TENANTS]
    assert placement.placed_policies(tenants, found) == {
        'photos': 'fast', 'dbdump': '', 'backup': 'bulk'}


def test_a_workloads_own_policy_wins(tmp_path, policies):
    tenants = [clients.Tenant.parse('photos:web:web=A,policy=standard')]
    assert placement.placed_policies(
        tenants, {'read': 'fast'}) == {'photos': 'standard'}


def test_measured_routing_keeps_only_substores_measured_faster(
        tmp_path, policies):
    # no device measured (no classes file): the mapping as configured, as
    # the leader uses it
    found = placement.class_substores(proxy_conf(tmp_path, 'measured'))
    assert found == {'read': 'fast', 'write': 'bulk', 'mixed': ''}


class Recorder(object):
    """tools/saio and the proxy, as the bench calls them."""

    def __init__(self, tmp_path):
        self.calls = tmp_path / 'calls'
        self.saio = tmp_path / 'saio'
        self.saio.write_text('#!/bin/sh\necho "$@" >> %s\n' % self.calls)
        self.saio.chmod(0o755)


def test_placed_runs_without_mass_and_creates_containers_where_placed(
        tmp_path, policies, monkeypatch):
    recorder = Recorder(tmp_path)
    tenants = [clients.Tenant.parse(t) for t in TENANTS]
    for tenant in tenants:
        tenant.authenticate = lambda auth_url: None
        tenant.token = 'tk'
        tenant.url = 'http://127.0.0.1:8080/v1/AUTH_%s' % tenant.label
    created = []

    class Connection(object):
        def __init__(self, url):
            self.url = url

        def request(self, method, path, headers, body=None):
            created.append((method, path, headers.get('X-Storage-Policy')))
            return 201, {'x-storage-policy': 'x'}, b''
    monkeypatch.setattr(clients, 'Connection', Connection)
    progress = []
    runner = driver.Bench(tenants, 'http://p/auth/v1.0',
                          saio=str(recorder.saio), settle=0,
                          conf=proxy_conf(tmp_path),
                          progress=lambda *a, **k: progress.append(a[0]))
    for mode in ('placed', 'default'):
        runner.switch(mode)
        for tenant in tenants:
            # writers only: no starting objects
            runner.prepare(tenant, tenant.workload.with_options(
                mix=(('PUT', 1.0),)), 'c-%s' % mode)
    assert recorder.calls.read_text().splitlines() == ['pipeline without']
    puts = [c for c in created if c[0] == 'PUT']
    assert puts == [('PUT', '/c-placed', 'fast'), ('PUT', '/c-placed', None),
                    ('PUT', '/c-placed', 'bulk'),
                    ('PUT', '/c-default', None), ('PUT', '/c-default', None),
                    ('PUT', '/c-default', None)]
    assert progress[0] == \
        'placed: backup on bulk, dbdump on the default policy, photos on fast'
    assert not runner.mass_in_pipeline()
