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
"""The memory a worker's policy table takes at scale, for tools/bench-scale
(mass_bench.scale): the Python objects a fresh worker holds once it has
loaded the whole table (tracemalloc, in the benchmark's process), and the
RSS a worker process of its own gains by loading it (``tools/bench-scale
--rss-child``, :func:`rss_child`)."""
import json
import os
import subprocess
import sys
import tracemalloc

from mass_bench.scale_loop import Logger


# the launcher of tools/bench-scale, for a process of its own
LAUNCHER = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'tools', 'bench-scale')


def _rss():
    with open('/proc/self/statm') as fp:
        return int(fp.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def rss_child(url, prefix, timeout_ms):
    """In a process of its own (--rss-child): the RSS a worker gains by
    loading the table whole, printed as JSON."""
    import gc
    from swift_mass.control import controller
    from swift_mass.control.agent import Agent
    from swift_mass.control.stores.redis_store import RedisStore
    agent = Agent(RedisStore(url, prefix=prefix, socket_timeout_ms=timeout_ms,
                             connect_timeout_ms=timeout_ms),
                  controller.DEFAULT_SETTINGS, 'bench-rss', Logger())
    agent.store.table_version()  # connected, scripts' module loaded
    gc.collect()
    before = _rss()
    agent.refresh()
    gc.collect()
    print(json.dumps({'rss_added_bytes': _rss() - before,
                      'entries': len(agent.table)}))


def table_memory(setup):
    """Bytes a worker's table of every tenant takes: the Python objects
    it holds (tracemalloc, while a fresh worker loads it whole), and the
    RSS a new worker process (no tracemalloc) gains by loading it."""
    fresh = setup.agent('bench-memory')
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        fresh.refresh()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    held = sum(stat.size_diff for stat in after.compare_to(before,
                                                           'filename'))
    entries = len(fresh.table)
    del fresh
    child = json.loads(subprocess.run(
        [sys.executable, LAUNCHER, '--rss-child',
         setup.url, setup.prefix, str(setup.timeout_ms)],
        stdout=subprocess.PIPE, check=True, text=True).stdout)
    return {'entries': entries, 'bytes': held,
            'bytes_per_tenant': held / float(entries or 1),
            'rss_added_bytes': child['rss_added_bytes']}
