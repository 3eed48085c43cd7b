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
import pytest

from swift_mass.control import classify as c
from swift_mass.control.classify import MIXED, READ, UNKNOWN, WRITE


# The application profiles of the Mass paper (read/write mix by operations).
@pytest.mark.parametrize('profile, reads, writes, expected', [
    ('OLTP 70/30 8 KB', 700, 300, MIXED),
    ('web file server 95/5', 950, 50, READ),
    ('decision support 100/0 1 MB', 1000, 0, READ),
    ('online game 5/95 64 KB', 50, 950, WRITE),
    ('backup 0/100', 0, 400, WRITE),
    ('exactly 80% reads', 80, 20, READ),
    ('exactly 20% reads', 20, 80, WRITE),
    ('just below 80%', 79, 21, MIXED),
    ('just above 20%', 21, 79, MIXED),
])
def test_paper_profiles(profile, reads, writes, expected):
    assert c.classify(reads, writes) == expected, profile


@pytest.mark.parametrize('reads, writes, previous', [
    (0, 0, UNKNOWN), (49, 0, UNKNOWN), (0, 49, READ), (30, 19, WRITE),
])
def test_no_decision_below_min_requests(reads, writes, previous):
    assert c.classify(reads, writes, previous) == previous


@pytest.mark.parametrize('reads, writes, previous, expected', [
    # a read-dominated tenant slipping just under 0.8 stays read: by the
    # hysteresis (0.05) over 1000 requests
    (780, 220, READ, READ), (750, 250, READ, READ), (740, 260, READ, MIXED),
    # and by two standard errors of the share (0.08) over 100
    (74, 26, READ, READ), (73, 27, READ, READ), (71, 29, READ, MIXED),
    # a mixed one needs the full 0.8 to become read
    (78, 22, MIXED, MIXED), (80, 20, MIXED, READ),
    # the same on the write side
    (220, 780, WRITE, WRITE), (250, 750, WRITE, WRITE),
    (260, 740, WRITE, MIXED),
    (26, 74, WRITE, WRITE), (27, 73, WRITE, WRITE), (29, 71, WRITE, MIXED),
    (22, 78, MIXED, MIXED), (20, 80, MIXED, WRITE),
    # hysteresis never blocks a jump across the whole range
    (0, 100, READ, WRITE), (100, 0, WRITE, READ),
])
def test_hysteresis(reads, writes, previous, expected):
    assert c.classify(reads, writes, previous) == expected


def test_oscillating_tenant_does_not_flap():
    previous = UNKNOWN
    seen = []
    for share in (80, 78, 81, 77, 79, 76, 80):
        previous = c.classify(share, 100 - share, previous)
        seen.append(previous)
    assert seen == [READ] * 7


def test_a_tenant_on_a_threshold_keeps_its_class_through_the_noise():
    # photos' upload burst (80 % PUTs) in the internal change's
    # diagnostic: its windows' requests and read shares, from READ on
    # (docs/benchmarks/adaptation-internal-diagnostic-2026-12-06); it
    # changed class at each window, six policies in four minutes
    windows = [(21, 72), (24, 99), (41, 122), (29, 116), (42, 118),
               (21, 90)]
    previous, seen = READ, []
    for reads, writes in windows:
        previous = c.classify(reads, writes, previous)
        seen.append(previous)
    assert seen == [MIXED, WRITE, WRITE, WRITE, WRITE, WRITE]


def test_the_exit_margin():
    t = c.DEFAULT_THRESHOLDS
    # many requests: the hysteresis
    assert c.exit_margin(0.8, 10000) == t.hysteresis
    # a hundred-odd: two standard errors of the share
    assert c.exit_margin(0.2, 163) == pytest.approx(2 * (0.16 / 163) ** 0.5)
    # a few: never more than half the gap between the thresholds
    assert c.exit_margin(0.8, 1) == pytest.approx(0.3)
    assert c.classify(0, 1, READ, t._replace(min_requests=1)) == WRITE


def test_custom_thresholds():
    t = c.Thresholds(read_share=0.6, write_share=0.4, min_requests=10,
                     hysteresis=0.0)
    assert c.classify(6, 4, thresholds=t) == READ
    assert c.classify(5, 5, thresholds=t) == MIXED
    assert c.classify(4, 6, thresholds=t) == WRITE
    assert c.classify(4, 5, thresholds=t) == UNKNOWN


def test_read_share():
    assert c.read_share(0, 0) is None
    assert c.read_share(3, 1) == 0.75


@pytest.mark.parametrize('fields, message', [
    (dict(read_share=0.2, write_share=0.8), 'write_share must be below'),
    (dict(read_share=1.0), 'strictly between'),
    (dict(write_share=0.0), 'strictly between'),
    (dict(min_requests=0), 'min_requests'),
    (dict(hysteresis=0.35), 'hysteresis'),
    (dict(hysteresis=-0.1), 'hysteresis'),
])
def test_check_thresholds(fields, message):
    with pytest.raises(ValueError) as err:
        c.check_thresholds(c.DEFAULT_THRESHOLDS._replace(**fields))
    assert message in str(err.value)


def test_default_thresholds_are_consistent():
    c.check_thresholds(c.DEFAULT_THRESHOLDS)
