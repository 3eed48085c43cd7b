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
"""Mass's statsd metrics as they leave the process: the legacy dotted
names always, and with ``statsd_label_mode`` on a Swift that offers
labeled metrics (2.36 and later), the same metrics once more with their
tenant, class, method, device or priority as labels (swift_mass.metrics).

Every line is caught where Swift's statsd clients open their UDP socket,
so what is checked is what statsd (or statsd_exporter) would receive."""
import eventlet
import pytest

from swift.common import statsd_client
from swift.common.swob import Request

from swift_mass.control import monitor
from swift_mass.control.entry import PolicyEntry
from swift_mass.control.stores.local import LocalStore
from swift_mass.obj import middleware as object_mw
from swift_mass.proxy import middleware as proxy
from tests.unit.helpers import Clock, RecordingApp
from tests.unit.obj.test_middleware import DEVICES, RECON, BodyApp, start

LABELED_SWIFT = hasattr(statsd_client, 'LabeledStatsdClient')
needs_labels = pytest.mark.skipif(
    not LABELED_SWIFT, reason='Swift < 2.36 offers no labeled metrics')

STATSD = {'log_statsd_host': '127.0.0.1', 'log_statsd_port': '8125'}
LABELED = dict(STATSD, statsd_label_mode='dogstatsd')


def labeled(lines):
    """{name: [(value|type, {label: value})]} of the dogstatsd lines."""
    found = {}
    for line in lines:
        if not line.startswith('swift_mass'):
            continue
        head, _, tags = line.partition('|#')
        name, _, value = head.partition(':')
        labels = dict(tag.split(':', 1) for tag in tags.split(',') if tag)
        found.setdefault(name, []).append((value, labels))
    return found


def legacy(lines):
    return [line for line in lines if not line.startswith('swift_mass')]


# -- the proxy filter --------------------------------------------------


def make_proxy(conf):
    app = RecordingApp()
    # no control loop thread: it would send its metrics in later tests
    conf = dict({'urgent_recheck_seconds': '0', 'control_loop': 'false'},
                **conf)
    return proxy.filter_factory({}, **conf)(app)


@needs_labels
def test_proxy_sends_legacy_and_labeled(sent):
    mass = make_proxy(LABELED)
    Request.blank('/v1/AUTH_test/c/o', headers={
        'X-Backend-Mass-Priority': '9'}).get_response(mass)
    assert 'mass.forged_tags:1|c' in legacy(sent)
    assert labeled(sent)['swift_mass_forged_tags'] == [('1|c', {})]


def test_proxy_without_label_mode_sends_only_legacy(sent):
    mass = make_proxy(STATSD)
    Request.blank('/v1/AUTH_test/c/o', headers={
        'X-Backend-Mass-Priority': '9'}).get_response(mass)
    assert sent == ['mass.forged_tags:1|c']


def test_on_swift_before_2_36_only_legacy(sent, monkeypatch):
    # as on Swift 2.33-2.35, where get_labeled_statsd_client is missing
    monkeypatch.setattr('swift_mass.metrics.get_labeled_statsd_client',
                        None)
    mass = make_proxy(LABELED)
    Request.blank('/v1/AUTH_test/c/o', headers={
        'X-Backend-Mass-Priority': '9'}).get_response(mass)
    assert sent == ['mass.forged_tags:1|c']


@needs_labels
def test_an_unknown_label_mode_stops_the_proxy(sent):
    with pytest.raises(ValueError) as caught:
        make_proxy(dict(STATSD, statsd_label_mode='prometheus'))
    assert 'statsd_label_mode' in str(caught.value)


@needs_labels
def test_legacy_off_sends_only_labeled(sent):
    # Swift's own switch: a proxy that sends labels only
    mass = make_proxy(dict(LABELED, statsd_emit_legacy='false'))
    Request.blank('/v1/AUTH_test/c/o', headers={
        'X-Backend-Mass-Priority': '9'}).get_response(mass)
    assert sent == ['swift_mass_forged_tags:1|c']


@needs_labels
def test_tenant_and_class_counters_labeled(sent):
    mass = make_proxy(LABELED)
    mass.agent.table = {'AUTH_a': PolicyEntry('read', substore='',
                                              method='cache')}
    counts = monitor.request_counts('GET', 200, 0, 10, 0.01)
    more = monitor.request_counts('GET', 500, 0, 0, 0.01)
    put = monitor.request_counts('PUT', 201, 5, 0, 0.01)
    pending = {('AUTH_a', 0): counts, ('AUTH_a', 5): more,
               ('AUTH_b.x', 0): put}
    mass.agent.emit_metrics(pending)
    old = legacy(sent)
    # today's names, as they were
    assert 'mass.tenant.AUTH_a.ops.GET:2|c' in old
    assert 'mass.tenant.AUTH_b_x.ops.PUT:1|c' in old
    assert 'mass.class.read.ops.GET:2|c' in old
    assert 'mass.class.unknown.bytes_in:5|c' in old
    found = labeled(sent)
    assert ('2|c', {'tenant': 'AUTH_a', 'class': 'read',
                    'method': 'GET'}) in found['swift_mass_tenant_requests']
    assert ('1|c', {'tenant': 'AUTH_a', 'class': 'read',
                    'method': 'GET'}) in found['swift_mass_tenant_errors']
    # a tenant's name as it is, not as a path component
    assert ('1|c', {'tenant': 'AUTH_b.x', 'class': 'unknown',
                    'method': 'PUT'}) in found['swift_mass_tenant_requests']
    assert ('10|c', {'tenant': 'AUTH_a', 'class': 'read'}) in \
        found['swift_mass_tenant_bytes_out']
    assert ('2|c', {'class': 'read', 'method': 'GET'}) in \
        found['swift_mass_class_requests']
    assert ('5|c', {'class': 'unknown'}) in found['swift_mass_class_bytes_in']
    # one labeled packet for each legacy one, no more
    assert len(sent) == 2 * len(old)


@needs_labels
def test_decisions_labeled_by_class(sent):
    mass = make_proxy(LABELED)
    agent = mass.agent
    clock = Clock()
    agent.clock = clock
    agent.window = monitor.Window(5, clock)
    agent.store = LocalStore(clock=clock)
    agent.durable = None
    for _ in range(95):
        agent.record('AUTH_photos',
                     monitor.request_counts('GET', 200, 0, 10, 0.01))
    for _ in range(80):
        agent.record('AUTH_backup',
                     monitor.request_counts('PUT', 201, 10, 0, 0.01))
    for _ in range(50):
        agent.record('AUTH_db',
                     monitor.request_counts('PUT', 201, 10, 0, 0.01))
        agent.record('AUTH_db',
                     monitor.request_counts('GET', 200, 0, 10, 0.01))
    agent.tick()
    assert 'mass.decisions:3|c' in legacy(sent)
    assert sorted((value, labels['class']) for value, labels in
                  labeled(sent)['swift_mass_decisions']) == [
        ('1|c', 'mixed'), ('1|c', 'read'), ('1|c', 'write')]


# -- the object server filter ------------------------------------------


def make_queue(conf, app=None, clock=None):
    conf = dict({'devices': DEVICES, 'mount_check': 'false',
                 'recon_cache_path': RECON}, **conf)
    return object_mw.MassQueueMiddleware(app or RecordingApp(), conf,
                                         clock=clock or Clock())


def call(mw, headers=None, path='/sdb1/123/AUTH_test/c/o'):
    return Request.blank(path, headers=headers or {}).get_response(mw)


@needs_labels
def test_queue_one_labeled_packet_for_priority_and_class(sent):
    mw = make_queue(LABELED)
    call(mw, {'X-Backend-Mass-Priority': '7',
              'X-Backend-Mass-Class': 'read'})
    assert legacy(sent) == ['mass_queue.priority.7:1|c',
                            'mass_queue.class.read:1|c']
    assert labeled(sent) == {'swift_mass_queue_requests': [
        ('1|c', {'priority': '7', 'class': 'read'})]}


@needs_labels
def test_queue_replication_is_labeled_background(sent):
    mw = make_queue(LABELED)
    Request.blank('/sdb1/123', method='REPLICATE').get_response(mw)
    assert labeled(sent)['swift_mass_queue_requests'] == [
        ('1|c', {'priority': 'background', 'class': 'unknown'})]


def test_queue_without_label_mode_sends_only_legacy(sent):
    mw = make_queue(STATSD)
    call(mw, {'X-Backend-Mass-Priority': '7',
              'X-Backend-Mass-Class': 'read'})
    assert sent == ['mass_queue.priority.7:1|c', 'mass_queue.class.read:1|c']


def _one_slot(conf, clock):
    return make_queue(dict(conf, slots_per_device='1', deadline='2'),
                      app=BodyApp(), clock=clock)


@needs_labels
def test_queue_wait_depth_and_refusal_labeled_by_device_and_priority(sent):
    clock = Clock()
    mw = _one_slot(LABELED, clock)
    _, first = start(mw)
    waiter = eventlet.spawn(start, mw,
                            headers={'X-Backend-Mass-Priority': '7'})
    eventlet.sleep(0)
    clock.now += 2.0
    mw.queues['sdb1'].poll()
    seen, _ = waiter.wait()
    assert seen['status'].startswith('503')
    first.close()
    old = legacy(sent)
    assert 'mass_queue.queue.depth:1|ms' in old
    assert 'mass_queue.queue.wait.7:2000.0|ms' in old
    assert 'mass_queue.queue.refused:1|c' in old
    found = labeled(sent)
    where = {'device': 'sdb1', 'priority': '7'}
    assert found['swift_mass_queue_depth'] == [('1|ms', where)]
    assert found['swift_mass_queue_wait_timing'] == [('2000.0|ms', where)]
    assert found['swift_mass_queue_refused'] == [('1|c', where)]
    # a request admitted at once sends nothing but its one labeled packet
    assert sorted(found) == sorted([
        'swift_mass_queue_requests', 'swift_mass_queue_depth',
        'swift_mass_queue_wait_timing', 'swift_mass_queue_refused'])


@needs_labels
def test_observe_mode_would_wait_labeled(sent):
    mw = make_queue(dict(LABELED, mode='observe', slots_per_device='1'),
                    app=BodyApp())
    _, first = start(mw)
    _, second = start(mw, headers={'X-Backend-Mass-Priority': '3'})
    assert 'mass_queue.queue.would_wait:1|c' in legacy(sent)
    assert labeled(sent)['swift_mass_queue_would_wait'] == [
        ('1|c', {'device': 'sdb1', 'priority': '3'})]
    first.close()
    second.close()
