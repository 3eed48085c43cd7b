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
"""Ratios against default over cycles: the bootstrap interval, the A/A
control's spread, the verdict, and the per-tenant summary figure (the
geometric mean of the tenants' ratios)."""
import random
import statistics

import pytest

from mass_bench import ratios, report, summary


def test_bootstrap_resamples_cycles_with_a_fixed_seed():
    values = [1.10, 1.05, 1.12, 1.08, 1.11]
    low, high = ratios.bootstrap_interval(values)
    assert (low, high) == ratios.bootstrap_interval(values)
    # what the definition gives: 2000 resamples of the cycles, with
    # replacement, the 2.5 and 97.5 percentiles of their medians
    rng = random.Random(ratios.SEED)
    medians = sorted(statistics.median(rng.choices(values, k=5))
                     for _ in range(2000))
    assert low == pytest.approx(ratios.quantile(medians, 0.025))
    assert high == pytest.approx(ratios.quantile(medians, 0.975))
    assert min(values) <= low <= statistics.median(values) <= high <= \
        max(values)
    assert ratios.RESAMPLES == 2000 and ratios.CONFIDENCE == 0.95


def test_bootstrap_of_one_value_or_none():
    assert ratios.bootstrap_interval([1.2]) == (1.2, 1.2)
    assert ratios.bootstrap_interval([]) is None


def test_quantile_interpolates_between_ranks():
    assert ratios.quantile([1.0, 2.0, 3.0, 4.0, 5.0], 0.5) == 3.0
    assert ratios.quantile([1.0, 2.0], 0.25) == 1.25
    assert ratios.quantile([7.0], 0.975) == 7.0


@pytest.mark.parametrize('ratios_, control, verdict', [
    # the interval excludes 1 and the median is outside the A/A spread
    ([1.12, 1.10, 1.11, 1.13, 1.09], [0.97, 1.03], 'difference'),
    # the interval excludes 1, but the A/A runs differ as much
    ([1.12, 1.10, 1.11, 1.13, 1.09], [0.88, 1.15], 'no difference'),
    # the median is outside the A/A spread, but the interval includes 1
    ([1.20, 0.95, 1.10, 1.25, 0.90], [0.98, 1.02], 'no difference'),
    # slower counts the same way
    ([0.88, 0.90, 0.89, 0.91, 0.87], [0.97, 1.03], 'difference'),
])
def test_a_difference_needs_the_interval_and_the_control(ratios_, control,
                                                         verdict):
    r = ratios.ratio_summary(ratios_, control)
    assert r['verdict'] == verdict
    assert r['median'] == statistics.median(ratios_)
    assert r['interval']['low'] <= r['median'] <= r['interval']['high']
    assert r['control']['min'] == min(control + [1.0])


def test_without_a_control_there_is_no_verdict():
    r = ratios.ratio_summary([1.5, 1.6, None], control=[None])
    assert r['cycles'] == [1.5, 1.6]
    assert 'verdict' not in r and 'control' not in r
    assert r['interval']['resamples'] == 2000
    assert ratios.ratio_summary([None, None]) is None


def test_control_spread_includes_one():
    assert ratios.control_spread([1.02, 1.04]) == {
        'min': 1.0, 'max': 1.04, 'cycles': [1.02, 1.04]}
    assert ratios.control_spread([None]) is None


def test_geometric_mean():
    assert ratios.geometric_mean([2.0, 0.5]) == pytest.approx(1.0)
    assert ratios.geometric_mean([1.1, 1.1, 1.1]) == pytest.approx(1.1)
    assert ratios.geometric_mean([1.1, None]) is None
    assert ratios.geometric_mean([1.1, 0.0]) is None
    assert ratios.geometric_mean([]) is None


def figures(ops, mean):
    return {'ops_per_s': ops, 'mb_per_s': 1.0, 'mean_ms': mean,
            'p50_ms': mean, 'p99_ms': 2 * mean, 'errors': 0, 'gets': 0,
            'hits': 0, 'hit_ratio': None, 'workload': 'A',
            'concurrency': 1}


def run(mode, cycle, control, photos, backup):
    return {'mode': mode, 'cycle': cycle, 'control': control,
            'label': 'cycle %d %s%s' % (cycle + 1, mode,
                                        ' (A/A control)' if control
                                        else ''),
            'tenants': {'photos': figures(*photos),
                        'backup': figures(*backup)}}


def two_tenants():
    """photos twice as fast with mass, backup half as fast: one tenant's
    gain is the other's loss, and backup makes few operations."""
    runs = []
    for cycle, noise in enumerate([1.0, 1.02, 0.98, 1.01, 0.99]):
        runs += [run('default', cycle, False, (100, 10.0), (10, 50.0)),
                 run('default', cycle, True, (100 * noise, 10.0),
                     (10 / noise, 50.0)),
                 run('mass', cycle, False, (200, 5.0), (5, 100.0))]
    return runs


def test_the_per_tenant_figure_is_the_geometric_mean():
    runs = two_tenants()
    per_tenant = summary.per_tenant_summary(runs, ['default', 'mass'])
    assert set(per_tenant) == {'mass', 'control'}
    ops = per_tenant['mass']['throughput_ratio']
    # 2.0 and 0.5: no gain per tenant, where all tenants' operations
    # added up gained 95 %
    assert ops['median'] == pytest.approx(1.0)
    assert ops['verdict'] == 'no difference'
    assert per_tenant['mass']['latency_ratio']['median'] == \
        pytest.approx(1.0)
    overall = summary.summary(runs, ['default', 'mass'])[summary.ALL]
    assert overall['mass']['throughput_ratio']['median'] == \
        pytest.approx(205 / 110.0)
    spread = per_tenant['control']['aa_spread']['ops_per_s']
    # photos' noise and backup's 1/noise cancel out in the geometric mean
    assert spread['min'] == pytest.approx(1.0)
    assert spread['max'] == pytest.approx(1.0)


def test_the_control_spread_is_reported_per_tenant_and_overall():
    s = summary.summary(two_tenants(), ['default', 'mass'])
    photos = s['photos']['control']['aa_spread']
    assert photos['ops_per_s']['min'] == pytest.approx(0.98)
    assert photos['ops_per_s']['max'] == pytest.approx(1.02)
    assert photos['mean_ms'] == {'min': 1.0, 'max': 1.0,
                                 'cycles': [1.0] * 5}
    assert s[summary.ALL]['control']['aa_spread']['ops_per_s']['max'] > 1.0
    assert 'aa_spread' not in s['photos']['mass']
    assert s['photos']['mass']['throughput_ratio']['verdict'] == \
        'difference'


def test_the_summary_table_shows_intervals_spreads_and_the_geo_mean():
    runs = two_tenants()
    result = {'runs': runs,
              'summary': summary.summary(runs, ['default', 'mass']),
              'per_tenant': summary.per_tenant_summary(runs, ['default',
                                                              'mass'])}
    lines = report.format_summary(result).splitlines()
    rows = {tuple(line.split()[:2]): line for line in lines}
    assert '2.000 [2.000-2.000]' in rows['photos', 'mass']
    assert '1.000 [1.000-1.000] ~' in rows['geo-mean', 'mass']
    spread = lines.index('A/A spread (default* against default, min-max '
                         'over cycles, 1 included): ops/s | mean latency')
    # all tenants: (100 x noise + 10 / noise) / 110 ops/s
    assert lines[spread + 1].split()[:3] == ['(all)', '0.984-1.016', '|']
    assert lines[spread + 3].split()[:2] == ['photos', '0.980-1.020']
    assert lines[spread + 4].split()[0] == 'geo-mean'


def test_abba_reverses_every_other_cycle():
    assert ratios.abba(('default', 'static', 'mass'), 3) == [
        ['default', 'static', 'mass'], ['mass', 'static', 'default'],
        ['default', 'static', 'mass']]
    assert ratios.abba((), 2) == [[], []]


def test_median_skips_what_was_not_measured():
    assert ratios.median([3, None, 1, 2]) == 2
    assert ratios.median([None]) is None
