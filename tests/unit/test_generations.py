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
"""Generations under the ways Redis misbehaves (swift_mass.generations),
against fakeredis: its INFO gives a run_id the tests change to stand for a
new server process (tests/unit/conftest.py).  The functional tests do the
same to a real Redis.  A proxy's reader, an object server's writer and the
leader's publisher each have their own object, as in a cluster, sharing
one Redis and prefix."""
import importlib.resources
import os
import time
import uuid
import weakref

import pytest
import redis
from swift.common.swob import str_to_wsgi
from swift.common.utils import Timestamp
from redis.crc import key_slot
from redis.exceptions import RedisClusterException

from swift_mass.control.stores.redis_store import RedisStore
from swift_mass.generations import object_key
from swift_mass.generations.publisher import BumpedSetPublisher
from swift_mass.generations.reader import GenerationReader, Written
from swift_mass.generations.writer import GenerationWriter
from swift_mass.proxy.methods.bodies import Entry, RedisBodies
from swift_mass.redis_client import SENTINEL_HOLD, key_prefix
from tests.unit.helpers import REDIS_URL, Clock, Logger, restart, server_of, \
    names_cluster_error

DOWN_REDIS_URL = 'redis://127.0.0.1:1/0'  # connection refused
DOWN_CLUSTER_URL = 'redis+cluster://127.0.0.1:1,127.0.0.1:2'
DOWN_SENTINEL_URL = 'redis+sentinel://127.0.0.1:1/mass'
# constructed, never asked
SENTINEL_URL = 'redis+sentinel://127.0.0.1:26390/mass'


DEVICE = '127.0.0.1:6210/sdb1'


def publish(generations, tenants):
    """What the leader does: ``tenants`` published as bumped, through
    ``generations``; the set's version."""
    return BumpedSetPublisher(generations).publish(tenants)


def object_server(prefix, clock=None):
    """One object server process serving the one DEVICE."""
    server = GenerationWriter(REDIS_URL, Logger(), prefix=prefix,
                              clock=clock or Clock())
    server.names = lambda: {DEVICE}
    return server


def reader_of(prefix, clock=None):
    return GenerationReader(REDIS_URL, Logger(), prefix=prefix,
                            clock=clock or Clock())


def covered(reader):
    return reader.uncovered(lambda: {DEVICE}, period=0) == frozenset()


# per reader, the object server whose heartbeat applies the set trusting()
# published: the same one at every call, as the device's one process
_servers = weakref.WeakKeyDictionary()


def trusting(reader, tenants=('t',)):
    """``reader``, a proxy's, trusted for ``tenants``: they are published
    as bumped, and an object server of the one DEVICE applies that set."""
    publish(reader, tenants)
    server = _servers.get(reader)
    if server is None:
        server = _servers[reader] = object_server(reader.prefix)
    assert server.heartbeat()
    assert covered(reader)
    return reader


@pytest.fixture
def reader(prefix):
    """A proxy's generations, trusting the tenant 't'."""
    return trusting(GenerationReader(REDIS_URL, Logger(), prefix=prefix))


@pytest.fixture
def writer(prefix):
    """The generations of an object server (of the one DEVICE) in the
    reader's Redis."""
    writer = GenerationWriter(REDIS_URL, Logger(), prefix=prefix)
    writer.names = lambda: {DEVICE}
    return writer


def snapshot(generations):
    return {key.decode(): generations.client.dump(key) for key in
            generations.client.scan_iter(match=generations.prefix + '*')}


def test_a_lost_key_is_a_new_token(reader):
    first, _ = reader.read('k', 't')
    assert reader.read('k', 't')[0] == first
    reader.client.delete(*reader.client.scan_iter(match=reader.prefix + '*'))
    assert reader.read('k', 't')[0] != first


def test_a_read_writes_a_generation_only_when_there_is_none(reader):
    """A hit's validity read wrote the generation back (GET + SET EX) on
    every read; only ``alive`` must be written each time."""
    key = reader.prefix + 'g:k'
    first, _ = reader.read('k', 't')
    assert 0 < reader.client.ttl(key) <= reader.ttl
    reader.client.expire(key, 1000)
    alive = reader.client.get(reader.alive_key)
    time.sleep(0.002)
    assert reader.read('k', 't')[0] == first
    assert reader.client.ttl(key) <= 1000  # not written again
    assert reader.client.get(reader.alive_key) != alive  # the one write


def test_a_restart_from_a_snapshot_invalidates_everything(reader, writer):
    old, _ = reader.read('k', 't')  # a body was cached under this
    saved = snapshot(reader)
    assert writer.bump(['k'])  # a write, lost with the restart
    restart(saved, reader, writer)
    assert reader.client.dump(reader.prefix + 'g:k') == saved[
        reader.prefix + 'g:k']  # the old token is back...
    assert reader.read('k', 't')[0] != old  # ...but not the old validity
    assert 'generations.new_instance' in reader.logger.counters


def test_a_new_connection_to_the_same_server_changes_nothing(reader):
    validity, _ = reader.read('k', 't')
    reader.client.connection_pool.disconnect()
    assert reader.read('k', 't')[0] == validity


def test_a_gap_in_redis_time_invalidates_everything(reader):
    validity, _ = reader.read('k', 't')
    # nothing ran for longer than the gap: a hang, a refusal, no heartbeat
    reader.client.set(reader.alive_key, 1)
    assert reader.read('k', 't')[0] != validity


def test_heartbeats_keep_the_epoch(reader, writer):
    validity, _ = reader.read('k', 't')
    assert reader.heartbeat() and writer.heartbeat()
    assert reader.read('k', 't')[0] == validity


def test_a_proxys_heartbeat_renews_alive_and_registers_nothing(prefix):
    reader = reader_of(prefix)
    assert reader.heartbeat()
    assert reader.client.get(reader.alive_key) is not None
    assert list(reader.client.scan_iter(
        match=reader.bumper_prefix + '*')) == []


def test_the_gap_check_is_the_same_in_every_script_that_has_it():
    # Redis runs each script alone, so each file holds its own copy
    def gap_check(name):
        text = importlib.resources.files('swift_mass.generations').joinpath(
            'lua', name + '.lua').read_text(encoding='utf-8')
        start = text.index('-- The gap check')
        return text[start:text.index('-- (the gap check ends)', start)]
    copies = {gap_check(name)
              for name in ('read', 'bump', 'heartbeat', 'seal')}
    assert len(copies) == 1
    assert "redis.call('SET', KEYS[2], now)" in copies.pop()


class Refusing(object):
    """A Redis that answers reads but refuses writes (MISCONF, OOM with
    noeviction, READONLY, NOREPLICAS): every script of Mass writes."""

    def __init__(self, error):
        self.error = error
        self.calls = 0

    def __call__(self, **kwargs):
        self.calls += 1
        raise redis.ResponseError(self.error)


@pytest.mark.parametrize('error', [
    'MISCONF Redis is configured to save RDB snapshots',
    'OOM command not allowed when used memory > maxmemory',
    "READONLY You can't write against a read only replica.",
    'NOREPLICAS Not enough good replicas to write.'])
def test_readers_fail_with_writers_while_redis_refuses_writes(prefix, error):
    clock = Clock()
    reader = trusting(reader_of(prefix, clock))
    writer = GenerationWriter(REDIS_URL, Logger(), prefix=prefix,
                              clock=clock, sleep=clock.sleep,
                              spawn=lambda repair: None)
    validity, _ = reader.read('k', 't')
    real_read, real_bump = reader._read, writer._bump
    reader._read = Refusing(error)
    writer._bump = Refusing(error)
    assert reader.read('k', 't') == (None, None)  # validated by a HEAD instead
    assert writer.bump(['k']) is False and writer.dirty
    reader._read, writer._bump = real_read, real_bump
    assert reader.read('k', 't') == (None, None)  # holds off after a failure
    clock.now += reader.breaker.retry_after + 1
    writer._repair()
    assert not writer.dirty
    assert reader.read('k', 't')[0] not in (None, validity)


def unreachable_writer(url):
    """(a writer of ``url``, which does not answer, on a clock of its
    own; the repairs it spawned)."""
    clock = Clock()
    repairs = []
    return GenerationWriter(url, Logger(), bump_wait=0.05, clock=clock,
                            sleep=clock.sleep, spawn=repairs.append), repairs


def test_a_failed_bump_waits_at_most_bump_wait_and_is_repaired():
    writer, repairs = unreachable_writer(DOWN_REDIS_URL)
    clock = writer.clock
    started = clock.now
    assert writer.bump(['k']) is False
    assert clock.now - started <= 0.05
    assert writer.dirty and repairs == [writer._repair]
    waited = clock.now
    assert writer.bump(['k']) is False  # dirty: skipped, no wait
    assert clock.now == waited and repairs == [writer._repair]
    assert 'generations.bump_skipped' in writer.logger.counters
    warnings = [line for level, line in writer.logger.lines
                if level == 'warning']
    assert len(warnings) == 1


def test_a_heartbeat_waits_its_interval_a_bump_only_bump_wait():
    # on a host whose CPU is saturated a reply may be read 40 ms late; a
    # heartbeat is on no request's path, and its registration is trusted
    # from before the call, so it waits its interval before failing
    writer = GenerationWriter(REDIS_URL, Logger(), bump_wait=0.04, gap=2)

    def timeout(client):
        return client.connection_pool.connection_kwargs['socket_timeout']
    assert timeout(writer.bump_client) == 0.04
    assert timeout(writer.heartbeat_client) == 0.5


def test_through_sentinel_a_write_not_recorded_waits_out_the_old_master():
    # a proxy pool that found the old master before the outage may read
    # it for a check period more: the outage's first writes are answered
    # after that
    writer, repairs = unreachable_writer(DOWN_SENTINEL_URL)
    clock = writer.clock
    started = clock.now
    assert writer.bump(['k']) is False
    assert SENTINEL_HOLD <= clock.now - started <= SENTINEL_HOLD + 0.1
    assert writer.dirty and repairs == [writer._repair]

    # once the repair replaced the epoch, no body cached before is served
    # from any master: the write is answered then
    writer, repairs = unreachable_writer(DOWN_SENTINEL_URL)
    clock = writer.clock

    def repaired_in_half_a_second(seconds):
        clock.sleep(seconds)
        if clock.now - started >= 0.5:
            writer.dirty = False
    writer.sleep = repaired_in_half_a_second
    started = clock.now
    assert writer.bump(['k']) is False
    assert 0.5 <= clock.now - started < 0.6


def test_through_sentinel_an_outage_holds_writes_once_not_each():
    """Every write of every tenant waited SENTINEL_HOLD for as long as a
    Sentinel outage lasted, each holding its mass_queue slot, so reads
    queued behind them got 503s (audit D7).  The hold is counted from the
    outage's first failed bump: by then no proxy pool reads the master the
    writer lost, so later writes of the outage wait at most bump_wait."""
    writer, repairs = unreachable_writer(DOWN_SENTINEL_URL)
    clock = writer.clock
    started = clock.now
    assert writer.bump(['k']) is False  # the first: held
    assert clock.now - started >= SENTINEL_HOLD
    for _ in range(5):
        began = clock.now
        assert writer.bump(['k']) is False  # skipped while dirty
        assert clock.now - began <= writer.bump_wait
    # a write in the outage's first SENTINEL_HOLD waits out only the rest
    writer, repairs = unreachable_writer(DOWN_SENTINEL_URL)
    clock = writer.clock
    started = clock.now
    assert writer.bump(['k'], hold=False) is False
    clock.sleep(0.5)
    assert writer.bump(['k']) is False
    assert SENTINEL_HOLD <= clock.now - started <= SENTINEL_HOLD + 0.1
    # Redis answered again: the next outage holds again
    writer.dirty = False
    writer.outage_began = None
    began = clock.now
    assert writer.bump(['k']) is False
    assert clock.now - began >= SENTINEL_HOLD


def test_a_tenant_outside_the_registered_set_is_not_held(prefix):
    """While this process's registration surely lives, a proxy reading the
    master that holds it sees a set without the tenant, so trusts none of
    its generations: an unrecorded write of that tenant need not wait."""
    clock = Clock()
    server = object_server(prefix, clock)
    publish(reader_of(prefix), {'a'})
    assert server.heartbeat()
    assert server.holds_unrecorded('a') and \
        not server.holds_unrecorded('b')
    server_of(server).connected = False
    assert not server.heartbeat()  # bumps everyone now...
    assert server.bumps_writes_of('b')
    assert not server.holds_unrecorded('b')  # ...but holds only members
    clock.now += server.registration_ms / 1000.0
    assert server.holds_unrecorded('b')  # it may have lapsed
    server_of(server).connected = True


def test_a_repair_replaces_the_epoch_once_redis_answers(reader, writer):
    validity, _ = reader.read('k', 't')
    writer.dirty = True
    real_set = writer.bump_client.set
    attempts = []

    def set_failing_once(*args, **kwargs):
        attempts.append(1)
        if len(attempts) == 1:
            raise redis.ConnectionError('not yet')
        return real_set(*args, **kwargs)
    writer.bump_client.set = set_failing_once
    writer.sleep = lambda seconds: None
    writer._repair()
    assert len(attempts) == 2 and not writer.dirty
    assert reader.read('k', 't')[0] != validity


def test_a_bump_skipped_while_the_new_epoch_is_on_its_way_takes_another(
        writer):
    writer.dirty = True
    real_set = writer.bump_client.set
    epochs = []

    def set_while_a_write_skips(*args, **kwargs):
        if not epochs:
            # another green thread's write, acknowledged after Redis took
            # this epoch: a reader may cache its old body under it
            assert writer.bump(['k'], None) is False
        epochs.append(args[1])
        return real_set(*args, **kwargs)
    writer.bump_client.set = set_while_a_write_skips
    writer._repair()
    assert len(epochs) == 2 and not writer.dirty
    assert writer.client.get(writer.epoch_key).decode() == epochs[-1]


def test_unreachable_reads_cost_one_timeout_per_retry_after():
    clock = Clock()
    reader = GenerationReader(DOWN_REDIS_URL, Logger(), retry_after=5,
                              clock=clock)
    tries = []
    real_read = reader._read

    def counted(**kwargs):
        tries.append(1)
        return real_read(**kwargs)
    reader._read = counted
    assert reader.read('k', 't') == (None, None)
    assert reader.read('k', 't') == (None, None)
    assert len(tries) == 1
    clock.now += 6
    assert reader.read('k', 't') == (None, None)
    assert len(tries) == 2


def test_every_caller_may_ask_redis_again_once_retry_after_passed():
    """The stores' Breaker, without its one probe at a time: the cache's
    calls to bodies in this Redis ask :meth:`available` and report only
    their failures, so a probe one of them took would keep Redis skipped
    after it recovered."""
    clock = Clock()
    reader = GenerationReader(DOWN_REDIS_URL, Logger(), retry_after=5,
                              clock=clock)
    reader.failed(redis.ConnectionError('refused'))
    assert not reader.available()
    clock.now += 5
    assert reader.available() and reader.available()
    [(level, line)] = reader.logger.lines
    assert level == 'warning' and 'ConnectionError: refused' in line


def test_keys_are_renamed_on_a_cluster_only():
    """mass:cache: on one Redis and a Sentinel's master, as in earlier
    releases; {mass}:cache: on a Cluster, where the object servers' keys,
    the proxies' (made from the store's prefix) and the cached bodies'
    are all in the slot of {mass}."""
    assert GenerationReader(REDIS_URL, Logger()).prefix == 'mass:cache:'
    assert GenerationWriter(SENTINEL_URL, Logger()).prefix == 'mass:cache:'
    server = GenerationWriter(DOWN_CLUSTER_URL, Logger())
    proxy = GenerationReader(DOWN_CLUSTER_URL, Logger(), prefix=RedisStore(
        DOWN_CLUSTER_URL).prefix + 'cache:')
    assert server.prefix == proxy.prefix == '{mass}:cache:'
    bodies = RedisBodies(proxy.client, 1024, 60, prefix=proxy.prefix)
    key = object_key('AUTH_t', 'c', 'o')
    names = [server.epoch_key, server.alive_key, server.instance_key,
             server.bumper_prefix + DEVICE, server.bumps_key,
             server.bumps_version_key, server._key(key)] + bodies._keys(key)
    assert {key_slot(name.encode()) for name in names} == \
        {key_slot(b'{mass}')}


def test_every_key_written_under_the_cluster_tag_is_in_its_slot(
        redis_db15):
    """Against fakeredis with a Cluster's prefix: what the scripts write
    (a put's eviction deletes entries it names itself) stays in the slot
    of the tag."""
    reader = trusting(GenerationReader(REDIS_URL, Logger(), prefix=key_prefix(
        DOWN_CLUSTER_URL, 'mass:cache:')))
    assert reader.prefix == '{mass}:cache:'
    writer = GenerationWriter(REDIS_URL, Logger(), prefix=reader.prefix)
    first, _ = reader.read('k', 't')
    assert writer.bump(['k'], '1700000000.00000')
    assert reader.read('k', 't')[0] not in (None, first)
    assert writer.load_bumped() and writer.bumped == frozenset(['t'])
    entry = Entry(first, [], b'x' * 100)
    # room for one entry (its body, validity and headers)
    bodies = RedisBodies(reader.client, len(entry.dump()) * 3 // 2, 60,
                         prefix=reader.prefix)
    bodies.put('a', entry)
    bodies.put('b', entry)  # evicts a
    assert bodies.get('a') is None and bodies.get('b').body == entry.body
    keys = list(redis_db15.scan_iter())
    assert len(keys) >= 8
    assert {key_slot(key) for key in keys} == {key_slot(b'{mass}')}


def test_an_unreachable_cluster_is_redis_down_not_a_failed_start():
    clock, repairs = Clock(), []
    reader, writer = [
        role(DOWN_CLUSTER_URL, Logger(), clock=clock, sleep=clock.sleep,
             spawn=repairs.append)
        for role in (GenerationReader, GenerationWriter)]
    bodies = RedisBodies(reader.client, 1024, 60, prefix=reader.prefix)
    assert reader.read('k', 't') == (None, None)
    assert names_cluster_error(reader.breaker.error)
    [(_, warning)] = reader.logger.lines
    assert names_cluster_error(
        warning.split('Redis unavailable (', 1)[1])
    assert reader.uncovered(lambda: {DEVICE}) is None
    assert not reader.heartbeat()
    assert writer.bump(['k']) is False and writer.dirty
    assert repairs == [writer._repair]
    assert not writer.heartbeat()
    with pytest.raises(RedisClusterException):
        bodies.get('k')


def test_registrations_say_which_devices_bump(prefix):
    clock = Clock()
    reader = reader_of(prefix, clock)
    writer = GenerationWriter(REDIS_URL, Logger(), prefix=prefix)
    writer.names = lambda: {'127.0.0.1:6210/sdb1'}
    assert writer.heartbeat()
    required = {'127.0.0.1:6210/sdb1', '127.0.0.2:6220/sdb2'}
    assert reader.uncovered(lambda: required) == {'127.0.0.2:6220/sdb2'}
    writer.names = lambda: required
    writer.heartbeat()
    # looked up again only after the period
    assert reader.uncovered(lambda: required, period=5) == {
        '127.0.0.2:6220/sdb2'}
    clock.now += 6
    assert reader.uncovered(lambda: required, period=5) == frozenset()


def test_coverage_is_not_asked_of_a_redis_that_just_failed():
    # a hung Redis cost every write-through (and read) of every merge
    # tenant the reader's timeout
    clock = Clock()
    reader = GenerationReader(DOWN_REDIS_URL, Logger(), retry_after=5,
                              clock=clock)
    asked = []
    reader._coverage_script = lambda keys: asked.append(keys) or 1 / 0
    devices = lambda: {'127.0.0.1:6210/sdb1'}  # noqa: E731
    assert reader.uncovered(devices) is None
    assert reader.uncovered(devices) is None
    assert len(asked) == 1
    clock.now += 6
    assert reader.uncovered(devices) is None
    assert len(asked) == 2


def test_coverage_is_unknown_while_redis_is_down():
    reader = GenerationReader(DOWN_REDIS_URL, Logger())
    assert reader.uncovered(lambda: {'127.0.0.1:6210/sdb1'}) is None


# -- no write tax: only the tenants whose method reads generations ----------

def test_a_tenant_named_beyond_ascii_stops_no_registration(prefix):
    """The bumped set was decoded as ASCII: one tenant named in UTF-8
    (Swift allows it) made every object server's heartbeat fail, so no
    device stayed registered and nothing was trusted."""
    tenant = str_to_wsgi('AUTH_caf\u00e9')  # as the paths name it
    reader = trusting(reader_of(prefix), tenants=('AUTH_t', tenant))
    server = object_server(prefix)
    assert server.heartbeat()
    assert server.bumped == {'AUTH_t', tenant}
    assert server.bumps_writes_of(tenant) and not server.bumps_writes_of('x')
    assert reader.read('k', tenant)[0] is not None


def test_a_ring_that_cannot_be_read_ends_no_heartbeat_and_no_read(
        reader, writer):
    """A ring replaced in place raised out of the heartbeat, whose green
    thread then ended for good; on a proxy, out of every cached read."""
    def broken():
        raise EOFError('Ran out of input')
    writer.names = broken
    assert writer.heartbeat() is False
    writer.names = lambda: {DEVICE}
    assert writer.heartbeat() is True
    assert reader.uncovered(broken, period=0) is None
    assert any('ring devices could not be read' in line
               for _, line in reader.logger.lines)
    assert reader.uncovered(lambda: {DEVICE}, period=0) == frozenset()


@pytest.mark.parametrize('role', ['reader', 'writer'])
def test_a_failing_heartbeat_is_logged_once_until_it_succeeds(
        request, role):
    generations = request.getfixturevalue(role)
    real = generations._heartbeat

    def refused(**kwargs):
        raise redis.ResponseError('MISCONF no writes')
    generations._heartbeat = refused
    assert not generations.heartbeat() and not generations.heartbeat()
    warned = [line for level, line in generations.logger.lines
              if 'heartbeat failed' in line]
    assert len(warned) == 1 and 'MISCONF' in warned[0]
    generations._heartbeat = real
    assert generations.heartbeat()
    assert any('heartbeat succeeds again' in line
               for _, line in generations.logger.lines)


def test_a_tenant_not_bumped_is_never_trusted(reader):
    assert reader.read('k', 't')[0] is not None
    assert reader.read('k', 'other') == (None, None)


def test_an_object_server_bumps_only_the_published_tenants():
    prefix = 't:%s:' % uuid.uuid4().hex
    clock = Clock()
    server = object_server(prefix, clock)
    # before it knows the set: everyone's writes
    assert server.bumps_writes_of('a') and server.bumps_writes_of('b')
    publish(reader_of(prefix), {'a'})
    assert server.heartbeat()
    assert server.bumps_writes_of('a')
    assert not server.bumps_writes_of('b')
    # its registration may have lapsed (no heartbeat got through): it
    # cannot know whether a proxy trusts more than it bumps
    clock.now += server.registration_ms / 1000.0
    assert server.bumps_writes_of('b')


def test_a_process_whose_heartbeat_failed_bumps_every_write_at_once():
    """A failed heartbeat left the process trusting its registration until
    its own deadline, a second short of Redis's: with no margin for a
    clock that stepped, it kept an old bumped set after Redis had dropped
    its registration."""
    prefix = 't:%s:' % uuid.uuid4().hex
    clock = Clock()
    server = object_server(prefix, clock)
    publish(reader_of(prefix), {'a'})
    assert server.heartbeat() and not server.bumps_writes_of('b')
    server_of(server).connected = False  # Redis is gone, for this process
    assert not server.heartbeat()
    assert server.bumps_writes_of('b')  # the clock has not moved
    server_of(server).connected = True
    assert server.heartbeat() and not server.bumps_writes_of('b')


def test_a_registration_redis_dropped_early_takes_a_new_epoch():
    """Redis can drop a registration before the process's own deadline
    (its clock stepped forward, the key evicted): the process let writes
    of tenants outside its old set pass unbumped meanwhile, while the
    proxies no longer waited for it.  Only Redis can tell (its TIME), at
    the next heartbeat: every validity read before then changes."""
    prefix = 't:%s:' % uuid.uuid4().hex
    reader = trusting(reader_of(prefix))
    server = object_server(prefix)
    assert server.heartbeat()
    validity, _ = reader.read('k', 't')
    assert server.heartbeat()
    assert reader.read('k', 't')[0] == validity  # the control
    server.client.delete(server.bumper_prefix + DEVICE)  # evicted
    assert server.heartbeat()
    assert reader.read('k', 't')[0] not in (None, validity)
    assert 'generations.registration_lapsed' in server.logger.counters
    # a process that did not rely on a registration takes none
    validity, _ = reader.read('k', 't')
    fresh = object_server(prefix)
    assert fresh.heartbeat()
    assert reader.read('k', 't')[0] == validity


def test_local_deadlines_are_on_the_monotonic_clock():
    """They were on time.time: a step back of the wall clock let a process
    keep an old bumped set after Redis had dropped its registration, and
    froze a proxy's lookups of coverage for as long as the step."""
    prefix = 't:%s:' % uuid.uuid4().hex
    server = GenerationWriter(REDIS_URL, Logger(), prefix=prefix)
    assert server.clock is time.monotonic
    server.names = lambda: {DEVICE}
    lives = server.registration_ms / 1000.0 - 1.0
    began = time.monotonic()
    assert server.heartbeat()
    assert began + lives <= server.registered_until <= \
        time.monotonic() + lives


def test_a_forked_worker_bumps_everyone_until_its_own_heartbeat(
        monkeypatch):
    prefix = 't:%s:' % uuid.uuid4().hex
    server = object_server(prefix)
    publish(reader_of(prefix), {'a'})
    assert server.heartbeat() and not server.bumps_writes_of('b')
    # a worker forked now inherits the parent's set and registration, but
    # no proxy waits for a process it has never seen register
    parent = os.getpid()
    monkeypatch.setattr(os, 'getpid', lambda: parent + 1)
    assert server.bumps_writes_of('b')
    assert server.heartbeat() and not server.bumps_writes_of('b')
    assert server.process().split('/')[1] == str(parent + 1)


def test_a_tenant_is_trusted_once_every_process_of_every_device_applies_it():
    prefix = 't:%s:' % uuid.uuid4().hex
    reader = reader_of(prefix)
    first, second = object_server(prefix), object_server(prefix)
    assert first.heartbeat() and second.heartbeat()  # the empty set
    assert covered(reader)
    publish(reader, {'t'})
    assert reader.read('k', 't') == (None, None)
    assert first.heartbeat()
    # the second process of the device still applies the old set
    assert covered(reader)
    assert reader.read('k', 't') == (None, None)
    assert not second.bumps_writes_of('t')
    assert second.heartbeat()
    assert second.bumps_writes_of('t')
    assert covered(reader)
    assert reader.read('k', 't')[0] is not None


def test_a_process_that_stopped_does_not_hold_the_barrier_forever():
    prefix = 't:%s:' % uuid.uuid4().hex
    reader = reader_of(prefix)
    live, gone = object_server(prefix), object_server(prefix)
    gone.registration_ms = 50
    assert live.heartbeat() and gone.heartbeat()
    publish(reader, {'t'})
    assert live.heartbeat()
    assert covered(reader) and reader.read('k', 't') == (None, None)
    time.sleep(0.1)  # Redis's clock: the gone process's field expired
    assert covered(reader)
    assert reader.read('k', 't')[0] is not None
    # and the next heartbeat of a live process clears it away
    assert live.heartbeat()
    assert gone.process() not in {
        f.decode() for f in reader.client.hkeys(reader.bumper_prefix +
                                                DEVICE)}


def test_a_tenant_that_leaves_is_untrusted_at_once_and_comes_back_anew():
    prefix = 't:%s:' % uuid.uuid4().hex
    reader = reader_of(prefix)
    server = object_server(prefix)
    publish(reader, {'t'})
    assert server.heartbeat() and covered(reader)
    before, _ = reader.read('k', 't')
    assert before is not None
    publish(reader, set())
    # the reader's coverage is not looked up again, and the object server
    # still bumps the tenant: the read itself says it is out
    assert reader.read('k', 't') == (None, None)
    assert server.bumps_writes_of('t')
    assert server.heartbeat() and not server.bumps_writes_of('t')
    publish(reader, {'t'})
    assert server.heartbeat()
    assert covered(reader)
    again, _ = reader.read('k', 't')
    # not written since, but what was cached in the first membership is
    # not served in this one: writes in between were not bumped
    assert again is not None and again != before


def test_publishing_the_same_tenants_changes_no_version(reader):
    publisher = BumpedSetPublisher(reader)
    version = publisher.publish({'t'})
    assert publisher.publish({'t'}) == version
    assert publisher.publish({'t', 'u'}) == version + 1
    assert publisher.publish(set()) == version + 2


def test_a_set_redis_did_not_take_is_no_version():
    publisher = BumpedSetPublisher(GenerationReader(DOWN_REDIS_URL, Logger()))
    assert publisher.publish({'t'}) is None
    [(level, line)] = publisher.generations.logger.lines
    assert level == 'warning' and 'could not publish' in line


def test_a_fence_covers_a_version_rewritten_with_another_offset():
    """A read during a move found the staged copy (its version's time,
    offset 1) older than the move's own fence and delete (offsets 2, 3):
    it read X-Newest again and lost the race with the move's cleanup, a
    404 for an object that exists."""
    version = Timestamp.now()
    moved = Timestamp(version, offset=3)
    fence = Written(moved, True, moved)
    staged = Timestamp(version, offset=1).internal
    assert fence.covers(staged, staged)
    older = Timestamp(float(version) - 1).internal
    assert not fence.covers(older, older)
    assert not fence.covers(staged, older)  # new metadata on older data
