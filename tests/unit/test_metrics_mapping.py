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
"""etc/statsd_exporter-mapping.yml against the names Mass sends.

statsd_exporter is not run here (nor anywhere in the tests yet: no
binary of it can be installed on the project's machines; docs/metrics.md):
its rules are regular expressions, tried in order, the first that
matches the whole name wins, and ``$n``/``${n}`` take the n-th group; that
is what this test applies, to every legacy name Mass sends, with and
without an operator's prefix."""
import functools
import json
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MAPPING = os.path.join(ROOT, 'etc', 'statsd_exporter-mapping.yml')


@functools.lru_cache()
def load():
    with open(MAPPING) as f:
        return yaml.safe_load(f)


def expand(template, match):
    def group(m):
        return match.group(int(m.group(1) or m.group(2))) or ''
    return re.sub(r'\$\{(\d+)\}|\$(\d+)', group, str(template))


def mapped(name):
    """(Prometheus name, labels) of a statsd name, or None: unmapped."""
    for rule in load()['mappings']:
        match = re.fullmatch(rule['match'], name)
        if match:
            return (expand(rule['name'], match),
                    {k: expand(v, match)
                     for k, v in (rule.get('labels') or {}).items()})
    return None


# (statsd name without a prefix, Prometheus name, labels)
LEGACY = [
    ('mass.cache.hit', 'mass_cache_total', {'result': 'hit'}),
    ('mass.cache.backend_errors', 'mass_cache_total',
     {'result': 'backend_errors'}),
    ('mass.merge.written_through', 'mass_merge_total',
     {'result': 'written_through'}),
    ('mass.routed', 'mass_routed_total', {}),
    ('mass.route_conflict', 'mass_route_conflicts_total', {}),
    ('mass.forged_tags', 'mass_forged_tags_total', {}),
    ('mass.urgent.lookup', 'mass_urgent_lookups_total', {}),
    ('mass.decisions', 'mass_decisions_total', {}),
    ('mass.tenant.AUTH_test.ops.GET', 'mass_tenant_requests_total',
     {'tenant': 'AUTH_test', 'method': 'GET'}),
    ('mass.tenant.AUTH_test.err.OTHER', 'mass_tenant_errors_total',
     {'tenant': 'AUTH_test', 'method': 'OTHER'}),
    ('mass.tenant.AUTH_t-1.bytes_out', 'mass_tenant_bytes_total',
     {'tenant': 'AUTH_t-1', 'direction': 'out'}),
    # a tenant named like a field is still a tenant
    ('mass.tenant.class.ops.PUT', 'mass_tenant_requests_total',
     {'tenant': 'class', 'method': 'PUT'}),
    ('mass.class.read.ops.HEAD', 'mass_class_requests_total',
     {'class': 'read', 'method': 'HEAD'}),
    ('mass.class.unknown.err.PUT', 'mass_class_errors_total',
     {'class': 'unknown', 'method': 'PUT'}),
    ('mass.class.write.bytes_in', 'mass_class_bytes_total',
     {'class': 'write', 'direction': 'in'}),
    ('mass.generations.epoch', 'mass_generations_events_total',
     {'server': 'proxy', 'event': 'epoch'}),
    ('mass_queue.priority.7', 'mass_queue_requests_by_priority_total',
     {'priority': '7'}),
    ('mass_queue.priority.background',
     'mass_queue_requests_by_priority_total', {'priority': 'background'}),
    ('mass_queue.class.mixed', 'mass_queue_requests_by_class_total',
     {'class': 'mixed'}),
    ('mass_queue.queue.wait.5', 'mass_queue_wait_seconds',
     {'priority': '5'}),
    ('mass_queue.queue.depth', 'mass_queue_depth_thousands', {}),
    ('mass_queue.queue.refused', 'mass_queue_refused_total', {}),
    ('mass_queue.queue.would_wait', 'mass_queue_would_wait_total', {}),
    ('mass_queue.queue.mode.isolated', 'mass_queue_events_total',
     {'event': 'mode.isolated'}),
    ('mass_queue.queue.slots.grow', 'mass_queue_events_total',
     {'event': 'slots.grow'}),
    ('mass_queue.queue.admitted_past_deadline', 'mass_queue_events_total',
     {'event': 'admitted_past_deadline'}),
    ('mass_queue.generations.registration_lapsed',
     'mass_generations_events_total',
     {'server': 'object', 'event': 'registration_lapsed'}),
    ('object-server.group_commit.flushes',
     'mass_group_commit_flushes_total', {'prefix': 'object-server'}),
    ('object-server.group_commit.writes', 'mass_group_commit_writes_total',
     {'prefix': 'object-server'}),
    ('object-server.group_commit.flush', 'mass_group_commit_flush_seconds',
     {'prefix': 'object-server'}),
]


@pytest.mark.parametrize('name,metric,labels', LEGACY)
@pytest.mark.parametrize('prefix', ['', 'proxy-server', 'swift.node-1'])
def test_legacy_names_map_to_labeled_series(prefix, name, metric, labels):
    sent = '%s.%s' % (prefix, name) if prefix else name
    want = dict({'prefix': prefix}, **labels)
    got = mapped(sent)
    assert got is not None, sent
    assert got[0] == metric
    # the group-commit names carry the object server's own prefix
    if name.startswith('object-server.'):
        want['prefix'] = '.'.join(filter(None, [prefix, 'object-server']))
    assert got[1] == want


@pytest.mark.parametrize('name,metric', [
    ('swift_mass_queue_wait_timing', 'swift_mass_queue_wait_seconds'),
    ('swift_mass_queue_depth', 'swift_mass_queue_depth_thousands'),
    ('swift_mass_group_commit_flush_timing',
     'swift_mass_group_commit_flush_seconds'),
])
def test_labeled_timers_become_histograms_in_seconds(name, metric):
    assert mapped(name) == (metric, {})


@pytest.mark.parametrize('name', [
    'swift_mass_cache', 'swift_mass_tenant_requests',
    'swift_mass_class_bytes_in', 'swift_mass_queue_requests',
    'swift_mass_decisions', 'swift_mass_group_commit_flushes',
    # Swift's own, and other middlewares' legacy names
    'proxy-server.object.GET.200.timing', 'object-server.PUT.timing',
    'tempauth.AUTH_.token_denied'])
def test_other_names_are_left_alone(name):
    assert mapped(name) is None


def test_one_label_set_per_name():
    # statsd_exporter refuses a name seen with two sets of label names
    seen = {}
    for rule in load()['mappings']:
        labels = frozenset(rule.get('labels') or ())
        assert seen.setdefault(rule['name'], labels) == labels, rule['name']


def test_every_rule_is_an_anchored_regex():
    mapping = load()
    assert mapping['defaults']['match_type'] == 'regex'
    for rule in mapping['mappings']:
        assert rule.get('match_type', 'regex') == 'regex'
        assert rule['match'].startswith('^') and \
            rule['match'].endswith('$'), rule['match']
        re.compile(rule['match'])


def test_the_dashboard_reads_only_mapped_series():
    with open(os.path.join(ROOT, 'etc', 'grafana-mass-dashboard.json')) as f:
        dashboard = json.load(f)
    names = {rule['name'] for rule in load()['mappings']}
    used = set()
    for panel in dashboard['panels']:
        for target in panel['targets']:
            for metric in re.findall(r'\b(mass_[a-z_]+)', target['expr']):
                used.add(re.sub(r'_(bucket|count|sum)$', '', metric)
                         if metric.endswith(('_bucket', '_count', '_sum'))
                         and metric.rsplit('_', 1)[0] in names else metric)
    assert used and used <= names, used - names
    # the node picker lists every node that sends Mass's metrics: a
    # proxy in observe mode sends no cache metric, an object server none
    # of the proxy's
    node = [v for v in dashboard['templating']['list']
            if v['name'] == 'instance'][0]
    assert node['definition'] == \
        'label_values({__name__=~"mass_.+"}, instance)'
    for panel in dashboard['panels']:
        for target in panel['targets']:
            assert 'instance=~"$instance"' in target['expr'], panel['title']
    titles = ' '.join(panel['title'] for panel in dashboard['panels'])
    for wanted in ('Cache hit ratio', 'workload class', 'Queue wait',
                   'Refused', 'flushes per write', 'decisions'):
        assert wanted in titles
