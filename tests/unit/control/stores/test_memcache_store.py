"""What is particular to the memcache store."""
from swift_mass.control.stores.memcache_store import MemcacheStore


def test_memcache_lease_is_taken_by_one_of_many(memcache, memcache_prefixes):
    prefix = memcache_prefixes()
    proxies = [MemcacheStore(memcache, prefix) for _ in range(5)]
    taken = [p.acquire_lease('proxy-%d' % i, 10000)
             for i, p in enumerate(proxies)]
    assert taken == [True, False, False, False, False]
    assert proxies[4].lease_holder() == 'proxy-0'
