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
"""Mass's metrics through a real Prometheus: ``tools/saio metrics start``
with the collectd backend (Debian's collectd takes the SAIO's statsd on
127.0.0.1:8125, Debian's Prometheus scrapes it through
etc/prometheus-collectd-relabel.yml and loads etc/prometheus-mass-alerts.yml;
docs/metrics.md).  A cache tenant's writes and reads (misses, then hits)
go through the Mass proxies; then every query of
etc/grafana-mass-dashboard.json is asked of Prometheus's HTTP API, with
the dashboard's variables as Grafana fills them: each must be valid, and
those whose series this traffic makes must return data.  The dashboard's
four timer panels read statsd_exporter's histograms, which collectd does
not make: they must be empty, and the quantile series collectd gives
instead must be there.

The chain holds UDP 8125 while this module runs (the ``statsd`` fixture
of other tests binds it too): the fixture stops it, whatever happens."""
import json
import os
import socket
import subprocess
import time
import uuid

import pytest
import requests
import yaml

from tests.functional.conftest import ROOT, SAIO, STATSD
from tests.functional.test_cache import PROXIES, admin, client  # noqa: F401
from tests.functional.waiting import until

PROMETHEUS = 'http://' + os.environ.get('SAIO_METRICS_PROMETHEUS_WEB',
                                        '127.0.0.1:19090')
DASHBOARD = os.path.join(ROOT, 'etc', 'grafana-mass-dashboard.json')
ALERTS = os.path.join(ROOT, 'etc', 'prometheus-mass-alerts.yml')
# Grafana's $__rate_interval is at least four scrape intervals (2 s here)
# and grows with the panel's time range; a minute holds all of this
# module's traffic
RATE_INTERVAL = '1m'
# The series the dashboard's timer panels read, which only statsd_exporter
# makes (its histograms), and those collectd gives for the same timers
# (tools/prometheus-relabel): docs/metrics.md, "What differs".
EXPORTER_ONLY = ('mass_queue_wait_seconds_bucket',
                 'mass_queue_wait_seconds_count',
                 'mass_group_commit_flush_seconds_bucket')
COLLECTD_TIMERS = {
    'mass_queue.queue.wait.5:12|ms': (
        'mass_queue_wait_seconds', {'priority': '5'}),
    'object-server.group_commit.flush:7|ms': (
        'mass_group_commit_flush_seconds', {'prefix': 'object-server'}),
}
# The queries (panel title, legend) whose series a cache tenant's reads
# and writes make: the cache's results, the class and tenant counters of
# the proxies' flushes, the object servers' priority counter.  The others
# need errors, refusals, observe mode, group commit (whose statsd the
# SAIO's object servers do not send), decisions, generations events or
# a merge tenant.
WITH_DATA = {
    ('Cache hit ratio', 'hit ratio'),
    ('Cache results per second', '{{result}}'),
    ('Requests per second by workload class', '{{class}}'),
    ('Requests per second by class and method', '{{class}} {{method}}'),
    ('Busiest tenants (requests per second)', '{{tenant}}'),
    ('Requests that waited per second, by priority',
     'all, priority {{priority}}'),
}


def targets():
    """(panel title, target) of every query of the dashboard."""
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    return [(panel['title'], target) for panel in dashboard['panels']
            for target in panel.get('targets', ())]


def fed(title, target):
    return (title, target['legendFormat']) in WITH_DATA


def expr_of(title):
    return next(t['expr'] for panel, t in targets() if panel == title)


def filled(expr, instance):
    """``expr`` as Grafana sends it: its variables replaced."""
    expr = expr.replace('$__rate_interval', RATE_INTERVAL).replace(
        '$instance', instance)
    assert '$' not in expr, 'a variable this test does not fill: ' + expr
    return expr


def api(path, **params):
    resp = requests.get(PROMETHEUS + '/api/v1/' + path, params=params,
                        timeout=10)
    body = resp.json()
    assert resp.status_code == 200 and body['status'] == 'success', \
        '%s %r: %s %s' % (path, params, resp.status_code, body)
    return body['data']


def query(expr):
    return api('query', query=expr)['result']


def moving(result):
    """The series of a query's result that this traffic moved (collectd
    keeps exporting a counter that stopped: a rate of 0)."""
    return [s for s in result if float(s['value'][1]) > 0]


def saio_metrics(command):
    # the collectd backend whether or not a statsd_exporter is installed:
    # the exporter's histograms would make the timer panels' series
    return subprocess.run(
        [SAIO, 'metrics', command], env=dict(
            os.environ, SAIO_METRICS_BACKEND='collectd'),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope='module')
def prometheus(cluster):
    try:
        started = saio_metrics('start')
        assert started.returncode == 0, \
            'tools/saio metrics start:\n' + started.stdout
        yield PROMETHEUS
    finally:
        stopped = saio_metrics('stop')
        assert stopped.returncode == 0, \
            'tools/saio metrics stop:\n' + stopped.stdout


def cache_traffic(client, names):  # noqa: F811
    """A write and reads through each proxy with Mass (``names``: {proxy:
    the objects written through it}; each is read through the proxy that
    wrote it, whose encryption it has): a new object (a miss, stored) read
    again until a hit, and the earlier ones (hits)."""
    for proxy in PROXIES:
        written = names.setdefault(proxy, [])
        name = 'm-%s' % uuid.uuid4().hex[:8]
        assert client.request('PUT', proxy, name,
                              data=b'metrics').status_code == 201
        written.append(name)
        reads(client, proxy, written[-5:])


def reads(client, proxy, names):  # noqa: F811
    for name in names:
        for _ in range(3):
            resp = client.request('GET', proxy, name)
            assert resp.status_code == 200
            if resp.headers.get('X-Mass-Cache') == 'hit':
                break


def test_dashboard_queries_and_alert_rules(prometheus, client):  # noqa: F811
    until(lambda: [t for t in api('targets')['activeTargets']
                   if t['health'] == 'up'], 30,
          'Prometheus scrapes collectd')

    # timers as Mass sends them (no request of this traffic waits for a
    # slot, and the SAIO's object servers send no group-commit timers),
    # to the chain's statsd listener; first, so that the queries below
    # follow the traffic closely (its rates are over a minute)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        def timers():
            for packet in COLLECTD_TIMERS:
                sock.sendto(packet.encode(), STATSD)
            return all(
                {s['metric'].get('quantile') for s in query(
                    '%s{%s}' % (name, ','.join(
                        '%s="%s"' % kv for kv in labels.items())))}
                >= {'0.5', '0.99'}
                for name, labels in COLLECTD_TIMERS.values())
        until(timers, 60, "collectd's quantiles of the timers", interval=1)
    finally:
        sock.close()

    # Traffic until every panel that it feeds has data: a counter's first
    # sample is its start, so rate() needs it to move after two scrapes.
    names = {}

    def shown():
        cache_traffic(client, names)
        return all(moving(query(filled(target['expr'], '.*')))
                   for title, target in targets()
                   if fed(title, target)) and ours()

    def ours():
        # this tenant's traffic, not another's (its class: pinned read)
        busiest = query(filled(
            expr_of('Busiest tenants (requests per second)'), '.*'))
        classes = query(filled(
            expr_of('Requests per second by workload class'), '.*'))
        return client.account in {
            s['metric'].get('tenant') for s in moving(busiest)} and \
            'read' in {s['metric'].get('class') for s in moving(classes)}
    until(shown, 120, 'data for the panels fed by a cache tenant',
          interval=1)

    # the node picker: label_values({__name__=~"mass_.+"}, instance) over
    # the dashboard's time range (not an earlier run's nodes)
    instances = api('label/instance/values', start=time.time() - 300,
                    **{'match[]': '{__name__=~"mass_.+"}'})
    assert instances, 'no Mass series has an instance label'

    # every query, for every node and for All (Grafana's allValue)
    with_data = set()
    for title, target in targets():
        for instance in ['.*'] + instances:
            result = query(filled(target['expr'], instance))
            if fed(title, target):
                assert moving(result), '%s (%s, instance %s): no data' % (
                    title, target['legendFormat'], instance)
            if result:
                with_data.add(target['expr'])
    assert ours()

    # the timer panels: statsd_exporter's series only, so empty here
    timer_exprs = [t['expr'] for _, t in targets()
                   if any(name in t['expr'] for name in EXPORTER_ONLY)]
    assert len(timer_exprs) == 4, timer_exprs
    assert not with_data.intersection(timer_exprs)
    for name in EXPORTER_ONLY:
        assert query(name) == []
    for name, labels in COLLECTD_TIMERS.values():
        for suffix in ('_avg', '_max', '_interval_count'):
            assert query(name + suffix), name + suffix

    # the alert rules: all loaded, evaluated, none failing
    with open(ALERTS) as f:
        expected = {rule['alert'] for group in yaml.safe_load(f)['groups']
                    for rule in group['rules']}

    def evaluated():
        rules = [rule for group in api('rules')['groups']
                 for rule in group['rules']]
        if any(rule['lastEvaluation'].startswith('0001') for rule in rules):
            return None
        return rules
    rules = until(evaluated, 30, 'Prometheus evaluates the alert rules')
    assert {rule['name'] for rule in rules} == expected
    for rule in rules:
        assert rule['health'] == 'ok' and not rule.get('lastError'), rule
