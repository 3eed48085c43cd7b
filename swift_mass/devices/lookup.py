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
"""Which class weights serve a workload best: BACOS's lookup table.

W = (w1, ..., wL) gives each performance class (slowest first: the
classes of the devices file, :mod:`swift_mass.devices.classes`) its share
of a ring's weight; the shares sum to 1.  A workload is (n_clients,
read_ratio).  For every workload measured the table keeps each W tried,
its runs, and the best W.

A run is scored by F = mean response time (s) + E x error ratio, lower is
better; E, the table's ``error_penalty_s``, 10 s unless the table says
otherwise, prices a failed request as a client pays for it (a timeout,
then a retry), so that a W whose requests fail fast never beats one
whose requests succeed.  A W's score is the mean F of its runs: measuring
a W again averages, it does not keep the luckier run.

The file (JSON)::

    {"version": 1, "classes": ["slow", "fast"], "error_penalty_s": 10.0,
     "entries": [{"n_clients": 16, "read_ratio": 0.9,
                  "best": {"weights": [0.2, 0.8], "score": 0.041},
                  "candidates": [{"weights": [0.2, 0.8], "score": 0.041,
                                  "runs": [{"mean_latency_s": 0.041,
                                            "error_ratio": 0.0,
                                            "score": 0.041,
                                            "measured_at": 1764000000.0}]}]}]}

A runner measuring the grid records each run::

    lookup.record_file('lookup.json', ['slow', 'fast'], 16, 0.9,
                       (0.2, 0.8), mean_latency_s=0.041, error_ratio=0.0)

and ``swift-mass weights`` picks the W of the nearest workload measured::

    lookup.nearest(lookup.load_table('lookup.json'), 12, 0.8)['weights']
"""
import json
import math
import os
import time

from swift.common.utils import lock_path

from swift_mass.devices.classes import write_json

VERSION = 1
ERROR_PENALTY_S = 10.0
# W compared, stored and summed at this precision: 0.1 + 0.2 is 0.3
DIGITS = 6
RATIO_DIGITS = 4
SUM_TOLERANCE = 1e-5


def _number(value, name, low, high, allowed):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not low <= value <= high:
        raise ValueError('%s %r is not valid; allowed: %s' % (
            name, value, allowed))
    return value


def score(mean_latency_s, error_ratio, error_penalty_s=ERROR_PENALTY_S):
    """F of a run: ``mean_latency_s + error_penalty_s * error_ratio``."""
    _number(mean_latency_s, 'mean latency', 0, math.inf,
            'seconds, 0 or more')
    _number(error_ratio, 'error ratio', 0, 1, 'from 0 to 1')
    _number(error_penalty_s, 'error penalty', 0, math.inf,
            'seconds, 0 or more')
    return round(mean_latency_s + error_penalty_s * error_ratio, 9)


def check_weights(weights, classes, allow_zero=False):
    """``weights`` as a tuple of floats, one per class; ValueError unless
    they are shares summing to 1, each above 0 (or 0, ``allow_zero``:
    a class at 0 has its devices drained)."""
    low = 'at least 0' if allow_zero else 'above 0'
    allowed = '%d shares, one per class (%s), each %s, summing to 1' % (
        len(classes), ', '.join(classes), low)
    try:
        values = tuple(round(float(w), DIGITS) for w in weights)
    except (TypeError, ValueError):
        values = ()
    if len(values) != len(classes) or \
            any(not (0 <= w if allow_zero else 0 < w) for w in values) or \
            abs(sum(values) - 1) > SUM_TOLERANCE:
        raise ValueError('--weights %s is not valid; allowed: %s' % (
            ','.join(str(w) for w in weights or ()) or "''", allowed))
    return values


def parse_weights(text, classes, allow_zero=False):
    """``--weights 0.3,0.7``."""
    return check_weights([w.strip() for w in text.split(',')], classes,
                         allow_zero)


def weight_grid(classes, step=0.1, min_weight=None):
    """Every W over ``classes`` whose shares are multiples of ``step``
    and at least ``min_weight`` (default ``step``: no class at 0, which
    would drain its devices), in ascending order."""
    _number(step, '--step', 1e-9, 1, 'from above 0 to 1, dividing 1')
    units = round(1 / step)
    if abs(units * step - 1) > 1e-9:
        raise ValueError('--step %r is not valid; allowed: from above 0 to '
                         '1, dividing 1 (0.1, 0.05, 0.25...)' % step)
    low = step if min_weight is None else min_weight
    _number(low, '--min-weight', 0, 1, 'from 0 to 1')
    least = math.ceil(round(low / step, 9))

    def spread(left, count):
        if count == 1:
            if left >= least:
                yield (left,)
            return
        for first in range(least, left - least * (count - 1) + 1):
            for rest in spread(left - first, count - 1):
                yield (first,) + rest
    return [tuple(round(u / units, DIGITS) for u in grid)
            for grid in spread(units, len(classes))]


def new_table(classes, error_penalty_s=ERROR_PENALTY_S):
    """An empty table over ``classes``, slowest first."""
    classes = [str(c) for c in classes]
    if not classes or len(set(classes)) != len(classes):
        raise ValueError('classes %r are not valid; allowed: distinct '
                         'names, slowest first' % (classes,))
    _number(error_penalty_s, 'error penalty', 0, math.inf,
            'seconds, 0 or more')
    return {'version': VERSION, 'classes': classes,
            'error_penalty_s': float(error_penalty_s), 'entries': []}


def _workload(n_clients, read_ratio):
    _number(n_clients, 'n_clients', 1, math.inf, 'a whole number, 1 or more')
    if n_clients != int(n_clients):
        raise ValueError('n_clients %r is not valid; allowed: a whole '
                         'number, 1 or more' % (n_clients,))
    _number(read_ratio, 'read ratio', 0, 1, 'from 0 to 1')
    return int(n_clients), round(float(read_ratio), RATIO_DIGITS)


def record(table, n_clients, read_ratio, weights, mean_latency_s,
           error_ratio, measured_at=None):
    """Add one measured run of W ``weights`` under the workload to
    ``table``; the workload's entry, its best W chosen again (lowest
    score; between equal scores, the smaller W)."""
    n_clients, read_ratio = _workload(n_clients, read_ratio)
    weights = list(check_weights(weights, table['classes'],
                                 allow_zero=True))
    run = {'mean_latency_s': mean_latency_s, 'error_ratio': error_ratio,
           'score': score(mean_latency_s, error_ratio,
                          table['error_penalty_s']),
           'measured_at': time.time() if measured_at is None
           else measured_at}
    for entry in table['entries']:
        if (entry['n_clients'], entry['read_ratio']) == (n_clients,
                                                         read_ratio):
            break
    else:
        entry = {'n_clients': n_clients, 'read_ratio': read_ratio,
                 'candidates': []}
        table['entries'].append(entry)
        table['entries'].sort(key=lambda e: (e['n_clients'],
                                             e['read_ratio']))
    for candidate in entry['candidates']:
        if candidate['weights'] == weights:
            break
    else:
        candidate = {'weights': weights, 'runs': []}
        entry['candidates'].append(candidate)
        entry['candidates'].sort(key=lambda c: c['weights'])
    candidate['runs'].append(run)
    candidate['score'] = round(sum(r['score'] for r in candidate['runs']) /
                               len(candidate['runs']), 9)
    best = min(entry['candidates'], key=lambda c: (c['score'],
                                                   c['weights']))
    entry['best'] = {'weights': best['weights'], 'score': best['score']}
    return entry


def nearest(table, n_clients, read_ratio):
    """The best W of the measured workload nearest (n_clients,
    read_ratio): Euclidean distance with n_clients divided by the span of
    the table's n_clients (by that n_clients when they are all one) and
    read_ratio as it is, from 0 to 1; between equally near ones, the
    fewer clients, then the lower read ratio.  A dict: n_clients,
    read_ratio (the entry's), weights, score, distance."""
    n_clients, read_ratio = _workload(n_clients, read_ratio)
    entries = table['entries']
    if not entries:
        raise ValueError('the lookup table has no workload measured')
    counts = [e['n_clients'] for e in entries]
    span = (max(counts) - min(counts)) or max(counts)

    def distance(entry):
        return round(math.hypot((entry['n_clients'] - n_clients) / span,
                                entry['read_ratio'] - read_ratio), 12)
    entry = min(entries, key=lambda e: (distance(e), e['n_clients'],
                                        e['read_ratio']))
    return {'n_clients': entry['n_clients'],
            'read_ratio': entry['read_ratio'],
            'weights': tuple(entry['best']['weights']),
            'score': entry['best']['score'], 'distance': distance(entry)}


def load_table(path):
    """The table in ``path``; ValueError when it is not one."""
    try:
        with open(path) as fp:
            table = json.load(fp)
    except FileNotFoundError:
        raise ValueError('lookup table %s does not exist' % path)
    except ValueError as err:
        raise ValueError('lookup table %s is not JSON: %s' % (path, err))
    if not isinstance(table, dict) or table.get('version') != VERSION:
        raise ValueError('%s is not a version %d lookup table' % (
            path, VERSION))
    new_table(table.get('classes') or (), table.get('error_penalty_s'))
    for entry in table.get('entries', ()):
        _workload(entry['n_clients'], entry['read_ratio'])
        check_weights(entry['best']['weights'], table['classes'],
                      allow_zero=True)
    return table


def save_table(path, table):
    """Write ``table`` to ``path`` whole or not at all."""
    write_json(path, table)


def record_file(path, classes, n_clients, read_ratio, weights,
                mean_latency_s, error_ratio, measured_at=None,
                error_penalty_s=ERROR_PENALTY_S):
    """:func:`record` into the table file ``path`` (made, over
    ``classes``, when missing; locked meanwhile, for runners in
    parallel); the workload's entry."""
    with lock_path(os.path.dirname(os.path.abspath(path)),
                   name=os.path.basename(path)):
        if os.path.exists(path):
            table = load_table(path)
            if table['classes'] != list(classes):
                raise ValueError('%s is over the classes %s, not %s' % (
                    path, ', '.join(table['classes']), ', '.join(classes)))
        else:
            table = new_table(classes, error_penalty_s)
        entry = record(table, n_clients, read_ratio, weights,
                       mean_latency_s, error_ratio, measured_at)
        save_table(path, table)
    return entry
