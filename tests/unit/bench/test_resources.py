"""Where the time went: CPU and device deltas from fake snapshots, the
tools/saio devices sampler, medians per mode and the tables."""
import os
import stat

import pytest

from mass_bench import bench, resources


def test_cpu_times_of_all_cores(tmp_path):
    path = tmp_path / 'stat'
    path.write_text('cpu  100 5 50 800 30 2 3 10 7 0\n'
                    'cpu0 50 2 25 400 15 1 1 5 3 0\nintr 1 2 3\n')
    assert resources.cpu_times(str(path)) == {
        'total': 1000, 'busy': 160, 'iowait': 30}
    assert resources.cpu_times()['total'] > 0  # this machine's


def test_cpu_share_between_snapshots():
    before = {'total': 1000, 'busy': 160, 'iowait': 30}
    after = {'total': 3000, 'busy': 1660, 'iowait': 230}
    assert resources.cpu_share(before, after) == {'busy_pct': 75.0,
                                                  'iowait_pct': 10.0}
    assert resources.cpu_share(None, after) is None
    assert resources.cpu_share(after, after) is None


def device(server, name, cls, reads, writes, busy_ms, passed_r, passed_w,
           limits=(0, 0), loop='/dev/loop0'):
    return {'server': server, 'device': name, 'class': cls, 'loop': loop,
            'reads': reads, 'writes': writes, 'busy_ms': busy_ms,
            'read_iops_limit': limits[0], 'write_iops_limit': limits[1],
            'throttle_passed_reads': passed_r,
            'throttle_passed_writes': passed_w}


BEFORE = [device(1, 'sdb1', 'ssd', 100, 100, 1000, 0, 0),
          device(2, 'sdb2', 'ssd', 100, 100, 1000, 0, 0),
          device(1, 'sdc1', 'hdd', 10, 10, 500, 20, 20, (150, 150)),
          device(2, 'sdc2', 'hdd', 10, 10, 500, 20, 20, (150, 150)),
          {'server': 3, 'device': 'sdc3', 'class': 'hdd', 'loop': None}]
AFTER = [device(1, 'sdb1', 'ssd', 600, 2100, 4000, 0, 0),
         device(2, 'sdb2', 'ssd', 400, 1100, 2000, 0, 0),
         device(1, 'sdc1', 'hdd', 10, 1410, 9500, 20, 1460, (150, 150)),
         device(2, 'sdc2', 'hdd', 110, 1210, 8500, 120, 1360, (150, 150)),
         {'server': 3, 'device': 'sdc3', 'class': 'hdd', 'loop': None}]


def test_device_rates_per_class():
    rates = resources.device_rates(BEFORE, AFTER, 10.0)
    assert rates == {
        'ssd': {'devices': 2, 'read_iops': 80.0, 'write_iops': 300.0,
                'busy_pct': 20.0, 'read_throttle': None,
                'write_throttle': None},
        'hdd': {'devices': 2, 'read_iops': 10.0, 'write_iops': 260.0,
                'busy_pct': 85.0,
                'read_throttle': {'iops': 10.0, 'limit': 300,
                                  'pct': pytest.approx(3.333, abs=0.001)},
                'write_throttle': {'iops': 278.0, 'limit': 300,
                                   'pct': pytest.approx(92.667,
                                                        abs=0.001)}}}


def test_device_rates_without_devices_or_after_a_reset():
    # the plain profile: tools/saio devices failed, nothing recorded
    assert resources.device_rates(None, AFTER, 10.0) is None
    assert resources.device_rates(BEFORE, None, 10.0) is None
    # a device set up again between the snapshots counts from zero
    reset = [device(1, 'sdb1', 'ssd', 5, 5, 10, 0, 0)]
    assert resources.device_rates(BEFORE[:1], reset, 10.0) == {}


def test_between_two_snapshots():
    sampler = resources.Sampler(
        devices=iter([BEFORE, AFTER]).__next__,
        cpu=iter([{'total': 0, 'busy': 0, 'iowait': 0},
                  {'total': 400, 'busy': 100, 'iowait': 200}]).__next__,
        clock=iter([100.0, 100.2, 110.0, 110.2]).__next__)
    where = resources.between(sampler.snapshot(), sampler.snapshot())
    assert where['seconds'] == pytest.approx(10.0)
    assert where['cpu'] == {'busy_pct': 25.0, 'iowait_pct': 50.0}
    assert where['devices']['hdd']['write_iops'] == pytest.approx(260.0)
    plain = resources.Sampler(
        cpu=iter([{'total': 0, 'busy': 0, 'iowait': 0},
                  {'total': 10, 'busy': 1, 'iowait': 0}]).__next__,
        clock=iter([0.0, 0.0, 5.0, 5.0]).__next__)
    where = resources.between(plain.snapshot(), plain.snapshot())
    assert where['devices'] is None and where['cpu'] is not None


def script(tmp_path, body):
    path = tmp_path / 'saio'
    path.write_text('#!/bin/sh\n' + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_saio_devices(tmp_path):
    saio = script(tmp_path, '[ "$1 $2" = "devices --json" ] || exit 9\n'
                  'echo \'[{"device": "sdb1", "class": "ssd"}]\'\n')
    assert resources.saio_devices(saio) == [{'device': 'sdb1',
                                             'class': 'ssd'}]
    # the plain profile: tools/saio devices dies
    plain = script(tmp_path, 'echo "saio: ERROR: devices: this SAIO\'s '
                   'profile is plain" >&2; exit 1\n')
    assert resources.saio_devices(plain) is None
    assert resources.saio_devices(script(tmp_path, 'echo nonsense\n')) \
        is None
    assert resources.saio_devices(os.path.join(str(tmp_path), 'none')) \
        is None
    assert resources.saio_devices(None) is None


def test_median_tree():
    assert resources.median_tree([
        {'cpu': {'busy_pct': 50.0}, 'devices': None},
        None,
        {'cpu': {'busy_pct': 70.0}, 'devices': {'hdd': {'pct': 90.0}}},
        {'cpu': {'busy_pct': 90.0}, 'devices': {'hdd': {'pct': 80.0}}},
    ]) == {'cpu': {'busy_pct': 70.0}, 'devices': {'hdd': {'pct': 85.0}}}
    assert resources.median_tree([None, None]) is None


def run(mode, control, where):
    return {'mode': mode, 'control': control, 'resources': where}


def test_where_the_time_went_per_mode():
    hetero = resources.between(
        {'time': 0.0, 'cpu': {'total': 0, 'busy': 0, 'iowait': 0},
         'devices': BEFORE},
        {'time': 10.0, 'cpu': {'total': 100, 'busy': 40, 'iowait': 30},
         'devices': AFTER})
    other = dict(hetero, cpu={'busy_pct': 60.0, 'iowait_pct': 20.0})
    runs = [run('default', False, hetero), run('default', True, other),
            run('mass', False, hetero), run('mass', False, other),
            run('mass', False, dict(other, devices=None)),
            run('static', False, None)]
    by_mode = bench.resource_summary(runs, ['default', 'static', 'mass'])
    assert list(by_mode) == ['default', 'mass', 'control']
    assert by_mode['mass']['cpu'] == {'busy_pct': 60.0, 'iowait_pct': 20.0}
    assert by_mode['mass']['devices']['hdd']['write_throttle']['pct'] == \
        pytest.approx(92.667, abs=0.001)
    table = resources.format_table(by_mode).splitlines()
    assert table[1].split() == [
        'mode', 'CPU', 'busy', 'iowait', 'hdd', 'r/s', 'hdd', 'w/s', 'hdd',
        'busy', 'hdd', 'r', 'limit', 'hdd', 'w', 'limit', 'ssd', 'r/s', 'ssd',
        'w/s', 'ssd', 'busy', 'ssd', 'r', 'limit', 'ssd', 'w', 'limit']
    assert table[2].split() == ['default', '40%', '30%', '10', '260', '85%',
                                '10/s=3%', '278/s=93%', '80', '300', '20%',
                                '-', '-']
    assert table[4].split()[0] == 'default*'
    plain = resources.format_table({'default': {
        'seconds': 10.0, 'cpu': {'busy_pct': 99.0, 'iowait_pct': 0.0},
        'devices': None}})
    assert plain.splitlines()[2].split() == ['default', '99%', '0%']
    assert 'devices: not sampled' in plain
    text = bench.format_summary({'summary': {}, 'resources': by_mode})
    assert 'where the time went' in text
