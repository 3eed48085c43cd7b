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
"""Mass's control loop at scale: the real Agent, controller and RedisStore
against a real Redis, with synthetic tenants (no mocks).

It starts a redis-server of its own on a free port (or uses --redis-url,
under a key prefix of its own, deleted afterwards) and, for each count of
tenants (1,000, 10,000 and 100,000; --quick: the first two), all of them
known (in the policy table), measures:

* spread ``realistic``: each interval, half as many requests as tenants,
  spread over the tenants by a Zipf law (--zipf-s): most tenants idle, a
  tail of busy ones; a window's worth of intervals first, then
  ``--repeats`` measured ones;
* spread ``worst``: every tenant makes 10 requests in the interval (and
  none in the rest of the window);
* spread ``worst-new``: as worst, with the table empty and min_requests
  10, so that the leader gives every tenant a new entry in one tick;

and in each: one worker's flush (CPU and wall seconds, of which its
statsd metrics, Agent.emit_metrics; Redis commands, bytes and round
trips), the leader's tick (the same), a worker's tick that is not the
leader's (per interval: what each worker costs Redis), a worker loading
the whole table, and a one-entry change reaching a worker (a delta).
Then: the CPU of a request through the real MassMiddleware with a table of
10 tenants and of all of them (ABBA blocks), the per-request cost of
``Agent.policy`` and ``Agent.record`` with 10 tenants and with all of them
(timeit), the memory a worker's table takes (tracemalloc; and the RSS of a
process of its own), the Redis round
trips a request costs by its tenant's method (through the real
MassMiddleware, in front of an app that answers at once), and
``--processes`` worker processes (multiprocessing, each an Agent ticking
as a proxy worker's loop does) sharing the Redis with the largest table:
how long after the leader wrote a change every one of them holds it, and
how long the lease takes to reach another one after the leader process is
SIGKILLed (both in intervals).

Redis commands run are counted by Redis (INFO commandstats: every
command, those scripts run included), commands sent by the client
(redis-py's, each of a pipeline's), bytes by Redis (total_net_input_bytes
and total_net_output_bytes), round trips by the client (every send of a
command or of a pipeline by redis-py); each figure is the median over
--repeats.  CPU is this process's
(process_time); the machine's other load shows in the wall times.

Prints a table and writes --json.

This module is the command (its options, the run in order); the parts are
modules of their own: the synthetic tenants (mass_bench.scale_tenants),
the Redis and its meter (mass_bench.scale_redis), the control loop's
intervals (mass_bench.scale_loop), the cost of a request
(mass_bench.scale_requests), of the table's memory
(mass_bench.scale_memory), the worker processes
(mass_bench.scale_processes) and the output (mass_bench.scale_report).
Everything runs in the benchmark's process but those worker processes
and the one that measures RSS.
"""
import argparse
import json
import os
import random
import socket
import sys
import warnings

from mass_bench.scale_loop import Logger, run_spread, summarise
from mass_bench.scale_memory import rss_child, table_memory
from mass_bench.scale_processes import processes
from mass_bench.scale_redis import Meter, RedisServer, Trips
from mass_bench.scale_report import print_summary, row
from mass_bench.scale_requests import per_request, per_request_redis, \
    proxy_requests
from mass_bench.scale_tenants import zipf_weights


SIZES = (1000, 10000, 100000)
QUICK_SIZES = (1000, 10000)
SPREADS = ('realistic', 'worst', 'worst-new')


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog='tools/bench-scale',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--sizes', default=None,
                        help='comma-separated tenant counts (default '
                        '1000,10000,100000)')
    parser.add_argument('--quick', action='store_true',
                        help='1,000 and 10,000 tenants only')
    parser.add_argument('--spreads', default=','.join(SPREADS))
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--zipf-s', type=float, default=1.2)
    parser.add_argument('--processes', type=int, default=16,
                        help='worker processes sharing the Redis (0: '
                        'none)')
    parser.add_argument('--process-interval', type=float, default=5.0,
                        help='their interval, seconds (results are in '
                        'intervals)')
    parser.add_argument('--trials', type=int, default=3,
                        help='changes and leader kills')
    parser.add_argument('--statsd', action='store_true',
                        help='statsd counters to a local UDP socket (by '
                        'default: a client with no host, what a proxy '
                        'without statsd pays)')
    parser.add_argument('--redis-url',
                        help='use this Redis (keys under a prefix of '
                        'their own, deleted after) instead of starting '
                        'one')
    parser.add_argument('--redis-server', default='redis-server')
    parser.add_argument('--timeout-ms', type=int, default=5000,
                        help='the stores\' Redis timeout')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--json', help='write the results here')
    parser.add_argument('--rss-child', nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sizes:
        args.sizes = tuple(int(s.replace('_', '')) for s in
                           args.sizes.split(','))
    else:
        args.sizes = QUICK_SIZES if args.quick else SIZES
    args.spreads = tuple(s.strip() for s in args.spreads.split(','))
    for kind in args.spreads:
        if kind not in SPREADS:
            parser.error('--spreads: %r; allowed: %s'
                         % (kind, ', '.join(SPREADS)))
    if args.repeats < 1:
        parser.error('--repeats: at least 1')
    return args


def main(argv=None):
    args = parse_args(argv)
    warnings.simplefilter('ignore')
    if args.rss_child:
        url, prefix, timeout_ms = args.rss_child
        rss_child(url, prefix, int(timeout_ms))
        return 0
    Trips.install()
    server = None
    sink = None
    if args.redis_url:
        url = args.redis_url
    else:
        server = RedisServer(args.redis_server)
        url = server.url
        print('redis-server on port %d' % server.port, flush=True)
    rng = random.Random(args.seed)
    results = {'args': {k: v for k, v in vars(args).items()},
               'machine': {'cpus': os.cpu_count(),
                           'python': sys.version.split()[0]},
               'runs': {}}
    try:
        statsd_port = None
        if args.statsd:
            sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sink.bind(('127.0.0.1', 0))
            statsd_port = sink.getsockname()[1]
        logger = Logger(statsd_port)
        rows = measure_sizes(args, url, logger, rng, results)
        results['per_request_redis'] = per_request_redis(url)
        if args.processes:
            results['processes'] = processes(args, url, max(args.sizes),
                                             logger)
    finally:
        if server is not None:
            server.stop()
        if sink is not None:
            sink.close()
    print_summary(args, results, rows)
    if args.json:
        with open(args.json, 'w') as fp:
            json.dump(results, fp, indent=2, default=str)
    return 0


def measure_sizes(args, url, logger, rng, results):
    """Each count of tenants: its spreads' repeats (their medians and
    figures into ``results['runs']``), then, with the last spread's
    table, the cost of a request (per call, and through the middleware)
    and the table's memory; the rows of the tables, a row per count and
    spread."""
    rows = []
    meter = Meter(url)
    for tenants in args.sizes:
        cum_weights = zipf_weights(tenants, args.zipf_s)
        last = None
        for kind in args.spreads:
            runs, setup = run_spread(args, url, meter, tenants, kind,
                                     rng, cum_weights, logger)
            s = summarise(runs)
            results['runs']['%d %s' % (tenants, kind)] = {
                'median': s, 'repeats': runs}
            rows.append(row(tenants, kind, s))
            if last is not None:
                last.close()
            last = setup
        if last is not None:
            results['runs']['%d per_request' % tenants] = \
                per_request(last, tenants)
            results['runs']['%d proxy_request' % tenants] = \
                proxy_requests(url, tenants)
            results['runs']['%d memory' % tenants] = table_memory(last)
            last.close()
    return rows


if __name__ == '__main__':
    sys.exit(main())
