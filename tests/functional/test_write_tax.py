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
"""No write tax, on the SAIO: the writes of a tenant whose method is
neither cache nor merge make no Redis call, at the proxy or at the object
servers, counted with Redis's own MONITOR (every command any client sent,
with its keys); the same writes by a cache tenant are bumped, which shows
the count would see them."""
import threading
import time
import uuid

import redis
from swift.common.utils import readconf

from swift_mass.control.stores.redis_store import RedisStore
from swift_mass.generations import object_key
from tests.functional.conftest import PROXY, PROXY_CONF
from tests.functional.test_cache import PROXY2, Client, admin, pin, \
    wait_for_method  # noqa: F401
from tests.functional.waiting import until

WRITES = 60


class Monitor(object):
    """Redis's MONITOR in a thread: every command, as Redis received it."""

    def __init__(self):
        self.commands = []
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(10)

    def _run(self):
        client = redis.Redis.from_url('redis://127.0.0.1:6379/0')
        with client.monitor() as monitor:
            self.ready.set()
            for command in monitor.listen():
                self.commands.append(command['command'])
                if self.stop.is_set():
                    return

    def close(self):
        self.stop.set()
        # one command more, so that listen() returns
        redis.Redis.from_url('redis://127.0.0.1:6379/0').ping()
        self.thread.join(10)


def writes(client, names):
    for name in names:
        for proxy in (PROXY, PROXY2):
            assert client.request('PUT', proxy, name,
                                  data=b'x' * 512).status_code == 201
        assert client.request('POST', PROXY, name, headers={
            'X-Object-Meta-A': '1'}).status_code == 202
        assert client.request('DELETE', PROXY2, name).status_code == 204


def touching(commands, client, names):
    """The commands that named one of the objects' generation keys."""
    keys = {object_key(client.account, client.container, name)
            for name in names}
    return [c for c in commands if any(k in c for k in keys)]


def test_writes_of_a_tenant_without_cache_or_merge_make_no_redis_call(
        admin):  # noqa: F811 (the fixture, imported)
    client = Client(admin, 'AUTH_wt%s' % uuid.uuid4().hex[:10], 'c')
    assert client.request('PUT', PROXY).status_code in (201, 202)
    pin(client.account, 'batch')
    wait_for_method(client, 'batch')
    names = ['o%03d' % i for i in range(WRITES // 4)]
    monitor = Monitor()
    try:
        started = time.time()
        writes(client, names)
        elapsed = time.time() - started
    finally:
        monitor.close()
    mentioning = [c for c in monitor.commands
                  if client.account in c or
                  any(n in c for n in names)]
    bumps = touching(monitor.commands, client, names)
    print('%d writes in %.1fs: %d Redis commands from everyone in that '
          'time, %d about this tenant or its objects, %d bumps of its '
          'objects' % (len(names) * 4, elapsed, len(monitor.commands),
                       len(mentioning), len(bumps)))
    assert bumps == []
    # what remains is the control loop's per-interval work: each worker's
    # flush of its tenants' request counts (a script per few hundred
    # tenants: HINCRBY per field, EXPIRE, SADD to the bucket's index), the
    # leader reading them (scripts too) and writing the policy table's
    # changed entries; never anything per request
    shas = RedisStore.script_shas()
    others = [c for c in mentioning if c.split()[1] not in shas and
              not c.split()[1].startswith(
                  ('mass:c:', 'mass:cb:', 'mass:policy', 'mass:pins'))]
    assert others == []
    flushes = [c for c in mentioning if c.startswith('SADD')]
    print('%d count flushes' % len(flushes))
    # two proxies with Mass, one worker each: a flush per interval each
    interval = float(readconf(PROXY_CONF, 'filter:mass')['interval'])
    assert len(flushes) <= 2 * (elapsed / interval + 2), flushes

    # the control: the same writes once the tenant has the cache are
    # bumped, each on every object server that stored it
    pin(client.account, 'cache')
    wait_for_method(client, 'cache')
    until(lambda: client.request('PUT', PROXY, 'probe', data=b'p')
          .status_code == 201 and bumped_probe(client), 30,
          'the object servers bump the tenant once it has the cache')
    monitor = Monitor()
    try:
        writes(client, names)
    finally:
        monitor.close()
    bumps = touching(monitor.commands, client, names)
    print('with the cache: %d bumps of its objects' % len(bumps))
    assert len(bumps) >= len(names) * 4 * 2
    client.request('DELETE', PROXY, 'probe')


def bumped_probe(client):
    key = object_key(client.account, client.container, 'probe')
    return redis.Redis.from_url('redis://127.0.0.1:6379/0').exists(
        'mass:cache:g:' + key)
