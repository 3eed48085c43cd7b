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
"""Ratios against ``default`` over a comparison's ABBA cycles, and when
one is a difference.

A ratio (a mode's figure over default's, of the same cycle) is summed up
over cycles by its median, its min-max and a 95 % bootstrap interval of
the median: the cycles are resampled with replacement (``RESAMPLES``
times, with a fixed seed, so the same cycles give the same interval) and
the interval is the 2.5 and 97.5 percentiles of the resamples' medians.
The A/A control (default run twice in a cycle) gives the spread of the
ratios two identical runs have here: its min-max, 1 included.  A ratio is
a ``difference`` only when its interval excludes 1 *and* its median is
outside that spread; otherwise ``no difference``.  Without an A/A control
there is no verdict.

The per-tenant summary figure is the geometric mean of the tenants'
ratios in a cycle (each tenant counts the same, however many operations
it makes), summed up over cycles in the same way.

Plain Python: the standard library's statistics and random.
"""
import math
import random
import statistics

RESAMPLES = 2000
SEED = 20240601
CONFIDENCE = 0.95


def abba(items, cycles):
    """The order of ``items`` in each of ``cycles`` cycles: as given in
    the even ones, reversed in the odd ones (A B, B A, A B, ...), so that
    a drift of the machine falls on every item alike."""
    items = list(items)
    return [items if cycle % 2 == 0 else items[::-1]
            for cycle in range(cycles)]


def median(values):
    """The median of the values that are not None; None if none is."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def quantile(ordered, fraction):
    """The ``fraction`` quantile of the sorted list ``ordered``, by linear
    interpolation between the closest ranks."""
    position = fraction * (len(ordered) - 1)
    low = int(math.floor(position))
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def bootstrap_interval(values, resamples=RESAMPLES, seed=SEED,
                       confidence=CONFIDENCE):
    """(low, high): the percentile interval of the median of ``values``
    (one per cycle), resampled with replacement; None without values."""
    if not values:
        return None
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values)))
                     for _ in range(resamples))
    tail = (1.0 - confidence) / 2.0
    return quantile(medians, tail), quantile(medians, 1.0 - tail)


def control_spread(control):
    """{'min', 'max'} of the A/A control's ratios, 1 included (an identical
    run differs by nothing); None without any."""
    control = [r for r in (control or []) if r is not None]
    if not control:
        return None
    return {'min': min(control + [1.0]), 'max': max(control + [1.0]),
            'cycles': control}


def verdict(median, interval, spread):
    """'difference' when the interval excludes 1 and the median is outside
    the A/A spread, else 'no difference'; None without a spread."""
    if spread is None:
        return None
    excludes_one = interval[0] > 1.0 or interval[1] < 1.0
    outside_noise = not spread['min'] <= median <= spread['max']
    return 'difference' if excludes_one and outside_noise else \
        'no difference'


def ratio_summary(ratios, control=None):
    """Median, min-max and bootstrap interval of per-cycle ratios; with the
    A/A control's ratios, its spread and the verdict."""
    ratios = [r for r in ratios if r is not None]
    if not ratios:
        return None
    low, high = bootstrap_interval(ratios)
    result = {'median': statistics.median(ratios), 'min': min(ratios),
              'max': max(ratios), 'cycles': ratios,
              'interval': {'low': low, 'high': high,
                           'confidence': CONFIDENCE,
                           'resamples': RESAMPLES}}
    spread = control_spread(control)
    if spread is not None:
        result['control'] = spread
        result['verdict'] = verdict(result['median'], (low, high), spread)
    return result


def geometric_mean(values):
    """The geometric mean of positive numbers; None if there are none or
    any is missing or not positive (a tenant without a ratio that cycle
    leaves the cycle out)."""
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return math.exp(statistics.mean(math.log(v) for v in values))
