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
"""What a request costs at scale, for tools/bench-scale
(mass_bench.scale): the per-call cost of ``Agent.policy`` and
``Agent.record`` with 10 tenants and with all of them, the CPU of a
request through the real MassMiddleware with a table of 10 tenants and of
all of them, and the Redis round trips a request costs by its tenant's
method (Trips, mass_bench.scale_redis).  The middleware runs in the
benchmark's process, in front of an app that answers at once, its control
loop held (mass_bench.ticker): that costs per interval, not per
request."""
import itertools
import random
import time
import timeit
import uuid

from mass_bench.ratios import abba, median
from mass_bench.scale_loop import Logger
from mass_bench.scale_redis import Trips, delete_prefix, fresh_prefix
from mass_bench.scale_tenants import known_table, request_kinds, \
    tenant_name
from mass_bench.ticker import Ticker


def per_request(setup, tenants, repeat=5, number=200000):
    """Nanoseconds per Agent.policy and Agent.record call, with a table
    and a window of 10 tenants and of ``tenants``."""
    from swift_mass.control import controller
    from swift_mass.control.agent import Agent
    from swift_mass.control.entry import PolicyEntry
    results = {}
    counts = request_kinds()['read'][0]
    for size in (10, tenants):
        agent = Agent(setup.worker.store, controller.DEFAULT_SETTINGS,
                      'bench-request', Logger(), clock=setup.clock)
        agent.table = {tenant_name(i): PolicyEntry('read', method='none')
                       for i in range(size)}
        names = [tenant_name(i) for i in random.Random(size).choices(
            range(size), k=1024)]
        for i in range(size):  # a window holding every tenant
            agent.record(tenant_name(i), counts)
        cycle = itertools.cycle(names)
        policy = min(timeit.repeat(lambda: agent.policy(next(cycle)),
                                   number=number, repeat=repeat)) / number
        record = min(timeit.repeat(
            lambda: agent.record(next(cycle), counts), number=number,
            repeat=repeat)) / number
        results[size] = {'policy_ns': policy * 1e9,
                         'record_ns': record * 1e9}
    small, large = results[10], results[tenants]
    return {'10': small, str(tenants): large,
            'policy_ratio': large['policy_ns'] / small['policy_ns'],
            'record_ratio': large['record_ns'] / small['record_ns']}


def _app(env, start_response):
    """The app right of Mass: answers at once."""
    from swift.common.swob import Response
    body = b'' if env['REQUEST_METHOD'] in ('PUT', 'HEAD') else b'x' * 512
    status = 201 if env['REQUEST_METHOD'] == 'PUT' else 200
    return Response(status=status, body=body, headers={
        'X-Timestamp': '%.5f' % time.time(),
        'Etag': '"%s"' % uuid.uuid4().hex})(env, start_response)


def _middleware(url, prefix):
    """The real MassMiddleware in front of _app, its store Redis under
    ``prefix``, its control loop (per interval, not per request) held
    (mass_bench.ticker): the loop starts with the middleware's first
    request, sent here as a proxy worker's first, and never has a tick
    due.  That first request reads the (empty) table through a store of
    the agent's own, so that the middleware's store (its methods') meets
    its first command in the requests measured, as with no loop at
    all."""
    from swift.common.swob import Request
    from swift_mass.control.stores.redis_store import RedisStore
    from swift_mass.proxy.conf import MassConf
    from swift_mass.proxy.middleware import MassMiddleware
    mass_conf = MassConf({'redis_url': url})
    # the cache's Redis keys under the run's prefix, as the store's
    mass_conf.store.redis_prefix = prefix
    mass = MassMiddleware(_app, {'redis_url': url}, logger=Logger(),
                          store=RedisStore(url, prefix=prefix),
                          mass_conf=mass_conf)
    mass.agent.ticker = Ticker(mass.agent.interval, held=True)
    mass.agent.store = RedisStore(url, prefix=prefix)
    mass.methods.cache.validity_check.devices = lambda: set()
    Request.blank('/v1/AUTH_bench-first/c/o').get_response(mass).body
    return mass


def proxy_requests(url, tenants, blocks=12, block=2000):
    """CPU per request through the MassMiddleware (tagging, the policy
    lookup, counting; the app right of it answers at once) with a table
    of 10 tenants and of ``tenants``: the same requests, of 10 tenants
    that both tables hold (what a request costs that depends on the
    number of tenants active, such as each one's first urgent-mark lookup,
    is left out: only the table's size differs), the collector on; blocks
    alternated ABBA, medians."""
    from swift.common.swob import Request
    from swift_mass.control import controller
    prefix = fresh_prefix()
    mass = _middleware(url, prefix)
    rng = random.Random(tenants)
    tables = {}
    for size in (10, tenants):
        tables[size] = known_table(size, time.time(),
                                   controller.DEFAULT_SETTINGS)
        for entry in tables[size].values():
            entry.method = 'none'
    base = Request.blank('/v1/AUTH_x/c/o').environ
    requests = [dict(base, PATH_INFO='/v1/%s/c/o' % tenant_name(i))
                for i in rng.choices(range(10), k=block)]
    envs = {10: requests, tenants: requests}

    def start_response(status, headers, exc_info=None):
        pass

    def run(size):
        for env in envs[size]:
            for _chunk in mass(dict(env), start_response):
                pass
    cpu = {10: [], tenants: []}
    try:
        run(10)
        for order in abba((10, tenants), blocks):
            for size in order:
                mass.agent.table = tables[size]
                started = time.process_time()
                run(size)
                cpu[size].append((time.process_time() - started) / block)
    finally:
        delete_prefix(url, prefix)
    small, large = median(cpu[10]), median(cpu[tenants])
    return {'10_us': small * 1e6, '%d_us' % tenants: large * 1e6,
            'ratio': large / small}


def per_request_redis(url, requests=200):
    """Redis round trips per request through the real MassMiddleware (no
    control loop: that is per interval), by the method of the tenant's
    policy, GETs and PUTs of small objects, in front of an app that
    answers at once."""
    from swift.common.swob import Request
    from swift_mass.control.entry import PolicyEntry
    prefix = fresh_prefix()
    mass = _middleware(url, prefix)
    results = {}
    try:
        for method in ('unclassified', 'none', 'batch', 'cache', 'merge'):
            tenant = 'AUTH_kind_%s' % method
            if method != 'unclassified':
                mass.agent.table[tenant] = PolicyEntry(
                    'read', substore='', method=method)
            for verb in ('GET', 'PUT'):
                def send():
                    for i in range(requests):
                        req = Request.blank('/v1/%s/c/o%d' % (tenant, i % 20),
                                            method=verb, body=b'y' * 512
                                            if verb == 'PUT' else None)
                        resp = req.get_response(mass)
                        resp.body
                trips = Trips.count
                send()
                results['%s %s' % (method, verb)] = \
                    (Trips.count - trips) / float(requests)
    finally:
        delete_prefix(url, prefix)
        delete_prefix(url, prefix + 'cache:')
    return results
