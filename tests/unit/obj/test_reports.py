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
"""What a worker reports of its queues (swift_mass.obj.reports): which of
the recon file's reports are its server's current workers', as a plain
decision, and the reports themselves (the middleware's own tests drive them
through GET /mass_queue)."""
import os
import subprocess
import sys

from swift.common.utils import load_recon_cache

from swift_mass.conf import QueueConf
from swift_mass.obj import reports
from swift_mass.obj.queues import DeviceQueues, ObservedDevices
from tests.unit.helpers import Clock, Logger


def dead_pid():
    child = subprocess.Popen([sys.executable, '-c', 'pass'])
    child.wait()
    return child.pid


def test_process_lives():
    assert reports.process_lives(os.getpid())
    assert not reports.process_lives(dead_pid())


def test_current_reports_are_this_ports_recent_ones_of_live_processes():
    recent = {'time': 100.0, 'port': '6200', 'devices': {}}
    found = {
        '10': recent,
        '11': dict(recent, time=89.0),  # older than oldest
        '12': dict(recent, port='6206'),  # another server's
        '13': recent,  # its process is gone
        '14': dict(recent, port='6206'),  # gone too, whatever its port
        'x': recent, '15': 'not a report',
    }
    workers, gone = reports.current_reports(
        found, '6200', 90.0, lives=lambda pid: pid not in (13, 14))
    assert workers == {'10': recent}
    assert sorted(gone) == ['13', '14']


def test_a_recon_file_that_is_not_a_dict_has_no_reports():
    assert reports.current_reports(['10'], '6200', 0.0,
                                   lives=lambda pid: True) == ({}, [])


def worker_reports(tmp_path, mode='active', spawned=None):
    """WorkerReports of a worker with no queue yet; what it spawns is
    appended to ``spawned``, never run."""
    spawned = [] if spawned is None else spawned
    conf = QueueConf({'recon_cache_path': str(tmp_path), 'mode': mode,
                      'slots_per_device': '1'})
    logger = Logger()
    queues = DeviceQueues(conf, logger, Clock())
    observed = ObservedDevices(conf.slots_per_device, logger)
    return reports.WorkerReports(
        conf, queues, observed, logger,
        spawn=lambda *args: spawned.append(args))


def test_reports_start_once_per_process(tmp_path):
    spawned = []
    worker = worker_reports(tmp_path, spawned=spawned)
    worker.start('6200')
    worker.start('6201')
    assert len(spawned) == 1
    assert worker.port == '6200'


def test_status_in_observe_mode_answers_what_the_queues_would_have_seen(
        tmp_path):
    worker = worker_reports(tmp_path, mode='observe')
    worker.start('6200')
    end = worker.observed.arrive('sdb1', '5')
    status = worker.status()
    assert (status['mode'], status['devices']) == ('observe', {})
    assert status['observed'] == {'sdb1': {
        'in_flight': 1, 'peak_in_flight': 1, 'arrived': 1,
        'would_wait': 0}}
    assert list(status['workers']) == [str(os.getpid())]
    end()
    # this worker's own report was written first (its empty devices
    # dropped by dump_recon_cache)
    written = load_recon_cache(worker.recon_file)[str(os.getpid())]
    assert (written['port'], written['urgent_seen']) == ('6200', [])


def test_an_unreadable_recon_file_leaves_this_workers_own_report(tmp_path):
    worker = worker_reports(tmp_path)
    os.mkdir(worker.recon_file)  # neither written nor read
    worker.start('6200')
    status = worker.status()
    assert list(status['workers']) == [str(os.getpid())]
    [warning] = [line for level, line in worker.logger.lines
                 if level == 'warning']
    assert warning.startswith('mass_queue: cannot read %s: ' %
                              worker.recon_file)
