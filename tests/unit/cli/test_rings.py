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
"""swift-mass check-rings: its text, JSON and exit status over real rings
built in a temporary swift_dir."""
import json
import os

from swift_mass.cli import main as cli
from swift_mass.devices import rings
from tests.unit.devices.test_rings import SERVERS, build, swift_conf
# the SAIO's layout of rings
from tests.unit.devices.test_rings import saio  # noqa: F401


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_text_and_exit_status(saio, capsys):  # noqa: F811
    status, out, _ = run(capsys, 'check-rings', '--swift-dir', saio)
    assert status == 0
    assert 'policy 1 fast (replication)' in out
    assert 'policy 0 standard (replication, default)' in out
    assert out.count('WARNING: ') == 2
    assert '  127.0.0.3        sdb3' in out
    status, _, _ = run(capsys, 'check-rings', '--swift-dir', saio,
                       '--strict')
    assert status == 1


def test_cli_json(saio, capsys):  # noqa: F811
    status, out, _ = run(capsys, '--json', 'check-rings', '--swift-dir',
                         saio)
    assert status == 0
    result = json.loads(out)
    assert result == json.loads(json.dumps(rings.report(saio)))
    assert result['servers'] == SERVERS


def test_cli_errors(saio, tmp_path, capsys):  # noqa: F811
    os.unlink(os.path.join(saio, 'object-1.ring.gz'))
    status, out, _ = run(capsys, 'check-rings', '--swift-dir', saio)
    assert status == 1
    assert 'ERROR: fast: cannot read ' in out
    status, _, err = run(capsys, 'check-rings', '--swift-dir',
                         str(tmp_path / 'none'))
    assert status == 1
    assert 'swift.conf' in err


def test_cli_strict_passes_a_clean_cluster(tmp_path, capsys):
    d = str(tmp_path)
    swift_conf(d, [(0, 'standard', {'default': 'yes'})])
    build(d, 'object', 3, [(ip, 'sdb', 1.0) for ip in SERVERS])
    status, out, _ = run(capsys, 'check-rings', '--swift-dir', d,
                         '--strict')
    assert status == 0 and 'WARNING' not in out
