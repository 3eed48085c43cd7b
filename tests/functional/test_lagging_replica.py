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
"""A real lagging replica meets a fence that is old: an object server is
stopped while v2 is written (a quorum of two primaries and a handoff take
it, as Swift does), then started again still holding v1, and no
replicator runs on the SAIO, so it keeps v1 throughout.  Then the fence
the cache knows for the object goes old, the two ways the audit found:

* the tenant leaves the cache (a pin to ``none``) before v2 and comes back
  after it: v2 was not recorded while it was out;
* Redis restarts from a snapshot taken before v2: v2's record is lost.

A fill that trusted the old fence read one replica, and took v1 from the
lagging one a third of the time, for every proxy to serve as a hit.  Each
test reads every object three times through both proxies with Mass and
requires v2 every time, and a hit; it prints how many objects lag (a
direct GET of the stopped server's device still answers v1 after the
reads), so a pass is never a run that did not meet the fault."""
import contextlib
import subprocess
import uuid

import pytest

from swift.common import direct_client
from swift.common.storage_policy import POLICIES

from tests.functional.test_cache import PROXIES, PROXY, PROXY2, Client, \
    admin, generations_trusted, pin, proxies_redis, \
    tenant_trusted, wait_for_method  # noqa: F401 (fixtures)
from tests.functional.test_never_stale import PROXY3, \
    restart_from_snapshot
from tests.functional.waiting import until

# the object server stopped during v2's PUTs (tools/saio: sdb4 on
# 127.0.0.4:6240)
LAGGING_SERVER = 4
LAGGING_PORT = 6240
NAMES = ['o%02d' % i for i in range(12)]


def object_server(command, number=LAGGING_SERVER):
    subprocess.run(['swift-init', 'object-server.%d' % number, command],
                   check=True, stdout=subprocess.DEVNULL)


@contextlib.contextmanager
def one_object_server_down(number=LAGGING_SERVER):
    object_server('stop', number)
    try:
        yield
    finally:
        object_server('start', number)


def tenant_released(account, within=30.0):
    """Until the object servers stopped bumping the account's writes: it
    is out of the published set, and every live process of every device
    registered that set's version."""
    client, prefix = proxies_redis()

    def applied():
        if client.hget(prefix + 'bumps', account) is not None:
            return False
        version = int(client.get(prefix + 'bumps:version') or 0)
        now = int(client.time()[0] * 1000)
        for key in client.scan_iter(prefix + 'bumping:*'):
            live = [value.split() for value in client.hvals(key)]
            if any(int(v) < version for v, until_ms in live
                   if int(until_ms) >= now):
                return False
        return True
    until(applied, within, 'the object servers stopped bumping %s'
          % account)


class Lagging(object):
    """Twelve objects of a new account, written v1 through a proxy with
    Mass; :meth:`write_v2` writes v2 while object server 4 is down."""

    def __init__(self, admin, store):  # noqa: F811
        self.store = store
        self.account = 'AUTH_lag%s' % uuid.uuid4().hex[:8]
        self.client = Client(admin, self.account, 'c')
        assert self.client.request('PUT', PROXY).status_code in (201, 202)
        policy = POLICIES.get_by_name(self.client.request(
            'HEAD', PROXY).headers['X-Storage-Policy'])
        self.policy_index = int(policy)
        self.ring = POLICIES.get_object_ring(self.policy_index, '/etc/swift')

    def write(self, body, proxy=PROXY2):
        for name in NAMES:
            resp = self.client.request('PUT', proxy, name, data=body)
            assert resp.status_code == 201, (name, resp.status_code)

    def cache_v1(self):
        """v1 written and cached: each object read until a hit through
        both proxies, so its fence is recorded (and sealed).  Written
        through the proxy without Mass, the one that never sees the
        stopped server (a proxy that did skips it for a while: Swift's
        error limiting), so every primary holds v1."""
        self.write(b'v1', PROXY3)
        for name in NAMES:
            for proxy in PROXIES:
                for _ in range(5):
                    resp = self.client.request('GET', proxy, name)
                    assert resp.content == b'v1'
                    if resp.headers.get('X-Mass-Cache') == 'hit':
                        break
                else:
                    pytest.fail('no hit for %s through %s' % (name, proxy))

    def write_v2(self):
        with one_object_server_down():
            self.write(b'v2')

    def post_v2(self):
        """v2 is v1's data with the metadata of a POST the stopped server
        missed."""
        self.posted = True
        with one_object_server_down():
            for name in NAMES:
                resp = self.client.request('POST', PROXY2, name, headers={
                    'X-Object-Meta-V': '2'})
                assert resp.status_code == 202, (name, resp.status_code)

    posted = False

    def is_v2(self, resp):
        if self.posted:
            return resp.content == b'v1' and \
                resp.headers.get('X-Object-Meta-V') == '2'
        return resp.content == b'v2'

    def lagging_names(self):
        """The objects whose replica on the stopped server still holds
        v1 (a direct GET of that device)."""
        lagging = []
        for name in NAMES:
            part, nodes = self.ring.get_nodes(self.account, 'c', name)
            for node in nodes:
                if node['port'] != LAGGING_PORT:
                    continue
                headers, body = direct_client.direct_get_object(
                    node, part, self.account, 'c', name, headers={
                        'X-Backend-Storage-Policy-Index':
                        str(self.policy_index)})
                if body == b'v1' and \
                        headers.get('X-Object-Meta-V') != '2':
                    lagging.append(name)
        return lagging

    def read_everywhere(self, label):
        """Three reads of every object through each proxy with Mass: each
        must be v2, and some must be hits.  A miss that reaches the
        lagging replica is answered as Swift would answer it, so only a
        v2 made by a PUT is required of every read; a POST's v2 only of
        hits (Swift's newest read itself may keep the replica that
        missed a POST: swift_mass.proxy.methods.replicas)."""
        lagging = self.lagging_names()
        assert lagging, 'no replica lags: the fault did not happen'
        served = [(name, proxy, resp.status_code, self.is_v2(resp),
                   resp.headers.get('X-Mass-Cache'))
                  for _ in range(3) for name in NAMES for proxy in PROXIES
                  for resp in [self.client.request('GET', proxy, name)]]
        stale = [s for s in served if not s[3] and (
            s[4] == 'hit' or not self.posted)]
        hits = sum(1 for s in served if s[4] == 'hit')
        still = self.lagging_names()
        print('%s: %d objects of %d lag (v1 on 127.0.0.4\'s device, still %d '
              'after the reads); %d reads through %s, %d hits, %d stale '
              '(%d of them hits)'
              % (label, len(lagging), len(NAMES), len(still), len(served),
                 ' and '.join(PROXIES), hits, len(stale),
                 sum(1 for s in stale if s[4] == 'hit')))
        assert stale == [], stale[:5]
        assert hits > 0
        assert still == lagging

    def clean(self):
        self.store.delete_pin(self.account)
        for name in NAMES:
            self.client.request('DELETE', PROXY, name)
        self.client.request('DELETE', PROXY)


@pytest.fixture
def lagging(admin, store):  # noqa: F811
    generations_trusted(store)
    objects = Lagging(admin, store)
    yield objects
    objects.clean()
    generations_trusted(store)


def out_of_the_cache_meanwhile(lagging, meanwhile, label):
    """v1 cached; the tenant leaves the cache (a pin to ``none``),
    ``meanwhile()`` writes v2 while no object server bumps its writes, and
    it comes back; then every object is read everywhere."""
    pin(lagging.account, 'cache')
    wait_for_method(lagging.client, 'cache')
    lagging.cache_v1()
    pin(lagging.account, 'none')
    wait_for_method(lagging.client, 'none')
    tenant_released(lagging.account)
    meanwhile()
    generations_trusted(lagging.store)
    pin(lagging.account, 'cache')
    wait_for_method(lagging.client, 'cache')
    lagging.read_everywhere(label)


def test_a_write_made_while_the_tenant_was_out_of_the_cache_is_seen(
        lagging):
    """Audit D1: the fence of the earlier membership was trusted after
    re-entry."""
    out_of_the_cache_meanwhile(lagging, lagging.write_v2, 're-entry')


def test_a_write_whose_record_redis_lost_is_seen(lagging):
    """Audit D2: Redis restarted from a snapshot taken before v2 brought
    v1's fence back, and only the epoch was replaced."""
    pin(lagging.account, 'cache')
    wait_for_method(lagging.client, 'cache')
    lagging.cache_v1()
    restart_from_snapshot(lagging.write_v2)
    generations_trusted(lagging.store)
    tenant_trusted(lagging.account)
    lagging.read_everywhere('Redis restarted from a snapshot')


def test_a_post_made_while_the_tenant_was_out_of_the_cache_is_seen(
        lagging):
    """A replica that missed a POST keeps v1's data with v1's metadata:
    Swift's newest read orders replicas by their data's time alone, and
    kept that replica as often as another, so the fill cached the
    metadata the POST replaced, for every proxy to serve as a hit."""
    out_of_the_cache_meanwhile(lagging, lagging.post_v2,
                               'a POST made while out')
