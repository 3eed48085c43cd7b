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
"""etc/prometheus-mass-alerts.yml reads only series Mass's metrics become
(the statsd_exporter mapping's names, with the label values Mass sends)
and the gauges of ``swift-mass status --textfile``; each rule says how
bad it is and what to do.  (promtool checks its PromQL where Prometheus is
installed: tests/functional.)"""
import os
import re

import yaml

from swift_mass.cli import control
from tests.unit.test_metrics_mapping import LEGACY, load

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
RULES = os.path.join(ROOT, 'etc', 'prometheus-mass-alerts.yml')


def rules():
    with open(RULES) as f:
        return [rule for group in yaml.safe_load(f)['groups']
                for rule in group['rules']]


def test_every_rule_reads_series_mass_makes():
    known = {entry['name'] for entry in load()['mappings']} | {
        name for name, _ in control.STATUS_GAUGES}
    for rule in rules():
        expr = rule['expr']
        names = set(re.findall(r'\b(mass_[a-z_]+)\b', expr))
        assert names and names <= known, (rule['alert'], names - known)
        for label, value in re.findall(r'(\w+)="([^"]*)"', expr):
            assert value in sent_values(label), (rule['alert'], label, value)


def sent_values(label):
    """The values of ``label`` in the names the mapping test sends, and
    the last part of each counter name the package's code counts (a
    quoted 'a.b' or 'b' passed to metrics.increment or a count)."""
    values = {labels[label] for _, _, labels in LEGACY if label in labels}
    for folder, _, files in os.walk(os.path.join(ROOT, 'swift_mass')):
        for name in files:
            if name.endswith('.py'):
                with open(os.path.join(folder, name)) as f:
                    values |= set(re.findall(
                        r"(?:increment\(\s*self\.logger,\s*|count\(env,\s*)"
                        r"'(?:[a-z_]+\.)?([a-z_]+)'", f.read()))
    return values


def test_every_rule_says_how_bad_and_what_to_do():
    seen = set()
    for rule in rules():
        assert rule['alert'].startswith('Mass') and rule['alert'] not in seen
        seen.add(rule['alert'])
        assert rule['labels']['severity'] in ('warning', 'critical')
        assert rule['annotations']['summary']
        assert rule['annotations']['description']
    assert {'MassNoLeader', 'MassStoreDown', 'MassQueueRefusing',
            'MassGenerationBumpFailed', 'MassRegistrationLapsed',
            'MassCacheUncovered'} <= seen
