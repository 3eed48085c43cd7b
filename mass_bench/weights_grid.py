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
"""``tools/bench-weights`` (``python3 -m mass_bench.weights_grid``): BACOS's
measurement step on a test cluster, writing the lookup table that
``swift-mass weights --table`` reads.

For every class weights W of a grid (:func:`swift_mass.devices.lookup.
weight_grid`: shares over the device classes of ``swift-mass devices``,
multiples of ``--step``, none at 0 unless ``--min-weight 0``) and every
client count N of ``--clients``, one tenant runs the workload (read ratio
``--read-ratio``, the rest writes of new objects, ``--size`` objects) with
N clients against POLICY's ring weighted by W (``mass_bench.rings``;
Mass out of the pipelines: this measures the devices, not Mass), and the
run's mean response time and error ratio are recorded in the table
(:func:`swift_mass.devices.lookup.record_file`: a W's score is the mean of
its runs' F).  W is the outer loop, so the ring changes once per W; the
rings and the pipeline are put back at the end.

It prints each run and then, per workload, every W's score with the best
one marked.
"""
import argparse
import os
import sys
import time

from mass_bench import rings, workloads
from mass_bench.clients import Tenant
from mass_bench.driver import Bench
from mass_bench.modes import default_saio
from swift_mass.devices import lookup
from swift_mass.devices.classes import classes_path, load_classes


def grid_workload(read_ratio, size, objects, clients, seconds, warmup,
                  policy):
    """The measured tenant's workload: reads of the starting objects and
    writes of new ones, ``read_ratio`` of them reads."""
    mix = ','.join(['get=%g' % read_ratio] * (read_ratio > 0) +
                   ['put=%g' % (1 - read_ratio)] * (read_ratio < 1))
    return workloads.parse(
        '%s,size=%s,objects=%d,concurrency=%d,seconds=%g,warmup=%g,'
        'policy=%s' % (mix, size, objects, clients, seconds, warmup,
                       policy), name='grid')


def run_grid(run, grid, clients, record, progress=print):
    """Run every ``(W, N)``, W the outer loop: ``run(W, N)`` returns the
    run's figures (bench's summarise), ``record(W, N, figures)`` keeps
    them; returns the rows (W, N, mean latency s, error ratio)."""
    rows = []
    for shares in grid:
        for n_clients in clients:
            figures = run(shares, n_clients)
            operations = figures['operations']
            error_ratio = figures['errors'] / operations if operations \
                else 1.0
            mean_s = (figures['mean_ms'] or 0.0) / 1000.0
            record(shares, n_clients, mean_s, error_ratio)
            rows.append((shares, n_clients, mean_s, error_ratio))
            progress('W %s, %d clients: mean %.1f ms, errors %.2f%%, '
                     '%.1f ops/s' % (','.join('%g' % s for s in shares),
                                     n_clients, mean_s * 1000,
                                     100 * error_ratio,
                                     figures['ops_per_s']))
    return rows


def format_table(table):
    lines = ['classes %s; F = mean response time + %g s x error ratio' % (
        ', '.join(table['classes']), table['error_penalty_s']),
        '%8s %6s  %-14s %9s %5s' % ('clients', 'read', 'W', 'F (ms)',
                                    'runs')]
    for entry in table['entries']:
        for candidate in entry['candidates']:
            best = candidate['weights'] == entry['best']['weights']
            lines.append('%8d %6.2f  %-14s %9.1f %5d%s' % (
                entry['n_clients'], entry['read_ratio'],
                ','.join('%g' % w for w in candidate['weights']),
                1000 * candidate['score'], len(candidate['runs']),
                '  best' if best else ''))
    return '\n'.join(lines)


def parse_clients(text):
    try:
        values = [int(v) for v in text.split(',')]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        raise ValueError('--clients %r is not valid; allowed: whole numbers '
                         '1 or more, e.g. 4,16,32' % text)
    return values


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog='tools/bench-weights', description=__doc__.split('\n\n')[0])
    parser.add_argument('--table', required=True,
                        help='the lookup table to write (runs are added to '
                        'one that exists)')
    parser.add_argument('--policy', default='standard',
                        help='the storage policy whose ring is weighted')
    parser.add_argument('--clients', default='4,16,32',
                        help='client counts N (default 4,16,32)')
    parser.add_argument('--read-ratio', type=float, default=0.8)
    parser.add_argument('--size', default='4k')
    parser.add_argument('--objects', type=int, default=400,
                        help='starting objects the reads pick from')
    parser.add_argument('--seconds', type=float, default=20.0)
    parser.add_argument('--warmup', type=float, default=3.0)
    parser.add_argument('--step', type=float, default=0.25,
                        help='the grid\'s step of class shares')
    parser.add_argument('--min-weight', type=float,
                        help='least share of a class (default: the step)')
    parser.add_argument('--tenant', default='test:tester:testing',
                        help='ACCOUNT:USER:KEY of the measured tenant')
    parser.add_argument('--auth-url',
                        default='http://127.0.0.1:8080/auth/v1.0')
    parser.add_argument('--seed-url', default=None,
                        help='a proxy without Mass that writes the starting '
                        'objects')
    parser.add_argument('--swift-dir', default='/etc/swift')
    parser.add_argument('--classes-file')
    parser.add_argument('--saio', default=default_saio())
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        clients = parse_clients(args.clients)
        classes = load_classes(classes_path(
            args.swift_dir, args.classes_file))['classes']
        grid = lookup.weight_grid(classes, args.step, args.min_weight)
        account, user, key = args.tenant.split(':')
        variants = [rings.RingVariant('W%d' % i, 'default', args.policy,
                                      shares)
                    for i, shares in enumerate(grid)]
        bench = Bench(
            [], args.auth_url, saio=args.saio, progress=_progress,
            seed_url=args.seed_url, ring_variants=variants,
            swift_dir=args.swift_dir, classes_file=args.classes_file)
    except ValueError as err:
        print('tools/bench-weights: %s' % err, file=sys.stderr)
        return 2
    name_of = {v.shares: v.name for v in variants}
    tenants = {}

    def run(shares, n_clients):
        tenant = tenants.get(n_clients)
        if tenant is None:
            tenant = tenants[n_clients] = Tenant(
                'grid%d' % n_clients, '%s:%s' % (account, user), key,
                grid_workload(args.read_ratio, args.size, args.objects,
                              n_clients, args.seconds, args.warmup,
                              args.policy))
        bench.tenants = [tenant]
        bench.switch(name_of[shares])
        result = bench.run({tenant: tenant.workload}, 'W %s, %d clients' % (
            ','.join('%g' % s for s in shares), n_clients))
        return result['tenants'][tenant.label]

    def record(shares, n_clients, mean_s, error_ratio):
        lookup.record_file(args.table, classes, n_clients, args.read_ratio,
                           shares, mean_s, error_ratio)

    began = time.time()
    try:
        run_grid(run, grid, clients, record, progress=print)
    finally:
        bench.restore_rings()
        bench.restore_pipeline()
    table = lookup.load_table(args.table)
    print(format_table(table))
    print('%d runs in %.0f s; table: %s' % (
        len(grid) * len(clients), time.time() - began,
        os.path.abspath(args.table)))
    print('command: %s' % ' '.join(['tools/bench-weights'] + (
        sys.argv[1:] if argv is None else list(argv))))
    return 0


def _progress(text, end='\n'):
    if end == '\r' and not sys.stderr.isatty():
        return
    print(text, end=end, file=sys.stderr, flush=True)


if __name__ == '__main__':
    sys.exit(main())
