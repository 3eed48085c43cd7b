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
import math

import pytest

from swift_mass.control import monitor


@pytest.mark.parametrize('op', ['GET', 'HEAD', 'PUT', 'POST', 'DELETE',
                                'COPY'])
@pytest.mark.parametrize('status, expected', [
    (200, True), (201, True), (204, True), (206, True), (304, True),
    (500, True), (503, True),
    (401, False), (403, False), (400, False), (412, False), (416, False),
    (413, False), (499, False),
])
def test_counted(op, status, expected):
    assert monitor.counted(op, status) is expected


@pytest.mark.parametrize('status', [404, 409])
def test_a_read_the_storage_servers_answered_counts(status):
    assert monitor.counted('GET', status)
    assert monitor.counted('HEAD', status)


@pytest.mark.parametrize('op', ['PUT', 'POST', 'DELETE', 'COPY'])
@pytest.mark.parametrize('status', [404, 409])
def test_a_write_that_changed_nothing_does_not_count(op, status):
    # a tenant could make itself write-dominated with writes to a
    # container that does not exist, and earn the write methods' slots
    assert not monitor.counted(op, status)


@pytest.mark.parametrize('method, source, op', [
    ('GET', None, 'GET'), ('PUT', None, 'PUT'), ('HEAD', None, 'HEAD'),
    ('GET', 'S3', 'GET'), ('PUT', 'S3', 'PUT'),
    ('PUT', 'SSC', 'COPY'), ('GET', 'SSC', None),
    ('GET', 'SLO', None), ('HEAD', 'SLO', None), ('GET', 'DLO', None),
    ('PUT', 'VW', None), ('GET', 'SW', None), ('POST', 'MASS', None),
])
def test_operation(method, source, op):
    assert monitor.operation(method, source) == op


def test_request_counts_of_a_get():
    counts = monitor.request_counts('GET', 200, 0, 65536, 0.0123,
                                    object_size=65536)
    assert counts == {
        'ops.GET': 1, 'lat_ms.GET': 12, 'lat.GET.20': 1,
        'bytes_out': 65536, 'size.65536': 1}


def test_request_counts_of_a_failed_put():
    counts = monitor.request_counts('PUT', 503, 8192, 0, 45.0,
                                    object_size=8192)
    assert counts == {
        'ops.PUT': 1, 'err.PUT': 1, 'lat_ms.PUT': 45000, 'lat.PUT.inf': 1,
        'bytes_in': 8192, 'size.65536': 1}


def test_unknown_methods_are_other():
    assert monitor.request_counts('OPTIONS', 200, 0, 0, 0.0) == {
        'ops.OTHER': 1, 'lat_ms.OTHER': 0, 'lat.OTHER.1': 1}


class Clock(object):
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


def test_window_buckets_and_drain():
    clock = Clock(1002.0)
    window = monitor.Window(bucket_seconds=5, clock=clock)
    window.record('AUTH_a', {'ops.GET': 1, 'bytes_out': 10})
    window.record('AUTH_a', {'ops.GET': 1, 'bytes_out': 5})
    window.record('AUTH_b', {'ops.PUT': 1})
    clock.now = 1005.0
    window.record('AUTH_a', {'ops.HEAD': 1})
    assert len(window) == 3
    assert window.drain() == {
        ('AUTH_a', 1000): {'ops.GET': 2, 'bytes_out': 15},
        ('AUTH_b', 1000): {'ops.PUT': 1},
        ('AUTH_a', 1005): {'ops.HEAD': 1},
    }
    assert window.drain() == {}
    assert len(window) == 0


def test_window_start():
    # a 60 s window of 5 s buckets ending at t=100 holds buckets 45..100
    assert monitor.window_buckets(100, 60, 5) == 45
    assert monitor.window_buckets(104.9, 60, 5) == 45
    assert monitor.window_buckets(105, 60, 5) == 50


def test_figures_sum_buckets_from_many_workers():
    def reqs(method, n, latency, size=None, status=200):
        return [monitor.request_counts(method, status, 0, 0, latency, size)
                for _ in range(n)]
    buckets = (reqs('GET', 95, 0.004, 4000) + reqs('GET', 5, 0.3, 4000) +
               reqs('HEAD', 10, 0.001) + reqs('PUT', 20, 0.05, 70000) +
               reqs('DELETE', 2, 0.01, status=503))
    f = monitor.figures(buckets)
    assert (f.reads, f.writes) == (110, 22)
    assert f.ops == {'GET': 100, 'HEAD': 10, 'PUT': 20, 'DELETE': 2}
    assert f.errors == {'DELETE': 2}
    assert f.mean_latency_ms['GET'] == pytest.approx((95 * 4 + 5 * 300) /
                                                     100.0)
    # 99 % of the GETs took <= 500 ms, 95 % <= 5 ms
    assert f.p99_latency_ms['GET'] == 500
    assert f.p99_latency_ms['HEAD'] == 1
    assert f.sizes == {'4096': 100, '1048576': 20}


def test_p99_in_the_open_bucket():
    buckets = [monitor.request_counts('GET', 200, 0, 0, 60.0)]
    assert monitor.figures(buckets).p99_latency_ms['GET'] == math.inf


def test_figures_of_nothing():
    f = monitor.figures([])
    assert (f.reads, f.writes, f.ops, f.p99_latency_ms) == (0, 0, {}, {})


def test_decision_figures_are_figures_for_decide():
    def reqs(method, n, latency, status=200):
        return [monitor.request_counts(method, status, 3, 5, latency, 4000)
                for _ in range(n)]
    worker1 = reqs('GET', 95, 0.004) + reqs('PUT', 20, 0.05) + \
        reqs('OTHER', 3, 0.002) + reqs('DELETE', 2, 0.01, status=503)
    worker2 = reqs('HEAD', 10, 0.001) + reqs('GET', 5, 0.3) + \
        reqs('COPY', 1, 0.2)
    # a bucket as the store keeps it: per worker, added up
    buckets = []
    for requests in (worker1, worker2):
        bucket = {}
        for counts in requests:
            for field, value in counts.items():
                bucket[field] = bucket.get(field, 0) + value
        buckets.append(bucket)
    full = monitor.figures(buckets)
    # from the decision fields alone, as the leader reads them
    wanted = [{f: v for f, v in b.items()
               if f.startswith(monitor.DECISION_FIELDS)} for b in buckets]
    for given, expected in ((buckets, full), (wanted, full),
                            (iter(wanted), full),
                            (wanted[:1], monitor.figures(buckets[:1]))):
        light = monitor.decision_figures(given)
        assert (light.reads, light.writes) == (expected.reads,
                                               expected.writes)
        # equal, and in the same order (a mixed tenant's dominant latency
        # sums over them)
        assert list(light.ops.items()) == list(expected.ops.items())
        assert list(light.mean_latency_ms.items()) == \
            list(expected.mean_latency_ms.items())
    assert monitor.decision_figures([]) == monitor.Figures(
        0, 0, {}, {}, 0, 0, {}, {}, {})
