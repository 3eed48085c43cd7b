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
"""mass_bench.scale's (tools/bench-scale's) pure parts: the spread of
requests over tenants, the table it prints, its options."""
import random

import pytest

from mass_bench import ratios
from mass_bench import scale as bench_scale
from mass_bench import scale_report, scale_tenants


def test_zipf_weights_are_cumulative_and_fall_with_rank():
    weights = scale_tenants.zipf_weights(5, 1.0)
    assert weights == pytest.approx([1, 1.5, 1.5 + 1 / 3.0, 1.5 + 1 / 3.0 +
                                     0.25, 1.5 + 1 / 3.0 + 0.25 + 0.2])
    steps = [b - a for a, b in zip([0] + weights, weights)]
    assert steps == sorted(steps, reverse=True)


def test_realistic_spread_is_a_zipf_tail_most_tenants_idle():
    tenants = 10000
    weights = scale_tenants.zipf_weights(tenants, 1.2)
    requests = scale_tenants.spread('realistic', tenants,
                                    random.Random(1), weights)
    assert sum(requests.values()) == tenants // 2
    assert all(0 <= i < tenants for i in requests)
    # most idle; the busiest rank takes a large share of the requests
    assert len(requests) < tenants / 4
    assert max(requests.values()) == requests[0] > tenants / 50
    # reproducible with the same seed
    assert requests == scale_tenants.spread('realistic', tenants,
                                            random.Random(1), weights)
    with pytest.raises(ValueError):
        scale_tenants.spread('realistic', tenants, random.Random(1),
                             weights[:10])


def test_worst_spread_is_every_tenant():
    for kind in ('worst', 'worst-new'):
        requests = scale_tenants.spread(kind, 1000, random.Random(1))
        assert requests == dict.fromkeys(range(1000), 10)


def test_tenants_and_their_profiles():
    assert scale_tenants.tenant_name(255) == 'AUTH_000000ff'
    assert [scale_tenants.profile(i) for i in range(5)] == [
        'read', 'read', 'write', 'mixed', 'read']


def test_format_table():
    text = scale_report.format_table(
        [{'label': '1,000 worst', 'cpu': 0.0123, 'commands': 12345,
          'trips': None},
         {'label': '100,000 worst', 'cpu': 1.5, 'commands': 7,
          'trips': 25.0}],
        [('label', 'tenants'), ('cpu', 'CPU s'), ('commands', 'cmds'),
         ('trips', 'trips')])
    assert text.splitlines() == [
        'tenants        CPU s    cmds   trips',
        '-------------  -----  ------  ------',
        '1,000 worst    0.012  12,345       -',
        '100,000 worst  1.500       7  25.000',
    ]


def test_figures():
    assert scale_report.fmt(None) == '-'
    assert scale_report.fmt(1234567.8) == '1,234,568'
    assert scale_report.fmt(0.5, 2) == '0.50'
    assert ratios.median([3, None, 1, 2]) == 2
    assert ratios.median([None]) is None
    assert scale_report.in_intervals(7.5, 5) == 1.5
    assert scale_report.in_intervals(None, 5) is None


def test_options(capsys):
    args = bench_scale.parse_args([])
    assert args.sizes == (1000, 10000, 100000)
    assert args.spreads == ('realistic', 'worst', 'worst-new')
    assert (args.repeats, args.processes, args.process_interval) == (
        3, 16, 5.0)
    assert bench_scale.parse_args(['--quick']).sizes == (1000, 10000)
    assert bench_scale.parse_args(['--sizes', '2_000,30']).sizes == (
        2000, 30)
    with pytest.raises(SystemExit) as exit:
        bench_scale.parse_args(['--spreads', 'worst,best'])
    assert exit.value.code == 2
    assert "--spreads: 'best'" in capsys.readouterr().err
