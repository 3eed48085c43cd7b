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
"""The ``merge`` method: single flight of identical reads in a worker, and
write-through of small PUTs, with green threads as a proxy worker runs
them, in front of the tiny Swift of test_cache and the machine's Redis."""
import eventlet
import pytest

from swift.common.swob import Request
from swift.common.utils import close_if_possible

from swift_mass.proxy.methods.merge import MergeMethod
from tests.unit.proxy.methods.fakes import BODY, DOWN_REDIS_URL, PATH, Swift, \
    authorize_as, call, make, put


class SlowSwift(Swift):
    """GETs take a while at the backend, so others arrive meanwhile."""

    def __init__(self, delay=0.05):
        super(SlowSwift, self).__init__()
        self.delay = delay
        self.fail_next_get = False

    def GET(self, req):
        # what the object server opened, before the wait
        obj = dict(self.objects.get(req.path) or {}) or None
        if req.method == 'GET':
            eventlet.sleep(self.delay)
            if self.fail_next_get:
                self.fail_next_get = False
                raise Exception('the backend fell over')
        return self.respond(req, obj)

    HEAD = GET


def merged(prefix, delay=0.05, conf=None):
    swift = SlowSwift(delay)
    mass, _, logger = make(prefix, swift, conf=conf, pin='merge')
    return mass, swift, logger


def together(*calls):
    """Run the calls in green threads started at once; their results."""
    threads = []
    for fn in calls:
        threads.append(eventlet.spawn(fn))
        eventlet.sleep(0)  # each reaches the backend or a flight in order
    return [thread.wait() for thread in threads]


def get(mass, **kwargs):
    return lambda: call(mass, **kwargs)


def test_identical_concurrent_gets_make_one_backend_request(prefix):
    mass, swift, logger = merged(prefix)
    swift.write(PATH, BODY)
    resps = together(*[get(mass)] * 5)
    assert [r.body for r in resps] == [BODY] * 5
    assert [r.status_int for r in resps] == [200] * 5
    assert len(swift.object_requests('GET')) == 1
    assert [r.headers.get('X-Mass-Merge') for r in resps] == \
        [None] + ['merged'] * 4
    for resp in resps[1:]:
        assert resp.headers['ETag'] == resps[0].headers['ETag']
    assert logger.counters.count('merge.merged') == 4
    assert mass.methods.merge.flights == {}
    # the leader's answer filled the cache too
    assert call(mass).headers['X-Mass-Cache'] == 'hit'


def test_different_ranges_and_conditions_are_not_merged(prefix):
    mass, swift, _ = merged(prefix)
    swift.write(PATH, BODY)
    resps = together(get(mass, headers={'Range': 'bytes=0-1'}),
                     get(mass, headers={'Range': 'bytes=2-3'}),
                     get(mass, headers={'Range': 'bytes=2-3'}),
                     get(mass, method='HEAD'),
                     get(mass, headers={'If-None-Match': '"x"'}))
    assert [r.body for r in resps] == [BODY[:2], BODY[2:4], BODY[2:4], b'',
                                       BODY]
    assert len(swift.object_requests()) == 4
    assert resps[2].headers['X-Mass-Merge'] == 'merged'
    assert resps[2].status_int == 206


def test_reads_swift_may_answer_differently_are_not_merged(prefix):
    # X-Open-Expired makes Swift serve an expired object a plain GET gets
    # a 404 for; a header the flight key does not know may matter too
    mass, swift, _ = merged(prefix)
    swift.write(PATH, BODY)
    together(get(mass), get(mass, headers={'X-Open-Expired': 'true'}),
             get(mass, headers={'X-Something-New': '1'}))
    assert len(swift.object_requests('GET')) == 3


def test_who_asks_does_not_keep_reads_apart(prefix):
    mass, swift, logger = merged(prefix)
    swift.write(PATH, BODY)
    swift.read_acl['/v1/AUTH_t/c'] = 'alice'
    resps = together(
        get(mass, headers={'X-Auth-Token': 'a', 'User-Agent': 'one'}),
        get(mass, user='alice', headers={'X-Auth-Token': 'b',
                                         'User-Agent': 'two'}))
    assert [r.body for r in resps] == [BODY, BODY]
    assert len(swift.object_requests('GET')) == 1
    assert logger.counters.count('merge.merged') == 1


def test_a_waiter_is_authorised_before_it_gets_the_body(prefix):
    mass, swift, logger = merged(prefix)
    swift.write(PATH, BODY)
    owner, mallory = together(get(mass), get(mass, user='mallory'))
    assert owner.body == BODY
    assert mallory.status_int == 403 and BODY not in mallory.body
    assert 'cache.denied' in logger.counters


def test_a_denied_leader_does_not_answer_the_others(prefix):
    mass, swift, _ = merged(prefix)
    swift.write(PATH, BODY)
    mallory, owner = together(get(mass, user='mallory'), get(mass))
    assert mallory.status_int == 403
    assert (owner.status_int, owner.body) == (200, BODY)
    assert 'X-Mass-Merge' not in owner.headers


def test_the_leaders_client_going_away_does_not_cut_the_others_off(prefix):
    mass, swift, _ = merged(prefix)
    swift.write(PATH, BODY)

    def leader_hangs_up():
        req = Request.blank(PATH, environ={
            'swift.authorize': authorize_as('owner')})
        _status, _headers, body_iter = req.call_application(mass)
        close_if_possible(body_iter)  # nothing read
    _, follower = together(leader_hangs_up, get(mass))
    assert (follower.body, follower.headers['X-Mass-Merge']) == (
        BODY, 'merged')
    assert len(swift.object_requests('GET')) == 1


def test_a_read_after_an_acknowledged_write_does_not_join_an_older_one(
        prefix):
    mass, swift, _ = merged(prefix, delay=0.2)
    other, _, _ = make(prefix, swift, pin='merge')
    put(mass, b'old')

    def write_then_read():
        eventlet.sleep(0.05)  # the leader is at the backend
        put(other, b'new', headers={'Content-Length': '3'})
        return call(mass)
    leader, reader = together(get(mass), write_then_read)
    assert leader.body == b'old'
    assert reader.body == b'new' and 'X-Mass-Merge' not in reader.headers


def test_waiters_go_alone_when_the_leader_is_slow(prefix):
    mass, swift, logger = merged(prefix, delay=0.3,
                                 conf={'merge_wait_seconds': '0.05'})
    swift.write(PATH, BODY)
    resps = together(get(mass), get(mass))
    assert [r.body for r in resps] == [BODY, BODY]
    assert len(swift.object_requests('GET')) == 2
    assert 'merge.alone' in logger.counters


def test_a_failing_leader_releases_its_waiters(prefix):
    mass, swift, _ = merged(prefix)
    swift.write(PATH, BODY)
    swift.fail_next_get = True

    def leader():
        with pytest.raises(Exception):
            call(mass)
    _, follower = together(leader, get(mass))
    assert follower.body == BODY and 'X-Mass-Merge' not in follower.headers
    assert mass.methods.merge.flights == {}


def test_big_answers_are_not_shared(prefix):
    mass, swift, _ = merged(prefix, conf={'cache_max_object_size': '10'})
    swift.write(PATH, BODY)
    resps = together(get(mass), get(mass))
    assert [r.body for r in resps] == [BODY, BODY]
    assert len(swift.object_requests('GET')) == 2


def test_nothing_is_merged_without_generations(prefix):
    swift = SlowSwift()
    mass, _, _ = make(prefix, swift, store_url=DOWN_REDIS_URL,
                      pin='merge', conf={'cache_backend': 'local'})
    swift.write(PATH, BODY)
    resps = together(get(mass), get(mass))
    assert [r.body for r in resps] == [BODY, BODY]
    assert len(swift.object_requests('GET')) == 2


# -- write-through --------------------------------------------------------

def test_a_small_put_is_written_through(prefix):
    mass, swift, logger = merged(prefix, delay=0)
    put(mass, headers={'X-Object-Meta-Color': 'red',
                       'Content-Type': 'text/plain'})
    assert 'merge.written_through' in logger.counters
    (method, _, source, headers), = swift.object_requests('HEAD')
    assert source == 'MASS'
    resp = call(mass)
    assert resp.headers['X-Mass-Cache'] == 'hit'
    assert not swift.object_requests('GET')
    direct = call(swift)
    assert resp.body == direct.body == BODY
    assert {k: v for k, v in resp.headers.items() if k != 'X-Mass-Cache'} \
        == dict(direct.headers.items())


def test_the_client_does_not_wait_for_the_write_through(prefix):
    # an empty body's answer leaves the server only once it is closed: a
    # write-through there made every merge tenant's PUT wait for Redis
    # (250 ms each while Redis hung)
    mass, swift, logger = merged(prefix, delay=0)
    later = []
    mass.methods.merge.spawn = lambda fn, *args: later.append((fn, args))
    assert put(mass).status_int == 201
    assert not swift.object_requests('HEAD') and len(later) == 1
    fn, args = later.pop()
    fn(*args)
    assert 'merge.written_through' in logger.counters
    assert call(mass).headers['X-Mass-Cache'] == 'hit'


def test_no_write_through_for_big_failed_or_overtaken_puts(prefix):
    mass, swift, logger = merged(prefix, delay=0,
                                 conf={'cache_max_object_size': '50'})
    other, _, _ = make(prefix, swift, pin='merge')
    put(mass, b'x' * 51)
    assert call(mass, method='PUT', body=b'x', user='mallory',
                headers={'X-Auth-Token': 'bad'}).status_int == 403
    # a write by another proxy lands between the PUT and its HEAD
    real_head = swift.HEAD

    def overtaken(req):
        swift.HEAD = real_head
        put(other, b'y' * 5)
        return real_head(req)
    swift.HEAD = overtaken
    put(mass, b'z' * 5)
    assert 'merge.written_through' not in logger.counters
    # the other proxy's own write-through may serve it: the newer body
    assert call(mass).body == b'y' * 5


def test_a_write_through_overtaken_by_a_recorded_write_fills_nothing(
        prefix):
    """A later PUT was acknowledged before the write-through ran, and the
    write-through's HEAD reached a replica that PUT had not reached yet:
    the older body was filled under the newer validity and served by every
    proxy (audit D3)."""
    swift = Swift()  # its replicas can lag (SlowSwift's cannot)
    mass, _, logger = make(prefix, swift, pin='merge')
    other, _, _ = make(prefix, swift, pin='merge')
    later = []
    mass.methods.merge.spawn = lambda fn, *args: later.append((fn, args))
    other.methods.merge.spawn = lambda fn, *args: None
    put(mass, b'v2')
    v2 = swift.objects[PATH]
    put(other, b'v3')
    swift.lagging[PATH] = v2  # the replica the HEAD reaches missed v3
    fn, args = later.pop()
    fn(*args)
    assert 'merge.written_through' not in logger.counters
    del swift.lagging[PATH]
    assert call(mass).body == b'v3'


def test_a_write_through_without_a_sealed_fence_asks_every_primary(
        prefix):
    """With no fence sealed in this era, a HEAD of one replica cannot show
    the PUT is the newest version; a HEAD of every primary can, and seals
    the fence."""
    mass, swift, logger = merged(prefix, delay=0)
    put(mass, b'v1')
    assert swift.replica_reads == [PATH]
    assert 'merge.written_through' in logger.counters
    del swift.requests[:], swift.replica_reads[:]
    put(mass, b'v2')  # the fence is sealed now: one replica is asked
    [head] = swift.object_requests('HEAD')
    assert head[3].get('X-Newest') is None
    assert swift.replica_reads == []
    assert logger.counters.count('merge.written_through') == 2
    assert call(mass).headers['X-Mass-Cache'] == 'hit'


def test_writes_through_checks_only_puts():
    merge = MergeMethod(cache=type('C', (), {'settings': type(
        'S', (), {'max_object_size': 100})})(), logger=None)

    def env(method='PUT', **more):
        more.update({'REQUEST_METHOD': method, 'PATH_INFO': PATH})
        return more
    assert merge.writes_through(env(CONTENT_LENGTH='100'))
    assert not merge.writes_through(env(CONTENT_LENGTH='101'))
    assert not merge.writes_through(env())  # chunked
    assert not merge.writes_through(env('POST', CONTENT_LENGTH='1'))
    assert not merge.writes_through(env(
        CONTENT_LENGTH='1', QUERY_STRING='multipart-manifest=put'))
    assert not merge.writes_through(dict(env(CONTENT_LENGTH='1'),
                                         PATH_INFO='/v1/AUTH_t/c'))


def test_merge_results_labeled_by_class(prefix, sent):
    """With statsd_label_mode (Swift >= 2.36), merge.<result> also goes
    out as swift_mass_merge labeled with the tenant's class, the
    write-through's too (its HEAD's environ has no policy of its own)."""
    lines = sent
    mass, swift, logger = merged(prefix, delay=0, conf={
        'log_statsd_host': '127.0.0.1', 'statsd_label_mode': 'dogstatsd'})
    put(mass)
    assert 'merge.written_through' in logger.counters
    assert 'swift_mass_merge:1|c|#class:read,result:written_through' \
        in lines, lines
