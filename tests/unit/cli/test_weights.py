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
"""swift-mass weights plan and apply: W from --weights, a lookup table or
Mass's monitor, their text, JSON and exit status, on real RingBuilder
files in a temporary swift_dir."""
import json
import os
import time

import pytest

from swift_mass.cli import main as cli
from swift_mass.control import monitor
from swift_mass.devices import classes, lookup
from tests.unit.devices import hetero
from tests.unit.devices.test_weights import files, many, ring_weights
# the hetero layout's rings
from tests.unit.devices.test_weights import swift_dir  # noqa: F401
# the commands on a worker-local store in place of the proxies'
from tests.unit.cli.test_control import store  # noqa: F401


def probed(swift_dir):  # noqa: F811
    """The classes file of the layout: sdbN 8000 IOPS, sdcN 300."""
    classes.save_classes(
        os.path.join(swift_dir, classes.CLASSES_FILE),
        {hetero.key(n, k): {'read_iops': 1, 'write_iops': 1,
                            'iops': 8000 if k == 'b' else 300,
                            'method': 'direct'}
         for n in range(1, 5) for k in 'bc'})


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_plan_and_apply(swift_dir, capsys):  # noqa: F811
    probed(swift_dir)
    before = files(swift_dir)
    status, out, err = run(capsys, 'weights', 'plan', '--swift-dir',
                           swift_dir, '--ring', 'standard', '--weights',
                           '0.3,0.7', '--seed', '1')
    assert (status, err) == (0, '')
    assert files(swift_dir) == before
    lines = out.splitlines()
    assert lines[1] == 'W slow 0.3, fast 0.7 from --weights'
    assert 'fast             4     33.3%       51.7%    70.0%' in out
    assert '127.0.0.1:6210/sdb1        fast             0.50       0.78' \
        '       1.05' in out
    assert 'trial rebalance: ' in out and 'dry run: nothing written' in out
    status, out, _ = run(capsys, 'weights', 'apply', '--swift-dir',
                         swift_dir, '--ring', 'standard', '--weights',
                         '0.3,0.7', '--alpha', '1', '--json')
    assert status == 0
    result = json.loads(out)
    assert result['applied'] and result['reaches_target']
    assert ring_weights(swift_dir)[hetero.key(1, 'b')] == \
        pytest.approx(1.05)
    status, out, _ = run(capsys, 'weights', 'apply', '--swift-dir',
                         swift_dir, '--ring', 'standard', '--weights',
                         '0.3,0.7')
    assert status == 0
    assert 'weights at their target: nothing to change' in out


def test_cli_table_refusal_and_errors(
        swift_dir, tmp_path, capsys):  # noqa: F811
    probed(swift_dir)
    table = str(tmp_path / 'lookup.json')
    lookup.record_file(table, ['slow', 'fast'], 16, 0.9, (0.2, 0.8), 0.03,
                       0)
    status, out, _ = run(capsys, 'weights', 'plan', '--swift-dir',
                         swift_dir, '--ring', os.path.join(
                             swift_dir, 'object.builder'), '--table',
                         table, '--clients', '12', '--read-ratio', '0.95')
    assert status == 0
    assert 'W slow 0.2, fast 0.8 from %s: 16 clients, read ratio 0.9 ' \
        '(distance 0.254951, score 0.03)' % table in out
    # fast on two servers only: refused, exit 1
    classes.save_classes(os.path.join(swift_dir, classes.CLASSES_FILE), {
        hetero.key(n, 'c'): {'read_iops': 1, 'write_iops': 1,
                             'iops': 8000, 'method': 'direct'}
        for n in (1, 2)})
    status, out, _ = run(capsys, 'weights', 'apply', '--swift-dir',
                         swift_dir, '--ring', 'standard', '--weights',
                         '0.1,0.9', '--alpha', '1', '--seed', '1')
    assert status == 1
    assert 'REFUSED: after the step ' in out
    status, _, err = run(capsys, 'weights', 'plan', '--swift-dir',
                         swift_dir, '--ring', 'standard', '--weights',
                         '0.1,0.9', '--alpha', '2')
    assert status == 1 and '--alpha 2.0 is not valid' in err
    os.unlink(os.path.join(swift_dir, classes.CLASSES_FILE))
    status, _, err = run(capsys, 'weights', 'plan', '--swift-dir',
                         swift_dir, '--ring', 'standard', '--weights',
                         '0.1,0.9')
    assert status == 1 and 'probe the devices first' in err


def test_weights_plan_from_the_monitor_picks_the_nearest_workload(
        swift_dir, tmp_path, capsys, store):  # noqa: F811
    probed(swift_dir)
    table = str(tmp_path / 'lookup.json')
    lookup.record_file(table, ['slow', 'fast'], 4, 0.8, (0.5, 0.5), 0.01, 0)
    lookup.record_file(table, ['slow', 'fast'], 32, 0.8, (0.25, 0.75),
                       0.01, 0)
    # in the control loop's window: 1,000 reads and 250 writes of 1.4 s,
    # about 30 requests in flight at a time
    bucket = monitor.Window(5).bucket_of(time.time())
    store.add_counts_many([
        ('AUTH_a', bucket, many(monitor.request_counts(
            'GET', 200, 0, 4096, 1.4), 1000)),
        ('AUTH_b', bucket, many(monitor.request_counts(
            'PUT', 201, 4096, 0, 1.4), 250))], 600)
    status, out, err = run(capsys, '--conf', 'p.conf', '--json', 'weights',
                           'plan', '--ring', 'standard', '--swift-dir',
                           swift_dir, '--table', table, '--from-monitor')
    assert status == 0, err
    result = json.loads(out)
    live = result['source']['monitor']
    assert store.loaded == ['p.conf']
    assert (live['tenants'], live['reads'], live['writes'],
            live['read_ratio']) == (2, 1000, 250, 0.8)
    assert 25 <= live['n_clients'] <= 35, live
    assert result['source']['n_clients'] == 32
    assert result['weights'] == {'slow': 0.25, 'fast': 0.75}
    status, out, err = run(capsys, 'weights', 'plan', '--ring', 'standard',
                           '--swift-dir', swift_dir, '--table', table,
                           '--from-monitor', '--clients', '4')
    assert status == 1 and '--from-monitor takes the workload' in err
    status, out, err = run(capsys, 'weights', 'plan', '--ring', 'standard',
                           '--swift-dir', swift_dir, '--table', table,
                           '--from-monitor')
    assert 'live workload from Mass\'s monitor: ' in out, out
