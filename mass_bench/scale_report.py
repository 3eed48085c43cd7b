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
"""tools/bench-scale's output (mass_bench.scale): its figures as the
tables print them, the two tables of a run's medians (a row per count of
tenants and spread) and the lines that follow them.  Plain Python, in the
benchmark's process."""


def fmt(value, digits=3):
    """A figure for the table: '-' for none, thousands separated."""
    if value is None:
        return '-'
    if isinstance(value, int) or (isinstance(value, float) and
                                  value >= 1000):
        return '{:,.0f}'.format(value)
    return '%.*f' % (digits, value)


def format_table(rows, columns):
    """A plain text table: ``columns`` are ``(key, heading)``, ``rows``
    dicts; numbers right-aligned."""
    cells = [[heading for _key, heading in columns]]
    for row in rows:
        cells.append([row[key] if isinstance(row.get(key), str)
                      else fmt(row.get(key)) for key, _heading in columns])
    widths = [max(len(line[i]) for line in cells)
              for i in range(len(columns))]
    lines = []
    for n, line in enumerate(cells):
        lines.append('  '.join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths))))
        if n == 0:
            lines.append('  '.join('-' * width for width in widths))
    return '\n'.join(lines)


def in_intervals(seconds, interval):
    return None if seconds is None else seconds / float(interval)


COLUMNS = [
    ('label', 'tenants, spread'),
    ('flush_tenants', 'flushed'),
    ('flush_cpu', 'flush CPU s'),
    ('flush_metrics', 'of it metrics'),
    ('flush_wall', 'flush wall s'),
    ('flush_commands', 'cmds run'),
    ('flush_sent', 'cmds sent'),
    ('flush_trips', 'trips'),
    ('flush_kb_in', 'KiB in'),
    ('flush_redis_cpu', 'Redis CPU s'),
    ('leader_cpu', 'leader CPU s'),
    ('leader_wall', 'leader wall s'),
    ('leader_commands', 'leader cmds'),
    ('leader_sent', 'sent'),
    ('leader_trips', 'leader trips'),
    ('leader_kb_out', 'leader KiB out'),
]
COLUMNS2 = [
    ('label', 'tenants, spread'),
    ('tick_commands', 'worker tick cmds'),
    ('tick_sent', 'sent'),
    ('tick_trips', 'trips'),
    ('tick_kb', 'KiB in+out'),
    ('delta_cpu', 'delta CPU s'),
    ('delta_wall', 'delta wall s'),
    ('delta_kb', 'delta KiB out'),
    ('delta_trips', 'delta trips'),
    ('whole_cpu', 'whole load CPU s'),
    ('whole_wall', 'whole load wall s'),
    ('whole_kb', 'whole load KiB out'),
]


def row(tenants, kind, s):
    f, lead, tick, delta, whole = (s['flush'], s['leader'],
                                   s['worker_tick'], s['delta'],
                                   s['whole_load'])
    return {
        'label': '{:,} {}'.format(tenants, kind),
        'flush_tenants': f['tenants_flushed'], 'flush_cpu': f['cpu_s'],
        'flush_metrics': f['metrics_cpu_s'], 'flush_wall': f['wall_s'],
        'flush_commands': f['commands'], 'flush_sent': f['commands_sent'],
        'flush_trips': f['round_trips'], 'flush_kb_in': f['bytes_in'] / 1024,
        'flush_redis_cpu': f['redis_cpu_s'],
        'leader_cpu': lead['cpu_s'], 'leader_wall': lead['wall_s'],
        'leader_commands': lead['commands'],
        'leader_sent': lead['commands_sent'],
        'leader_trips': lead['round_trips'],
        'leader_kb_out': lead['bytes_out'] / 1024,
        'tick_commands': tick['commands'], 'tick_sent': tick['commands_sent'],
        'tick_trips': tick['round_trips'],
        'tick_kb': (tick['bytes_in'] + tick['bytes_out']) / 1024,
        'delta_cpu': delta['cpu_s'], 'delta_wall': delta['wall_s'],
        'delta_kb': delta['bytes_out'] / 1024,
        'delta_trips': delta['round_trips'],
        'whole_cpu': whole['cpu_s'], 'whole_wall': whole['wall_s'],
        'whole_kb': whole['bytes_out'] / 1024,
    }


def print_summary(args, results, rows):
    """The run's tables (``rows``, :func:`row`'s), then a line per count
    of tenants of what a request and the table cost, the round trips per
    request, and the worker processes' propagation and failover."""
    print()
    print(format_table(rows, COLUMNS))
    print()
    print(format_table(rows, COLUMNS2))
    print()
    for tenants in args.sizes:
        req = results['runs'].get('%d per_request' % tenants)
        mem = results['runs'].get('%d memory' % tenants)
        proxy = results['runs'].get('%d proxy_request' % tenants)
        if proxy:
            print('{:,} tenants: CPU per request through MassMiddleware '
                  '{:.1f} us, with 10 tenants {:.1f} us: ratio {:.3f}'.format(
                      tenants, proxy['%d_us' % tenants], proxy['10_us'],
                      proxy['ratio']))
        if req:
            print('{:,} tenants: Agent.policy {:.0f} ns (10 tenants: {:.0f}; '
                  'ratio {:.3f}), Agent.record {:.0f} ns (10: {:.0f}; ratio '
                  '{:.3f}); a worker\'s table {:.1f} MiB ({:.0f} B a tenant; '
                  'RSS +{:.1f} MiB)'.format(
                      tenants, req[str(tenants)]['policy_ns'],
                      req['10']['policy_ns'], req['policy_ratio'],
                      req[str(tenants)]['record_ns'], req['10']['record_ns'],
                      req['record_ratio'], mem['bytes'] / 2 ** 20,
                      mem['bytes_per_tenant'],
                      mem['rss_added_bytes'] / 2 ** 20))
    print('Redis round trips per request, by the method of the tenant: ' +
          ', '.join('%s %.2f' % item for item in
                    results['per_request_redis'].items()))
    proc = results.get('processes')
    if proc:
        print('{} worker processes, {:,} tenants, interval {:g} s: a change '
              'reached every worker within {} intervals (max of {} trials); '
              'the lease passed on within {} intervals of the leader\'s '
              'SIGKILL{}'.format(
                  proc['processes'], proc['tenants'], proc['interval_s'],
                  fmt(proc['propagation_max_intervals'], 2), args.trials,
                  fmt(proc['failover_max_intervals'], 2),
                  '; errors: %s' % proc['errors'] if proc['errors'] else ''))
