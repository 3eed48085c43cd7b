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
"""tools/saio.d/devices.py, the rows of ``tools/saio devices``, on a fake
/sys/block and fake models: the HDD-class devices' shared budget and the
JSON keys the benchmark reads."""
import json
import os

from tests.unit.tools import saio_helper

devices = saio_helper('devices')

MODEL = ('model fuse-fifo\npid 4242\niops 150\nbps 157286400\nreads 10\n'
         'read_bytes 40960\nwrites 20\nwrite_bytes 81920\nsyncs 5\n'
         'fallocs 0\nerrors 0\nsync_error 0\nwait_s 1.250\n')
# reads, writes, busy ms and flushes at fields 1, 5, 10 and 16
STAT = '7 0 56 1 9 0 72 2 0 30 3 0 0 0 0 4 1\n'
# the keys mass_bench/resources.py reads of every attached row
BENCH_KEYS = {'server', 'device', 'class', 'loop', 'reads', 'writes',
              'busy_ms', 'throttle_passed_reads', 'throttle_passed_writes',
              'read_iops_limit', 'write_iops_limit'}


def fake_sys(tmp_path, *loops):
    for loop in loops:
        os.makedirs(str(tmp_path / loop))
        (tmp_path / loop / 'stat').write_text(STAT)
    return str(tmp_path)


def rows(tmp_path, specs, attached, models):
    return devices.device_rows(
        specs, find_loop=attached.get,
        model_reader=lambda d: devices.parse_model(models[d])
        if d in models else None,
        sys_block=fake_sys(tmp_path, 'loop1', 'loop2'))


def test_parse_model():
    model = devices.parse_model(MODEL)
    assert model['model'] == 'fuse-fifo' and model['iops'] == 150
    assert model['bps'] == 157286400 and model['wait_s'] == 1.25
    assert model['syncs'] == 5 and model['pid'] == 4242
    assert devices.parse_model('iops 142.5\nmodel fuse-fifo\n')['iops'] \
        == 142.5
    # not a model's control file
    assert devices.parse_model('') is None
    assert devices.parse_model('reads 3\n') is None


def test_an_hdd_device_reports_its_models_shared_budget(tmp_path):
    found = rows(tmp_path, [
        '1:sdb1:ssd:/srv/swift-devices/sdb1.img:',
        '1:sdc1:hdd:/srv/swift-devices/sdc1.img:/srv/swift-devices/fuse/'
        'sdc1'], {
        '/srv/swift-devices/sdb1.img': '/dev/loop1',
        # the HDD-class loop device is on the model's file
        '/srv/swift-devices/fuse/sdc1/sdc1.img': '/dev/loop2'},
        {'/srv/swift-devices/fuse/sdc1': MODEL})
    ssd, hdd = found
    assert BENCH_KEYS <= set(ssd) and BENCH_KEYS <= set(hdd)
    assert ssd['model'] == 'none' and ssd['iops_budget'] is None
    assert (ssd['read_iops_limit'], ssd['write_iops_limit']) == (0, 0)
    assert hdd['model'] == 'fuse-fifo' and hdd['model_alive']
    assert hdd['iops_budget'] == 150 and hdd['model_pid'] == 4242
    # one budget, not one per direction: both limits are it
    assert (hdd['read_iops_limit'], hdd['write_iops_limit']) == (150, 150)
    # what the block layer counted
    assert (hdd['reads'], hdd['writes'], hdd['busy_ms'],
            hdd['flushes']) == (7, 9, 30, 4)
    assert (hdd['throttle_passed_reads'],
            hdd['throttle_passed_writes']) == (7, 9)
    assert (hdd['model_reads'], hdd['model_writes'],
            hdd['model_syncs']) == (10, 20, 5)
    json.dumps(found)
    text = devices.table(found)
    assert '150 IOPS' in text and 'fuse-fifo' in text
    assert '150 MiB/s' in text


def test_a_dead_model_and_a_detached_device(tmp_path):
    dead, detached = rows(tmp_path, [
        '2:sdc2:hdd:/i/sdc2.img:/f/sdc2', '3:sdc3:hdd:/i/sdc3.img:/f/sdc3'],
        {'/f/sdc2/sdc2.img': '/dev/loop1'}, {})
    assert dead['model_alive'] is False and dead['iops_budget'] is None
    assert dead['reads'] == 7  # the block layer still counts
    assert detached['loop'] is None and 'reads' not in detached
    text = devices.table([dead, detached])
    assert 'DEAD' in text and 'DETACHED' in text


def test_loop_of_finds_a_loop_device_whose_file_the_kernel_calls_deleted(
        tmp_path):
    for name, backing in (('loop3', '/srv/swift-devices/sdb1.img'),
                          ('loop4', '/srv/swift-devices/fuse/sdc1/sdc1.img'
                           ' (deleted)'),
                          ('loop5', '/elsewhere/sdc1.img')):
        os.makedirs(str(tmp_path / name / 'loop'))
        (tmp_path / name / 'loop' / 'backing_file').write_text(
            backing + '\n')
    os.makedirs(str(tmp_path / 'vda'))  # not a loop device
    find = lambda path: devices.loop_of(path, str(tmp_path))  # noqa: E731
    assert find('/srv/swift-devices/sdb1.img') == '/dev/loop3'
    # its model's daemon died: the FUSE file is "deleted"
    assert find('/srv/swift-devices/fuse/sdc1/sdc1.img') == '/dev/loop4'
    assert find('/srv/swift-devices/sdc1.img') is None
