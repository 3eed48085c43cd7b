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
"""The merge method on the SAIO: identical concurrent reads collapse into
one backend request per proxy worker, small PUTs are written through into
the cache, and neither ever serves an old body (a fresh account, pinned to
mixed/merge, through both proxies; see test_cache for the setup)."""
import concurrent.futures
import contextlib
import os
import signal
import subprocess
import time
import uuid

import pytest
import requests

from swift.common.utils import readconf

from tests.functional.waiting import until
from tests.functional.conftest import PROXY_CONF
from tests.functional.test_cache import PROXIES, PROXY, PROXY2, Client, \
    Load, admin, tenant_trusted  # noqa: F401 (admin is a fixture)


def wait_for_merge(client, within=20.0):
    """Until both proxies apply merge to the account (its reads carry
    X-Mass-Cache, as the cache's do)."""
    name = 'probe-%s' % uuid.uuid4().hex[:6]
    assert client.request('PUT', PROXY2, name, data=b'p').status_code == 201
    deadline = time.time() + within
    for proxy in PROXIES:
        while 'X-Mass-Cache' not in client.request('GET', proxy,
                                                   name).headers:
            assert time.time() < deadline, 'no merge on %s' % proxy
            time.sleep(0.3)
    client.request('DELETE', PROXY2, name)
    tenant_trusted(client.account)


@pytest.fixture(scope='module')
def client(admin, store):  # noqa: F811
    account = 'AUTH_mm%s' % uuid.uuid4().hex[:10]
    c = Client(admin, account, 'c')
    assert c.request('PUT', PROXY).status_code in (201, 202)
    pin_merge(account)
    wait_for_merge(c)
    yield c
    store.delete_pin(account)
    listing = c.request('GET', PROXY, params={'format': 'json'})
    for obj in listing.json() if listing.status_code == 200 else []:
        c.request('DELETE', PROXY, obj['name'])
    c.request('DELETE', PROXY)


def pin_merge(account):
    subprocess.run(['swift-mass', 'pin', account, '--class', 'mixed',
                    '--method', 'merge'], check=True,
                   stdout=subprocess.DEVNULL)


def test_a_small_put_is_written_through(client):
    name = 'wt-%s' % uuid.uuid4().hex[:6]
    body = b'written through' * 100
    assert client.request('PUT', PROXY2, name, data=body).status_code == 201
    # the write-through runs once the PUT's answer has gone: a HEAD (which
    # never fills the cache itself) shows when it is in
    until(lambda: client.request('HEAD', PROXY2, name).headers.get(
        'X-Mass-Cache') == 'hit', 10, 'the PUT written through')
    resp = client.request('GET', PROXY2, name)
    assert resp.content == body
    assert resp.headers['X-Mass-Cache'] == 'hit'
    # and the other proxy's cache (Redis) saw nothing stale either
    assert client.request('GET', PROXY, name).content == body


@contextlib.contextmanager
def object_servers_paused():
    """Every object server's processes stopped (SIGSTOP) until the block
    ends: the kernel still accepts the proxy's connections, so a backend
    read waits, as behind a busy device, and does not fail."""
    pids = [int(pid) for pid in subprocess.run(
        ['pgrep', '-f', 'swift-object-server'], check=True,
        capture_output=True, text=True).stdout.split()]
    stopped = []
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
        yield
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)


def proxy_workers():
    workers = readconf(PROXY_CONF, 'app:proxy-server').get('workers', '1')
    return os.cpu_count() if workers == 'auto' else int(workers)


def test_identical_concurrent_gets_are_merged(client):
    # with X-Delete-At: never cached, so every read goes to the backend,
    # or merges with one that does
    name = 'hot-%s' % uuid.uuid4().hex[:6]
    body = b'merged ' * 5000
    assert client.request('PUT', PROXY, name, data=body, headers={
        'X-Delete-At': str(int(time.time()) + 86400)}).status_code == 201

    def get(_):
        with requests.Session() as session:
            return session.get(client.url(PROXY, name), timeout=30,
                               headers={'X-Auth-Token': client.token})
    # Whether reads overlap by themselves depends on the machine's speed
    # (a CI run merged 0 of 80): the backend is held for a second, so
    # that all 16 are in the proxy while each worker's leader waits.
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        with object_servers_paused():
            pending = [pool.submit(get, i) for i in range(16)]
            time.sleep(1.5)
        resps = [f.result() for f in pending]
    assert all(r.status_code == 200 and r.content == body for r in resps)
    merged = sum(r.headers.get('X-Mass-Merge') == 'merged' for r in resps)
    print('%d of 16 concurrent GETs merged' % merged)
    # one leader per proxy worker at most; every other read merged
    assert merged >= 16 - proxy_workers(), merged


def test_no_stale_or_wrong_read_with_merge(client):
    load = Load(client, ['m-%02d' % i for i in range(12)])
    load.seed()
    load.start()
    try:
        load.wait_reads(3000, 90)
    finally:
        load.finish()
    print('%d reads, %d merged, hits %r; %d stale, %d wrong, %d failed; '
          '%d misses with metadata behind a POST' % (
              load.reads, load.merged, load.hits, len(load.stale),
              len(load.wrong), len(load.failed), len(load.behind)))
    assert load.stale == [] and load.wrong == [], load.report()
    assert load.failed == [], load.failed[:5]
    # the window checked had merges and hits, not merely misses
    assert load.merged > 0 and all(load.hits.values())
