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
"""swift-mass devices probe, classes and classify: their text, JSON and
exit status, over real rings in a temporary swift_dir."""
import json
import os

from swift_mass.cli import main as cli
# the hetero layout, its object servers configured
from tests.unit.devices.test_host import cluster  # noqa: F401


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_probe_for_real_then_classes_and_classify(
        cluster, capsys):  # noqa: F811
    # the object servers of 127.0.0.3 (their bind_ip: whataremyips takes
    # it as this host's) probed for real, briefly
    status, out, err = run(
        capsys, 'devices', 'probe', '--swift-dir', cluster,
        '--object-conf', os.path.join(cluster, 'object-server', '3.conf'),
        '--seconds', '0.05', '--max-bytes', '8192', '--json')
    assert (status, err) == (0, '')
    result = json.loads(out)
    assert [d['device'] for d in result['devices']] == [
        '127.0.0.3:6230/sdb3', '127.0.0.3:6236/sdc3']
    for d in result['devices']:
        assert d['iops'] > 0 and d['reads'] >= 1 and d['writes'] >= 1
        assert os.listdir(os.path.join(d['path'], 'tmp')) == []
    status, out, _ = run(capsys, 'devices', 'classes', '--swift-dir',
                         cluster)
    assert status == 0
    assert 'slow       0-1000 IOPS' in out and 'fast       1000- IOPS' in out
    assert '127.0.0.3:6230/sdb3' in out
    # classify again: a threshold above any device puts all in the slowest
    status, out, _ = run(capsys, 'devices', 'classify', '--swift-dir',
                         cluster, '--thresholds', '1e12', '--names',
                         'hdd,ssd', '--json')
    assert status == 0
    data = json.loads(out)
    assert data['counts'] == {'hdd': 2, 'ssd': 0}
    assert data['thresholds'] == [1e12]


def test_cli_probe_text_dry_run_and_errors(cluster, capsys):  # noqa: F811
    conf = os.path.join(cluster, 'object-server', '4.conf')
    status, out, _ = run(capsys, 'devices', 'probe', '--swift-dir', cluster,
                         '--object-conf', conf, '--dry-run')
    assert status == 0
    assert out.splitlines()[1].startswith('127.0.0.4:6240/sdb4')
    assert '(dry run)' in out
    status, _, err = run(capsys, 'devices', 'probe', '--swift-dir', cluster,
                         '--object-conf', conf, '--thresholds', '9,3')
    assert status == 1
    assert 'ValueError: --thresholds 9,3 is not valid; allowed: ' in err
    status, _, err = run(capsys, 'devices', 'classes', '--swift-dir',
                         cluster)
    assert status == 1 and 'does not exist: probe the devices first' in err
    status, out, _ = run(capsys, 'devices', 'probe', '--swift-dir', cluster,
                         '--devices', '/nonexistent', '--dry-run')
    # 127.0.0.1 is this host's by any count; its devices are not there
    assert status == 1
    assert 'ERROR: 127.0.0.1:6210/sdb1: not mounted: /nonexistent/sdb1' \
        in out
