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
"""What is particular to the memcache store."""
from swift_mass.control.stores.memcache_store import MemcacheStore


def test_memcache_lease_is_taken_by_one_of_many(memcache, memcache_prefixes):
    prefix = memcache_prefixes()
    proxies = [MemcacheStore(memcache, prefix) for _ in range(5)]
    taken = [p.acquire_lease('proxy-%d' % i, 10000)
             for i, p in enumerate(proxies)]
    assert taken == [True, False, False, False, False]
    assert proxies[4].lease_holder() == 'proxy-0'
