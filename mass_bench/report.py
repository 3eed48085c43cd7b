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
"""The benchmark's text output: a line per tenant after each run, and
the table of a comparison or of staged runs at the end.

After each run (``format_run``): per tenant its figures, and what Mass
did when Mass was in the pipelines (``mass_bench.policy_table``), with a
flag first when the method was not in force for the whole window; where
the time went and the cost per operation (``mass_bench.resources``, in
the words of ``mass_bench.resources_report``); and the load generator's
CPU as a share of the machine (all cores over the window): a load
generator that takes much of the machine measures itself.

At the end of a comparison (``format_summary``): a row per tenant and
mode, for all tenants together (``mass_bench.summary.ALL``) and for the
geometric mean of the tenants' ratios (``GEOMEAN``), with the ratios
against default as median [bootstrap interval] and ``~`` for no
difference; the A/A control's spreads; the runs flagged; the medians of
where the time went and of the costs per mode.  Of a phased comparison
(``--staged``, mass_bench.phases): that table over all phases, then one
per phase (``format_phases``); after each run, each phase's lines
(``format_phased_run``).

Formatting only: the figures are ``mass_bench.summary``'s.
"""
from mass_bench import policy_table, resources_report
from mass_bench.summary import ALL, flagged_runs

GEOMEAN = 'geo-mean'


def _ms(value):
    return '%.1f' % value if value is not None else '-'


def _hit(value):
    return '%.1f' % (100.0 * value) if value is not None else ''


def format_run(run):
    lines = []
    for label, f in sorted(run['tenants'].items()):
        hits = f.get('hit_ratio')
        policy = f.get('container_policy')
        lines.append('    %-10s %-18s %8.1f ops/s %7.2f MB/s mean %7s ms '
                     'p99 %7s ms errors %d%s%s' % (
                         label, f['workload'], f['ops_per_s'], f['mb_per_s'],
                         _ms(f['mean_ms']), _ms(f['p99_ms']), f['errors'],
                         '' if hits is None else ' hits %s %%' % _hit(hits),
                         ' in %s' % policy if policy else ''))
        lines += format_mass(run, f.get('mass'))
    if 'resources' in run:
        lines.append(resources_report.format_line(run['resources']))
    stalls = resources_report.format_stalls(run.get('stalls'))
    if stalls:
        lines.append(stalls)
    if run.get('load_generator'):
        lines.append(format_load_generator(run['load_generator']))
    if run.get('costs'):
        lines.append(resources_report.format_cost_line(run['costs']))
    return '\n'.join(lines)


def format_mass(run, did):
    """What Mass did for one tenant in a run, when Mass was in the
    pipelines: lines, the flag of a method not in force throughout
    first."""
    if not did or not run.get('mass_in_pipeline'):
        return []
    note = policy_table.flagged(did)
    return (['      ! %s' % note] if note else []) + [
        '      mass: %s' % policy_table.describe(did)]


def format_load_generator(load):
    share = load.get('machine_pct')
    return '    load generator: %s %% of the machine (%.1f CPU s, %s cores)' \
        % ('-' if share is None else '%.0f' % share, load['cpu_seconds'],
           load.get('cores') or '-')


def _fmt_ratio(r):
    if not r:
        return '-'
    interval = r.get('interval') or {'low': r['min'], 'high': r['max']}
    text = '%.3f [%.3f-%.3f]' % (r['median'], interval['low'],
                                 interval['high'])
    if r.get('verdict') == 'no difference':
        text += ' ~'
    return text


SUMMARY_ROW = '%-10s %-8s %9s %8s %9s %9s %9s %6s %6s  %-24s %-24s'


def _summary_row(label, mode, e, base='default'):
    return SUMMARY_ROW % (
        label, resources_report.mode_label(mode, base),
        '%.1f' % e['ops_per_s'], '%.2f' % e['mb_per_s'], _ms(e['mean_ms']),
        _ms(e['p50_ms']), _ms(e['p99_ms']), e['errors'],
        _hit(e.get('hit_ratio')), _fmt_ratio(e.get('throughput_ratio')),
        _fmt_ratio(e.get('latency_ratio')))


def _geomean_rows(per_tenant):
    return [SUMMARY_ROW % (GEOMEAN, mode, '', '', '', '', '', '', '',
                           _fmt_ratio(e.get('throughput_ratio')),
                           _fmt_ratio(e.get('latency_ratio')))
            for mode, e in per_tenant.items() if mode != 'control']


def _spread(s):
    return '%.3f-%.3f' % (s['min'], s['max']) if s else '-'


def format_spreads(result):
    """The A/A control's spread per tenant, for all tenants and of the
    geo-mean; [] without a control."""
    base = result.get('base', 'default')
    spreads = [(label, modes['control']['aa_spread'])
               for label, modes in sorted(result['summary'].items())
               if 'aa_spread' in modes.get('control', {})]
    control = (result.get('per_tenant') or {}).get('control')
    if control:
        spreads.append((GEOMEAN, control['aa_spread']))
    if not spreads:
        return []
    return ['A/A spread (%s* against %s, min-max over cycles, '
            '1 included): ops/s | mean latency' % (base, base)] + [
        '  %-10s %s | %s' % (label, _spread(s.get('ops_per_s')),
                             _spread(s.get('mean_ms')))
        for label, s in spreads]


def format_between(between):
    """Lines of summary.between_modes: per pair of modes, per tenant the
    median throughput ratio, its interval and its cycles."""
    lines = []
    for pair, tenants in sorted(between.items()):
        if not tenants:
            continue
        mode = pair.split('/')[0]
        lines.append('%s ops/s in the same cycle: median [95 %% interval] '
                     '(cycles); balanced by order: the geometric mean of '
                     'the cycles %s ran first and of those it ran second '
                     % (pair, mode))
        for label, r in sorted(tenants.items()):
            order = r.get('by_order') or {}
            lines.append('  %-10s x%.3f [%.3f-%.3f]%s (%s); balanced %s '
                         '(first %s in %d, second %s in %d)' % (
                             label, r['median'], r['interval']['low'],
                             r['interval']['high'],
                             '' if r.get('verdict') == 'difference'
                             else ' ~',
                             ', '.join('%.3f' % c for c in r['cycles']),
                             _x(order.get('balanced')),
                             _x(order.get('first')),
                             order.get('cycles_first', 0),
                             _x(order.get('second')),
                             order.get('cycles_second', 0)))
    return lines


def _x(value):
    return '-' if value is None else 'x%.3f' % value


def format_flags(runs):
    flags = flagged_runs(runs)
    if not flags:
        return []
    return ['method not in force for the whole window (these runs '
            'measured a mixture):'] + [
        '  %s: %s: %s' % flag for flag in flags]


def format_summary(result):
    base = result.get('base', 'default')
    lines = [SUMMARY_ROW % (
        'tenant', 'mode', 'ops/s', 'MB/s', 'mean ms', 'p50 ms', 'p99 ms',
        'errors', 'hit %', 'ops/s vs ' + base, 'mean latency vs ' + base)]
    for label, modes in sorted(result['summary'].items()):
        lines += [_summary_row(label, mode, e, base)
                  for mode, e in modes.items()]
    lines += _geomean_rows(result.get('per_tenant') or {})
    lines.append('ratios: median over cycles [95 %% bootstrap interval, '
                 'cycles resampled]; "~": no difference (the interval '
                 'includes 1, or the median is inside the A/A spread of '
                 '%s* against %s); %s: all tenants\' operations '
                 'added up; %s: geometric mean of the tenants\' ratios; '
                 'hit %%: GETs answered from the cache (X-Mass-Cache: hit) '
                 'among successful GETs' % (base, base, ALL, GEOMEAN))
    lines += format_spreads(result)
    lines += format_between(result.get('between') or {})
    lines += format_flags(result.get('runs') or [])
    if result.get('resources'):
        lines += ['', resources_report.format_table(result['resources'], base)]
    if result.get('costs'):
        lines += ['', resources_report.format_costs(result['costs'], base)]
    return '\n'.join(lines)


def format_phased_run(run):
    """``format_run`` of a run, or of each phase of a phased run
    (mass_bench.phases) under its name."""
    if not run.get('phases'):
        return format_run(run)
    lines = []
    for phase in run['phases']:
        lines += ['  phase %s (from %.0f s):' % (
            phase['phase'], phase['offset']), format_run(phase)]
    return '\n'.join(lines)


def format_phases(result):
    """The summary table of each phase of a phased comparison
    (mass_bench.phases.summaries), after the whole runs'; '' without
    phases."""
    lines = []
    for phase in result.get('phases') or ():
        lines += ['', 'phase %s (measured from %.0f s of the phases laid '
                  'end to end):' % (phase['phase'], phase['offset']),
                  format_summary(dict(phase, base=result.get(
                      'base', 'default')))]
        lines += format_reaction(phase.get('reaction') or {})
    return '\n'.join(lines)


def format_reaction(reaction):
    """Lines of a phase's reaction times (phases.reactions): per mode and
    tenant, the new policy and the seconds until every proxy worker
    applied it, median and worst over the runs."""
    def seconds(value):
        return 'never' if value is None else '%.1f s' % value
    lines = []
    for mode, tenants in sorted(reaction.items()):
        for label, seen in sorted(tenants.items()):
            policies = sorted({' '.join(p or '-' for p in policy)
                               for policy in seen['policies']})
            lines.append(
                '  reaction, %s %s: changed in %d of %d runs, to %s; on '
                'every worker after %s (median), %s (worst)' % (
                    mode, label, seen['changed'], seen['runs'],
                    ' / '.join(policies), seconds(seen['median']),
                    seconds(seen['worst'])))
    return lines
