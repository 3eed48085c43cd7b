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
import configparser
import os

import pytest

from mass_bench import group_commit as gc
from swift_mass.obj.flush_sequence import FlushSequence

SWIFT_CONF = """\
# a comment the edit keeps
[swift-hash]
swift_hash_path_suffix = x

[storage-policy:0]
name = standard
default = yes

[storage-policy:2]
name = bulk
diskfile_module = egg:swift_mass#replication.group_commit
"""


def section_and_module(swift_conf, name):
    policy = gc.storage_policy(swift_conf, name)
    return gc.policy_section(policy), policy.diskfile_module


def test_the_policy_is_found_by_name_with_its_diskfile_module(tmp_path):
    conf = tmp_path / 'swift.conf'
    conf.write_text(SWIFT_CONF)
    assert section_and_module(str(conf), 'bulk') == (
        'storage-policy:2', gc.GROUP_COMMIT_MODULE)
    # a policy that names none has Swift's own
    assert section_and_module(str(conf), 'standard') == (
        'storage-policy:0', gc.SWIFT_MODULE)
    with pytest.raises(ValueError, match="'fast'"):
        gc.storage_policy(str(conf), 'fast')


def test_set_diskfile_changes_one_option_and_keeps_the_rest(tmp_path):
    conf = tmp_path / 'swift.conf'
    conf.write_text(SWIFT_CONF)
    gc.set_diskfile(str(conf), 'storage-policy:2', gc.SWIFT_MODULE)
    parser = configparser.ConfigParser()
    parser.read(str(conf))
    assert parser.get('storage-policy:2', 'diskfile_module') == \
        gc.SWIFT_MODULE
    assert parser.get('storage-policy:0', 'name') == 'standard'
    assert conf.read_text().startswith('# a comment the edit keeps')


def test_flushes_begun_reads_the_sequences_of_every_process(tmp_path):
    # the real FlushSequence writes what the benchmark reads
    sequence = FlushSequence(str(tmp_path / 'mass-group-commit-7-2'))
    try:
        for _ in range(3):
            sequence.flush(sequence.mark(), lambda: None)
    finally:
        sequence.close()
    assert gc.flushes_begun(str(tmp_path / 'mass-group-commit-*')) == {
        str(tmp_path / 'mass-group-commit-7-2'): 3}
    # a sequence file not yet written counts nothing
    open(str(tmp_path / 'mass-group-commit-7-4'), 'w').close()
    assert len(gc.flushes_begun(str(tmp_path / 'mass-group-commit-*'))) \
        == 1


def served(reads, writes, syncs, pid=7):
    return {'model_reads': reads, 'model_writes': writes,
            'model_syncs': syncs, 'model_pid': pid, 'iops_budget': 35}


def test_only_modelled_hdd_devices_count():
    rows = [
        dict(served(1, 5, 2), server=1, device='sdc1', **{'class': 'hdd'}),
        {'server': 1, 'device': 'sdb1', 'class': 'ssd', 'reads': 9},
        {'server': 2, 'device': 'sdc2', 'class': 'hdd'},  # no model
    ]
    assert list(gc.hdd_served(rows)) == [(1, 'sdc1')]
    assert gc.hdd_served(None) == {}


def test_served_between_leaves_out_a_restarted_model():
    before = {(1, 'sdc1'): served(1, 5, 2), (2, 'sdc2'): served(0, 0, 0)}
    after = {(1, 'sdc1'): served(3, 35, 12),
             (2, 'sdc2'): served(9, 9, 9, pid=8)}
    assert gc.served_between(before, after) == [
        {'reads': 2, 'writes': 30, 'syncs': 10}]


def test_costs_are_per_acknowledged_replica_write():
    devices = [{'reads': 2, 'writes': 30, 'syncs': 10},
               {'reads': 0, 'writes': 30, 'syncs': 14}]
    figures = gc.costs(acked=10, replicas=3, seconds=5.0, devices=devices,
                       syncfs=12)
    assert figures == {'ops_per_s': 2.0, 'hdd_ios': 86 / 30.0,
                       'hdd_writes': 2.0, 'hdd_flushes': 0.8,
                       'syncfs': 0.4}
    # nothing acknowledged: nothing to divide by
    assert set(gc.costs(0, 3, 5.0, devices, 0).values()) == {None}


def test_compare_takes_each_cycle_against_its_own_swift_run():
    runs = []
    for cycle, (base, other, control) in enumerate(
            [(10.0, 15.0, 10.5), (8.0, 12.0, 7.6)]):
        for mode, ops in ((gc.BASE, base), ('group_commit', other),
                          (gc.CONTROL, control)):
            runs.append(dict(dict.fromkeys(gc.FIGURES, 1.0), mode=mode,
                             cycle=cycle, ops_per_s=ops, syncfs=None
                             if mode != 'group_commit' else 0.5))
    compared = gc.compare(runs, 2)
    assert compared['ops_per_s']['cycles'] == [1.5, 1.5]
    assert compared['ops_per_s']['control']['min'] == pytest.approx(0.95)
    assert compared['ops_per_s']['control']['max'] == pytest.approx(1.05)
    assert compared['ops_per_s']['verdict'] == 'difference'
    # Swift's own diskfile makes no syncfs: no ratio
    assert compared['syncfs'] is None
    table = gc.report(runs, compared)
    assert '| ops_per_s | x1.500 [1.500-1.500] | 0.950-1.050 | ' \
        'difference |' in table
    assert '| syncfs | - | | |' in table


@pytest.mark.parametrize('argv', [
    ['--clients', '0'], ['--cycles', '0'], ['--seconds', '0'],
    ['--warmup', '-1'], ['--settle', '-1']])
def test_bad_arguments_stop_with_the_allowed_values(argv, capsys):
    with pytest.raises(SystemExit):
        gc.parse_args(argv)
    assert 'at least' in capsys.readouterr().err


def test_the_command_runs_this_module():
    tool = os.path.join(gc.ROOT, 'tools', 'bench-group-commit')
    assert os.access(tool, os.X_OK)
    with open(tool) as fp:
        assert "run_module('mass_bench.group_commit'" in fp.read()
