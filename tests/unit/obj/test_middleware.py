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
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from urllib.parse import quote

from unittest import mock

import eventlet
import pytest

from swift.common import registry
from swift.common.swob import Request
from swift.common.utils import Timestamp, load_recon_cache
from swift.common.wsgi import loadapp

from swift_mass import tags
from swift_mass.obj import device_queue
from swift_mass.conf import ConfigError, QueueConf
from swift_mass.generations import object_key
from swift_mass.generations.publisher import BumpedSetPublisher
from swift_mass.generations.reader import GenerationReader
from swift_mass.obj import middleware as object_mw
from tests.unit.helpers import REDIS_URL, Clock, Logger, RecordingApp
from tests.unit.obj.test_reports import dead_pid
from tests.unit.test_generations import trusting
from tests.unit.test_ring_devices import rings_of_two_servers


class CountingLogger(object):
    """Captures what would go to statsd."""

    def __init__(self):
        self.counts = {}
        self.timings = {}
        self.lines = []

    def info(self, line, *args):
        self.lines.append(('info', line % args if args else line))

    def warning(self, line, *args):
        self.lines.append(('warning', line % args if args else line))

    def exception(self, line, *args):
        self.lines.append(('exception', line % args if args else line))

    def increment(self, metric):
        self.counts[metric] = self.counts.get(metric, 0) + 1

    def timing(self, metric, value):
        self.timings.setdefault(metric, []).append(value)

    def only(self, prefix):
        return dict((metric, count) for metric, count in self.counts.items()
                    if metric.startswith(prefix))


# The object server's devices: the queue governs only devices it has.
DEVICES = tempfile.mkdtemp(prefix='mass-queue-devices-')
for _device in ('sdb1', 'sdb2'):
    os.mkdir(os.path.join(DEVICES, _device))
# not a directory: not a device
open(os.path.join(DEVICES, 'sdb3'), 'w').close()
# never the machine's /var/cache/swift, where its object servers write
RECON = tempfile.mkdtemp(prefix='mass-queue-recon-')


class Spawned(list):
    """Records what the filter spawned, running none of it."""

    def __call__(self, func, *args):
        self.append((func, args))


def make(conf=None, app=None, clock=None):
    """The filter on DEVICES, directories that are not mount points (as on
    a SAIO: mount_check = false), unless `conf` says otherwise; its
    reports go to RECON, and its green threads to ``mw.reports.spawn``."""
    app = app or RecordingApp()
    logger = CountingLogger()
    conf = dict({'devices': DEVICES, 'mount_check': 'false',
                 'recon_cache_path': RECON}, **(conf or {}))
    mw = object_mw.MassQueueMiddleware(app, conf, logger=logger,
                                       clock=clock or Clock(),
                                       spawn=Spawned())
    return mw, app, logger


def call(mw, method='GET', headers=None, path='/sdb1/123/AUTH_test/c/o'):
    req = Request.blank(path, method=method, headers=headers or {})
    return req.get_response(mw)


@pytest.mark.parametrize('header, priority', [
    (None, 5), ('7', 7), ('0', 0), ('9', 9),
    ('10', 5), ('-3', 5), ('urgent', 5), ('', 5),
])
def test_priority_from_header(header, priority):
    mw, app, logger = make()
    headers = {} if header is None else {'X-Backend-Mass-Priority': header}
    assert call(mw, headers=headers).status_int == 200
    assert app.environs[0]['mass.priority'] == priority
    assert logger.only('priority.') == {'priority.%d' % priority: 1}


def test_default_priority_is_configurable():
    mw, app, _ = make({'default_priority': '2'})
    call(mw)
    assert app.environs[0]['mass.priority'] == 2


@pytest.mark.parametrize('method, headers', [
    ('REPLICATE', {}),
    ('SSYNC', {}),
    ('PUT', {'X-Backend-Replication': 'True'}),
    ('DELETE', {'X-Backend-Replication': 'true'}),
])
def test_replication_is_background(method, headers):
    mw, app, logger = make({'background_priority': '0'})
    headers = dict(headers, **{'X-Backend-Mass-Priority': '9'})
    call(mw, method=method, headers=headers)
    assert app.environs[0]['mass.priority'] == 0
    assert logger.only('priority.') == {'priority.background': 1}


@pytest.mark.parametrize('headers', [
    {}, {'X-Backend-Mass-Tenant': 'AUTH_test'},
    {'X-Backend-Mass-Tenant': 'AUTH_%C3%A9%0Ax'}])
def test_the_tenant_is_the_paths_not_a_tag(headers):
    # the tenant is the path's account; nothing on the object server
    # reads it from the environ, and an older proxy's tag is not recorded
    mw, app, _ = make()
    call(mw, headers=headers)
    assert 'mass.tenant' not in app.environs[0]


@pytest.mark.parametrize('option, value', [
    ('default_priority', 'x'), ('background_priority', '10'),
    ('slots_per_device', '-1'), ('slots_per_device', 'many'),
    ('deadline', '-1'), ('deadline', 'nan'), ('retry_after', '0.5'),
    ('priority_slack', 'slow'), ('urgent_share', '1.5'),
    ('urgent_idle_seconds', '-2'), ('batch_slots', '-1'),
    ('adaptive_slots', 'ture'), ('redis_url', 'http://127.0.0.1:6379'),
    ('bump_wait_ms', '0'), ('generation_ttl', 'day'),
    ('stats_interval', '0'), ('stats_interval', 'often'),
])
def test_bad_options_stop_startup(option, value):
    with pytest.raises(ConfigError) as err:
        object_mw.filter_factory({}, **{option: value})(RecordingApp())
    assert option in str(err.value)
    assert '[filter:mass_queue]' in str(err.value)


@pytest.mark.parametrize('conf, named', [
    ({'adaptive_interval': '0'}, 'adaptive_interval'),
    ({'adaptive_low': '0.9', 'adaptive_high': '0.5'}, 'adaptive_low'),
    ({'adaptive_high': '2'}, 'adaptive_high'),
    ({'slots_per_device': '4', 'adaptive_min_slots': '5'},
     'adaptive_min_slots'),
    ({'slots_per_device': '4', 'adaptive_max_slots': '3'},
     'adaptive_max_slots'),
    ({'batch_slots': '4', 'adaptive_max_batch_slots': '2'},
     'adaptive_max_batch_slots'),
    # a device without general slots would refuse everything
    ({'adaptive_min_slots': '0'}, 'adaptive_min_slots'),
])
def test_bad_adaptive_options_stop_startup(conf, named):
    conf = dict(conf, adaptive_slots='yes')
    with pytest.raises(ConfigError) as err:
        object_mw.filter_factory({}, **conf)(RecordingApp())
    assert named in str(err.value)
    assert '[filter:mass_queue]' in str(err.value)


def test_adaptive_options_are_ignored_when_adaptive_is_off():
    mw, _, _ = make({'adaptive_min_slots': '100', 'adaptive_low': 'x'})
    conf = mw.conf
    assert conf.adaptive_slots is False
    assert conf.adaptive_interval is None
    # fixed slot counts: each pool's bounds are its count
    assert (conf.adaptive_min_slots, conf.adaptive_max_slots,
            conf.adaptive_min_batch_slots, conf.adaptive_max_batch_slots) \
        == (8, 8, 0, 0)


def test_a_queue_that_is_off_does_not_adapt():
    conf = QueueConf({'slots_per_device': '0', 'adaptive_slots': 'true',
                      'adaptive_min_slots': '5'})
    assert conf.adaptive_slots is False


def test_defaults():
    conf = make()[0].conf
    assert (conf.default_priority, conf.background_priority,
            conf.slots_per_device, conf.deadline, conf.retry_after,
            conf.max_refusals_per_minute, conf.priority_slack,
            conf.batch_slots, conf.urgent_tenants, conf.urgent_share,
            conf.urgent_idle_seconds, conf.adaptive_slots) == \
        (5, 1, 8, 3.0, 1, 5, 0.25, 0, frozenset(), 0.5, 30.0, False)
    # the object server's own options, with its defaults
    assert (QueueConf().devices, QueueConf().mount_check) == \
        ('/srv/node', True)


def test_adaptive_defaults():
    conf = make({'adaptive_slots': 'true', 'slots_per_device': '4',
                 'batch_slots': '2'})[0].conf
    assert (conf.adaptive_interval, conf.adaptive_low,
            conf.adaptive_high) == (10.0, 0.3, 0.9)
    assert (conf.adaptive_min_slots, conf.adaptive_max_slots,
            conf.adaptive_min_batch_slots, conf.adaptive_max_batch_slots) \
        == (1, 16, 1, 8)


def test_urgent_tenants_are_a_comma_separated_list():
    conf = QueueConf({'urgent_tenants': ' AUTH_a,,AUTH_b , AUTH_a'})
    assert conf.urgent_tenants == frozenset(['AUTH_a', 'AUTH_b'])


def test_registers_in_info():
    make({'slots_per_device': '3', 'batch_slots': '2'})
    info = registry.get_swift_info()['mass_queue']
    assert info == {'mode': 'active', 'slots_per_device': 3,
                    'batch_slots': 2, 'adaptive_slots': False,
                    'admin_path': '/mass_queue'}


@pytest.mark.parametrize('value, cls', [
    ('read', 'read'), ('write', 'write'), ('mixed', 'mixed'),
    ('bogus', None), ('', None), (None, None)])
def test_class_tag(value, cls):
    mw, app, logger = make()
    headers = {} if value is None else {'X-Backend-Mass-Class': value}
    call(mw, headers=headers)
    assert app.environs[0].get('mass.class') == cls
    if cls:
        assert logger.counts['class.' + cls] == 1
    else:
        assert not [m for m in logger.counts if m.startswith('class.')]


# ---------------------------------------------------------------- queue

PATH = '/sdb1/123/AUTH_test/c/o'


class BodyApp(object):
    """The object server: answers a body of chunks and counts the bodies
    closed."""

    def __init__(self, chunks=(b'one', b'two', b'three'), fail=None):
        self.chunks = chunks
        self.fail = fail          # 'call', 'body' or 'lazy'
        self.calls = 0
        self.closed = 0

    def __call__(self, env, start_response):
        self.calls += 1
        if self.fail == 'call':
            raise ValueError('object server failed')
        if self.fail != 'lazy':
            start_response('200 OK', [])
        return Body(self, start_response)


class Body(object):
    def __init__(self, app, start_response):
        self.app = app
        self.start_response = start_response
        self.chunks = list(app.chunks)

    def __iter__(self):
        return self

    def __next__(self):
        if self.app.fail == 'lazy':
            self.start_response('200 OK', [])
        if self.app.fail == 'body':
            raise IOError('disk gone')
        if not self.chunks:
            raise StopIteration
        return self.chunks.pop(0)

    def close(self):
        self.app.closed += 1


def start(mw, method='GET', path=PATH, headers=None):
    """Call the filter as the WSGI server would, without reading the
    body: (what start_response got, the body)."""
    env = Request.blank(path, method=method, headers=headers or {}).environ
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen['status'] = status
        seen['headers'] = dict(headers)
    body = mw(env, start_response)
    return seen, body


def queue_stats(mw, device='sdb1'):
    return mw.queues[device].stats()


def in_use(mw, device='sdb1'):
    return queue_stats(mw, device)['slots_in_use']


def queued(conf=None, app=None, clock=None):
    return make(dict({'slots_per_device': '1'}, **(conf or {})),
                app=app or BodyApp(), clock=clock)


def test_slot_is_held_until_the_body_is_closed():
    mw, app, _ = queued()
    _, body = start(mw)
    assert in_use(mw) == 1
    body.close()
    assert in_use(mw) == 0
    assert app.closed == 1


def test_slot_is_released_when_the_body_is_fully_iterated():
    mw, _, _ = queued()
    _, body = start(mw)
    assert list(body) == [b'one', b'two', b'three']
    assert in_use(mw) == 0


def test_slot_is_released_when_the_client_disconnects_mid_body():
    # eventlet.wsgi closes the body when writing to the client fails
    mw, app, _ = queued()
    _, body = start(mw)
    assert next(body) == b'one'
    assert in_use(mw) == 1
    body.close()
    assert (in_use(mw), app.closed) == (0, 1)


@pytest.mark.parametrize('fail, error', [
    ('call', ValueError), ('body', IOError)])
def test_slot_is_released_when_the_object_server_fails(fail, error):
    mw, _, _ = queued(app=BodyApp(fail=fail))
    with pytest.raises(error):
        _, body = start(mw)
        list(body)
    assert in_use(mw) == 0


def test_slot_is_released_when_start_response_was_never_called():
    mw, _, _ = queued(app=BodyApp(fail='lazy'))
    seen, body = start(mw)
    assert seen == {}
    body.close()
    assert in_use(mw) == 0


def test_a_second_close_does_not_release_someone_elses_slot():
    mw, _, _ = queued()
    _, first = start(mw)
    first.close()
    _, second = start(mw)
    first.close()
    assert in_use(mw) == 1
    second.close()
    assert in_use(mw) == 0


def test_slot_is_released_over_a_real_connection_the_client_drops():
    chunk = b'x' * 65536

    def endless(env, start_response):
        start_response('200 OK', [('Content-Type', 'text/plain')])
        while True:
            yield chunk
    mw, _, _ = queued(app=endless)
    listener = eventlet.listen(('127.0.0.1', 0))
    server = eventlet.spawn(eventlet.wsgi.server, listener, mw,
                            log=open('/dev/null', 'w'), log_output=False)
    try:
        client = eventlet.connect(listener.getsockname())
        client.sendall(b'GET ' + PATH.encode() +
                       b' HTTP/1.1\r\nHost: x\r\n\r\n')
        assert client.recv(1024).startswith(b'HTTP/1.1 200')
        assert in_use(mw) == 1
        client.close()
        for _ in range(10000):
            if in_use(mw) == 0:
                break
            eventlet.sleep(0)
        assert in_use(mw) == 0
    finally:
        server.kill()
        listener.close()


def test_a_waiter_is_admitted_when_the_slot_is_given_back():
    clock = Clock()
    mw, app, logger = queued(clock=clock)
    _, first = start(mw)
    waiter = eventlet.spawn(start, mw, headers={
        'X-Backend-Mass-Priority': '7'})
    eventlet.sleep(0)
    assert queue_stats(mw)['waiting'] == 1
    assert app.calls == 1
    clock.now += 0.5
    first.close()
    seen, body = waiter.wait()
    assert seen['status'] == '200 OK'
    assert app.calls == 2
    # only the request that waited reports its wait and the depth
    assert logger.timings['queue.wait.7'] == [pytest.approx(500.0)]
    assert logger.timings['queue.depth'] == [1]
    assert 'queue.wait.5' not in logger.timings
    body.close()
    assert in_use(mw) == 0


def test_a_request_waiting_past_its_deadline_gets_503_retry_after():
    clock = Clock()
    mw, app, logger = queued({'deadline': '2', 'retry_after': '7'},
                             clock=clock)
    _, first = start(mw)
    waiter = eventlet.spawn(start, mw)
    eventlet.sleep(0)
    clock.now += 2.0
    mw.queues['sdb1'].poll()
    seen, body = waiter.wait()
    assert seen['status'].startswith('503')
    assert seen['headers']['Retry-After'] == '7'
    assert b'sdb1' in b''.join(body)
    assert app.calls == 1
    assert logger.counts['queue.refused'] == 1
    assert in_use(mw) == 1
    first.close()
    assert in_use(mw) == 0


def test_past_the_refusal_budget_a_late_request_is_served():
    clock = Clock()
    mw, app, logger = queued({'deadline': '2',
                              'max_refusals_per_minute': '1'}, clock=clock)
    _, first = start(mw)
    waiters = [eventlet.spawn(start, mw) for _ in range(2)]
    eventlet.sleep(0)
    clock.now += 2.0
    mw.queues['sdb1'].poll()
    answers = [w.wait() for w in waiters]
    assert sorted(seen['status'][:3] for seen, _ in answers) == \
        ['200', '503']
    assert logger.counts['queue.refused'] == 1
    assert logger.counts['queue.admitted_past_deadline'] == 1
    state = json.loads(call(mw, path='/mass_queue').body)
    assert state['max_refusals_per_minute'] == 1
    assert state['devices']['sdb1']['admitted_past_deadline'] == 1
    first.close()
    [late] = [body for seen, body in answers if seen['status'][:3] == '200']
    late.close()
    assert in_use(mw) == 0


def test_a_waiter_notices_its_deadline_without_any_other_request():
    # deadline 0: never wait; the waiter's own timeout refuses it
    mw, app, logger = queued({'deadline': '0'})
    _, first = start(mw)
    seen, _ = eventlet.spawn(start, mw).wait()
    assert seen['status'].startswith('503')
    assert logger.counts['queue.refused'] == 1
    assert queue_stats(mw)['waiting'] == 0
    first.close()


def test_a_waiter_killed_while_waiting_leaves_nothing_behind():
    mw, app, _ = queued()
    _, first = start(mw)
    waiter = eventlet.spawn(start, mw)
    eventlet.sleep(0)
    waiter.kill()
    assert queue_stats(mw)['waiting'] == 0
    first.close()
    assert in_use(mw) == 0
    assert app.calls == 1
    assert queue_stats(mw)['refused'] == 0


def test_devices_have_their_own_slots():
    mw, _, _ = queued()
    _, first = start(mw)
    _, other = start(mw, path='/sdb2/123/AUTH_test/c/o')
    assert (in_use(mw, 'sdb1'), in_use(mw, 'sdb2')) == (1, 1)
    first.close()
    other.close()


@pytest.mark.parametrize('conf, method, path', [
    ({}, 'GET', '/healthcheck'),
    ({}, 'GET', '/recon/diskusage'),
    # paths the object server answers 400 (or 412) without a device
    ({}, 'GET', '/sdb1'),
    ({}, 'GET', '/sdb1/123'),          # a partition, not an object
    ({}, 'PUT', '/sdb1/123/a/c'),
    ({}, 'GET', '/sdb1//a/c/o'),
    ({}, 'GET', '/sdb1/../a/c/o'),
    ({}, 'GET', '/../123/a/c/o'),
    ({}, 'GET', '/sdb1/123/a/c/%FF'),  # not UTF-8
    ({}, 'REPLICATE', '/sdb1'),
    # devices the object server has not (507)
    ({}, 'GET', '/sdb9/123/a/c/o'),
    ({}, 'GET', '/sdb3/123/a/c/o'),    # a file, not a directory
    ({}, 'GET', '/sd%20b1/123/a/c/o'),  # not a drive name
    ({}, 'SSYNC', '/sdb1/123'),
    ({'slots_per_device': '0'}, 'GET', PATH),
])
def test_ungoverned_requests_pass_straight(conf, method, path):
    mw, app, logger = make(conf)
    assert call(mw, method=method, path=path).status_int == 200
    assert len(app.environs) == 1
    assert mw.queues == {}
    assert not logger.only('queue.')


def mounted(*devices):
    """Swift's mount check, answering that only `devices` are mounted."""
    paths = set(os.path.join(DEVICES, device) for device in devices)
    return mock.patch('swift.common.utils.ismount', paths.__contains__)


def test_with_mount_check_only_mounted_devices_get_a_queue():
    mw, app, logger = queued({'mount_check': 'true', 'deadline': '0'})
    with mounted('sdb1'):
        _, body = start(mw)
        # sdb2 is a directory, but not mounted: the object server's 507
        seen, other = start(mw, path='/sdb2/123/AUTH_test/c/o')
    assert set(mw.queues) == {'sdb1'}
    assert (in_use(mw), app.calls) == (1, 2)
    body.close()
    other.close()


def test_mount_check_is_on_by_default():
    # as in the object server: DEVICES are directories, not mount points
    mw = object_mw.MassQueueMiddleware(
        BodyApp(), {'devices': DEVICES, 'slots_per_device': '1',
                    'recon_cache_path': RECON},
        logger=CountingLogger(), clock=Clock(), spawn=Spawned())
    start(mw)[1].close()
    assert mw.queues == {}
    with mounted('sdb1'):
        start(mw)[1].close()
    assert set(mw.queues) == {'sdb1'}


def test_a_device_unmounted_since_its_queue_was_made_is_not_queued():
    # deadline 0: a request that had to wait would be refused at once
    mw, app, _ = queued({'mount_check': 'true', 'deadline': '0'})
    with mounted('sdb1'):
        _, first = start(mw)
    # its one slot is taken, yet the request does not wait: the object
    # server answers it 507 at once
    seen, body = start(mw)
    assert seen['status'] == '200 OK'
    assert (in_use(mw), app.calls, queue_stats(mw)['waiting']) == (1, 2, 0)
    first.close()
    body.close()


def test_replicate_is_queued_as_background():
    mw, app, logger = queued()
    _, body = start(mw, method='REPLICATE', path='/sdb1/123')
    assert in_use(mw) == 1
    body.close()
    assert logger.counts['priority.background'] == 1
    # admitted at once: no statsd packet beyond the priority counter
    assert not logger.timings


def test_puts_of_batch_tenants_use_batch_slots():
    mw, app, _ = queued({'batch_slots': '2'})
    write = {'X-Backend-Mass-Class': 'write', 'X-Backend-Mass-Batch': 'true'}
    _, first = start(mw)
    # the general slot is taken; batch slots are free, but not for a GET
    # of that tenant nor for a PUT of a write tenant without the method
    reader = eventlet.spawn(start, mw, 'GET', headers=write)
    other_put = eventlet.spawn(start, mw, 'PUT', headers={
        'X-Backend-Mass-Class': 'write'})
    eventlet.sleep(0)
    assert queue_stats(mw)['waiting'] == 2
    puts = [start(mw, 'PUT', headers=write)[1] for _ in range(2)]
    stats = queue_stats(mw)
    assert (stats['slots_in_use'], stats['batch_slots_in_use']) == (1, 2)
    assert app.calls == 3
    for body in puts + [first]:
        body.close()
    for waiter in (reader, other_put):
        waiter.wait()[1].close()
    assert (in_use(mw), queue_stats(mw)['batch_slots_in_use']) == (0, 0)
    assert app.calls == 5


@pytest.mark.parametrize('headers, path', [
    ({}, '/sdb1/123/AUTH_u/c/o'),
    # the path carries a WSGI string (UTF-8 bytes as latin-1); the
    # configured tenants are native strings
    ({}, '/sdb1/123/AUTH_%C3%A9/c/o'),
    # an older proxy's tenant tag, during a rolling upgrade: the same
    # account as the path's, ignored
    ({'X-Backend-Mass-Tenant': 'AUTH_u'}, '/sdb1/123/AUTH_u/c/o'),
    ({'X-Backend-Mass-Tenant': 'AUTH_%C3%A9'}, '/sdb1/123/AUTH_%C3%A9/c/o'),
    # whatever a tag says, the path decides
    ({'X-Backend-Mass-Tenant': 'AUTH_other'}, '/sdb1/123/AUTH_u/c/o'),
])
def test_urgent_tenant_isolates_the_device(headers, path):
    mw, _, logger = queued({'urgent_tenants': 'AUTH_x, AUTH_u,AUTH_\xe9',
                            'slots_per_device': '4'})
    _, body = start(mw, path=path, headers=headers)
    assert queue_stats(mw)['mode'] == device_queue.ISOLATED
    assert queue_stats(mw)['reserved_slots'] == 2
    assert logger.counts['queue.mode.isolated'] == 1
    body.close()


def test_other_tenants_do_not_isolate():
    # AUTH_\xc3\xa9 is the native name of another account than the
    # path's AUTH_%C3%A9 (AUTH_\xe9): no match on the WSGI string
    mw, _, logger = queued({'urgent_tenants': 'AUTH_u, AUTH_\xc3\xa9'})
    start(mw, path='/sdb1/123/AUTH_other/c/o')[1].close()
    start(mw, path='/sdb1/123/AUTH_uu/c/o')[1].close()
    start(mw, path='/sdb1/123/AUTH_%C3%A9/c/o')[1].close()
    assert queue_stats(mw)['mode'] == device_queue.SHARED
    assert 'queue.mode.isolated' not in logger.counts


@pytest.mark.parametrize('tag', ['AUTH_u', 'AUTH_%C3%A9'])
def test_a_tenant_tag_naming_an_urgent_tenant_does_not_isolate(tag):
    # the path's account is the tenant, whatever X-Backend-Mass-Tenant
    # (an older proxy's tag, or a forged one) names
    mw, _, logger = queued({'urgent_tenants': 'AUTH_u, AUTH_\xe9',
                            'slots_per_device': '4'})
    start(mw, headers={'X-Backend-Mass-Tenant': tag})[1].close()
    assert queue_stats(mw)['mode'] == device_queue.SHARED
    assert queue_stats(mw)['reserved_slots'] == 0
    assert 'queue.mode.isolated' not in logger.counts


@pytest.mark.parametrize('urgent_tenants, headers', [
    ('', {}), ('AUTH_other', {}),
    # an older proxy's tenant tag names the path's account
    ('', {'X-Backend-Mass-Tenant': 'AUTH_%C3%A9'}),
    # and a tag naming another is not what is seen
    ('', {'X-Backend-Mass-Tenant': 'AUTH_other'}),
])
def test_the_proxys_urgent_mark_isolates_the_device(urgent_tenants, headers):
    mw, _, logger = queued({'urgent_tenants': urgent_tenants,
                            'slots_per_device': '4'})
    _, body = start(mw, path='/sdb1/123/AUTH_%C3%A9/c/o',
                    headers=dict(headers, **{'X-Backend-Mass-Urgent': 'true'}))
    assert queue_stats(mw)['mode'] == device_queue.ISOLATED
    assert queue_stats(mw)['reserved_slots'] == 2
    assert logger.counts['queue.mode.isolated'] == 1
    state = json.loads(call(mw, path='/mass_queue').body)
    assert state['urgent_seen'] == ['AUTH_\xe9']
    body.close()


@pytest.mark.parametrize('value', ['false', 'yes', '1', ''])
def test_only_the_proxys_exact_urgent_mark_counts(value):
    mw, _, _ = queued({'slots_per_device': '4'})
    start(mw, headers={'X-Backend-Mass-Urgent': value})[1].close()
    assert queue_stats(mw)['mode'] == device_queue.SHARED


def test_admin_endpoint_shows_every_queue():
    mw, _, _ = queued({'urgent_tenants': 'AUTH_u', 'batch_slots': '3'})
    _, body = start(mw)
    resp = call(mw, path='/mass_queue')
    assert resp.status_int == 200
    assert resp.content_type == 'application/json'
    state = json.loads(resp.body)
    assert state['slots_per_device'] == 1
    assert state['batch_slots'] == 3
    assert state['urgent_tenants'] == ['AUTH_u']
    assert state['devices']['sdb1']['slots_in_use'] == 1
    assert state['devices']['sdb1']['mode'] == device_queue.SHARED
    body.close()


def test_adaptive_queue_grows_under_waiting_load():
    clock = Clock()
    mw, _, logger = queued({'adaptive_slots': 'on', 'deadline': '9',
                            'adaptive_interval': '5'}, clock=clock)
    _, first = start(mw)
    waiter = eventlet.spawn(start, mw)
    eventlet.sleep(0)
    clock.now += 5
    mw.queues['sdb1'].poll()
    seen, body = waiter.wait()
    assert seen['status'] == '200 OK'
    assert queue_stats(mw)['slots'] == 2
    assert logger.counts['queue.slots.grow'] == 1
    first.close()
    body.close()


class ReadRecordingConf(dict):
    def __init__(self, *args, **kwargs):
        super(ReadRecordingConf, self).__init__(*args, **kwargs)
        self.read = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super(ReadRecordingConf, self).get(key, default)


def test_every_option_is_documented_in_the_sample():
    sample = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'etc',
                          'object-server.conf-sample')
    with open(sample) as handle:
        text = handle.read().split('[filter:mass_queue]', 1)[1]
    documented = set(re.findall(r'^# ([a-z_]+) =', text, re.M))
    conf = ReadRecordingConf(adaptive_slots='true', batch_slots='2')
    object_mw.MassQueueMiddleware(RecordingApp(), conf,
                                  logger=CountingLogger())
    assert 'adaptive_max_batch_slots' in conf.read
    # the object server's own options
    assert conf.read - documented == {'devices', 'mount_check', 'swift_dir',
                                      'bind_ip', 'ring_ip', 'bind_port',
                                      'servers_per_port', 'recon_cache_path'}
    assert 'stats_interval' in conf.read


# -- generations: every write bumps, whoever sent it -------------------------

class ObjectServer(object):
    """Answers writes with a fixed status, noting what the object's
    generation was while it wrote."""

    def __init__(self, generations, status=201):
        self.generations = generations
        self.status = status
        self.during = []

    def __call__(self, env, start_response):
        self.during.append(self.generations.read(OBJECT_KEY, 'AUTH_t')[0])
        start_response('%d Whatever' % self.status, [('Content-Length', '0')])
        return [b'']


OBJECT_PATH = '/sdb1/123/AUTH_t/c/o'
OBJECT_KEY = object_key('AUTH_t', 'c', 'o')


def bumping(status=201, **conf):
    devices = tempfile.mkdtemp()
    os.mkdir(os.path.join(devices, 'sdb1'))
    conf.update(devices=devices, mount_check='false', redis_url=REDIS_URL,
                recon_cache_path=RECON)
    # a proxy's generations, trusting the tenant's
    gens = trusting(GenerationReader(REDIS_URL, Logger()), ('AUTH_t',))
    server = ObjectServer(gens, status)
    mw = object_mw.MassQueueMiddleware(server, conf, logger=CountingLogger(),
                                       spawn=Spawned())
    mw.generations.start = lambda names=None: None  # no heartbeat thread
    return mw, server, gens


def write(mw, method='PUT', headers=None):
    headers = dict({'X-Timestamp': '1700000000.00000'}, **(headers or {}))
    return Request.blank(OBJECT_PATH, method=method,
                         headers=headers).get_response(mw)


@pytest.mark.parametrize('method', ['PUT', 'POST', 'DELETE'])
@pytest.mark.parametrize('slots', ['8', '0'])
def test_a_write_bumps_before_its_answer_leaves(method, slots):
    mw, server, gens = bumping(slots_per_device=slots)
    before = gens.read(OBJECT_KEY, 'AUTH_t')[0]
    answered = {}

    def start_response(status, headers, exc_info=None):
        answered['generation'] = gens.read(OBJECT_KEY, 'AUTH_t')
    env = Request.blank(OBJECT_PATH, method=method, headers={
        'X-Timestamp': '1700000000.00000'}).environ
    b''.join(mw(env, start_response))
    assert server.during == [before]  # written under the old one
    validity, written = answered['generation']
    assert validity != before
    assert written.timestamp == Timestamp('1700000000.00000')


@pytest.mark.parametrize('method, status, bumped, recorded', [
    ('PUT', 412, False, False),  # refused: nothing written
    ('POST', 404, False, False),
    ('DELETE', 404, True, True),  # a tombstone was written
    ('PUT', 503, True, False),  # may be written in part
])
def test_what_a_write_bumps_depends_on_its_answer(method, status, bumped,
                                                  recorded):
    mw, server, gens = bumping(status)
    before = gens.read(OBJECT_KEY, 'AUTH_t')[0]
    assert write(mw, method).status_int == status
    after, written = gens.read(OBJECT_KEY, 'AUTH_t')
    assert (after != before) == bumped
    assert (written is not None) == recorded


def test_reads_and_replication_do_not_bump():
    mw, server, gens = bumping(200)
    before = gens.read(OBJECT_KEY, 'AUTH_t')[0]
    write(mw, 'GET')
    write(mw, 'HEAD')
    write(mw, 'PUT', headers={'X-Backend-Replication': 'true'})
    assert gens.read(OBJECT_KEY, 'AUTH_t')[0] == before


def test_the_newest_write_stays_recorded():
    mw, server, gens = bumping()
    write(mw, headers={'X-Timestamp': '1700000002.00000'})
    # an older write's answer, late: it cannot lower what was recorded
    write(mw, headers={'X-Timestamp': '1700000001.00000'})
    assert gens.read(OBJECT_KEY, 'AUTH_t')[1].timestamp == \
        Timestamp('1700000002.00000')


def test_without_redis_a_write_waits_at_most_bump_wait():
    devices = tempfile.mkdtemp()
    os.mkdir(os.path.join(devices, 'sdb1'))
    server = RecordingApp()
    mw = object_mw.MassQueueMiddleware(server, {
        'devices': devices, 'mount_check': 'false',
        'redis_url': 'redis://127.0.0.1:1/0', 'bump_wait_ms': '30',
        'recon_cache_path': RECON},
        logger=CountingLogger(), spawn=Spawned())
    mw.generations.start = lambda names=None: None
    repairs = []
    mw.generations.spawn = repairs.append
    started = time.monotonic()
    assert write(mw).status_int == 200
    assert time.monotonic() - started < 0.5
    assert mw.generations.dirty and len(repairs) == 1
    # dirty: the next writes do not wait for Redis at all
    assert write(mw).status_int == 200
    assert mw.logger.counts['generations.bump_skipped'] == 1


def test_without_redis_url_nothing_is_bumped():
    mw = object_mw.MassQueueMiddleware(RecordingApp(), {},
                                       logger=CountingLogger())
    assert mw.generations is None
    assert any('no redis_url' in line for _, line in mw.logger.lines)


def test_a_write_of_a_tenant_without_cache_or_merge_costs_no_redis_call():
    mw, server, gens = bumping()
    mw.generations.names = lambda: {'127.0.0.1:6210/sdb1'}
    BumpedSetPublisher(gens).publish({'AUTH_other'})
    assert mw.generations.heartbeat()
    calls = []
    for client in (mw.generations.client, mw.generations.bump_client):
        real = client.execute_command
        client.execute_command = \
            lambda *a, real=real, **kw: calls.append(a) or real(*a, **kw)
    for method in ('PUT', 'POST', 'DELETE'):
        assert write(mw, method).status_int // 100 == 2
    assert calls == []
    # the tenant gets cache: its writes are bumped again
    trusting(gens, ('AUTH_other', 'AUTH_t'))
    assert mw.generations.heartbeat()
    assert gens.uncovered(lambda: {'127.0.0.1:6210/sdb1'}, period=0) == \
        frozenset()
    del calls[:]
    before = gens.read(OBJECT_KEY, 'AUTH_t')[0]
    write(mw)
    assert calls and gens.read(OBJECT_KEY, 'AUTH_t')[0] != before


@pytest.mark.parametrize('method', ['PUT', 'POST', 'DELETE'])
def test_a_moves_write_that_keeps_the_version_keeps_the_generation(method):
    mw, server, gens = bumping()
    before = gens.read(OBJECT_KEY, 'AUTH_t')[0]
    assert write(mw, method, {tags.KEEPS_VERSION_HEADER: 'true'}
                 ).status_int // 100 == 2
    assert gens.read(OBJECT_KEY, 'AUTH_t')[0] == before
    assert mw.logger.counts['generations.kept_version'] == 1
    # any other value is no tag: the write is bumped
    assert write(mw, method, {tags.KEEPS_VERSION_HEADER: 'yes'}
                 ).status_int // 100 == 2
    assert gens.read(OBJECT_KEY, 'AUTH_t')[0] != before


@pytest.mark.parametrize('name', ['\u00f8x', '\u00f8x\u55a0y'])
def test_a_name_beyond_ascii_bumps_the_key_the_proxies_read(name):
    # split_and_validate_path gives native strings: a name beyond ASCII
    # was bumped under another key than the proxies read (latin-1) or not
    # at all (beyond latin-1), and its cached body stayed after a write
    mw, server, gens = bumping()
    wsgi_name = name.encode('utf-8').decode('latin-1')
    key = object_key('AUTH_t', 'c', wsgi_name)
    before = gens.read(key, 'AUTH_t')[0]
    resp = Request.blank('/sdb1/123/AUTH_t/c/' + quote(name), method='PUT',
                         headers={'X-Timestamp': '1700000000.00000'}
                         ).get_response(mw)
    assert resp.status_int == 201
    assert gens.read(key, 'AUTH_t')[0] != before


# -- the object server's own devices: what it serves, what is registered ----

def test_a_write_is_bumped_whatever_the_filters_device_options_say():
    """mass_queue bumped only the writes of devices its own ``devices``
    and ``mount_check`` found, which Swift lets an operator set in
    ``[app:object-server]`` alone: the filter then found no device and let
    every write pass unbumped, while its ring devices counted as
    covered."""
    mw, server, gens = bumping()
    # as if the filter's devices named another directory than the object
    # server's
    mw.conf.devices = tempfile.mkdtemp()
    before = gens.read(OBJECT_KEY, 'AUTH_t')[0]
    assert write(mw).status_int == 201
    assert gens.read(OBJECT_KEY, 'AUTH_t')[0] != before


def object_server_conf(tmp_path, swift_dir, devices, app_options=''):
    path = tmp_path / 'object-server.conf'
    path.write_text('\n'.join([
        '[DEFAULT]', 'swift_dir = %s' % swift_dir, 'bind_ip = 127.0.0.1',
        '', '[pipeline:main]', 'pipeline = mass_queue object-server', '',
        '[app:object-server]', 'use = egg:swift#object',
        'devices = %s' % devices, app_options, '',
        '[filter:mass_queue]', 'use = egg:swift_mass#mass_queue', '']))
    return str(path)


def test_the_filter_learns_the_object_servers_own_options(
        tmp_path, monkeypatch):
    """Options Swift's object server reads from ``[app:object-server]``
    (over ``[DEFAULT]``) are the filter's too, loaded by Swift's loadapp
    as the object server is: its devices, its mount check, its ports."""
    swift_dir = rings_of_two_servers(tmp_path, monkeypatch)
    devices = tmp_path / 'node'
    (devices / 'sdb1').mkdir(parents=True)
    (devices / 'sdc1').mkdir()
    mw = loadapp(object_server_conf(
        tmp_path, swift_dir, devices,
        'mount_check = false\nservers_per_port = 1\n'
        'recon_cache_path = %s' % tmp_path))
    assert isinstance(mw, object_mw.MassQueueMiddleware)
    assert (mw.conf.devices, mw.conf.mount_check, mw.conf.ring_port) == (
        str(devices), False, None)
    assert mw.reports.recon_file == str(tmp_path / 'mass_queue.recon')
    assert mw._local_devices() == {'127.0.0.1:6210/sdb1',
                                   '127.0.0.1:6216/sdc1'}


def test_only_a_device_the_object_server_would_serve_is_registered(
        tmp_path, monkeypatch):
    swift_dir = rings_of_two_servers(tmp_path, monkeypatch)
    devices = tmp_path / 'node'
    # sdc1 is in the ring, but the object server answers 507 for it
    (devices / 'sdb1').mkdir(parents=True)
    mw = loadapp(object_server_conf(
        tmp_path, swift_dir, devices,
        'mount_check = false\nservers_per_port = 1'))
    assert mw._local_devices() == {'127.0.0.1:6210/sdb1'}
    # mount_check on: a directory that is not a mount point is not served
    mw = loadapp(object_server_conf(tmp_path, swift_dir, devices,
                                    'servers_per_port = 1'))
    assert mw.conf.mount_check is True
    assert mw._local_devices() == set()


# -- observe mode: every request admitted at once ----------------------------

def test_observe_mode_admits_every_request_at_once():
    mw, app, logger = queued({'mode': 'observe', 'deadline': '0',
                              'urgent_tenants': 'AUTH_u'})
    # one slot per device: in active mode the second would wait, and be
    # refused at once (deadline 0), whatever its priority
    started = [start(mw, headers={'X-Backend-Mass-Priority': p})
               for p in ('1', '9', '5')]
    started.append(start(mw, headers={'X-Backend-Mass-Urgent': 'true'}))
    assert [seen['status'] for seen, _ in started] == ['200 OK'] * 4
    assert mw.queues == {}
    # its figures: priorities and classes as in active mode, and what the
    # queue would have seen: three of them would have waited
    assert logger.only('priority.') == {
        'priority.1': 1, 'priority.9': 1, 'priority.5': 2}
    assert logger.only('queue.') == {'queue.would_wait': 3}
    state = json.loads(call(mw, path='/mass_queue').body)
    assert (state['mode'], state['devices']) == ('observe', {})
    assert state['observed'] == {'sdb1': {
        'in_flight': 4, 'peak_in_flight': 4, 'arrived': 4,
        'would_wait': 3}}
    for _, body in started:
        body.close()
    started[0][1].close()  # a second close gives nothing back twice
    assert app.closed == 4
    assert mw.observed['sdb1'].stats() == {
        'in_flight': 0, 'peak_in_flight': 4, 'arrived': 4,
        'would_wait': 3}
    # the control: active mode refuses the second at once
    active, _, _ = queued({'deadline': '0'})
    _, held = start(active)
    assert start(active)[0]['status'].startswith('503')
    held.close()


def test_observe_mode_gives_back_what_a_failing_server_took():
    mw, _, _ = queued({'mode': 'observe'}, app=BodyApp(fail='call'))
    with pytest.raises(ValueError):
        start(mw)
    assert mw.observed['sdb1'].in_flight == 0


def test_observe_mode_still_bumps_every_write():
    mw, server, gens = bumping(mode='observe', slots_per_device='1')
    before = gens.read(OBJECT_KEY, 'AUTH_t')[0]
    assert write(mw).status_int == 201
    after, written = gens.read(OBJECT_KEY, 'AUTH_t')
    assert after != before
    assert written.timestamp == Timestamp('1700000000.00000')


def test_the_queues_mode_is_in_info():
    make({'mode': 'observe'})
    assert registry.get_swift_info()['mass_queue']['mode'] == 'observe'


# -- every worker's queues, through the recon cache -------------------------

def recon_of(tmp_path, conf=None):
    """A filter whose recon_cache_path is tmp_path (the object server's
    option, as the object server app was given it)."""
    return make(dict({'slots_per_device': '2',
                      'recon_cache_path': str(tmp_path)}, **(conf or {})))


def recon_file(tmp_path):
    return str(tmp_path / 'mass_queue.recon')


def test_stats_interval_and_recon_cache_path():
    conf = QueueConf({})
    assert conf.stats_interval == 5.0
    assert conf.recon_cache_path == '/var/cache/swift'
    conf = QueueConf({'stats_interval': '0.5', 'recon_cache_path': '/x'},
                     server_conf={'recon_cache_path': '/var/cache/swift2'})
    assert conf.stats_interval == 0.5
    # the object server's, not the filter's
    assert conf.recon_cache_path == '/var/cache/swift2'
    with pytest.raises(ConfigError) as err:
        QueueConf({'stats_interval': '-1'})
    assert str(err.value) == (
        "[filter:mass_queue] stats_interval = '-1' is not valid; allowed: "
        "a number from 0.1 to 3600")


def test_a_worker_reports_its_queues_every_stats_interval(tmp_path):
    mw, _, _ = recon_of(tmp_path, {'stats_interval': '7'})
    assert mw.reports.spawn == []  # not in a process that serves nothing
    call(mw)
    call(mw)
    [(report_forever, args)] = mw.reports.spawn  # once per process
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        if len(slept) == 3:
            raise eventlet.greenlet.GreenletExit()
    mw.reports.sleep = sleep
    with pytest.raises(eventlet.greenlet.GreenletExit):
        report_forever(*args)
    assert slept == [7.0, 7.0, 7.0]
    report = load_recon_cache(recon_file(tmp_path))[str(os.getpid())]
    assert report['devices']['sdb1']['admitted'] == 2
    assert report['urgent_seen'] == []
    assert report['port'] == '80'
    assert abs(report['time'] - time.time()) < 60


def test_a_forked_worker_stops_the_reports_it_inherited(tmp_path):
    mw, _, _ = recon_of(tmp_path)
    call(mw)
    [(report_forever, args)] = mw.reports.spawn
    mw.reports.sleep = lambda seconds: None
    with mock.patch('os.getpid', return_value=os.getpid() + 1):
        report_forever(*args)  # returns at once
    assert not os.path.exists(recon_file(tmp_path))


def test_admin_answers_every_worker_of_its_server(tmp_path):
    mw, _, _ = recon_of(tmp_path, {'stats_interval': '5'})
    call(mw, headers={'X-Backend-Mass-Urgent': 'true'},
         path='/sdb1/1/AUTH_mine/c/o')
    now = time.time()
    other = {'time': now - 9, 'port': '80', 'urgent_seen': ['AUTH_u'],
             'devices': {'sdb2': {'admitted': 3}}}
    # processes that live, unlike the dead one, and are not this one
    sleeper = subprocess.Popen([sys.executable, '-c',
                                'import time; time.sleep(60)'])
    alive, also_alive, elsewhere = \
        str(os.getppid()), '1', str(sleeper.pid)
    gone = str(dead_pid())
    with open(recon_file(tmp_path), 'w') as handle:
        json.dump({alive: other,
                   also_alive: dict(other, time=now - 11),  # > 2 x 5 s
                   gone: other,
                   elsewhere: dict(other, port='6299')}, handle)
    try:
        state = json.loads(call(mw, path='/mass_queue').body)
    finally:
        sleeper.kill()
        sleeper.wait()
    me = str(os.getpid())
    assert sorted(state['workers']) == sorted([me, alive])
    assert state['workers'][alive] == {
        'time': now - 9, 'urgent_seen': ['AUTH_u'],
        'devices': {'sdb2': {'admitted': 3}}}
    mine = state['workers'][me]
    assert mine['devices']['sdb1']['admitted'] == 1
    assert mine['urgent_seen'] == ['AUTH_mine']
    assert set(mine) == {'time', 'devices', 'urgent_seen'}
    assert state['urgent_seen_all'] == ['AUTH_mine', 'AUTH_u']
    assert state['stats_interval'] == 5.0
    # today's keys stay this worker's, for older clients
    assert state['urgent_seen'] == ['AUTH_mine']
    assert list(state['devices']) == ['sdb1']
    # written first, and what is gone removed; another port's kept
    reports = load_recon_cache(recon_file(tmp_path))
    assert sorted(reports) == sorted([me, alive, also_alive, elsewhere])
    assert reports[me]['devices']['sdb1']['admitted'] == 1


def test_admin_answers_its_own_state_when_the_recon_cache_fails(tmp_path):
    mw, _, logger = recon_of(tmp_path / 'missing')
    call(mw)
    state = json.loads(call(mw, path='/mass_queue').body)
    assert list(state['workers']) == [str(os.getpid())]
    assert state['workers'][str(os.getpid())]['devices']['sdb1'][
        'admitted'] == 1
    assert [line for level, line in logger.lines
            if level == 'exception'][0].startswith(
                'Exception dumping recon cache')
