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
"""The BACOS lookup table: scores, the grid of class weights, recording
runs, the nearest workload."""
import json
import os

import pytest

from swift_mass.devices import lookup

CLASSES = ['slow', 'fast']


def test_score_is_latency_plus_priced_errors():
    assert lookup.score(0.05, 0.0) == 0.05
    # 1% of requests failing costs like 0.1 s more latency
    assert lookup.score(0.05, 0.01) == 0.15
    assert lookup.score(0.05, 0.01, error_penalty_s=1.0) == 0.06
    # failing fast never wins over succeeding slowly
    assert lookup.score(0.001, 0.5) > lookup.score(2.0, 0.0)


@pytest.mark.parametrize('args, message', [
    ((-0.1, 0), 'mean latency -0.1 is not valid; allowed: seconds, 0 or '
     'more'),
    ((0.1, 1.5), 'error ratio 1.5 is not valid; allowed: from 0 to 1'),
    ((0.1, -0.01), 'error ratio -0.01 is not valid'),
    ((float('nan'), 0), 'mean latency nan is not valid'),
    (('0.1', 0), "mean latency '0.1' is not valid"),
    ((0.1, 0, -1), 'error penalty -1 is not valid'),
])
def test_score_refuses(args, message):
    with pytest.raises(ValueError) as caught:
        lookup.score(*args)
    assert str(caught.value).startswith(message)


def test_weights_checked_and_parsed():
    assert lookup.parse_weights('0.3, 0.7', CLASSES) == (0.3, 0.7)
    assert lookup.check_weights([0.1, 0.2, 0.7], ['a', 'b', 'c']) == \
        (0.1, 0.2, 0.7)
    assert lookup.check_weights([0, 1], CLASSES, allow_zero=True) == (0, 1)
    with pytest.raises(ValueError) as caught:
        lookup.parse_weights('0,1', CLASSES)
    assert str(caught.value) == (
        '--weights 0,1 is not valid; allowed: 2 shares, one per class '
        '(slow, fast), each above 0, summing to 1')
    for bad in ('0.3,0.6', '0.3,0.7,0', 'x,1', '1.2,-0.2', ''):
        with pytest.raises(ValueError, match='--weights .* is not valid'):
            lookup.parse_weights(bad, CLASSES, allow_zero=True)


def test_weight_grid():
    assert lookup.weight_grid(CLASSES, 0.25) == [(0.25, 0.75), (0.5, 0.5),
                                                 (0.75, 0.25)]
    assert lookup.weight_grid(CLASSES, 0.5, min_weight=0) == [
        (0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]
    three = lookup.weight_grid(['a', 'b', 'c'], 0.1)
    # 10 tenths over 3 classes, none at 0: C(9, 2)
    assert len(three) == 36 and three[0] == (0.1, 0.1, 0.8)
    assert three == sorted(three)
    assert all(abs(sum(w) - 1) < 1e-9 and min(w) >= 0.1 for w in three)
    # at least 0.3 each: the few left
    assert lookup.weight_grid(['a', 'b', 'c'], 0.1, 0.3) == [
        (0.3, 0.3, 0.4), (0.3, 0.4, 0.3), (0.4, 0.3, 0.3)]
    # each W of the grid is one a table takes
    for w in lookup.weight_grid(['a', 'b', 'c'], 1 / 3):
        assert lookup.check_weights(w, ['a', 'b', 'c'])
    assert lookup.weight_grid(['a', 'b', 'c'], 0.5) == []
    for step in (0, 0.3, 2):
        with pytest.raises(ValueError, match='--step .* is not valid'):
            lookup.weight_grid(CLASSES, step)


def test_record_keeps_every_candidate_and_the_best():
    table = lookup.new_table(CLASSES)
    entry = lookup.record(table, 16, 0.9, (0.2, 0.8), 0.040, 0.0,
                          measured_at=1.0)
    assert entry['best'] == {'weights': [0.2, 0.8], 'score': 0.04}
    # faster but failing: not the best
    lookup.record(table, 16, 0.9, (0.5, 0.5), 0.030, 0.01, measured_at=2)
    # faster and clean: the best
    entry = lookup.record(table, 16, 0.9, [0.1, 0.9], 0.035, 0.0,
                          measured_at=3)
    assert entry['best'] == {'weights': [0.1, 0.9], 'score': 0.035}
    assert [c['weights'] for c in entry['candidates']] == [
        [0.1, 0.9], [0.2, 0.8], [0.5, 0.5]]
    # measured again, a W's score is its runs' mean
    entry = lookup.record(table, 16, 0.9000001, (0.1, 0.9), 0.045, 0.0,
                          measured_at=4)
    assert len(table['entries']) == 1
    assert entry['candidates'][0]['score'] == 0.04
    assert len(entry['candidates'][0]['runs']) == 2
    # equal scores: the smaller W
    assert entry['best'] == {'weights': [0.1, 0.9], 'score': 0.04}
    lookup.record(table, 4, 0.5, (0.5, 0.5), 0.01, 0.0)
    assert [(e['n_clients'], e['read_ratio']) for e in table['entries']] == \
        [(4, 0.5), (16, 0.9)]
    assert json.loads(json.dumps(table)) == table


@pytest.mark.parametrize('args, message', [
    ((0, 0.5), 'n_clients 0 is not valid; allowed: a whole number, 1 or '
     'more'),
    ((2.5, 0.5), 'n_clients 2.5 is not valid'),
    ((True, 0.5), 'n_clients True is not valid'),
    ((4, 1.1), 'read ratio 1.1 is not valid; allowed: from 0 to 1'),
])
def test_workloads_checked(args, message):
    table = lookup.new_table(CLASSES)
    with pytest.raises(ValueError) as caught:
        lookup.record(table, *args, weights=(0.5, 0.5), mean_latency_s=1,
                      error_ratio=0)
    assert str(caught.value).startswith(message)
    with pytest.raises(ValueError) as caught:
        lookup.nearest(table, *args)
    assert str(caught.value).startswith(message)
    assert table['entries'] == []


def measured(workloads):
    """A table with one run per (n_clients, read_ratio): W."""
    table = lookup.new_table(CLASSES)
    for (n, r), w in workloads.items():
        lookup.record(table, n, r, w, 0.01, 0.0)
    return table


def test_nearest_normalises_clients_by_the_tables_span():
    table = measured({(4, 0.2): (0.5, 0.5), (4, 0.9): (0.2, 0.8),
                      (64, 0.2): (0.7, 0.3), (64, 0.9): (0.4, 0.6)})
    found = lookup.nearest(table, 8, 0.85)
    assert (found['n_clients'], found['read_ratio'], found['weights']) == \
        (4, 0.9, (0.2, 0.8))
    assert found['distance'] == pytest.approx(((4 / 60) ** 2 +
                                               0.05 ** 2) ** 0.5)
    # 30 clients are nearer 4 than 64 (26 vs 34 of a span of 60), but a
    # read ratio 0.45 off weighs more than 8/60
    assert lookup.nearest(table, 30, 0.9)['n_clients'] == 4
    assert lookup.nearest(table, 40, 0.2)['weights'] == (0.7, 0.3)
    # beyond the table's range: still the nearest
    assert lookup.nearest(table, 500, 1.0)['weights'] == (0.4, 0.6)


def test_nearest_ties_and_single_entries():
    table = measured({(4, 0.5): (0.5, 0.5), (8, 0.5): (0.2, 0.8),
                      (6, 0.0): (0.3, 0.7), (6, 1.0): (0.6, 0.4)})
    # (6, 0.5) is as near all four (span 4: 0.5 each way): the fewest
    # clients, then the lowest read ratio
    assert lookup.nearest(table, 6, 0.5)['weights'] == (0.5, 0.5)
    del table['entries'][0]
    assert lookup.nearest(table, 6, 0.5)['weights'] == (0.3, 0.7)
    one = measured({(16, 0.5): (0.4, 0.6)})
    found = lookup.nearest(one, 4, 0.5)
    # one count of clients: distances relative to it
    assert found['weights'] == (0.4, 0.6) and found['distance'] == 0.75
    with pytest.raises(ValueError, match='no workload measured'):
        lookup.nearest(lookup.new_table(CLASSES), 1, 0.5)


def test_record_file_makes_keeps_and_refuses(tmp_path):
    path = str(tmp_path / 'lookup.json')
    lookup.record_file(path, CLASSES, 16, 0.9, (0.2, 0.8), 0.04, 0.0)
    entry = lookup.record_file(path, CLASSES, 16, 0.9, (0.3, 0.7), 0.03,
                               0.0)
    assert entry['best']['weights'] == [0.3, 0.7]
    table = lookup.load_table(path)
    assert table['entries'] == [entry]
    assert lookup.nearest(table, 10, 1)['weights'] == (0.3, 0.7)
    with pytest.raises(ValueError, match='is over the classes slow, fast, '
                       'not hdd, ssd'):
        lookup.record_file(path, ['hdd', 'ssd'], 16, 0.9, (0.3, 0.7), 1, 0)
    # a table of its own penalty
    other = str(tmp_path / 'other.json')
    lookup.record_file(other, CLASSES, 1, 0, (0.5, 0.5), 0.1, 0.5,
                       error_penalty_s=1.0)
    assert lookup.load_table(other)['entries'][0]['best']['score'] == 0.6
    assert sorted(os.listdir(tmp_path)) == [
        '.lock-lookup.json', '.lock-other.json', 'lookup.json', 'other.json']


@pytest.mark.parametrize('content, message', [
    (None, 'does not exist'),
    ('[', 'is not JSON'),
    ('{"version": 7}', 'is not a version 1 lookup table'),
    ('{"version": 1, "classes": ["a", "a"], "error_penalty_s": 10}',
     'are not valid; allowed: distinct names'),
    ('{"version": 1, "classes": ["a", "b"], "error_penalty_s": 10, '
     '"entries": [{"n_clients": 3, "read_ratio": 0.5, '
     '"best": {"weights": [0.5, 0.6]}}]}', '--weights 0.5,0.6 is not valid'),
])
def test_bad_tables(tmp_path, content, message):
    path = tmp_path / 'lookup.json'
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=message):
        lookup.load_table(str(path))
