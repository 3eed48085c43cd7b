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
"""What an object's primaries hold: the newest version their answers show,
and the HEADs sent to find them (a real ring; the object servers' answers
are the test's)."""
import os

from eventlet.timeout import Timeout

from swift.common.direct_client import DirectClientException
from swift.common.ring import RingBuilder, Ring
from swift.common.utils import Timestamp
from swift.proxy.controllers.base import get_cache_key

from swift_mass.proxy.methods.replicas import Replicas, Version, newest_of
from tests.unit.helpers import Logger

T1, T2, T3 = (Timestamp(1700000000 + i).internal for i in (1, 2, 3))


def ok(timestamp, data=None):
    return 200, {'X-Backend-Timestamp': timestamp,
                 'X-Backend-Data-Timestamp': data or timestamp}


def test_the_newest_metadata_and_data_of_all_answers():
    # a replica missed the POST (T3) that another took on the same data
    shown = newest_of([ok(T1), ok(T3, T1), ok(T1)])
    assert shown == Version(Timestamp(T3), Timestamp(T1))
    assert shown.shown_by(T3, T1)
    assert not shown.shown_by(T1, T1)  # the replica behind the POST
    # a replica that missed a PUT but took the POST after it
    shown = newest_of([ok(T3, T1), ok(T2)])
    assert not shown.shown_by(T3, T1) and not shown.shown_by(T2, T2)


def test_a_tombstone_is_newer_than_the_data_it_replaced():
    shown = newest_of([ok(T1), (404, {'X-Backend-Timestamp': T2}), ok(T1)])
    assert not shown.shown_by(T1, T1)
    # a replica with nothing at all tells nothing
    assert newest_of([ok(T1), (404, {}), ok(T1)]).shown_by(T1, T1)
    assert newest_of([(404, {}), (404, {})]).data is None


def test_a_replica_that_cannot_answer_proves_nothing():
    assert newest_of([ok(T2), (503, {}), ok(T2)]) is None
    assert newest_of([ok(T2), (0, {})]) is None  # a timeout
    assert newest_of([ok(T2), (200, {'X-Backend-Timestamp': 'junk'})]) is None
    assert newest_of([]) is None


def test_by_time_alone_as_the_fence_compares():
    # a copy Swift or Mass made again of a version has its time, with an
    # offset of its own
    staged = Timestamp(T2, offset=1).internal
    assert newest_of([ok(staged), ok(T2)]).shown_by(T2, T2)


class ProxyServer(object):
    """The attributes of Swift's proxy server app Replicas reads."""
    conn_timeout = 0.25
    node_timeout = 1.5

    def __init__(self, ring):
        self.ring = ring
        self.rings_asked = []
        self.logger = Logger()  # the info cache metrics Swift records

    def get_object_ring(self, policy_index):
        self.rings_asked.append(policy_index)
        return self.ring


class Middleware(object):
    def __init__(self, app):
        self.app = app
        # as swift.common.wsgi's loadapp names it on every app
        self._pipeline_final_app = getattr(app, '_pipeline_final_app', app)


def three_replica_ring(swift_dir):
    builder = RingBuilder(6, 3, 1)
    for i in range(4):
        builder.add_dev({'id': i, 'region': 1, 'zone': i, 'weight': 1,
                         'ip': '127.0.0.%d' % (i + 1), 'port': 6200 + i,
                         'device': 'sdb%d' % i})
    builder.rebalance(seed=1)
    path = os.path.join(swift_dir, 'object.ring.gz')
    builder.get_ring().save(path)
    return Ring(path)


def env_of(path, policy='1'):
    _, _, account, container, _ = path.split('/', 4)
    return {'PATH_INFO': path, 'REQUEST_METHOD': 'GET',
            'swift.trans_id': 'tx1',
            'swift.infocache': {
                get_cache_key(account): {'status': 204},
                get_cache_key(account, container): {
                    'status': 200, 'storage_policy': policy}}}


def test_each_primary_is_asked_in_the_containers_policy(tmp_path):
    ring = three_replica_ring(str(tmp_path))
    proxy = ProxyServer(ring)
    asked = []

    def head(node, part, account, container, obj, conn_timeout,
             response_timeout, headers):
        asked.append((node['device'], part, account, container, obj,
                      conn_timeout, response_timeout, headers))
        if node['device'] == 'sdb0':
            raise Timeout()
        return {'X-Backend-Timestamp': T1}
    replicas = Replicas(Middleware(Middleware(proxy)), str(tmp_path),
                        Logger(), head=head)
    path = '/v1/AUTH_t/c/caf\xc3\xa9'  # a WSGI string
    answers = replicas.answers(env_of(path))
    part, nodes = ring.get_nodes('AUTH_t', 'c', 'caf\u00e9')
    assert sorted(a[0] for a in asked) == sorted(n['device'] for n in nodes)
    assert {a[1:7] for a in asked} == {
        (part, 'AUTH_t', 'c', 'caf\u00e9', 0.25, 1.5)}
    assert {a[7]['X-Backend-Storage-Policy-Index'] for a in asked} == {'1'}
    assert proxy.rings_asked == [1]
    expected = sorted((0, {}) if n['device'] == 'sdb0' else
                      (200, {'X-Backend-Timestamp': T1}) for n in nodes)
    assert sorted(answers, key=repr) == sorted(expected, key=repr)
    # one replica timed out: nothing is shown
    assert ('sdb0' in [n['device'] for n in nodes]) == \
        (replicas.newest(env_of(path)) is None)


def test_an_error_status_is_the_replicas_answer(tmp_path):
    ring = three_replica_ring(str(tmp_path))

    def head(node, *args, **kwargs):
        resp = type('R', (), {'status': 404, 'reason': 'Not Found',
                              'getheaders': lambda self: [
                                  ('X-Backend-Timestamp', T2)]})()
        raise DirectClientException('Object', 'HEAD', node, 1, '/a/c/o',
                                    resp)
    replicas = Replicas(ProxyServer(ring), str(tmp_path), Logger(),
                        head=head)
    shown = replicas.newest(env_of('/v1/AUTH_t/c/o'))
    assert shown == Version(Timestamp(T2), None)


def test_without_container_info_nothing_is_asked(tmp_path):
    asked = []
    replicas = Replicas(ProxyServer(None), str(tmp_path), Logger(),
                        head=lambda *a, **k: asked.append(a))
    env = env_of('/v1/AUTH_t/c/o')
    env['swift.infocache'][get_cache_key('AUTH_t', 'c')] = {'status': 404}
    assert replicas.answers(env) is None and asked == []
