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
"""The slides' workloads on the SAIO: Mass classifies them, follows a
tenant that changes, keeps its classes over a reload, and goes on through a
Redis outage without failing a request.

Each run uses fresh accounts (reached with the reseller admin's token), so
nothing an earlier run decided can make a test pass."""
import os
import subprocess
import threading
import time
import uuid

import pytest
import redis
import requests

from tests.functional.conftest import PROXY, SAIO, StatsdListener, Tenant
from tests.functional.waiting import until
CLASSIFY_WITHIN = 30  # s: window 20 s + a few intervals (tools/saio.d)

WORKLOADS = {        # read share, object size: the slides' A, B, C
    'A': (1.0, 512 * 1024),
    'B': (0.5, 64 * 1024),
    'C': (0.0, 8 * 1024),
}


class Workload(threading.Thread):
    """One tenant's clients: GETs of seeded objects and PUTs, in a loop,
    counting every request that did not get the answer Swift gives."""

    def __init__(self, admin, account, read_share, size):
        super().__init__(daemon=True)
        self.url = admin.url.rsplit('/', 1)[0] + '/' + account
        self.headers = {'X-Auth-Token': admin.token}
        self.read_share, self.size = read_share, size
        self.container = 'wl'
        self.stopping = threading.Event()
        self.done = self.failed = 0
        self.failures = []
        self.session = requests.Session()

    def call(self, method, path, **kwargs):
        try:
            resp = self.session.request(method, self.url + path,
                                        headers=self.headers, timeout=30,
                                        **kwargs)
            ok = resp.status_code in (200, 201, 202, 204)
            if not ok:
                self.failures.append(('status', '%s %s: %s' % (
                    method, path, resp.status_code)))
        except requests.ConnectionError as err:
            ok = False
            self.failures.append(('connection', '%s %s: %s' % (
                method, path, err)))
            self.session = requests.Session()
        except requests.RequestException as err:
            ok = False
            self.failures.append(('other', '%s %s: %s' % (method, path,
                                                          err)))
        self.done += 1
        self.failed += not ok
        return ok

    def seed(self):
        assert self.call('PUT', '/' + self.container)
        self.body = os.urandom(self.size)
        for i in range(3):
            assert self.call('PUT', '/%s/seed%d' % (self.container, i),
                             data=self.body)

    def run(self):
        credit, n = 0.0, 0
        while not self.stopping.is_set():
            n += 1
            # exactly the read share asked for, evenly spread
            credit += self.read_share
            if credit >= 1.0:
                credit -= 1.0
                self.call('GET', '/%s/seed%d' % (self.container, n % 3))
            else:
                self.call('PUT', '/%s/w%d' % (self.container, n % 20),
                          data=self.body)

    def stop(self):
        self.stopping.set()
        self.join(timeout=60)


@pytest.fixture(scope='module')
def admin(cluster):
    return Tenant('admin:admin', 'admin')


def classes(store, accounts):
    table = store.get_table()[1]
    return {a: (table.get(a) or {}).get('class') for a in accounts}


def wait_for_classes(store, wanted, within):
    deadline = time.time() + within
    while True:
        seen = classes(store, wanted)
        if seen == wanted:
            return time.time()
        if time.time() > deadline:
            pytest.fail('classes %r, wanted %r within %ss'
                        % (seen, wanted, within))
        time.sleep(0.5)


def start(admin, name, account, read_share=None, size=None):
    share, default_size = WORKLOADS[name]
    load = Workload(admin, account,
                    share if read_share is None else read_share,
                    size or default_size)
    load.seed()
    load.start()
    return load


def test_slides_workloads_are_classified_and_followed(admin, store):
    run = uuid.uuid4().hex[:8]
    accounts = {n: 'AUTH_wl%s%s' % (run, n) for n in WORKLOADS}
    loads = {n: start(admin, n, a) for n, a in accounts.items()}
    all_loads = list(loads.values())
    try:
        began = time.time()
        when = wait_for_classes(store, {
            accounts['A']: 'read', accounts['B']: 'mixed',
            accounts['C']: 'write'}, CLASSIFY_WITHIN)
        print('A, B, C classified in %.1f s' % (when - began))

        # tenant A switches from reads to writes
        loads['A'].stop()
        loads['A'] = start(admin, 'A', accounts['A'], read_share=0.0,
                           size=8 * 1024)
        all_loads.append(loads['A'])
        began = time.time()
        when = wait_for_classes(store, {accounts['A']: 'write'},
                                CLASSIFY_WITHIN + 20)
        print('A re-classified write in %.1f s' % (when - began))

        # a graceful reload keeps every class
        before = classes(store, accounts.values())
        old_leader = store.lease_holder()
        subprocess.run(['swift-init', 'proxy-server', 'reload'], check=True,
                       stdout=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                if 'mass' in requests.get(PROXY + '/info', timeout=2).json():
                    break
            except requests.RequestException:
                pass
            assert time.time() < deadline
            time.sleep(0.2)
        # the new workers run the control loop: one of them leads
        until(lambda: store.lease_holder() not in (None, old_leader), 30,
              'a worker of the reloaded proxy leads')
        assert classes(store, accounts.values()) == before
    finally:
        for load in loads.values():
            load.stop()
    # A graceful reload refuses connections for a moment and closes idle
    # keep-alive ones (docs/install.md); every request that reached a proxy
    # got the answer Swift gives.
    for load in all_loads:
        answered_wrong = [f for kind, f in load.failures
                          if kind != 'connection']
        assert answered_wrong == [], answered_wrong[:5]


def test_redis_outage_fails_no_request_and_classification_goes_on(
        admin, store):
    run = uuid.uuid4().hex[:8]
    account = 'AUTH_wl%sB' % run
    load = start(admin, 'B', account)
    all_loads = [load]
    listener = StatsdListener()
    try:
        wait_for_classes(store, {account: 'mixed'}, CLASSIFY_WITHIN)
        client = redis.Redis(host='127.0.0.1', port=6379)
        client.shutdown(nosave=True)
        down_at = time.time()
        with pytest.raises(redis.ConnectionError):
            client.ping()
        # the tenant turns to reads while Redis is down: the proxies
        # follow it from the figures they still share (memcache) or hold
        load.stop()
        load = start(admin, 'B', account, read_share=1.0)
        all_loads.append(load)
        listener.metrics(wait=0.2, limit=1.0)
        deadline = time.time() + CLASSIFY_WITHIN + 20
        tagged = []
        while 'mass_queue.class.read' not in tagged:
            assert time.time() < deadline, \
                'no request tagged read while Redis was down: %r' % (
                    sorted(set(tagged)))
            tagged = listener.metrics(wait=1.0, limit=2.0)
        print('re-classified without Redis in %.1f s'
              % (time.time() - down_at))
    finally:
        subprocess.run([SAIO, 'start'], check=True,
                       stdout=subprocess.DEVNULL)
        listener.close()
    try:
        # Redis is back (empty): the proxies share through it again
        deadline = time.time() + 30
        while classes(store, [account])[account] != 'read':
            assert time.time() < deadline, 'sharing did not resume'
            time.sleep(0.5)
        assert store.lease_holder() is not None
    finally:
        load.stop()
    for load in all_loads:
        assert load.done > 0 and load.failed == 0, load.failures[:5]
