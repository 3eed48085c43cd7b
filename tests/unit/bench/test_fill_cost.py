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
"""The fill cost's figures: medians over blocks, and the object-server
requests counted where the proxy and direct_client send them."""
from swift.common import bufferedhttp, direct_client
from swift.proxy.controllers import base, obj

from mass_bench import fill_cost


def row(kind, cpu, backend, answers, redis=2.0):
    return {'kind': kind, 'requests': 10, 'cpu_us_per_request': cpu,
            'ms_per_request': cpu / 100.0, 'backend_per_request': backend,
            'redis_commands_per_request': redis, 'answers': answers,
            'as_expected': answers == {
                str(fill_cost.EXPECTED[kind]): 10}}


def test_medians_over_blocks_per_kind():
    rows = []
    for cpu in (100, 300, 200):
        rows += [row('backend GET', cpu, {'GET': 1.0}, {'None': 10}, None),
                 row('first fill', 3 * cpu, {'GET': 3.0, 'HEAD': 3.0},
                     {'miss': 10}),
                 row('hit', cpu / 2, {}, {'hit': 10}),
                 row('sealed fill', cpu, {'GET': 1.0},
                     {'miss': 9, 'hit': 1})]
    result = fill_cost.summarise(rows)
    assert result['first fill']['cpu_us_per_request'] == {
        'median': 600, 'min': 300, 'max': 900}
    assert result['first fill']['backend_per_request'] == {
        'GET': 3.0, 'HEAD': 3.0}
    assert result['hit']['backend_per_request'] == {}
    assert 'redis_commands_per_request' not in result['backend GET']
    assert result['first fill']['as_expected']
    assert not result['sealed fill']['as_expected']
    text = fill_cost.format_summary(result, 3, 10)
    assert 'first fill' in text and 'GET 3.00, HEAD 3.00' in text
    [sealed] = [line for line in text.splitlines()
                if line.startswith('  sealed fill')]
    assert 'NOT as expected' in sealed


def test_object_requests_are_counted_by_method(monkeypatch):
    sent = []

    def http_connect(ipaddr, port, device, partition, method, path,
                     *args, **kwargs):
        sent.append((method, path))
        return 'conn'
    monkeypatch.setattr(bufferedhttp, 'http_connect', http_connect)
    for module in (base, obj, direct_client):
        monkeypatch.setattr(module, 'http_connect', http_connect)
    counter = fill_cost.BackendRequests()
    counter.install()
    try:
        assert direct_client.http_connect(
            '127.0.0.1', 6200, 'sdb1', 1, 'HEAD', '/a/c/o') == 'conn'
        obj.http_connect('127.0.0.1', 6200, 'sdb1', 1, 'PUT', b'/a/c/o')
        base.http_connect('127.0.0.1', 6201, 'sdb1', 1, 'HEAD', '/a/c')
    finally:
        counter.uninstall()
    assert counter.counts == {'HEAD': 1, 'PUT': 1}  # not the container's
    assert len(sent) == 3
    assert direct_client.http_connect is http_connect
