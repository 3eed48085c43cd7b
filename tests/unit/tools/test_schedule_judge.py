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
from tests.functional.schedule import ScheduledLoad

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
