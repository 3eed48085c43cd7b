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
"""Where the time went: CPU and device deltas from fake snapshots, the
tools/saio devices sampler, medians per mode and the tables."""
import os
import shutil
import stat
import time

import pytest

from mass_bench import report, resources, resources_report, summary


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
                'write_throttle': None, 'budget': None, 'model_iops': None},
        'hdd': {'devices': 2, 'read_iops': 10.0, 'write_iops': 260.0,
                'busy_pct': 85.0,
                'read_throttle': {'iops': 10.0, 'limit': 300,
                                  'pct': pytest.approx(3.333, abs=0.001)},
                'write_throttle': {'iops': 278.0, 'limit': 300,
                                   'pct': pytest.approx(92.667,
                                                        abs=0.001)},
                'budget': None, 'model_iops': None}}


def modelled(row, pid, reads, writes, syncs, budget=150):
    return dict(row, iops_budget=budget, model_pid=pid, model_reads=reads,
                model_writes=writes, model_syncs=syncs)


def test_a_device_models_one_budget_counts_every_io_it_served():
    before = [modelled(BEFORE[2], 7, 100, 50, 10),
              modelled(BEFORE[3], 8, 0, 0, 0)]
    after = [modelled(AFTER[2], 7, 700, 450, 110),
             # its daemon was restarted: its counts start again
             modelled(AFTER[3], 9, 5, 5, 5)]
    budget = resources.device_rates(before, after, 10.0)['hdd']['budget']
    assert budget == {'iops': 110.0, 'limit': 150,
                      'pct': pytest.approx(73.333, abs=0.001)}


def test_a_device_models_reads_writes_and_syncs_are_kept_apart():
    before = [BEFORE[0], modelled(BEFORE[2], 7, 100, 50, 10),
              modelled(BEFORE[3], 8, 0, 0, 0)]
    after = [AFTER[0], modelled(AFTER[2], 7, 700, 450, 110),
             # restarted: left out, as from the budget
             modelled(AFTER[3], 9, 5, 5, 5)]
    rates = resources.device_rates(before, after, 10.0)
    # sdc1's 600 reads, 400 writes and 100 syncs over 10 s: the budget's
    # 110 I/Os a second
    assert rates['hdd']['model_iops'] == {'reads': 60.0, 'writes': 40.0,
                                          'syncs': 10.0}
    assert rates['ssd']['model_iops'] is None


def test_model_deltas_only_of_one_daemon():
    was = modelled(BEFORE[2], 7, 100, 50, 10)
    assert resources.model_deltas(was, modelled(AFTER[2], 7, 700, 450,
                                                110)) == {
        'reads': 600, 'writes': 400, 'syncs': 100}
    assert sum(resources.model_deltas(was, modelled(
        AFTER[2], 7, 700, 450, 110)).values()) == 1100
    # another daemon, or a device without a model
    assert resources.model_deltas(was, modelled(AFTER[2], 9, 700, 450,
                                                110)) is None
    assert resources.model_deltas(BEFORE[2], AFTER[2]) is None
    # a count that went back
    assert resources.model_deltas(was, modelled(AFTER[2], 7, 700, 40,
                                                110)) is None


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
    by_mode = summary.resource_summary(runs, ['default', 'static', 'mass'])
    assert list(by_mode) == ['default', 'mass', 'control']
    assert by_mode['mass']['cpu'] == {'busy_pct': 60.0, 'iowait_pct': 20.0}
    assert by_mode['mass']['devices']['hdd']['write_throttle']['pct'] == \
        pytest.approx(92.667, abs=0.001)
    table = resources_report.format_table(by_mode).splitlines()
    assert table[1].split() == [
        'mode', 'CPU', 'busy', 'iowait', 'hdd', 'r/s', 'hdd', 'w/s', 'hdd',
        'busy', 'hdd', 'r', 'limit', 'hdd', 'w', 'limit', 'hdd', 'budget',
        'ssd', 'r/s', 'ssd', 'w/s', 'ssd', 'busy', 'ssd', 'r', 'limit', 'ssd',
        'w', 'limit', 'ssd', 'budget']
    assert table[2].split() == ['default', '40%', '30%', '10', '260', '85%',
                                '10/s=3%', '278/s=93%', '-', '80', '300',
                                '20%', '-', '-', '-']
    assert table[4].split()[0] == 'default*'
    # with another base (--base static) the control is that base's twin
    # (a static-based run's tables said default*)
    assert resources_report.format_table(
        by_mode, 'static').splitlines()[4].split()[0] == 'static*'
    assert resources_report.format_costs(
        by_mode, 'static').splitlines()[4].split()[0] == 'static*'
    plain = resources_report.format_table({'default': {
        'seconds': 10.0, 'cpu': {'busy_pct': 99.0, 'iowait_pct': 0.0},
        'devices': None}})
    assert plain.splitlines()[2].split() == ['default', '99%', '0%']
    assert 'devices: not sampled' in plain
    text = report.format_summary({'summary': {}, 'resources': by_mode})
    assert 'where the time went' in text


# ---- CPU per process group, Redis commands and costs per operation

@pytest.mark.parametrize('cmdline, group', [
    ('/usr/bin/python3\0/usr/bin/swift-proxy-server\0'
     '/etc/swift/proxy-server.conf', 'proxy'),
    ('/usr/bin/python3\0/usr/bin/swift-object-server\0'
     '/etc/swift/object-server/1.conf', 'object'),
    ('python3\0swift-container-server\0/etc/swift/container-server/2.conf',
     'container'),
    ('python3\0swift-account-server\0/etc/swift/account-server/3.conf',
     'account'),
    ('redis-server 127.0.0.1:6379', 'redis'),
    ('/usr/bin/redis-server\0*:6380', 'redis'),
    ('memcached\0-d\0-u\0memcache\0-p\011211', 'memcached'),
    # a daemon reading an object server's config is not one
    ('python3\0/usr/bin/swift-object-replicator\0'
     '/etc/swift/object-server/1.conf', 'swift_other'),
    ('/usr/bin/python3\0-u\0/usr/local/bin/swift-mass\0--conf\0'
     '/etc/swift/proxy-server.conf\0status', 'swift_other'),
    # the bench itself and anything else
    ('python3\0/work/tools/bench\0--seconds\03', None),
    ('python3\0-m\0mass_bench\0--conf\0/etc/swift/proxy-server.conf', None),
    ('', None),
])
def test_process_groups_by_program_name(cmdline, group):
    assert resources.process_group(cmdline.split('\0')) == group


def fake_proc(tmp_path, processes):
    """A /proc of ``processes``: {pid: (cmdline, utime, stime, start)}."""
    root = tmp_path / 'proc'
    root.mkdir(exist_ok=True)
    (root / 'self').mkdir(exist_ok=True)
    (root / 'stat').write_text('cpu 1 2 3\n')
    for pid, (cmdline, utime, stime, start) in processes.items():
        d = root / str(pid)
        d.mkdir(exist_ok=True)
        (d / 'cmdline').write_bytes(cmdline.encode())
        fields = ['S', '1', '1', '1', '0', '-1', '4194560', '0', '0', '0',
                  '0', str(utime), str(stime), '0', '0', '20', '0', '1', '0',
                  str(start), '0', '0']
        (d / 'stat').write_text('%d (swift-proxy) s) %s\n' % (
            pid, ' '.join(fields)))
    return str(root)


PROXY = 'python3\0/usr/bin/swift-proxy-server\0/etc/swift/proxy-server.conf'
OBJECT = 'python3\0swift-object-server\0/etc/swift/object-server/1.conf'


def test_process_cpu_from_proc(tmp_path):
    proc = fake_proc(tmp_path, {
        10: (PROXY, 150, 50, 1000), 11: (PROXY, 100, 0, 1001),
        12: (OBJECT, 30, 20, 1002), 13: ('', 500, 500, 5),  # a kthread
        14: ('python3\0tools/bench', 900, 100, 1003)})
    # a process that went away between the listing and its files
    (tmp_path / 'proc' / '15').mkdir()
    assert resources.process_cpu(proc, ticks_per_second=100) == {
        'proxy': {(10, '1000'): 2.0, (11, '1001'): 1.0},
        'object': {(12, '1002'): 0.5}}
    # this machine's: whatever runs, no error
    assert isinstance(resources.process_cpu(), dict)


def test_group_cpu_seconds_between_two_samples(tmp_path):
    before = resources.process_cpu(fake_proc(tmp_path, {
        10: (PROXY, 100, 0, 1000), 11: (PROXY, 100, 0, 1001),
        12: (OBJECT, 100, 0, 1002)}), ticks_per_second=100)
    shutil.rmtree(str(tmp_path / 'proc' / '12'))
    after = resources.process_cpu(fake_proc(tmp_path, {
        10: (PROXY, 250, 50, 1000),
        # pid 11 was used again by a new process: counted whole
        11: (PROXY, 30, 0, 2000),
        # pid 12 ended (its /proc is gone): lost; 20 began: counted whole
        20: (OBJECT, 40, 10, 2001)}), ticks_per_second=100)
    assert resources.group_cpu_seconds(before, after) == {
        'proxy': pytest.approx(2.0 + 0.3), 'object': pytest.approx(0.5)}
    assert resources.group_cpu_seconds(None, after) is None


def test_own_cpu_seconds_counts_this_process():
    began = resources.own_cpu_seconds()
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:
        pass
    assert resources.own_cpu_seconds() - began >= 0.04


def test_the_redis_url_the_proxies_use(tmp_path):
    conf = tmp_path / 'proxy-server.conf'
    conf.write_text('[DEFAULT]\nbind_port = %(x)s\n[filter:mass]\n'
                    'redis_url = redis://10.0.0.5:6390/2\n')
    assert resources.redis_url_of(str(conf)) == 'redis://10.0.0.5:6390/2'
    conf.write_text('[filter:mass]\nuse = egg:swift_mass#mass\n')
    assert resources.redis_url_of(str(conf)) == 'redis://127.0.0.1:6379'
    assert resources.redis_url_of(str(tmp_path / 'none.conf')) == \
        'redis://127.0.0.1:6379'


def test_commands_called_from_info_commandstats():
    stats = {'cmdstat_get': {'calls': 10, 'usec': 3},
             'cmdstat_hgetall': {'calls': 5},
             'cmdstat_info': {'calls': 100}, 'errorstat_ERR': 'x'}
    assert resources.commands_called(stats) == 15
    # a Cluster answers per node
    assert resources.commands_called({'10.0.0.1:7000': stats,
                                      '10.0.0.2:7000': stats}) == 30
    assert resources.commands_called({'redis_version': '7.0'}) is None
    assert resources.commands_called(None) is None


class FakeRedis(object):
    closed = False

    def __init__(self, answer):
        self.answer = answer

    def info(self, section):
        assert section == 'commandstats'
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    def close(self):
        self.closed = True


def test_redis_commands_never_fail_the_run(monkeypatch):
    made = []

    def client_from_url(url, prefix, **options):
        made.append((url, options['socket_timeout']))
        return client
    monkeypatch.setattr(resources.redis_client, 'client_from_url',
                        client_from_url)
    client = FakeRedis({'cmdstat_set': {'calls': 7}})
    assert resources.redis_commands('redis://r:6390') == 7
    assert client.closed and made == [('redis://r:6390', 2.0)]
    client = FakeRedis(ConnectionError('refused'))
    assert resources.redis_commands('redis://r:6390') is None
    assert client.closed
    monkeypatch.undo()
    # nothing listens on port 1; and no URL of any form makes it raise
    assert resources.redis_commands('redis://127.0.0.1:1', 0.5) is None
    assert resources.redis_commands('nonsense') is None


def snapshot(when, cpu_busy, processes, commands, devices=None):
    return {'time': when, 'cpu': {'total': 1000 * when, 'busy': cpu_busy,
                                  'iowait': 0},
            'devices': devices, 'processes': processes,
            'redis_commands': commands}


def test_between_adds_group_cpu_and_redis_commands():
    before = snapshot(0.0, 0, {'proxy': {(1, '5'): 10.0}}, 1000)
    after = snapshot(10.0, 500, {'proxy': {(1, '5'): 14.0},
                                 'redis': {(2, '6'): 3.0}}, 1600)
    where = resources.between(before, after)
    assert where['cpu_seconds'] == {'proxy': 4.0, 'redis': 3.0}
    assert where['redis_commands'] == 600
    # Redis restarted, or could not be asked once
    assert resources.between(before, dict(after, redis_commands=5))[
        'redis_commands'] is None
    assert resources.between(before, dict(after, redis_commands=None))[
        'redis_commands'] is None


def test_the_sampler_takes_every_sample():
    sampler = resources.Sampler(
        cpu=lambda: {'total': 1, 'busy': 1, 'iowait': 0},
        processes=lambda: {'proxy': {}}, redis=lambda: 42,
        queue=lambda: 7, clock=iter([1.0, 2.0]).__next__)
    assert sampler.snapshot() == {
        'time': 1.5, 'cpu': {'total': 1, 'busy': 1, 'iowait': 0},
        'devices': None, 'processes': {'proxy': {}}, 'redis_commands': 42,
        'queue_refusals': 7}


def test_costs_per_operation():
    where = resources.between(
        snapshot(0.0, 0, {'proxy': {(1, '5'): 10.0},
                          'object': {(2, '5'): 1.0}}, 1000, BEFORE),
        snapshot(10.0, 0, {'proxy': {(1, '5'): 14.0},
                           'object': {(2, '5'): 3.0}}, 3000, AFTER))
    where['cpu_seconds']['load_generator'] = 1.0
    costs = resources.per_operation(where, 2000)
    assert costs == {
        'operations': 2000,
        'cpu_ms': {'proxy': 2.0, 'object': 1.0, 'load_generator': 0.5},
        # ssd: (80 + 300) IOPS over 10 s; hdd: (10 + 260) IOPS
        'device_ios': {'ssd': pytest.approx(1.9),
                       'hdd': pytest.approx(1.35)},
        # the HDD-class devices have no model; the queues were not asked
        'hdd_model_ios': None,
        'redis_commands': 1.0, 'queue_refusals_per_1000': None}
    plain = dict(where, devices=None, redis_commands=None)
    assert resources.per_operation(plain, 2000)['device_ios'] is None
    assert resources.per_operation(plain, 2000)['redis_commands'] is None
    assert resources.per_operation(where, 0) is None
    assert resources.per_operation(None, 10) is None
    line = resources_report.format_cost_line(costs)
    assert line == ('    per op (all tenants\' 2000 ops): CPU ms load gen '
                    '0.500, proxies 2.000, object 1.000; I/Os hdd 1.35, ssd '
                    '1.90; Redis cmds 1.00')


def test_model_ios_and_queue_refusals_per_operation():
    before = [modelled(BEFORE[2], 7, 100, 50, 10)]
    after = [modelled(AFTER[2], 7, 700, 450, 110)]
    where = resources.between(
        dict(snapshot(0.0, 0, {}, None, before), queue_refusals=10),
        dict(snapshot(10.0, 0, {}, None, after), queue_refusals=40))
    assert where['queue_refusals'] == 30
    costs = resources.per_operation(where, 2000)
    # 600 reads, 400 writes and 100 syncs over 2000 operations
    assert costs['hdd_model_ios'] == {'reads': pytest.approx(0.3),
                                      'writes': pytest.approx(0.2),
                                      'syncs': pytest.approx(0.05)}
    # 30 refusals in 2000 operations
    assert costs['queue_refusals_per_1000'] == pytest.approx(15.0)
    line = resources_report.format_cost_line(costs)
    assert line.endswith('; hdd model reads/writes/syncs 0.30/0.20/0.05; '
                         'Redis cmds -; refused 15.00 per 1k ops')
    # none refused is 0, not unknown
    assert resources.per_operation(dict(where, queue_refusals=0), 2000)[
        'queue_refusals_per_1000'] == 0.0


@pytest.mark.parametrize('was, now', [
    (None, 40),  # not asked: a mode without Mass
    (10, None),  # a server could not be read
    (40, 10)])   # the servers restarted
def test_queue_refusals_unknown(was, now):
    where = resources.between(
        dict(snapshot(0.0, 0, {}, None), queue_refusals=was),
        dict(snapshot(10.0, 0, {}, None), queue_refusals=now))
    assert where['queue_refusals'] is None
    assert resources.per_operation(where, 2000)[
        'queue_refusals_per_1000'] is None
    line = resources_report.format_cost_line(resources.per_operation(
        where, 2000))
    assert 'refused' not in line


def test_no_model_ios_without_a_model():
    # the plain profile: no devices
    assert resources.model_ios_per_operation(None, 10.0, 2000) is None
    # HDD-class devices without a model, or no HDD class
    hetero = resources.device_rates(BEFORE, AFTER, 10.0)
    assert resources.model_ios_per_operation(hetero, 10.0, 2000) is None
    assert resources.model_ios_per_operation(
        {'ssd': hetero['ssd']}, 10.0, 2000) is None
    line = resources_report.format_cost_line(resources.per_operation(
        {'seconds': 10.0, 'devices': hetero}, 2000))
    assert 'model' not in line


def test_machine_share():
    assert resources.machine_share(2.0, 10.0, cores=4) == 5.0
    assert resources.machine_share(None, 10.0, cores=4) is None
    assert resources.machine_share(1.0, 0, cores=4) is None
    assert resources.machine_share(1.0, 1.0) == pytest.approx(
        100.0 / os.cpu_count())


def costs(proxy, ios, commands):
    return {'operations': 1000, 'cpu_ms': {'proxy': proxy,
                                           'load_generator': 0.2},
            'device_ios': {'hdd': ios} if ios is not None else None,
            'redis_commands': commands}


def test_cost_table_per_mode():
    runs = [dict(run('default', False, None), costs=costs(1.0, 2.0, None)),
            dict(run('default', True, None), costs=costs(1.1, 2.0, None)),
            dict(run('mass', False, None), costs=costs(1.5, 1.0, 4.0)),
            dict(run('mass', False, None), costs=costs(1.7, 3.0, 6.0)),
            dict(run('mass', False, None), costs=None)]
    by_mode = summary.cost_summary(runs, ['default', 'mass'])
    assert list(by_mode) == ['default', 'mass', 'control']
    assert by_mode['mass'] == {
        'operations': 1000,
        'cpu_ms': {'proxy': pytest.approx(1.6), 'load_generator': 0.2},
        'device_ios': {'hdd': 2.0}, 'redis_commands': 5.0}
    lines = resources_report.format_costs(by_mode).splitlines()
    assert 'divided by the operations ALL tenants completed' in lines[0]
    assert lines[1].split() == [
        'mode', 'ops', 'load', 'gen', 'CPU', 'ms', 'proxies', 'CPU', 'ms',
        'hdd', 'I/Os', 'Redis', 'cmds']
    assert lines[2].split() == ['default', '1000', '0.200', '1.000', '2.00',
                                '-']
    assert lines[3].split() == ['mass', '1000', '0.200', '1.600', '2.00',
                                '5.00']
    assert lines[4].split()[0] == 'default*'
    text = report.format_summary({'summary': {}, 'costs': by_mode})
    assert 'cost per operation' in text
    plain = resources_report.format_costs(
        {'mass': dict(costs(1.0, None, None))})
    assert 'device I/Os: not sampled' in plain


def test_cost_table_with_model_ios_and_queue_refusals():
    def measured(writes, refusals):
        return dict(costs(1.0, 2.0, 3.0), hdd_model_ios={
            'reads': 0.5, 'writes': writes, 'syncs': 0.25},
            queue_refusals_per_1000=refusals)
    runs = [dict(run('default', False, None), costs=measured(1.0, None)),
            dict(run('default', True, None), costs=measured(1.0, None)),
            dict(run('mass', False, None), costs=measured(2.0, 4.0)),
            dict(run('mass', False, None), costs=measured(3.0, 6.0)),
            dict(run('static', False, None),
                 costs=dict(costs(1.0, 2.0, 3.0), hdd_model_ios=None,
                            queue_refusals_per_1000=0.0))]
    by_mode = summary.cost_summary(runs, ['default', 'static', 'mass'])
    assert by_mode['mass']['hdd_model_ios'] == {
        'reads': 0.5, 'writes': 2.5, 'syncs': 0.25}
    assert by_mode['mass']['queue_refusals_per_1000'] == 5.0
    # without Mass no queue could refuse: unknown, not 0
    assert by_mode['default']['queue_refusals_per_1000'] is None
    assert by_mode['static']['hdd_model_ios'] is None
    lines = resources_report.format_costs(by_mode).splitlines()
    assert 'syncs the hdd-class devices\' model served' in lines[0]
    assert lines[1].split()[-13:] == [
        'hdd', 'model', 'reads', 'hdd', 'model', 'writes', 'hdd', 'model',
        'syncs', 'Redis', 'cmds', 'refused/1k', 'ops']
    assert lines[2].split()[-5:] == ['0.50', '1.00', '0.25', '3.00', '-']
    assert lines[3].split()[-5:] == ['-', '-', '-', '3.00', '0.00']
    assert lines[4].split()[-5:] == ['0.50', '2.50', '0.25', '3.00', '5.00']


PRESSURE_FILES = {
    'cpu': 'some avg10=1.00 avg60=0.50 avg300=0.10 total=1500000\n'
           'full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n',
    'io': 'some avg10=9.00 avg60=5.00 avg300=1.00 total=7000000\n'
          'full avg10=4.00 avg60=2.00 avg300=0.50 total=3000000\n'}


def test_pressure_totals_read_the_kernels_files(tmp_path):
    for name, text in PRESSURE_FILES.items():
        (tmp_path / name).write_text(text)
    assert resources.pressure_totals(str(tmp_path)) == {
        'cpu_some': 1500000, 'io_some': 7000000, 'io_full': 3000000}
    # a kernel without pressure stall information
    assert resources.pressure_totals(str(tmp_path / 'none')) is None


def test_a_pulse_is_the_time_the_cpu_and_the_pressure():
    sampler = resources.Sampler(cpu=lambda: {'total': 1}, clock=lambda: 5.0,
                                pressure=lambda: {'io_full': 2},
                                processes=None)
    assert sampler.pulse() == {'time': 5.0, 'cpu': {'total': 1},
                               'pressure': {'io_full': 2}}


def pulse(t, busy, iowait, cpu_some, io_some, io_full):
    return {'time': t, 'cpu': {'total': 100 * t, 'busy': busy,
                               'iowait': iowait},
            'pressure': {'cpu_some': cpu_some, 'io_some': io_some,
                         'io_full': io_full}}


def test_per_second_shares_of_the_wall_time():
    seconds = resources.per_second([
        pulse(0, 0, 0, 0, 0, 0), pulse(1, 90, 5, 800000, 100000, 0),
        pulse(2, 110, 80, 900000, 1000000, 700000)])
    assert seconds == [
        {'busy_pct': 90.0, 'iowait_pct': 5.0, 'cpu_some_pct': 80.0,
         'io_some_pct': 10.0, 'io_full_pct': 0.0},
        {'busy_pct': 20.0, 'iowait_pct': 75.0, 'cpu_some_pct': 10.0,
         'io_some_pct': 90.0, 'io_full_pct': 70.0}]
    # without pressure stall information, the CPU only
    plain = dict(pulse(1, 50, 0, 0, 0, 0), pressure=None)
    assert resources.second_between(
        dict(plain, time=0, cpu={'total': 0, 'busy': 0, 'iowait': 0}),
        plain) == {'busy_pct': 50.0, 'iowait_pct': 0.0,
                   'cpu_some_pct': None, 'io_some_pct': None,
                   'io_full_pct': None}


def test_stalls_set_the_seconds_a_tenant_made_nothing_against_the_rest():
    machine = [{'busy_pct': 99.0, 'iowait_pct': 0.0, 'cpu_some_pct': 90.0,
                'io_some_pct': 10.0, 'io_full_pct': 0.0},
               {'busy_pct': 40.0, 'iowait_pct': 50.0, 'cpu_some_pct': 5.0,
                'io_some_pct': 95.0, 'io_full_pct': 60.0},
               {'busy_pct': 50.0, 'iowait_pct': 40.0, 'cpu_some_pct': 15.0,
                'io_some_pct': 85.0, 'io_full_pct': 40.0},
               # nobody made anything: not a stall of one tenant
               {'busy_pct': 1.0, 'iowait_pct': 0.0, 'cpu_some_pct': 0.0,
                'io_some_pct': 0.0, 'io_full_pct': 0.0}]
    found = resources.stalls({'A': [100, 250, 240, 0], 'B': [5, 0, 0, 0],
                              'C': [3, 0, 1, 0]}, machine)
    assert found['stalled'] == {
        'seconds': 2, 'tenants': {'B': 2, 'C': 1}, 'busy_pct': 45.0,
        'iowait_pct': 45.0, 'cpu_some_pct': 10.0, 'io_some_pct': 90.0,
        'io_full_pct': 50.0}
    assert found['others']['seconds'] == 2
    assert found['others']['busy_pct'] == 50.0
    line = resources_report.format_stalls(found)
    assert line.startswith('    stalls: 2 s with a tenant at 0 ops/s '
                           '(B 2 s, C 1 s): CPU busy 45%, io full 50%')
    assert 'the other 2 s: CPU busy 50%' in line
    # no stall, nothing to say; nothing known, nothing found
    assert resources_report.format_stalls(resources.stalls(
        {'A': [1, 1]}, machine[:2])) is None
    assert resources.stalls({'A': [1]}, []) is None
