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
"""The ``cache`` method: proxy filters in front of a tiny Swift, sharing
one Redis (fakeredis, see tests/unit/conftest.py; a key prefix of their
own per test), as two proxies of one cluster would."""
import base64
import os
import re
import uuid

import pytest

from swift.common.middleware import crypto as encryption
from swift.common.middleware.crypto import keymaster
from swift.common.swob import Request
from swift.common.utils import Timestamp, md5

from swift_mass import tags
from swift_mass.control.stores.local import LocalStore
from swift_mass.proxy import middleware as proxy
from swift_mass.proxy.methods import cache, misses
from swift_mass.proxy.methods.bodies import Entry, LocalBodies
from swift_mass.generations import object_key
from tests.unit.proxy.methods.fakes import BODY, DEVICE, \
    DOWN_CLUSTER_URL, DOWN_REDIS_URL, PATH, MassConf, Swift, authorize_as, \
    call, make, put
from tests.unit.helpers import Clock, Logger, restart


def cached(mass, swift, path=PATH, **kwargs):
    """GET twice; the second must be a hit (no object GET at the
    backend)."""
    first = call(mass, path, **kwargs)
    assert first.headers['X-Mass-Cache'] == 'miss'
    before = len(client_gets(swift))
    second = call(mass, path, **kwargs)
    assert second.headers['X-Mass-Cache'] == 'hit', second.headers
    assert len(client_gets(swift)) == before
    return first, second


def client_gets(swift):
    """The object GETs the backend got for clients (not the validation
    reads Mass sends of its own, swift.source MASS)."""
    return [r for r in swift.object_requests('GET') if r[2] != 'MASS']


# -- hits and misses ---------------------------------------------------


def test_a_miss_fills_the_cache_and_a_hit_is_what_swift_sent(prefix):
    mass, swift, logger = make(prefix)
    put(mass, headers={'X-Object-Meta-Color': 'blue',
                       'Content-Type': 'text/plain'})
    first, second = cached(mass, swift)
    assert first.body == second.body == BODY
    assert first.status_int == second.status_int == 200
    for name in ('ETag', 'Last-Modified', 'X-Timestamp', 'Content-Type',
                 'X-Object-Meta-Color', 'Accept-Ranges', 'Content-Length',
                 'X-Backend-Timestamp'):
        assert first.headers[name] == second.headers[name], name
    assert second.headers['X-Object-Meta-Color'] == 'blue'
    assert logger.counters.count('cache.hit') == 1
    assert 'cache.stored' in logger.counters


def test_a_tenant_without_the_method_pays_nothing(prefix, monkeypatch):
    mass, swift, logger = make(prefix, pin=None)
    swift.write(PATH, BODY)

    def forbidden(*args):
        raise AssertionError('a read of a tenant without cache used it')
    monkeypatch.setattr(mass.methods.cache, 'wrap', forbidden)
    monkeypatch.setattr(mass.methods.cache.generations, 'read', forbidden)
    for _ in range(2):
        resp = call(mass)
        assert resp.body == BODY and 'X-Mass-Cache' not in resp.headers
    assert len(swift.object_requests('GET')) == 2
    assert not [c for c in logger.counters if c.startswith('cache.')]


def test_head_is_answered_from_the_cache(prefix):
    mass, swift, _ = make(prefix)
    put(mass)
    cached(mass, swift)
    resp = call(mass, method='HEAD')
    assert resp.headers['X-Mass-Cache'] == 'hit'
    assert resp.body == b''
    assert resp.headers['Content-Length'] == str(len(BODY))
    assert not swift.object_requests('HEAD')


def test_a_miss_streams_and_stores_nothing_if_the_client_goes(prefix):
    mass, swift, logger = make(prefix)
    put(mass)
    swift.during_get = lambda: None  # a body in two chunks
    status, headers, body_iter = Request.blank(
        PATH, environ={'swift.authorize': authorize_as('owner')}
    ).call_application(mass)
    next(iter(body_iter))  # the client reads a little and hangs up
    body_iter.close()
    assert 'cache.stored' not in logger.counters
    assert call(mass).headers['X-Mass-Cache'] == 'miss'


# -- never stale -------------------------------------------------------


def test_writes_through_another_proxy_are_seen(prefix):
    swift = Swift()
    mass_a, _, _ = make(prefix, swift)
    mass_b, _, _ = make(prefix, swift)
    put(mass_a, b'one')
    cached(mass_a, swift)
    put(mass_b, b'two')
    resp = call(mass_a)
    assert (resp.body, resp.headers['X-Mass-Cache']) == (b'two', 'miss')
    resp = call(mass_a)
    assert (resp.body, resp.headers['X-Mass-Cache']) == (b'two', 'hit')
    resp = call(mass_b, method='POST', headers={'X-Object-Meta-K': 'v'})
    assert resp.status_int == 202
    resp = call(mass_a)
    assert resp.headers['X-Mass-Cache'] == 'miss'
    assert resp.headers['X-Object-Meta-K'] == 'v'
    call(mass_a)
    assert call(mass_b, method='DELETE').status_int == 204
    assert call(mass_a).status_int == 404


def test_a_replica_that_missed_a_write_before_the_cache_fills_nothing(
        prefix):
    """A write made before the tenant had the cache records no write
    timestamp; a replica that missed it (down during it) must not fill the
    cache with the old version, which every proxy would then serve."""
    mass, swift, _ = make(prefix)
    swift.write(PATH, b'old')
    old = swift.objects[PATH]
    swift.write(PATH, b'new')  # acknowledged; one replica missed it
    swift.lagging[PATH] = old
    for _ in range(3):
        resp = call(mass)
        assert (resp.status_int, resp.body) == (200, b'new'), \
            resp.headers.get('X-Mass-Cache')
    assert resp.headers['X-Mass-Cache'] == 'hit'
    gets = swift.object_requests('GET')
    assert [r[3].get('X-Newest') for r in gets] == ['true']


def test_a_delete_during_the_newest_read_never_serves_an_empty_200(prefix):
    """Swift's X-Newest GET that meets a DELETE between its reads of the
    replicas answers 200 with no body and the deleted version's ETag (its
    best_response, once the newer tombstone set the 200s aside); a plain
    GET, as Swift alone sends it, gets the 404.  The read the cache sends
    as X-Newest must answer as the plain one would (a CI run's migrate
    copy got the empty 200, through Swift's copy, which reads X-Newest)."""
    mass, swift, _ = make(prefix)
    swift.write(PATH, b'old')  # before the tenant had the cache: no record
    swift.deleted_during_newest.add(PATH)
    resp = call(mass)
    assert resp.status_int == 404, (resp.status_int, resp.body)
    assert PATH not in swift.objects
    gets = swift.object_requests('GET')
    assert [r[3].get('X-Newest') for r in gets] == ['true', None]
    # and nothing was cached: the next read is a miss, a 404 too
    resp = call(mass)
    assert (resp.status_int, resp.headers['X-Mass-Cache']) == (404, 'miss')


def newest_flags(swift):
    """X-Newest of each object GET the backend got, then forgets them."""
    flags = [r[3].get('X-Newest') for r in swift.object_requests('GET')]
    del swift.requests[:]
    return flags


def test_a_replica_that_missed_a_delete_is_read_past(prefix):
    """Swift's X-Newest read answers an empty 200 while a replica still
    holds a version a newer tombstone replaced; the plain read the cache
    sent instead took that version from the replica whenever the proxy
    reached it first.  Read again, another replica answers the 404."""
    mass, swift, logger = make(prefix)
    put(mass, b'v1')
    swift.lagging[PATH] = swift.objects[PATH]  # it will miss the DELETE
    swift.lagging_reads[PATH] = 2  # reached first by the next two reads
    assert call(mass, method='DELETE').status_int == 204
    resp = call(mass)
    assert resp.status_int == 404, resp.body
    assert newest_flags(swift) == ['true', None, None, None]
    assert logger.counters.count('cache.lagging_replica') == 2


def test_a_newer_version_a_delete_replaced_is_read_past_too(prefix):
    """Two replicas missed a DELETE, each holding another version: Swift's
    X-Newest answer carries the headers of the older one, and the plain
    read that reached the newer one served it (soak seed 44): it is older
    than the DELETE recorded, so it is read past as well."""
    mass, swift, logger = make(prefix)
    put(mass, b'v1')
    v1 = swift.objects[PATH]
    put(mass, b'v2')
    swift.lagging[PATH] = swift.objects[PATH]  # one replica has v2...
    swift.set_aside[PATH] = v1  # ...another v1, whose headers X-Newest sends
    assert call(mass, method='DELETE').status_int == 204
    resp = call(mass)
    assert resp.status_int == 404, resp.body
    assert logger.counters.count('cache.lagging_replica') == \
        misses.LAGGING_READS


def test_a_staged_copy_is_not_read_past(prefix):
    """During a move, a read of C may find the staged copy of a version
    whose fence and delete the move recorded (offsets above the copy's):
    the same version, not one a client's delete replaced."""
    mass, swift, logger = make(prefix)
    version = Timestamp.now()

    def staged_copy(env, start_response):
        start_response('200 OK', [
            ('Content-Length', '1'), ('X-Backend-Timestamp', Timestamp(
                version, offset=1).internal),
            ('X-Backend-Data-Timestamp', Timestamp(
                version, offset=1).internal)])
        return [b'x']
    ctx, body = mass.methods.cache.miss_reads.past_deleted(
        Request.blank(PATH).environ, staged_copy, version,
        Timestamp(version, offset=3))
    assert (ctx._get_status_int(), b''.join(body)) == (200, b'x')
    assert 'cache.lagging_replica' not in logger.counters


def test_a_sealed_fence_needs_no_newest_replica(prefix):
    """The first fill of an object in an era reads the newest replica and
    seals the fence; the writes after it are recorded in the same era, so
    the next fills read one replica and refuse an older one."""
    mass, swift, logger = make(prefix)
    put(mass, b'one')
    cached(mass, swift)
    assert newest_flags(swift) == ['true']
    put(mass, b'two')
    cached(mass, swift)
    assert newest_flags(swift) == [None]
    # a replica that missed the third write answers the next fill: older
    # than the fence, so the newest replica is read (where Swift alone
    # would have served the old version), and cached
    old = swift.objects[PATH]
    put(mass, b'three')
    swift.lagging[PATH] = old
    first, second = cached(mass, swift)
    assert first.body == second.body == b'three'
    assert newest_flags(swift) == [None, 'true']
    assert logger.counters.count('cache.lagging_replica') == 1


def test_newer_metadata_on_older_data_is_not_the_current_version(prefix):
    """A replica that missed a PUT but took the POST after it shows the
    POST's X-Backend-Timestamp on the old data: the fence, the highest
    write recorded, let it through, and the old data was served and
    cached under the new metadata."""
    mass, swift, logger = make(prefix)
    put(mass, b'v1')
    cached(mass, swift)  # the fence is sealed
    v1 = dict(swift.objects[PATH])
    put(mass, b'v2')  # one replica misses it...
    resp = call(mass, method='POST', headers={'X-Object-Meta-K': 'new'})
    assert resp.status_int == 202  # ...but not the POST after it
    swift.lagging[PATH] = dict(v1, ts=swift.objects[PATH]['ts'],
                               data_ts=v1['ts'], headers={
                                   'X-Object-Meta-K': 'new'})
    del swift.requests[:]
    reads = [call(mass) for _ in range(2)]
    assert [(r.body, r.headers['X-Mass-Cache']) for r in reads] == \
        [(b'v2', 'miss'), (b'v2', 'hit')]
    assert newest_flags(swift) == [None, 'true']
    assert logger.counters.count('cache.lagging_replica') == 1


def behind_a_post(swift, path=PATH):
    """A POST to ``path`` that one replica missed: it keeps the data and
    the older metadata (a replica the newest read keeps, since Swift
    orders replicas by their data's time alone)."""
    before = dict(swift.objects[path])
    resp = Request.blank(path, method='POST', headers={
        'X-Object-Meta-K': 'new'}).get_response(swift)
    assert resp.status_int == 202
    swift.lagging[path] = dict(before, data_ts=before.get(
        'data_ts', before['ts']))


def test_a_newest_read_that_keeps_a_replica_behind_a_post_is_read_past(
        prefix):
    """A miss that reached a replica which missed a POST read the newest
    replica, and Swift's newest read kept that same replica (the data of
    all three has the same time): the old metadata was served after the
    POST was acknowledged (a CI run of test_merge saw it).  Plain reads
    reach another replica; the one that shows the fence is cached."""
    mass, swift, logger = make(prefix)
    put(mass, b'v1')
    cached(mass, swift)  # the fence is sealed
    resp = call(mass, method='POST', headers={'X-Object-Meta-K': 'new'})
    assert resp.status_int == 202
    swift.lagging[PATH] = dict(swift.objects[PATH], ts=swift.objects[PATH][
        'data_ts'], headers={})
    swift.lagging_reads[PATH] = 1  # the next plain read reaches it
    del swift.requests[:]
    reads = [call(mass) for _ in range(2)]
    assert [(r.headers.get('X-Object-Meta-K'), r.headers['X-Mass-Cache'])
            for r in reads] == [('new', 'miss'), ('new', 'hit')]
    assert newest_flags(swift) == [None, 'true', None]
    assert logger.counters.count('cache.lagging_replica') == 2


def test_no_plain_read_serves_older_data_than_the_newest_read(prefix):
    """One replica missed a PUT but took the POST after it, another missed
    the POST: the plain read reached the first (older data), X-Newest kept
    the second (older metadata), and the plain reads past it reached the
    first again and again; the last of them was served, with the data the
    PUT had replaced (soak seed 1).  The newest read's answer, with the
    newest data, is served instead, as Swift's X-Newest would serve it,
    and nothing is cached."""
    mass, swift, logger = make(prefix)
    put(mass, b'v1')
    cached(mass, swift)  # the fence is sealed
    v1 = dict(swift.objects[PATH])
    put(mass, b'v2')
    v2 = dict(swift.objects[PATH])
    resp = call(mass, method='POST', headers={'X-Object-Meta-K': 'new'})
    assert resp.status_int == 202
    swift.lagging[PATH] = dict(v1, ts=swift.objects[PATH]['ts'],
                               data_ts=v1['ts'],
                               headers={'X-Object-Meta-K': 'new'})
    swift.lagging_reads[PATH] = 100  # every plain read reaches it
    swift.newest_kept[PATH] = v2
    del swift.requests[:]
    resp = call(mass)
    assert (resp.body, resp.headers.get('X-Object-Meta-K')) == (b'v2', None)
    assert newest_flags(swift) == [None, 'true'] + [None] * \
        misses.LAGGING_READS
    resp = call(mass)
    assert (resp.body, resp.headers['X-Mass-Cache']) == (b'v2', 'miss')


def test_a_newest_read_behind_a_post_never_fills_the_cache(prefix):
    """No fence sealed in this era (the POST was made while the tenant was
    out of the cache): the fill read the newest replica, which Swift chose
    by data time alone, and cached the metadata a POST acknowledged
    before had replaced, served by every proxy as a hit.  The primaries'
    own answers show a newer metadata time: nothing is cached."""
    mass, swift, logger = make(prefix)
    put(mass, b'v1')
    cached(mass, swift)
    leave_and_reenter(mass, swift, lambda: behind_a_post(swift))
    del swift.requests[:]
    reads = [call(mass) for _ in range(2)]
    assert [r.headers['X-Mass-Cache'] for r in reads] == ['miss', 'miss']
    assert logger.counters.count('cache.not_newest') == 2
    # once the replica took the POST, the fill is shown and cached
    del swift.lagging[PATH]
    reads = [call(mass) for _ in range(2)]
    assert [(r.headers.get('X-Object-Meta-K'), r.headers['X-Mass-Cache'])
            for r in reads] == [('new', 'miss'), ('new', 'hit')]


def test_without_generations_a_replica_behind_a_post_vouches_for_nothing(
        prefix):
    """With Redis down, a hit was validated by Swift's newest read, which
    may keep a replica that missed a POST (the same data time): it
    vouched for the cached metadata that POST replaced."""
    swift = Swift()
    mass, _, logger = make(prefix, swift, store_url=DOWN_REDIS_URL,
                           conf={'cache_backend': 'local'})
    swift.write(PATH, b'v1')
    cached(mass, swift)
    behind_a_post(swift)
    resp = call(mass)
    assert resp.headers['X-Mass-Cache'] == 'miss'
    assert 'cache.stale' in logger.counters


def leave_and_reenter(mass, swift, while_out):
    """The tenant leaves the bumped set (a pin to ``none``), ``while_out()``
    runs, and it comes back (a pin to ``cache``): each time the leader
    publishes the set and the object servers apply it."""
    for method in ('none', 'cache'):
        mass.store.set_pin('AUTH_t', {'class': 'read', 'method': method})
        mass.agent._next_tick = 0.0  # the next interval
        mass.agent.tick()
        swift.generations.heartbeat()
        mass.methods.cache.generations._coverage = (0.0, None, None)
        if method == 'none':
            assert not swift.generations.bumps_writes_of('AUTH_t')
            while_out()


def test_a_fence_from_an_earlier_membership_is_not_trusted(prefix):
    """A tenant left the cache and came back: a write made while it was
    out was not recorded, and a replica that missed it filled the cache
    with the old version under the fence of the earlier membership, served
    by every proxy as a hit (audit D1)."""
    mass, swift, _ = make(prefix)
    put(mass, b'v1')
    cached(mass, swift)  # the fence is sealed with v1
    old = swift.objects[PATH]

    def overwrite():
        put(mass, b'v2')  # not bumped; one replica missed it
        swift.lagging[PATH] = old
    leave_and_reenter(mass, swift, overwrite)
    del swift.requests[:]
    reads = [call(mass) for _ in range(3)]
    assert [(r.body, r.headers['X-Mass-Cache']) for r in reads] == \
        [(b'v2', 'miss'), (b'v2', 'hit'), (b'v2', 'hit')]
    assert newest_flags(swift) == ['true']


def test_a_fence_redis_rolled_back_is_not_trusted(prefix):
    """Redis restarted from a snapshot taken before v2's bump: the old
    fence came back, the rollback defence replaced only the epoch, and a
    replica that missed v2 filled the cache with v1 (audit D2)."""
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    gens = mass.methods.cache.generations
    put(mass, b'v1')
    cached(mass, swift)
    key = gens._key(object_key('AUTH_t', 'c', 'o'))
    snapshot = {key: gens.client.dump(key)}
    old = swift.objects[PATH]
    put(mass, b'v2')
    swift.lagging[PATH] = old  # a replica missed v2
    restart(snapshot, gens, swift.generations)
    del swift.requests[:]
    reads = [call(mass) for _ in range(3)]
    assert [(r.body, r.headers['X-Mass-Cache']) for r in reads] == \
        [(b'v2', 'miss'), (b'v2', 'hit'), (b'v2', 'hit')]
    assert newest_flags(swift) == ['true']


def test_an_old_seal_kept_by_bumps_is_not_trusted_in_a_new_era(prefix):
    """Bumps keep a seal as it was; it names its era, so after a new
    epoch the recorded write is a lower bound, not a fence."""
    mass, swift, _ = make(prefix)
    put(mass, b'v1')
    cached(mass, swift)
    gens = mass.methods.cache.generations
    gens.client.set(gens.epoch_key, 'another-epoch')
    put(mass, b'v2')
    key = object_key('AUTH_t', 'c', 'o')
    _, written = mass.methods.cache.validity(read_env(), key)
    assert written == (Timestamp(swift.objects[PATH]['ts']), False, None)
    del swift.requests[:]
    cached(mass, swift)
    assert newest_flags(swift) == ['true']


def body_chunks(app, path=PATH):
    """The chunks a GET's answer is sent in."""
    req = Request.blank(path, environ={'swift.authorize':
                                       authorize_as('owner')})
    status, headers, app_iter = req.call_application(app)
    try:
        return dict(headers), list(app_iter)
    finally:
        getattr(app_iter, 'close', lambda: None)()


@pytest.mark.parametrize('left', ['plain', 'encrypting'])
def test_a_hit_from_the_workers_copy_is_one_small_round_trip(prefix, left):
    """A hit cost two Redis round trips, the first bringing the whole
    body back before its validity was known, and sent the body as one
    buffer (through the decrypter too): the worker's copy is served after
    one generation read, in chunks of at most 64 KiB."""
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    app = encrypting(mass) if left == 'encrypting' else mass
    big = os.urandom(300 * 1024)
    put(app, big)
    cached(app, swift)
    method = mass.methods.cache
    reads = []
    real_read = method.generations._read

    def counted(**kwargs):
        reads.append(kwargs)
        return real_read(**kwargs)

    def forbidden(*args):
        raise AssertionError('a hit asked the shared bodies')
    method.generations._read = counted
    method.entries.bodies.get = method.entries.bodies.put = forbidden
    headers, chunks = body_chunks(app)
    assert headers['X-Mass-Cache'] == 'hit'
    assert b''.join(chunks) == big and len(chunks) >= 5
    assert max(len(chunk) for chunk in chunks) <= 64 * 1024
    assert len(reads) == 1


def test_a_miss_shares_its_body_off_the_clients_path(prefix):
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    method = mass.methods.cache
    later = []
    method.entries.spawn = lambda fn, *args: later.append((fn, args))
    put(mass)
    key = object_key('AUTH_t', 'c', 'o')
    assert call(mass).headers['X-Mass-Cache'] == 'miss'
    # the client did not wait
    assert method.entries.bodies.get(key) is None
    assert call(mass).headers['X-Mass-Cache'] == 'hit'  # the worker's
    for fn, args in later:
        fn(*args)
    assert method.entries.bodies.get(key).body == BODY
    # another worker (or proxy) finds it in the shared bodies
    other, _, _ = make(prefix, swift)
    resp = call(other)
    assert (resp.body, resp.headers['X-Mass-Cache']) == (BODY, 'hit')


def test_a_ring_that_cannot_be_read_turns_no_read_into_a_500(prefix):
    swift = Swift()
    mass, _, logger = make(prefix, swift)
    put(mass)
    cached(mass, swift)

    def broken():
        raise EOFError('Ran out of input')  # a ring replaced in place
    method = mass.methods.cache
    method.validity_check.devices = broken
    method.generations._coverage = (0.0, None, None)  # look again now
    resp = call(mass)
    assert (resp.status_int, resp.body) == (200, BODY)
    # the generations cannot be trusted meanwhile: a HEAD validated it
    assert 'cache.validated' in logger.counters


def test_a_write_costs_the_proxy_no_redis_call(prefix):
    """The object servers bump (swift_mass.generations); the proxy only
    sends the write on."""
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    gens = mass.methods.cache.generations
    key = object_key('AUTH_t', 'c', 'o')
    before = mass.methods.cache.validity(read_env(), key)[0]

    def forbidden(**kwargs):
        raise AssertionError('the proxy called Redis for a write')
    real, gens._read = gens._read, forbidden
    put(mass, b'new')
    gens._read = real
    after, written = mass.methods.cache.validity(read_env(), key)
    assert after != before
    assert written == (Timestamp(swift.objects[PATH]['ts']), False, None)


def test_a_tenant_is_trusted_only_once_the_object_servers_bump_it(prefix):
    # no write tax: object servers bump only the tenants the leader
    # published, so a proxy must not trust a tenant's generations before
    # every object server applies the set it entered in; meanwhile each
    # hit is validated against the backend
    swift = Swift()
    mass, _, logger = make(prefix, swift, pin=None)
    mass.store.set_pin('AUTH_t', {'class': 'read', 'method': 'cache'})
    mass.agent.tick()  # published, but not yet applied by the servers
    put(mass, b'old')
    assert call(mass).body == b'old'
    assert call(mass).body == b'old'
    assert logger.counters.count('cache.validated') == 1
    put(mass, b'new')  # not bumped
    assert call(mass).body == b'new'
    swift.generations.heartbeat()  # the object servers apply the set
    mass.methods.cache.generations._coverage = (0.0, None, None)
    validated = logger.counters.count('cache.validated')
    first, second = cached(mass, swift)
    assert first.body == second.body == b'new'
    assert logger.counters.count('cache.validated') == validated
    put(mass, b'newer')  # bumped now
    assert call(mass).body == b'newer'


def test_writes_that_pass_no_mass_proxy_are_seen(prefix):
    """The object-expirer, a proxy without mass: the object servers bump
    whoever sent the write."""
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    put(mass, b'one')
    cached(mass, swift)
    Request.blank(PATH, method='PUT', body=b'two').get_response(swift)
    resp = call(mass)
    assert (resp.body, resp.headers['X-Mass-Cache']) == (b'two', 'miss')
    assert call(mass).headers['X-Mass-Cache'] == 'hit'
    Request.blank(PATH, method='DELETE').get_response(swift)
    assert call(mass).status_int == 404


def test_without_every_device_bumping_hits_are_validated(prefix):
    swift = Swift()
    mass, _, logger = make(prefix, swift)
    method = mass.methods.cache
    method.validity_check.devices = lambda: {DEVICE, '127.0.0.2:6200/sdb2'}
    put(mass, b'one')
    first, second = cached(mass, swift)
    assert second.headers['X-Mass-Cache'] == 'hit'
    assert 'cache.uncovered' in logger.counters
    assert 'cache.validated' in logger.counters  # by a HEAD
    assert any('127.0.0.2:6200/sdb2' in line for _, line in logger.lines)


def test_a_write_during_a_fetch_does_not_put_the_old_body_back(prefix):
    swift = Swift()
    mass_a, _, logger = make(prefix, swift)
    mass_b, _, _ = make(prefix, swift)
    put(mass_a, b'old-' * 10)

    def write_meanwhile():
        swift.during_get = None
        put(mass_b, b'new-' * 10)
    swift.during_get = write_meanwhile
    resp = call(mass_a)
    assert resp.body == b'old-' * 10  # it began before the write
    # kept in the worker under the generation read before the fetch,
    # which the write replaced: never served, never shared
    key = object_key('AUTH_t', 'c', 'o')
    assert mass_a.methods.cache.entries.bodies.get(key) is None
    resp = call(mass_a)
    assert resp.headers['X-Mass-Cache'] == 'miss'
    assert resp.body == b'new-' * 10


def test_a_write_that_lands_between_the_bumps_is_not_cached(prefix):
    """A GET that starts after the first bump and reads the old body
    (the write has not landed) stores it under a generation the second
    bump replaces, so it is never served."""
    swift = Swift()
    mass_a, _, _ = make(prefix, swift)
    mass_b, _, _ = make(prefix, swift)
    put(mass_a, b'old')
    real_put = swift.PUT

    def slow_put(req):
        assert call(mass_a).body == b'old'  # read while the PUT is on
        return real_put(req)
    swift.PUT = slow_put
    put(mass_b, b'new')
    swift.PUT = real_put
    resp = call(mass_a)
    assert (resp.body, resp.headers['X-Mass-Cache']) == (b'new', 'miss')


def test_an_older_replica_is_not_cached(prefix):
    swift = Swift()
    mass, _, logger = make(prefix, swift)
    put(mass, b'new')
    # a replica the write has not reached answers the next GET
    swift.objects[PATH]['ts'] = Timestamp(float(
        swift.objects[PATH]['ts']) - 10)
    swift.objects[PATH]['body'] = b'old'
    assert call(mass).body == b'old'  # as Swift itself would answer
    assert 'cache.stored' not in logger.counters
    assert call(mass).headers['X-Mass-Cache'] == 'miss'


@pytest.mark.parametrize('source', ['SLO', 'DLO', 'SYM', 'OV', 'EA'])
def test_subrequest_writes_are_seen(prefix, source):
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    put(mass, b'one')
    cached(mass, swift)
    put(mass, b'two', environ={'swift.source': source})
    assert call(mass).body == b'two'


def test_copy_changes_its_destination(prefix):
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    put(mass, b'one', path='/v1/AUTH_t/c/dst')
    cached(mass, swift, path='/v1/AUTH_t/c/dst')
    swift.COPY = lambda req: swift.PUT(Request.blank(
        '/v1/AUTH_t/c/dst', method='PUT', body=b'copied'))
    resp = call(mass, method='COPY', headers={'Destination': 'c/dst'})
    assert resp.status_int == 201
    assert call(mass, '/v1/AUTH_t/c/dst').body == b'copied'


def test_writes_of_tenants_without_the_method_are_seen(prefix):
    """The table may name the cache for a tenant at one proxy before
    another has seen the change."""
    swift = Swift()
    reader, _, _ = make(prefix, swift)
    writer, _, _ = make(prefix, swift, pin=None)
    writer.agent.table = {}
    put(reader, b'one')
    cached(reader, swift)
    put(writer, b'two')
    assert call(reader).body == b'two'


# -- what merge uses: the public reads and fills ----------------------


def read_env(user='owner'):
    return Request.blank(PATH, environ={
        'swift.authorize': authorize_as(user)}).environ


def test_validity_changes_with_every_write_and_is_unknown_without(prefix):
    mass, swift, _ = make(prefix)
    method = mass.methods.cache
    key = object_key('AUTH_t', 'c', 'o')
    before, _ = method.validity(read_env(), key)
    assert before is not None and method.validity(read_env(), key)[0] == before
    put(mass)
    after, written = method.validity(read_env(), key)
    assert after != before
    assert written == (Timestamp(swift.objects[PATH]['ts']), False, None)
    local = cache.CacheMethod.from_conf(Swift(), MassConf({'store': 'local'}),
                                        Logger())
    assert local.validity(read_env(), key) == (None, None)


def test_fill_stores_only_what_no_write_overtook(prefix):
    mass, swift, _ = make(prefix)
    method = mass.methods.cache
    key = object_key('AUTH_t', 'c', 'o')
    put(mass, b'old')
    validity, _ = method.validity(read_env(), key)
    put(mass, b'new')  # lands while b'old' was on its way
    assert method.fill(read_env(), key, validity, [], b'old') is False
    assert method.hit(read_env(), key) is None
    headers = list(swift.headers_of(swift.objects[PATH]).items())
    headers.append(('ETag', md5(b'new', usedforsecurity=False).hexdigest()))
    validity = method.validity(read_env(), key)[0]
    assert method.fill(read_env(), key, validity, headers, b'new') is True
    resp = method.hit(read_env(), key)
    assert (resp.body, resp.headers['X-Mass-Cache']) == (b'new', 'hit')


def test_fill_under_ttl_only_reads_no_generation(prefix):
    mass, _, _ = make(prefix, conf={'cache_ttl_only': 'true',
                                    'cache_backend': 'local'})
    method = mass.methods.cache

    def forbidden(key):
        raise AssertionError('ttl_only read a generation')
    method.generations.read = forbidden
    key = object_key('AUTH_t', 'c', 'o')
    assert method.fill(read_env(), key, None, [], BODY) is True
    assert method.hit(read_env(), key).body == BODY


def test_hit_is_none_when_not_cached_and_reads_are_authorised(prefix):
    mass, swift, logger = make(prefix)
    method = mass.methods.cache
    key = object_key('AUTH_t', 'c', 'o')
    put(mass)
    assert method.hit(read_env(), key) is None
    cached(mass, swift)
    assert method.hit(read_env(), key).body == BODY
    assert method.authorized(read_env())
    assert not method.authorized(read_env('mallory'))
    assert 'cache.denied' in logger.counters


@pytest.mark.parametrize('pin', ['cache', 'merge'])
def test_a_read_swift_refuses_touches_neither_redis_nor_the_bodies(
        prefix, pin):
    """Nothing before authorisation: a refused read of any name must not
    create a generation, read a body or join a flight."""
    swift = Swift()
    mass, _, logger = make(prefix, swift, pin=pin)
    put(mass)
    for _ in range(2):
        assert call(mass).body == BODY
    assert 'cache.hit' in logger.counters
    method = mass.methods.cache

    def forbidden(*args, **kwargs):
        raise AssertionError('a refused read used the cache')
    method.generations._read = method.entries.bodies.get = forbidden
    method.generations.uncovered = forbidden
    for path in (PATH, '/v1/AUTH_t/c/no-such-object'):
        resp = call(mass, path, user='mallory')
        assert resp.status_int == 403 and BODY not in resp.body
        assert 'X-Mass-Cache' not in resp.headers
    assert not mass.methods.merge.flights
    assert logger.counters.count('cache.denied') == 2


def test_authorize_asks_as_swifts_object_controller(prefix):
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    method = mass.methods.cache
    swift.read_acl['/v1/AUTH_t/c'] = 'alice'
    assert method.authorize(read_env()) is None
    assert method.authorize(read_env('alice')) is None
    assert method.authorize(read_env('bob')).status_int == 403


def test_fetch_answers_a_miss_and_fills_the_cache(prefix):
    mass, swift, logger = make(prefix)
    method = mass.methods.cache
    key = object_key('AUTH_t', 'c', 'o')
    swift.write(PATH, BODY)
    req = Request.blank(PATH, environ={'swift.authorize':
                                       authorize_as('owner')})
    resp = req.get_response(
        lambda env, start: method.fetch(env, start, swift, key))
    assert (resp.body, resp.headers['X-Mass-Cache']) == (BODY, 'miss')
    assert 'cache.stored' in logger.counters
    assert method.hit(read_env(), key).body == BODY


# -- without generations: backend validation --------------------------


def test_store_down_hits_are_validated_by_every_primary(prefix):
    swift = Swift()
    mass, _, logger = make(prefix, swift, store_url=DOWN_REDIS_URL,
                           conf={'cache_backend': 'local'})
    swift.write(PATH, BODY)
    first, second = cached(mass, swift, headers={'X-Auth-Token': 'tk'})
    assert second.body == BODY
    # the fill's newest read, then the primaries asked: for the fill, and
    # for the hit
    assert [r[3].get('X-Newest') for r in client_gets(swift)] == ['true']
    assert swift.replica_reads == [PATH, PATH]
    assert 'cache.validated' in logger.counters
    # a write Mass never saw (no bump): the HEAD shows it
    swift.write(PATH, b'changed behind its back')
    resp = call(mass)
    assert (resp.body, resp.headers['X-Mass-Cache']) == (
        b'changed behind its back', 'miss')


def test_without_generations_a_lagging_replica_vouches_for_nothing(prefix):
    """With Redis down, a hit was validated by a HEAD of one replica: one
    that missed a write acknowledged before vouched for the cached
    version it replaced, and a miss read it too."""
    swift = Swift()
    mass, _, logger = make(prefix, swift, store_url=DOWN_REDIS_URL,
                           conf={'cache_backend': 'local'})
    swift.write(PATH, b'v1')
    cached(mass, swift)
    old = swift.objects[PATH]
    swift.write(PATH, b'v2')  # acknowledged; one replica missed it
    swift.lagging[PATH] = old
    del swift.requests[:]
    reads = [call(mass) for _ in range(2)]
    assert [(r.body, r.headers['X-Mass-Cache']) for r in reads] == \
        [(b'v2', 'miss'), (b'v2', 'hit')]
    assert {r[3].get('X-Newest') for r in swift.object_requests()} == \
        {'true'}
    assert 'cache.stale' in logger.counters


@pytest.mark.parametrize('length', [None, '0'])
def test_without_generations_a_delete_most_replicas_missed_is_seen(
        prefix, length):
    """Where a newer tombstone sets a quorum of replicas' answers aside,
    Swift's X-Newest answers 200 with their headers: a HEAD of it vouched
    for the deleted version.  And where every plain read reaches a replica
    that missed the DELETE, the answer is the 404 the others give."""
    swift = Swift()
    mass, _, logger = make(prefix, swift, store_url=DOWN_REDIS_URL,
                           conf={'cache_backend': 'local'})
    swift.write(PATH, b'v1')
    cached(mass, swift)
    swift.lagging[PATH] = swift.objects.pop(PATH)  # deleted on the others
    swift.tombstones[PATH] = Timestamp.now().internal
    swift.set_aside_length = length
    resp = call(mass)
    assert (resp.status_int, resp.headers['X-Mass-Cache']) == (404, 'miss')
    assert logger.counters.count('cache.lagging_replica') == \
        misses.LAGGING_READS


@pytest.mark.parametrize('down_url', [DOWN_REDIS_URL, DOWN_CLUSTER_URL])
def test_a_proxy_whose_redis_is_down_from_the_start_serves_every_request(
        prefix, down_url):
    swift = Swift()
    mass, _, logger = make(prefix, swift, store_url=down_url)
    assert mass.methods.cache.entries.bodies.name == 'redis'
    swift.write(PATH, BODY)
    for _ in range(3):
        resp = call(mass)
        assert (resp.status_int, resp.body) == (200, BODY)
    put(mass, b'written')
    resp = call(mass)
    assert (resp.status_int, resp.body) == (200, b'written')
    # every read asked the primaries: the worker's copy is served only
    # after they showed it is the newest version (the last time, they did
    # not, and the new body was fetched); each fill was shown too
    assert (len(client_gets(swift)), len(swift.replica_reads)) == (2, 5)
    assert any('Redis unavailable' in line for _, line in logger.lines)


def test_store_down_validation_head_is_authorised(prefix):
    swift = Swift()
    mass, _, _ = make(prefix, swift, store_url=DOWN_REDIS_URL,
                      conf={'cache_backend': 'local'})
    swift.write(PATH, BODY)
    cached(mass, swift)
    resp = call(mass, user='mallory')
    assert resp.status_int == 403 and resp.body != BODY


def test_ttl_only_serves_without_validation(prefix):
    swift = Swift()
    mass, _, _ = make(prefix, swift, conf={'cache_ttl_only': 'true',
                                           'cache_backend': 'local'})
    put(mass, b'one')
    cached(mass, swift)
    swift.write(PATH, b'two')  # no bump, no HEAD: served stale, as named
    assert call(mass).body == b'one'
    assert not swift.object_requests('HEAD')


# -- authorisation ------------------------------------------------------


def test_a_hit_is_denied_as_swift_would_deny_it(prefix):
    swift = Swift()
    mass, _, logger = make(prefix, swift)
    put(mass)
    cached(mass, swift)
    resp = call(mass, user='mallory')
    assert resp.status_int == 403 and BODY not in resp.body
    assert 'cache.denied' in logger.counters
    # Swift itself refused it: no object server was asked
    assert len(swift.object_requests('GET')) == 1


def test_a_hit_honours_the_container_read_acl(prefix):
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    put(mass)
    cached(mass, swift)
    swift.read_acl['/v1/AUTH_t/c'] = 'alice'
    resp = call(mass, user='alice')
    assert resp.headers['X-Mass-Cache'] == 'hit' and resp.body == BODY
    assert call(mass, user='bob').status_int == 403


@pytest.mark.parametrize('kwargs', [
    {'environ': {'swift.authorize_override': True}},
    {'path': PATH + '?temp_url_sig=x&temp_url_expires=1'},
    {'environ': {'swift.source': 'SW'}},
    {'headers': {'X-Newest': 'true'}},
    {'headers': {'Origin': 'http://example.com'}},
    {'environ': {'HTTP_X_BACKEND_SOMETHING': 'x'}},
])
def test_requests_with_other_authorisation_or_wishes_bypass(prefix, kwargs):
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    put(mass)
    cached(mass, swift)
    before = len(swift.object_requests('GET'))
    resp = call(mass, **kwargs)
    assert 'X-Mass-Cache' not in resp.headers
    assert len(swift.object_requests('GET')) == before + 1


# -- never cached ---------------------------------------------------------


@pytest.mark.parametrize('headers', [
    {'X-Static-Large-Object': 'True'},
    {'X-Object-Manifest': 'c/seg_'},
    {'X-Object-Sysmeta-Symlink-Target': 'c/other'},
    {'X-Delete-At': '9999999999'},
    {'X-Object-Sysmeta-Slo-Etag': 'abc'},
])
def test_never_cached_kinds_of_object(prefix, headers):
    swift = Swift()
    mass, _, logger = make(prefix, swift)
    swift.write(PATH, BODY, headers)
    for _ in range(2):
        resp = call(mass)
        assert resp.body == BODY and resp.headers['X-Mass-Cache'] == 'miss'
    assert len(swift.object_requests('GET')) == 2
    assert 'cache.stored' not in logger.counters


def test_never_cached_missing_and_too_big(prefix):
    swift = Swift()
    mass, _, logger = make(prefix, swift,
                           conf={'cache_max_object_size': '50'})
    assert call(mass).status_int == 404
    swift.write(PATH, b'x' * 51)
    assert call(mass).body == b'x' * 51
    put(mass, body=b'x' * 50)
    cached(mass, swift)
    assert logger.counters.count('cache.stored') == 1


def test_an_uncacheable_object_costs_one_store_round_trip_less(prefix):
    # the SAIO's encrypting proxy paid two Redis round trips (body and
    # generation) on every GET of objects it could not cache
    swift = Swift()
    mass, _, logger = make(prefix, swift)
    swift.write(PATH, BODY, {'X-Object-Sysmeta-Symlink-Target': 'c/o2'})
    method = mass.methods.cache
    calls = []
    for name in ('get',):
        real = getattr(method.entries.bodies, name)
        setattr(method.entries.bodies, name,
                lambda *a, real=real: calls.append(a) or real(*a))
    assert call(mass).headers['X-Mass-Cache'] == 'miss'
    assert len(calls) == 1
    second = call(mass)
    assert second.body == BODY and second.headers['X-Mass-Cache'] == 'miss'
    assert len(calls) == 1 and logger.counters.count('cache.miss') == 1
    # a write through another proxy may have made it cacheable
    other, _, _ = make(prefix, swift)
    put(other)
    cached(mass, swift)


def test_an_object_found_uncacheable_is_tried_again_after_a_while(
        prefix, monkeypatch):
    """A move's fence gives an object an X-Delete-At (never cached) and
    its restore takes it away, and neither bumps its generation: a read
    in that moment must not keep the object uncached in its worker for as
    long as the generation lasts (a day)."""
    now = [1000.0]
    monkeypatch.setattr(cache.time, 'monotonic', lambda: now[0])
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    swift.write(PATH, BODY, {'X-Delete-At': '9123456789'})
    assert call(mass).headers['X-Mass-Cache'] == 'miss'
    assert mass.methods.cache._uncacheable
    # as the move's restore leaves it: the same version, no X-Delete-At,
    # the same generation
    swift.write(PATH, BODY, {})
    now[0] += cache.UNCACHEABLE_SECONDS - 1
    assert call(mass).headers['X-Mass-Cache'] == 'miss'
    now[0] += 2
    cached(mass, swift)


def test_range_and_conditional_misses_are_passed_on_not_stored(prefix):
    swift = Swift()
    mass, _, logger = make(prefix, swift)
    put(mass)
    resp = call(mass, headers={'Range': 'bytes=0-3'})
    assert resp.status_int == 206 and resp.body == BODY[:4]
    assert resp.headers['X-Mass-Cache'] == 'miss'
    assert 'cache.stored' not in logger.counters


# -- conditional and range answers, compared with swob's --------------------

def _conditions(etag, last_modified):
    return [
        {'Range': 'bytes=0-9'}, {'Range': 'bytes=-5'},
        {'Range': 'bytes=95-'}, {'Range': 'bytes=500-'},
        {'Range': 'bytes=0-1,5-7'}, {'Range': 'bytes=junk'},
        {'If-Match': etag}, {'If-Match': '"nope"'}, {'If-Match': '*'},
        {'If-None-Match': etag}, {'If-None-Match': '*'},
        {'If-None-Match': '"nope"'},
        {'If-Modified-Since': last_modified},
        {'If-Modified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT'},
        {'If-Unmodified-Since': last_modified},
        {'If-Unmodified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT'},
        {'If-Match': etag, 'Range': 'bytes=2-4'},
        {'If-None-Match': '"nope"', 'Range': 'bytes=2-4'},
    ]


def _normalised(resp):
    """Status, headers and body, with the one random thing (a multipart
    boundary) and Mass's own header taken out."""
    boundary = None
    content_type = resp.headers.get('Content-Type', '')
    match = re.search(r'boundary=(\w+)', content_type)
    if match:
        boundary = match.group(1)
    headers = {k: v for k, v in resp.headers.items() if k != 'X-Mass-Cache'}
    body = resp.body
    if boundary:
        headers['Content-Type'] = headers['Content-Type'].replace(
            boundary, 'B')
        body = body.replace(boundary.encode('ascii'), b'B')
    return resp.status, headers, body


def plain(app):
    return app


def encrypting(app):
    """Swift's own keymaster and encryption left of ``app``, as in the
    SAIO's proxy pipeline."""
    secret = base64.b64encode(b'k' * 32).decode('ascii')
    app = encryption.filter_factory({})(app)
    return keymaster.filter_factory(
        {'encryption_root_secret': secret})(app)


@pytest.mark.parametrize('left', [plain, encrypting])
@pytest.mark.parametrize('method', ['GET', 'HEAD'])
def test_conditional_and_range_hits_match_swift(prefix, method, left):
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    pipeline, without_mass = left(mass), left(swift)
    put(pipeline)
    first, _ = cached(pipeline, swift)
    for headers in _conditions(first.headers['ETag'],
                               first.headers['Last-Modified']):
        from_cache = call(pipeline, method=method, headers=headers)
        from_swift = call(without_mass, method=method, headers=headers)
        assert _normalised(from_cache) == _normalised(from_swift), headers
        # a failed precondition is Swift's proxy's to answer
        assert from_cache.headers['X-Mass-Cache'] == (
            'miss' if from_swift.status_int == 412 else 'hit'), headers


def test_etag_is_at_is_resolved_as_the_object_server_does(prefix):
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    put(mass, headers={'X-Object-Sysmeta-Other-Etag': '"alt"'})
    cached(mass, swift)
    at = {'X-Backend-Etag-Is-At': 'X-Object-Sysmeta-Other-Etag'}
    resp = call(mass, headers={'If-Match': '"alt"'}, environ={
        'HTTP_X_BACKEND_ETAG_IS_AT': at['X-Backend-Etag-Is-At']})
    assert (resp.status_int, resp.headers['X-Mass-Cache']) == (200, 'hit')
    resp = call(mass, headers={'If-None-Match': '"alt"'}, environ={
        'HTTP_X_BACKEND_ETAG_IS_AT': at['X-Backend-Etag-Is-At']})
    assert resp.status_int == 304


# -- under encryption at rest ---------------------------------------------

def test_encrypted_objects_are_cached_as_ciphertext_and_decrypted(prefix):
    swift = Swift()
    mass, _, logger = make(prefix, swift)
    pipeline = encrypting(mass)
    put(pipeline, headers={'X-Object-Meta-Color': 'blue',
                           'Content-Type': 'text/plain'})
    stored = swift.objects[PATH]
    assert stored['body'] != BODY  # ciphertext at rest
    first, second = cached(pipeline, swift)
    assert first.body == second.body == BODY
    assert second.headers['X-Object-Meta-Color'] == 'blue'
    assert second.headers['ETag'] == first.headers['ETag'] == \
        md5(BODY, usedforsecurity=False).hexdigest()
    assert logger.counters.count('cache.hit') == 1
    # the cache holds what the object servers hold, never the plaintext
    held = mass.methods.cache.entries.bodies.get(
        object_key('AUTH_t', 'c', 'o'))
    assert held.body == stored['body'] and BODY not in held.body
    assert not any(v == 'blue' for _, v in held.headers)


# -- bodies: budgets and eviction ------------------------------------------

def entry(size, validity='v'):
    return Entry(validity, [('Etag', 'e')], b'x' * size)


def test_local_lru_keeps_to_its_budget_and_evicts_the_least_used():
    clock = Clock()
    bodies = LocalBodies(budget=entry(100).size * 3, ttl=60, clock=clock)
    for key in 'abc':
        bodies.put(key, entry(100))
    assert bodies.get('a') is not None  # a is now the most recently used
    bodies.put('d', entry(100))
    assert bodies.get('b') is None
    assert all(bodies.get(k) is not None for k in 'acd')
    assert bodies.used <= bodies.budget and len(bodies) == 3
    bodies.put('big', entry(bodies.budget + 1))
    assert bodies.get('big') is None and len(bodies) == 3
    clock.now += 61
    assert bodies.get('a') is None


def test_local_lru_counts_a_replaced_entry_once():
    bodies = LocalBodies(budget=entry(100).size * 3, ttl=60, clock=Clock())
    bodies.put('a', entry(100))
    bodies.put('a', entry(50))
    assert bodies.used == entry(50).size and len(bodies) == 1
    bodies.delete('a')
    assert bodies.used == 0 and bodies.get('a') is None


def test_the_uncacheable_memo_is_bounded(prefix, monkeypatch):
    monkeypatch.setattr(cache, 'UNCACHEABLE_MEMO', 2)
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    for name in 'abc':
        path = '/v1/AUTH_t/c/' + name
        swift.write(path, BODY, {'X-Object-Manifest': 'c/seg_'})
        call(mass, path)
    memo = mass.methods.cache._uncacheable
    assert list(memo) == [object_key('AUTH_t', 'c', name)
                          for name in 'bc']


def test_redis_bodies_keep_to_their_budget(prefix, redis_db15):
    swift = Swift()
    budget = 4 * (len(BODY) + 400)
    mass, _, _ = make(prefix, swift, conf={
        'cache_budget_bytes': str(budget),
        'cache_max_object_size': str(len(BODY)),
        'cache_local_budget_bytes': '0'})
    bodies = mass.methods.cache.entries.bodies
    assert bodies.name == 'redis'
    for i in range(12):
        path = '/v1/AUTH_t/c/o%d' % i
        put(mass, path=path)
        cached(mass, swift, path=path)
        assert bodies.used() <= budget
        real = sum(len(redis_db15.get(k) or b'')
                   for k in redis_db15.scan_iter(
                       match=bodies.entry_prefix + '*'))
        assert real <= bodies.used()
    # the least recently used went first
    assert call(mass, '/v1/AUTH_t/c/o0').headers['X-Mass-Cache'] == 'miss'
    assert call(mass, '/v1/AUTH_t/c/o11').headers['X-Mass-Cache'] == 'hit'


def test_memcache_bodies_round_trip():
    from swift.common.memcached import MemcacheRing
    from swift_mass.proxy.methods.bodies import MemcacheBodies
    from tests.unit.helpers import MEMCACHE_SERVER
    ring = MemcacheRing([MEMCACHE_SERVER], logger=Logger())
    bodies = MemcacheBodies(60, ring, prefix='test-mass-%s/' %
                            uuid.uuid4().hex)
    bodies.put('k', Entry('v', [('Etag', '"e"'), ('X-Object-Meta-N',
                                                  '\xc3\xa9')], BODY))
    got = bodies.get('k')
    assert (got.validity, got.headers, got.body) == (
        'v', [('Etag', '"e"'), ('X-Object-Meta-N', '\xc3\xa9')], BODY)
    bodies.delete('k')
    assert bodies.get('k') is None
    assert not bodies.fits(1024 * 1024)


# -- configuration ---------------------------------------------------------

def test_memcache_bodies_go_to_servers_of_their_own(prefix):
    """Bodies in Swift's memcache evict its tokens and info: with
    cache_memcache_servers they go to memcached servers of their own."""
    from tests.unit.helpers import FakeMemcached
    own = FakeMemcached()
    try:
        swift = Swift()
        mass, _, logger = make(prefix, swift, conf={
            'cache_backend': 'memcache',
            'cache_memcache_servers': own.address})
        put(mass)
        cached(mass, swift)
        assert own.items  # the hit's body came from there
        assert not [line for level, line in logger.lines
                    if 'Swift\'s own memcache' in line]
    finally:
        own.stop()


def test_memcache_bodies_in_swifts_memcache_are_warned_of(prefix):
    _, _, logger = make(prefix, conf={'cache_backend': 'memcache'})
    assert [line for level, line in logger.lines
            if level == 'warning' and 'cache_memcache_servers' in line]


def test_the_caches_redis_is_the_configured_stores():
    # the cache took its Redis by walking the store chain built from the
    # config; it takes it from the config: the store's redis_url, its keys
    # under the store's prefix (a hash tag on a Cluster)
    mass = proxy.MassMiddleware(Swift(), {
        'redis_url': 'redis://10.0.0.9:6390/3', 'store': 'redis'},
        logger=Logger(), store=LocalStore())
    method = mass.methods.cache
    kwargs = method.generations.client.connection_pool.connection_kwargs
    assert (kwargs['host'], kwargs['port'], kwargs['db']) == (
        '10.0.0.9', 6390, 3)
    assert method.generations.prefix == 'mass:cache:'
    assert method.entries.bodies.name == 'redis'
    cluster = MassConf({'redis_url': 'redis+cluster://10.0.0.1:7000'})
    method = cache.CacheMethod.from_conf(Swift(), cluster, Logger())
    assert method.generations.prefix == '{mass}:cache:'
    # the store's prefix, when a test or a benchmark run has its own
    own = MassConf({})
    own.store.redis_prefix = 'bench-1:'
    method = cache.CacheMethod.from_conf(Swift(), own, Logger())
    assert method.generations.prefix == 'bench-1:cache:'


def test_redis_backend_without_redis_falls_back_to_local():
    logger = Logger()
    method = cache.CacheMethod.from_conf(
        Swift(), MassConf({'store': 'local'}), logger)
    assert method.entries.bodies.name == 'local'
    assert method.generations is None
    assert any('cache_backend = redis' in line for _, line in logger.lines)


def test_ignore_range_if_metadata_present_is_honoured(prefix):
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    put(mass, headers={'X-Object-Meta-Whole': 'yes'})
    cached(mass, swift)
    env = {'HTTP_X_BACKEND_IGNORE_RANGE_IF_METADATA_PRESENT':
           'X-Object-Meta-Whole'}
    resp = call(mass, headers={'Range': 'bytes=0-1'}, environ=env)
    assert resp.headers['X-Mass-Cache'] == 'miss'  # Swift answered
    env['HTTP_X_BACKEND_IGNORE_RANGE_IF_METADATA_PRESENT'] = 'X-Other'
    resp = call(mass, headers={'Range': 'bytes=0-1'}, environ=env)
    assert (resp.status_int, resp.body) == (206, BODY[:2])
    assert resp.headers['X-Mass-Cache'] == 'hit'


def test_concurrent_reads_of_a_rewritten_uncacheable_object(prefix):
    # two reads found the memo out of date while both waited for Redis;
    # the second one's `del` raised KeyError: a 500 to the client
    import eventlet
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    swift.write(PATH, BODY, {'X-Object-Sysmeta-Symlink-Target': 'c/o2'})
    call(mass)
    method = mass.methods.cache
    key = next(iter(method._uncacheable))
    real = method.validity_check.read

    def slow_read(env, k):
        eventlet.sleep(0)  # both readers wait here, as for Redis
        return real(env, k)
    method.validity_check.read = slow_read
    method._uncacheable[key] = 'a generation from before a write'
    readers = [eventlet.spawn(call, mass) for _ in range(2)]
    assert [r.wait().status_int for r in readers] == [200, 200]


def test_bodies_in_a_failing_redis_are_not_asked_until_it_may_answer(
        prefix):
    """A hung Redis cost every read its timeout: bodies kept in the
    generations' Redis share their breaker."""
    swift = Swift()
    mass, _, logger = make(prefix, swift,
                           conf={'cache_local_budget_bytes': '0'})
    method = mass.methods.cache
    clock = Clock()
    method.generations.clock = method.generations.breaker.clock = clock
    put(mass)
    cached(mass, swift)
    asked = []

    def hung(*args):
        asked.append(args)
        raise TimeoutError('Timeout reading from socket')
    real, method.entries.bodies.get = method.entries.bodies.get, hung
    for _ in range(3):
        assert call(mass).body == BODY
    # one read waited for it; the others, and the fills, skipped it
    assert len(asked) == 1
    # the first fill found Redis failing before its put: nothing to skip
    assert logger.counters.count('cache.backend_skipped') == 4
    clock.now += method.generations.breaker.retry_after
    method.entries.bodies.get = real
    assert call(mass).headers['X-Mass-Cache'] == 'hit'


def test_what_swift_refuses_before_authorising_is_never_a_hit(prefix):
    """The proxy app's own checks come before any hit: a Host it denies
    (deny_host_headers) gets Swift's 403, as without Mass."""
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    put(mass)
    cached(mass, swift)
    swift.deny_host_headers = ['evil.example']
    resp = call(mass, headers={'Host': 'evil.example'})
    assert resp.headers.get('X-Mass-Cache') is None
    assert call(mass, headers={'Host': 'good.example'}).headers[
        'X-Mass-Cache'] == 'hit'


def test_the_proxy_apps_own_checks_are_asked(prefix):
    swift = Swift()
    mass, _, _ = make(prefix, swift)
    put(mass)
    cached(mass, swift)
    asked = []

    def get_controller(req):
        asked.append(req.path)
        raise ValueError('no such path')
    swift.get_controller = get_controller
    assert 'X-Mass-Cache' not in call(mass).headers
    assert asked == [PATH]


def test_cache_results_labeled_by_class(prefix, sent):
    """With statsd_label_mode (Swift >= 2.36), each cache.<result> also
    goes out as swift_mass_cache labeled with the result and the tenant's
    class; the legacy names are as they were."""
    lines = sent
    mass, swift, logger = make(prefix, conf={
        'log_statsd_host': '127.0.0.1', 'statsd_label_mode': 'dogstatsd'})
    put(mass)
    cached(mass, swift)
    assert logger.counters.count('cache.hit') == 1
    assert logger.counters.count('cache.miss') == 1
    for result in ('hit', 'miss', 'stored'):
        assert lines.count('swift_mass_cache:1|c|#class:read,result:%s'
                           % result) == 1, lines


# -- reads during a move (swift-mass migrate) ----------------------------

STAGED = '/v1/AUTH_t/%s/o' % tags.staging_name('c')
MOVING = {'X-Container-Sysmeta-Mass-Migrating': 'target=bulk; since=1'}


def moved_after_the_first_read(swift, move):
    """Runs ``move()`` right after the backend's first object GET: between
    a miss's plain read and the read it sends again."""
    real = swift.GET

    def get_then_move(req):
        resp = real(req)
        if swift.GET is get_then_move:
            swift.GET = swift.HEAD = real
            move()
        return resp
    swift.GET = swift.HEAD = get_then_move


def behind_a_lagging_replica(prefix, policies):
    """A cache tenant's object, its fence sealed, written again while a
    replica missed it: the next plain read reaches that replica."""
    mass, swift, _ = make(prefix)
    swift.policies = policies
    put(mass, b'old')
    cached(mass, swift)
    old = swift.objects[PATH]
    put(mass, b'new')
    swift.lagging[PATH] = old
    swift.lagging_reads[PATH] = 1
    return mass, swift


def test_a_miss_read_again_during_a_move_reads_the_staged_copy(prefix):
    """A plain read reached a replica that missed the last write; before
    the miss read the newest replica, ``swift-mass migrate`` had copied the
    object to its staging container (another policy) and deleted it from
    the container.  The read of the staging copy must reach the staging
    container's policy: the first read's proxy had written the container's
    policy index into the environ, and the staged read carried it (soak,
    2026-12-05: a 404 for an object that existed)."""
    mass, swift = behind_a_lagging_replica(prefix, {
        '/v1/AUTH_t/c': 0, '/v1/AUTH_t/' + tags.staging_name('c'): 2})

    def copy_and_delete():
        swift.objects[STAGED] = dict(swift.objects.pop(PATH), policy=2)
        swift.lagging.pop(PATH)
        for container in ('/v1/AUTH_t/c',
                          '/v1/AUTH_t/' + tags.staging_name('c')):
            swift.container_headers[container] = MOVING
    moved_after_the_first_read(swift, copy_and_delete)
    del swift.requests[:]
    resp = call(mass)
    assert (resp.status_int, resp.body) == (200, b'new')
    assert [(r[1], r[3].get('X-Newest'),
             r[3]['X-Backend-Storage-Policy-Index'])
            for r in swift.object_requests('GET')] == [
        (PATH, None, '0'), (PATH, 'true', '0'), (STAGED, 'true', '2')]


def test_a_miss_read_again_after_a_move_reads_the_containers_new_policy(
        prefix):
    """The same, once the move had ended before the second read: the
    container is in its new policy, with the object restored there.  The
    read sent again reaches that policy, not the one the first read
    found."""
    mass, swift = behind_a_lagging_replica(prefix, {'/v1/AUTH_t/c': 0})

    def moved():
        swift.policies['/v1/AUTH_t/c'] = 2
        swift.objects[PATH]['policy'] = 2
        swift.lagging.pop(PATH)
    moved_after_the_first_read(swift, moved)
    del swift.requests[:]
    resp = call(mass)
    assert (resp.status_int, resp.body) == (200, b'new')
    assert [(r[3].get('X-Newest'), r[3]['X-Backend-Storage-Policy-Index'])
            for r in swift.object_requests('GET')] == [
        (None, '0'), ('true', '2')]
