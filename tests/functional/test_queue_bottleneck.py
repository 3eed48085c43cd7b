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
"""Devices whose slots are the bottleneck: a noisy writer saturating the
slowed devices of the ``bulk`` substore (tools/saio-slow, 20 write IOPS),
an urgent writer (marked in account sysmeta) and an urgent reader
(the object servers' urgent_tenants) on the same devices, with and without
Mass in the same run (``tools/bench --modes default,static``).

The test checks what must hold whatever the speed: every request of every
tenant succeeds in both modes and every tenant, the noisy one included,
progresses; the throttle held the devices to their limit while the noisy
writer asked for more; with Mass, requests waited for mass_queue's slots
and the object servers saw the urgent mark.  The latencies are printed,
not asserted (docs/benchmarks/slots-bottleneck/README.md has the full
ABBA run).
"""
import os
import time

import pytest

from swift_mass.cli import main as cli
from swift_mass.conf import QueueConf
from tests.functional.conftest import PROXY, saio
from tests.functional.test_bench import run_bench
from tests.functional.test_queue import queue_state
from tests.functional.test_slow_devices import slow

# long enough for the noisy writer's first writes to end on the slowest
# machine CI has had: each waits for two flushes of a device at 20 write
# IOPS, behind the urgent tenant's reserved slots (9 s were too few for
# any of them to end once)
SECONDS = 20
TENANTS = [
    'backup:job:job=C,concurrency=12,policy=bulk,warmup=1',
    'dbdump:dump:dump=get=1,size=8k,objects=10,concurrency=1,policy=bulk,'
    'warmup=1',
    'photos:web:web=put=1,size=8k,objects=10,concurrency=1,policy=bulk,'
    'warmup=1',
]
WRITE_IOPS = 20
# The test is about order and progress, not refusals: a request that
# waited `deadline` is admitted over the slots, never refused
# (max_refusals_per_minute 0), and the deadline is under the proxy's 10 s
# node_timeout as docs/queue.md asks (with 30, two of the noisy writer's
# PUTs waited in the queue and for their two group-commit flushes past
# it, and the proxy answered 503)
QUEUE = {'slots_per_device': '4', 'batch_slots': '0', 'deadline': '4',
         'max_refusals_per_minute': '0'}
# the object servers of sdb3 and sdb4: policy bulk
BULK_SERVERS = [('127.0.0.3', 6230), ('127.0.0.4', 6240)]
THROTTLE_STATS = '/sys/fs/cgroup/blkio/swift-mass-slow/' \
    'blkio.throttle.io_serviced'

OPERATOR = {'ST_AUTH': PROXY + '/auth/v1.0', 'ST_USER': 'admin:admin',
            'ST_KEY': 'admin'}


def queue_options():
    """The object servers' [filter:mass_queue] options, as tools/saio
    queue shows them."""
    out = saio('queue').stdout
    return dict(line.split(':', 1)[1].strip().split(' = ', 1)
                for line in out.splitlines() if ' = ' in line)


def set_queue(options):
    result = saio('queue', *['%s=%s' % item for item in
                             sorted(options.items())], check=False)
    assert result.returncode == 0, result.stdout


def mark_urgent(on, monkeypatch, capsys):
    for name, value in OPERATOR.items():
        monkeypatch.setenv(name, value)
    assert cli.main(['urgent', 'AUTH_photos',
                     '--on' if on else '--off']) == 0
    capsys.readouterr()


@pytest.fixture
def bottleneck(cluster, monkeypatch, capsys):
    if not os.path.exists('/sys/fs/cgroup/blkio/'
                          'blkio.throttle.write_iops_device'):
        pytest.fail('no cgroup v1 blkio throttle: devices cannot be slowed')
    before = queue_options()
    mark_urgent(True, monkeypatch, capsys)
    try:
        result = slow('set', '3,4', '--write-iops', str(WRITE_IOPS))
        assert result.returncode == 0, result.stdout
        set_queue(QUEUE)
        yield
    finally:
        assert slow('clear').returncode == 0
        # an option the SAIO's [filter:mass_queue] did not set goes back
        # to the filter's own default
        defaults = QueueConf()
        set_queue(dict((key, before.get(key, str(getattr(defaults, key))))
                       for key in QUEUE))
        mark_urgent(False, monkeypatch, capsys)


def throttled_writes():
    """Write requests the blkio throttle of the slowed object servers has
    passed to the device so far."""
    with open(THROTTLE_STATS) as stats:
        return sum(int(line.split()[2]) for line in stats
                   if len(line.split()) == 3 and line.split()[1] == 'Write')


def queue_counts(servers):
    """{(ip, port, device): the device's mass_queue state} of ``servers``
    (``GET /mass_queue``; an error if mass_queue does not answer)."""
    return dict(((ip, port, device), queue)
                for ip, port in servers
                for device, queue in queue_state(ip, port)['devices'].items())


def test_urgent_tenants_beside_a_noisy_writer_on_saturated_devices(
        bottleneck, tmp_path):
    writes_before = throttled_writes()
    started = time.time()
    _, result = run_bench(TENANTS, tmp_path, [
        '--modes', 'default,static', '--cycles', '1', '--no-control',
        '--no-plots', '--seconds', str(SECONDS),
        # the seeding's write-back is a speed matter; nothing here asserts
        # one, so no 35 s wait for it before each window
        '--settle', '1'], timeout=600)
    runs = dict((run['mode'], run['tenants']) for run in result['runs'])
    assert set(runs) == {'default', 'static'}
    for mode, tenants in runs.items():
        for name, figures in tenants.items():
            # nothing refused or failed, with the queue or without
            assert figures['errors'] == 0, (mode, name, figures['statuses'])
            # everyone progresses: the noisy writer too
            assert figures['operations'] > 0, (mode, name)
    print('\n' + '\n'.join(
        '%-7s %-8s %6.1f ops/s  p50 %7.1f ms  p99 %7.1f ms' % (
            mode, name, figures['ops_per_s'], figures['p50_ms'],
            figures['p99_ms'])
        for mode in ('default', 'static')
        for name, figures in sorted(runs[mode].items())))

    # The devices were the bottleneck: the throttle passed no more writes
    # than its limit allows, and the noisy writer asked for more than that
    # for most of the measured time.
    writes = throttled_writes() - writes_before
    elapsed = time.time() - started
    assert writes <= WRITE_IOPS * elapsed * 1.1, (writes, elapsed)
    assert writes >= WRITE_IOPS * SECONDS, (writes, elapsed)
    # With Mass the queue was the bottleneck: requests waited for slots,
    # and the object servers saw the operator's urgent mark.
    # (switching to static restarted the object servers: their counts are
    # the static run's)
    queues_after = queue_counts(BULK_SERVERS)
    waited = sum(queue['admitted_after_wait']
                 for queue in queues_after.values())
    assert waited > 0, queues_after
    seen = set(tenant for ip, port in BULK_SERVERS
               for tenant in queue_state(ip, port).get('urgent_seen', []))
    assert 'AUTH_photos' in seen
