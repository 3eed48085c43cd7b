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
"""Nothing before authorisation, on the SAIO: an anonymous flood of made-up
account and object names through a proxy with Mass creates no Redis key,
costs no account HEAD Swift would not have made itself and leaves no
per-tenant entry; one authorised request of a made-up account, the
control, shows each of those checks would see it."""
import glob
import os
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import requests

from swift_mass.generations import object_key
from tests.functional.conftest import PROXY
from tests.functional.test_cache import PROXY2, admin, client, \
    get_until_hit  # noqa: F401
from tests.functional.waiting import until

FLOOD = 10000
METHODS = ('GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'OPTIONS')
STORAGE_LOGS = '/var/log/swift/storage*.log'
# an account server's access log line: method, path, ..., transaction id
ACCOUNT_HEAD = re.compile(
    r'account-server: .*"HEAD /[^/]+/\d+/(AUTH_fl[0-9a-f]+)" \d+ \S+ '
    r'"[^"]*" "([^"]+)"')


def log_offsets():
    return {path: os.path.getsize(path)
            for path in glob.glob(STORAGE_LOGS)}


def account_heads(offsets):
    """(account, transaction id) of every account HEAD of a made-up account
    the account servers logged since ``offsets``."""
    heads = []
    for path in glob.glob(STORAGE_LOGS):
        with open(path, errors='replace') as log:
            log.seek(offsets.get(path, 0))
            for line in log:
                match = ACCOUNT_HEAD.search(line)
                if match:
                    heads.append(match.groups())
    return heads


class Metrics(threading.Thread):
    """Every statsd counter name the proxies send while it runs (a flood
    sends more than a socket buffer holds)."""

    def __init__(self, statsd):
        super(Metrics, self).__init__(daemon=True)
        self.statsd = statsd
        self.names = []
        self.running = True

    def run(self):
        while self.running:
            self.names += self.statsd.metrics(wait=0.3, limit=1.0)

    def stop(self):
        self.running = False
        self.join()
        return self.names


def made_up_tenants(store, prefix='AUTH_fl'):
    since = int(time.time()) - 600
    return {tenant for tenant in store.read_counts(since)
            if tenant.startswith(prefix)}


def test_an_anonymous_flood_of_made_up_names_leaves_nothing(
        client, store, statsd):  # noqa: F811
    # the cache tenant's reads are served from the cache (generations
    # trusted), so a read that reached it would show; 8081 writes
    # plaintext, which 8080 may cache
    assert client.request('PUT', PROXY2, 'seen',
                          data=b'x').status_code == 201
    assert get_until_hit(client, PROXY, 'seen').content == b'x'
    names = [uuid.uuid4().hex for _ in range(FLOOD // 2)]
    requests_ = []
    for i, name in enumerate(names):
        method = METHODS[i % len(METHODS)]
        # a made-up account, and a made-up object of a cache tenant
        requests_.append((method, '/v1/AUTH_fl%s/c/%s' % (name, name)))
        requests_.append((method, '/v1/%s/c/%s' % (client.account, name)))
    redis = store.client
    keys_before = set(redis.scan_iter(count=1000))
    tenants_before = made_up_tenants(store)
    offsets = log_offsets()
    statsd.metrics(wait=0.5)  # drain
    metrics = Metrics(statsd)
    metrics.start()
    local = threading.local()

    def send(request):
        method, path = request
        if not hasattr(local, 'session'):
            local.session = requests.Session()
        resp = local.session.request(
            method, PROXY + path, timeout=30,
            data=b'x' if method in ('PUT', 'POST') else None)
        return resp.status_code, resp.headers.get('X-Trans-Id')

    started = time.time()
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, requests_))
    took = time.time() - started
    statuses = {status for status, _ in answers}
    assert statuses <= {200, 401}, statuses
    flood_txids = {txid for _, txid in answers}
    time.sleep(4)  # flushes (interval 1 s) and a leader's turn
    names_seen = metrics.stop()

    new_keys = set(redis.scan_iter(count=1000)) - keys_before
    named = [k for k in new_keys  # the store's client decodes: str keys
             if 'AUTH_fl' in k or client.account in k]
    # (In this pipeline staticweb sends anonymous reads on as its own
    # subrequests, which the cache never serves; the unit tests show the
    # cache of a pipeline without it creates none either.)
    prefix = store.prefix + 'cache:g:'
    generations = sum(redis.pipeline().exists(*[
        prefix + object_key(client.account, 'c', name)
        for name in names[i:i + 500]]).execute()[0]
        for i in range(0, len(names), 500))
    heads = account_heads(offsets)
    others = [head for head in heads if head[1] not in flood_txids]
    lookups = names_seen.count('mass.urgent.lookup')
    tenants = made_up_tenants(store) - tenants_before
    print('%d anonymous requests in %.0f s: %d new Redis keys (%d naming a '
          'flooded account), %d generations of flooded objects, %d '
          'per-tenant counts, %d urgent lookups; %d account HEADs, all in '
          'the flood\'s own transactions (Swift\'s own) but %d' % (
              len(answers), took, len(new_keys), len(named), generations,
              len(tenants), lookups, len(heads), len(others)))
    assert (named, generations, tenants, lookups, others) == (
        [], 0, set(), 0, [])

    # The control: one authorised read of a made-up account is counted,
    # its tenant looked up, and its count reaches Redis.
    control = 'AUTH_fl%s' % uuid.uuid4().hex
    offsets = log_offsets()
    metrics = Metrics(statsd)
    metrics.start()
    resp = requests.get('%s/v1/%s/c/o' % (PROXY, control), headers={
        'X-Auth-Token': client.token}, timeout=30)
    assert resp.status_code == 404
    until(lambda: control in made_up_tenants(store), 20,
          'the control request counted in Redis')
    assert 'mass.urgent.lookup' in metrics.stop()
    until(lambda: [head for head in account_heads(offsets)
                   if head[0] == control and
                   head[1] != resp.headers['X-Trans-Id']], 20,
          'a lookup of the control account by the control loop')
