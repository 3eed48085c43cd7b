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
"""The benchmark's statistics: the figures of a run and the summary of
a comparison's runs.

Of a run, per tenant (``summarise``): operations/s, MB/s, mean, p50 and
p99 latency, errors (5xx and failed connections), the cache's hit ratio
(GETs answered with ``X-Mass-Cache: hit`` among successful GETs), the
share of them merge's single flight answered (``X-Mass-Merge: merged``) and a
per-second timeline of operations/s (``timeline``).  A request counts in
the window it *completed* in (began + latency inside [warm-up, warm-up +
seconds]), whether it began in the warm-up or not (``completed_in``).

Of a comparison (``summary``): per tenant and mode, and for all tenants
together (``ALL``: their operations added up, the mean latency weighted
by operations), the median figures over cycles and the ratios of
throughput and mean latency against ``default`` of the same cycle,
summed up over cycles by ``mass_bench.ratios`` (median, min-max, bootstrap
interval, verdict against the A/A control's spread); the per-tenant
summary (``per_tenant_summary``): the geometric mean of the tenants'
ratios in each cycle, summed up likewise; per mode, the median over its
runs of where the time went and of the costs per operation
(``mass_bench.resources``); and the runs in which a tenant's method was
not in force for the whole window (``flagged_runs``).

Plain Python, no I/O; ``mass_bench.report`` prints what it makes.
"""
import collections
import math
import statistics

from mass_bench import policy_table, resources
from mass_bench.ratios import control_spread, geometric_mean, ratio_summary


# ------------------------------------------------------------- a run

def percentile(values, fraction):
    """The ``fraction`` (0.01 to 0.99) percentile of ``values``, by
    linear interpolation between the closest ranks; None without values."""
    if len(values) < 2:
        # statistics.quantiles wants two values before Python 3.13
        return values[0] if values else None
    return statistics.quantiles(values, n=100, method='inclusive')[
        round(fraction * 100) - 1]


def completed_in(rows, begin, end):
    """The rows of requests that completed (began + latency) in [begin,
    end)."""
    return [r for r in rows if begin <= r[0] + r[2] < end]


def summarise(rows, warmup, seconds):
    """Figures of one tenant's measured requests: those that completed
    in the window [warmup, warmup + seconds), wherever they began."""
    measured = completed_in(rows, warmup, warmup + seconds)
    ok = [r for r in measured if r[3] < 500]
    latencies = sorted(r[2] * 1000.0 for r in ok)
    moved = sum(r[4] for r in ok)
    by_op = collections.Counter(r[1] for r in measured)
    gets = [r for r in ok if r[1] == 'GET' and r[3] // 100 == 2]
    hits = sum(1 for r in gets if r[5] == 'hit')
    merged = sum(1 for r in gets if r[5] == 'merged')
    told = not any(r[5] is None for r in gets)
    return {
        'operations': len(measured),
        'errors': len(measured) - len(ok),
        'by_operation': dict(by_op),
        'ops_per_s': len(ok) / seconds if seconds else 0.0,
        'mb_per_s': moved / seconds / 1e6 if seconds else 0.0,
        'mean_ms': statistics.mean(latencies) if latencies else None,
        'p50_ms': percentile(latencies, 0.5),
        'p99_ms': percentile(latencies, 0.99),
        'statuses': dict(collections.Counter(str(r[3]) for r in measured)),
        'gets': len(gets),
        'hits': hits,
        # None where the client could not tell (an S3 client's GETs)
        'hit_ratio': hits / len(gets) if gets and told else None,
        'merged_ratio': merged / len(gets) if gets and told else None,
    }


def timeline(rows, seconds):
    """Per whole second of the measured time: operations finished OK and
    their mean latency (ms)."""
    ops = [0] * int(seconds)
    lat = [0.0] * int(seconds)
    for offset, _op, latency, status, *_ in rows:
        second = int(math.floor(offset + latency))
        if 0 <= second < len(ops) and status < 500:
            ops[second] += 1
            lat[second] += latency * 1000.0
    return {'ops': ops, 'mean_ms': [lat[i] / ops[i] if ops[i] else None
                                    for i in range(len(ops))]}


def window_ticks(warmup, seconds):
    """The offsets from the window's start at which a run samples: each
    whole second from the warm-up's start, and the window's end."""
    first = -int(math.floor(warmup))
    return [float(k) for k in range(first, int(math.ceil(seconds)))] + \
        [float(seconds)]


def classes_of(sample):
    """{label: class} of a policy table sample ('unknown' for a tenant
    without an entry; {} for a table that could not be read)."""
    return {label: (entry or {}).get('class') or 'unknown'
            for label, entry in (sample or {}).items()}


# ------------------------------------------------------------- a comparison

ALL = '(all)'


def overall(tenants):
    """All tenants of a run as one: operations and bytes added up, the
    mean latency weighted by operations (percentiles do not add up)."""
    ops = sum(f['ops_per_s'] for f in tenants.values())
    weighted = [(f['mean_ms'], f['ops_per_s']) for f in tenants.values()
                if f['mean_ms'] is not None]
    # the hit ratio of the tenants whose clients could tell a hit
    told = [f for f in tenants.values() if f.get('hit_ratio') is not None]
    gets = sum(f['gets'] for f in told)
    hits = sum(f['hits'] for f in told)
    return {'ops_per_s': ops,
            'mb_per_s': sum(f['mb_per_s'] for f in tenants.values()),
            'mean_ms': sum(m * n for m, n in weighted) / ops if ops
            else None,
            'p50_ms': None, 'p99_ms': None,
            'errors': sum(f['errors'] for f in tenants.values()),
            'gets': gets, 'hits': hits,
            'hit_ratio': hits / gets if gets else None}


RATIO_FIELDS = (('throughput_ratio', 'ops_per_s'),
                ('latency_ratio', 'mean_ms'))


def by_label_and_cycle(runs):
    """{(label, cycle): {mode or 'control': figures}}, with all tenants
    together as ALL when a run has several."""
    by = collections.defaultdict(dict)
    for run in runs:
        tenants = dict(run['tenants'])
        if len(tenants) > 1:
            tenants[ALL] = overall(run['tenants'])
        for label, figures in tenants.items():
            key = 'control' if run['control'] else run['mode']
            by[(label, run['cycle'])][key] = figures
    return by


def _medians(figs):
    entry = {}
    for name in ('ops_per_s', 'mb_per_s', 'mean_ms', 'p50_ms', 'p99_ms',
                 'hit_ratio', 'merged_ratio'):
        values = [f[name] for f in figs if f.get(name) is not None]
        entry[name] = statistics.median(values) if values else None
    entry['errors'] = sum(f['errors'] for f in figs)
    return entry


def summary(runs, modes, base='default'):
    """Per tenant and mode, and for all tenants together: median figures
    over cycles, the ratios of throughput and mean latency against
    ``base`` (default) of the same cycle (ratios.ratio_summary), and in
    'control' the A/A control's spread (base's twin against base)."""
    out = {}
    by = by_label_and_cycle(runs)
    for label in sorted({label for label, _ in by}):
        cycles = [by[k] for k in sorted(by) if k[0] == label]
        out[label] = {}
        for mode in list(modes) + ['control']:
            figs = [c[mode] for c in cycles if mode in c]
            if not figs:
                continue
            entry = _medians(figs)
            if mode == 'control':
                entry['aa_spread'] = {field: control_spread(
                    [_ratio(c, 'control', field, base) for c in cycles])
                    for _, field in RATIO_FIELDS}
            elif mode != base:
                for name, field in RATIO_FIELDS:
                    entry[name] = ratio_summary(
                        [_ratio(c, mode, field, base) for c in cycles],
                        [_ratio(c, 'control', field, base) for c in cycles])
            out[label][mode] = entry
    return out


def geomean_ratios(by, labels, cycle, mode, field, base='default'):
    """The geometric mean of the tenants' ratios in one cycle."""
    return geometric_mean([_ratio(by.get((label, cycle), {}), mode, field,
                                  base) for label in labels])


def per_tenant_summary(runs, modes, base='default'):
    """The per-tenant summary figure: per mode, the geometric mean over
    tenants of their ratios against ``base``, summed up over cycles as
    any ratio is; in 'control' the A/A control's spread of it."""
    by = by_label_and_cycle(runs)
    labels = sorted({label for label, _ in by if label != ALL})
    cycles = sorted({cycle for _, cycle in by})
    if not labels:
        return {}

    def per_cycle(mode, field):
        return [geomean_ratios(by, labels, c, mode, field, base)
                for c in cycles]
    out = {}
    for mode in modes:
        if mode == base:
            continue
        out[mode] = {name: ratio_summary(per_cycle(mode, field),
                                         per_cycle('control', field))
                     for name, field in RATIO_FIELDS}
    out['control'] = {'aa_spread': {
        field: control_spread(per_cycle('control', field))
        for _, field in RATIO_FIELDS}}
    return out


def between_modes(runs, modes, base='default'):
    """Each later mode against each earlier one but ``base`` (``mass``
    against ``static``, say) in the same cycle: {'MODE/OTHER': {tenant
    (and ALL): ratio_summary of the per-cycle throughput ratios, with the
    A/A control's spread, and 'by_order' (:func:`by_order`)}}; {} with
    fewer than two such modes."""
    others = [m for m in modes if m != base]
    by = by_label_and_cycle(runs)
    out = {}
    for i, other in enumerate(others):
        for mode in others[i + 1:]:
            pair = out['%s/%s' % (mode, other)] = {}
            first = _ran_first(runs, mode, other)
            for label in sorted({label for label, _ in by}):
                keys = [k for k in sorted(by) if k[0] == label]
                ratios = [_ratio(by[k], mode, 'ops_per_s', other)
                          for k in keys]
                summed = ratio_summary(
                    ratios, [_ratio(by[k], 'control', 'ops_per_s', base)
                             for k in keys])
                if summed is not None:
                    summed['by_order'] = by_order(
                        ratios, [first.get(cycle) for _, cycle in keys])
                    pair[label] = summed
    return out


def _ran_first(runs, mode, other):
    """{cycle: whether ``mode`` ran before ``other`` in it}."""
    seen = {}
    for run in runs:
        if not run['control'] and run['mode'] in (mode, other):
            seen.setdefault(run['cycle'], run['mode'] == mode)
    return seen


def by_order(ratios, first):
    """Per-cycle ratios of a mode against another, split by which ran
    first in the cycle (``first``: True where the mode did): the geometric
    mean of each side, and 'balanced', the geometric mean of the two: what
    is left once a cost of running second, whichever mode, is set off
    (ABBA with an odd number of cycles runs one mode second more often).
    None on a side without cycles; 'balanced' None unless both have
    some."""
    sides = {True: [], False: []}
    for ratio, ran_first in zip(ratios, first):
        if ratio is not None and ran_first is not None:
            sides[ran_first].append(ratio)
    when_first = geometric_mean(sides[True]) if sides[True] else None
    when_second = geometric_mean(sides[False]) if sides[False] else None
    return {'first': when_first, 'second': when_second,
            'cycles_first': len(sides[True]),
            'cycles_second': len(sides[False]),
            'balanced': math.sqrt(when_first * when_second)
            if when_first and when_second else None}


def _runs_of(runs, mode):
    return [r for r in runs if (r['control'] if mode == 'control'
                                else r['mode'] == mode and
                                not r['control'])]


def median_by_mode(runs, modes, key):
    """Per mode (and 'control'): the median over its runs of each number
    of run[key]."""
    out = {}
    for mode in list(modes) + ['control']:
        value = resources.median_tree([r.get(key)
                                       for r in _runs_of(runs, mode)])
        if value is not None:
            out[mode] = value
    return out


def resource_summary(runs, modes):
    """Per mode (and 'control'): the median over its runs of where the
    time went."""
    return median_by_mode(runs, modes, 'resources')


def cost_summary(runs, modes):
    """Per mode (and 'control'): the median over its runs of the costs
    per operation."""
    return median_by_mode(runs, modes, 'costs')


def flagged_runs(runs):
    """[(run label, tenant, note)] of every tenant whose method was not
    in force for the whole window."""
    return [(run['label'], label, note)
            for run in runs
            for label, figures in sorted(run['tenants'].items())
            for note in [policy_table.flagged(figures.get('mass'))]
            if note]


def _ratio(cycle, mode, field, base='default'):
    if mode not in cycle or base not in cycle:
        return None
    against = cycle[base][field]
    value = cycle[mode][field]
    if not against or value is None:
        return None
    return value / against
