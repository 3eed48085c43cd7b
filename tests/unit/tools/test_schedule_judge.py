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
"""The fault schedules' judge (tests/functional/schedule.py,
ScheduledLoad.verdict) on histories the soak met: a read is judged by the
writes Swift acknowledged, as Swift keeps them."""
import time

from tests.functional.schedule import ScheduledLoad
from tests.functional.test_cache import body_for

NAME = 'o'
PROXY = 'http://127.0.0.1:8081'


class Answer(object):
    def __init__(self, status_code, headers=None, content=b''):
        self.status_code = status_code
        self.headers = headers or {}
        self.content = content


class Scripted(object):
    """A client whose writes are answered with the statuses given."""

    def __init__(self):
        self.statuses = []

    def request(self, kind, proxy, name, headers=None, data=None):
        return Answer(self.statuses.pop(0))


def load_after(*writes):
    """A ScheduledLoad whose one writer made ``writes``, (kind, status)
    each, in that order."""
    client = Scripted()
    load = ScheduledLoad(client, [NAME])
    for kind, status in writes:
        client.statuses.append(status)
        load._write(NAME, kind, PROXY)
    return load


def test_a_post_acknowledged_after_an_acknowledged_delete_resurrects_nothing():
    # Seen in the soak (seed 2): a DELETE through the proxy without Mass
    # reached one primary and a handoff (it had error-limited the other
    # two), 204; a step of the clock back made the next PUTs older than
    # its tombstone (202); a POST then reached the two primaries that
    # missed the DELETE, 202.  A read begun then is right with 404, also
    # if a PUT acknowledged while it ran (which it may not have seen).
    load = load_after(('PUT', 201), ('POST', 202), ('DELETE', 204),
                      ('PUT', 202), ('PUT', 202), ('POST', 409),
                      ('POST', 503), ('PUT', 202), ('POST', 202))
    floor = load.history.acked[NAME]
    assert floor == 9
    load = _more(load, ('PUT', 201))
    assert load.verdict(NAME, floor, 10, Answer(404)) is None


def test_a_404_after_a_put_acknowledged_before_the_read_is_stale():
    load = load_after(('PUT', 201), ('DELETE', 204), ('PUT', 201),
                      ('POST', 202))
    floor = load.history.acked[NAME]
    load = _more(load, ('PUT', 201))
    assert load.verdict(NAME, floor, 5, Answer(404)) == 'stale'


def _more(load, *writes):
    for kind, status in writes:
        load.client.statuses.append(status)
        load._write(NAME, kind, PROXY)
    return load


def record(load, kind, status, issued, answered, stepping=0.0):
    """A write of NAME issued and answered at these wall-clock times,
    ``stepping``: the size of a step of the clock under way."""
    h = load.history
    version = h.issue(NAME, kind)
    load.issued_at[NAME][version] = issued
    load.answered_at[NAME][version] = answered
    load.widened[NAME][version] = stepping
    h.via[NAME][version] = (PROXY[-4:], '%.3f' % answered, status)
    if status == {'PUT': 201, 'POST': 202, 'DELETE': 204}[kind]:
        h.acked[NAME] = version
        load.acknowledged[NAME].add(version)
    return version


def read_of(data, meta):
    return Answer(200, {'X-Object-Meta-V': str(meta)},
                  body_for(NAME, data))


def test_a_post_dated_by_a_clock_stepped_forward_may_hold_a_later_puts_data():
    # Seen in the soak (seed 87): the clock stepped +7.3 s; a POST issued
    # just before it was stepped back got the later date, and a PUT issued
    # after the step back, at the same wall-clock millisecond, an earlier
    # one: Swift serves the PUT's data with the POST's metadata.
    load = ScheduledLoad(Scripted(), [NAME])
    record(load, 'PUT', 201, 1000.000, 1000.050)
    post = record(load, 'POST', 202, 1007.865, 1007.949)  # stepped forward
    # stepped back: dated before the PUT of 1000.0 is not, older than the
    # POST's date: 202, refused
    record(load, 'PUT', 202, 1001.128, 1001.158)
    put = record(load, 'PUT', 201, 1007.865, 1007.919)
    read = read_of(put, post)
    assert load.verdict(NAME, put, put, read) == 'reordered'


def test_without_a_clock_step_metadata_older_than_the_data_is_wrong():
    load = ScheduledLoad(Scripted(), [NAME])
    record(load, 'PUT', 201, 1000.000, 1000.050)
    post = record(load, 'POST', 202, 1000.100, 1000.150)
    put = record(load, 'PUT', 201, 1000.200, 1000.250)
    assert load.verdict(NAME, put, put, read_of(put, post)) == 'wrong'


def test_a_write_issued_in_a_stepped_clock_may_be_dated_past_its_issue():
    # Seen in the soak (seed 16): the clock stepped +3.4 s; a POST issued
    # at 1048.723 (stepped) was dated 1048.767 and answered at 1045.480,
    # after the step back; the PUT issued after it, at 1046.007, got its
    # data read with that POST's metadata, as Swift dates them.
    load = ScheduledLoad(Scripted(), [NAME])
    record(load, 'PUT', 201, 1043.210, 1043.302)
    post = record(load, 'POST', 202, 1048.723, 1045.480, stepping=3.4)
    record(load, 'PUT', 201, 1045.576, 1045.639, stepping=3.4)
    record(load, 'DELETE', 204, 1045.699, 1045.745, stepping=3.4)
    put = record(load, 'PUT', 201, 1046.007, 1046.075, stepping=3.4)
    assert load.verdict(NAME, put, put, read_of(put, post)) == 'reordered'
    # the same writes with no step under way: the POST is older than the
    # PUT whose data was read, and its metadata on that data is wrong
    load = ScheduledLoad(Scripted(), [NAME])
    record(load, 'PUT', 201, 1043.210, 1043.302)
    post = record(load, 'POST', 202, 1045.400, 1045.480)
    record(load, 'PUT', 201, 1045.576, 1045.639)
    record(load, 'DELETE', 204, 1045.699, 1045.745)
    put = record(load, 'PUT', 201, 1046.007, 1046.075)
    assert load.verdict(NAME, put, put, read_of(put, post)) == 'wrong'


def test_a_write_still_in_flight_when_a_read_is_judged_has_a_span():
    # Seen in the soak (seed 12): the read ended, and was judged, before
    # the PUT whose data it returned was answered; with the clock stepped
    # +2.9 s, the POST before it was dated after it.
    load = ScheduledLoad(Scripted(), [NAME])
    now = time.time()
    record(load, 'PUT', 201, now - 10.0, now - 9.9)
    post = record(load, 'POST', 202, now + 1.0, now - 1.8, stepping=2.9)
    put = record(load, 'PUT', 201, now - 0.05, now, stepping=2.9)
    del load.answered_at[NAME][put], load.widened[NAME][put]
    load.clock_step = 2.9  # the step's settle is not over
    assert load.verdict(NAME, post, put, read_of(put, post)) == 'reordered'
