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
"""A ring replaced in place while a cached tenant reads.

An object ring file overwritten in place with a broken (truncated) one is
what a process reading it meets while a copy over it is under way, or
after a bad push.  Swift's ``Ring`` reloads a ring whose file changed every
15 s, raising when it cannot load it and keeping the old one in between.
Every object server's ``mass_queue`` reads every object ring at its
heartbeat (the devices it registers as bumping generations), every proxy's
cache at its coverage lookups (the devices a bump must cover).  One such
exception ended an object server's heartbeat for good (its devices
unregistered within seconds, and stayed so after the ring was good again:
every proxy validated every hit against the object servers, and the
server bumped the writes of every tenant), and on a proxy turned a cache
read into a 500.

The ring broken is the ``fast`` policy's, for 35 s (two reloads of every
process); the tenant reads and writes objects of a ``standard`` container,
which Swift serves from its own, unbroken, ring throughout.  Every device
must keep a live registration meanwhile, every object server's heartbeat
must renew its registrations once the ring is good again, the proxies
serve hits again, and no read fails (no 500) or is stale.
"""
import time

from tests.functional.conftest import PROXY
from tests.functional.faults import BROKEN_FOR, FAST_RING, \
    REGISTRATION_LIFE, Registry, RegistrationWatch, ring_broken_in_place
from tests.functional.test_cache import PROXY2, Load, admin, client, \
    pin, wait_for_method  # noqa: F401 (fixtures)
from tests.functional.test_redis_partition import wait_hits_through_both

NAMES = ['rr-%02d' % i for i in range(24)]


def test_a_ring_replaced_in_place_stops_no_heartbeat_and_fails_no_read(
        client):  # noqa: F811
    pin(client.account, 'cache')
    wait_for_method(client, 'cache')
    assert client.request('HEAD', PROXY).headers[
        'X-Storage-Policy'] == 'standard'
    registry = Registry()
    assert registry.unregistered() == []
    load = Load(client, NAMES, write_via=(PROXY2,), read_via=(PROXY, PROXY2))
    load.seed()
    load.start()
    try:
        wait_hits_through_both(load, 50, 60)
        before = dict(load.hits)
        with RegistrationWatch(registry) as watch:
            with ring_broken_in_place(FAST_RING):
                load.in_outage = True
                time.sleep(BROKEN_FOR)
            load.in_outage = False
            # every heartbeat from now on reads the good ring
            renewed = registry.renewed(2 * REGISTRATION_LIFE)
        if renewed:
            wait_hits_through_both(load, 50, 60)
    finally:
        load.in_outage = False
        load.finish()
    print('%s broken in place for %ds: %d reads meanwhile, hits through '
          '%s and %s %r; hits in all %r (before %r); registrations sampled '
          '%d times, %d with a device unregistered; every device\'s '
          'registration renewed once the ring was back: %s; %d stale, '
          '%d wrong, %d failed %r' % (
              FAST_RING, BROKEN_FOR, load.outage_reads, PROXY, PROXY2,
              load.outage_hits, load.hits, before, watch.samples,
              len(watch.gaps), renewed, len(load.stale), len(load.wrong),
              len(load.failed), sorted(set(
                  # reads' (name, proxy, floor, ceiling, status, ...),
                  # writes' (kind, name, status)
                  f[4] if len(f) > 4 else f[2] for f in load.failed))))
    assert watch.errors == [], watch.errors[:3]
    assert watch.gaps == [], watch.gaps[:5]
    assert renewed
    assert load.outage_reads > 0
    assert load.stale == [] and load.wrong == [], load.report()
    # no 500 (nor any other failure) for a tenant whose ring was good
    assert load.failed == [], load.failed[:5]
