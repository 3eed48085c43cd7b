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
"""What is particular to the worker-local store."""
from swift_mass.control.stores.local import LocalStore
from tests.unit.control.stores.helpers import B0, B2
from tests.unit.helpers import Clock


def test_local_lease_renewal_extends_it():
    clock = Clock()
    store = LocalStore(clock)
    assert store.acquire_lease('proxy-1', 1000)
    clock.now += 0.8
    assert store.acquire_lease('proxy-1', 1000)
    clock.now += 0.8
    assert store.lease_holder() == 'proxy-1'
    assert not store.acquire_lease('proxy-2', 1000)
    clock.now += 0.3
    assert store.acquire_lease('proxy-2', 1000)


def test_local_store_forgets_expired_buckets():
    clock = Clock()
    store = LocalStore(clock)
    store.add_counts('AUTH_a', B0, {'ops.GET': 1}, ttl=10)
    clock.now += 11
    store.add_counts('AUTH_a', B2, {'ops.GET': 1}, ttl=10)
    assert list(store._buckets) == [B2]
