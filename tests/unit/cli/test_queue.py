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
"""swift-mass queue: object servers found in real ring files, asked over
real HTTP (a real mass_queue in front of a stand-in object server, and
servers answering what a server without it would)."""
import http.server
import json
import os
import socket
import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest

from swift.common.ring import RingBuilder

from swift_mass.cli import main as cli, queue as queue_status
from swift_mass.conf import QueueConf
from swift_mass.obj import device_queue
from swift_mass.obj import middleware as object_mw
from tests.unit.helpers import Clock, RecordingApp
from tests.unit.devices.test_rings import swift_conf


def build(swift_dir, ring_name, replicas, devices):
    """devices: (ip, port, device); one zone per IP.  The builder, to
    change the ring further."""
    builder = RingBuilder(6, replicas, 1)
    zones = sorted(set(ip for ip, _, _ in devices))
    for i, (ip, port, device) in enumerate(devices):
        builder.add_dev({'id': i, 'region': 1, 'zone': zones.index(ip) + 1,
                         'ip': ip, 'port': port, 'device': device,
                         'weight': 1.0})
    builder.rebalance(seed=1)
    save(swift_dir, ring_name, builder)
    return builder


def save(swift_dir, ring_name, builder):
    builder.get_ring().save(os.path.join(swift_dir, ring_name + '.ring.gz'))


def saio_servers(n=4):
    return [('127.0.0.%d' % i, 6200 + 10 * i) for i in range(1, n + 1)]


@pytest.fixture
def swift_dir(tmp_path):
    """The SAIO's policies, with two devices per server in the standard
    ring and a fifth server only the bulk ring has."""
    d = str(tmp_path)
    swift_conf(d, [(0, 'standard', {'default': 'yes'}), (1, 'fast', {}),
                   (2, 'bulk', {})])
    one, two, three, four = saio_servers()
    build(d, 'object', 3, [(ip, port, 'sdb%d' % n)
                           for ip, port in (one, two, three, four)
                           for n in (1, 5)])
    build(d, 'object-1', 2, [one + ('ssd1',), two + ('ssd2',)])
    build(d, 'object-2', 2, [three + ('sdb1',), four + ('sdb1',),
                             ('127.0.0.5', 6250, 'sdb1')])
    return d


# --- ring discovery --------------------------------------------------------

def test_every_policys_servers_once(swift_dir):
    assert queue_status.object_servers(swift_dir) == \
        saio_servers() + [('127.0.0.5', 6250)]
    devices = queue_status.devices_by_server(swift_dir)
    assert devices[('127.0.0.1', 6210)] == ['sdb1', 'sdb5', 'ssd1']
    assert devices[('127.0.0.3', 6230)] == ['sdb1', 'sdb5']
    assert devices[('127.0.0.5', 6250)] == ['sdb1']


def test_removed_devices_are_left_out(tmp_path):
    d = str(tmp_path)
    swift_conf(d, [(0, 'standard', {'default': 'yes'})])
    builder = build(d, 'object', 2, [(ip, port, 'sdb1')
                                     for ip, port in saio_servers(3)])
    builder.remove_dev(1)
    builder.pretend_min_part_hours_passed()
    builder.rebalance(seed=1)
    save(d, 'object', builder)
    assert builder.get_ring().devs[1] is None
    one, two, three = saio_servers(3)
    assert queue_status.object_servers(d) == [one, three]


def test_a_ring_that_cannot_be_read_is_an_error(swift_dir, tmp_path):
    os.unlink(os.path.join(swift_dir, 'object-2.ring.gz'))
    with pytest.raises(IOError):
        queue_status.object_servers(swift_dir)
    with pytest.raises(ValueError) as err:
        queue_status.object_servers(str(tmp_path / 'none'))
    assert 'swift.conf' in str(err.value)


# --- servers to ask --------------------------------------------------------

class QuietWSGIHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class NullLogger(object):
    """mass_queue's statsd calls, dropped."""

    def increment(self, metric):
        pass

    def timing(self, metric, value):
        pass

    def info(self, line):
        pass


def serve(server):
    # a short poll: shutdown() waits for it
    thread = threading.Thread(target=server.serve_forever, args=(0.05,),
                              daemon=True)
    thread.start()
    return server


@pytest.fixture
def servers(tmp_path):
    """Start servers on 127.0.0.1; each call a (ip, port).  Stopped at the
    end of the test."""
    started = []

    def mass_queue(devices=('sdb1', 'sdb2')):
        """A real mass_queue in front of a stand-in object server."""
        root = tmp_path / ('devices-%d' % len(started))
        for device in devices:
            os.makedirs(str(root / device))
        mw = object_mw.MassQueueMiddleware(
            RecordingApp(), {'devices': str(root), 'mount_check': 'false',
                             # never the machine's /var/cache/swift
                             'recon_cache_path': str(root),
                             'slots_per_device': '4',
                             'batch_slots': '2',
                             'urgent_tenants': 'AUTH_dbdump'},
            logger=NullLogger(), clock=Clock())
        server = make_server('127.0.0.1', 0, mw,
                             handler_class=QuietWSGIHandler)
        started.append(serve(server))
        return mw, ('127.0.0.1', server.server_port)

    def answering(status, body):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(status)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        started.append(serve(server))
        return '127.0.0.1', server.server_port

    yield mass_queue, answering
    for server in started:
        server.shutdown()
        server.server_close()


def closed_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return '127.0.0.1', port


def get(server, path):
    sock = socket.create_connection(server)
    sock.sendall(b'GET %s HTTP/1.0\r\n\r\n' % path.encode())
    while sock.recv(65536):
        pass
    sock.close()


# mass_queue's answer before it reported the tenants marked urgent
OLD_ANSWER = {
    'slots_per_device': 8, 'batch_slots': 0, 'deadline': 3.0,
    'urgent_tenants': [], 'adaptive_slots': False,
    'devices': {'sdb3': {
        'mode': 'shared', 'slots': 8, 'slots_in_use': 1, 'batch_slots': 0,
        'batch_slots_in_use': 0, 'reserved_slots': 0, 'waiting': 0,
        'waiting_by_priority': {}, 'admitted': 10, 'admitted_after_wait': 2,
        'refused': 1, 'admitted_by_priority': {'5': 10},
        'wait_seconds_by_priority': {'5': 0.5}}}}


def test_fetch_reads_mass_queue_and_says_why_others_cannot_be(servers):
    mass_queue, answering = servers
    mw, real = mass_queue()
    get(real, '/sdb1/0/AUTH_test/c/o')
    get(real, '/sdb1/1/AUTH_test/c/o2')
    old = answering(200, json.dumps(OLD_ANSWER).encode())
    missing = answering(404, b'Not Found')
    bad_request = answering(400, b'Invalid path')
    garbage = answering(200, b'<html>hello</html>')
    not_ours = answering(200, b'{"healthy": true}')
    refused = closed_port()
    silent = socket.socket()
    silent.bind(('127.0.0.1', 0))
    silent.listen(8)  # connections wait in the backlog; nobody answers
    quiet = silent.getsockname()
    try:
        answers = queue_status.fetch(
            [real, old, missing, bad_request, garbage, not_ours, refused,
             quiet], timeout=0.5)
    finally:
        silent.close()
    assert answers[real]['slots_per_device'] == 4
    assert answers[real]['urgent_tenants'] == ['AUTH_dbdump']
    sdb1 = answers[real]['devices']['sdb1']
    assert (sdb1['admitted'], sdb1['slots'], sdb1['slots_in_use']) == \
        (2, 4, 0)
    assert list(answers[real]['devices']) == ['sdb1']
    assert answers[old] == OLD_ANSWER
    assert answers[missing] == \
        'HTTP 404 Not Found: mass_queue is not in its pipeline'
    assert answers[bad_request] == \
        'HTTP 400 Bad Request: mass_queue is not in its pipeline'
    assert answers[garbage].startswith('the answer is not JSON: ')
    assert answers[not_ours] == 'the answer is not mass_queue\'s: no devices'
    assert answers[refused] == 'connection refused'
    assert answers[quiet] == 'no answer within 0.5s'
    assert queue_status.fetch([]) == {}


# --- the report ------------------------------------------------------------

def stats_of_a_busy_device():
    """A real queue's stats: one slot in use, one request waiting, one
    admitted after waiting, one refused at its deadline."""
    clock = Clock(100.0)
    queue = device_queue.DeviceQueue(
        QueueConf({'slots_per_device': '1', 'deadline': '2'}), clock)
    first = queue.arrive(5)
    waited = queue.arrive(5)
    refused = queue.arrive(5)
    clock.now += 1.0
    queue.release(first)   # the second gets the slot
    clock.now += 1.5
    queue.poll()           # the third's deadline has passed
    queue.arrive(7)        # waits
    assert (waited.state, refused.state) == (device_queue.ADMITTED,
                                             device_queue.REFUSED)
    return queue.stats()


def test_report_sums_devices_and_lists_errors():
    busy = stats_of_a_busy_device()
    assert (busy['slots_in_use'], busy['waiting'], busy['admitted'],
            busy['admitted_after_wait'], busy['refused']) == (1, 1, 2, 1, 1)
    new = dict(OLD_ANSWER, urgent_tenants=['AUTH_dbdump'],
               urgent_seen=['AUTH_db', 'AUTH_dbdump'],
               devices={'sdb1': busy, 'sdb5': busy})
    answers = {('127.0.0.2', 6220): OLD_ANSWER,
               ('127.0.0.1', 6210): new,
               ('127.0.0.3', 6230): 'connection refused'}
    devices = {('127.0.0.1', 6210): ['sdb1', 'sdb5', 'ssd1'],
               ('127.0.0.2', 6220): ['sdb2', 'sdb3']}
    result = queue_status.report(answers, devices)
    json.dumps(result)
    assert [row['server'] for row in result['servers']] == [
        '127.0.0.1:6210', '127.0.0.2:6220', '127.0.0.3:6230']
    first, second, third = result['servers']
    assert first['devices'] == {'sdb1': busy, 'sdb5': busy}
    assert first['no_queue_yet'] == ['ssd1']
    assert first['urgent_seen'] == ['AUTH_db', 'AUTH_dbdump']
    assert second['no_queue_yet'] == ['sdb2']
    assert second['urgent_seen'] is None  # an older mass_queue
    assert third == {'server': '127.0.0.3:6230', 'ip': '127.0.0.3',
                     'port': 6230, 'error': 'connection refused'}
    assert result['totals'] == {
        'slots_in_use': 1 + 1 + 1, 'waiting': 1 + 1 + 0,
        'admitted': 2 + 2 + 10, 'admitted_after_wait': 1 + 1 + 2,
        'refused': 1 + 1 + 1, 'admitted_past_deadline': 0, 'servers': 3,
        'servers_read': 2, 'devices': 3}
    assert result['errors'] == ['127.0.0.3:6230: connection refused']
    assert result['urgent'] == {
        'configured': {'AUTH_dbdump': 1},
        'seen': {'AUTH_db': 1, 'AUTH_dbdump': 1}, 'seen_reported': 1}
    assert 'per object-server worker' in result['note']


def test_report_of_ipv6_servers_and_of_nothing():
    result = queue_status.report({('::1', 6200): 'connection refused'})
    assert result['errors'] == ['[::1]:6200: connection refused']
    empty = queue_status.report({})
    assert empty['servers'] == [] and empty['errors'] == []
    assert empty['totals']['servers'] == 0


def test_format_report():
    busy = stats_of_a_busy_device()
    isolated = dict(busy, mode='isolated', reserved_slots=2, slots=4,
                    batch_slots=2, batch_slots_in_use=1)
    new = dict(OLD_ANSWER, urgent_tenants=['AUTH_dbdump'],
               urgent_seen=['AUTH_db'],
               devices={'sdb5': isolated, 'sdb1': busy})
    text = queue_status.format_report(queue_status.report({
        ('127.0.0.1', 6210): new,
        ('127.0.0.2', 6220): dict(OLD_ANSWER, devices={}),
        ('127.0.0.3', 6230): 'HTTP 400 Bad Request: mass_queue is not in '
                             'its pipeline'},
        {('127.0.0.1', 6210): ['sdb1', 'sdb5', 'ssd1'],
         ('127.0.0.2', 6220): ['sdb2']}))
    lines = text.splitlines()
    assert lines[0].split() == ['server', 'device', 'mode', 'slots',
                                'batch', 'reserved', 'waiting', 'admitted',
                                'waited', 'refused', 'late']
    assert lines[1].split() == ['127.0.0.1:6210', 'sdb1', 'shared', '1/1',
                                '0/0', '0', '1', '2', '1', '1', '0']
    assert lines[2].split() == ['127.0.0.1:6210', 'sdb5', 'isolated',
                                '1/4', '1/2', '2', '1', '2', '1', '1', '0']
    assert lines[3].split() == ['127.0.0.1:6210', 'ssd1', 'no', 'request',
                                'yet']
    one_worker = ('one worker\'s figures (its mass_queue does not report '
                  'every worker\'s)')
    assert lines[4] == '127.0.0.1:6210        ' + one_worker
    assert lines[5].split() == ['127.0.0.2:6220', 'sdb2', 'no', 'request',
                                'yet']
    assert lines[6] == '127.0.0.2:6220        ' + one_worker
    assert lines[7] == ('127.0.0.3:6230        NOT READ: HTTP 400 Bad '
                        'Request: mass_queue is not in its pipeline')
    assert lines[8].split() == ['total', '2', 'devices', '2', '2', '4',
                                '2', '2', '0']
    assert lines[9:] == [
        '',
        '2 of 3 object servers read',
        'urgent tenants configured: AUTH_dbdump (1 of 2 servers)',
        'urgent tenants marked by a proxy, seen: AUTH_db (1 of 1 servers)',
        'note: ' + queue_status.WORKER_NOTE]


def test_format_report_without_urgent_tenants_or_ring_devices():
    text = queue_status.format_report(queue_status.report({
        ('127.0.0.2', 6220): dict(OLD_ANSWER, devices={})}))
    assert '127.0.0.2:6220        -          no request yet' in text
    assert 'urgent tenants configured: none' in text
    assert 'marked by a proxy' not in text  # an older mass_queue


# --- the command -----------------------------------------------------------

def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli(servers, tmp_path, capsys):
    mass_queue, answering = servers
    _, one = mass_queue(['sdb1'])
    get(one, '/sdb1/0/AUTH_test/c/o')
    _, two = mass_queue(['sdb2'])
    d = str(tmp_path)
    swift_conf(d, [(0, 'standard', {'default': 'yes'})])
    build(d, 'object', 2, [one + ('sdb1',), two + ('sdb2',)])

    status, out, _ = run(capsys, 'queue', '--swift-dir', d, '--json')
    assert status == 0
    result = json.loads(out)
    assert [row['port'] for row in result['servers']] == sorted(
        [one[1], two[1]])
    assert result['totals']['admitted'] == 1
    assert result['errors'] == []

    status, out, _ = run(capsys, 'queue', '--swift-dir', d)
    assert status == 0
    assert ['127.0.0.1:%d' % one[1], 'sdb1', 'shared', '0/4'] in [
        line.split()[:4] for line in out.splitlines()]
    assert '2 of 2 object servers read' in out

    # a third server without mass_queue, and one that is down
    missing = answering(400, b'Invalid path')
    build(d, 'object', 2, [one + ('sdb1',), two + ('sdb2',),
                           missing + ('sdb3',), closed_port() + ('sdb4',)])
    status, out, _ = run(capsys, '--json', 'queue', '--swift-dir', d,
                         '--timeout', '1')
    assert status == 1
    assert len(json.loads(out)['errors']) == 2
    status, out, _ = run(capsys, 'queue', '--swift-dir', d)
    assert status == 1
    assert 'NOT READ: connection refused' in out
    assert 'NOT READ: HTTP 400 Bad Request' in out

    status, out, err = run(capsys, 'queue', '--swift-dir',
                           str(tmp_path / 'none'))
    assert status == 1 and out == ''
    assert 'swift.conf' in err


# --- every worker of a server ---------------------------------------------

def as_sent(stats):
    """Through JSON, as GET /mass_queue sends them (priorities: str)."""
    return json.loads(json.dumps(stats))


def answer_of_workers(now):
    """A server of two workers: sdb1 busy in both, isolated in one; sdb2
    in one only."""
    busy = as_sent(stats_of_a_busy_device())
    isolated = dict(busy, mode='isolated', reserved_slots=1,
                    waiting_by_priority={'7': 1, '3': 2})
    return dict(OLD_ANSWER, mode='observe', urgent_seen=['AUTH_a'],
                urgent_seen_all=['AUTH_a', 'AUTH_b'],
                devices={'sdb1': busy},  # the answering worker's own
                workers={
                    '101': {'time': now - 1.0, 'urgent_seen': ['AUTH_a'],
                            'devices': {'sdb1': busy}},
                    '102': {'time': now - 4.5, 'urgent_seen': ['AUTH_b'],
                            'devices': {'sdb1': isolated, 'sdb2': busy}}})


def test_report_sums_every_worker_of_a_server():
    now = 1000.0
    busy = as_sent(stats_of_a_busy_device())
    result = queue_status.report(
        {('127.0.0.1', 6210): answer_of_workers(now)}, now=now)
    [row] = result['servers']
    assert (row['mode'], row['workers'], row['oldest_report_age']) == \
        ('observe', 2, 4.5)
    sdb1, sdb2 = row['devices']['sdb1'], row['devices']['sdb2']
    assert sdb2 == busy  # one worker's: as it answered
    assert sdb1['mode'] == 'isolated'
    for key in ('slots', 'slots_in_use', 'batch_slots',
                'batch_slots_in_use', 'waiting', 'admitted',
                'admitted_after_wait', 'refused', 'admitted_past_deadline'):
        assert sdb1[key] == 2 * busy[key], key
    assert sdb1['reserved_slots'] == busy['reserved_slots'] + 1
    assert busy['waiting_by_priority'] == {'7': 1}
    assert sdb1['waiting_by_priority'] == {'7': 1 + 1, '3': 2}
    assert sdb1['admitted_by_priority'] == dict(
        (p, 2 * n) for p, n in busy['admitted_by_priority'].items())
    assert sdb1['wait_seconds_by_priority'] == dict(
        (p, 2 * n) for p, n in busy['wait_seconds_by_priority'].items())
    assert result['totals']['admitted'] == 3 * busy['admitted']
    assert result['totals']['devices'] == 2
    # every worker's marks, not the answering one's
    assert result['urgent']['seen'] == {'AUTH_a': 1, 'AUTH_b': 1}
    json.dumps(result)


def test_format_report_says_how_many_workers_reported():
    now = 1000.0
    text = queue_status.format_report(queue_status.report(
        {('127.0.0.1', 6210): answer_of_workers(now),
         ('127.0.0.2', 6220): OLD_ANSWER}, now=now))
    lines = text.splitlines()
    assert lines[1].split()[:5] == ['127.0.0.1:6210', 'sdb1', 'isolated',
                                    '2/2', '0/0']
    assert lines[3] == ('127.0.0.1:6210        mode observe, 2 workers '
                        'reported, oldest report 4.5s old')
    assert lines[5] == ('127.0.0.2:6220        one worker\'s figures (its '
                        'mass_queue does not report every worker\'s)')


def test_a_real_mass_queue_reports_its_workers(servers, tmp_path):
    mass_queue, _ = servers
    _, real = mass_queue(['sdb1'])
    get(real, '/sdb1/0/AUTH_test/c/o')
    result = queue_status.report(queue_status.fetch([real], timeout=5))
    [row] = result['servers']
    assert (row['mode'], row['workers']) == ('active', 1)
    assert 0 <= row['oldest_report_age'] < 60
    assert row['devices']['sdb1']['admitted'] == 1
