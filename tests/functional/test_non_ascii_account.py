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
"""A tenant whose account is named beyond ASCII, cached through both
proxies with Mass.

Swift allows any UTF-8 account name; the reseller admin reaches one as it
reaches any account.  Once such a tenant's method reads generations (cache,
merge) the leader publishes it in the bumped set, which every object
server reloads before its heartbeat.  The set was decoded as ASCII: one
such tenant made every object server's heartbeat fail, so within seconds
no device was registered, every proxy validated every hit against the
object servers, and every object server bumped the writes of every tenant.

Here the tenant ``AUTH_café☃<suffix>`` is pinned to the cache method (the
policy table names a tenant as the proxies take it from the path: its
WSGI string), written through both proxies with Mass and the proxy
without it, and read through both with Mass, giving hits; every device
keeps a live registration from the pin on, for longer than a registration
lives; another tenant's generations stay trusted and its hits hits; and a
write of a tenant whose method reads no generations is still not bumped.
"""
import time
import urllib.parse
import uuid

from swift.common.swob import str_to_wsgi

from swift_mass.generations import object_key
from tests.functional.conftest import PROXY
from tests.functional.faults import REGISTRATION_LIFE, Registry, \
    RegistrationWatch
from tests.functional.test_cache import PROXIES, PROXY2, Client, admin, \
    generations_trusted, get_until_hit, pin, proxies_redis, \
    tenant_trusted, wait_for_method  # noqa: F401 (fixtures)
from tests.functional.test_never_stale import PROXY3
from tests.functional.waiting import until

# beyond ASCII, within Latin-1 and beyond it
ACCENTED = 'AUTH_caf\u00e9\u2603'
OBJECTS = ('o-ascii', 'o-\u00f8\u55a0')


class BeyondAscii(Client):
    """The admin's requests to an account named beyond ASCII: the URL
    names it in UTF-8, and ``account`` is its name as the proxies, the
    policy table and the generations know it (the path's WSGI string)."""

    def __init__(self, admin, native, container):  # noqa: F811
        super(BeyondAscii, self).__init__(admin, str_to_wsgi(native),
                                          container)
        self.native = native

    def url(self, proxy, name=None):
        path = '%s/v1/%s/%s' % (proxy, urllib.parse.quote(self.native),
                                self.container)
        return path + '/' + name if name else path


def remove(client):
    listing = client.request('GET', PROXY, params={'format': 'json'})
    for obj in listing.json() if listing.status_code == 200 else []:
        client.request('DELETE', PROXY, obj['name'])
    client.request('DELETE', PROXY)


def test_a_tenant_named_beyond_ascii_is_cached_and_unregisters_nothing(
        admin, store):  # noqa: F811
    generations_trusted(store)
    registry = Registry()
    redis_client, prefix = proxies_redis()
    suffix = uuid.uuid4().hex[:8]
    accented = BeyondAscii(admin, ACCENTED + suffix, 'c')
    other = Client(admin, 'AUTH_mcother' + suffix, 'c')
    untaxed = Client(admin, 'AUTH_mcuntaxed' + suffix, 'c')
    clients = (accented, other, untaxed)
    for c in clients:
        assert c.request('PUT', PROXY).status_code in (201, 202)
    try:
        pin(other.account, 'cache')
        pin(untaxed.account, 'none')
        wait_for_method(other, 'cache')
        wait_for_method(untaxed, 'none')
        assert other.request('PUT', PROXY2, 'before',
                             data=b'b').status_code == 201
        for proxy in PROXIES:
            get_until_hit(other, proxy, 'before')
        with RegistrationWatch(registry) as watch:
            # as an operator types it: swift-mass keys it as the proxies do
            pin(accented.native, 'cache')
            until(lambda: redis_client.hget(prefix + 'bumps',
                                            accented.account), 30,
                  'the leader publishing %r as bumped' % accented.account)
            entered = time.time()
            # both proxies apply cache to it, and every object server
            # bumps its writes (test_cache.tenant_trusted)
            wait_for_method(accented, 'cache')
            for name in OBJECTS:
                for body, writer in ((b'one', PROXY2), (b'two', PROXY3),
                                     (b'three', PROXY)):
                    assert accented.request('PUT', writer, name, data=body
                                            ).status_code == 201
                    for proxy in PROXIES:
                        assert get_until_hit(accented, proxy,
                                             name).content == body
            assert other.request('PUT', PROXY3, 'after',
                                 data=b'a').status_code == 201
            for proxy in PROXIES:
                assert get_until_hit(other, proxy, 'before').content == b'b'
                assert get_until_hit(other, proxy, 'after').content == b'a'
            # longer than a registration lives since the tenant entered
            time.sleep(max(0.0, entered + REGISTRATION_LIFE + 2 -
                           time.time()))
        print('%s (%r in the policy table) cached through %s; '
              'registrations of %d devices sampled %d times, %d with one '
              'unregistered' % (accented.native, accented.account,
                                ' and '.join(PROXIES), len(registry.devices),
                                watch.samples, len(watch.gaps)))
        assert watch.errors == [], watch.errors[:3]
        assert watch.samples > 0
        assert watch.gaps == [], watch.gaps[:5]
        # the other tenant's hits are still trusted ones, not validated
        # against the object servers
        tenant_trusted(other.account, within=5)
        # no write tax: a tenant whose method reads no generations has its
        # writes bumped by no object server
        assert untaxed.request('PUT', PROXY3, 'untaxed',
                               data=b'u').status_code == 201
        assert not redis_client.exists(prefix + 'g:' + object_key(
            untaxed.account, untaxed.container, 'untaxed'))
    finally:
        for c in clients:
            store.delete_pin(c.account)
            remove(c)
