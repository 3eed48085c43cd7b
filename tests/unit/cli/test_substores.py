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
"""swift-mass substores plan and apply: the plan's text and JSON, the ring
built and its settings, in a temporary swift_dir."""
import json
import os

import pytest

from swift.common.ring import RingBuilder

from swift_mass.cli import main as cli
from swift_mass.devices import classes, rings
from tests.unit.devices import hetero
from tests.unit.devices.test_rings import SERVERS, swift_conf


@pytest.fixture
def swift_dir(tmp_path):
    """The hetero layout with a third policy, ssd, without a ring yet;
    the classes file: sdbN fast, sdcN slow."""
    d = hetero.cluster(tmp_path)
    swift_conf(d, [(0, 'standard', {'default': 'yes'}), (1, 'fast', {}),
                   (2, 'ssd', {})])
    classes.save_classes(
        os.path.join(d, classes.CLASSES_FILE),
        {hetero.key(n, k): {'read_iops': 1, 'write_iops': 1,
                            'iops': 8000 if k == 'b' else 300,
                            'method': 'direct'}
         for n in range(1, 5) for k in 'bc'})
    return d


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_plan_then_apply(swift_dir, capsys):
    args = ('--swift-dir', swift_dir, '--name', 'ssd', '--classes', 'fast',
            '--part-power', '6', '--seed', '1')
    status, out, err = run(capsys, 'substores', 'plan', *args)
    assert (status, err) == (0, '')
    assert out.splitlines()[:4] == [
        'substore ssd (policy 2): 3 replicas, 2^6 partitions, classes fast',
        'part power 6 from --part-power, min_part_hours 0 from %s'
        % os.path.join(swift_dir, 'object.builder'),
        '4 devices on 4 servers:',
        '  127.0.0.1:6210/sdb1        fast       region 1 zone 1 weight 1']
    assert 'dry run: nothing written (substores apply builds %s' % \
        os.path.join(swift_dir, 'object-2.builder') in out
    assert not os.path.exists(os.path.join(swift_dir, 'object-2.builder'))
    status, out, _ = run(capsys, 'substores', 'apply', '--json', *args)
    assert status == 0
    result = json.loads(out)
    assert sorted(result['built']['servers']) == SERVERS
    # check-rings finds the new substore spanning every server
    report = rings.report(swift_dir)
    assert report['errors'] == []
    assert not [w for w in report['warnings'] if w.startswith('ssd:')]
    status, out, _ = run(capsys, 'substores', 'plan', *args)
    assert 'apply would refuse: %s' % os.path.join(
        swift_dir, 'object-2.builder') in out
    status, _, err = run(capsys, 'substores', 'apply', *args)
    assert status == 1 and 'object-2.builder exists' in err


def test_cli_refusals(swift_dir, capsys):
    status, _, err = run(capsys, 'substores', 'plan', '--swift-dir',
                         swift_dir, '--name', 'gold', '--classes', 'fast')
    assert status == 1
    assert ('--name gold is not valid; allowed: a storage policy of %s '
            '(standard, fast, ssd): add [storage-policy:3] name = gold '
            'there first' % os.path.join(swift_dir, 'swift.conf')) in err
    status, _, err = run(capsys, 'substores', 'apply', '--swift-dir',
                         swift_dir, '--name', 'ssd', '--classes', 'fast',
                         '--exclude', hetero.key(2, 'b'))
    assert status == 1 and 'leaves out 127.0.0.2' in err
    assert not os.path.exists(os.path.join(swift_dir, 'object-2.builder'))
    status, out, _ = run(capsys, 'substores', 'apply', '--swift-dir',
                         swift_dir, '--name', 'ssd', '--classes', 'fast',
                         '--exclude', hetero.key(2, 'b'), '--force',
                         '--part-power', '6')
    assert status == 0
    assert 'WARNING: the substore leaves out 127.0.0.2' in out
    assert '3 devices on 3 servers' in out
    # with an EC policy named
    swift_conf(swift_dir, [(0, 'standard', {'default': 'yes'}),
                           (1, 'fast', {}), (2, 'ssd', {}),
                           (3, 'ec', {'policy_type': 'erasure_coding',
                                      'ec_type': 'liberasurecode_rs_vand',
                                      'ec_num_data_fragments': 2,
                                      'ec_num_parity_fragments': 1})])
    status, _, err = run(capsys, 'substores', 'plan', '--swift-dir',
                         swift_dir, '--name', 'ec', '--classes', 'fast')
    assert status == 1
    assert 'a erasure_coding policy; allowed: a replication policy' in err


def built_settings(swift_dir):
    builder = RingBuilder.load(os.path.join(swift_dir, 'object-2.builder'))
    return builder.part_power, builder.min_part_hours


def test_apply_takes_part_power_and_min_part_hours_from_the_cluster(
        swift_dir, capsys):
    # it built every substore with the SAIO's part power 10 and
    # min_part_hours 1, whatever the cluster's rings had
    reference = os.path.join(swift_dir, 'object.builder')
    assert (RingBuilder.load(reference).part_power,
            RingBuilder.load(reference).min_part_hours) == (8, 0)
    args = ('--swift-dir', swift_dir, '--name', 'ssd', '--classes', 'fast',
            '--seed', '1')
    status, out, _ = run(capsys, 'substores', 'plan', *args)
    assert status == 0
    assert out.splitlines()[1] == (
        'part power 8 from %s, min_part_hours 0 from %s' % (reference,
                                                            reference))
    status, out, _ = run(capsys, 'substores', 'apply', '--json', *args)
    assert status == 0
    result = json.loads(out)
    assert (result['part_power'], result['min_part_hours']) == (8, 0)
    assert result['settings_from'] == {'part_power': reference,
                                       'min_part_hours': reference}
    assert built_settings(swift_dir) == (8, 0)


def test_options_win_over_the_clusters_builder(swift_dir, capsys):
    status, out, _ = run(capsys, 'substores', 'apply', '--swift-dir',
                         swift_dir, '--name', 'ssd', '--classes', 'fast',
                         '--part-power', '6', '--seed', '1')
    assert status == 0
    assert out.splitlines()[1] == (
        'part power 6 from --part-power, min_part_hours 0 from %s'
        % os.path.join(swift_dir, 'object.builder'))
    assert built_settings(swift_dir) == (6, 0)


def test_without_a_builder_apply_needs_both_options(swift_dir, capsys):
    for name in os.listdir(swift_dir):
        if name.endswith('.builder'):
            os.unlink(os.path.join(swift_dir, name))
    args = ('--swift-dir', swift_dir, '--name', 'ssd', '--classes', 'fast',
            '--seed', '1')
    status, out, _ = run(capsys, 'substores', 'plan', *args)
    assert status == 0
    assert out.splitlines()[1] == (
        'part power 10 and min_part_hours 1: placeholders (no '
        '--part-power, --min-part-hours, nor a builder of the cluster\'s '
        'rings in %s to take them from): apply needs them given'
        % swift_dir)
    status, out, _ = run(capsys, '--json', 'substores', 'plan', *args)
    assert json.loads(out)['settings_from'] == {
        'part_power': None, 'min_part_hours': None}
    for given, missing in (
            ((), 'the part power and min_part_hours from: give '
             '--part-power and --min-part-hours'),
            (('--part-power', '6'), 'min_part_hours from: give '
             '--min-part-hours'),
            (('--min-part-hours', '2'), 'the part power from: give '
             '--part-power')):
        status, out, err = run(capsys, 'substores', 'apply', *(
            args + given))
        assert (status, out) == (1, '')
        assert err.startswith(
            'swift-mass: ValueError: no builder of the cluster\'s rings in '
            '%s to take %s' % (swift_dir, missing))
        assert not os.path.exists(os.path.join(swift_dir,
                                               'object-2.builder'))
    status, out, _ = run(capsys, 'substores', 'apply', '--part-power', '6',
                         '--min-part-hours', '2', *args)
    assert status == 0
    assert out.splitlines()[1] == ('part power 6 from --part-power, '
                                   'min_part_hours 2 from --min-part-hours')
    assert built_settings(swift_dir) == (6, 2)
