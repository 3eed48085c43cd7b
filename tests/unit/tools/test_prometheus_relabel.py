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
"""etc/prometheus-collectd-relabel.yml (tools/prometheus-relabel): current
with the statsd_exporter mapping, and, applied as Prometheus applies
metric_relabel_configs to the series collectd exports, giving every name
Mass sends the metric and labels the exporter gives it."""
import importlib.machinery
import importlib.util
import os
import re

import pytest
import yaml

from tests.unit.test_metrics_mapping import LEGACY, mapped

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))


def load_tool():
    path = os.path.join(ROOT, 'tools', 'prometheus-relabel')
    loader = importlib.machinery.SourceFileLoader('prometheus_relabel', path)
    spec = importlib.util.spec_from_loader('prometheus_relabel', loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


tool = load_tool()


def configs():
    with open(tool.RELABEL) as f:
        return yaml.safe_load(f)['metric_relabel_configs']


def relabel(labels, rules):
    """Prometheus's metric relabelling (replace and drop) of one series:
    its labels afterwards, or None if dropped.  The regex is anchored;
    ``${n}`` takes a group; an empty value removes the label."""
    labels = dict(labels)
    for rule in rules:
        value = rule.get('separator', ';').join(
            labels.get(name, '') for name in rule['source_labels'])
        match = re.fullmatch(rule['regex'], value)
        if rule.get('action', 'replace') == 'drop':
            if match:
                return None
            continue
        if not match:
            continue
        new = re.sub(r'\$\{(\d+)\}', lambda m: match.group(
            int(m.group(1))) or '', rule['replacement'])
        if new:
            labels[rule['target_label']] = new
        else:
            labels.pop(rule['target_label'], None)
    return labels


def series(name, labels):
    return dict(labels, __name__=name)


def test_the_file_is_what_the_mapping_gives():
    with open(tool.MAPPING) as f:
        mapping = yaml.safe_load(f)
    with open(tool.RELABEL) as f:
        assert f.read() == tool.render(mapping)
    assert tool.main(['--check']) == 0


COUNTERS = [(name, metric, labels) for name, metric, labels in LEGACY
            if not metric.endswith(tool.TIMER_SUFFIXES)]
TIMERS = [(name, metric, labels) for name, metric, labels in LEGACY
          if metric.endswith(tool.TIMER_SUFFIXES)]


@pytest.mark.parametrize('name,metric,labels', COUNTERS)
@pytest.mark.parametrize('prefix', ['', 'proxy-server', 'swift.node-1'])
def test_a_counter_is_named_as_the_exporter_names_it(
        prefix, name, metric, labels):
    sent = '.'.join(filter(None, [prefix, name]))
    want_name, want_labels = mapped(sent)
    got = relabel(series(tool.COUNTER, {'statsd': sent,
                                        'instance': 'node1'}), configs())
    want = dict({k: v for k, v in want_labels.items() if v},
                __name__=want_name, instance='node1')
    assert got == want


@pytest.mark.parametrize('name,metric,labels', TIMERS)
@pytest.mark.parametrize('prefix', ['', 'swift.node-1'])
def test_a_timer_gives_its_quantiles_average_maximum_and_count(
        prefix, name, metric, labels):
    sent = '.'.join(filter(None, [prefix, name]))
    want_name, want_labels = mapped(sent)
    base = {k: v for k, v in want_labels.items() if v}
    cases = [
        (tool.LATENCY, '-percentile-50', dict(base, __name__=want_name,
                                              quantile='0.5')),
        (tool.LATENCY, '-percentile-99', dict(base, __name__=want_name,
                                              quantile='0.99')),
        (tool.LATENCY, '-average', dict(base, __name__=want_name + '_avg')),
        (tool.LATENCY, '-upper', dict(base, __name__=want_name + '_max')),
        (tool.GAUGE, '-count', dict(base, __name__=want_name +
                                    '_interval_count')),
    ]
    for family, suffix, want in cases:
        got = relabel(series(family, {'statsd': sent + suffix}), configs())
        assert got == want, suffix


@pytest.mark.parametrize('family,name', [
    (tool.COUNTER, 'proxy-server.object.GET.200'),
    (tool.LATENCY, 'object-server.PUT.timing-average'),
    # a labeled metric in graphite form: an opaque name to collectd
    (tool.COUNTER, 'swift_mass_cache;class=read;result=hit'),
])
def test_other_series_are_left_alone(family, name):
    before = series(family, {'statsd': name})
    assert relabel(before, configs()) == before


def test_collectds_per_interval_counter_copies_are_dropped():
    assert relabel(series('collectd_statsd_count', {'statsd': 'mass.routed'}),
                   configs()) is None


def test_a_lower_timer_figure_is_not_renamed():
    # -lower and -sum are left as collectd gives them: the dashboard and
    # the docs use the quantiles, the average, the maximum and the count
    before = series(tool.LATENCY, {'statsd': 'mass_queue.queue.wait.5-lower'})
    assert relabel(before, configs()) == before


def test_percentiles_are_those_the_saio_collectd_computes():
    # a percentile collectd does not compute gives no quantile; one the
    # relabels do not know keeps collectd's name
    with open(os.path.join(ROOT, 'tools', 'saio.d', 'collectd.conf.in')) as f:
        configured = set(re.findall(r'^\s*TimerPercentile\s+(\S+)\s*$',
                                    f.read(), re.M))
    assert configured == {p for p, _ in tool.PERCENTILES}
